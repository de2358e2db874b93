"""Checkpointed IgniteDataset iterators: saved mid-epoch, resumed exactly once in a fresh process.

``tf.train.Checkpoint(iterator=it)`` saves the op's state (per-partition
progress); a new Python process builds the dataset again, restores the
iterator and must yield exactly the rows the first process had not received:
also after a node died and after a node joined (partitions moved, rows of a
partition come back from another node in another order), and through Keras
``BackupAndRestore(save_freq=N)``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tensorflow as tf

from tensorflow_ignite import IgniteDataset
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.data.dataset import close_shared_clients
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.protocol.cache_config import CacheConfiguration
from tensorflow_ignite.protocol.codes import CacheMode, PartitionLossPolicy, WriteSynchronizationMode
from tensorflow_ignite.protocol.values import BinaryObject
from tensorflow_ignite.testing.waiting import wait_rebalanced

ROWS = 4_000
BATCH = 50

# Builds each dataset the way the first process did, restores its iterator, reads the rest.
RESTORE = textwrap.dedent("""
    import json, sys
    import tensorflow as tf
    from tensorflow_ignite import IgniteDataset

    results = []
    for job in json.loads(sys.argv[1]):
        ds = IgniteDataset(job["cache"], job["host"], job["port"], **job["kwargs"])
        it = iter(ds)
        tf.train.Checkpoint(iterator=it).read(job["checkpoint"]).assert_consumed()
        keys = [k.decode() if isinstance(k, bytes) else int(k) for batch in it for k in batch["key"].numpy()]
        results.append({"keys": keys, "skipped": ds.stats.resumed_skips, "mode": ds.stats.scan_mode})
    with open(sys.argv[2], "w") as f:
        json.dump(results, f)
""")


def _fill(client: IgniteClient, cache: str, keys: list[Any], *, backups: int = 0) -> None:
    c = client.create_cache(CacheConfiguration(
        cache, cache_mode=CacheMode.PARTITIONED, backups=backups,
        write_synchronization_mode=WriteSynchronizationMode.FULL_SYNC,
        partition_loss_policy=PartitionLossPolicy.READ_WRITE_SAFE,
    ))
    for start in range(0, len(keys), 2000):
        c.put_all({k: BinaryObject("ResumeRow", {"id": i, "score": i / 4.0})
                   for i, k in enumerate(keys[start:start + 2000], start)})


def _key(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else int(value)


def _take(it: Any, batches: int) -> list[Any]:
    keys: list[Any] = []
    for _ in range(batches):
        keys.extend(_key(k) for k in next(it)["key"].numpy())
    return keys


def _restore_elsewhere(tmp_path: Path, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Restore each job's checkpoint in one new Python process: their keys and stats.

    A job: ``cache``, ``address``, ``checkpoint`` and the dataset's keyword arguments.
    """
    out = tmp_path / f"rest-{time.monotonic_ns()}.json"
    args = [{"cache": j["cache"], "host": j["address"][0], "port": j["address"][1], "kwargs": j["kwargs"],
             "checkpoint": j["checkpoint"]} for j in jobs]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    proc = subprocess.run([sys.executable, "-c", RESTORE, json.dumps(args), str(out)], capture_output=True,
                          text=True, env=env, timeout=300)
    assert proc.returncode == 0, f"the restoring process failed:\n{proc.stdout}\n{proc.stderr[-4000:]}"
    return json.loads(out.read_text())


def _assert_exactly_once(keys: list[Any], expected: list[Any], what: str) -> None:
    counts = Counter(keys)
    repeated = {k: n for k, n in counts.items() if n > 1}
    missing = set(expected) - set(counts)
    extra = set(counts) - set(expected)
    assert not repeated and not missing and not extra, (
        f"{what}: {len(missing)} rows lost (e.g. {sorted(missing)[:5]}), {len(repeated)} repeated "
        f"(e.g. {sorted(repeated.items())[:5]}), {len(extra)} unexpected")


