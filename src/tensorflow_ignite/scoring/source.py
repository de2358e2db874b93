"""What a scoring run reads: a cache (by partitions) or an SQL query, as batches of keys and feature columns.

A cache is read by the dataset's own reader (:class:`~tensorflow_ignite.data.reader.ScanReader`,
the one behind :class:`~tensorflow_ignite.data.dataset.IgniteDataset`, driven
from Python without TensorFlow): schema resolved by the dataset, partition
scans pipelined to each partition's primary with their failover, and the
checkpoint ledger (:class:`~tensorflow_ignite.client.progress.ReadProgress`) that
says which partitions have been handed out whole -- the units a scoring run
records complete.  A query is read whole through ``IgniteDataset.from_sql``.
A *unit* is what completion is recorded for: one partition of a partitioned
cache; the whole cache when it is replicated, or the whole query.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import CacheNotFoundError, ConfigurationError, EmptySourceError
from .model import TensorSpec

if TYPE_CHECKING:
    from ..client import IgniteClient

__all__ = ["ScoringSource", "Reading", "open_scoring_source", "is_query", "WHOLE"]

#: The unit of a source that has no partitions to record (an SQL query, a replicated cache).
WHOLE = -1

#: Key columns looked for (in this order) in an SQL query's result when ``key`` is not given.
_SQL_KEYS = ("KEY", "_KEY", "ID")

_QUERY = re.compile(r"^\s*(SELECT|WITH)\b", re.IGNORECASE)


def is_query(source: str) -> bool:
    """Whether ``source`` is an SQL query (starts with ``SELECT``/``WITH``) rather than a cache name."""
    return bool(_QUERY.match(source))


class Reading:
    """One pass over some units of a source: iterate ``(keys, {field: column})`` batches of at most
    ``batch_size`` rows; :meth:`completed` is the units whose every row has been yielded (call it
    after processing the batch last yielded)."""

    def __init__(
        self, batches: Iterator[tuple[np.ndarray, dict[str, np.ndarray]]], completed: Callable[[], set[int]]
    ) -> None:
        self._batches = batches
        self.completed = completed

    def __iter__(self) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
        return self._batches


@dataclass
class ScoringSource:
    """A source's description, its feature fields (name -> spec), its units and how to read them."""

    kind: str  # "cache" | "sql"
    name: str  # the cache, or the query
    fields: dict[str, TensorSpec]
    units: tuple[int, ...]
    rows: int | None
    identity: str
    key: TensorSpec
    _read: Callable[[list[int], list[str], dict[str, tuple[int, ...]]], Reading]
    #: The type code of a cache's scalar keys (``long``, ``int``, ``String``...); None for an SQL
    #: query or object keys.
    key_type: int | None = None

    def describe(self) -> str:
        return f"cache {self.name!r}" if self.kind == "cache" else f"SQL query {self.name!r}"

    def read(
        self, units: Sequence[int], fields: Sequence[str], shapes: Mapping[str, tuple[int, ...]] | None = None
    ) -> Reading:
        """A :class:`Reading` of the rows of ``units``, only ``fields`` decoded.

        ``shapes`` reads these variable-length array fields of a cache dense, that many elements per
        row (``IgniteDataset(shapes=...)``): a row of another length fails its batch with
        :class:`~tensorflow_ignite.errors.ArrayLengthError` naming the key.
        """
        return self._read(list(units), list(fields), dict(shapes or {}))


def open_scoring_source(
    client: "IgniteClient", source: str, *, args: Sequence[Any] = (), key: str | None = None, batch_size: int = 1024
) -> ScoringSource:
    """A cache name, or an SQL query (anything starting with ``SELECT``/``WITH``), as a :class:`ScoringSource`.

    Raises :class:`~tensorflow_ignite.errors.CacheNotFoundError` for a missing
    cache and :class:`~tensorflow_ignite.errors.EmptySourceError` when there is
    nothing to score.
    """
    if is_query(source):
        return _sql_source(client, source, args, key, batch_size)
    if args:
        raise ConfigurationError("query arguments (args=) only go with an SQL query source")
    return _cache_source(client, source, key, batch_size)


def _identity(*parts: Any) -> str:
    return hashlib.blake2s(json.dumps(parts, default=str).encode(), digest_size=8).hexdigest()


def _spec(name: str, spec: Any) -> TensorSpec:
    dtype = "object" if spec.dtype.name == "string" else spec.dtype.as_numpy_dtype.__name__
    return TensorSpec(name, dtype, tuple(spec.shape[1:]))


def _keys(values: np.ndarray) -> np.ndarray:
    if values.dtype == object:  # strings come out of TensorFlow as bytes
        return np.array([v.decode("utf-8") if isinstance(v, bytes) else v for v in values.tolist()], dtype=object)
    return values.astype(np.int64, copy=False)


