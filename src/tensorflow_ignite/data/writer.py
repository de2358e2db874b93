"""``tensorflow_ignite.write``: columns of tensors into an Ignite cache.

Every row becomes one entry: the key is the row index (a Java ``long``) or a
chosen key column, the value a binary object of ``type_name`` with one field
per column.  A per-row array is stored as the primitive array of its dtype,
flattened row-major; the tensor schema record
(:mod:`~tensorflow_ignite.data.tensor_schema`) keeps the original dtypes and
per-row shapes so a reader restores ``uint8 [28, 28]`` from a ``byte[784]``.

Two encoders produce the same bytes:

* :class:`FixedLayoutEncoder` -- when every field of every row has the same
  size (numbers, fixed-shape arrays, timestamps without NaT) the whole batch is
  built with NumPy: a template row (header, type codes, array lengths, footer)
  is broadcast, the column bytes are copied in, and the header hash (Java's
  ``Arrays.hashCode`` over the field bytes, as ``BinaryEncoder`` writes it) is
  one integer matrix-vector product;
* :class:`GenericRowEncoder` -- anything else (strings, nulls, ragged arrays,
  string keys) goes row by row through :class:`~.protocol.binary.BinaryEncoder`.

Rows go to the cluster in ``OP_CACHE_PUT_ALL`` requests of about ``batch_bytes``,
with the next batch encoded while the node stores the previous one.
"""

from __future__ import annotations

import csv
import datetime as _dt
import logging
import math
import os
import re
import struct
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from ..errors import ConfigurationError, IgniteConnectionError, IgniteError, ServerError
from ..protocol.binary import BinaryEncoder
from ..protocol.buffer import I32, ByteWriter
from ..protocol.endpoint import DEFAULT_HOST, DEFAULT_PORT
from ..protocol.cache_config import JAVA_TYPE_NAMES, CacheConfiguration, QueryEntity, QueryField
from ..protocol.codes import AtomicityMode, ClientStatus, ObjectFlag, Op, TypeCode, WriteSynchronizationMode
from ..protocol import requests
from ..protocol.framing import reusable_frame
from ..protocol.hashing import cache_id as _cache_id
from ..protocol.hashing import field_id as _field_id
from ..protocol.hashing import schema_id as _schema_id
from ..protocol.hashing import type_id as _type_id
from ..protocol.values import BinaryField, BinaryObject, BinaryType, Timestamp
from .tensor_schema import SCHEMA_CACHE, TensorField, TensorSchemaRecord, delete_schema, load_schema, save_schema

if TYPE_CHECKING:
    from ..client import Cache, IgniteClient

__all__ = [
    "write",
    "WriteResult",
    "WriteError",
    "FieldPlan",
    "FixedLayoutEncoder",
    "GenericRowEncoder",
    "plan_column",
    "default_type_name",
    "sql_table_name",
    "read_columns",
]

log = logging.getLogger(__name__)

Mode = Literal["create", "append", "overwrite"]
_MODES = ("create", "append", "overwrite")
_HEADER_LEN = 24
_MAX_OBJECT = (1 << 31) - 1
_ROW_KEY = "key"  # name of the row-index key in the schema record and the SQL table


# ==================================================================== results
@dataclass(frozen=True)
class WriteResult:
    """What :func:`write` did.

    ``rows`` entries were stored in ``cache_name`` as binary objects of
    ``type_name``; ``bytes_sent`` counts the put requests' bytes; ``key`` names
    the key (``"key"`` for the row index, else the key column); ``sql_table``
    is ``"PUBLIC.<TABLE>"`` when the cache is also an SQL table, else None;
    ``encoder`` is ``"fixed-layout"`` (vectorized) or ``"generic"``; ``notes``
    says what was decided along the way (e.g. no SQL engine on the cluster).
    """

    cache_name: str
    rows: int
    bytes_sent: int
    seconds: float
    type_name: str
    key: str = _ROW_KEY
    sql_table: str | None = None
    encoder: str = "fixed-layout"
    notes: tuple[str, ...] = ()

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else float("inf")

    @property
    def megabytes(self) -> float:
        return self.bytes_sent / 1e6

    def summary(self) -> str:
        """One line for humans: rows, MB, seconds, rate, SQL table."""
        text = (f"wrote {self.rows:,} rows ({self.megabytes:.1f} MB) to cache {self.cache_name!r} "
                f"in {self.seconds:.2f} s ({self.rows_per_second:,.0f} rows/s, "
                f"{self.megabytes / max(self.seconds, 1e-9):.1f} MB/s)")
        if self.sql_table:
            text += f"; SQL table {self.sql_table}"
        return text


class WriteError(IgniteError):
    """An ``append`` failed part-way; ``rows_written`` rows (at least) are in the cache.

    The original error is the ``__cause__``.
    """

    def __init__(self, message: str, *, cache_name: str, rows_written: int) -> None:
        super().__init__(message)
        self.cache_name = cache_name
        self.rows_written = rows_written


# ============================================================ column planning
#: numpy dtype -> (scalar type code, array type code, wire dtype)
_NUMERIC: dict[str, tuple[int, int, str]] = {
    "bool": (TypeCode.BOOL, TypeCode.BOOL_ARR, "|b1"),
    "int8": (TypeCode.BYTE, TypeCode.BYTE_ARR, "|i1"),
    "uint8": (TypeCode.BYTE, TypeCode.BYTE_ARR, "|i1"),  # same bits, two's complement
    "int16": (TypeCode.SHORT, TypeCode.SHORT_ARR, "<i2"),
    "uint16": (TypeCode.INT, TypeCode.INT_ARR, "<i4"),  # widened: Java has no unsigned short
    "int32": (TypeCode.INT, TypeCode.INT_ARR, "<i4"),
    "uint32": (TypeCode.LONG, TypeCode.LONG_ARR, "<i8"),  # widened
    "int64": (TypeCode.LONG, TypeCode.LONG_ARR, "<i8"),
    "uint64": (TypeCode.LONG, TypeCode.LONG_ARR, "<i8"),  # same bits; the schema says uint64
    "float16": (TypeCode.FLOAT, TypeCode.FLOAT_ARR, "<f4"),
    "float32": (TypeCode.FLOAT, TypeCode.FLOAT_ARR, "<f4"),
    "float64": (TypeCode.DOUBLE, TypeCode.DOUBLE_ARR, "<f8"),
}

_ARRAY_OF_SCALAR = {
    TypeCode.BOOL: TypeCode.BOOL_ARR, TypeCode.BYTE: TypeCode.BYTE_ARR, TypeCode.SHORT: TypeCode.SHORT_ARR,
    TypeCode.INT: TypeCode.INT_ARR, TypeCode.LONG: TypeCode.LONG_ARR, TypeCode.FLOAT: TypeCode.FLOAT_ARR,
    TypeCode.DOUBLE: TypeCode.DOUBLE_ARR,
}


