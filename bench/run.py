"""``python -m bench.run``: every benchmark scenario of issue 6, one command, BENCHMARKS.md written.

Starts its own Ignite nodes with :class:`~tensorflow_ignite.local.cluster.LocalCluster`
(always stopped again), in three phases:

1. one node (Ignite 2.18): bulk rows, small rows, their latency curves (issue 28,
   ``bench/latency.py``), training overhead, scale-out baseline, filesystem (with its S3
   anchor, a SeaweedFS S3 server started for it: issue 31, ``bench/s3anchor.py``), loading
   (issue 19, ``bench/loading.py``);
2. one SQL node (Ignite 2.17 + H2): the 20-column numeric table read with ``from_sql``;
3. three nodes: scale-out, and loading's bytes per node;
4. one Ignite 3.1 node (issue 30, ``bench/ignite3.py``, ``--scenarios ignite3``): its tables read
   with ``ignite3.from_table`` against pyignite-dbapi + ``from_generator`` and Ignite 3's Java
   client, bulk and small-row shapes at scaled-down sizes (~3 minutes a run, node start included).

Following a cache (issue 29, ``bench/follow.py``, ``--scenarios follow``: latency and rate of
``IgniteDataset.follow`` against the Java thin client's ContinuousQuery listener) runs in phase 1.
Scoring (issue 27, ``bench/scoring.py``, ``--scenarios predict``) runs in phases 1 and 3; an
estimate from its quick run and the sizes (not yet timed at full size): ~4-6 minutes a run.

Every scenario alternates its contenders over ``--reps`` rounds (median reported).
Where an issue-6 target is missed, the contender is profiled with py-spy in a
child process, and the nodes with async-profiler over the same operations
(``bench/nodeprofile.py``); the top of both profiles goes into the report.

``--runs N`` repeats the whole measurement (:func:`measure_run`: the three phases, nodes
started and stopped) N times in one command. Issue 19 counts a target as met only when it
holds in each of 3 full runs, so BENCHMARKS.md then opens with a "Targets over N runs" table
(each run's ratio, the minimum -- the worst run --, the spread, met in every run or not); the
tables, findings and profiles after it are the last run's, and only the last run profiles
(profiling is slow). ``--json`` writes every run.

    python -m bench.run                 # one full run (~10 min on 2 cores), writes BENCHMARKS.md
    python -m bench.run --runs 3        # issue 19's verdict: three full runs (~30 min); make bench-3
    python -m bench.run --quick --output /tmp/b.md   # smoke run: tiny sizes, one repetition

Run time. A full run took ~16 minutes once loading (issue 19) joined: ~6 min for the
scenarios of issue 6 (1-min load 0.3-2) and ~10 for loading (load 5-13), from BENCHMARKS.md of
2026-11-24 and its section 6. To bring it to ~10 minutes, repetitions were cut where they
bought the least precision, keeping every contender and every target; from the per-run times
in those two reports the cuts below save ~4.5 minutes a run (an estimate, not yet timed at
full size: ~11.5 min at those runs' load, less on a quiet machine):

* pyignite reads (bulk, small rows, SQL): one timed read each, stopped after 10 s instead of
  three of up to 25 s (``scenarios.PYIGNITE_REPS``, ``Sizes.pyignite_read_seconds``). These
  were ~2.5 min of a run (small rows 3 x 20 s, SQL 25 + 25 + 41 s) for ratios of 140-200x
  against a 10x target; pyignite's rate over a 10 s read is steady.
* ``ignite-tf load`` from .npz and .parquet: one timed load after the warm-up (no target
  names them; the bulk Parquet load alone took ~15 s each time): ~1 min.
* Loading on 3 nodes: one timed load per contender (no target on several nodes; the bytes
  per node come from one load anyway): ~1 min.
* The loading data files are written once per directory and reused (``loading.make_data``).

The filesystem scenarios' S3 anchor (issue 31) adds the server's start and stop (~6 s
in all on this machine) and its contenders' warm-ups and repetitions: not yet timed at full size.

The Ignite 3 phase (``ignite3``, in the default run) is sized to add under ~3 minutes: its node
starts in ~15-40 s here, and its tables are the bulk and small-row shapes at 1/8 and 1/3 of their
rows (``bench/ignite3.py``); an estimate from its quick run, not yet timed at full size.

Not cut: the repetitions of the contenders of the targets (IgniteDataset, the Java thin
client, Keras fit, the checkpoint contenders, ``write`` against Java, the DataStreamer and
pyignite loads), the sizes, and the 9 / 5 / 9 rounds of the short scenarios (small rows,
training, one-node scoring) whose ratios swing most on this machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = ("bulk", "small", "train", "scale", "sql", "fs", "load", "predict", "follow", "latency", "ignite3")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="tiny sizes and one repetition (smoke test)")
    p.add_argument("--reps", type=int, default=None, help="repetitions per contender (default 3; 1 with --quick)")
    p.add_argument("--runs", type=int, default=1,
                   help="full runs in one command (default 1); with more, BENCHMARKS.md gets the 'Targets over "
                        "N runs' table (each run's value, minimum, spread) and the last run's tables")
    p.add_argument("--scenarios", default=",".join(SCENARIOS),
                   help=f"comma-separated subset of {','.join(SCENARIOS)} (default: all)")
    p.add_argument("--bulk-rows", type=int, default=None, help="rows of 1 MiB in the bulk scenario (default 512)")
    p.add_argument("--small-rows", type=int, default=None, help="MNIST-shaped rows (default 60000)")
    p.add_argument("--sql-rows", type=int, default=None, help="rows of the SQL table (default 50000)")
    p.add_argument("--fs-mb", type=int, default=None,
                   help="MiB of model variables in the checkpoint scenarios (default 256; 8 with --quick)")
    p.add_argument("--output", default=str(ROOT / "BENCHMARKS.md"), help="report file (default: BENCHMARKS.md)")
    p.add_argument("--no-write", action="store_true", help="print the report only")
    p.add_argument("--json", default=None, help="also write the results (every run) as JSON to this file")
    p.add_argument("--no-profile", action="store_true", help="do not profile contenders that miss a target")
    p.add_argument("--max-profiles", type=int, default=None,
                   help="profile at most this many contenders (default: all that miss; 1 with --quick); "
                        "only the last of --runs N profiles")
    p.add_argument("--work-dir", default=None, help="node work directories (default: a fresh temp dir)")
    return p.parse_args(argv)


class _LoadSampler:
    """Records the 1/5/15-min load average every few seconds (the machine is shared)."""

    def __init__(self, interval: float = 10.0) -> None:
        from .machine import load_average

        self.samples: list[tuple[float, float, float]] = [load_average()]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(interval, load_average), daemon=True)
        self._thread.start()

    def _run(self, interval: float, read: Callable[[], tuple[float, float, float]]) -> None:
        while not self._stop.wait(interval):
            self.samples.append(read())

    def stop(self) -> list[tuple[float, float, float]]:
        self._stop.set()
        self._thread.join()
        return self.samples


@dataclass
class RunRecord:
    """One full measurement: nodes started, every wanted scenario run, nodes stopped."""

    index: int  # 1-based
    results: list[Any]  # ScenarioResult, in the order they ran
    profiles: dict[str, list[tuple[str, str]]]
    seconds: float
    #: The 1-minute load average seen while this run went on (min, max).
    load: tuple[float, float]

    @property
    def by_key(self) -> dict[str, Any]:
        return {r.scenario.key: r for r in self.results}


def _drop_caches(host: str, port: int, *names: str) -> None:
    """Destroy the caches ``names`` (those that exist) on the node at ``host:port``, and their schemas."""
    from tensorflow_ignite.client import IgniteClient
    from tensorflow_ignite.data.tensor_schema import delete_schema

    client = IgniteClient([f"{host}:{port}"])
    try:
        existing = set(client.cache_names())
        for name in names:
            if name in existing:
                client.destroy_cache(name)
                delete_schema(client, name)
    finally:
        client.close()


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    from . import scenarios as S
    from .machine import collect, load_average
    from .report import render_markdown, scale_section, targets_over_runs, targets_table

    wanted = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    unknown = sorted(set(wanted) - set(SCENARIOS))
    if unknown:
        print(f"unknown scenario(s) {unknown}; choose from {', '.join(SCENARIOS)}", file=sys.stderr)
        return 2
    if args.runs < 1:
        print("--runs must be at least 1", file=sys.stderr)
        return 2
    sizes = S.Sizes.quick() if args.quick else S.Sizes()
    sizes = sizes.with_reps(args.reps)
    for field, value in (("bulk_rows", args.bulk_rows), ("small_rows", args.small_rows), ("sql_rows", args.sql_rows)):
        if value is not None:
            sizes = replace(sizes, **{field: value})
    fs_mb = args.fs_mb if args.fs_mb is not None else (8 if args.quick else 256)
    if sizes.reps < 3 and not args.quick:
        print("note: issue 6 asks for the median of at least 3 repetitions", file=sys.stderr)

    started = time.perf_counter()
    machine = collect()
    loads = _LoadSampler()
    command = "python -m bench.run" + ("" if argv is None and len(sys.argv) <= 1 else " " + shlex.join(
        argv if argv is not None else sys.argv[1:]))

    def log(msg: str) -> None:
        print(msg, flush=True)

    log(f"bench: {', '.join(wanted)}; reps={sizes.reps}; {'quick sizes' if args.quick else 'full sizes'}"
        + (f"; {args.runs} full runs" if args.runs > 1 else ""))
    from .javaclient import build_java_tools
    from tensorflow_ignite.local.cluster import stop_nodes_with_process

    build_java_tools()
    stop_nodes_with_process(os.getpid())  # an interrupted run leaves no node behind

    work = Path(args.work_dir) if args.work_dir else Path(tempfile.mkdtemp(prefix="tf-ignite-bench-"))
    profiled_tool = None if args.no_profile else _profiler_name()
    runs: list[RunRecord] = []
    for index in range(1, args.runs + 1):
        last = index == args.runs
        if args.runs > 1:
            log(f"\n=== run {index} of {args.runs} ===")
        record = measure_run(
            index, wanted=wanted, sizes=sizes, fs_mb=fs_mb, quick=args.quick, loads=loads, log=log,
            # One directory per run for the nodes; the loading data files are shared (same seed).
            work=work if args.runs == 1 else work / f"run{index}", data_dir=work / "load-data",
            # Profiles are slow: only the last run (whose tables the report shows) profiles its misses.
            profiled_tool=profiled_tool if last else None,
            max_profiles=args.max_profiles if args.max_profiles is not None else (1 if args.quick else 1_000))
        runs.append(record)
        if args.runs > 1:
            log(f"\nrun {index} of {args.runs}: {record.seconds / 60:.1f} min")
            log(targets_table(record.results))

    machine.load_samples = loads.stop()
    machine.load_after = load_average()
    duration = time.perf_counter() - started
    final = runs[-1]
    by_key = final.by_key
    scale = scale_section(by_key.get("scale1"), by_key.get(f"scale{sizes.scale_nodes}"))
    findings = _findings(final.results)
    over_runs = targets_over_runs([r.results for r in runs], [(r.seconds, r.load) for r in runs]) \
        if args.runs > 1 else ""
    text = render_markdown(command=command, machine=machine, results=final.results, duration=duration,
                           sizes_text=_sizes_text(sizes) + f"; checkpoints of {fs_mb} MiB of variables",
                           profiles=final.profiles, findings=findings, scale=scale,
                           runs=args.runs, over_runs=over_runs)
    log("")
    log(over_runs or targets_table(final.results))
    if args.json:
        Path(args.json).write_text(json.dumps(_as_json(runs, sizes, duration), indent=1))
    if not args.no_write:
        Path(args.output).write_text(text)
        log(f"\nwrote {args.output} ({duration / 60:.1f} min)")
    else:
        log(text)
    return 0


def measure_run(index: int, *, wanted: list[str], sizes: Any, fs_mb: int, quick: bool, work: Path,
                data_dir: Path, loads: _LoadSampler, log: Callable[[str], None], profiled_tool: str | None,
                max_profiles: int) -> RunRecord:
    """One full run: the three phases below (nodes started, scenarios run, nodes always stopped).

    ``profiled_tool`` None: no profiles (runs before the last of ``--runs N``); else the contenders
    of missed targets are profiled, at most ``max_profiles`` of them.
    """
    from . import scenarios as S
    from .ceiling import CeilingServer
    from .harness import ScenarioResult, run_scenario
    from .report import scenario_table
    from tensorflow_ignite.data.dataset import close_shared_clients
    from tensorflow_ignite.local.cluster import LocalCluster

    started = time.perf_counter()
    first_sample = len(loads.samples)
    results: list[ScenarioResult] = []
    profiles: dict[str, list[tuple[str, str]]] = {}
    budget = [max_profiles]
    by_key: dict[str, ScenarioResult] = {}
    node_pids: list[int] = []  # the nodes serving the current scenario (for node profiles)

    def run(sc: Any) -> ScenarioResult:
        log(f"scenario {sc.key}: {sc.description}")
        res = run_scenario(sc, sizes.reps, log, node_pids=list(node_pids))
        results.append(res)
        by_key[sc.key] = res
        log(scenario_table(res))
        if profiled_tool is not None:
            # A checkpoint operation is a third of a second: profile five of them.
            _profile_misses(res, profiles, log, reps=5 if sc.key.startswith("fs_") else 1, budget=budget,
                            node_pids=list(node_pids))
        return res

    big = not quick
    with CeilingServer() as ceiling:
        # Phase 1: one Ignite 2.18 node.
        if {"bulk", "small", "train", "scale", "fs", "load", "predict", "follow", "latency"} & set(wanted):
            region = 3072 if big else 512
            from .follow import RESUME_CACHE  # the follow_resume scenario's cache: the node keeps its follow log

            cluster = LocalCluster(work / "one", nodes=1, region_mb=region, heap_mb=2048 if big else 512,
                                   name="bench-one", follow_log=(RESUME_CACHE,))
            log(f"starting 1 node (region {region} MiB) in {cluster.work_dir} ...")
            try:
                cluster.start()
                node_pids[:] = [m.pid for m in cluster.members]
                host, port = cluster.address()
                # Each scenario's data is destroyed once it has run: the phase shares one region, and
                # the bulk, small-row, latency and scale data together (2.7 of its 3 GiB) made the capacity
                # guard refuse the checkpoint scenario that follows them.
                if "bulk" in wanted:
                    run(S.bulk_scenario(host, port, sizes, ceiling.port, log=log))
                    _drop_caches(host, port, "bench_bulk")
                if "small" in wanted:
                    run(S.small_rows_scenario(host, port, sizes, ceiling.port, log=log))
                    _drop_caches(host, port, "bench_mnist")
                if "latency" in wanted:
                    from .latency import latency_scenarios

                    for latency_scenario in latency_scenarios(host, port, sizes, log=log):
                        run(latency_scenario)
                    _drop_caches(host, port, "bench_latency_bulk", "bench_latency_small")
                if "train" in wanted:
                    run(S.training_scenario(host, port, sizes, log=log))
                    _drop_caches(host, port, "bench_train")
                if "scale" in wanted:
                    run(S.scale_scenario([(host, port)], sizes, log=log))
                    _drop_caches(host, port, "bench_scale")
                if "fs" in wanted:
                    from .filesystem import filesystem_scenarios
                    from .s3anchor import S3Anchor, S3AnchorError

                    # The S3 anchor (issue 31): a SeaweedFS S3 server for the same scenarios, stopped after them.
                    anchor = S3Anchor(work / "s3")
                    try:
                        log("starting the S3 anchor (SeaweedFS S3 server) ...")
                        s3: Any
                        try:
                            s3 = anchor.start().endpoint
                        except S3AnchorError as exc:  # its contenders then fail with this reason in the tables
                            log(f"  the S3 anchor did not start: {exc}")
                            s3 = exc
                        for fs_scenario in filesystem_scenarios(host, port, mb=fs_mb, s3=s3, log=log):
                            run(fs_scenario)
                    finally:
                        anchor.stop()
                if "load" in wanted:
                    from .loading import NodeMap, load_scenarios

                    for load_scenario in load_scenarios(
                            host, port, sizes, data_dir, nodes=NodeMap.of(cluster),
                            discovery=cluster.discovery_addresses(), ignite_classpath=cluster.ignite_classpath(),
                            thick_work_dir=work / "thick-one", log=log):
                        run(load_scenario)
                if "predict" in wanted:
                    from .scoring import predict_scenarios

                    for predict_scenario in predict_scenarios([(host, port)], sizes, log=log):
                        run(predict_scenario)
                if "follow" in wanted:
                    from .follow import follow_resume_scenario, follow_scenario

                    run(follow_scenario(host, port, rows=sizes.follow_rows, rate=sizes.follow_rate, log=log))
                    run(follow_resume_scenario(host, port, rows=sizes.follow_rows, log=log))
            finally:
                node_pids.clear()
                close_shared_clients()
                cluster.stop()
        # Phase 2: one SQL node.
        if "sql" in wanted:
            cluster = LocalCluster(work / "sql", nodes=1, sql=True, region_mb=1024 if big else 256,
                                   heap_mb=1024 if big else 512, name="bench-sql")
            log(f"starting 1 SQL node in {cluster.work_dir} ...")
            try:
                cluster.start()
                node_pids[:] = [m.pid for m in cluster.members]
                host, port = cluster.address()
                run(S.sql_scenario(host, port, sizes, ceiling.port, log=log))
            finally:
                node_pids.clear()
                close_shared_clients()
                cluster.stop()
        # Phase 3: several nodes.
        if {"scale", "load", "predict"} & set(wanted):
            n = sizes.scale_nodes
            # 4 GiB heaps: the Java reference's whole-cache scan of 20 MiB pages gathers the
            # other nodes' pages on one node; with 1 and 2 GiB a node died of OutOfMemoryError.
            cluster = LocalCluster(work / "many", nodes=n, region_mb=1024 if big else 256,
                                   heap_mb=4096 if big else 384, name="bench-many")
            log(f"starting {n} nodes in {cluster.work_dir} ...")
            try:
                cluster.start()
                node_pids[:] = [m.pid for m in cluster.members]
                if "scale" in wanted:
                    run(S.scale_scenario(cluster.addresses(), sizes, log=log))
                if "load" in wanted:
                    from .loading import NodeMap, load_scenarios

                    host, port = cluster.address()
                    for load_scenario in load_scenarios(
                            host, port, sizes, data_dir, nodes=NodeMap.of(cluster),
                            discovery=cluster.discovery_addresses(), ignite_classpath=cluster.ignite_classpath(),
                            addresses=cluster.addresses(), thick_work_dir=work / "thick-many",
                            earlier=by_key.get, log=log):
                        run(load_scenario)
                if "predict" in wanted:
                    from .scoring import predict_scenarios

                    for predict_scenario in predict_scenarios(cluster.addresses(), sizes, log=log):
                        run(predict_scenario)
            finally:
                node_pids.clear()
                close_shared_clients()
                cluster.stop()

        # Phase 4: one Ignite 3 node.
        if "ignite3" in wanted:
            from .ignite3 import ignite3_node, ignite3_scenarios

            with ignite3_node(work / "ignite3", big=big, log=log) as cluster3:
                node_pids[:] = [m.pid for m in cluster3.members]
                try:
                    for ignite3_scenario in ignite3_scenarios(cluster3.endpoints, sizes, log=log):
                        run(ignite3_scenario)
                finally:
                    node_pids.clear()

    from .machine import load_average

    seen = [s[0] for s in loads.samples[first_sample:]] + [load_average()[0]]
    return RunRecord(index, results, profiles, time.perf_counter() - started, (min(seen), max(seen)))


def _profiler_name() -> str | None:
    from .profiling import tool_available

    return tool_available()


def _profile_misses(res: Any, profiles: dict[str, list[tuple[str, str]]], log: Callable[[str], None],
                    reps: int, budget: list[int], node_pids: list[int] | None = None) -> None:
    """Profile the contender of every missed target (and, for scans, our reader alone).

    The contender of a missed target is profiled on the nodes too (``node_pids``,
    :mod:`bench.nodeprofile`) while the same operations run.
    """
    from .profiling import profile_contender

    keys: list[str] = []
    missed: set[str] = set()
    for check in res.checks():
        if check.met or check.measured is None:
            continue
        missed.add(check.target.contender)
        for key in (check.target.contender, "reader"):
            if key in res.results and key not in keys and res.results[key].ok:
                keys.append(key)
    for key in keys:
        contender = res.results[key].contender
        if contender.spec is None or budget[0] <= 0:
            continue
        budget[0] -= 1
        log(f"  profiling {contender.label} ({res.scenario.key}) ...")
        text = profile_contender(contender.spec, reps=reps, log=log,
                                 node_pids=node_pids if key in missed else None)
        profiles.setdefault(res.scenario.key, []).append((contender.label, text))
        log(text)


def _findings(results: list[Any]) -> list[str]:
    """Plain statements derived from this run's numbers."""
    out = []
    for r in results:
        ours, reader, ceiling = (r.results.get(k) for k in ("dataset", "reader", "socket"))
        parts = []
        if ours is not None and ceiling is not None and ours.ok and ceiling.ok and ceiling.rate:
            parts.append(f"IgniteDataset in TF reaches {100 * ours.rate / ceiling.rate:.0f}% of the raw loopback "
                         "socket")
        if ours is not None and reader is not None and ours.ok and reader.ok and ours.rate:
            parts.append(f"our reader alone is {reader.rate / ours.rate:.2f}x the dataset in TF "
                         "(the rest is TensorFlow's share)")
        if parts:
            out.append(f"{r.scenario.title}: " + "; ".join(parts) + ".")
        ceiling_line = _node_ceiling(r)
        if ceiling_line:
            out.append(ceiling_line)
    return out


