"""Row layouts: pages whose rows all repeat one layout decode by strides (or compiled), not per value.

A :class:`Layout` is made from one row traced by the page decoder
(``decode.py``): where each wanted leaf value sits and which bytes every other
row must repeat.  A page of ``n`` rows of the layout's length that repeats
those bytes decodes into its columns with one strided read per leaf
(:meth:`Layout.gather`), or in one pass without the GIL by the compiled
decoder (:meth:`Layout.gather_compiled`, see :mod:`.compiled`).  Layouts are
kept per (plan, row length) for the next page of the same shape.

:func:`take` -- the values at byte positions of a page, through one strided
view when the positions are evenly spaced -- is the gather every column path
of the page decoder uses.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tensorflow_ignite.protocol.codes import TypeCode
from tensorflow_ignite.protocol.columns.compiled import CompiledLayoutDecoder
from tensorflow_ignite.protocol.columns.plan import FieldPlan, FieldTypeError, PagePlan, type_label
from tensorflow_ignite.protocol.pool import BufferPool, aligned_empty
from tensorflow_ignite.protocol.types import ARRAY_DTYPES, COLUMN_DTYPES, FIXED_WIRE

_NULL = int(TypeCode.NULL)
_OBJ = int(TypeCode.OBJ)
_UUID = int(TypeCode.UUID)

#: Total encoded size (type code included) of values whose size is fixed.
VALUE_SIZE = {code: 1 + size for code, (size, _) in FIXED_WIRE.items()}
VALUE_SIZE[_NULL] = 1

#: The int64 nanoseconds of a timestamp column as (epoch ms, sub-ms nanos): 1677-09-21 .. 2262-04-11.
_NS_MIN = divmod(-(2**63), 1_000_000)
_NS_MAX = divmod(2**63 - 1, 1_000_000)


def ns_out_of_range(ms: np.ndarray, sub_ms: np.ndarray | int = 0) -> np.ndarray:
    """Where ``ms * 1e6 + sub_ms`` (``sub_ms`` in [0, 1e6)) does not fit an int64: raise, never wrap."""
    return (
        (ms < _NS_MIN[0])
        | (ms > _NS_MAX[0])
        | ((ms == _NS_MIN[0]) & (sub_ms < _NS_MIN[1]))
        | ((ms == _NS_MAX[0]) & (sub_ms > _NS_MAX[1]))
    )


def timestamp_range_error(path: str, row: int, ms: int, code: int) -> FieldTypeError:
    import datetime as _dt

    try:
        when = (_dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=ms)).isoformat(timespec="milliseconds")
    except OverflowError:
        when = f"{ms} ms after the epoch"
    return FieldTypeError(
        path,
        row,
        f"{type_label(code)} {when}, outside the int64 nanoseconds of a timestamp tensor (1677-09-21..2262-04-11)",
        type_label(TypeCode.TIMESTAMP),
    )


def step_of(idx: np.ndarray) -> int | None:
    """The stride of ``idx`` if its positions are evenly spaced and increasing, else None."""
    n = len(idx)
    if n < 2:
        return 1 if n else None
    first = int(idx[0])
    step = int(idx[1]) - first
    if step <= 0 or int(idx[-1]) - first != step * (n - 1):
        return None
    if n > 2 and not bool(np.all(idx[2:] - idx[1:-1] == step)):
        return None
    return step


_UNKNOWN = -1


def take(page: np.ndarray, idx: np.ndarray, dtype: Any, step: int | None = _UNKNOWN) -> np.ndarray:
    """The ``dtype`` values at byte positions ``idx`` of ``page`` (a new array).

    The caller has bounds-checked ``idx``.  Evenly spaced positions -- every
    row of a page that repeats one layout -- are read through one strided
    (possibly unaligned) view; others by fancy indexing.  ``step`` is
    ``step_of(idx)`` when the caller already knows it.
    """
    dt = np.dtype(dtype)
    if step == _UNKNOWN:
        step = step_of(idx)
    if step is not None:
        return np.ndarray((len(idx),), dt, buffer=page, offset=int(idx[0]), strides=(step,)).copy()
    if dt.itemsize == 1:
        return page[idx].view(dt)
    return page[idx[:, None] + np.arange(dt.itemsize, dtype=np.int64)].view(dt).reshape(len(idx))


def _leaf_uniform(plan: FieldPlan) -> bool:
    """True if ``plan`` wants only values of a fixed encoded size (see :class:`Layout`)."""
    if plan.type_code == _OBJ:
        return all(_leaf_uniform(f) for f in plan.fields)
    if plan.type_code in FIXED_WIRE:
        return plan.type_code != _UUID
    return plan.type_code in ARRAY_DTYPES and plan.fixed_length is not None and not plan.as_bytes


@functools.lru_cache(maxsize=64)
def plan_uniform(plan: PagePlan) -> bool:
    """True if every value ``plan`` wants has a fixed encoded size (pages of it may repeat one layout)."""
    return all(v is None or _leaf_uniform(v) for v in plan.values)


#: One traced leaf: (kind, path, plan, offset of the value bytes, type code); kind is ``"fixed"``,
#: ``"ts"`` (timestamp), ``"array"`` (fixed-length primitive array) or ``"hash"`` (an object's hash code).
Trace = tuple[str, str, FieldPlan, int, int]
#: A decoded leaf: (path, plan, values).
Leaf = tuple[str, FieldPlan, np.ndarray]


@dataclass
class Layout:
    """Where every wanted value sits in a row, for pages whose rows repeat one layout.

    Made by decoding one row with the general decoder while it records the
    byte offset of each leaf value and of each object's hash code.  A page
    uses the layout if all its rows have the layout's length and repeat row
    0's bytes everywhere except at those offsets (type codes, lengths, object
    headers, footers, unwanted fields...): then every row decodes exactly like
    row 0, and each column is one strided read of the page.  Layouts are kept
    per (plan, row length) and checked against every page.
    """

    row_len: int
    #: Offsets (within a row) that every row must repeat, and row 0's bytes there.
    fixed_idx: np.ndarray
    fixed_ref: np.ndarray
    #: The traced leaves (no hash codes) in decoding order.
    leaves: list[Trace]

    def matches(self, rows: np.ndarray) -> bool:
        return bool((rows[:, self.fixed_idx] == self.fixed_ref).all())

    @functools.cached_property
    def compiled_reason(self) -> str | None:
        """Why the compiled decoder cannot decode this layout (None: it can).

        It copies each leaf's bytes as they are (booleans as 0/1): a leaf whose
        column is not its wire bytes (timestamps, widened types) stays NumPy's.
        """
        if sys.byteorder != "little":
            return "this machine is big-endian"
        for kind, path, _, _, code in self.leaves:
            if kind == "ts":
                return f"field {path!r} is a timestamp (its column is computed, not copied)"
            if kind == "fixed" and code != TypeCode.BOOL:
                wire = np.dtype(FIXED_WIRE[code][1]).newbyteorder("<")
                if wire != np.dtype(COLUMN_DTYPES[code]).newbyteorder("<"):
                    return f"field {path!r} ({type_label(code)}) is widened from its wire type"
        return None

    @classmethod
    def from_trace(cls, row: memoryview, plan: PagePlan, trace: Sequence[Trace], starts: list[int]) -> Layout:
        """The layout of one row (``row`` is exactly one row) from its decode's ``trace``.

        ``starts``: where each of the row's values begins.
        """
        varying = np.zeros(len(row), dtype=bool)
        for kind, _, fplan, off, code in trace:
            if kind == "hash":
                size = 4
            elif kind == "array":
                assert fplan.fixed_length is not None
                size = fplan.fixed_length * ARRAY_DTYPES[code].itemsize
            else:
                size = FIXED_WIRE[code][0]
            varying[off : off + size] = True
        # Values the plan skips (e.g. keys of a value-only read) may differ per row too.
        for start, vplan in zip(starts, plan.values):
            code = row[start]
            if vplan is None and code in VALUE_SIZE:
                varying[start + 1 : start + VALUE_SIZE[code]] = True
        fixed_idx = np.flatnonzero(~varying)
        page = np.frombuffer(row, dtype=np.uint8)
        leaves = [t for t in trace if t[0] != "hash"]
        return cls(len(row), fixed_idx, page[fixed_idx].copy(), leaves)

    def gather(self, page: np.ndarray, n: int, pool: BufferPool | None = None) -> list[Leaf] | None:
        """The leaves of the ``n`` rows of ``page`` by strided reads; None if a row does not repeat the layout."""
        row_len = self.row_len
        if not self.matches(page.reshape(n, row_len)):
            return None
        out: list[Leaf] = []
        for kind, path, plan, off, code in self.leaves:
            values: np.ndarray
            if kind == "fixed":
                _, dt = FIXED_WIRE[code]
                vals = np.ndarray((n,), dt, buffer=page, offset=off, strides=(row_len,))
                values = vals != 0 if code == TypeCode.BOOL else vals.astype(COLUMN_DTYPES[code])
            elif kind == "ts":
                ms = np.ndarray((n,), "<i8", buffer=page, offset=off, strides=(row_len,))
                ns = np.ndarray((n,), "<i4", buffer=page, offset=off + 8, strides=(row_len,))
                far = np.flatnonzero(ns_out_of_range(ms, ns))
                if far.size:
                    raise timestamp_range_error(path, int(far[0]), int(ms[far[0]]), code)
                values = ms * 1_000_000 + ns.astype(np.int64)
            else:
                dtype = ARRAY_DTYPES[code]
                k = plan.fixed_length
                assert k is not None
                width = k * dtype.itemsize
                view = np.lib.stride_tricks.as_strided(
                    page[off:], shape=(n, width), strides=(row_len, 1), writeable=False
                )
                raw = aligned_empty((n, width), np.uint8, pool)
                np.copyto(raw, view)
                values = raw.view(dtype if dtype.kind != "b" else np.uint8).reshape(n, k)
                if dtype.kind == "b":
                    values = values != 0
            out.append((path, plan, values))
        return out

    def gather_compiled(
        self, region: memoryview, n: int, decoder: CompiledLayoutDecoder, pool: BufferPool | None = None
    ) -> list[Leaf] | None:
        """The same by the compiled decoder: it checks every row and gathers the leaves in one pass."""
        specs: list[tuple[int, int, int, Any]] = []
        out: list[Leaf] = []
        for kind, path, plan, off, code in self.leaves:
            if kind == "fixed":
                size, _ = FIXED_WIRE[code]
                values = np.empty(n, dtype=bool if code == TypeCode.BOOL else COLUMN_DTYPES[code])
                specs.append((off, size, 1 if code == TypeCode.BOOL else 0, values))
            else:
                dtype = ARRAY_DTYPES[code]
                assert plan.fixed_length is not None
                width = plan.fixed_length * dtype.itemsize
                raw = aligned_empty((n, width), np.uint8, pool)
                values = raw.view(np.bool_ if dtype.kind == "b" else dtype).reshape(n, plan.fixed_length)
                specs.append((off, width, 1 if dtype.kind == "b" else 0, raw))
            out.append((path, plan, values))
        if not decoder(region, n, self.row_len, self.fixed_idx, self.fixed_ref, specs):
            return None
        return out


#: Layouts by (plan, row length); bounded (cleared when full).
_LAYOUTS: dict[tuple[PagePlan, int], Layout] = {}
_MAX_LAYOUTS = 64


def kept_layout(plan: PagePlan, row_len: int) -> Layout | None:
    """The layout kept for pages of ``plan`` whose rows are ``row_len`` bytes, if any."""
    return _LAYOUTS.get((plan, row_len))


def keep_layout(plan: PagePlan, layout: Layout) -> None:
    """Keep ``layout`` for the next page of its plan and row length."""
    if len(_LAYOUTS) >= _MAX_LAYOUTS:
        _LAYOUTS.clear()
    _LAYOUTS[(plan, layout.row_len)] = layout


def cached_layouts() -> tuple[object, ...]:
    """The row layouts kept for the strided decode path (one per plan and row length), oldest first.

    For tests and diagnostics: a page whose rows repeat one layout is decoded
    by strides, and its layout is kept here for the next page of the same shape.
    """
    return tuple(_LAYOUTS.values())


def clear_layout_cache() -> None:
    """Forget the kept layouts (the next page of each shape builds its own again)."""
    _LAYOUTS.clear()
