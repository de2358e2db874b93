"""Cache configuration: property-list encoding and fixed-layout decoding."""

from __future__ import annotations

import struct

import pytest

from tensorflow_ignite.errors import ProtocolError
from tensorflow_ignite.protocol import requests as rq
from tensorflow_ignite.protocol.buffer import ByteReader, ByteWriter
from tensorflow_ignite.protocol.cache_config import (
    CacheConfiguration,
    ExpiryPolicy,
    QueryEntity,
    QueryField,
    QueryIndex,
    decode_cache_configuration,
    encode_cache_configuration,
)
from tensorflow_ignite.protocol.codes import (
    V1_1_0,
    V1_5_0,
    V1_7_0,
    AtomicityMode,
    CacheMode,
    PartitionLossPolicy,
    WriteSynchronizationMode,
)
from tensorflow_ignite.protocol.responses import decode_cache_configuration_response


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", "").replace("\n", ""))


def s(text: str | None) -> str:
    """Typed string as hex."""
    if text is None:
        return "65"
    data = text.encode()
    return "09" + struct.pack("<i", len(data)).hex() + data.hex()


def i32(v: int) -> str:
    return struct.pack("<i", v).hex()


def i64(v: int) -> str:
    return struct.pack("<q", v).hex()


def test_minimal_configuration() -> None:
    w = ByteWriter()
    encode_cache_configuration(w, CacheConfiguration("c"))
    # int length (of what follows), short count 1, short code 0 (name), typed string
    assert bytes(w.buf) == h("0a000000 0100 0000" + s("c"))
    with pytest.raises(ValueError):
        encode_cache_configuration(ByteWriter(), CacheConfiguration(""))


def test_configuration_with_query_entity() -> None:
    cfg = CacheConfiguration(
        "people",
        cache_mode=CacheMode.PARTITIONED,
        atomicity_mode=AtomicityMode.TRANSACTIONAL,
        backups=1,
        write_synchronization_mode=WriteSynchronizationMode.FULL_SYNC,
        partition_loss_policy=PartitionLossPolicy.READ_WRITE_SAFE,
        sql_schema="PUBLIC",
        query_entities=[
            QueryEntity(
                "java.lang.Long", "Person", table_name="PERSON",
                fields=[QueryField("id", "java.lang.Long", is_key=True), QueryField("name", "java.lang.String",
                                                                                    not_null=True, default="?")],
                aliases={"name": "NAME"},
                indexes=[QueryIndex("idx", [("name", True)])],
            )
        ],
        key_configurations=[("Person", "id")],
        expiry_policy=ExpiryPolicy(-1, -2, -2),
    )
    frame = rq.cache_create_with_configuration(3, cfg)
    entity = (
        s("java.lang.Long") + s("Person") + s("PERSON") + s(None) + s(None)
        + i32(2)
        + s("id") + s("java.lang.Long") + "01" + "00" + "65" + i32(-1) + i32(-1)
        + s("name") + s("java.lang.String") + "00" + "01" + s("?") + i32(-1) + i32(-1)
        + i32(1) + s("name") + s("NAME")
        + i32(1) + s("idx") + "00" + i32(-1) + i32(1) + s("name") + "01"
    )
    props = (
        "0000" + s("people")
        + "0100" + i32(2)  # cache mode PARTITIONED
        + "0200" + i32(0)  # atomicity TRANSACTIONAL
        + "0300" + i32(1)  # backups
        + "0400" + i32(0)  # FULL_SYNC
        + "cb00" + s("PUBLIC")  # 203 sql schema
        + "9401" + i32(2)  # 404 partition loss policy
        + "9101" + i32(1) + s("Person") + s("id")  # 401 key configurations
        + "c800" + i32(1) + entity  # 200 query entities
        + "9701" + "01" + i64(-1) + i64(-2) + i64(-2)  # 407 expiry policy
    )
    body = struct.pack("<h", 10).hex() + props
    expected = struct.pack("<i", len(h(body))).hex() + body
    payload = frame[14:]  # after length, op and request id
    assert payload == h(expected)
    assert frame[4:6] == struct.pack("<h", 1053)
    assert rq.cache_get_or_create_with_configuration(3, cfg)[4:6] == struct.pack("<h", 1054)


