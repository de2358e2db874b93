"""What a scoring run reads: a cache (by partitions) or an SQL query, as batches of keys and feature columns.

Both are read with :class:`~tensorflow_ignite.data.dataset.IgniteDataset` --
the cache one group of partitions at a time (``parts=``, each partition from
its primary node, with the dataset's failover), the query whole through
``IgniteDataset.from_sql`` -- so a scoring run reads exactly what a training
run would.  A *unit* is what completion is recorded for: one partition of a
partitioned cache; the whole cache when it is replicated, or the whole query.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import CacheNotFoundError, ConfigurationError, EmptySourceError
from .model import TensorSpec

if TYPE_CHECKING:
    from ..client import IgniteClient

__all__ = ["ScoringSource", "open_scoring_source", "WHOLE"]

#: The unit of a source that has no partitions to record (an SQL query, a replicated cache).
WHOLE = -1

#: Key columns looked for (in this order) in an SQL query's result when ``key`` is not given.
_SQL_KEYS = ("KEY", "_KEY", "ID")

_QUERY = re.compile(r"^\s*(SELECT|WITH)\b", re.IGNORECASE)


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
    _read: Any

    def describe(self) -> str:
        return f"cache {self.name!r}" if self.kind == "cache" else f"SQL query {self.name!r}"

    def batches(self, units: Sequence[int],
                fields: Sequence[str]) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
        """``(keys, {field: column})`` batches of the rows of ``units``, only ``fields`` decoded."""
        return self._read(list(units), list(fields))


def open_scoring_source(client: "IgniteClient", source: str, *, args: Sequence[Any] = (), key: str | None = None,
                        batch_size: int = 1024) -> ScoringSource:
    """A cache name, or an SQL query (anything starting with ``SELECT``/``WITH``), as a :class:`ScoringSource`.

    Raises :class:`~tensorflow_ignite.errors.CacheNotFoundError` for a missing
    cache and :class:`~tensorflow_ignite.errors.EmptySourceError` when there is
    nothing to score.
    """
    if _QUERY.match(source):
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
    from ..data.dataset import IgniteDataset

    if key is not None:
        raise ConfigurationError(f"key= names a column of an SQL query; entries of cache {cache!r} keep their keys")
    if cache not in client.cache_names():
        raise CacheNotFoundError(f"source cache {cache!r} does not exist; existing caches: "
                                 f"{sorted(c for c in client.cache_names() if not c.startswith('__'))[:20]}",
                                 status=1000)
    rows = client.cache(cache).size()
    if rows == 0:
        raise EmptySourceError(f"source cache {cache!r} is empty: there is nothing to score")
    probe = IgniteDataset(cache, client=client, batch_size=batch_size)
    spec = probe.element_spec
    value = spec["val"]
    fields = ({n: _spec(n, s) for n, s in value.items() if hasattr(s, "dtype")} if isinstance(value, dict)
              else {"val": _spec("val", value)})
    pmap = client.partition_map(cache)
    partitioned = bool(pmap.applicable and pmap.partitions)
    units = tuple(range(pmap.partitions)) if partitioned else (WHOLE,)
    schemas: dict[tuple[str, ...], Any] = {}

    def read(chosen: list[int], wanted: list[str]) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
        names = tuple(wanted)
        if names not in schemas:  # resolved once per field list: the datasets of every group share it
            schemas[names] = (probe.schema if not isinstance(value, dict) else
                              IgniteDataset(cache, client=client, batch_size=batch_size, fields=list(names)).schema)
        parts = None if chosen == [WHOLE] else chosen
        ds = IgniteDataset(cache, client=client, batch_size=batch_size, parts=parts, schema=schemas[names])
        for element in ds.as_numpy_iterator():
            val = element["val"]
            cols = {n: val[n] for n in names} if isinstance(val, dict) else {"val": val}
            yield _keys(element["key"]), cols

    return ScoringSource("cache", cache, fields, units, rows, _identity("cache", cache), _spec("key", spec["key"]),
                         read)


def _sql_source(client: "IgniteClient", query: str, args: Sequence[Any], key: str | None,
                batch_size: int) -> ScoringSource:
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
                "SELECT _KEY AS KEY, ...) or name the column with key=")
    elif key.upper() in upper:
        key = upper[key.upper()]
    else:
        raise ConfigurationError(f"SQL query {query!r} has no column {key!r} (key=); its columns: {list(columns)}")
    if columns[key].shape or columns[key].dtype not in ("int8", "int16", "int32", "int64", "object"):
        raise ConfigurationError(f"SQL column {key!r} (key=) is {columns[key].describe()}; keys are integers "
                                 "or strings")
    key_name = key
    fields = {n: s for n, s in columns.items() if n != key_name}

    def read(_units: list[int], wanted: list[str]) -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
        for element in ds.as_numpy_iterator():
            yield _keys(element[key_name]), {n: element[n] for n in wanted}

    return ScoringSource("sql", query, fields, (WHOLE,), None, _identity("sql", query, list(args), key_name),
                         columns[key_name], read)