@dataclass(frozen=True)
class FieldPlan:
    """How one column is written.

    ``dtype``/``shape`` describe the tensor (``shape`` per row, ``-1`` for a
    dimension that varies between rows); ``code`` is the Ignite type code;
    ``kind`` is ``numeric`` (scalar or fixed-shape array of ``wire`` dtype),
    ``timestamp``, ``string``, ``bytes``, ``ragged`` (per-row arrays of
    varying shape), ``string_array``, ``timestamp_array`` or ``pyint``/
    ``pyfloat``/``pybool`` (Python objects, nullable).
    """

    name: str
    dtype: str
    shape: tuple[int, ...]
    code: int
    kind: str
    wire: str | None = None
    nullable: bool = False

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def fixed_size(self) -> int | None:
        """Bytes of the field (type code included) when every row has the same size."""
        if self.nullable:
            return None
        if self.kind == "numeric":
            width = np.dtype(self.wire).itemsize
            return 1 + width if not self.shape else 5 + self.elements * width
        if self.kind == "timestamp":
            return 13
        return None

    def tensor_field(self) -> TensorField:
        return TensorField(self.name, self.dtype, self.shape, int(self.code))


def _null_mask(values: np.ndarray) -> np.ndarray:
    """True where an object array holds None or a float NaN."""
    return np.fromiter((v is None or (isinstance(v, float) and v != v) for v in values.ravel()),
                       dtype=bool, count=values.size).reshape(values.shape)


def _py_kind(v: Any) -> str:
    if isinstance(v, (str, np.str_)):
        return "str"
    if isinstance(v, (bytes, bytearray, np.bytes_)):
        return "bytes"
    if isinstance(v, (bool, np.bool_)):
        return "bool"
    if isinstance(v, (int, np.integer)):
        return "int"
    if isinstance(v, (float, np.floating)):
        return "float"
    if isinstance(v, (_dt.datetime, _dt.date, np.datetime64, Timestamp)):
        return "timestamp"
    if isinstance(v, (np.ndarray, list, tuple)):
        return "array"
    return type(v).__name__


def _all_utf8(values: Iterable[Any]) -> bool:
    try:
        for v in values:
            if isinstance(v, (bytes, bytearray, np.bytes_)):
                bytes(v).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def plan_column(name: str, values: np.ndarray) -> FieldPlan:
    """Choose the Ignite representation of one column (first axis = rows)."""
    if values.ndim == 0:
        raise ConfigurationError(f"column {name!r} is a scalar; every column needs one value per row")
    dt = values.dtype
    shape = tuple(int(d) for d in values.shape[1:])
    if dt.name in _NUMERIC:
        scalar, array, wire = _NUMERIC[dt.name]
        return FieldPlan(name, dt.name, shape, array if shape else scalar, "numeric", wire)
    if dt.kind == "M":
        if shape:
            return FieldPlan(name, str(dt), shape, TypeCode.TIMESTAMP_ARR, "timestamp_array", nullable=True)
        return FieldPlan(name, str(dt), (), TypeCode.TIMESTAMP, "timestamp",
                         nullable=bool(np.isnat(values).any()))
    if dt.kind in "UT":
        if shape:
            return FieldPlan(name, "str", shape, TypeCode.STRING_ARR, "string_array", nullable=True)
        return FieldPlan(name, "str", (), TypeCode.STRING, "string")
    if dt.kind == "S":
        if shape:
            raise ConfigurationError(f"column {name!r}: per-row arrays of bytes are not supported")
        if _all_utf8(values):
            return FieldPlan(name, "str", (), TypeCode.STRING, "string")
        return FieldPlan(name, "bytes", (), TypeCode.BYTE_ARR, "bytes")
    if dt.kind == "O":
        return _plan_objects(name, values)
    raise ConfigurationError(
        f"column {name!r} has dtype {dt}, which has no Ignite type; use bool, (u)int8-64, "
        "float16/32/64, datetime64, str or bytes"
    )


def _plan_objects(name: str, values: np.ndarray) -> FieldPlan:
    """Classify an object column by the Python types it holds."""
    nulls = _null_mask(values)
    nullable = bool(nulls.any())
    present = values[~nulls]
    kinds: dict[str, int] = {}
    for i, v in enumerate(present):
        k = _py_kind(v)
        if k not in kinds:
            kinds[k] = i
    shape = tuple(int(d) for d in values.shape[1:])
    kset = set(kinds)
    if shape:
        if kset <= {"str"}:
            return FieldPlan(name, "str", shape, TypeCode.STRING_ARR, "string_array", nullable=True)
        raise ConfigurationError(f"column {name!r}: per-row object arrays must hold strings, found {sorted(kset)}")
    if not kset:
        return FieldPlan(name, "str", (), TypeCode.STRING, "string", nullable=True)
    if kset <= {"str", "bytes"}:
        if _all_utf8(present):
            return FieldPlan(name, "str", (), TypeCode.STRING, "string", nullable=nullable)
        if kset == {"bytes"}:
            return FieldPlan(name, "bytes", (), TypeCode.BYTE_ARR, "bytes", nullable=nullable)
        raise ConfigurationError(f"column {name!r} mixes str with bytes that are not valid UTF-8")
    if kset == {"bool"}:
        return FieldPlan(name, "bool", (), TypeCode.BOOL, "pybool", nullable=nullable)
    if kset <= {"bool", "int"}:
        return FieldPlan(name, "int64", (), TypeCode.LONG, "pyint", nullable=nullable)
    if kset <= {"bool", "int", "float"}:
        return FieldPlan(name, "float64", (), TypeCode.DOUBLE, "pyfloat", nullable=nullable)
    if kset == {"timestamp"}:
        return FieldPlan(name, "datetime64[ns]", (), TypeCode.TIMESTAMP, "timestamp", nullable=True)
    if kset == {"array"}:
        return _plan_ragged(name, present, nullable)
    first = sorted(kinds.items(), key=lambda kv: kv[1])
    raise ConfigurationError(
        f"column {name!r} mixes values of types {', '.join(k for k, _ in first)}; give it one type "
        "(e.g. convert with numpy .astype) before writing"
    )


def _plan_ragged(name: str, present: np.ndarray, nullable: bool) -> FieldPlan:
    arrays = [np.asarray(v) for v in present]
    dtypes = {a.dtype.name for a in arrays}
    if len(dtypes) != 1 or next(iter(dtypes)) not in _NUMERIC:
        raise ConfigurationError(
            f"column {name!r} holds per-row arrays of dtypes {sorted(dtypes)}; they need one numeric dtype"
        )
    dtype = next(iter(dtypes))
    ndims = {a.ndim for a in arrays}
    if len(ndims) != 1:
        raise ConfigurationError(f"column {name!r} holds per-row arrays of different ranks {sorted(ndims)}")
    ndim = ndims.pop()
    shape = tuple(
        arrays[0].shape[d] if len({a.shape[d] for a in arrays}) == 1 else -1 for d in range(ndim)
    )
    _, array_code, wire = _NUMERIC[dtype]
    return FieldPlan(name, dtype, shape, array_code, "ragged", wire, nullable=nullable)


