"""Request encoders: one function per operation, each returning a complete frame.

Every function takes the request id first and returns ``bytes`` ready for the
socket (length prefix included).  Keys, values and arguments are written with
a :class:`~.binary.BinaryEncoder`; pass your own ``encoder`` to learn which
binary types the request contains (``encoder.types``) and register them
before sending.

Layouts follow the server's request classes (``ClientCache*Request`` and
friends).  Cache requests start with ``int cache id, byte flags``; the flags
add ``long create, long update, long access`` (expiry policy, 0x04) and then
``int tx id`` (transactional, 0x02, data requests only).
"""

from __future__ import annotations

import struct
import uuid as _uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tensorflow_ignite.protocol.binary import BinaryEncoder
from tensorflow_ignite.protocol.buffer import ByteWriter
from tensorflow_ignite.protocol.cache_config import CacheConfiguration, ExpiryPolicy, encode_cache_configuration
from tensorflow_ignite.protocol.codes import (
    V1_7_0,
    CacheRequestFlag,
    ClusterState,
    Feature,
    Op,
    PeekMode,
    PlatformId,
    ProtocolVersion,
    StatementType,
    TypeCode,
    TxConcurrency,
    TxIsolation,
)
from tensorflow_ignite.protocol.framing import REQUEST_HEADER, DEFAULT_FEATURES, finish_request, start_request
from tensorflow_ignite.protocol.values import BinaryType

__all__ = [
    "CacheOptions",
    "resource_close",
    "heartbeat",
    "get_idle_timeout",
    "cache_get",
    "cache_put",
    "cache_put_if_absent",
    "cache_get_all",
    "cache_put_all",
    "cache_put_all_encoded",
    "cache_put_bytes_head_into",
    "cache_get_and_put",
    "cache_get_and_replace",
    "cache_get_and_remove",
    "cache_get_and_put_if_absent",
    "cache_replace",
    "cache_replace_if_equals",
    "cache_contains_key",
    "cache_contains_keys",
    "cache_clear",
    "cache_clear_key",
    "cache_clear_keys",
    "cache_remove_key",
    "cache_remove_if_equals",
    "cache_remove_keys",
    "cache_remove_all",
    "cache_get_size",
    "cache_local_peek",
    "cache_get_names",
    "cache_create_with_name",
    "cache_get_or_create_with_name",
    "cache_create_with_configuration",
    "cache_get_or_create_with_configuration",
    "cache_get_configuration",
    "cache_destroy",
    "cache_partitions",
    "query_scan",
    "query_scan_cursor_get_page",
    "query_sql_fields",
    "query_sql_fields_cursor_get_page",
    "binary_type_name_get",
    "binary_type_name_put",
    "binary_type_get",
    "binary_type_put",
    "write_binary_type",
    "tx_start",
    "tx_end",
    "cluster_get_state",
    "cluster_change_state",
    "cluster_group_get_node_ids",
    "cluster_group_get_node_info",
    "compute_task_execute",
    "service_invoke",
    "data_streamer_start",
    "data_streamer_add_data",
]


class CacheOptions:
    """Per-request cache flags: keep-binary, transaction id, expiry policy.

    Immutable and cheap; ``CacheOptions()`` (no flags) is the common case.
    """

    __slots__ = ("keep_binary", "tx_id", "expiry")

    def __init__(self, keep_binary: bool = False, tx_id: int | None = None, expiry: ExpiryPolicy | None = None) -> None:
        self.keep_binary = keep_binary
        self.tx_id = tx_id
        self.expiry = expiry

    def flags(self) -> int:
        f = 0
        if self.keep_binary:
            f |= CacheRequestFlag.KEEP_BINARY
        if self.tx_id is not None:
            f |= CacheRequestFlag.TRANSACTIONAL
        if self.expiry is not None:
            f |= CacheRequestFlag.WITH_EXPIRY_POLICY
        return f


_NO_OPTIONS = CacheOptions()


def _cache_header(w: ByteWriter, cache_id: int, opts: CacheOptions | None, data_request: bool = True) -> None:
    opts = opts or _NO_OPTIONS
    if opts.tx_id is not None and not data_request:
        raise ValueError("this cache operation cannot run inside a transaction")
    w.i32(cache_id)
    w.u8(opts.flags())
    if opts.expiry is not None:
        w.i64(opts.expiry.create_ms)
        w.i64(opts.expiry.update_ms)
        w.i64(opts.expiry.access_ms)
    if opts.tx_id is not None:
        w.i32(opts.tx_id)


