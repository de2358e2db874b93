"""Partition-aware routing of the shared client, measured on real nodes through ``IgniteClient.stats()``.

Where a request went is checked against what the *server* says: the partition
-> primary map of ``CACHE_PARTITIONS`` and, for the rows a write stored, the
rows each node's partitions hold (a scan of every partition on its primary).
So a routing error in the client's own key -> partition computation shows as
bytes sent to the wrong node, not as agreement with itself.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from tensorflow_ignite.client import ClientStats, ConnectionOptions, IgniteClient, close_shared_clients
from tensorflow_ignite.data.write import write
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.protocol.cache_config import CacheConfiguration
from tensorflow_ignite.protocol.codes import Op
from tensorflow_ignite.testing.waiting import wait_for, wait_rebalanced


def _rows_per_primary(client: IgniteClient, cache: str) -> dict[uuid.UUID, int]:
    """Rows of ``cache`` per primary node, as the nodes report them: each partition scanned on its primary."""
    pmap = client.partition_map(cache, refresh=True)
    per_partition: Counter[int] = Counter()
    for position, page in client.cache(cache).scan_partitions(range(pmap.partitions), page_size=4096):
        per_partition[position] += page.row_count
    out: Counter[uuid.UUID] = Counter()
    for p, rows in per_partition.items():
        node = pmap.primary(p)
        assert node is not None, f"partition {p} of {cache!r} has no primary"
        out[node] += rows
    return dict(out)


def _put_all_bytes(before: ClientStats, after: ClientStats) -> tuple[dict[uuid.UUID | None, int], dict[uuid.UUID | None, int]]:
    """Bytes and put-all requests sent per node between two snapshots (connections that stayed open)."""
    old = before.by_node()
    sent: dict[uuid.UUID | None, int] = {}
    puts: dict[uuid.UUID | None, int] = {}
    for node, s in after.by_node().items():
        prev = old.get(node)
        sent[node] = s.bytes_sent - (prev.bytes_sent if prev is not None else 0)
        puts[node] = s.ops.get(Op.CACHE_PUT_ALL, 0) - (prev.ops.get(Op.CACHE_PUT_ALL, 0) if prev is not None else 0)
    return sent, puts


def _assert_bytes_follow_primaries(client: IgniteClient, cache: str, before: ClientStats, after: ClientStats,
                                   rows: int, payload: int) -> None:
    """Every node received the put-all bytes of exactly the rows it is primary of.

    ``payload`` is the write's put-all bytes in all (``WriteResult.bytes_sent``);
    all rows encode to the same size, so a node's share of the bytes is its share
    of the rows.  Besides put-alls a write sends a few small requests (type,
    schema record, capacity figures) through one connection: 64 KiB of slack.
    """
    expected_rows = _rows_per_primary(client, cache)
    assert sum(expected_rows.values()) == rows
    assert len(expected_rows) == 3, f"the rows are not spread over 3 primaries: {expected_rows}"
    sent, puts = _put_all_bytes(before, after)
    for node, n in expected_rows.items():
        want = payload * n / rows
        got = sent.get(node, 0)
        assert puts.get(node, 0) > 0 and abs(got - want) <= 0.01 * payload + (64 << 10), (
            f"node {node}: primary of {n} of {rows} rows, so ~{want:,.0f} bytes of put-alls expected; it got "
            f"{got:,} bytes in {puts.get(node, 0)} put-all(s). Bytes per node: {sent}; put-alls per node: {puts}")


@pytest.mark.cluster
@pytest.mark.parametrize("keys", ["row-index", "string-keys"])
def test_write_sends_each_batch_to_the_primary_of_its_keys(ignite_cluster: LocalCluster, cache_name: str,
                                                          keys: str) -> None:
    n = 30_000
    data: dict[str, np.ndarray] = {"x": np.arange(n, dtype=np.float32), "v": np.ones((n, 16), np.int32)}
    key = None
    if keys == "string-keys":  # the generic encoder (string keys); equal lengths: every row the same size
        data["id"] = np.array([f"row-{i:07d}" for i in range(n)], dtype=object)
        key = "id"
    with IgniteClient(ignite_cluster.addresses()) as client:
        before = client.stats()
        result = write(cache_name, data, client=client, key=key, backups=1, sql=False, batch_bytes=256 << 10)
        after = client.stats()
        assert result.rows == n
        _assert_bytes_follow_primaries(client, cache_name, before, after, n, result.bytes_sent)


@pytest.mark.cluster
@pytest.mark.parametrize("kind", ["long", "string"])
def test_single_key_operations_go_to_the_primary_of_their_key(ignite_cluster: LocalCluster, cache_name: str,
                                                             kind: str) -> None:
    keys: list[int | str] = list(range(90)) if kind == "long" else [f"key-{i}" for i in range(90)]
    with IgniteClient(ignite_cluster.addresses()) as client:
        cache = client.get_or_create_cache(CacheConfiguration(cache_name, backups=1))
        for node_id in _live_node_ids(ignite_cluster):  # a connection to every node before counting
            client.connection_for_node(node_id)

        def requests_per_node(op: Op, action: Callable[[int | str], object]) -> dict[uuid.UUID | None, int]:
            before = client.stats().requests(op)
            for k in keys:
                action(k)
            after = client.stats().requests(op)
            return {node: c - before.get(node, 0) for node, c in after.items() if c - before.get(node, 0)}

        puts = requests_per_node(Op.CACHE_PUT, lambda k: cache.put(k, f"value of {k}"))
        expected = _rows_per_primary(client, cache_name)  # what each node holds as primary, by its own scan
        assert sum(expected.values()) == len(keys) and len(expected) == 3, expected
        assert puts == expected
        values: dict[int | str, object] = {}
        assert requests_per_node(Op.CACHE_GET, lambda k: values.__setitem__(k, cache.get(k))) == expected
        assert values == {k: f"value of {k}" for k in keys}
        assert requests_per_node(Op.CACHE_CONTAINS_KEY, cache.contains_key) == expected
        assert requests_per_node(Op.CACHE_REMOVE_KEY, cache.remove_key) == expected
        assert cache.size() == 0


@pytest.fixture
def three_nodes(tmp_path: Path) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path / "nodes", nodes=3, name="tfi-routing", heap_mb=384, region_mb=256)
    try:
        cluster.start()
        yield cluster
    finally:
        close_shared_clients()  # the shared client points at these nodes
        cluster.stop()


def _live_node_ids(cluster: LocalCluster) -> set[uuid.UUID]:
    with IgniteClient(cluster.addresses()) as probe:
        return {n.node_id for n in probe.server_nodes()}


def _scan_everything(client: IgniteClient, cache: str) -> tuple[int, dict[uuid.UUID | None, int], dict[uuid.UUID, int]]:
    """Rows of a scan of every partition, the scan requests it sent per node, and the partitions per primary."""
    pmap = client.partition_map(cache, refresh=True)
    before = client.stats().requests(Op.QUERY_SCAN)
    rows = sum(page.row_count for _, page in client.cache(cache).scan_partitions(range(pmap.partitions)))
    after = client.stats().requests(Op.QUERY_SCAN)
    scans = {n: c - before.get(n, 0) for n, c in after.items() if c - before.get(n, 0)}
    owned = Counter(n for n in pmap.nodes if n is not None)
    return rows, scans, dict(owned)


@pytest.mark.slow
@pytest.mark.parametrize("victim", [
    pytest.param(2, id="other-node", marks=pytest.mark.long_only(
        "test_restarted_node_is_connected_again_and_serves_its_partitions[first-seed]: the harder case (the "
        "node the client was given, through which it asks maps and endpoints)")),
    pytest.param(0, id="first-seed"),
])
def test_restarted_node_is_connected_again_and_serves_its_partitions(three_nodes: LocalCluster, cache_name: str,
                                                                     victim: int) -> None:
    """The soak saw the shared client's connections go 3 -> 2 -> 1 as nodes were killed and stay there
    after they came back: a restarted node must get its connection and its primaries' requests back."""
    seeds = ",".join(f"{h}:{p}" for h, p in three_nodes.addresses())
    client = ConnectionOptions.from_address(seeds).connect()  # the process's shared client, as write uses
    rows = 6_000
    write(cache_name, {"x": np.arange(rows, dtype=np.float64)}, host=seeds, backups=1, sql=False)

    got, scans, owned = _scan_everything(client, cache_name)
    assert got == rows and scans == owned, (scans, owned)
    assert client.stats().connections_per_node() == {n: 1 for n in _live_node_ids(three_nodes)}

    # Kill another node (the default connection stays up) or the first seed (the default connection is
    # the one that dies), read on two nodes.
    three_nodes.kill_node(victim)
    wait_rebalanced(three_nodes, cache_name, rows)
    got, _, _ = _scan_everything(client, cache_name)
    assert got == rows

    three_nodes.restart_nodes([victim])
    wait_rebalanced(three_nodes, cache_name, rows)
    live = _live_node_ids(three_nodes)
    assert len(live) == 3
    # The client learns of the new topology from the "topology changed" flag of its next answers:
    # ask something (a size) so that an answer can carry it.
    wait_for(lambda: client.cache(cache_name).size() == rows and set(client.partition_map(cache_name).nodes) == live,
             60, "the shared client's partition map to name the restarted node")
    got, scans, owned = _scan_everything(client, cache_name)
    assert got == rows
    assert scans == owned, (
        f"scan requests per node {scans} differ from the primaries' partition counts {owned}: the restarted "
        f"node's partitions went elsewhere")
    per_node = client.stats().connections_per_node()
    assert per_node == {n: 1 for n in live}, (
        f"open connections per node {per_node}; expected one to each live node {sorted(map(str, live))}")

    # write through the same shared client reaches the restarted node too.
    before = client.stats()
    more = write(cache_name, {"x": np.arange(rows, 2 * rows, dtype=np.float64)}, host=seeds, mode="append",
                 sql=False, batch_bytes=64 << 10)
    after = client.stats()
    assert more.rows == rows
    _, puts = _put_all_bytes(before, after)
    assert set(puts) >= live and all(puts[n] > 0 for n in live), f"put-alls per node after the restart: {puts}"
