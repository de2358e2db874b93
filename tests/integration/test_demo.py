"""The main job (``ignite-tf demo``) end to end, with small settings."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tensorflow_ignite.demo import run_demo
from tensorflow_ignite.local.cluster import LocalCluster


def test_demo_on_existing_node(ignite_node: LocalCluster, tmp_path: Path) -> None:
    host, port = ignite_node.address()
    result = run_demo(host, port, epochs=6, out_dir=tmp_path, progress=False)
    assert result.train_rows + result.test_rows == 1797
    assert result.accuracy >= 0.9, result
    data = result.curves_png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_demo_command_starts_and_stops_its_own_node(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tensorflow_ignite.cli.main", "demo", "--epochs", "2", "--no-progress",
         "--out-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=600, env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Held-out accuracy:" in proc.stdout
    assert "Ignite node stopped" in proc.stdout
    assert (tmp_path / "training_curves.png").exists()
    # No JVM of the demo is left behind (its work directory lives under this TMPDIR).
    leftovers = []
    for p in Path("/proc").iterdir():
        try:
            cmd = (p / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "NodeLauncher" in cmd and str(tmp_path) in cmd:
            leftovers.append(p.name)
    assert leftovers == []
