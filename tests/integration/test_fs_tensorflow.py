"""TensorFlow, Keras and TensorBoard on ``ignite://`` against a real Ignite node.

All TensorFlow-heavy fs tests live here so that TensorFlow is imported once;
the tests that need a fresh interpreter (registration order, the seed's IGFS
snippet) run small subprocesses.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from tensorflow_ignite import fs as ignite_fs  # noqa: E402
from tensorflow_ignite.fs.backend import IgniteBackend  # noqa: E402
from tensorflow_ignite.local.cluster import LocalCluster  # noqa: E402
from tensorflow_ignite.native import loader  # noqa: E402

gfile = tf.io.gfile
PREFIX = "fs_tf_tests"
SRC_ROOT = Path(ignite_fs.__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def node_env(ignite_node: LocalCluster) -> Iterator[dict[str, str]]:
    """Default endpoint, cache prefix and a small block size for this module, from the
    environment (as a user or a worker process would set them)."""
    host, port = ignite_node.address()
    env = {"IGNITE_FS_HOST": host, "IGNITE_FS_PORT": str(port), "IGNITE_FS_CACHE_PREFIX": PREFIX,
           "IGNITE_FS_BLOCK_SIZE": "256k"}
    mp = pytest.MonkeyPatch()
    for k, v in env.items():
        mp.setenv(k, v)
    previous = loader.set_backend(IgniteBackend())  # other modules may have installed theirs
    yield env
    loader.set_backend(previous)
    mp.undo()


@pytest.fixture
def base(node_env: dict[str, str], request: pytest.FixtureRequest) -> Iterator[str]:
    """``ignite://host:port/<test name>``: an explicit endpoint, unlike ``igfs:///``."""
    uri = f"ignite://{node_env['IGNITE_FS_HOST']}:{node_env['IGNITE_FS_PORT']}/{request.node.name}"
    yield uri
    if gfile.exists(uri):
        gfile.rmtree(uri)


def run_child(code: str, env: dict[str, str], timeout: float = 180) -> str:
    full_env = {**os.environ, **env, "PYTHONPATH": str(SRC_ROOT), "TF_CPP_MIN_LOG_LEVEL": "2"}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr[-4000:]}"
    return proc.stdout


# ------------------------------------------------------------------ registration
def test_seed_igfs_snippet(node_env: dict[str, str]) -> None:
    """The seed's snippet, TF 2 spelling, after `import tensorflow_ignite`, in a fresh process."""
    out = run_child(
        """
        import tensorflow as tf
        import tensorflow_ignite

        with tf.io.gfile.GFile("igfs:///hello.txt", mode='w') as w:
          w.write("Hello, world!")

        with tf.io.gfile.GFile("igfs:///hello.txt", mode='r') as r:
          print(r.read())
        """,
        node_env,
    )
    assert out.strip() == "Hello, world!"
    host, port = node_env["IGNITE_FS_HOST"], node_env["IGNITE_FS_PORT"]
    with gfile.GFile(f"ignite://{host}:{port}/hello.txt") as f:  # same tree, explicit endpoint
        assert f.read() == "Hello, world!"
    gfile.remove("ignite:///hello.txt")


def test_registration_without_early_tensorflow_import(node_env: dict[str, str]) -> None:
    """`import tensorflow_ignite` stays TensorFlow-free; importing TF later registers ignite://."""
    out = run_child(
        """
        import sys, time
        start = time.perf_counter()
        import tensorflow_ignite
        took = time.perf_counter() - start
        assert "tensorflow" not in sys.modules, "tensorflow_ignite imported TensorFlow"
        assert took < 2.0, took
        import tensorflow as tf   # the import hook registers ignite:// and igfs:// now
        tf.io.gfile.makedirs("ignite:///registration/sub")
        print(sorted(tf.io.gfile.listdir("igfs:///registration")))
        tf.io.gfile.rmtree("igfs:///registration")
        import tensorflow_ignite.fs as fs
        from tensorflow_ignite.native import loader
        assert fs.register() is loader.get_backend()  # explicit call: idempotent
        """,
        node_env,
    )
    assert out.strip() == "['sub']"


