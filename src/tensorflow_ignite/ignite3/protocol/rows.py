"""Columns of data as the rows of an Ignite 3 table: binary tuples in schema order and colocation hashes.

The streamer sends each row as one binary tuple of every column of the table's
schema, each value encoded as its *column's* type (not the Python value's):
an INT32 column takes a 4-byte-or-fewer integer, a DOUBLE one a float when the
value is exactly one, a DECIMAL its value at most at the column's scale
(half-up), trailing zeros dropped.  The same values give each row's colocation
hash (:mod:`.colocation`), so each row goes to the partition the node would
put it in.

Values each column type takes -- what the reader (:mod:`.columns`) yields, so
a read batch writes back unchanged, and the usual Python/NumPy forms:

* BOOLEAN, INT8..INT64, FLOAT, DOUBLE: numbers (an integer outside the
  column's range is an error naming the column);
* DECIMAL: ``decimal.Decimal``, int, float (its shortest text), str;
* STRING: str (bytes as UTF-8); BYTE_ARRAY: bytes (str as UTF-8);
* UUID: ``uuid.UUID`` or its text (str or bytes);
* DATE: ``datetime.date``, ``numpy.datetime64``, or int milliseconds since
  1970-01-01; TIME: ``datetime.time`` or int nanoseconds since midnight;
  DATETIME and TIMESTAMP: ``datetime.datetime`` (naive: UTC),
  ``numpy.datetime64``, or int nanoseconds since 1970-01-01.

``None`` (in an object array or a list) is NULL.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import struct
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import ConfigurationError
from . import colocation as co
from .binary_tuple import VARLEN_EMPTY, build
from .codes import ColumnType
from .table import TableColumn, TableSchema

__all__ = ["EncodedRows", "encode_rows", "resolve_columns"]

T = ColumnType
_NS = 1_000_000_000
_DAY_MS = 86_400_000
_DAY_NS = 86_400 * _NS
_EPOCH = _dt.datetime(1970, 1, 1)
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_INT_RANGES = {
    T.INT8: (-(2**7), 2**7 - 1),
    T.INT16: (-(2**15), 2**15 - 1),
    T.INT32: (-(2**31), 2**31 - 1),
    T.INT64: (-(2**63), 2**63 - 1),
}
_NULL_HASH = co.hash_fixed(0, 1)
_TEMPORAL = (T.DATE, T.TIME, T.DATETIME, T.TIMESTAMP)
#: Up to this many rows, tuples are assembled and hashes combined row by row (same bytes as the NumPy path).
SMALL_ROWS = 8


@dataclass
class EncodedRows:
    """Rows ready for the streamer: each row's tuple, each row's colocation hash, the columns left out."""

    rows: list[bytes]
    hashes: np.ndarray
    no_value: tuple[int, ...]


def _plain(name: str) -> bool:
    return name.replace("_", "").isalnum() and not name[:1].isdigit()


def resolve_columns(schema: TableSchema, names: Sequence[str], table: str) -> dict[str, TableColumn]:
    """Data column name -> table column (a plain name matches its upper-case form, as SQL does)."""
    by_name = {c.name: c for c in schema.columns}
    out: dict[str, TableColumn] = {}
    for n in names:
        col = by_name.get(n) or (by_name.get(n.upper()) if _plain(n) else None)
        if col is None:
            raise ConfigurationError(
                f"column {n!r} of the data is not a column of table {table} ({', '.join(by_name)})"
            )
        out[n] = col
    missing = [c.name for c in schema.columns if c.is_key and c not in out.values()]
    if missing:
        raise ConfigurationError(f"the data has no values for {', '.join(missing)}, the key of table {table}")
    return out


# ---------------------------------------------------------------------- helpers
def _values(arr: np.ndarray) -> tuple[list[Any], list[bool]]:
    vals = arr.tolist()
    return vals, [v is not None for v in vals]


def _slices(buf: bytes, width: int) -> list[bytes]:
    return [buf[i : i + width] for i in range(0, len(buf), width)]


def _varlen(b: bytes) -> bytes:
    return bytes([VARLEN_EMPTY]) + b if not b or b[0] == VARLEN_EMPTY else b


def _int_elements(v: np.ndarray) -> list[bytes]:
    """Each int64 in the fewest little-endian bytes that hold it (1, 2, 4 or 8)."""
    out: list[bytes] = [b""] * len(v)
    remaining = np.ones(len(v), bool)
    for dt, lo, hi in (
        (np.int8, -(2**7), 2**7 - 1),
        (np.int16, -(2**15), 2**15 - 1),
        (np.int32, -(2**31), 2**31 - 1),
        (np.int64, -(2**63), 2**63 - 1),
    ):
        sel = remaining & (v >= lo) & (v <= hi)
        if not sel.any():
            continue
        width = np.dtype(dt).itemsize
        if sel.all():
            return _slices(v.astype(np.dtype(dt).newbyteorder("<")).tobytes(), width)
        idx = np.flatnonzero(sel)
        for i, b in zip(idx.tolist(), _slices(v[idx].astype(np.dtype(dt).newbyteorder("<")).tobytes(), width)):
            out[i] = b
        remaining &= ~sel
    return out


def _double_elements(v: np.ndarray) -> list[bytes]:
    """Each float64 as 4 bytes when it is exactly a float32, else 8 (NaN: 8)."""
    with np.errstate(over="ignore", invalid="ignore"):
        as_float = v.astype("<f4")
        fits = as_float.astype(np.float64) == v
    if fits.all():
        return _slices(as_float.tobytes(), 4)
    out = _slices(v.astype("<f8").tobytes(), 8)
    for i in np.flatnonzero(fits).tolist():
        out[i] = struct.pack("<f", v[i])
    return out


def _numeric(arr: np.ndarray, col: TableColumn, dtype: Any) -> tuple[np.ndarray, list[bool] | None]:
    """The column as a NumPy array of ``dtype`` (NULLs as 0) and where it is not NULL (None: nowhere NULL)."""
    if arr.dtype != object:
        try:
            return arr.astype(dtype), None
        except (TypeError, ValueError) as exc:
            raise ConfigurationError(f"column {col.name!r} ({col.type.name}): {exc}") from None
    vals, present = _values(arr)
    try:
        out = np.asarray([v if p else 0 for v, p in zip(vals, present)], dtype=dtype)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ConfigurationError(f"column {col.name!r} ({col.type.name}): {exc}") from None
    return out, present


def _temporal_ints(arr: np.ndarray, col: TableColumn) -> list[int | None]:
    """DATE: ms since the epoch; TIME: ns since midnight; DATETIME/TIMESTAMP: ns since the epoch."""
    unit = "ms" if col.type is T.DATE else "ns"
    if arr.dtype.kind == "M":
        ints = arr.astype(f"datetime64[{unit}]")
        nat = np.isnat(ints)
        return [None if n else int(x) for x, n in zip(ints.astype(np.int64).tolist(), nat.tolist())]
    if arr.dtype.kind in "iu":
        return [int(x) for x in arr.tolist()]
    out: list[int | None] = []
    for v in arr.tolist():
        out.append(None if v is None else _temporal_int(v, col))
    return out


def _temporal_int(v: Any, col: TableColumn) -> int:
    t = col.type
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return int(v)
    if isinstance(v, np.datetime64):
        return int(v.astype("datetime64[ms]" if t is T.DATE else "datetime64[ns]").astype(np.int64))
    if t is T.TIME and isinstance(v, _dt.time):
        return ((v.hour * 60 + v.minute) * 60 + v.second) * _NS + v.microsecond * 1000
    if t is T.DATE and isinstance(v, _dt.date) and not isinstance(v, _dt.datetime):
        return (v - _EPOCH.date()).days * _DAY_MS
    if t in (T.DATETIME, T.TIMESTAMP) and isinstance(v, _dt.datetime):
        delta = (v - _EPOCH_UTC) if v.tzinfo is not None else (v - _EPOCH)
        return (delta.days * 86400 + delta.seconds) * _NS + delta.microseconds * 1000
    raise ConfigurationError(
        f"column {col.name!r} ({t.name}) cannot take {v!r} ({type(v).__name__}); see "
        "tensorflow_ignite.ignite3.protocol.rows for the values each type takes"
    )


def _date_parts(days: int) -> tuple[int, int, int]:
    d = _EPOCH.date() + _dt.timedelta(days=days)
    return d.year, d.month, d.day


def _date_bytes(year: int, month: int, day: int) -> bytes:
    v = (year << 9) | (month << 5) | day
    return struct.pack("<i", v)[:3]


def _time_bytes(ns: int) -> tuple[bytes, tuple[int, int, int, int]]:
    secs, nanos = divmod(ns, _NS)
    h, rem = divmod(secs, 3600)
    m, s = divmod(rem, 60)
    hms = (h << 12) | (m << 6) | s
    if nanos % 1_000_000 == 0:
        data = struct.pack("<I", (hms << 10) | (nanos // 1_000_000))
    elif nanos % 1000 == 0:
        data = ((hms << 20) | (nanos // 1000)).to_bytes(5, "little")
    else:
        data = ((hms << 30) | nanos).to_bytes(6, "little")
    return data, (h, m, s, nanos)


def _decimal(v: Any, col: TableColumn) -> decimal.Decimal:
    if isinstance(v, decimal.Decimal):
        return v
    if isinstance(v, (float, np.floating)):
        return decimal.Decimal(repr(float(v)))
    if isinstance(v, bytes):
        v = v.decode()
    try:
        return decimal.Decimal(v)
    except (decimal.InvalidOperation, TypeError, ValueError):
        raise ConfigurationError(f"column {col.name!r} (DECIMAL) cannot take {v!r}") from None


def _decimal_bytes(d: decimal.Decimal, scale: int, col: TableColumn) -> bytes:
    if not d.is_finite():
        raise ConfigurationError(f"column {col.name!r} (DECIMAL): {d} has no Ignite 3 value")
    exp = d.as_tuple().exponent
    assert isinstance(exp, int)
    if -exp > scale:
        d = d.quantize(decimal.Decimal(1).scaleb(-scale), rounding=decimal.ROUND_HALF_UP)
    d = d.normalize() if d else decimal.Decimal(0)
    sign, digits, exponent = d.as_tuple()
    assert isinstance(exponent, int)
    unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    return struct.pack("<h", -exponent) + co.java_bigint_bytes(unscaled)


# ---------------------------------------------------------------------- one column
def _encode_column(arr: np.ndarray, col: TableColumn, want_hash: bool) -> tuple[list[bytes], np.ndarray | None]:
    """Each value's tuple element (b"": NULL) and, when asked, each value's column hash."""
    t, n = col.type, len(arr)
    hashes: np.ndarray | None = None
    present: list[bool] | None
    if t in _INT_RANGES:
        if arr.dtype.kind == "f" or arr.dtype == bool:
            raise ConfigurationError(f"column {col.name!r} ({t.name}) takes integers, not {arr.dtype}")
        ints, present = _numeric(arr, col, np.int64)
        lo, hi = _INT_RANGES[t]
        if len(ints) and (ints.min() < lo or ints.max() > hi):
            raise ConfigurationError(
                f"column {col.name!r} ({t.name}) takes {lo}..{hi}; the data has {ints.min()}..{ints.max()}"
            )
        elems = _int_elements(ints)
        if want_hash:
            hashes = co.hash_ints(ints, t)
    elif t is T.BOOLEAN:
        flags, present = _numeric(arr, col, bool)
        elems = [b"\x01" if f else b"\x00" for f in flags.tolist()]
        if want_hash:
            hashes = np.where(flags, co.hash_fixed(1, 1), co.hash_fixed(0, 1)).astype(np.int32)
    elif t in (T.FLOAT, T.DOUBLE):
        nums, present = _numeric(arr, col, np.float32 if t is T.FLOAT else np.float64)
        elems = _slices(nums.astype("<f4").tobytes(), 4) if t is T.FLOAT else _double_elements(nums)
        if want_hash:
            hashes = co.hash_column(nums, t)
    else:
        elems, keys, present = _encode_objects(arr, col)
        if want_hash:
            hashes = np.full(n, _NULL_HASH, np.int32)
            idx = [i for i, p in enumerate(present) if p]
            if idx:
                hashes[np.asarray(idx)] = co.hash_column(
                    np.asarray([keys[i] for i in idx]) if t in _TEMPORAL else [keys[i] for i in idx],
                    t,
                    col.scale,
                    col.precision,
                )
    if present is not None and not all(present):
        for i, p in enumerate(present):
            if not p:
                elems[i] = b""
                if hashes is not None:
                    hashes[i] = _NULL_HASH
    assert len(elems) == n
    return elems, hashes


def _encode_objects(arr: np.ndarray, col: TableColumn) -> tuple[list[bytes], list[Any], list[bool]]:
    """Each value's tuple element (b"": NULL), the value :func:`.colocation.hash_column` hashes (a
    column at a time) and whether it is present."""
    t = col.type
    elems: list[bytes] = []
    keys: list[Any] = []
    if t in _TEMPORAL:
        vals: list[Any] = _temporal_ints(arr, col)
    else:
        vals = arr.tolist()
    present = [v is not None for v in vals]
    for v in vals:
        key: Any = v
        if v is None:
            elems.append(b"")
        elif t is T.STRING:
            s = v.decode() if isinstance(v, bytes) else str(v)
            key = s.encode()
            elems.append(_varlen(key))
        elif t is T.BYTE_ARRAY:
            key = v.encode() if isinstance(v, str) else bytes(v)
            elems.append(_varlen(key))
        elif t is T.UUID:
            key = v if isinstance(v, uuid.UUID) else uuid.UUID(v.decode() if isinstance(v, bytes) else str(v))
            elems.append(struct.pack("<QQ", key.int >> 64, key.int & ((1 << 64) - 1)))
        elif t is T.DECIMAL:
            key = _decimal(v, col)
            elems.append(_decimal_bytes(key, col.scale, col))
        elif t is T.DATE:
            y, m, dd = _date_parts(v // _DAY_MS)
            elems.append(_date_bytes(y, m, dd))
        elif t is T.TIME:
            if not 0 <= v < _DAY_NS:
                raise ConfigurationError(f"column {col.name!r} (TIME): {v} ns is not a time of day")
            elems.append(_time_bytes(v)[0])
        elif t is T.DATETIME:
            days, ns_of_day = divmod(v, _DAY_NS)
            y, m, dd = _date_parts(days)
            elems.append(_date_bytes(y, m, dd) + _time_bytes(ns_of_day)[0])
        elif t is T.TIMESTAMP:
            secs, ns = divmod(v, _NS)
            elems.append(struct.pack("<q", secs) + (struct.pack("<i", ns) if ns else b""))
        else:
            raise ConfigurationError(f"column {col.name!r} has type {t.name}, which this client cannot write")
        keys.append(key)
    return elems, keys, present


# ---------------------------------------------------------------------- rows
def _headers(lengths: np.ndarray) -> list[bytes]:
    """Each row's tuple header and offset table, from its elements' lengths (rows x columns)."""
    ends = np.cumsum(lengths, axis=1)
    total = ends[:, -1] if ends.shape[1] else np.zeros(len(ends), np.int64)
    out: list[bytes] = [b""] * len(ends)
    for flag, dt, limit in ((0, "<u1", 0xFF), (1, "<u2", 0xFFFF), (2, "<u4", 0xFFFFFFFF)):
        sel = total <= limit if flag == 0 else (total <= limit) & (total > (0xFF if flag == 1 else 0xFFFF))
        idx = np.flatnonzero(sel)
        if not idx.size:
            continue
        width = 1 + ends.shape[1] * np.dtype(dt).itemsize
        block = np.empty((idx.size, width), np.uint8)
        block[:, 0] = flag
        block[:, 1:] = ends[idx].astype(dt).view(np.uint8).reshape(idx.size, -1)
        rows = _slices(block.tobytes(), width)
        if idx.size == len(ends):
            return rows
        for i, r in zip(idx.tolist(), rows):
            out[i] = r
    return out


def encode_rows(schema: TableSchema, data: Mapping[str, np.ndarray], table: str) -> EncodedRows:
    """``data`` (column name -> 1-D array, equal lengths) as rows of ``schema`` with their colocation hashes."""
    cols = resolve_columns(schema, list(data), table)
    n = len(next(iter(data.values())))
    given = {c.name: name for name, c in cols.items()}
    coloc = {c.name for c in schema.colocation_columns}
    elements: list[list[bytes]] = []
    col_hashes: dict[str, np.ndarray] = {}
    no_value = []
    for i, col in enumerate(schema.columns):
        name = given.get(col.name)
        if name is None:
            no_value.append(i)
            elements.append([b""] * n)
            continue
        elems, hashes = _encode_column(np.asarray(data[name]), col, col.name in coloc)
        elements.append(elems)
        if hashes is not None:
            col_hashes[col.name] = hashes
    if n <= SMALL_ROWS:
        # A few rows (the key-value ops): per-row Python costs less than NumPy's per-call overhead.
        hl = [0] * n
        for col in schema.colocation_columns:
            hl = [co.combine(a, b) for a, b in zip(hl, col_hashes[col.name].tolist())]
        return EncodedRows([build(list(parts)) for parts in zip(*elements)], np.asarray(hl, np.int32), tuple(no_value))
    h = np.zeros(n, np.int32)
    for col in schema.colocation_columns:
        h = co.combine_arrays(h, col_hashes[col.name])
    lengths = np.asarray([[len(e) for e in col] for col in elements], np.int64).T.reshape(n, len(elements))
    headers = _headers(lengths)
    rows = [hd + b"".join(parts) for hd, parts in zip(headers, zip(*elements))]
    return EncodedRows(rows, h, tuple(no_value))
