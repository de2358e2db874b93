"""Response-body decoders: ``body`` is the payload after the response header.

Use :func:`~.framing.decode_response_header` first; it returns ``body_offset``.
All decoders take that body (a ``memoryview`` slice is cheapest) and raise
:class:`~tensorflow_ignite.errors.ProtocolError` on malformed input.

Query pages are *not* decoded row by row here: :class:`ScanPage` and
:class:`SqlPage` hand back the rows region as a ``memoryview`` so the dataset
layer can decode whole pages at once (``columns.decode_page``).  The region
is found without parsing rows because the has-more flag is the last byte of
the body (``ClientCacheQueryCursor.writePage`` ends the message with it).
"""

from __future__ import annotations

import struct
import uuid as _uuid
from dataclasses import dataclass, field
from typing import Any

from tensorflow_ignite.errors import ProtocolError
from tensorflow_ignite.protocol.binary import BinaryDecoder
from tensorflow_ignite.protocol.buffer import ByteReader
from tensorflow_ignite.protocol.cache_config import CacheConfiguration, decode_cache_configuration
from tensorflow_ignite.protocol.codes import V1_7_0, Feature, ProtocolVersion, TypeCode
from tensorflow_ignite.protocol.framing import DEFAULT_FEATURES
from tensorflow_ignite.protocol.values import BinaryField, BinaryType

_I32 = struct.Struct("<i")

__all__ = [
    "decode_object",
    "decode_bool",
    "decode_int",
    "decode_long",
    "decode_string",
    "decode_byte",
    "decode_byte_array_view",
    "decode_get_all",
    "decode_cache_names",
    "decode_cache_configuration_response",
    "ScanPage",
    "SqlPage",
    "decode_scan_page",
    "decode_sql_fields_page",
    "decode_scan_rows",
    "decode_sql_rows",
    "MAX_PARTITIONS",
    "PartitionGroup",
    "CachePartitions",
    "decode_cache_partitions",
    "read_binary_type",
    "decode_binary_type",
    "NodeVersion",
    "NodeInfo",
    "NodeIds",
    "decode_node_ids",
    "decode_node_info",
]


def _reader(body: bytes | bytearray | memoryview) -> ByteReader:
    return ByteReader(body)


# ------------------------------------------------------------------ scalars
def decode_object(body: bytes | bytearray | memoryview, decoder: BinaryDecoder | None = None) -> Any:
    """A single binary value (get, get-and-put, service result...)."""
    return (decoder or BinaryDecoder()).decode(body)


def decode_bool(body: bytes | bytearray | memoryview) -> bool:
    """A ``ClientBooleanResponse`` (put-if-absent, replace, contains...)."""
    return _reader(body).bool("boolean result")


def decode_byte(body: bytes | bytearray | memoryview) -> int:
    """A single byte (cluster state)."""
    return _reader(body).u8("byte result")


def decode_int(body: bytes | bytearray | memoryview) -> int:
    """A ``ClientIntResponse`` (tx start -> tx id)."""
    return _reader(body).i32("int result")


def decode_long(body: bytes | bytearray | memoryview) -> int:
    """A ``ClientLongResponse`` (size, idle timeout, task id, streamer id)."""
    return _reader(body).i64("long result")


def decode_string(body: bytes | bytearray | memoryview) -> str | None:
    """A ``ClientStringResponse`` (binary type name)."""
    return _reader(body).typed_string("string result")


def decode_byte_array_view(body: bytes | bytearray | memoryview, what: str = "value") -> memoryview | None:
    """A ``byte[]`` (or null) answer as a view of ``body``, without copying it (large file blocks).

    Anything else is a :class:`ProtocolError` naming ``what``.
    """
    view = memoryview(body)
    code = view[0] if len(view) else None
    if code == TypeCode.NULL:
        return None
    if code != TypeCode.BYTE_ARR or len(view) < 5:
        raise ProtocolError(f"{what} is not a byte[] (type {code})")
    (n,) = _I32.unpack_from(view, 1)
    if n < 0 or 5 + n > len(view):
        raise ProtocolError(f"{what}: byte[] length {n} exceeds the response's {len(view) - 5} bytes")
    return view[5 : 5 + n]


def decode_get_all(body: bytes | bytearray | memoryview, decoder: BinaryDecoder | None = None) -> list[tuple[Any, Any]]:
    """OP_CACHE_GET_ALL answer: int count, (key, value) pairs -- as a list of pairs
    (keys such as arrays need not be hashable)."""
    dec = decoder or BinaryDecoder()
    r = _reader(body)
    n = r.length("get-all entry count", 2)
    out = []
    pos = r.pos
    for _ in range(n):
        k, pos = dec.decode_at(r.buf, pos, r.end)
        v, pos = dec.decode_at(r.buf, pos, r.end)
        out.append((k, v))
    return out


