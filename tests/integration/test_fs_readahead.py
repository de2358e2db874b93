"""Read-ahead of ``ignite://`` readers against a real node: exact bytes through every way of
reading a file (the store's reader, ``tf.io.gfile``, fsspec, ``TFRecordDataset``), the memory
bound, and errors of blocks fetched ahead."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

tf = pytest.importorskip("tensorflow")
fsspec = pytest.importorskip("fsspec")

from tensorflow_ignite.client import IgniteClient  # noqa: E402
from tensorflow_ignite.fs import config as fs_config  # noqa: E402
from tensorflow_ignite.fs.backend import IgniteBackend  # noqa: E402
from tensorflow_ignite.fs.fsspec_fs import IgniteFileSystem  # noqa: E402
from tensorflow_ignite.fs.store import IgniteFileStore, StaleFileError  # noqa: E402
from tensorflow_ignite.local.cluster import LocalCluster  # noqa: E402
from tensorflow_ignite.native import loader  # noqa: E402
from tensorflow_ignite.testing.waiting import wait_for  # noqa: E402

gfile = tf.io.gfile
PREFIX = "fs_readahead_tests"
BS = 64 * 1024
AHEAD = 4 * BS  # IGNITE_FS_READ_AHEAD below
SIZE = 40 * BS + 12_345  # 41 blocks, the last one partial


def pattern(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


@pytest.fixture(scope="module")
def node_env(ignite_node: LocalCluster) -> Iterator[tuple[str, int]]:
    """Endpoint, small blocks and a read-ahead of four blocks, from the environment."""
    host, port = ignite_node.address()
    mp = pytest.MonkeyPatch()
    for k, v in {"IGNITE_FS_HOST": host, "IGNITE_FS_PORT": str(port), "IGNITE_FS_CACHE_PREFIX": PREFIX,
                 "IGNITE_FS_BLOCK_SIZE": "64k", "IGNITE_FS_READ_AHEAD": "256k"}.items():
        mp.setenv(k, v)
    previous = loader.set_backend(IgniteBackend())
    yield host, port
    fs_config.close_stores()  # while the node is up: their delayed garbage is deleted now
    loader.set_backend(previous)
    mp.undo()


@pytest.fixture
def base(node_env: tuple[str, int], request: pytest.FixtureRequest) -> Iterator[str]:
    host, port = node_env
    uri = f"ignite://{host}:{port}/{request.node.name.replace('[', '_').replace(']', '')}"
    yield uri
    if gfile.exists(uri):
        gfile.rmtree(uri)


@pytest.fixture
def big(base: str) -> tuple[str, bytes]:
    data = pattern(SIZE, 31)
    with gfile.GFile(f"{base}/big.bin", "wb") as f:
        f.write(data)
    return f"{base}/big.bin", data


def store_and_path(uri: str) -> tuple[IgniteFileStore, str]:
    return IgniteBackend.resolve(uri)


def test_the_store_takes_the_setting(big: tuple[str, bytes]) -> None:
    store, path = store_and_path(big[0])
    assert store.read_ahead == AHEAD
    with store.open_read(path) as r:
        assert r.read_ahead_blocks == 4 and r.stats.limit_bytes == 6 * BS


@pytest.mark.parametrize("chunk", [1000, 4097, BS - 1, BS + 1, 3 * BS + 7])
def test_sequential_read_in_odd_chunks_is_exact_and_bounded(big: tuple[str, bytes], chunk: int) -> None:
    uri, data = big
    store, path = store_and_path(uri)
    with store.open_read(path) as r:
        out = bytearray()
        buf = bytearray(chunk)
        while True:
            n = r.read_into(len(out), memoryview(buf))
            if n == 0:
                break
            out += buf[:n]
        assert bytes(out) == data
        stats = r.stats
        assert stats.blocks_prefetched > 0 and stats.prefetch_hits > 0
        assert stats.peak_held_bytes <= stats.limit_bytes
        assert stats.prefetches_discarded == 0 and stats.prefetch_errors == 0
    wait_for(lambda: r.stats.held_bytes == 0, timeout=30, what="gets in flight at close answered")


def test_seeks_backwards_and_forwards_drop_the_read_ahead(big: tuple[str, bytes]) -> None:
    uri, data = big
    store, path = store_and_path(uri)
    rnd = random.Random(5)
    with store.open_read(path) as r:
        for i in range(8):  # a run: the window fills
            assert r.read_range(i * BS, (i + 1) * BS) == data[i * BS:(i + 1) * BS]
        wait_for(lambda: r.stats.blocks_prefetched >= 4, timeout=30, what="read-ahead of the run")
        assert r.read_range(30 * BS + 3, 30 * BS + 100) == data[30 * BS + 3:30 * BS + 100]  # forwards
        assert r.stats.prefetches_discarded > 0
        discarded = r.stats.prefetches_discarded
        assert r.read_range(2 * BS + 9, 2 * BS + 10) == data[2 * BS + 9:2 * BS + 10]  # backwards
        assert r.stats.prefetches_discarded == discarded  # nothing was ahead after the last seek
        for _ in range(200):  # pread at arbitrary offsets
            a = rnd.randrange(SIZE)
            n = rnd.randrange(1, 3 * BS)
            assert r.read_range(a, a + n) == data[a:a + n]
            assert r.stats.held_bytes <= r.stats.limit_bytes
        assert r.read_range(SIZE - 10, SIZE + 10) == data[-10:]
        assert r.stats.peak_held_bytes <= r.stats.limit_bytes


def test_gfile_sequential_seek_and_whole_reads(big: tuple[str, bytes]) -> None:
    uri, data = big
    with gfile.GFile(uri, "rb") as f:
        assert f.read() == data
    with gfile.GFile(uri, "rb") as f:
        got = bytearray()
        sizes = [1, 333, BS - 5, 2 * BS + 17, 70_001]
        while len(got) < SIZE:
            piece = f.read(sizes[len(got) % len(sizes)])
            assert piece
            got += piece
        assert bytes(got) == data
        f.seek(25 * BS + 11)
        assert f.read(3 * BS) == data[25 * BS + 11:28 * BS + 11]
        f.seek(BS - 3)
        assert f.read(10) == data[BS - 3:BS + 7]
        f.seek(SIZE - 5)
        assert f.read() == data[-5:]


def test_fsspec_sequential_and_seeks(big: tuple[str, bytes], node_env: tuple[str, int]) -> None:
    uri, data = big
    host, port = node_env
    fs = IgniteFileSystem(host=host, port=port)
    path = uri.split(f"{host}:{port}", 1)[1]
    with fs.open(path, "rb") as f:
        got = bytearray()
        while chunk := f.read(50_021):
            got += chunk
        assert bytes(got) == data
        f.seek(17 * BS - 1)
        assert f.read(BS + 2) == data[17 * BS - 1:18 * BS + 1]
        f.seek(3)
        assert f.read(5) == data[3:8]
    with fsspec.open(uri, "rb") as f:
        assert f.read() == data


@pytest.mark.parametrize("read_ahead", ["128k", "128KiB", 128 * 1024])
def test_fsspec_takes_sizes_as_strings(big: tuple[str, bytes], node_env: tuple[str, int],
                                       read_ahead: str | int) -> None:
    uri, data = big
    host, port = node_env
    fs = IgniteFileSystem(host=host, port=port, read_ahead=read_ahead, block_size="64k")
    assert fs.store.read_ahead == 2 * BS and fs.store.block_size == BS
    path = uri.split(f"{host}:{port}", 1)[1]
    with fs.open(path, "rb") as f:
        assert f.read() == data


def test_tfrecord_dataset_over_ignite(base: str) -> None:
    rnd = random.Random(11)
    records = [rnd.randbytes(rnd.randrange(1, 40_000)) for _ in range(120)]  # ~2.4 MB, ~37 blocks
    uri = f"{base}/data.tfrecord"
    with tf.io.TFRecordWriter(uri) as w:
        for rec in records:
            w.write(rec)
    got = [bytes(x.numpy()) for x in tf.data.TFRecordDataset(uri)]
    assert got == records
    got = [bytes(x.numpy()) for x in tf.data.TFRecordDataset(uri, buffer_size=1000)]
    assert got == records


def test_an_error_of_a_block_fetched_ahead_is_raised_by_the_read_that_needs_it(
        base: str, ignite_node: LocalCluster) -> None:
    data = pattern(20 * BS, 7)
    uri = f"{base}/lossy.bin"
    with gfile.GFile(uri, "wb") as f:
        f.write(data)
    store, path = store_and_path(uri)
    with store.open_read(path) as r:
        with IgniteClient(ignite_node.addresses()) as c:
            c.cache(store.data.name).remove_key(r.entry.key_of(6))  # block 6 lost behind the reader's back
        for i in range(5):  # a run: blocks up to 8 are fetched ahead, 6 among them
            assert r.read_range(i * BS, (i + 1) * BS) == data[i * BS:(i + 1) * BS]
        wait_for(lambda: r.stats.prefetch_errors == 1, timeout=30, what="the read-ahead of block 6 failing")
        # Nobody reads block 6: no error, whatever else is read.
        assert r.read_range(15 * BS, 16 * BS) == data[15 * BS:16 * BS]
        assert r.read_range(0, 10) == data[:10]
        for i in range(3, 6):
            assert r.read_range(i * BS, (i + 1) * BS) == data[i * BS:(i + 1) * BS]
        wait_for(lambda: r.stats.prefetch_errors == 2, timeout=30, what="block 6 fetched ahead again")
        with pytest.raises(StaleFileError, match="lossy.bin"):
            r.read_range(6 * BS + 1, 6 * BS + 2)  # the read that needs it
    with pytest.raises(tf.errors.NotFoundError, match="lossy.bin"):
        with gfile.GFile(uri, "rb") as f:
            f.read()
