"""Scan pages read ahead by a thread (``client/cursor.py``), against a real node: it really reads
ahead, yields every row once, closes what it opened when abandoned, and hands errors on.

This is the Python read-ahead, the path a scan takes where the compiled scan pump cannot run (a TLS
connection, the op library not loaded, ``TF_IGNITE_SCAN=python``): every test here turns the pump
off.  ``test_compiled_scan.py`` covers the pump."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest

from tensorflow_ignite import IgniteDataset, write
from tensorflow_ignite.client import ConnectionOptions, pump
from tensorflow_ignite.errors import IgniteConnectionError
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.native import data_source

ROWS = 3000
ROW_BYTES = 1024
PAGE = 50


@pytest.fixture(autouse=True)
def python_read_ahead() -> Iterator[None]:
    data_source.ensure_loaded()  # the loader installs the pump: load first, then turn it off
    saved, reason = pump.installed_scan_pump(), pump.scan_pump_reason()
    pump.set_scan_pump(None, "turned off by test_scan_read_ahead")
    yield
    pump.set_scan_pump(saved, reason or "")


def _fill(cluster: LocalCluster, cache_name: str) -> None:
    rng = np.random.default_rng(7)
    host, port = cluster.address()
    write(cache_name, {"key": np.arange(ROWS, dtype=np.int64),
                       "data": rng.integers(0, 256, (ROWS, ROW_BYTES), dtype=np.uint8)},
          host=host, port=port, key="key")


def _ahead_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("ignite-read-ahead")]


def _wait_for(condition, what: str, timeout: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout}s: {what}")
        time.sleep(0.01)


def test_pages_are_fetched_while_the_caller_holds_one(ignite_node: LocalCluster, cache_name: str) -> None:
    _fill(ignite_node, cache_name)
    host, port = ignite_node.address()
    page_bytes = PAGE * (ROW_BYTES + 40)
    with ConnectionOptions(host=host, port=port).connect() as client:
        conn = client.default_connection
        cache = client.cache(cache_name)

        # One page requested ahead: holding the first page, no more than two pages arrive.
        plain = cache.scan_pages(page_size=PAGE)
        before = conn.bytes_received
        next(plain)
        time.sleep(0.5)  # give a (wrong) read-ahead time to show itself; the assertion is on bytes
        assert conn.bytes_received - before < 2.5 * page_bytes
        plain.close()

        # Read ahead: the thread keeps fetching up to its budget while the caller holds one page.
        budget = 8 * page_bytes
        ahead = cache.scan_pages(page_size=PAGE, read_ahead=budget)
        before = conn.bytes_received
        first = next(ahead)
        _wait_for(lambda: conn.bytes_received - before >= 6 * page_bytes, "pages read ahead of the caller")
        time.sleep(0.3)
        assert conn.bytes_received - before < budget + 3 * page_bytes  # bounded by its budget
        rows = first.row_count + sum(page.row_count for page in ahead)
        assert rows == ROWS
        _wait_for(lambda: not _ahead_threads(), "the read-ahead thread ends with its scan")


def test_an_abandoned_read_ahead_closes_its_cursor(ignite_node: LocalCluster, cache_name: str) -> None:
    """Ignite allows 128 open cursors per connection: 150 abandoned scans would fail if any leaked."""
    _fill(ignite_node, cache_name)
    host, port = ignite_node.address()
    with ConnectionOptions(host=host, port=port).connect() as client:
        cache = client.cache(cache_name)
        for _ in range(150):
            pages = cache.scan_pages(page_size=PAGE, read_ahead=4 * PAGE * ROW_BYTES)
            next(pages)
            next(pages)
            pages.close()
            assert not _ahead_threads()
        assert sum(page.row_count for page in cache.scan_pages(page_size=PAGE, read_ahead=1 << 20)) == ROWS


def test_a_connection_lost_under_the_thread_reaches_the_caller(ignite_node: LocalCluster, cache_name: str) -> None:
    _fill(ignite_node, cache_name)
    host, port = ignite_node.address()
    with ConnectionOptions(host=host, port=port).connect() as client:
        conn = client.default_connection
        pages = client.cache(cache_name).scan_pages(page_size=PAGE, read_ahead=2 * PAGE * ROW_BYTES)
        next(pages)
        conn.close()
        with pytest.raises(IgniteConnectionError):
            for _ in pages:
                pass
        _wait_for(lambda: not _ahead_threads(), "the read-ahead thread ends after the error")


def test_the_dataset_reads_node_scans_ahead_and_every_row_once(ignite_node: LocalCluster, cache_name: str) -> None:
    _fill(ignite_node, cache_name)
    host, port = ignite_node.address()
    ds = IgniteDataset(cache_name, host, port, batch_size=256, page_size=PAGE)
    seen: list[int] = []
    threads_seen = 0
    for batch in ds:
        seen.extend(batch["key"].numpy().tolist())
        threads_seen = max(threads_seen, len(_ahead_threads()))
    assert ds.stats.scan_mode == "nodes"
    assert sorted(seen) == list(range(ROWS))
    assert threads_seen == 1  # the one node's scan, read ahead
    assert set(ds.stats.fetch_paths) == {pump.PYTHON}, ds.stats.fetch_paths
    _wait_for(lambda: not _ahead_threads(), "no read-ahead thread outlives the epoch")
