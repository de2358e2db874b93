"""MsgPack bodies of Ignite 3 messages: a typed reader over one frame and a writer.

The MsgPack codec itself is the ``msgpack`` package (the ``ignite3`` extra); this
module adds what Ignite's ``ClientMessagePacker``/``ClientMessageUnpacker`` add
on top of MsgPack: UUIDs as extension type 3 (two little-endian longs, most
significant first), values read one after the other with their types checked,
and a page of rows (``count`` then ``count`` binary values) read in one call.

Every failure to read -- a frame cut short, a length claiming more bytes than
the frame holds, a value of the wrong type -- is a
:class:`~tensorflow_ignite.errors.ProtocolError`; the reader never allocates
more than the frame's size.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from ...errors import ProtocolError

try:
    import msgpack
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "tensorflow_ignite.ignite3 needs the `msgpack` package for Apache Ignite 3's client protocol: "
        "pip install 'tensorflow-ignite[ignite3]'"
    ) from exc

__all__ = ["UUID_EXT", "Reader", "Writer", "pack_uuid"]

#: ``ClientMsgPackType.UUID``: the MsgPack extension type of a UUID.
UUID_EXT = 3


def pack_uuid(value: uuid.UUID) -> msgpack.ExtType:
    """A UUID as Ignite's MsgPack extension (most significant long first, each little-endian)."""
    msb, lsb = value.int >> 64, value.int & ((1 << 64) - 1)
    return msgpack.ExtType(UUID_EXT, struct.pack("<QQ", msb, lsb))


def _ext_hook(code: int, data: bytes) -> Any:
    if code == UUID_EXT:
        if len(data) != 16:
            raise ProtocolError(f"UUID extension of {len(data)} bytes (16 expected)")
        msb, lsb = struct.unpack("<QQ", data)
        return uuid.UUID(int=(msb << 64) | lsb)
    return msgpack.ExtType(code, data)


def _unpacker(size: int) -> msgpack.Unpacker:
    # No length may claim more than the frame holds (the buffer limit bounds every
    # str/bin/array/map length msgpack accepts).
    return msgpack.Unpacker(None, raw=False, strict_map_key=False, ext_hook=_ext_hook,
                            max_buffer_size=max(size, 1024))


class Reader:
    """Values of one message body, read in order; ``what`` names the message in errors."""

    def __init__(self, data: bytes | bytearray | memoryview, what: str = "message") -> None:
        self._data = memoryview(data)
        self._what = what
        self._base = 0  # offset in data of what the current unpacker was fed
        self._u = _unpacker(len(self._data))
        self._u.feed(self._data)

    @property
    def position(self) -> int:
        """Bytes of the body consumed so far."""
        return self._base + self._u.tell()

    @property
    def remaining(self) -> int:
        """Bytes of the body not read yet."""
        return len(self._data) - self.position

    def at_end(self) -> bool:
        """True when every byte of the body has been read."""
        return self.position >= len(self._data)

    def value(self) -> Any:
        """The next value, whatever its type."""
        try:
            return self._u.unpack()
        except msgpack.OutOfData:
            raise ProtocolError(f"{self._what}: the body ends before its values do "
                                f"({len(self._data)} bytes)") from None
        except ProtocolError:
            raise
        except (ValueError, TypeError, msgpack.ExtraData, msgpack.FormatError, msgpack.StackError) as e:
            raise ProtocolError(f"{self._what}: not valid MsgPack at byte {self.position}: {e}") from None

    def _typed(self, types: type | tuple[type, ...], name: str, nullable: bool = False) -> Any:
        v = self.value()
        if v is None and nullable:
            return None
        if not isinstance(v, types) or (types is int and isinstance(v, bool)):
            raise ProtocolError(f"{self._what}: expected {name}, found {type(v).__name__} ({v!r:.40})")
        return v

    def int(self) -> int:
        return self._typed(int, "an integer")

    def int_or_none(self) -> int | None:
        return self._typed(int, "an integer or nil", nullable=True)

    def bool(self) -> bool:
        return self._typed(bool, "a boolean")

    def str(self) -> str:
        return self._typed(str, "a string")

    def str_or_none(self) -> str | None:
        return self._typed(str, "a string or nil", nullable=True)

    def bin(self) -> bytes:
        return self._typed(bytes, "binary")

    def uuid(self) -> uuid.UUID:
        return self._typed(uuid.UUID, "a UUID")

    def is_nil(self) -> bool:
        """Reads the next value if it is nil (True); leaves it unread otherwise (False)."""
        if self.position < len(self._data) and self._data[self.position] == 0xC0:
            self.value()
            return True
        return False

    def skip(self, count: int = 1) -> None:
        """Skip ``count`` values (of any type)."""
        for _ in range(count):
            try:
                self._u.skip()
            except msgpack.OutOfData:
                raise ProtocolError(f"{self._what}: the body ends before its values do") from None
            except (ValueError, msgpack.FormatError, msgpack.StackError) as e:
                raise ProtocolError(f"{self._what}: not valid MsgPack at byte {self.position}: {e}") from None

    def binaries(self, count: int) -> list[bytes]:
        """The next ``count`` values, each binary (a page of rows), read in one call.

        The rows follow one another with no array header; prefixing one lets
        ``msgpack`` read them all in C.  Reading then goes on after them.
        """
        if count < 0 or count > len(self._data) - self.position:
            raise ProtocolError(f"{self._what}: {count} rows claimed, {len(self._data) - self.position} "
                                "bytes left")
        if count == 0:
            return []
        start = self.position
        u = _unpacker(len(self._data) - start + 5)
        u.feed(b"\xdd" + count.to_bytes(4, "big"))
        u.feed(self._data[start:])
        self._u, self._base = u, start - 5
        rows = self.value()
        if not all(type(r) is bytes for r in rows):
            raise ProtocolError(f"{self._what}: a row that is not a binary value")
        return rows


class Writer:
    """A message body built value by value (``ClientMessagePacker``'s encodings)."""

    def __init__(self) -> None:
        self._packer = msgpack.Packer(use_bin_type=True, autoreset=False, datetime=False)

    def value(self, v: Any) -> "Writer":
        """Append ``v`` (None, bool, int, str, bytes, UUID)."""
        if isinstance(v, uuid.UUID):
            v = pack_uuid(v)
        self._packer.pack(v)
        return self

    def values(self, *vs: Any) -> "Writer":
        """Append each of ``vs`` in order (not as an array)."""
        for v in vs:
            self.value(v)
        return self

    def bytes(self) -> bytes:
        """The body so far."""
        return self._packer.bytes()
