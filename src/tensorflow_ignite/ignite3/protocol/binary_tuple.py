"""Ignite 3's BinaryTuple: rows and SQL arguments (``modules/binary-tuple``).

A tuple of ``n`` elements is one header byte (bits 0-1: the size of an
offset-table entry, 1 << bits bytes), ``n`` little-endian offset entries (the
end of each element's value, from the start of the value area) and the values.
An element whose value is empty is NULL; empty strings and byte arrays are
written as the one byte ``0x80`` (a string or byte array starting with 0x80
gets that byte in front).  Numbers are little-endian and written in the fewest
bytes that hold them: an INT64 of 5 takes one byte, a DOUBLE that is exactly a
float takes four.  DATE: 3 bytes (``year << 9 | month << 5 | day``, year
signed); TIME: 4, 5 or 6 bytes (hour, minute, second and milli-, micro- or
nanoseconds in 10, 20 or 30 bits); DATETIME: DATE then TIME; TIMESTAMP: int64
seconds and, when not zero, int32 nanoseconds; UUID: two int64s, most
significant first; DECIMAL: int16 scale, then the unscaled value big-endian in
two's complement.

Arguments of an SQL request are one tuple of three elements per argument:
column type id, scale, value (``ClientBinaryTupleUtils.appendObject``).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import struct
import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np

from ...errors import ConfigurationError, ProtocolError
from .codes import ColumnType

__all__ = ["VARLEN_EMPTY", "build", "encode_arguments", "element_bounds", "decode_value"]

VARLEN_EMPTY = 0x80
_EPOCH = _dt.date(1970, 1, 1)


# ---------------------------------------------------------------------- building
def build(elements: Sequence[bytes | None]) -> bytes:
    """A tuple of ``elements`` (each the value's bytes; None or b"" is NULL)."""
    ends, total = [], 0
    for e in elements:
        total += len(e) if e else 0
        ends.append(total)
    size = 1 if total <= 0xFF else 2 if total <= 0xFFFF else 4
    flags = {1: 0, 2: 1, 4: 2}[size]
    table = np.asarray(ends, dtype={1: "<u1", 2: "<u2", 4: "<u4"}[size]).tobytes()
    return bytes([flags]) + table + b"".join(e for e in elements if e)


def _int_bytes(v: int) -> bytes:
    for fmt, lo, hi in (("<b", -128, 127), ("<h", -32768, 32767), ("<i", -(2**31), 2**31 - 1)):
        if lo <= v <= hi:
            return struct.pack(fmt, v)
    return struct.pack("<q", v)


def _varlen(b: bytes) -> bytes:
    return bytes([VARLEN_EMPTY]) + b if not b or b[0] == VARLEN_EMPTY else b


def _date_bytes(d: _dt.date) -> bytes:
    v = (d.year << 9) | (d.month << 5) | d.day
    return struct.pack("<H", v & 0xFFFF) + struct.pack("<b", v >> 16)


def _time_bytes(t: _dt.time) -> bytes:
    hms = (t.hour << 12) | (t.minute << 6) | t.second
    micros = t.microsecond
    if micros % 1000 == 0:
        return struct.pack("<I", (hms << 10) | (micros // 1000))
    v = (hms << 20) | micros
    return struct.pack("<I", v & 0xFFFFFFFF) + bytes([v >> 32])


def _decimal_bytes(d: decimal.Decimal) -> tuple[int, bytes]:
    sign, digits, exponent = d.as_tuple()
    if not isinstance(exponent, int):
        raise ConfigurationError(f"SQL argument {d!r}: NaN and infinite decimals have no Ignite 3 value")
    unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    scale = -exponent
    length = max(1, (unscaled.bit_length() + 8) // 8)
    return scale, struct.pack("<h", scale) + unscaled.to_bytes(length, "big", signed=True)


#: NumPy signed integers narrower than int64 keep their width as SQL arguments.
_NUMPY_INT_TYPES = {1: ColumnType.INT8, 2: ColumnType.INT16, 4: ColumnType.INT32}


def _typed(value: Any) -> tuple[ColumnType, int, bytes]:
    """(type, scale, bytes) of one SQL argument."""
    if isinstance(value, (bool, np.bool_)):
        return ColumnType.BOOLEAN, 0, b"\x01" if value else b"\x00"
    if isinstance(value, np.integer) and value.dtype.itemsize < 8 and value.dtype.kind == "i":
        return _NUMPY_INT_TYPES[value.dtype.itemsize], 0, _int_bytes(int(value))
    if isinstance(value, (int, np.integer)):
        return ColumnType.INT64, 0, _int_bytes(int(value))
    if isinstance(value, (float, np.floating)):
        f = float(value)
        if isinstance(value, np.float32):
            return ColumnType.FLOAT, 0, struct.pack("<f", f)
        return (
            ColumnType.DOUBLE,
            0,
            (struct.pack("<f", f) if struct.unpack("<f", struct.pack("<f", f))[0] == f else struct.pack("<d", f)),
        )
    if isinstance(value, str):
        return ColumnType.STRING, 0, _varlen(value.encode())
    if isinstance(value, (bytes, bytearray, memoryview)):
        return ColumnType.BYTE_ARRAY, 0, _varlen(bytes(value))
    if isinstance(value, uuid.UUID):
        msb, lsb = value.int >> 64, value.int & ((1 << 64) - 1)
        return ColumnType.UUID, 0, struct.pack("<QQ", msb, lsb)
    if isinstance(value, decimal.Decimal):
        scale, data = _decimal_bytes(value)
        return ColumnType.DECIMAL, scale, data
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            seconds = int(value.timestamp() // 1)
            nanos = value.microsecond * 1000
            return ColumnType.TIMESTAMP, 0, struct.pack("<q", seconds) + (struct.pack("<i", nanos) if nanos else b"")
        return ColumnType.DATETIME, 0, _date_bytes(value.date()) + _time_bytes(value.time())
    if isinstance(value, _dt.date):
        return ColumnType.DATE, 0, _date_bytes(value)
    if isinstance(value, _dt.time):
        return ColumnType.TIME, 0, _time_bytes(value)
    raise ConfigurationError(
        f"SQL argument {value!r} of type {type(value).__name__} has no Ignite 3 type; pass bool, int, float, "
        "str, bytes, uuid.UUID, decimal.Decimal, datetime.date/time/datetime (aware: TIMESTAMP)"
    )


def encode_arguments(values: Sequence[Any]) -> bytes:
    """The tuple of an SQL request's arguments: type id, scale, value per argument."""
    elements: list[bytes | None] = []
    for v in values:
        if v is None:
            elements += [None, None, None]
            continue
        col_type, scale, data = _typed(v)
        elements += [_int_bytes(int(col_type)), _int_bytes(scale), data]
    return build(elements)


# ---------------------------------------------------------------------- reading
def element_bounds(data: bytes, count: int) -> list[tuple[int, int]]:
    """``(begin, end)`` of each of the ``count`` elements of one tuple, checked against its size."""
    if count < 0:
        raise ProtocolError(f"binary tuple of {count} elements")
    if not data:
        raise ProtocolError("empty binary tuple")
    entry = 1 << (data[0] & 0b11)
    if entry == 8:
        raise ProtocolError("binary tuple with 8-byte offsets")
    base = 1 + entry * count
    if base > len(data):
        raise ProtocolError(f"binary tuple of {len(data)} bytes cannot hold {count} offsets of {entry} bytes")
    fmt = {1: "B", 2: "H", 4: "I"}[entry]
    ends = struct.unpack_from(f"<{count}{fmt}", data, 1)
    out, begin = [], base
    for e in ends:
        end = base + e
        if end < begin or end > len(data):
            raise ProtocolError(f"binary tuple offsets out of order or past its {len(data)} bytes")
        out.append((begin, end))
        begin = end
    return out


def _le_int(data: bytes, begin: int, end: int) -> int:
    n = end - begin
    if n not in (1, 2, 4, 8):
        raise ProtocolError(f"an integer of {n} bytes in a binary tuple")
    return int.from_bytes(data[begin:end], "little", signed=True)


def _date(data: bytes, begin: int) -> _dt.date:
    v = data[begin] | (data[begin + 1] << 8) | (struct.unpack_from("<b", data, begin + 2)[0] << 16)
    return _dt.date(v >> 9, (v >> 5) & 15, v & 31)


def _time_parts(data: bytes, begin: int, length: int) -> tuple[int, int, int, int]:
    """hour, minute, second, nanosecond."""
    raw = int.from_bytes(data[begin : begin + length], "little")
    if length == 4:
        nanos, raw = (raw & 0x3FF) * 1_000_000, raw >> 10
    elif length == 5:
        nanos, raw = (raw & 0xFFFFF) * 1000, raw >> 20
    elif length == 6:
        nanos, raw = raw & 0x3FFFFFFF, raw >> 30
    else:
        raise ProtocolError(f"a TIME of {length} bytes in a binary tuple")
    return (raw >> 12) & 31, (raw >> 6) & 63, raw & 63, nanos


def decode_value(col_type: int, data: bytes, begin: int, end: int) -> Any:
    """One element as a Python value (None when NULL); the general, row-by-row path."""
    if begin == end:
        return None
    n = end - begin
    t = ColumnType(col_type)
    if t is ColumnType.BOOLEAN:
        return data[begin] != 0
    if t in (ColumnType.INT8, ColumnType.INT16, ColumnType.INT32, ColumnType.INT64):
        return _le_int(data, begin, end)
    if t in (ColumnType.FLOAT, ColumnType.DOUBLE):
        if n == 4:
            return struct.unpack_from("<f", data, begin)[0]
        if n == 8:
            return struct.unpack_from("<d", data, begin)[0]
        raise ProtocolError(f"a floating-point number of {n} bytes in a binary tuple")
    if t in (ColumnType.STRING, ColumnType.BYTE_ARRAY):
        if data[begin] == VARLEN_EMPTY:
            begin += 1
        raw = bytes(data[begin:end])
        return raw.decode() if t is ColumnType.STRING else raw
    if t is ColumnType.UUID:
        if n != 16:
            raise ProtocolError(f"a UUID of {n} bytes in a binary tuple")
        msb, lsb = struct.unpack_from("<QQ", data, begin)
        return uuid.UUID(int=(msb << 64) | lsb)
    if t is ColumnType.DECIMAL:
        if n < 3:
            raise ProtocolError(f"a DECIMAL of {n} bytes in a binary tuple")
        (scale,) = struct.unpack_from("<h", data, begin)
        unscaled = int.from_bytes(data[begin + 2 : end], "big", signed=True)
        return decimal.Decimal(unscaled).scaleb(-scale)
    if t is ColumnType.DATE:
        if n != 3:
            raise ProtocolError(f"a DATE of {n} bytes in a binary tuple")
        return _date(data, begin)
    if t is ColumnType.TIME:
        h, m, s, ns = _time_parts(data, begin, n)
        return _dt.time(h, m, s, ns // 1000)
    if t is ColumnType.DATETIME:
        if n < 7:
            raise ProtocolError(f"a DATETIME of {n} bytes in a binary tuple")
        h, m, s, ns = _time_parts(data, begin + 3, n - 3)
        return _dt.datetime.combine(_date(data, begin), _dt.time(h, m, s, ns // 1000))
    if t in (ColumnType.TIMESTAMP, ColumnType.DURATION):
        if n not in (8, 12):
            raise ProtocolError(f"a {t.name} of {n} bytes in a binary tuple")
        (seconds,) = struct.unpack_from("<q", data, begin)
        nanos = struct.unpack_from("<i", data, begin + 8)[0] if n == 12 else 0
        if t is ColumnType.DURATION:
            return _dt.timedelta(seconds=seconds, microseconds=nanos // 1000)
        return _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC) + _dt.timedelta(seconds=seconds, microseconds=nanos // 1000)
    raise ProtocolError(f"column type {t.name} is not supported by this client")
