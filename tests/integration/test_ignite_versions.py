"""The core of tensorflow-ignite against every tested Ignite release (2.16, 2.17, 2.18).

Each test runs on a 3-node ``stock_cluster`` of one version: stock
``CommandLineStartup`` nodes with Spring XML for 2.16 and 2.17, nodes configured in
Java for 2.18 (no ``ignite-spring`` 2.18.0 on Maven Central).  The bodies are the
suite's own tests of the dataset, ``ignite://`` and the launcher, run unchanged
on that cluster, so "works on 2.16" means the same assertions as on our nodes.

CI runs the newest release only (the marker below); ``make compat`` runs every
version (``--ignite-versions all``) and prints a table of the results.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.local.stock import NEWEST_VERSION, StockCluster
from tensorflow_ignite.protocol import requests, responses
from tensorflow_ignite.protocol.codes import Op, TypeCode

from . import test_dataset as dataset_tests
from . import test_dataset_roundtrip as roundtrip_tests
from . import test_dataset_types as type_tests
from . import test_fs_tensorflow as fs_tests
from . import test_launcher_jobs as launcher_tests

pytestmark = pytest.mark.ignite_versions(NEWEST_VERSION)


@pytest.fixture(scope="module")
def cluster_client(stock_cluster: StockCluster) -> Iterator[IgniteClient]:
    with IgniteClient(stock_cluster.addresses()[0]) as client:
        yield client


@pytest.fixture
def base(stock_cluster: StockCluster, request: pytest.FixtureRequest) -> Iterator[str]:
    host, port = stock_cluster.address()
    uri = f"ignite://{host}:{port}/{request.node.name.replace('[', '_').rstrip(']')}"
    yield uri
    if fs_tests.gfile.exists(uri):
        fs_tests.gfile.rmtree(uri)


def test_servers_run_that_version(cluster_client: IgniteClient, ignite_version: str) -> None:
    """Asked over the thin client, every server reports the release under test."""
    ids = responses.decode_node_ids(cluster_client.request(
        lambda rid: requests.cluster_group_get_node_ids(rid, server_nodes=True), Op.CLUSTER_GROUP_GET_NODE_IDS))
    nodes = responses.decode_node_info(cluster_client.request(
        lambda rid: requests.cluster_group_get_node_info(rid, ids.node_ids), Op.CLUSTER_GROUP_GET_NODE_INFO))
    assert len(nodes) == 3
    assert {f"{n.version.major}.{n.version.minor}.{n.version.maintenance}" for n in nodes} == {ignite_version}


# ------------------------------------------------------------------ dataset
def test_dataset_write_then_read_every_dtype(stock_cluster: StockCluster, cache_name: str) -> None:
    roundtrip_tests.test_write_then_read_every_dtype(stock_cluster, cache_name)


def test_dataset_every_type_written_by_java(stock_cluster: StockCluster, cache_name: str) -> None:
    type_tests.test_every_type_written_by_java(stock_cluster, cache_name)


def test_dataset_partition_scans_go_to_primaries(stock_cluster: StockCluster, cluster_client: IgniteClient,
                                                 cache_name: str) -> None:
    dataset_tests.test_partition_scans_go_to_primaries(stock_cluster, cluster_client, cache_name)


def test_dataset_one_scan_per_node(stock_cluster: StockCluster, cluster_client: IgniteClient,
                                   cache_name: str) -> None:
    dataset_tests.test_whole_cache_is_read_with_one_scan_per_node(stock_cluster, cluster_client, cache_name,
                                                                  TypeCode.LONG)


# -------------------------------------------------------------- ignite://
def test_fs_gfile_api(base: str) -> None:
    fs_tests.test_gfile_api(base)


def test_fs_checkpoints(base: str) -> None:
    fs_tests.test_checkpoint_manager_max_to_keep_and_async(base)


# ----------------------------------------------------------------- launcher
def test_launcher_job_reads_each_row_exactly_once(stock_cluster: StockCluster, cache_name: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    launcher_tests.test_gradients_job_reads_each_row_exactly_once(stock_cluster, cache_name, capsys)