def test_registration_can_be_turned_off(node_env: dict[str, str]) -> None:
    run_child(
        """
        import tensorflow_ignite, tensorflow as tf
        try:
            tf.io.gfile.exists("ignite:///x")
        except tf.errors.UnimplementedError:
            pass
        else:
            raise SystemExit("ignite:// was registered although disabled")
        # What a worker or TensorBoard process does: the backend named by the environment.
        from tensorflow_ignite.native import loader
        backend = loader.register_filesystems()
        assert type(backend).__name__ == "IgniteBackend", backend
        assert not tf.io.gfile.exists("ignite:///definitely/not/there")
        import tensorflow_ignite.fs
        assert tensorflow_ignite.fs.register() is backend   # explicit registration: idempotent
        """,
        {**node_env, "TF_IGNITE_FS_AUTOREGISTER": "0",
         "TF_IGNITE_FS_BACKEND": "tensorflow_ignite.fs.backend:IgniteBackend"},
    )


# ------------------------------------------------------------------- tf.io.gfile
def test_gfile_api(base: str) -> None:
    gfile.makedirs(f"{base}/a/b")
    assert gfile.isdir(f"{base}/a/b") and gfile.exists(f"{base}/a")
    with gfile.GFile(f"{base}/a/f.txt", "w") as f:
        f.write("hello ")
    with gfile.GFile(f"{base}/a/f.txt", "a") as f:
        f.write("world")
    with gfile.GFile(f"{base}/a/f.txt", "r") as f:
        assert f.read() == "hello world"
        f.seek(6)
        assert f.read(3) == "wor"
        assert f.tell() == 9
    with gfile.GFile(f"{base}/a/lines.txt", "w") as f:
        f.write("one\ntwo\nthree\n")
    with gfile.GFile(f"{base}/a/lines.txt") as f:
        assert [line for line in f] == ["one\n", "two\n", "three\n"]
    big = os.urandom(1 << 20)  # 4 blocks of 256 KiB
    with gfile.GFile(f"{base}/a/big.bin", "wb") as f:
        f.write(big)
    with gfile.GFile(f"{base}/a/big.bin", "rb") as f:
        f.seek(300_000)
        assert f.read(500_000) == big[300_000:800_000]
    st = gfile.stat(f"{base}/a/f.txt")
    assert st.length == 11 and not st.is_directory and st.mtime_nsec > 0
    assert gfile.stat(f"{base}/a").is_directory
    assert sorted(gfile.listdir(f"{base}/a")) == ["b", "big.bin", "f.txt", "lines.txt"]
    assert sorted(gfile.glob(f"{base}/a/*.txt")) == [f"{base}/a/f.txt", f"{base}/a/lines.txt"]
    walked = [(d, sorted(s), sorted(fs)) for d, s, fs in gfile.walk(base)]
    assert walked == [(base, ["a"], []), (f"{base}/a", ["b"], ["big.bin", "f.txt", "lines.txt"]),
                      (f"{base}/a/b", [], [])]
    gfile.copy(f"{base}/a/f.txt", f"{base}/c/copy.txt")  # parents created
    with pytest.raises(tf.errors.AlreadyExistsError):
        gfile.copy(f"{base}/a/f.txt", f"{base}/c/copy.txt")
    gfile.copy(f"{base}/a/lines.txt", f"{base}/c/copy.txt", overwrite=True)
    assert gfile.GFile(f"{base}/c/copy.txt").read() == "one\ntwo\nthree\n"
    gfile.rename(f"{base}/a/f.txt", f"{base}/c/moved.txt")
    assert not gfile.exists(f"{base}/a/f.txt")
    with pytest.raises(tf.errors.AlreadyExistsError):
        gfile.rename(f"{base}/c/moved.txt", f"{base}/c/copy.txt")
    gfile.rename(f"{base}/c/moved.txt", f"{base}/c/copy.txt", overwrite=True)
    assert gfile.GFile(f"{base}/c/copy.txt").read() == "hello world"
    gfile.remove(f"{base}/c/copy.txt")
    with pytest.raises(tf.errors.NotFoundError):
        gfile.remove(f"{base}/c/copy.txt")
    with pytest.raises(tf.errors.NotFoundError):
        gfile.GFile(f"{base}/nope").read()
    with pytest.raises(tf.errors.FailedPreconditionError):
        gfile.remove(f"{base}/a")  # a directory
    with pytest.raises(tf.errors.InvalidArgumentError) as info:
        gfile.exists(f"{base}/x?username=u&password=s3cret")
    assert "s3cret" not in str(info.value), "a query string never reaches error messages or logs"
    gfile.mkdir(f"{base}/m")
    gfile.mkdir(f"{base}/m")  # tf.io.gfile.mkdir ignores AlreadyExists
    with pytest.raises(tf.errors.NotFoundError):
        gfile.mkdir(f"{base}/missing/m")
    gfile.rmtree(f"{base}/a")
    assert not gfile.exists(f"{base}/a") and sorted(gfile.listdir(base)) == ["c", "m"]


