"""The ignite:// file store's semantics on both Ignite generations, against real nodes.

Each test of the first part runs on an Ignite 2 node (caches) and on an Ignite 3.1
node with TLS and authentication (tables, ``ignite3_node``): the same assertions,
so the two implementations of :mod:`tensorflow_ignite.fs.store.backend` are held
to the same behaviour.  The second part is what only Ignite 3 has to show: the
generation found at the handshake, the tables SQL sees, and ``ignite://`` through
TensorFlow (gfile, a checkpoint, a TensorBoard summary) and fsspec on Ignite 3.
"""

from __future__ import annotations

import errno
import os
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest

from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.client.options import ConnectionOptions
from tensorflow_ignite.errors import AuthenticationError, HandshakeError
from tensorflow_ignite.fs import config as fs_config
from tensorflow_ignite.fs.layout import SPLIT_NAMES, FileEntry
from tensorflow_ignite.fs.store import IgniteFileStore
from tensorflow_ignite.fs.store.generation import connect_client
from tensorflow_ignite.ignite3 import Ignite3Client
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.local.ignite3 import Ignite3Cluster

BS = 64 * 1024  # small blocks: multi-block files stay small
PREFIX = "fs_gen_tests"


@pytest.fixture(scope="module", params=["ignite2", "ignite3"])
def store(request: pytest.FixtureRequest) -> Iterator[IgniteFileStore]:
    """A store on an Ignite 2 node's caches or on an Ignite 3 node's tables (TLS + authentication)."""
    if request.param == "ignite2":
        node: LocalCluster = request.getfixturevalue("ignite_node")
        client: Any = IgniteClient(node.addresses())
    else:
        node3: Ignite3Cluster = request.getfixturevalue("ignite3_node")
        client = connect_client(node3.client_options())  # generation "auto": the handshake tells
        assert isinstance(client, Ignite3Client)
    s = IgniteFileStore(client, cache_prefix=PREFIX, block_size=BS, owns_client=True)
    yield s
    s.close()


@pytest.fixture
def root(store: IgniteFileStore, request: pytest.FixtureRequest) -> Iterator[str]:
    path = "/" + request.node.name.replace("[", "_").replace("]", "")
    yield path
    store.drain()
    if store.lookup(path) is not None:
        store.rmtree(path)


def pattern(n: int, seed: int = 0) -> bytes:
    block = bytes((i * 7 + seed) & 0xFF for i in range(251))
    return (block * (n // 251 + 1))[:n]


def run_threads(target: Callable[..., None], args: Iterable[tuple[Any, ...]]) -> None:
    """Run ``target(*a)`` for every ``a`` in ``args``, each in its own thread; re-raise the first failure."""
    errors: list[BaseException] = []

    def run(*a: Any) -> None:
        try:
            target(*a)
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=a) for a in args]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


# ------------------------------------------------------------------ both generations
def test_multi_block_round_trip(store: IgniteFileStore, root: str) -> None:
    data = pattern(5 * BS + 123, seed=3)
    store.write_file(f"{root}/f.bin", data)
    e = store.stat(f"{root}/f.bin")
    assert isinstance(e, FileEntry) and e.size == len(data) and e.blocks == 6
    assert store.read_file(f"{root}/f.bin") == data
    assert store.read_file(f"{root}/f.bin", BS - 10, 3 * BS + 10) == data[BS - 10:3 * BS + 10]
    with store.open_read(f"{root}/f.bin") as r:  # whole blocks received straight into the buffer
        buf = bytearray(len(data))
        assert r.read_into(0, memoryview(buf)) == len(data)
        assert bytes(buf) == data
    # Streamed in pieces that are not block-aligned, then appended to.
    w = store.open_write(f"{root}/g.bin")
    for i in range(0, len(data), 40_000):
        w.write(data[i:i + 40_000])
    w.close()
    assert store.read_file(f"{root}/g.bin") == data
    w = store.open_write(f"{root}/g.bin", append=True)
    w.write(b"tail")
    w.close()
    assert store.read_file(f"{root}/g.bin") == data + b"tail"


def test_namespace_operations_and_errors(store: IgniteFileStore, root: str) -> None:
    store.makedirs(f"{root}/a/b/c")
    store.write_file(f"{root}/a/x", b"1")
    assert store.listdir(root) == ["a"]
    assert store.listdir(f"{root}/a") == ["b", "x"]
    assert store.stat(f"{root}/a/b").is_dir
    with pytest.raises(FileNotFoundError):
        store.stat(f"{root}/missing")
    with pytest.raises(NotADirectoryError):
        store.listdir(f"{root}/a/x")
    with pytest.raises(IsADirectoryError):
        store.open_read(f"{root}/a")
    with pytest.raises(FileExistsError):
        store.write_file(f"{root}/a/x", b"2", exclusive=True)
    store.remove(f"{root}/a/x")
    assert store.lookup(f"{root}/a/x") is None
    with pytest.raises(OSError) as raised:
        store.rmdir(f"{root}/a")
    assert raised.value.errno == errno.ENOTEMPTY
    store.rmtree(f"{root}/a")
    assert store.listdir(root) == []


