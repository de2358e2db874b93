"""Java date/time objects that travel as optimized-marshaller bytes (type code -2).

Ignite's binary format has native codes for ``java.util.Date`` (11),
``java.sql.Timestamp`` (33) and ``java.sql.Time`` (36), but not for
``java.sql.Date``: Java writes it (and any other ``Serializable`` class with a
``writeObject`` method) with its *optimized marshaller*.  That is what Ignite's
SQL engine does with every ``DATE`` column: the row stored in a table's
``SQL_PUBLIC_*`` cache, and ``DATE`` values in SQL results, hold these bytes.

This module decodes exactly four classes -- ``java.sql.Date``,
``java.util.Date``, ``java.sql.Time`` and ``java.sql.Timestamp`` -- and
nothing else; it is not a general Java deserializer.  Layout (all little
endian), as a 2.17/2.18 node sends a ``java.sql.Date``::

    0x66                SERIALIZABLE tag of the optimized marshaller
    int  type id        String.hashCode() of the class name
    short checksum      low 16 bits of the class's serialVersionUID
    long fastTime       what Date.writeObject writes: epoch milliseconds
    int  nanos          java.sql.Timestamp only: its own field, [0, 1e9)

``java.sql.Timestamp`` keeps whole seconds in ``fastTime`` and the fraction in
``nanos`` (the JDK's documented representation), so its instant is
``fastTime * 1e6 + nanos`` nanoseconds.  Each value must be exactly this long;
any other class raises :class:`UnsupportedJavaObjectError` naming it.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from ..errors import ProtocolError
from .values import Date, Time, Timestamp

if TYPE_CHECKING:
    import numpy as np

__all__ = ["UnsupportedJavaObjectError", "decode_java_time", "decode_java_time_columns", "describe_java_object",
           "encode_java_time"]

_SERIALIZABLE = 0x66
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


class UnsupportedJavaObjectError(ProtocolError):
    """Optimized-marshaller bytes of a class this library does not decode."""

    def __init__(self, message: str, class_name: str) -> None:
        super().__init__(message)
        self.class_name = class_name


def describe_java_object(data: bytes) -> str:
    """A human name for the class of optimized-marshaller bytes (never raises)."""
    if len(data) >= 5 and data[0] == _SERIALIZABLE:
        tid = _INT.unpack_from(data, 1)[0]
        known = _CLASSES.get(tid)
        return known[0] if known else f"Java class with type id {tid}"
    if not data:
        return "empty Java object"
    return f"Java object with optimized-marshaller tag 0x{data[0]:02x}"


def decode_java_time(data: bytes | bytearray | memoryview) -> Date | Time | Timestamp:
    """The value of an optimized-marshaller ``java.sql.Date``/``Time``/``Timestamp`` or ``java.util.Date``.

    Raises :class:`UnsupportedJavaObjectError` for any other class and
    :class:`~tensorflow_ignite.errors.ProtocolError` for malformed bytes.
    """
    data = bytes(data)
    if len(data) < _HEAD.size or data[0] != _SERIALIZABLE:
        name = describe_java_object(data)
        raise UnsupportedJavaObjectError(
            f"{name} ({len(data)} bytes) is not one of the Java date/time classes IgniteDataset decodes "
            f"(java.sql.Date, java.util.Date, java.sql.Time, java.sql.Timestamp)", name)
    _, tid, checksum = _HEAD.unpack_from(data, 0)
    known = _CLASSES.get(tid)
    if known is None:
        name = describe_java_object(data)
        raise UnsupportedJavaObjectError(
            f"{name} is not one of the Java date/time classes IgniteDataset decodes "
            f"(java.sql.Date, java.util.Date, java.sql.Time, java.sql.Timestamp)", name)
    name, expected_checksum, kind = known
    if checksum != expected_checksum:
        raise ProtocolError(f"{name}: class checksum 0x{checksum:04x}, expected 0x{expected_checksum:04x} "
                            "(a different version of the class?)")
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


#: Kinds :func:`decode_java_time_columns` reports (0: not decoded there).
KIND_DATE, KIND_TIME, KIND_TIMESTAMP = 1, 2, 3
_KIND_OF = {Date: KIND_DATE, Time: KIND_TIME, Timestamp: KIND_TIMESTAMP}


def decode_java_time_columns(page: "np.ndarray", starts: "np.ndarray",
                             lengths: "np.ndarray") -> "tuple[np.ndarray, np.ndarray]":
    """Vectorized :func:`decode_java_time` of many values of a page (the column decoder's path).

    ``starts``/``lengths`` locate each value's optimized-marshaller bytes in
    the uint8 ``page``.  Returns ``(kind, epoch_ns_or_ms)``: ``kind`` is
    ``KIND_DATE``/``KIND_TIME`` (value in ms) or ``KIND_TIMESTAMP`` (value in
    ns) where the bytes are exactly one of the four classes, 0 where they are
    anything else -- those rows are left to :func:`decode_java_time`, which
    names the class or the fault.  Nothing outside ``page`` is read.
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
                ok &= (nanos >= 0) & (nanos < 1_000_000_000)
                value[rows[ok]] = fast[ok] * 1_000_000 + nanos[ok]
            else:
                value[rows[ok]] = fast[ok]
            kind[rows[ok]] = _KIND_OF[cls]
    return kind, value
