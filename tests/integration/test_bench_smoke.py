"""The benchmark harness (``python -m bench.run``) at minimal sizes, so that it cannot rot.

Runs the real command in a child process -- its own Ignite nodes (one, one SQL,
three), every scenario, every contender, one repetition, one profile -- and checks
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

#: The scenarios run here: all but ``load``, which needs minutes even at its quick sizes (a thick
#: client joins, each run creates and destroys a cache); test_bench_loading.py runs its contenders.
SCENARIOS = ("bulk", "small", "train", "scale", "sql", "fs")

#: scenario key -> contender keys every run must report.
EXPECTED = {
    "bulk": {"dataset", "reader", "java", "pyignite", "socket"},
    "small": {"dataset", "reader", "java", "pyignite", "socket"},
    "sql": {"dataset", "reader", "java", "pyignite", "socket"},
    "train": {"dataset", "arrays"},
    "scale1": {"dataset", "reader", "java"},
    "scale3": {"dataset", "reader", "java"},
    "fs_write": {"ignite", "local"},
    "fs_read": {"ignite", "local"},
}


@pytest.mark.slow
def test_bench_quick_run_reports_every_contender(tmp_path: Path) -> None:
    report = tmp_path / "BENCHMARKS.md"
    results = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench.run", "--quick", "--output", str(report), "--json", str(results),
         "--work-dir", str(tmp_path / "nodes"), "--scenarios", ",".join(SCENARIOS)],
        cwd=ROOT, capture_output=True, text=True, timeout=1200, check=False,
    )
    assert proc.returncode == 0, (proc.stdout[-4000:], proc.stderr[-4000:])

    data = json.loads(results.read_text())
    assert set(data["scenarios"]) == set(EXPECTED)
    text = report.read_text()
    for key, wanted in EXPECTED.items():
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

    for heading in ("## Targets (issue 6)", "### 1 node vs several", "## 5. Filesystem",
                    "- Machine:", "- Software:", "- Date:", "- Load average", "- Command: `python -m bench.run"):
        assert heading in text, heading
    assert "Bytes received per node" in text
    missed = [t for sc in data["scenarios"].values() for t in sc["targets"] if not t["met"]]
    if missed:  # --quick profiles one contender of a missed target (or says no profiler is installed)
        assert "### Profile:" in text
