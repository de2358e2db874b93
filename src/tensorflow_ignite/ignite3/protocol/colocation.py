"""Ignite 3's colocation hash: which partition a row belongs to.

The facts of Ignite 3.1.0's ``HashUtils`` (128-bit MurmurHash3, x64 variant,
folded to 64 bits as ``h1 + h2`` and to 32 as ``h ^ (h >>> 32)``),
``HashCalculator`` and ``ColocationUtils``:

* A fixed-width value (byte, short, int, long) is hashed as one block of its
  own width (``length`` 1, 2, 4, 8), the value zero-extended into the 64-bit
  block; the seed is a Java ``int`` widened to ``long`` (sign-extended).
* A byte string (VARCHAR as UTF-8, VARBINARY, a DECIMAL's unscaled value as
  Java's ``BigInteger.toByteArray``) is hashed as a whole with seed 0.
* Per column type: BOOLEAN one byte 0/1; INT8..INT64 their own width; FLOAT
  the int of its raw bits, DOUBLE the long of its raw bits; UUID
  ``hash32(lsb, seed=hash32(msb))``; DATE ``hash32(day, hash32(month,
  hash32(year)))``; TIME hour, minute, second, nanoseconds truncated to the
  column's precision, each seeded with the previous; DATETIME
  ``combine(date, time)``; TIMESTAMP ``hash32(nanos, seed=hash_long(seconds))``;
  DECIMAL set to the column's scale (half-up) first; NULL the byte 0.
* A row's hash starts at 0 and takes each colocation column in colocation
  order: ``hash = combine(hash, column_hash)``, ``combine(a, b) = hash32(int a,
  seed=b)`` (the running hash is the data, the column's hash the seed).
* The partition is Java's ``Math.abs(hash % partitions)`` (remainder with the
  dividend's sign).

The row-by-row functions take Python values; :func:`hash_ints` hashes a whole
NumPy column of integers at once (the common key: BIGINT or INT), and
:func:`hash_column` / :func:`row_hashes` a column (or the colocation columns)
of a page as :mod:`.columns` decodes it -- the partitioned reader's partition
of each row it reads -- vectorized for every type but DECIMAL.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import struct
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import ConfigurationError
from .codes import ColumnType

__all__ = [
    "hash_fixed",
    "hash_bytes",
    "combine",
    "value_hash",
    "row_hash",
    "partition_of",
    "hash_ints",
    "combine_arrays",
    "partitions_of",
    "java_bigint_bytes",
    "date_hash",
    "time_hash",
    "timestamp_hash",
    "hash_bytes_array",
    "hash_column",
    "row_hashes",
    "decimal_unscaled",
    "INT_WIDTHS",
]

_M64 = (1 << 64) - 1
_C1 = 0x87C37B91114253D5
_C2 = 0x4CF5AD432745937F

#: The width in bytes an integer column type is hashed with.
INT_WIDTHS = {ColumnType.INT8: 1, ColumnType.INT16: 2, ColumnType.INT32: 4, ColumnType.INT64: 8}


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _M64


def _fmix(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & _M64
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & _M64
    return h ^ (h >> 33)


def _fold(h: int) -> int:
    """The 64-bit hash as Java's ``int``: ``(int) (h ^ (h >>> 32))``."""
    v = (h ^ (h >> 32)) & 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def _finish(h1: int, h2: int, length: int) -> int:
    h1 ^= length
    h2 ^= length
    h1 = (h1 + h2) & _M64
    h2 = (h2 + h1) & _M64
    h1, h2 = _fmix(h1), _fmix(h2)
    return (h1 + h2) & _M64


def hash_fixed(value: int, width: int, seed: int = 0) -> int:
    """``HashUtils.hash32`` of a byte, short, int or long (``width`` 1, 2, 4, 8) with an int seed."""
    h = seed & _M64  # a Java int seed widened to long: sign-extended
    k1 = value & ((1 << (8 * width)) - 1)
    k1 = (k1 * _C1) & _M64
    k1 = _rotl(k1, 31)
    k1 = (k1 * _C2) & _M64
    return _fold(_finish(h ^ k1, h, width))


