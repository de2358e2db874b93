"""IgniteDataset on the tf.data service: a dispatcher and two worker processes.

The workers are separate Python processes that import ``tensorflow_ignite``
and nothing of the test: they rebuild the reader from the op's description.
``distributed_epoch`` hands out partitions (the op's split provider): every
row exactly once per epoch; ``parallel_epochs``: every worker reads it all.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from collections import Counter
from collections.abc import Iterator

import pytest
import tensorflow as tf

from tensorflow_ignite import IgniteDataset
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.protocol.values import BinaryObject

ROWS = 5_000

# A tf.data service worker: imports tensorflow_ignite (the op and its rebuilder), starts,
# says so, and serves until its stdin closes.
WORKER = textwrap.dedent("""
    import sys
    import tensorflow_ignite  # noqa: F401  -- registers the IgniteDataset op in this process
    import tensorflow as tf

    worker = tf.data.experimental.service.WorkerServer(
        tf.data.experimental.service.WorkerConfig(dispatcher_address=sys.argv[1], port=0))
    print("READY", flush=True)
    sys.stdin.read()
    worker.stop()
""")


@pytest.fixture(scope="module")
def service() -> Iterator[tf.data.experimental.service.DispatchServer]:
    """A dispatcher in this process and two worker processes, always stopped."""
    dispatcher = tf.data.experimental.service.DispatchServer(tf.data.experimental.service.DispatcherConfig(port=0))
    address = dispatcher.target.split("://", 1)[1]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    workers: list[subprocess.Popen[str]] = []
    try:
        for _ in range(2):
            workers.append(subprocess.Popen([sys.executable, "-c", WORKER, address], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env))
        for w in workers:
            line = w.stdout.readline() if w.stdout else ""
            while line and not line.startswith("READY"):
                line = w.stdout.readline() if w.stdout else ""
            assert line.startswith("READY"), f"a tf.data service worker did not start (exit {w.poll()})"
        deadline = time.monotonic() + 60
        delay = 0.05
        while dispatcher._num_workers() < 2:  # TensorFlow's DispatchServer; registration is asynchronous
            assert time.monotonic() < deadline, "the workers did not register with the dispatcher"
            time.sleep(delay)
            delay = min(delay * 2, 0.5)
        yield dispatcher
    finally:
        for w in workers:
            if w.stdin:
                w.stdin.close()
        for w in workers:
            try:
                w.wait(timeout=30)
            except subprocess.TimeoutExpired:
                w.kill()
                w.wait()
        dispatcher.stop()


@pytest.fixture(scope="module")
def rows_cache(ignite_cluster: LocalCluster) -> Iterator[str]:
    name = "service_rows"
    with IgniteClient(ignite_cluster.addresses()) as client:
        cache = client.get_or_create_cache(name)
        cache.put_all({i: BinaryObject("ServiceRow", {"id": i, "score": i / 8.0}) for i in range(ROWS)})
    yield name
    with IgniteClient(ignite_cluster.addresses()) as client:
        client.destroy_cache(name)


def _keys(ds: tf.data.Dataset) -> Counter[int]:
    keys: Counter[int] = Counter()
    for batch in ds:
        keys.update(int(k) for k in batch["key"].numpy())
        assert (batch["val"]["id"].numpy() == batch["key"].numpy()).all()
    return keys


def test_distributed_epoch_reads_every_row_once(ignite_cluster: LocalCluster, rows_cache: str,
                                                service: tf.data.experimental.service.DispatchServer) -> None:
    host, port = ignite_cluster.address(0)
    ds = IgniteDataset(rows_cache, host, port, batch_size=64)
    for epoch in range(2):
        distributed = ds.apply(tf.data.experimental.service.distribute(
            processing_mode="distributed_epoch", service=service.target, job_name=f"distributed-{epoch}"))
        keys = _keys(distributed)
        repeated = {k: n for k, n in keys.items() if n > 1}
        missing = set(range(ROWS)) - set(keys)
        assert not repeated and not missing, (f"epoch {epoch}: {len(missing)} rows lost, {len(repeated)} repeated "
                                              f"(e.g. {sorted(repeated.items())[:5]})")


def test_parallel_epochs_gives_each_worker_a_whole_epoch(
        ignite_cluster: LocalCluster, rows_cache: str, service: tf.data.experimental.service.DispatchServer) -> None:
    host, port = ignite_cluster.address(0)
    ds = IgniteDataset(rows_cache, host, port, batch_size=100).map(lambda b: b)
    keys = _keys(ds.apply(tf.data.experimental.service.distribute(
        processing_mode="parallel_epochs", service=service.target, job_name="parallel")))
    assert set(keys) == set(range(ROWS))
    assert set(keys.values()) == {2}, "each of the two workers reads the whole cache once"


def test_a_dataset_without_partitions_cannot_be_split(
        ignite_cluster: LocalCluster, rows_cache: str, service: tf.data.experimental.service.DispatchServer) -> None:
    host, port = ignite_cluster.address(0)
    ds = IgniteDataset(rows_cache, host, port, local=True, batch_size=64)  # one local scan: no partitions
    with pytest.raises(tf.errors.UnimplementedError, match="no partitions to hand out.*parallel_epochs"):
        list(ds.apply(tf.data.experimental.service.distribute(
            processing_mode="distributed_epoch", service=service.target, job_name="local")))


def test_tensor_arguments_travel_with_the_graph(
        ignite_cluster: LocalCluster, rows_cache: str, service: tf.data.experimental.service.DispatchServer) -> None:
    # Partitions given as tensors whose values are read when the graph runs: the op's inputs are
    # serialized with it, and each worker process rebuilds every partition's read from them.
    host, port = ignite_cluster.address(0)
    with IgniteClient(f"{host}:{port}") as client:
        partitions = client.partition_map(rows_cache).partitions
    first = tf.Variable(0, dtype=tf.int64)  # no static value: an input of the op, even eagerly
    single = IgniteDataset(rows_cache, host, port, part=first, page_size=tf.Variable(50), batch_size=64)
    per_partition = tf.data.Dataset.range(partitions).interleave(
        lambda p: IgniteDataset(rows_cache, host, port, part=p, batch_size=64), cycle_length=8)
    keys = _keys(per_partition.apply(tf.data.experimental.service.distribute(
        processing_mode="parallel_epochs", service=service.target, job_name="tensor-arguments")))
    assert set(keys) == set(range(ROWS)) and set(keys.values()) == {2}, "each worker reads every row once"
    local = _keys(single)
    remote = _keys(single.apply(tf.data.experimental.service.distribute(
        processing_mode="parallel_epochs", service=service.target, job_name="tensor-argument-variable")))
    assert local and remote == Counter({k: 2 for k in local})
