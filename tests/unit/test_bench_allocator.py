"""The benchmark's allocator state (bench/allocator.py): what from_generator changes, and the reset.

Without Ignite, in child processes (the allocator's thresholds are process-wide).
TensorFlow's from_generator op sets glibc's trim threshold (its "memory patch"),
which freezes the mmap threshold where it stands; in a process that has not yet
freed a large block that is 128 KiB, and every 1 MiB buffer is then mapped
afresh and faults all its pages in.  ``steady_allocator()`` undoes it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FAULTS = """
import json, resource, ctypes
import numpy as np

def faults():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        a = np.empty(1 << 20, np.uint8)
        a.fill(1)
        del a
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

ctypes.CDLL("libc.so.6").mallopt(-1, 128 << 10)  # what TensorFlow's patch does (M_TRIM_THRESHOLD)
patched = faults()
from bench.allocator import steady_allocator
applied = steady_allocator()
faults()
steady = faults()
print(json.dumps({"patched": patched, "applied": applied, "steady": steady}))
"""

GENERATOR = """
import tensorflow as tf
list(tf.data.Dataset.from_generator(lambda: iter([1]), output_signature=tf.TensorSpec([], tf.int32)))
"""


def _child(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={"PYTHONPATH": f"{ROOT}:{ROOT / 'src'}", "PATH": os.environ.get("PATH", ""), **env},
                          check=False)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_steady_allocator_stops_large_buffers_faulting_in_again() -> None:
    proc = _child(FAULTS)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    pages = 20 * (1 << 20) // 4096
    assert got["applied"] is True
    assert got["patched"] > pages // 2, got  # every buffer mapped afresh: (nearly) all its pages fault
    assert got["steady"] < pages // 10, got


def test_from_generator_sets_the_trim_threshold() -> None:
    """The trigger the harness guards against (if TensorFlow stops doing it, the reset is merely harmless)."""
    pytest.importorskip("tensorflow")
    proc = _child(GENERATOR, TF_CPP_MIN_LOG_LEVEL="0")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "M_TRIM_THRESHOLD=128 kb" in proc.stderr