def hash_bytes(data: bytes) -> int:
    """``HashUtils.hash32(byte[])`` (seed 0)."""
    h1 = h2 = 0
    n = len(data)
    nblocks = n >> 4
    for i in range(nblocks):
        k1, k2 = struct.unpack_from("<QQ", data, i << 4)
        k1 = _rotl((k1 * _C1) & _M64, 31)
        h1 ^= (k1 * _C2) & _M64
        h1 = _rotl(h1, 27)
        h1 = (((h1 + h2) & _M64) * 5 + 0x52DCE729) & _M64
        k2 = _rotl((k2 * _C2) & _M64, 33)
        h2 ^= (k2 * _C1) & _M64
        h2 = _rotl(h2, 31)
        h2 = (((h2 + h1) & _M64) * 5 + 0x38495AB5) & _M64
    tail = data[nblocks << 4 :]
    if len(tail) > 8:
        k2 = int.from_bytes(tail[8:], "little")
        k2 = _rotl((k2 * _C2) & _M64, 33)
        h2 ^= (k2 * _C1) & _M64
    if tail:
        k1 = int.from_bytes(tail[:8], "little")
        k1 = _rotl((k1 * _C1) & _M64, 31)
        h1 ^= (k1 * _C2) & _M64
    return _fold(_finish(h1, h2, n))


def combine(h1: int, h2: int) -> int:
    """``HashUtils.combine(h1, h2)`` = ``hash32(h1, seed=h2)``: the running hash ``h1`` hashed as an
    int with the next hash ``h2`` as the seed."""
    return hash_fixed(h1, 4, h2)


def java_bigint_bytes(value: int) -> bytes:
    """Java's ``BigInteger.toByteArray``: the fewest big-endian two's complement bytes."""
    bits = value.bit_length() if value >= 0 else (-value - 1).bit_length()
    return value.to_bytes(bits // 8 + 1, "big", signed=True)


def _normalize_nanos(nanos: int, precision: int) -> int:
    if precision >= 9:
        return nanos
    unit = 10 ** (9 - max(precision, 0))
    return nanos // unit * unit


def date_hash(year: int, month: int, day: int) -> int:
    """The hash of a DATE."""
    return hash_fixed(day, 4, hash_fixed(month, 4, hash_fixed(year, 4)))


def time_hash(hour: int, minute: int, second: int, nanos: int, precision: int) -> int:
    """The hash of a TIME of ``precision`` fractional digits."""
    h = hash_fixed(hour, 4)
    h = hash_fixed(minute, 4, h)
    h = hash_fixed(second, 4, h)
    return hash_fixed(_normalize_nanos(nanos, precision), 4, h)


def timestamp_hash(seconds: int, nanos: int, precision: int) -> int:
    """The hash of a TIMESTAMP: seconds and nanoseconds since 1970-01-01 UTC."""
    return hash_fixed(_normalize_nanos(nanos, precision), 4, hash_fixed(seconds, 8))


def _date_hash(d: _dt.date) -> int:
    return date_hash(d.year, d.month, d.day)


def _time_hash(t: _dt.time, precision: int) -> int:
    return time_hash(t.hour, t.minute, t.second, t.microsecond * 1000, precision)


def _epoch_parts(value: Any) -> tuple[int, int]:
    """Seconds and nanoseconds since 1970-01-01 UTC of a TIMESTAMP value."""
    if isinstance(value, np.datetime64):
        ns = int(value.astype("datetime64[ns]").astype(np.int64))
        return ns // 10**9, ns % 10**9
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.UTC)
        delta = value - _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
        return delta.days * 86400 + delta.seconds, delta.microseconds * 1000
    raise ConfigurationError(f"{value!r} is not a TIMESTAMP value (datetime.datetime or numpy.datetime64)")


