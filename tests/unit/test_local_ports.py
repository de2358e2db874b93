"""Port choice of local clusters: blocks never overlap and stay out of the ephemeral range."""

from __future__ import annotations

from pathlib import Path

import pytest

from tensorflow_ignite.errors import ConfigurationError
from tensorflow_ignite.local.cluster import (
    PORT_RANGE_VARIABLE,
    LocalCluster,
    ephemeral_port_floor,
    find_free_port_block,
    local_port_range,
)


def test_avoided_ports_are_never_part_of_a_block() -> None:
    # A narrow window forces the search through the avoided ports.
    first = find_free_port_block("127.0.0.1", 4, start=21000, stop=21100)
    avoid = set(range(first, first + 4))
    for _ in range(20):
        base = find_free_port_block("127.0.0.1", 8, start=first - 10, stop=first + 40, avoid=avoid)
        assert not avoid & set(range(base, base + 8)), (base, sorted(avoid))


def test_cluster_port_blocks_are_disjoint_and_below_the_ephemeral_range(tmp_path: Path) -> None:
    floor = ephemeral_port_floor()
    for _ in range(20):
        cluster = LocalCluster(tmp_path, nodes=3)
        cluster.choose_ports()
        assert cluster.client_port is not None
        blocks = [
            set(range(cluster.client_port, cluster.client_port + 3)),
            set(cluster.discovery_ports),
            set(cluster.communication_ports),
        ]
        assert not (blocks[0] & blocks[1] or blocks[0] & blocks[2] or blocks[1] & blocks[2])
        if floor - 20000 >= 2000:
            assert max(max(b) for b in blocks) < floor


def test_a_configured_range_holds_every_block_of_the_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two processes side by side (run-tests.sh's main and side runs) each pick from their own range.
    monkeypatch.setenv(PORT_RANGE_VARIABLE, "24000-24200")
    for _ in range(10):
        cluster = LocalCluster(tmp_path, nodes=3)
        cluster.choose_ports()
        assert cluster.client_port is not None
        for port in [cluster.client_port, *cluster.discovery_ports, *cluster.communication_ports]:
            assert 24000 <= port < 24200, port
    # An explicit window still wins over the variable.
    assert 21000 <= find_free_port_block("127.0.0.1", 2, start=21000, stop=21100) < 21100


@pytest.mark.parametrize("text", ["24000", "24200-24000", "a-b", "80-1000", "24000-70000"])
def test_a_malformed_range_names_the_variable(text: str) -> None:
    with pytest.raises(ConfigurationError, match=PORT_RANGE_VARIABLE):
        local_port_range({PORT_RANGE_VARIABLE: text})


def test_an_unset_or_empty_range_is_none() -> None:
    assert local_port_range({}) is None
    assert local_port_range({PORT_RANGE_VARIABLE: " "}) is None
