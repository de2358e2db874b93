"""Ignite 3 tables and SQL queries as ``tf.data`` datasets: :func:`from_sql`, :func:`from_table`.

The columns of the result are found before anything runs (SQL_QUERY_META), so
the dataset's element spec is known when it is built: a dict from column name
(as Ignite 3 reports it: unquoted identifiers upper-case) to a scalar tensor of
the column's dtype (:data:`~.protocol.columns.TF_DTYPES`: integers, floats and
booleans as themselves; DECIMAL float64 or, with ``decimal_as="string"``, its
text; DATE int64 milliseconds since 1970-01-01; TIME int64 nanoseconds since
midnight; DATETIME and TIMESTAMP int64 nanoseconds since 1970-01-01; UUID
its text; STRING and BYTE_ARRAY ``tf.string``).  A NULL reads as 0, False or
empty; ``null_masks=True`` adds ``<column>_present`` booleans, as
``IgniteDataset`` does on Ignite 2.

:func:`from_table` reads partition-aware and resumably through the native
source op, as ``IgniteDataset`` does on Ignite 2 (:mod:`.partitioned`).  Each
iterator of :func:`from_sql` runs the query afresh on a connection of its own
(opened when the iteration starts, closed when it ends; or through the
``client`` given) and reads it page by page: each page is decoded into NumPy
columns at once (:mod:`.protocol.columns`) and TensorFlow receives a whole page
per generator call, then ``unbatch`` (rows) or ``rebatch(batch_size)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Unpack

import numpy as np

from ..client.env import env_partitions
from ..client.options import ConnectionKeywords, ConnectionOptions
from ..client.progress import ShuffledEpochs
from ..errors import ConfigurationError, SchemaError, UnsupportedOperationError
from .client import Ignite3Client
from .protocol.columns import SUPPORTED_TYPES, TF_DTYPES
from .protocol.spans import as_objects
from .protocol.sql import ColumnMeta

if TYPE_CHECKING:
    import tensorflow as tf

    from .table_dataset import Ignite3TableDataset

__all__ = ["count_rows", "from_sql", "from_table", "element_dtypes"]

_DEFAULT_PORT = 10800
_DECIMAL_AS = ("float64", "string")


def element_dtypes(
    columns: Sequence[ColumnMeta], *, decimal_as: str = "float64", null_masks: bool = False
) -> dict[str, str]:
    """Column name -> TensorFlow dtype name of a dataset over ``columns``."""
    out: dict[str, str] = {}
    for col in columns:
        if col.type not in SUPPORTED_TYPES:
            raise SchemaError(
                f"column {col.name!r} has type {col.type.name}, which has no tensor form; select "
                f"it cast to another type (CAST({col.name} AS VARCHAR))"
            )
        out[col.name] = "string" if (col.type.name == "DECIMAL" and decimal_as == "string") else TF_DTYPES[col.type]
        if null_masks and col.nullable:
            out[f"{col.name}_present"] = "bool"
    if len(out) != len(columns) + sum(1 for c in columns if null_masks and c.nullable):
        raise SchemaError("two result columns have the same name; give them aliases (SELECT a.X AS AX, ...)")
    return out


def _options(
    options: ConnectionOptions | None, host: str, port: int, fields: Mapping[str, Any], what: str
) -> ConnectionOptions:
    """``options``, or those of ``host``/``port`` and the connection keywords ``fields`` that ``what`` was given."""
    if options is not None:
        if fields:
            raise ConfigurationError(f"pass either options= or connection keywords ({', '.join(fields)}), not both")
        return options
    return ConnectionOptions.from_address(host, port=port, **ConnectionOptions.settings_given(what, fields))


def _check(decimal_as: str, page_size: int, batch_size: int | None, drop_remainder: bool) -> None:
    if drop_remainder and batch_size is None:
        raise ConfigurationError("drop_remainder=True drops the short last batch: give batch_size too")
    if decimal_as not in _DECIMAL_AS:
        raise ConfigurationError(f"decimal_as={decimal_as!r}: use one of {', '.join(_DECIMAL_AS)}")
    if page_size < 1:
        raise ConfigurationError(f"page_size={page_size}: it must be at least 1")
    if batch_size is not None and batch_size < 1:
        raise ConfigurationError(f"batch_size={batch_size}: it must be at least 1 (or None: single rows)")


def from_sql(
    query: str,
    args: Sequence[Any] = (),
    *,
    host: str = "127.0.0.1",
    port: int = _DEFAULT_PORT,
    options: ConnectionOptions | None = None,
    batch_size: int | None = None,
    drop_remainder: bool = False,
    page_size: int = 4096,
    null_masks: bool = False,
    decimal_as: str = "float64",
    schema: str | None = None,
    client: Ignite3Client | None = None,
    **connection: Unpack[ConnectionKeywords],
) -> "tf.data.Dataset":
    """The rows of an SQL query on an Ignite 3 cluster as a ``tf.data.Dataset`` of dicts.

    ``host``/``port`` (``"h1:p1,h2:p2"`` for fallbacks) or ``options`` say where
    the cluster is; ``connection`` takes the other
    :class:`~tensorflow_ignite.client.options.ConnectionOptions` fields
    (``username``, ``password``, ``cafile``, ``certfile``, ``keyfile``,
    ``timeout``...).  ``batch_size``: elements are batches of that many rows
    (the last may be short, unless ``drop_remainder``: then it is dropped)
    instead of single rows.  ``page_size``: rows per page the node sends.
    ``args``: the query's ``?`` parameters.
    """
    import tensorflow as tf

    _check(decimal_as, page_size, batch_size, drop_remainder)
    opts = _options(options, host, port, connection, "ignite3.from_sql") if client is None else client.options
    if client is None:
        with Ignite3Client(opts) as probe:
            columns = probe.columns(query, schema=schema)
    else:
        columns = client.columns(query, schema=schema)
    if not columns:
        raise ConfigurationError(f"the statement returns no rows to read: {query[:80]!r}")
    dtypes = element_dtypes(columns, decimal_as=decimal_as, null_masks=null_masks)
    names = [c.name for c in columns]
    masked = [null_masks and c.nullable for c in columns]
    args = tuple(args)

    def pages() -> Iterator[dict[str, np.ndarray]]:
        # A connection per iteration: its handshake brings the node's current time, so the
        # epoch reads every row committed before it began, by any client.
        reader = client if client is not None else Ignite3Client(opts)
        try:
            yield from _read(reader)
        finally:
            if reader is not client:
                reader.close()

    def _read(reader: Ignite3Client) -> Iterator[dict[str, np.ndarray]]:
        with reader.query(query, args, page_size=page_size, schema=schema) as cursor:
            if [c.name for c in cursor.columns] != names:
                raise SchemaError(
                    f"the columns of {query[:80]!r} changed since the dataset was built "
                    f"({names} then {[c.name for c in cursor.columns]}); build it again"
                )
            for page in cursor.column_pages(decimal_as=decimal_as):
                out = {}
                for name, mask, values, present in zip(names, masked, page.values, page.present):
                    out[name] = values
                    if mask:
                        out[f"{name}_present"] = present
                yield out

    signature = {name: tf.TensorSpec([None], tf.as_dtype(dtype)) for name, dtype in dtypes.items()}
    ds = tf.data.Dataset.from_generator(pages, output_signature=signature)
    return ds.unbatch() if batch_size is None else ds.rebatch(batch_size, drop_remainder=drop_remainder)


def _with_objects(batches: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The batches with string columns as object arrays, as ``from_generator`` takes them (the native
    op copies :class:`~.protocol.spans.ByteSpans` straight from the page instead)."""
    for batch in batches:
        yield {name: as_objects(values) for name, values in batch.items()}