def _enc(encoder: BinaryEncoder | None) -> BinaryEncoder:
    return encoder if encoder is not None else BinaryEncoder()


# ------------------------------------------------------------------ general
def resource_close(request_id: int, resource_id: int) -> bytes:
    """Close a cursor, streamer or other server resource (op 0): ``long resource id``."""
    w = start_request(Op.RESOURCE_CLOSE, request_id)
    w.i64(resource_id)
    return finish_request(w)


def heartbeat(request_id: int) -> bytes:
    """Keep the connection alive (op 1, HEARTBEAT feature); empty body."""
    return finish_request(start_request(Op.HEARTBEAT, request_id))


def get_idle_timeout(request_id: int) -> bytes:
    """Ask the server's idle timeout (op 2); the answer is a long (ms)."""
    return finish_request(start_request(Op.GET_IDLE_TIMEOUT, request_id))


# ------------------------------------------------------------------ key-value
def _key_op(
    op: int,
    request_id: int,
    cache_id: int,
    values: Sequence[tuple[Any, int | None]],
    opts: CacheOptions | None,
    encoder: BinaryEncoder | None,
) -> bytes:
    enc = _enc(encoder)
    w = start_request(op, request_id)
    _cache_header(w, cache_id, opts)
    for value, code in values:
        enc.write(w, value, code)
    return finish_request(w)


def _keys_op(
    op: int,
    request_id: int,
    cache_id: int,
    keys: Iterable[Any],
    key_type: int | None,
    opts: CacheOptions | None,
    encoder: BinaryEncoder | None,
) -> bytes:
    enc = _enc(encoder)
    keys = list(keys)
    w = start_request(op, request_id)
    _cache_header(w, cache_id, opts)
    w.i32(len(keys))
    for k in keys:
        enc.write(w, k, key_type)
    return finish_request(w)


