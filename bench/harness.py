"""Alternating repetitions, medians, ratios and targets: the rules every scenario follows.

A :class:`Scenario` lists :class:`Contender` s that read the same data.  Each
contender gets one untimed warm-up, then the repetitions run in rounds: every
round runs every contender once, and the starting contender rotates from round
to round, so background load and cache effects are spread evenly.  A
contender's figure is the **median** over its repetitions; ratios divide
medians by the reference contender's median (Ignite's Java thin client).

Before every warm-up and timed run, glibc's allocator thresholds are put back
to one steady state (:func:`bench.allocator.steady_allocator`): TensorFlow's
``from_generator`` op changes them for the rest of the process the first time
it runs, and figures must not depend on which contenders ran earlier.

What is timed (the same for every contender): reading every row from the first
request to the last byte, values materialized (NumPy arrays or tensors for the
Python readers; every field touched for the Java client).  Connecting and
building the dataset object are not timed, as the Java reference connects
before its clock starts.  A contender that raises is reported as failed; the
others go on.
"""

from __future__ import annotations

import gc
import os
import statistics
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from dataclasses import dataclass, field
from typing import Any

from .allocator import steady_allocator
from .memory import PeakRSS

__all__ = ["Run", "Contender", "ContenderResult", "Target", "TargetCheck", "Scenario", "ScenarioResult",
           "process_cpu_seconds", "run_scenario"]


#: ``Run.extra`` key: seconds a tf.data iterator's deletion took after a read, not in ``Run.seconds``
#: (``bench.contenders.drain`` says why; ``bench.report.teardown_note`` reports them).
TEARDOWN = "teardown"


@dataclass
class Run:
    """One measured repetition: ``units`` (rows, or steps) and ``nbytes`` of payload in ``seconds``."""

    seconds: float
    units: int
    nbytes: int = 0
    peak_bytes: int | None = None
    page_faults: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.units / self.seconds if self.seconds > 0 else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.nbytes / 1e6 / self.seconds if self.seconds > 0 else 0.0


@dataclass
class Contender:
    """A way to read the scenario's data.

    ``run()`` performs one timed read and returns a :class:`Run` (``seconds``
    covers the read alone).  ``memory`` says how peak memory is known:
    ``"rss"`` -- measured here as the peak RSS growth of this process during
    ``run()``; ``"own"`` -- the run reports it (the JVM's peak RSS); ``"none"``.
    """

    key: str
    label: str
    run: Callable[[], Run]
    warmup: Callable[[], None] | None = None
    memory: str = "rss"
    note: str = ""
    #: ``(factory name in bench.contenders, args, kwargs)``: how to rebuild it in another process.
    spec: tuple[str, list[Any], dict[str, Any]] | None = None
    #: Releases what the contender holds (connections); called once the scenario is done.
    close: Callable[[], None] | None = None
    #: At most this many timed repetitions (None: as many as the scenario runs). For a
    #: contender so slow that it is stopped after a fixed time (pyignite): more rounds of
    #: it would only lengthen the run, while the others' medians gain from more rounds.
    max_reps: int | None = None
    #: Untimed work after each timed run (deleting what it wrote), called outside the
    #: measurement, so that the nodes' CPU it takes is not charged to the run.
    after: Callable[[], None] | None = None


@dataclass
class ContenderResult:
    contender: Contender
    runs: list[Run] = field(default_factory=list)
    error: str | None = None

    @property
    def ok(self) -> bool:
        """At least one measured run (a later failure is reported next to the figures)."""
        return bool(self.runs)

    @property
    def rate(self) -> float:
        return statistics.median(r.rate for r in self.runs) if self.runs else 0.0

    @property
    def mb_per_s(self) -> float:
        return statistics.median(r.mb_per_s for r in self.runs) if self.runs else 0.0

    @property
    def seconds(self) -> float:
        return statistics.median(r.seconds for r in self.runs) if self.runs else 0.0

    @property
    def peak_bytes(self) -> int | None:
        peaks = [r.peak_bytes for r in self.runs if r.peak_bytes is not None]
        return max(peaks) if peaks else None

    @property
    def page_faults(self) -> int | None:
        faults = [r.page_faults for r in self.runs if r.page_faults is not None]
        return int(statistics.median(faults)) if faults else None


@dataclass(frozen=True)
class Target:
    """``contender`` must reach ``ratio`` x the rate of ``versus`` (issue 6).

    With ``rate`` (rows, or steps, per second, e.g. 1,000,000) the target is
    that fixed rate instead of a contender: its measured value is the
    contender's rate divided by ``rate`` (and ``versus`` is not used).
    """

    contender: str
    versus: str
    ratio: float
    text: str
    rate: float | None = None


@dataclass
class TargetCheck:
    target: Target
    measured: float | None

    @property
    def met(self) -> bool:
        return self.measured is not None and self.measured >= self.target.ratio


@dataclass
class Scenario:
    key: str
    title: str
    description: str
    unit: str  # "MB/s", "rows/s" or "steps/s": the headline figure of the table
    contenders: list[Contender]
    reference: str | None = None
    targets: list[Target] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: At least this many repetitions (unless a run asks for one, as ``--quick`` does): the
    #: scenarios whose timed part is short swing most on a shared 2-core machine.
    min_reps: int = 0
    #: Extra markdown built from the results once the scenario has run (e.g. bytes sent per node),
    #: kept in :attr:`ScenarioResult.sections`.
    report: "Callable[[ScenarioResult], str] | None" = None