def _node_ceiling(r: Any) -> str:
    """What the node serves on one cursor (the ``raw`` contender) against each missed read target.

    A target that asks for more than the raw-page rate is above what any thin
    client can read from this node on one cursor: the node is the bound, by the
    node's own measured rate and CPU, not by assumption.
    """
    raw, ours = r.results.get("raw"), r.results.get("dataset")
    if raw is None or ours is None or not raw.ok or not ours.ok or raw.rate <= 0:
        return ""
    unit = "MB/s" if r.scenario.unit == "MB/s" else "rows/s"

    def fig(res: Any) -> str:
        return f"{res.mb_per_s:,.0f} MB/s" if unit == "MB/s" else f"{res.rate:,.0f} rows/s"

    text = (f"{r.scenario.title}, the node's ceiling: raw scan pages (received, not decoded) arrive at "
            f"{fig(raw)}")
    busy = r.node_cpu_share("raw")
    if busy is not None:
        text += f" with the node using {busy:.2f} cores of CPU meanwhile"
    text += f"; IgniteDataset in TF reaches {ours.rate / raw.rate:.0%} of that"
    reader = r.results.get("reader")
    if reader is not None and reader.ok:
        text += f", our reader alone {reader.rate / raw.rate:.0%}"
    for check in r.checks():
        if check.met or check.measured is None or check.target.contender != "dataset":
            continue
        if check.target.rate is not None:
            needed = check.target.rate * check.target.ratio
        else:
            ref = r.results.get(check.target.versus or r.scenario.reference or "")
            if ref is None or not ref.ok:
                continue
            needed = ref.rate * check.target.ratio
        where = ("above what the node serves: the node is the bound" if needed > raw.rate else
                 "within what the node serves: the gap is on the client side")
        text += (f". Missed: {check.target.text} needs {needed / raw.rate:.2f}x the raw-page rate, {where}")
    return text + "."


