"""Java date/time objects that travel as optimized-marshaller bytes (type code -2).

Ignite's binary format has native codes for ``java.util.Date`` (11),
``java.sql.Timestamp`` (33) and ``java.sql.Time`` (36), but not for
``java.sql.Date`` nor for ``java.time``: Java writes them (and any other
``Serializable`` class with a ``writeObject`` method or a ``writeReplace``)
with its *optimized marshaller*.  That is what Ignite's SQL engine does with
every ``DATE`` column -- the row stored in a table's ``SQL_PUBLIC_*`` cache,
and ``DATE`` values in SQL results, hold these bytes -- and what a Java
client's POJO fields of type ``java.sql.Date``, ``LocalDate``,
``LocalDateTime``, ``LocalTime`` or ``Instant`` become.

This module decodes exactly these classes and nothing else; it is not a
general Java deserializer.  Layouts (all little endian), as 2.17/2.18 nodes
and clients write them:

``java.sql.Date``, ``java.util.Date``, ``java.sql.Time``, ``java.sql.Timestamp``::

    0x66                SERIALIZABLE tag of the optimized marshaller
    int  type id        String.hashCode() of the class name
    short checksum      low 16 bits of the class's serialVersionUID
    long fastTime       what Date.writeObject writes: epoch milliseconds
    int  nanos          java.sql.Timestamp only: its own field, [0, 1e9)

``java.sql.Timestamp`` keeps whole seconds in ``fastTime`` and the fraction in
``nanos`` (the JDK's documented representation), so its instant is
``fastTime * 1e6 + nanos`` nanoseconds.

``java.time`` values are written through their ``writeReplace`` proxy
``java.time.Ser``, an ``Externalizable``, in the JDK's documented serialized
form::

    0x65                EXTERNALIZABLE tag
    int  type id        String.hashCode() of "java.time.Ser"
    short checksum      low 16 bits of its serialVersionUID
    byte kind           2 Instant, 3 LocalDate, 4 LocalTime, 5 LocalDateTime (others: not decoded)
    Instant             long epoch seconds, int nanos [0, 1e9)
    LocalDate           int year, byte month, byte day
    LocalTime           byte hour, byte minute, byte second, int nano; the first
                        field that would be followed only by zeros is written
                        complemented (~x < 0) and ends the value
    LocalDateTime       a LocalDate, then a LocalTime

They read as the native kinds, losslessly: ``LocalDate`` as a ``Date`` (the
epoch milliseconds of its midnight in UTC), ``Instant`` and ``LocalDateTime``
as a ``Timestamp`` (a ``LocalDateTime`` read as UTC), ``LocalTime`` as a
``Time`` when it has no sub-millisecond digits (otherwise it does not convert
and is left undecoded, like any other class).  Each value must be exactly as
long as its layout; any other class raises :class:`UnsupportedJavaObjectError`
naming it.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from ..errors import ProtocolError, UnsupportedJavaObjectError
from .values import Date, Time, Timestamp

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "DECODED_JAVA_CLASSES",
    "UnsupportedJavaObjectError",
    "decode_java_time",
    "decode_java_time_columns",
    "describe_java_object",
    "encode_java_time",
    "encode_java_time_ser",
]

_SERIALIZABLE = 0x66
_EXTERNALIZABLE = 0x65
_HEAD = struct.Struct("<biH")
_LONG = struct.Struct("<q")
_INT = struct.Struct("<i")


def _java_hash(name: str) -> int:
    h = 0
    for ch in name:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


#: type id -> (class name, serialVersionUID & 0xFFFF, Python type).
_CLASSES: dict[int, tuple[str, int, type]] = {
    _java_hash(name): (name, uid & 0xFFFF, kind)
    for name, uid, kind in (
        ("java.sql.Date", 1511598038487230103, Date),
        ("java.util.Date", 7523967970034938905, Date),
        ("java.sql.Time", 8397324403548013681, Time),
        ("java.sql.Timestamp", 2745179027874758501, Timestamp),
    )
}


#: ``java.time.Ser``: the proxy every ``java.time`` value is serialized through.
_SER_TID = _java_hash("java.time.Ser")
_SER_CHECKSUM = -7683839454370182990 & 0xFFFF
#: java.time.Ser's kind byte -> the class it stands for (JDK serialized form).
_SER_KINDS = {
    1: "java.time.Duration",
    2: "java.time.Instant",
    3: "java.time.LocalDate",
    4: "java.time.LocalTime",
    5: "java.time.LocalDateTime",
    6: "java.time.ZonedDateTime",
    7: "java.time.ZoneRegion",
    8: "java.time.ZoneOffset",
    9: "java.time.OffsetTime",
    10: "java.time.OffsetDateTime",
    11: "java.time.Year",
    12: "java.time.YearMonth",
    13: "java.time.MonthDay",
    14: "java.time.Period",
}
_INSTANT, _LOCAL_DATE, _LOCAL_TIME, _LOCAL_DATE_TIME = 2, 3, 4, 5
#: What :func:`decode_java_time` decodes, for messages.
DECODED_JAVA_CLASSES = (
    "java.sql.Date, java.util.Date, java.sql.Time, java.sql.Timestamp, java.time.LocalDate, "
    "java.time.LocalDateTime, java.time.LocalTime (whole milliseconds), java.time.Instant"
)
_DAY_MS = 86_400_000
_DAY_NS = 86_400 * 10**9


def describe_java_object(data: bytes) -> str:
    """A human name for the class of optimized-marshaller bytes (never raises)."""
    if len(data) >= 5 and data[0] in (_SERIALIZABLE, _EXTERNALIZABLE):
        tid = _INT.unpack_from(data, 1)[0]
        if tid == _SER_TID and data[0] == _EXTERNALIZABLE:
            return _SER_KINDS.get(data[7], "java.time.Ser") if len(data) > 7 else "java.time.Ser"
        known = _CLASSES.get(tid) if data[0] == _SERIALIZABLE else None
        return known[0] if known else f"Java class with type id {tid}"
    if not data:
        return "empty Java object"
    return f"Java object with optimized-marshaller tag 0x{data[0]:02x}"


def decode_java_time(data: bytes | bytearray | memoryview) -> Date | Time | Timestamp:
    """The value of optimized-marshaller bytes of one of the date/time classes above.

    Raises :class:`UnsupportedJavaObjectError` for any other class (and for a
    ``LocalTime`` with sub-millisecond digits) and
    :class:`~tensorflow_ignite.errors.ProtocolError` for malformed bytes.
    """
    data = bytes(data)
    if len(data) >= _HEAD.size and data[0] == _EXTERNALIZABLE and _HEAD.unpack_from(data, 0)[1] == _SER_TID:
        return _decode_ser(data)
    if len(data) < _HEAD.size or data[0] != _SERIALIZABLE:
        name = describe_java_object(data)
        raise UnsupportedJavaObjectError(
            f"{name} ({len(data)} bytes) is not one of the Java date/time classes IgniteDataset decodes "
            f"({DECODED_JAVA_CLASSES})",
            name,
        )
    _, tid, checksum = _HEAD.unpack_from(data, 0)
    known = _CLASSES.get(tid)
    if known is None:
        name = describe_java_object(data)
        raise UnsupportedJavaObjectError(
            f"{name} is not one of the Java date/time classes IgniteDataset decodes ({DECODED_JAVA_CLASSES})", name
        )
    name, expected_checksum, kind = known
    if checksum != expected_checksum:
        raise ProtocolError(
            f"{name}: class checksum 0x{checksum:04x}, expected 0x{expected_checksum:04x} "
            "(a different version of the class?)"
        )
    size = _HEAD.size + 8 + (4 if kind is Timestamp else 0)
    if len(data) != size:
        raise ProtocolError(f"{name}: {len(data)} bytes of optimized-marshaller data, expected {size}")
    fast_time = _LONG.unpack_from(data, _HEAD.size)[0]
    if kind is Timestamp:
        nanos = _INT.unpack_from(data, _HEAD.size + 8)[0]
        if not 0 <= nanos < 1_000_000_000:
            raise ProtocolError(f"{name}: nanos {nanos} outside [0, 1e9)")
        return Timestamp.from_epoch_ns(fast_time * 1_000_000 + nanos)
    if kind is Time:
        return Time(fast_time)
    return Date(fast_time)


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (any year; also works on numpy arrays)."""
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * ((month + 9) % 12) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146_097 + doe - 719_468


