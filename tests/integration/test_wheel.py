"""The wheel as a user gets it: ``pip install`` on a machine with no compiler, outside the checkout.

Builds this Python's wheel (``scripts/build-wheel.sh``: prebuilt native libraries
and the jars inside, auditwheel-checked) and runs ``scripts/wheel-smoke.sh`` on
it: a fresh virtualenv outside the checkout with no C/C++ compiler, javac or
Maven on PATH; ``ignite-tf --version``, ``ignite-tf node start`` (Java runtime
only), a write, IgniteDataset through the prebuilt op, an ``ignite://``
checkpoint, ``ignite-tf demo`` and ``ignite-tf demo --distributed`` (a launcher
job), ``ignite-tf node stop``; nothing compiled or written into site-packages;
``pip uninstall`` leaving no file.  ``make compat`` runs the same on 3.12 and 3.13.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"
TAG = f"cp{sys.version_info.major}{sys.version_info.minor}"


@pytest.mark.slow
@pytest.mark.timeout(1500)
def test_wheel_installs_and_runs_outside_the_checkout_without_a_compiler() -> None:
    built = subprocess.run(["bash", "scripts/build-wheel.sh", VERSION], cwd=ROOT, capture_output=True,
                           text=True, timeout=900, check=False)
    assert built.returncode == 0, f"build-wheel.sh failed:\n{built.stdout[-3000:]}\n{built.stderr[-3000:]}"
    wheels = list((ROOT / "dist").glob(f"tensorflow_ignite-*-{TAG}-{TAG}-manylinux_*_x86_64.whl"))
    assert len(wheels) == 1, wheels
    with zipfile.ZipFile(wheels[0]) as wheel:
        names = wheel.namelist()
    # Exactly this Python's libraries, no library grafted by auditwheel (TensorFlow's stays external).
    native = sorted(n for n in names if n.endswith(".so") or ".so." in n)
    assert native == ["tensorflow_ignite/native/_tf_ignite_bind.so",  # the launcher's bind fence (libc only)
                      f"tensorflow_ignite/native/_tf_ignite_data.cpython-{TAG[2:]}-x86_64-linux-gnu.so",
                      f"tensorflow_ignite/native/_tf_ignite_fs.cpython-{TAG[2:]}-x86_64-linux-gnu.so"], native
    assert "tensorflow_ignite/native/_build_info.json" in names
    assert "tensorflow_ignite/jars/tensorflow-ignite-node.jar" in names
    assert "tensorflow_ignite/jars/lib/ignite-core-2.18.0.jar" in names
    assert "tensorflow_ignite/jars/lib-sql/ignite-indexing-2.17.0.jar" in names
    assert "tensorflow_ignite/demo_jobs/digits_resnet/train.py" in names

    # The CPU-only TensorFlow build: the same package code, a third of the download
    # (`make compat` installs the [tf] extra on 3.12 and 3.13).
    smoke = subprocess.run(["bash", "scripts/wheel-smoke.sh", VERSION], cwd=ROOT, capture_output=True,
                           text=True, timeout=1200, check=False,
                           env={**os.environ, "WHEEL_SMOKE_EXTRAS": "tf-cpu,demo"})
    output = smoke.stdout + smoke.stderr
    assert smoke.returncode == 0, output[-6000:]
    assert re.search(r"^wheel smoke: 9 passed, 0 failed$", smoke.stdout, re.MULTILINE), output[-6000:]
    assert re.search(r"through the prebuilt op \S*/site-packages/tensorflow_ignite/native/_tf_ignite_data",
                     smoke.stdout), output[-6000:]
