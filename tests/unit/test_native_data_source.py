"""The native tf.data source op (``IgnitePyDataset``) with plain Python generators.

No Ignite here: the op's contract with Python (elements, memory, errors,
iterator lifetime) is tested on generators; IgniteDataset's own tests run it
against real nodes.
"""

from __future__ import annotations

import gc
import os
import pickle
import secrets
import subprocess
import sys
import weakref

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from tensorflow_ignite.errors import CacheNotFoundError, ConfigurationError, IgniteConnectionError  # noqa: E402
from tensorflow_ignite.ignite3.protocol.spans import ByteSpans  # noqa: E402
from tensorflow_ignite.native import data_source  # noqa: E402

SPEC = {
    "label": tf.TensorSpec((None,), tf.int32),
    "val": {
        "pixels": tf.TensorSpec((None, 4), tf.uint8),
        "score": tf.TensorSpec((None,), tf.float64),
        "flag": tf.TensorSpec((None,), tf.bool),
        "name": tf.TensorSpec((None,), tf.string),
    },
}


def aligned(shape: tuple[int, ...], dtype: type, offset: int = 0) -> np.ndarray:
    """A C-contiguous array whose data starts ``offset`` bytes past a 64-byte boundary."""
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.zeros(n + 128, np.uint8)
    start = (-raw.ctypes.data) % 64 + offset
    return raw[start:start + n].view(dtype).reshape(shape)


def page(first: int, n: int) -> dict:
    pixels = aligned((n, 4), np.uint8)
    pixels[:] = np.arange(first, first + n, dtype=np.uint8)[:, None]
    return {
        "label": np.arange(first, first + n, dtype=np.int32),
        "val": {
            "pixels": pixels,
            "score": np.linspace(0, 1, n),
            "flag": np.arange(n) % 2 == 0,
            "name": np.array([f"row-{i}".encode() for i in range(first, first + n)], dtype=object),
        },
    }


PAGES = [page(0, 5), page(5, 7), page(12, 1)]


def as_numpy(batch: dict) -> dict:
    return tf.nest.map_structure(lambda t: t.numpy(), batch)


def test_elements_match_from_generator() -> None:
    native = data_source.python_source(lambda: iter(PAGES), SPEC)
    reference = tf.data.Dataset.from_generator(lambda: iter(PAGES), output_signature=SPEC)
    got = [as_numpy(b) for b in native.rebatch(4)]
    want = [as_numpy(b) for b in reference.rebatch(4)]
    assert len(got) == len(want) == 4
    for g, w in zip(got, want):
        tf.nest.assert_same_structure(g, w)
        for a, b in zip(tf.nest.flatten(g), tf.nest.flatten(w)):
            assert a.dtype == b.dtype and a.shape == b.shape
            np.testing.assert_array_equal(a, b)
    assert native.element_spec == SPEC


@pytest.mark.parametrize("batch_size", [1, 4, 6, 13, 20])
@pytest.mark.parametrize("drop_remainder", [False, True])
@pytest.mark.parametrize("allocator", [None, "aligned"])
def test_batches_are_recut_like_rebatch(batch_size: int, drop_remainder: bool, allocator: str | None) -> None:
    pages = [page(0, 0), *PAGES, page(13, 0), page(13, 9)]
    joined: list[tuple[int, ...]] = []

    def allocate(shape, dtype):
        joined.append(shape)
        return aligned(shape, dtype)

    native = data_source.python_source(lambda: iter(pages), SPEC, batch_size=batch_size,
                                       drop_remainder=drop_remainder,
                                       allocate=allocate if allocator else None)
    reference = tf.data.Dataset.from_generator(lambda: iter(pages), output_signature=SPEC).rebatch(
        batch_size, drop_remainder=drop_remainder)
    assert native.element_spec == reference.element_spec
    got = [as_numpy(b) for b in native]
    want = [as_numpy(b) for b in reference]
    assert [len(b["label"]) for b in got] == [len(b["label"]) for b in want]
    for g, w in zip(got, want):
        for a, b in zip(tf.nest.flatten(g), tf.nest.flatten(w)):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
    if allocator and batch_size in (4, 6):
        assert joined and all(shape[0] <= batch_size for shape in joined)  # joins used its memory


