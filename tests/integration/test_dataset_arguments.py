"""IgniteDataset arguments given as scalar tensors: eager, graph, and one dataset per element."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

import pytest
import tensorflow as tf

from tensorflow_ignite import IgniteDataset
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.errors import ConfigurationError
from tensorflow_ignite.local.cluster import LocalCluster

ROWS = 600


@pytest.fixture
def filled(ignite_cluster: LocalCluster, cache_name: str) -> Iterator[IgniteClient]:
    """A client of the three-node cluster, and ``cache_name`` holding keys 0..ROWS-1 (value: key * 10)."""
    with IgniteClient(ignite_cluster.addresses()[0]) as client:
        client.get_or_create_cache(cache_name).put_all({i: i * 10 for i in range(ROWS)})
        yield client


def _keys(ds: tf.data.Dataset) -> Counter[int]:
    return Counter(int(e["key"]) for e in ds.as_numpy_iterator())


def test_partitions_interleaved_read_every_row_once(ignite_cluster: LocalCluster, filled: IgniteClient,
                                                     cache_name: str) -> None:
    host, port = ignite_cluster.address()
    partitions = filled.partition_map(cache_name).partitions
    assert partitions > 1
    rows = tf.data.Dataset.range(partitions).interleave(
        lambda p: IgniteDataset(cache_name, host, port, part=p, page_size=tf.constant(64)),
        cycle_length=4, num_parallel_calls=2)
    got = _keys(rows)
    assert got == Counter(range(ROWS))
    # A second epoch reads the same rows again (each iterator rebuilds its partition's read).
    assert _keys(rows) == got


def test_host_strings_with_local_scans_read_every_row_once(ignite_cluster: LocalCluster, filled: IgniteClient,
                                                           cache_name: str) -> None:
    hosts = tf.data.Dataset.from_tensor_slices([f"{h}:{p}" for h, p in ignite_cluster.addresses()])
    assert hosts.cardinality() == 3
    rows = hosts.flat_map(lambda h: IgniteDataset(cache_name, host=h, local=True, client=filled))
    assert _keys(rows) == Counter(range(ROWS))


def test_host_and_port_tensors_in_map(ignite_cluster: LocalCluster, filled: IgniteClient, cache_name: str) -> None:
    hosts, ports = zip(*ignite_cluster.addresses())
    nodes = tf.data.Dataset.from_tensor_slices((list(hosts), list(ports)))
    per_node = nodes.map(lambda h, p: IgniteDataset(cache_name, h, p, local=tf.constant(True), client=filled)
                         .reduce(tf.constant(0, tf.int64), lambda n, _: n + 1))
    counts = list(per_node.as_numpy_iterator())
    assert len(counts) == 3 and sum(counts) == ROWS


def test_eager_tensors_are_values(ignite_cluster: LocalCluster, filled: IgniteClient, cache_name: str) -> None:
    host, port = ignite_cluster.address()
    whole = IgniteDataset(tf.constant(cache_name), tf.constant(host), tf.constant(port, tf.int32),
                          local=tf.constant(False), part=tf.constant(-1), page_size=tf.constant(100, tf.int64))
    assert _keys(whole) == Counter(range(ROWS))
    one = _keys(IgniteDataset(cache_name, host, port, part=tf.constant(3)))
    assert one and one == _keys(IgniteDataset(cache_name, host, port, part=3))


def test_in_tf_function(ignite_cluster: LocalCluster, filled: IgniteClient, cache_name: str) -> None:
    host, port = ignite_cluster.address()

    @tf.function
    def total(part: tf.Tensor) -> tf.Tensor:
        ds = IgniteDataset(cache_name, host, port, part=part)
        return ds.reduce(tf.constant(0, tf.int64), lambda n, e: n + e["key"])

    parts = filled.partition_map(cache_name).partitions
    read = 0
    for p in range(0, parts, 37):  # one trace, a read per call of the partition the call names
        expected = _keys(IgniteDataset(cache_name, host, port, part=p))
        assert int(total(tf.constant(p, tf.int64))) == sum(k * n for k, n in expected.items())
        read += sum(expected.values())
    assert read > 0
    assert int(total(tf.constant(-1, tf.int64))) == sum(range(ROWS))
    assert total.experimental_get_tracing_count() == 1


def test_wrong_tensors_are_typed_errors(ignite_cluster: LocalCluster, filled: IgniteClient, cache_name: str) -> None:
    host, port = ignite_cluster.address()
    with pytest.raises(TypeError, match="'part'.*integer.*float32"):
        IgniteDataset(cache_name, host, port, part=tf.constant(1.0))
    with pytest.raises(TypeError, match="'host'.*tf.string.*int32"):
        IgniteDataset(cache_name, tf.constant(1), port)
    with pytest.raises(ConfigurationError, match="'part' must be a scalar.*interleave"):
        IgniteDataset(cache_name, host, port, part=tf.constant([1, 2]))
    # (not converted by autograph, which would re-raise the error as its own StagingError)
    plain = tf.autograph.experimental.do_not_convert
    with pytest.raises(ConfigurationError, match="'part' must be a scalar"):
        tf.data.Dataset.range(2).batch(2).interleave(plain(lambda p: IgniteDataset(cache_name, host, port, part=p)))
    with pytest.raises(ConfigurationError, match="pass client="):
        tf.data.Dataset.from_tensor_slices([host]).interleave(plain(lambda h: IgniteDataset(cache_name, h, port)))
    with pytest.raises(ConfigurationError, match="cache name as a Python string"):
        tf.data.Dataset.from_tensor_slices([cache_name]).interleave(plain(lambda c: IgniteDataset(c, host, port)))


def test_values_that_name_nothing_fail_when_read(ignite_cluster: LocalCluster, filled: IgniteClient,
                                                 cache_name: str) -> None:
    host, port = ignite_cluster.address()
    parts = filled.partition_map(cache_name).partitions
    bad = tf.data.Dataset.from_tensors(tf.constant(parts, tf.int64)).interleave(
        lambda p: IgniteDataset(cache_name, host, port, part=p))
    with pytest.raises(tf.errors.InvalidArgumentError, match=f"partition {parts} does not exist"):
        list(bad)
    zero = tf.data.Dataset.from_tensors(tf.constant(0, tf.int64)).interleave(
        lambda s: IgniteDataset(cache_name, host, port, page_size=s))
    with pytest.raises(tf.errors.InvalidArgumentError, match="page_size must be positive"):
        list(zero)
