"""The readers being compared, each as a :class:`~bench.harness.Contender` factory.

* :func:`ignite_dataset` -- ``IgniteDataset`` iterated in TensorFlow (eager loop
  over batches of ``batch_size``), the way a training loop consumes it;
* :func:`our_reader` -- the same dataset's internal reader (``_reader``) driven
  without TensorFlow: what our client and decoder deliver as NumPy column batches;
* :func:`java_scan` -- Ignite's own Java thin client (``bench/java`` ScanBench,
  same page size, JIT warmed up by untimed scans in the same JVM): the reference;
* :func:`pyignite_scan` / :func:`pyignite_sql` -- what users do today: pyignite's
  cursor wrapped in ``tf.data.Dataset.from_generator``, then ``batch``;
* :func:`sql_dataset` / :func:`sql_reader` -- ``IgniteDataset.from_sql`` and its reader;
* :func:`loopback_ceiling` -- the same number of bytes through a raw socket;
* :func:`keras_fit_ignite` / :func:`keras_fit_arrays` -- Keras ``fit`` steps/s on a small CNN fed by
  IgniteDataset or by the same arrays through ``from_tensor_slices`` (training overhead).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import numpy as np

from .harness import TEARDOWN, Contender, Run

F = TypeVar("F", bound=Callable[..., Contender])


def _spec(factory: F) -> F:
    """Record ``(factory name, args, kwargs)`` on the contender, so a profiler child can rebuild it."""

    @functools.wraps(factory)
    def build(*args: Any, **kwargs: Any) -> Contender:
        contender = factory(*args, **kwargs)
        # A factory of another bench module is named "module:factory" (bench/profiling.py imports it).
        name = factory.__name__ if factory.__module__ == __name__ else f"{factory.__module__}:{factory.__name__}"
        contender.spec = (name, list(args), dict(kwargs))
        return contender

    return build  # type: ignore[return-value]

__all__ = [
    "ignite_dataset", "our_reader", "java_scan", "pyignite_scan", "pyignite_sql", "sql_dataset", "sql_reader",
    "loopback_ceiling", "keras_fit_ignite", "keras_fit_arrays", "node_traffic", "GeneratorRead", "drain",
]


def _rows(batch: Any) -> int:
    """Rows in a batch: a dict of columns (nested dicts too) or a tuple of them."""
    first = batch[0] if isinstance(batch, tuple) else next(iter(batch.values()))
    while isinstance(first, Mapping):
        first = next(iter(first.values()))
    return int(first.shape[0])


def drain(dataset: Any, count: Callable[[Any], int] = _rows, *, unit_bytes: int = 0) -> Run:
    """Iterate a ``tf.data`` dataset eagerly to its end: ``Run(seconds to the end of the data, units)``.

    ``count(element)`` says how many units (rows, bytes) an element holds, each
    of ``unit_bytes`` payload bytes (``Run.nbytes``).  The iterator's deletion is timed
    apart (``Run.extra[TEARDOWN]``): deleting a tf.data iterator joins
    TensorFlow's autotuning thread, and in TF 2.21 that thread can miss the
    wake-up (its cancellation callback notifies before the cancellation
    manager reads as cancelled) and sleep on to its next optimisation tick --
    10, 30, 70, 150, 310, 630 ms ... after the first element, up to 60 s
    apart.  Whatever the source (a ``Dataset.range`` pipeline does it too),
    in 10-25 % of reads here, whole runs at a time in some processes: a
    per-iterator cost of TensorFlow's, not a rate of the reader, reported
    beside the table instead (:func:`bench.report.teardown_note`).
    """
    t0 = time.perf_counter()
    iterator = iter(dataset)
    units, element = 0, None
    for element in iterator:
        units += count(element)
    seconds = time.perf_counter() - t0
    del element
    t1 = time.perf_counter()
    del iterator
    return Run(seconds, units, units * unit_bytes, extra={TEARDOWN: time.perf_counter() - t1})


class GeneratorRead:
    """What users do today on Python clients: rows from a generator through ``from_generator().batch()``.

    ``rows(read)`` yields one element per row and should stop when ``read.late()``:
    a read stops after ``max_seconds`` (the rate of the rows read is what counts),
    or goes to the end.  :meth:`run` is one timed read, :meth:`warm` a short one
    (imports, per-schema classes, tf.function tracing).
    """

    def __init__(self, rows: Callable[["GeneratorRead"], Iterator[Any]], signature: Any, *, batch_size: int,
                 row_bytes: int, max_seconds: float | None) -> None:
        self._rows = rows
        self.signature = signature
        self.batch_size = batch_size
        self.row_bytes = row_bytes
        self.max_seconds = max_seconds
        self._deadline = float("inf")

    def late(self) -> bool:
        return time.perf_counter() > self._deadline

    def dataset(self) -> Any:
        import tensorflow as tf

        return tf.data.Dataset.from_generator(lambda: self._rows(self),
                                              output_signature=self.signature).batch(self.batch_size)

    def run(self) -> Run:
        ds = self.dataset()
        t0 = time.perf_counter()
        self._deadline = t0 + self.max_seconds if self.max_seconds else float("inf")
        run = drain(ds, unit_bytes=self.row_bytes)
        self._deadline = float("inf")
        if self.max_seconds and run.seconds >= self.max_seconds:
            run.extra["partial"] = run.units
        return run

    def warm(self) -> None:
        for _ in self.dataset().take(2):
            pass

    def limits(self, max_reps: int | None) -> str:
        """The note's words on when a read stops and how many are timed."""
        limit = f"; stops after {self.max_seconds:g} s (rate of the rows read)" if self.max_seconds else ""
        if max_reps is not None:
            limit += f"; {max_reps} timed repetition(s)"
        return limit


