"""The soak: everything at once for a long time, on three nodes, while nodes die.

``python -m bench.soak --minutes 30`` (``make soak``) starts three local nodes
and loops until the time is up:

1. an ``IgniteDataset`` epoch over the cache (``backups=1``), checked row by
   row: every key written so far exactly once;
2. a ``tensorflow_ignite.write`` of new rows (``mode="append"``) and the
   removal of as many of the oldest, so the cache keeps its size and the
   resource curves measure the client, not a growing epoch;
3. a checkpoint of a few MiB of variables into ``ignite://`` through a
   ``CheckpointManager`` (three kept), then every kept checkpoint restored
   into fresh variables and compared with what was saved.

Every ``--kill-every`` seconds one node is SIGKILLed in the middle of an
epoch, and restarted once the epoch is done; the loop goes on when the cache
has its backups again.  After every round the client process's resident
memory, open file descriptors, threads and TCP connections to the nodes are
sampled.  The report (JSON, and a PNG of the four curves) says how many
epochs, rows, kills and checkpoints there were, and how much each resource
grew after the warm-up (the first fifth of the run): the soak passes when
every epoch was exactly once, every checkpoint restored, memory and
descriptors grew by no more than ``--max-growth`` (5 %), and connections and
threads did not grow at all beyond the warm-up's peak -- except the threads of
the ``ignite://`` store's worker pools, which Python creates on demand up to
the pools' size (counted apart, and checked against that size).

The test suite runs a three-minute form of this (``tests/integration/test_soak.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["SoakReport", "Sample", "run_soak", "main"]

CACHE = "SOAK_ROWS"
FIRST_ROWS = 20_000
APPEND_ROWS = 2_000
BATCH = 2_000


@dataclass
class Sample:
    """The client process's resources after one round."""

    t: float
    rss_mb: float
    fds: int
    #: Every thread of the process (TensorFlow's native ones included).
    threads: int
    connections: int
    #: Of ``threads``, those of the bounded ``ignite-fs`` worker pools (created on demand up to their size).
    pool_threads: int = 0
    #: Of ``threads``, scan read-ahead threads (one per node scan in progress, gone with it).
    read_ahead_threads: int = 0


