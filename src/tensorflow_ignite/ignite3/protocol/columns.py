"""A page of SQL rows (binary tuples) turned into NumPy columns, a column at a time.

The rows of a page are spans of one buffer (the frame they came in); each row's offset table is
read with a few vectorized gathers (rows grouped by offset-entry size), giving
every element's begin and length.  Fixed-size types are then one gather per
value length present in the column (Ignite writes an INT64 of 5 in one byte, a
DOUBLE that is exactly a float in four), viewed as little-endian numbers.
Strings and byte arrays are sliced out of one copy of the frame (a first
byte marking an escaped value found for all rows at once); UUIDs and decimals
are converted row by row.

Column dtypes (:data:`NUMPY_DTYPES`): BOOLEAN bool; INT8..INT64 int8..int64;
FLOAT float32; DOUBLE float64; DECIMAL float64 (or its text with
``decimal_as="string"``); DATE int64 milliseconds since 1970-01-01 (as the
Ignite 2 reader's DATE); TIME int64 nanoseconds since midnight; DATETIME and
TIMESTAMP int64 nanoseconds since 1970-01-01 (DATETIME read as UTC); UUID
its canonical text; STRING UTF-8 bytes; BYTE_ARRAY bytes.  A NULL is 0, False
or empty, and :class:`PageColumns` says which rows held one.
"""

from __future__ import annotations

import decimal
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...errors import ProtocolError, SchemaError
from .binary_tuple import VARLEN_EMPTY
from .codes import ColumnType
from .msgpack_io import RowPage
from .spans import ByteSpans
from .sql import ColumnMeta

__all__ = ["NUMPY_DTYPES", "TF_DTYPES", "PageColumns", "decode_page", "SUPPORTED_TYPES"]

T = ColumnType
#: The NumPy dtype of each column type's decoded column (object: bytes per row).
NUMPY_DTYPES: dict[ColumnType, np.dtype] = {
    T.BOOLEAN: np.dtype(bool),
    T.INT8: np.dtype(np.int8),
    T.INT16: np.dtype(np.int16),
    T.INT32: np.dtype(np.int32),
    T.INT64: np.dtype(np.int64),
    T.FLOAT: np.dtype(np.float32),
    T.DOUBLE: np.dtype(np.float64),
    T.DECIMAL: np.dtype(np.float64),
    T.DATE: np.dtype(np.int64),
    T.TIME: np.dtype(np.int64),
    T.DATETIME: np.dtype(np.int64),
    T.TIMESTAMP: np.dtype(np.int64),
    T.UUID: np.dtype(object),
    T.STRING: np.dtype(object),
    T.BYTE_ARRAY: np.dtype(object),
}
#: The TensorFlow dtype name a dataset yields for each column type.
TF_DTYPES: dict[ColumnType, str] = {t: ("string" if d == np.dtype(object) else d.name) for t, d in NUMPY_DTYPES.items()}
SUPPORTED_TYPES = frozenset(NUMPY_DTYPES)
_NS = 1_000_000_000
_DAY_NS = 86_400 * _NS


@dataclass
class PageColumns:
    """One page as columns: ``values[i]`` for ``columns[i]``, ``present[i]`` False where NULL."""

    columns: tuple[ColumnMeta, ...]
    values: list[np.ndarray | ByteSpans]
    present: list[np.ndarray]
    rows: int