def _month_days(year: int, month: int) -> int:
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _decode_ser(data: bytes) -> Date | Time | Timestamp:
    checksum = _HEAD.unpack_from(data, 0)[2]
    if checksum != _SER_CHECKSUM:
        raise ProtocolError(
            f"java.time.Ser: class checksum 0x{checksum:04x}, expected 0x{_SER_CHECKSUM:04x} "
            "(a different version of the class?)"
        )
    if len(data) <= _HEAD.size:
        raise ProtocolError("java.time.Ser: no kind byte")
    kind = data[_HEAD.size]
    name = _SER_KINDS.get(kind, f"java.time.Ser kind {kind}")
    p = _HEAD.size + 1
    if kind == _INSTANT:
        if len(data) != p + 12:
            raise ProtocolError(f"{name}: {len(data)} bytes of optimized-marshaller data, expected {p + 12}")
        seconds = _LONG.unpack_from(data, p)[0]
        nanos = _INT.unpack_from(data, p + 8)[0]
        if not 0 <= nanos < 1_000_000_000:
            raise ProtocolError(f"{name}: nanos {nanos} outside [0, 1e9)")
        return Timestamp.from_epoch_ns(seconds * 1_000_000_000 + nanos)
    if kind == _LOCAL_DATE:
        days, p = _read_local_date(data, p, name)
        _expect_end(data, p, name)
        return Date(days * _DAY_MS)
    if kind == _LOCAL_TIME:
        nano_of_day, p = _read_local_time(data, p, name)
        _expect_end(data, p, name)
        if nano_of_day % 1_000_000:
            raise UnsupportedJavaObjectError(
                f"{name} with sub-millisecond digits ({nano_of_day} ns after midnight) does not fit a Time "
                "(milliseconds since midnight)",
                name,
            )
        return Time(nano_of_day // 1_000_000)
    if kind == _LOCAL_DATE_TIME:
        days, p = _read_local_date(data, p, name)
        nano_of_day, p = _read_local_time(data, p, name)
        _expect_end(data, p, name)
        return Timestamp.from_epoch_ns(days * _DAY_NS + nano_of_day)
    raise UnsupportedJavaObjectError(
        f"{name} is not one of the Java date/time classes IgniteDataset decodes ({DECODED_JAVA_CLASSES})", name
    )


def _expect_end(data: bytes, p: int, name: str) -> None:
    if p != len(data):
        raise ProtocolError(f"{name}: {len(data)} bytes of optimized-marshaller data, expected {p}")


def _read_local_date(data: bytes, p: int, name: str) -> tuple[int, int]:
    if len(data) < p + 6:
        raise ProtocolError(f"{name}: truncated date")
    year = _INT.unpack_from(data, p)[0]
    month, day = data[p + 4], data[p + 5]
    if not 1 <= month <= 12 or not 1 <= day <= _month_days(year, month):
        raise ProtocolError(f"{name}: no such date {year}-{month}-{day}")
    return _days_from_civil(year, month, day), p + 6


def _read_local_time(data: bytes, p: int, name: str) -> tuple[int, int]:
    """Nanoseconds since midnight of a ``LocalTime`` at ``p`` (``LocalTime.writeExternal``'s form)."""
    parts = [0, 0, 0]
    for i in range(3):
        if len(data) <= p:
            raise ProtocolError(f"{name}: truncated time")
        b = data[p] - 256 if data[p] > 127 else data[p]
        p += 1
        if b < 0:
            parts[i] = ~b
            nano = 0
            break
        parts[i] = b
    else:
        if len(data) < p + 4:
            raise ProtocolError(f"{name}: truncated time")
        nano = _INT.unpack_from(data, p)[0]
        p += 4
    hour, minute, second = parts
    if not (0 <= hour < 24 and 0 <= minute < 60 and 0 <= second < 60 and 0 <= nano < 1_000_000_000):
        raise ProtocolError(f"{name}: no such time {hour}:{minute}:{second}.{nano}")
    return ((hour * 60 + minute) * 60 + second) * 1_000_000_000 + nano, p


def encode_java_time(class_name: str, epoch_ms: int, nanos: int = 0) -> bytes:
    """Optimized-marshaller bytes of one of the four classes (the layout above; for tests).

    For ``java.sql.Timestamp`` ``epoch_ms`` must be whole seconds and ``nanos`` the fraction.
    """
    tid = _java_hash(class_name)
    if tid not in _CLASSES:
        raise ValueError(f"not a supported class: {class_name}")
    out = _HEAD.pack(_SERIALIZABLE, tid, _CLASSES[tid][1]) + _LONG.pack(epoch_ms)
    if _CLASSES[tid][2] is Timestamp:
        out += _INT.pack(nanos)
    return out


def encode_java_time_ser(
    kind: str,
    *,
    year: int = 1970,
    month: int = 1,
    day: int = 1,
    hour: int = 0,
    minute: int = 0,
    second: int = 0,
    nano: int = 0,
    epoch_second: int = 0,
) -> bytes:
    """Optimized-marshaller bytes of a ``java.time`` value as Java writes them (the layout above; for tests).

    ``kind``: ``"Instant"`` (``epoch_second``, ``nano``), ``"LocalDate"``,
    ``"LocalTime"`` or ``"LocalDateTime"`` (the date and time fields).
    """

    def date() -> bytes:
        return _INT.pack(year) + bytes([month, day])

    def time() -> bytes:
        if nano == 0:
            if second == 0:
                return bytes([~hour & 0xFF]) if minute == 0 else bytes([hour, ~minute & 0xFF])
            return bytes([hour, minute, ~second & 0xFF])
        return bytes([hour, minute, second]) + _INT.pack(nano)

    head = _HEAD.pack(_EXTERNALIZABLE, _SER_TID, _SER_CHECKSUM)
    if kind == "Instant":
        return head + bytes([_INSTANT]) + _LONG.pack(epoch_second) + _INT.pack(nano)
    if kind == "LocalDate":
        return head + bytes([_LOCAL_DATE]) + date()
    if kind == "LocalTime":
        return head + bytes([_LOCAL_TIME]) + time()
    if kind == "LocalDateTime":
        return head + bytes([_LOCAL_DATE_TIME]) + date() + time()
    raise ValueError(f"not a supported java.time kind: {kind}")


#: Kinds :func:`decode_java_time_columns` reports (0: not decoded there).
KIND_DATE, KIND_TIME, KIND_TIMESTAMP = 1, 2, 3
_KIND_OF = {Date: KIND_DATE, Time: KIND_TIME, Timestamp: KIND_TIMESTAMP}


def decode_java_time_columns(
    page: "np.ndarray", starts: "np.ndarray", lengths: "np.ndarray"
) -> "tuple[np.ndarray, np.ndarray]":
    """Vectorized :func:`decode_java_time` of many values of a page (the column decoder's path).

    ``starts``/``lengths`` locate each value's optimized-marshaller bytes in
    the uint8 ``page``.  Returns ``(kind, epoch_ns_or_ms)``: ``kind`` is
    ``KIND_DATE``/``KIND_TIME`` (value in ms) or ``KIND_TIMESTAMP`` (value in
    ns) where the bytes are exactly one of the classes above, 0 where they are
    anything else (or a value this path leaves out, such as an ``Instant``
    beyond the year 2255) -- those rows are left to :func:`decode_java_time`,
    which names the class or the fault.  Nothing outside ``page`` is read.
    """
    import numpy as np

    n = len(starts)
    kind = np.zeros(n, np.int8)
    value = np.zeros(n, np.int64)
    fits = (starts >= 0) & (lengths >= 0) & (starts + lengths <= len(page))
    for size in (15, 19):
        rows = np.flatnonzero(fits & (lengths == size))
        if not rows.size:
            continue
        at = starts[rows]
        raw = page[at[:, None] + np.arange(size, dtype=np.int64)]
        tag = raw[:, 0]
        tid = raw[:, 1:5].copy().view("<i4").reshape(-1)
        checksum = raw[:, 5:7].copy().view("<u2").reshape(-1)
        fast = raw[:, 7:15].copy().view("<i8").reshape(-1)
        nanos = raw[:, 15:19].copy().view("<i4").reshape(-1) if size == 19 else None
        for class_tid, (_, class_checksum, cls) in _CLASSES.items():
            if (cls is Timestamp) != (size == 19):
                continue
            ok = (tag == _SERIALIZABLE) & (tid == class_tid) & (checksum == class_checksum)
            if nanos is not None:
                # Beyond the int64 nanoseconds (years 1677..2262): left to the slow path and its error.
                ok &= (nanos >= 0) & (nanos < 1_000_000_000) & (np.abs(fast) < 9_000_000_000_000)
                value[rows[ok]] = fast[ok] * 1_000_000 + nanos[ok]
            else:
                value[rows[ok]] = fast[ok]
            kind[rows[ok]] = _KIND_OF[cls]
    _decode_ser_columns(page, starts, lengths, fits, kind, value)
    return kind, value


def _decode_ser_columns(
    page: "np.ndarray",
    starts: "np.ndarray",
    lengths: "np.ndarray",
    fits: "np.ndarray",
    kind: "np.ndarray",
    value: "np.ndarray",
) -> None:
    """The ``java.time`` part of :func:`decode_java_time_columns` (fills ``kind``/``value`` in place)."""
    import numpy as np

    head = 8  # tag, type id, checksum, kind byte
    # (value kind, size of the bytes after the head) -> time part length (0: no time part).
    layouts = [(_INSTANT, 12, 0), (_LOCAL_DATE, 6, 0)]
    layouts += [(_LOCAL_TIME, t, t) for t in (1, 2, 3, 7)]
    layouts += [(_LOCAL_DATE_TIME, 6 + t, t) for t in (1, 2, 3, 7)]
    for ser_kind, body, time_len in layouts:
        size = head + body
        rows = np.flatnonzero(fits & (lengths == size))
        if not rows.size:
            continue
        raw = page[starts[rows][:, None] + np.arange(size, dtype=np.int64)]
        ok = (
            (raw[:, 0] == _EXTERNALIZABLE)
            & (raw[:, 1:5].copy().view("<i4").reshape(-1) == _SER_TID)
            & (raw[:, 5:7].copy().view("<u2").reshape(-1) == _SER_CHECKSUM)
            & (raw[:, 7] == ser_kind)
        )
        if ser_kind == _INSTANT:
            seconds = raw[:, 8:16].copy().view("<i8").reshape(-1)
            nanos = raw[:, 16:20].copy().view("<i4").reshape(-1).astype(np.int64)
            ok &= (nanos >= 0) & (nanos < 1_000_000_000) & (np.abs(seconds) < 9_000_000_000)
            out, out_kind = np.where(ok, seconds, 0) * 1_000_000_000 + nanos, KIND_TIMESTAMP
        else:
            days = np.zeros(len(rows), np.int64)
            if ser_kind != _LOCAL_TIME:
                year = raw[:, 8:12].copy().view("<i4").reshape(-1).astype(np.int64)
                month = raw[:, 12].astype(np.int64)
                day = raw[:, 13].astype(np.int64)
                leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
                month_days = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])[np.clip(month, 0, 12)]
                month_days = month_days + ((month == 2) & leap)
                ok &= (month >= 1) & (month <= 12) & (day >= 1) & (day <= month_days)
                # Years beyond +-5 million would overflow int64 nanoseconds anyway.
                ok &= np.abs(year) < 5_000_000 if ser_kind == _LOCAL_DATE else (year > 1677) & (year < 2262)
                days = _days_from_civil(np.where(ok, year, 1970), month, day)
            nano_of_day = np.zeros(len(rows), np.int64)
            if time_len:
                t = raw[:, size - time_len :]
                written = min(time_len, 3)  # bytes of hour, minute, second present
                signed = t[:, :written].astype(np.int8).astype(np.int64)
                parts = np.zeros((len(rows), 3), np.int64)
                nano = np.zeros(len(rows), np.int64)
                if time_len == 7:  # nothing complemented: all three, then the nanos
                    ok &= (signed >= 0).all(axis=1)
                    parts[:] = signed
                    nano = t[:, 3:7].copy().view("<i4").reshape(-1).astype(np.int64)
                else:  # the last byte written is complemented, the ones before are plain
                    ok &= (signed[:, : written - 1] >= 0).all(axis=1) & (signed[:, written - 1] < 0)
                    parts[:, : written - 1] = signed[:, : written - 1]
                    parts[:, written - 1] = ~signed[:, written - 1]
                ok &= (
                    (parts[:, 0] < 24) & (parts[:, 1] < 60) & (parts[:, 2] < 60) & (nano >= 0) & (nano < 1_000_000_000)
                )
                nano_of_day = ((parts[:, 0] * 60 + parts[:, 1]) * 60 + parts[:, 2]) * 1_000_000_000 + nano
            if ser_kind == _LOCAL_DATE:
                out, out_kind = days * _DAY_MS, KIND_DATE
            elif ser_kind == _LOCAL_TIME:
                ok &= nano_of_day % 1_000_000 == 0
                out, out_kind = nano_of_day // 1_000_000, KIND_TIME
            else:
                out, out_kind = days * _DAY_NS + nano_of_day, KIND_TIMESTAMP
        value[rows[ok]] = out[ok]
        kind[rows[ok]] = out_kind
