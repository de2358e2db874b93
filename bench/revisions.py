"""``python -m bench.revisions REV [REV ...]``: this checkout's read path against earlier revisions, in one run.

A restructuring must not make reading slower (issues 17 and 18), but figures
from runs on other days differ by more than the change being judged: the
machine is shared and its speed drifts (the same code read 60,000 small rows at
615k rows/s one day and 530-590k two days later).  So the revisions are
compared *in the same run*: one Ignite node and one data set, and for each
revision a child process that imports that revision's ``tensorflow_ignite``
(a ``git worktree`` of it, its native libraries built there) and iterates
``IgniteDataset`` in TensorFlow, the contenders alternating round by round.

What is timed is what the bench's "IgniteDataset in TF" contender times: every
batch of the cache, from ``iter()`` to the last batch, after one untimed
warm-up read.  Each read also reports the child process's CPU seconds (all its
threads): less noisy than wall time on a shared machine, and what a change of
code changes.  The report goes to ``BENCHMARKS-revisions.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: The read each child process runs: argv = host, port, cache, page size, batch size, reads.
CHILD = r"""
import json, sys, time
host, port, cache = sys.argv[1], int(sys.argv[2]), sys.argv[3]
page, batch, reads = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
import tensorflow as tf
import tensorflow_ignite
from tensorflow_ignite import IgniteDataset
ds = IgniteDataset(cache, host, port, page_size=page, batch_size=batch)

def once():
    t0, c0, rows = time.perf_counter(), time.process_time(), 0
    for batch in ds:
        rows += int(tf.nest.flatten(batch)[0].shape[0])
    return time.perf_counter() - t0, time.process_time() - c0, rows

