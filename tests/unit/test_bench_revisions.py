"""bench/revisions.py's report: medians, ratios against the working tree, failed revisions (no Ignite)."""

from __future__ import annotations

from pathlib import Path

from bench.revisions import BULK, SMALL, Contender, report


def test_ratios_are_against_the_working_tree_and_failures_are_shown() -> None:
    tree = Contender("working tree", Path("src"), "this checkout",
                     seconds={"small": [0.10, 0.12, 0.11]}, cpu={"small": [0.05, 0.06, 0.05]})
    old = Contender("abc1234", Path("old/src"), "an older commit",
                    seconds={"small": [0.22, 0.20, 0.24]}, cpu={"small": [0.10, 0.10, 0.11]})
    broken = Contender("def5678", Path("broken/src"), "a commit that does not build", error="its native build failed")
    text = report([tree, old, broken], [SMALL], rounds=3, machine=["- Machine: test"])
    rows = {line.split(" | ")[0].lstrip("| "): line for line in text.splitlines() if line.startswith("| ")}
    assert "| 545,455 | 1.00x | 0.050 | 1.00x | 3 |" in rows["working tree"]  # 60,000 rows / 0.11 s
    assert "| 272,727 | 0.50x | 0.100 | 2.00x | 3 |" in rows["abc1234"]  # half the speed, twice the CPU
    assert "failed: its native build failed" in rows["def5678"]
    assert "## Bulk" not in text and "- Machine: test" in text


def test_bulk_is_reported_in_mb_per_s() -> None:
    tree = Contender("working tree", Path("src"), "", seconds={"bulk": [0.5]}, cpu={"bulk": [0.25]})
    text = report([tree], [BULK], rounds=1, machine=[])
    assert "| Revision | MB/s |" in text and "| working tree | 1,074 |" in text  # 536.9 MB / 0.5 s
