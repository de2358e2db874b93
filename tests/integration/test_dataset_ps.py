"""IgniteDataset on ParameterServerStrategy workers in other processes (``per_worker=True``).

A ps task and two worker tasks are separate processes that import
``tensorflow_ignite`` and nothing of the test; each worker has its own
``IGNITE_DATASET_PARTS`` (half of the partitions each), as ``ignite-tf start``
sets it.  A coordinator process builds the dataset once in the ``dataset_fn`` of
``ClusterCoordinator.create_per_worker_dataset``; every worker rebuilds it from
the op's description and reads its own partitions.  Scheduled steps pull
batches until every worker's iterator is exhausted: together they yield every
row exactly once, and each worker only rows of its own partitions.  The
coordinator runs in a process of its own too: connecting to a TF cluster
changes the process's eager context for good.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import tensorflow_ignite as ti
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.protocol.hashing import affinity_partitions, long_hash_codes

ROWS = 3_000
PARTITIONS = 1024
SHARES = ("0-511", "512-1023")

# A ps or worker task: serves until its stdin closes.
SERVER = textwrap.dedent("""
    import json, sys
    import tensorflow_ignite  # noqa: F401  -- the IgniteDataset op and its rebuilder in this process
    import tensorflow as tf

    server = tf.distribute.Server(tf.train.ClusterSpec(json.loads(sys.argv[1])), job_name=sys.argv[2],
                                  task_index=int(sys.argv[3]), protocol="grpc", start=True)
    print("READY", flush=True)
    sys.stdin.read()
""")

COORDINATOR = textwrap.dedent("""
    import json, sys
    import tensorflow_ignite as ti
    import tensorflow as tf

    spec, cache, host, port = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])
    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(tf.train.ClusterSpec(spec), rpc_layer="grpc")
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)

    def dataset_fn():
        return ti.IgniteDataset(cache, host, port, batch_size=100, per_worker=True)

    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))

    @tf.function
    def step(it):
        batch = it.get_next_as_optional()
        keys = tf.cond(batch.has_value(), lambda: batch.get_value()["key"], lambda: tf.zeros([0], tf.int64))
        return keys, tf.distribute.coordinator.experimental_get_current_worker_index()

    by_worker = {}
    empty = 0
    for _ in range(400):  # bounded: 30 batches of rows in all
        results = [coordinator.schedule(step, args=(iterator,)) for _ in range(4)]
        coordinator.join()
        got = 0
        for r in results:
            keys, worker = r.fetch()
            by_worker.setdefault(int(worker), []).extend(int(k) for k in keys)
            got += len(keys)
        empty = empty + 1 if got == 0 else 0
        if empty == 3:  # every worker's iterator is exhausted (an exhausted one stays so)
            break
    print("RESULT " + json.dumps(by_worker), flush=True)
