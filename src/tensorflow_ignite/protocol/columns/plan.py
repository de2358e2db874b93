"""What a page decode extracts: field and page plans, the decoded column, the lossless widenings
(:data:`~tensorflow_ignite.protocol.types.WIDENING`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# Re-exported (`X as X`): columns.decode takes them from here.
from tensorflow_ignite.errors import FieldTypeError as FieldTypeError
from tensorflow_ignite.errors import SchemaError as SchemaError
from tensorflow_ignite.protocol.codes import TypeCode
from tensorflow_ignite.protocol.hashing import field_id as _field_id
from tensorflow_ignite.protocol.values import Date, Time, Timestamp


def widen(value: Any, target: int) -> Any:
    """``value`` (decoded from a type in ``WIDENING[target]``) in ``target``'s column encoding, or None."""
    if target in (TypeCode.DATE, TypeCode.TIME, TypeCode.TIMESTAMP):
        if target == TypeCode.DATE and type(value) is Date:
            return value.epoch_ms
        if target == TypeCode.TIME and type(value) is Time:
            return value.millis
        if target == TypeCode.TIMESTAMP and type(value) in (Date, Timestamp):
            ns = value.epoch_ms * 1_000_000 if type(value) is Date else value.epoch_ns
            return ns if -(2**63) <= ns < 2**63 else None  # int64 nanoseconds reach the years 1677..2262
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if target in (TypeCode.FLOAT, TypeCode.DOUBLE) else int(value)


def type_label(code: int) -> str:
    """``LONG (4)``: a type code's name and number."""
    code = code - 256 if code > 127 else code
    try:
        return f"{TypeCode(code).name} ({code})"
    except ValueError:
        return f"type code {code}"


@dataclass(frozen=True)
class FieldPlan:
    """What to extract from one value (a row value, or a field of an object).

    ``type_code`` is the expected wire type; ``fields`` lists the wanted fields
    when it is ``TypeCode.OBJ``.  ``fixed_length`` makes an array column dense
    ``[n, k]``; ``as_bytes`` turns byte arrays (and strings) into ``bytes``
    per row; ``dtype`` reinterprets a numeric array or scalar column (e.g.
    ``"uint8"`` for Java ``byte[]`` pixels).  ``nullable=False`` turns a null
    into a ``SchemaError`` and drops the mask.
    """

    name: str
    type_code: int
    fields: tuple[FieldPlan, ...] = ()
    fixed_length: int | None = None
    as_bytes: bool = False
    dtype: str | None = None
    nullable: bool = True
    field_id: int | None = None
    #: For objects: the binary type every row must have (None: any type).
    type_id: int | None = None
    type_name: str | None = None

    def resolved_field_id(self) -> int:
        return self.field_id if self.field_id is not None else _field_id(self.name)


def scalar(name: str, type_code: int, **kw: Any) -> FieldPlan:
    """A leaf plan (scalar or array)."""
    return FieldPlan(name, type_code, **kw)


def obj(name: str, *fields: FieldPlan, **kw: Any) -> FieldPlan:
    """An object plan with the given wanted fields."""
    return FieldPlan(name, TypeCode.OBJ, tuple(fields), **kw)


@dataclass(frozen=True)
class PagePlan:
    """Per-row value plans, in row order; ``None`` skips a value.

    ``PagePlan.scan(key, value)`` for scan pages (two values per row),
    ``PagePlan.sql([...])`` for SQL pages (one value per column).
    """

    values: tuple[FieldPlan | None, ...]

    @classmethod
    def scan(cls, key: FieldPlan | None, value: FieldPlan | None) -> PagePlan:
        return cls((key, value))

    @classmethod
    def sql(cls, columns: Sequence[FieldPlan | None]) -> PagePlan:
        return cls(tuple(columns))


@dataclass
class Column:
    """One decoded column: ``values`` (+ ``row_splits`` when ragged) and ``mask``."""

    values: np.ndarray
    mask: np.ndarray | None = None
    row_splits: np.ndarray | None = None
    type_code: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
