"""A follower's first snapshot resumes where it was, and nodes keep the follow log from the command line.

One node, started the way a user starts local nodes: ``ignite-tf node start --follow-log ...``
(in this process, so the node stops with it). With the follow log on, a follower checkpointed a
quarter into the snapshot of a 20,000-row cache and restored in another process delivers the rest
of the snapshot (the scan's own exactly-once state), each row once over both processes, then each
update written after the restore once (the log, from the head taken before the scan). Rows written
while the snapshot is scanned may come twice (by the scan and by the log), never not at all. A
follower of a cache the node does not log says once that it is at least once, and how to change it.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
import tensorflow as tf

from tensorflow_ignite import IgniteDataset
from tensorflow_ignite.cli.main import main as cli
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.data.dataset import close_shared_clients
from tensorflow_ignite.data.follow_log import ATTRIBUTE as FOLLOW_LOG_ATTRIBUTE
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.protocol.cache_config import CacheConfiguration
from tensorflow_ignite.protocol.codes import CacheMode
from tensorflow_ignite.protocol.values import BinaryObject

RESUME = "tf_follow_snapshot_resume"
RACE = "tf_follow_snapshot_race"
UNLOGGED = "tf_follow_snapshot_unlogged"
ROWS = 20_000
#: Pages of 500 rows: the snapshot spans 40 pages, the checkpoint lands in the middle of the scan.
PAGE = 500


@pytest.fixture(scope="module")
def cli_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """One node from ``ignite-tf node start --follow-log`` (the node stops with this process, too)."""
    work = tmp_path_factory.mktemp("follow-cli-node")
    code = cli(["node", "start", "--work-dir", str(work), "--client-port", "0", "--heap-mb", "512",
                "--region-mb", "256", "--follow-log", RESUME, "--follow-log", RACE,
                "--follow-log-retention", "30m"])
    try:
        assert code == 0, "ignite-tf node start --follow-log failed"
        cluster = LocalCluster.load_state(work)
        assert cluster is not None and cluster.members
        yield cluster
    finally:
        close_shared_clients()
        cli(["node", "stop", "--work-dir", str(work)])


def row(key: int, seq: int) -> BinaryObject:
    return BinaryObject("FollowSnapshotRow", {"id": key, "seq": seq})


def fill(client: IgniteClient, cache: str, rows: int) -> None:
    client.create_cache(CacheConfiguration(cache, cache_mode=CacheMode.PARTITIONED))
    for start in range(0, rows, 2000):
        client.cache(cache).put_all({k: row(k, 0) for k in range(start, min(rows, start + 2000))})


def pairs(batch: dict) -> list[tuple[int, int]]:
    return list(zip(batch["key"].numpy().tolist(), batch["val"]["seq"].numpy().tolist()))


# Follows the cache, checkpoints once at least a quarter of the snapshot was delivered, records what
# it delivered up to that checkpoint, and dies (SIGKILL) as a crashed trainer would.
FOLLOWER = textwrap.dedent("""
    import json, os, signal, sys
    import tensorflow as tf
    from tensorflow_ignite import IgniteDataset

    cache, host, port, page, ckpt, out, stop_at = sys.argv[1:8]
    ds = IgniteDataset.follow(cache, host, int(port), batch_size=250, max_wait=0.05, page_size=int(page))
    it = iter(ds)
    checkpoint = tf.train.Checkpoint(iterator=it)
    rows = []
    for batch in it:
        rows += list(zip(batch["key"].numpy().tolist(), batch["val"]["seq"].numpy().tolist()))
        if len(rows) >= int(stop_at):
            path = checkpoint.write(ckpt)
            with open(out, "w") as f:
                json.dump({"rows": rows, "checkpoint": path, "mode": ds.stats.mode}, f)
            os.kill(os.getpid(), signal.SIGKILL)
""")


def test_node_start_follow_log_keeps_the_log(cli_node: LocalCluster) -> None:
    """The node ``ignite-tf node start --follow-log A --follow-log B`` started carries both caches' log."""
    with IgniteClient(cli_node.addresses(), timeout=20) as client:
        servers = client.server_nodes()
    assert [n.attributes.get(FOLLOW_LOG_ATTRIBUTE) for n in servers] == [f"{RESUME},{RACE}"]


