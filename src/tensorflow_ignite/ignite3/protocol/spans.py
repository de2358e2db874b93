"""``ByteSpans``: a column of byte strings kept as spans of the buffer they arrived in.

A page's STRING and BYTE_ARRAY values are spans of its frame.  Making a Python
``bytes`` object of each (as an object array holds them) copies every value
once more before TensorFlow copies it into its own string tensor; for values of
a megabyte that copy and its page faults were ~40 % of a bulk read.  A
``ByteSpans`` column is the frame plus two offset arrays, and the native source
op (:mod:`tensorflow_ignite.native.data_source`, which takes any object with a
``spans()`` method as a string leaf) copies each value straight from the frame
into the tensor.  Everything else that needs the values as objects calls
:meth:`ByteSpans.objects`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["ByteSpans", "as_objects"]


class ByteSpans:
    """Byte strings ``buffers[owner[i]][starts[i]:ends[i]]``, one per row (NULL or empty: an empty span).

    Behaves as a 1-D column for what a dataset does with one: ``len``, slicing,
    selection by a boolean mask or an index array (the spans move, the buffers
    are shared), :meth:`join` of two columns (their buffers listed together:
    no value is copied), and :meth:`objects` (an object array of ``bytes``).
    The buffers are never written: the spans stay valid as long as the column
    lives.
    """

    __slots__ = ("buffers", "owner", "starts", "ends")

    def __init__(self, buffer: Any, starts: np.ndarray, ends: np.ndarray) -> None:
        view = memoryview(buffer)
        if view.ndim != 1 or view.itemsize != 1 or not view.c_contiguous:
            view = view.cast("B")
        starts = np.ascontiguousarray(starts, np.int64)
        ends = np.ascontiguousarray(ends, np.int64)
        if starts.shape != ends.shape or starts.ndim != 1:
            raise ValueError(f"ByteSpans: starts {starts.shape} and ends {ends.shape} must be 1-D and alike")
        if len(starts) and (int(starts.min()) < 0 or int(ends.max()) > len(view) or bool(np.any(ends < starts))):
            raise ValueError(f"ByteSpans: a span reaches outside the {len(view)}-byte buffer")
        self.buffers: tuple[memoryview, ...] = (view,)
        self.owner = np.zeros(len(starts), np.int64)
        self.starts = starts
        self.ends = ends

    @classmethod
    def _of(
        cls, buffers: tuple[memoryview, ...], owner: np.ndarray, starts: np.ndarray, ends: np.ndarray
    ) -> "ByteSpans":
        """A column of spans already checked (a selection or join of checked columns)."""
        out = cls.__new__(cls)
        out.buffers, out.owner, out.starts, out.ends = buffers, owner, starts, ends
        return out

    @property
    def shape(self) -> tuple[int]:
        return (len(self.starts),)

    @property
    def nbytes(self) -> int:
        """The bytes of the values (not of the buffers they are spans of)."""
        return int((self.ends - self.starts).sum())

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, (int, np.integer)):
            return bytes(self.buffers[int(self.owner[index])][int(self.starts[index]) : int(self.ends[index])])
        return ByteSpans._of(self.buffers, self.owner[index], self.starts[index], self.ends[index])

    def __repr__(self) -> str:
        return f"ByteSpans({len(self)} values, {self.nbytes} bytes in {len(self.buffers)} buffers)"

    def spans(self) -> tuple[tuple[memoryview, ...], np.ndarray, np.ndarray, np.ndarray]:
        """``(buffers, owner, starts, ends)``: what the native source op copies the values from."""
        return self.buffers, self.owner, self.starts, self.ends

    def objects(self) -> np.ndarray:
        """The values as an object array of ``bytes`` (a copy of each)."""
        out = np.empty(len(self), object)
        bufs = self.buffers
        out[:] = [bytes(bufs[o][s:e]) for o, s, e in zip(self.owner.tolist(), self.starts.tolist(), self.ends.tolist())]
        return out

    def join(self, other: "ByteSpans") -> "ByteSpans":
        """This column's values followed by ``other``'s (no value copied: the buffers of both are kept)."""
        return ByteSpans._of(
            self.buffers + other.buffers,
            np.concatenate((self.owner, other.owner + len(self.buffers))),
            np.concatenate((self.starts, other.starts)),
            np.concatenate((self.ends, other.ends)),
        )


def as_objects(value: Any) -> Any:
    """``value.objects()`` for a :class:`ByteSpans` column, ``value`` itself otherwise."""
    return value.objects() if isinstance(value, ByteSpans) else value
