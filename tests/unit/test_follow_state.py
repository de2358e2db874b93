"""FollowState: a follower's saved position, as versioned JSON (with per-partition counters when following a log)."""

from __future__ import annotations

import json

import pytest

from tensorflow_ignite.data.follow import FollowState
from tensorflow_ignite.errors import ConfigurationError


def test_positions_round_trip_and_stay_small() -> None:
    state = FollowState("follow:abc", rows=120, scanned=True, positions={p: 1000 + p for p in range(1024)})
    data = state.encode()
    assert FollowState.decode(data, "it") == state
    assert len(data) < 20_000  # per partition a counter: no row list


def test_a_state_without_a_log_has_no_positions() -> None:
    state = FollowState("follow:abc", rows=5, scanned=False)
    assert "log" not in json.loads(state.encode())
    assert FollowState.decode(state.encode(), "it").positions is None


def test_a_version_1_state_reads_as_one_without_positions() -> None:
    old = json.dumps({"follow": 1, "plan": "follow:abc", "rows": 7, "scanned": True}).encode()
    assert FollowState.decode(old, "it") == FollowState("follow:abc", 7, True, None)


def test_what_is_not_a_state_is_named() -> None:
    with pytest.raises(ConfigurationError, match="the saved iterator is not the state of a follower"):
        FollowState.decode(b'{"follow": 9}', "the saved iterator")
