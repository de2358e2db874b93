"""IgniteDataset.follow against real nodes: rows, then updates; its ends; its guarantee through failures.

The guarantee under test (ARCHITECTURE.md, "Following a cache"): while the
continuous query lives every update arrives once; through a lost query (the
node holding it killed, a slow consumer past the bounded queue) and through a
process crash + checkpoint restore, the latest value of every key is always
delivered -- the last value the follower delivers for a key is the value
the cache holds once the writers stop.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import tensorflow as tf

from tensorflow_ignite import IgniteDataset
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.data.dataset import close_shared_clients
from tensorflow_ignite.errors import ConfigurationError, IgniteConnectionError
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.protocol.cache_config import CacheConfiguration
from tensorflow_ignite.protocol.codes import CacheMode, WriteSynchronizationMode
from tensorflow_ignite.protocol.hashing import affinity_partition, java_key_hash
from tensorflow_ignite.protocol.values import BinaryObject
from tensorflow_ignite.testing.waiting import wait_for, wait_rebalanced


def _row(i: int, v: float) -> BinaryObject:
    return BinaryObject("FollowRow", {"id": i, "v": v})


def _rows(batch: dict[str, Any]) -> list[tuple[int, float]]:
    return list(zip(batch["key"].numpy().tolist(), batch["val"]["v"].numpy().tolist()))


class _Consumer:
    """Iterates a dataset in a thread, recording (key, value) pairs; ``when(n, action)`` fires once at n rows."""

    def __init__(self, ds: tf.data.Dataset, delay: float = 0.0, latest_only: bool = False) -> None:
        self.rows: list[tuple[int, float]] = []
        #: With ``latest_only`` (a soak: memory must stay flat) only each key's last value and a count.
        self.latest: dict[int, float] = {}
        self.count = 0
        self._latest_only = latest_only
        self.error: BaseException | None = None
        self.ended_at = 0.0
        self._ds = ds
        self._delay = delay
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for batch in self._ds:
                rows = _rows(batch)
                self.count += len(rows)
                if self._latest_only:
                    self.latest.update(rows)
                else:
                    self.rows.extend(rows)
                if self._delay:
                    time.sleep(self._delay)  # a slow training step
        except BaseException as exc:  # reported by join()
            self.error = exc
        self.ended_at = time.monotonic()

    def wait_rows(self, n: int, timeout: float = 60) -> None:
        self.wait_until(lambda: len(self.rows) >= n, timeout, f"{n} followed rows")

    def wait_until(self, predicate: Callable[[], bool], timeout: float, what: str) -> None:
        """``predicate`` holds; or the consumer failed (its error is raised here) or ended too early."""
        wait_for(lambda: predicate() or not self._thread.is_alive(), timeout, what)
        if self.error is not None:
            raise self.error
        assert predicate(), f"the dataset ended (stream_timeout) before {what}"

    def join(self, timeout: float = 120) -> None:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the follower did not end (stream_timeout)"
        if self.error is not None:
            raise self.error


def _latest(rows: list[tuple[int, float]]) -> dict[int, float]:
    out: dict[int, float] = {}
    for k, v in rows:
        out[k] = v
    return out


def _cache_state(client: IgniteClient, cache: str) -> dict[int, float]:
    return {int(k): float(v.fields["v"]) for k, v in client.cache(cache).scan()}


def _assert_latest_delivered(delivered: list[tuple[int, float]], final: dict[int, float], what: str) -> None:
    latest = _latest(delivered)
    missing = {k for k in final if k not in latest}
    stale = {k: (latest[k], final[k]) for k in final if k in latest and latest[k] != final[k]}
    assert not missing and not stale, (
        f"{what}: {len(missing)} keys never delivered (e.g. {sorted(missing)[:5]}), {len(stale)} keys whose last "
        f"delivered value is not the latest (e.g. {sorted(stale.items())[:5]})")


@pytest.fixture
def client(ignite_node: LocalCluster) -> Iterator[IgniteClient]:
    with IgniteClient(ignite_node.addresses()) as c:
        yield c


def test_rows_then_each_update_once_then_stream_timeout(ignite_node: LocalCluster, client: IgniteClient,
                                                        cache_name: str) -> None:
    rows_then_each_update_once(*ignite_node.address(), client, cache_name)


def test_follow_over_tls_with_client_certificates_and_a_password(ignite_secure_node: LocalCluster,
                                                                 cache_name: str) -> None:
    """The same guarantee on a node that requires TLS, a client certificate and a password: the
    follower's query connection and its reads take the dataset's connection keywords."""
    settings = ignite_secure_node.client_settings()
    host, port = ignite_secure_node.address()
    with IgniteClient(f"{host}:{port}", **settings) as secure:
        rows_then_each_update_once(host, port, secure, cache_name, **settings)


def rows_then_each_update_once(host: str, port: int, client: IgniteClient, cache_name: str,
                               **connection: Any) -> None:
    """The live guarantee (also run on stock nodes by test_stock_cluster.py and over TLS with
    authentication above); ``connection``: the dataset's credentials and TLS keywords."""
    cache = client.get_or_create_cache(cache_name)
    cache.put_all({i: _row(i, 0.0) for i in range(300)})
    # 6 s without events ends it: room for a loaded machine to deliver the 100 writes below.
    ds = IgniteDataset.follow(cache_name, host, port, batch_size=64, max_wait=0.05, stream_timeout=6.0,
                              **connection)
    consumer = _Consumer(ds)
    consumer.wait_rows(300)
    assert sorted(k for k, _ in consumer.rows) == list(range(300))  # the rows that exist, once
    for i in range(250, 350):  # 50 updates, 50 inserts
        cache.put(i, _row(i, 1.0))
    cache.remove_key(0)  # dropped by default
    written = time.monotonic()
    consumer.wait_rows(400)
    consumer.join()
    events = consumer.rows[300:]
    assert Counter(k for k, _ in events) == Counter(range(250, 350)), "each update and insert exactly once"
    assert all(v == 1.0 for _, v in events)
    assert ds.stats.resyncs == [] and ds.stats.registrations == 1
    # It ended because nothing came for stream_timeout seconds, not before.
    assert consumer.ended_at - written >= 6.0
    # The ended run closed its query: no reader thread of it is left.
    wait_for(lambda: not [t for t in threading.enumerate() if t.name == f"ignite-follow-{cache_name}"], 10,
             "the follower's reader thread to end")