def spans_page(first: int, n: int) -> dict:
    """``page(first, n)`` with its names as a span column of one shared buffer (in reverse order)."""
    out = page(first, n)
    names = [bytes(v) for v in out["val"]["name"]]
    buffer, starts = b"<junk>", [0] * n
    for i in reversed(range(n)):
        starts[i] = len(buffer)
        buffer += names[i]
    buffer += b"<junk>"
    lengths = np.array([len(v) for v in names], np.int64)
    out["val"]["name"] = ByteSpans(buffer, np.array(starts, np.int64), np.array(starts, np.int64) + lengths)
    assert [bytes(v) for v in out["val"]["name"].objects()] == names
    return out


@pytest.mark.parametrize("batch_size", [None, 4, 13])
def test_span_columns_are_copied_from_their_buffer(batch_size: int | None) -> None:
    """A string leaf given as spans of a buffer reads as the same strings (also cut and joined into batches)."""
    pages = [page(0, 0), *PAGES, page(13, 9)]
    spanned = [spans_page(0, 0), spans_page(0, 5), spans_page(5, 7), spans_page(12, 1), spans_page(13, 9)]
    native = data_source.python_source(lambda: iter(spanned), SPEC, batch_size=batch_size)
    reference = tf.data.Dataset.from_generator(lambda: iter(pages), output_signature=SPEC)
    reference = reference.unbatch().batch(1) if batch_size is None else reference.rebatch(batch_size)
    got = [as_numpy(b) for b in (native if batch_size else native.unbatch().batch(1))]
    want = [as_numpy(b) for b in reference]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        for a, b in zip(tf.nest.flatten(g), tf.nest.flatten(w)):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    "owner, starts, ends, message",
    [
        ([0, 1], [0, 3], [3, 99], r"string 1's span reaches outside its buffer"),
        ([0, 0], [0, 3], [3, 2], r"string 1's span reaches outside"),
        ([0, 0], [-1, 3], [3, 6], r"string 0's span reaches outside"),
        ([0, 2], [0, 3], [3, 4], r"string 1's span reaches outside"),  # no buffer 2
        ([0, -1], [0, 3], [3, 4], r"string 1's span reaches outside"),
        ([0, 0], np.array([0, 3], np.int32), [3, 6], r"the starts of 2 strings must be an int64 array of 2 items"),
        ([0], [0, 3], [3, 6], r"the owner of 2 strings must be an int64 array of 2 items"),
    ],
)
def test_span_columns_the_op_cannot_trust_are_errors(owner, starts, ends, message) -> None:
    spec = (tf.TensorSpec((None,), tf.string),)
    item = ((2,), (b"abcdef", bytearray(b"xyz")), *(np.asarray(a, getattr(a, "dtype", np.int64))
                                                   for a in (owner, starts, ends)))
    ds = data_source.python_source(lambda: iter([item]), spec)
    source = data_source.source_of(ds)
    assert source is not None
    source.flatten = lambda elements: ((e,) for e in elements)  # past ByteSpans' own checks, to the op's
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        next(iter(ds))


def test_span_columns_read_from_several_buffers() -> None:
    spec = (tf.TensorSpec((None,), tf.string),)
    item = ((3,), (b"abcdef", bytearray(b"xyz")), np.array([1, 0, 1]), np.array([0, 2, 3]), np.array([2, 6, 3]))
    ds = data_source.python_source(lambda: iter([item]), spec)
    source = data_source.source_of(ds)
    assert source is not None
    source.flatten = lambda elements: ((e,) for e in elements)
    assert next(iter(ds))[0].numpy().tolist() == [b"xy", b"cdef", b""]


def test_aligned_arrays_are_adopted_and_others_copied() -> None:
    spec = (tf.TensorSpec((3,), tf.float32), tf.TensorSpec((3,), tf.float32))
    adopted, copied = aligned((3,), np.float32), aligned((3,), np.float32, offset=4)
    adopted[:] = copied[:] = 1.0
    it = iter(data_source.python_source(lambda: iter([(adopted, copied)]), spec))
    a, c = next(it)
    adopted[:] = copied[:] = 7.0
    assert a.numpy().tolist() == [7.0, 7.0, 7.0]  # the tensor is the array's memory
    assert c.numpy().tolist() == [1.0, 1.0, 1.0]  # unaligned: a copy
    held, copied_refs = sys.getrefcount(adopted), sys.getrefcount(copied)
    del a, c
    gc.collect()
    assert data_source.release_pending() >= 1
    assert sys.getrefcount(adopted) == held - 1  # the tensor's reference is gone
    assert sys.getrefcount(copied) == copied_refs  # a copy never referred to the array


