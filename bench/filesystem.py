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

The S3 anchor (issue 31): each scenario also runs the same work against a
SeaweedFS S3 server on this machine (``bench/s3anchor.py``) through s3fs, the
store users pick instead of ``ignite://``; the targets want ``ignite://`` ahead
of it both ways.  TensorFlow has no ``s3://`` filesystem any more (it left with
tensorflow-io), so a checkpoint reaches S3 the way users move it: the timed
save is ``Checkpoint.write`` into a local directory (page cache) followed by the
upload of its files (``S3FileSystem.put``: both files at once, 50 MiB parts,
up to 10 in flight -- s3fs's defaults); the timed restore lists the checkpoint's
objects, downloads them (``S3FileSystem.get``) into a fresh local directory and
restores it from there with ``Checkpoint.read``.  The local copies are deleted untimed, as
the written objects are.  The one-file read is ``S3FileSystem.open(...).read(1 MiB)``
to the end (s3fs's read-ahead cache of 50 MiB blocks), after an untimed upload.

Contenders are rebuilt in a profiler child from their spec
(``"bench.filesystem:<factory>"``), like the scan contenders.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .contenders import drain
from .harness import Contender, Run, Scenario, Target

if TYPE_CHECKING:
    from .s3anchor import S3Endpoint

__all__ = ["checkpoint_write", "checkpoint_read", "file_read", "filesystem_scenarios", "model_for", "FS_TARGETS",
           "FILE_TARGET", "S3_TARGET"]

F = TypeVar("F", bound=Callable[..., Contender])

#: The issue-6 target: ``ignite://`` at least half as fast as local disk, both ways.
FS_TARGETS = {"fs_write": 0.5, "fs_read": 0.5}
#: Issue 31: one file read sequentially at least as fast as a checkpoint restore of the same size.
FILE_TARGET = 1.0
#: Issue 31: ``ignite://`` ahead of the S3 server (SeaweedFS through s3fs) both ways, files and checkpoints.
S3_TARGET = 1.0
#: The one-file contender on the S3 anchor.
S3_FILE_LABEL = "S3 server (SeaweedFS) one file, s3fs"
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
    """Where checkpoints go: ``ignite://host:port/<dir>``, a local directory, or ``s3://<bucket>/<dir>`` on
    the S3 anchor (``s3``: its :class:`~bench.s3anchor.S3Endpoint` as a dict), staged in a local directory."""

    def __init__(self, where: str, host: str, port: int, local_dir: str | None,
                 s3: dict[str, str] | None = None) -> None:
        self.where = where
        run = uuid.uuid4().hex[:8]
        self._staged: dict[str, str] = {}  # S3 directory (or "restore") -> its local copy
        if where == "ignite":
            self.endpoint = f"{host}:{port}"
            self.base = f"ignite://{self.endpoint}/bench-fs/{run}"
            self._local: Path | None = None
        elif where == "local":
            self._local = Path(tempfile.mkdtemp(prefix=f"bench-fs-{run}-", dir=local_dir))
            self.base = str(self._local)
        elif where == "s3":
            from .s3anchor import S3Endpoint

            if s3 is None:
                raise ValueError("where='s3' needs the S3 anchor's endpoint (s3=S3Endpoint.as_dict())")
            endpoint = S3Endpoint(**s3)
            self.fs = endpoint.filesystem()
            self.base = endpoint.url(f"bench-fs/{run}")
            self._local = Path(tempfile.mkdtemp(prefix=f"bench-fs-s3-{run}-", dir=local_dir))
        else:
            raise ValueError(f"where must be 'ignite', 'local' or 's3', not {where!r}")

    def write_checkpoint(self, checkpoint: Any, directory: str) -> None:
        """``checkpoint.write(directory + "/ckpt")``; on S3, into a local directory whose files are then
        uploaded into ``directory`` (the local copy is deleted by :meth:`remove`)."""
        if self.where != "s3":
            checkpoint.write(f"{directory}/ckpt")
            return
        stage = tempfile.mkdtemp(prefix="save-", dir=self._local)
        self._staged[directory] = stage
        checkpoint.write(f"{stage}/ckpt")
        names = sorted(os.listdir(stage))
        self.fs.put([f"{stage}/{n}" for n in names], [f"{directory}/{n}" for n in names])

    def read_checkpoint(self, checkpoint: Any, prefix: str) -> Any:
        """``checkpoint.read(prefix)``; on S3, the objects of the prefix's directory listed, downloaded into
        a fresh local directory and read from there (the previous restore's copy is deleted first)."""
        if self.where != "s3":
            return checkpoint.read(prefix)
        directory, name = prefix.rsplit("/", 1)
        stage = tempfile.mkdtemp(prefix="restore-", dir=self._local)
        self._staged["restore"] = stage
        remote = self.fs.ls(directory, detail=False, refresh=True)
        self.fs.get(remote, [f"{stage}/{r.rsplit('/', 1)[1]}" for r in remote])
        return checkpoint.read(f"{stage}/{name}")

    def drop_restored(self) -> None:
        """Delete the local copy of the last S3 restore (untimed, before the next one)."""
        stage = self._staged.pop("restore", None)
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)

    def remove(self, directory: str) -> None:
        if self.where == "s3":
            stage = self._staged.pop(directory, None)
            if stage is not None:
                shutil.rmtree(stage, ignore_errors=True)
            if self.fs.exists(directory):
                self.fs.rm(directory, recursive=True)
        elif self.where == "ignite":
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
        if self.where == "s3" and self._local is not None:
            shutil.rmtree(self._local, ignore_errors=True)


def _register() -> None:
    """``ignite://`` registered with TensorFlow in this process (idempotent)."""
    from tensorflow_ignite import fs

    fs.register()


def _labels(where: str, verb: str) -> tuple[str, str]:
    if where == "ignite":
        return "ignite", f"ignite:// checkpoint {verb}"
    if where == "s3":
        how = "local save + s3fs upload" if verb == "write" else "s3fs download + local restore"
        return "s3", f"S3 server (SeaweedFS) checkpoint {verb}: {how}"
    return "local", f"local disk checkpoint {verb} (reference)"


@_spec
def checkpoint_write(where: str, host: str, port: int, *, mb: int, local_dir: str | None = None,
                     s3: dict[str, str] | None = None) -> Contender:
    """``Checkpoint.write`` of the shared model into ``where`` (``"ignite"``, ``"local"`` or ``"s3"``: the
    S3 anchor at ``s3``, saved locally then uploaded)."""
    _register()
    model = model_for(mb)
    target = _Target(where, host, port, local_dir, s3)
    counter = [0]
    key, label = _labels(where, "write")

    def save() -> tuple[float, str]:
        counter[0] += 1
        directory = f"{target.base}/w{counter[0]}"
        start = time.perf_counter()
        target.write_checkpoint(model.checkpoint, directory)
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
    if where == "s3":
        note += ("; timed: the save into a local directory and `S3FileSystem.put` of its files (the local copy "
                 "deleted untimed too); node CPU counts the Ignite node, not the S3 server")
    contender = Contender(key, label, run, warmup=warmup, close=target.close, note=note, after=after)
    return contender


@_spec
def checkpoint_read(where: str, host: str, port: int, *, mb: int, local_dir: str | None = None,
                    key: str | None = None, s3: dict[str, str] | None = None) -> Contender:
    """``Checkpoint.read`` of a checkpoint of the shared model saved once into ``where``
    (``key``: the contender's key, by default ``where``; ``"s3"``: the S3 anchor at ``s3``, downloaded
    then restored)."""
    _register()
    model = model_for(mb)
    target = _Target(where, host, port, local_dir, s3)
    prefix = f"{target.base}/r/ckpt"
    target.write_checkpoint(model.checkpoint, f"{target.base}/r")  # untimed set-up
    default_key, label = _labels(where, "restore")
    key = key or default_key

    def restore() -> float:
        target.drop_restored()  # untimed: the previous S3 restore's local copy
        start = time.perf_counter()
        target.read_checkpoint(model.checkpoint, prefix).assert_consumed()
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
    if where == "s3":
        note += ("; timed: listing the checkpoint's objects, `S3FileSystem.get` of them into a fresh local "
                 "directory and the restore from there (that copy deleted untimed); node CPU counts the Ignite node, "
                 "not the S3 server")
    contender = Contender(key, label, run, warmup=warmup, close=target.close, note=note)
    return contender


@_spec
def file_read(how: str, host: str, port: int, *, mb: int, local_dir: str | None = None,
              s3: dict[str, str] | None = None) -> Contender:
    """One file as large as the shared model's variables, written once, read whole from start to end.

    ``how``: ``"ignite"`` (``tf.io.gfile`` over ``ignite://``), ``"tfrecord"`` (a
    ``TFRecordDataset`` over ``ignite://``, the file made of records), ``"local"``
    (``tf.io.gfile`` over a local file), ``"tfrecord_local"`` (a ``TFRecordDataset``
    over a local file: what TensorFlow's per-record loop allows whatever the filesystem)
    or ``"s3"`` (``S3FileSystem.open`` on the S3 anchor at ``s3``).
    """
    import numpy as np
    import tensorflow as tf

    _register()
    nbytes = model_for(mb).nbytes
    records = how.startswith("tfrecord")
    where = {"local": "local", "tfrecord_local": "local", "s3": "s3"}.get(how, "ignite")
    target = _Target(where, host, port, local_dir, s3)
    # The same calls on both APIs: open(path, mode), write(bytes), read(n).
    open_file = target.fs.open if where == "s3" else tf.io.gfile.GFile
    path = f"{target.base}/one-file.{'tfrecord' if records else 'bin'}"
    rng = np.random.default_rng(17)
    digest = hashlib.sha256()
    if where != "s3":
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
        with open_file(path, "wb") as f:
            left = nbytes
            while left > 0:
                piece = rng.bytes(min(8 << 20, left))
                f.write(piece)
                digest.update(piece)
                left -= len(piece)
    expected = digest.hexdigest()

    def read(check: bool) -> Run:
        h = hashlib.sha256() if check else None
        extra: dict[str, Any] = {}
        if records:
            def count(record: Any) -> int:
                value = record.numpy()
                if h is not None:
                    h.update(value)
                return len(value)

            # The iterator's deletion apart, as for every tf.data read (bench.contenders.drain).
            records_run = drain(tf.data.TFRecordDataset(path), count)
            got, seconds, extra = records_run.units, records_run.seconds, records_run.extra
        else:
            start = time.perf_counter()
            # In 1 MiB pieces, as a stream reader would: one read() of the whole file times
            # TensorFlow's own copies of it (3x the file in memory, local disk included).
            got = 0
            with open_file(path, "rb") as f:
                while value := f.read(READ_PIECE):
                    got += len(value)
                    if h is not None:
                        h.update(value)
            seconds = time.perf_counter() - start
        if got != nbytes or (h is not None and h.hexdigest() != expected):
            raise AssertionError(f"{label}: read {got:,} bytes, expected {nbytes:,}"
                                 + ("" if h is None else f" (sha256 {h.hexdigest()[:12]} vs {expected[:12]})"))
        return Run(seconds, 1, nbytes, extra=extra)

    def warmup() -> None:
        warm = _warm_up(lambda: read(False).seconds, first=lambda: read(True).seconds)
        contender.note = f"{note}; {_warmup_note('reads', warm)}"

    label, note = {
        "ignite": ("ignite:// one file, tf.io.gfile", "`tf.io.gfile.GFile(path, 'rb').read(1 MiB)` to the end"),
        "tfrecord": ("ignite:// TFRecordDataset", f"`tf.data.TFRecordDataset(path)` iterated eagerly, "
                                                  f"{TFRECORD_BYTES // 1024} KiB records; no target: the fetch, the "
                                                  "node and the per-record loop share two cores, which bounds it "
                                                  "near 0.8x of the restore here (what was tried 17)"),
        "local": ("local disk one file, tf.io.gfile (reference)", "`tf.io.gfile.GFile(path, 'rb').read(1 MiB)` "
                                                                "to the end of a local file (page cache)"),
        "tfrecord_local": ("local disk TFRecordDataset", f"`tf.data.TFRecordDataset(path)` iterated eagerly over a "
                                                         f"local file (page cache), {TFRECORD_BYTES // 1024} KiB "
                                                         "records: TensorFlow's per-record loop without a network"),
        "s3": (S3_FILE_LABEL, "`S3FileSystem.open(path, 'rb').read(1 MiB)` to the end (s3fs's defaults: "
                              "read-ahead cache of 50 MiB blocks); node CPU counts the Ignite node, not the S3 server"),
    }[how]
    contender = Contender(how, label, lambda: read(False), warmup=warmup, close=target.close,
                          note=note)
    return contender


def _s3_contender(s3: "S3Endpoint | Exception | None", key: str, label: str,
                  build: Callable[[dict[str, str]], Contender]) -> list[Contender]:
    """The S3 anchor's contender: none without an anchor (``s3`` None), built on its endpoint, or -- when
    the anchor could not start (``s3`` is that error) -- one that fails with it, so the table says why."""
    if s3 is None:
        return []
    if isinstance(s3, Exception):
        reason = s3

        def unavailable() -> Run:
            raise reason

        return [Contender(key, label, unavailable, warmup=unavailable)]
    return [build(s3.as_dict())]


def filesystem_scenarios(host: str, port: int, *, mb: int, nodes: int = 1, local_dir: str | None = None,
                         s3: "S3Endpoint | Exception | None" = None, log: Any = print) -> list[Scenario]:
    """The write, the restore and the one-file scenario (``fs_write``, ``fs_read``, ``fs_file``)
    against the node at ``host:port``; with ``s3`` (the running S3 anchor's endpoint, or the error that
    kept it from starting) each also against the S3 server, with the targets of issue 31."""
    log(f"  building a model of ~{mb} MiB for the checkpoint scenarios ...")
    model = model_for(mb)
    where = f"{nodes} node{'s' if nodes > 1 else ''}"
    common = (f"{model.description}, saved with `tf.train.Checkpoint` through `ignite://` ({where}, default "
              "settings: 4 MiB blocks, backups=1, FULL_SYNC) and into a local directory (ext4, page cache, no "
              "fsync on either side, as TensorFlow saves checkpoints). Each contender is warmed up with untimed "
              f"saves (restores) until steady: at least {WARMUP_MIN}, then until two in a row are within "
              f"{WARMUP_SETTLED:.0%}, at most {WARMUP_MAX} (a fresh node's JIT makes its first saves 2-6x "
              "dearer in node CPU; one warm-up timed the JIT).")
    if s3 is not None:
        common += (" The S3 anchor: a SeaweedFS S3 server on this machine (`weed server -filer -s3`, one "
                   "process, defaults but for ports and 1 GiB volumes) through s3fs; TensorFlow has no `s3://` "
                   "filesystem, so the save goes to a local directory and its files are uploaded "
                   "(`S3FileSystem.put`), the restore downloads them (`S3FileSystem.get`) and reads them "
                   "locally -- both parts timed, the local copies deleted untimed.")
    write = Scenario(
        "fs_write", "5a. Filesystem: checkpoint write", common, "MB/s",
        [checkpoint_write("ignite", host, port, mb=mb, local_dir=local_dir),
         checkpoint_write("local", host, port, mb=mb, local_dir=local_dir)]
        + _s3_contender(s3, *_labels("s3", "write"),
                        lambda e: checkpoint_write("s3", host, port, mb=mb, local_dir=local_dir, s3=e)),
        reference="local",
        targets=[Target("ignite", "local", FS_TARGETS["fs_write"],
                        "ignite:// checkpoint write >= 0.5x local disk")]
        + ([Target("ignite", "s3", S3_TARGET, "ignite:// checkpoint write ahead of the S3 server (>= 1x)")]
           if s3 is not None else []),
    )
    read = Scenario(
        "fs_read", "5b. Filesystem: checkpoint restore", common, "MB/s",
        [checkpoint_read("ignite", host, port, mb=mb, local_dir=local_dir),
         checkpoint_read("local", host, port, mb=mb, local_dir=local_dir)]
        + _s3_contender(s3, *_labels("s3", "restore"),
                        lambda e: checkpoint_read("s3", host, port, mb=mb, local_dir=local_dir, s3=e)),
        reference="local",
        targets=[Target("ignite", "local", FS_TARGETS["fs_read"],
                        "ignite:// checkpoint restore >= 0.5x local disk")]
        + ([Target("ignite", "s3", S3_TARGET, "ignite:// checkpoint restore ahead of the S3 server (>= 1x)")]
           if s3 is not None else []),
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
            "and by `TFRecordDataset` (what the per-record loop allows without a network)"
            + (", and from the S3 server through s3fs (`S3FileSystem.open(...).read(1 MiB)`)" if s3 is not None
               else "")
            + ". Warm-up as above; the first warm-up read checks every byte (sha256)."),
        "MB/s",
        [file_read("ignite", host, port, mb=mb, local_dir=local_dir),
         file_read("tfrecord", host, port, mb=mb, local_dir=local_dir),
         checkpoint_read("ignite", host, port, mb=mb, local_dir=local_dir, key="ckpt"),
         file_read("local", host, port, mb=mb, local_dir=local_dir),
         file_read("tfrecord_local", host, port, mb=mb, local_dir=local_dir)]
        + _s3_contender(s3, "s3", S3_FILE_LABEL,
                        lambda e: file_read("s3", host, port, mb=mb, local_dir=local_dir, s3=e)),
        reference="ckpt",
        # The TFRecordDataset has no target (its note says why).
        targets=[Target("ignite", "ckpt", FILE_TARGET,
                        "one ignite:// file through tf.io.gfile >= 1x the checkpoint restore of its size")]
        + ([Target("ignite", "s3", S3_TARGET,
                   "one ignite:// file through tf.io.gfile ahead of the same file from the S3 server (>= 1x)")]
           if s3 is not None else []),
    )
    return [write, read, one_file]
