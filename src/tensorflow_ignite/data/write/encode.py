"""Rows into entry bytes: per-row values for the generic encoder, and the two encoders.

:class:`FixedLayoutEncoder` builds a whole batch of fixed-size rows with NumPy;
:class:`GenericRowEncoder` goes row by row through
:class:`~tensorflow_ignite.protocol.binary.BinaryEncoder`.  Both produce the
same bytes.
"""

from __future__ import annotations

import datetime as _dt
import struct
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ...errors import ConfigurationError
from ...protocol.binary import BinaryEncoder
from ...protocol.binary.format import HEADER_LEN as _HEADER_LEN
from ...protocol.buffer import I32, ByteWriter
from ...protocol.codes import ObjectFlag, TypeCode
from ...protocol.hashing import field_id as _field_id
from ...protocol.hashing import schema_id as _schema_id
from ...protocol.hashing import type_id as _type_id
from ...protocol.values import BinaryObject, Timestamp
from .fields import FieldPlan

_MAX_OBJECT = (1 << 31) - 1


def _wire_numeric(plan: FieldPlan, values: np.ndarray) -> np.ndarray:
    """The column as contiguous little-endian values of the wire dtype (rows x elements, or rows)."""
    wire = np.dtype(plan.wire)
    src = values.dtype
    if src.kind in "iu" and src.itemsize == wire.itemsize:
        # uint8 -> byte, uint64 -> long: same bits, reinterpreted (two's complement).
        arr = values.astype(src.newbyteorder("<"), copy=False).view(wire)
    else:
        arr = values.astype(wire, copy=False)
    arr = np.ascontiguousarray(arr)
    return arr.reshape(len(arr), plan.elements) if plan.shape else arr


