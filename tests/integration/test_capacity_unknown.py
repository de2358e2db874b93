"""The capacity guard on a cluster that cannot report its data regions (no tensorflow-ignite module).

Kept apart from ``test_capacity.py`` so that its node never runs next to that module's.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.data.write import write
from tensorflow_ignite.local.cluster import LocalCluster


def test_no_figures_warns_once_and_proceeds(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A cluster without the module: the guard cannot know, says so once, and lets writes through."""
    with LocalCluster(tmp_path / "plain", nodes=1, region_mb=64, heap_mb=256, name="tfi-capplain",
                      launcher_module=False) as cluster:
        host, port = cluster.address()
        with IgniteClient(f"{host}:{port}") as c, caplog.at_level(logging.WARNING, "tensorflow_ignite.capacity"):
            for i in range(2):
                result = write(f"cap_plain{i}", {"x": np.arange(10)}, client=c, progress=False)
                assert result.rows == 10
        warnings = [r for r in caplog.records if r.name == "tensorflow_ignite.capacity"]
        assert len(warnings) == 1, [r.getMessage() for r in warnings]
        assert "cannot check" in warnings[0].getMessage() and "module" in warnings[0].getMessage()
