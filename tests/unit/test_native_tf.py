"""The ignite:// TensorFlow plugin, end to end through real TensorFlow.

Backend: LocalDirBackend on a per-test temporary directory (no Ignite).  All
TensorFlow-heavy tests live in this module so that TensorFlow is imported
once.  Subprocess tests (interpreter shutdown) are in test_native_shutdown.py.
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import os
import threading
import time

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tensorflow_ignite.native import loader  # noqa: E402
from tensorflow_ignite.native.backend import FileSystemBackend, LocalDirBackend  # noqa: E402
from tensorflow_ignite.native.uri import canonical_uri  # noqa: E402

ROOT = "ignite://127.0.0.1:10800"  # the default endpoint (igfs:/// resolves to it)
gfile = tf.io.gfile


@pytest.fixture(scope="module")
def native(tmp_path_factory):
    """The plugin, registered once for the module; the backend installed before
    (the Ignite one, in a full test run) is put back afterwards."""
    before = loader.get_backend()
    loader.register_filesystems(lambda: LocalDirBackend(tmp_path_factory.mktemp("initial")))
    yield loader.native_module()
    loader.set_backend(before)


@pytest.fixture
def store(native, tmp_path) -> LocalDirBackend:
    """A fresh LocalDirBackend per test, installed as the process backend."""
    backend = LocalDirBackend(tmp_path / "store")
    previous = loader.set_backend(backend)
    yield backend
    loader.set_backend(previous)


def install(backend: FileSystemBackend):
    """Context manager installing another backend for the duration of a block."""

    class _Installed:
        def __enter__(self):
            self.previous = loader.set_backend(backend)
            return backend

        def __exit__(self, *exc):
            loader.set_backend(self.previous)

    return _Installed()


def write_text(path: str, text: str) -> None:
    with gfile.GFile(path, "w") as f:
        f.write(text)


def read_text(path: str) -> str:
    with gfile.GFile(path, "r") as f:
        return f.read()


# --------------------------------------------------------------- the plugin
def test_registration_is_idempotent_and_thread_safe(native, store) -> None:
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: loader.register_filesystems(), range(16)))
    assert all(r is store for r in results)  # None keeps the installed backend
    assert native.is_registered()
    assert set(native.SCHEMES) == {"ignite", "igfs"}
    assert loader.plugin_path().is_file()


def test_backend_methods_match_the_protocol(native) -> None:
    declared = {
        name for name in vars(FileSystemBackend) if not name.startswith("_") and callable(getattr(FileSystemBackend, name))
    }
    assert declared == set(native.BACKEND_METHODS)


def test_rejects_incomplete_backend(native, store) -> None:
    with pytest.raises(TypeError, match="missing .*open_write"):
        loader.register_filesystems(object)
    assert loader.get_backend() is store


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["ignite://", "igfs://"]),
    st.sampled_from(["", "localhost:10800", "h"]),
    st.lists(st.sampled_from(["", ".", "..", "a", "b.c", "..x", "é"]), max_size=6),
    st.booleans(),
)
def test_translate_name_matches_python(native, scheme, host, segments, trailing) -> None:
    uri = scheme + host + "".join("/" + s for s in segments) + ("/" if trailing else "")
    assert native.translate_name(uri) == canonical_uri(uri)


# ------------------------------------------------------------------ root
def test_root_is_an_existing_directory(store) -> None:
    for root in (ROOT, ROOT + "/", "igfs://", "igfs:///", "ignite://never-used-host:1/"):
        assert gfile.exists(root), root
        assert gfile.isdir(root), root
        assert gfile.stat(root).is_directory
        assert gfile.listdir(root) == []
    gfile.makedirs(ROOT)


def test_root_exists_even_if_backend_says_not_found(store) -> None:
    class Rootless(LocalDirBackend):
        def stat(self, path):
            raise FileNotFoundError(path)

        def listdir(self, path):
            raise FileNotFoundError(path)

    with install(Rootless(store.root)):
        assert gfile.isdir(ROOT) and gfile.exists(ROOT + "/")
        assert gfile.listdir(ROOT) == []
        assert not gfile.exists(ROOT + "/file")


def test_no_backend_is_a_failed_precondition(store) -> None:
    with install(None):
        with pytest.raises(tf.errors.FailedPreconditionError, match="register_filesystems"):
            gfile.stat(ROOT + "/x")


# ------------------------------------------------------------------ files
def test_write_read_append_seek(store) -> None:
    path = ROOT + "/dir/file.txt"
    gfile.makedirs(ROOT + "/dir")
    write_text(path, "hello\nworld\n")
    assert read_text(path) == "hello\nworld\n"
    with gfile.GFile(path, "a") as f:
        f.write("again\n")
    with gfile.GFile(path, "r") as f:
        assert f.size() == 18
        assert f.readline() == "hello\n"
        f.seek(6)
        assert f.read(5) == "world"
        assert f.tell() == 11
        assert f.readlines() == ["\n", "again\n"]
    # TensorFlow's own readers go through the same random access file.
    assert tf.io.read_file(path).numpy() == b"hello\nworld\nagain\n"
    tf.io.write_file(ROOT + "/op.bin", tf.constant(b"\x00\x01"))
    assert gfile.GFile(ROOT + "/op.bin", "rb").read() == b"\x00\x01"


def test_igfs_without_host_uses_default_host(store) -> None:
    write_text("igfs:///hello.txt", "hi")
    assert read_text(ROOT + "/hello.txt") == "hi"
    assert read_text("ignite:///hello.txt") == "hi"
    assert gfile.listdir("igfs:///") == ["hello.txt"]
    assert gfile.glob("igfs:///*.txt") == ["igfs:///hello.txt"]


def test_large_files_and_coalesced_appends(store, native) -> None:
    rng = np.random.default_rng(0)
    big = rng.bytes(5 * native.WRITE_BUFFER_SIZE + 123)
    with gfile.GFile(ROOT + "/big", "wb") as f:
        for i in range(0, 1000, 1):  # small appends, buffered in C
            f.write(big[i : i + 1])
        assert f.tell() == 1000
        f.write(big[1000:])  # one append larger than the buffer
        assert f.tell() == len(big)
    assert gfile.stat(ROOT + "/big").length == len(big)
    with gfile.GFile(ROOT + "/big", "rb") as f:
        assert f.read() == big
        f.seek(len(big) - 10)
        assert f.read() == big[-10:]


def test_short_reads_are_completed_by_the_shim(store) -> None:
    class Dribble(LocalDirBackend):
        def open_read(self, path):
            inner = super().open_read(path)

            class Handle:
                def read_into(self, offset, buffer):
                    return inner.read_into(offset, buffer[:1000])  # at most 1000 bytes

                def close(self):
                    inner.close()

            return Handle()

    data = os.urandom(100_000)
    with gfile.GFile(ROOT + "/f", "wb") as f:
        f.write(data)
    with install(Dribble(store.root)):
        assert gfile.GFile(ROOT + "/f", "rb").read() == data


def test_visibility_at_flush_and_close(store, tmp_path) -> None:
    with gfile.GFile(ROOT + "/events", "wb") as f:
        f.write(b"first")
        assert not gfile.exists(ROOT + "/events")  # buffered, never flushed
        f.flush()
        assert gfile.GFile(ROOT + "/events", "rb").read() == b"first"  # TensorBoard can tail it
        f.write(b" second")
    assert gfile.GFile(ROOT + "/events", "rb").read() == b"first second"

    with install(LocalDirBackend(tmp_path / "strict", publish_on_flush=False)):
        write_text(ROOT + "/f", "old")
        with gfile.GFile(ROOT + "/f", "w") as f:
            f.write("new")
            f.flush()
            assert read_text(ROOT + "/f") == "old"  # visible only when closed
        assert read_text(ROOT + "/f") == "new"


def test_read_only_memory_region(store) -> None:
    values = np.arange(64, dtype=np.float32)
    with gfile.GFile(ROOT + "/tensor.bin", "wb") as f:
        f.write(values.tobytes())
    tensor = tf.raw_ops.ImmutableConst(dtype=tf.float32, shape=[64], memory_region_name=ROOT + "/tensor.bin")
    np.testing.assert_array_equal(tensor.numpy(), values)


# ------------------------------------------------------------- metadata ops
def test_exists_stat_isdir(store) -> None:
    gfile.makedirs(ROOT + "/a/b")
    write_text(ROOT + "/a/f", "12345")
    before = time.time_ns()
    assert gfile.exists(ROOT + "/a/f") and not gfile.exists(ROOT + "/a/g")
    assert gfile.isdir(ROOT + "/a/b") and not gfile.isdir(ROOT + "/a/f")
    assert not gfile.isdir(ROOT + "/missing")
    st_file = gfile.stat(ROOT + "/a/f")
    assert (st_file.length, st_file.is_directory) == (5, False)
    assert 0 < st_file.mtime_nsec <= before
    assert gfile.stat(ROOT + "/a/b").is_directory
    with pytest.raises(tf.errors.NotFoundError, match="missing"):
        gfile.stat(ROOT + "/missing")


def test_listdir_walk_glob(store) -> None:
    for path in ["a/x.txt", "a/y.txt", "a/z.bin", "a/sub/w.txt", "b/x.txt", "top.txt"]:
        gfile.makedirs(os.path.dirname(f"{ROOT}/{path}"))
        write_text(f"{ROOT}/{path}", path)
    assert sorted(gfile.listdir(ROOT)) == ["a", "b", "top.txt"]
    assert sorted(gfile.listdir(ROOT + "/a")) == ["sub", "x.txt", "y.txt", "z.bin"]
    with pytest.raises(tf.errors.NotFoundError):
        gfile.listdir(ROOT + "/missing")

    walked = {
        top: (sorted(dirs), sorted(files)) for top, dirs, files in gfile.walk(ROOT + "/a")
    }
    assert walked == {
        ROOT + "/a": (["sub"], ["x.txt", "y.txt", "z.bin"]),
        ROOT + "/a/sub": ([], ["w.txt"]),
    }

    def glob(pattern: str) -> list[str]:
        return sorted(gfile.glob(ROOT + pattern))

    assert glob("/a/*.txt") == [ROOT + "/a/x.txt", ROOT + "/a/y.txt"]
    assert glob("/*/x.txt") == [ROOT + "/a/x.txt", ROOT + "/b/x.txt"]
    assert glob("/a/[xz].*") == [ROOT + "/a/x.txt", ROOT + "/a/z.bin"]
    assert glob("/a/?.bin") == [ROOT + "/a/z.bin"]
    assert glob("/a/*/*.txt") == [ROOT + "/a/sub/w.txt"]
    assert glob("/top.txt") == [ROOT + "/top.txt"]  # no wildcard: existence check
    assert glob("/nothing*") == []
    assert gfile.glob(ROOT + "//a/../a/./x.*") != []  # unclean patterns still work


def test_copy(store) -> None:
    write_text(ROOT + "/src", "payload")
    gfile.copy(ROOT + "/src", ROOT + "/dst")
    assert read_text(ROOT + "/dst") == "payload"
    with pytest.raises(tf.errors.AlreadyExistsError):
        gfile.copy(ROOT + "/src", ROOT + "/dst")
    write_text(ROOT + "/src", "changed")
    gfile.copy(ROOT + "/src", ROOT + "/dst", overwrite=True)
    assert read_text(ROOT + "/dst") == "changed"
    with pytest.raises(tf.errors.NotFoundError):
        gfile.copy(ROOT + "/missing", ROOT + "/x")
    gfile.copy(ROOT + "/src", ROOT + "/new/parent/dst")  # parents are created
    assert read_text(ROOT + "/new/parent/dst") == "changed"
    gfile.copy(ROOT + "/src", "igfs://other:1/copy")  # other host, same backend
    assert read_text("ignite://other:1/copy") == "changed"


def test_rename(store) -> None:
    write_text(ROOT + "/a", "A")
    write_text(ROOT + "/b", "B")
    with pytest.raises(tf.errors.AlreadyExistsError):
        gfile.rename(ROOT + "/a", ROOT + "/b")
    gfile.rename(ROOT + "/a", ROOT + "/b", overwrite=True)
    assert read_text(ROOT + "/b") == "A" and not gfile.exists(ROOT + "/a")
    gfile.rename(ROOT + "/b", ROOT + "/c")
    assert gfile.listdir(ROOT) == ["c"]
    gfile.makedirs(ROOT + "/d/e")
    gfile.rename(ROOT + "/d", ROOT + "/d2")
    assert gfile.listdir(ROOT + "/d2") == ["e"]
    with pytest.raises(tf.errors.NotFoundError):
        gfile.rename(ROOT + "/missing", ROOT + "/x")
    with pytest.raises(tf.errors.FailedPreconditionError, match="across Ignite clusters"):
        gfile.rename(ROOT + "/c", "ignite://elsewhere:10800/c")


def test_remove_makedirs_rmtree(store) -> None:
    gfile.makedirs(ROOT + "/x/y/z")
    gfile.mkdir(ROOT + "/x/y2")
    gfile.mkdir(ROOT + "/x/y2")  # tf.io.gfile.mkdir ignores AlreadyExists
    with pytest.raises(tf.errors.NotFoundError):
        gfile.mkdir(ROOT + "/p/q")
    write_text(ROOT + "/x/y/z/f", "1")
    write_text(ROOT + "/x/g", "2")
    with pytest.raises(tf.errors.FailedPreconditionError):
        gfile.makedirs(ROOT + "/x/g")  # a file is in the way
    gfile.remove(ROOT + "/x/g")
    with pytest.raises(tf.errors.NotFoundError):
        gfile.remove(ROOT + "/x/g")
    with pytest.raises(tf.errors.FailedPreconditionError):
        gfile.remove(ROOT + "/x/y")  # a directory
    gfile.rmtree(ROOT + "/x")
    assert not gfile.exists(ROOT + "/x")
    with pytest.raises(tf.errors.NotFoundError):
        gfile.rmtree(ROOT + "/x")
    write_text(ROOT + "/f", "")
    gfile.rmtree(ROOT)  # the root is emptied and keeps existing
    assert gfile.listdir(ROOT) == [] and gfile.isdir(ROOT)


# ------------------------------------------------------------------- errors
class FailingBackend(LocalDirBackend):
    """Raises ``error`` from every stat of a path containing 'boom'."""

    error: BaseException = RuntimeError("boom")

    def stat(self, path):
        if "boom" in path:
            raise self.error
        return super().stat(path)


class Aborted(Exception):
    tf_error_code = 10


@pytest.mark.parametrize(
    ("error", "tf_error"),
    [
        (PermissionError("read-only cluster"), tf.errors.PermissionDeniedError),
        (ConnectionRefusedError("node 127.0.0.1:10800 refused"), tf.errors.UnavailableError),
        (TimeoutError("no answer in 5 s"), tf.errors.DeadlineExceededError),
        (FileNotFoundError("gone"), tf.errors.NotFoundError),
        (Aborted("transaction rolled back"), tf.errors.AbortedError),
        (ValueError("bad path"), tf.errors.InvalidArgumentError),
        (RuntimeError("backend bug"), tf.errors.InternalError),
    ],
)
def test_backend_exception_becomes_tf_error(store, error, tf_error) -> None:
    backend = FailingBackend(store.root)
    backend.error = error
    with install(backend):
        with pytest.raises(tf_error) as info:
            gfile.stat(ROOT + "/boom")
    message = info.value.message
    assert str(error) in message and type(error).__name__ in message
    assert f"stat({ROOT}/boom)" in message


def test_exception_in_tf_thread_reaches_the_caller(store) -> None:
    class BrokenReads(LocalDirBackend):
        def open_read(self, path):
            raise ConnectionResetError("connection to node lost")

    write_text(ROOT + "/f.tfrecord", "")
    with install(BrokenReads(store.root)):
        with pytest.raises(tf.errors.UnavailableError, match="connection to node lost"):
            list(tf.data.TFRecordDataset([ROOT + "/f.tfrecord"], num_parallel_reads=2))


def test_protocol_violations_are_internal_errors(store) -> None:
    class Bad(LocalDirBackend):
        def stat(self, path):
            return "not a tuple" if path.endswith("/x") else super().stat(path)

        def listdir(self, path):
            return [1, 2]

        def open_read(self, path):
            class Handle:
                def read_into(self, offset, buffer):
                    return len(buffer) + 1

                def close(self):
                    pass

            return Handle()

    write_text(ROOT + "/y", "y")
    with install(Bad(store.root)):
        with pytest.raises(tf.errors.InternalError, match="must return a"):
            gfile.stat(ROOT + "/x")
        with pytest.raises(tf.errors.InternalError, match="sequence of str"):
            gfile.listdir(ROOT)
        with pytest.raises(tf.errors.InternalError, match="returned"):
            gfile.GFile(ROOT + "/y", "rb").read()


@pytest.mark.parametrize(
    "keep",
    [
        lambda view: view,  # the view itself
        lambda view: view[1:],  # a slice
        lambda view: np.frombuffer(view, dtype=np.uint8),  # numpy keeps the view as base
        lambda view: (ctypes.c_char * len(view)).from_buffer(view),  # a buffer export
    ],
    ids=["view", "slice", "numpy", "ctypes"],
)
def test_backend_may_not_keep_tf_buffers(store, keep) -> None:
    kept = []

    class Keeper(LocalDirBackend):
        def open_read(self, path):
            inner = super().open_read(path)

            class Handle:
                def read_into(self, offset, buffer):
                    kept.append(keep(buffer))
                    return inner.read_into(offset, buffer)

                def close(self):
                    inner.close()

            return Handle()

    write_text(ROOT + "/f", "data")
    with install(Keeper(store.root)):
        with pytest.raises(tf.errors.InternalError, match="kept a reference"):
            gfile.GFile(ROOT + "/f", "rb").read()


def test_keyboard_interrupt_becomes_cancelled(store) -> None:
    backend = FailingBackend(store.root)
    backend.error = KeyboardInterrupt()
    with install(backend):
        with pytest.raises(tf.errors.CancelledError, match="KeyboardInterrupt"):
            gfile.stat(ROOT + "/boom")


# ------------------------------------------------------------- TF features
def test_checkpoint_manager(store) -> None:
    variable = tf.Variable(np.zeros((256, 256), np.float32))  # 256 KiB: several reads
    step = tf.Variable(0)
    checkpoint = tf.train.Checkpoint(variable=variable, step=step)
    manager = tf.train.CheckpointManager(checkpoint, ROOT + "/ckpt", max_to_keep=2)
    for i in range(1, 5):
        step.assign(i)
        variable.assign(np.full((256, 256), i, np.float32))
        manager.save()
    assert manager.checkpoints == [ROOT + "/ckpt/ckpt-3", ROOT + "/ckpt/ckpt-4"]
    assert sorted(gfile.listdir(ROOT + "/ckpt")) == [
        "checkpoint",
        "ckpt-3.data-00000-of-00001",
        "ckpt-3.index",
        "ckpt-4.data-00000-of-00001",
        "ckpt-4.index",
    ]
    assert tf.train.latest_checkpoint(ROOT + "/ckpt") == ROOT + "/ckpt/ckpt-4"
    variable.assign(np.zeros((256, 256), np.float32))
    checkpoint.restore(ROOT + "/ckpt/ckpt-3").assert_consumed()
    assert int(step.numpy()) == 3 and float(variable.numpy()[17, 42]) == 3.0
    # A new manager over the same directory picks up the state file.
    again = tf.train.CheckpointManager(checkpoint, ROOT + "/ckpt", max_to_keep=2)
    assert again.latest_checkpoint == ROOT + "/ckpt/ckpt-4"


def test_saved_model(store) -> None:
    class Scale(tf.Module):
        def __init__(self):
            self.w = tf.Variable([2.0, 3.0])

        @tf.function(input_signature=[tf.TensorSpec([2], tf.float32)])
        def __call__(self, x):
            return x * self.w

    tf.saved_model.save(Scale(), ROOT + "/models/scale")
    assert {"saved_model.pb", "variables"} <= set(gfile.listdir(ROOT + "/models/scale"))
    loaded = tf.saved_model.load(ROOT + "/models/scale")
    np.testing.assert_allclose(loaded(tf.constant([1.0, 1.0])).numpy(), [2.0, 3.0])


def _small_model():
    import keras

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def test_keras_model_and_weights(store) -> None:
    import keras

    model = _small_model()
    x = np.random.default_rng(1).random((5, 3), dtype=np.float32)
    model.save(ROOT + "/keras/model.keras")
    restored = keras.models.load_model(ROOT + "/keras/model.keras")
    np.testing.assert_allclose(restored.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)

    model.save_weights(ROOT + "/keras/model.weights.h5")
    other = _small_model()
    other.load_weights(ROOT + "/keras/model.weights.h5")
    for a, b in zip(model.get_weights(), other.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_keras_backup_and_restore(store) -> None:
    import keras

    backup_dir = ROOT + "/backup"
    rng = np.random.default_rng(2)
    x, y = rng.random((16, 3), dtype=np.float32), rng.random((16, 2), dtype=np.float32)

    class Interrupt(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            if epoch == 1:
                raise RuntimeError("preempted")

    class Record(keras.callbacks.Callback):
        epochs: list[int] = []

        def on_epoch_begin(self, epoch, logs=None):
            self.epochs.append(epoch)

    with pytest.raises(RuntimeError, match="preempted"):
        _small_model().fit(
            x, y, epochs=4, verbose=0,
            callbacks=[keras.callbacks.BackupAndRestore(backup_dir), Interrupt()],
        )
    assert gfile.listdir(backup_dir)  # the state of epoch 1 was backed up
    record = Record()
    _small_model().fit(
        x, y, epochs=4, verbose=0, callbacks=[keras.callbacks.BackupAndRestore(backup_dir), record]
    )
    assert record.epochs == [2, 3]  # resumed after the last backed-up epoch


def test_summary_writer_events_read_back(store) -> None:
    logdir = ROOT + "/logs/run1"
    writer = tf.summary.create_file_writer(logdir)
    with writer.as_default():
        for step in range(5):
            tf.summary.write("loss", tf.constant(1.0 / (step + 1)), step=step)
    writer.flush()
    (events,) = gfile.glob(logdir + "/events.out.tfevents.*")
    seen_while_open = {
        (e.step, v.tag) for e in tf.compat.v1.train.summary_iterator(events) for v in e.summary.value
    }
    assert seen_while_open == {(s, "loss") for s in range(5)}  # visible before close
    writer.close()
    values = {
        e.step: float(tf.make_ndarray(v.tensor))
        for e in tf.compat.v1.train.summary_iterator(events)
        for v in e.summary.value
    }
    assert values == pytest.approx({s: 1.0 / (s + 1) for s in range(5)})


@pytest.mark.timeout(120)
def test_tfrecord_parallel_reads_do_not_deadlock(store) -> None:
    class SlowReads(LocalDirBackend):
        def open_read(self, path):
            inner = super().open_read(path)

            class Handle:
                def read_into(self, offset, buffer):
                    time.sleep(0.0005)  # releases the GIL like network I/O would
                    return inner.read_into(offset, buffer)

                def close(self):
                    inner.close()

            return Handle()

    gfile.makedirs(ROOT + "/records")
    expected = set()
    for shard in range(8):
        with tf.io.TFRecordWriter(f"{ROOT}/records/part-{shard:02d}.tfrecord") as writer:
            for i in range(500):
                record = f"{shard}-{i}-".encode() + b"x" * 1000
                writer.write(record)
                expected.add(record)
    with install(SlowReads(store.root)):
        files = tf.data.Dataset.list_files(ROOT + "/records/*.tfrecord", shuffle=True, seed=1)
        dataset = tf.data.TFRecordDataset(files, num_parallel_reads=4).batch(64).prefetch(2)
        got = [r for batch in dataset for r in batch.numpy()]
    assert len(got) == len(expected) and set(got) == expected


@pytest.mark.timeout(120)
def test_concurrent_python_threads(store) -> None:
    def worker(n: int) -> int:
        base = f"{ROOT}/t{n}"
        gfile.makedirs(base)
        for i in range(20):
            write_text(f"{base}/f{i}", f"{n}:{i}")
            assert read_text(f"{base}/f{i}") == f"{n}:{i}"
        assert len(gfile.glob(base + "/f*")) == 20
        gfile.rmtree(base)
        return n

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert sorted(pool.map(worker, range(8))) == list(range(8))
    assert gfile.listdir(ROOT) == []


def test_backend_swap_while_threads_run(native, store, tmp_path) -> None:
    write_text(ROOT + "/f", "one")
    other = LocalDirBackend(tmp_path / "other")
    stop = threading.Event()
    errors: list[BaseException] = []

    def reader() -> None:
        while not stop.is_set():
            try:
                gfile.exists(ROOT + "/f")
            except BaseException as err:  # noqa: BLE001
                errors.append(err)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for _ in range(50):
        loader.set_backend(other)
        loader.set_backend(store)
    stop.set()
    for t in threads:
        t.join()
    assert errors == [] and native.in_flight() == 0


def test_garbage_collection_is_paused_while_tensorflow_waits_on_the_filesystem(native, tmp_path) -> None:
    # TensorFlow calls the filesystem from ops holding its own mutexes (a summary writer's events file is
    # created under the resource manager's lock); a collection there could free a tensor whose destructor
    # takes that mutex: a thread deadlocked on itself in CI. The shim pauses the collector around its calls.
    import gc

    seen: list[bool] = []

    class Recording(LocalDirBackend):
        def open_write(self, path, append):  # type: ignore[no-untyped-def]
            seen.append(gc.isenabled())
            return super().open_write(path, append)

        def stat(self, path):  # type: ignore[no-untyped-def]
            seen.append(gc.isenabled())
            return super().stat(path)

    assert gc.isenabled()
    with install(Recording(tmp_path / "store")):
        with gfile.GFile(f"{ROOT}/gc/a.txt", "w") as f:
            f.write("x")
        assert gfile.exists(f"{ROOT}/gc/a.txt")
        writer = tf.summary.create_file_writer(f"{ROOT}/gc/logs")
        with writer.as_default():
            tf.summary.scalar("loss", 1.0, step=0)
        writer.close()
    assert seen and not any(seen), seen
    assert gc.isenabled()  # turned back on once the calls ended
