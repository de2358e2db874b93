"""The benchmark harness (``python -m bench.run``) at minimal sizes, so that it cannot rot.

Runs the real command in a child process -- its own Ignite nodes (one, one SQL,
three), every scenario (``--long``; CI runs :data:`SHORT_SCENARIOS`), every contender,
one repetition, one profile -- and checks
that the report has a table row for every contender and that none failed.
Timings are never asserted: the machine is shared and the sizes are tiny.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: The scenarios run here (one command: the nodes and TensorFlow start once): all but ``load``, which needs minutes even at its quick sizes (a thick
#: client joins, each run creates and destroys a cache); test_bench_loading.py runs its contenders.
#: Nor ``ignite3`` (an Ignite 3 node of its own to start): test_bench_ignite3.py runs its scenarios.
SCENARIOS = ("bulk", "small", "train", "scale", "sql", "fs", "latency", "predict", "follow")
#: The short form (every run, CI): small rows (every contender of a read scenario: the dataset, the
#: reader, Java's thin client, pyignite, the socket floor, the raw pages, the report's targets) and
#: following. ``--long`` (``make test-long``) adds big values (the same contenders over 1 MiB rows),
#: training, SQL, the filesystem, the 3-node scale-out, the latency proxy and scoring, which cost CI
#: minutes (an SQL node, an S3 server, a second cluster, four round-trip settings, scoring workers on
#: every node) and whose paths have tests of their own (test_dataset*, test_fs_*, test_bench_s3anchor,
#: test_client_routing, test_network_faults, test_predict*); the report's sections are checked in
#: tests/unit/test_bench_*.
SHORT_SCENARIOS = ("small", "follow")

#: scenario key -> contender keys every run must report.
EXPECTED = {
    "bulk": {"dataset", "reader", "java", "pyignite", "socket", "raw"},
    "small": {"dataset", "dataset_pyignite", "reader", "java", "pyignite", "socket", "raw"},
    "sql": {"dataset", "reader", "java", "pyignite", "socket"},
    "train": {"dataset", "arrays"},
    "scale1": {"dataset", "reader", "java"},
    "scale3": {"dataset", "reader", "java"},
    "fs_write": {"ignite", "local", "s3"},
    "fs_read": {"ignite", "local", "s3"},
    "fs_file": {"ignite", "tfrecord", "ckpt", "local", "tfrecord_local", "s3"},
    "latency_bulk": {"rtt0", "rtt1", "rtt5", "rtt20", "direct"},
    "latency_small": {"rtt0", "rtt1", "rtt5", "rtt20", "direct"},
    "predict1_digits": {"predict", "dataset", "pyignite", "model"},
    "predict1_heavy": {"predict", "dataset", "pyignite", "model"},
    "predict3_digits": {"predict", "dataset", "pyignite", "cluster"},
    "predict3_heavy": {"predict", "dataset", "pyignite", "cluster"},
    "follow": {"dataset", "java"},
    "follow_resume": {"resume", "restart"},
}


def _scenario(key: str) -> str:
    """The scenario a report key belongs to (``scale3`` -> ``scale``, ``fs_read`` -> ``fs``)."""
    return next(s for s in SCENARIOS if key.startswith(s))


@pytest.mark.slow
def test_bench_quick_run_reports_every_contender(tmp_path: Path, long_form: bool) -> None:
    scenarios = SCENARIOS if long_form else SHORT_SCENARIOS
    expected = {k: v for k, v in EXPECTED.items() if _scenario(k) in scenarios}
    report = tmp_path / "BENCHMARKS.md"
    results = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench.run", "--quick", "--output", str(report), "--json", str(results),
         "--work-dir", str(tmp_path / "nodes"), "--scenarios", ",".join(scenarios)],
        cwd=ROOT, capture_output=True, text=True, timeout=1200, check=False,
    )
    assert proc.returncode == 0, (proc.stdout[-4000:], proc.stderr[-4000:])

    data = json.loads(results.read_text())
    assert set(data["scenarios"]) == set(expected)
    text = report.read_text()
    for key, wanted in expected.items():
        scenario = data["scenarios"][key]
        contenders = scenario["contenders"]
        assert set(contenders) == wanted, key
        for ckey, c in contenders.items():
            assert c["ok"] and c["error"] is None, (key, ckey, c["error"])
            assert c["rate"] > 0 and len(c["seconds"]) == 1, (key, ckey)
            # A table row per contender (the reference in bold).
            assert f"| {c['label']} |" in text or f"| **{c['label']}** |" in text, (key, c["label"])
        assert f"## {scenario['title']}" in text
        if scenario["reference"]:
            assert contenders[scenario["reference"]]["ratio"] == pytest.approx(1.0)

    for heading in ("## Targets (issue 6)",
                    "- Machine:", "- Software:", "- Date:", "- Load average", "- Command: `python -m bench.run"):
        assert heading in text, heading
    if "fs" in scenarios:
        assert "## 5. Filesystem" in text
    if "scale" in scenarios:
        assert "### 1 node vs several" in text and "Bytes received per node" in text
    for key in [k for k in ("latency_bulk", "latency_small") if k in expected]:
        # The proxy's round trip is felt: a timed read over the 20 ms link takes one round trip at least.
        # (Not rtt20 slower than rtt0: at quick sizes the fixed costs dominate, and that comparison flaked.)
        contenders = data["scenarios"][key]["contenders"]
        assert min(contenders["rtt20"]["seconds"]) >= 0.020, (key, contenders["rtt20"])
    if "predict" in scenarios:
        # Scoring (bench/scoring.py): both models on 1 and 3 nodes, the targets and the per-node bytes.
        assert "## 7. Scoring in place: digits model, 1 node" in text
        assert "| predict (heavy) >= 5x pyignite rows -> model -> put_all |" in text
        assert "is as far as any path can get ahead of pyignite's here" in text  # the model alone, the floor
        assert "| worker's node | rows scored | bytes exchanged | of them with its own node |" in text
    # Following (bench/follow.py): every row written reached both followers; the latency table.
    assert "| Contender | p50 ms | p99 ms | max ms | rows/s |" in text
    assert "| IgniteDataset.follow in TF | " in text and "| Java thin client ContinuousQuery listener" in text
    # A checkpoint restored mid-snapshot: the rest of the snapshot, none of it re-delivered (issue 47).
    resumed = data["scenarios"]["follow_resume"]["contenders"]["resume"]
    assert "| checkpoint restored mid-snapshot (follow log) |" in text and "first row s" in text
    assert resumed["ok"], resumed
    missed = [t for sc in data["scenarios"].values() for t in sc["targets"] if not t["met"]]
    if missed:  # --quick profiles one contender of a missed target (or says no profiler is installed)
        assert "### Profile:" in text


@pytest.mark.slow
@pytest.mark.long_only("test_targets_over_runs_table_minimum_spread_and_verdict (the table from several runs' "
                       "results) and test_bench_quick_run_reports_every_contender (one run through the command)")
def test_bench_two_runs_report_targets_over_runs(tmp_path: Path) -> None:
    """``--runs 2``: the whole measurement twice in one command (one scenario, to stay short), the
    "Targets over 2 runs" table with both runs' values, the rest labelled as the last run's."""
    report = tmp_path / "BENCHMARKS.md"
    results = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench.run", "--quick", "--runs", "2", "--scenarios", "bulk", "--no-profile",
         "--output", str(report), "--json", str(results), "--work-dir", str(tmp_path / "nodes")],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )
    assert proc.returncode == 0, (proc.stdout[-4000:], proc.stderr[-4000:])
    # Each run started and stopped its own node.
    assert proc.stdout.count("starting 1 node") == 2, proc.stdout[-4000:]

    data = json.loads(results.read_text())
    assert [r["run"] for r in data["runs"]] == [1, 2]
    for run in data["runs"]:
        assert set(run["scenarios"]) == {"bulk"}
        assert all(len(c["seconds"]) == 1 for c in run["scenarios"]["bulk"]["contenders"].values())
    assert data["scenarios"] == data["runs"][-1]["scenarios"]  # the report's tables: the last run
    # bulk's targets: >= 1x Java, and issue 19's >= 2x Java and >= 0.5x the loopback socket
    assert [t["text"] for t in data["targets_over_runs"]] == [
        "IgniteDataset >= 1.0x the Java thin client (bulk)",
        "IgniteDataset >= 2.0x the Java thin client (bulk; issue 19)",
        "IgniteDataset in TF >= 0.5x the raw loopback socket (bulk; issue 19)",
    ]
    target = data["targets_over_runs"][0]
    assert len(target["measured"]) == 2 and all(v is not None for v in target["measured"])
    assert target["minimum"] == min(target["measured"])

    text = report.read_text()
    assert "## Targets over 2 runs" in text
    head = text[:text.index("## Targets over 2 runs")]
    assert "- Date:" in head and "- Load average" in head and "- Software:" in head
    table = text[text.index("## Targets over 2 runs"):text.index("## Targets (issue 6)")]
    assert "| run 1 | run 2 | minimum (worst run) |" in table
    row = next(line for line in table.splitlines() if line.startswith(f"| {target['text']} |"))
    values = [f"{v:.2f}x" for v in target["measured"]]
    assert row.split(" | ")[2:4] == values, row  # both runs' values, in order
    assert f"| {min(target['measured']):.2f}x |" in row
    assert "## Targets (issue 6) in the last run (2 of 2)" in text
    assert "## 1. Bulk: large byte-array rows (run 2 of 2)" in text


def test_targets_over_runs_table_minimum_spread_and_verdict() -> None:
    """The table's arithmetic, without nodes: a target missed in one run is not met."""
    from bench.harness import Contender, ContenderResult, Run, Scenario, ScenarioResult, Target
    from bench.report import targets_over_runs

    def result(ours: float, ref: float) -> ScenarioResult:
        target = Target("ours", "ref", 1.0, "ours >= 1.0x ref")
        contenders = {k: Contender(k, k, lambda: Run(1.0, 1)) for k in ("ours", "ref")}
        sc = Scenario("s", "S", "", "rows/s", list(contenders.values()), reference="ref", targets=[target])
        return ScenarioResult(sc, {"ours": ContenderResult(contenders["ours"], [Run(1.0, int(ours))]),
                                   "ref": ContenderResult(contenders["ref"], [Run(1.0, int(ref))])})

    text = targets_over_runs([[result(150, 100)], [result(90, 100)], [result(120, 100)]],
                             [(600.0, (1.0, 2.0))] * 3)
    row = next(line for line in text.splitlines() if line.startswith("| ours >= 1.0x ref |"))
    assert row == ("| ours >= 1.0x ref | >= 1x | 1.50x | 0.90x | 1.20x | 0.90x | 0.60 (1.67x) | "
                   "**no** (met in 2 of 3) |")
    text = targets_over_runs([[result(150, 100)], [result(110, 100)]])
    assert text.splitlines()[-1].endswith("| 1.10x | 0.40 (1.36x) | yes |")
