"""IgniteDataset in tf.data's own machinery: distribution strategies, save/load, snapshot, cardinality."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from collections.abc import Iterator

import pytest
import tensorflow as tf

from tensorflow_ignite import IgniteDataset
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.errors import ConfigurationError
from tensorflow_ignite.local.cluster import LocalCluster


@pytest.fixture
def client(ignite_node: LocalCluster) -> Iterator[IgniteClient]:
    with IgniteClient(ignite_node.addresses()) as c:
        yield c


def test_distribution_strategies_do_not_shard_a_share_again(ignite_node: LocalCluster, client: IgniteClient,
                                                           cache_name: str) -> None:
    """What MultiWorkerMirroredStrategy's ``experimental_distribute_dataset`` does to each worker's dataset.

    A worker reading its share of the partitions (``parts``, as launcher
    workers do) keeps every row of it; a dataset over the whole cache is cut by
    rows (``DATA``), so the workers together still read every row once (left to
    ``AUTO``, TensorFlow did not shard the bare source op at all).
    """
    from tensorflow.python.distribute.input_ops import auto_shard_dataset

    client.get_or_create_cache(cache_name).put_all({i: float(i) for i in range(600)})
    host, port = ignite_node.address()
    partitions = client.partition_map(cache_name).partitions
    shares = [list(range(0, partitions, 2)), list(range(1, partitions, 2))]
    seen: Counter[int] = Counter()
    for index, share in enumerate(shares):
        ds = IgniteDataset(cache_name, host, port, parts=share)
        assert ds.options().experimental_distribute.auto_shard_policy == tf.data.experimental.AutoShardPolicy.OFF
        alone = sorted(int(e["key"]) for e in ds.as_numpy_iterator())
        sharded = auto_shard_dataset(ds, num_shards=2, index=index, num_replicas_in_sync=2)
        assert sorted(int(e["key"]) for e in sharded.as_numpy_iterator()) == alone
        seen.update(alone)
    assert sorted(seen) == list(range(600)) and set(seen.values()) == {1}

    whole: Counter[int] = Counter()
    for index in range(2):
        ds = IgniteDataset(cache_name, host, port, batch_size=50)
        assert ds.options().experimental_distribute.auto_shard_policy == tf.data.experimental.AutoShardPolicy.DATA
        # No prefetch is injected behind the reader (see _shard_options): the user's pipeline decides.
        assert ds.options().experimental_optimization.inject_prefetch is False
        part = [int(k) for b in auto_shard_dataset(ds, 2, index, 2).as_numpy_iterator() for k in b["key"]]
        assert 0 < len(part) < 600
        whole.update(part)
    assert sorted(whole) == list(range(600)) and set(whole.values()) == {1}


def test_save_then_load_in_a_fresh_process(ignite_node: LocalCluster, client: IgniteClient, cache_name: str,
                                           tmp_path) -> None:
    client.get_or_create_cache(cache_name).put_all({i: float(i) / 2 for i in range(500)})
    host, port = ignite_node.address()
    IgniteDataset(cache_name, host, port).save(str(tmp_path / "saved"))
    code = ("import sys, tensorflow as tf\n"
            "ds = tf.data.Dataset.load(sys.argv[1])\n"
            "print(sorted((int(e['key']), float(e['val'])) for e in ds.as_numpy_iterator()) == "
            "[(i, i / 2) for i in range(500)], ds.element_spec['key'].dtype.name)\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "saved")], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "int64"]


def test_snapshot_serves_later_epochs_without_the_cache(ignite_node: LocalCluster, client: IgniteClient,
                                                        cache_name: str, tmp_path) -> None:
    cache = client.get_or_create_cache(cache_name)
    cache.put_all({i: float(i) for i in range(400)})
    host, port = ignite_node.address()
    ds = IgniteDataset(cache_name, host, port, batch_size=64).snapshot(str(tmp_path / "snap"))
    first = sorted(int(k) for b in ds.as_numpy_iterator() for k in b["key"])
    assert first == list(range(400))
    client.destroy_cache(cache_name)  # the second epoch can only come from the snapshot
    second = sorted(int(k) for b in ds.as_numpy_iterator() for k in b["key"])
    assert second == first


def test_known_cardinality(ignite_node: LocalCluster, client: IgniteClient, cache_name: str) -> None:
    cache = client.get_or_create_cache(cache_name)
    cache.put_all({i: float(i) for i in range(600)})
    host, port = ignite_node.address()
    assert IgniteDataset(cache_name, host, port).cardinality() == tf.data.UNKNOWN_CARDINALITY
    rows = IgniteDataset(cache_name, host, port, known_cardinality=True)
    assert rows.cardinality() == 600 and len(list(rows)) == 600
    batches = IgniteDataset(cache_name, host, port, batch_size=64, known_cardinality=True)
    assert batches.cardinality() == 10 and len(list(batches)) == 10
    exact = IgniteDataset(cache_name, host, port, batch_size=64, drop_remainder=True, known_cardinality=True)
    assert exact.cardinality() == 9 and len(list(exact)) == 9
    cache.put_all({i: float(i) for i in range(600, 700)})  # the cache grew after the count
    with pytest.raises(tf.errors.FailedPreconditionError, match="expected to contain 10 elements"):
        list(batches)
    with pytest.raises(ConfigurationError, match="whole cache"):
        IgniteDataset(cache_name, host, port, parts=[0, 1], known_cardinality=True)


def _keys(it) -> list[int]:  # type: ignore[no-untyped-def]
    return [int(k) for b in it for k in b["key"].numpy()]


def test_seeded_shuffle_is_reproducible_and_resumes_its_order(ignite_node: LocalCluster, client: IgniteClient,
                                                               cache_name: str, tmp_path) -> None:
    rows = 4000
    client.get_or_create_cache(cache_name).put_all({i: float(i) for i in range(rows)})
    host, port = ignite_node.address()
    parts = client.partition_map(cache_name).partitions
    assert parts == 1024  # long keys below 65536 live in partition key % 1024 (rendezvous affinity)

    def shuffled() -> IgniteDataset:
        return IgniteDataset(cache_name, host, port, batch_size=100, shuffle=True, seed=7)

    ds = shuffled()
    epoch0, epoch1 = _keys(iter(ds)), _keys(iter(ds))
    assert sorted(epoch0) == sorted(epoch1) == list(range(rows))
    assert epoch0 != epoch1  # each iterator is the next epoch
    order0 = list(dict.fromkeys(k % parts for k in epoch0))
    assert order0 != sorted(order0)  # partitions out of plan order
    again = shuffled()
    assert (_keys(iter(again)), _keys(iter(again))) == (epoch0, epoch1)  # same seed, same epochs
    other = _keys(iter(IgniteDataset(cache_name, host, port, batch_size=100, shuffle=True, seed=8)))
    assert other != epoch0 and sorted(other) == list(range(rows))

    # Saved mid-epoch, restored into a new dataset: the rest of epoch 0 in epoch 0's order.
    it = iter(shuffled())
    seen = [int(k) for _ in range(5) for k in next(it)["key"].numpy()]
    path = tf.train.Checkpoint(iterator=it).write(str(tmp_path / "ckpt"))
    restored = shuffled()
    it2 = iter(restored)
    tf.train.Checkpoint(iterator=it2).read(path).assert_consumed()
    rest = _keys(it2)
    assert sorted(seen + rest) == list(range(rows))
    started = {k % parts for k in seen}
    assert [k for k in rest if k % parts not in started] == [k for k in epoch0 if k % parts not in started]
    assert _keys(iter(restored)) == epoch1  # the next iterator goes on with epoch 1

    with pytest.raises(ConfigurationError, match="one reader"):
        IgniteDataset(cache_name, host, port, shuffle=True, num_parallel_reads=2)
