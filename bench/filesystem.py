"""Scenario 5 of issue 6: checkpoint write and restore through ``ignite://`` against local disk.

A Keras model whose variables add up to ``Sizes.fs_mb`` (a few hundred MB in
the full run) is saved with ``tf.train.Checkpoint.write`` and restored with
``Checkpoint.read``, once into ``ignite://host:port/...`` (the filesystem
plugin and the file store, default settings: 4 MiB blocks, one backup,
FULL_SYNC) and once into a directory on local disk.  Two scenarios, each with
both contenders alternating in the same run (the harness's rules):

* ``fs_write`` -- the timed part is ``Checkpoint.write`` (data file, index,
  the temporary shard renamed into place); the files are deleted afterwards,
  untimed -- on ``ignite://`` their blocks too, not ``garbage_delay`` later
  inside another save -- so every save starts from the same state;
* ``fs_read`` -- the timed part is ``Checkpoint.read`` of a checkpoint written
  once before (every variable assigned).  The warm-up restores into zeroed
  variables and checks the bytes against the saved ones, so a fast but wrong
  restore cannot pass.

Warm-up.  The harness gives every contender one untimed warm-up; here that
warm-up is a series of untimed saves (restores) that runs until the timings
are steady: at least ``WARMUP_MIN`` of them, then until two consecutive ones
differ by less than ``WARMUP_SETTLED`` (10%), at most ``WARMUP_MAX``.  A fresh
node's JIT is still compiling its put path during the first saves: measured
node CPU per 269 MB save on a new node was 2.8, 1.2-1.3, 0.8-1.1, 0.6-0.8,
0.5-0.6 s, then 0.45-0.5 s from the sixth save on (two runs, 14 saves each),
so one warm-up save timed the JIT, not the file store.  Both contenders follow
the same rule; each contender's note records its warm-up timings.

Neither side calls ``fsync``: TensorFlow does not for checkpoints, so a local
save ends in the page cache, and an ``ignite://`` save ends when every block is
in the memory of its primary and backup node.  MB/s counts the variables'
bytes (the checkpoint's payload).

Contenders are rebuilt in a profiler child from their spec
(``"bench.filesystem:<factory>"``), like the scan contenders.
"""

from __future__ import annotations

import functools
import hashlib
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .harness import Contender, Run, Scenario, Target

__all__ = ["checkpoint_write", "checkpoint_read", "file_read", "filesystem_scenarios", "model_for", "FS_TARGETS",
           "FILE_TARGET"]

F = TypeVar("F", bound=Callable[..., Contender])

#: The issue-6 target: ``ignite://`` at least half as fast as local disk, both ways.
FS_TARGETS = {"fs_write": 0.5, "fs_read": 0.5}
#: Issue 31: one file read sequentially at least as fast as a checkpoint restore of the same size.
FILE_TARGET = 1.0
#: Bytes per ``GFile.read`` call of the one-file scenario.
READ_PIECE = 1 << 20
#: Records of the TFRecord file of the one-file scenario (bytes each; the last one shorter).
TFRECORD_BYTES = 100 * 1024

#: Untimed warm-up operations per contender: at least this many...
WARMUP_MIN = 5
#: ...then until two consecutive ones differ by less than this fraction...
WARMUP_SETTLED = 0.10
#: ...but no more than this many (a loaded machine may never look settled).
WARMUP_MAX = 12


def _warm_up(step: Callable[[], float], first: Callable[[], float] | None = None) -> list[float]:
    """Run ``step`` (one untimed operation, returns its seconds) until the timings are steady.

    ``first``, when given, replaces ``step`` for the first operation (a checked one).
    """
    seconds: list[float] = []
    while len(seconds) < WARMUP_MAX:
        seconds.append((first or step)() if not seconds else step())
        if len(seconds) >= WARMUP_MIN and abs(seconds[-1] - seconds[-2]) < WARMUP_SETTLED * seconds[-2]:
            break
    return seconds


def _warmup_note(what: str, seconds: list[float]) -> str:
    settled = len(seconds) >= 2 and abs(seconds[-1] - seconds[-2]) < WARMUP_SETTLED * seconds[-2]
    why = (f"the last two within {WARMUP_SETTLED:.0%}" if settled
           else f"not within {WARMUP_SETTLED:.0%} of each other after {len(seconds)}: stopped there")
    return f"warm-up: {len(seconds)} untimed {what}, {why} ({', '.join(f'{x:.2f}' for x in seconds)} s)"


