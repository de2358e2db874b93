"""Response-body decoders against hand-derived bytes."""

from __future__ import annotations

import struct
import uuid

import pytest

from tensorflow_ignite.errors import ProtocolError
from tensorflow_ignite.protocol import responses as rs
from tensorflow_ignite.protocol.codes import Feature, TypeCode
from tensorflow_ignite.protocol.values import BinaryField


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", "").replace("\n", ""))


NODE_A = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
NODE_A_WIRE = "7766554433221100 ffeeddccbbaa9988"
NODE_B = uuid.UUID(int=1)
NODE_B_WIRE = "0000000000000000 0100000000000000"


def test_scalars() -> None:
    assert rs.decode_bool(h("01")) is True
    assert rs.decode_byte(h("02")) == 2
    assert rs.decode_int(h("07000000")) == 7
    assert rs.decode_long(h("0800000000000000")) == 8
    assert rs.decode_string(h("09 01000000 61")) == "a"
    assert rs.decode_string(h("65")) is None
    assert rs.decode_object(h("03 05000000")) == 5
    assert rs.decode_object(h("65")) is None
    with pytest.raises(ProtocolError):
        rs.decode_long(h("01"))


def test_get_all_and_cache_names() -> None:
    pairs = rs.decode_get_all(h("02000000 03 01000000 09 01000000 61 03 02000000 65"))
    assert pairs == [(1, "a"), (2, None)]
    assert rs.decode_cache_names(h("02000000 09 01000000 61 09 02000000 6263")) == ["a", "bc"]
    with pytest.raises(ProtocolError):
        rs.decode_get_all(h("ffffff7f"))


def test_scan_first_and_next_pages() -> None:
    rows = "03 01000000 09 01000000 61" "03 02000000 09 01000000 62"
    page = rs.decode_scan_page(h("2a00000000000000 02000000" + rows + "01"), first=True)
    assert page.cursor_id == 42 and page.row_count == 2 and page.has_more
    assert bytes(page.rows) == h(rows)  # the region, untouched
    assert rs.decode_scan_rows(page) == [(1, "a"), (2, "b")]
    nxt = rs.decode_scan_page(h("01000000 03 01000000 65 00"), first=False)
    assert nxt.cursor_id is None and nxt.row_count == 1 and not nxt.has_more
    assert rs.decode_scan_rows(nxt) == [(1, None)]
    empty = rs.decode_scan_page(h("0100000000000000 00000000 00"), first=True)
    assert empty.row_count == 0 and bytes(empty.rows) == b""


@pytest.mark.parametrize(
    "body",
    [
        "0100000000000000 01000000",  # no has-more flag
        "0100000000000000 ffffff7f 0301000000 00",  # 2 GiB rows
        "0100000000000000 ffffffff 00",  # negative count
        "0100000000000000 00000000 03 00",  # stray bytes in an empty page
        "0100000000000000 01000000 03 01000000 03 01000000 05",  # flag not boolean
        "01000000",
    ],
)
def test_bad_scan_pages(body: str) -> None:
    with pytest.raises(ProtocolError):
        rs.decode_scan_page(h(body), first=True)


def test_scan_rows_must_fill_the_region() -> None:
    page = rs.decode_scan_page(h("01000000 03 01000000 03 01000000 03 01000000 00"), first=False)
    with pytest.raises(ProtocolError):
        rs.decode_scan_rows(page)


def test_sql_pages() -> None:
    body = h(
        "0500000000000000"  # cursor id
        "02000000"  # two columns
        "09 02000000 4944 09 04000000 4e414d45"  # "ID", "NAME"
        "02000000"  # two rows
        "03 01000000 09 01000000 61"
        "03 02000000 65"
        "00"
    )
    page = rs.decode_sql_fields_page(body, first=True)
    assert page.cursor_id == 5 and page.column_count == 2 and page.column_names == ("ID", "NAME")
    assert page.row_count == 2 and not page.has_more
    assert rs.decode_sql_rows(page) == [[1, "a"], [2, None]]
    no_names = rs.decode_sql_fields_page(h("0500000000000000 01000000 01000000 03 07000000 01"), first=True,
                                         include_field_names=False)
    assert no_names.column_names is None and rs.decode_sql_rows(no_names) == [[7]]
    later = rs.decode_sql_fields_page(h("01000000 03 07000000 00"), first=False, column_count=1)
    assert later.cursor_id is None and rs.decode_sql_rows(later) == [[7]]
    with pytest.raises(ValueError):
        rs.decode_sql_fields_page(h("00000000 00"), first=False)
    with pytest.raises(ProtocolError):
        rs.decode_sql_fields_page(h("0500000000000000 ffffff7f"), first=True)