def test_start_now_and_max_rows(ignite_node: LocalCluster, client: IgniteClient, cache_name: str) -> None:
    cache = client.get_or_create_cache(cache_name)
    cache.put_all({i: _row(i, 0.0) for i in range(50)})
    host, port = ignite_node.address()
    ds = IgniteDataset.follow(cache_name, host, port, start="now", batch_size=8, max_wait=0.05, max_rows=25)
    consumer = _Consumer(ds)
    wait_for(lambda: ds.stats.registrations == 1, 30, "the follower's query")
    cache.put_all({i: _row(i, 2.0) for i in range(1000, 1040)})
    consumer.join()  # max_rows ends it: no stream_timeout given
    assert len(consumer.rows) == 25
    assert all(k >= 1000 and v == 2.0 for k, v in consumer.rows), "start='now' skips the existing rows"


def test_deletes_flagged(ignite_node: LocalCluster, client: IgniteClient, cache_name: str) -> None:
    cache = client.get_or_create_cache(cache_name)
    cache.put_all({i: _row(i, float(i)) for i in range(10)})
    host, port = ignite_node.address()
    ds = IgniteDataset.follow(cache_name, host, port, deletes="flag", batch_size=16, max_wait=0.05, max_rows=13)
    it = iter(ds)
    first = next(it)
    assert not first["deleted"].numpy().any()
    cache.remove_key(3)
    cache.put(3, _row(3, 33.0))
    cache.remove_key(4)
    rest: list[tuple[int, float, bool]] = []
    for batch in it:
        rest.extend(zip(batch["key"].numpy().tolist(), batch["val"]["v"].numpy().tolist(),
                        batch["deleted"].numpy().tolist()))
    seen = [(k, v, d) for k, v, d in rest]
    assert seen == [(3, 3.0, True), (3, 33.0, False), (4, 4.0, True)]  # in order, with the removed value