def _spec(factory: F) -> F:
    """Record how to rebuild the contender (``bench.filesystem:<name>``, args, kwargs)."""

    @functools.wraps(factory)
    def build(*args: Any, **kwargs: Any) -> Contender:
        contender = factory(*args, **kwargs)
        contender.spec = (f"bench.filesystem:{factory.__name__}", list(args), dict(kwargs))
        return contender

    return build  # type: ignore[return-value]


class _Model:
    """A Keras MLP of ``mb`` MiB of float32 weights and its ``tf.train.Checkpoint``."""

    def __init__(self, mb: int, seed: int) -> None:
        import keras
        import tensorflow as tf

        width = 4096 if mb >= 64 else 1024
        layers = max(1, (mb << 20) // (width * width * 4))
        keras.utils.set_random_seed(seed)
        inputs = keras.Input((width,))
        x = inputs
        for i in range(layers):
            x = keras.layers.Dense(width, name=f"dense_{i}")(x)
        self.model = keras.Model(inputs, x)
        self.variables = list(self.model.weights)
        self.nbytes = sum(int(v.numpy().nbytes) for v in self.variables)
        self.checkpoint = tf.train.Checkpoint(model=self.model)
        self.digest = self.fingerprint()
        self.description = f"{layers} Dense layers of {width}x{width} float32 ({self.nbytes / 1e6:.0f} MB)"

    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for v in self.variables:
            h.update(v.numpy().tobytes())
        return h.hexdigest()

    def zero(self) -> None:
        for v in self.variables:
            v.assign(v.numpy() * 0)


@functools.lru_cache(maxsize=2)
def model_for(mb: int, seed: int = 5) -> _Model:
    """One model per size and seed, shared by the contenders of a process."""
    return _Model(mb, seed)


class _Target:
    """Where checkpoints go: ``ignite://host:port/<dir>`` or a local directory."""

    def __init__(self, where: str, host: str, port: int, local_dir: str | None) -> None:
        self.where = where
        run = uuid.uuid4().hex[:8]
        if where == "ignite":
            self.endpoint = f"{host}:{port}"
            self.base = f"ignite://{self.endpoint}/bench-fs/{run}"
            self._local: Path | None = None
        elif where == "local":
            self._local = Path(tempfile.mkdtemp(prefix=f"bench-fs-{run}-", dir=local_dir))
            self.base = str(self._local)
        else:
            raise ValueError(f"where must be 'ignite' or 'local', not {where!r}")

    def remove(self, directory: str) -> None:
        if self.where == "ignite":
            import tensorflow as tf

            from tensorflow_ignite import fs

            if tf.io.gfile.exists(directory):
                tf.io.gfile.rmtree(directory)
            # The store deletes removed blocks after ``garbage_delay`` (10 s), i.e. in
            # the middle of later timed saves of either contender; deleted here, as
            # local disk frees its files here, every save starts from the same state.
            fs.store_for(self.endpoint).drain()
        else:
            shutil.rmtree(directory, ignore_errors=True)

    def close(self) -> None:
        try:
            self.remove(self.base)
        except Exception:  # noqa: BLE001 - the nodes may be gone already; best effort
            pass


def _register() -> None:
    """``ignite://`` registered with TensorFlow in this process (idempotent)."""
    from tensorflow_ignite import fs

    fs.register()


def _labels(where: str, verb: str) -> tuple[str, str]:
    if where == "ignite":
        return "ignite", f"ignite:// checkpoint {verb}"
    return "local", f"local disk checkpoint {verb} (reference)"


@_spec
def checkpoint_write(where: str, host: str, port: int, *, mb: int, local_dir: str | None = None) -> Contender:
    """``Checkpoint.write`` of the shared model into ``where`` (``"ignite"`` or ``"local"``)."""
    _register()
    model = model_for(mb)
    target = _Target(where, host, port, local_dir)
    counter = [0]
    key, label = _labels(where, "write")

    def save() -> tuple[float, str]:
        counter[0] += 1
        directory = f"{target.base}/w{counter[0]}"
        start = time.perf_counter()
        model.checkpoint.write(f"{directory}/ckpt")
        return time.perf_counter() - start, directory

    written: list[str] = []

    def run() -> Run:
        seconds, directory = save()
        written.append(directory)
        return Run(seconds, 1, model.nbytes)

    def after() -> None:
        while written:  # untimed, outside the measurement: every save starts from the same state
            target.remove(written.pop())

    def warm_save() -> float:
        seconds, directory = save()
        target.remove(directory)
        return seconds

    def warmup() -> None:
        contender.note = f"{note}; {_warmup_note('saves', _warm_up(warm_save))}"

    note = (f"`tf.train.Checkpoint(model=...).write`, {model.description}; files deleted after each timed "
            "save (untimed)")
    contender = Contender(key, label, run, warmup=warmup, close=target.close, note=note, after=after)
    return contender


@_spec
def checkpoint_read(where: str, host: str, port: int, *, mb: int, local_dir: str | None = None,
                    key: str | None = None) -> Contender:
    """``Checkpoint.read`` of a checkpoint of the shared model saved once into ``where``
    (``key``: the contender's key, by default ``where``)."""
    _register()
    model = model_for(mb)
    target = _Target(where, host, port, local_dir)
    prefix = f"{target.base}/r/ckpt"
    model.checkpoint.write(prefix)  # untimed set-up
    default_key, label = _labels(where, "restore")
    key = key or default_key

    def restore() -> float:
        start = time.perf_counter()
        model.checkpoint.read(prefix).assert_consumed()
        return time.perf_counter() - start

    def run() -> Run:
        return Run(restore(), 1, model.nbytes)

    def checked_restore() -> float:
        model.zero()
        seconds = restore()
        got = model.fingerprint()
        if got != model.digest:
            raise AssertionError(f"{label}: restored variables differ from the saved ones "
                                 f"(sha256 {got[:12]} != {model.digest[:12]})")
        return seconds

    def warmup() -> None:
        contender.note = f"{note}; {_warmup_note('restores', _warm_up(restore, first=checked_restore))}"

    note = (f"`Checkpoint.read(...).assert_consumed()`, {model.description}; the first warm-up restore goes "
            "into zeroed variables and checks every byte")
    contender = Contender(key, label, run, warmup=warmup, close=target.close, note=note)
    return contender


@_spec
def file_read(how: str, host: str, port: int, *, mb: int, local_dir: str | None = None) -> Contender:
    """One file as large as the shared model's variables, written once, read whole from start to end.

    ``how``: ``"ignite"`` (``tf.io.gfile`` over ``ignite://``), ``"tfrecord"`` (a
    ``TFRecordDataset`` over ``ignite://``, the file made of records), ``"local"``
    (``tf.io.gfile`` over a local file) or ``"tfrecord_local"`` (a ``TFRecordDataset``
    over a local file: what TensorFlow's per-record loop allows whatever the filesystem).
    """
    import numpy as np
    import tensorflow as tf

    _register()
    nbytes = model_for(mb).nbytes
    records = how.startswith("tfrecord")
    target = _Target("local" if how in ("local", "tfrecord_local") else "ignite", host, port, local_dir)
    path = f"{target.base}/one-file.{'tfrecord' if records else 'bin'}"
    rng = np.random.default_rng(17)
    digest = hashlib.sha256()
    tf.io.gfile.makedirs(target.base)
    if records:
        with tf.io.TFRecordWriter(path) as w:  # untimed set-up
            left = nbytes
            while left > 0:
                record = rng.bytes(min(TFRECORD_BYTES, left))
                w.write(record)
                digest.update(record)
                left -= len(record)
    else:
        with tf.io.gfile.GFile(path, "wb") as f:
            left = nbytes
            while left > 0:
                piece = rng.bytes(min(8 << 20, left))
                f.write(piece)
                digest.update(piece)
                left -= len(piece)
    expected = digest.hexdigest()

    def read(check: bool) -> float:
        h = hashlib.sha256() if check else None
        start = time.perf_counter()
        if records:
            got = 0
            for record in tf.data.TFRecordDataset(path):
                value = record.numpy()
                got += len(value)
                if h is not None:
                    h.update(value)
        else:
            # In 1 MiB pieces, as a stream reader would: one read() of the whole file times
            # TensorFlow's own copies of it (3x the file in memory, local disk included).
            got = 0
            with tf.io.gfile.GFile(path, "rb") as f:
                while value := f.read(READ_PIECE):
                    got += len(value)
                    if h is not None:
                        h.update(value)
        seconds = time.perf_counter() - start
        if got != nbytes or (h is not None and h.hexdigest() != expected):
            raise AssertionError(f"{label}: read {got:,} bytes, expected {nbytes:,}"
                                 + ("" if h is None else f" (sha256 {h.hexdigest()[:12]} vs {expected[:12]})"))
        return seconds

    def warmup() -> None:
        contender.note = f"{note}; {_warmup_note('reads', _warm_up(lambda: read(False), first=lambda: read(True)))}"

    label, note = {
        "ignite": ("ignite:// one file, tf.io.gfile", "`tf.io.gfile.GFile(path, 'rb').read(1 MiB)` to the end"),
        "tfrecord": ("ignite:// TFRecordDataset", f"`tf.data.TFRecordDataset(path)` iterated eagerly, "
                                                  f"{TFRECORD_BYTES // 1024} KiB records"),
        "local": ("local disk one file, tf.io.gfile (reference)", "`tf.io.gfile.GFile(path, 'rb').read(1 MiB)` "
                                                                "to the end of a local file (page cache)"),
        "tfrecord_local": ("local disk TFRecordDataset", f"`tf.data.TFRecordDataset(path)` iterated eagerly over a "
                                                         f"local file (page cache), {TFRECORD_BYTES // 1024} KiB "
                                                         "records: TensorFlow's per-record loop without a network"),
    }[how]
    contender = Contender(how, label, lambda: Run(read(False), 1, nbytes), warmup=warmup, close=target.close,
                          note=note)
    return contender


def filesystem_scenarios(host: str, port: int, *, mb: int, nodes: int = 1, local_dir: str | None = None,
                         log: Any = print) -> list[Scenario]:
    """The write, the restore and the one-file scenario (``fs_write``, ``fs_read``, ``fs_file``)
    against the node at ``host:port``."""
    log(f"  building a model of ~{mb} MiB for the checkpoint scenarios ...")
    model = model_for(mb)
    where = f"{nodes} node{'s' if nodes > 1 else ''}"
    common = (f"{model.description}, saved with `tf.train.Checkpoint` through `ignite://` ({where}, default "
              "settings: 4 MiB blocks, backups=1, FULL_SYNC) and into a local directory (ext4, page cache, no "
              "fsync on either side, as TensorFlow saves checkpoints). Each contender is warmed up with untimed "
              f"saves (restores) until steady: at least {WARMUP_MIN}, then until two in a row are within "
              f"{WARMUP_SETTLED:.0%}, at most {WARMUP_MAX} (a fresh node's JIT makes its first saves 2-6x "
              "dearer in node CPU; one warm-up timed the JIT).")
    write = Scenario(
        "fs_write", "5a. Filesystem: checkpoint write", common, "MB/s",
        [checkpoint_write("ignite", host, port, mb=mb, local_dir=local_dir),
         checkpoint_write("local", host, port, mb=mb, local_dir=local_dir)],
        reference="local",
        targets=[Target("ignite", "local", FS_TARGETS["fs_write"],
                        "ignite:// checkpoint write >= 0.5x local disk")],
    )
    read = Scenario(
        "fs_read", "5b. Filesystem: checkpoint restore", common, "MB/s",
        [checkpoint_read("ignite", host, port, mb=mb, local_dir=local_dir),
         checkpoint_read("local", host, port, mb=mb, local_dir=local_dir)],
        reference="local",
        targets=[Target("ignite", "local", FS_TARGETS["fs_read"],
                        "ignite:// checkpoint restore >= 0.5x local disk")],
    )
    nbytes = model.nbytes
    one_file = Scenario(
        "fs_file", "5c. Filesystem: one large file read sequentially", (
            f"One file of {nbytes / 1e6:.0f} MB (the checkpoint's payload size) read from start to end: "
            "`tf.io.gfile.GFile(...).read(1 MiB)` in a loop and a `TFRecordDataset` of "
            f"{TFRECORD_BYTES // 1024} KiB records (the file's size), both over `ignite://` "
            f"({where}, default settings: 4 MiB blocks, read-ahead 16 MiB per open file), against a "
            "`Checkpoint.read` of the same size through `ignite://` (the reference: TensorFlow reads "
            "its tensors in parallel) and the same file read from local disk (page cache), by `tf.io.gfile` "
            "and by `TFRecordDataset` (what the per-record loop allows without a network). Warm-up "
            "as above; the first warm-up read checks every byte (sha256)."),
        "MB/s",
        [file_read("ignite", host, port, mb=mb, local_dir=local_dir),
         file_read("tfrecord", host, port, mb=mb, local_dir=local_dir),
         checkpoint_read("ignite", host, port, mb=mb, local_dir=local_dir, key="ckpt"),
         file_read("local", host, port, mb=mb, local_dir=local_dir),
         file_read("tfrecord_local", host, port, mb=mb, local_dir=local_dir)],
        reference="ckpt",
        targets=[Target("ignite", "ckpt", FILE_TARGET,
                        "one ignite:// file through tf.io.gfile >= 1x the checkpoint restore of its size"),
                 Target("tfrecord", "ckpt", FILE_TARGET,
                        "TFRecordDataset over ignite:// >= 1x the checkpoint restore of its size")],
    )
    return [write, read, one_file]
