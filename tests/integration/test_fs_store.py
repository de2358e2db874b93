"""The ignite:// file store against real Ignite nodes (no TensorFlow in this module).

Tests taking the ``store`` fixture run twice: on an Ignite 2 node's caches and on an Ignite 3.1
node's tables (the session's ``ignite3_node``); the others are about Ignite 2 (its caches, its
connections, its cluster of three)."""

from __future__ import annotations

import errno
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pytest

from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.errors import AuthenticationError, ConfigurationError, IgniteError
from tensorflow_ignite.fs import config as fs_config
from tensorflow_ignite.fs.layout import SPLIT_NAMES, FileEntry, block_key, decode_garbage, encode_garbage
from tensorflow_ignite.fs.store import FileWriter, IgniteFileStore, StaleFileError
from tensorflow_ignite.fs.store.common import GARBAGE_DELAY
from tensorflow_ignite.fs.store.generation import connect_client
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.protocol import requests, responses
from tensorflow_ignite.protocol.codes import Op
from tensorflow_ignite.testing.waiting import wait_for

BS = 64 * 1024  # small blocks: multi-block files stay small


@pytest.fixture(scope="module")
def client(ignite_node: LocalCluster) -> Iterator[IgniteClient]:
    with IgniteClient(ignite_node.addresses()) as c:
        yield c


@pytest.fixture(scope="module")
def store2(client: IgniteClient) -> Iterator[IgniteFileStore]:
    """A store on the Ignite 2 node (for tests of Ignite 2's wire: caches, connections)."""
    s = IgniteFileStore(client, cache_prefix="fs_store_tests", block_size=BS, owns_client=False)
    yield s
    s.close()


def test_storage_names_the_data_region_of_the_caches(client: IgniteClient) -> None:
    """On Ignite 2 the ``storage`` setting is the caches' data region: named in their configuration;
    a region the nodes lack, or another region than existing caches', is a ConfigurationError."""
    prefix = f"fs_region_{uuid.uuid4().hex[:6]}"
    s = IgniteFileStore(client, cache_prefix=prefix, block_size=BS, owns_client=False, storage="default")
    try:
        s.write_file("/r", pattern(BS + 3))
        assert [c.data_region_name for c in s.cache_configurations()] == ["default", "default"]
        assert client.cache(f"{prefix}_data").configuration().data_region_name == "default"
        with pytest.raises(ConfigurationError, match=r"data region 'no_such_region'.*dataRegionConfigurations"):
            IgniteFileStore(client, cache_prefix=f"{prefix}_x", block_size=BS, owns_client=False,
                            storage="no_such_region")
    finally:
        s.close()
        for name in (f"{prefix}_meta", f"{prefix}_data", f"{prefix}_x_meta", f"{prefix}_x_data"):
            if name in client.cache_names():
                client.destroy_cache(name)


@pytest.fixture(scope="module", params=["ignite2", "ignite3"])
def store(request: pytest.FixtureRequest) -> Iterator[IgniteFileStore]:
    """The store the file-semantics tests run on, once per Ignite generation: the Ignite 2 node's
    caches, and the tables of the session's Ignite 3 node (TLS + authentication; the generation
    found at the handshake)."""
    if request.param == "ignite2":
        yield request.getfixturevalue("store2")
        return
    client = connect_client(request.getfixturevalue("ignite3_node").client_options())
    s = IgniteFileStore(client, cache_prefix="fs_store_tests", block_size=BS)
    assert s.tables.generation == 3
    yield s
    s.close()


@pytest.fixture
def root(store: IgniteFileStore, request: pytest.FixtureRequest) -> Iterator[str]:
    path = "/" + request.node.name.replace("[", "_").replace("]", "")
    yield path
    store.drain()
    if store.lookup(path) is not None:
        store.rmtree(path)


@pytest.fixture
def isolated(client: IgniteClient, cache_name: str) -> Iterator[IgniteFileStore]:
    """A store on caches of its own (for exact block and record counts)."""
    s = IgniteFileStore(client, cache_prefix=cache_name, block_size=BS, owns_client=False)
    yield s
    s.close()
    client.destroy_cache(s.meta.name)
    client.destroy_cache(s.data.name)


@pytest.fixture
def other(client: IgniteClient, isolated: IgniteFileStore) -> Iterator[IgniteFileStore]:
    """A second store on ``isolated``'s caches, standing for another process: neither store
    sees the other's readers (their pins) or its garbage waiting out the delay."""
    other = IgniteFileStore(client, cache_prefix=isolated.cache_prefix, block_size=BS, owns_client=False)
    yield other
    other.close()