def decode_cache_names(body: bytes | bytearray | memoryview) -> list[str]:
    """OP_CACHE_GET_NAMES answer: int count, typed strings."""
    r = _reader(body)
    return [r.typed_string("cache name") or "" for _ in range(r.length("cache name count"))]


def decode_cache_configuration_response(
    body: bytes | bytearray | memoryview, version: ProtocolVersion = V1_7_0, decoder: BinaryDecoder | None = None
) -> CacheConfiguration:
    """OP_CACHE_GET_CONFIGURATION answer (fixed layout, see ``cache_config``)."""
    return decode_cache_configuration(_reader(body), version, decoder)


# ------------------------------------------------------------------ queries
@dataclass(frozen=True, slots=True)
class ScanPage:
    """A page of a scan query: ``row_count`` (key, value) pairs in ``rows``.

    ``cursor_id`` is set on the first page (OP_QUERY_SCAN) and None on later
    pages (the caller knows it).  When ``has_more`` is False the server has
    already closed the cursor.
    """

    cursor_id: int | None
    row_count: int
    rows: memoryview
    has_more: bool


@dataclass(frozen=True, slots=True)
class SqlPage:
    """A page of an SQL fields query: ``row_count`` rows of ``column_count`` values."""

    cursor_id: int | None
    column_count: int
    column_names: tuple[str, ...] | None
    row_count: int
    rows: memoryview
    has_more: bool


def _page_tail(r: ByteReader, values_per_row: int, what: str) -> tuple[int, memoryview, bool]:
    """Row count, rows region and has-more flag of a page starting at ``r.pos``."""
    n = r.i32(f"{what} row count")
    rows_start = r.pos
    rows_end = r.end - 1
    if rows_end < rows_start:
        raise ProtocolError(f"{what}: page without its has-more flag")
    if n < 0 or n * values_per_row > rows_end - rows_start:
        raise ProtocolError(f"{what}: {n} rows cannot fit in {rows_end - rows_start} bytes")
    if n == 0 and rows_end != rows_start:
        raise ProtocolError(f"{what}: {rows_end - rows_start} stray bytes in an empty page")
    has_more = r.buf[rows_end]
    if has_more > 1:
        raise ProtocolError(f"{what}: has-more flag is {has_more}, not a boolean")
    return n, r.buf[rows_start:rows_end], bool(has_more)


def decode_scan_page(body: bytes | bytearray | memoryview, *, first: bool) -> ScanPage:
    """OP_QUERY_SCAN (``first=True``: long cursor id first) or OP_QUERY_SCAN_CURSOR_GET_PAGE answer."""
    r = _reader(body)
    cursor_id = r.i64("scan cursor id") if first else None
    n, rows, has_more = _page_tail(r, 2, "scan page")
    return ScanPage(cursor_id, n, rows, has_more)


def decode_sql_fields_page(
    body: bytes | bytearray | memoryview,
    *,
    first: bool,
    include_field_names: bool = True,
    column_count: int | None = None,
) -> SqlPage:
    """OP_QUERY_SQL_FIELDS (``first=True``) or OP_QUERY_SQL_FIELDS_CURSOR_GET_PAGE answer.

    First page: long cursor id, int column count, [column name strings when
    requested], then the page.  Later pages carry only the page, so pass the
    ``column_count`` from the first one.
    """
    r = _reader(body)
    names: tuple[str, ...] | None = None
    cursor_id = None
    if first:
        cursor_id = r.i64("sql cursor id")
        column_count = r.length("sql column count")
        if include_field_names:
            names = tuple(r.typed_string("column name") or "" for _ in range(column_count))
    elif column_count is None:
        raise ValueError("column_count of the first page is needed to decode a later SQL page")
    n, rows, has_more = _page_tail(r, max(column_count, 1), "sql page")
    if column_count == 0 and n:
        raise ProtocolError(f"sql page: {n} rows without columns")
    return SqlPage(cursor_id, column_count, names, n, rows, has_more)


def decode_scan_rows(page: ScanPage, decoder: BinaryDecoder | None = None) -> list[tuple[Any, Any]]:
    """Decode a scan page row by row into (key, value) pairs (the slow, general path)."""
    dec = decoder or BinaryDecoder()
    out = []
    pos = 0
    region = page.rows
    for _ in range(page.row_count):
        k, pos = dec.decode_at(region, pos)
        v, pos = dec.decode_at(region, pos)
        out.append((k, v))
    if pos != len(region):
        raise ProtocolError(f"scan page: {len(region) - pos} bytes left after {page.row_count} rows")
    return out


