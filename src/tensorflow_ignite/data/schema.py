"""What a dataset yields: Ignite fields as tensors, decided from metadata.

A :class:`DatasetSchema` is a tree mirroring the element structure
(``{'key': ..., 'val': {...}}``); each :class:`FieldSchema` leaf knows its
Ignite type code, TensorFlow dtype and per-element shape.  It is resolved once,
when the dataset is built, from (in order): an explicit ``schema=`` argument,
the tensor schema recorded by :func:`tensorflow_ignite.write`, the cache's SQL
query entity, binary type metadata of a named value type, and only as a last
resort one sampled entry (documented; an empty cache then needs a type).

Type mapping (``dtype`` / per-element ``shape``):

==============================  =================================================
Ignite                          TensorFlow
==============================  =================================================
byte/short/int/long             int8/int16/int32/int64
float/double                    float32/float64
char                            uint16 (UTF-16 code unit)
boolean                         bool
String                          string (UTF-8)
UUID                            string (canonical ``xxxxxxxx-xxxx-...``)
Date                            int64, milliseconds since the Unix epoch (UTC)
Timestamp                       int64, nanoseconds since the Unix epoch (UTC)
Time                            int64, milliseconds since midnight
BigDecimal                      float64 (``decimal_as="string"``: exact text)
enum                            int32 ordinal
primitive arrays                ragged ``[None]`` of the element dtype, or dense
                                when the shape is known (``byte[]`` -> uint8)
nested object                   nested dict
==============================  =================================================

Nulls: a null becomes the field's default (0, empty string, empty array); with
``null_masks=True`` each nullable leaf ``x`` also yields ``x_present`` (bool).

Other clients: ``java.sql.Date`` (Ignite's SQL engine stores every ``DATE`` so),
``java.util.Date``, ``java.sql.Time`` and ``java.sql.Timestamp`` that arrive
Java-serialized (type -2, :mod:`~tensorflow_ignite.protocol.javatime`) read as
Date / Time / Timestamp; so do the ``java.time`` fields of a Java client's POJOs
(``LocalDate`` as a Date at its UTC midnight, ``LocalDateTime`` read as UTC and
``Instant`` as Timestamps, ``LocalTime`` as a Time when it has whole
milliseconds).  A row whose value has another type than its field
converts where nothing is lost (``protocol.columns.WIDENING``: long <- int,
short, byte; int <- short, byte; double <- float, int, short, byte; float <-
short, byte; timestamp <- date); anything else -- and a timestamp beyond the
int64 nanoseconds, 1677-09-21..2262-04-11 -- raises a ``SchemaError`` naming
the cache, the field, the row's key and both types.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import SchemaError
from ..protocol import columns as C
from ..protocol.codes import TypeCode as T
from ..protocol.hashing import field_id as _field_id
from ..protocol.hashing import type_id as _type_id_of
from ..protocol.types import JAVA_CLASS_TYPE_CODES, TF_ARRAY_DTYPES, TF_DTYPES
from ..protocol.values import BinaryObject, BinaryType, EnumValue, OptimizedObject
from .tensor_schema import TensorSchemaRecord

if TYPE_CHECKING:
    from ..client import IgniteClient

__all__ = ["FieldSchema", "DatasetSchema", "resolve_schema", "apply_shapes", "uniform_array_lengths"]

log = logging.getLogger(__name__)

_DEFAULTS: dict[str, Any] = {"string": b""}


@dataclass(frozen=True)
class FieldSchema:
    """One node of the element structure.

    ``fields`` is set for objects (nested dicts); leaves have a ``dtype`` (TF
    dtype name) and a per-element ``shape`` (``()`` scalar, ``(None,)`` ragged,
    ``(28, 28)`` dense).  ``as_dtype`` reinterprets decoded numbers (for example
    a Java ``byte[]`` restored as ``uint8``).
    """

    name: str
    type_code: int
    dtype: str = ""
    shape: tuple[int | None, ...] = ()
    fields: tuple["FieldSchema", ...] = ()
    nullable: bool = True
    type_name: str | None = None
    #: "column" (decoded page-at-once), "list" (per-row: typed/object arrays,
    #: collections -> ragged) or "map" (per-row -> {"keys": ragged, "values": ragged}).
    kind: str = "column"

    @property
    def is_object(self) -> bool:
        return self.type_code == T.OBJ or self.kind == "map"

    @property
    def per_row(self) -> bool:
        return self.kind in ("list", "map", "repr")

    @property
    def is_ragged(self) -> bool:
        return None in self.shape

    def leaf_count(self) -> int:
        return sum(f.leaf_count() for f in self.fields) if self.is_object else 1


@dataclass(frozen=True)
class DatasetSchema:
    """Key and value schemas of a cache (or the columns of an SQL query)."""

    key: FieldSchema | None
    value: FieldSchema | None
    null_masks: bool = False
    decimal_as: str = "float64"
    columns: tuple[FieldSchema, ...] = field(default_factory=tuple)  # SQL only

    # ------------------------------------------------------------ page plans
    def page_plan(self) -> C.PagePlan:
        if self.columns:
            return C.PagePlan.sql([_plan(c) for c in self.columns])
        return C.PagePlan.scan(_plan(self.key) if self.key else None, _plan(self.value) if self.value else None)

    def per_row_leaves(self) -> list[tuple[str, FieldSchema]]:
        """``(path, schema)`` of every leaf decoded row by row (empty for most caches)."""
        out: list[tuple[str, FieldSchema]] = []

        def walk(f: FieldSchema, path: str) -> None:
            if f.per_row:
                out.append((path, f))
            elif f.is_object:
                for x in f.fields:
                    walk(x, f"{path}.{x.name}")

        for r in self.roots():
            walk(r, r.name)
        return out

    def leaves(self) -> list[tuple[str, FieldSchema]]:
        """``(path, schema)`` of every leaf, paths as the decoded columns name them (``"val.address.zip"``)."""
        out: list[tuple[str, FieldSchema]] = []

        def walk(f: FieldSchema, path: str) -> None:
            if f.is_object:
                for x in f.fields:
                    walk(x, f"{path}.{x.name}")
            else:
                out.append((path, f))

        for r in self.roots():
            walk(r, r.name)
        return out

    def roots(self) -> tuple[FieldSchema, ...]:
        if self.columns:
            return self.columns
        return tuple(r for r in (self.key, self.value) if r is not None)

    # -------------------------------------------------------------- TF specs
    def element_spec(self, batched: bool = False) -> dict[str, Any]:
        """Nested ``tf.TypeSpec`` structure of one element (or of a batch)."""
        out: dict[str, Any] = {}
        for r in self.roots():
            out[r.name] = _spec(r, batched, self.null_masks)
            if self.null_masks and r.nullable and not r.is_object:
                out[f"{r.name}_present"] = _mask_spec(batched)
        return out

    def to_batch(self, columns: Mapping[str, C.Column], n: int) -> dict[str, Any]:
        """Turn decoded page columns into the batched element structure."""
        out: dict[str, Any] = {}
        for r in self.roots():
            out.update(_assemble(r, r.name, columns, n, self.null_masks))
        return out


def _plan(f: FieldSchema) -> C.FieldPlan | None:
    if f.per_row:
        return None  # decoded row by row (see rows_to_columns)
    if f.is_object:
        return C.obj(
            f.name,
            *(p for p in (_plan(x) for x in f.fields) if p is not None),
            type_id=_type_id_of(f.type_name) if f.type_name else None,
            type_name=f.type_name,
        )
    if f.type_code in TF_ARRAY_DTYPES:
        fixed = None
        if f.shape and None not in f.shape:
            fixed = int(np.prod(f.shape))
        return C.scalar(f.name, f.type_code, fixed_length=fixed, dtype=f.dtype if f.dtype != "string" else None)
    return C.scalar(f.name, f.type_code)


def _spec(f: FieldSchema, batched: bool, masks: bool) -> Any:
    import tensorflow as tf

    if f.kind == "map":
        return {x.name: _spec(x, batched, False) for x in f.fields}
    if f.is_object:
        d: dict[str, Any] = {}
        for x in f.fields:
            d[x.name] = _spec(x, batched, masks)
            if masks and x.nullable and (not x.is_object or x.kind == "map"):
                d[f"{x.name}_present"] = _mask_spec(batched)
        return d
    shape = ((None,) if batched else ()) + tuple(f.shape)
    dtype = tf.dtypes.as_dtype(f.dtype)
    if f.is_ragged:
        return (
            tf.RaggedTensorSpec(shape=shape, dtype=dtype, ragged_rank=1, row_splits_dtype=tf.int64)
            if batched
            else tf.TensorSpec(shape, dtype)
        )
    return tf.TensorSpec(shape, dtype)


def _mask_spec(batched: bool) -> Any:
    import tensorflow as tf

    return tf.TensorSpec((None,) if batched else (), tf.bool)


def _assemble(f: FieldSchema, path: str, columns: Mapping[str, C.Column], n: int, masks: bool) -> dict[str, Any]:
    if f.kind == "map":
        inner = {}
        for x in f.fields:
            inner.update(_assemble(x, f"{path}.{x.name}", columns, n, False))
        out_map: dict[str, Any] = {f.name: inner}
        if masks and f.nullable:
            out_map[f"{f.name}_present"] = columns[f"{path}.keys"].mask
        return out_map
    if f.is_object:
        inner: dict[str, Any] = {}
        for x in f.fields:
            inner.update(_assemble(x, f"{path}.{x.name}", columns, n, masks))
        return {f.name: inner}
    col = columns[path]
    values = col.values
    out: dict[str, Any] = {}
    if f.is_ragged:
        import tensorflow as tf

        splits = col.row_splits if col.row_splits is not None else np.zeros(n + 1, np.int64)
        out[f.name] = tf.RaggedTensor.from_row_splits(values, splits.astype(np.int64), validate=False)
    else:
        if f.shape and values.ndim == 2 and len(f.shape) > 1:
            values = values.reshape((values.shape[0], *f.shape))
        out[f.name] = values
    if masks and f.nullable:
        out[f"{f.name}_present"] = col.mask if col.mask is not None else np.ones(n, bool)
    return out


# ------------------------------------------------------------ dense arrays
def _field_name(path: str) -> str:
    """The name ``shapes=`` uses for a column path: relative to the value (``"val.a.b"`` -> ``"a.b"``)."""
    return path.split(".", 1)[1] if "." in path else path


def _is_primitive_array(f: FieldSchema) -> bool:
    return f.kind == "column" and f.type_code in TF_ARRAY_DTYPES and f.dtype != "string"


def apply_shapes(
    schema: DatasetSchema, shapes: Mapping[str, Sequence[int]] | None, *, cache_name: str
) -> DatasetSchema:
    """``schema`` with the primitive-array fields named in ``shapes`` read as dense tensors of those shapes.

    Names are the dataset's field names: a value field (``"pixels"``), a field
    of a nested object by its dotted path (``"image.pixels"``), or ``"val"``
    for a value that is itself an array.  A shape is per row (``[64]``,
    ``[8, 8]``: a row's array holds their product of elements, row-major).
    Raises :class:`~tensorflow_ignite.errors.ConfigurationError` for a name
    that is not a primitive-array field of the schema or a shape that is not
    positive integers.
    """
    from ..errors import ConfigurationError

    if not shapes:
        return schema
    leaves = {_field_name(p) if p.startswith("val.") else p: (p, f) for p, f in schema.leaves()}
    arrays = sorted(n for n, (_, f) in leaves.items() if _is_primitive_array(f))
    wanted: dict[str, tuple[int, ...]] = {}
    for name, shape in shapes.items():
        hit = leaves.get(name)
        if hit is None or not _is_primitive_array(hit[1]):
            what = (
                "the dataset has no such field"
                if hit is None
                else f"field {name!r} is {hit[1].dtype or 'an object'}{list(hit[1].shape)}, not a primitive array"
            )
            raise ConfigurationError(
                f"IgniteDataset over cache {cache_name!r}: shapes= names {name!r}, but {what}; "
                f"shapes= takes primitive-array fields (byte[], short[], int[], long[], float[], double[], "
                f"boolean[], char[]), by their dotted names: {arrays or 'this cache has none'}"
            )
        try:
            dims = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)
        except (TypeError, ValueError):
            dims = ()
        if not dims or any(d <= 0 for d in dims):
            raise ConfigurationError(
                f"IgniteDataset over cache {cache_name!r}: shapes[{name!r}] is {shape!r}; a per-row shape is a "
                "list of positive integers, e.g. [64] or [8, 8]"
            )
        wanted[hit[0]] = dims

    def rebuild(f: FieldSchema, path: str) -> FieldSchema:
        if f.is_object:
            return replace(f, fields=tuple(rebuild(x, f"{path}.{x.name}") for x in f.fields))
        return replace(f, shape=wanted[path]) if path in wanted else f

    return replace(
        schema,
        key=rebuild(schema.key, schema.key.name) if schema.key else None,
        value=rebuild(schema.value, schema.value.name) if schema.value else None,
    )


def uniform_array_lengths(schema: DatasetSchema, samples: Sequence[tuple[Any, Any]]) -> dict[str, int]:
    """The ragged primitive-array value fields whose every non-null sampled array had one length.

    ``{name: length}`` with the names ``shapes=`` takes; fields with no
    non-null sample, or of one length only because every sample is empty, are
    left out.
    """
    out: dict[str, int] = {}
    values = [v for _, v in samples]
    for path, f in schema.leaves():
        if not path.startswith("val") or not _is_primitive_array(f) or not f.is_ragged:
            continue
        parts = path.split(".")[1:]
        lengths = set()
        for v in values:
            cur: Any = v
            for p in parts:
                cur = cur.get(p) if isinstance(cur, BinaryObject) else None
                if cur is None:
                    break
            if cur is not None:
                try:
                    lengths.add(len(cur))
                except TypeError:
                    lengths = set()
                    break
        if len(lengths) == 1 and (k := lengths.pop()) > 0:
            out[_field_name(path) if parts else "val"] = k
    return out


# ---------------------------------------------------------------- resolution
def leaf_from_type_code(
    name: str, code: int, *, shape: tuple[int, ...] | None = None, dtype: str | None = None, decimal_as: str = "float64"
) -> FieldSchema:
    """A leaf schema for an Ignite type code (``SchemaError`` when unsupported as a column)."""
    if code in TF_DTYPES:
        tf_dtype = TF_DTYPES[code]
        if code == T.DECIMAL and decimal_as == "string":
            tf_dtype = "string"
        return FieldSchema(name, code, dtype or tf_dtype, ())
    if code in TF_ARRAY_DTYPES:
        elem = dtype or TF_ARRAY_DTYPES[code]
        return FieldSchema(name, code, elem, tuple(shape) if shape else (None,))
    raise SchemaError(
        f"field {name!r} has Ignite type {_type_label(code)}, which IgniteDataset cannot turn into a tensor "
        "column yet; select other fields with fields=[...] or read it with IgniteClient.cache(...).scan()"
    )


def _type_label(code: int) -> str:
    try:
        return f"{T(code).name} ({code})"
    except ValueError:
        return str(code)


def object_schema(
    name: str,
    binary_type: BinaryType,
    *,
    samples: Sequence[BinaryObject] = (),
    record: TensorSchemaRecord | None = None,
    fields: list[str] | None = None,
    decimal_as: str = "float64",
    client: "IgniteClient | None" = None,
    declared: Mapping[str, int] | None = None,
) -> FieldSchema:
    """Schema of an object from its binary metadata.

    Ignite's metadata records a field as "object" both for nested objects (without
    naming their type) and for fields first written as null; ``declared`` (field
    types of the cache's SQL query entity) settles those first -- an SQL ``DATE``
    column is "object" in the metadata, its values Java-serialized
    ``java.sql.Date`` -- then ``samples`` (entries of the cache): the first
    non-null sampled value decides.
    """
    wanted = list(binary_type.fields) if fields is None else list(fields)
    samples = [s for s in samples if isinstance(s, BinaryObject) and s.type_id == binary_type.type_id]
    out = []
    for fname in wanted:
        meta = binary_type.fields.get(fname)
        if meta is None:
            raise SchemaError(
                f"type {binary_type.type_name!r} has no field {fname!r}; its fields are {sorted(binary_type.fields)}"
            )
        code = int(meta.type_code)
        seen = next((s.get(fname) for s in samples if s.get(fname) is not None), None)
        if code == T.OBJ and declared and declared.get(fname) in TF_DTYPES:
            code = declared[fname]
        elif code == T.OBJ:
            if isinstance(seen, BinaryObject) and client is not None:
                inner_type = client.binary_type(seen.type_id)
                if inner_type is None:
                    raise SchemaError(f"no metadata for the type of {binary_type.type_name}.{fname}")
                inner_samples = [s.get(fname) for s in samples if isinstance(s.get(fname), BinaryObject)]
                out.append(
                    replace(
                        object_schema(fname, inner_type, samples=inner_samples, decimal_as=decimal_as, client=client),
                        type_name=inner_type.type_name,
                    )
                )
                continue
            if isinstance(seen, OptimizedObject):
                raise SchemaError(_java_object_message(f"{binary_type.type_name}.{fname}", seen))
            if seen is not None:
                code = _infer_code(seen)
            else:
                log.warning(
                    "field %s.%s: Ignite's metadata says only 'object' and every sampled entry is null; "
                    "it is read as a string (repr of each value). Pass schema=... or fields=[...] to change that",
                    binary_type.type_name,
                    fname,
                )
                out.append(FieldSchema(fname, T.OBJ_ARR, "string", (), kind="repr"))
                continue
        if code in _LIST_CODES or code == T.MAP:
            out.append(per_row_leaf(fname, code, [s.get(fname) for s in samples], decimal_as))
            continue
        if code in (T.ENUM, T.BINARY_ENUM) or isinstance(seen, EnumValue):
            code = T.ENUM
        shape = dtype = None
        if record is not None:
            tf_field = record.field(fname)
            if tf_field is not None:
                shape = tf_field.shape or None
                dtype = tf_field.dtype if code in TF_ARRAY_DTYPES or code in TF_DTYPES else None
                if dtype in ("object", "str", "bytes") or (dtype and dtype.startswith(("<U", "|S", "S", "U"))):
                    dtype = None
        out.append(leaf_from_type_code(fname, code, shape=shape, dtype=_tf_dtype_name(dtype), decimal_as=decimal_as))
    return FieldSchema(name, T.OBJ, fields=tuple(out), type_name=binary_type.type_name)


def _tf_dtype_name(np_name: str | None) -> str | None:
    if np_name is None:
        return None
    if np_name in ("float16",):
        return "float32"  # stored as Java float
    if np_name.startswith("datetime64"):
        return "int64"
    return np.dtype(np_name).name


def key_schema_for(code: int) -> FieldSchema:
    return replace(leaf_from_type_code("key", code), nullable=False)


def resolve_schema(
    client: "IgniteClient",
    cache_name: str,
    *,
    value_type: str | None = None,
    key_type: str | int | None = None,
    fields: list[str] | None = None,
    null_masks: bool = False,
    decimal_as: str = "float64",
    record: TensorSchemaRecord | None = None,
    samples: Sequence[tuple[Any, Any]] = (),
    query_entity: Any = None,
) -> DatasetSchema:
    """Decide key and value schemas from what is known about the cache (see module docstring)."""
    key: FieldSchema | None = None
    value: FieldSchema | None = None
    sample_key = samples[0][0] if samples else None
    sample_val = samples[0][1] if samples else None
    values = [v for _, v in samples]

    # Key.
    if key_type is not None:
        key = key_schema_for(JAVA_CLASS_TYPE_CODES[key_type] if isinstance(key_type, str) else int(key_type))
    elif record is not None:
        key = replace(leaf_from_type_code("key", record.key.type_code or T.LONG), nullable=False)
    elif query_entity is not None and query_entity.key_type in JAVA_CLASS_TYPE_CODES:
        key = key_schema_for(JAVA_CLASS_TYPE_CODES[query_entity.key_type])
    elif sample_key is not None:
        key = replace(_schema_of_value("key", sample_key, client, decimal_as), nullable=False)

    # Value.
    type_name = (
        value_type
        or (record.type_name if record is not None else None)
        or (query_entity.value_type if query_entity is not None else None)
    )
    if type_name is not None and type_name in JAVA_CLASS_TYPE_CODES:
        value = leaf_from_type_code("val", JAVA_CLASS_TYPE_CODES[type_name], decimal_as=decimal_as)
    elif type_name is not None:
        bt = client.binary_type(type_name)
        if bt is None and query_entity is not None:
            bt = _type_from_query_entity(query_entity)
        if bt is None:
            raise SchemaError(
                f"cache {cache_name!r}: value type {type_name!r} is not registered on the cluster "
                "(no binary metadata); write data first or pass schema=..."
            )
        declared = None
        if query_entity is not None and query_entity.value_type == type_name:
            declared = {
                qf.name: JAVA_CLASS_TYPE_CODES[qf.type_name]
                for qf in query_entity.fields
                if not qf.is_key and qf.type_name in JAVA_CLASS_TYPE_CODES
            }
        value = object_schema(
            "val",
            bt,
            samples=values,
            record=record,
            fields=fields,
            decimal_as=decimal_as,
            client=client,
            declared=declared,
        )
    elif sample_val is not None:
        value = _schema_of_value("val", sample_val, client, decimal_as, fields=fields, samples=values)

    if key is None and value is not None and not samples:
        # A typed but empty cache: nothing tells the key type; the tensorflow-ignite
        # writer and most loaders use long keys (pass key_type= otherwise).
        key = key_schema_for(T.LONG)
    if key is None or value is None:
        raise SchemaError(
            f"cache {cache_name!r} is empty and declares no types: IgniteDataset cannot know what it holds. "
            "Pass value_type='TypeName' (a registered binary type) or schema=..., or write the cache with "
            "tensorflow_ignite.write"
        )
    return DatasetSchema(key, value, null_masks=null_masks, decimal_as=decimal_as)


def _schema_of_value(
    name: str,
    value: Any,
    client: "IgniteClient",
    decimal_as: str,
    fields: list[str] | None = None,
    samples: Sequence[Any] = (),
) -> FieldSchema:
    if isinstance(value, BinaryObject):
        bt = client.binary_type(value.type_id)
        if bt is None:
            raise SchemaError(f"no binary metadata for type id {value.type_id} of {name!r}")
        return object_schema(name, bt, samples=samples or [value], fields=fields, decimal_as=decimal_as, client=client)
    if isinstance(value, OptimizedObject):
        raise SchemaError(_java_object_message(name, value))
    code = _infer_code(value)
    return leaf_from_type_code(name, code, decimal_as=decimal_as)


def _java_object_message(where: str, value: OptimizedObject) -> str:
    from ..protocol.javatime import DECODED_JAVA_CLASSES, describe_java_object

    return (
        f"{where} holds a Java-serialized {describe_java_object(value.data)}: IgniteDataset decodes only "
        f"{DECODED_JAVA_CLASSES} from Java serialization; select other fields with fields=[...] or read it "
        "with IgniteClient.cache(...).scan()"
    )


def _infer_code(value: Any) -> int:
    from ..protocol.binary import BinaryEncoder

    return int(BinaryEncoder.infer_type_code(value))


def _type_from_query_entity(entity: Any) -> BinaryType | None:
    from ..protocol.hashing import type_id
    from ..protocol.values import BinaryField

    fields = {}
    for qf in entity.fields:
        if qf.is_key:
            continue
        code = JAVA_CLASS_TYPE_CODES.get(qf.type_name)
        if code is None:
            continue
        fields[qf.name] = BinaryField(qf.name, code, _field_id(qf.name))
    if not fields:
        return None
    return BinaryType(type_id(entity.value_type), entity.value_type, fields)


# ------------------------------------------------------- per-row (slow) leaves
_LIST_CODES = {
    T.STRING_ARR,
    T.UUID_ARR,
    T.DATE_ARR,
    T.TIMESTAMP_ARR,
    T.TIME_ARR,
    T.DECIMAL_ARR,
    T.OBJ_ARR,
    T.ENUM_ARR,
    T.COLLECTION,
}
_LIST_ELEMENT_DTYPE = {
    T.STRING_ARR: "string",
    T.UUID_ARR: "string",
    T.DATE_ARR: "int64",
    T.TIMESTAMP_ARR: "int64",
    T.TIME_ARR: "int64",
    T.DECIMAL_ARR: "float64",
    T.ENUM_ARR: "int32",
}


def _element_dtype(values: Sequence[Any], decimal_as: str) -> str:
    """TF dtype for the elements of sampled lists: one kind of element, or string for a mix."""
    import decimal as _decimal
    import uuid as _uuid_mod

    from ..protocol.values import Date, Time, Timestamp

    kinds = set()
    for v in values:
        if v is None:
            continue
        if isinstance(v, bool):
            kinds.add("bool")
        elif isinstance(v, int):
            kinds.add("int64")
        elif isinstance(v, float):
            kinds.add("float64")
        elif isinstance(v, (Date, Time, Timestamp)):
            kinds.add("int64")
        elif isinstance(v, EnumValue):
            kinds.add("int32")
        elif isinstance(v, _decimal.Decimal):
            kinds.add("string" if decimal_as == "string" else "float64")
        elif isinstance(v, (str, bytes, _uuid_mod.UUID)):
            kinds.add("string")
        else:
            kinds.add("string")
    if len(kinds) == 1:
        return kinds.pop()
    if kinds <= {"int64", "float64"}:
        return "float64"
    return "string"


def per_row_leaf(name: str, code: int, samples: Sequence[Any], decimal_as: str = "float64") -> FieldSchema:
    """Schema of a typed/object array, collection (ragged) or map (keys/values ragged)."""
    if code == T.MAP:
        keys = [k for m in samples if isinstance(m, Mapping) for k in m.keys()]
        vals = [v for m in samples if isinstance(m, Mapping) for v in m.values()]
        return FieldSchema(
            name,
            T.MAP,
            kind="map",
            fields=(
                FieldSchema("keys", T.MAP, _element_dtype(keys, decimal_as), (None,), kind="list"),
                FieldSchema("values", T.MAP, _element_dtype(vals, decimal_as), (None,), kind="list"),
            ),
        )
    dtype = _LIST_ELEMENT_DTYPE.get(code)
    if code == T.DECIMAL_ARR and decimal_as == "string":
        dtype = "string"
    if dtype is None:
        dtype = _element_dtype([x for v in samples if v is not None for x in v], decimal_as)
    return FieldSchema(name, code, dtype, (None,), kind="list")


def _integer_of(v: Any) -> int | None:
    """The integer a Timestamp, Date, Time or enum element stands for in a column
    (epoch nanoseconds, epoch milliseconds, milliseconds, ordinal); None for anything else."""
    from ..protocol.values import Date, Time, Timestamp

    if isinstance(v, Timestamp):
        return v.epoch_ns
    if isinstance(v, Date):
        return v.epoch_ms
    if isinstance(v, Time):
        return v.millis
    if isinstance(v, EnumValue):
        return v.ordinal
    return None


def _to_element(v: Any, dtype: str) -> Any:
    import decimal as _decimal

    if v is None:
        return b"" if dtype == "string" else 0
    if dtype == "string":
        return _as_text(v)
    if isinstance(v, _decimal.Decimal):
        return float(v)
    n = _integer_of(v)
    return v if n is None else n


def _as_text(v: Any) -> bytes:
    """Text of one element of a mixed list: numbers and strings as themselves,
    dates and times as their integer encodings, anything else as its repr."""
    import decimal as _decimal
    import uuid as _uuid_mod

    if isinstance(v, bytes):
        return v
    if isinstance(v, str):
        return v.encode("utf-8", "surrogatepass")
    if isinstance(v, bool):
        return b"true" if v else b"false"
    if isinstance(v, int):
        return str(int(v)).encode()
    if isinstance(v, float):
        return repr(float(v)).encode()
    if isinstance(v, (_decimal.Decimal, _uuid_mod.UUID)):
        return str(v).encode()
    n = _integer_of(v)
    return repr(v).encode() if n is None else str(n).encode()


def rows_to_columns(leaves: Sequence[tuple[str, FieldSchema]], rows: Sequence[tuple[Any, Any]]) -> dict[str, C.Column]:
    """Columns for the per-row leaves from decoded ``(key, value)`` rows."""
    out: dict[str, C.Column] = {}
    n = len(rows)
    for path, f in leaves:
        parts = path.split(".")
        values = []
        for k, v in rows:
            cur: Any = k if parts[0] == "key" else v
            for p in parts[1:]:
                cur = cur.get(p) if isinstance(cur, BinaryObject) else None
                if cur is None:
                    break
            values.append(cur)
        if f.kind == "repr":
            mask = np.array([x is not None for x in values], bool)
            out[path] = C.Column(np.array([b"" if x is None else repr(x).encode() for x in values], object), mask)
            continue
        items: list[tuple[str, list[Any], np.ndarray]] = []
        if f.kind == "map":
            mask = np.array([isinstance(x, Mapping) for x in values], bool)
            keys = [list(x.keys()) if isinstance(x, Mapping) else [] for x in values]
            vals = [list(x.values()) if isinstance(x, Mapping) else [] for x in values]
            items = [(f"{path}.keys", keys, mask), (f"{path}.values", vals, mask)]
            dtypes = {f"{path}.keys": f.fields[0].dtype, f"{path}.values": f.fields[1].dtype}
        else:
            mask = np.array([x is not None for x in values], bool)
            items = [(path, [list(x) if x is not None else [] for x in values], mask)]
            dtypes = {path: f.dtype}
        for p, lists, m in items:
            dt = dtypes[p]
            splits = np.zeros(n + 1, np.int64)
            np.cumsum([len(x) for x in lists], out=splits[1:])
            flat = [_to_element(x, dt) for lst in lists for x in lst]
            arr = np.array(flat, dtype=object if dt == "string" else dt)
            if dt == "string" and not len(flat):
                arr = np.array([], dtype=object)
            out[p] = C.Column(arr, m, splits)
    return out
