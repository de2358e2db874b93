"""The page decoder: values gathered into NumPy columns, one column at a time.

Rows are located by :mod:`.rows`; pages whose rows repeat one layout go through :mod:`.layout` (strided reads,
or the compiled decoder of :mod:`.compiled`); all others are decoded here.
"""

from __future__ import annotations

import struct
import uuid as _uuid
from collections.abc import MutableMapping
from dataclasses import replace

import numpy as np

from tensorflow_ignite.errors import ArrayLengthError, ProtocolError, SchemaError
from tensorflow_ignite.protocol.binary import BinaryDecoder, MissingSchemaError, SchemaResolver
from tensorflow_ignite.protocol.buffer import I32
from tensorflow_ignite.protocol.codes import ObjectFlag, TypeCode
from tensorflow_ignite.protocol.columns import compiled
from tensorflow_ignite.protocol.columns.compiled import COMPILED, PYTHON
from tensorflow_ignite.protocol.columns.layout import (
    Layout,
    Trace,
    cached_layouts,
    clear_layout_cache,
    keep_layout,
    kept_layout,
    ns_out_of_range,
    plan_uniform,
    step_of,
    take,
    timestamp_range_error,
)
from tensorflow_ignite.protocol.columns.plan import (
    Column,
    FieldPlan,
    FieldTypeError,
    PagePlan,
    type_label,
    widen,
)
from tensorflow_ignite.protocol.columns.rows import locate_values, skip_value, value_end, value_offsets
from tensorflow_ignite.protocol.javatime import (
    KIND_DATE,
    KIND_TIME,
    KIND_TIMESTAMP,
    decode_java_time_columns,
    describe_java_object,
)
from tensorflow_ignite.protocol.pool import BufferPool, aligned_empty
from tensorflow_ignite.protocol.types import ARRAY_DTYPES, COLUMN_DTYPES, FIXED_WIRE, WIDENING

# Plain ints: enum member lookups cost a call each in the per-page paths.
_NULL = int(TypeCode.NULL)
_HANDLE = int(TypeCode.HANDLE)
_OBJ = int(TypeCode.OBJ)
_WRAPPED = int(TypeCode.BINARY_OBJ)
_STRING = int(TypeCode.STRING)
_TIMESTAMP = int(TypeCode.TIMESTAMP)
_UUID = int(TypeCode.UUID)

__all__ = [
    "COMPILED",
    "PYTHON",
    "decode_page",
    "value_offsets",
    "value_end",
    "take",
    "cached_layouts",
    "clear_layout_cache",
]

_OPT = int(TypeCode.OPTIMIZED)
_OPT_BYTE = _OPT & 0xFF  # as it appears in a page: optimized-marshaller bytes (int length + data)


