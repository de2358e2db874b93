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


def test_a_state_taken_during_the_snapshot_carries_the_scans_state() -> None:
    """Issue 47: with the log, a checkpoint inside the first snapshot holds the head and the scan's own state."""
    scan = b"TFIRS1\x00\x00" + bytes(range(256))  # any bytes: base64 in the JSON
    state = FollowState("follow:abc", rows=5000, scanned=False, positions={0: 3, 1: 0}, scan=scan)
    back = FollowState.decode(state.encode(), "it")
    assert back == state and back.scan == scan
    assert "scan" not in json.loads(FollowState("follow:abc", 5, True, {0: 3}).encode())


def test_a_scan_state_that_is_not_base64_is_refused() -> None:
    bad = json.dumps({"follow": 2, "plan": "follow:abc", "rows": 1, "scanned": False, "log": [[0, 1]],
                      "scan": "not base64!"}).encode()
    with pytest.raises(ConfigurationError, match="not the state of a follower"):
        FollowState.decode(bad, "the saved iterator")
