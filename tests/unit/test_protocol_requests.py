"""Request encoders against hand-derived bytes (layouts from the server's request classes)."""

from __future__ import annotations

import struct
import uuid

import pytest

from tensorflow_ignite.protocol import requests as rq
from tensorflow_ignite.protocol.binary import BinaryEncoder
from tensorflow_ignite.protocol.buffer import ByteWriter
from tensorflow_ignite.protocol.cache_config import ExpiryPolicy
from tensorflow_ignite.protocol.codes import ClusterState, Feature, Op, PeekMode, TxConcurrency, TxIsolation, TypeCode
from tensorflow_ignite.protocol.requests.common import cache_header
from tensorflow_ignite.protocol.values import BinaryField, BinaryObject, BinaryType, Typed


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", "").replace("\n", ""))


def frame(op: int, rid: int, body: str) -> bytes:
    """Hand-built frame: int length, short op, long request id, body."""
    payload = struct.pack("<hq", op, rid) + h(body)
    return struct.pack("<i", len(payload)) + payload


CACHE = 99  # cache id of "c" = 'c'.hashCode()
CACHE_HDR = "63000000 00"  # int cache id, flags 0
INT5 = "03 05000000"
LONG7 = "04 0700000000000000"


def test_general_ops() -> None:
    assert rq.resource_close(1, 0x1122) == frame(Op.RESOURCE_CLOSE, 1, "2211000000000000")
    assert rq.heartbeat(2) == frame(1, 2, "")
    assert rq.get_idle_timeout(3) == frame(2, 3, "")


def test_single_key_ops() -> None:
    key = Typed(5, TypeCode.INT)
    assert rq.cache_get(1, CACHE, key) == frame(1000, 1, CACHE_HDR + INT5)
    assert rq.cache_get(1, CACHE, key) == h("14000000 e803 0100000000000000 63000000 00 03 05000000")
    for fn, op in [
        (rq.cache_get_and_remove, 1007), (rq.cache_contains_key, 1011), (rq.cache_clear_key, 1014),
        (rq.cache_remove_key, 1016),
    ]:
        assert fn(9, CACHE, key) == frame(op, 9, CACHE_HDR + INT5)


def test_key_value_ops() -> None:
    key = Typed(5, TypeCode.INT)
    for fn, op in [
        (rq.cache_put, 1001), (rq.cache_put_if_absent, 1002), (rq.cache_get_and_put, 1005),
        (rq.cache_get_and_replace, 1006), (rq.cache_get_and_put_if_absent, 1008), (rq.cache_replace, 1009),
        (rq.cache_remove_if_equals, 1017),
    ]:
        assert fn(4, CACHE, key, 7) == frame(op, 4, CACHE_HDR + INT5 + LONG7)
    assert rq.cache_put(4, CACHE, 5, "v", key_type=TypeCode.INT) == frame(
        1001, 4, CACHE_HDR + INT5 + "09 01000000 76"
    )
    assert rq.cache_replace_if_equals(4, CACHE, key, 1, 2) == frame(
        1010, 4, CACHE_HDR + INT5 + "04 0100000000000000 04 0200000000000000"
    )


def test_multi_key_ops() -> None:
    keys = [Typed(1, TypeCode.INT), Typed(2, TypeCode.INT)]
    body = CACHE_HDR + "02000000 03 01000000 03 02000000"
    for fn, op in [
        (rq.cache_get_all, 1003), (rq.cache_contains_keys, 1012), (rq.cache_clear_keys, 1015),
        (rq.cache_remove_keys, 1018),
    ]:
        assert fn(5, CACHE, keys) == frame(op, 5, body)
    assert rq.cache_get_all(5, CACHE, [1, 2], key_type=TypeCode.INT) == frame(1003, 5, body)
    assert rq.cache_put_all(5, CACHE, {1: "a"}, key_type=TypeCode.INT) == frame(
        1004, 5, CACHE_HDR + "01000000 03 01000000 09 01000000 61"
    )
    assert rq.cache_put_all(5, CACHE, [(1, None)], key_type=TypeCode.INT) == frame(
        1004, 5, CACHE_HDR + "01000000 03 01000000 65"
    )