def test_gfile_reader_never_sees_a_half_written_file(base: str) -> None:
    path = f"{base}/large.bin"
    payload = os.urandom(3 << 20)  # 12 blocks
    problems: list[str] = []
    seen = {"absent": 0, "complete": 0}
    stop = threading.Event()
    gfile.makedirs(base)

    def poll() -> None:
        while not stop.is_set():
            try:
                with gfile.GFile(path, "rb") as f:
                    data = f.read()
            except tf.errors.NotFoundError:
                seen["absent"] += 1
                continue
            if data != payload:
                problems.append(f"read {len(data)} bytes")
            seen["complete"] += 1

    t = threading.Thread(target=poll)
    t.start()
    try:
        with gfile.GFile(path, "wb") as f:
            for i in range(0, len(payload), 100_000):
                f.write(payload[i:i + 100_000])
        deadline = time.monotonic() + 20
        while seen["complete"] < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        stop.set()
        t.join()
    assert not problems and seen["absent"] > 0 and seen["complete"] >= 2


# ------------------------------------------------------------------- checkpoints
def test_checkpoint_manager_max_to_keep_and_async(base: str) -> None:
    v = tf.Variable(tf.zeros([300, 300]))  # 360 KB: two blocks per data file
    step = tf.Variable(0, dtype=tf.int64)
    ckpt = tf.train.Checkpoint(v=v, step=step)
    manager = tf.train.CheckpointManager(ckpt, f"{base}/ckpt", max_to_keep=2)
    for i in range(1, 5):
        v.assign(tf.fill([300, 300], float(i)))
        step.assign(i)
        manager.save(checkpoint_number=i)
    names = sorted(gfile.listdir(f"{base}/ckpt"))
    assert names == ["checkpoint", "ckpt-3.data-00000-of-00001", "ckpt-3.index",
                     "ckpt-4.data-00000-of-00001", "ckpt-4.index"], names
    v.assign(tf.zeros([300, 300]))
    ckpt.restore(manager.latest_checkpoint).assert_consumed()
    assert float(v[0, 0]) == 4.0 and int(step) == 4
    # asynchronous checkpoints: the write happens on a background thread
    options = tf.train.CheckpointOptions(experimental_enable_async_checkpoint=True)
    async_ckpt = tf.train.Checkpoint(v=v, step=step)
    async_manager = tf.train.CheckpointManager(async_ckpt, f"{base}/async", max_to_keep=1)
    for i in range(5, 8):
        v.assign(tf.fill([300, 300], float(i)))
        step.assign(i)
        async_manager.save(options=options)
    async_ckpt.sync()
    v.assign(tf.zeros([300, 300]))
    async_ckpt.restore(async_manager.latest_checkpoint).assert_consumed()
    assert float(v[1, 1]) == 7.0 and int(step) == 7
    assert len([n for n in gfile.listdir(f"{base}/async") if n.endswith(".index")]) == 1


def test_saved_model_roundtrip(base: str) -> None:
    class Scale(tf.Module):
        def __init__(self) -> None:
            self.w = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3))

        @tf.function(input_signature=[tf.TensorSpec([None, 2], tf.float32)])
        def __call__(self, x: tf.Tensor) -> tf.Tensor:
            return tf.matmul(x, self.w)

    module = Scale()
    tf.saved_model.save(module, f"{base}/saved")
    assert gfile.exists(f"{base}/saved/saved_model.pb")
    loaded = tf.saved_model.load(f"{base}/saved")
    x = tf.constant([[1.0, 2.0]])
    np.testing.assert_allclose(loaded(x).numpy(), module(x).numpy())


