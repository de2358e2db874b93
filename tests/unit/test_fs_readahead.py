"""The read-ahead window of ignite:// readers (pure logic, no node)."""

from __future__ import annotations

import pytest

from tensorflow_ignite.errors import ConfigurationError
from tensorflow_ignite.fs import config as fs_config
from tensorflow_ignite.fs.store.readahead import (
    DEFAULT_READ_AHEAD,
    KEPT_BEHIND,
    ReadAheadWindow,
    ReadStats,
    window_blocks,
)


def test_window_blocks_rounds_down_to_whole_blocks_at_least_one() -> None:
    assert window_blocks(16 << 20, 4 << 20) == 4
    assert window_blocks(15 << 20, 4 << 20) == 3
    assert window_blocks(1, 4 << 20) == 1
    assert window_blocks(0, 4 << 20) == 0
    with pytest.raises(ValueError, match="read_ahead"):
        window_blocks(-1, 4 << 20)


def test_sequential_reads_ramp_up_to_the_window() -> None:
    w = ReadAheadWindow(blocks=100, ahead=8)
    fetched = []
    for i in range(6):
        step = w.access(i)
        assert step.sequential
        fetched.append((step.fetch.start, step.fetch.stop))
    # distance 1, 2, 4, 8, 8, 8 past the block just read
    assert fetched == [(1, 2), (2, 4), (3, 7), (4, 12), (5, 13), (6, 14)]
    assert w.capacity == 8 + KEPT_BEHIND


def test_reads_within_the_last_block_change_nothing() -> None:
    w = ReadAheadWindow(blocks=10, ahead=4)
    w.access(0)
    w.access(1)
    before = (w.last, w.run)
    step = w.access(1)
    assert step.sequential and len(step.fetch) == 0
    assert (w.last, w.run) == before


def test_a_seek_ends_the_run_and_fetches_nothing_until_sequential_again() -> None:
    w = ReadAheadWindow(blocks=100, ahead=4)
    for i in range(4):
        w.access(i)
    step = w.access(50)  # forwards
    assert not step.sequential and len(step.fetch) == 0
    step = w.access(51)
    assert step.sequential and step.fetch == range(52, 53)
    step = w.access(10)  # backwards
    assert not step.sequential and len(step.fetch) == 0
    step = w.access(11)
    assert step.fetch == range(12, 13)


def test_a_read_spanning_blocks_counts_every_block_of_the_run() -> None:
    w = ReadAheadWindow(blocks=100, ahead=16)
    step = w.access(0, 3)  # one large read of blocks 0..3: a run of 4
    assert step.sequential and step.fetch == range(4, 12)
    step = w.access(3, 5)  # continues in the block it ended in
    assert step.sequential and step.fetch == range(6, 22)


def test_the_window_stops_at_the_end_of_the_file() -> None:
    w = ReadAheadWindow(blocks=5, ahead=8)
    for i in range(3):
        step = w.access(i)
    assert step.fetch == range(3, 5)
    assert len(w.access(4).fetch) == 0


def test_no_read_ahead_when_off() -> None:
    w = ReadAheadWindow(blocks=100, ahead=0)
    for i in range(10):
        assert len(w.access(i).fetch) == 0
    with pytest.raises(ValueError):
        ReadAheadWindow(blocks=1, ahead=-1)
    with pytest.raises(ValueError):
        w.access(5, 4)


def test_stats_track_the_peak_of_what_is_held() -> None:
    s = ReadStats(limit_bytes=300)
    s.hold(100)
    s.hold(100)
    s.release(100)
    s.hold(50)
    s.count("prefetch_hits", 2)
    d = s.as_dict()
    assert d["held_bytes"] == 150 and d["peak_held_bytes"] == 200 and d["prefetch_hits"] == 2
    assert "limit_bytes=300" in repr(s)


def test_the_setting_comes_from_configure_or_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    saved = fs_config.overrides()
    try:
        fs_config.reset()
        monkeypatch.delenv("IGNITE_FS_READ_AHEAD", raising=False)
        assert fs_config.settings().read_ahead == DEFAULT_READ_AHEAD
        monkeypatch.setenv("IGNITE_FS_READ_AHEAD", "64m")
        assert fs_config.settings().read_ahead == 64 << 20
        monkeypatch.setenv("IGNITE_FS_READ_AHEAD", "0")
        assert fs_config.settings().read_ahead == 0
        assert fs_config.configure(read_ahead="8m").read_ahead == 8 << 20
        monkeypatch.setenv("IGNITE_FS_READ_AHEAD", "lots")
        fs_config.reset()
        with pytest.raises(ConfigurationError, match="IGNITE_FS_READ_AHEAD"):
            fs_config.settings()
    finally:
        monkeypatch.delenv("IGNITE_FS_READ_AHEAD", raising=False)
        fs_config.reset()
        fs_config.configure(**saved)


@pytest.mark.parametrize("text, expected", [("8m", 8 << 20), ("8MiB", 8 << 20), ("8 MB", 8 << 20),
                                            ("512k", 512 << 10), (4096, 4096), ("0", 0)])
def test_sizes_given_as_strings_are_parsed_like_the_environment(text: str | int, expected: int) -> None:
    assert fs_config.parse_settings({"read_ahead": text}) == {"read_ahead": expected}


def test_parse_settings_names_what_it_cannot_read() -> None:
    got = fs_config.parse_settings({"block_size": "1m", "cache_prefix": "x", "read_ahead": None})
    assert got == {"block_size": 1 << 20, "cache_prefix": "x", "read_ahead": None}
    with pytest.raises(ConfigurationError, match="read_ahead='lots'"):
        fs_config.parse_settings({"read_ahead": "lots"})
    with pytest.raises(ConfigurationError, match="block_size='12'.*1,024"):
        fs_config.parse_settings({"block_size": "12"})
    with pytest.raises(ConfigurationError, match="unknown ignite:// setting.*readahead"):
        fs_config.parse_settings({"readahead": "8m"})
