"""``ignite://`` on an Apache Ignite 3.1 node (the session's ``ignite3_node``: TLS + authentication).

The file semantics (round trips, rename, no torn file, listings, concurrent writers...) are
test_fs_store's tests, which run on both generations.  Here: what only Ignite 3 has to show --
the generation found at the handshake, the files as rows SQL sees, tables dropped under a
store, garbage removal by block key, and ``ignite://`` through TensorFlow (gfile, a
checkpoint, a TensorBoard summary) and fsspec.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.client.options import ConnectionOptions
from tensorflow_ignite.errors import AuthenticationError, ConfigurationError, HandshakeError
from tensorflow_ignite.fs import config as fs_config
from tensorflow_ignite.fs.layout import FileEntry
from tensorflow_ignite.fs.store import IgniteFileStore
from tensorflow_ignite.fs.store.generation import connect_client
from tensorflow_ignite.fs.store.ignite3 import Ignite3Tables
from tensorflow_ignite.ignite3 import Ignite3Client
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.local.ignite3 import MEMORY_PROFILE, Ignite3Cluster

BS = 64 * 1024  # small blocks: multi-block files stay small
PREFIX = "fs_gen_tests"


@pytest.fixture(scope="module")
def store(ignite3_node: Ignite3Cluster) -> Iterator[IgniteFileStore]:
    """A store on the Ignite 3 node's tables (TLS + authentication; the generation found at the handshake)."""
    s = IgniteFileStore(connect_client(ignite3_node.client_options()), cache_prefix=PREFIX, block_size=BS)
    yield s
    s.close()