""")


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@pytest.fixture
def filled(ignite_node: LocalCluster, cache_name: str) -> Iterator[str]:
    host, port = ignite_node.address()
    ids = np.arange(ROWS, dtype=np.int64)
    ti.write(cache_name, {"id": ids, "x": ids.astype(np.float32)}, key="id", host=host, port=port, progress=False)
    yield cache_name


def test_parameter_server_workers_each_read_their_partitions_exactly_once(
        ignite_node: LocalCluster, filled: str) -> None:
    host, port = ignite_node.address()
    ps_port, w0, w1 = _free_ports(3)
    spec = {"ps": [f"127.0.0.1:{ps_port}"], "worker": [f"127.0.0.1:{w0}", f"127.0.0.1:{w1}"]}
    base = {k: v for k, v in os.environ.items() if not k.startswith(("IGNITE_DATASET_", "TF_CONFIG"))}
    base["TF_CPP_MIN_LOG_LEVEL"] = "2"
    tasks = [("ps", 0, {}), *[("worker", i, {"IGNITE_DATASET_PARTS": share, "IGNITE_DATASET_HOST": host,
                                             "IGNITE_DATASET_PORT": str(port)}) for i, share in enumerate(SHARES)]]
    servers: list[subprocess.Popen[str]] = []
    try:
        for job, index, env in tasks:
            servers.append(subprocess.Popen([sys.executable, "-c", SERVER, json.dumps(spec), job, str(index)],
                                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                            text=True, env={**base, **env}))
        for (job, index, _), p in zip(tasks, servers):
            line = p.stdout.readline() if p.stdout else ""
            while line and not line.startswith("READY"):
                line = p.stdout.readline() if p.stdout else ""
            assert line.startswith("READY"), f"{job} {index} did not start (exit {p.poll()})"
        coordinator = subprocess.run([sys.executable, "-c", COORDINATOR, json.dumps(spec), filled, host, str(port)],
                                     capture_output=True, text=True, env=base, timeout=300)
        assert coordinator.returncode == 0, coordinator.stderr[-4000:]
    finally:
        for p in servers:
            if p.stdin:
                p.stdin.close()
        for p in servers:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
    line = next(x for x in coordinator.stdout.splitlines() if x.startswith("RESULT "))
    by_worker = {int(w): keys for w, keys in json.loads(line[len("RESULT "):]).items()}
    counts = Counter(k for keys in by_worker.values() for k in keys)
    assert sorted(counts) == list(range(ROWS)), f"{ROWS - len(counts)} rows missing"
    assert max(counts.values()) == 1, f"{sum(c > 1 for c in counts.values())} rows read twice"
    partition_of = affinity_partitions(long_hash_codes(np.arange(ROWS, dtype=np.int64)), PARTITIONS)
    assert sorted(by_worker) == [0, 1]
    for worker, keys in by_worker.items():
        low, high = (int(x) for x in SHARES[worker].split("-"))
        share = partition_of[np.asarray(keys)]
        assert ((share >= low) & (share <= high)).all(), f"worker {worker} read rows of another share"


# A process that did not build the dataset runs its serialized graph: first without
# IGNITE_DATASET_PARTS, then with it.
REBUILD_ELSEWHERE = textwrap.dedent("""
    import json, os, pickle, sys
    import tensorflow_ignite  # noqa: F401 -- registers the op and its rebuilder
    import tensorflow as tf
    from tensorflow.python.data.ops import dataset_ops
    from tensorflow.python.ops import gen_experimental_dataset_ops

    graph, spec = pickle.loads(open(sys.argv[1], "rb").read())
    def keys():
        ds = dataset_ops._VariantDataset(gen_experimental_dataset_ops.dataset_from_graph(graph), spec)
        return [int(k) for b in ds for k in b["key"].numpy()]
    try:
        keys()
        print("UNEXPECTED: read without IGNITE_DATASET_PARTS")
    except tf.errors.InvalidArgumentError as exc:
        print("WITHOUT: " + exc.message.splitlines()[0])
    os.environ["IGNITE_DATASET_PARTS"] = sys.argv[2]
    print("KEYS: " + json.dumps(keys()))
""")


def test_a_per_worker_dataset_rebuilt_elsewhere_needs_and_reads_that_process_partitions(
        ignite_node: LocalCluster, filled: str, tmp_path: Path) -> None:
    import pickle

    host, port = ignite_node.address()
    ds = ti.IgniteDataset(filled, host, port, batch_size=256, per_worker=True)
    assert sum(int(b["key"].shape[0]) for b in ds) == ROWS  # here: no IGNITE_DATASET_PARTS, the whole cache
    graph = tmp_path / "graph.pickle"
    # _as_serialized_graph: TensorFlow's (private) serialization, what the tf.data service ships.
    graph.write_bytes(pickle.dumps((ds._as_serialized_graph().numpy(), ds.element_spec)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("IGNITE_DATASET_")}
    proc = subprocess.run([sys.executable, "-c", REBUILD_ELSEWHERE, str(graph), SHARES[1]], capture_output=True,
                          text=True, timeout=240, env={**env, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = dict(line.split(": ", 1) for line in proc.stdout.splitlines() if ": " in line)
    assert "IGNITE_DATASET_PARTS" in lines.get("WITHOUT", "") and filled in lines["WITHOUT"], proc.stdout
    keys = np.asarray(json.loads(lines["KEYS"]), dtype=np.int64)
    share = affinity_partitions(long_hash_codes(np.arange(ROWS, dtype=np.int64)), PARTITIONS)
    assert sorted(keys.tolist()) == np.flatnonzero(share >= 512).tolist()
