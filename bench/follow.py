"""Following a cache (issue 29, item 6): latency from a row written to the row in a TF batch, and throughput.

One scenario, ``follow``, two contenders that receive the same kind of stream:

* ``dataset`` -- ``IgniteDataset.follow(start="now")`` iterated in this
  process; a row's latency is the wall clock when its micro-batch is in hand
  (a tensor) minus the ``t_ns`` the writer put in the row;
* ``java`` -- the reference: Ignite's Java thin client ``ContinuousQuery`` with
  a local listener (``bench/java``'s ``FollowBench``, one JVM per repetition),
  latency measured in the listener the same way.

For each timed repetition a writer thread of this process puts
``follow_rows`` new rows (keys never used before; ``seq`` and ``t_ns``,
two longs) with ``put_all`` chunks of ``follow_chunk`` rows, paced at
``follow_rate`` rows/s, once the contender's query is registered.  The run's
seconds are first write to last row received; its rate (the table's rows/s)
is therefore at most the writer's pace -- the follower keeps up when it
matches it.  ``p50/p99/max`` latencies go to the scenario's section.  The
writer shares this process (and its GIL) with our follower, not with the
JVM: that favours the Java reference, and is said in the report.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from .harness import Contender, Run, Scenario, ScenarioResult

__all__ = ["follow_scenario", "follow_resume_scenario", "FOLLOW_CACHE", "RESUME_CACHE"]

FOLLOW_CACHE = "bench_follow"
_ROW_BYTES = 8 + 8


class _Keys:
    """Fresh keys for each repetition, so every event is an insert of a row never seen."""

    def __init__(self) -> None:
        self.next = 1

    def take(self, n: int) -> int:
        start, self.next = self.next, self.next + n
        return start


def _write_paced(client: Any, cache: str, start: int, rows: int, rate: float, chunk: int) -> None:
    from tensorflow_ignite.protocol.values import BinaryObject

    c = client.cache(cache)
    t0 = time.monotonic()
    for lo in range(0, rows, chunk):
        n = min(chunk, rows - lo)
        now = time.time_ns()
        c.put_all({start + lo + i: BinaryObject("FollowBench", {"seq": start + lo + i, "t_ns": now}) for i in range(n)})
        time.sleep(max(0.0, t0 + (lo + n) / rate - time.monotonic()))


def _percentiles(latencies_ns: np.ndarray) -> dict[str, float]:
    ms = np.sort(latencies_ns) / 1e6
    return {"p50_ms": float(np.percentile(ms, 50)), "p99_ms": float(np.percentile(ms, 99)),
            "max_ms": float(ms[-1])}


def _our_follower(host: str, port: int, writer: Callable[[int], None], keys: _Keys, rows: int,
                  batch_size: int, max_wait: float) -> Contender:
    from tensorflow_ignite import IgniteDataset
    from tensorflow_ignite.testing.waiting import wait_for

    def run() -> Run:
        ds = IgniteDataset.follow(FOLLOW_CACHE, host, port, start="now", batch_size=batch_size, max_wait=max_wait,
                                  max_rows=rows, stream_timeout=60.0)
        latencies: list[np.ndarray] = []
        received: list[int] = []
        failure: list[BaseException] = []

        def consume() -> None:
            try:
                for batch in ds:
                    t_ns = batch["val"]["t_ns"].numpy()
                    now = time.time_ns()
                    latencies.append(now - t_ns)
                    received.append(now)
            except BaseException as exc:  # re-raised below
                failure.append(exc)

        thread = threading.Thread(target=consume, daemon=True)
        thread.start()
        wait_for(lambda: ds.stats.registrations >= 1 or not thread.is_alive(), 60, "the follower's query")
        t0 = time.time_ns()
        writer(keys.take(rows))
        thread.join(120)
        if failure:
            raise failure[0]
        got = np.concatenate(latencies) if latencies else np.zeros(0, np.int64)
        if thread.is_alive() or len(got) != rows:
            raise RuntimeError(f"IgniteDataset.follow delivered {len(got)} of {rows} rows")
        return Run((received[-1] - t0) / 1e9, rows, rows * _ROW_BYTES, extra=_percentiles(got))

    return Contender("dataset", "IgniteDataset.follow in TF", run,
                     note=f"batch_size={batch_size}, max_wait={max_wait}s; latency when the batch is a tensor")


def _java_listener(host: str, port: int, writer: Callable[[int], None], keys: _Keys, rows: int,
                   page_size: int, max_wait: float) -> Contender:
    from .javaclient import _java_command, build_java_tools

    build_java_tools()

    def run() -> Run:
        cmd = _java_command("FollowBench", ["--host", host, "--port", str(port), "--cache", FOLLOW_CACHE,
                                            "--rows", str(rows), "--page-size", str(page_size),
                                            "--time-interval-ms", str(max(1, round(max_wait * 1000)))],
                            jvm_options=[], classpath=None)
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                text=True)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()  # the JVM's first line once its query is registered
            if '"ready"' not in line:
                raise RuntimeError(f"FollowBench did not register its query: {line!r} {proc.stderr.read()[-2000:]}")
            t0 = time.time_ns()
            writer(keys.take(rows))
            out, err = proc.communicate(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()  # our own child, by its handle
                proc.wait()
        if proc.returncode != 0:
            raise RuntimeError(f"FollowBench failed (exit {proc.returncode}): {err[-2000:]}")
        rec = json.loads([ln for ln in out.splitlines() if ln.startswith("{")][-1])
        return Run((int(rec["last_ns"]) - t0) / 1e9, int(rec["rows"]), int(rec["rows"]) * _ROW_BYTES,
                   extra={k: float(rec[k]) for k in ("p50_ms", "p99_ms", "max_ms")})

    return Contender("java", "Java thin client ContinuousQuery listener (reference)", run, memory="none",
                     note=f"page_size={page_size}, time interval {max_wait}s (as the follower's query); latency in "
                     "the listener")


def _latency_section(result: ScenarioResult) -> str:
    lines = ["Latency from `put_all` to the row in hand (wall clock; medians over repetitions of each "
             "repetition's percentile):", "", "| Contender | p50 ms | p99 ms | max ms | rows/s |", "|---|---|---|---|---|"]
    for res in result.results.values():
        if not res.ok:
            continue
        med = {k: float(np.median([r.extra[k] for r in res.runs])) for k in ("p50_ms", "p99_ms", "max_ms")}
        lines.append(f"| {res.contender.label} | {med['p50_ms']:.1f} | {med['p99_ms']:.1f} | {med['max_ms']:.1f} | "
                     f"{res.rate:,.0f} |")
    return "\n".join(lines)


def follow_scenario(host: str, port: int, *, rows: int, rate: float, chunk: int = 50, batch_size: int = 256,
                    max_wait: float = 0.01, log: Any = print) -> Scenario:
    """The ``follow`` scenario on a running node: ``rows`` rows per repetition written at ``rate`` rows/s."""
    from tensorflow_ignite.client import IgniteClient
    from tensorflow_ignite.protocol.values import BinaryObject

    client = IgniteClient(f"{host}:{port}")
    cache = client.get_or_create_cache(FOLLOW_CACHE)
    cache.clear()
    # One row gives the dataset its schema; start="now" never delivers it.
    cache.put(0, BinaryObject("FollowBench", {"seq": 0, "t_ns": time.time_ns()}))
    keys = _Keys()

    def writer(start: int) -> None:
        _write_paced(client, FOLLOW_CACHE, start, rows, rate, chunk)

    contenders = [_our_follower(host, port, writer, keys, rows, batch_size, max_wait),
                  _java_listener(host, port, writer, keys, rows, page_size=256, max_wait=max_wait)]
    contenders[-1].close = client.close
    log(f"  follow: {rows:,} rows per repetition at {rate:,.0f} rows/s, put_all chunks of {chunk}")
    return Scenario(
        "follow", "8. Following a cache: row written -> row received",
        f"{rows:,} new rows (two longs) per repetition, written with put_all chunks of {chunk} at "
        f"{rate:,.0f} rows/s by a thread of the bench process while the contender follows the cache; one node.",
        "rows/s", contenders, reference="java",
        notes=["rows/s is first write to last row received: at most the writer's pace, reached when the "
               "follower keeps up. The writer shares the bench process (and its GIL) with IgniteDataset.follow, "
               "not with the Java listener's JVM."],
        report=_latency_section,
    )


RESUME_CACHE = "bench_follow_resume"


def _snapshot_follower(host: str, port: int, rows: int, page: int, batch_size: int, *, resume: bool) -> Contender:
    """A follower checkpointed a quarter into the snapshot of ``rows`` rows, then restored (``resume``)
    -- or, the reference, started over as a fresh follower (what a restore delivered before issue 47)."""
    import tensorflow as tf

    from tensorflow_ignite import IgniteDataset

    def follow(**kw: Any) -> Any:
        return IgniteDataset.follow(RESUME_CACHE, host, port, batch_size=batch_size, max_wait=0.05, page_size=page,
                                    **kw)

    def run() -> Run:
        with tempfile.TemporaryDirectory(prefix="tfi-bench-follow-resume-") as tmp:
            return measure(f"{tmp}/ckpt")

    def measure(ckpt: str) -> Run:
        ds = follow()
        it = iter(ds)
        before: list[int] = []
        while len(before) < rows // 4:
            before += next(it)["key"].numpy().tolist()
        path = tf.train.Checkpoint(iterator=it).write(ckpt)
        del it, ds
        t0 = time.monotonic()
        restored = follow()
        it2 = iter(restored)
        if resume:
            tf.train.Checkpoint(iterator=it2).read(path).assert_consumed()
        first_s: float | None = None
        after: list[int] = []
        snapshot_left = rows - len(before) if resume else rows
        while len(after) < snapshot_left:
            after += next(it2)["key"].numpy().tolist()
            if first_s is None:
                first_s = time.monotonic() - t0
        seconds = time.monotonic() - t0
        del it2
        repeated = len(set(before) & set(after))
        if resume and (repeated or sorted(before + after) != list(range(rows))):
            raise RuntimeError(f"the restored follower re-delivered {repeated} of the {len(before)} rows delivered "
                               f"before its checkpoint (or lost some): {len(before) + len(after)} rows for {rows}")
        return Run(seconds, len(after), len(after) * _ROW_BYTES,
                   extra={"before": len(before), "redelivered": repeated, "first_row_s": first_s or seconds,
                          "mode": 1.0 if restored.stats.mode == "log" else 0.0})

    if resume:
        return Contender("resume", "checkpoint restored mid-snapshot (follow log)", run,
                         note=f"batch_size={batch_size}, page_size={page}; the rest of the snapshot, exactly once")
    return Contender("restart", "started over (a fresh follower)", run,
                     note="what a mid-snapshot restore delivered before issue 47: the whole snapshot again")


def _resume_section(result: ScenarioResult) -> str:
    lines = ["Restore a quarter into the snapshot (medians over repetitions):", "",
             "| Contender | rows before the checkpoint | rows after the restore | of them re-delivered | "
             "first row s | snapshot done s |", "|---|---|---|---|---|---|"]
    for res in result.results.values():
        if not res.ok:
            continue
        med = {k: float(np.median([r.extra[k] for r in res.runs])) for k in ("before", "redelivered", "first_row_s")}
        rows_after = int(np.median([r.units for r in res.runs]))
        lines.append(f"| {res.contender.label} | {med['before']:,.0f} | {rows_after:,} | {med['redelivered']:,.0f} | "
                     f"{med['first_row_s']:.2f} | {res.seconds:.2f} |")
    return "\n".join(lines)


def follow_resume_scenario(host: str, port: int, *, rows: int, log: Any = print) -> Scenario:
    """The ``follow_resume`` scenario on a running node that keeps ``RESUME_CACHE``'s follow log
    (``LocalCluster(follow_log=(RESUME_CACHE,))``): a snapshot of ``rows`` rows, checkpointed a quarter in."""
    from tensorflow_ignite.client import IgniteClient
    from tensorflow_ignite.protocol.values import BinaryObject

    page = max(50, rows // 40)  # the snapshot spans some 40 pages
    client = IgniteClient(f"{host}:{port}")
    cache = client.get_or_create_cache(RESUME_CACHE)
    cache.clear()
    now = time.time_ns()
    for lo in range(0, rows, 5000):
        cache.put_all({k: BinaryObject("FollowBench", {"seq": k, "t_ns": now}) for k in range(lo, min(rows, lo + 5000))})
    batch_size = max(16, page // 2)
    contenders = [_snapshot_follower(host, port, rows, page, batch_size, resume=True),
                  _snapshot_follower(host, port, rows, page, batch_size, resume=False)]
    contenders[-1].close = client.close
    log(f"  follow_resume: a snapshot of {rows:,} rows in pages of {page}, checkpointed after {rows // 4:,}")
    return Scenario(
        "follow_resume", "8b. Following a cache: a checkpoint restored in the middle of the first snapshot",
        f"{rows:,} rows (two longs) in a cache whose follow log the node keeps; a follower checkpoints once "
        f"{rows // 4:,} rows of its first snapshot are in hand, and a new follower restores it (the time from "
        "building it to the snapshot's last row) -- against one that starts over. One node.",
        "rows/s", contenders, reference="restart",
        notes=["The restored follower delivers only the rows not handed out before the checkpoint (the scan's "
               "own exactly-once state), then the follow log from the head taken before the first scan; a "
               "repetition fails if it re-delivers any row. Nothing is written meanwhile."],
        report=_resume_section,
    )
