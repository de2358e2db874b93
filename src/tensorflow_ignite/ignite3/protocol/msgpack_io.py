"""MsgPack bodies of Ignite 3 messages: a typed reader over one frame and a writer.

The MsgPack codec itself is the ``msgpack`` package (the ``ignite3`` extra); this
module adds what Ignite's ``ClientMessagePacker``/``ClientMessageUnpacker`` add
on top of MsgPack: UUIDs as extension type 3 (two little-endian longs, most
significant first), values read one after the other with their types checked,
and a page of rows (``count`` then ``count`` binary values) read in one call,
as spans of the frame (:class:`RowPage`) rather than copies.

The reader feeds ``msgpack`` the frame a slice at a time, as values are read:
a frame of many megabytes of rows is not copied into the unpacker to read the
few values around the rows.

Every failure to read -- a frame cut short, a length claiming more bytes than
the frame holds, a value of the wrong type -- is a
:class:`~tensorflow_ignite.errors.ProtocolError`; the reader never allocates
more than the frame's size.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Iterator, Sequence
from typing import Any, overload

import numpy as np

from ...errors import ProtocolError

try:
    import msgpack
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "tensorflow_ignite.ignite3 needs the `msgpack` package for Apache Ignite 3's client protocol: "
        "pip install 'tensorflow-ignite[ignite3]'"
    ) from exc

__all__ = ["UUID_EXT", "Reader", "RowPage", "Writer", "pack_uuid"]

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


#: Bytes of the frame handed to the unpacker at a time (more when one value needs more).
_FEED = 1 << 16


class RowPage(Sequence[bytes]):
    """A page of rows: spans of one buffer (the frame they arrived in), not a copy of each.

    ``data`` is the buffer, ``starts[i]`` and ``lengths[i]`` the bytes of row ``i``.
    Indexing gives a row as ``bytes`` (a copy); the page decoder
    (:func:`~.columns.decode_page`) reads the spans in place.
    """

    __slots__ = ("data", "starts", "lengths")

    def __init__(self, data: bytes | bytearray | memoryview, starts: np.ndarray, lengths: np.ndarray) -> None:
        self.data = memoryview(data)
        self.starts = starts
        self.lengths = lengths

    @classmethod
    def of(cls, rows: Sequence[bytes]) -> "RowPage":
        """The page of ``rows`` (joined into one buffer; a ``RowPage`` is returned as it is)."""
        if isinstance(rows, RowPage):
            return rows
        lengths = np.fromiter(map(len, rows), np.int64, len(rows))
        starts = np.zeros(len(rows), np.int64)
        if len(rows) > 1:
            np.cumsum(lengths[:-1], out=starts[1:])
        return cls(b"".join(rows), starts, lengths)

    def __len__(self) -> int:
        return len(self.starts)

    @overload
    def __getitem__(self, i: int) -> bytes: ...
    @overload
    def __getitem__(self, i: slice) -> list[bytes]: ...

    def __getitem__(self, i: int | slice) -> bytes | list[bytes]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        s = int(self.starts[i])
        return bytes(self.data[s : s + int(self.lengths[i])])

    def __iter__(self) -> Iterator[bytes]:
        data = self.data
        for s, n in zip(self.starts.tolist(), self.lengths.tolist()):
            yield bytes(data[s : s + n])

    @property
    def nbytes(self) -> int:
        """The bytes of all rows."""
        return int(self.lengths.sum())

    def __repr__(self) -> str:
        return f"RowPage({len(self)} rows, {self.nbytes} bytes)"


def _unpacker(size: int) -> msgpack.Unpacker:
    # No length may claim more than the frame holds (the buffer limit bounds every
    # str/bin/array/map length msgpack accepts).
    return msgpack.Unpacker(None, raw=False, strict_map_key=False, ext_hook=_ext_hook, max_buffer_size=max(size, 1024))


class Reader:
    """Values of one message body, read in order; ``what`` names the message in errors."""

    def __init__(self, data: bytes | bytearray | memoryview, what: str = "message") -> None:
        view = memoryview(data)
        self._data = view if view.format == "B" and view.ndim == 1 else view.cast("B")
        self._what = what
        self._restart(0)

    def _restart(self, offset: int) -> None:
        """A fresh unpacker that reads the body from ``offset`` on."""
        self._base = offset  # offset in data of the current unpacker's first byte
        self._fed = offset  # data[:_fed] has been handed to it
        self._u = _unpacker(len(self._data) - offset)
        self._feed()

    def _feed(self) -> bool:
        """Hand the unpacker the next slice of the body; False when all of it was handed over."""
        n = len(self._data)
        if self._fed >= n:
            return False
        # Doubling what is handed over keeps a value of many slices linear to read.
        end = min(n, self._fed + max(_FEED, self._fed - self._base))
        self._u.feed(self._data[self._fed : end])
        self._fed = end
        return True

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
            while True:
                try:
                    return self._u.unpack()
                except msgpack.OutOfData:
                    # The unpacker keeps a partly read value and goes on with the next slice.
                    if not self._feed():
                        raise
        except msgpack.OutOfData:
            raise ProtocolError(f"{self._what}: the body ends before its values do ({len(self._data)} bytes)") from None
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

    def count(self, answer: str, items: str) -> int:
        """The next integer as a count of values that follow, each at least one byte: a
        ``ProtocolError`` ("``answer``: N ``items``") when negative or beyond the body."""
        count = self.int()
        if count < 0 or count > self.remaining:
            raise ProtocolError(f"{answer}: {count} {items}")
        return count

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
                while True:
                    try:
                        self._u.skip()
                        break
                    except msgpack.OutOfData:
                        if not self._feed():
                            raise
            except msgpack.OutOfData:
                raise ProtocolError(f"{self._what}: the body ends before its values do") from None
            except (ValueError, msgpack.FormatError, msgpack.StackError) as e:
                raise ProtocolError(f"{self._what}: not valid MsgPack at byte {self.position}: {e}") from None

    def binaries(self, count: int) -> RowPage:
        """The next ``count`` values, each binary (a page of rows), as spans of the body.

        The rows follow one another with no array header.  Only their MsgPack
        headers are read here (bin 8/16/32: a tag and a 1-, 2- or 4-byte
        big-endian length); the rows stay where they arrived.  Reading then
        goes on after them.
        """
        data = self._data
        end = len(data)
        pos = self.position
        if count < 0 or 2 * count > end - pos:  # a row takes at least its 2-byte header
            raise ProtocolError(f"{self._what}: {count} rows claimed, {end - pos} bytes left")
        starts: list[int] = []
        lengths: list[int] = []
        for i in range(count):
            if pos >= end:
                raise ProtocolError(f"{self._what}: the body ends after {i} of {count} rows")
            tag = data[pos]
            if tag == 0xC4 and pos + 2 <= end:
                n, pos = data[pos + 1], pos + 2
            elif tag == 0xC5 and pos + 3 <= end:
                n, pos = (data[pos + 1] << 8) | data[pos + 2], pos + 3
            elif tag == 0xC6 and pos + 5 <= end:
                n, pos = int.from_bytes(data[pos + 1 : pos + 5], "big"), pos + 5
            elif tag in (0xC4, 0xC5, 0xC6):
                raise ProtocolError(f"{self._what}: the body ends inside row {i}'s header")
            else:
                raise ProtocolError(f"{self._what}: row {i} is not a binary value (MsgPack tag 0x{tag:02x})")
            starts.append(pos)
            lengths.append(n)
            pos += n
        if pos > end:
            raise ProtocolError(f"{self._what}: the last of {count} rows ends {pos - end} bytes after the body")
        self._restart(pos)
        return RowPage(data, np.asarray(starts, np.int64), np.asarray(lengths, np.int64))


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
