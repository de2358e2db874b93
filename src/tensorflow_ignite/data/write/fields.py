"""Column planning: which Ignite type each column of tensors is written as."""

from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import ConfigurationError
from ...protocol.codes import TypeCode
from ...protocol.types import ARRAY_DTYPES, ARRAY_OF, WRITE_CODES
from ...protocol.values import Timestamp
from ..tensor_schema import TensorField

#: numpy dtype name -> (scalar type code, array type code, wire dtype of the array elements)
_NUMERIC: dict[str, tuple[int, int, str]] = {
    name: (code, ARRAY_OF[code], ARRAY_DTYPES[ARRAY_OF[code]].str) for name, code in WRITE_CODES.items()
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


def null_mask(values: np.ndarray) -> np.ndarray:
    """True where an object array holds None or a float NaN."""
    return np.fromiter(
        (v is None or (isinstance(v, float) and v != v) for v in values.ravel()), dtype=bool, count=values.size
    ).reshape(values.shape)


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
        return FieldPlan(name, str(dt), (), TypeCode.TIMESTAMP, "timestamp", nullable=bool(np.isnat(values).any()))
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
    nulls = null_mask(values)
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
    shape = tuple(arrays[0].shape[d] if len({a.shape[d] for a in arrays}) == 1 else -1 for d in range(ndim))
    _, array_code, wire = _NUMERIC[dtype]
    return FieldPlan(name, dtype, shape, array_code, "ragged", wire, nullable=nullable)


def plan_key(name: str, values: np.ndarray) -> FieldPlan:
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