def node_traffic(client: Any) -> dict[str, tuple[int, int, int]]:
    """Per connection (node address): bytes received, scan queries sent, scan pages fetched."""
    from tensorflow_ignite.protocol.codes import Op

    return {c.address: (c.bytes_received, c.op_counts[Op.QUERY_SCAN], c.op_counts[Op.QUERY_SCAN_CURSOR_GET_PAGE])
            for c in client.connections()}


def _traffic_delta(before: dict[str, tuple[int, int, int]], after: dict[str, tuple[int, int, int]]
                   ) -> dict[str, tuple[int, int, int]]:
    out = {}
    for addr, now in after.items():
        was = before.get(addr, (0, 0, 0))
        out[addr] = tuple(a - b for a, b in zip(now, was))  # type: ignore[assignment]
    return out


# ------------------------------------------------------------------ IgniteDataset
@_spec
def ignite_dataset(host: str, port: int, cache: str, *, row_bytes: int, batch_size: int,
                   page_size: int | None = None, num_parallel_reads: int | None = None,
                   label: str = "IgniteDataset in TF", key: str = "dataset", traffic: bool = False,
                   shapes: Mapping[str, Sequence[int]] | None = None) -> Contender:
    """Iterate ``IgniteDataset(cache, batch_size=...)`` eagerly to the end (``shapes``: its dense arrays)."""

    made: list[Any] = []

    def dataset() -> Any:  # built once, outside the clock; every iteration scans again
        if not made:
            from tensorflow_ignite import IgniteDataset

            made.append(IgniteDataset(cache, host, port, page_size=page_size, batch_size=batch_size,
                                      num_parallel_reads=num_parallel_reads, shapes=shapes))
        return made[0]

    def run() -> Run:
        ds = dataset()
        before = node_traffic(ds.client) if traffic else {}
        run = drain(ds, unit_bytes=row_bytes)
        if traffic:
            run.extra["traffic"] = _traffic_delta(before, node_traffic(ds.client))
        return run

    return Contender(key, label, run, warmup=run,
                     note=f"batch_size={batch_size}, page_size={page_size or 'auto'}"
                          + (f", shapes={dict(shapes)}" if shapes else ""))


