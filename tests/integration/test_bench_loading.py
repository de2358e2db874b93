"""The loading scenario's contenders (bench/loading.py) at a tiny size, so that they cannot rot.

``bench.run --scenarios load`` needs minutes even at its quick sizes (a thick client joins,
every run creates and destroys a cache), so the benchmark smoke test leaves it out; this
test runs each contender once instead -- ``tensorflow_ignite.write``, ``ignite-tf load`` of
the ``.npz`` and ``.parquet`` files, the Java thin client's ``putAll``, the Java thick
client's ``IgniteDataStreamer`` and pyignite's ``put_all`` -- on the session's three-node
cluster.  Each run loads into a fresh cache and fails unless the cache then holds every row;
the bytes each loader sent to each node (kernel socket counters) must add up to at least the
payload, and the DataStreamer, which sends every entry to its primary node, must send each
node its share of the primary keys.  Timings are never asserted.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bench.harness import Scenario, run_scenario
from bench.javaclient import JavaLoader
from bench.loading import (Caches, NodeMap, load_contenders, make_data, traffic_measurable, traffic_section,
                           write_batch_rows)
from tensorflow_ignite.local.cluster import LocalCluster

ROWS = 3000


@pytest.mark.slow
@pytest.mark.long_only("test_writer.py (our writer: every row, each batch to its primary), test_other_clients.py and "
                       "test_thick_client_data.py (pyignite's and Java's writers), test_bench_smoke.py (the harness)")
def test_every_loading_contender_loads_every_row(ignite_cluster: LocalCluster, tmp_path: Path) -> None:
    assert traffic_measurable(), "`ss` (package iproute2) counts the bytes sent to each node; install it"
    host, port = ignite_cluster.address()
    nodes = NodeMap.of(ignite_cluster)
    with ThreadPoolExecutor(2) as pool:  # the JVMs connect and join while the data is made
        thin = pool.submit(JavaLoader.thin, host, port, addresses=ignite_cluster.addresses())
        thick = pool.submit(JavaLoader.thick, ignite_cluster.discovery_addresses(), ignite_cluster.ignite_classpath(),
                            work_dir=tmp_path / "thick")
        try:
            caches = Caches(host, port, nodes)
            data = make_data("small", ROWS, 8 + 784, tmp_path / "data")
            batch_rows, row_wire = write_batch_rows(host, port, data, caches)
        finally:
            java = [thin.result(), thick.result()]
    try:
        assert row_wire > data.row_bytes and batch_rows == (4 << 20) // row_wire
        contenders = load_contenders(
            host, port, data, caches, batch_rows=1000, batch_bytes=1000 * row_wire, key_prefix="t_loadbench",
            java_thin=lambda: java[0], java_thick=lambda: java[1])
        for c in contenders:  # one timed run each is the check
            c.warmup = None
        logged: list[str] = []
        result = run_scenario(Scenario("load_test", "loading", "", "rows/s", contenders, reference="streamer"),
                              reps=1, log=logged.append)  # closes the contenders (the JVMs too)
    finally:
        for loader in java:
            loader.close()

    assert set(result.results) == {"write", "load_npz", "load_parquet", "java", "streamer", "pyignite"}
    for key, res in result.results.items():
        assert res.ok and res.error is None, (key, res.error, logged)
        (run,) = res.runs
        assert run.units == ROWS and run.nbytes == ROWS * (8 + 784), key
        sent = run.extra["sent"]
        assert set(sent) == set(nodes.nodes.values()), key
        assert sum(sent.values()) >= run.nbytes, (key, sent)
    primaries = caches.primaries[ROWS]
    assert sum(primaries.values()) == ROWS and all(primaries.values())
    # The Java thin client sends ROWS / 1000 whole put-alls; ours split each batch of 1000 rows
    # by primary node (every batch holds keys of every node) and, like the thick client's
    # streamer, send each entry to its primary.
    assert result.results["java"].runs[0].extra["requests"] == 3
    for key in ("write", "load_npz", "load_parquet"):
        assert result.results[key].runs[0].extra["requests"] == 3 * len(primaries), key
    for key in ("streamer", "write", "load_npz", "load_parquet"):
        sent = result.results[key].runs[0].extra["sent"]
        total = sum(sent.values())
        for node, keys in primaries.items():
            assert abs(sent[node] / total - keys / ROWS) < 0.05, (key, node, sent, primaries)

    section = traffic_section(result, primaries)
    assert "Java thick client IgniteDataStreamer (reference) sends each entry to its primary" in section
    for node in nodes.nodes.values():
        assert f"| {node} | {primaries[node]:,} (" in section
