"""IgniteDataset against real Ignite nodes."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator

import numpy as np
import pytest
import tensorflow as tf

from tensorflow_ignite import IgniteDataset
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.errors import (
    AuthenticationError,
    CacheNotFoundError,
    HandshakeError,
    SchemaError,
    TLSError,
)
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.protocol.codes import Op
from tensorflow_ignite.protocol.hashing import field_id, type_id
from tensorflow_ignite.protocol.values import BinaryField, BinaryObject, BinaryType, Int32
from tensorflow_ignite.protocol.codes import TypeCode


@pytest.fixture
def client(ignite_node: LocalCluster) -> Iterator[IgniteClient]:
    with IgniteClient(ignite_node.addresses()) as c:
        yield c


@pytest.fixture(scope="module")
def cluster_client(ignite_cluster: LocalCluster) -> Iterator[IgniteClient]:
    with IgniteClient(ignite_cluster.addresses()[0]) as c:
        yield c


def _people(n: int) -> dict[int, BinaryObject]:
    return {
        i: BinaryObject("Person", {"name": f"p{i}", "age": Int32(i), "score": i / 2.0})
        for i in range(n)
    }


def test_seed_shaped_element(ignite_node: LocalCluster, client: IgniteClient, cache_name: str) -> None:
    client.get_or_create_cache(cache_name).put(1, BinaryObject("Kitten", {"NAME": "WARM KITTY"}))
    host, port = ignite_node.address()
    elements = list(IgniteDataset(cache_name, host, port).as_numpy_iterator())
    assert elements == [{"key": 1, "val": {"NAME": b"WARM KITTY"}}]


def test_scalar_keys_and_values(ignite_node: LocalCluster, client: IgniteClient, cache_name: str) -> None:
    client.get_or_create_cache(cache_name).put_all({i: f"v{i}" for i in range(50)})
    host, port = ignite_node.address()
    ds = IgniteDataset(cache_name, host, port)
    assert ds.element_spec == {"key": tf.TensorSpec((), tf.int64), "val": tf.TensorSpec((), tf.string)}
    got = {int(e["key"]): e["val"].decode() for e in ds.as_numpy_iterator()}
    assert got == {i: f"v{i}" for i in range(50)}


def test_batches_and_remainder(ignite_node: LocalCluster, client: IgniteClient, cache_name: str) -> None:
    client.get_or_create_cache(cache_name).put_all(_people(103))
    host, port = ignite_node.address()
    sizes = [len(b["key"]) for b in IgniteDataset(cache_name, host, port, batch_size=10).as_numpy_iterator()]
    assert sorted(sizes) == [3] + [10] * 10
    dropped = IgniteDataset(cache_name, host, port, batch_size=10, drop_remainder=True)
    assert [len(b["key"]) for b in dropped.as_numpy_iterator()] == [10] * 10
    assert dropped.element_spec["val"]["age"].shape.as_list() == [10]


def test_empty_cache_with_known_type(ignite_node: LocalCluster, client: IgniteClient, cache_name: str) -> None:
    tname = f"Empty_{cache_name}"
    bt = BinaryType(type_id(tname), tname, {
        "label": BinaryField("label", TypeCode.INT, field_id("label")),
        "pixels": BinaryField("pixels", TypeCode.BYTE_ARR, field_id("pixels")),
    })
    client.put_binary_type(bt)
    client.get_or_create_cache(cache_name)
    host, port = ignite_node.address()
    ds = IgniteDataset(cache_name, host, port, value_type=tname)
    assert list(ds) == []
    assert ds.element_spec["val"]["label"] == tf.TensorSpec((), tf.int32)
    # Variable-length arrays: ragged rows (a ragged_rank-0 spec per element after unbatch).
    assert ds.element_spec["val"]["pixels"] == tf.RaggedTensorSpec([None], tf.uint8, 0, tf.int64)


def test_empty_untyped_cache_is_a_clear_error(ignite_node: LocalCluster, client: IgniteClient,
                                               cache_name: str) -> None:
    client.get_or_create_cache(cache_name)
    host, port = ignite_node.address()
    with pytest.raises(SchemaError, match=rf"cache '{cache_name}' is empty.*value_type="):
        IgniteDataset(cache_name, host, port)


def test_missing_cache_is_a_clear_error(ignite_node: LocalCluster) -> None:
    host, port = ignite_node.address()
    with pytest.raises(CacheNotFoundError, match="cache 'no_such_cache' does not exist"):
        IgniteDataset("no_such_cache", host, port)


def test_part_parts_and_env(ignite_node: LocalCluster, client: IgniteClient, cache_name: str,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    client.get_or_create_cache(cache_name).put_all(_people(300))
    host, port = ignite_node.address()
    pmap = client.partition_map(cache_name)
    full = sorted(int(e["key"]) for e in IgniteDataset(cache_name, host, port).as_numpy_iterator())
    assert full == list(range(300))
    by_part = {p: sorted(int(e["key"]) for e in IgniteDataset(cache_name, host, port, part=p).as_numpy_iterator())
               for p in range(0, pmap.partitions, 97)}
    assert all(len(set(a) & set(b)) == 0 for pa, a in by_part.items() for pb, b in by_part.items() if pa != pb)
    some = [p for p, ks in by_part.items() if ks][:3]
    want = sorted(k for p in some for k in by_part[p])
    assert sorted(int(e["key"]) for e in IgniteDataset(cache_name, host, port, parts=some)) == want

    # Environment overrides beat arguments (host/port too: the arguments here are wrong).
    monkeypatch.setenv("IGNITE_DATASET_HOST", host)
    monkeypatch.setenv("IGNITE_DATASET_PORT", str(port))
    monkeypatch.setenv("IGNITE_DATASET_PART", str(some[0]))
    monkeypatch.setenv("IGNITE_DATASET_PAGE_SIZE", "2")
    ds = IgniteDataset(cache_name, "192.0.2.1", 1)
    assert sorted(int(e["key"]) for e in ds) == by_part[some[0]]
    assert ds.stats.page_rows == 2
    monkeypatch.setenv("IGNITE_DATASET_PARTS", ",".join(map(str, some)))
    assert sorted(int(e["key"]) for e in IgniteDataset(cache_name, "192.0.2.1", 1)) == want
    monkeypatch.delenv("IGNITE_DATASET_PARTS")
    monkeypatch.delenv("IGNITE_DATASET_PART")
    monkeypatch.setenv("IGNITE_DATASET_LOCAL", "true")
    local = IgniteDataset(cache_name, "192.0.2.1", 1)
    assert local.plan.tasks[0].local
    assert sorted(int(e["key"]) for e in local) == full  # one node holds everything


def test_partition_scans_go_to_primaries(ignite_cluster: LocalCluster, cluster_client: IgniteClient,
                                         cache_name: str) -> None:
    cache = cluster_client.get_or_create_cache(cache_name)
    cache.put_all(_people(2000))
    host, port = ignite_cluster.address()
    with IgniteClient(f"{host}:{port}") as fresh:
        pmap = fresh.partition_map(cache_name)
        assert len(set(pmap.nodes)) == 3
        ds = IgniteDataset(cache_name, client=fresh, value_type="Person", page_size=64, num_parallel_reads=4)
        keys = [int(e["key"]) for e in ds.as_numpy_iterator()]
        assert len(keys) == 2000 and set(keys) == set(range(2000))  # every row exactly once
        expected = Counter(pmap.nodes)
        for node_id, conn in ((c.handshake.node_id, c) for c in fresh.connections()):
            assert conn.op_counts[Op.QUERY_SCAN] == expected[node_id], node_id
        assert sum(c.op_counts[Op.QUERY_SCAN] for c in fresh.connections()) == pmap.partitions


def test_partition_awareness_off_reads_everything_through_the_seed(
        ignite_cluster: LocalCluster, cluster_client: IgniteClient, cache_name: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Nodes behind NAT announce addresses the client cannot reach: the switch keeps every
    request on the seed connection, and the epoch is still complete."""
    cluster_client.get_or_create_cache(cache_name).put_all(_people(1500))
    host, port = ignite_cluster.address()
    monkeypatch.setenv("TF_IGNITE_PARTITION_AWARENESS", "off")
    with IgniteClient(f"{host}:{port}") as seed_only:
        assert not seed_only.partition_awareness
        ds = IgniteDataset(cache_name, client=seed_only, value_type="Person", batch_size=256)
        keys = sorted(int(k) for b in ds.as_numpy_iterator() for k in b["key"])
        assert keys == list(range(1500))
        assert [(c.host, c.port) for c in seed_only.connections()] == [(host, port)]
    monkeypatch.delenv("TF_IGNITE_PARTITION_AWARENESS")
    with IgniteClient(f"{host}:{port}") as aware:
        ds = IgniteDataset(cache_name, client=aware, value_type="Person", batch_size=256)
        assert sum(len(b["key"]) for b in ds.as_numpy_iterator()) == 1500
        assert len(aware.connections()) == 3  # the switch is what kept the other one on the seed