def _gather(buf: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """``width`` bytes at each of ``pos``, as an (n, width) uint8 array."""
    return buf[pos[:, None] + np.arange(width)]


def _le(buf: np.ndarray, pos: np.ndarray, width: int, signed: bool = True) -> np.ndarray:
    """The little-endian integer of ``width`` bytes (1, 2, 4, 8) at each of ``pos``, as int64."""
    kind = "i" if signed else "u"
    return np.ascontiguousarray(_gather(buf, pos, width)).view(f"<{kind}{width}").reshape(-1).astype(np.int64)


def _le_unsigned(buf: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    """Unsigned little-endian integers of 1..8 bytes, as int64 (padded to 8 bytes)."""
    g = np.zeros((len(pos), 8), np.uint8)
    g[:, :width] = _gather(buf, pos, width)
    return g.view("<u8").reshape(-1).astype(np.int64)


def _bounds(buf: np.ndarray, starts: np.ndarray, lens: np.ndarray, ncols: int) -> tuple[np.ndarray, np.ndarray]:
    """Absolute begin and length of every element: two (rows, ncols) arrays."""
    n = len(starts)
    begins = np.empty((n, ncols), np.int64)
    lengths = np.empty((n, ncols), np.int64)
    if n == 0 or ncols == 0:
        return begins, lengths
    if np.any(lens < 1):
        raise ProtocolError("an empty binary tuple in a page of rows")
    entry = 1 << (buf[starts] & 0b11).astype(np.int64)
    for size in np.unique(entry):
        if size == 8:
            raise ProtocolError("binary tuple with 8-byte offsets")
        rows = np.nonzero(entry == size)[0]
        s = starts[rows]
        base = s + 1 + size * ncols
        if np.any(base > s + lens[rows]):
            raise ProtocolError(f"a binary tuple too short for {ncols} offsets of {size} bytes")
        table = s[:, None] + 1 + size * np.arange(ncols)
        ends = _le(buf, table.reshape(-1), int(size), signed=False).reshape(len(rows), ncols)
        if size == 4 and np.any(ends < 0):
            raise ProtocolError("binary tuple offset beyond 2 GiB")
        prev = np.zeros_like(ends)
        prev[:, 1:] = ends[:, :-1]
        ln = ends - prev
        if np.any(ln < 0) or np.any(base + ends[:, -1] > s + lens[rows]):
            raise ProtocolError("binary tuple offsets out of order or past the tuple's end")
        begins[rows] = base[:, None] + prev
        lengths[rows] = ln
    return begins, lengths


def _days_from_civil(y: np.ndarray, m: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of proleptic Gregorian dates (Howard Hinnant's algorithm)."""
    y = y - (m <= 2)
    era = np.floor_divide(y, 400)
    yoe = y - era * 400
    mp = (m + 9) % 12
    doy = (153 * mp + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _date_days(buf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    v = _le_unsigned(buf, pos, 2) | (buf[pos + 2].astype(np.int8).astype(np.int64) << 16)
    return _days_from_civil(v >> 9, (v >> 5) & 15, v & 31)


def _time_ns(buf: np.ndarray, pos: np.ndarray, width: int) -> np.ndarray:
    raw = _le_unsigned(buf, pos, width)
    frac_bits, unit = {4: (10, 1_000_000), 5: (20, 1000), 6: (30, 1)}[width]
    nanos = (raw & ((1 << frac_bits) - 1)) * unit
    raw = raw >> frac_bits
    seconds = ((raw >> 12) & 31) * 3600 + ((raw >> 6) & 63) * 60 + (raw & 63)
    return seconds * _NS + nanos


def _fixed(col: ColumnMeta, buf: np.ndarray, begin: np.ndarray, length: np.ndarray, out: np.ndarray) -> None:
    t = col.type
    for width in np.unique(length):
        width = int(width)
        if width == 0:
            continue
        idx = np.nonzero(length == width)[0]
        pos = begin[idx]
        if t is T.BOOLEAN and width == 1:
            out[idx] = buf[pos] != 0
        elif t in (T.INT8, T.INT16, T.INT32, T.INT64) and width in (1, 2, 4, 8) and width <= out.dtype.itemsize:
            out[idx] = _le(buf, pos, width)
        elif t in (T.FLOAT, T.DOUBLE) and width in (4, 8) and width <= 8:
            out[idx] = np.ascontiguousarray(_gather(buf, pos, width)).view(f"<f{width}").reshape(-1)
        elif t is T.DATE and width == 3:
            out[idx] = _date_days(buf, pos) * 86_400_000
        elif t is T.TIME and width in (4, 5, 6):
            out[idx] = _time_ns(buf, pos, width)
        elif t is T.DATETIME and width in (7, 8, 9):
            out[idx] = _date_days(buf, pos) * _DAY_NS + _time_ns(buf, pos + 3, width - 3)
        elif t is T.TIMESTAMP and width in (8, 12):
            seconds = _le(buf, pos, 8)
            nanos = _le(buf, pos + 8, 4) if width == 12 else 0
            if np.any(np.abs(seconds) > (2**63 - 1) // _NS - 1):
                raise SchemaError(f"column {col.name!r}: a TIMESTAMP beyond int64 nanoseconds (years 1677..2262)")
            out[idx] = seconds * _NS + nanos
        else:
            raise ProtocolError(f"column {col.name!r} ({t.name}): a value of {width} bytes")


#: Mean value length up to which a page's strings are sliced from one ``bytes`` copy of its frame
#: (cheaper than a memoryview slice per value); longer values are copied from the frame one by one.
_COPY_FRAME_MAX = 4096


def _value_starts(buf: np.ndarray, begin: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Where each STRING / BYTE_ARRAY value's bytes begin: past the marker byte that escapes a value
    (or makes an empty one) beginning with it."""
    b = begin.copy()
    nz = np.flatnonzero(length)
    b[nz] += buf[begin[nz]] == VARLEN_EMPTY
    return b


def _bytes_values(data: memoryview, buf: np.ndarray, begin: np.ndarray, length: np.ndarray) -> np.ndarray:
    """The STRING / BYTE_ARRAY values at ``begin``/``length`` (b"" for NULL and empty) as bytes objects."""
    out = np.empty(len(begin), object)
    if not len(begin):
        return out
    b = _value_starts(buf, begin, length)
    starts, ends = b.tolist(), (begin + length).tolist()
    if int(length.sum()) <= _COPY_FRAME_MAX * len(begin):
        raw = data.tobytes()
        out[:] = [raw[x:y] for x, y in zip(starts, ends)]
    else:
        out[:] = [bytes(data[x:y]) for x, y in zip(starts, ends)]
    return out


def _varlen(col: ColumnMeta, data: memoryview, begin: np.ndarray, length: np.ndarray, decimal_as: str) -> np.ndarray:
    out = np.empty(len(begin), object)
    t = col.type
    for i, (b, n) in enumerate(zip(begin.tolist(), length.tolist())):
        if n == 0:
            out[i] = 0.0 if t is T.DECIMAL and decimal_as != "string" else b""
            continue
        e = b + n
        if t is T.UUID:
            if n != 16:
                raise ProtocolError(f"column {col.name!r}: a UUID of {n} bytes")
            msb, lsb = int.from_bytes(data[b : b + 8], "little"), int.from_bytes(data[b + 8 : e], "little")
            out[i] = str(uuid.UUID(int=(msb << 64) | lsb)).encode()
        elif t is T.DECIMAL:
            if n < 3:
                raise ProtocolError(f"column {col.name!r}: a DECIMAL of {n} bytes")
            scale = int.from_bytes(data[b : b + 2], "little", signed=True)
            value = decimal.Decimal(int.from_bytes(data[b + 2 : e], "big", signed=True)).scaleb(-scale)
            out[i] = str(value).encode() if decimal_as == "string" else float(value)
        else:
            if data[b] == VARLEN_EMPTY:
                b += 1
            out[i] = bytes(data[b:e])
    return out


def decode_page(
    rows: RowPage | Sequence[bytes],
    columns: Sequence[ColumnMeta],
    *,
    decimal_as: str = "float64",
    select: Sequence[int] | None = None,
    strings: str = "bytes",
) -> PageColumns:
    """The columns of one page of rows (``select``: indices of the columns wanted, default all).

    ``rows``: a :class:`~.msgpack_io.RowPage` (read in place) or a list of binary tuples.
    ``strings``: STRING and BYTE_ARRAY columns as object arrays of ``bytes``
    (``"bytes"``), or as :class:`~.spans.ByteSpans` of the page's buffer
    (``"spans"``: no copy of the values).
    """
    if strings not in ("bytes", "spans"):
        raise ValueError(f"strings must be 'bytes' or 'spans', not {strings!r}")
    columns = tuple(columns)
    page = RowPage.of(rows)
    n = len(page)
    data = page.data
    buf = np.frombuffer(data, np.uint8)
    starts, lens = page.starts, page.lengths
    begins, lengths = _bounds(buf, starts, lens, len(columns))
    values, present = [], []
    wanted = range(len(columns)) if select is None else select
    for i in wanted:
        col = columns[i]
        if col.type not in SUPPORTED_TYPES:
            raise SchemaError(
                f"column {col.name!r} has type {col.type.name}, which has no tensor form here; "
                "select it cast to another type (CAST(... AS VARCHAR))"
            )
        b, ln = begins[:, i], lengths[:, i]
        if col.type in (T.STRING, T.BYTE_ARRAY) and strings == "spans":
            v = ByteSpans(data, _value_starts(buf, b, ln), b + ln)
        elif col.type in (T.STRING, T.BYTE_ARRAY):
            v = _bytes_values(data, buf, b, ln)
        elif col.type in (T.UUID, T.DECIMAL):
            v = _varlen(col, data, b, ln, decimal_as)
            if col.type is T.DECIMAL and decimal_as != "string":
                v = v.astype(np.float64) if n else np.zeros(0, np.float64)
                v[ln == 0] = 0.0
        else:
            v = np.zeros(n, NUMPY_DTYPES[col.type])
            _fixed(col, buf, b, ln, v)
        values.append(v)
        present.append(ln != 0)
    return PageColumns(tuple(columns[i] for i in wanted), values, present, n)