def test_every_iterator_runs_the_factory_and_an_abandoned_one_closes_its_generator() -> None:
    events: list[str] = []

    def factory():
        events.append("start")
        try:
            yield from PAGES
        finally:
            events.append("closed")

    ds = data_source.python_source(factory, SPEC)
    assert sum(int(b["label"].shape[0]) for b in ds) == 13
    assert sum(int(b["label"].shape[0]) for b in ds) == 13
    assert events == ["start", "closed", "start", "closed"]

    it = iter(ds)
    next(it)
    del it
    gc.collect()
    assert events[-2:] == ["start", "closed"]


def test_generator_errors_name_the_exception() -> None:
    def factory():
        yield PAGES[0]
        raise RuntimeError("cache 'mnist' went away")

    it = iter(data_source.python_source(factory, SPEC))
    next(it)
    with pytest.raises(tf.errors.InternalError, match=r"RuntimeError: cache 'mnist' went away") as caught:
        next(it)
    assert "Traceback (most recent call last)" in caught.value.message
    assert "in factory" in caught.value.message  # the generator's own frame


@pytest.mark.parametrize(
    "error, tf_error",
    [
        (IgniteConnectionError("no node could serve the scan of cache 'mnist'"), tf.errors.UnavailableError),
        (CacheNotFoundError("cache 'mnist' does not exist", status=1000), tf.errors.NotFoundError),
        (ConfigurationError("page_size must be positive"), tf.errors.InvalidArgumentError),
    ],
)
def test_ignite_errors_keep_their_tf_error_class(error, tf_error) -> None:
    def factory():
        raise error
        yield  # a generator

    with pytest.raises(tf_error, match=type(error).__name__):
        next(iter(data_source.python_source(factory, SPEC)))


@pytest.mark.parametrize(
    "bad, message",
    [
        ((np.zeros((2, 3), np.float32),), r"output 0 has shape \[2,3\], expected \[\?,4\]"),
        ((np.zeros((2, 4), np.float64),), r"output 0 has items of 8 bytes, expected float"),
    ],
)
def test_elements_that_break_the_signature_are_errors(bad, message) -> None:
    spec = (tf.TensorSpec((None, 4), tf.float32),)
    # Bypass the flattener's dtype conversion to reach the op's own checks.
    ds = data_source.python_source(lambda: iter([bad]), spec)
    source = data_source.source_of(ds)
    assert source is not None
    source.flatten = lambda elements: iter(elements)
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        next(iter(ds))


def test_works_inside_tf_function_and_through_tf_data_rewrites() -> None:
    ds = data_source.python_source(lambda: iter(PAGES), SPEC)
    pipeline = ds.map(lambda b: tf.reduce_sum(b["label"]), num_parallel_calls=2).prefetch(2)

    @tf.function
    def total(d):
        s = tf.constant(0, tf.int32)
        for x in d:
            s += x
        return s

    assert int(total(pipeline)) == sum(range(13))
    options = tf.data.Options()
    options.experimental_optimization.map_parallelization = True
    assert sum(int(x) for x in pipeline.with_options(options)) == sum(range(13))