@dataclass
class SoakReport:
    """What a soak did and how the client's resources moved."""

    minutes: float
    epochs: int = 0
    rows_read: int = 0
    rows_written: int = 0
    kills: int = 0
    #: Kills that landed while the reader still had rows of the epoch to read (not only the consumer).
    kills_mid_read: int = 0
    checkpoints: int = 0
    restores: int = 0
    failovers: int = 0
    samples: list[Sample] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def growth(self) -> dict[str, float]:
        """Relative growth of each resource: median of the last fifth over the peak of the warm-up fifth."""
        n = len(self.samples)
        if n < 5:
            return {}
        warm = self.samples[: max(1, n // 5)]
        last = self.samples[-max(1, n // 5):]
        out = {}
        for name in ("rss_mb", "fds", "threads", "connections", "other_threads"):
            base = max(_value(s, name) for s in warm)
            now = statistics.median(_value(s, name) for s in last)
            out[name] = (now - base) / base if base else 0.0
        return out

    def verdict(self, max_growth: float) -> list[str]:
        """Everything wrong with the run (empty: it passed)."""
        wrong = list(self.problems)
        for name, g in self.growth().items():
            if name == "threads":
                continue  # judged as other_threads: the bounded pools may still be filling up
            limit = max_growth if name in ("rss_mb", "fds") else 0.0
            if g > limit:
                wrong.append(f"{name} grew {g:+.1%} after the warm-up (limit {limit:.0%})")
        pools = max((s.pool_threads for s in self.samples), default=0)
        if pools > _POOL_LIMIT:
            wrong.append(f"{pools} ignite-fs pool threads, more than the pools' {_POOL_LIMIT}")
        if self.epochs == 0 or self.checkpoints == 0:
            wrong.append("the soak did not complete a round")
        return wrong

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["growth"] = self.growth()
        return d


def _value(sample: Sample, name: str) -> float:
    if name == "other_threads":
        return sample.threads - sample.pool_threads - sample.read_ahead_threads
    return float(getattr(sample, name))


def _pool_limit() -> int:
    from tensorflow_ignite.fs.store.common import IO_THREADS

    return 4 + IO_THREADS + 1  # the store's executor (4), its I/O pool and its garbage timer


_POOL_LIMIT = 0  # set when the soak runs (the store module is imported then)


def _proc_status(name: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(name + ":"):
            return int(line.split()[1])
    return 0


def _connections_to(ports: set[int]) -> int:
    """Established TCP connections of this process whose remote port is one of ``ports``."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            remote_port = int(cols[2].rsplit(":", 1)[1], 16)
            if cols[3] == "01" and cols[9] in inodes and remote_port in ports:
                count += 1
    return count


def _sample(started: float, ports: set[int]) -> Sample:
    names = [t.name for t in threading.enumerate()]
    pools = sum(1 for name in names if name.startswith("ignite-fs"))
    ahead = sum(1 for name in names if name.startswith("ignite-read-ahead"))
    return Sample(t=round(time.monotonic() - started, 1), rss_mb=round(_proc_status("VmRSS") / 1024, 1),
                  fds=len(os.listdir("/proc/self/fd")), threads=_proc_status("Threads"),
                  connections=_connections_to(ports), pool_threads=pools, read_ahead_threads=ahead)


def run_soak(work_dir: Path, *, minutes: float, kill_every: float, seed: int = 20261125,
             log: Callable[[str], None] = print) -> SoakReport:
    """Run the soak (see the module docstring) on nodes under ``work_dir``; the nodes stop at the end."""
    import tensorflow as tf

    import tensorflow_ignite as ti
    from tensorflow_ignite import fs
    from tensorflow_ignite.client import close_shared_clients
    from tensorflow_ignite.local.cluster import LocalCluster
    from tensorflow_ignite.testing.waiting import wait_rebalanced

    global _POOL_LIMIT
    _POOL_LIMIT = _pool_limit()
    rng = random.Random(seed)
    report = SoakReport(minutes=minutes)
    # The nodes follow this process when it ends however it ends (SIGTERM, a CI timeout): an
    # interrupted soak once left its three nodes running for an hour.
    cluster = LocalCluster(work_dir / "nodes", nodes=3, name="tfi-soak", heap_mb=512, region_mb=384,
                           owner_pid=os.getpid())
    saved_fs = fs.config.overrides()
    try:
        cluster.start()
        host, port = cluster.address(0)
        ports = {m.client_port for m in cluster.members}
        seeds = ",".join(f"{h}:{p}" for h, p in cluster.addresses())
        rows = FIRST_ROWS
        low = 0  # the cache holds keys low .. low + rows - 1
        ti.write(CACHE, {"id": np.arange(rows, dtype=np.int64), "x": np.arange(rows, dtype=np.float32)},
                 key="id", host=seeds, backups=1, write_sync="full_sync", progress=False)
        report.rows_written = rows
        fs.configure(host=host, port=port)
        ckpt_dir = "ignite:///soak/ckpt"
        weights = tf.Variable(tf.zeros([512, 512]))  # 1 MiB
        step = tf.Variable(0, dtype=tf.int64)
        manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=step, w=weights), ckpt_dir, max_to_keep=3)
        saved: dict[str, float] = {}

        started = time.monotonic()
        deadline = started + minutes * 60
        next_kill = started + kill_every
        round_no = 0
        while time.monotonic() < deadline:
            round_no += 1
            # 1. An epoch, with a node killed in the middle of it when one is due.
            ds = ti.IgniteDataset(CACHE, host, port, batch_size=BATCH, page_size=256)
            before = ds.stats
            victim: list[int] = []
            kill_at = rng.randrange(rows // 4, 3 * rows // 4)
            due = time.monotonic() >= next_kill and len(cluster.addresses()) == 3

            keys: Counter[int] = Counter()
            consumed = 0
            # The consumer kills (between two batches): a watcher thread polling the reader
            # missed epochs shorter than its polling interval on a quiet machine -- a whole
            # 30-minute run went by without a kill.  The reader keeps reading meanwhile.
            for batch in ds:
                got = batch["key"].numpy().tolist()
                keys.update(got)
                consumed += len(got)
                if due and not victim and consumed >= kill_at:
                    index = rng.choice([m.index for m in cluster.members if m.index != 0])
                    read = ds.stats.rows - before.rows
                    cluster.kill_node(index, signal.SIGKILL)
                    victim.append(index)
                    report.kills_mid_read += read < rows
            report.epochs += 1
            report.rows_read += sum(keys.values())
            report.failovers += len(ds.stats.failovers) - len(before.failovers)
            repeated = sum(1 for n in keys.values() if n > 1)
            expected = set(range(low, low + rows))
            if repeated or set(keys) != expected:
                report.problems.append(f"epoch {report.epochs}: {len(expected - set(keys))} rows missing, "
                                       f"{repeated} repeated, {len(set(keys) - expected)} unexpected")
            if victim:
                report.kills += 1
                cluster.restart_nodes(victim)
                wait_rebalanced(cluster, CACHE, rows, timeout=300)
                next_kill = time.monotonic() + kill_every

            # 2. New rows in, as many of the oldest out: the cache keeps its size, so
            #    resource curves measure the client, not a growing epoch.
            new = np.arange(low + rows, low + rows + APPEND_ROWS, dtype=np.int64)
            ti.write(CACHE, {"id": new, "x": new.astype(np.float32)}, key="id", host=seeds, mode="append",
                     progress=False)
            ds.client.cache(CACHE).remove_keys(list(range(low, low + APPEND_ROWS)))
            low += APPEND_ROWS
            report.rows_written += APPEND_ROWS

            # 3. A checkpoint, then every kept one restored and compared.
            step.assign(round_no)
            weights.assign(tf.fill([512, 512], float(round_no)))
            path = manager.save(checkpoint_number=round_no)
            saved[path] = float(round_no)
            report.checkpoints += 1
            for kept in manager.checkpoints:
                w2, s2 = tf.Variable(tf.zeros([512, 512])), tf.Variable(0, dtype=tf.int64)
                tf.train.Checkpoint(step=s2, w=w2).restore(kept).assert_existing_objects_matched()
                if int(s2.numpy()) != int(saved[kept]) or float(w2[0, 0].numpy()) != saved[kept]:
                    report.problems.append(f"checkpoint {kept} restored other values")
                report.restores += 1

            report.samples.append(_sample(started, ports))
            s = report.samples[-1]
            log(f"[{s.t:6.0f}s] round {round_no}: keys {low}..{low + rows - 1}, epoch {'exactly once' if not report.problems else 'WRONG'}"
                f"{', node ' + str(victim[0]) + ' killed and back' if victim else ''}; rss {s.rss_mb:.0f} MB, "
                f"{s.fds} fds, {s.threads} threads ({s.pool_threads} in ignite-fs pools), {s.connections} connections")
        return report
    finally:
        fs.config.close_stores()
        close_shared_clients()
        fs.config.reset()
        fs.configure(**saved_fs)
        cluster.stop()


def plot(report: SoakReport, path: Path) -> None:
    """The four resource curves over time, the warm-up shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = [s.t / 60 for s in report.samples]
    fig, axes = plt.subplots(2, 2, figsize=(10, 6), sharex=True)
    for ax, (name, label) in zip(axes.flat, [("rss_mb", "resident memory (MB)"), ("fds", "open file descriptors"),
                                             ("threads", "threads"), ("connections", "connections to nodes")]):
        ax.plot(t, [getattr(s, name) for s in report.samples], marker=".")
        if name == "threads":
            ax.plot(t, [s.pool_threads for s in report.samples], marker=".", label="of them ignite-fs pools")
            ax.legend(loc="lower right")
        if t:
            ax.axvspan(0, t[max(0, len(t) // 5 - 1)], color="0.9")
        ax.set_title(label)
        ax.set_ylim(bottom=0)
    for ax in axes[1]:
        ax.set_xlabel("minutes")
    fig.suptitle(f"soak: {report.epochs} epochs, {report.kills} node kills, {report.checkpoints} checkpoints "
                 "(warm-up shaded)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="how long to run (default 30)")
    parser.add_argument("--kill-every", type=float, default=180.0,
                        help="seconds between node kills (default 180)")
    parser.add_argument("--max-growth", type=float, default=0.05,
                        help="largest allowed growth of memory and descriptors after the warm-up (default 0.05)")
    parser.add_argument("--out", type=Path, default=Path("soak-report"),
                        help="directory for soak.json and soak.png (default ./soak-report)")
    parser.add_argument("--work-dir", type=Path, default=None, help="where the nodes live (default: a temp dir)")
    args = parser.parse_args(argv)
    import tempfile

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tfi-soak-") as tmp:
        report = run_soak(args.work_dir or Path(tmp), minutes=args.minutes, kill_every=args.kill_every)
    (args.out / "soak.json").write_text(json.dumps(report.to_json(), indent=1))
    plot(report, args.out / "soak.png")
    wrong = report.verdict(args.max_growth)
    print(f"soak: {report.epochs} epochs, {report.rows_read} rows read, {report.rows_written} written, "
          f"{report.kills} kills ({report.kills_mid_read} while the reader was mid-epoch), {report.checkpoints} checkpoints ({report.restores} restores), "
          f"growth after warm-up {', '.join(f'{k} {v:+.1%}' for k, v in report.growth().items())}")
    for w in wrong:
        print("FAILED:", w)
    print(f"report: {args.out / 'soak.json'}, {args.out / 'soak.png'}")
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
