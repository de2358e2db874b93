"""``tensorflow_ignite.predict``: score a cache or SQL query with a model and write the predictions back."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Unpack

import numpy as np

from ..errors import ConfigurationError, PredictError
from ..generation import on_ignite3
from ..protocol.codes import TypeCode
from ..protocol.endpoint import DEFAULT_HOST, DEFAULT_PORT
from .ledger import Ledger
from .model import load_model, on_thread
from .output import CREATED, KEPT, REPLACED, OutputCache
from .signature import bind_inputs
from .source import WHOLE, is_query, open_scoring_source

if TYPE_CHECKING:
    from ..client import IgniteClient
    from ..client.options import ConnectionKeywords

__all__ = ["predict", "PredictResult", "Mode"]

log = logging.getLogger(__name__)

Mode = Literal["skip-existing", "overwrite"]
_MODES = ("skip-existing", "overwrite")
#: Cache key types whose output can be overwritten in place and checked against the source by key.
_IN_PLACE_KEYS = (TypeCode.LONG, TypeCode.INT, TypeCode.SHORT, TypeCode.BYTE, TypeCode.STRING)


@dataclass(frozen=True)
class PredictResult:
    """What :func:`predict` did.

    ``rows`` predictions were written to ``output`` in ``seconds``;
    ``units_scored`` units (partitions; 1 for an SQL query or a replicated
    cache) were scored and ``units_skipped`` were already complete from an
    earlier run of the same model.  ``model_uri``/``model_sha256`` identify the
    model (every entry's ``model_hash`` is the first 64 bits of the SHA-256,
    as a signed integer); ``sql_table`` is the output's SQL table, if any;
    ``rows_per_node`` counts the predictions sent to each node (by node id;
    ``"any"`` when the client could not place keys).  ``output_action`` says what became of the
    output cache: ``"created"``, ``"replaced in place"`` (``mode="overwrite"`` over an output of the
    same layout: every entry rewritten) or ``"kept"`` (``mode="skip-existing"``);
    ``stale_removed`` counts the entries removed at the end because their keys have left the source.
    """

    output: str
    source: str
    rows: int
    seconds: float
    units_scored: int
    units_skipped: int
    model_uri: str
    model_sha256: str
    model_hash: int
    bytes_sent: int = 0
    sql_table: str | None = None
    rows_per_node: Mapping[str, int] = field(default_factory=dict)
    output_action: str = CREATED
    stale_removed: int = 0

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else float("inf")

    def summary(self) -> str:
        """One line for humans."""
        text = (
            f"scored {self.rows:,} rows of {self.source} into cache {self.output!r} in {self.seconds:.2f} s "
            f"({self.rows_per_second:,.0f} rows/s); {self.units_scored} unit(s) scored, "
            f"{self.units_skipped} already complete"
        )
        if self.output_action == REPLACED:
            text += "; output overwritten in place"
        if self.stale_removed:
            text += f"; {self.stale_removed:,} prediction(s) of keys no longer in the source removed"
        if self.sql_table:
            text += f"; SQL table {self.sql_table}"
        return text


def predict(
    model: Any,
    source: str,
    output: str,
    *,
    inputs: Mapping[str, str] | None = None,
    key: str | None = None,
    args: Sequence[Any] = (),
    mode: Mode = "skip-existing",
    client: "IgniteClient | None" = None,
    # Where the cluster is; how to talk to it: **connection (ConnectionKeywords).
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    batch_size: int = 1024,
    record_every: int = 16,
    backups: int = 0,
    sql: bool = True,
    progress: bool | None = None,
    parts: Sequence[int] | None = None,
    on_record: Callable[[int, int, int], None] | None = None,
    **connection: Unpack[ConnectionKeywords],
) -> PredictResult:
    """Score every row of ``source`` with ``model`` and write one prediction per key into ``output``.

    ``model`` is a Keras model, a ``.keras``/``.h5`` file or a SavedModel
    directory, local or on ``ignite://``; it is loaded once.  ``source`` is a
    cache name or an SQL query (``SELECT ...``, with ``args``); the query must
    return the row's key, in a column named ``KEY``, ``_KEY`` or ``ID``, or the
    one ``key`` names.  Model inputs take the source fields of the same name
    (case-insensitive), or the fields ``inputs`` maps them to
    (``{"model_input": "FIELD"}``); a one-input model over a one-field source
    needs neither.

    ``output`` (created if missing, with ``backups``; an SQL table too when
    ``sql`` and the cluster has an SQL engine) receives, under each source key,
    an entry with one field per model output and ``model_hash``; see
    :mod:`tensorflow_ignite.scoring.output`.  Predictions are written in
    put-all batches, each row to the primary node of its key.

    **Exactly once, resumable.**  A cache source is read partition by
    partition (many scans in flight, each from the partition's primary node);
    every ``record_every`` batches the partitions whose rows have all been
    scored are recorded complete (:mod:`tensorflow_ignite.scoring.ledger`), once
    every prediction sent so far has been acknowledged.
    With ``mode="skip-existing"`` (the default) a run skips the partitions an
    earlier run of the same model over the same source and output completed,
    and scores the rest again -- a partition an interrupted run left half
    written is rewritten key by key, so every key ends with exactly one entry.
    ``mode="overwrite"`` forgets the output's records and scores everything.  Over a cache source
    scored whole, an existing output of this model's layout and the asked configuration is
    overwritten in place, key by key (every write an update, not an insert: about half the nodes'
    work, and readers of the output keep finding a prediction for every key); otherwise (an SQL
    query, ``parts=``, another layout) the output is destroyed and created again.  An SQL query is
    one unit: recorded when all of it is written.

    **The output follows the source's keys.**  A run over a whole cache ends by removing the
    predictions of keys the source no longer holds (found when the output has more entries than
    the source: rows deleted since an earlier run, or before an in-place overwrite).

    **Checked before anything is written**: the model loads
    (:class:`~tensorflow_ignite.errors.ModelLoadError`), its inputs fit the
    source's fields (:class:`~tensorflow_ignite.errors.ModelInputError`), the
    source has rows (:class:`~tensorflow_ignite.errors.EmptySourceError`), and
    an existing output holds this layout
    (:class:`~tensorflow_ignite.errors.OutputLayoutError`).

    ``progress`` shows a tqdm bar on stderr (default: when stderr is a
    terminal).  Either pass a connected ``client`` or ``host``, ``port`` and the connection keywords
    (:class:`~tensorflow_ignite.client.ConnectionKeywords`, as for :func:`~tensorflow_ignite.write`;
    ``server_hostname`` is the name the nodes' TLS certificates are checked against).

    ``parts`` scores only these partitions of a cache source (a launcher
    worker passes its node's primaries; ``()`` checks everything and prepares
    the output without scoring anything).  ``on_record`` is called after each
    recording step with (rows written, units recorded, units this run scores).

    On an Ignite 3 cluster (found at the handshake, or an ``Ignite3Client`` given as ``client``) the
    same call scores the table ``source`` (or the query) into the table ``output``
    (:mod:`.ignite3`): one unit, skipped by ``skip-existing`` when the output already holds this
    model's prediction for every row; ``parts`` and ``backups`` have no Ignite 3 form.
    """
    from ..client.options import ConnectionOptions

    settings = ConnectionOptions.settings_given("predict", connection)
    if mode not in _MODES:
        raise ConfigurationError(f"mode must be one of {', '.join(_MODES)}; got {mode!r}")
    if batch_size < 1 or record_every < 1:
        raise ConfigurationError("batch_size and record_every must be positive")
    if backups < 0:
        raise ConfigurationError("backups must be >= 0")
    started = time.perf_counter()
    if not is_query(source) and source == output:
        raise ConfigurationError(
            f"predict into {output!r} would write over its own source cache; name another output cache"
        )
    if parts is not None and any(p < 0 for p in parts):
        raise ConfigurationError(f"parts= holds partition numbers (>= 0); got {sorted(parts)[:10]}")
    scoring_model = load_model(model)
    options = None
    if client is None:
        options = ConnectionOptions.from_address(host, port, **settings)
    if on_ignite3(client, options):
        from ..data.on_ignite3 import ignite3_call
        from .ignite3 import REFUSED, predict_table  # the same scoring of the table or query, into a table

        what = f"predict {source[:60]!r} into {output!r} on an Ignite 3 cluster"
        with ignite3_call(what, dict(parts=parts, backups=backups), REFUSED, options, client) as on:
            return predict_table(scoring_model, source, output, on, inputs, key, args, mode, batch_size, started)
    if client is None:
        assert options is not None
        client = options.connect()
    src = open_scoring_source(client, source, args=args, key=key, batch_size=batch_size)
    # A cache's variable-length arrays (float[] as other clients write them) feed inputs of a fixed
    # shape: read dense at the model's length, each row checked (signature.py).
    bindings = bind_inputs(
        scoring_model.inputs, src.fields, source=src.describe(), explicit=inputs, dense_arrays=src.kind == "cache"
    )
    units = src.units
    if parts is not None:
        units = _chosen_units(src.units, parts, src.describe())

    # One row of zeros through the model: the exact dtypes and shapes of its outputs, before any read.
    zeros = {b.input.name: b.convert(np.zeros((1, *b.field.shape), dtype=b.field.dtype)) for b in bindings}
    sample = scoring_model.predict(zeros)
    key_sample = np.array(["k"], dtype=object) if src.key.dtype == "object" else np.zeros(1, dtype=np.int64)
    # The model's hash is asked for when first needed (a Keras object's weights are hashed on a thread).
    out = OutputCache(client, output, sample, key_sample, lambda: scoring_model.hash64)
    overwrite = mode == "overwrite"
    if not overwrite:
        out.check()

    from ..protocol.codes import AtomicityMode, WriteSynchronizationMode

    ledger = Ledger(client, output, src.identity, lambda: scoring_model.sha256)
    # FULL_SYNC: an acknowledged prediction is on the backups too, so a primary killed right after
    # the ledger records its partition complete loses nothing of it.
    expected = src.rows
    if expected is not None and parts is not None:  # this run's share of the rows, for the capacity check
        expected = -(-expected * len(units) // max(1, len(src.units)))
    # The output is created before the source is read, not while: creating a cache changes the
    # cluster's topology version, and the reader then no longer trusts node scans' partitions as
    # complete until the read ends (nothing would be recorded on the way; measured).
    whole = src.key_type in _IN_PLACE_KEYS and parts is None  # every key of the cache is this run's
    action = out.open(
        overwrite=overwrite,
        backups=backups,
        atomicity=AtomicityMode.ATOMIC,
        write_sync=WriteSynchronizationMode.FULL_SYNC,
        sql=sql,
        expected_rows=expected,
        in_place=whole,
    )

    def start_ledger() -> None:
        # A created or overwritten output starts a new generation: older records say nothing.
        ledger.begin(action != KEPT, keep_models=action == REPLACED)
        ledger.record_model(scoring_model.hash64, scoring_model.uri)

    if action == KEPT:  # the records say what to skip: needed before reading
        start_ledger()
        done = ledger.completed(units)
        ledger_ready = _done_future()
    else:
        # Nothing is skipped, so the ledger's round trips (a new generation, the model's record) run
        # on a thread while the first batch is read and scored; every send waits for them, so no
        # entry of this run is stored before the ledger says which generation and model it belongs to.
        ledger_ready = on_thread(start_ledger, f"predict-ledger-{output}")
        done = set()
    todo = [u for u in units if u not in done]

    from ..data.write.sender import progress_bar

    bar = progress_bar(progress, src.rows if not done and parts is None else None, output)
    bar.set_description(f"predict {output}")
    assert out.sender is not None
    out.sender.on_ack = bar.update
    fields = [b.field.name for b in bindings]
    shapes = {b.field.name: b.field.shape for b in bindings if b.dense}
    # A run over every partition of a cache records them in one entry when it completes them all at its end.
    recorder = _Recorder(out, ledger, whole=len(src.units) if parts is None and len(src.units) > 1 else 0)

    def predict_batch(columns: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return scoring_model.predict({b.input.name: b.convert(columns[b.field.name]) for b in bindings})

    def send(keys: np.ndarray, predicted: "Future[dict[str, np.ndarray]]") -> None:
        predictions = predicted.result()
        ledger_ready.result()
        out.send(keys, predictions)

    # The model runs on a worker thread, batch after batch, while this thread reads and decodes the
    # next batch and sends the predictions of the one before (the model and the socket release the
    # GIL), as a prefetching tf.data pipeline would: sending is off the model's path, and at most
    # two batches wait for the model.  Before a recording step every batch read has been sent, so
    # "sent" covers every row the reader counted as handed out.
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="predict")
    scoring: tuple[np.ndarray, Future[dict[str, np.ndarray]]] | None = None
    try:
        if todo:
            reading = src.read(todo, fields, shapes)
            for i, (keys, columns) in enumerate(reading, 1):
                if not len(keys):
                    continue
                predicted = pool.submit(predict_batch, columns)
                if scoring is not None:
                    send(*scoring)
                scoring = (keys, predicted)
                if i % record_every == 0:
                    send(*scoring)
                    scoring = None
                    recorder.step(reading.completed())
                    if on_record is not None:
                        on_record(out.sender.rows_acked, len(recorder.recorded), len(todo))
            if scoring is not None:
                send(*scoring)
                scoring = None
            ledger_ready.result()  # (sends waited for it; no batch may have had rows)
            recorder.step(reading.completed(), final=True)
            if on_record is not None:
                on_record(out.sender.rows_acked, len(recorder.recorded), len(todo))
        ledger_ready.result()  # also when nothing was scored (parts=()): the new generation all the same
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        _settle(ledger_ready)
        bar.close()
        ledger.finish()
    recorded = recorder.recorded
    missing = set(todo) - recorded
    if missing:  # every row was read, so every unit must be complete: a reader bug, never silently ignored
        raise PredictError(
            f"predict: partitions {sorted(missing)[:10]} of {src.describe()} were read but the "
            "reader never reported them complete, so they are not recorded as scored; run predict "
            "again (it rescores them) and report this as a bug"
        )
    stale = out.remove_absent(source, src.key_type) if whole and action != CREATED else 0
    ledger.forget_carried(scoring_model.hash64)  # every key now holds this model's prediction
    assert out.sender is not None
    result = PredictResult(
        output=output,
        source=src.describe(),
        rows=out.sender.rows_acked,
        seconds=time.perf_counter() - started,
        units_scored=len(todo),
        units_skipped=len(done),
        model_uri=scoring_model.uri,
        model_sha256=scoring_model.sha256,
        model_hash=scoring_model.hash64,
        bytes_sent=out.sender.bytes_sent,
        sql_table=out.sql_table,
        rows_per_node=dict(out.sender.rows_per_node),
        output_action=action,
        stale_removed=stale,
    )
    log.info("%s", result.summary())
    return result


def _done_future() -> "Future[None]":
    f: Future[None] = Future()
    f.set_result(None)
    return f


def _settle(f: "Future[None]") -> None:
    """Wait for ``f`` to end without raising: a failure has been raised to the caller already, or the
    run is failing for another reason."""
    try:
        f.result()
    except BaseException:  # noqa: BLE001 - already raised to the caller, or the run fails anyway (docstring)
        pass


def _chosen_units(units: tuple[int, ...], parts: Sequence[int], source: str) -> tuple[int, ...]:
    """The units ``parts`` names, checked against the source's."""
    chosen = tuple(sorted(set(parts)))
    if units == (WHOLE,):
        if chosen:
            raise ConfigurationError(
                f"parts= chooses partitions of a partitioned cache; {source} is read whole "
                "(an SQL query or a replicated cache): leave parts= out"
            )
        return chosen
    outside = [p for p in chosen if p >= len(units)]
    if outside:
        raise ConfigurationError(f"parts= {outside[:10]} outside {source}'s {len(units)} partitions")
    return chosen


class _Recorder:
    """Records units complete once every prediction sent for them is stored, without stalling the writes.

    A step notes the units newly complete and the put-alls in flight at that moment; the
    units are recorded at a later step once those put-alls are answered (they usually are by
    then: the sender collects answers as it goes), and the final step waits for all of them.
    With ``whole`` (the source's number of partitions, for a run over all of them), a final step
    that finds every partition complete and none recorded yet records them in one entry.
    """

    def __init__(self, out: OutputCache, ledger: Ledger, *, whole: int = 0) -> None:
        self.out = out
        self.ledger = ledger
        self.whole = whole
        self.recorded: set[int] = set()
        self._waiting: list[tuple[frozenset[int], set[int]]] = []

    def step(self, complete: set[int], *, final: bool = False) -> None:
        sender = self.out.sender
        assert sender is not None
        claimed = self.recorded.union(*(units for _, units in self._waiting))
        new = complete - claimed
        if new:
            self._waiting.append((sender.mark(), new))
        if final:
            self.out.flush()
        ready: set[int] = set()
        for mark, units in list(self._waiting):
            if final or sender.answered(mark):
                ready |= units
                self._waiting.remove((mark, units))
        if ready and self.whole and not self.recorded and len(ready) == self.whole:
            self.ledger.record_whole(self.whole)  # units are the partitions 0..whole-1
            self.recorded |= ready
        elif ready:
            self.ledger.record(sorted(ready))
            self.recorded |= ready