@pytest.mark.parametrize("how", ["parts", "per_worker"])
def test_parts_follow_only_their_partitions(ignite_node: LocalCluster, client: IgniteClient, cache_name: str,
                                            how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = client.get_or_create_cache(cache_name)
    cache.put_all({i: _row(i, 0.0) for i in range(400)})
    partitions = client.partition_map(cache_name).partitions
    mine = list(range(0, partitions, 2))
    host, port = ignite_node.address()
    if how == "per_worker":  # what `ignite-tf start` sets for each worker
        monkeypatch.setenv("IGNITE_DATASET_PARTS", ",".join(map(str, mine)))
        share: dict[str, Any] = {"per_worker": True}
    else:
        share = {"parts": mine}
    ours = {i for i in range(600) if affinity_partition(java_key_hash(i), partitions) in set(mine)}
    assert 0 < len(ours) < 600
    want_events = [k for k in range(0, 600, 3) if k in ours]
    # The stream ends after exactly the rows expected (a node busy for a few seconds under load must not
    # end it early, as an idle timeout would); the long timeout only keeps a broken filter from hanging.
    expected = len([k for k in ours if k < 400]) + len(want_events)
    ds = IgniteDataset.follow(cache_name, host, port, batch_size=64, max_wait=0.05, stream_timeout=60.0,
                              max_rows=expected, **share)
    assert ds.partitions == mine
    consumer = _Consumer(ds)
    wait_for(lambda: ds.stats.scanned_rows > 0 and ds.stats.registrations == 1, 30, "the follower's scan")
    for i in range(0, 600, 3):  # updates and inserts in every partition
        cache.put(i, _row(i, 1.0))
    consumer.join()
    assert len(consumer.rows) == expected
    scanned, events = consumer.rows[:ds.stats.scanned_rows], consumer.rows[ds.stats.scanned_rows:]
    assert sorted(k for k, _ in scanned) == sorted(k for k in ours if k < 400)
    assert Counter(k for k, _ in events) == Counter(want_events)


def test_bad_options_are_named(ignite_node: LocalCluster, client: IgniteClient, cache_name: str) -> None:
    client.get_or_create_cache(cache_name).put(1, _row(1, 1.0))
    host, port = ignite_node.address()
    with pytest.raises(ConfigurationError, match="start is one of"):
        IgniteDataset.follow(cache_name, host, port, start="yesterday")
    with pytest.raises(ConfigurationError, match="stream_timeout must be positive"):
        IgniteDataset.follow(cache_name, host, port, stream_timeout=0)


# A process following a cache and checkpointing after every batch, until it is killed.
FOLLOWER = textwrap.dedent("""
    import json, sys
    import tensorflow as tf
    from tensorflow_ignite import IgniteDataset

    cache, host, port, ckpt, log = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
    ds = IgniteDataset.follow(cache, host, port, batch_size=20, max_wait=0.05)
    it = iter(ds)
    checkpoint = tf.train.Checkpoint(iterator=it)
    with open(log, "a") as out:
        for batch in it:
            rows = list(zip(batch["key"].numpy().tolist(), batch["val"]["v"].numpy().tolist()))
            path = checkpoint.write(ckpt)
            out.write(json.dumps({"rows": rows, "checkpoint": path}) + "\\n")
            out.flush()
""")


def test_crash_and_checkpoint_restore_deliver_the_latest_values(ignite_node: LocalCluster, client: IgniteClient,
                                                                cache_name: str, tmp_path: Path) -> None:
    cache = client.get_or_create_cache(cache_name)
    cache.put_all({i: _row(i, 0.0) for i in range(200)})
    host, port = ignite_node.address()
    log_path = tmp_path / "follower.jsonl"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", FOLLOWER, cache_name, host, str(port), str(tmp_path / "ckpt"),
                             str(log_path)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        def logged() -> list[dict[str, Any]]:
            if proc.poll() is not None:
                raise AssertionError(f"the follower exited: {proc.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
            return [json.loads(line) for line in log_path.read_text().splitlines()] if log_path.exists() else []

        wait_for(lambda: sum(len(e["rows"]) for e in logged()) >= 200, 120, "the follower to deliver the scan")
        for i in range(100):  # updates the first process follows
            cache.put(i, _row(i, 1.0))
        wait_for(lambda: sum(len(e["rows"]) for e in logged()) >= 300, 60, "the follower to deliver updates")
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    entries = logged_entries = [json.loads(line) for line in log_path.read_text().splitlines()]
    assert logged_entries
    # While nobody follows: updates, inserts and updates overwritten twice.
    for i in range(50, 150):
        cache.put(i, _row(i, 2.0))
    for i in range(100, 120):
        cache.put(i, _row(i, 3.0))
    cache.put_all({i: _row(i, 4.0) for i in range(200, 240)})

    ds = IgniteDataset.follow(cache_name, host, port, batch_size=20, max_wait=0.05, stream_timeout=1.5)
    it = iter(ds)
    tf.train.Checkpoint(iterator=it).read(entries[-1]["checkpoint"]).assert_consumed()
    consumer_rows: list[tuple[int, float]] = []
    done = threading.Event()

    def more_writes() -> None:
        wait_for(lambda: ds.stats.registrations >= 1, 60, "the restored follower's query")
        for i in range(230, 260):
            cache.put(i, _row(i, 5.0))
        done.set()

    writer = threading.Thread(target=more_writes, daemon=True)
    writer.start()
    for batch in it:
        consumer_rows.extend(_rows(batch))
    writer.join(60)
    assert done.is_set()
    _assert_latest_delivered(consumer_rows, _cache_state(client, cache_name), "after a crash and restore")
    assert _cache_state(client, cache_name)[110] == 3.0 and _latest(consumer_rows)[110] == 3.0


@pytest.fixture
def two_nodes(tmp_path: Path) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path / "nodes", nodes=2, name="tfi-follow", heap_mb=384, region_mb=256)
    try:
        cluster.start()
        yield cluster
    finally:
        close_shared_clients()
        cluster.stop()


def _put_retrying(client: IgniteClient, cache: str, key: int, value: Any) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            client.cache(cache).put(key, value)
            return
        except IgniteConnectionError:
            if time.monotonic() > deadline:
                raise


@contextlib.contextmanager
def _keep_alive(cluster: LocalCluster, cache: str, key: int) -> Iterator[None]:
    """Update ``key`` every half second while the block runs, so the follower's stream never falls silent."""
    stop = threading.Event()

    def beat() -> None:
        with IgniteClient(cluster.addresses(), timeout=20) as client:
            n = 0
            while not stop.wait(0.5):
                n += 1
                _put_retrying(client, cache, key, _row(key, 1000.0 + n))

    thread = threading.Thread(target=beat, name="follow-keep-alive", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(90)


@pytest.mark.slow
def test_a_node_joining_then_the_query_node_killed(two_nodes: LocalCluster, cache_name: str) -> None:
    """(c) a node joins while updates are written: each arrives once; (b) kill -9 of the query's node: resync."""
    cluster = two_nodes
    touched = range(0, 500, 7)
    with IgniteClient(cluster.addresses(), timeout=20) as client:
        client.create_cache(CacheConfiguration(cache_name, cache_mode=CacheMode.PARTITIONED, backups=1,
                                               write_synchronization_mode=WriteSynchronizationMode.FULL_SYNC))
        client.cache(cache_name).put_all({i: _row(i, 0.0) for i in range(500)})
        wait_rebalanced(cluster, cache_name, 500)
        # Writes pause while the topology changes (seconds on a loaded machine): the stream_timeout
        # that ends the test must outlast that pause.
        ds = IgniteDataset.follow(cache_name, client=client, batch_size=50, max_wait=0.05, stream_timeout=15.0)
        consumer = _Consumer(ds)
        consumer.wait_rows(500)

        joined = threading.Thread(target=cluster.add_node, daemon=True)
        joined.start()  # partitions move while the updates of step 1 are written
        with IgniteClient(cluster.addresses(), timeout=20) as writer, \
                _keep_alive(cluster, cache_name, key=1):  # waiting for the rebalance can outlast stream_timeout
            while joined.is_alive():
                for i in touched:
                    _put_retrying(writer, cache_name, i, _row(i, 1.0))
            joined.join()
            wait_rebalanced(cluster, cache_name, 500)
            for i in touched:
                _put_retrying(writer, cache_name, i, _row(i, 2.0))
            try:
                consumer.wait_until(lambda: {k for k, v in consumer.rows[500:] if v == 2.0} == set(touched), 60,
                                    "the updates written after the join")
            except AssertionError as exc:
                missing = sorted(set(touched) - {k for k, v in consumer.rows[500:] if v == 2.0})
                raise AssertionError(f"{exc}: {len(missing)} missing (e.g. {missing[:5]}); "
                                     f"{len(consumer.rows)} rows delivered; {ds.stats}") from None
        assert ds.stats.resyncs == [], "a node joining does not cost the query"
        step2 = [k for k, v in consumer.rows[500:] if v == 2.0]
        assert Counter(step2) == Counter(touched), "every update written after the join, exactly once"

        holder = [i for i, (h, p) in enumerate(cluster.addresses()) if f"{h}:{p}" == ds.stats.query_address]
        assert holder, f"the query's node {ds.stats.query_address} is one of the cluster's"
        survivor = next(i for i in range(len(cluster.addresses())) if i != holder[0])
        with IgniteClient([cluster.address(survivor)], timeout=20) as writer:
            cluster.kill_node(holder[0], signal.SIGKILL)
            for value in (3.0, 4.0):
                for i in touched:
                    _put_retrying(writer, cache_name, i, _row(i, value))
            consumer.join()
            final = _cache_state(writer, cache_name)
    assert len(ds.stats.resyncs) >= 1 and ds.stats.registrations >= 2, ds.stats
    _assert_latest_delivered(consumer.rows, final, "after kill -9 of the node holding the query")
    assert final[7] == 4.0


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


#: Seconds of writing in the long form (``--long``, ``make soak-follow``).
SOAK_SECONDS = float(os.environ.get("SOAK_FOLLOW_SECONDS", "120"))


def test_slow_consumer_memory_stays_bounded(ignite_node: LocalCluster, client: IgniteClient,
                                            cache_name: str, long_form: bool) -> None:
    """A writer at thousands of rows/s, a consumer that takes 500 rows per 0.3 s: bounded queue, flat memory.

    The short form (CI) writes ~10,000 rows; ``make soak-follow`` writes for SOAK_FOLLOW_SECONDS (120)
    and checks this process's RSS stays flat.
    """
    cache = client.get_or_create_cache(cache_name)
    cache.put(0, _row(0, -1.0))  # the schema comes from the rows (or pass value_type=)
    host, port = ignite_node.address()
    ds = IgniteDataset.follow(cache_name, host, port, start="now", batch_size=500, max_wait=0.05,
                              stream_timeout=2.0, max_buffered=8)
    consumer = _Consumer(ds, delay=0.3, latest_only=True)
    wait_for(lambda: ds.stats.registrations == 1, 30, "the follower's query")
    keys = 2000
    written = 0
    rss: list[tuple[float, float]] = []
    began = time.monotonic()
    rnd = 0
    while (rnd < 5) if not long_form else (time.monotonic() - began < SOAK_SECONDS):
        for start in range(0, keys, 500):
            cache.put_all({i: _row(i, float(rnd)) for i in range(start, start + 500)})
            written += 500
        rss.append((time.monotonic() - began, _rss_mib()))
        rnd += 1
    elapsed = time.monotonic() - began
    consumer.join(180)
    assert ds.stats.peak_buffered <= 8
    assert ds.stats.resyncs, "the writer outran the consumer: the bounded queue overflowed and the follower resynced"
    _assert_latest_delivered(list(consumer.latest.items()), _cache_state(client, cache_name),
                             "behind a slow consumer")
    if long_form:
        half = len(rss) // 2
        first, second = max(m for _, m in rss[:half]), max(m for _, m in rss[half:])
        print(f"soak-follow: {written} rows in {elapsed:.0f}s ({written / elapsed:.0f}/s), "
              f"{consumer.count} delivered, {len(ds.stats.resyncs)} resyncs, RSS max first half "
              f"{first:.0f} MiB, second half {second:.0f} MiB")
        assert second <= first + 64, f"RSS grew from {first:.0f} to {second:.0f} MiB while following"