def test_keras_fit_reads_the_source() -> None:
    def factory():
        rng = np.random.default_rng(0)
        for _ in range(4):
            yield aligned((8, 4), np.float32) + rng.random((8, 4), np.float32), rng.random((8, 1), np.float32)

    spec = (tf.TensorSpec((None, 4), tf.float32), tf.TensorSpec((None, 1), tf.float32))
    ds = data_source.python_source(factory, spec)
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    history = model.fit(ds, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2 and all(np.isfinite(history.history["loss"]))


def test_registry_entry_goes_with_the_dataset() -> None:
    ds = data_source.python_source(lambda: iter(PAGES), SPEC)
    source = data_source.source_of(ds)
    assert source is not None  # registered while the dataset lives, found in its graph
    assert data_source.source_of(ds.map(lambda b: b["label"]).prefetch(1)) is source  # and in pipelines over it
    registered = weakref.ref(source)
    del ds, source
    gc.collect()
    assert registered() is None, "the registry still holds the source of a dataset that is gone"


def test_supports_dense_specs_only() -> None:
    assert data_source.supports(SPEC)
    assert not data_source.supports({"v": tf.RaggedTensorSpec((None, None), tf.int32)})
    assert not data_source.supports(tf.SparseTensorSpec((None, 3), tf.int64))
    with pytest.raises(ValueError, match="dense"):
        data_source.python_source(lambda: iter(()), tf.RaggedTensorSpec((None, None), tf.int32))


def test_ignite_dataset_falls_back_to_from_generator_with_one_warning(monkeypatch, caplog) -> None:
    monkeypatch.delenv(data_source.SOURCE_ENV, raising=False)
    assert data_source.use_native(SPEC)  # what IgniteDataset asks: the op is available here
    # A reason of its own (a reason is warned about once per process).
    reason = f"NativeBuildError: no C++ compiler ({secrets.token_hex(4)})"
    monkeypatch.setattr(data_source, "unavailable_reason", lambda: reason)
    with caplog.at_level("WARNING", logger=data_source.__name__):
        assert not data_source.use_native(SPEC)
        assert not data_source.use_native(SPEC)
    warnings = [r for r in caplog.records if "from_generator" in r.getMessage()]
    assert len(warnings) == 1 and reason in warnings[0].getMessage()
    monkeypatch.setenv(data_source.SOURCE_ENV, "sometimes")
    with pytest.raises(ConfigurationError, match="'native' or 'generator'"):
        data_source.use_native(SPEC)


class CountingRun:
    """A resumable run over the numbers 0..n-1 in batches of ``page``: its state is how many were handed out."""

    def __init__(self, n: int, page: int, state: bytes | None, next_split=None) -> None:
        self.handed_out = int(state.decode()) if state is not None else 0
        self.start = self.handed_out
        self.n, self.page, self.next_split = n, page, next_split
        self.closed = False

    def __iter__(self):
        if self.next_split is not None:  # splits: each index i is the batch [i*page, (i+1)*page)
            while (i := self.next_split()) is not None:
                yield {"x": np.arange(i * self.page, min(self.n, (i + 1) * self.page), dtype=np.int64)}
            return
        for first in range(self.start, self.n, self.page):
            yield {"x": np.arange(first, min(self.n, first + self.page), dtype=np.int64)}

    def emitted(self, rows: int) -> None:
        self.handed_out += rows

    def save(self) -> bytes:
        return str(self.handed_out).encode()

    def close(self) -> None:
        self.closed = True


X_SPEC = {"x": tf.TensorSpec((None,), tf.int64)}


def test_a_resumable_source_saves_the_rows_handed_to_tensorflow_and_resumes(tmp_path) -> None:
    ds = data_source.python_source(lambda state, splits: CountingRun(100, 7, state), X_SPEC, batch_size=10,
                                   resumable=True).prefetch(2)
    it = iter(ds)
    first = [int(v) for _ in range(3) for v in next(it)["x"].numpy()]
    path = tf.train.Checkpoint(iterator=it).write(str(tmp_path / "ckpt"))
    again = iter(ds)
    tf.train.Checkpoint(iterator=again).read(path).assert_consumed()
    rest = [int(v) for b in again for v in b["x"].numpy()]
    # The op saved what it had handed out (the prefetch buffer saved its own elements):
    # re-cut batches of 10 from pages of 7, nothing lost or repeated.
    assert first + rest == list(range(100))
    finished = tf.train.Checkpoint(iterator=again).write(str(tmp_path / "done"))
    third = iter(ds)
    tf.train.Checkpoint(iterator=third).read(finished).assert_consumed()
    assert list(third) == []


def test_a_generator_iterator_cannot_be_saved(tmp_path) -> None:
    it = iter(data_source.python_source(lambda: iter(PAGES), SPEC))
    next(it)
    with pytest.raises(tf.errors.UnimplementedError, match="reads a Python generator.*IgniteDataset"):
        tf.train.Checkpoint(iterator=it).write(str(tmp_path / "ckpt"))


def _serialized(ds) -> tuple[bytes, object]:
    """The graph of ``ds`` (TensorFlow's private ``_as_serialized_graph``) and its element spec."""
    return ds._as_serialized_graph().numpy(), ds.element_spec


def _from_graph(graph: bytes, spec):
    """A dataset run from a serialized graph (TensorFlow's internal ops, as the tf.data service does)."""
    from tensorflow.python.data.ops import dataset_ops
    from tensorflow.python.ops import gen_experimental_dataset_ops

    return dataset_ops._VariantDataset(gen_experimental_dataset_ops.dataset_from_graph(graph), spec)


#: Runs a pickled (graph, element spec) in a fresh process and prints what its first element raised.
RUN_ELSEWHERE = """
import pickle, sys
import tensorflow as tf
import tensorflow_ignite  # registers the op in this process
from tensorflow.python.data.ops import dataset_ops
from tensorflow.python.ops import gen_experimental_dataset_ops

graph, spec = pickle.loads(open(sys.argv[1], "rb").read())
ds = dataset_ops._VariantDataset(gen_experimental_dataset_ops.dataset_from_graph(graph), spec)
try:
    next(iter(ds))
except tf.errors.OpError as exc:
    print(f"{type(exc).__name__}: {exc.message}")
"""


def test_a_python_only_source_cannot_leave_its_process(tmp_path) -> None:
    ds = data_source.python_source(lambda: iter(PAGES), SPEC)
    graph = tmp_path / "graph.pickle"
    graph.write_bytes(pickle.dumps(_serialized(ds)))
    proc = subprocess.run([sys.executable, "-c", RUN_ELSEWHERE, str(graph)], capture_output=True, text=True,
                          timeout=240, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.startswith("UnimplementedError: "), proc.stdout + proc.stderr[-3000:]
    assert "Python-only source" in proc.stdout and "build it from an Ignite cache" in proc.stdout, proc.stdout
    # In the process that built it, a dataset that is gone says so.
    graph_bytes, spec = _serialized(ds)
    del ds
    gc.collect()
    with pytest.raises(tf.errors.UnimplementedError, match="garbage-collected; keep a reference"):
        next(iter(_from_graph(graph_bytes, spec)))


def test_a_described_source_is_rebuilt_where_its_key_is_unknown() -> None:
    built: list[str] = []

    def rebuild(description: str) -> data_source.Source:
        built.append(description)
        return data_source.Source(lambda state, splits: CountingRun(20, 5, state), X_SPEC, batch_size=4,
                                  resumable=True)

    ds = data_source.python_source(lambda state, splits: CountingRun(20, 5, state), X_SPEC, batch_size=4,
                                   resumable=True, description='{"what": "twenty numbers"}')
    graph, spec = _serialized(ds)
    del ds  # its key is unknown from now on, as in a process that did not build it
    gc.collect()
    previous = data_source.set_rebuilder(rebuild)
    try:
        assert [int(v) for b in _from_graph(graph, spec) for v in b["x"].numpy()] == list(range(20))
    finally:
        data_source.set_rebuilder(previous)
    assert built == ['{"what": "twenty numbers"}']


@pytest.fixture(scope="module")
def local_service():
    """A tf.data service dispatcher and worker in this process (the source's key is known here)."""
    dispatcher = tf.data.experimental.service.DispatchServer()
    worker = tf.data.experimental.service.WorkerServer(tf.data.experimental.service.WorkerConfig(
        dispatcher_address=dispatcher.target.split("://")[1]))
    yield dispatcher
    worker.stop()
    dispatcher.stop()


def test_dynamic_sharding_hands_out_the_splits(local_service) -> None:
    ds = data_source.python_source(lambda state, splits: CountingRun(95, 10, state, splits), X_SPEC,
                                   resumable=True, description="{}", num_splits=10)
    distributed = ds.apply(tf.data.experimental.service.distribute(
        processing_mode="distributed_epoch", service=local_service.target, job_name="splits"))
    got = sorted(int(v) for b in distributed for v in b["x"].numpy())
    assert got == list(range(95))


def test_a_source_without_splits_says_what_to_do_on_dynamic_sharding(local_service) -> None:
    plain = data_source.python_source(lambda: iter(PAGES), SPEC)
    with pytest.raises(tf.errors.UnimplementedError, match="Python-only source.*parallel_epochs"):
        list(plain.apply(tf.data.experimental.service.distribute(
            processing_mode="distributed_epoch", service=local_service.target, job_name="plain")))
    unsplit = data_source.python_source(lambda state, splits: CountingRun(5, 5, state), X_SPEC, resumable=True,
                                        description="{}")
    with pytest.raises(tf.errors.UnimplementedError, match="no partitions to hand out"):
        list(unsplit.apply(tf.data.experimental.service.distribute(
            processing_mode="distributed_epoch", service=local_service.target, job_name="unsplit")))
    # parallel_epochs runs the whole source on the worker (here, the fast path by key)
    got = [int(v) for b in unsplit.apply(tf.data.experimental.service.distribute(
        processing_mode="parallel_epochs", service=local_service.target, job_name="whole")) for v in b["x"].numpy()]
    assert got == list(range(5))