def _identifier(name: str) -> str:
    """A table or column name as SQL, always quoted, so a name that is an SQL keyword (``WHEN``, ``VALUE``)
    works too: a plain identifier (``schema.table``, ``x``) as the upper-case name SQL makes of it unquoted,
    anything else exactly as written."""
    plain = name.replace("_", "").replace(".", "").isalnum() and not name[:1].isdigit()
    if plain:
        return ".".join('"' + part.upper() + '"' for part in name.split("."))
    return '"' + name.replace('"', '""') + '"'


def count_rows(client: Ignite3Client, table: str) -> int:
    """The rows of ``table`` (``schema.table`` or ``table``, named as :func:`from_table` takes it): ``SELECT COUNT(*)``."""
    with client.query(f"SELECT COUNT(*) FROM {_identifier(table)}") as cursor:
        return sum(int(np.asarray(page.values[0]).sum()) for page in cursor.column_pages())


def from_table(
    table: str,
    columns: Sequence[str] | None = None,
    *,
    where: str | None = None,
    args: Sequence[Any] = (),
    parts: Sequence[int] | None = None,
    host: str = "127.0.0.1",
    port: int = _DEFAULT_PORT,
    options: ConnectionOptions | None = None,
    batch_size: int | None = None,
    drop_remainder: bool = False,
    page_size: int = 4096,
    null_masks: bool = False,
    decimal_as: str = "float64",
    client: Ignite3Client | None = None,
    failover_timeout: float = 120.0,
    shuffle: bool = False,
    seed: int | None = None,
    credentials: str | None = None,
    per_node: bool = True,
    **connection: Unpack[ConnectionKeywords],
) -> "Ignite3TableDataset":
    """Every row of an Ignite 3 table (``schema.table`` or ``table``), or of ``columns`` of it,
    optionally filtered by an SQL ``where`` condition with ``args`` for its ``?``, read partition-aware
    and resumably (:mod:`.partitioned`): each primary node is asked for its own partitions, the nodes
    in parallel, and an iterator can be saved with ``tf.train.Checkpoint(iterator=it)`` and restored,
    exactly once.  A query that fails midway (a node lost) is asked again of the partitions' new
    primaries without repeating rows, for up to ``failover_timeout`` seconds.

    Give every node's endpoint (``host="h1:p1,h2:p2,h3:p3"`` or ``options`` with ``fallbacks``): the
    partitions of a node this client has no connection to are read through another node.
    ``parts``: read only these partitions (``IGNITE_DATASET_PARTS`` overrides, as on Ignite 2).
    ``per_node=False``: one query over all of them, through one node, instead of one per primary
    (each of those scans the whole table, since Ignite 3.1 does not prune on the partition: on a
    loaded machine one query can be faster); still checkpointable and exactly once.
    ``shuffle=True``: read the partitions one after the other, one query each, in an order drawn from
    ``seed`` (at random when None) and the epoch, as ``IgniteDataset(shuffle=True)`` does on Ignite 2:
    the same seed gives the same order in every process, and a restored iterator goes on in its order
    (each of those queries scans the table at its node and waits up to ~250 ms to be mapped on an idle
    3.1 cluster: a shuffled read costs the nodes more, and about a quarter second per partition).
    ``drop_remainder``: with ``batch_size``, drop the short last batch.
    The dataset leaves its process as ``IgniteDataset`` does (a description without secrets: a process
    restoring a saved iterator, tf.data service workers in ``parallel_epochs`` mode rebuild it; their
    credentials from ``credentials=``'s source or ``IGNITE_DATASET_*`` variables, see
    :mod:`tensorflow_ignite.data.portable`).  The other keywords are :func:`from_sql`'s.
    """
    import tensorflow as tf

    from ..native import data_source
    from .partitioned import TableReader
    from .routes import table_route
    from .table_dataset import Ignite3TableDataset

    if not table:
        raise ConfigurationError("from_table needs a table name")
    _check(decimal_as, page_size, batch_size, drop_remainder)
    shuffled = ShuffledEpochs.of(shuffle, seed)
    if failover_timeout <= 0:
        raise ConfigurationError(f"failover_timeout={failover_timeout}: give a positive number of seconds")
    opts = _options(options, host, port, connection, "ignite3.from_table") if client is None else client.options
    probe = client if client is not None else Ignite3Client(opts)
    try:
        route = table_route(probe.connection(), table)
        keys = sorted((c for c in route.schema.columns if c.is_key), key=lambda c: c.key_index)
        position = {c.name: i for i, c in enumerate(keys)}
        if any(c.name not in position for c in route.schema.colocation_columns):
            raise ConfigurationError(
                f"table {table}: a colocation column is not a key column "
                f"({[c.name for c in route.schema.colocation_columns]}, key {list(position)})"
            )
        colocation = [(position[c.name], c.scale, c.precision) for c in route.schema.colocation_columns]
        select = [_identifier(c) for c in columns] if columns else ["*"]
        reader = TableReader(
            opts,
            table,
            select,
            (),
            [(c.name, c.type) for c in keys],
            (),
            1,
            colocation=colocation,
            where=where,
            args=args,
            table_sql=_identifier(table),
        )
        metas = probe.columns(reader.query([0]))
    finally:
        if probe is not client:
            probe.close()
    output = metas[: len(metas) - reader.extra_columns]
    element_dtypes(output, decimal_as=decimal_as, null_masks=null_masks)  # every column has a tensor form
    count = route.assignment.partitions
    env_parts = env_partitions()
    chosen = env_parts if env_parts is not None else parts
    if chosen is not None:
        outside = sorted(set(int(p) for p in chosen) - set(range(count)))
        if outside or not len(chosen):
            raise ConfigurationError(
                f"parts={list(chosen)[:20]}: table {table} has partitions 0..{count - 1}"
                + (f"; {outside[:10]} are not among them" if outside else "")
            )
    reader = TableReader(
        opts,
        table,
        select,
        output,
        [(c.name, c.type) for c in keys],
        range(count) if chosen is None else chosen,
        count,
        colocation=colocation,
        where=where,
        args=args,
        page_size=page_size,
        decimal_as=decimal_as,
        null_masks=null_masks,
        failover_timeout=failover_timeout,
        client=client,
        table_sql=_identifier(table),
        per_node=per_node,
        shuffle_seed=shuffled.seed if shuffled is not None else None,
    )
    signature = reader.element_spec()
    if data_source.use_native(signature):
        try:
            description = reader.description(
                batch_size=batch_size, drop_remainder=drop_remainder, credentials=credentials
            )
        except UnsupportedOperationError:
            description = ""  # a where-argument JSON cannot carry: the dataset stays in this process
        ds = data_source.python_source(
            reader.run,
            signature,
            batch_size=batch_size,
            drop_remainder=drop_remainder,
            resumable=True,
            description=description,
        )
        if batch_size is None:
            ds = ds.unbatch()
    else:  # process-local and not checkpointable: the op library is not available here
        ds = tf.data.Dataset.from_generator(lambda: _with_objects(reader.run()), output_signature=signature)
        ds = ds.unbatch() if batch_size is None else ds.rebatch(batch_size, drop_remainder=drop_remainder)
    # As IgniteDataset's: a read of some partitions is a worker's share, not to be sharded again; no
    # prefetch injected behind the reader (a pipeline that wants one ends in .prefetch()).
    shard = tf.data.Options()
    policy = tf.data.experimental.AutoShardPolicy
    shard.experimental_distribute.auto_shard_policy = policy.OFF if chosen is not None else policy.DATA
    shard.experimental_optimization.inject_prefetch = False
    return Ignite3TableDataset(ds.with_options(shard), reader)