def test_local_scans_cover_cluster_once(ignite_cluster: LocalCluster, cluster_client: IgniteClient,
                                        cache_name: str) -> None:
    cluster_client.get_or_create_cache(cache_name).put_all(_people(500))
    seen: list[int] = []
    for host, port in ignite_cluster.addresses():
        seen += [int(e["key"]) for e in IgniteDataset(cache_name, host, port, local=True)]
    assert sorted(seen) == list(range(500))


def test_secure_node_settings(ignite_secure_node: LocalCluster, tmp_path) -> None:
    s = ignite_secure_node.client_settings()
    host, port = ignite_secure_node.address()
    with IgniteClient(f"{host}:{port}", **s) as c:
        c.get_or_create_cache("secure_ds").put_all({i: i * 10 for i in range(20)})
    ds = IgniteDataset("secure_ds", host, port, username=s["username"], password=s["password"],
                       certfile=s["certfile"], keyfile=s["keyfile"], cert_password=s["cert_password"],
                       cafile=s["cafile"])
    assert sorted(int(e["val"]) for e in ds) == [i * 10 for i in range(20)]
    # Secrets never reach the element spec or reprs (the key password is random;
    # the node's password is Ignite's default, equal to the user name).
    for text in (repr(ds.element_spec), repr(ds.connection), repr(ds.client.settings)):
        assert s["cert_password"] not in text
        assert "password=" not in text

    def fails_fast(exc: type[Exception], **kw) -> None:
        t0 = time.monotonic()
        with pytest.raises(exc):
            IgniteDataset("secure_ds", host, port, timeout=10, **kw)
        assert time.monotonic() - t0 < 10

    from tensorflow_ignite.local.tls import make_tls_material

    other = make_tls_material(tmp_path / "other")
    fails_fast(TLSError, **{**s, "cafile": str(other.ca_cert)})
    fails_fast(HandshakeError, username=s["username"], password=s["password"])  # plaintext to a TLS port
    fails_fast(AuthenticationError, **{**s, "password": "wrong"})


