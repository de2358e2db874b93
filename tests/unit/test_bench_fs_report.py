"""Section 5 of BENCHMARKS.md (bench/report.py): the S3 anchor's columns and targets, without Ignite."""

from __future__ import annotations

from bench.harness import Contender, Run, Scenario, Target, run_scenario
from bench.report import filesystem_section


def _contender(key: str, seconds: float) -> Contender:
    return Contender(key, f"{key} contender", lambda: Run(seconds, 1, 100_000_000), memory="none")


def _failing(key: str, why: str) -> Contender:
    def fail() -> Run:
        raise RuntimeError(why)

    return Contender(key, f"{key} contender", fail, warmup=fail, memory="none")


def _write_scenario(s3: Contender | None) -> Scenario:
    contenders = [_contender("ignite", 0.2), _contender("local", 0.1)] + ([s3] if s3 is not None else [])
    targets = [Target("ignite", "local", 0.5, "write >= 0.5x local disk")]
    if s3 is not None:
        targets.append(Target("ignite", "s3", 1.0, "write ahead of the S3 server (>= 1x)"))
    return Scenario("fs_write", "5a. Filesystem: checkpoint write", "d", "MB/s", contenders, reference="local",
                    targets=targets)


def _table_row(text: str, title: str) -> list[str]:
    row = next(line for line in text.splitlines() if line.startswith(f"| {title} |"))
    return [cell.strip() for cell in row.strip("|").split("|")]


def test_the_s3_anchor_gets_its_rate_ratio_and_target_in_the_summary_table() -> None:
    result = run_scenario(_write_scenario(_contender("s3", 0.5)), reps=1, log=lambda _: None)
    text = filesystem_section([result], {})
    assert "| S3 server MB/s |" in text and "| ignite:// / S3 server |" in text
    # ignite:// 500 MB/s, local disk 1000, S3 200: 0.50x local disk, 2.50x the S3 server, both targets met.
    assert _table_row(text, "checkpoint write") == [
        "checkpoint write", "500", "1,000", "200", "0.50x", "2.50x", ">= 0.5x: met; vs S3 >= 1x: met"]


def test_a_failed_s3_anchor_shows_as_failed_and_its_target_as_missed() -> None:
    result = run_scenario(_write_scenario(_failing("s3", "weed not found")), reps=1, log=lambda _: None)
    assert result.results["s3"].error == "RuntimeError: weed not found"
    text = filesystem_section([result], {})
    assert _table_row(text, "checkpoint write")[3:] == ["failed", "0.50x", "n/a",
                                                        ">= 0.5x: met; vs S3 >= 1x: **missed**"]


def test_without_the_anchor_the_table_keeps_its_columns() -> None:
    result = run_scenario(_write_scenario(None), reps=1, log=lambda _: None)
    text = filesystem_section([result], {})
    assert "S3" not in text.split("How a checkpoint travels")[0]
    assert _table_row(text, "checkpoint write") == ["checkpoint write", "500", "1,000", "0.50x", ">= 0.5x: met"]