def decode_sql_rows(page: SqlPage, decoder: BinaryDecoder | None = None) -> list[list[Any]]:
    """Decode an SQL page row by row (the slow, general path)."""
    dec = decoder or BinaryDecoder()
    out = []
    pos = 0
    region = page.rows
    for _ in range(page.row_count):
        row = []
        for _ in range(page.column_count):
            v, pos = dec.decode_at(region, pos)
            row.append(v)
        out.append(row)
    if pos != len(region):
        raise ProtocolError(f"sql page: {len(region) - pos} bytes left after {page.row_count} rows")
    return out


# ------------------------------------------------------------ partitions
#: Ignite caps a cache at 65,000 partitions (``CacheConfiguration.MAX_PARTITIONS_COUNT``);
#: anything at or above 2**16 in a partition map is corrupt.
MAX_PARTITIONS = 1 << 16


@dataclass(frozen=True, slots=True)
class PartitionGroup:
    """Caches sharing one partition -> primary node mapping.

    ``applicable`` False means partition awareness does not apply (replicated
    cache, custom affinity or node filter): only ``cache_ids`` is set.
    ``key_configs`` maps cache id -> {key type id: affinity key field id};
    ``partitions`` maps node id -> its primary partitions.
    ``default_affinity`` (ALL_AFFINITY_MAPPINGS) tells whether the standard
    rendezvous function applies, i.e. whether the client may compute
    partitions itself.
    """

    applicable: bool
    cache_ids: tuple[int, ...]
    key_configs: dict[int, dict[int, int]] = field(default_factory=dict)
    partitions: dict[_uuid.UUID, tuple[int, ...]] = field(default_factory=dict)
    default_affinity: bool = True

    def partition_count(self) -> int:
        """Number of partitions (highest partition + 1)."""
        return 1 + max((max(p) for p in self.partitions.values() if p), default=-1)

    def partition_to_node(self) -> list[_uuid.UUID | None]:
        """A list indexed by partition giving its primary node."""
        table: list[_uuid.UUID | None] = [None] * self.partition_count()
        for node, parts in self.partitions.items():
            for p in parts:
                table[p] = node
        return table


@dataclass(frozen=True, slots=True)
class CachePartitions:
    """OP_CACHE_PARTITIONS answer: affinity topology version and mapping groups."""

    topology_version: tuple[int, int]
    groups: tuple[PartitionGroup, ...]

    def group_for(self, cache_id: int) -> PartitionGroup | None:
        for g in self.groups:
            if cache_id in g.cache_ids:
                return g
        return None


def decode_cache_partitions(
    body: bytes | bytearray | memoryview, *, features: Any = DEFAULT_FEATURES
) -> CachePartitions:
    """Decode OP_CACHE_PARTITIONS (``ClientCachePartitionsResponse``).

    Body: long topology major, int minor, int group count; per group: bool
    applicable, int cache count; if applicable, per cache ``int cache id, int
    key config count, (int key type id, int affinity field id)...``, then ``int
    node count, (typed UUID node, int partition count, int partitions...)...``
    and, with ALL_AFFINITY_MAPPINGS, bool default affinity; if not applicable,
    just the cache ids.
    """
    all_mappings = Feature.ALL_AFFINITY_MAPPINGS in frozenset(int(f) for f in features)
    r = _reader(body)
    major = r.i64("topology version")
    minor = r.i32("topology minor version")
    groups = []
    for _ in range(r.length("partition group count", 5)):
        applicable = r.bool("partition awareness applicable")
        n_caches = r.length("group cache count", 4)
        if not applicable:
            ids = tuple(r.i32("cache id") for _ in range(n_caches))
            groups.append(PartitionGroup(False, ids))
            continue
        key_configs: dict[int, dict[int, int]] = {}
        ids_list = []
        for _ in range(n_caches):
            cid = r.i32("cache id")
            ids_list.append(cid)
            cfg = {}
            for _ in range(r.length("key configuration count", 8)):
                tid = r.i32("key type id")
                cfg[tid] = r.i32("affinity key field id")
            key_configs[cid] = cfg
        parts: dict[_uuid.UUID, tuple[int, ...]] = {}
        for _ in range(r.length("node count", 5)):
            node = r.typed_uuid("node id")
            if node is None:
                raise ProtocolError("partition mapping with a null node id")
            count = r.length("partition count", 4)
            view = r.view(4 * count, "partitions")
            numbers = struct.unpack(f"<{count}i", view) if count else ()
            # The map is a list indexed by partition: a hostile number must not size it.
            if numbers and not 0 <= min(numbers) <= max(numbers) < MAX_PARTITIONS:
                raise ProtocolError(
                    f"partition mapping of node {node} names partition "
                    f"{min(numbers) if min(numbers) < 0 else max(numbers)}, outside [0, {MAX_PARTITIONS})"
                )
            parts[node] = numbers
        default_affinity = r.bool("default affinity flag") if all_mappings else True
        groups.append(PartitionGroup(True, tuple(ids_list), key_configs, parts, default_affinity))
    r.expect_end("cache partitions response")
    return CachePartitions((major, minor), tuple(groups))