def value_hash(col_type: ColumnType, value: Any, scale: int = 0, precision: int = 0) -> int:
    """The hash of one column value as Ignite's ``ColocationUtils.hash`` computes it for ``col_type``."""
    if value is None:
        return hash_fixed(0, 1)
    t = col_type
    if t is ColumnType.BOOLEAN:
        return hash_fixed(1 if value else 0, 1)
    if t in INT_WIDTHS:
        return hash_fixed(int(value), INT_WIDTHS[t])
    if t is ColumnType.FLOAT:
        return hash_fixed(struct.unpack("<i", struct.pack("<f", float(value)))[0], 4)
    if t is ColumnType.DOUBLE:
        return hash_fixed(struct.unpack("<q", struct.pack("<d", float(value)))[0], 8)
    if t is ColumnType.STRING:
        return hash_bytes(str(value).encode())
    if t is ColumnType.BYTE_ARRAY:
        return hash_bytes(bytes(value))
    if t is ColumnType.UUID:
        u = value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
        msb, lsb = u.int >> 64, u.int & _M64
        return hash_fixed(lsb, 8, hash_fixed(msb, 8))
    if t is ColumnType.DECIMAL:
        return hash_bytes(java_bigint_bytes(decimal_unscaled(value, scale)))
    if t is ColumnType.DATE:
        return _date_hash(value)
    if t is ColumnType.TIME:
        return _time_hash(value, precision)
    if t is ColumnType.DATETIME:
        return combine(_date_hash(value.date()), _time_hash(value.time(), precision))
    if t is ColumnType.TIMESTAMP:
        seconds, nanos = _epoch_parts(value)
        return timestamp_hash(seconds, nanos, precision)
    raise ConfigurationError(f"a {t.name} column cannot be a colocation (key) column")


def decimal_unscaled(value: Any, scale: int) -> int:
    """A DECIMAL value (Decimal, int, float, or its text as str or bytes) set to ``scale`` (half-up), unscaled."""
    if isinstance(value, bytes):
        value = value.decode()
    d = decimal.Decimal(str(value)) if isinstance(value, float) else decimal.Decimal(value)
    return int(d.scaleb(scale).quantize(decimal.Decimal(1), rounding=decimal.ROUND_HALF_UP))


def row_hash(values: Sequence[tuple[ColumnType, Any, int, int]]) -> int:
    """The colocation hash of a row: ``(type, value, scale, precision)`` of each colocation column, in order."""
    h = 0
    for col_type, value, scale, precision in values:
        h = combine(h, value_hash(col_type, value, scale, precision))
    return h


def partition_of(hash_value: int, partitions: int) -> int:
    """Java's ``Math.abs(hash % partitions)``."""
    return abs(hash_value) % partitions


# ---------------------------------------------------------------------- vectorized
def _v_rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint64(r)) | (x >> np.uint64(64 - r))


def _v_fmix(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xFF51AFD7ED558CCD)
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> np.uint64(33))


def _v_hash_fixed(values: np.ndarray, width: int, seeds: np.ndarray | None) -> np.ndarray:
    """:func:`hash_fixed` of each of ``values`` (any integer dtype) with each of ``seeds`` (int32), as int32."""
    with np.errstate(over="ignore"):
        k1 = values.astype(np.int64).view(np.uint64)
        if width < 8:
            k1 = k1 & np.uint64((1 << (8 * width)) - 1)
        k1 = _v_rotl(k1 * np.uint64(_C1), 31) * np.uint64(_C2)
        h = np.zeros(len(values), np.uint64) if seeds is None else seeds.astype(np.int64).view(np.uint64)
        h1 = (h ^ k1) ^ np.uint64(width)
        h2 = h ^ np.uint64(width)
        h1 = h1 + h2
        h2 = h2 + h1
        out = _v_fmix(h1) + _v_fmix(h2)
        return (out ^ (out >> np.uint64(32))).astype(np.uint32).view(np.int32)