class _PageDecoder:
    """State of one :func:`decode_page` call."""

    def __init__(
        self,
        region: memoryview,
        row_count: int,
        plan: PagePlan,
        schema_resolver: SchemaResolver | None,
        pool: BufferPool | None = None,
    ) -> None:
        self.pool = pool
        self.region = region
        self.n = row_count
        self.plan = plan
        self.page = np.frombuffer(region, dtype=np.uint8)
        self.size = len(region)
        self.resolver = schema_resolver
        self._bytes: bytes | None = None
        self.out: dict[str, Column] = {}
        #: Set by :meth:`_trace_layout`: record value offsets (decoding one row).
        self.trace: list[Trace] | None = None
        self.traceable = True
        #: Which decoder produced the columns (:data:`COMPILED` or :data:`PYTHON`).
        self.path = PYTHON

    @property
    def data(self) -> bytes:
        """The page as ``bytes`` (made once, for per-row slicing)."""
        if self._bytes is None:
            self._bytes = bytes(self.region)
        return self._bytes

    # ------------------------------------------------------------ gathering
    def check(self, idx: np.ndarray, size: int, what: str) -> None:
        if idx.size and (idx.min() < 0 or idx.max() + size > self.size):
            raise ProtocolError(f"page: {what} reaches outside the {self.size}-byte page")

    def gather(self, idx: np.ndarray, size: int, dtype: str, what: str) -> np.ndarray:
        """Values of ``size`` bytes at positions ``idx``, as ``dtype``."""
        self.check(idx, size, what)
        return take(self.page, idx, dtype)

    def i32(self, idx: np.ndarray, what: str) -> np.ndarray:
        return self.gather(idx, 4, "<i4", what).astype(np.int64)

    def skip(self, buf: memoryview, pos: int) -> int:
        """Offset just past the value at ``pos`` (bounds-checked)."""
        return skip_value(buf, pos, self.size)

    def locate(self) -> np.ndarray:
        """Start offset of every value: int64 array ``[rows, values per row]``."""
        return locate_values(self.region, self.page, self.n, len(self.plan.values))

    # ------------------------------------------------------------ decoding
    def run(self) -> dict[str, Column]:
        if self.n > 1 and self.trace is None:
            uniform = plan_uniform(self.plan)
            if uniform and self._run_uniform():
                return self.out
            reason = compiled.compiled_decoder_reason()
            if reason is not None:
                compiled.fallback(reason)
            elif uniform:
                compiled.fallback("the rows do not repeat one layout (nulls, or values of different lengths)")
            else:
                compiled.fallback("the read has fields of no fixed size (strings, ragged arrays, UUIDs, nested values)")
        starts = self.locate()
        valid = np.ones(self.n, dtype=bool)
        for j, plan in enumerate(self.plan.values):
            if plan is not None:
                self.slot(plan, starts[:, j].copy(), valid, plan.name)
        return self.out

    def _run_uniform(self) -> bool:
        """Decode through a :class:`~.layout.Layout` if every row repeats one; False if not."""
        buf = self.region
        pos = 0
        first = []
        for _ in self.plan.values:
            first.append(pos)
            pos = self.skip(buf, pos)
        row_len = pos
        if row_len * self.n != self.size:
            return False
        layout = kept_layout(self.plan, row_len)
        if layout is None or not self._apply(layout):
            layout = self._trace_layout(buf[:row_len], first)
            if layout is None or not self._apply(layout):
                return False
            keep_layout(self.plan, layout)
        return True

    def _trace_layout(self, row: memoryview, starts: list[int]) -> Layout | None:
        """The layout of one row (``row`` is exactly one row), or None if it has nulls."""
        dec = _PageDecoder(row, 1, self.plan, self.resolver)
        trace: list[Trace] = []
        dec.trace = trace
        dec.run()
        return Layout.from_trace(row, self.plan, trace, starts) if dec.traceable else None

    def _apply(self, layout: Layout) -> bool:
        """Decode the page through ``layout`` (compiled when it can); False if a row does not repeat it."""
        decoder = compiled.installed()
        reason = compiled.compiled_decoder_reason() if decoder is None else layout.compiled_reason
        if decoder is not None and reason is None:
            leaves = layout.gather_compiled(self.region, self.n, decoder, self.pool)
            path = COMPILED
        else:
            compiled.fallback(reason or "")
            leaves = layout.gather(self.page, self.n, self.pool)
            path = PYTHON
        if leaves is None:
            return False
        present = np.ones(self.n, dtype=bool)
        for leaf_path, plan, values in leaves:
            self.emit(leaf_path, plan, values, present)
        self.path = path
        return True

    def _trace_leaf(self, plan: FieldPlan, path: str, code: int, p: np.ndarray, sel: np.ndarray) -> None:
        """Record where the (one) row's leaf value sits (:meth:`_trace_layout`)."""
        assert self.trace is not None
        if sel.size != self.n:
            self.traceable = False  # a null: other rows may differ in length
        elif code == _TIMESTAMP:
            self.trace.append(("ts", path, plan, int(p[0]) + 1, code))
        elif code in FIXED_WIRE and code != _UUID:
            self.trace.append(("fixed", path, plan, int(p[0]) + 1, code))
        elif code in ARRAY_DTYPES and plan.fixed_length is not None and not plan.as_bytes:
            self.trace.append(("array", path, plan, int(p[0]) + 5, code))
        else:
            self.traceable = False

    def codes_at(self, pos: np.ndarray, valid: np.ndarray, path: str) -> tuple[np.ndarray, np.ndarray]:
        """Type codes at ``pos`` after following handles; returns (pos, codes) for valid rows."""
        if valid.all():
            sel = None
            self.check(pos, 1, f"{path}: type code")
            codes = take(self.page, pos, np.uint8)
            handles = np.flatnonzero(codes == _HANDLE)
        else:
            sel = np.flatnonzero(valid)
            self.check(pos[sel], 1, f"{path}: type code")
            codes = np.zeros(len(pos), dtype=np.uint8)
            codes[sel] = self.page[pos[sel]]
            handles = sel[codes[sel] == _HANDLE]
        if handles.size:
            back = self.i32(pos[handles] + 1, f"{path}: handle")
            target = pos[handles] - back
            if np.any((back <= 0) | (target < 0)):
                raise ProtocolError(f"{path}: handle does not point to an earlier value")
            pos = pos.copy()
            pos[handles] = target
            codes[handles] = self.page[target]
            if np.any(codes[handles] == _HANDLE):
                raise ProtocolError(f"{path}: handle points to another handle")
        return pos, codes

    def nulls(self, plan: FieldPlan, valid: np.ndarray, codes: np.ndarray, path: str) -> np.ndarray:
        """Rows present (not null), after checking nullability."""
        present = valid & (codes != _NULL)
        if not plan.nullable and not np.all(present):
            row = int(np.flatnonzero(~present)[0])
            raise SchemaError(f"column {path!r}: null in row {row} but the plan says not nullable")
        return present

    def mismatch(self, path: str, plan: FieldPlan, codes: np.ndarray, present: np.ndarray, ok: np.ndarray) -> None:
        bad = np.flatnonzero(present & ~ok)
        if bad.size:
            row = int(bad[0])
            raise FieldTypeError(path, row, type_label(int(codes[row])), type_label(plan.type_code))

    def convert(
        self, plan: FieldPlan, pos: np.ndarray, codes: np.ndarray, valid: np.ndarray, path: str, rows: np.ndarray
    ) -> None:
        """Decode a column some of whose rows hold another type than the plan's.

        Rows of a type that widens losslessly to the plan's (:data:`WIDENING`)
        are decoded one by one with the general decoder and converted; the
        others go through the column path.  Anything else raises
        :class:`FieldTypeError` naming the row and both types.
        """
        if self.trace is not None:
            self.traceable = False
        target = plan.type_code
        sources = WIDENING.get(target, frozenset())
        rest = valid.copy()
        rest[rows] = False
        fast_rows, fast_values = self.java_times(target, pos, codes, rows)
        if fast_rows.size:
            rows = np.setdiff1d(rows, fast_rows, assume_unique=True)
        dec = BinaryDecoder()
        converted = []
        for r in rows.tolist():
            code = int(codes[r])
            code = code - 256 if code > 127 else code
            found = type_label(code)
            if code not in sources:
                raise FieldTypeError(path, r, found, type_label(target))
            value = dec.decode(self.region, int(pos[r]))
            out = widen(value, target)
            if out is None:
                if code == _OPT:
                    q = int(pos[r]) + 1
                    length = I32.unpack_from(self.region, q)[0]
                    found = f"{found}: {describe_java_object(bytes(self.region[q + 4 : q + 4 + length]))}"
                else:
                    found = f"{found}: {value!r}"
                raise FieldTypeError(path, r, found, type_label(target))
            converted.append(out)
        self.slot(replace(plan, nullable=True), pos, rest, path)
        col = self.out[path]
        col.values[rows] = converted
        col.values[fast_rows] = fast_values
        assert col.mask is not None
        col.mask[rows] = True
        col.mask[fast_rows] = True
        if not plan.nullable:
            col.mask = None

    def java_times(
        self, target: int, pos: np.ndarray, codes: np.ndarray, rows: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Rows among ``rows`` holding a Java-serialized date/time that fits ``target``, and their values.

        Every row of an SQL ``DATE`` column, so decoded for all rows at once;
        rows this leaves out go through the general decoder (and its errors).
        """
        none = np.zeros(0, np.int64)
        if target not in (TypeCode.DATE, TypeCode.TIME, TypeCode.TIMESTAMP):
            return none, none
        opt = rows[codes[rows] == _OPT_BYTE]
        if not opt.size:
            return none, none
        q = pos[opt]
        self.check(q + 1, 4, "optimized object length")
        kind, value = decode_java_time_columns(self.page, q + 5, self.i32(q + 1, "optimized object length"))
        if target == TypeCode.DATE:
            ok = kind == KIND_DATE
        elif target == TypeCode.TIME:
            ok = kind == KIND_TIME
        else:
            # A date beyond the int64 nanoseconds goes the slow way, to its error.
            ok = (kind == KIND_TIMESTAMP) | ((kind == KIND_DATE) & ~ns_out_of_range(value))
            value = np.where(ok & (kind == KIND_DATE), value * 1_000_000, value)
        return opt[ok], value[ok]

    def emit(
        self, path: str, plan: FieldPlan, values: np.ndarray, present: np.ndarray, row_splits: np.ndarray | None = None
    ) -> None:
        if plan.dtype is not None and values.dtype != object:
            target = np.dtype(plan.dtype)
            values = values.view(target) if target.itemsize == values.dtype.itemsize else values.astype(target)
        self.out[path] = Column(values, present if plan.nullable else None, row_splits, plan.type_code)

    def slot(self, plan: FieldPlan, pos: np.ndarray, valid: np.ndarray, path: str) -> None:
        pos, codes = self.codes_at(pos, valid, path)
        code = plan.type_code
        if code == _OBJ:
            self.object_slot(plan, pos, codes, valid, path)
            return
        present = self.nulls(plan, valid, codes, path)
        other = np.flatnonzero(present & (codes != code))
        if other.size:
            self.convert(plan, pos, codes, valid, path, other)
            return
        sel = np.flatnonzero(present)
        p = pos[sel]
        n = self.n
        if self.trace is not None:
            self._trace_leaf(plan, path, code, p, sel)
        if code in FIXED_WIRE and code != _TIMESTAMP and code != _UUID:
            size, dt = FIXED_WIRE[code]
            out = np.zeros(n, dtype=COLUMN_DTYPES[code])
            vals = self.gather(p + 1, size, dt, path)
            out[sel] = vals != 0 if code == TypeCode.BOOL else vals
            self.emit(path, plan, out, present)
        elif code == _TIMESTAMP:
            out = np.zeros(n, dtype=np.int64)
            ms = self.gather(p + 1, 8, "<i8", path)
            ns = self.gather(p + 9, 4, "<i4", path).astype(np.int64)
            far = np.flatnonzero(ns_out_of_range(ms, ns))
            if far.size:
                raise timestamp_range_error(path, int(sel[far[0]]), int(ms[far[0]]), code)
            out[sel] = ms * 1_000_000 + ns
            self.emit(path, plan, out, present)
        elif code == _UUID:
            self.check(p + 1, 16, path)
            out = np.empty(n, dtype=object)
            out[:] = b""
            data = self.data
            unpack = struct.Struct("<qq").unpack_from
            mask64 = (1 << 64) - 1
            out[sel] = [
                str(_uuid.UUID(int=((m & mask64) << 64) | (lo & mask64))).encode("ascii")
                for m, lo in (unpack(data, q) for q in (p + 1).tolist())
            ]
            self.emit(path, plan, out, present)
        elif code in (TypeCode.ENUM, TypeCode.BINARY_ENUM):
            tids = self.i32(p + 1, path)
            if np.any(tids == 0):
                # Unregistered enum type: a class name precedes the ordinal; rare, go slow.
                dec = BinaryDecoder()
                vals = np.array([dec.decode(self.region, int(q)).ordinal for q in p], dtype=np.int32)
            else:
                vals = self.gather(p + 5, 4, "<i4", path)
            out = np.zeros(n, dtype=np.int32)
            out[sel] = vals
            self.emit(path, plan, out, present)
        elif code == TypeCode.DECIMAL:
            dec = BinaryDecoder()
            out = np.zeros(n, dtype=np.float64)
            out[sel] = [float(dec.decode(self.region, q)) for q in p.tolist()]
            self.emit(path, plan, out, present)
        elif code == _STRING:
            self.bytes_column(plan, path, p, sel, present, 1)
        elif code in ARRAY_DTYPES:
            if plan.as_bytes:
                self.bytes_column(plan, path, p, sel, present, ARRAY_DTYPES[code].itemsize)
            else:
                self.array_column(plan, path, p, sel, present, ARRAY_DTYPES[code])
        else:
            raise SchemaError(
                f"column {path!r}: type {TypeCode(code).name} cannot be a column; decode it with BinaryDecoder"
            )

    def lengths(self, p: np.ndarray, item: int, path: str) -> np.ndarray:
        lens = self.i32(p + 1, f"{path}: length")
        if np.any(lens < 0) or (p.size and np.any(p + 5 + lens * item > self.size)):
            raise ProtocolError(f"{path}: length outside the page")
        return lens

    def bytes_column(
        self, plan: FieldPlan, path: str, p: np.ndarray, sel: np.ndarray, present: np.ndarray, item: int
    ) -> None:
        lens = self.lengths(p, item, path)
        starts = (p + 5).tolist()
        ends = (p + 5 + lens * item).tolist()
        data = self.data
        out = np.empty(self.n, dtype=object)
        out[:] = b""
        out[sel] = [data[a:b] for a, b in zip(starts, ends)]
        self.emit(path, plan, out, present)

    def array_column(
        self, plan: FieldPlan, path: str, p: np.ndarray, sel: np.ndarray, present: np.ndarray, dtype: np.dtype
    ) -> None:
        item = dtype.itemsize
        lens = self.lengths(p, item, path)
        n = self.n
        k = plan.fixed_length
        if k is not None:
            if np.any(lens != k):
                bad = int(np.flatnonzero(lens != k)[0])
                raise ArrayLengthError(path, int(sel[bad]), int(lens[bad]), k)
            out_dtype = dtype if dtype.kind != "b" else np.dtype(np.uint8)
            first = p + 5
            steps = np.diff(first)
            if n and sel.size == n and (n == 1 or (steps[0] > 0 and np.all(steps == steps[0]))):
                # Evenly spaced rows (the common case): a strided view and one copy.
                stride = int(steps[0]) if n > 1 else k * item
                view = np.lib.stride_tricks.as_strided(
                    self.page[int(first[0]) :], shape=(n, k * item), strides=(stride, 1), writeable=False
                )
                raw = aligned_empty((n, k * item), np.uint8, self.pool)
                np.copyto(raw, view)
                out = raw.view(out_dtype).reshape(n, k)
            else:
                out = aligned_empty((n, k), out_dtype, self.pool)
                out.fill(0)
                if sel.size:
                    data = self.data
                    blob = b"".join(data[a : a + k * item] for a in first.tolist())
                    out[sel] = np.frombuffer(blob, dtype=out_dtype).reshape(len(sel), k)
            if dtype.kind == "b":
                out = out != 0
            self.emit(path, plan, out, present)
            return
        counts = np.zeros(n, dtype=np.int64)
        counts[sel] = lens
        splits = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=splits[1:])
        data = self.data
        blob = b"".join(data[a:b] for a, b in zip((p + 5).tolist(), (p + 5 + lens * item).tolist()))
        values = np.frombuffer(blob, dtype=dtype if dtype.kind != "b" else np.uint8)
        if dtype.kind == "b":
            values = values != 0
        self.emit(path, plan, values, present, splits)

    # ------------------------------------------------------------ objects
    def object_slot(self, plan: FieldPlan, pos: np.ndarray, codes: np.ndarray, valid: np.ndarray, path: str) -> None:
        present = self.nulls(plan, valid, codes, path)
        ok = (codes == _OBJ) | (codes == _WRAPPED)
        self.mismatch(path, plan, codes, present, ok)
        pos = pos.copy()
        wrapped = np.flatnonzero(present & (codes == _WRAPPED))
        if wrapped.size:
            # 27: int length, object bytes, int start -- point at the object itself.
            lens = self.i32(pos[wrapped] + 1, f"{path}: wrapped length")
            offs = self.i32(pos[wrapped] + 5 + lens, f"{path}: wrapped offset")
            if np.any((lens < 24) | (offs < 0) | (offs >= lens)):
                raise ProtocolError(f"{path}: malformed wrapped object")
            pos[wrapped] = pos[wrapped] + 5 + offs
            if np.any(self.page[pos[wrapped]] != _OBJ):
                raise SchemaError(f"column {path!r}: wrapped value is not an object")
        sel = np.flatnonzero(present)
        n = self.n
        if self.trace is not None:
            if sel.size != n:
                self.traceable = False
            else:
                self.trace.append(("hash", path, plan, int(pos[sel[0]]) + 8, _OBJ))
        field_pos = {f.name: np.zeros(n, dtype=np.int64) for f in plan.fields}
        field_ok = {f.name: np.zeros(n, dtype=bool) for f in plan.fields}
        if sel.size:
            p = pos[sel]
            self.check(p, 24, f"{path}: object header")
            page, step = self.page, step_of(p)
            if np.any(take(page, p + 1, np.uint8, step) != 1):
                raise ProtocolError(f"{path}: unsupported binary object version")
            flags = take(page, p + 2, "<u2", step).astype(np.int64)
            tids = take(page, p + 4, "<i4", step).astype(np.int64)
            total = take(page, p + 12, "<i4", step).astype(np.int64)
            sids = take(page, p + 16, "<i4", step).astype(np.int64)
            soff = take(page, p + 20, "<i4", step).astype(np.int64)
            if np.any(total < 24) or np.any(p + total > self.size):
                raise ProtocolError(f"{path}: object length outside the page")
            keys = np.stack([tids, sids, flags], axis=1)
            if np.all(keys == keys[0]):
                groups = [(keys[0], np.arange(len(sel)))]
            else:
                uniq, inverse = np.unique(keys, axis=0, return_inverse=True)
                inverse = inverse.reshape(-1)
                groups = [(uniq[g], np.flatnonzero(inverse == g)) for g in range(len(uniq))]
            for key, members in groups:
                self.object_group(
                    plan, path, key, sel[members], p[members], total[members], soff[members], field_pos, field_ok
                )
        for f in plan.fields:
            self.slot(f, field_pos[f.name], field_ok[f.name], f"{path}.{f.name}")

    def object_group(
        self,
        plan: FieldPlan,
        path: str,
        key: np.ndarray,
        rows: np.ndarray,
        p: np.ndarray,
        total: np.ndarray,
        soff: np.ndarray,
        field_pos: dict[str, np.ndarray],
        field_ok: dict[str, np.ndarray],
    ) -> None:
        tid, sid, flags = (int(x) for x in key)
        if plan.type_id is not None and tid != plan.type_id:
            raise SchemaError(
                f"column {path!r} expects objects of type {plan.type_name or plan.type_id!r} (id {plan.type_id}) "
                f"but {len(rows)} row(s) of this page hold type id {tid}: the cache mixes object types. "
                "Read each type with its own dataset (value_type=...) or keep one type per cache"
            )
        if not flags & ObjectFlag.HAS_SCHEMA:
            return  # no fields at all: every wanted field is missing (null)
        compact = bool(flags & ObjectFlag.COMPACT_FOOTER)
        off_size = 1 if flags & ObjectFlag.OFFSET_ONE_BYTE else 2 if flags & ObjectFlag.OFFSET_TWO_BYTES else 4
        entry = off_size if compact else 4 + off_size
        footer = p + soff
        footer_end = p + total - (4 if flags & ObjectFlag.HAS_RAW else 0)
        span = footer_end - footer
        if np.any(span != span[0]) or span[0] < 0 or span[0] % entry or np.any(soff < 24):
            raise ProtocolError(f"{path}: inconsistent object footers for schema {sid}")
        count = int(span[0]) // entry
        if compact:
            ids = self.resolver(tid, sid) if self.resolver is not None else None
            if ids is None:
                raise MissingSchemaError(tid, sid)
            ids = tuple(ids)
            if len(ids) != count:
                raise ProtocolError(f"{path}: schema {sid} has {len(ids)} fields, footer has {count}")
        else:
            # Field ids come from the footer; one row tells, the rest must agree.
            first = int(footer[0])
            ids = tuple(I32.unpack_from(self.region, first + i * entry)[0] for i in range(count))
            if len(rows) > 1 and count:
                self.check(footer, count * entry, f"{path}: footer")
                step = step_of(footer)
                got = np.stack([take(self.page, footer + i * entry, "<i4", step) for i in range(count)], axis=1)
                if np.any(got != np.asarray(ids, dtype=np.int32)[None, :]):
                    raise ProtocolError(f"{path}: objects with schema id {sid} have different field ids")
        index = {fid: i for i, fid in enumerate(ids)}
        dt = {1: "u1", 2: "<u2", 4: "<i4"}[off_size]
        for f in plan.fields:
            j = index.get(f.resolved_field_id())
            if j is None:
                continue
            off_pos = footer + j * entry + (0 if compact else 4)
            offs = self.gather(off_pos, off_size, dt, f"{path}.{f.name}: offset").astype(np.int64)
            fpos = p + offs
            if np.any((offs < 24) | (fpos >= footer)):
                raise ProtocolError(f"{path}.{f.name}: field offset outside the object")
            field_pos[f.name][rows] = fpos
            field_ok[f.name][rows] = True


def decode_page(
    region: bytes | bytearray | memoryview,
    row_count: int,
    plan: PagePlan,
    *,
    schema_resolver: SchemaResolver | None = None,
    pool: BufferPool | None = None,
    paths: MutableMapping[str, int] | None = None,
) -> dict[str, Column]:
    """Decode a page region into columns keyed by path (see the module docstring).

    Fixed-length array columns are 64-byte aligned (TensorFlow adopts them
    without a copy) and, with a ``pool``, placed in reused memory.

    ``schema_resolver`` supplies field ids of compact-footer schemas (objects
    the server wrote with compact footers); :class:`MissingSchemaError` names
    the type and schema to fetch when it cannot.  Malformed bytes raise
    ``ProtocolError``; data that does not match the plan raises ``SchemaError``.

    ``paths``, when given, counts the page under the decoder that made its
    columns: :data:`COMPILED` (a page whose rows repeat one layout, through the
    compiled decoder) or :data:`PYTHON` (everything else).
    """
    view = region if isinstance(region, memoryview) else memoryview(region)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    if row_count < 0:
        raise ProtocolError(f"negative row count {row_count}")
    # Every value takes at least one byte: a row count the region cannot hold is
    # corrupt, and must be refused before it sizes the per-row offset table.
    if row_count * len(plan.values) > len(view):
        raise ProtocolError(
            f"page claims {row_count} rows of {len(plan.values)} values but holds only {len(view)} bytes"
        )
    try:
        decoder = _PageDecoder(view, row_count, plan, schema_resolver, pool)
        columns = decoder.run()
        if paths is not None:
            paths[decoder.path] = paths.get(decoder.path, 0) + 1
        return columns
    except (ProtocolError, SchemaError):
        raise
    except (IndexError, KeyError, ValueError, TypeError, struct.error, OverflowError, RecursionError) as exc:
        raise ProtocolError(f"malformed page: {exc.__class__.__name__}: {exc}") from exc
