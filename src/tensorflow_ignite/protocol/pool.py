"""Reusable memory for received frames and decoded arrays.

Receiving a page and decoding it each fill memory; on the machines measured, a
fresh 4 KiB page costs a page fault, so copying into new memory ran at ~3.6 GB/s
against ~11 GB/s into memory already touched.  A :class:`BufferPool` keeps
buffers for reuse and hands one out again only when nothing refers to it.

That test is exact: a buffer is a ``bytearray``, and every ``memoryview`` of
it, slice of such a view, and NumPy array over it (``np.frombuffer``, views of
that array, and TensorFlow tensors adopting that array's memory) keeps a
reference to the ``bytearray``.  So a pooled buffer whose reference count is
back to the pool's own is free, and reusing it cannot change data anybody can
still see.
"""

from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np

__all__ = ["BufferPool", "ALIGNMENT", "aligned_empty"]

#: Alignment of decoded array columns.  TensorFlow adopts a NumPy array's memory
#: without copying when it is aligned to 64 bytes (``from_generator``, and
#: ``rebatch`` then slices it), and copies it otherwise; large NumPy allocations
#: are only 16-byte aligned.
ALIGNMENT = 64

#: References to a free buffer while :meth:`BufferPool.take` looks at it: the
#: pool's list, the loop variable and ``sys.getrefcount``'s argument.
_FREE_REFS = 3


class BufferPool:
    """Buffers kept for reuse, up to ``limit`` bytes in all; thread-safe.

    Buffers smaller than ``min_size`` are not worth pooling (the allocator
    reuses small blocks by itself) and are never kept.
    """

    __slots__ = ("_buffers", "_bytes", "_lock", "limit", "min_size")

    def __init__(self, limit: int, min_size: int = 256 << 10) -> None:
        self._buffers: list[bytearray] = []
        self._bytes = 0
        self._lock = threading.Lock()
        self.limit = limit
        self.min_size = min_size

    @property
    def nbytes(self) -> int:
        """Bytes held by the pool (free or in use)."""
        return self._bytes

    def take(self, size: int) -> bytearray | None:
        """The smallest free pooled buffer of at least ``size`` bytes, or None."""
        with self._lock:
            best: bytearray | None = None
            for buf in self._buffers:
                if len(buf) >= size and sys.getrefcount(buf) <= _FREE_REFS:
                    if best is None or len(buf) < len(best):
                        best = buf
            return best

    def offer(self, buf: bytearray) -> None:
        """Keep ``buf`` for reuse if it is large enough and the pool has room."""
        if len(buf) < self.min_size:
            return
        with self._lock:
            if self._bytes + len(buf) <= self.limit:
                self._buffers.append(buf)
                self._bytes += len(buf)

    def get(self, size: int) -> bytearray:
        """A buffer of at least ``size`` bytes: a free pooled one, else a new one (offered to the pool)."""
        buf = self.take(size)
        if buf is None:
            buf = bytearray(size)
            self.offer(buf)
        return buf

    def clear(self) -> None:
        """Forget every buffer (those still in use stay valid for their users)."""
        with self._lock:
            self._buffers = []
            self._bytes = 0


def aligned_empty(shape: tuple[int, ...], dtype: Any, pool: BufferPool | None = None) -> np.ndarray:
    """An uninitialized C-contiguous array starting on an ``ALIGNMENT``-byte boundary.

    With a ``pool`` the memory comes from a reused buffer when one is free.
    """
    dt = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dt.itemsize
    if pool is not None and nbytes >= pool.min_size:
        raw = np.frombuffer(pool.get(nbytes + ALIGNMENT), dtype=np.uint8)
    else:
        raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    start = -raw.ctypes.data % ALIGNMENT
    return raw[start : start + nbytes].view(dt).reshape(shape)
