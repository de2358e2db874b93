"""A write's plan: the key and value fields, the binary type, the encoders; checks of the data against it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ...errors import ConfigurationError
from ...protocol.codes import TypeCode
from ...protocol.hashing import field_id as _field_id
from ...protocol.hashing import schema_id as _schema_id
from ...protocol.hashing import type_id as _type_id
from ...protocol.values import BinaryField, BinaryType
from ..tensor_schema import TensorSchemaRecord
from .encode import FixedLayoutEncoder, GenericRowEncoder
from .fields import FieldPlan, null_mask, plan_column, plan_key
from .sources import Source

#: Name of the row-index key in the schema record and the SQL table.
ROW_KEY = "key"


@dataclass
class WritePlan:
    """What one write stores: the key, the value fields, the binary type name and the encoders."""

    key: FieldPlan
    fields: list[FieldPlan]
    type_name: str
    fixed: FixedLayoutEncoder | None
    generic: GenericRowEncoder | None = None
    notes: list[str] = field(default_factory=list)

    def record(self) -> TensorSchemaRecord:
        return TensorSchemaRecord(self.type_name, self.key.tensor_field(), tuple(f.tensor_field() for f in self.fields))

    def binary_type(self) -> BinaryType:
        ids = [_field_id(f.name) for f in self.fields]
        fields = {f.name: BinaryField(f.name, int(f.code), fid) for f, fid in zip(self.fields, ids)}
        return BinaryType(
            _type_id(self.type_name), self.type_name, fields, schemas={_schema_id(ids): tuple(ids)} if ids else {}
        )


def make_plan(source: Source, key: str | None, type_name: str) -> WritePlan:
    value_names = [n for n in source.names if n != key]
    if key is None and ROW_KEY in value_names:
        raise ConfigurationError(
            f"a column is named {ROW_KEY!r}, which is also the name of the row-index key; pass "
            f"key={ROW_KEY!r} to use that column as the key, or rename it"
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
        key_plan = FieldPlan(ROW_KEY, "int64", (), TypeCode.LONG, "numeric", "<i8")
    else:
        key_plan = plan_key(key, source.first[key])
    try:
        _type_id(type_name)
    except ValueError as exc:
        raise ConfigurationError(str(exc)) from None
    fixed = None
    if fields and key_plan.code == TypeCode.LONG and all(f.fixed_size is not None for f in fields):
        fixed = FixedLayoutEncoder(_type_id(type_name), fields)
    return WritePlan(key_plan, fields, type_name, fixed)


def check_chunk(plan: WritePlan, chunk: Mapping[str, np.ndarray], first_row: int) -> None:
    """Streamed chunks must keep the layout planned from the first one."""
    for f in plan.fields:
        col = chunk[f.name]
        if col.dtype == object and f.kind != "numeric" and null_mask(col).all():
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


def check_unique_keys(key: str, values: np.ndarray) -> None:
    if values.dtype == object:
        n = len(set(values.tolist()))
    else:
        n = len(np.unique(values))
    if n != len(values):
        raise ConfigurationError(
            f"key column {key!r} has {len(values) - n} duplicate value(s); keys must be unique "
            "(rows with the same key would overwrite each other)"
        )


def check_append_schema(cache_name: str, old: TensorSchemaRecord, new: TensorSchemaRecord) -> None:
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
            + "; ".join(problems)
            + "); use mode='overwrite' to replace it"
        )


#: Bytes a binary object costs besides its fields: header (24) plus a little footer room per field.
_OBJECT_HEADER = 24


def estimate_row_bytes(plan: WritePlan, sample: Mapping[str, np.ndarray]) -> int:
    """Encoded bytes (key + value) of one row: exact for fixed layouts, else estimated from
    ``sample`` (up to 256 rows: arrays by their item size, strings and bytes by their mean length,
    plus type codes, lengths and the object's header and footer)."""
    if plan.fixed is not None:
        return int(plan.fixed.row_size)
    size = _OBJECT_HEADER + 9 + 4 * len(plan.fields)
    for f in plan.fields:
        col = sample.get(f.name)
        if col is None or not len(col):
            size += 16
            continue
        head = col[:256]
        if col.dtype != object:
            size += 5 + head[0].nbytes if head.ndim > 1 else 5 + head.dtype.itemsize
            continue
        total = 0
        for v in head.tolist():
            if v is None:
                total += 1
            elif isinstance(v, str):
                total += 5 + len(v.encode("utf-8", "surrogatepass"))
            elif isinstance(v, (bytes, bytearray, memoryview)):
                total += 5 + len(v)
            elif isinstance(v, np.ndarray):
                total += 5 + v.nbytes
            elif isinstance(v, (list, tuple)):
                total += 5 + 9 * len(v)
            else:
                total += 9
        size += -(-total // len(head))
    key = sample.get(plan.key.name)
    if key is not None and key.dtype == object and len(key):
        size += max(len(str(k)) for k in key[:256].tolist()) + 5
    return size