@dataclass
class ScenarioResult:
    scenario: Scenario
    results: dict[str, ContenderResult]
    seconds: float = 0.0
    profiles: dict[str, str] = field(default_factory=dict)
    sections: list[str] = field(default_factory=list)  # extra markdown (e.g. bytes per node)

    def ratio(self, key: str, versus: str | None = None) -> float | None:
        versus = versus or self.scenario.reference
        if versus is None:
            return None
        a, b = self.results.get(key), self.results.get(versus)
        if a is None or b is None or not a.ok or not b.ok or b.rate <= 0:
            return None
        return a.rate / b.rate

    def checks(self) -> list[TargetCheck]:
        return [TargetCheck(t, self._measured(t)) for t in self.scenario.targets]

    def _measured(self, target: Target) -> float | None:
        if target.rate is None:
            return self.ratio(target.contender, target.versus)
        res = self.results.get(target.contender)
        return res.rate / target.rate if res is not None and res.ok and target.rate > 0 else None

    def node_cpu_share(self, key: str) -> float | None:
        """The nodes' CPU time over the wall time of ``key``'s reads (medians; None when not measured).

        1.0 is one core busy for the whole read.  Measured from the nodes' own
        ``/proc/<pid>/stat`` around every timed repetition (:func:`run_scenario`
        with ``node_pids``), so it is the node's own figure, not inferred.
        """
        res = self.results.get(key)
        if res is None or not res.ok:
            return None
        shares = [r.extra["node_cpu"] / r.seconds for r in res.runs if "node_cpu" in r.extra and r.seconds > 0]
        return statistics.median(shares) if shares else None


def _describe(exc: BaseException) -> str:
    """One line for a table cell: the exception type and the first non-empty line of its message."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip() and ln.strip() != "in user code:"]
    text = lines[0] if lines else ""
    if len(text) > 240:
        text = text[:237] + "..."
    return f"{type(exc).__name__}: {text}".replace("|", "/")


def process_cpu_seconds(pids: Sequence[int]) -> float:
    """User + system CPU seconds the processes ``pids`` have used so far (Linux ``/proc``; 0 elsewhere)."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        total += (int(fields[11]) + int(fields[12])) / tick  # utime, stime (fields 14, 15 of stat)
    return total


def _measure(c: Contender, node_pids: Sequence[int] = ()) -> Run:
    gc.collect()
    steady_allocator()  # the same allocator state whatever ran before (bench/allocator.py)
    node_before = process_cpu_seconds(node_pids) if node_pids else 0.0
    if c.memory == "rss":
        with PeakRSS() as mem:
            run = c.run()
        run.peak_bytes = mem.delta
        run.page_faults = mem.faults
    else:
        run = c.run()
    if node_pids:
        # Covers the contender's whole call (its clock covers the read alone), so a share
        # computed against the timed seconds is a slight overestimate, never an underestimate.
        run.extra["node_cpu"] = process_cpu_seconds(node_pids) - node_before
    return run


def run_scenario(sc: Scenario, reps: int, log: Callable[[str], None] = print,
                 node_pids: Sequence[int] = ()) -> ScenarioResult:
    """Warm every contender up once, then ``reps`` rounds of all contenders, rotating the order.

    ``reps`` is raised to the scenario's ``min_reps`` unless it is 1; a contender
    with ``max_reps`` sits out the rounds after its ``max_reps``-th.  With
    ``node_pids`` (the Ignite nodes serving the scenario), each repetition also
    records the nodes' CPU seconds (``Run.extra["node_cpu"]``).
    """
    if reps > 1:
        reps = max(reps, sc.min_reps)
    t0 = time.perf_counter()
    results = {c.key: ContenderResult(c) for c in sc.contenders}
    for c in sc.contenders:
        if c.warmup is None:
            continue
        try:
            steady_allocator()
            c.warmup()
        except Exception as exc:  # noqa: BLE001 - report and go on with the others
            results[c.key].error = _describe(exc)
            log(f"  [{sc.key}] {c.label}: warm-up FAILED {results[c.key].error}")
            log(traceback.format_exc(limit=6))
    n = len(sc.contenders)
    for rep in range(reps):
        order = [sc.contenders[(rep + i) % n] for i in range(n)]
        for c in order:
            res = results[c.key]
            if res.error is not None:  # failed once: its later rounds are skipped
                continue
            if c.max_reps is not None and len(res.runs) >= c.max_reps:
                continue
            try:
                run = _measure(c, node_pids)
                if c.after is not None:
                    c.after()
            except Exception as exc:  # noqa: BLE001
                res.error = _describe(exc)
                log(f"  [{sc.key}] {c.label}: FAILED {res.error}")
                log(traceback.format_exc(limit=6))
                continue
            res.runs.append(run)
            mb = f", {run.mb_per_s:8.1f} MB/s" if run.nbytes else ""
            log(f"  [{sc.key}] rep {rep + 1}/{reps} {c.label:<44s} {run.seconds:7.3f} s "
                f"{run.rate:12,.0f} {'steps' if sc.unit == 'steps/s' else 'rows'}/s{mb}")
    for c in sc.contenders:
        if c.close is not None:
            try:
                c.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                pass
    result = ScenarioResult(sc, results, seconds=time.perf_counter() - t0)
    if sc.report is not None:
        try:
            section = sc.report(result)
        except Exception as exc:  # noqa: BLE001 - the figures stand without the extra section
            section = f"(this section could not be built: {_describe(exc)})"
            log(traceback.format_exc(limit=6))
        if section:
            result.sections.append(section)
    return result