def test_whole_cache_ops() -> None:
    assert rq.cache_clear(6, CACHE) == frame(1013, 6, CACHE_HDR)
    assert rq.cache_remove_all(6, CACHE) == frame(1019, 6, CACHE_HDR)
    assert rq.cache_get_size(6, CACHE) == frame(1020, 6, CACHE_HDR + "00000000")
    assert rq.cache_get_size(6, CACHE, [PeekMode.PRIMARY, PeekMode.BACKUP]) == frame(
        1020, 6, CACHE_HDR + "02000000 02 03"
    )
    assert rq.cache_local_peek(6, CACHE, Typed(5, TypeCode.INT)) == frame(1021, 6, CACHE_HDR + INT5 + "01000000 00")


def test_cache_flags_expiry_then_transaction() -> None:
    opts = rq.CacheOptions(keep_binary=True, tx_id=3, expiry=ExpiryPolicy(1, -1, -2))
    assert opts.flags() == 0x07
    assert rq.cache_get(1, CACHE, Typed(5, TypeCode.INT), opts=opts) == frame(
        1000, 1,
        "63000000 07"
        "0100000000000000 ffffffffffffffff feffffffffffffff"  # expiry: create, update, access
        "03000000"  # tx id after the expiry policy
        + INT5,
    )
    with pytest.raises(ValueError):
        cache_header(ByteWriter(), CACHE, rq.CacheOptions(tx_id=1), data_request=False)


def test_cache_management_ops() -> None:
    assert rq.cache_get_names(1) == frame(1050, 1, "")
    assert rq.cache_create_with_name(1, "c") == frame(1051, 1, "09 01000000 63")
    assert rq.cache_get_or_create_with_name(1, "c") == frame(1052, 1, "09 01000000 63")
    assert rq.cache_get_configuration(1, CACHE) == frame(1055, 1, CACHE_HDR)
    assert rq.cache_destroy(1, CACHE) == frame(1056, 1, "63000000")


def test_cache_partitions() -> None:
    assert rq.cache_partitions(1, [CACHE, 7]) == frame(1101, 1, "00 02000000 63000000 07000000")
    assert rq.cache_partitions(1, [CACHE], custom_mappings=True) == frame(1101, 1, "01 01000000 63000000")
    assert rq.cache_partitions(1, [CACHE], features=[]) == frame(1101, 1, "01000000 63000000")


def test_scan_query() -> None:
    assert rq.query_scan(2, CACHE, page_size=100) == frame(
        2000, 2, CACHE_HDR + "65" + "64000000" + "ffffffff" + "00"
    )
    assert rq.query_scan(2, CACHE, page_size=1, partition=5, local=True) == frame(
        2000, 2, CACHE_HDR + "65 01000000 05000000 01"
    )
    assert rq.query_scan(2, CACHE, filter="f", filter_platform=2) == frame(
        2000, 2, CACHE_HDR + "09 01000000 66 02 00040000 ffffffff 00"
    )
    with pytest.raises(ValueError):
        rq.query_scan(2, CACHE, page_size=0)
    assert rq.query_scan_cursor_get_page(3, 0x55) == frame(2001, 3, "5500000000000000")


def test_sql_fields_query() -> None:
    common = (
        "09 06000000 5055424c4943"  # schema "PUBLIC"
        "00040000"  # page size 1024
        "ffffffff"  # max rows
        "09 08000000 73656c6563742031"  # "select 1"
        "01000000 04 0700000000000000"  # args: [7]
        "01"  # statement type SELECT
        "00 00 00 00 00 01"  # distributed joins, local, replicated only, enforce join order, collocated, lazy
        "e803000000000000"  # timeout 1000 ms
        "01"  # include field names
    )
    req = rq.query_sql_fields(7, 0, "select 1", [7], schema="PUBLIC", statement_type=1, lazy=True, timeout_ms=1000)
    assert req == frame(2004, 7, "00000000 00" + common + "ffffffff 01000000")
    req = rq.query_sql_fields(7, 0, "select 1", [7], schema="PUBLIC", statement_type=1, lazy=True,
                              timeout_ms=1000, partitions=[1, 2], update_batch_size=5)
    assert req == frame(2004, 7, "00000000 00" + common + "02000000 01000000 02000000 05000000")
    old = rq.query_sql_fields(7, 0, "select 1", [7], schema="PUBLIC", statement_type=1, lazy=True,
                              timeout_ms=1000, features=[])
    assert old == frame(2004, 7, "00000000 00" + common)
    with pytest.raises(ValueError):
        rq.query_sql_fields(7, 0, "x", partitions=[1], features=[])
    assert rq.query_sql_fields_cursor_get_page(8, 1) == frame(2005, 8, "0100000000000000")


