"""The capacity guard on clusters without the tensorflow-ignite module.

With an SQL engine the figures come from the SQL system views (asked on every
node); without one (Ignite 2.18 ``ignite-core``) the guard cannot know, says so
once and lets writes through.  Kept apart from ``test_capacity.py`` so that
these nodes never run next to that module's.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from tensorflow_ignite.capacity import CapacityGuard
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.data.write import write
from tensorflow_ignite.errors import CapacityError
from tensorflow_ignite.local.cluster import LocalCluster


def test_sql_system_views_give_the_figures_and_the_guard_refuses(tmp_path: Path) -> None:
    with LocalCluster(tmp_path / "sql", nodes=2, region_mb=64, heap_mb=256, name="tfi-capsql", sql=True,
                      launcher_module=False) as cluster:
        host, port = cluster.address()
        with IgniteClient(f"{host}:{port}") as c:
            write("cap_sql_keep", {"x": np.zeros((3000, 1000), np.uint8)}, client=c, progress=False)
            guard = CapacityGuard(c, "cap_sql_keep")  # the module is asked first: absent here
            rows = guard.regions()
            assert guard.source == "SQL system views"
            assert rows is not None and sorted(r.node for r in rows) == ["tfi-capsql-0", "tfi-capsql-1"], rows
            assert all(r.max_size == 64 << 20 and r.guarded and r.used_size > 4 << 20 for r in rows), rows
            assert len({r.node_id for r in rows}) == 2  # each node asked on its own connection
            with pytest.raises(CapacityError) as info:  # 2 x 64 MiB cannot take 150 MiB
                write("cap_sql_big", {"x": np.zeros((150, 1 << 20), np.uint8)}, client=c, progress=False)
            assert info.value.max_size == 64 << 20 and "cap_sql_big" not in c.cache_names()
            assert c.cache("cap_sql_keep").size() == 3000
        assert all(m.alive() for m in cluster.members)


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
