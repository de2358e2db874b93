"""``tensorflow_ignite.predict`` on an Ignite 3 cluster: the same call, over the same pieces.

The source (a table named like the cache, or an SQL query) is read by ``IgniteDataset`` /
``IgniteDataset.from_sql`` on Ignite 3 (:mod:`tensorflow_ignite.data.on_ignite3`), the model's inputs
are bound by :func:`~.signature.bind_inputs`, and the predictions -- one row per source key: the key,
one column per model output and ``model_hash`` -- go into the output table through ``write``'s Ignite 3
form (:mod:`tensorflow_ignite.data.write.ignite3`: the streamer, upserts; an output read back by
``IgniteDataset`` has the element structure of an Ignite 2 output cache).  The run is one unit:
``mode="skip-existing"`` skips it when the output already holds this model's prediction for as many
keys as the source has rows, and otherwise scores every row again (a key written twice keeps one
row).  What is Ignite 2's only -- partitions (``parts=``, the launcher), ``backups`` -- raises
:class:`~tensorflow_ignite.errors.UnsupportedOperationError`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import ConfigurationError, EmptySourceError
from .model import ScoringModel
from .output import CREATED, KEPT, MODEL_HASH
from .signature import bind_inputs
from .source import _SQL_KEYS, _keys, _spec, is_query

if TYPE_CHECKING:
    from ..ignite3.client import Ignite3Client
    from .api import PredictResult

__all__ = ["predict_table"]

#: predict's options without an Ignite 3 form: name -> (default, why).
REFUSED: dict[str, tuple[Any, str]] = {
    "parts": (None, "an Ignite 3 source is scored as one unit; the launcher does not run on Ignite 3 yet"),
    "backups": (0, "replicas are a distribution zone's: create the output table in one first"),
}

#: The output's key column (the source key under it, as Ignite 2's output cache keys its entries).
_KEY = "key"


def _count(client: "Ignite3Client", query: str, args: Sequence[Any] = ()) -> int:
    with client.query(query, tuple(args)) as cursor:
        return sum(int(np.asarray(page.values[0]).sum()) for page in cursor.column_pages())


def _complete(client: "Ignite3Client", output: str, source_sql: str, args: Sequence[Any], model_hash: int) -> bool:
    """Whether ``output`` holds this model's prediction for as many keys as the source has rows."""
    from ..data.on_ignite3 import load_record, sql_name
    from ..ignite3.dataset import _identifier

    if load_record(client, sql_name(output)) is None:
        return False
    table = _identifier(sql_name(output))
    done = _count(client, f"SELECT COUNT(*) FROM {table} WHERE {_identifier(MODEL_HASH)} = ?", [model_hash])
    return done > 0 and done == _count(client, f"SELECT COUNT(*) FROM ({source_sql})", args)


def predict_table(
    scoring_model: ScoringModel,
    source: str,
    output: str,
    client: "Ignite3Client",
    inputs: Mapping[str, str] | None,
    key: str | None,
    args: Sequence[Any],
    mode: str,
    batch_size: int,
    started: float,
) -> "PredictResult":
    """``predict(model, source, output, ...)`` on the Ignite 3 cluster of ``client`` (the call's keywords
    without an Ignite 3 form, :data:`REFUSED`, were refused already: :func:`~..data.on_ignite3.ignite3_call`)."""
    from ..data.dataset import IgniteDataset
    from ..data.on_ignite3 import sql_name
    from ..data.write.ignite3 import table_exists, write_table
    from ..data.write.sources import Source
    from ..ignite3.dataset import _identifier
    from .api import PredictResult

    if is_query(source):
        ds = IgniteDataset.from_sql(source, list(args), client=client, batch_size=batch_size)  # type: ignore[arg-type]  # an Ignite3Client here
        columns = {n: _spec(n, s) for n, s in ds.element_spec.items()}
        upper = {n.upper(): n for n in columns}
        key_name = upper.get(key.upper()) if key else next((upper[k] for k in _SQL_KEYS if k in upper), None)
        if key_name is None:
            raise ConfigurationError(
                f"SQL query {source!r}: no key column {key!r} among {list(columns)}"
                if key
                else f"SQL query {source!r}: no key column among {list(columns)}; select the table's key "
                "(SELECT ID AS KEY, ...) or name the column with key="
            )
        fields = {n: s for n, s in columns.items() if n != key_name}
        described, source_sql = f"SQL query {source!r}", source

        def elements() -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
            for e in ds.as_numpy_iterator():
                yield _keys(e[key_name]), {n: e[n] for n in fields}
    else:
        if key is not None:
            raise ConfigurationError(f"key= names a column of an SQL query; rows of table {source!r} keep their keys")
        if args:
            raise ConfigurationError("query arguments (args=) only go with an SQL query source")
        ds = IgniteDataset(source, client=client, batch_size=batch_size)  # type: ignore[arg-type]  # an Ignite3Client here
        value = ds.element_spec["val"]
        fields = {n: _spec(n, s) for n, s in value.items()}
        described, source_sql = f"cache {source!r}", f"SELECT * FROM {_identifier(sql_name(source))}"

        def elements() -> Iterator[tuple[np.ndarray, dict[str, np.ndarray]]]:
            for e in ds.as_numpy_iterator():
                yield _keys(e["key"]), e["val"]

    bindings = bind_inputs(scoring_model.inputs, fields, source=described, explicit=inputs, dense_arrays=False)
    model_hash = scoring_model.hash64
    result: dict[str, Any] = dict(
        output=output,
        source=described,
        model_uri=scoring_model.uri,
        model_sha256=scoring_model.sha256,
        model_hash=model_hash,
        sql_table=f"PUBLIC.{sql_name(output)}",
    )
    if mode != "overwrite" and _complete(client, output, source_sql, args, model_hash):
        return PredictResult(
            rows=0,
            seconds=time.perf_counter() - started,
            units_scored=0,
            units_skipped=1,
            output_action=KEPT,
            **result,
        )

    def scored() -> Iterator[dict[str, np.ndarray]]:
        for keys, cols in elements():
            if not len(keys):
                continue
            predicted = scoring_model.predict({b.input.name: b.convert(cols[b.field.name]) for b in bindings})
            yield {_KEY: keys, **predicted, MODEL_HASH: np.full(len(keys), model_hash, dtype=np.int64)}

    batches = scored()
    first = next(batches, None)
    if first is None:
        raise EmptySourceError(f"{described} has no rows: there is nothing to score")

    def chunks(_rows: int) -> Iterator[dict[str, np.ndarray]]:
        yield first
        yield from batches

    kept = mode != "overwrite" and table_exists(client, sql_name(output))
    written = write_table(
        output,
        Source(list(first), None, chunks, first, False),
        client,
        key=_KEY,
        key_offset=None,
        mode="append" if kept else "overwrite",
        started=started,
    )
    return PredictResult(
        rows=written.rows,
        seconds=time.perf_counter() - started,
        units_scored=1,
        units_skipped=0,
        bytes_sent=written.bytes_sent,
        rows_per_node={"any": written.rows},
        output_action=KEPT if kept else CREATED,
        **result,
    )
