"""The compiled scan pump (client/pump.py, native/tf_ignite_data_scan.cc) against the Python read-ahead, on a real node.

A node scan whose pages are read ahead hands its cursor's later pages to the
op library's ScanPump: the same cache read both ways must give the same
batches, the pump must really have fetched them, and the connection must be
Python's again afterwards (a request on it is answered).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import numpy as np
import pytest

from tensorflow_ignite import IgniteDataset
from tensorflow_ignite.client import IgniteClient, pump
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.native import data_source
from tensorflow_ignite.protocol.codes import Op, TypeCode
from tensorflow_ignite.protocol.columns import compiled as compiled_slots
from tensorflow_ignite.protocol.values import BinaryObject, Typed

ROWS = 5000
#: Small pages: the cursor has many later pages, every one fetched by the read-ahead.
PAGE_ROWS = 100


@pytest.fixture
def filled(ignite_node: LocalCluster, cache_name: str) -> Iterator[str]:
    with IgniteClient(ignite_node.addresses()) as client:
        cache = client.get_or_create_cache(cache_name)
        rng = np.random.default_rng(7)
        for start in range(0, ROWS, 1000):
            cache.put_all(
                {
                    i: BinaryObject(
                        "PumpRow",
                        {
                            "label": Typed(int(rng.integers(0, 10)), TypeCode.INT),
                            "score": float(rng.normal()),
                            "px": Typed(bytes(rng.integers(0, 256, 16, dtype=np.uint8)), TypeCode.BYTE_ARR),
                        },
                    )
                    for i in range(start, min(ROWS, start + 1000))
                }
            )
    yield cache_name


def _read(ignite_node: LocalCluster, cache: str) -> tuple[dict[str, np.ndarray], IgniteDataset]:
    host, port = ignite_node.address()
    ds = IgniteDataset(cache, host, port, batch_size=256, page_size=PAGE_ROWS, shapes={"px": [16]}, timeout=30)
    parts: dict[str, list[np.ndarray]] = {}
    for batch in ds:
        parts.setdefault("key", []).append(batch["key"].numpy())
        for name in ("label", "score", "px"):
            parts.setdefault(name, []).append(batch["val"][name].numpy())
    out = {k: np.concatenate(v) for k, v in parts.items()}
    order = np.argsort(out["key"])
    return {k: v[order] for k, v in out.items()}, ds


def test_the_pump_fetches_what_the_python_read_ahead_does(
    ignite_node: LocalCluster, filled: str, caplog: pytest.LogCaptureFixture
) -> None:
    assert data_source.unavailable_reason() is None, data_source.unavailable_reason()
    data_source.ensure_loaded()
    assert pump.scan_pump_reason() is None, pump.scan_pump_reason()
    before = pump.fetch_counts()
    fast, ds = _read(ignite_node, filled)
    after = pump.fetch_counts()
    assert ds.stats.scan_mode == "nodes"
    compiled = after.get(pump.COMPILED, 0) - before.get(pump.COMPILED, 0)
    python = after.get(pump.PYTHON, 0) - before.get(pump.PYTHON, 0)
    # Every later page of the node scan came through the pump (the first is Python's: it opens the cursor).
    assert compiled >= ROWS // PAGE_ROWS - 2, (compiled, python)
    assert python == 0, (compiled, python)
    assert ds.stats.fetch_paths == {pump.COMPILED: compiled}, ds.stats.fetch_paths
    # The pump's thread gave every page it fetched its rows' keys; the first pages got them in Python.
    assert ds.stats.id_paths.get("pump") == compiled, ds.stats.id_paths
    assert ds.stats.id_paths.get("python", 0) <= 2, ds.stats.id_paths

    saved = pump.installed_scan_pump()
    pump.set_scan_pump(None, "turned off by the test")
    try:
        with caplog.at_level(logging.INFO, logger=compiled_slots.__name__):  # the one log line per reason
            slow, slow_ds = _read(ignite_node, filled)
        assert set(slow_ds.stats.fetch_paths) == {pump.PYTHON}, slow_ds.stats.fetch_paths
        assert set(slow_ds.stats.id_paths) == {"python"}, slow_ds.stats.id_paths
        assert pump.fetch_counts().get(pump.PYTHON, 0) > after.get(pump.PYTHON, 0)
        assert any("turned off by the test" in r.getMessage() for r in caplog.records)
    finally:
        pump.set_scan_pump(saved)
    assert fast.keys() == slow.keys()
    assert fast["key"].tolist() == list(range(ROWS))
    for name in fast:
        np.testing.assert_array_equal(fast[name], slow[name], err_msg=name)


def test_a_pumped_connection_serves_requests_afterwards(ignite_node: LocalCluster, filled: str) -> None:
    """The lease ends at a frame boundary: the same client's connection answers the next requests."""
    data_source.ensure_loaded()
    assert pump.scan_pump_reason() is None, pump.scan_pump_reason()
    host, port = ignite_node.address()
    ds = IgniteDataset(filled, host, port, batch_size=256, page_size=PAGE_ROWS, shapes={"px": [16]}, timeout=30)
    before = pump.fetch_counts().get(pump.COMPILED, 0)
    # Abandon the epoch early: the pump is stopped with pages in flight and the cursor closed.
    for i, _ in enumerate(ds):
        if i == 2:
            break
    assert pump.fetch_counts().get(pump.COMPILED, 0) > before
    # A full epoch afterwards on the same dataset (same pooled connections): every row once.
    keys = sorted(int(k) for batch in ds for k in batch["key"].numpy())
    assert keys == list(range(ROWS))