def pattern(n: int, seed: int = 0) -> bytes:
    block = bytes((i * 7 + seed) & 0xFF for i in range(251))
    return (block * (n // 251 + 1))[:n]


def run_threads(target: Callable[..., None], args: Iterable[tuple[Any, ...]]) -> None:
    """Run ``target(*a)`` for every ``a`` in ``args``, each in its own thread, and wait for all."""
    threads = [threading.Thread(target=target, args=a) for a in args]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def meta_records(s: IgniteFileStore, prefix: str) -> list[str]:
    return [k for k, _ in s.meta.scan() if isinstance(k, str) and k.startswith(prefix)]


# ------------------------------------------------------------------ files
@pytest.mark.parametrize("size", [0, 1, BS - 1, BS, BS + 1, 3 * BS + 5])
def test_write_read_roundtrip(store: IgniteFileStore, root: str, size: int) -> None:
    data = pattern(size)
    store.write_file(f"{root}/f", data)
    assert store.stat(f"{root}/f").size == size
    assert store.read_file(f"{root}/f") == data
    assert store.read_file(f"{root}/f", 3, 3 + BS) == data[3:3 + BS]
    assert store.read_file(f"{root}/f", -10) == data[-10:]


def test_read_into_concurrent_threads(store: IgniteFileStore, root: str) -> None:
    data = pattern(6 * BS + 123)
    store.write_file(f"{root}/f", data)
    errors: list[BaseException] = []
    with store.open_read(f"{root}/f") as reader:

        def read(offset: int, length: int) -> None:
            try:
                buf = bytearray(length)
                n = reader.read_into(offset, memoryview(buf))
                assert bytes(buf[:n]) == data[offset:offset + n]
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        run_threads(read, (((i * 9973) % len(data), 40000) for i in range(24)))
    assert not errors


def test_large_reads_land_in_the_buffer_from_many_threads(store: IgniteFileStore, root: str) -> None:
    """Reads spanning whole blocks receive them straight into the caller's buffer, several
    gets in flight; threads mixing such reads with small (cached) ones share one
    connection, so an answer is read by whichever thread receives first."""
    data = pattern(40 * BS + 77, seed=3)
    store.write_file(f"{root}/f", data)
    errors: list[BaseException] = []
    with store.open_read(f"{root}/f") as reader:

        def read(i: int) -> None:
            try:
                for k in range(6):
                    offset = (i * 7919 + k * 104729) % len(data)
                    length = 5 * BS + 13 if (i + k) % 2 else 100
                    buf = bytearray(length)
                    n = reader.read_into(offset, memoryview(buf))
                    assert n == min(length, len(data) - offset)
                    assert bytes(buf[:n]) == data[offset:offset + n]
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        run_threads(read, ((i,) for i in range(8)))
    assert not errors
    with store.open_read(f"{root}/f") as reader:
        buf = bytearray(len(data) + 10)
        assert reader.read_into(0, memoryview(buf)) == len(data)
        assert bytes(buf[:len(data)]) == data
        assert reader.read_into(BS, memoryview(buf)[:2 * BS]) == 2 * BS  # exactly two blocks
        assert bytes(buf[:2 * BS]) == data[BS:3 * BS]


def test_receive_into_reads_the_answer_into_the_buffer(store2: IgniteFileStore) -> None:
    store, root = store2, "/test_receive_into_reads_the_answer_into_the_buffer"
    data = pattern(BS, seed=5)
    store.write_file(f"{root}/f", data)
    e = store.lookup(f"{root}/f")
    assert isinstance(e, FileEntry)
    key = e.key_of(0)
    conn = store.client.default_connection
    cache_id = store.data.cache_id

    def get(into: memoryview) -> tuple[memoryview, bool]:
        def encode(rid: int) -> bytes:
            conn.expect_into(rid, into, 5)
            return requests.cache_get(rid, cache_id, key)

        rid = conn.send(encode)
        return conn.receive_into(rid, Op.CACHE_GET)

    buf = bytearray(BS)
    head, filled = get(memoryview(buf))
    assert filled and bytes(head) == bytes([12]) + BS.to_bytes(4, "little") and bytes(buf) == data
    # An answer of another length is returned whole; the buffer is not written.
    small = bytearray(10)
    body, filled = get(memoryview(small))
    assert not filled and bytes(body[5:]) == data and small == bytearray(10)
    # Registered answers read by a thread waiting for a later request land in their buffers.
    bufs = [bytearray(BS) for _ in range(3)]
    rids = []
    for b in bufs:
        def encode(rid: int, b: bytearray = b) -> bytes:
            conn.expect_into(rid, memoryview(b), 5)
            return requests.cache_get(rid, cache_id, key)

        rids.append(conn.send(encode))
    for rid, b in zip(reversed(rids), reversed(bufs)):
        body, filled = conn.receive_into(rid, Op.CACHE_GET)
        assert bytes(b) == data if filled else bytes(body[5:]) == data
    # Once an answer is in its buffer, the connection keeps no reference to the buffer,
    # even before its owner is told (TensorFlow's buffer may be freed the moment the owner returns).
    checked = 0
    for _ in range(50):  # the node may answer the two gets in either order
        owned, other = bytearray(BS), bytearray(BS)
        rids = []
        for b in (owned, other):
            def encode(rid: int, b: bytearray = b) -> bytes:
                conn.expect_into(rid, memoryview(b), 5)
                return requests.cache_get(rid, cache_id, key)

            rids.append(conn.send(encode))
        conn.receive_into(rids[1], Op.CACHE_GET)  # may read (and fill) the first answer on the way
        if bytes(owned) == data:
            owned.append(0)  # raises BufferError while any view of it is alive
            del owned[-1]
            checked += 1
        assert conn.receive_into(rids[0], Op.CACHE_GET)[1] and bytes(owned) == data
    assert checked
    # A cancelled registration: the answer never touches the buffer.
    late = bytearray(BS)

    def encode_late(rid: int) -> bytes:
        conn.expect_into(rid, memoryview(late), 5)
        return requests.cache_get(rid, cache_id, key)

    conn.forget_into(conn.send(encode_late))
    assert store.read_file(f"{root}/f") == data  # the connection still works
    assert late == bytearray(BS) or bytes(late) == data  # filled before it was cancelled, or not at all
    store.rmtree(root)


def test_directories(store: IgniteFileStore, root: str) -> None:
    store.makedirs(f"{root}/a/b")
    store.makedirs(f"{root}/a/b")  # idempotent
    with pytest.raises(FileNotFoundError):
        store.mkdir(f"{root}/missing/x")
    with pytest.raises(FileExistsError):
        store.mkdir(f"{root}/a")
    store.mkdir(f"{root}/a/c")
    store.write_file(f"{root}/a/file", b"x")
    assert store.listdir(f"{root}/a") == ["b", "c", "file"]
    assert store.stat(f"{root}/a").is_dir and not store.stat(f"{root}/a/file").is_dir
    with pytest.raises(NotADirectoryError):
        store.listdir(f"{root}/a/file")
    with pytest.raises(NotADirectoryError):
        store.makedirs(f"{root}/a/file")
    with pytest.raises(NotADirectoryError):
        store.makedirs(f"{root}/a/file/sub")
    with pytest.raises(OSError) as info:
        store.rmdir(f"{root}/a")
    assert info.value.errno == errno.ENOTEMPTY
    with pytest.raises(NotADirectoryError):
        store.rmdir(f"{root}/a/file")
    with pytest.raises(IsADirectoryError):
        store.remove(f"{root}/a/b")
    store.rmdir(f"{root}/a/c")
    store.rmtree(f"{root}/a")
    assert store.lookup(f"{root}/a") is None and store.lookup(f"{root}/a/b") is None
    with pytest.raises(FileNotFoundError):
        store.rmtree(f"{root}/a")
    with pytest.raises(OSError) as info:
        store.rmdir("/")
    assert info.value.errno == errno.EBUSY
    assert store.stat("/").is_dir


def test_write_creates_parents_and_refuses_a_file_parent(store: IgniteFileStore, root: str) -> None:
    store.write_file(f"{root}/x/y/z.txt", b"deep")
    assert store.listdir(root) == ["x"] and store.listdir(f"{root}/x/y") == ["z.txt"]
    with pytest.raises(NotADirectoryError):
        store.write_file(f"{root}/x/y/z.txt/inner", b"no")
    with pytest.raises(IsADirectoryError):
        store.open_write(f"{root}/x")


def test_append_rewrites_only_the_last_partial_block(isolated: IgniteFileStore) -> None:
    s = isolated
    first = pattern(2 * BS + 100, seed=1)
    s.write_file("/log", first)
    before = s.stats["blocks_written"]
    more = pattern(BS + 50, seed=2)
    with s.open_write("/log", append=True) as w:
        assert w.tell() == len(first)
        w.write(memoryview(more))
    s.drain()
    assert s.read_file("/log") == first + more
    e = s.stat("/log")
    assert isinstance(e, FileEntry) and len(e.extents) == 2 and e.extents[1][0] == 2
    # Block 2 (the old partial one) rewritten and block 3 added: nothing else.
    assert s.stats["blocks_written"] - before == 2
    old_tail = block_key(e.extents[0][1], 2)
    assert not s.data.contains_key(old_tail), "the replaced partial block is garbage-collected"
    assert s.data.size() == 4
    # Appending at a block boundary rewrites nothing.
    s.write_file("/even", pattern(BS))
    before = s.stats["blocks_written"]
    with s.open_write("/even", append=True) as w:
        w.write(b"tail")
    assert s.stats["blocks_written"] - before == 1
    assert s.read_file("/even") == pattern(BS) + b"tail"


def test_whole_blocks_of_a_large_write_go_straight_from_the_callers_memory(
        isolated: IgniteFileStore, monkeypatch: pytest.MonkeyPatch) -> None:
    s = isolated
    sent: list[int] = []
    send = s.send_block_from

    def spy(key: str, block: memoryview) -> Callable[[], None]:
        sent.append(len(block))
        return send(key, block)

    monkeypatch.setattr(s, "send_block_from", spy)
    data = bytearray(pattern(5 * BS + 300, seed=3))
    want = bytes(data)
    with s.open_write("/big") as w:
        w.write(bytes(data[:100]))  # a partial block first
        view = memoryview(data)[100:]
        w.write(view)  # fills block 0 (copied), blocks 1-4 from ``data``, 200 bytes copied
        view.release()
        data.append(0)  # BufferError if the writer still held a view of the caller's memory
        data[:] = bytes(len(data))  # ...which may change at once: every block taken was sent
    assert sent == [BS] * 4
    s.drain()
    assert s.read_file("/big") == want
    assert s.stats["blocks_written"] == 6 and s.data.size() == 6


@pytest.mark.parametrize("blocks", [6, 2])
def test_a_block_that_was_not_stored_leaves_nothing_published(isolated: IgniteFileStore, blocks: int,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from tensorflow_ignite.errors import IgniteConnectionError

    s = isolated
    send = s.send_block_from
    calls = [0]

    def second_put_lost(key: str, block: memoryview) -> Callable[[], None]:
        acknowledged = send(key, block)
        calls[0] += 1
        if calls[0] != 2:
            return acknowledged

        def lost() -> None:
            acknowledged()
            raise IgniteConnectionError("connection lost before the acknowledgement (test)")

        return lost

    monkeypatch.setattr(s, "send_block_from", second_put_lost)
    w = s.open_write("/f")
    if blocks > 1 + 3:  # the second put is awaited before a later block is sent (three in flight)
        with pytest.raises(OSError, match="lost before the acknowledgement"):
            w.write(pattern(blocks * BS))  # the lost block surfaces in a later write...
        with pytest.raises(OSError) as info:
            w.write(b"more")  # ...and the writer takes nothing more
        assert info.value.errno == errno.EIO and "failed" in str(info.value)
        w.close()  # already reported: dropped with a warning
    else:
        w.write(pattern(blocks * BS))
        with pytest.raises(OSError, match="lost before the acknowledgement"):
            w.close()  # ...or at close at the latest: no publication either way
    assert s.lookup("/f") is None
    s.drain()
    assert s.data.size() == 0, "the blocks stored before the failure are deleted"
    assert meta_records(s, "w:") == []


def test_append_creates_a_missing_file(store: IgniteFileStore, root: str) -> None:
    with store.open_write(f"{root}/new", append=True) as w:
        w.write(b"abc")
    with store.open_write(f"{root}/new", append=True) as w:
        w.write(b"def")
    assert store.read_file(f"{root}/new") == b"abcdef"


def test_flush_publishes_close_completes(store: IgniteFileStore, root: str) -> None:
    path = f"{root}/events"
    w = store.open_write(path)
    w.write(pattern(BS + 10))
    assert store.lookup(path) is None, "nothing visible before flush/close"
    w.flush()
    assert store.read_file(path) == pattern(BS + 10)
    w.write(b"more")
    assert store.stat(path).size == BS + 10
    w.flush()
    assert store.read_file(path) == pattern(BS + 10) + b"more"
    w.write(pattern(3 * BS))
    w.close()
    assert store.read_file(path) == pattern(BS + 10) + b"more" + pattern(3 * BS)
    w.close()  # idempotent


def test_copy(store: IgniteFileStore, root: str) -> None:
    data = pattern(2 * BS + 7)
    store.write_file(f"{root}/src", data)
    store.copy(f"{root}/src", f"{root}/sub/dst")
    store.remove(f"{root}/src")
    assert store.read_file(f"{root}/sub/dst") == data
    with pytest.raises(FileNotFoundError):
        store.copy(f"{root}/src", f"{root}/other")


def test_exclusive_create_has_one_winner(store: IgniteFileStore, root: str) -> None:
    store.write_file(f"{root}/taken", b"1")
    with pytest.raises(FileExistsError):
        store.open_write(f"{root}/taken", exclusive=True)
    writers = [store.open_write(f"{root}/race", exclusive=True) for _ in range(4)]
    outcomes: list[str] = []
    for i, w in enumerate(writers):
        w.write(str(i).encode())
        try:
            w.close()
            outcomes.append("won")
        except FileExistsError:
            outcomes.append("lost")
    assert outcomes == ["won", "lost", "lost", "lost"]
    assert store.read_file(f"{root}/race") == b"0"


# ------------------------------------------------------------------ rename
def test_rename_semantics(store: IgniteFileStore, root: str) -> None:
    store.write_file(f"{root}/a", b"A")
    store.write_file(f"{root}/b", b"B")
    store.rename(f"{root}/a", f"{root}/b")
    assert store.read_file(f"{root}/b") == b"A" and store.lookup(f"{root}/a") is None
    assert store.listdir(root) == ["b"]
    store.rename(f"{root}/b", f"{root}/new/parents/b")  # parents created
    assert store.read_file(f"{root}/new/parents/b") == b"A"
    # directories move with their whole subtree
    store.write_file(f"{root}/d/x/1", b"1")
    store.write_file(f"{root}/d/2", b"2")
    store.rename(f"{root}/d", f"{root}/e")
    assert store.lookup(f"{root}/d") is None
    assert store.read_file(f"{root}/e/x/1") == b"1" and store.listdir(f"{root}/e") == ["2", "x"]
    store.mkdir(f"{root}/empty")
    store.rename(f"{root}/e", f"{root}/empty")  # onto an empty directory
    assert store.listdir(f"{root}/empty") == ["2", "x"]
    store.mkdir(f"{root}/e2")
    with pytest.raises(OSError) as info:
        store.rename(f"{root}/e2", f"{root}/empty")
    assert info.value.errno == errno.ENOTEMPTY
    with pytest.raises(IsADirectoryError):
        store.rename(f"{root}/new/parents/b", f"{root}/empty")
    with pytest.raises(NotADirectoryError):
        store.rename(f"{root}/e2", f"{root}/new/parents/b")
    with pytest.raises(OSError) as info:
        store.rename(f"{root}/empty", f"{root}/empty/x/inside")
    assert info.value.errno == errno.EINVAL
    with pytest.raises(FileNotFoundError):
        store.rename(f"{root}/missing", f"{root}/z")


def test_rename_over_existing_file_is_atomic(store: IgniteFileStore, root: str) -> None:
    target = f"{root}/model"
    versions = [pattern(3 * BS + 17, seed=s) for s in range(3)]
    store.write_file(target, versions[0])
    seen: set[int] = set()
    problems: list[str] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            try:
                data = store.read_file(target)
            except FileNotFoundError:
                problems.append("missing")
                continue
            if data in versions:
                seen.add(versions.index(data))
            else:
                problems.append(f"mixed content of {len(data)} bytes")

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        for i in range(1, 16):
            tmp = f"{root}/model.tmp{i}"
            store.write_file(tmp, versions[i % 3])
            store.rename(tmp, target)
    finally:
        stop.set()
        for t in threads:
            t.join()
    assert not problems, problems[:5]
    assert len(seen) >= 2, "the readers observed the replacements"
    assert store.listdir(root) == ["model"]


# -------------------------------------------------------- visibility / snapshot
def test_reader_never_sees_a_half_written_file(store: IgniteFileStore, root: str) -> None:
    path = f"{root}/big"
    final = pattern(40 * BS + 3, seed=5)
    problems: list[str] = []
    observed = {"absent": 0, "complete": 0}
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            e = store.lookup(path)
            if e is None:
                observed["absent"] += 1
                continue
            data = store.read_file(path)
            if data != final or e.size != len(final):
                problems.append(f"saw {len(data)} bytes (entry says {e.size})")
            observed["complete"] += 1

    t = threading.Thread(target=poll)
    t.start()
    try:
        w = store.open_write(path)
        for i in range(0, len(final), 10_000):
            w.write(memoryview(final)[i:i + 10_000])
            time.sleep(0)  # let the poller run between writes
        w.close()
        deadline = time.monotonic() + 10
        while observed["complete"] < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        stop.set()
        t.join()
    assert not problems, problems[:3]
    assert observed["absent"] > 0 and observed["complete"] >= 3


def test_open_reader_keeps_its_snapshot(isolated: IgniteFileStore) -> None:
    s = isolated
    old, new = pattern(3 * BS, seed=1), pattern(2 * BS, seed=2)
    s.write_file("/f", old)
    reader = s.open_read("/f")
    s.write_file("/f", new)
    s.drain()
    buf = bytearray(len(old))
    assert reader.read_into(0, memoryview(buf)) == len(old) and bytes(buf) == old
    assert s.data.size() == 5, "old blocks kept while this process reads them"
    reader.close()
    s.drain()
    assert s.data.size() == 2 and s.read_file("/f") == new


def test_reader_of_another_process_reads_a_replaced_file_whole_within_the_delay(
        isolated: IgniteFileStore, other: IgniteFileStore) -> None:
    old = pattern(3 * BS, seed=3)
    isolated.write_file("/f", old)
    reader = other.open_read("/f")
    isolated.write_file("/f", b"replaced")
    isolated.remove("/f")  # the new content is garbage too
    assert isolated.delayed_garbage == 2
    time.sleep(0.2)  # time for a background deletion, if the delay were ignored
    buf = bytearray(len(old))
    assert reader.read_into(0, memoryview(buf)) == len(old) and bytes(buf) == old
    reader.close()
    assert isolated.data.size() == 4 and len(meta_records(isolated, "g:")) == 2
    assert isolated.collect_garbage()["garbage_records"] == 0, "the store's own delayed garbage is kept"
    isolated.drain()  # deletes delayed garbage at once
    assert isolated.delayed_garbage == 0 and isolated.data.size() == 0
    assert meta_records(isolated, "g:") == []


def test_collect_garbage_leaves_another_process_garbage_until_its_delay_ends(
        isolated: IgniteFileStore, other: IgniteFileStore) -> None:
    # `other` stands for another process running collect_garbage (e.g. a maintenance job).
    old = pattern(3 * BS, seed=5)
    isolated.write_file("/f", old)
    reader = other.open_read("/f")  # opened just before the file is replaced
    isolated.write_file("/f", b"replaced")
    assert isolated.delayed_garbage == 1
    (own,) = meta_records(isolated, "g:")
    result = other.collect_garbage()
    assert result["garbage_waiting"] == 1 and result["garbage_records"] == 0 and result["blocks_deleted"] == 0
    buf = bytearray(len(old))
    assert reader.read_into(0, memoryview(buf)) == len(old) and bytes(buf) == old
    reader.close()
    # Records whose writer is gone: one whose delay has passed, one of the format before
    # records carried their time (deleted at once, as before).
    now = time.time_ns()
    other.meta.put("g:left-by-a-crash", encode_garbage([("gone", 0, 2)], now - 5 * 10**9, 1.0))
    other.meta.put("g:older-format", '[["gone2",0,1]]')
    other.meta.put("g:still-waiting", encode_garbage([("gone3", 0, 1)], now, 3600.0))
    result = other.collect_garbage()
    assert result["garbage_records"] == 2 and result["garbage_waiting"] == 2, result
    assert sorted(meta_records(other, "g:")) == sorted(["g:still-waiting", own])
    assert decode_garbage(encode_garbage([("c", 1, 2)], 7, 0.5)) == ([("c", 1, 2)], 7, 0.5)
    other.meta.remove_key("g:still-waiting")


def test_delayed_garbage_is_deleted_when_the_delay_ends(client: IgniteClient, cache_name: str) -> None:
    s = IgniteFileStore(client, cache_prefix=cache_name, block_size=BS, owns_client=False, garbage_delay=0.5)
    try:
        s.write_file("/f", pattern(2 * BS))
        s.write_file("/g", pattern(BS))
        s.remove("/f")
        s.remove("/g")
        assert s.delayed_garbage == 2 and s.data.size() == 3
        wait_for(lambda: s.data.size() == 0 and not meta_records(s, "g:"), 30, "the delayed garbage deleted")
        assert s.delayed_garbage == 0 and s.stats["blocks_deleted"] == 3
    finally:
        s.close()
        client.destroy_cache(s.meta.name)
        client.destroy_cache(s.data.name)


def test_closing_deletes_delayed_garbage(client: IgniteClient, cache_name: str) -> None:
    s = IgniteFileStore(client, cache_prefix=cache_name, block_size=BS, owns_client=False, garbage_delay=3600)
    s.write_file("/f", pattern(2 * BS))
    s.remove("/f")
    assert s.delayed_garbage == 1
    s.close()
    try:
        assert client.cache(s.data.name).size() == 0 and not meta_records(s, "g:")
    finally:
        client.destroy_cache(s.meta.name)
        client.destroy_cache(s.data.name)


def test_reader_of_another_process_gets_a_stale_error(isolated: IgniteFileStore, other: IgniteFileStore) -> None:
    isolated.write_file("/f", pattern(3 * BS))
    reader = other.open_read("/f")
    isolated.write_file("/f", b"replaced")  # garbage: `other` has no pin here
    isolated.drain()  # ends the delay: the old blocks are deleted now
    with pytest.raises(StaleFileError) as info:
        reader.read_into(0, memoryview(bytearray(10)))
    assert info.value.errno == errno.ESTALE and isinstance(info.value, IgniteError)
    reader.close()


# -------------------------------------------------------------- concurrency
def test_concurrent_writers_to_different_files(store: IgniteFileStore, root: str) -> None:
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for i in range(8):
                store.write_file(f"{root}/shared/w{worker}-{i}", pattern(BS // 2 + i, seed=worker))
                store.write_file(f"{root}/own{worker}/f{i}", pattern(2 * BS + 1, seed=i))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    run_threads(work, ((w,) for w in range(8)))
    assert not errors, errors[:3]
    assert len(store.listdir(f"{root}/shared")) == 64
    for w in range(8):
        assert store.read_file(f"{root}/shared/w{w}-3") == pattern(BS // 2 + 3, seed=w)
        assert store.listdir(f"{root}/own{w}") == [f"f{i}" for i in range(8)]


def test_writer_replaced_by_another_writer_drops_its_output(store: IgniteFileStore, root: str) -> None:
    path = f"{root}/contended"
    w = store.open_write(path)
    w.write(b"first")
    w.flush()
    store.write_file(path, b"second writer wins")
    w.write(b" more")
    w.close()  # warns, publishes nothing
    assert store.read_file(path) == b"second writer wins"


# ------------------------------------------------------------------ garbage
def test_garbage_is_removed(isolated: IgniteFileStore) -> None:
    s = isolated
    s.write_file("/a", pattern(3 * BS))
    s.write_file("/a", pattern(2 * BS))  # overwrite: 3 blocks garbage
    s.write_file("/d/b", pattern(BS + 1))
    s.copy("/d/b", "/d/c")
    s.rename("/d/c", "/a")  # replaces /a: its 2 blocks garbage
    with s.open_write("/d/b", append=True) as w:
        w.write(b"x")  # rewrites the partial block 1 of /d/b
    s.write_files({f"/many/{i}": pattern(100 + i) for i in range(20)})
    s.remove("/many/3")
    s.drain()
    live = sum(e.blocks for e in (s.stat("/a"), s.stat("/d/b")))  # type: ignore[union-attr]
    assert s.data.size() == live + 19
    s.rmtree("/")
    s.drain()
    assert s.data.size() == 0
    assert meta_records(s, "g:") == [] and meta_records(s, "w:") == []
    assert s.listdir("/") == []


def test_collect_garbage_after_a_crashed_writer(client: IgniteClient, isolated: IgniteFileStore) -> None:
    s = isolated
    s.write_file("/kept", pattern(2 * BS))
    # The writers' process: a store of its own on the same caches, which ends with
    # its writers open ("crash": never closed).  Closing it waits for the blocks in flight.
    crashed = IgniteFileStore(client, cache_prefix=s.cache_prefix, block_size=BS, owns_client=False)
    w = crashed.open_write("/lost")
    w.write(pattern(3 * BS + 5))  # three full blocks shipped
    flushed = crashed.open_write("/half")
    flushed.write(pattern(BS + 5))
    flushed.flush()  # published 2 blocks
    flushed.write(pattern(2 * BS))  # more full blocks shipped, then "crash"
    crashed.close()
    del w
    s.drain()
    assert len(meta_records(s, "w:")) == 2
    assert s.collect_garbage(stale_after=3600)["stale_writes"] == 0  # too young
    result = s.collect_garbage(stale_after=0)
    assert result["stale_writes"] == 2 and result["blocks_deleted"] >= 4
    assert s.read_file("/kept") == pattern(2 * BS)
    assert s.read_file("/half") == pattern(BS + 5), "published content stays readable"
    assert s.data.size() == 2 + 2
    assert meta_records(s, "w:") == []
    FileWriter.discard(flushed)


# ----------------------------------------------------------------- listings
def test_large_directory_lists_fast(store: IgniteFileStore, root: str) -> None:
    n = 5000
    names = {f"{root}/big/file-{i:05d}.txt": b"%d" % i for i in range(n)}
    store.write_files(names)
    start = time.perf_counter()
    listed = store.listdir(f"{root}/big")
    elapsed = time.perf_counter() - start
    assert listed == sorted(p.rsplit("/", 1)[1] for p in names)
    assert elapsed < 2.0, f"listing {n} files took {elapsed:.2f}s"
    assert store.stat(f"{root}/big").nb > 1  # type: ignore[union-attr]
    assert n > SPLIT_NAMES
    assert store.read_file(f"{root}/big/file-04321.txt") == b"4321"
    store.write_file(f"{root}/big/one-more", b"!")  # adding to a split directory
    store.remove(f"{root}/big/file-00000.txt")
    listed = store.listdir(f"{root}/big")
    assert len(listed) == n and "one-more" in listed and "file-00000.txt" not in listed


# ------------------------------------------------------------ configuration
def test_endpoints_and_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in [v for v in os.environ if v.startswith(("IGNITE_FS_", "IGNITE_DATASET_"))]:
        monkeypatch.delenv(var)
    fs_config.reset()
    assert fs_config.parse_endpoint("") == ("127.0.0.1", 10800)
    monkeypatch.setenv("IGNITE_DATASET_HOST", "dataset-host")
    monkeypatch.setenv("IGNITE_DATASET_PORT", "1111")
    assert fs_config.parse_endpoint("") == ("dataset-host", 1111)
    monkeypatch.setenv("IGNITE_FS_HOST", "fs-host")
    assert fs_config.parse_endpoint("") == ("fs-host", 1111)
    assert fs_config.parse_endpoint("h") == ("h", 1111)
    assert fs_config.parse_endpoint("h:42") == ("h", 42)
    assert fs_config.parse_endpoint("[::1]:42") == ("::1", 42)
    # Several nodes of one cluster, dialled in order; the default port fills in.
    assert fs_config.parse_endpoints("h:42") == [("h", 42)]
    assert fs_config.parse_endpoints("a:1,b,[::1]:3") == [("a", 1), ("b", 1111), ("::1", 3)]
    with pytest.raises(ConfigurationError, match="empty endpoint"):
        fs_config.parse_endpoints("a:1,,b:2")
    with pytest.raises(ConfigurationError, match="bad port"):
        fs_config.parse_endpoints("a:1,b:x")
    monkeypatch.setenv("IGNITE_FS_BLOCK_SIZE", "512k")
    monkeypatch.setenv("IGNITE_DATASET_USERNAME", "u")
    monkeypatch.setenv("IGNITE_FS_GARBAGE_DELAY", "2.5")
    s = fs_config.settings()
    assert s.block_size == 512 * 1024 and s.connection.username == "u" and s.garbage_delay == 2.5
    monkeypatch.setenv("IGNITE_DATASET_GARBAGE_DELAY", "99")  # a file-store option: IGNITE_FS_ only
    monkeypatch.delenv("IGNITE_FS_GARBAGE_DELAY")
    assert fs_config.settings().garbage_delay == GARBAGE_DELAY  # the settings' default is the store's
    monkeypatch.setenv("IGNITE_FS_GARBAGE_DELAY", "soon")
    with pytest.raises(ConfigurationError, match="IGNITE_FS_GARBAGE_DELAY"):
        fs_config.settings()
    monkeypatch.delenv("IGNITE_FS_GARBAGE_DELAY")
    try:
        fs_config.configure(host="configured", port=7)
        assert fs_config.parse_endpoint("") == ("configured", 7)
    finally:
        fs_config.reset()
    with pytest.raises(ConfigurationError) as info:
        fs_config.parse_endpoint("user:s3cret@host:1")
    assert "s3cret" not in str(info.value)
    monkeypatch.setenv("IGNITE_FS_BLOCK_SIZE", "huge")
    with pytest.raises(ConfigurationError):
        fs_config.settings()
    with pytest.raises(ConfigurationError):
        fs_config.configure(no_such_setting=1)


def test_one_pooled_store_per_endpoint(ignite_node: LocalCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    host, port = ignite_node.address()
    monkeypatch.setenv("IGNITE_FS_HOST", host)
    monkeypatch.setenv("IGNITE_FS_PORT", str(port))
    monkeypatch.setenv("IGNITE_FS_CACHE_PREFIX", "fs_pool_tests")
    a = fs_config.store_for("")
    b = fs_config.store_for(f"{host}:{port}")
    c = fs_config.store_for(f"{host.upper()}:{port}")
    assert a is b is c
    results: list[IgniteFileStore] = []
    run_threads(lambda: results.append(fs_config.store_for("")), (() for _ in range(8)))
    assert all(r is a for r in results)
    for i in range(20):
        a.write_file(f"/pool/{i}", b"x")
        a.stat(f"/pool/{i}")
    assert len(a.client.connections()) == 1, "one connection for one node, however many operations"


def test_tls_and_auth_from_the_environment(ignite_secure_node: LocalCluster,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    host, port = ignite_secure_node.address()
    settings = ignite_secure_node.client_settings()
    monkeypatch.setenv("IGNITE_FS_USERNAME", settings["username"])
    monkeypatch.setenv("IGNITE_FS_PASSWORD", settings["password"])
    # TLS files through the dataset's variables: the fallback chain
    monkeypatch.setenv("IGNITE_DATASET_CAFILE", settings["cafile"])
    monkeypatch.setenv("IGNITE_DATASET_CERTFILE", settings["certfile"])
    monkeypatch.setenv("IGNITE_DATASET_KEYFILE", settings["keyfile"])
    monkeypatch.setenv("IGNITE_DATASET_CERT_PASSWORD", settings["cert_password"])
    store = fs_config.store_for(f"{host}:{port}")
    store.write_file("/secure/hello.txt", b"over TLS")
    assert store.read_file("/secure/hello.txt") == b"over TLS"
    assert store.client.options.uses_tls
    monkeypatch.setenv("IGNITE_FS_PASSWORD", "wrong")
    with pytest.raises(AuthenticationError):
        fs_config.store_for(f"{host}:{port}")


@pytest.mark.cluster
def test_three_node_cluster(ignite_cluster: LocalCluster) -> None:
    """Backups on a real cluster, and block requests routed to the block's primary node."""
    with IgniteClient(ignite_cluster.addresses()[0]) as c:
        s = IgniteFileStore(c, cache_prefix="fs_cluster_tests", block_size=BS, backups=1, owns_client=False)
        routed = IgniteFileStore(c, cache_prefix="fs_cluster_routing", block_size=1024, backups=0,
                                 owns_client=False)
        try:
            data = pattern(12 * BS + 9)
            s.write_file("/c/f", data)
            s.rename("/c/f", "/c/g")
            with s.open_write("/c/g", append=True) as w:
                w.write(b"!")
            assert s.read_file("/c/g") == data + b"!"
            assert s.meta.configuration().backups == 1 and s.data.configuration().backups == 1
            s.rmtree("/c")
            # Without backups a node holds a block only if it is its primary: a local
            # peek on the node the store routed the block to must find it.
            routed.write_file("/r", pattern(30 * 1024))
            e = routed.stat("/r")
            assert isinstance(e, FileEntry)
            nodes = set()
            for i in range(e.blocks):
                key = e.key_of(i)
                node = routed.block_node(key)
                assert node is not None
                nodes.add(node)
                conn = c.connection_for_node(node)
                assert conn.handshake is not None and conn.handshake.node_id == node
                body = conn.request(lambda rid: requests.cache_local_peek(rid, routed.data.cache_id, key),
                                    Op.CACHE_LOCAL_PEEK)
                assert responses.decode_object(body, c.decoder()) is not None, f"block {key} not on {node}"
            assert len(nodes) == 3
        finally:
            s.close()
            routed.close()