def _run_json(results: list[Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for r in results:
        out[r.scenario.key] = {
            "title": r.scenario.title,
            "unit": r.scenario.unit,
            "reference": r.scenario.reference,
            "contenders": {
                key: {"label": res.contender.label, "ok": res.ok, "error": res.error, "rate": res.rate,
                      "mb_per_s": res.mb_per_s, "seconds": [run.seconds for run in res.runs],
                      "ratio": r.ratio(key), "peak_bytes": res.peak_bytes, "page_faults": res.page_faults}
                for key, res in r.results.items()
            },
            "targets": [{"text": c.target.text, "measured": c.measured, "met": c.met} for c in r.checks()],
        }
    return out


def _as_json(runs: list[RunRecord], sizes: Any, duration: float) -> dict[str, Any]:
    """Every run (``runs``); ``scenarios`` repeats the last run's (the one the report's tables show)."""
    from .report import target_rows

    return {
        "duration_s": duration, "reps": sizes.reps,
        "scenarios": _run_json(runs[-1].results),
        "runs": [{"run": r.index, "duration_s": r.seconds, "load_1min": list(r.load),
                  "scenarios": _run_json(r.results)} for r in runs],
        "targets_over_runs": [
            {"scenario": key, "text": text, "need": need, "measured": values,
             "minimum": None if None in values else min(values),
             "met_every_run": all(v is not None and v >= need for v in values)}
            for key, text, need, values in target_rows([r.results for r in runs])
        ],
    }


def _sizes_text(s: Any) -> str:
    from .loading import FILE_LOADER_REPS, MANY_NODE_REPS
    from .scenarios import PYIGNITE_REPS, SHORT_SCENARIO_REPS, SMALL_ROWS_REPS

    return (f"bulk {s.bulk_rows} x {s.bulk_row_bytes // 1024} KiB (pages of {s.bulk_page_rows} rows, "
            f"batch {s.bulk_batch}); small rows {s.small_rows:,} (pages {s.small_page_rows}, batch {s.small_batch}); "
            f"SQL {s.sql_rows:,} rows (pages {s.sql_page_rows}); training {s.train_rows:,} rows x "
            f"{s.train_epochs} epochs (batch {s.train_batch}); scale-out {s.scale_rows} x "
            f"{s.bulk_row_bytes // 1024} KiB on 1 and {s.scale_nodes} nodes; {s.reps} repetition(s)"
            + (f" ({max(s.reps, SMALL_ROWS_REPS)} for small rows, {max(s.reps, SHORT_SCENARIO_REPS)} for training; "
               f"pyignite reads {PYIGNITE_REPS} each, stopped after {s.pyignite_read_seconds:g} s)"
               if s.reps > 1 else "")
            + f", {s.java_warmup} JVM warm-up scans per Java run"
            + "; loading: the small-rows and bulk rows, one warm-up load per contender"
            + (f", `ignite-tf load` {FILE_LOADER_REPS} timed load(s), every contender {MANY_NODE_REPS} on "
               f"{s.scale_nodes} nodes" if s.reps > 1 else "")
            + f"; scoring: {s.predict_rows:,} digit rows (digits model), {s.predict_heavy_rows:,} (heavy model)")


if __name__ == "__main__":
    sys.exit(main())