def test_pumped_requests_share_the_connection_with_other_threads(ignite_node: LocalCluster, filled: str) -> None:
    """The pump sends its page requests itself, under the send lock Python's senders share for the lease.

    Another thread's requests on the same connection meanwhile are answered, the pump's requests are
    counted with the connection's own, and the connection's own send lock is back afterwards.
    """
    data_source.ensure_loaded()
    assert pump.scan_pump_reason() is None, pump.scan_pump_reason()
    with IgniteClient(ignite_node.addresses()) as client:
        conn = client.default_connection
        own_lock = conn._send_lock
        cache = client.cache(filled)
        sent_before = conn.op_counts[Op.QUERY_SCAN_CURSOR_GET_PAGE]
        compiled_before = pump.fetch_counts().get(pump.COMPILED, 0)
        rows = 0
        got: list[object] = []
        errors: list[BaseException] = []
        stop = threading.Event()

        def other() -> None:  # single gets on the same connection while the pump holds it
            try:
                while not stop.is_set():
                    got.append(cache.get(7))
            except BaseException as exc:  # noqa: BLE001 - reported by the test
                errors.append(exc)

        thread = threading.Thread(target=other)
        leased_lock = None
        scan = cache.scan_pages(page_size=PAGE_ROWS, connection=conn, read_ahead=1 << 20)
        for i, page in enumerate(scan):
            rows += page.row_count
            if i == 1:
                leased_lock = conn._send_lock
                thread.start()
        stop.set()
        thread.join(30)
        assert not errors, errors
        assert got and all(g is not None for g in got)
        assert rows == ROWS
        assert leased_lock is not own_lock and type(leased_lock).__name__ == "SendLock"
        assert conn._send_lock is own_lock
        pages_sent = conn.op_counts[Op.QUERY_SCAN_CURSOR_GET_PAGE] - sent_before
        assert pages_sent >= ROWS // PAGE_ROWS - 1, pages_sent
        assert pump.fetch_counts().get(pump.COMPILED, 0) - compiled_before >= ROWS // PAGE_ROWS - 2


def test_a_pump_without_send_lock_sends_through_python(ignite_node: LocalCluster, filled: str) -> None:
    """An op library built from older sources (no ScanPump.SendLock): its pump's requests go through Python."""
    data_source.ensure_loaded()
    saved = pump.installed_scan_pump()
    assert saved is not None, pump.scan_pump_reason()

    def older(*args: object, **kwargs: object) -> object:
        assert not kwargs, kwargs  # the lease asks nothing of a pump without SendLock
        return saved(*args)  # type: ignore[arg-type]

    pump.set_scan_pump(older)  # type: ignore[arg-type]
    try:
        with IgniteClient(ignite_node.addresses()) as client:
            conn = client.default_connection
            own_lock = conn._send_lock
            before = pump.fetch_counts().get(pump.COMPILED, 0)
            rows = 0
            for page in client.cache(filled).scan_pages(page_size=PAGE_ROWS, connection=conn, read_ahead=1 << 20):
                rows += page.row_count
                assert conn._send_lock is own_lock
            assert rows == ROWS
            assert pump.fetch_counts().get(pump.COMPILED, 0) - before >= ROWS // PAGE_ROWS - 2
    finally:
        pump.set_scan_pump(saved)
