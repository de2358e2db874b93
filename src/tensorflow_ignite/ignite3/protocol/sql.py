"""SQL requests and answers of Ignite 3's protocol: SQL_EXEC, SQL_CURSOR_NEXT_PAGE,
SQL_CURSOR_CLOSE, SQL_QUERY_META (``ClientSql``/``ClientSqlExecuteRequest`` in Ignite's sources).

The client proposes no optional features at the handshake, so an SQL_EXEC body
is: transaction (nil: implicit), schema, page size, query timeout (ms), session
idle timeout, time zone, statement properties (count, then a binary tuple),
the query, its arguments (count, then one binary tuple; nil for none) and the
observable timestamp.  The answer: cursor id (nil when the server closed it),
has-row-set, has-more-pages, was-applied, affected rows, column metadata, and
the first page of rows when there is a row set (count, then one binary tuple
per row).  A next page is the rows and has-more-pages.  The rows stay
undecoded spans of the frame here (:class:`~.msgpack_io.RowPage`); :mod:`.columns` turns a page into columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import ProtocolError
from .binary_tuple import build, encode_arguments
from .codes import ColumnType
from .msgpack_io import Reader, RowPage, Writer

__all__ = [
    "ColumnMeta",
    "ExecResult",
    "exec_request",
    "parse_exec",
    "batch_request",
    "parse_batch",
    "cursor_request",
    "parse_next_page",
    "meta_request",
    "parse_meta",
    "DEFAULT_PAGE_SIZE",
]

#: Rows per page the server sends when not told otherwise (``SqlCommon.DEFAULT_PAGE_SIZE``).
DEFAULT_PAGE_SIZE = 1024
_EMPTY_TUPLE = build([])


@dataclass(frozen=True)
class ColumnMeta:
    """One result column: name, type, nullability, scale, precision and the table column it comes from."""

    name: str
    type: ColumnType
    nullable: bool = True
    scale: int = 0
    precision: int = 0
    schema: str | None = None
    table: str | None = None
    origin: str | None = None


@dataclass(frozen=True)
class ExecResult:
    """The answer to SQL_EXEC: the cursor, the columns and the first page."""

    cursor_id: int | None
    has_row_set: bool
    has_more: bool
    was_applied: bool
    affected_rows: int
    columns: tuple[ColumnMeta, ...]
    rows: RowPage


def exec_request(
    query: str,
    args: Sequence[Any] = (),
    *,
    schema: str | None = None,
    page_size: int = DEFAULT_PAGE_SIZE,
    timeout_ms: int = 0,
    timezone: str = "UTC",
    observable_timestamp: int = 0,
) -> bytes:
    """The body of an SQL_EXEC request (an implicit transaction)."""
    w = Writer().values(None, schema, page_size, timeout_ms, None, timezone, 0).value(_EMPTY_TUPLE)
    w.value(query)
    if args:
        w.values(len(args), encode_arguments(args))
    else:
        w.value(None)
    w.value(observable_timestamp)
    return w.bytes()


def batch_request(
    query: str,
    rows: Sequence[Sequence[Any]],
    *,
    schema: str | None = None,
    timeout_ms: int = 0,
    timezone: str = "UTC",
    observable_timestamp: int = 0,
) -> bytes:
    """The body of SQL_EXEC_BATCH: one statement run once per row of arguments.

    The arguments: row length, row count, a flag (false), then one argument tuple per row.
    """
    w = Writer().values(None, schema, DEFAULT_PAGE_SIZE, timeout_ms, None, timezone, 0).value(_EMPTY_TUPLE)
    w.value(query)
    if rows:
        width = len(rows[0])
        if any(len(r) != width for r in rows):
            raise ProtocolError("every row of a batch needs the same number of arguments")
        w.values(width, len(rows), False)
        for row in rows:
            w.value(encode_arguments(row))
    else:
        w.value(None)
    w.value(observable_timestamp)
    return w.bytes()


def parse_batch(r: Reader) -> list[int]:
    """The rows each statement of an SQL_EXEC_BATCH changed."""
    r.skip(4)  # cursor id (nil), has row set, has more pages, was applied
    if r.is_nil():
        return []
    return [r.int() for _ in range(r.count("SQL batch answer", "update counts"))]


def _columns(r: Reader) -> tuple[ColumnMeta, ...]:
    count = r.int()
    if count < 0 or count > 65535:
        raise ProtocolError(f"SQL answer: {count} columns")
    cols: list[ColumnMeta] = []
    for i in range(count):
        props = r.int()
        if props < 6:
            raise ProtocolError(f"SQL answer: column {i} has {props} properties (6 or more expected)")
        name, nullable, type_id, scale, precision = r.str(), r.bool(), r.int(), r.int(), r.int()
        try:
            col_type = ColumnType(type_id)
        except ValueError:
            raise ProtocolError(f"SQL answer: column {name!r} has the unknown type id {type_id}") from None
        schema = table = origin = None
        used = 6
        if r.bool():
            origin = r.str_or_none() or name
            s, t = r.value(), r.value()
            schema = cols[s].schema if isinstance(s, int) and 0 <= s < len(cols) else s if isinstance(s, str) else None
            table = cols[t].table if isinstance(t, int) and 0 <= t < len(cols) else t if isinstance(t, str) else None
            used = 9
        r.skip(props - used)  # properties of later protocol versions
        cols.append(ColumnMeta(name, col_type, nullable, scale, precision, schema, table, origin))
    return tuple(cols)


_NO_ROWS = RowPage.of([])


def _rows(r: Reader) -> RowPage:
    return r.binaries(r.int())


def parse_exec(r: Reader) -> ExecResult:
    """The values of an SQL_EXEC answer (``r`` positioned after the response header)."""
    cursor_id = r.int_or_none()
    has_row_set, has_more, was_applied = r.bool(), r.bool(), r.bool()
    affected = r.int()
    columns = _columns(r)
    rows = _rows(r) if has_row_set else _NO_ROWS
    return ExecResult(cursor_id, has_row_set, has_more, was_applied, affected, columns, rows)


def cursor_request(cursor_id: int) -> bytes:
    """The body of SQL_CURSOR_NEXT_PAGE and of SQL_CURSOR_CLOSE."""
    return Writer().value(cursor_id).bytes()


def parse_next_page(r: Reader) -> tuple[RowPage, bool]:
    """The rows of a next page and whether more follow."""
    rows = _rows(r)
    return rows, r.bool()


def meta_request(query: str, *, schema: str | None = None) -> bytes:
    """The body of SQL_QUERY_META (transaction: nil, schema, query): the statement's parameters
    and columns without running it."""
    return Writer().values(None, schema or "PUBLIC", query).bytes()


def parse_meta(r: Reader) -> tuple[int, tuple[ColumnMeta, ...]]:
    """The number of parameters and the result columns of an SQL_QUERY_META answer."""
    params = r.int()
    if params < 0 or params > 65535:
        raise ProtocolError(f"SQL metadata: {params} parameters")
    r.skip(4 * params)  # nullable, type, scale, precision of each
    return params, _columns(r)
