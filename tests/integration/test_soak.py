"""The soak's short form: 60 seconds of epochs, writes and ignite:// checkpoints while a node dies.

``make soak`` runs the same driver (:mod:`bench.soak`) for 30 minutes and
writes its figures and resource curves; here a node is killed mid-epoch every
20 seconds, every epoch must hold every row exactly once, every kept checkpoint
must restore, and the client's connections and threads must not grow after the
warm-up (memory and descriptors are judged by the long form: 60 seconds are
mostly warm-up for TensorFlow's own caches).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.soak import run_soak


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_soak_short_form(tmp_path: Path) -> None:
    report = run_soak(tmp_path, minutes=1.0, kill_every=20.0)
    print(report.to_json()["growth"], f"{report.epochs} epochs, {report.kills} kills")
    assert report.problems == []
    assert report.epochs >= 3 and report.kills >= 1 and report.checkpoints == report.epochs
    assert report.restores >= report.checkpoints
    assert report.rows_read == report.epochs * 20_000
    growth = report.growth()
    assert growth["connections"] <= 0 and growth["other_threads"] <= 0, growth