def test_cache_partitions_with_all_affinity_mappings() -> None:
    body = h(
        "0300000000000000 01000000"  # topology (3, 1)
        "02000000"  # two groups
        # group 1: applicable, caches 10 (one key config) and 11 (none)
        "01 02000000"
        "0a000000 01000000 05000000 06000000"
        "0b000000 00000000"
        "02000000"  # two nodes
        "0a" + NODE_A_WIRE + "02000000 00000000 02000000"
        "0a" + NODE_B_WIRE + "01000000 01000000"
        "01"  # default affinity
        # group 2: not applicable, cache 12
        "00 01000000 0c000000"
    )
    parts = rs.decode_cache_partitions(body)
    assert parts.topology_version == (3, 1)
    g1, g2 = parts.groups
    assert g1.applicable and g1.cache_ids == (10, 11) and g1.default_affinity
    assert g1.key_configs == {10: {5: 6}, 11: {}}
    assert g1.partitions == {NODE_A: (0, 2), NODE_B: (1,)}
    assert g1.partition_count() == 3 and g1.partition_to_node() == [NODE_A, NODE_B, NODE_A]
    assert not g2.applicable and g2.cache_ids == (12,)
    assert parts.group_for(12) is g2 and parts.group_for(99) is None


def test_cache_partitions_without_the_feature() -> None:
    body = h("0100000000000000 00000000 01000000 01 01000000 0a000000 00000000 01000000 0a" + NODE_B_WIRE
             + "01000000 00000000")
    parts = rs.decode_cache_partitions(body, features=[Feature.HEARTBEAT])
    assert parts.groups[0].partitions == {NODE_B: (0,)} and parts.groups[0].default_affinity
    with pytest.raises(ProtocolError):  # the same body read as if the flag were there is short
        rs.decode_cache_partitions(body)
    with pytest.raises(ProtocolError):  # trailing garbage
        rs.decode_cache_partitions(body + b"\x00", features=[])


def test_binary_type_response() -> None:
    body = h(
        "01"  # exists
        "10000000 09 01000000 54 09 01000000 61"  # type id 16, name "T", affinity key field "a"
        "01000000 09 01000000 61 03000000 61000000"  # field a: int, id 0x61
        "01 02000000 09 01000000 41 00000000 09 01000000 42 01000000"  # enum A=0, B=1
        "01000000 77000000 01000000 61000000"  # schema 0x77 -> (0x61,)
    )
    t = rs.decode_binary_type(body)
    assert t is not None
    assert (t.type_id, t.type_name, t.affinity_key_field) == (16, "T", "a")
    assert t.fields == {"a": BinaryField("a", TypeCode.INT, 0x61)}
    assert t.is_enum and t.enum_values == {"A": 0, "B": 1}
    assert t.schemas == {0x77: (0x61,)}
    assert rs.decode_binary_type(h("00")) is None


def test_node_ids() -> None:
    ids = rs.decode_node_ids(h("01 0900000000000000 02000000" + NODE_A_WIRE + NODE_B_WIRE))
    assert ids.changed and ids.topology_version == 9 and ids.node_ids == (NODE_A, NODE_B)
    assert rs.decode_node_ids(h("00")) == rs.NodeIds(False, None, ())
    with pytest.raises(ProtocolError):
        rs.decode_node_ids(h("01 0900000000000000 ffffff0f"))


def test_node_info() -> None:
    body = h(
        "01000000"
        "0a" + NODE_A_WIRE
        + "01000000 09 01000000 6b 03 01000000"  # attributes {"k": 1}
        "18 01000000 01 09 09000000 3132372e302e302e31"  # addresses ["127.0.0.1"]
        "18 00000000 01"  # host names []
        "0500000000000000 01 00 00"  # order 5, local, not daemon, server
        "09 01000000 63"  # consistent id "c"
        "02 12 00 09 00000000 e803000000000000 0c 01000000 ab"  # version 2.18.0, stage "", ts, hash
    )
    (node,) = rs.decode_node_info(body)
    assert node.node_id == NODE_A and node.attributes == {"k": 1}
    assert node.addresses == ["127.0.0.1"] and node.host_names == []
    assert node.order == 5 and node.is_local and not node.is_client and node.consistent_id == "c"
    assert node.version == rs.NodeVersion(2, 18, 0, "", 1000, b"\xab")


def test_handshake_like_trailing_bytes_are_rejected_for_partitions() -> None:
    with pytest.raises(ProtocolError):
        rs.decode_cache_partitions(h("00"))


def test_struct_sizes_sanity() -> None:
    # The page tail parser relies on the has-more flag being the last byte.
    body = struct.pack("<qi", 1, 0) + b"\x01"
    assert rs.decode_scan_page(body, first=True).has_more