def pattern(n: int, seed: int = 0) -> bytes:
    block = bytes((i * 7 + seed) & 0xFF for i in range(251))
    return (block * (n // 251 + 1))[:n]


def test_deleted_content_becomes_garbage_and_is_removed(store: IgniteFileStore) -> None:
    """What test_fs_store's garbage tests count by the data cache's size, by block key here
    (an Ignite 3 table has no size op)."""
    name = f"/garbage-{uuid.uuid4().hex[:8]}"
    store.write_file(name, pattern(2 * BS + 1))
    e = store.stat(name)
    assert isinstance(e, FileEntry)
    keys = [e.key_of(i) for i in range(e.blocks)]
    assert len(keys) == 3 and all(store.tables.contains_block(k) for k in keys)
    store.write_file(name, b"replaced")  # the old content is garbage now
    store.drain()  # garbage waiting out garbage_delay is deleted now
    assert not any(store.tables.contains_block(k) for k in keys)
    assert store.read_file(name) == b"replaced"
    store.remove(name)
    assert store.collect_garbage()["garbage_records"] == 0


# ------------------------------------------------------------------ Ignite 3 only
def test_the_generation_is_found_at_the_handshake(ignite_node: LocalCluster, ignite3_node: Ignite3Cluster) -> None:
    host, port = ignite_node.address()
    assert isinstance(connect_client(ConnectionOptions(host=host, port=port)), IgniteClient)
    with pytest.raises(HandshakeError, match="not an Ignite 3 client port"):
        connect_client(ConnectionOptions(host=host, port=port), "3")
    with pytest.raises(AuthenticationError):  # a wrong password is said so, not taken for Ignite 2
        connect_client(ignite3_node.client_options(password="wrong"))
    c = connect_client(ignite3_node.client_options(), "3")
    try:
        assert isinstance(c, Ignite3Client)
    finally:
        c.close()


def test_ignite3_files_are_rows_of_two_tables(store: IgniteFileStore) -> None:
    client = store.client
    assert isinstance(client, Ignite3Client)
    assert repr(store).endswith(f"tables {PREFIX.upper()}_META/{PREFIX.upper()}_DATA>")
    assert store.capacity is None
    name = f"/rows-{uuid.uuid4().hex[:8]}"
    store.write_file(name, pattern(BS + 1))
    e = store.stat(name)
    assert isinstance(e, FileEntry)
    # The blocks went through whichever pooled clients were free: this one reads a snapshot that has
    # them once it has observed what the store's clients saw.
    assert isinstance(store.tables, Ignite3Tables)
    client.observe(store.tables.observed_timestamp())
    with client.query(f"SELECT COUNT(*) FROM {PREFIX}_DATA WHERE KEY = ? OR KEY = ?",
                      (e.key_of(0), e.key_of(1))) as cur:
        assert int(next(iter(cur.column_pages())).values[0][0]) == 2
    store.remove(name)


def test_ignite3_tables_dropped_are_created_again(ignite3_node: Ignite3Cluster) -> None:
    """As lost caches on Ignite 2 (a restarted in-memory cluster): the next operation finds the tables
    gone, creates them again and succeeds (the files stored before are gone)."""
    prefix = f"fs_drop_{uuid.uuid4().hex[:6]}"
    s = IgniteFileStore(connect_client(ignite3_node.client_options()), cache_prefix=prefix, block_size=BS)
    other = Ignite3Client(ignite3_node.client_options())
    try:
        s.write_file("/a", pattern(BS + 5))
        other.execute(f"DROP TABLE {prefix}_META")
        other.execute(f"DROP TABLE {prefix}_DATA")
        assert s.lookup("/a") is None
        assert s.stats["caches_recreated"] == 1
        s.write_file("/b", pattern(BS + 7))
        assert s.read_file("/b") == pattern(BS + 7) and s.listdir("/") == ["b"]
    finally:
        s.close()
        for t in ("META", "DATA"):
            other.execute(f"DROP TABLE IF EXISTS {prefix}_{t}")
        other.execute(f"DROP ZONE IF EXISTS {prefix}_ZONE")
        other.close()


def test_a_store_in_the_in_memory_storage_profile(ignite3_node: Ignite3Cluster) -> None:
    """``storage="aimem"`` (the setting, through fsspec): the store's zone is made with the nodes'
    in-memory profile and its files work; a profile the nodes lack, or another profile than an
    existing zone's, is a ConfigurationError naming it."""
    from tensorflow_ignite.fs.fsspec_fs import IgniteFileSystem

    o = ignite3_node.client_options()
    prefix = f"fs_mem_{uuid.uuid4().hex[:6]}"
    conn = dict(host=o.host, port=o.port, username=o.username, password=o.password, cafile=o.cafile,
                certfile=o.certfile, keyfile=o.keyfile, cert_password=o.cert_password)
    fs = IgniteFileSystem(**conn, cache_prefix=prefix, block_size=BS, storage=MEMORY_PROFILE)
    other = Ignite3Client(o)
    try:
        data = pattern(3 * BS + 11)
        fs.pipe("/m/a.bin", data)
        fs.mv("/m/a.bin", "/m/b.bin")
        assert fs.ls("/m", detail=False) == ["/m/b.bin"] and fs.cat("/m/b.bin") == data
        tables = fs.store.tables
        assert isinstance(tables, Ignite3Tables) and tables.zone_profiles() == [MEMORY_PROFILE]
        with other.query("SELECT COUNT(*) FROM " + prefix.upper() + "_DATA") as cursor:
            assert [int(v) for page in cursor.column_pages() for v in page.values[0]] == [4]  # 4 blocks in it
        with pytest.raises(ConfigurationError, match=r"exists with storage profile\(s\) \['aimem'\], not 'default'"):
            IgniteFileStore(connect_client(o), cache_prefix=prefix, block_size=BS, storage="default")
        with pytest.raises(ConfigurationError, match=r"storage profile 'no_such_profile'.*ignite.storage.profiles"):
            IgniteFileStore(connect_client(o), cache_prefix=f"{prefix}_x", block_size=BS, storage="no_such_profile")
        with pytest.raises(ConfigurationError, match="cannot name an Ignite 3 storage profile"):
            IgniteFileStore(connect_client(o), cache_prefix=f"{prefix}_x", block_size=BS, storage="x']; DROP")
    finally:
        fs_config.close_stores()
        for t in ("META", "DATA"):
            other.execute(f"DROP TABLE IF EXISTS {prefix}_{t}")
        other.execute(f"DROP ZONE IF EXISTS {prefix}_ZONE")
        other.execute(f"DROP ZONE IF EXISTS {prefix}_X_ZONE")
        other.close()


@pytest.fixture(scope="module")
def ignite3_uri(ignite3_node: Ignite3Cluster) -> Iterator[str]:
    """``ignite://host:port`` of the Ignite 3 node, its TLS (client certificate included) and credentials
    configured as for Ignite 2."""
    o = ignite3_node.client_options()
    saved = fs_config.overrides()
    fs_config.configure(username=o.username, password=o.password, cafile=o.cafile, certfile=o.certfile,
                        keyfile=o.keyfile, cert_password=o.cert_password, cache_prefix="fs_gen_tf", block_size="64k")
    yield f"ignite://{o.host}:{o.port}"
    fs_config.close_stores()
    fs_config.reset()
    fs_config.configure(**saved)


def test_gfile_checkpoint_and_summaries_on_ignite3(ignite3_uri: str) -> None:
    import tensorflow as tf

    from tensorflow_ignite.fs.backend import IgniteBackend
    from tensorflow_ignite.native import loader

    previous = loader.set_backend(IgniteBackend())
    base = f"{ignite3_uri}/tf-{uuid.uuid4().hex[:8]}"
    gfile = tf.io.gfile
    try:
        gfile.makedirs(f"{base}/d")
        data = os.urandom(3 * BS + 5)
        with gfile.GFile(f"{base}/d/a.bin", "wb") as f:
            f.write(data)
        with gfile.GFile(f"{base}/d/a.bin", "rb") as f:
            assert f.read() == data
        gfile.rename(f"{base}/d/a.bin", f"{base}/d/b.bin")
        assert gfile.listdir(f"{base}/d") == ["b.bin"]
        assert gfile.stat(f"{base}/d/b.bin").length == len(data)

        v = tf.Variable(tf.random.uniform([300, 200]))  # 240 KB: several blocks
        step = tf.Variable(7, dtype=tf.int64)
        ckpt = tf.train.Checkpoint(v=v, step=step)
        path = ckpt.save(f"{base}/ckpt/model")
        expected = v.numpy().copy()
        v.assign(tf.zeros_like(v))
        step.assign(0)
        ckpt.restore(path).assert_consumed()
        assert (v.numpy() == expected).all() and int(step.numpy()) == 7
        assert tf.train.latest_checkpoint(f"{base}/ckpt") == path

        writer = tf.summary.create_file_writer(f"{base}/logs")
        with writer.as_default():
            for i in range(5):
                tf.summary.scalar("loss", 1.0 / (i + 1), step=i)
        writer.close()
        events = gfile.glob(f"{base}/logs/events.out.tfevents.*")
        assert len(events) == 1
        values = [val.simple_value if val.HasField("simple_value") else float(tf.make_ndarray(val.tensor))
                  for e in tf.compat.v1.train.summary_iterator(events[0]) for val in e.summary.value]
        assert values == pytest.approx([1.0 / (i + 1) for i in range(5)])
        gfile.rmtree(base)
        assert not gfile.exists(base)
    finally:
        loader.set_backend(previous)


def test_fsspec_on_ignite3(ignite3_node: Ignite3Cluster) -> None:
    import fsspec

    from tensorflow_ignite.fs.fsspec_fs import IgniteFileSystem

    o = ignite3_node.client_options()
    fs = IgniteFileSystem(host=o.host, port=o.port, username=o.username, password=o.password, cafile=o.cafile,
                          certfile=o.certfile, keyfile=o.keyfile, cert_password=o.cert_password,
                          cache_prefix="fs_gen_fsspec", block_size=BS)
    base = f"/fsspec-{uuid.uuid4().hex[:8]}"
    data = pattern(2 * BS + 9)
    with fs.open(f"{base}/x/a.bin", "wb") as f:
        f.write(data)
    fs.pipe(f"{base}/x/b.txt", b"hello")
    assert sorted(fs.ls(f"{base}/x", detail=False)) == [f"{base}/x/a.bin", f"{base}/x/b.txt"]
    assert fs.cat(f"{base}/x/a.bin") == data
    assert fs.info(f"{base}/x/a.bin")["size"] == len(data)
    with fs.open(f"{base}/x/a.bin", "rb") as f:
        f.seek(BS - 3)
        assert f.read(10) == data[BS - 3:BS + 7]
    fs.mv(f"{base}/x/b.txt", f"{base}/x/c.txt")
    assert fs.cat(f"{base}/x/c.txt") == b"hello" and not fs.exists(f"{base}/x/b.txt")
    fs.rm(base, recursive=True)
    assert not fs.exists(base)
    assert isinstance(fsspec.get_filesystem_class("ignite")(host=o.host, port=o.port), IgniteFileSystem)