def test_checkpoint_mid_snapshot_restored_in_another_process_each_row_once(cli_node: LocalCluster,
                                                                            tmp_path: Path) -> None:
    host, port = cli_node.address()
    with IgniteClient(cli_node.addresses(), timeout=30) as client:
        fill(client, RESUME, ROWS)
        out = tmp_path / "first.json"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "TF_CPP_MIN_LOG_LEVEL": "2"}
        proc = subprocess.run([sys.executable, "-c", FOLLOWER, RESUME, host, str(port), str(PAGE),
                               str(tmp_path / "ckpt"), str(out), str(ROWS // 4)],
                              env=env, capture_output=True, text=True, timeout=400)
        assert out.exists(), f"the first follower did not checkpoint (exit {proc.returncode}): {proc.stderr[-3000:]}"
        first = json.loads(out.read_text())
        assert first["mode"] == "log", "the node keeps the cache's follow log: the follower uses it"
        before = [tuple(r) for r in first["rows"]]
        assert ROWS // 4 <= len(before) < ROWS // 2, "the checkpoint is inside the snapshot"

        # Another process (this one) restores it: the rest of the snapshot, nothing of it twice.
        ds = IgniteDataset.follow(RESUME, host, port, batch_size=250, max_wait=0.05, page_size=PAGE,
                                  stream_timeout=20.0)
        it = iter(ds)
        started = time.monotonic()
        tf.train.Checkpoint(iterator=it).read(first["checkpoint"]).assert_consumed()
        rest: list[tuple[int, int]] = []
        while len(before) + len(rest) < ROWS:
            rest += pairs(next(it))
        resumed_s = time.monotonic() - started
        snapshot = Counter(k for k, _ in before + rest)
        twice = {k: n for k, n in snapshot.items() if n > 1}
        assert not twice, f"{len(twice)} snapshot rows delivered twice across the restore, e.g. {sorted(twice)[:10]}"
        assert sorted(snapshot) == list(range(ROWS)) and all(s == 0 for _, s in before + rest)
        assert ds.stats.mode == "log" and ds.stats.resyncs == [], ds.stats
        assert ds.stats.scanned_rows == ROWS - len(before), ds.stats

        # Updates after the restore: each once (from the log, after the head taken before the first scan).
        updates = {k: row(k, 1) for k in range(0, ROWS, 40)}
        client.cache(RESUME).put_all(updates)
        after: list[tuple[int, int]] = []
        for batch in it:  # ends stream_timeout seconds after the last row
            after += pairs(batch)
    assert Counter(after) == Counter((k, 1) for k in updates), \
        f"each update once: got {len(after)} rows for {len(updates)} updates, {sorted(set(after))[:10]}..."
    print(f"restored mid-snapshot: {len(before)} rows before the checkpoint, the other {len(rest)} "
          f"in {resumed_s:.1f}s after the restore, 0 repeated")


def test_rows_written_during_the_scan_may_come_twice_never_not_at_all(cli_node: LocalCluster,
                                                                       tmp_path: Path) -> None:
    """Keys 0..199 are updated while the snapshot is scanned, checkpointed and resumed: each of their
    updates is delivered (by the scan, by the log, or both: at least once); the other keys, which
    nobody writes, exactly once."""
    rows, written = 6000, 200
    with IgniteClient(cli_node.addresses(), timeout=30) as client:
        fill(client, RACE, rows)
        last: dict[int, int] = dict.fromkeys(range(written), 0)
        stop = threading.Event()

        def write() -> None:
            seq = 0
            with IgniteClient(cli_node.addresses(), timeout=30) as own:
                while not stop.is_set():
                    seq += 1
                    own.cache(RACE).put_all({k: row(k, seq) for k in range(written)})
                    last.update(dict.fromkeys(range(written), seq))
                    time.sleep(0.02)

        ds = IgniteDataset.follow(RACE, client=client, batch_size=100, max_wait=0.05, page_size=200)
        it = iter(ds)
        got = pairs(next(it))  # the run has registered its query and taken the head: the scan is under way
        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        while len(got) < rows // 4:
            got += pairs(next(it))
        path = tf.train.Checkpoint(iterator=it).write(str(tmp_path / "ckpt"))
        del it

        restored = IgniteDataset.follow(RACE, client=client, batch_size=100, max_wait=0.05, page_size=200,
                                        stream_timeout=10.0)
        it2 = iter(restored)
        tf.train.Checkpoint(iterator=it2).read(path).assert_consumed()
        while len(got) < rows // 2:  # the writer goes on while the rest of the snapshot is scanned
            got += pairs(next(it2))
        stop.set()
        writer.join(30)
        for batch in it2:  # ends stream_timeout seconds after the last row
            got += pairs(batch)
    assert restored.stats.mode == "log" and restored.stats.resyncs == [], restored.stats
    counts = Counter(k for k, _ in got)
    untouched = {k: counts[k] for k in range(written, rows) if counts[k] != 1}
    assert not untouched, f"keys nobody wrote, not exactly once: {dict(list(untouched.items())[:10])}"
    seqs: dict[int, set[int]] = defaultdict(set)
    for k, s in got:
        seqs[k].add(s)
    missing = {k: sorted(set(range(1, last[k] + 1)) - seqs[k])[:5] for k in range(written)
               if set(range(1, last[k] + 1)) - seqs[k]}
    assert not missing, f"updates written during the scan never delivered: {dict(list(missing.items())[:10])}"
    repeated = sum(n - 1 for k, n in Counter(got).items() if n > 1)
    print(f"writes during the scan: {sum(last.values())} updates, all delivered; {repeated} delivered twice")


def test_a_follower_without_the_log_warns_once(cli_node: LocalCluster, caplog: pytest.LogCaptureFixture) -> None:
    """The node does not log this cache: the follower runs in resync mode and says so, once."""
    with IgniteClient(cli_node.addresses(), timeout=30) as client:
        client.get_or_create_cache(UNLOGGED).put_all({k: row(k, 0) for k in range(50)})
        with caplog.at_level(logging.WARNING, logger="tensorflow_ignite"):
            ds = IgniteDataset.follow(UNLOGGED, client=client, batch_size=100, max_wait=0.05, stream_timeout=2.0)
            delivered = sum(len(b["key"]) for b in ds)
        assert delivered == 50 and ds.stats.mode == "resync", ds.stats
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        said = [m for m in warnings if "at least once" in m]
        assert len(said) == 1, warnings
        assert f"--follow-log {UNLOGGED}" in said[0] and "ignite-tf node start" in said[0] \
            and "ignite-tf module config" in said[0], said[0]
        # A logged cache: no such warning.
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="tensorflow_ignite"):
            IgniteDataset.follow(RACE, client=client, start="now", max_rows=1)
        assert not [r for r in caplog.records if "at least once" in r.getMessage()]