def test_binary_type_ops() -> None:
    assert rq.binary_type_name_get(1, 0x10) == frame(3000, 1, "00 10000000")
    assert rq.binary_type_name_put(1, 0x10, "a.B") == frame(3001, 1, "00 10000000 09 03000000 612e42")
    assert rq.binary_type_get(1, 0x10) == frame(3002, 1, "10000000")
    t = BinaryType(
        0x10, "T", {"a": BinaryField("a", TypeCode.INT, 0x61)}, affinity_key_field=None,
        schemas={0x77: (0x61,)},
    )
    assert rq.binary_type_put(1, t) == frame(
        3003, 1,
        "10000000 09 01000000 54 65"  # type id, name "T", affinity field null
        "01000000 09 01000000 61 03000000 61000000"  # fields: a, int, field id
        "00"  # not an enum
        "01000000 77000000 01000000 61000000",  # schemas
    )
    enum = BinaryType(0x20, "E", is_enum=True, enum_values={"A": 0, "B": 1})
    assert rq.binary_type_put(1, enum) == frame(
        3003, 1,
        "20000000 09 01000000 45 65 00000000 01 02000000 09 01000000 41 00000000 09 01000000 42 01000000"
        "00000000",
    )


def test_transactions() -> None:
    assert rq.tx_start(1, TxConcurrency.PESSIMISTIC, TxIsolation.REPEATABLE_READ, 5000, "lbl") == frame(
        4000, 1, "01 01 8813000000000000 09 03000000 6c626c"
    )
    assert rq.tx_start(1, TxConcurrency.OPTIMISTIC, TxIsolation.SERIALIZABLE) == frame(
        4000, 1, "00 02 0000000000000000 65"
    )
    assert rq.tx_end(1, 3, True) == frame(4001, 1, "03000000 01")


def test_cluster_ops() -> None:
    assert rq.cluster_get_state(1) == frame(5000, 1, "")
    assert rq.cluster_change_state(1, ClusterState.ACTIVE_READ_ONLY) == frame(5001, 1, "02")
    assert rq.cluster_group_get_node_ids(1) == frame(5100, 1, "ffffffffffffffff 00000000")
    assert rq.cluster_group_get_node_ids(1, 4, attributes={"a": "b"}, server_nodes=True) == frame(
        5100, 1, "0400000000000000 02000000 0100 09 01000000 61 09 01000000 62 0200 01"
    )
    node = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
    assert rq.cluster_group_get_node_info(1, [node]) == frame(
        5101, 1, "01000000 7766554433221100 ffeeddccbbaa9988"
    )


def test_compute_and_services() -> None:
    assert rq.compute_task_execute(1, "t", Typed(1, TypeCode.INT), flags=4, timeout_ms=2) == frame(
        6000, 1, "00000000 04 0200000000000000 09 01000000 74 03 01000000"
    )
    assert rq.service_invoke(1, "svc", "m", [Typed(1, TypeCode.INT)]) == frame(
        7000, 1,
        "09 03000000 737663 00 0000000000000000 00000000 09 01000000 6d 01000000 03 01000000 65",
    )
    assert rq.service_invoke(1, "svc", "m", [], param_type_ids=[], features=[]) == frame(
        7000, 1, "09 03000000 737663 02 0000000000000000 00000000 09 01000000 6d 00000000"
    )
    with pytest.raises(ValueError):
        rq.service_invoke(1, "s", "m", [1], param_type_ids=[])


def test_data_streamer() -> None:
    assert rq.data_streamer_start(1, CACHE, [(1, "a")], key_type=TypeCode.INT, flags=0x14) == frame(
        8000, 1, "63000000 14 ffffffff ffffffff 65 01000000 03 01000000 09 01000000 61"
    )
    assert rq.data_streamer_add_data(1, 9, [], flags=0x10) == frame(8001, 1, "0900000000000000 10 00000000")


def test_encoder_collects_types_for_registration() -> None:
    enc = BinaryEncoder()
    rq.cache_put(1, CACHE, 1, BinaryObject("P", {"a": 1}), encoder=enc)
    assert [t.type_name for t in enc.types.values()] == ["P"]


def test_feature_enum_is_accepted() -> None:
    assert rq.cache_partitions(1, [], features=[Feature.ALL_AFFINITY_MAPPINGS]) == frame(1101, 1, "00 00000000")