def _plan_key(name: str, values: np.ndarray) -> FieldPlan:
    """Key columns: integers become Java ``long`` keys (so ``get(5)`` finds them), strings stay strings."""
    if values.ndim != 1:
        raise ConfigurationError(f"key column {name!r} must hold one scalar per row, not shape {values.shape[1:]}")
    plan = plan_column(name, values)
    if plan.kind == "numeric" and plan.dtype.startswith(("int", "uint")):
        return FieldPlan(name, plan.dtype, (), TypeCode.LONG, "numeric", "<i8")
    if plan.kind == "pyint":
        if plan.nullable:
            raise ConfigurationError(f"key column {name!r} has null values")
        return FieldPlan(name, "int64", (), TypeCode.LONG, "pyint")
    if plan.kind == "string":
        if plan.nullable:
            raise ConfigurationError(f"key column {name!r} has null values")
        return plan
    raise ConfigurationError(f"key column {name!r} has dtype {plan.dtype}; keys must be integers or strings")


# ========================================================= value preparation
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


def _python_values(plan: FieldPlan, values: np.ndarray) -> list[Any]:
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
            return [None if _is_null(v) else (bytes(v).decode("utf-8") if isinstance(v, (bytes, bytearray, np.bytes_))
                                              else str(v)) for v in values]
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
            if a.dtype.name != plan.dtype or a.ndim != len(plan.shape) or any(
                    s != -1 and s != d for s, d in zip(plan.shape, a.shape)):
                raise ConfigurationError(
                    f"column {plan.name!r}: a row holds a {a.dtype} array of shape {a.shape}, "
                    f"expected {plan.dtype} of shape {plan.shape}"
                )
            out.append(_wire_numeric(FieldPlan(plan.name, plan.dtype, (), plan.code, "numeric", plan.wire),
                                     a.reshape(-1)))
        return out
    raise AssertionError(kind)


def _is_null(v: Any) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def _wire_keys(plan: FieldPlan, values: np.ndarray) -> np.ndarray:
    """Integer keys as ``<i8`` (uint64 reinterpreted, narrower ints widened)."""
    if plan.kind == "pyint":
        try:
            return np.array([int(v) for v in values], dtype="<i8")
        except OverflowError:
            raise ConfigurationError(f"key column {plan.name!r} has values outside the Java long range") from None
    if values.dtype == np.uint64:
        return values.astype("<u8", copy=False).view("<i8")
    return values.astype("<i8")