def hash_ints(values: np.ndarray, col_type: ColumnType) -> np.ndarray:
    """The column hash of each value of an integer column (int32 array)."""
    return _v_hash_fixed(np.asarray(values), INT_WIDTHS[col_type], None)


def combine_arrays(h1: np.ndarray, h2: np.ndarray) -> np.ndarray:
    """:func:`combine` element-wise."""
    return _v_hash_fixed(h1, 4, h2)


def partitions_of(hashes: np.ndarray, partitions: int) -> np.ndarray:
    """:func:`partition_of` element-wise (int32 hashes in, int64 partitions out)."""
    return np.abs(np.fmod(hashes.astype(np.int64), partitions))


def _v_u64(buf: np.ndarray, pos: np.ndarray) -> np.ndarray:
    """The little-endian uint64 at each of ``pos`` in the byte array ``buf``."""
    return np.ascontiguousarray(buf[pos[:, None] + np.arange(8)]).view("<u8").reshape(-1)


def _v_fold(h: np.ndarray) -> np.ndarray:
    return (h ^ (h >> np.uint64(32))).astype(np.uint32).view(np.int32)


#: Byte strings of more 16-byte blocks than this are hashed one at a time (a NumPy pass per block of
#: the longest string would cost more than Python over the few long ones).
_VECTOR_BLOCKS = 64


def hash_bytes_array(items: Sequence[bytes]) -> np.ndarray:
    """:func:`hash_bytes` of each of ``items`` (int32), the blocks of every string at once."""
    n = len(items)
    out = np.empty(n, np.int32)
    if n == 0:
        return out
    lens = np.fromiter(map(len, items), np.int64, n)
    nblocks = lens >> 4
    long_rows = np.flatnonzero(nblocks > _VECTOR_BLOCKS)
    for i in long_rows.tolist():
        out[i] = hash_bytes(bytes(items[i]))
    rows = np.flatnonzero(nblocks <= _VECTOR_BLOCKS) if len(long_rows) else np.arange(n)
    if not len(rows):
        return out
    if len(long_rows):
        items = [items[i] for i in rows.tolist()]
        lens, nblocks = lens[rows], nblocks[rows]
    buf = np.frombuffer(b"".join(items) + bytes(16), np.uint8)
    starts = np.zeros(len(items), np.int64)
    np.cumsum(lens[:-1], out=starts[1:])
    m = len(items)
    h1 = np.zeros(m, np.uint64)
    h2 = np.zeros(m, np.uint64)
    c1, c2 = np.uint64(_C1), np.uint64(_C2)
    with np.errstate(over="ignore"):
        for j in range(int(nblocks.max())):
            act = np.flatnonzero(nblocks > j)
            pos = starts[act] + 16 * j
            k1, k2 = _v_u64(buf, pos), _v_u64(buf, pos + 8)
            a, b = h1[act], h2[act]
            a ^= _v_rotl(k1 * c1, 31) * c2
            a = (_v_rotl(a, 27) + b) * np.uint64(5) + np.uint64(0x52DCE729)
            b ^= _v_rotl(k2 * c2, 33) * c1
            b = (_v_rotl(b, 31) + a) * np.uint64(5) + np.uint64(0x38495AB5)
            h1[act], h2[act] = a, b
        # The tail (0-15 bytes), zero-padded: mixing a zero word changes nothing, as Java skips it.
        tail = lens - (nblocks << 4)
        raw = buf[(starts + (nblocks << 4))[:, None] + np.arange(16)]
        raw[np.arange(16)[None, :] >= tail[:, None]] = 0
        words = np.ascontiguousarray(raw).view("<u8")
        h2 ^= _v_rotl(words[:, 1] * c2, 33) * c1
        h1 ^= _v_rotl(words[:, 0] * c1, 31) * c2
        length = lens.astype(np.uint64)
        h1 ^= length
        h2 ^= length
        h1 = h1 + h2
        h2 = h2 + h1
        h1, h2 = _v_fmix(h1), _v_fmix(h2)
        out[rows] = _v_fold(h1 + h2)
    return out