@_spec
def our_reader(host: str, port: int, cache: str, *, row_bytes: int, page_size: int | None = None,
               threads: int = 1, label: str = "our reader alone (NumPy)", key: str = "reader",
               traffic: bool = False) -> Contender:
    """The dataset's reader (``IgniteDataset._reader``) over every scan task, no TensorFlow involved.

    ``threads`` workers each take every ``threads``-th task, as the dataset's
    interleaved generators do (1 by default: on a 2-core machine more threads
    only contend for the GIL).
    """
    made: list[Any] = []

    def run() -> Run:
        if not made:
            from tensorflow_ignite import IgniteDataset

            made.append(IgniteDataset(cache, host, port, page_size=page_size, batch_size=1))
        ds = made[0]
        reader = ds._reader
        n_tasks = len(reader.tasks)
        workers = max(1, min(n_tasks, threads))
        counts = [0] * workers
        errors: list[BaseException] = []

        def batches(w: int) -> Any:
            if hasattr(reader, "worker_batches"):
                return reader.worker_batches(w, workers)
            return (b for i in range(w, n_tasks, workers) for b in reader.batches(i))

        def work(w: int) -> None:
            try:
                for batch in batches(w):
                    counts[w] += _rows(batch)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
                errors.append(exc)

        before = node_traffic(ds.client) if traffic else {}
        t0 = time.perf_counter()
        if workers == 1:
            work(0)
        else:
            pool = [threading.Thread(target=work, args=(w,), name=f"bench-reader-{w}") for w in range(workers)]
            for t in pool:
                t.start()
            for t in pool:
                t.join()
        dt = time.perf_counter() - t0
        if errors:
            raise errors[0]
        rows = sum(counts)
        extra = {"traffic": _traffic_delta(before, node_traffic(ds.client))} if traffic else {}
        return Run(dt, rows, rows * row_bytes, extra=extra)

    return Contender(key, label, run, warmup=run,
                     note=f"the dataset's `_reader` over all partitions, {threads} thread(s), "
                          f"page_size={page_size or 'auto'}")


# ------------------------------------------------------------------ Java reference
@_spec
def java_scan(host: str, port: int, cache: str, *, page_size: int, warmup: int = 2,
              addresses: Sequence[tuple[str, int]] | None = None,
              label: str = "Java thin client (reference)", key: str = "java") -> Contender:
    """One ScanBench JVM per repetition: ``warmup`` untimed scans, then one timed scan."""
    from .javaclient import build_java_tools, run_scan_bench

    build_java_tools()

    def run() -> Run:
        (rec,) = run_scan_bench(host, port, cache, page_size, repeat=1, warmup=warmup,
                                addresses=list(addresses) if addresses else None)
        return Run(float(rec["seconds"]), int(rec["rows"]), int(rec["bytes"]),
                   peak_bytes=int(rec.get("peak_rss_bytes") or 0) or None)

    return Contender(key, label, run, memory="own",
                     note=f"ScanQuery, page_size={page_size}, {warmup} warm-up scan(s) per JVM")


# ------------------------------------------------------------------ pyignite
@_spec
def pyignite_scan(host: str, port: int, cache: str, *, fields: Mapping[str, tuple[Any, Sequence[int]]],
                  row_bytes: int, page_size: int, batch_size: int, max_seconds: float | None = None,
                  max_reps: int | None = None, label: str = "pyignite + from_generator",
                  key: str = "pyignite") -> Contender:
    """``cache.scan()`` in a generator yielding one dict per row, into ``from_generator().batch()``.

    ``fields`` maps value field -> (dtype, per-row shape); byte-array fields
    arrive from pyignite as ``bytes`` and become arrays with ``np.frombuffer``.
    ``max_seconds`` stops a slow read early (the rate is then that of the rows
    read; the run's ``extra["partial"]`` says how many); ``max_reps`` caps its
    timed repetitions (:attr:`Contender.max_reps`).
    """
    import tensorflow as tf
    from pyignite import Client

    client = Client(timeout=60.0)
    client.connect(host, port)
    pcache = client.get_cache(cache)
    signature = {name: tf.TensorSpec(tuple(shape), tf.as_dtype(dtype)) for name, (dtype, shape) in fields.items()}
    convert: dict[str, Callable[[Any], Any]] = {}
    for name, (dtype, shape) in fields.items():
        if shape:
            convert[name] = (lambda dt, shp: lambda v: np.frombuffer(v, dt).reshape(shp))(np.dtype(dtype), tuple(shape))
        else:
            convert[name] = (lambda dt: lambda v: dt.type(v))(np.dtype(dtype))

    def rows(read: GeneratorRead) -> Any:
        with pcache.scan(page_size=page_size) as cursor:
            for _key, value in cursor:
                yield {name: f(getattr(value, name)) for name, f in convert.items()}
                if read.late():
                    return

    # Warming up also builds pyignite's per-schema classes.
    read = GeneratorRead(rows, signature, batch_size=batch_size, row_bytes=row_bytes, max_seconds=max_seconds)
    return Contender(key, label, read.run, warmup=read.warm,
                     note=f"page_size={page_size}, batch({batch_size}){read.limits(max_reps)}",
                     close=client.close, max_reps=max_reps)