def test_saved_iterators_resume_in_a_fresh_process(ignite_cluster: LocalCluster, cache_name: str,
                                                   tmp_path: Path) -> None:
    # long keys: one scan per node, identities are the keys; string keys: partition scans, key digests
    kinds = {"nodes": [i for i in range(ROWS)], "partitions": [f"row-{i}" for i in range(ROWS)]}
    address = ignite_cluster.address(0)
    jobs, firsts, iterators = [], {}, {}
    for mode, keys in kinds.items():
        cache = f"{cache_name}_{mode}"
        with IgniteClient(ignite_cluster.addresses()) as client:
            _fill(client, cache, keys)
        ds = IgniteDataset(cache, *address, batch_size=BATCH)
        it = iter(ds)
        firsts[mode] = _take(it, 37)  # mid-partition: 37 * 50 rows, ~4 rows per partition
        checkpoint = tf.train.Checkpoint(iterator=it).write(str(tmp_path / mode / "ckpt"))
        assert ds.stats.scan_mode == mode
        # Long keys and fixed-size fields: one layout, the compiled decoder; string keys: NumPy.
        assert (ds.stats.decode_paths.get("compiled", 0) > 0) == (mode == "nodes"), ds.stats.decode_paths
        jobs.append({"cache": cache, "address": address, "checkpoint": checkpoint, "kwargs": {"batch_size": BATCH}})
        iterators[mode] = (ds, it)

    # Here, the iterators go on; a fresh process resumes from the checkpoints: both yield the rest.
    for mode, (ds, it) in iterators.items():
        rest_here = [_key(k) for batch in it for k in batch["key"].numpy()]
        _assert_exactly_once(firsts[mode] + rest_here, kinds[mode], f"{mode}: the saving process")
    for job, mode, resumed in zip(jobs, kinds, _restore_elsewhere(tmp_path, jobs)):
        _assert_exactly_once(firsts[mode] + resumed["keys"], kinds[mode], f"{mode}: resumed in another process")
        assert resumed["mode"] == "partitions"  # a resumed read scans the partitions left, one by one

    # A finished iterator saves as finished: restoring it yields nothing.
    ds, it = iterators["nodes"]
    done = tf.train.Checkpoint(iterator=it).write(str(tmp_path / "finished" / "ckpt"))
    again = iter(ds)
    tf.train.Checkpoint(iterator=again).read(done).assert_consumed()
    assert list(again) == []


def test_restoring_into_another_dataset_is_a_clear_error(ignite_cluster: LocalCluster, cache_name: str,
                                                         tmp_path: Path) -> None:
    with IgniteClient(ignite_cluster.addresses()) as client:
        _fill(client, cache_name, list(range(500)))
    address = ignite_cluster.address(0)
    it = iter(IgniteDataset(cache_name, *address, batch_size=BATCH, parts=range(0, 512)))
    next(it)
    path = tf.train.Checkpoint(iterator=it).write(str(tmp_path / "ckpt"))
    other = iter(IgniteDataset(cache_name, *address, batch_size=BATCH, parts=range(512, 1024)))
    with pytest.raises(tf.errors.InvalidArgumentError, match="belongs to another dataset.*same cache, same parts"):
        tf.train.Checkpoint(iterator=other).read(path).assert_consumed()


@pytest.fixture
def three_nodes(tmp_path: Path) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path / "nodes", nodes=3, name="tfi-dsresume", heap_mb=384, region_mb=256)
    try:
        cluster.start()
        yield cluster
    finally:
        close_shared_clients()  # the datasets' pooled client points at these nodes
        cluster.stop()


def test_resume_exactly_once_after_a_node_died_and_another_joined(three_nodes: LocalCluster, cache_name: str,
                                                                  tmp_path: Path) -> None:
    cluster = three_nodes
    keys = list(range(ROWS))
    with IgniteClient(cluster.addresses()) as client:
        _fill(client, cache_name, keys, backups=1)
    wait_rebalanced(cluster, cache_name, ROWS)
    address = cluster.address(0)  # the seed stays up; the dataset knows the other nodes too
    # Small pages: partitions are read in several round trips, so saves land inside them.
    ds = IgniteDataset(cache_name, *address, batch_size=BATCH, page_size=8, timeout=20)

    # 1. Saved mid-epoch on three nodes; then a node dies.
    kwargs = {"batch_size": BATCH, "page_size": 8, "timeout": 20}
    it = iter(ds)
    first_one = _take(it, 29)
    saved_one = tf.train.Checkpoint(iterator=it).write(str(tmp_path / "one" / "ckpt"))
    del it
    cluster.kill_node(2, signal.SIGKILL)
    wait_rebalanced(cluster, cache_name, ROWS)
    with IgniteClient(cluster.addresses()) as client:
        before = client.partition_map(cache_name, refresh=True)

    # 2. Saved mid-epoch on the two survivors; then a node joins and partitions move to it.
    it = iter(ds)
    first_two = _take(it, 41)
    saved_two = tf.train.Checkpoint(iterator=it).write(str(tmp_path / "two" / "ckpt"))
    del it
    cluster.add_node()
    wait_rebalanced(cluster, cache_name, ROWS)
    with IgniteClient(cluster.addresses()) as client:
        after = client.partition_map(cache_name, refresh=True)
    moved = sum(a != b for a, b in zip(before.nodes, after.nodes))
    assert moved > 0, "the joined node took over partitions"

    # A fresh process resumes both: every row exactly once across each save.
    one, two = _restore_elsewhere(tmp_path, [
        {"cache": cache_name, "address": address, "checkpoint": saved_one, "kwargs": kwargs},
        {"cache": cache_name, "address": address, "checkpoint": saved_two, "kwargs": kwargs},
    ])
    _assert_exactly_once(first_one + one["keys"], keys, "saved on 3 nodes, node 2 died, a node joined, resumed")
    _assert_exactly_once(first_two + two["keys"], keys, f"saved on 2 nodes, a join moved {moved} partitions, "
                                                        "resumed")
    # The saves are meant to land inside partitions (rows handed out then skipped on resume).
    # Where a save lands depends on timing: CI once saw one of the two resume without a skip
    # (still exactly once); at least one of them must have exercised the skipping.
    assert one["skipped"] + two["skipped"] > 0, (
        f"no save landed inside a partition: skipped {one['skipped']} ({one['mode']}) and "
        f"{two['skipped']} ({two['mode']}) rows on resume")

    # 3. A node dies *during* the epoch, before the save (the one-scan-per-node read cannot
    #    vouch for partitions any more: the state keeps their rows' keys); resumed here.
    it = iter(ds)
    first = _take(it, 13)
    cluster.kill_node(1, signal.SIGKILL)
    first += _take(it, 13)
    saved = tf.train.Checkpoint(iterator=it).write(str(tmp_path / "three" / "ckpt"))
    del it
    again = iter(ds)
    tf.train.Checkpoint(iterator=again).read(saved).assert_consumed()
    rest = [_key(k) for batch in again for k in batch["key"].numpy()]
    _assert_exactly_once(first + rest, keys, "saved after a node died mid-epoch, resumed")


