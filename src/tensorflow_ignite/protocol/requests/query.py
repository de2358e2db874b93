"""Scan and SQL fields queries and their cursor pages."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..binary import BinaryEncoder
from ..buffer import I64
from ..codes import Feature, Op, StatementType
from ..framing import DEFAULT_FEATURES, encode_request, finish_request, start_request
from .common import CacheOptions, _enc, cache_header


# ------------------------------------------------------------------ queries
def query_scan(
    request_id: int,
    cache_id: int,
    *,
    page_size: int = 1024,
    partition: int = -1,
    local: bool = False,
    filter: Any = None,
    filter_platform: int = 1,
    opts: CacheOptions | None = None,
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
    cache_header(w, cache_id, opts)
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
    return encode_request(Op.QUERY_SCAN_CURSOR_GET_PAGE, request_id, I64.pack(cursor_id))


def query_sql_fields(
    request_id: int,
    cache_id: int,
    sql: str,
    args: Sequence[Any] = (),
    *,
    schema: str | None = None,
    page_size: int = 1024,
    max_rows: int = -1,
    statement_type: int = StatementType.ANY,
    distributed_joins: bool = False,
    local: bool = False,
    replicated_only: bool = False,
    enforce_join_order: bool = False,
    collocated: bool = False,
    lazy: bool = False,
    timeout_ms: int = 0,
    include_field_names: bool = True,
    partitions: Sequence[int] | None = None,
    update_batch_size: int = 1,
    features: Iterable[int] = DEFAULT_FEATURES,
    opts: CacheOptions | None = None,
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
    cache_header(w, cache_id, opts)
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
    return encode_request(Op.QUERY_SQL_FIELDS_CURSOR_GET_PAGE, request_id, I64.pack(cursor_id))
