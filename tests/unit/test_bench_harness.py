"""The benchmark harness's repetition rules (bench/harness.py), without Ignite."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from bench.harness import Contender, Run, Scenario, Target, process_cpu_seconds, run_scenario


def _contender(key: str, calls: list[str], max_reps: int | None = None) -> Contender:
    def run() -> Run:
        calls.append(key)
        return Run(0.01, 10, 100)

    return Contender(key, key, run, memory="none", max_reps=max_reps)


def test_rounds_rotate_and_a_capped_contender_sits_out_later_rounds() -> None:
    calls: list[str] = []
    sc = Scenario("t", "t", "", "rows/s", [_contender("a", calls), _contender("slow", calls, max_reps=2),
                                           _contender("b", calls)], reference="a", min_reps=4)
    res = run_scenario(sc, reps=3, log=lambda _: None)
    assert len(res.results["a"].runs) == 4 and len(res.results["b"].runs) == 4  # raised to min_reps
    assert len(res.results["slow"].runs) == 2
    rounds = [calls[0:3], calls[3:6]]
    assert rounds == [["a", "slow", "b"], ["slow", "b", "a"]]  # the starting contender rotates
    assert calls[6:] == ["b", "a", "a", "b"]
    assert res.ratio("b") == 1.0


def test_one_repetition_stays_one() -> None:
    calls: list[str] = []
    sc = Scenario("t", "t", "", "rows/s", [_contender("a", calls), _contender("b", calls)], min_reps=9)
    run_scenario(sc, reps=1, log=lambda _: None)
    assert calls == ["a", "b"]


def test_a_fixed_rate_target_is_the_rate_over_that_figure() -> None:
    calls: list[str] = []
    sc = Scenario("t", "t", "", "rows/s", [_contender("a", calls)], targets=[
        Target("a", "", 1.0, "a >= 2,000 rows/s", rate=2_000),  # a reads 10 rows in 0.01 s: 1,000 rows/s
        Target("a", "", 1.0, "a >= 500 rows/s", rate=500),
    ])
    low, high = run_scenario(sc, reps=1, log=lambda _: None).checks()
    assert low.measured == 0.5 and not low.met
    assert high.measured == 2.0 and high.met


def test_node_cpu_is_measured_from_the_nodes_own_proc_stat() -> None:
    """A busy child process stands for a node: its CPU seconds over the read's seconds."""
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        def run() -> Run:
            t0 = time.perf_counter()
            time.sleep(0.3)
            return Run(time.perf_counter() - t0, 10, 100)

        sc = Scenario("t", "t", "", "rows/s", [Contender("a", "a", run, memory="none")])
        res = run_scenario(sc, reps=2, log=lambda _: None, node_pids=[busy.pid])
        share = res.node_cpu_share("a")
        # One spinning core at most; on a loaded 2-core machine (load 12 seen) it gets well under one,
        # so the floor only catches a unit error (clock ticks vs seconds: 100x).
        assert share is not None and 0.1 < share < 1.3, share
        assert process_cpu_seconds([busy.pid]) > 0
        idle = run_scenario(sc, reps=1, log=lambda _: None, node_pids=[os.getpid() + 10_000_000])  # no such pid
        assert idle.node_cpu_share("a") == 0.0
        assert run_scenario(sc, reps=1, log=lambda _: None).node_cpu_share("a") is None  # not measured
    finally:
        busy.kill()
        busy.wait()


def test_after_runs_once_after_each_timed_run_outside_the_nodes_cpu() -> None:
    """A contender's untimed ``after`` (deleting what it wrote) follows each of its runs and the
    node CPU it causes is not charged to the run: here the "node" is this process, busy in ``after``."""
    calls: list[str] = []

    def run() -> Run:
        calls.append("run")
        return Run(0.01, 10, 100)

    def after() -> None:
        calls.append("after")
        t0 = time.process_time()
        while time.process_time() - t0 < 0.3:
            pass

    sc = Scenario("t", "t", "", "rows/s", [Contender("a", "a", run, memory="none", after=after)])
    res = run_scenario(sc, reps=2, log=lambda _: None, node_pids=[os.getpid()])
    assert calls == ["run", "after", "run", "after"]
    assert all(r.extra["node_cpu"] < 0.2 for r in res.results["a"].runs), [r.extra for r in res.results["a"].runs]