# ------------------------------------------------------------ binary types
def read_binary_type(r: ByteReader) -> BinaryType:
    """Binary type metadata (``ClientUtils.binaryMetadata`` layout, as the server writes it)."""
    tid = r.i32("type id")
    name = r.typed_string("type name") or ""
    affinity = r.typed_string("affinity key field")
    t = BinaryType(tid, name, affinity_key_field=affinity)
    for _ in range(r.length("field count", 9)):
        fname = r.typed_string("field name") or ""
        code = r.i32("field type code")
        t.fields[fname] = BinaryField(fname, code, r.i32("field id"))
    t.is_enum = r.bool("is enum")
    if t.is_enum:
        for _ in range(r.length("enum value count", 5)):
            ename = r.typed_string("enum constant") or ""
            t.enum_values[ename] = r.i32("enum ordinal")
    for _ in range(r.length("schema count", 8)):
        sid = r.i32("schema id")
        n = r.length("schema field count", 4)
        t.schemas[sid] = tuple(r.i32("schema field id") for _ in range(n))
    return t


def decode_binary_type(body: bytes | bytearray | memoryview) -> BinaryType | None:
    """OP_BINARY_TYPE_GET answer: bool exists, then metadata; None if unknown."""
    r = _reader(body)
    if not r.bool("binary type exists"):
        return None
    return read_binary_type(r)


# ------------------------------------------------------------------ cluster
@dataclass(frozen=True, slots=True)
class NodeIds:
    """OP_CLUSTER_GROUP_GET_NODE_IDS answer; ``changed`` False means "same as you knew"."""

    changed: bool
    topology_version: int | None
    node_ids: tuple[_uuid.UUID, ...]


def decode_node_ids(body: bytes | bytearray | memoryview) -> NodeIds:
    """bool changed; if changed: long topology version, int count, raw UUIDs."""
    r = _reader(body)
    if not r.bool("topology changed"):
        return NodeIds(False, None, ())
    top = r.i64("topology version")
    n = r.length("node count", 16)
    return NodeIds(True, top, tuple(r.raw_uuid("node id") for _ in range(n)))


@dataclass(frozen=True, slots=True)
class NodeVersion:
    """``IgniteProductVersion`` of a node."""

    major: int
    minor: int
    maintenance: int
    stage: str | None
    revision_timestamp: int
    revision_hash: bytes | None


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """One node of OP_CLUSTER_GROUP_GET_NODE_INFO."""

    node_id: _uuid.UUID | None
    attributes: dict[str, Any]
    addresses: list[Any]
    host_names: list[Any]
    order: int
    is_local: bool
    is_daemon: bool
    is_client: bool
    consistent_id: Any
    version: NodeVersion


def decode_node_info(body: bytes | bytearray | memoryview, decoder: BinaryDecoder | None = None) -> list[NodeInfo]:
    """Node details (``ClientClusterGroupGetNodesDetailsResponse``): per node typed UUID,
    attributes (int count, string, object), addresses and host names (collections),
    long order, bools local / daemon / client, consistent id object, product version."""
    dec = decoder or BinaryDecoder()
    r = _reader(body)

    def obj() -> Any:
        value, r.pos = dec.decode_at(r.buf, r.pos, r.end)
        return value

    nodes = []
    for _ in range(r.length("node count", 8)):
        node_id = r.typed_uuid("node id")
        attrs = {}
        for _ in range(r.length("attribute count", 2)):
            key = r.typed_string("attribute name") or ""
            attrs[key] = obj()
        addresses = obj()
        hosts = obj()
        order = r.i64("node order")
        is_local = r.bool("is local")
        is_daemon = r.bool("is daemon")
        is_client = r.bool("is client")
        consistent = obj()
        version = NodeVersion(
            r.i8("version major"),
            r.i8("version minor"),
            r.i8("version maintenance"),
            r.typed_string("version stage"),
            r.i64("revision timestamp"),
            r.typed_byte_array("revision hash"),
        )
        nodes.append(
            NodeInfo(
                node_id,
                attrs,
                _names(addresses, "node addresses"),
                _names(hosts, "node host names"),
                order,
                is_local,
                is_daemon,
                is_client,
                consistent,
                version,
            )
        )
    return nodes


def _names(value: Any, what: str) -> list[str]:
    """A collection of strings (or null) from a node's details; anything else is a ProtocolError."""
    if value is None:
        return []
    if not isinstance(value, (list, tuple, set)) or not all(isinstance(v, str) for v in value):
        raise ProtocolError(f"{what}: expected a collection of strings, got {type(value).__name__}")
    return list(value)
