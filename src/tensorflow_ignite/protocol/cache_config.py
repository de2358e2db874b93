"""Cache configuration as the thin protocol carries it (ops 1053/1054 and 1055).

Layouts from ``ClientCacheConfigurationSerializer`` (server) and
``ClientUtils.cacheConfiguration`` (Java thin client):

* create / get-or-create *with configuration* send a property list:
  ``int length (of what follows), short count``, then ``short code, value``
  per property, in any order; properties not sent keep Ignite's defaults.
* get configuration answers with a *fixed* layout: ``int length`` then every
  property in the order of :data:`_FIXED_ORDER`, then key configurations,
  query entities and (1.6.0+) the expiry policy.

The thin protocol has no affinity function property: the partition count
cannot be set here (use a server-side template or SQL ``CREATE TABLE ...
WITH "template=..."``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tensorflow_ignite.errors import ProtocolError
from tensorflow_ignite.protocol.binary import BinaryDecoder, BinaryEncoder
from tensorflow_ignite.protocol.buffer import ByteReader, ByteWriter
from tensorflow_ignite.protocol.codes import (
    V1_2_0,
    V1_6_0,
    V1_7_0,
    AtomicityMode,
    CacheMode,
    PartitionLossPolicy,
    ProtocolVersion,
    QueryIndexType,
    RebalanceMode,
    WriteSynchronizationMode,
)

__all__ = [
    "CacheProperty",
    "QueryField",
    "QueryIndex",
    "QueryEntity",
    "ExpiryPolicy",
    "CacheConfiguration",
    "encode_cache_configuration",
    "decode_cache_configuration",
]


class CacheProperty:
    """Property codes of the create-with-configuration list (``ClientCacheConfigurationSerializer``)."""

    NAME = 0
    CACHE_MODE = 1
    ATOMICITY_MODE = 2
    BACKUPS = 3
    WRITE_SYNCHRONIZATION_MODE = 4
    COPY_ON_READ = 5
    READ_FROM_BACKUP = 6
    DATA_REGION_NAME = 100
    ONHEAP_CACHE_ENABLED = 101
    QUERY_ENTITIES = 200
    QUERY_PARALLELISM = 201
    QUERY_DETAIL_METRICS_SIZE = 202
    SQL_SCHEMA = 203
    SQL_INDEX_MAX_INLINE_SIZE = 204
    SQL_ESCAPE_ALL = 205
    MAX_QUERY_ITERATORS_COUNT = 206
    REBALANCE_MODE = 300
    REBALANCE_DELAY = 301
    REBALANCE_TIMEOUT = 302
    REBALANCE_BATCH_SIZE = 303
    REBALANCE_BATCHES_PREFETCH_COUNT = 304
    REBALANCE_ORDER = 305
    REBALANCE_THROTTLE = 306
    GROUP_NAME = 400
    KEY_CONFIGURATION = 401
    DEFAULT_LOCK_TIMEOUT = 402
    MAX_CONCURRENT_ASYNC_OPERATIONS = 403
    PARTITION_LOSS_POLICY = 404
    EAGER_TTL = 405
    STATISTICS_ENABLED = 406
    EXPIRY_POLICY = 407


@dataclass
class QueryField:
    """A SQL-visible field of a query entity; ``type_name`` is a Java class name."""

    name: str
    type_name: str
    is_key: bool = False
    not_null: bool = False
    default: Any = None
    precision: int = -1
    scale: int = -1


@dataclass
class QueryIndex:
    """An index: ``fields`` are ``(field name, descending)`` pairs, in order."""

    name: str | None
    fields: list[tuple[str, bool]] = field(default_factory=list)
    index_type: int = QueryIndexType.SORTED
    inline_size: int = -1


@dataclass
class QueryEntity:
    """Maps a key/value type pair to a SQL table."""

    key_type: str
    value_type: str
    table_name: str | None = None
    key_field_name: str | None = None
    value_field_name: str | None = None
    fields: list[QueryField] = field(default_factory=list)
    aliases: dict[str, str] = field(default_factory=dict)
    indexes: list[QueryIndex] = field(default_factory=list)


@dataclass
class ExpiryPolicy:
    """Durations in milliseconds (-1 eternal, -2 unchanged, as ``PlatformExpiryPolicy``)."""

    create_ms: int
    update_ms: int
    access_ms: int


@dataclass
class CacheConfiguration:
    """Thin-client cache configuration; ``None`` means "leave Ignite's default"."""

    name: str
    cache_mode: int | None = None
    atomicity_mode: int | None = None
    backups: int | None = None
    write_synchronization_mode: int | None = None
    copy_on_read: bool | None = None
    read_from_backup: bool | None = None
    data_region_name: str | None = None
    onheap_cache_enabled: bool | None = None
    query_entities: list[QueryEntity] = field(default_factory=list)
    query_parallelism: int | None = None
    query_detail_metrics_size: int | None = None
    sql_schema: str | None = None
    sql_index_max_inline_size: int | None = None
    sql_escape_all: bool | None = None
    max_query_iterators_count: int | None = None
    rebalance_mode: int | None = None
    rebalance_delay: int | None = None
    rebalance_timeout: int | None = None
    rebalance_batch_size: int | None = None
    rebalance_batches_prefetch_count: int | None = None
    rebalance_order: int | None = None
    rebalance_throttle: int | None = None
    group_name: str | None = None
    key_configurations: list[tuple[str, str]] = field(default_factory=list)
    default_lock_timeout: int | None = None
    max_concurrent_async_operations: int | None = None
    partition_loss_policy: int | None = None
    eager_ttl: bool | None = None
    statistics_enabled: bool | None = None
    expiry_policy: ExpiryPolicy | None = None


# (attribute, code, wire kind) of scalar properties, in create-request order.
_SCALARS: tuple[tuple[str, int, str], ...] = (
    ("name", CacheProperty.NAME, "str"),
    ("cache_mode", CacheProperty.CACHE_MODE, "i32"),
    ("atomicity_mode", CacheProperty.ATOMICITY_MODE, "i32"),
    ("backups", CacheProperty.BACKUPS, "i32"),
    ("write_synchronization_mode", CacheProperty.WRITE_SYNCHRONIZATION_MODE, "i32"),
    ("copy_on_read", CacheProperty.COPY_ON_READ, "bool"),
    ("read_from_backup", CacheProperty.READ_FROM_BACKUP, "bool"),
    ("data_region_name", CacheProperty.DATA_REGION_NAME, "str"),
    ("onheap_cache_enabled", CacheProperty.ONHEAP_CACHE_ENABLED, "bool"),
    ("query_parallelism", CacheProperty.QUERY_PARALLELISM, "i32"),
    ("query_detail_metrics_size", CacheProperty.QUERY_DETAIL_METRICS_SIZE, "i32"),
    ("sql_schema", CacheProperty.SQL_SCHEMA, "str"),
    ("sql_index_max_inline_size", CacheProperty.SQL_INDEX_MAX_INLINE_SIZE, "i32"),
    ("sql_escape_all", CacheProperty.SQL_ESCAPE_ALL, "bool"),
    ("max_query_iterators_count", CacheProperty.MAX_QUERY_ITERATORS_COUNT, "i32"),
    ("rebalance_mode", CacheProperty.REBALANCE_MODE, "i32"),
    ("rebalance_delay", CacheProperty.REBALANCE_DELAY, "i64"),
    ("rebalance_timeout", CacheProperty.REBALANCE_TIMEOUT, "i64"),
    ("rebalance_batch_size", CacheProperty.REBALANCE_BATCH_SIZE, "i32"),
    ("rebalance_batches_prefetch_count", CacheProperty.REBALANCE_BATCHES_PREFETCH_COUNT, "i64"),
    ("rebalance_order", CacheProperty.REBALANCE_ORDER, "i32"),
    ("rebalance_throttle", CacheProperty.REBALANCE_THROTTLE, "i64"),
    ("group_name", CacheProperty.GROUP_NAME, "str"),
    ("default_lock_timeout", CacheProperty.DEFAULT_LOCK_TIMEOUT, "i64"),
    ("max_concurrent_async_operations", CacheProperty.MAX_CONCURRENT_ASYNC_OPERATIONS, "i32"),
    ("partition_loss_policy", CacheProperty.PARTITION_LOSS_POLICY, "i32"),
    ("eager_ttl", CacheProperty.EAGER_TTL, "bool"),
    ("statistics_enabled", CacheProperty.STATISTICS_ENABLED, "bool"),
)

# The get-configuration answer, in server write order (ClientCacheConfigurationSerializer.write).
_FIXED_ORDER: tuple[tuple[str, str], ...] = (
    ("atomicity_mode", "i32"),
    ("backups", "i32"),
    ("cache_mode", "i32"),
    ("copy_on_read", "bool"),
    ("data_region_name", "str"),
    ("eager_ttl", "bool"),
    ("statistics_enabled", "bool"),
    ("group_name", "str"),
    ("default_lock_timeout", "i64"),
    ("max_concurrent_async_operations", "i32"),
    ("max_query_iterators_count", "i32"),
    ("name", "str"),
    ("onheap_cache_enabled", "bool"),
    ("partition_loss_policy", "i32"),
    ("query_detail_metrics_size", "i32"),
    ("query_parallelism", "i32"),
    ("read_from_backup", "bool"),
    ("rebalance_batch_size", "i32"),
    ("rebalance_batches_prefetch_count", "i64"),
    ("rebalance_delay", "i64"),
    ("rebalance_mode", "i32"),
    ("rebalance_order", "i32"),
    ("rebalance_throttle", "i64"),
    ("rebalance_timeout", "i64"),
    ("sql_escape_all", "bool"),
    ("sql_index_max_inline_size", "i32"),
    ("sql_schema", "str"),
    ("write_synchronization_mode", "i32"),
)

_ENUM_ATTRS = {
    "cache_mode": CacheMode,
    "atomicity_mode": AtomicityMode,
    "write_synchronization_mode": WriteSynchronizationMode,
    "rebalance_mode": RebalanceMode,
    "partition_loss_policy": PartitionLossPolicy,
}


def _write_scalar(w: ByteWriter, kind: str, value: Any) -> None:
    if kind == "str":
        w.typed_string(value)
    elif kind == "i32":
        w.i32(int(value))
    elif kind == "i64":
        w.i64(int(value))
    else:
        w.bool(bool(value))


def _read_scalar(r: ByteReader, kind: str, what: str) -> Any:
    if kind == "str":
        return r.typed_string(what)
    if kind == "i32":
        return r.i32(what)
    if kind == "i64":
        return r.i64(what)
    return r.bool(what)


def _write_query_entity(w: ByteWriter, e: QueryEntity, version: ProtocolVersion, enc: BinaryEncoder) -> None:
    w.typed_string(e.key_type)
    w.typed_string(e.value_type)
    w.typed_string(e.table_name)
    w.typed_string(e.key_field_name)
    w.typed_string(e.value_field_name)
    w.i32(len(e.fields))
    for f in e.fields:
        w.typed_string(f.name)
        w.typed_string(f.type_name)
        w.bool(f.is_key)
        w.bool(f.not_null)
        enc.write(w, f.default)
        if version >= V1_2_0:
            w.i32(f.precision)
            w.i32(f.scale)
    w.i32(len(e.aliases))
    for k, v in e.aliases.items():
        w.typed_string(k)
        w.typed_string(v)
    w.i32(len(e.indexes))
    for idx in e.indexes:
        w.typed_string(idx.name)
        w.u8(int(idx.index_type))
        w.i32(idx.inline_size)
        w.i32(len(idx.fields))
        for fname, descending in idx.fields:
            w.typed_string(fname)
            w.bool(descending)


def _read_query_entity(r: ByteReader, version: ProtocolVersion, dec: BinaryDecoder) -> QueryEntity:
    e = QueryEntity(
        key_type=r.typed_string("query entity key type") or "",
        value_type=r.typed_string("query entity value type") or "",
        table_name=r.typed_string("table name"),
        key_field_name=r.typed_string("key field name"),
        value_field_name=r.typed_string("value field name"),
    )
    for _ in range(r.length("query field count", 6)):
        name = r.typed_string("query field name") or ""
        type_name = r.typed_string("query field type") or ""
        is_key = r.bool("query field is-key")
        not_null = r.bool("query field not-null")
        default, r.pos = dec.decode_at(r.buf, r.pos, r.end)
        precision = scale = -1
        if version >= V1_2_0:
            precision = r.i32("query field precision")
            scale = r.i32("query field scale")
        e.fields.append(QueryField(name, type_name, is_key, not_null, default, precision, scale))
    for _ in range(r.length("alias count", 2)):
        k = r.typed_string("alias field") or ""
        e.aliases[k] = r.typed_string("alias") or ""
    for _ in range(r.length("index count", 10)):
        name = r.typed_string("index name")
        index_type = r.u8("index type")
        inline_size = r.i32("index inline size")
        fields = []
        for _ in range(r.length("index field count", 2)):
            fname = r.typed_string("index field") or ""
            fields.append((fname, r.bool("index field descending")))
        e.indexes.append(QueryIndex(name, fields, index_type, inline_size))
    return e


def encode_cache_configuration(
    w: ByteWriter, cfg: CacheConfiguration, version: ProtocolVersion = V1_7_0, encoder: BinaryEncoder | None = None
) -> None:
    """Append the create-with-configuration property list for ``cfg`` to ``w``."""
    if not cfg.name:
        raise ValueError("a cache configuration needs a name")
    enc = encoder or BinaryEncoder()
    len_pos = w.reserve_i32()
    count_pos = len(w.buf)
    w.i16(0)
    count = 0
    for attr, code, kind in _SCALARS:
        value = getattr(cfg, attr)
        if value is None:
            continue
        w.i16(code)
        _write_scalar(w, kind, value)
        count += 1
    if cfg.key_configurations:
        w.i16(CacheProperty.KEY_CONFIGURATION)
        w.i32(len(cfg.key_configurations))
        for type_name, affinity_field in cfg.key_configurations:
            w.typed_string(type_name)
            w.typed_string(affinity_field)
        count += 1
    if cfg.query_entities:
        w.i16(CacheProperty.QUERY_ENTITIES)
        w.i32(len(cfg.query_entities))
        for e in cfg.query_entities:
            _write_query_entity(w, e, version, enc)
        count += 1
    if cfg.expiry_policy is not None:
        if version < V1_6_0:
            raise ValueError(f"expiry policies need protocol 1.6.0, connection uses {version}")
        w.i16(CacheProperty.EXPIRY_POLICY)
        w.bool(True)
        w.i64(cfg.expiry_policy.create_ms)
        w.i64(cfg.expiry_policy.update_ms)
        w.i64(cfg.expiry_policy.access_ms)
        count += 1
    w.patch_i32(len_pos, len(w.buf) - len_pos - 4)
    w.patch_i16(count_pos, count)


def decode_cache_configuration(
    r: ByteReader, version: ProtocolVersion = V1_7_0, decoder: BinaryDecoder | None = None
) -> CacheConfiguration:
    """Read the fixed-layout configuration of a get-configuration response."""
    dec = decoder or BinaryDecoder()
    length = r.length("cache configuration length")
    end = r.pos + length
    values: dict[str, Any] = {}
    for attr, kind in _FIXED_ORDER:
        value = _read_scalar(r, kind, attr)
        enum = _ENUM_ATTRS.get(attr)
        if enum is not None:
            try:
                value = enum(value)
            except ValueError:
                pass  # keep unknown ordinals as ints rather than fail
        values[attr] = value
    cfg = CacheConfiguration(**values)
    for _ in range(r.length("key configuration count", 2)):
        type_name = r.typed_string("key configuration type") or ""
        cfg.key_configurations.append((type_name, r.typed_string("affinity key field") or ""))
    for _ in range(r.length("query entity count", 5)):
        cfg.query_entities.append(_read_query_entity(r, version, dec))
    if version >= V1_6_0 and r.pos < end:
        if r.bool("expiry policy present"):
            cfg.expiry_policy = ExpiryPolicy(r.i64("expiry create"), r.i64("expiry update"), r.i64("expiry access"))
    if r.pos > end:
        raise ProtocolError(f"cache configuration overran its declared length {length}")
    r.pos = end  # skip properties a newer server may append
    return cfg