def _v_civil(days: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Year, month, day of days since 1970-01-01 (proleptic Gregorian; Howard Hinnant's algorithm)."""
    z = days.astype(np.int64) + 719468
    era = np.floor_divide(z, 146097)
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = np.where(mp < 10, mp + 3, mp - 9)
    return yoe + era * 400 + (month <= 2), month, day


def _v_date_hash(days: np.ndarray) -> np.ndarray:
    y, m, d = _v_civil(days)
    return _v_hash_fixed(d, 4, _v_hash_fixed(m, 4, _v_hash_fixed(y, 4, None)))


def _v_nanos(nanos: np.ndarray, precision: int) -> np.ndarray:
    if precision >= 9:
        return nanos
    unit = 10 ** (9 - max(precision, 0))
    return nanos // unit * unit


def _v_time_hash(ns_of_day: np.ndarray, precision: int) -> np.ndarray:
    seconds, nanos = np.divmod(ns_of_day.astype(np.int64), 1_000_000_000)
    h = _v_hash_fixed(seconds // 3600, 4, None)
    h = _v_hash_fixed(seconds // 60 % 60, 4, h)
    h = _v_hash_fixed(seconds % 60, 4, h)
    return _v_hash_fixed(_v_nanos(nanos, precision), 4, h)


_HEX = np.full(256, 255, np.uint8)
_HEX[np.frombuffer(b"0123456789", np.uint8)] = np.arange(10)
_HEX[np.frombuffer(b"abcdef", np.uint8)] = np.arange(10, 16)
_HEX[np.frombuffer(b"ABCDEF", np.uint8)] = np.arange(10, 16)
_UUID_HEX = np.array([i for i in range(36) if i not in (8, 13, 18, 23)])


def _v_uuid_hash(items: Sequence[Any]) -> np.ndarray:
    texts = [v if isinstance(v, bytes) else str(v).encode() for v in items]
    if any(len(t) != 36 for t in texts):
        return np.asarray([value_hash(ColumnType.UUID, uuid.UUID(t.decode())) for t in texts], np.int32)
    nib = _HEX[np.frombuffer(b"".join(texts), np.uint8).reshape(len(texts), 36)[:, _UUID_HEX]]
    if np.any(nib == 255):
        raise ConfigurationError("a UUID value that is not hexadecimal text")
    raw = np.ascontiguousarray((nib[:, 0::2] << 4) | nib[:, 1::2])
    halves = raw.view(">u8")  # (n, 2): the most and the least significant 64 bits
    return _v_hash_fixed(halves[:, 1], 8, _v_hash_fixed(halves[:, 0], 8, None))


#: Up to this many values, :func:`hash_column` hashes one value at a time (NumPy's per-call cost
#: is ~70-90 us a column; a key-value op's key is one row).
_SMALL = 8
_DAY_MS = 86_400_000
_DAY_NS = 86_400 * 1_000_000_000
_EPOCH_DATE = _dt.date(1970, 1, 1)


def _decoded_hash(v: Any, t: ColumnType, scale: int, precision: int) -> int:
    """:func:`value_hash` of one value in the form :func:`hash_column` takes."""
    if t in (ColumnType.STRING, ColumnType.BYTE_ARRAY):
        return hash_bytes(v if isinstance(v, bytes) else str(v).encode())
    if t is ColumnType.UUID:
        return value_hash(
            t, v if isinstance(v, uuid.UUID) else uuid.UUID(v.decode() if isinstance(v, bytes) else str(v))
        )
    if t in (ColumnType.DATE, ColumnType.TIME, ColumnType.DATETIME, ColumnType.TIMESTAMP):
        v = int(v)
        if t is ColumnType.TIMESTAMP:
            seconds, nanos = divmod(v, 1_000_000_000)
            return timestamp_hash(seconds, nanos, precision)
        if t is ColumnType.DATE:
            return _date_hash(_EPOCH_DATE + _dt.timedelta(days=v // _DAY_MS))
        days, ns = divmod(v, _DAY_NS) if t is ColumnType.DATETIME else (0, v)
        secs, nanos = divmod(ns, 1_000_000_000)
        h = time_hash(secs // 3600, secs // 60 % 60, secs % 60, nanos, precision)
        return combine(_date_hash(_EPOCH_DATE + _dt.timedelta(days=days)), h) if t is ColumnType.DATETIME else h
    return value_hash(t, v, scale, precision)


def hash_column(values: Any, col_type: ColumnType, scale: int = 0, precision: int = 0) -> np.ndarray:
    """The column hash (:func:`value_hash`) of each value of a column as :mod:`.columns` decodes it (int32).

    BOOLEAN bool, INT8..INT64 integers, FLOAT/DOUBLE floats, DATE int64 milliseconds since 1970-01-01,
    TIME int64 nanoseconds since midnight, DATETIME/TIMESTAMP int64 nanoseconds since 1970-01-01,
    STRING UTF-8 bytes, BYTE_ARRAY bytes, UUID its text (or ``uuid.UUID``), DECIMAL its text or
    ``decimal.Decimal`` (``scale`` the column's; ``precision`` the fractional digits of a
    TIME/DATETIME/TIMESTAMP column).  No NULLs (key columns).  Vectorized but for DECIMAL, and
    value by value for a few values.
    """
    t = col_type
    if len(values) <= _SMALL:
        return np.asarray(
            [
                _decoded_hash(v, t, scale, precision)
                for v in (values.tolist() if isinstance(values, np.ndarray) else values)
            ],
            np.int32,
        )
    if t in INT_WIDTHS:
        return _v_hash_fixed(np.asarray(values), INT_WIDTHS[t], None)
    if t is ColumnType.BOOLEAN:
        return np.where(np.asarray(values, bool), hash_fixed(1, 1), hash_fixed(0, 1)).astype(np.int32)
    if t is ColumnType.FLOAT:
        return _v_hash_fixed(np.asarray(values, np.float32).view(np.int32), 4, None)
    if t is ColumnType.DOUBLE:
        return _v_hash_fixed(np.asarray(values, np.float64).view(np.int64), 8, None)
    if t is ColumnType.DATE:
        return _v_date_hash(np.floor_divide(np.asarray(values, np.int64), 86_400_000))
    if t is ColumnType.TIME:
        return _v_time_hash(np.asarray(values, np.int64), precision)
    if t is ColumnType.DATETIME:
        days, ns_of_day = np.divmod(np.asarray(values, np.int64), 86_400 * 1_000_000_000)
        return _v_hash_fixed(_v_date_hash(days), 4, _v_time_hash(ns_of_day, precision))
    if t is ColumnType.TIMESTAMP:
        seconds, nanos = np.divmod(np.asarray(values, np.int64), 1_000_000_000)
        return _v_hash_fixed(_v_nanos(nanos, precision), 4, _v_hash_fixed(seconds, 8, None))
    if t in (ColumnType.STRING, ColumnType.BYTE_ARRAY):
        return hash_bytes_array([v if isinstance(v, bytes) else str(v).encode() for v in values])
    if t is ColumnType.UUID:
        return _v_uuid_hash(values)
    if t is ColumnType.DECIMAL:
        return hash_bytes_array([java_bigint_bytes(decimal_unscaled(v, scale)) for v in values])
    raise ConfigurationError(f"a {t.name} column cannot be a colocation (key) column")


def row_hashes(columns: Sequence[tuple[np.ndarray, ColumnType, int, int]]) -> np.ndarray:
    """The colocation hash of each row (int32): ``(values, type, scale, precision)`` of each colocation
    column, in colocation order (:func:`row_hash`, a column at a time)."""
    h = np.zeros(len(columns[0][0]) if columns else 0, np.int32)
    for values, col_type, scale, precision in columns:
        h = combine_arrays(h, hash_column(values, col_type, scale, precision))
    return h
