"""Little-endian byte readers and writers, with every read bounds-checked.

``ByteReader`` walks a ``memoryview`` with an integer cursor using precompiled
``struct.Struct`` objects.  Each read checks the cursor against the end of the
readable region *before* touching memory, and every length read from the wire
is checked against the bytes actually left before anything is allocated, so a
hostile or truncated frame raises :class:`~tensorflow_ignite.errors.ProtocolError`
(never ``IndexError``, ``struct.error`` or ``MemoryError``).

``ByteWriter`` appends to a ``bytearray``.  A value out of range for its wire
type raises ``struct.error``/``OverflowError``: that is a caller bug, not a
protocol fault, so it is not turned into ``ProtocolError``.
"""

from __future__ import annotations

import struct
import uuid as _uuid
from typing import Final

from tensorflow_ignite.errors import ProtocolError

__all__ = [
    "ByteReader",
    "ByteWriter",
    "I8",
    "U8",
    "I16",
    "U16",
    "I32",
    "I64",
    "F32",
    "F64",
    "UUID_STRUCT",
    "uuid_from_java",
    "uuid_to_java",
]

I8: Final = struct.Struct("<b")
U8: Final = struct.Struct("<B")
I16: Final = struct.Struct("<h")
U16: Final = struct.Struct("<H")
I32: Final = struct.Struct("<i")
I64: Final = struct.Struct("<q")
F32: Final = struct.Struct("<f")
F64: Final = struct.Struct("<d")
#: A Java UUID on the wire: most significant long, then least significant long,
#: each little-endian (``BinaryWriterExImpl.doWriteUuid``).
UUID_STRUCT: Final = struct.Struct("<qq")

_U64_MASK = (1 << 64) - 1


def uuid_from_java(msb: int, lsb: int) -> _uuid.UUID:
    """Build a UUID from Java's ``getMostSignificantBits``/``getLeastSignificantBits``."""
    return _uuid.UUID(int=((msb & _U64_MASK) << 64) | (lsb & _U64_MASK))


def uuid_to_java(value: _uuid.UUID) -> tuple[int, int]:
    """Split a UUID into Java's signed (most, least) significant longs."""
    n = value.int
    msb = n >> 64
    lsb = n & _U64_MASK
    if msb >= 1 << 63:
        msb -= 1 << 64
    if lsb >= 1 << 63:
        lsb -= 1 << 64
    return msb, lsb


class ByteReader:
    """A bounds-checked little-endian cursor over a ``memoryview``.

    ``pos`` is the absolute index of the next byte and ``end`` the exclusive end
    of the readable region.  ``what`` strings in errors name the thing being
    read so a failing frame can be diagnosed from the message alone.
    """

    __slots__ = ("buf", "pos", "end")

    def __init__(self, data: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None) -> None:
        buf = data if isinstance(data, memoryview) else memoryview(data)
        if buf.ndim != 1 or buf.itemsize != 1:
            buf = buf.cast("B")
        self.buf: memoryview = buf
        self.end: int = len(buf) if end is None else end
        if not 0 <= pos <= self.end <= len(buf):
            raise ProtocolError(f"invalid reader window [{pos}, {end}) over {len(buf)} bytes")
        self.pos: int = pos

    # ------------------------------------------------------------------ helpers
    @property
    def remaining(self) -> int:
        """Bytes left between the cursor and the end of the region."""
        return self.end - self.pos

    def need(self, size: int, what: str = "value") -> int:
        """Check that ``size`` bytes are available; return the current position."""
        pos = self.pos
        if size < 0 or pos + size > self.end:
            raise ProtocolError(
                f"truncated frame: {what} needs {size} bytes at offset {pos}, only {self.end - pos} left"
            )
        return pos

    def skip(self, size: int, what: str = "bytes") -> None:
        """Advance the cursor by ``size`` bytes."""
        self.pos = self.need(size, what) + size

    def at_end(self) -> bool:
        """True when every byte of the region has been consumed."""
        return self.pos >= self.end

    def expect_end(self, what: str = "message") -> None:
        """Raise if unread bytes remain (a decoder and the server disagree on layout)."""
        if self.pos != self.end:
            raise ProtocolError(f"{what}: {self.end - self.pos} unexpected trailing bytes at offset {self.pos}")

    # ---------------------------------------------------------------- primitives
    def u8(self, what: str = "byte") -> int:
        pos = self.need(1, what)
        self.pos = pos + 1
        return self.buf[pos]

    def i8(self, what: str = "byte") -> int:
        pos = self.need(1, what)
        self.pos = pos + 1
        b = self.buf[pos]
        return b - 256 if b > 127 else b

    def bool(self, what: str = "bool") -> bool:
        pos = self.need(1, what)
        self.pos = pos + 1
        return self.buf[pos] != 0

    def i16(self, what: str = "short") -> int:
        pos = self.need(2, what)
        self.pos = pos + 2
        return I16.unpack_from(self.buf, pos)[0]

    def u16(self, what: str = "char") -> int:
        pos = self.need(2, what)
        self.pos = pos + 2
        return U16.unpack_from(self.buf, pos)[0]

    def i32(self, what: str = "int") -> int:
        pos = self.need(4, what)
        self.pos = pos + 4
        return I32.unpack_from(self.buf, pos)[0]

    def i64(self, what: str = "long") -> int:
        pos = self.need(8, what)
        self.pos = pos + 8
        return I64.unpack_from(self.buf, pos)[0]

    def f32(self, what: str = "float") -> float:
        pos = self.need(4, what)
        self.pos = pos + 4
        return F32.unpack_from(self.buf, pos)[0]

    def f64(self, what: str = "double") -> float:
        pos = self.need(8, what)
        self.pos = pos + 8
        return F64.unpack_from(self.buf, pos)[0]

    def raw_uuid(self, what: str = "uuid") -> _uuid.UUID:
        """A UUID written as two raw longs (no type code)."""
        pos = self.need(16, what)
        self.pos = pos + 16
        msb, lsb = UUID_STRUCT.unpack_from(self.buf, pos)
        return uuid_from_java(msb, lsb)

    def view(self, size: int, what: str = "bytes") -> memoryview:
        """A zero-copy slice of ``size`` bytes."""
        pos = self.need(size, what)
        self.pos = pos + size
        return self.buf[pos : pos + size]

    def take(self, size: int, what: str = "bytes") -> bytes:
        """A copy of the next ``size`` bytes."""
        return bytes(self.view(size, what))

    def length(self, what: str = "length", elem_size: int = 1) -> int:
        """Read an int count of elements of at least ``elem_size`` bytes each.

        Rejects negative counts and counts that cannot fit in what is left of the
        region, so a hostile "2 GiB" length never causes an allocation.
        """
        n = self.i32(what)
        if n < 0 or n * elem_size > self.end - self.pos:
            raise ProtocolError(f"invalid {what} {n} at offset {self.pos - 4}: only {self.end - self.pos} bytes left")
        return n

    # ---------------------------------------------------- typed nullable values
    def typed_string(self, what: str = "string") -> str | None:
        """A nullable string written with its type code (``BinaryWriterExImpl.writeString``)."""
        code = self.u8(what)
        if code == 101:
            return None
        if code != 9:
            raise ProtocolError(f"{what}: expected string (type 9) or null (101), got type code {code}")
        n = self.length(f"{what} length")
        return str(self.view(n, what), "utf-8", "replace")

    def typed_byte_array(self, what: str = "byte array") -> bytes | None:
        """A nullable ``byte[]`` written with its type code (12)."""
        code = self.u8(what)
        if code == 101:
            return None
        if code != 12:
            raise ProtocolError(f"{what}: expected byte[] (type 12) or null (101), got type code {code}")
        n = self.length(f"{what} length")
        return self.take(n, what)

    def typed_uuid(self, what: str = "uuid") -> _uuid.UUID | None:
        """A nullable UUID written with its type code (10)."""
        code = self.u8(what)
        if code == 101:
            return None
        if code != 10:
            raise ProtocolError(f"{what}: expected UUID (type 10) or null (101), got type code {code}")
        return self.raw_uuid(what)


