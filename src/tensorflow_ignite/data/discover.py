"""What a cache or an SQL query holds, found before a dataset is built: :func:`cache_schema` (the
schema ``IgniteDataset`` reads a cache with), :func:`sql_schema` (the columns of a query's result)
and the ``shapes=`` hint :func:`suggest_shapes` logs for ragged array fields."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..client import IgniteClient
from ..errors import SchemaError
from ..protocol.codes import TypeCode
from ..protocol.responses import decode_scan_rows
from .schema import DatasetSchema, FieldSchema, apply_shapes, leaf_from_type_code, resolve_schema, uniform_array_lengths
from .tensor_schema import load_schema

__all__ = ["cache_schema", "sql_schema", "suggest_shapes"]

#: The dataset's logger: the hint is about the IgniteDataset being built.
log = logging.getLogger("tensorflow_ignite.data.dataset")


def cache_schema(
    client: IgniteClient,
    cache_name: str,
    *,
    value_type: str | None = None,
    key_type: str | int | None = None,
    fields: Sequence[str] | None = None,
    null_masks: bool = False,
    decimal_as: str = "float64",
    shapes: Mapping[str, Sequence[int]] | None = None,
) -> DatasetSchema:
    """The schema ``IgniteDataset(cache_name, ...)`` reads with these options, without building a dataset.

    From the tensor schema recorded by ``write``, else the cache's binary type or
    query entity; entries are sampled only where metadata cannot tell (untyped
    caches, fields Ignite records as plain "object": nested objects, first-null
    fields).  ``shapes`` makes primitive-array fields dense (as
    ``IgniteDataset(shapes=...)``).  ``schema.element_spec(batched=True)``
    gives the tensor specs.
    """
    record = load_schema(client, cache_name)
    entity = None
    if record is None:
        config = client.cache(cache_name).configuration()
        entity = config.query_entities[0] if config.query_entities else None
    type_name = value_type or (record.type_name if record else None) or (entity.value_type if entity else None)
    samples: list[tuple[Any, Any]] = []
    if type_name is None or _has_object_fields(client, type_name):
        samples = _sample_entries(client, cache_name, 32)
    resolved = resolve_schema(
        client,
        cache_name,
        value_type=value_type,
        key_type=key_type,
        fields=list(fields) if fields else None,
        null_masks=null_masks,
        decimal_as=decimal_as,
        record=record,
        samples=samples,
        query_entity=entity,
    )
    return apply_shapes(resolved, shapes, cache_name=cache_name)


#: Rows of the first page sampled for the ``shapes=`` hint (:func:`suggest_shapes`).
_HINT_SAMPLE_ROWS = 128


def suggest_shapes(client: IgniteClient, cache_name: str, schema: DatasetSchema) -> None:
    """Log the ``shapes=`` that reads the ragged array fields dense, when the first page says one length fits.

    Only for schemas with ragged primitive-array value fields (one small scan
    page then; nothing for other caches).
    """
    if not any(f.is_ragged and f.kind == "column" for _, f in schema.leaves()):
        return
    try:
        fixed = uniform_array_lengths(schema, _sample_entries(client, cache_name, _HINT_SAMPLE_ROWS))
    except Exception as err:  # noqa: BLE001 - a hint must never fail a read
        log.debug("IgniteDataset over cache %r: no shapes= hint (%s)", cache_name, err)
        return
    if fixed:
        arg = "{" + ", ".join(f"{n!r}: [{k}]" for n, k in fixed.items()) + "}"
        log.warning(
            "IgniteDataset over cache %r: %s had one length in every row of the first page; pass shapes=%s to "
            "read %s as dense [batch, n] tensors on the native source (serializable, checkpointable, tf.data "
            "service) instead of ragged ones through a process-local from_generator",
            cache_name,
            ", ".join(f"field {n!r} ({k} elements)" for n, k in fixed.items()),
            arg,
            "it" if len(fixed) == 1 else "them",
        )


def _sample_entries(client: IgniteClient, cache_name: str, n: int) -> list[tuple[Any, Any]]:
    out: list[tuple[Any, Any]] = []
    for page in client.cache(cache_name).scan_pages(page_size=n):
        out.extend(decode_scan_rows(page, client.decoder()))
        break  # closing the generator frees the server cursor
    return out


def _has_object_fields(client: IgniteClient, type_name: str) -> bool:
    bt = client.binary_type(type_name)
    return bt is not None and any(int(f.type_code) == TypeCode.OBJ for f in bt.fields.values())


def sql_schema(
    client: IgniteClient,
    query: str,
    args: Sequence[Any],
    sql_kwargs: Mapping[str, Any],
    column_types: Mapping[str, int],
    sample_rows: int = 64,
) -> DatasetSchema:
    """The columns of ``query``'s result, typed from ``column_types`` or else from the first non-NULL
    value in up to ``sample_rows`` sampled rows (:class:`~tensorflow_ignite.errors.SchemaError` for a
    column NULL in all of them)."""
    cursor = client.sql(query, args, **{**sql_kwargs, "page_size": sample_rows})
    sample: list[list[Any]] = []
    for row in cursor:
        sample.append(row)
        if len(sample) >= sample_rows:
            break
    names = cursor.column_names or ()
    cols: list[FieldSchema] = []
    for i, name in enumerate(names):
        seen = next((r[i] for r in sample if r[i] is not None), None)
        if name in column_types:
            cols.append(replace(leaf_from_type_code(name, int(column_types[name])), name=name))
        elif seen is not None:
            from ..protocol.binary import BinaryEncoder

            cols.append(replace(leaf_from_type_code(name, int(BinaryEncoder.infer_type_code(seen))), name=name))
        else:
            raise SchemaError(
                f"cannot tell the type of SQL column {name!r}: it is NULL in every sampled row (or there "
                f"are none); pass column_types={{'{name}': TypeCode.X}}"
            )
    return DatasetSchema(None, None, columns=tuple(cols))