# ================================================================== encoders
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
            pos += int(s)  # type: ignore[arg-type]
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
        struct.pack_into("<hiiiii", template, k + 2, flags, type_id, 0, self.object_size, _schema_id(ids),
                         self.data_end)
        for f, off in zip(fields, offsets):
            template[k + off] = f.code
            if f.kind == "numeric" and f.shape:
                struct.pack_into("<i", template, k + off + 1, f.elements)
        template[k + self.data_end:] = footer
        self.template = np.frombuffer(bytes(template), dtype=np.uint8)
        # Arrays.hashCode over n bytes = 31**n + sum(b[i] * 31**(n-1-i)), modulo 2**32;
        # int64 arithmetic wraps modulo 2**64, so its low 32 bits are exact.
        n = self.data_end - _HEADER_LEN
        powers = np.empty(n + 1, dtype=np.uint64)
        acc = 1
        for i in range(n + 1):
            powers[i] = acc
            acc = (acc * 31) & 0xFFFFFFFFFFFFFFFF
        self._hash_base = np.int64(powers[n].astype(np.int64))
        self._hash_powers = powers[n - 1::-1][:n].astype(np.int64) if n else np.zeros(0, np.int64)

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
                out[:, p:p + 8] = ms.astype("<i8").view(np.uint8).reshape(n, 8)
                out[:, p + 8:p + 12] = nanos.astype("<i4").view(np.uint8).reshape(n, 4)
                continue
            wire = _wire_numeric(f, col)
            if f.shape:
                p += 4
            width = wire.dtype.itemsize * (f.elements if f.shape else 1)
            out[:, p:p + width] = wire.view(np.uint8).reshape(n, width)
        self._fill_hash(out)
        return out

    def _fill_hash(self, out: np.ndarray) -> None:
        k = self.key_size
        data = out[:, k + _HEADER_LEN:k + self.data_end].view(np.int8)
        hashes = np.empty(len(out), dtype=np.int64)
        step = max(1, (8 << 20) // max(1, data.shape[1] * 8))  # bound the int64 temporary to ~8 MB
        with np.errstate(over="ignore"):
            for s in range(0, len(out), step):
                hashes[s:s + step] = data[s:s + step].astype(np.int64) @ self._hash_powers + self._hash_base
        h32 = (hashes & 0xFFFFFFFF).astype("<u4")
        out[:, k + 8:k + 12] = h32.view(np.uint8).reshape(len(out), 4)


class GenericRowEncoder:
    """Row by row through :class:`BinaryEncoder`: strings, nulls, ragged arrays, string keys."""

    def __init__(self, type_name: str, fields: Sequence[FieldPlan], key: FieldPlan,
                 metadata: Any | None = None) -> None:
        self.type_name = type_name
        self.type_id = _type_id(type_name)
        self.fields = list(fields)
        self.key = key
        self.field_types = {f.name: int(f.code) for f in fields}
        self.encoder = BinaryEncoder(metadata)

    def encode_rows(self, keys: Sequence[Any], columns: Mapping[str, np.ndarray],
                    first_row: int) -> Iterator[bytes]:
        """Yield each row's entry bytes (key, then value); encoding errors name the row and column."""
        names = [f.name for f in self.fields]
        values = [_python_values(f, columns[f.name]) for f in self.fields]
        enc = self.encoder
        key_code = int(self.key.code)
        w = ByteWriter()
        for i, row in enumerate(zip(*values)):
            obj = BinaryObject(self.type_name, dict(zip(names, row)), type_id=self.type_id,
                               field_types=self.field_types)
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


# =================================================================== sources
def _path_of(data: Any) -> Path | None:
    if isinstance(data, (str, os.PathLike)):
        return Path(data)
    return None


def _is_tf_dataset(data: Any) -> bool:
    mod = type(data).__module__ or ""
    return mod.startswith("tensorflow") and hasattr(data, "element_spec") and hasattr(data, "batch")


def read_columns(path: str | os.PathLike[str], columns: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """Read ``.npz``, ``.csv`` (header row) or ``.parquet`` into a dict of NumPy columns."""
    p = Path(path)
    if not p.exists():
        raise ConfigurationError(f"no such file: {p}")
    suffix = p.suffix.lower()
    if suffix == ".npz":
        with np.load(p, allow_pickle=False) as npz:
            names = list(columns) if columns is not None else list(npz.files)
            missing = [c for c in names if c not in npz.files]
            if missing:
                raise ConfigurationError(f"{p} has no array(s) {missing}; it has {npz.files}")
            return {c: npz[c] for c in names}
    if suffix == ".csv":
        return _read_csv(p, columns)
    if suffix in (".parquet", ".pq"):
        return _read_parquet(p, columns)
    raise ConfigurationError(f"cannot read {p}: expected a .npz, .csv or .parquet file")


def _read_csv(path: Path, columns: Sequence[str] | None) -> dict[str, np.ndarray]:
    """CSV with a header row; each column becomes int64, float64 (empty -> NaN), bool or str (empty -> null)."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            try:
                header = next(reader)
            except StopIteration:
                raise ConfigurationError(f"{path} is empty: a CSV needs a header row") from None
            rows = []
            for line_no, row in enumerate(reader, start=2):
                if not row:
                    continue
                if len(row) != len(header):
                    raise ConfigurationError(
                        f"{path} line {line_no} has {len(row)} fields, the header has {len(header)}"
                    )
                rows.append(row)
    except UnicodeDecodeError as exc:
        raise ConfigurationError(f"{path} is not UTF-8 text: {exc}") from None
    header = [h.strip() for h in header]
    if len(set(header)) != len(header):
        raise ConfigurationError(f"{path} has duplicate column names in its header: {header}")
    wanted = list(columns) if columns is not None else header
    missing = [c for c in wanted if c not in header]
    if missing:
        raise ConfigurationError(f"{path} has no column(s) {missing}; its header is {header}")
    out: dict[str, np.ndarray] = {}
    for name in wanted:
        j = header.index(name)
        out[name] = _infer_text_column([r[j] for r in rows])
    return out


def _infer_text_column(texts: list[str]) -> np.ndarray:
    arr = np.array([t.strip() for t in texts], dtype=str) if texts else np.array([], dtype=str)
    empty = arr == ""
    if len(arr) and not empty.any():
        try:
            return arr.astype(np.int64)
        except (ValueError, OverflowError):
            pass
        lowered = np.char.lower(arr)
        if np.isin(lowered, ("true", "false")).all():
            return lowered == "true"
    if len(arr) and not empty.all():
        try:
            return np.where(empty, "nan", arr).astype(np.float64)
        except ValueError:
            pass
    out = np.empty(len(texts), dtype=object)
    for i, (t, e) in enumerate(zip(arr.tolist(), empty.tolist())):
        out[i] = None if e else t
    return out


def _read_parquet(path: Path, columns: Sequence[str] | None) -> dict[str, np.ndarray]:
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow is a test dependency
        raise ConfigurationError("reading .parquet needs pyarrow: pip install 'tensorflow-ignite[load]'") from None
    try:
        table = pq.read_table(path, columns=list(columns) if columns is not None else None)
    except Exception as exc:  # ArrowInvalid, missing columns...
        raise ConfigurationError(f"cannot read {path}: {exc}") from None
    return {name: _arrow_to_numpy(name, table.column(name)) for name in table.column_names}


def _arrow_to_numpy(name: str, column: Any) -> np.ndarray:
    import pyarrow as pa

    col = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    t = col.type
    n = len(col)
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        if col.null_count == 0:
            return col.to_numpy(zero_copy_only=False)
        return _object_array(col.to_pylist())
    if pa.types.is_floating(t):
        return col.to_numpy(zero_copy_only=False)  # nulls -> NaN
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or \
            pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return _object_array(col.to_pylist())
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        out = col.to_numpy(zero_copy_only=False)
        return out if out.dtype.kind == "M" else out.astype("datetime64[ms]")
    if _is_arrow_list(t):
        import pyarrow.compute as pc

        lengths = pc.fill_null(pc.list_value_length(col), 0).to_numpy(zero_copy_only=False).astype(np.int64)
        flat = col.flatten()  # the values of the non-null lists, in order
        inner = _arrow_to_numpy(name, flat)
        if n and col.null_count == 0 and (lengths == lengths[0]).all() and inner.dtype != object:
            return inner.reshape((n, int(lengths[0])) + inner.shape[1:])
        pieces = np.split(inner, np.cumsum(lengths)[:-1]) if n else []
        nulls = col.is_null().to_numpy(zero_copy_only=False)
        return _object_array([None if null else piece for piece, null in zip(pieces, nulls)])
    raise ConfigurationError(f"column {name!r} has Arrow type {t}, which write() does not support")


def _is_arrow_list(t: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t))


def _object_array(items: Sequence[Any]) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    for i, v in enumerate(items):
        out[i] = v
    return out


@dataclass
class _Source:
    """Columns in chunks of rows: ``first`` is used for planning, then every chunk is yielded."""

    names: list[str]
    total_rows: int | None
    chunks: Callable[[int], Iterator[dict[str, np.ndarray]]]
    first: dict[str, np.ndarray]
    in_memory: bool
    #: per-row shapes declared by the source (-1 = varies); they win over shapes seen in ``first``
    declared_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)


def _select(names: list[str], columns: Sequence[str] | None, key: str | None, origin: str) -> list[str]:
    if columns is None:
        chosen = list(names)
    else:
        chosen = list(columns)
        missing = [c for c in chosen if c not in names]
        if missing:
            raise ConfigurationError(f"{origin} has no column(s) {missing}; it has {names}")
        if len(set(chosen)) != len(chosen):
            raise ConfigurationError(f"columns= names a column twice: {chosen}")
    if key is not None and key not in names:
        raise ConfigurationError(f"key column {key!r} is not in {origin}; it has {names}")
    if key is not None and key not in chosen:
        chosen.append(key)
    return chosen


def _memory_source(arrays: Mapping[str, Any], columns: Sequence[str] | None, key: str | None,
                   origin: str) -> _Source:
    names = list(arrays.keys())
    bad = [n for n in names if not isinstance(n, str) or not n]
    if bad:
        raise ConfigurationError(f"column names must be non-empty strings, got {bad!r}")
    chosen = _select(names, columns, key, origin)
    cols: dict[str, np.ndarray] = {}
    for n in chosen:
        a = arrays[n]
        if not isinstance(a, np.ndarray):
            a = np.asarray(a)
        if a.ndim == 0:
            raise ConfigurationError(f"column {n!r} is a scalar; every column needs one value per row")
        cols[n] = a
    lengths = {n: len(a) for n, a in cols.items()}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{n}={m}" for n, m in lengths.items())
        raise ConfigurationError(f"columns have different numbers of rows ({detail}); every column needs "
                                 "one value per row")
    total = next(iter(lengths.values()), 0)

    def chunks(rows: int) -> Iterator[dict[str, np.ndarray]]:
        for s in range(0, total, rows):
            yield {n: a[s:s + rows] for n, a in cols.items()}

    return _Source(chosen, total, chunks, cols, True)


def _tf_source(ds: Any, columns: Sequence[str] | None, key: str | None) -> _Source:
    import tensorflow as tf

    spec = ds.element_spec
    if not isinstance(spec, Mapping):
        raise ConfigurationError(
            "a tf.data.Dataset given to write() must have dict elements (column name -> tensor), unbatched; "
            f"this one has elements {spec}"
        )
    for n, s in spec.items():
        if not isinstance(s, tf.TensorSpec):
            raise ConfigurationError(f"column {n!r} of the dataset is a {type(s).__name__}; only dense tensors "
                                     "are supported")
    chosen = _select(list(spec.keys()), columns, key, "the dataset")
    if columns is not None or key is not None:
        ds = ds.map(lambda el: {n: el[n] for n in chosen})
    card = int(ds.cardinality())
    total = card if card >= 0 else None
    fixed = {n for n in chosen if spec[n].shape.is_fully_defined()}

    def chunks(rows: int) -> Iterator[dict[str, np.ndarray]]:
        if len(fixed) == len(chosen):
            for batch in ds.batch(rows).as_numpy_iterator():
                yield {n: batch[n] for n in chosen}
            return
        buf: dict[str, list[Any]] = {n: [] for n in chosen}
        count = 0
        for el in ds.as_numpy_iterator():
            for n in chosen:
                buf[n].append(el[n])
            count += 1
            if count == rows:
                yield _stack(buf, fixed)
                buf = {n: [] for n in chosen}
                count = 0
        if count:
            yield _stack(buf, fixed)

    first_iter = chunks(1024)
    first = next(first_iter, None)
    if first is None:
        first = {n: np.zeros((0,) + tuple(spec[n].shape.as_list()) if n in fixed else (0,),
                             dtype=object if spec[n].dtype == tf.string or n not in fixed
                             else spec[n].dtype.as_numpy_dtype) for n in chosen}
    declared = {n: tuple(-1 if d is None else int(d) for d in spec[n].shape.as_list())
                for n in chosen if n not in fixed}
    return _Source(chosen, total, chunks, first, False, declared)


def _stack(buf: Mapping[str, list[Any]], fixed: set[str]) -> dict[str, np.ndarray]:
    return {n: (np.stack(v) if n in fixed else _object_array(v)) for n, v in buf.items()}


def _open_source(data: Any, columns: Sequence[str] | None, key: str | None) -> _Source:
    path = _path_of(data)
    if path is not None:
        wanted = None if columns is None else list(dict.fromkeys([*columns, *([key] if key else [])]))
        return _memory_source(read_columns(path, wanted), columns, key, str(path))
    if _is_tf_dataset(data):
        return _tf_source(data, columns, key)
    if isinstance(data, Mapping) or (hasattr(data, "keys") and hasattr(data, "__getitem__")):
        return _memory_source({k: data[k] for k in data.keys()}, columns, key, "data")
    raise ConfigurationError(
        f"write() cannot read a {type(data).__name__}: pass a dict of column name -> array, a path to "
        "a .npz/.csv/.parquet file, or a tf.data.Dataset of dicts"
    )


# ================================================================ naming, SQL
def default_type_name(cache_name: str) -> str:
    """``"mnist-train"`` -> ``"MnistTrainRow"``: the binary type written when none is given."""
    parts = [p for p in re.split(r"[^0-9A-Za-z]+", cache_name) if p]
    base = "".join(p[:1].upper() + p[1:] for p in parts) or "Data"
    if base[0].isdigit():
        base = "T" + base
    return base + "Row"


def sql_table_name(cache_name: str) -> str:
    """The SQL table of a written cache: the cache name as an upper-case identifier."""
    name = re.sub(r"[^0-9A-Za-z_]", "_", cache_name).upper()
    if not name or name[0].isdigit():
        name = "T_" + name
    return name


_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _query_entity(type_name: str, table: str, key: FieldPlan, fields: Sequence[FieldPlan]) -> QueryEntity:
    qfields = [QueryField(key.name, JAVA_TYPE_NAMES[key.code], is_key=True)]
    aliases: dict[str, str] = {}
    for f in fields:
        java = JAVA_TYPE_NAMES.get(f.code)
        if java is None:  # string/timestamp arrays: in the value, not in the table
            continue
        qfields.append(QueryField(f.name, java))
    for qf in qfields:
        if not _IDENT.match(qf.name):
            aliases[qf.name] = re.sub(r"\W", "_", qf.name).upper()
    return QueryEntity(key_type=JAVA_TYPE_NAMES[key.code], value_type=type_name, table_name=table,
                       key_field_name=key.name, fields=qfields, aliases=aliases)


def _sql_engine_available(client: "IgniteClient") -> tuple[bool, str]:
    """Whether the cluster runs SQL; Ignite 2.18 ``ignite-core`` alone accepts query entities but has no engine."""
    try:
        client.sql("SELECT 1").fetchall()
        return True, ""
    except ServerError as exc:
        text = str(exc)
        if "indexing is disabled" in text or "no query engine" in text.lower():
            return False, text
        log.debug("SQL probe failed (%s); assuming an SQL engine is present", exc)
        return True, ""


# ================================================================== sending
class _PutAllSender:
    """``OP_CACHE_PUT_ALL`` frames, one in flight while the caller encodes the next.

    A lost connection is repaired once: unacknowledged frames are sent again
    through the client (put is idempotent).
    """

    def __init__(self, client: "IgniteClient", cache_name: str) -> None:
        self.client = client
        self.cache_name = cache_name
        self.cache_id = _cache_id(cache_name)
        self.conn = client.default_connection
        self.pending: tuple[int, bytearray, int] | None = None  # request id, frame, rows
        self.rows_acked = 0
        self.bytes_sent = 0
        self.on_ack: Callable[[int], None] = lambda rows: None

    @staticmethod
    def _encoder(frame: bytearray) -> Callable[[int], bytearray]:
        return reusable_frame(frame)

    def submit(self, rows: int, payload: bytes | bytearray | memoryview) -> None:
        frame = requests.cache_put_all_encoded(self.cache_id, rows, payload)
        self.wait()
        try:
            rid = self.conn.send(self._encoder(frame))
        except IgniteConnectionError as exc:
            log.warning("connection lost while writing %r (%s); sending the batch again", self.cache_name, exc)
            self.conn.close()
            self.client.request(self._encoder(frame), Op.CACHE_PUT_ALL)
            self._acked(rows, len(frame))
            self.conn = self.client.default_connection
            return
        self.pending = (rid, frame, rows)

    def wait(self) -> None:
        """Collect the answer of the request in flight, if any."""
        if self.pending is None:
            return
        rid, frame, rows = self.pending
        self.pending = None
        try:
            self.conn.receive(rid, Op.CACHE_PUT_ALL)
        except IgniteConnectionError as exc:
            log.warning("connection lost while writing %r (%s); sending the batch again", self.cache_name, exc)
            self.conn.close()
            self.client.request(self._encoder(frame), Op.CACHE_PUT_ALL)
            self.conn = self.client.default_connection
        self._acked(rows, len(frame))

    def _acked(self, rows: int, size: int) -> None:
        self.rows_acked += rows
        self.bytes_sent += size
        self.on_ack(rows)


# ===================================================================== write
_ATOMICITY = {"atomic": AtomicityMode.ATOMIC, "transactional": AtomicityMode.TRANSACTIONAL}
_WRITE_SYNC = {"primary_sync": WriteSynchronizationMode.PRIMARY_SYNC,
               "full_sync": WriteSynchronizationMode.FULL_SYNC,
               "full_async": WriteSynchronizationMode.FULL_ASYNC}


def _choice(value: str, table: Mapping[str, Any], what: str) -> Any:
    v = table.get(str(value).lower().replace("-", "_"))
    if v is None:
        raise ConfigurationError(f"{what} must be one of {', '.join(table)}; got {value!r}")
    return v


@dataclass
class _Plan:
    key: FieldPlan
    fields: list[FieldPlan]
    type_name: str
    fixed: FixedLayoutEncoder | None
    generic: GenericRowEncoder | None = None
    notes: list[str] = field(default_factory=list)

    def record(self) -> TensorSchemaRecord:
        return TensorSchemaRecord(self.type_name, self.key.tensor_field(),
                                  tuple(f.tensor_field() for f in self.fields))

    def binary_type(self) -> BinaryType:
        ids = [_field_id(f.name) for f in self.fields]
        fields = {f.name: BinaryField(f.name, int(f.code), fid) for f, fid in zip(self.fields, ids)}
        return BinaryType(_type_id(self.type_name), self.type_name, fields,
                          schemas={_schema_id(ids): tuple(ids)} if ids else {})


def _make_plan(source: _Source, key: str | None, type_name: str) -> _Plan:
    value_names = [n for n in source.names if n != key]
    if key is None and _ROW_KEY in value_names:
        raise ConfigurationError(
            f"a column is named {_ROW_KEY!r}, which is also the name of the row-index key; pass "
            f"key={_ROW_KEY!r} to use that column as the key, or rename it"
        )
    if not value_names:
        raise ConfigurationError("no columns to write: give at least one column besides the key")
    fields = [plan_column(n, source.first[n]) for n in value_names]
    for i, f in enumerate(fields):
        declared = source.declared_shapes.get(f.name)
        if declared is not None and f.kind == "ragged":
            fields[i] = FieldPlan(f.name, f.dtype, declared, f.code, f.kind, f.wire, f.nullable)
    seen: dict[int, str] = {}
    for f in fields:
        try:
            fid = _field_id(f.name)
        except ValueError as exc:
            raise ConfigurationError(str(exc)) from None
        if fid in seen:
            raise ConfigurationError(
                f"columns {seen[fid]!r} and {f.name!r} map to the same Ignite field (field names are "
                "case-insensitive); rename one"
            )
        seen[fid] = f.name
    if key is None:
        key_plan = FieldPlan(_ROW_KEY, "int64", (), TypeCode.LONG, "numeric", "<i8")
    else:
        key_plan = _plan_key(key, source.first[key])
    try:
        _type_id(type_name)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    fixed = None
    if fields and key_plan.code == TypeCode.LONG and all(f.fixed_size is not None for f in fields):
        fixed = FixedLayoutEncoder(_type_id(type_name), fields)
    return _Plan(key_plan, fields, type_name, fixed)


def _check_chunk(plan: _Plan, chunk: Mapping[str, np.ndarray], first_row: int) -> None:
    """Streamed chunks must keep the layout planned from the first one."""
    for f in plan.fields:
        col = chunk[f.name]
        if col.dtype == object and f.kind != "numeric" and _null_mask(col).all():
            continue  # only nulls: fits any nullable layout
        again = plan_column(f.name, col)
        if f.kind == "ragged":
            ok = again.kind == "ragged" and again.dtype == f.dtype and len(again.shape) == len(f.shape)
        elif f.kind == "numeric":
            ok = again.kind == "numeric" and again.dtype == f.dtype and again.shape == f.shape
        else:
            ok = again.kind == f.kind and again.code == f.code
        if ok:
            continue
        raise ConfigurationError(
            f"column {f.name!r} changes at row ~{first_row}: it started as {f.dtype} {list(f.shape)} "
            f"({TypeCode(f.code).name}) and now holds {again.dtype} {list(again.shape)} "
            f"({TypeCode(again.code).name})"
        )


def write(
    cache_name: str,
    data: Any,
    *,
    client: "IgniteClient | None" = None,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    username: str | None = None,
    password: str | None = None,
    cafile: str | None = None,
    certfile: str | None = None,
    keyfile: str | None = None,
    cert_password: str | None = None,
    type_name: str | None = None,
    key: str | None = None,
    key_offset: int | None = None,
    columns: Sequence[str] | None = None,
    mode: Mode = "create",
    backups: int = 0,
    atomicity: str = "atomic",
    write_sync: str = "primary_sync",
    sql: bool = True,
    batch_bytes: int = 4 << 20,
    progress: bool | None = None,
) -> WriteResult:
    """Write columns of tensors into the Ignite cache ``cache_name``, one entry per row.

    ``data`` is a mapping of column name -> array (first axis = rows; a row's
    value is a scalar or an N-d array), a path to a ``.npz``, ``.csv`` (header
    row; int64/float64/bool/str inferred, empty fields are NaN or null) or
    ``.parquet`` file, or a ``tf.data.Dataset`` of dicts of tensors (unbatched).

    Values are binary objects of ``type_name`` (default ``"<CacheName>Row"``)
    with one field per column: bool -> boolean, (u)int8 -> byte, int16 ->
    short, uint16/int32 -> int, uint32/(u)int64 -> long, float16/32 -> float,
    float64 -> double, str -> String (bytes that are not UTF-8 -> byte[]),
    datetime64 -> Timestamp; per-row arrays -> the primitive array of the
    dtype, flattened row-major; None/NaN in object columns -> null.  The
    original dtypes and per-row shapes are recorded with
    :func:`~tensorflow_ignite.data.tensor_schema.save_schema`.

    Keys are the row index plus ``key_offset`` (Java ``long``), or the values
    of the ``key`` column (integers become ``long``, strings stay strings; keys
    must be unique).

    ``mode``:

    * ``"create"`` -- the cache must not exist or be empty; it is created with
      ``backups``, ``atomicity`` (``atomic``/``transactional``) and
      ``write_sync`` (``primary_sync``/``full_sync``/``full_async``);
    * ``"overwrite"`` -- an existing cache (and its data) is destroyed first;
    * ``"append"`` -- rows are added to an existing cache (created if absent);
      the recorded tensor schema must match.  ``key_offset`` defaults to the
      number of entries already there, so row-index keys continue.

    **Atomicity of the load.**  In ``create`` and ``overwrite`` mode a failure
    part-way (bad value, lost cluster, Ctrl+C) destroys the half-written cache
    -- or empties it, if it existed empty before -- and re-raises the error: the
    cache is never left half-loaded.  In ``append`` mode what was written
    stays, and a :class:`WriteError` says how many rows made it.

    With ``sql=True`` the cache is also an SQL table ``PUBLIC.<CACHE_NAME>``
    (scalar and primitive-array columns plus the key).  Clusters without an SQL
    engine (Ignite 2.18 with ``ignite-core`` only) accept query entities without
    complaint but cannot run queries; there the table is left out and
    ``WriteResult.notes`` says so.

    Rows are sent in put-all requests of about ``batch_bytes``.  ``progress``
    shows a tqdm bar on stderr (default: when stderr is a terminal).  Either
    pass a connected ``client`` or the connection settings.
    """
    if mode not in _MODES:
        raise ConfigurationError(f"mode must be one of {', '.join(_MODES)}; got {mode!r}")
    if not cache_name or cache_name == SCHEMA_CACHE:
        raise ConfigurationError(f"invalid cache name {cache_name!r}")
    if batch_bytes < 1:
        raise ConfigurationError("batch_bytes must be positive")
    if backups < 0:
        raise ConfigurationError("backups must be >= 0")
    atomicity_mode = _choice(atomicity, _ATOMICITY, "atomicity")
    sync_mode = _choice(write_sync, _WRITE_SYNC, "write_sync")

    started = time.perf_counter()
    source = _open_source(data, columns, key)
    own_client = client is None
    if client is None:
        from ..client import IgniteClient

        address = host if ":" in host or "," in host else f"{host}:{port}"
        client = IgniteClient(address, username=username, password=password, cafile=cafile, certfile=certfile,
                              keyfile=keyfile, cert_password=cert_password)
    try:
        return _write(client, cache_name, source, type_name=type_name, key=key, key_offset=key_offset,
                      mode=mode, backups=backups, atomicity=atomicity_mode, write_sync=sync_mode, sql=sql,
                      batch_bytes=batch_bytes, progress=progress, started=started)
    finally:
        if own_client:
            client.close()


def _write(client: "IgniteClient", cache_name: str, source: _Source, *, type_name: str | None, key: str | None,
           key_offset: int | None, mode: str, backups: int, atomicity: int, write_sync: int, sql: bool,
           batch_bytes: int, progress: bool | None, started: float) -> WriteResult:
    existing = cache_name in client.cache_names()
    recorded = load_schema(client, cache_name) if existing and mode == "append" else None
    if type_name is None:
        type_name = recorded.type_name if recorded is not None else default_type_name(cache_name)
    plan = _make_plan(source, key, type_name)
    if recorded is not None:
        _check_append_schema(cache_name, recorded, plan.record())
    if key is not None and source.in_memory:
        _check_unique_keys(key, source.first[key])

    # Register the value type first: a clash with an older type of the same name
    # fails here, before any cache is created or destroyed.
    try:
        client.put_binary_type(plan.binary_type())
    except ServerError as exc:
        server = " ".join(str(exc).split())
        raise ConfigurationError(
            f"binary type {type_name!r} is already registered on the cluster with other field types; "
            f"Ignite keeps binary metadata for good, so write with another type_name= (e.g. "
            f"{type_name + '2'!r}). Server: {server}"
        ) from None

    cache, created, emptied_ok, sql_table = _prepare_cache(
        client, cache_name, existing, plan, mode=mode, backups=backups, atomicity=atomicity,
        write_sync=write_sync, sql=sql)

    if key is None and key_offset is None:
        key_offset = 0
        if mode == "append" and not created:
            key_offset = cache.size()
            if key_offset and source.total_rows:
                end = key_offset + source.total_rows - 1
                if cache.contains_key(key_offset) or cache.contains_key(end):
                    raise ConfigurationError(
                        f"cache {cache_name!r} has {key_offset} entries but already holds keys in "
                        f"[{key_offset}, {end}]; pass key_offset= explicitly to append without overwriting"
                    )
    offset = int(key_offset or 0)

    sender = _PutAllSender(client, cache_name)
    bar = _progress_bar(progress, source.total_rows, cache_name)
    sender.on_ack = bar.update
    used: set[str] = set()
    try:
        _send_all(plan, source, sender, client, key=key, offset=offset, batch_bytes=batch_bytes, used=used)
        sender.wait()
        save_schema(client, cache_name, plan.record())
    except BaseException as exc:
        bar.close()
        if sender.pending is not None:  # a batch sent before the failure: collect its answer, count its rows
            try:
                sender.wait()
            except Exception as late:  # noqa: BLE001 - the first error is the one to report
                log.debug("the batch in flight failed too: %s", late)
        _after_failure(client, cache, exc, mode=mode, created=created, emptied_ok=emptied_ok,
                       rows=sender.rows_acked)
        if mode == "append" and isinstance(exc, Exception):
            raise WriteError(
                f"append to cache {cache_name!r} failed after {sender.rows_acked:,} rows were written "
                f"(they stay in the cache): {exc}", cache_name=cache_name, rows_written=sender.rows_acked,
            ) from exc
        raise
    bar.close()
    notes = list(plan.notes)
    encoder = "+".join(sorted(used)) or ("fixed-layout" if plan.fixed else "generic")
    result = WriteResult(cache_name=cache_name, rows=sender.rows_acked, bytes_sent=sender.bytes_sent,
                         seconds=time.perf_counter() - started, type_name=type_name, key=plan.key.name,
                         sql_table=sql_table, encoder=encoder, notes=tuple(notes))
    log.info("%s", result.summary())
    return result


def _check_unique_keys(key: str, values: np.ndarray) -> None:
    if values.dtype == object:
        n = len(set(values.tolist()))
    else:
        n = len(np.unique(values))
    if n != len(values):
        raise ConfigurationError(
            f"key column {key!r} has {len(values) - n} duplicate value(s); keys must be unique "
            "(rows with the same key would overwrite each other)"
        )


def _check_append_schema(cache_name: str, old: TensorSchemaRecord, new: TensorSchemaRecord) -> None:
    problems = []
    if old.type_name != new.type_name:
        problems.append(f"type {new.type_name!r} != recorded {old.type_name!r}")
    if (old.key.name, old.key.dtype) != (new.key.name, new.key.dtype):
        problems.append(f"key {new.key.name}:{new.key.dtype} != recorded {old.key.name}:{old.key.dtype}")
    old_f = {f.name: f for f in old.fields}
    new_f = {f.name: f for f in new.fields}
    if list(old_f) != list(new_f):
        problems.append(f"columns {list(new_f)} != recorded {list(old_f)}")
    for n in old_f.keys() & new_f.keys():
        a, b = old_f[n], new_f[n]
        if (a.dtype, tuple(a.shape), a.type_code) != (b.dtype, tuple(b.shape), b.type_code):
            problems.append(f"column {n!r} is {b.dtype} {list(b.shape)}, recorded {a.dtype} {list(a.shape)}")
    if problems:
        raise ConfigurationError(
            f"cannot append to cache {cache_name!r}: the data does not match what is there ("
            + "; ".join(problems) + "); use mode='overwrite' to replace it"
        )


def _prepare_cache(client: "IgniteClient", cache_name: str, existing: bool, plan: _Plan, *, mode: str,
                   backups: int, atomicity: int, write_sync: int, sql: bool) -> tuple["Cache", bool, bool, str | None]:
    """Returns the cache, whether we created it, whether it was empty before, and its SQL table."""
    cache = client.cache(cache_name)
    if existing and mode == "create":
        size = cache.size()
        if size:
            raise ConfigurationError(
                f"cache {cache_name!r} already exists and holds {size:,} entries; use mode='append' to add "
                "rows or mode='overwrite' to replace them"
            )
        log.info("writing into the existing, empty cache %r (its configuration is kept)", cache_name)
        return cache, False, True, _existing_sql_table(cache)
    if existing and mode == "append":
        return cache, False, False, _existing_sql_table(cache)
    if existing and mode == "overwrite":
        log.info("overwrite: destroying cache %r", cache_name)
        client.destroy_cache(cache_name)
        delete_schema(client, cache_name)

    config = CacheConfiguration(cache_name, backups=backups, atomicity_mode=atomicity,
                                write_synchronization_mode=write_sync)
    sql_table = None
    if sql:
        available, why = _sql_engine_available(client)
        if available:
            table = sql_table_name(cache_name)
            config.query_entities = [_query_entity(plan.type_name, table, plan.key, plan.fields)]
            config.sql_schema = "PUBLIC"
            sql_table = f"PUBLIC.{table}"
        else:
            note = ("the cluster has no SQL engine (Ignite 2.18 ships none; an SQL node needs ignite-indexing), "
                    "so the cache was created without an SQL table")
            plan.notes.append(note)
            log.info("%s: %s", cache_name, note)
            log.debug("SQL probe answer: %s", why)
    try:
        client.create_cache(config)
    except ServerError as exc:
        if exc.status == ClientStatus.CACHE_EXISTS:
            raise ConfigurationError(f"cache {cache_name!r} was created by someone else meanwhile: {exc}") from None
        if not config.query_entities:
            raise
        note = f"creating the cache with an SQL table failed ({exc}); created it without one"
        log.warning("%s: %s", cache_name, note)
        plan.notes.append(note)
        sql_table = None
        config.query_entities = []
        config.sql_schema = None
        client.create_cache(config)
    return cache, True, False, sql_table


def _existing_sql_table(cache: "Cache") -> str | None:
    try:
        cfg = cache.configuration()
        entities = cfg.query_entities
    except IgniteError as exc:
        log.debug("cannot read the configuration of %r: %s", cache.name, exc)
        return None
    if not entities:
        return None
    table = entities[0].table_name or entities[0].value_type.rsplit(".", 1)[-1].upper()
    schema = cfg.sql_schema or f'"{cache.name}"'
    return f"{schema}.{table}"


def _after_failure(client: "IgniteClient", cache: "Cache", exc: BaseException, *, mode: str, created: bool,
                   emptied_ok: bool, rows: int) -> None:
    if mode == "append":
        return
    try:
        if created:
            client.destroy_cache(cache.name)
            what = "destroyed"
        else:
            cache.clear()
            what = "emptied again"
        delete_schema(client, cache.name)
        exc.add_note(f"tensorflow_ignite.write: cache {cache.name!r} was {what}; {rows:,} rows had been written")
    except BaseException as cleanup:  # never hide the original error
        log.error("could not clean up cache %r after a failed write: %s", cache.name, cleanup)
        exc.add_note(f"tensorflow_ignite.write: cleaning up cache {cache.name!r} failed too: {cleanup}")


def _progress_bar(progress: bool | None, total: int | None, cache_name: str) -> Any:
    if progress is None:
        progress = bool(getattr(sys.stderr, "isatty", lambda: False)())
    from tqdm import tqdm

    return tqdm(total=total, unit="row", unit_scale=True, desc=f"write {cache_name}", disable=not progress,
                file=sys.stderr, leave=False, dynamic_ncols=True)


def _send_all(plan: _Plan, source: _Source, sender: _PutAllSender, client: "IgniteClient", *, key: str | None,
              offset: int, batch_bytes: int, used: set[str]) -> None:
    fixed = plan.fixed
    chunk_rows = max(1, batch_bytes // fixed.row_size) if fixed is not None else 2048
    generic: GenericRowEncoder | None = None
    pending = bytearray()
    pending_rows = 0
    row = 0

    def flush() -> None:
        nonlocal pending, pending_rows
        if pending_rows:
            sender.submit(pending_rows, pending)
            pending = bytearray()
            pending_rows = 0

    for chunk in source.chunks(chunk_rows):
        n = len(next(iter(chunk.values()))) if chunk else 0
        if not n:
            continue
        if not source.in_memory:
            _check_chunk(plan, chunk, row)
        if key is None:
            keys: Any = np.arange(offset + row, offset + row + n, dtype="<i8")
        elif plan.key.code == TypeCode.LONG:
            keys = _wire_keys(plan.key, chunk[key])
        else:
            keys = _python_values(plan.key, chunk[key])
        if fixed is not None and fixed.accepts(chunk):
            flush()
            used.add("fixed-layout")
            encoded = fixed.encode(keys, chunk)
            sender.submit(n, memoryview(encoded).cast("B"))
        else:
            used.add("generic")
            if generic is None:
                generic = GenericRowEncoder(plan.type_name, plan.fields, plan.key, client.metadata.registry)
            for entry in generic.encode_rows(keys.tolist() if isinstance(keys, np.ndarray) else keys, chunk, row):
                pending += entry
                pending_rows += 1
                if len(pending) >= batch_bytes:
                    flush()
        row += n
    flush()
