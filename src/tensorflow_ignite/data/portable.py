"""Datasets that leave their process: the description the op carries, and the reader rebuilt from it.

The ``IgnitePyDataset`` op (:mod:`tensorflow_ignite.native.data_source`) has
two ways to start a read: the in-process fast path, a key into the registry of
the process that built the dataset, and a *description*, a JSON attribute
from which any process that has imported ``tensorflow_ignite`` rebuilds the
reader: a tf.data service worker, a ParameterServer worker, a process
restoring a checkpointed iterator.  A description holds what the read needs
and nothing secret:

* ``kind`` (``"cache"``, ``"sql"`` or ``"ignite3"``: an Ignite 3 table, whose
  read :mod:`tensorflow_ignite.ignite3.partitioned` describes), the cache name and its partition plan
  (the partitions in order, the cache's partition count, whether the whole
  cache may be read one scan per node, or ``per_worker``: the rebuilding
  process reads the partitions its ``IGNITE_DATASET_PARTS`` names -- each
  ParameterServer worker its own node's), or the query, its arguments and SQL
  options;
* the connection: the endpoints (the address given and every server node's
  client address known when the dataset was built, so a rebuilt reader still
  connects after the first node died), the user name, whether a password, a
  client certificate and a key password were used (booleans), the CA file and
  the TLS options, the timeout, and a credentials-source name;
* the schema (:class:`~.schema.DatasetSchema` as JSON), page sizing, and the
  batch size the op cuts to.

Never a password, a key, a key file or a key password.  The rebuilding
process supplies those: from a credentials source registered under the
dataset's ``credentials=`` name (:func:`register_credentials`), else from its
environment -- ``IGNITE_DATASET_<NAME>_PASSWORD`` etc. for a named source,
``IGNITE_DATASET_PASSWORD``, ``..._USERNAME``, ``..._CERTFILE``,
``..._KEYFILE``, ``..._CERT_PASSWORD``, ``..._CAFILE`` otherwise; a missing one is a
:class:`~tensorflow_ignite.errors.ConfigurationError` naming the variable to
set.  The other connection variables (:mod:`tensorflow_ignite.client.env`) apply as
for every feature: ``IGNITE_DATASET_HOST``/``_PORT`` replace the first endpoint (a
worker reaches the cluster through its own node), ``..._SERVER_HOSTNAME``, the
``..._INSECURE_*`` opt-outs and ``..._TIMEOUT`` replace the described ones.  A process that already holds a
shared client for the same connection (the one that built the dataset) uses
it, with its credentials.

A rebuilt reader is kept per description (the 32 most recently used), so
every epoch of a tf.data service worker reuses one client and schema.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from ..client import described
from ..client.described import DESCRIPTION_VERSION
from ..client.env import PARTS_VARIABLE, env_partitions
from ..client.progress import ShuffledEpochs
from ..errors import ConfigurationError, UnsupportedOperationError
from .env import parse_partition_list
from .schema import DatasetSchema, FieldSchema

if TYPE_CHECKING:
    from ..client import IgniteClient
    from ..native.data_source import Source
    from .plan import ScanTask

__all__ = [
    "describe_cache",
    "describe_sql",
    "rebuild",
    "register_credentials",
    "schema_to_json",
    "schema_from_json",
    "DESCRIPTION_VERSION",
]

#: Rebuilt sources kept per process (least recently used dropped first).
_MAX_REBUILT = 32
_rebuilt: OrderedDict[str, "Source"] = OrderedDict()
_lock = threading.Lock()


def register_credentials(name: str, provider: Callable[[], Mapping[str, Any]] | None) -> None:
    """Name a credentials source for datasets built with ``credentials=name``.

    ``provider()`` returns any of ``username``, ``password``, ``cafile``,
    ``certfile``, ``keyfile``, ``cert_password``; it is called whenever a
    process rebuilds such a dataset (register it in every process that may:
    tf.data service workers, restoring processes).  ``None`` removes it.
    Without a registered provider the same settings come from
    ``IGNITE_DATASET_<NAME>_PASSWORD`` and the like.
    """
    described.register_credentials(name, provider)
    with _lock:
        _rebuilt.clear()  # the next rebuild asks the new provider


# ---------------------------------------------------------------- schema
def schema_to_json(schema: DatasetSchema) -> dict[str, Any]:
    return asdict(schema)


def _field_from_json(d: Mapping[str, Any] | None) -> FieldSchema | None:
    if d is None:
        return None
    return FieldSchema(
        name=d["name"],
        type_code=int(d["type_code"]),
        dtype=d["dtype"],
        shape=tuple(None if s is None else int(s) for s in d["shape"]),
        fields=tuple(_field_from_json(f) for f in d["fields"]),  # type: ignore[misc]  # a field's members are never null in a schema's JSON
        nullable=bool(d["nullable"]),
        type_name=d["type_name"],
        kind=d["kind"],
    )


def schema_from_json(d: Mapping[str, Any]) -> DatasetSchema:
    return DatasetSchema(
        key=_field_from_json(d["key"]),
        value=_field_from_json(d["value"]),
        null_masks=bool(d["null_masks"]),
        decimal_as=d["decimal_as"],
        columns=tuple(_field_from_json(c) for c in d["columns"]),  # type: ignore[misc]  # a schema's columns are never null in its JSON
    )


# ------------------------------------------------------------- describing
def describe_cache(
    client: "IgniteClient",
    cache_name: str,
    tasks: Sequence["ScanTask"],
    *,
    partitions: int,
    node_scans: bool,
    schema: DatasetSchema,
    page_size: int | None,
    page_bytes: int,
    batch_size: int | None,
    drop_remainder: bool,
    credentials: str | None,
    shuffle_seed: int | None = None,
    per_worker: bool = False,
    arguments: Mapping[str, Any] | None = None,
) -> str:
    """The description of a dataset over a cache (JSON; see the module docstring).

    ``arguments``: what :mod:`.arguments` records of the arguments given as tensors, if any.
    """
    return described.dump_description(
        {
            "kind": "cache",
            "connection": described.describe_connection(client, credentials),
            "cache": cache_name,
            "plan": {
                "partitions": [t.partition for t in tasks]
                if any(t.partition < 0 for t in tasks)
                else _ranges([t.partition for t in tasks]),
                "local": any(t.local for t in tasks),
                "count": partitions,
                "node_scans": node_scans,
                "shuffle_seed": shuffle_seed,
                "per_worker": per_worker,
            },
            "schema": schema_to_json(schema),
            "page_size": page_size,
            "page_bytes": page_bytes,
            "batch_size": batch_size,
            "drop_remainder": drop_remainder,
            **({"arguments": dict(arguments)} if arguments else {}),
        }
    )


def describe_sql(
    client: "IgniteClient",
    query: str,
    args: Sequence[Any],
    *,
    schema: DatasetSchema,
    sql_kwargs: Mapping[str, Any],
    batch_size: int | None,
    drop_remainder: bool,
    credentials: str | None,
) -> str:
    """The description of a dataset over an SQL query (JSON; see the module docstring)."""
    unportable = None
    for i, a in enumerate(args):
        if a is not None and type(a) not in (bool, int, float, str):
            unportable = (
                f"its query argument {i} is a {type(a).__name__}, which a description cannot carry; "
                "pass it as a number or a string (SQL converts it)"
            )
            break
    return described.dump_description(
        {
            "kind": "sql",
            "connection": described.describe_connection(client, credentials),
            "query": query,
            "args": list(args) if unportable is None else [],
            "unportable": unportable,
            "sql": dict(sql_kwargs),
            "schema": schema_to_json(schema),
            "batch_size": batch_size,
            "drop_remainder": drop_remainder,
        }
    )


def _ranges(partitions: Sequence[int]) -> str:
    from ..client.progress import format_ranges

    if list(partitions) != sorted(set(partitions)):
        raise ConfigurationError("a partition plan is a sorted list of distinct partitions")
    return format_ranges(partitions)


# ------------------------------------------------------------- rebuilding
def rebuild(description: str, arguments: tuple[Any, ...] = ()) -> "Source":
    """The native source for a description (and the values of its argument tensors), built once per process."""
    key = description if not arguments else f"{description}\n{arguments!r}"
    with _lock:
        source = _rebuilt.get(key)
        if source is not None:
            _rebuilt.move_to_end(key)
            return source
    source = _build(description, arguments)
    with _lock:
        source = _rebuilt.setdefault(key, source)
        while len(_rebuilt) > _MAX_REBUILT:
            _rebuilt.popitem(last=False)
        return source


def _worker_partitions(cache: str) -> tuple[int, ...]:
    """The partitions a ``per_worker`` dataset reads in this process: ``IGNITE_DATASET_PARTS``."""
    parts = env_partitions()
    if parts is None:
        raise ConfigurationError(
            f"IgniteDataset over cache {cache!r} was built with per_worker=True: the process that reads it takes "
            f"its partitions from {PARTS_VARIABLE}, which is not set here. `ignite-tf start` sets it for every "
            "worker; elsewhere set it to this worker's partitions (e.g. 0-340), or build the dataset without "
            "per_worker to read the partitions it was built with"
        )
    return parts


def _build(description: str, arguments: tuple[Any, ...] = ()) -> "Source":
    from ..native.data_source import Source
    from ..protocol.pool import aligned_empty
    from .plan import ScanTask
    from .reader import PageSizer, ScanReader, SqlReader

    try:
        d = json.loads(description)
    except ValueError as exc:
        raise ConfigurationError(f"an IgniteDataset description is not JSON: {exc}") from None
    if d.get("v") != DESCRIPTION_VERSION:
        raise ConfigurationError(
            f"this IgniteDataset was described by another version of tensorflow-ignite (description version "
            f"{d.get('v')!r}, this one reads {DESCRIPTION_VERSION}); install the same version in every process"
        )
    if "arguments" in d or arguments:
        from .arguments import apply

        d = apply(d, arguments)
    if d["kind"] == "ignite3":
        from ..ignite3.partitioned import TableReader

        read = d["read"]
        reader = TableReader.rebuild(
            described.described_options(d["connection"], f"the read of Ignite 3 table {read['table']!r}"), read
        )
        return Source(
            reader.run,
            reader.element_spec(),
            batch_size=read["batch_size"],
            drop_remainder=bool(read.get("drop_remainder", False)),
            resumable=True,
        )
    schema = schema_from_json(d["schema"])
    spec = schema.element_spec(batched=True)
    if d["kind"] == "sql":
        what = f"IgniteDataset.from_sql({d['query']!r})"
        if d.get("unportable"):
            raise UnsupportedOperationError(f"{what} cannot be rebuilt in another process: {d['unportable']}")
        client = described.connect_described(d["connection"], what)
        reader = SqlReader(client, d["query"], d["args"], schema, d["sql"])
        return Source(reader.run, spec, batch_size=d["batch_size"], drop_remainder=d["drop_remainder"], resumable=True)
    cache = d["cache"]
    client = described.connect_described(d["connection"], f"IgniteDataset over cache {cache!r}")
    plan = d["plan"]
    partitions = plan["partitions"]
    if plan.get("per_worker"):
        parts = _worker_partitions(cache)
    else:
        parts = partitions if isinstance(partitions, list) else parse_partition_list(partitions, name="plan")
    tasks = [ScanTask(int(p), local=bool(plan["local"])) for p in parts]
    reader = ScanReader(client, cache, schema, tasks, PageSizer(d["page_size"], int(d["page_bytes"])))
    if plan.get("shuffle_seed") is not None:
        reader.shuffle = ShuffledEpochs(int(plan["shuffle_seed"]))
    if plan["node_scans"] and not plan.get("per_worker") and client.partition_awareness:
        reader.node_scans = True
        reader.partitions = int(plan["count"])
    pool = reader.pool
    return Source(
        reader.run,
        spec,
        batch_size=d["batch_size"],
        drop_remainder=d["drop_remainder"],
        allocate=lambda shape, dtype: aligned_empty(shape, dtype, pool),
        resumable=True,
    )