@_spec
def pyignite_sql(host: str, port: int, query: str, *, columns: Sequence[tuple[str, Any]], row_bytes: int,
                 page_size: int, batch_size: int, max_seconds: float | None = None, max_reps: int | None = None,
                 label: str = "pyignite SQL + from_generator", key: str = "pyignite") -> Contender:
    """``client.sql(query)`` rows (lists) in a generator, into ``from_generator().batch()``.

    ``max_seconds`` and ``max_reps`` as for :func:`pyignite_scan`.
    """
    import tensorflow as tf
    from pyignite import Client

    client = Client(timeout=60.0)
    client.connect(host, port)
    signature = tuple(tf.TensorSpec((), tf.as_dtype(dt)) for _, dt in columns)

    def rows(read: GeneratorRead) -> Any:
        with client.sql(query, page_size=page_size) as cursor:
            for row in cursor:
                yield tuple(row)
                if read.late():
                    return

    read = GeneratorRead(rows, signature, batch_size=batch_size, row_bytes=row_bytes, max_seconds=max_seconds)
    return Contender(key, label, read.run, warmup=read.warm,
                     note=f"page_size={page_size}, batch({batch_size}){read.limits(max_reps)}",
                     close=client.close, max_reps=max_reps)


# ------------------------------------------------------------------ SQL
@_spec
def sql_dataset(host: str, port: int, query: str, *, row_bytes: int, page_size: int, batch_size: int,
                label: str = "IgniteDataset.from_sql in TF", key: str = "dataset") -> Contender:
    def run() -> Run:
        from tensorflow_ignite import IgniteDataset

        ds = IgniteDataset.from_sql(query, host=host, port=port, page_size=page_size, batch_size=batch_size)
        return drain(ds, unit_bytes=row_bytes)

    return Contender(key, label, run, warmup=run,
                     note=f"page_size={page_size}, batch_size={batch_size}")


@_spec
def sql_reader(host: str, port: int, query: str, *, row_bytes: int, page_size: int,
               label: str = "from_sql reader alone (NumPy)", key: str = "reader") -> Contender:
    """The reader behind ``from_sql`` (``SqlReader.batches``) without TensorFlow."""

    def run() -> Run:
        from tensorflow_ignite.client import ConnectionOptions
        from tensorflow_ignite.data.discover import sql_schema
        from tensorflow_ignite.data.reader import SqlReader

        client = ConnectionOptions(host=host, port=port).connect()
        kwargs = dict(schema="PUBLIC", page_size=page_size, lazy=True)
        schema = sql_schema(client, query, (), kwargs, {})
        reader = SqlReader(client, query, (), schema, kwargs)
        t0 = time.perf_counter()
        n = 0
        for batch in reader.batches():
            n += _rows(batch)
        dt = time.perf_counter() - t0
        return Run(dt, n, n * row_bytes)

    return Contender(key, label, run, warmup=run, note=f"page_size={page_size}")


# ------------------------------------------------------------------ ceiling
@_spec
def loopback_ceiling(server_port: int, *, rows: int, nbytes: int, chunk: int,
                     label: str = "raw loopback socket (ceiling)", key: str = "socket") -> Contender:
    from .ceiling import read_stream

    def run() -> Run:
        return Run(read_stream(server_port, nbytes, chunk), rows, nbytes)

    return Contender(key, label, run, warmup=run,
                     note=f"{nbytes / 1e6:.1f} MB in {chunk / 1e6:.2f} MB receives, no protocol")