KERAS_JOB = textwrap.dedent("""
    import json, sys
    import keras
    import tensorflow as tf
    from tensorflow_ignite import IgniteDataset
    from tensorflow_ignite.data import BackupAndRestore


    class Counting(keras.Model):
        \"\"\"A linear model that counts, in a weight, how often it trained on each key.\"\"\"

        def __init__(self, rows):
            super().__init__()
            self.rows = rows
            self.dense = keras.layers.Dense(1)
            self.seen = self.add_weight(shape=(rows,), initializer="zeros", trainable=False, name="seen")

        def call(self, x):
            return self.dense(x["score"])

        def train_step(self, data):
            x, y = data
            self.seen.assign_add(tf.math.bincount(tf.cast(x["key"], tf.int32), minlength=self.rows,
                                                  maxlength=self.rows, dtype=tf.float32))
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(self(x) - y))
            self.optimizer.apply(tape.gradient(loss, self.trainable_variables), self.trainable_variables)
            return {"loss": loss}


    class Interrupt(keras.callbacks.Callback):
        def __init__(self, at):
            super().__init__()
            self.at, self.batches = at, 0

        def on_train_batch_end(self, batch, logs=None):
            self.batches += 1
            if self.batches == self.at:
                raise RuntimeError("interrupted")


    def main(args):
        model = Counting(args["rows"])
        model.compile(optimizer=keras.optimizers.SGD(0.01))
        model({"score": tf.zeros((1, 1)), "key": tf.zeros((1,), tf.int64)})
        ds = IgniteDataset(args["cache"], args["host"], args["port"], batch_size=args["batch"]).map(
            lambda b: ({"score": tf.reshape(tf.cast(b["val"]["score"], tf.float32), (-1, 1)), "key": b["key"]},
                       tf.cast(b["val"]["score"], tf.float32)))
        backup = BackupAndRestore(args["backup"], save_freq=args["save_freq"], delete_checkpoint=False)
        interrupt = Interrupt(args.get("interrupt_at", -1))
        try:
            model.fit(backup.dataset(ds), epochs=1, callbacks=[backup, interrupt], verbose=0)
        finally:
            with open(args["out"], "w") as f:
                json.dump({"seen": model.seen.numpy().tolist(), "batches": interrupt.batches,
                           "restored": backup.restored}, f)
""")


def test_keras_backup_and_restore_resumes_mid_epoch_exactly_once(ignite_cluster: LocalCluster, cache_name: str,
                                                                tmp_path: Path) -> None:
    rows, batch = 2_000, 50
    with IgniteClient(ignite_cluster.addresses()) as client:
        _fill(client, cache_name, list(range(rows)))
    host, port = ignite_cluster.address(0)
    args = {"rows": rows, "cache": cache_name, "host": host, "port": port, "batch": batch,
            "backup": str(tmp_path / "backup"), "save_freq": 7}

    # Run 1, here: trains 25 of 40 batches, backed up after batches 7, 14 and 21, then fails.
    job: dict[str, Any] = {}
    exec(compile(KERAS_JOB, "keras_job", "exec"), job)  # noqa: S102 - the same job the fresh process runs
    with pytest.raises(RuntimeError, match="interrupted"):
        job["main"]({**args, "interrupt_at": 25, "out": str(tmp_path / "run1.json")})
    run1 = json.loads((tmp_path / "run1.json").read_text())
    assert run1["batches"] == 25 and sum(run1["seen"]) == 25 * batch

    # Run 2, a fresh process: the model comes back as of batch 21, the iterator right after it.
    out = tmp_path / "run2.json"
    proc = subprocess.run([sys.executable, "-c", KERAS_JOB + "\nmain(json.loads(sys.argv[1]))",
                           json.dumps({**args, "out": str(out)})],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 0, f"the resumed run failed:\n{proc.stdout}\n{proc.stderr[-4000:]}"
    run2 = json.loads(out.read_text())
    assert run2["restored"] == 1
    assert run2["batches"] == rows // batch - 21, "the resumed epoch trained only the batches left"
    counts = Counter(run2["seen"])
    assert counts == {1.0: rows}, f"every row trained on exactly once over the two runs: {counts}"