# --------------------------------------------------------------------- Keras 3
def _model() -> "keras.Model":
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    return model


def _data() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 4)).astype("float32")
    return x, x.sum(axis=1, keepdims=True)


def test_keras_model_checkpoint_keras_and_weights(base: str) -> None:
    x, y = _data()
    model = _model()
    model.fit(x, y, epochs=2, batch_size=16, verbose=0, callbacks=[
        keras.callbacks.ModelCheckpoint(f"{base}/model-{{epoch}}.keras"),
        keras.callbacks.ModelCheckpoint(f"{base}/w-{{epoch}}.weights.h5", save_weights_only=True),
    ])
    assert sorted(gfile.listdir(base)) == ["model-1.keras", "model-2.keras", "w-1.weights.h5", "w-2.weights.h5"]
    restored = keras.models.load_model(f"{base}/model-2.keras")
    np.testing.assert_allclose(restored.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-5)
    fresh = _model()
    fresh.load_weights(f"{base}/w-2.weights.h5")
    np.testing.assert_allclose(fresh.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-5)


def test_backup_and_restore_resumes_at_the_interrupted_epoch(base: str) -> None:
    x, y = _data()
    backup = f"{base}/backup"

    class Interrupt(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch: int, logs: object = None) -> None:
            if epoch == 2:
                raise RuntimeError("simulated preemption")

    class Epochs(keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self.seen: list[int] = []

        def on_epoch_begin(self, epoch: int, logs: object = None) -> None:
            self.seen.append(epoch)

    first = Epochs()
    with pytest.raises(RuntimeError, match="simulated preemption"):
        _model().fit(x, y, epochs=5, batch_size=16, verbose=0,
                     callbacks=[keras.callbacks.BackupAndRestore(backup), first, Interrupt()])
    assert first.seen == [0, 1, 2]
    assert gfile.listdir(backup), "the backup is in Ignite"
    second = Epochs()
    _model().fit(x, y, epochs=5, batch_size=16, verbose=0,
                 callbacks=[keras.callbacks.BackupAndRestore(backup), second])
    assert second.seen == [2, 3, 4], "resumed at the epoch that was interrupted"
    assert not gfile.exists(backup) or not gfile.listdir(backup), "backup removed after success"


# ----------------------------------------------------------------- summaries
def event_scalars(logdir: str) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = {}
    for name in gfile.glob(f"{logdir}/events.out.tfevents.*"):
        for event in tf.compat.v1.train.summary_iterator(name):
            for value in event.summary.value:
                out.setdefault(value.tag, []).append((event.step, float(tf.make_ndarray(value.tensor))))
    return out


def test_summary_writer_read_back(base: str) -> None:
    writer = tf.summary.create_file_writer(f"{base}/logs")
    with writer.as_default():
        for step in range(5):
            tf.summary.scalar("loss", 1.0 / (step + 1), step=step)
        writer.flush()
        assert [s for s, _ in event_scalars(f"{base}/logs")["loss"]] == [0, 1, 2, 3, 4], "visible after flush"
        for step in range(5, 8):
            tf.summary.scalar("loss", 1.0 / (step + 1), step=step)
    writer.close()
    values = event_scalars(f"{base}/logs")["loss"]
    assert [s for s, _ in values] == list(range(8))
    assert values[3][1] == pytest.approx(0.25)


# ------------------------------------------------------------------- tf.data
def test_tfrecord_dataset_with_parallel_reads(base: str) -> None:
    files = []
    for f in range(4):
        path = f"{base}/records-{f}.tfrecord"
        with tf.io.TFRecordWriter(path) as w:
            for i in range(2000):
                w.write(f"{f}:{i}:".encode() + bytes(200))  # ~420 KB per file: 2 blocks
        files.append(path)
    ds = tf.data.TFRecordDataset(files, num_parallel_reads=4)
    records = [r.numpy() for r in ds]
    assert len(records) == 8000
    assert {r.split(b":")[0] for r in records} == {b"0", b"1", b"2", b"3"}
    assert sorted(int(r.split(b":")[1]) for r in records if r.startswith(b"2:")) == list(range(2000))


def test_dataset_save_and_load(base: str) -> None:
    ds = tf.data.Dataset.range(1000).map(lambda i: {"i": i, "sq": i * i})
    ds.save(f"{base}/saved_ds")
    loaded = tf.data.Dataset.load(f"{base}/saved_ds")
    got = sorted((int(e["i"]), int(e["sq"])) for e in loaded.as_numpy_iterator())
    assert got == [(i, i * i) for i in range(1000)]


# ------------------------------------------------------------------ TensorBoard
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get_json(url: str) -> object:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return json.loads(resp.read())


def test_tensorboard_serves_scalars_from_ignite(base: str) -> None:
    logdir = f"{base}/tb"
    for run in ("train", "eval"):
        writer = tf.summary.create_file_writer(f"{logdir}/{run}")
        with writer.as_default():
            for step in range(3):
                tf.summary.scalar("accuracy", 0.5 + 0.1 * step + (0.05 if run == "eval" else 0), step=step)
        writer.close()
    port = _free_port()
    cmd = [str(Path(sys.executable).with_name("ignite-tf")), "tensorboard", "--logdir", logdir,
           "--http-port", str(port), "--bind", "127.0.0.1", "--", "--reload_interval", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()
    try:
        url = f"http://127.0.0.1:{port}/"
        tags: object = {}
        deadline = time.monotonic() + 120
        delay = 0.1
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"ignite-tf tensorboard exited: {proc.stderr.read()[-3000:]}"
            if any(url in line for line in lines):  # the command saw the port open and said so
                try:
                    tags = _get_json(f"{url}data/plugin/scalars/tags")
                    if isinstance(tags, dict) and {"train", "eval"} <= set(tags):
                        break
                except (urllib.error.URLError, ConnectionError, OSError):
                    pass
            time.sleep(delay)  # polling readiness, bounded by the deadline
            delay = min(delay * 1.5, 1.0)
        assert isinstance(tags, dict) and "accuracy" in tags.get("train", {}), (tags, lines)
        query = urllib.parse.urlencode({"run": "eval", "tag": "accuracy"})
        points = _get_json(f"{url}data/plugin/scalars/scalars?{query}")
        assert [p[1] for p in points] == [0, 1, 2]  # type: ignore[index,union-attr]
        assert [round(p[2], 4) for p in points] == [0.55, 0.65, 0.75]  # type: ignore[index,union-attr]
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl+C: the command stops TensorBoard
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(timeout=10)
    assert proc.returncode == 0
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0, "TensorBoard stopped with the command"


# ------------------------------------------------------------------- throughput
def _timed_write_read(path: str, payload: bytes) -> tuple[float, float]:
    start = time.perf_counter()
    with gfile.GFile(path, "wb") as f:
        for i in range(0, len(payload), 16 << 20):
            f.write(payload[i:i + (16 << 20)])
    write = time.perf_counter() - start
    start = time.perf_counter()
    with gfile.GFile(path, "rb") as f:
        back = f.read()
    read = time.perf_counter() - start
    assert back == payload
    return write, read


def test_throughput_vs_local_disk(node_env: dict[str, str], tmp_path: Path) -> None:
    """Prints MB/s through tf.io.gfile: ignite:// (4 MiB blocks) vs a local file.

    ``TF_IGNITE_FS_BENCH_MB`` sets the size (default 64; BENCHMARKS.md uses 256).
    """
    size_mb = int(os.environ.get("TF_IGNITE_FS_BENCH_MB", "64"))
    payload = np.random.default_rng(1).integers(0, 256, size_mb << 20, dtype=np.uint8).tobytes()
    ignite_fs.configure(block_size="4m", cache_prefix=PREFIX + "_bench")
    try:
        path = f"ignite:///bench-{uuid.uuid4().hex[:6]}.bin"
        iw, ir = _timed_write_read(path, payload)
        gfile.remove(path)
    finally:
        ignite_fs.reset()
    lw, lr = _timed_write_read(str(tmp_path / "bench.bin"), payload)
    line = (f"\nthroughput {size_mb} MiB via tf.io.gfile: ignite:// write {size_mb / iw:.0f} MiB/s, "
            f"read {size_mb / ir:.0f} MiB/s; local disk write {size_mb / lw:.0f} MiB/s, read {size_mb / lr:.0f} MiB/s")
    print(line)
    sys.stderr.write(line + "\n")