def cache_get(
    request_id: int, cache_id: int, key: Any, *, key_type: int | None = None,
    opts: CacheOptions | None = None, encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_CACHE_GET (1000): key; answer: value or null."""
    return _key_op(Op.CACHE_GET, request_id, cache_id, [(key, key_type)], opts, encoder)


def cache_put(
    request_id: int, cache_id: int, key: Any, value: Any, *, key_type: int | None = None,
    value_type: int | None = None, opts: CacheOptions | None = None, encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_CACHE_PUT (1001): key, value; empty answer."""
    return _key_op(Op.CACHE_PUT, request_id, cache_id, [(key, key_type), (value, value_type)], opts, encoder)


def cache_put_if_absent(
    request_id: int, cache_id: int, key: Any, value: Any, *, key_type: int | None = None,
    value_type: int | None = None, opts: CacheOptions | None = None, encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_CACHE_PUT_IF_ABSENT (1002): key, value; answer: bool."""
    return _key_op(Op.CACHE_PUT_IF_ABSENT, request_id, cache_id, [(key, key_type), (value, value_type)], opts, encoder)


def cache_get_and_put(
    request_id: int, cache_id: int, key: Any, value: Any, *, key_type: int | None = None,
    value_type: int | None = None, opts: CacheOptions | None = None, encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_CACHE_GET_AND_PUT (1005): key, value; answer: previous value."""
    return _key_op(Op.CACHE_GET_AND_PUT, request_id, cache_id, [(key, key_type), (value, value_type)], opts, encoder)


def cache_get_and_replace(
    request_id: int, cache_id: int, key: Any, value: Any, *, key_type: int | None = None,
    value_type: int | None = None, opts: CacheOptions | None = None, encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_CACHE_GET_AND_REPLACE (1006): key, value; answer: previous value."""
    return _key_op(
        Op.CACHE_GET_AND_REPLACE, request_id, cache_id, [(key, key_type), (value, value_type)], opts, encoder
    )


def cache_get_and_put_if_absent(
    request_id: int, cache_id: int, key: Any, value: Any, *, key_type: int | None = None,
    value_type: int | None = None, opts: CacheOptions | None = None, encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_CACHE_GET_AND_PUT_IF_ABSENT (1008): key, value; answer: previous value."""
    return _key_op(
        Op.CACHE_GET_AND_PUT_IF_ABSENT, request_id, cache_id, [(key, key_type), (value, value_type)], opts, encoder
    )


def cache_replace(
    request_id: int, cache_id: int, key: Any, value: Any, *, key_type: int | None = None,
    value_type: int | None = None, opts: CacheOptions | None = None, encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_CACHE_REPLACE (1009): key, value; answer: bool."""
    return _key_op(Op.CACHE_REPLACE, request_id, cache_id, [(key, key_type), (value, value_type)], opts, encoder)


def cache_replace_if_equals(
    request_id: int, cache_id: int, key: Any, old_value: Any, new_value: Any, *, key_type: int | None = None,
    value_type: int | None = None, opts: CacheOptions | None = None, encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_CACHE_REPLACE_IF_EQUALS (1010): key, old value, new value; answer: bool."""
    return _key_op(
        Op.CACHE_REPLACE_IF_EQUALS, request_id, cache_id,
        [(key, key_type), (old_value, value_type), (new_value, value_type)], opts, encoder,
    )


def cache_get_and_remove(
    request_id: int, cache_id: int, key: Any, *, key_type: int | None = None,
    opts: CacheOptions | None = None, encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_CACHE_GET_AND_REMOVE (1007): key; answer: previous value."""
    return _key_op(Op.CACHE_GET_AND_REMOVE, request_id, cache_id, [(key, key_type)], opts, encoder)


def cache_contains_key(
    request_id: int, cache_id: int, key: Any, *, key_type: int | None = None,
    opts: CacheOptions | None = None, encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_CACHE_CONTAINS_KEY (1011): key; answer: bool."""
    return _key_op(Op.CACHE_CONTAINS_KEY, request_id, cache_id, [(key, key_type)], opts, encoder)


def cache_clear_key(
    request_id: int, cache_id: int, key: Any, *, key_type: int | None = None,
    opts: CacheOptions | None = None, encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_CACHE_CLEAR_KEY (1014): key; empty answer."""
    return _key_op(Op.CACHE_CLEAR_KEY, request_id, cache_id, [(key, key_type)], opts, encoder)


def cache_remove_key(
    request_id: int, cache_id: int, key: Any, *, key_type: int | None = None,
    opts: CacheOptions | None = None, encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_CACHE_REMOVE_KEY (1016): key; answer: bool."""
    return _key_op(Op.CACHE_REMOVE_KEY, request_id, cache_id, [(key, key_type)], opts, encoder)


def cache_remove_if_equals(
    request_id: int, cache_id: int, key: Any, value: Any, *, key_type: int | None = None,
    value_type: int | None = None, opts: CacheOptions | None = None, encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_CACHE_REMOVE_IF_EQUALS (1017): key, value; answer: bool."""
    return _key_op(
        Op.CACHE_REMOVE_IF_EQUALS, request_id, cache_id, [(key, key_type), (value, value_type)], opts, encoder
    )


def cache_get_all(
    request_id: int, cache_id: int, keys: Iterable[Any], *, key_type: int | None = None,
    opts: CacheOptions | None = None, encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_CACHE_GET_ALL (1003): int count, keys; answer: int count, (key, value) pairs."""
    return _keys_op(Op.CACHE_GET_ALL, request_id, cache_id, keys, key_type, opts, encoder)


def cache_contains_keys(
    request_id: int, cache_id: int, keys: Iterable[Any], *, key_type: int | None = None,
    opts: CacheOptions | None = None, encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_CACHE_CONTAINS_KEYS (1012): int count, keys; answer: bool."""
    return _keys_op(Op.CACHE_CONTAINS_KEYS, request_id, cache_id, keys, key_type, opts, encoder)


def cache_clear_keys(
    request_id: int, cache_id: int, keys: Iterable[Any], *, key_type: int | None = None,
    opts: CacheOptions | None = None, encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_CACHE_CLEAR_KEYS (1015): int count, keys; empty answer."""
    return _keys_op(Op.CACHE_CLEAR_KEYS, request_id, cache_id, keys, key_type, opts, encoder)


def cache_remove_keys(
    request_id: int, cache_id: int, keys: Iterable[Any], *, key_type: int | None = None,
    opts: CacheOptions | None = None, encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_CACHE_REMOVE_KEYS (1018): int count, keys; empty answer."""
    return _keys_op(Op.CACHE_REMOVE_KEYS, request_id, cache_id, keys, key_type, opts, encoder)


def cache_put_all(
    request_id: int, cache_id: int, entries: Mapping[Any, Any] | Iterable[tuple[Any, Any]], *,
    key_type: int | None = None, value_type: int | None = None, opts: CacheOptions | None = None,
    encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_CACHE_PUT_ALL (1004): int count, (key, value) pairs; empty answer."""
    enc = _enc(encoder)
    pairs = list(entries.items()) if isinstance(entries, Mapping) else list(entries)
    w = start_request(Op.CACHE_PUT_ALL, request_id)
    _cache_header(w, cache_id, opts)
    w.i32(len(pairs))
    for k, v in pairs:
        enc.write(w, k, key_type)
        enc.write(w, v, value_type)
    return finish_request(w)


#: ``int cache id, byte flags`` of a plain cache request ...
_CACHE_HEAD = struct.Struct("<ib")
#: ... and of a put-all, followed by ``int count``.
_PUT_ALL_HEAD = struct.Struct("<ibi")
_STRING_HEAD = struct.Struct("<Bi")  # type code, length: a String or a byte[] header


def cache_put_all_encoded(cache_id: int, rows: int, entries: bytes | bytearray | memoryview) -> bytearray:
    """A CACHE_PUT_ALL frame (request id 0, see :func:`~.framing.reusable_frame`) around
    ``rows`` key/value pairs already encoded back to back (the writer's bulk encoder)."""
    head = REQUEST_HEADER.size + _PUT_ALL_HEAD.size
    frame = bytearray(head + len(entries))
    REQUEST_HEADER.pack_into(frame, 0, len(frame) - 4, Op.CACHE_PUT_ALL, 0)
    _PUT_ALL_HEAD.pack_into(frame, REQUEST_HEADER.size, cache_id, 0, rows)
    frame[head:] = entries
    return frame


def cache_put_bytes_head_into(buffer: bytearray, end: int, cache_id: int, key: str, length: int) -> int:
    """Write the head of a CACHE_PUT of a String key and a ``length``-byte ``byte[]`` value so
    that it ends at ``buffer[end]``; returns where it starts.

    The value's bytes are not part of it: they follow in the buffer (a block read into
    place after the head's room) or are sent from the caller's memory
    (``Connection.send_parts``), so a large value is never copied into a frame.  The
    request id is 0 (:func:`~.framing.reusable_frame`).
    """
    kb = key.encode()
    head_len = REQUEST_HEADER.size + _CACHE_HEAD.size + _STRING_HEAD.size + len(kb) + _STRING_HEAD.size
    start = end - head_len
    if start < 0:
        raise ValueError(f"key {key!r} too long for the {end} bytes of room before the value")
    p = start
    REQUEST_HEADER.pack_into(buffer, p, head_len - 4 + length, Op.CACHE_PUT, 0)
    p += REQUEST_HEADER.size
    _CACHE_HEAD.pack_into(buffer, p, cache_id, 0)
    p += _CACHE_HEAD.size
    _STRING_HEAD.pack_into(buffer, p, TypeCode.STRING, len(kb))
    p += _STRING_HEAD.size
    buffer[p:p + len(kb)] = kb
    p += len(kb)
    _STRING_HEAD.pack_into(buffer, p, TypeCode.BYTE_ARR, length)
    return start


def cache_clear(request_id: int, cache_id: int, *, opts: CacheOptions | None = None) -> bytes:
    """OP_CACHE_CLEAR (1013): empty body after the cache header."""
    w = start_request(Op.CACHE_CLEAR, request_id)
    _cache_header(w, cache_id, opts)
    return finish_request(w)


def cache_remove_all(request_id: int, cache_id: int, *, opts: CacheOptions | None = None) -> bytes:
    """OP_CACHE_REMOVE_ALL (1019): empty body after the cache header."""
    w = start_request(Op.CACHE_REMOVE_ALL, request_id)
    _cache_header(w, cache_id, opts)
    return finish_request(w)


def cache_get_size(
    request_id: int, cache_id: int, peek_modes: Iterable[int] = (), *, opts: CacheOptions | None = None
) -> bytes:
    """OP_CACHE_GET_SIZE (1020): int count, byte peek modes (none = ALL); answer: long."""
    modes = [int(m) for m in peek_modes]
    w = start_request(Op.CACHE_GET_SIZE, request_id)
    _cache_header(w, cache_id, opts)
    w.i32(len(modes))
    for m in modes:
        w.u8(m)
    return finish_request(w)


def cache_local_peek(
    request_id: int, cache_id: int, key: Any, peek_modes: Iterable[int] = (PeekMode.ALL,), *,
    key_type: int | None = None, opts: CacheOptions | None = None, encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_CACHE_LOCAL_PEEK (1021): key, int count, byte peek modes; answer: value."""
    enc = _enc(encoder)
    modes = [int(m) for m in peek_modes]
    w = start_request(Op.CACHE_LOCAL_PEEK, request_id)
    _cache_header(w, cache_id, opts)
    enc.write(w, key, key_type)
    w.i32(len(modes))
    for m in modes:
        w.u8(m)
    return finish_request(w)


# ------------------------------------------------------------ cache management
def cache_get_names(request_id: int) -> bytes:
    """OP_CACHE_GET_NAMES (1050): empty body; answer: int count, strings."""
    return finish_request(start_request(Op.CACHE_GET_NAMES, request_id))


def cache_create_with_name(request_id: int, name: str) -> bytes:
    """OP_CACHE_CREATE_WITH_NAME (1051): typed string name."""
    w = start_request(Op.CACHE_CREATE_WITH_NAME, request_id)
    w.typed_string(name)
    return finish_request(w)


def cache_get_or_create_with_name(request_id: int, name: str) -> bytes:
    """OP_CACHE_GET_OR_CREATE_WITH_NAME (1052): typed string name."""
    w = start_request(Op.CACHE_GET_OR_CREATE_WITH_NAME, request_id)
    w.typed_string(name)
    return finish_request(w)


def cache_create_with_configuration(
    request_id: int, config: CacheConfiguration, version: ProtocolVersion = V1_7_0
) -> bytes:
    """OP_CACHE_CREATE_WITH_CONFIGURATION (1053): property list (see ``cache_config``)."""
    w = start_request(Op.CACHE_CREATE_WITH_CONFIGURATION, request_id)
    encode_cache_configuration(w, config, version)
    return finish_request(w)


def cache_get_or_create_with_configuration(
    request_id: int, config: CacheConfiguration, version: ProtocolVersion = V1_7_0
) -> bytes:
    """OP_CACHE_GET_OR_CREATE_WITH_CONFIGURATION (1054): property list."""
    w = start_request(Op.CACHE_GET_OR_CREATE_WITH_CONFIGURATION, request_id)
    encode_cache_configuration(w, config, version)
    return finish_request(w)


def cache_get_configuration(request_id: int, cache_id: int) -> bytes:
    """OP_CACHE_GET_CONFIGURATION (1055): int cache id, byte flags."""
    w = start_request(Op.CACHE_GET_CONFIGURATION, request_id)
    _cache_header(w, cache_id, None, data_request=False)
    return finish_request(w)


def cache_destroy(request_id: int, cache_id: int) -> bytes:
    """OP_CACHE_DESTROY (1056): int cache id only (no flags byte)."""
    w = start_request(Op.CACHE_DESTROY, request_id)
    w.i32(cache_id)
    return finish_request(w)


def cache_partitions(
    request_id: int, cache_ids: Iterable[int], *, features: Iterable[int] = DEFAULT_FEATURES,
    custom_mappings: bool = False,
) -> bytes:
    """OP_CACHE_PARTITIONS (1101): [bool custom mappings], int count, int cache ids.

    The leading bool exists only when ALL_AFFINITY_MAPPINGS (13) was negotiated
    (``ClientCachePartitionsRequest``).
    """
    ids = [int(c) for c in cache_ids]
    w = start_request(Op.CACHE_PARTITIONS, request_id)
    if Feature.ALL_AFFINITY_MAPPINGS in frozenset(int(f) for f in features):
        w.bool(custom_mappings)
    w.i32(len(ids))
    for c in ids:
        w.i32(c)
    return finish_request(w)


# ------------------------------------------------------------------ queries
def query_scan(
    request_id: int, cache_id: int, *, page_size: int = 1024, partition: int = -1, local: bool = False,
    filter: Any = None, filter_platform: int = 1, opts: CacheOptions | None = None,
    encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_QUERY_SCAN (2000): filter object (null), [byte platform], int page size, int partition, bool local.

    ``partition`` -1 scans all partitions; a single partition is best sent to
    its primary node.  ``filter_platform`` (1 Java, 2 .NET) follows a non-null
    filter only.
    """
    if page_size <= 0:
        raise ValueError(f"scan page size must be positive, got {page_size}")
    w = start_request(Op.QUERY_SCAN, request_id)
    _cache_header(w, cache_id, opts)
    if filter is None:
        w.u8(101)
    else:
        _enc(encoder).write(w, filter)
        w.u8(filter_platform)
    w.i32(page_size)
    w.i32(partition)
    w.bool(local)
    return finish_request(w)


def query_scan_cursor_get_page(request_id: int, cursor_id: int) -> bytes:
    """OP_QUERY_SCAN_CURSOR_GET_PAGE (2001): long cursor id."""
    w = start_request(Op.QUERY_SCAN_CURSOR_GET_PAGE, request_id)
    w.i64(cursor_id)
    return finish_request(w)


def query_sql_fields(
    request_id: int, cache_id: int, sql: str, args: Sequence[Any] = (), *, schema: str | None = None,
    page_size: int = 1024, max_rows: int = -1, statement_type: int = StatementType.ANY,
    distributed_joins: bool = False, local: bool = False, replicated_only: bool = False,
    enforce_join_order: bool = False, collocated: bool = False, lazy: bool = False, timeout_ms: int = 0,
    include_field_names: bool = True, partitions: Sequence[int] | None = None, update_batch_size: int = 1,
    features: Iterable[int] = DEFAULT_FEATURES, opts: CacheOptions | None = None,
    encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_QUERY_SQL_FIELDS (2004) (``ClientCacheSqlFieldsQueryRequest``).

    Body: schema string, int page size, int max rows, sql string, int arg count
    + args, byte statement type, bools distributed joins / local / replicated
    only / enforce join order / collocated / lazy, long timeout, bool include
    field names, and with QRY_PARTITIONS_BATCH_SIZE: int partition count (-1 =
    all) + ints, int update batch size.  ``cache_id`` 0 runs the query outside
    any cache (``schema`` then names the SQL schema, e.g. "PUBLIC").
    """
    if page_size <= 0:
        raise ValueError(f"SQL page size must be positive, got {page_size}")
    enc = _enc(encoder)
    w = start_request(Op.QUERY_SQL_FIELDS, request_id)
    _cache_header(w, cache_id, opts)
    w.typed_string(schema)
    w.i32(page_size)
    w.i32(max_rows)
    w.typed_string(sql)
    w.i32(len(args))
    for a in args:
        enc.write(w, a)
    w.u8(int(statement_type))
    w.bool(distributed_joins)
    w.bool(local)
    w.bool(replicated_only)
    w.bool(enforce_join_order)
    w.bool(collocated)
    w.bool(lazy)
    w.i64(timeout_ms)
    w.bool(include_field_names)
    if Feature.QRY_PARTITIONS_BATCH_SIZE in frozenset(int(f) for f in features):
        if partitions is None:
            w.i32(-1)
        else:
            w.i32(len(partitions))
            for p in partitions:
                w.i32(p)
        w.i32(update_batch_size)
    elif partitions is not None:
        raise ValueError("SQL partitions need the QRY_PARTITIONS_BATCH_SIZE feature")
    return finish_request(w)


def query_sql_fields_cursor_get_page(request_id: int, cursor_id: int) -> bytes:
    """OP_QUERY_SQL_FIELDS_CURSOR_GET_PAGE (2005): long cursor id."""
    w = start_request(Op.QUERY_SQL_FIELDS_CURSOR_GET_PAGE, request_id)
    w.i64(cursor_id)
    return finish_request(w)


# ------------------------------------------------------------- binary metadata
def binary_type_name_get(request_id: int, type_id: int, platform: int = PlatformId.JAVA) -> bytes:
    """OP_BINARY_TYPE_NAME_GET (3000): byte platform, int type id; answer: string."""
    w = start_request(Op.BINARY_TYPE_NAME_GET, request_id)
    w.u8(platform)
    w.i32(type_id)
    return finish_request(w)


def binary_type_name_put(request_id: int, type_id: int, type_name: str, platform: int = PlatformId.JAVA) -> bytes:
    """OP_BINARY_TYPE_NAME_PUT (3001): byte platform, int type id, string name; answer: bool."""
    w = start_request(Op.BINARY_TYPE_NAME_PUT, request_id)
    w.u8(platform)
    w.i32(type_id)
    w.typed_string(type_name)
    return finish_request(w)


def binary_type_get(request_id: int, type_id: int) -> bytes:
    """OP_BINARY_TYPE_GET (3002): int type id; answer: bool exists + metadata."""
    w = start_request(Op.BINARY_TYPE_GET, request_id)
    w.i32(type_id)
    return finish_request(w)


def write_binary_type(w: ByteWriter, t: BinaryType) -> None:
    """Binary type metadata (``ClientUtils.binaryMetadata``): id, name, affinity field,
    fields (name, type code, field id), is-enum [+ values], schemas (id, field ids)."""
    w.i32(t.type_id)
    w.typed_string(t.type_name)
    w.typed_string(t.affinity_key_field)
    w.i32(len(t.fields))
    for f in t.fields.values():
        w.typed_string(f.name)
        w.i32(int(f.type_code))
        w.i32(f.field_id)
    w.bool(t.is_enum)
    if t.is_enum:
        w.i32(len(t.enum_values))
        for name, ordinal in t.enum_values.items():
            w.typed_string(name)
            w.i32(ordinal)
    w.i32(len(t.schemas))
    for sid, ids in t.schemas.items():
        w.i32(sid)
        w.i32(len(ids))
        for fid in ids:
            w.i32(fid)


def binary_type_put(request_id: int, binary_type: BinaryType) -> bytes:
    """OP_BINARY_TYPE_PUT (3003): metadata; empty answer."""
    w = start_request(Op.BINARY_TYPE_PUT, request_id)
    write_binary_type(w, binary_type)
    return finish_request(w)


# ------------------------------------------------------------- transactions
def tx_start(
    request_id: int, concurrency: int = TxConcurrency.PESSIMISTIC, isolation: int = TxIsolation.REPEATABLE_READ,
    timeout_ms: int = 0, label: str | None = None,
) -> bytes:
    """OP_TX_START (4000): byte concurrency, byte isolation, long timeout, string label; answer: int tx id."""
    w = start_request(Op.TX_START, request_id)
    w.u8(int(concurrency))
    w.u8(int(isolation))
    w.i64(timeout_ms)
    w.typed_string(label)
    return finish_request(w)


def tx_end(request_id: int, tx_id: int, commit: bool) -> bytes:
    """OP_TX_END (4001): int tx id, bool commit."""
    w = start_request(Op.TX_END, request_id)
    w.i32(tx_id)
    w.bool(commit)
    return finish_request(w)


# ------------------------------------------------------------------ cluster
def cluster_get_state(request_id: int) -> bytes:
    """OP_CLUSTER_GET_STATE (5000): empty body; answer: byte state (``ClusterState``)."""
    return finish_request(start_request(Op.CLUSTER_GET_STATE, request_id))


def cluster_change_state(request_id: int, state: int = ClusterState.ACTIVE) -> bytes:
    """OP_CLUSTER_CHANGE_STATE (5001): byte state."""
    w = start_request(Op.CLUSTER_CHANGE_STATE, request_id)
    w.u8(int(state))
    return finish_request(w)


def cluster_group_get_node_ids(
    request_id: int, topology_version: int = -1, *, attributes: Mapping[str, Any] | None = None,
    server_nodes: bool | None = None, encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_CLUSTER_GROUP_GET_NODE_IDS (5100): long known topology version, projection.

    Projection: int item count, then per item ``short 1, string name, object
    value`` (attribute filter) or ``short 2, bool`` (true = servers only).
    """
    enc = _enc(encoder)
    items = dict(attributes or {})
    w = start_request(Op.CLUSTER_GROUP_GET_NODE_IDS, request_id)
    w.i64(topology_version)
    w.i32(len(items) + (0 if server_nodes is None else 1))
    for name, value in items.items():
        w.i16(1)
        w.typed_string(name)
        enc.write(w, value)
    if server_nodes is not None:
        w.i16(2)
        w.bool(server_nodes)
    return finish_request(w)


def _raw_uuids(w: ByteWriter, node_ids: Sequence[_uuid.UUID]) -> None:
    w.i32(len(node_ids))
    for n in node_ids:
        w.raw_uuid(n)


def cluster_group_get_node_info(request_id: int, node_ids: Sequence[_uuid.UUID]) -> bytes:
    """OP_CLUSTER_GROUP_GET_NODE_INFO (5101): int count, raw UUIDs (two longs each)."""
    w = start_request(Op.CLUSTER_GROUP_GET_NODE_INFO, request_id)
    _raw_uuids(w, list(node_ids))
    return finish_request(w)


# ------------------------------------------------------- compute and services
def compute_task_execute(
    request_id: int, task_name: str, arg: Any = None, *, node_ids: Sequence[_uuid.UUID] = (), flags: int = 0,
    timeout_ms: int = 0, encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_COMPUTE_TASK_EXECUTE (6000): node ids, byte flags, long timeout, string task, object arg.

    The answer is a long task id; the result arrives later as a notification
    (op 6001) carrying that id.
    """
    w = start_request(Op.COMPUTE_TASK_EXECUTE, request_id)
    _raw_uuids(w, list(node_ids))
    w.u8(flags)
    w.i64(timeout_ms)
    w.typed_string(task_name)
    _enc(encoder).write(w, arg)
    return finish_request(w)


def service_invoke(
    request_id: int, service_name: str, method: str, args: Sequence[Any] = (), *, flags: int = 0,
    timeout_ms: int = 0, node_ids: Sequence[_uuid.UUID] = (), param_type_ids: Sequence[int] | None = None,
    call_attributes: Mapping[str, Any] | None = None, features: Iterable[int] = DEFAULT_FEATURES,
    encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_SERVICE_INVOKE (7000) (``ClientServiceInvokeRequest``).

    Body: string name, byte flags, long timeout, node ids, string method, int
    arg count, per arg [int param type id when flag 0x02] + object, and with
    SERVICE_INVOKE_CALLCTX a caller-attributes map (or null).
    """
    enc = _enc(encoder)
    if param_type_ids is not None:
        if len(param_type_ids) != len(args):
            raise ValueError("param_type_ids must match args one to one")
        flags |= 0x02
    w = start_request(Op.SERVICE_INVOKE, request_id)
    w.typed_string(service_name)
    w.u8(flags)
    w.i64(timeout_ms)
    _raw_uuids(w, list(node_ids))
    w.typed_string(method)
    w.i32(len(args))
    for i, a in enumerate(args):
        if param_type_ids is not None:
            w.i32(param_type_ids[i])
        enc.write(w, a)
    if Feature.SERVICE_INVOKE_CALLCTX in frozenset(int(f) for f in features):
        enc.write(w, None if call_attributes is None else dict(call_attributes))
    elif call_attributes is not None:
        raise ValueError("service call attributes need the SERVICE_INVOKE_CALLCTX feature")
    return finish_request(w)


# ------------------------------------------------------------- data streamer
def _entries(w: ByteWriter, entries: Iterable[tuple[Any, Any]], enc: BinaryEncoder,
             key_type: int | None, value_type: int | None) -> None:
    pairs = list(entries.items()) if isinstance(entries, Mapping) else list(entries)
    w.i32(len(pairs))
    for k, v in pairs:
        enc.write(w, k, key_type)
        enc.write(w, v, value_type)


def data_streamer_start(
    request_id: int, cache_id: int, entries: Iterable[tuple[Any, Any]] = (), *, flags: int = 0,
    per_node_buffer_size: int = -1, per_thread_buffer_size: int = -1, receiver: Any = None,
    receiver_platform: int = 1, key_type: int | None = None, value_type: int | None = None,
    encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_DATA_STREAMER_START (8000): int cache id, byte flags, int per-node and
    per-thread buffer sizes (-1 default), receiver object (null) [+ byte platform],
    int entry count, (key, value) entries; answer: long streamer id (0 if closed).

    A null value removes the key.
    """
    enc = _enc(encoder)
    w = start_request(Op.DATA_STREAMER_START, request_id)
    w.i32(cache_id)
    w.u8(flags)
    w.i32(per_node_buffer_size)
    w.i32(per_thread_buffer_size)
    if receiver is None:
        w.u8(101)
    else:
        enc.write(w, receiver)
        w.u8(receiver_platform)
    _entries(w, entries, enc, key_type, value_type)
    return finish_request(w)


def data_streamer_add_data(
    request_id: int, streamer_id: int, entries: Iterable[tuple[Any, Any]] = (), *, flags: int = 0,
    key_type: int | None = None, value_type: int | None = None, encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_DATA_STREAMER_ADD_DATA (8001): long streamer id, byte flags, int count, entries."""
    w = start_request(Op.DATA_STREAMER_ADD_DATA, request_id)
    w.i64(streamer_id)
    w.u8(flags)
    _entries(w, entries, _enc(encoder), key_type, value_type)
    return finish_request(w)