once()  # warm-up: connections, the op's first iterator, page sizes
runs = [once() for _ in range(reads)]
print("RESULT " + json.dumps({"module": tensorflow_ignite.__file__, "runs": runs}), flush=True)
"""


@dataclass(frozen=True)
class Read:
    """One scenario: ``rows`` rows of ``row_bytes`` payload in ``cache``, read ``reads`` times per round."""

    key: str
    title: str
    cache: str
    rows: int
    row_bytes: int
    page: int
    batch: int
    reads: int


BULK = Read("bulk", "Bulk: 512 rows of one 1 MiB byte array", "bench_bulk", 512, 1 << 20, 20, 16, 3)
SMALL = Read("small", "Small rows: 60,000 MNIST-shaped binary objects", "bench_mnist", 60_000, 788, 1024, 256, 7)
READS = {r.key: r for r in (BULK, SMALL)}


@dataclass
class Contender:
    """A revision (or the working tree) and where its ``src`` is."""

    name: str
    src: Path
    subject: str
    seconds: dict[str, list[float]] = field(default_factory=dict)
    cpu: dict[str, list[float]] = field(default_factory=dict)
    error: str | None = None


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()


def _prepare(rev: str, into: Path, log: Any) -> Contender:
    """A worktree of ``rev`` with its native libraries built (in its own tree)."""
    commit = _git("rev-parse", "--short", rev)
    subject = _git("log", "-1", "--format=%s", commit)
    tree = into / commit
    _git("worktree", "add", "--detach", "-f", str(tree), commit)
    contender = Contender(f"{rev} ({commit})" if rev != commit else commit, tree / "src", subject)
    log(f"building the native libraries of {commit} ...")
    try:
        subprocess.run([sys.executable, "-m", "tensorflow_ignite.native.build"], cwd=tree, check=True,
                       capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, PYTHONPATH=str(tree / "src"), TF_CPP_MIN_LOG_LEVEL="2"))
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        tail = (getattr(exc, "stderr", "") or "")[-400:]
        contender.error = f"its native build failed ({type(exc).__name__}): {tail}"
    return contender


def _read(contender: Contender, read: Read, host: str, port: int) -> None:
    env = dict(os.environ, PYTHONPATH=str(contender.src), TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([sys.executable, "-c", CHILD, host, str(port), read.cache, str(read.page),
                           str(read.batch), str(read.reads)],
                          env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True, timeout=600)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        contender.error = f"exit status {proc.returncode}: {proc.stderr.strip()[-400:]}"
        return
    result = json.loads(lines[-1].removeprefix("RESULT "))
    if not str(result["module"]).startswith(str(contender.src)):
        contender.error = f"imported {result['module']}, not the revision's copy"
        return
    for seconds, cpu, rows in result["runs"]:
        if rows != read.rows:
            contender.error = f"read {rows} rows of {read.rows}"
            return
        contender.seconds.setdefault(read.key, []).append(seconds)
        contender.cpu.setdefault(read.key, []).append(cpu)


def report(contenders: list[Contender], reads: list[Read], rounds: int, machine: list[str]) -> str:
    """The markdown of ``BENCHMARKS-revisions.md``."""
    base = contenders[0]
    out = ["# The read path across revisions", "",
           "Generated by `python -m bench.revisions` (`make bench-revisions`); do not edit by hand. "
           "Each revision read the same cache of the same node in its own process, the contenders alternating "
           f"over {rounds} rounds (see the module docstring). Figures are medians over every timed read; CPU is "
           "the reading process's CPU seconds per read (all its threads).", ""]
    out += machine
    for read in reads:
        unit = "MB/s" if read.row_bytes >= 1 << 16 else "rows/s"
        out += ["", f"## {read.title}", "",
                f"Cache `{read.cache}`, pages of {read.page} rows, batches of {read.batch}; {read.reads} timed "
                "reads per round.", "",
                f"| Revision | {unit} | x working tree | CPU s per read | x working tree | reads | commit |",
                "|---|---|---|---|---|---|---|"]
        base_s = statistics.median(base.seconds[read.key]) if base.seconds.get(read.key) else None
        base_cpu = statistics.median(base.cpu[read.key]) if base.cpu.get(read.key) else None
        for c in contenders:
            times = c.seconds.get(read.key)
            if not times:
                out.append(f"| {c.name} | failed: {c.error or 'no reads'} | | | | | {c.subject} |")
                continue
            med = statistics.median(times)
            cpu = statistics.median(c.cpu[read.key])
            rate = read.rows * read.row_bytes / 1e6 / med if unit == "MB/s" else read.rows / med
            out.append(f"| {c.name} | {rate:,.0f} | {base_s / med:.2f}x | {cpu:.3f} | "
                       f"{cpu / base_cpu:.2f}x | {len(times)} | {c.subject[:90]} |"
                       if base_s and base_cpu else f"| {c.name} | {rate:,.0f} | | {cpu:.3f} | | {len(times)} | |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.revisions", description=__doc__.split("\n\n")[0])
    p.add_argument("revisions", nargs="+", help="git revisions to read with besides the working tree")
    p.add_argument("--rounds", type=int, default=5, help="rounds of every contender (default 5)")
    p.add_argument("--scenarios", default="bulk,small", help="comma-separated subset of bulk,small")
    p.add_argument("--output", default=str(ROOT / "BENCHMARKS-revisions.md"),
                   help="report file (default: BENCHMARKS-revisions.md)")
    p.add_argument("--no-write", action="store_true", help="print the report only")
    args = p.parse_args(argv)
    reads = [READS[k] for k in args.scenarios.split(",") if k]

    from tensorflow_ignite.local.cluster import LocalCluster

    from . import scenarios as S
    from .machine import collect, load_average

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    info = collect()
    with tempfile.TemporaryDirectory(prefix="tf-ignite-revisions-") as tmp:
        work = Path(tmp)
        contenders = [Contender("working tree", ROOT / "src", "this checkout, uncommitted changes included")]
        try:
            contenders += [_prepare(rev, work, log) for rev in args.revisions]
            cluster = LocalCluster(work / "node", nodes=1, region_mb=3072, heap_mb=2048, name="bench-revisions")
            cluster.start()
            try:
                host, port = cluster.address()
                if BULK in reads:
                    S._write(host, port, BULK.cache, {"data": S._random_bytes(BULK.rows, BULK.row_bytes, 1)},
                             log=log)
                if SMALL in reads:
                    S._write(host, port, SMALL.cache, S.mnist_arrays(SMALL.rows, 10), log=log)
                started = time.perf_counter()
                for r in range(args.rounds):
                    order = contenders[r % len(contenders):] + contenders[:r % len(contenders)]
                    for c in order:
                        for read in reads:
                            if c.error is None:
                                _read(c, read, host, port)
                    log(f"round {r + 1}/{args.rounds} done ({time.perf_counter() - started:.0f} s)")
            finally:
                cluster.stop()
        finally:
            for c in contenders[1:]:
                subprocess.run(["git", "worktree", "remove", "--force", str(c.src.parent)], cwd=ROOT,
                               capture_output=True)
            subprocess.run(["git", "worktree", "prune"], cwd=ROOT, capture_output=True)
    info.load_after = load_average()
    text = report(contenders, reads, args.rounds, info.lines())
    print(text)
    if not args.no_write:
        Path(args.output).write_text(text)
    return 0 if all(c.error is None for c in contenders) else 1


if __name__ == "__main__":
    raise SystemExit(main())