def test_from_sql(ignite_sql_node: LocalCluster, cache_name: str) -> None:
    host, port = ignite_sql_node.address()
    table = f"KITTENS_{abs(hash(cache_name)) % 10**6}"
    with IgniteClient(f"{host}:{port}") as c:
        c.sql(f"CREATE TABLE {table} (ID LONG PRIMARY KEY, NAME VARCHAR, WEIGHT DOUBLE)").execute()
        for i, name in enumerate(["WARM KITTY", "SOFT KITTY", "LITTLE BALL OF FUR"]):
            c.sql(f"INSERT INTO {table} (ID, NAME, WEIGHT) VALUES (?, ?, ?)", [i, name, 1.5 + i]).execute()
    ds = IgniteDataset.from_sql(f"SELECT NAME, WEIGHT FROM {table} WHERE WEIGHT > ? ORDER BY ID", [2.0],
                                host, port)
    rows = list(ds.as_numpy_iterator())
    assert rows == [{"NAME": b"SOFT KITTY", "WEIGHT": 2.5}, {"NAME": b"LITTLE BALL OF FUR", "WEIGHT": 3.5}]
    batched = IgniteDataset.from_sql(f"SELECT ID FROM {table}", host=host, port=port, batch_size=2)
    assert sorted(np.concatenate([b["ID"] for b in batched.as_numpy_iterator()]).tolist()) == [0, 1, 2]


