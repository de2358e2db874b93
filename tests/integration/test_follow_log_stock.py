"""The follow log on stock Apache Ignite nodes configured the way users configure theirs.

Two stock nodes (2.17 by default: ``CommandLineStartup`` and a Spring XML file holding the
module's fragment with ``--follow-log``, i.e. what ``ignite-tf module config --follow-log
CACHE`` prints; 2.18 is configured in Java) keep the follow log of one cache with one backup.
A follower restored from a checkpoint yields every update after its position exactly once, and
so does a follower whose query's node is killed or while a third node joins (the writer, the
check, the kill and the join are those of ``test_dataset_follow_log.py``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest
import tensorflow as tf

from tensorflow_ignite import IgniteDataset
from tensorflow_ignite.cli.main import main as cli
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.data.dataset import close_shared_clients
from tensorflow_ignite.data.follow_log import ATTRIBUTE as FOLLOW_LOG_ATTRIBUTE
from tensorflow_ignite.local.stock import StockCluster
from tensorflow_ignite.testing.waiting import wait_for

from .test_dataset_follow_log import (KEYS, SeqWriter, a_node_joining_each_update_once, assert_each_update_once,
                                      create_seq_cache, kill_the_query_holder_each_update_once)

CACHE = "tf_follow_log_stock"
KILL_CACHE = "tf_follow_log_stock_kill"
JOIN_CACHE = "tf_follow_log_stock_join"
FOLLOWED = f"{CACHE},{KILL_CACHE},{JOIN_CACHE}"


@pytest.fixture(scope="module")
def logging_stock_nodes(tmp_path_factory: pytest.TempPathFactory, ignite_version: str) -> Iterator[StockCluster]:
    cluster = StockCluster(tmp_path_factory.mktemp("follow-log-stock"), nodes=2, name="tfi-follow-log-stock",
                           ignite_version=ignite_version, heap_mb=384, region_mb=256,
                           follow_log=(CACHE, KILL_CACHE, JOIN_CACHE),
                           follow_log_retention_s=600)
    try:
        cluster.start()
        yield cluster
    finally:
        close_shared_clients()
        cluster.stop()


def test_the_nodes_xml_is_what_module_config_prints(logging_stock_nodes: StockCluster,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The nodes' XML holds the follow-log attribute and service ``ignite-tf module config --follow-log`` prints
    (nodes of a version configured in Java: every server node carries the attribute naming the cache)."""
    with IgniteClient(logging_stock_nodes.addresses(), timeout=20) as client:
        servers = [n for n in client.server_nodes() if not n.is_client]
    assert len(servers) == 2 and all(n.attributes.get(FOLLOW_LOG_ATTRIBUTE) == FOLLOWED
                                     for n in servers), \
        [n.attributes.get(FOLLOW_LOG_ATTRIBUTE) for n in servers]
    if not logging_stock_nodes.xml_config:
        return
    assert cli(["module", "config", "--follow-log", FOLLOWED, "--follow-log-retention", "10m"]) == 0
    printed = [line.strip() for line in capsys.readouterr().out.splitlines()]
    xml = [line.strip() for line in Path(logging_stock_nodes.members[0].config_file).read_text().splitlines()]
    first = printed.index("<!-- The follow log (IgniteDataset.follow's exactly-once resume): every update of the caches")
    service = printed[first:printed.index("</list>", first) - 1]
    assert '<property name="retentionSeconds" value="600"/>' in service
    assert any(xml[i:i + len(service)] == service for i in range(len(xml))), "the printed service, verbatim"
    assert f'<entry key="tensorflow-ignite.follow-log" value="{FOLLOWED}"/>' in xml


def test_restored_follower_yields_each_update_after_its_position_once(logging_stock_nodes: StockCluster,
                                                                     tmp_path: Path) -> None:
    cluster = logging_stock_nodes
    host, port = cluster.address()
    with IgniteClient(cluster.addresses(), timeout=20) as client:
        create_seq_cache(client, CACHE)
    ds = IgniteDataset.follow(CACHE, host, port, batch_size=16, max_wait=0.05)
    it = iter(ds)
    before: dict[int, list[int]] = defaultdict(list)
    delivered = 0
    writer: SeqWriter | None = None
    for batch in it:
        for k, s in zip(batch["key"].numpy().tolist(), batch["val"]["seq"].numpy().tolist()):
            before[k].append(s)
        delivered += len(batch["key"])
        if writer is None and delivered >= KEYS:  # the snapshot was delivered with nothing written meanwhile
            writer = SeqWriter(cluster.addresses(), CACHE)
        if delivered >= KEYS + 200:
            break
    assert writer is not None and ds.stats.mode == "log", ds.stats
    path = tf.train.Checkpoint(iterator=it).write(str(tmp_path / "ckpt"))
    del it  # the follower stops here; the writer goes on while nobody follows
    at_stop = writer.writes
    wait_for(lambda: writer.writes >= at_stop + 200, 60, "updates written while nobody follows")

    restored = IgniteDataset.follow(CACHE, host, port, batch_size=16, max_wait=0.05, stream_timeout=8.0)
    it2 = iter(restored)
    tf.train.Checkpoint(iterator=it2).read(path).assert_consumed()
    after: dict[int, list[int]] = defaultdict(list)
    delivered = 0
    last: dict[int, int] | None = None
    for batch in it2:
        for k, s in zip(batch["key"].numpy().tolist(), batch["val"]["seq"].numpy().tolist()):
            after[k].append(s)
        delivered += len(batch["key"])
        if last is None and delivered >= 400:
            last = writer.stop()  # the iterator ends stream_timeout seconds after the last update
    if last is None:
        last = writer.stop()
    assert restored.stats.mode == "log" and restored.stats.resyncs == [], restored.stats
    assert restored.stats.scanned_rows == 0 and restored.stats.caught_up_rows > 0, restored.stats
    assert_each_update_once(before, after, last, writer.retried, f"stock {cluster.ignite_version}: after a restore")


def test_kill_of_the_node_holding_the_query_each_update_once(logging_stock_nodes: StockCluster) -> None:
    """kill -9 of the stock node holding the follower's query (one of two, backups=1): the follower
    registers again on the other and reads the gap from its follow log, each update once."""
    kill_the_query_holder_each_update_once(logging_stock_nodes, KILL_CACHE, 16, 0.05)


def test_a_stock_node_joining_each_update_once(logging_stock_nodes: StockCluster) -> None:
    """A third stock node (the same XML) joins while a writer writes: the cache and its follow log
    rebalance to it, and each update arrives once. Last in this module: the cluster keeps three nodes."""
    a_node_joining_each_update_once(logging_stock_nodes, JOIN_CACHE)