@_spec
def raw_pages(host: str, port: int, cache: str, *, row_bytes: int, page_size: int,
              label: str = "raw scan pages, not decoded (node ceiling)", key: str = "raw") -> Contender:
    """The node's own serving rate: one scan cursor, pages received and nothing decoded.

    The same ``OP_QUERY_SCAN`` + ``CURSOR_GET_PAGE`` exchange as the readers,
    through our client's receive path (one page requested ahead), but each
    page is only counted: no rows decoded, no arrays, no TensorFlow.  No thin
    client reading one cursor of this node can be faster; where a read target
    asks for more than this, the node is the bound.
    """
    from tensorflow_ignite.client import ConnectionOptions

    made: list[Any] = []

    def run() -> Run:
        if not made:
            made.append(ConnectionOptions(host=host, port=port).connect())  # shared; closed with the pool
        pages = made[0].cache(cache).scan_pages(page_size=page_size)
        t0 = time.perf_counter()
        rows = sum(page.row_count for page in pages)
        dt = time.perf_counter() - t0
        return Run(dt, rows, rows * row_bytes)

    return Contender(key, label, run, warmup=run,
                     note=f"Cache.scan_pages(page_size={page_size}): rows counted, not decoded")


# ------------------------------------------------------------------ training
def _prep(pixels: Any, label: Any) -> Any:
    """The preprocessing both training inputs share: NHWC float32 in [0, 1]."""
    import tensorflow as tf

    x = tf.cast(tf.reshape(pixels, [-1, 28, 28, 1]), tf.float32) / 255.0
    return x, label


def _map_fn(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Plain TF ops need no AutoGraph conversion (which re-reads and re-parses source files)."""
    import tensorflow as tf

    return tf.autograph.experimental.do_not_convert(fn)


@_spec
def keras_fit_ignite(host: str, port: int, cache: str, *, batch_size: int, epochs: int,
                     label: str = "Keras fit on IgniteDataset", key: str = "dataset") -> Contender:
    def make() -> Any:
        from tensorflow_ignite import IgniteDataset

        ds = IgniteDataset(cache, host, port, batch_size=batch_size)
        return ds.map(_map_fn(lambda b: _prep(b["val"]["pixels"], b["val"]["label"])))

    return _keras_fit(make, epochs=epochs, label=label, key=key, note=f"batch_size={batch_size}")


@_spec
def keras_fit_arrays(rows: int, seed: int, *, batch_size: int, epochs: int,
                     label: str = "Keras fit on from_tensor_slices (in memory)", key: str = "arrays") -> Contender:
    from .scenarios import mnist_arrays

    arrays = mnist_arrays(rows, seed, image_shape=(28, 28))

    def make() -> Any:
        import tensorflow as tf

        return tf.data.Dataset.from_tensor_slices((arrays["pixels"], arrays["label"])).batch(batch_size).map(
            _map_fn(_prep))

    return _keras_fit(make, epochs=epochs, label=label, key=key, note=f"same arrays, batch({batch_size})")


def _keras_fit(make_dataset: Callable[[], Any], *, epochs: int, label: str, key: str, note: str,
               seed: int = 0) -> Contender:
    """Keras ``fit`` on a small CNN; steps/s over epochs 2..N (epoch 1 traces and warms up)."""

    def run() -> Run:
        import keras
        import tensorflow as tf

        keras.utils.set_random_seed(seed)
        model = keras.Sequential([
            keras.Input((28, 28, 1)),
            keras.layers.Conv2D(8, 3, activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(16, 3, activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Flatten(),
            keras.layers.Dense(10),
        ])
        model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        timer = _epoch_timer()
        model.fit(make_dataset().prefetch(tf.data.AUTOTUNE), epochs=epochs, verbose=0, callbacks=[timer])
        timed = timer.epochs[1:] or timer.epochs
        seconds = sum(t for t, _ in timed)
        steps = sum(s for _, s in timed)
        return Run(seconds, steps, extra={"epochs": timer.epochs})

    return Contender(key, label, run, note=f"{note}; {epochs} epochs, steps/s of epochs 2..{epochs}")


def _epoch_timer() -> Any:
    """A Keras callback recording (seconds, steps) per epoch."""
    import keras

    class EpochTimer(keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self.epochs: list[tuple[float, int]] = []
            self._t0 = 0.0
            self._steps = 0

        def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
            self._steps = 0
            self._t0 = time.perf_counter()

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            self._steps += 1

        def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
            self.epochs.append((time.perf_counter() - self._t0, self._steps))

    return EpochTimer()