def test_version_gates() -> None:
    cfg = CacheConfiguration("c", expiry_policy=ExpiryPolicy(1, 1, 1))
    with pytest.raises(ValueError):
        encode_cache_configuration(ByteWriter(), cfg, V1_5_0)
    # precision/scale only from 1.2.0
    cfg2 = CacheConfiguration("c", query_entities=[QueryEntity("K", "V", fields=[QueryField("f", "java.lang.Integer")])])
    w_old, w_new = ByteWriter(), ByteWriter()
    encode_cache_configuration(w_old, cfg2, V1_1_0)
    encode_cache_configuration(w_new, cfg2, V1_7_0)
    assert len(w_new.buf) - len(w_old.buf) == 8


def _fixed_layout(expiry: str | None = "00") -> bytes:
    """A get-configuration answer laid out as ClientCacheConfigurationSerializer.write does."""
    body = (
        i32(1)  # atomicity ATOMIC
        + i32(2)  # backups
        + i32(2)  # cache mode PARTITIONED
        + "01"  # copy on read
        + s("default")  # data region
        + "01"  # eager ttl
        + "00"  # statistics
        + s(None)  # group name
        + i64(0)  # default lock timeout
        + i32(500)  # max concurrent async ops
        + i32(1024)  # max query iterators
        + s("c")  # name
        + "00"  # onheap
        + i32(4)  # partition loss IGNORE
        + i32(0)  # query detail metrics size
        + i32(1)  # query parallelism
        + "01"  # read from backup
        + i32(512 * 1024)  # rebalance batch size
        + i64(3)  # prefetch count
        + i64(0)  # rebalance delay
        + i32(1)  # rebalance mode ASYNC
        + i32(0)  # rebalance order
        + i64(0)  # throttle
        + i64(10000)  # rebalance timeout
        + "00"  # sql escape all
        + i32(-1)  # sql index max inline size
        + s(None)  # sql schema
        + i32(2)  # write sync PRIMARY_SYNC
        + i32(1) + s("K") + s("k")  # key configurations
        + i32(1)  # one query entity
        + s("java.lang.Integer") + s("V") + s("T") + s(None) + s(None)
        + i32(1) + s("f") + s("java.lang.String") + "00" + "00" + "65" + i32(10) + i32(-1)
        + i32(0)
        + i32(1) + s(None) + "00" + i32(-1) + i32(2) + s("f") + "00" + s("g") + "01"
    )
    if expiry is not None:
        body += expiry
    return struct.pack("<i", len(h(body))) + h(body)


def test_decode_fixed_layout() -> None:
    cfg = decode_cache_configuration_response(_fixed_layout())
    assert cfg.name == "c" and cfg.atomicity_mode == AtomicityMode.ATOMIC and cfg.backups == 2
    assert cfg.cache_mode == CacheMode.PARTITIONED and cfg.copy_on_read and cfg.data_region_name == "default"
    assert cfg.max_concurrent_async_operations == 500 and cfg.max_query_iterators_count == 1024
    assert cfg.partition_loss_policy == PartitionLossPolicy.IGNORE and cfg.read_from_backup
    assert cfg.rebalance_batch_size == 512 * 1024 and cfg.rebalance_batches_prefetch_count == 3
    assert cfg.rebalance_timeout == 10000 and cfg.sql_index_max_inline_size == -1 and cfg.sql_schema is None
    assert cfg.write_synchronization_mode == WriteSynchronizationMode.PRIMARY_SYNC
    assert cfg.key_configurations == [("K", "k")]
    (e,) = cfg.query_entities
    assert (e.key_type, e.value_type, e.table_name) == ("java.lang.Integer", "V", "T")
    assert e.fields == [QueryField("f", "java.lang.String", precision=10)]
    assert e.indexes == [QueryIndex(None, [("f", False), ("g", True)])]
    assert cfg.expiry_policy is None
    with_expiry = decode_cache_configuration_response(_fixed_layout("01" + i64(1) + i64(2) + i64(3)))
    assert with_expiry.expiry_policy == ExpiryPolicy(1, 2, 3)


def test_decode_skips_unknown_trailing_properties_and_rejects_overruns() -> None:
    data = bytearray(_fixed_layout() + b"\xaa\xbb")
    struct.pack_into("<i", data, 0, len(data) - 4)  # a newer server appended 2 bytes
    r = ByteReader(bytes(data))
    decode_cache_configuration(r)
    assert r.at_end()
    truncated = _fixed_layout()[:-30]
    with pytest.raises(ProtocolError):
        decode_cache_configuration_response(truncated)