def _timestamp_parts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Epoch milliseconds, nanoseconds within the millisecond, NaT mask (any datetime64 unit)."""
    nat = np.isnat(values)
    ms_dt = values.astype("datetime64[ms]")
    ms = ms_dt.view(np.int64).copy()
    unit = np.datetime_data(values.dtype)[0]
    if unit in ("ns", "ps", "fs", "as", "us"):
        nanos = (values - ms_dt).astype("timedelta64[ns]").view(np.int64)
    else:
        nanos = np.zeros(len(values), dtype=np.int64)
    # numpy floors when casting to [ms] (also before 1970), as Java's Timestamp does: nanos in [0, 1e6).
    ms[nat] = 0
    nanos = np.where(nat, 0, nanos)
    return ms, nanos.astype(np.int32), nat


def _to_timestamp(v: Any) -> Timestamp:
    if isinstance(v, Timestamp):
        return v
    if isinstance(v, np.datetime64):
        ms, nanos, _ = _timestamp_parts(np.array([v]))
        return Timestamp(int(ms[0]), int(nanos[0]))
    if isinstance(v, _dt.datetime):
        return Timestamp.from_datetime(v)
    if isinstance(v, _dt.date):
        return Timestamp.from_datetime(_dt.datetime(v.year, v.month, v.day))
    raise ConfigurationError(f"cannot write {type(v).__name__} {v!r:.60} as a timestamp")


def python_values(plan: FieldPlan, values: np.ndarray) -> list[Any]:
    """Per-row Python values for :class:`GenericRowEncoder` (None = null)."""
    kind = plan.kind
    if kind == "numeric":
        wire = _wire_numeric(plan, values)
        return list(wire) if plan.shape else wire.tolist()
    if kind == "timestamp":
        if values.dtype.kind == "M":
            ms, nanos, nat = _timestamp_parts(values)
            return [None if n else Timestamp(m, s) for m, s, n in zip(ms.tolist(), nanos.tolist(), nat.tolist())]
        return [None if _is_null(v) else _to_timestamp(v) for v in values]
    if kind == "timestamp_array":
        out = []
        for row in values:
            flat = row.reshape(-1)
            ms, nanos, nat = _timestamp_parts(flat)
            out.append([None if n else Timestamp(m, s) for m, s, n in zip(ms.tolist(), nanos.tolist(), nat.tolist())])
        return out
    if kind == "string":
        try:
            return [
                None
                if _is_null(v)
                else (bytes(v).decode("utf-8") if isinstance(v, (bytes, bytearray, np.bytes_)) else str(v))
                for v in values
            ]
        except UnicodeDecodeError as exc:
            raise ConfigurationError(
                f"column {plan.name!r} holds bytes that are not valid UTF-8 ({exc}) after rows that were "
                "written as strings"
            ) from None
    if kind == "string_array":
        return [[None if _is_null(v) else str(v) for v in row.reshape(-1)] for row in values]
    if kind == "bytes":
        return [None if _is_null(v) else bytes(v) for v in values]
    if kind == "pyint":
        return [None if _is_null(v) else int(v) for v in values]
    if kind == "pyfloat":
        return [None if _is_null(v) else float(v) for v in values]
    if kind == "pybool":
        return [None if _is_null(v) else bool(v) for v in values]
    if kind == "ragged":
        out = []
        for v in values:
            if _is_null(v):
                out.append(None)
                continue
            a = np.asarray(v)
            if (
                a.dtype.name != plan.dtype
                or a.ndim != len(plan.shape)
                or any(s != -1 and s != d for s, d in zip(plan.shape, a.shape))
            ):
                raise ConfigurationError(
                    f"column {plan.name!r}: a row holds a {a.dtype} array of shape {a.shape}, "
                    f"expected {plan.dtype} of shape {plan.shape}"
                )
            out.append(
                _wire_numeric(FieldPlan(plan.name, plan.dtype, (), plan.code, "numeric", plan.wire), a.reshape(-1))
            )
        return out
    raise AssertionError(kind)


def _is_null(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def wire_keys(plan: FieldPlan, values: np.ndarray) -> np.ndarray:
    """Integer keys as ``<i8`` (uint64 reinterpreted, narrower ints widened)."""
    if plan.kind == "pyint":
        try:
            return np.array([int(v) for v in values], dtype="<i8")
        except OverflowError:
            raise ConfigurationError(f"key column {plan.name!r} has values outside the Java long range") from None
    if values.dtype == np.uint64:
        return values.astype("<u8", copy=False).view("<i8")
    return values.astype("<i8")


class FixedLayoutEncoder:
    """Encodes batches of rows whose fields all have fixed sizes, with NumPy.

    Output for each row is the key (``long``: type code 4 and 8 bytes) followed
    by the value object exactly as :class:`~.protocol.binary.BinaryEncoder`
    writes it: 24-byte header (user type, has schema, offset width chosen from
    the last field offset), the fields in order, a full footer of ``int field
    id, offset`` pairs; the header hash is ``Arrays.hashCode`` of the field bytes.
    """

    def __init__(self, type_id: int, fields: Sequence[FieldPlan]) -> None:
        if not fields:
            raise ValueError("a fixed layout needs at least one field")
        sizes = [f.fixed_size for f in fields]
        if any(s is None for s in sizes):
            raise ValueError("every field must have a fixed size")
        self.fields = list(fields)
        offsets: list[int] = []
        pos = _HEADER_LEN
        for s in sizes:
            offsets.append(pos)
            pos += int(s)
        self.offsets = offsets
        self.data_end = pos
        last = offsets[-1]
        if last < 0x100:
            width, flag = 1, ObjectFlag.OFFSET_ONE_BYTE
        elif last < 0x10000:
            width, flag = 2, ObjectFlag.OFFSET_TWO_BYTES
        else:
            width, flag = 4, 0
        ids = [_field_id(f.name) for f in fields]
        footer = b"".join(I32.pack(fid) + off.to_bytes(width, "little") for fid, off in zip(ids, offsets))
        self.object_size = self.data_end + len(footer)
        if self.object_size > _MAX_OBJECT:
            raise ConfigurationError(f"rows of {self.object_size} bytes are too large for one Ignite object")
        self.key_size = 9
        self.row_size = self.key_size + self.object_size
        flags = int(ObjectFlag.USER_TYPE | ObjectFlag.HAS_SCHEMA | flag)
        template = bytearray(self.row_size)
        template[0] = TypeCode.LONG
        k = self.key_size
        template[k] = TypeCode.OBJ
        template[k + 1] = 1
        struct.pack_into(
            "<hiiiii", template, k + 2, flags, type_id, 0, self.object_size, _schema_id(ids), self.data_end
        )
        for f, off in zip(fields, offsets):
            template[k + off] = f.code
            if f.kind == "numeric" and f.shape:
                struct.pack_into("<i", template, k + off + 1, f.elements)
        template[k + self.data_end :] = footer
        self.template = np.frombuffer(bytes(template), dtype=np.uint8)
        # Arrays.hashCode over n bytes = 31**n + sum(b[i] * 31**(n-1-i)), modulo 2**32.
        # int32 arithmetic wraps modulo 2**32, so sums of int32 products are exact.
        n = self.data_end - _HEADER_LEN
        powers = np.empty(n + 1, dtype=np.uint32)
        acc = 1
        for i in range(n + 1):
            powers[i] = acc
            acc = (acc * 31) & 0xFFFFFFFF
        self._hash_base = np.uint32(powers[n])
        self._hash_powers = powers[n - 1 :: -1][:n].view(np.int32) if n else np.zeros(0, np.int32)

    def accepts(self, columns: Mapping[str, np.ndarray]) -> bool:
        """False when a chunk has a value that breaks the fixed layout (a NaT timestamp)."""
        for f in self.fields:
            if f.kind == "timestamp":
                col = columns[f.name]
                if col.dtype.kind != "M" or np.isnat(col).any():
                    return False
        return True

    def encode(self, keys: np.ndarray, columns: Mapping[str, np.ndarray]) -> np.ndarray:
        """Rows x ``row_size`` bytes: key then value object for every row."""
        n = len(keys)
        out = np.empty((n, self.row_size), dtype=np.uint8)
        out[:] = self.template
        out[:, 1:9] = np.ascontiguousarray(keys, dtype="<i8").view(np.uint8).reshape(n, 8)
        k = self.key_size
        for f, off in zip(self.fields, self.offsets):
            p = k + off + 1
            col = columns[f.name]
            if f.kind == "timestamp":
                ms, nanos, _ = _timestamp_parts(col)
                out[:, p : p + 8] = ms.astype("<i8").view(np.uint8).reshape(n, 8)
                out[:, p + 8 : p + 12] = nanos.astype("<i4").view(np.uint8).reshape(n, 4)
                continue
            wire = _wire_numeric(f, col)
            if f.shape:
                p += 4
            width = wire.dtype.itemsize * (f.elements if f.shape else 1)
            out[:, p : p + width] = wire.view(np.uint8).reshape(n, width)
        self._fill_hash(out)
        return out

    def _fill_hash(self, out: np.ndarray) -> None:
        k = self.key_size
        data = out[:, k + _HEADER_LEN : k + self.data_end].view(np.int8)
        # einsum casts the signed bytes to int32 in small buffers as it goes: no full-size
        # temporary (an int64 copy cost 3-5 ms of a 1 MiB row; this, well under 1 ms).
        sums = np.einsum("ij,j->i", data, self._hash_powers, dtype=np.int32).view(np.uint32)
        with np.errstate(over="ignore"):
            h32 = (sums + self._hash_base).astype("<u4")
        out[:, k + 8 : k + 12] = h32.view(np.uint8).reshape(len(out), 4)


class GenericRowEncoder:
    """Row by row through :class:`BinaryEncoder`: strings, nulls, ragged arrays, string keys."""

    def __init__(
        self, type_name: str, fields: Sequence[FieldPlan], key: FieldPlan, metadata: Any | None = None
    ) -> None:
        self.type_name = type_name
        self.type_id = _type_id(type_name)
        self.fields = list(fields)
        self.key = key
        self.field_types = {f.name: int(f.code) for f in fields}
        self.encoder = BinaryEncoder(metadata)

    def encode_rows(self, keys: Sequence[Any], columns: Mapping[str, np.ndarray], first_row: int) -> Iterator[bytes]:
        """Yield each row's entry bytes (key, then value); encoding errors name the row and column."""
        names = [f.name for f in self.fields]
        values = [python_values(f, columns[f.name]) for f in self.fields]
        enc = self.encoder
        key_code = int(self.key.code)
        w = ByteWriter()
        for i, row in enumerate(zip(*values)):
            obj = BinaryObject(
                self.type_name, dict(zip(names, row)), type_id=self.type_id, field_types=self.field_types
            )
            try:
                enc.write(w, keys[i], key_code)
                enc.write(w, obj)
            except ConfigurationError as exc:
                raise ConfigurationError(f"row {first_row + i}{self._culprit(row)}: {exc}") from None
            yield bytes(w.buf)
            w.buf.clear()

    def _culprit(self, row: Sequence[Any]) -> str:
        probe = BinaryEncoder()
        for f, v in zip(self.fields, row):
            try:
                probe.encode(v, int(f.code))
            except ConfigurationError:
                return f", column {f.name!r}"
        return ", key"
