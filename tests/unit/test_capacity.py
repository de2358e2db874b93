"""The capacity guard's arithmetic: what a write needs, what a node has left, when it refuses."""

from __future__ import annotations

import numpy as np

from tensorflow_ignite.capacity import (
    ENTRY_OVERHEAD,
    FILL_FACTOR,
    PARTITION_BYTES,
    USABLE_FRACTION,
    RegionUsage,
    estimate_bytes,
    node_share,
    shortfall,
)
from tensorflow_ignite.data.write.plan import estimate_row_bytes, make_plan
from tensorflow_ignite.data.write.sources import open_source
from tensorflow_ignite.errors import CapacityError, IgniteError

MIB = 1 << 20


def _region(used: int, max_size: int = 64 * MIB, **kw: object) -> RegionUsage:
    row = {"node": "n0", "node_id": "id0", "region": "default", "default": True, "max_size": max_size,
           "used_size": used, "page_size": 4096, **kw}
    return RegionUsage.from_report(row)


def test_estimate_covers_what_was_measured() -> None:
    # Region bytes per row measured on Ignite 2.18 (RELIABILITY.md): the estimate is never below.
    measured = [(43, 126.5), (843, 1032.1), (4139, 4285.3), (65579, 67295.0), (4 << 20, 1.0224 * (4 << 20))]
    for payload, used in measured:
        estimate = estimate_bytes(payload, 1)
        assert estimate >= used, (payload, estimate, used)
        assert estimate <= used * 2.5 + 200  # and not absurdly above
    assert estimate_bytes(0, 0) == 0
    assert estimate_bytes(0, 0, partitions=1024) == 1024 * PARTITION_BYTES
    assert estimate_bytes(1000, 10, copies=2) == 2 * (int(1000 / FILL_FACTOR) + 10 * ENTRY_OVERHEAD)


def test_node_share() -> None:
    assert node_share(100 * MIB, 1) == 100 * MIB
    assert node_share(90 * MIB, 3) == int(30 * MIB * 1.2)
    assert node_share(10 * MIB, 3, largest_entry=4 * MIB) == 10 * MIB  # never more than everything


def test_region_usage_free_and_guarded() -> None:
    r = _region(20 * MIB)
    assert r.usable == int(64 * MIB * USABLE_FRACTION) and r.free == r.usable - 20 * MIB and r.guarded
    assert _region(70 * MIB).free == 0
    assert not _region(0, persistence=True).guarded
    assert not _region(0, eviction="RANDOM_2_LRU").guarded


def test_shortfall_names_the_node_that_cannot_take_it() -> None:
    nodes = [_region(10 * MIB, node="a"), _region(30 * MIB, node="b")]
    assert shortfall(nodes, 5 * MIB, copies=2) is None  # 2 copies over 2 nodes: 6 MiB each
    short = shortfall(nodes, 25 * MIB, copies=2)
    assert short is not None
    region, share, pending = short
    assert region.node == "b" and share == 30 * MIB and pending == 0  # one copy per node, +20 % imbalance
    assert shortfall(nodes, 10 * MIB, copies=2, pending=15 * MIB) is not None  # admitted since the figures
    assert shortfall(nodes, 25 * MIB, copies=5) == shortfall(nodes, 25 * MIB, copies=2)  # capped at 2 nodes
    assert shortfall([_region(60 * MIB, persistence=True)], 500 * MIB) is None  # not guarded


def test_capacity_error_carries_the_figures() -> None:
    err = CapacityError("m", region="default", node="b", max_size=64 * MIB, used=30 * MIB, needed=30 * MIB,
                        cache_name="c")
    assert isinstance(err, IgniteError) and err.tf_error_code == 8  # ResourceExhaustedError in TensorFlow
    assert (err.region, err.node, err.max_size, err.used, err.needed, err.cache_name) == (
        "default", "b", 64 * MIB, 30 * MIB, 30 * MIB, "c")


def test_row_estimate() -> None:
    fixed = open_source({"x": np.zeros((10, 784), np.uint8), "y": np.arange(10)}, None, None)
    plan = make_plan(fixed, None, "T")
    assert plan.fixed is not None and estimate_row_bytes(plan, fixed.first) == plan.fixed.row_size
    texts = open_source({"s": np.array(["a" * 100, "b" * 300], dtype=object)}, None, None)
    plan = make_plan(texts, None, "S")
    assert 200 + 5 <= estimate_row_bytes(plan, texts.first) < 300
