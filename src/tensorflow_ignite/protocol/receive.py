"""The receive side of a thin-client connection: one buffer, one frame splitter.

:class:`FrameReader` is the only code that turns a byte stream into frames.
``client.Connection`` runs it over its socket, and the fuzzers and unit tests
run the very same class over bytes in memory: it does no I/O of its own, it
calls the ``recv_into`` function it was given (which fills a buffer with at
least one byte, or raises).  Both Ignite generations use it: the length prefix
is a parameter -- :data:`LITTLE_ENDIAN_LENGTH` (Ignite 2's thin client, the
default) or :data:`BIG_ENDIAN_LENGTH` (Ignite 3's client protocol), a signed
4-byte integer either way -- and everything else is the same.

What it does, and why:

* Reads go through a receive buffer (1 MiB), so frames that arrive together
  (pipelined scan answers, small pages) cost one ``recv`` between them, not two
  each.
* Every frame length is checked before anything is allocated for it: a
  negative length or one above ``max_frame`` raises :class:`ProtocolError`
  at once (after ``on_corrupt``, which lets the connection close itself: the
  stream position is lost).
* Frames up to ``small_frame`` bytes are copied out of the receive buffer.
  Larger ones are received in place into a buffer of their own, taken from a
  :class:`~.pool.BufferPool` and reused once nothing refers to it any more
  (fresh memory costs a page fault per 4 KiB).  Frames above ``eager_frame``
  with no buffer to reuse grow only as their bytes arrive, so a header
  claiming a huge size costs nothing until the bytes are really there.
* :meth:`peek`, :meth:`start_frame`, :meth:`take` and :meth:`fill` let the
  connection receive a known answer's body straight into a caller's buffer
  (``Connection.expect_into``) with the same bookkeeping.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from ..errors import ProtocolError
from .pool import BufferPool

__all__ = ["FrameReader", "RecvInto", "DEFAULT_MAX_FRAME", "LITTLE_ENDIAN_LENGTH", "BIG_ENDIAN_LENGTH"]

#: Fills the given buffer with at least one byte and returns how many, or raises.
RecvInto = Callable[[memoryview], int]

#: Ignite 2's thin-client length prefix: a signed 4-byte little-endian integer.
LITTLE_ENDIAN_LENGTH = struct.Struct("<i")
#: Ignite 3's client-protocol length prefix: a signed 4-byte big-endian integer.
BIG_ENDIAN_LENGTH = struct.Struct(">i")

#: The largest frame accepted by default (a page of 1 GiB is already absurd).
DEFAULT_MAX_FRAME = 1 << 30
#: Size of the receive buffer; frames up to ``SMALL_FRAME`` are assembled in it.
RECV_BUFFER = 1 << 20
SMALL_FRAME = 256 << 10
#: Frames up to this size get one buffer allocated up front; larger ones grow.
EAGER_FRAME = 16 << 20
#: Most bytes of frame buffers kept for reuse.
FRAME_POOL_BYTES = 96 << 20


class FrameReader:
    """Splits the bytes ``recv_into`` delivers into length-prefixed frames.

    ``prefix`` is the frame length's encoding (a signed integer: Ignite 2's
    :data:`LITTLE_ENDIAN_LENGTH` by default, Ignite 3's :data:`BIG_ENDIAN_LENGTH`).
    ``peer`` names the other side in error messages.  Not thread-safe: the
    connection calls it with its receive lock held.
    """

    __slots__ = (
        "_recv_into",
        "_prefix",
        "max_frame",
        "peer",
        "_on_corrupt",
        "_small",
        "_eager",
        "_buf",
        "_view",
        "_pos",
        "_end",
        "_frames",
        "bytes_received",
    )

    def __init__(
        self,
        recv_into: RecvInto,
        *,
        max_frame: int = DEFAULT_MAX_FRAME,
        peer: str = "the peer",
        on_corrupt: Callable[[], None] | None = None,
        buffer_size: int = RECV_BUFFER,
        small_frame: int = SMALL_FRAME,
        eager_frame: int = EAGER_FRAME,
        pool_bytes: int = FRAME_POOL_BYTES,
        prefix: struct.Struct = LITTLE_ENDIAN_LENGTH,
    ) -> None:
        if not 16 <= small_frame <= buffer_size:
            raise ValueError("small_frame must be at least 16 and at most buffer_size")
        self._recv_into = recv_into
        self._prefix = prefix
        self.max_frame = max_frame
        self.peer = peer
        self._on_corrupt = on_corrupt
        self._small = small_frame
        self._eager = eager_frame
        self._buf = bytearray(buffer_size)
        self._view = memoryview(self._buf)
        self._pos = self._end = 0
        self._frames = BufferPool(pool_bytes, min_size=small_frame)
        #: Bytes of every frame started so far, length prefixes included.
        self.bytes_received = 0

    # ------------------------------------------------------------ buffering
    def buffered(self) -> int:
        """Bytes received but not yet consumed."""
        return self._end - self._pos

    def _ensure(self, want: int) -> None:
        """Receive until ``want`` (<= the buffer size) bytes are buffered, taking whatever else arrives."""
        if self._end - self._pos >= want:
            return
        if self._pos == self._end:
            self._pos = self._end = 0
        elif self._pos + want > len(self._buf):
            # Move the unread bytes (a partial frame) to the front to make room.
            n = self._end - self._pos
            self._buf[:n] = bytes(self._view[self._pos : self._end])
            self._pos, self._end = 0, n
        while self._end - self._pos < want:
            self._end += self._recv_into(self._view[self._end :])

    def peek(self, n: int) -> memoryview:
        """The next ``n`` bytes (at most the buffer size), received if needed but not consumed.

        Valid until the next call on this reader.
        """
        if n > len(self._buf):
            raise ValueError(f"cannot peek {n} bytes: the receive buffer holds {len(self._buf)}")
        self._ensure(n)
        return self._view[self._pos : self._pos + n]

    def peek_length(self) -> int:
        """The next frame's length prefix as sent, unchecked and not consumed."""
        self._ensure(self._prefix.size)
        return int(self._prefix.unpack_from(self._buf, self._pos)[0])

    # --------------------------------------------------------------- frames
    def start_frame(self) -> int:
        """Consume the next length prefix and return the frame's length (checked)."""
        length = self.peek_length()
        size = self._prefix.size
        if length < 0 or length > self.max_frame:
            head = bytes(self._view[self._pos : self._pos + size])
            if self._on_corrupt is not None:
                self._on_corrupt()
            raise ProtocolError(
                f"{self.peer} sent a frame header claiming {length} bytes (first bytes {head!r}; "
                f"limit {self.max_frame}): not an Ignite thin-client peer, or a corrupt stream. "
                "Check the host and port; raise ConnectionSettings.max_frame only for rows that large"
            )
        self._pos += size
        self.bytes_received += size + length
        return length

    def take(self, n: int) -> memoryview:
        """The next ``n`` bytes of the current frame, copied."""
        if n > len(self._buf):
            out = bytearray(n)
            self.fill(memoryview(out))
            return memoryview(out)
        self._ensure(n)
        out = bytes(self._view[self._pos : self._pos + n])
        self._pos += n
        return memoryview(out)

    def fill(self, view: memoryview) -> None:
        """Fill ``view`` with the next bytes of the stream: those buffered, then straight from the source."""
        got = min(len(view), self._end - self._pos)
        view[:got] = self._view[self._pos : self._pos + got]
        self._pos += got
        while got < len(view):
            got += self._recv_into(view[got:])

    def read_frame(self) -> memoryview:
        """The next frame's payload, without its length prefix.

        A small frame is a copy; a large one a view of a pooled buffer that is
        reused only after every view of it (slices, NumPy arrays, tensors) is gone.
        """
        length = self.start_frame()
        if length <= self._small:
            return self.take(length)
        buf = self._frames.take(length)
        if buf is None:
            if length > self._eager:
                return self._read_growing(length)
            buf = bytearray(length)
            self._frames.offer(buf)
        view = memoryview(buf)[:length]
        self.fill(view)
        return view

    def _read_growing(self, length: int) -> memoryview:
        """A frame above ``eager_frame`` with no buffer to reuse: believed only as far as bytes arrive."""
        parts = bytearray()
        while len(parts) < length:
            chunk = bytearray(min(length - len(parts), max(self._eager, len(parts))))
            self.fill(memoryview(chunk))
            parts += chunk
        self._frames.offer(parts)
        return memoryview(parts)

    def release(self) -> None:
        """Drop the pooled frame buffers (the connection is closing)."""
        self._frames.clear()
