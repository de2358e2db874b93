"""examples/ps_keras_metrics.py: Keras 3 metrics under ParameterServerStrategy, and the correct alternatives.

Keras 3's ``Variable.assign_add`` reads, then writes; two workers updating a
metric on the ps at once lose updates (upstream, not ours: no Ignite is
involved).  The example's two ways -- fetched step values averaged on the
coordinator, and ``AtomicMean`` (``tf.Variable.assign_add``) -- must be exact
with two workers; with one worker the Keras metric is exact too (the control).
Each case runs in a subprocess: connecting to a TF cluster changes the process's
eager context for good.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(workers: int) -> list[dict[str, float]]:
    code = ("import json, ps_keras_metrics; "
            f"print('RESULT', json.dumps(ps_keras_metrics.main({workers}, steps=40, epochs=2)))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(EXAMPLES), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


@pytest.mark.parametrize("workers", [
    pytest.param(1, marks=pytest.mark.long_only(
        "test_fetched_values_and_atomic_metric_give_exact_epoch_means[2]: two workers, whose means must agree")),
    2,
])
def test_fetched_values_and_atomic_metric_give_exact_epoch_means(workers: int) -> None:
    epochs = run(workers)
    assert len(epochs) == 2
    for r in epochs:
        assert r["expected"] == 19.5
        assert r["fetched"] == pytest.approx(19.5, abs=1e-6)
        assert r["atomic"] == pytest.approx(19.5, abs=1e-6)
        if workers == 1:  # no concurrent updates: Keras 3's read-then-write loses nothing
            assert r["keras"] == pytest.approx(19.5, abs=1e-6)