def _cache_source(client: "IgniteClient", cache: str, key: str | None, batch_size: int) -> ScoringSource:
    from ..data.discover import cache_schema
    from ..data.plan import PartitionPlan, ScanTask
    from ..data.reader import DEFAULT_PAGE_BYTES, PageSizer, ScanReader
    from ..data.schema import apply_shapes
    from ..protocol.codes import TypeCode

    if key is not None:
        raise ConfigurationError(f"key= names a column of an SQL query; entries of cache {cache!r} keep their keys")
    if cache not in client.cache_names():
        raise CacheNotFoundError(
            f"source cache {cache!r} does not exist; existing caches: "
            f"{sorted(c for c in client.cache_names() if not c.startswith('__'))[:20]}",
            status=1000,
        )
    rows = client.cache(cache).size()
    if rows == 0:
        raise EmptySourceError(f"source cache {cache!r} is empty: there is nothing to score")
    # The schema IgniteDataset would read with, resolved without building a tf.data pipeline.
    full = cache_schema(client, cache)
    spec = full.element_spec(batched=True)
    value = spec["val"]
    fields = (
        {n: _spec(n, s) for n, s in value.items() if hasattr(s, "dtype")}
        if isinstance(value, dict)
        else {"val": _spec("val", value)}
    )
    pmap = client.partition_map(cache)
    partitioned = bool(pmap.applicable and pmap.partitions)
    # Every partition with scalar keys: one scan per node, as IgniteDataset reads a whole cache
    # (a node sets up one scan instead of 1,024); completion still comes per partition.
    key_field = full.key
    node_scans = bool(
        partitioned
        and client.partition_awareness
        and key_field is not None
        and not key_field.is_object
        and int(key_field.type_code) in (TypeCode.LONG, TypeCode.INT)
    )
    units = tuple(range(pmap.partitions)) if partitioned else (WHOLE,)
    schemas: dict[tuple[Any, ...], Any] = {}

    def read(chosen: list[int], wanted: list[str], shapes: dict[str, tuple[int, ...]]) -> Reading:
        names = tuple(wanted)
        at = (names, tuple(sorted(shapes.items())))
        if at not in schemas:  # the dataset's own schema resolution, once per field list and shapes
            schemas[at] = (
                apply_shapes(full, shapes, cache_name=cache)
                if not isinstance(value, dict)
                else cache_schema(client, cache, fields=list(names), shapes=shapes)
            )
        if chosen == [WHOLE]:
            tasks: tuple[ScanTask, ...] = (ScanTask(-1),)
        else:
            tasks = PartitionPlan.build(partitions=pmap.partitions, parts=chosen, cache_name=cache).tasks
        # The dataset's reader without TensorFlow: partition scans from each partition's primary,
        # with its failover, and its progress ledger telling which partitions are handed out whole.
        reader = ScanReader(client, cache, schemas[at], tasks, PageSizer(None, DEFAULT_PAGE_BYTES))
        if node_scans and chosen == list(range(pmap.partitions)):
            reader.node_scans = True
            reader.partitions = pmap.partitions
        run = reader.run()
        finished = False

        def batches() -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
            nonlocal finished
            for batch in run:
                keys = _keys(np.asarray(batch["key"]))
                val = batch["val"]
                cols = {n: np.asarray(val[n]) for n in names} if isinstance(val, dict) else {"val": np.asarray(val)}
                for lo in range(0, len(keys), batch_size):
                    hi = min(len(keys), lo + batch_size)
                    run.emitted(hi - lo)  # handed out: once processed, these rows count for completion
                    yield keys[lo:hi], {n: c[lo:hi] for n, c in cols.items()}
            finished = True

        def completed() -> set[int]:
            if finished:  # the run ended: every row of every chosen unit was yielded once (its failover included)
                return set(chosen)
            if chosen == [WHOLE]:
                return set()
            # Node scans complete a node's partition when its stream moves on; the last one of the
            # whole read only when the run ends (above).
            return set(run.progress.state().done)

        return Reading(batches(), completed)

    key_type = int(key_field.type_code) if key_field is not None and not key_field.is_object else None
    return ScoringSource(
        "cache", cache, fields, units, rows, _identity("cache", cache), _spec("key", spec["key"]), read, key_type
    )


def _sql_source(
    client: "IgniteClient", query: str, args: Sequence[Any], key: str | None, batch_size: int
) -> ScoringSource:
    from ..data.dataset import IgniteDataset

    first = None
    for row in client.sql(query, list(args), page_size=1):
        first = row
        break
    if first is None:
        raise EmptySourceError(f"SQL query {query!r} returns no rows: there is nothing to score")
    ds = IgniteDataset.from_sql(query, list(args), client=client, batch_size=batch_size)
    spec = ds.element_spec
    columns = {n: _spec(n, s) for n, s in spec.items()}
    upper = {n.upper(): n for n in columns}
    if key is None:
        key = next((upper[k] for k in _SQL_KEYS if k in upper), None)
        if key is None:
            raise ConfigurationError(
                f"SQL query {query!r}: no key column among {list(columns)}; select the table's key (e.g. "
                "SELECT _KEY AS KEY, ...) or name the column with key="
            )
    elif key.upper() in upper:
        key = upper[key.upper()]
    else:
        raise ConfigurationError(f"SQL query {query!r} has no column {key!r} (key=); its columns: {list(columns)}")
    if columns[key].shape or columns[key].dtype not in ("int8", "int16", "int32", "int64", "object"):
        raise ConfigurationError(
            f"SQL column {key!r} (key=) is {columns[key].describe()}; keys are integers or strings"
        )
    key_name = key
    fields = {n: s for n, s in columns.items() if n != key_name}

    def read(_units: list[int], wanted: list[str], _shapes: dict[str, tuple[int, ...]]) -> Reading:
        finished = False

        def batches() -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
            nonlocal finished
            for element in ds.as_numpy_iterator():
                yield _keys(element[key_name]), {n: element[n] for n in wanted}
            finished = True

        return Reading(batches(), lambda: {WHOLE} if finished else set())

    return ScoringSource(
        "sql", query, fields, (WHOLE,), None, _identity("sql", query, list(args), key_name), columns[key_name], read
    )