@pytest.mark.parametrize("source", ["native", "generator"])
def test_reused_memory_never_changes_batches_already_handed_out(ignite_node: LocalCluster, cache_name: str,
                                                               source: str, monkeypatch) -> None:
    # Large rows go through the pooled receive buffers, the pooled page join and
    # pooled, 64-byte-aligned decode buffers that TensorFlow adopts without
    # copying (through the native source op or from_generator).  Every batch is
    # kept while the rest of the cache is read (and read again): if a buffer were
    # reused while a tensor still pointed into it, the batches read first would change.
    from tensorflow_ignite import write
    from tensorflow_ignite.native import data_source

    rows, width = 96, 300_000
    data = np.frombuffer(np.random.default_rng(7).bytes(rows * width), np.uint8).reshape(rows, width)
    host, port = ignite_node.address()
    write(cache_name, {"blob": data}, host=host, port=port, progress=False)
    monkeypatch.setenv("TF_IGNITE_DATASET_SOURCE", source)
    ds = IgniteDataset(cache_name, host, port, page_size=4, batch_size=6)
    assert data_source.uses_python_source(ds) == (source == "native")
    kept = list(ds) + list(ds)
    seen: Counter[int] = Counter()
    for batch in kept:
        for key, blob in zip(batch["key"].numpy().tolist(), batch["val"]["blob"].numpy()):
            assert np.array_equal(blob, data[key]), f"row {key} changed after it was handed out"
            seen[key] += 1
    assert seen == Counter({k: 2 for k in range(rows)})
    assert ds.stats.pooled_bytes > 0  # the pooled path was taken
    # The reader alone (NumPy batches), batches kept likewise: a reader of the dataset's plan,
    # scanning as it did, whose pool holds the buffers of an earlier pass.
    from tensorflow_ignite.data.reader import DEFAULT_PAGE_BYTES, PageSizer, ScanReader

    reader = ScanReader(ds.client, cache_name, ds.schema, ds.plan.tasks, PageSizer(4, DEFAULT_PAGE_BYTES))
    if ds.stats.scan_mode == "nodes":
        reader.node_scans, reader.partitions = True, ds.client.partition_map(cache_name).partitions
    for _ in reader.worker_batches(0, 1):
        pass
    assert reader.stats().pooled_bytes > 0
    kept_np = list(reader.worker_batches(0, 1))
    assert reader.stats().scan_mode == ds.stats.scan_mode
    got = {int(k): b for batch in kept_np for k, b in zip(batch["key"], batch["val"]["blob"])}
    assert len(got) == rows and all(np.array_equal(got[k], data[k]) for k in range(rows))


@pytest.mark.parametrize("key_type", [TypeCode.LONG, TypeCode.INT])
def test_whole_cache_is_read_with_one_scan_per_node(ignite_cluster: LocalCluster, cluster_client: IgniteClient,
                                                    cache_name: str, key_type: int) -> None:
    # LONG and INT keys: the reader computes each row's partition from its key
    # (Ignite's rendezvous placement); on a stable cluster every row must land in
    # a partition its node is primary of, or partitions would be scanned again.
    cache = cluster_client.get_or_create_cache(cache_name)
    people = _people(3000)
    for start in range(0, 3000, 1000):
        cache.put_all({k: people[k] for k in range(start, start + 1000)}, key_type=key_type)
    host, port = ignite_cluster.address()
    with IgniteClient(f"{host}:{port}") as fresh:
        ds = IgniteDataset(cache_name, client=fresh, value_type="Person", batch_size=128,
                           key_type="java.lang.Integer" if key_type == TypeCode.INT else None)
        for _ in range(2):
            keys = np.concatenate([b["key"].numpy() for b in ds])
            assert sorted(keys.tolist()) == list(range(3000))  # every row exactly once
        assert ds.stats.scan_mode == "nodes" and ds.stats.rescans == ()
        pmap = fresh.partition_map(cache_name)
        scans = {c.handshake.node_id: c.op_counts[Op.QUERY_SCAN] for c in fresh.connections()}
        # One scan per node and epoch (plus at most two one-page samples while building the dataset),
        # instead of one per partition.
        assert len(scans) == 3 and all(n >= 2 for n in scans.values()), scans
        assert sum(c.op_counts[Op.QUERY_SCAN] for c in fresh.connections()) <= 2 * 3 + 2
        assert ds.stats.rows == 6000 and len(set(pmap.nodes)) == 3