class ByteWriter:
    """An append-only little-endian writer over a ``bytearray``."""

    __slots__ = ("buf",)

    def __init__(self, initial: bytes | bytearray = b"") -> None:
        self.buf = bytearray(initial)

    def __len__(self) -> int:
        return len(self.buf)

    def getvalue(self) -> bytes:
        """The bytes written so far (a copy)."""
        return bytes(self.buf)

    # ---------------------------------------------------------------- primitives
    def u8(self, value: int) -> None:
        self.buf.append(value & 0xFF)

    def i8(self, value: int) -> None:
        if not -128 <= value <= 127:
            raise OverflowError(f"byte value {value} out of range")
        self.buf.append(value & 0xFF)

    def bool(self, value: bool) -> None:
        self.buf.append(1 if value else 0)

    def i16(self, value: int) -> None:
        self.buf += I16.pack(value)

    def u16(self, value: int) -> None:
        self.buf += U16.pack(value)

    def i32(self, value: int) -> None:
        self.buf += I32.pack(value)

    def i64(self, value: int) -> None:
        self.buf += I64.pack(value)

    def f32(self, value: float) -> None:
        self.buf += F32.pack(value)

    def f64(self, value: float) -> None:
        self.buf += F64.pack(value)

    def raw(self, data: bytes | bytearray | memoryview) -> None:
        self.buf += data

    def raw_uuid(self, value: _uuid.UUID) -> None:
        self.buf += UUID_STRUCT.pack(*uuid_to_java(value))

    # ------------------------------------------------------------- reservations
    def reserve_i32(self) -> int:
        """Reserve 4 bytes for an int patched later; returns its position."""
        pos = len(self.buf)
        self.buf += b"\x00\x00\x00\x00"
        return pos

    def patch_i32(self, pos: int, value: int) -> None:
        I32.pack_into(self.buf, pos, value)

    def patch_i16(self, pos: int, value: int) -> None:
        I16.pack_into(self.buf, pos, value)

    # ---------------------------------------------------- typed nullable values
    def typed_string(self, value: str | None) -> None:
        """Write a nullable string with its type code (9, or 101 for ``None``)."""
        if value is None:
            self.buf.append(101)
            return
        data = value.encode("utf-8", "surrogatepass")
        self.buf.append(9)
        self.buf += I32.pack(len(data))
        self.buf += data

    def typed_byte_array(self, value: bytes | bytearray | memoryview | None) -> None:
        """Write a nullable ``byte[]`` with its type code (12, or 101)."""
        if value is None:
            self.buf.append(101)
            return
        self.buf.append(12)
        self.buf += I32.pack(len(value))
        self.buf += value

    def typed_uuid(self, value: _uuid.UUID | None) -> None:
        """Write a nullable UUID with its type code (10, or 101)."""
        if value is None:
            self.buf.append(101)
            return
        self.buf.append(10)
        self.raw_uuid(value)