def test_rename_is_atomic_no_torn_file(store: IgniteFileStore, root: str) -> None:
    """A reader sees the old file or the new one whole while writers keep replacing it by rename."""
    versions = [pattern(3 * BS + 17 * v, seed=v) for v in range(4)]
    store.write_file(f"{root}/f", versions[0])
    stop = threading.Event()
    seen: set[int] = set()

    def reader() -> None:
        while not stop.is_set():
            got = store.read_file(f"{root}/f")
            assert got in versions, f"torn or unknown content of {len(got)} bytes"
            seen.add(versions.index(got))

    def writer(w: int) -> None:
        for i in range(6):
            v = 1 + (w + i) % 3
            store.write_file(f"{root}/tmp{w}", versions[v])
            store.rename(f"{root}/tmp{w}", f"{root}/f")

    readers = [threading.Thread(target=reader) for _ in range(2)]
    for t in readers:
        t.start()
    try:
        run_threads(writer, [(w,) for w in range(3)])
    finally:
        stop.set()
        for t in readers:
            t.join()
    assert store.read_file(f"{root}/f") in versions[1:]
    assert sorted(store.listdir(root)) == ["f"]
    assert len(seen) >= 1


def test_concurrent_writers_in_one_directory(store: IgniteFileStore, root: str) -> None:
    """Threads creating files in one directory all read and write its listing bucket: the
    transactions that lose (a commit conflict on Ignite 2, a lock on Ignite 3) run again."""
    store.makedirs(root)
    before = store.stats["tx_commits"]

    def writer(w: int) -> None:
        for i in range(8):
            store.write_file(f"{root}/w{w}-{i}", f"{w}:{i}".encode())

    run_threads(writer, [(w,) for w in range(6)])
    names = store.listdir(root)
    assert names == sorted(f"w{w}-{i}" for w in range(6) for i in range(8))
    assert all(store.read_file(f"{root}/{n}") == n[1:].replace("-", ":").encode() for n in names)
    assert store.stats["tx_commits"] - before >= 48


def test_a_large_directory_is_listed_at_one_instant(store: IgniteFileStore, root: str) -> None:
    """More names than one listing bucket holds: listdir reads the buckets in one (read-only) transaction."""
    n = SPLIT_NAMES + 30
    store.write_files({f"{root}/n{i:05d}": b"" for i in range(n)})
    names = store.listdir(root)
    assert len(names) == n and names[0] == "n00000" and names[-1] == f"n{n - 1:05d}"


def test_deleted_content_becomes_garbage_and_is_removed(store: IgniteFileStore, root: str) -> None:
    store.write_file(f"{root}/f", pattern(2 * BS + 1))
    e = store.stat(f"{root}/f")
    assert isinstance(e, FileEntry)
    keys = [e.key_of(i) for i in range(e.blocks)]
    assert all(store.tables.contains_block(k) for k in keys)
    store.remove(f"{root}/f")
    store.drain()  # garbage waiting out garbage_delay is deleted now
    assert not any(store.tables.contains_block(k) for k in keys)
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


def test_ignite3_files_are_rows_of_two_tables(ignite3_node: Ignite3Cluster) -> None:
    client = connect_client(ignite3_node.client_options())
    s = IgniteFileStore(client, cache_prefix=PREFIX, block_size=BS)
    try:
        assert repr(s).endswith(f"tables {PREFIX.upper()}_META/{PREFIX.upper()}_DATA>")
        assert s.capacity is None
        name = f"/rows-{uuid.uuid4().hex[:8]}"
        s.write_file(name, pattern(BS + 1))
        e = s.stat(name)
        assert isinstance(e, FileEntry)
        with client.query(f"SELECT COUNT(*) FROM {PREFIX}_DATA WHERE KEY = ? OR KEY = ?",
                          (e.key_of(0), e.key_of(1))) as cur:
            assert int(next(iter(cur.column_pages())).values[0][0]) == 2
        s.remove(name)
    finally:
        s.close()


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


@pytest.fixture(scope="module")
def ignite3_uri(ignite3_node: Ignite3Cluster) -> Iterator[str]:
    """``ignite://host:port`` of the Ignite 3 node, its TLS and credentials configured as for Ignite 2."""
    o = ignite3_node.client_options()
    saved = fs_config.overrides()
    fs_config.configure(username=o.username, password=o.password, cafile=o.cafile, cache_prefix="fs_gen_tf",
                        block_size="64k")
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
