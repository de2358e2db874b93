"""``IgniteDataset`` and ``IgniteDataset.from_sql`` on an Ignite 3 cluster: the same calls, mapped onto
:mod:`tensorflow_ignite.ignite3`.

:class:`~.dataset.IgniteDataset` asks :func:`tensorflow_ignite.generation.generation_at` which
generation its address speaks (once per address and process); on Ignite 3 it reads the table named
like the cache through :func:`tensorflow_ignite.ignite3.from_table` (partition-aware, checkpointable,
exactly once) and gives its rows the element structure of a cache read: ``{'key': <the primary key
column> (a dict of them for a composite key), 'val': {<every other column>}}``.  A table written by
:func:`tensorflow_ignite.write` has a tensor schema record (:data:`SCHEMA_TABLE`, the Ignite 3 form
of :data:`~.tensor_schema.SCHEMA_CACHE`): its columns come back under the names, dtypes and per-row
shapes that were written (a per-row array is a VARBINARY column of its raw bytes), so the same
program reads the same tensors from either generation.  ``from_sql`` is
:func:`tensorflow_ignite.ignite3.from_sql`.

What has no Ignite 3 form (binary types, node-local scans, continuous queries) raises
:class:`~tensorflow_ignite.errors.UnsupportedOperationError` naming the option.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import SchemaError, UnsupportedOperationError
from ..generation import ignite3_of
from .reader import ReadStats
from .tensor_schema import TensorField, TensorSchemaRecord

if TYPE_CHECKING:
    import tensorflow as tf

    from ..client.options import ConnectionOptions
    from ..ignite3.client import Ignite3Client
    from ..ignite3.table_dataset import Ignite3TableDataset

__all__ = [
    "refuse_follow",
    "SCHEMA_TABLE",
    "load_record",
    "read_stats",
    "refuse",
    "save_record",
    "sql_dataset",
    "sql_name",
    "table_dataset",
]

#: The Ignite 3 table of tensor schema records: one row per table ``write`` filled (NAME, RECORD JSON).
SCHEMA_TABLE = "__TENSORFLOW_IGNITE_SCHEMAS"


def sql_name(name: str) -> str:
    """``name`` as Ignite 3 reports it: a plain identifier upper-cased (as SQL does unquoted), else as written."""
    plain = name.replace("_", "").replace(".", "").isalnum() and not name[:1].isdigit()
    return name.upper() if plain else name


def refuse(what: str, given: Mapping[str, Any], defaults: Mapping[str, tuple[Any, str]]) -> None:
    """Raise :class:`UnsupportedOperationError` for the first option of ``given`` that is not its default.

    ``defaults``: option -> (its default, why Ignite 3 has no such thing).
    """
    for name, (default, why) in defaults.items():
        value = given.get(name, default)
        if value is not default and value != default:
            raise UnsupportedOperationError(
                f"{what}: {name}={value!r} has no Ignite 3 form ({why}); leave it out for an Ignite 3 cluster"
            )


@contextmanager
def ignite3_call(
    what: str,
    given: Mapping[str, Any],
    defaults: Mapping[str, tuple[Any, str]],
    options: "ConnectionOptions | None",
    client: "Ignite3Client | None",
) -> "Iterator[Ignite3Client]":
    """The client the Ignite 3 form of a call (``what``) runs with: ``client``, or one of its own for
    ``options``, closed when the call ends; first the call's keywords without an Ignite 3 form are
    refused (:func:`refuse`)."""
    refuse(what, given, defaults)
    if client is not None:
        yield ignite3_of(client)  # an Ignite3Client, or an IgniteClient of an Ignite 3 node: its Ignite3Client
        return
    assert options is not None
    with _client(options) as own:
        yield own


def _client(options: "ConnectionOptions") -> "Ignite3Client":
    from ..ignite3.client import Ignite3Client

    return Ignite3Client(options)


def save_record(client: "Ignite3Client", table: str, record: TensorSchemaRecord) -> None:
    """Record ``record`` for ``table`` in :data:`SCHEMA_TABLE` (made when missing; an older record replaced)."""
    client.execute(
        f'CREATE TABLE IF NOT EXISTS "{SCHEMA_TABLE}" ("NAME" VARCHAR PRIMARY KEY, "RECORD" VARCHAR(1000000))'
    )
    client.table(SCHEMA_TABLE).kv().put({"NAME": sql_name(table), "RECORD": record.to_json()})


def delete_record(client: "Ignite3Client", table: str) -> None:
    """Forget the record of ``table`` (when it is dropped)."""
    if _has_records(client):
        client.table(SCHEMA_TABLE).kv().remove(sql_name(table))


def _has_records(client: "Ignite3Client") -> bool:
    from ..errors import TableNotFoundError
    from ..ignite3.routes import find_table

    try:
        find_table(client.connection(), SCHEMA_TABLE)
    except TableNotFoundError:
        return False
    return True


def load_record(client: "Ignite3Client", table: str) -> TensorSchemaRecord | None:
    """The record ``write`` kept for ``table``, or None (a table made otherwise)."""
    if not _has_records(client):
        return None
    row = client.table(SCHEMA_TABLE).kv().get(sql_name(table))
    if row is None:
        return None
    return TensorSchemaRecord.from_json(str(row["RECORD"]), cache_name=table)


#: IgniteDataset's options without an Ignite 3 form: name -> (default, why).
_READ_REFUSED: dict[str, tuple[Any, str]] = {
    "local": (False, "an Ignite 3 client reads through the primaries, not one node's local entries; use parts="),
    "value_type": (None, "Ignite 3 tables have columns, not binary types"),
    "key_type": (None, "Ignite 3 tables have columns, not binary types"),
    "schema": (None, "a DatasetSchema describes Ignite 2 binary objects; the table's columns are read"),
    "shapes": (None, "Ignite 3 has no array columns; arrays written by write come back in their written shapes"),
    "num_parallel_reads": (None, "the Ignite 3 read already asks every primary node in parallel"),
    "per_worker": (False, "the launcher does not run on Ignite 3 yet"),
}


def table_dataset(
    cache_name: str,
    options: "ConnectionOptions",
    params: Mapping[str, Any],
    tensors: Mapping[str, Any],
    given: Mapping[str, Any],
) -> tuple["tf.data.Dataset", "Ignite3TableDataset"]:
    """``IgniteDataset(cache_name, ...)`` on Ignite 3: the dataset with the cache read's element structure,
    and the table read under it (its stats).

    ``params``: the dataset's arguments with the ``IGNITE_DATASET_*`` variables applied; ``tensors``:
    those given as tensors; ``given``: every keyword of the call, and ``shuffled`` (the
    :class:`~tensorflow_ignite.client.progress.ShuffledEpochs` of ``shuffle=True``, or None).
    """
    from ..ignite3.dataset import from_table

    what = f"IgniteDataset over {cache_name!r} on an Ignite 3 cluster"
    if tensors:
        raise UnsupportedOperationError(
            f"{what}: {', '.join(tensors)} given as tensors known only when the dataset runs have no Ignite 3 "
            "form; pass Python values"
        )
    refused = {name: given[name] for name in _READ_REFUSED}
    refused["local"] = bool(params["local"])
    if given["num_parallel_reads"] == 1:
        refused["num_parallel_reads"] = None
    refuse(what, refused, _READ_REFUSED)
    client = ignite3_of(given["client"])
    table = sql_name(cache_name)
    own = client if client is not None else _client(options)
    try:
        record = load_record(own, table)
    finally:
        if own is not client:
            own.close()
    columns = _columns(client, options, table, given["fields"]) if given["fields"] else None
    parts = params.get("parts")
    batch_size = given["batch_size"]
    table_ds = from_table(
        table,
        columns,
        parts=[int(params["part"])] if parts is None and params["part"] >= 0 else parts,
        options=options if client is None else None,
        client=client,
        batch_size=batch_size,
        drop_remainder=given["drop_remainder"],
        shuffle=given["shuffled"] is not None,
        seed=given["shuffled"].seed if given["shuffled"] is not None else None,
        page_size=params["page_size"] or 4096,
        null_masks=given["null_masks"],
        decimal_as=given["decimal_as"],
        credentials=given["credentials"],
    )
    keys = [name for name, _ in table_ds._reader.keys]
    columns_now = {c.name for c in table_ds._reader.output} - set(keys)
    if record is not None and not given["fields"] and {sql_name(f.name) for f in record.fields} != columns_now:
        record = None  # the table was made again otherwise since write recorded it: read it as it is
    return table_ds.map(_structure(keys, record, batched=batch_size is not None)), table_ds


def table_rows(cache_name: str, options: "ConnectionOptions", client: Any) -> int:
    """The rows of the table named like ``cache_name`` (``SELECT COUNT(*)``): ``known_cardinality``'s count
    (``client``: the ``Ignite3Client`` the dataset was given, or None: one of its own for ``options``)."""
    from ..ignite3.dataset import count_rows

    own = client if client is not None else _client(options)
    try:
        return count_rows(own, sql_name(cache_name))
    finally:
        if own is not client:
            own.close()


def refuse_follow(cache_name: str, client: Any, host: Any, port: Any, given: Mapping[str, Any]) -> None:
    """:class:`UnsupportedOperationError` when ``IgniteDataset.follow`` is pointed at an Ignite 3 cluster
    (``given``: the keywords of the call)."""
    from ..client import ConnectionOptions
    from ..generation import generation_at

    if client is not None:
        generation, where = getattr(client, "generation", 2), client.options
    elif isinstance(host, str) and isinstance(port, int):
        where = ConnectionOptions.from_env(**ConnectionOptions.settings_in(given), host=host, port=port)
        generation = generation_at(where)
    else:
        return  # tensors: IgniteDataset says what it says of them
    if generation == 3:
        raise UnsupportedOperationError(
            f"IgniteDataset.follow({cache_name!r}): the cluster at {where.endpoints[0]} is Ignite 3, which has "
            "no continuous queries (Ignite 3.1), so a table cannot be followed as it is written; read it with "
            "IgniteDataset (a snapshot of the table) or follow a cache of an Ignite 2 cluster"
        )


def _columns(
    client: "Ignite3Client | None",
    options: "ConnectionOptions",
    table: str,
    fields: Sequence[str],
) -> list[str]:
    """The columns ``fields=`` selects: the key columns and the fields named (as written or as SQL reports them)."""
    from ..ignite3.routes import table_route

    own = client if client is not None else _client(options)
    try:
        route = table_route(own.connection(), table)
    finally:
        if own is not client:
            own.close()
    keys = [c.name for c in sorted((c for c in route.schema.columns if c.is_key), key=lambda c: c.key_index)]
    present = {c.name for c in route.schema.columns}
    out = list(keys)
    for name in fields:
        column = sql_name(name)
        if column not in present:
            raise SchemaError(f"table {table} has no column {name!r}; its columns: {sorted(present)}")
        if column not in out:
            out.append(column)
    return out


def _structure(keys: Sequence[str], record: TensorSchemaRecord | None, *, batched: bool) -> Any:
    """The map from a table row ``{COLUMN: tensor}`` to ``{'key': ..., 'val': {...}}``, with the recorded names,
    dtypes and per-row shapes."""
    import tensorflow as tf

    written: dict[str, TensorField] = {}
    if record is not None:
        written = {sql_name(f.name): f for f in record.fields}
    key_cast = None
    if record is not None and np.dtype(record.key.dtype).kind in "iu":
        key_cast = tf.as_dtype(record.key.dtype)

    def column(name: str, t: Any) -> tuple[str, Any]:
        base, mask = (
            (name[: -len("_present")], True) if name.endswith("_present") and name not in written else (name, False)
        )
        f = written.get(base)
        if f is None:
            return name, t
        if mask:
            return f"{f.name}_present", t
        if f.shape:
            flat = tf.io.decode_raw(t, tf.as_dtype(f.dtype))
            return f.name, tf.reshape(flat, [-1, *f.shape] if batched else list(f.shape))
        kind = np.dtype(f.dtype).kind
        if kind in "biuf" and t.dtype != tf.as_dtype(f.dtype):
            return f.name, tf.cast(t, tf.as_dtype(f.dtype))
        return f.name, t

    def restructure(row: Mapping[str, Any]) -> dict[str, Any]:
        key: Any = row[keys[0]] if len(keys) == 1 else {k: row[k] for k in keys}
        if key_cast is not None and len(keys) == 1 and key.dtype.is_integer:
            key = tf.cast(key, key_cast)
        val = dict(column(name, t) for name, t in row.items() if name not in keys)
        return {"key": key, "val": val}

    return restructure


def read_stats(table_ds: "Ignite3TableDataset", page_rows: int) -> ReadStats:
    """The Ignite 3 read's stats as an Ignite 2 read's :class:`~.reader.ReadStats` (one task: the table)."""
    s = table_ds.stats()
    return ReadStats(
        rows_per_task={0: s.rows},
        scan_mode="nodes" if table_ds._reader.per_node else "partitions",
        failovers=tuple((p, error) for parts, error in s.failovers for p in parts),
        rescans=(),
        page_rows=page_rows,
        pooled_bytes=0,
        resumed_skips=s.skipped,
    )


def sql_dataset(
    query: str, args: Sequence[Any], options: "ConnectionOptions", client: Any, given: Mapping[str, Any]
) -> "tf.data.Dataset":
    """``IgniteDataset.from_sql(query, ...)`` on Ignite 3 (``given``: the keywords of the call):
    :func:`tensorflow_ignite.ignite3.from_sql`."""
    from ..ignite3.dataset import from_sql

    return from_sql(
        query,
        args,
        options=options if client is None else None,
        client=ignite3_of(client),
        batch_size=given["batch_size"],
        drop_remainder=given["drop_remainder"],
        page_size=given["page_size"],
        null_masks=given["null_masks"],
        schema=given["schema"],
    )
