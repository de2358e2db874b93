"""The capacity guard (issue 20, item 1): writes that would fill a data region are refused.

One node with a 64 MiB in-memory region.  Filling it would make Ignite stop the
node (``IgniteOutOfMemoryException`` is a critical failure), so a 100 MiB
``write``, ``ignite-tf load`` or ``ignite://`` file must be refused before
anything is stored, and a write that grows past the limit while it runs --
another client fills the region meanwhile -- must stop and roll back.  After
each: the node is up and the data that was there is intact.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tensorflow_ignite.capacity import (
    PARTITION_BYTES,
    CapacityGuard,
    RegionUsage,
)
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.data.write import write
from tensorflow_ignite.errors import CapacityError
from tensorflow_ignite.local.cluster import LocalCluster

from .test_writer import run_cli

MIB = 1 << 20
KEEP_ROWS = 2000


@pytest.fixture(scope="module")
def small_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path_factory.mktemp("capacity"), nodes=1, region_mb=64, heap_mb=256,
                           name="tfi-capacity")
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def client(small_node: LocalCluster) -> Iterator[IgniteClient]:
    host, port = small_node.address()
    c = IgniteClient(f"{host}:{port}")
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def kept(client: IgniteClient) -> Iterator[dict[str, np.ndarray]]:
    """Data that was there before: it must survive every refused write."""
    data = {"x": np.random.default_rng(7).integers(0, 255, (KEEP_ROWS, 784), dtype=np.uint8)}
    write("cap_keep", data, client=client, progress=False, mode="overwrite")
    yield data


def _region(client: IgniteClient) -> RegionUsage:
    guard = CapacityGuard(client, "cap_keep")
    rows = guard.regions()
    assert rows is not None and len(rows) == 1, rows
    assert guard.source == "launcher module"
    return rows[0]


def _assert_intact(cluster: LocalCluster, client: IgniteClient, kept: dict[str, np.ndarray]) -> None:
    assert cluster.members[0].alive()
    assert "Out of memory in data region" not in Path(cluster.members[0].log).read_text()
    cache = client.cache("cap_keep")
    assert cache.size() == KEEP_ROWS
    for k in (0, KEEP_ROWS // 2, KEEP_ROWS - 1):
        assert bytes(cache.get(k)["x"]) == kept["x"][k].tobytes()


def test_region_figures_come_from_the_module(small_node: LocalCluster, client: IgniteClient,
                                             kept: dict[str, np.ndarray]) -> None:
    region = _region(client)
    assert (region.region, region.default, region.persistence, region.guarded) == ("default", True, False, True)
    assert region.max_size == 64 * MIB
    # the kept cache: its partitions and ~1.9 MB of rows are in the region
    assert 1024 * PARTITION_BYTES * 0.8 < region.used_size < 40 * MIB, region


def test_a_write_that_grows_past_the_limit_while_running_stops_and_rolls_back(
        small_node: LocalCluster, client: IgniteClient, kept: dict[str, np.ndarray]) -> None:
    tf = pytest.importorskip("tensorflow")
    before = _region(client)
    free = before.free - 1024 * PARTITION_BYTES  # what the guard lets fill once the new cache exists
    assert free > 16 * MIB, before
    row = 64 << 10
    rows = int(free * 0.6) // row  # passes the up-front check comfortably
    first_part = rows // 3
    filler_bytes = free - (rows * row) // 3 * 2  # leaves room for a third of what is left to write
    host, port = small_node.address()
    filled = []
    runs = []

    def rows_then_someone_fills_the_region() -> Iterator[dict[str, np.ndarray]]:
        runs.append(1)  # write() reads the first rows once to plan, then everything
        for i in range(rows):
            if i == first_part and len(runs) == 2 and not filled:
                # Another client writes into the same region while the write runs.
                with IgniteClient(f"{host}:{port}") as other:
                    blob = bytes(MIB)
                    other.cache("cap_keep").put_all([(-1 - j, blob) for j in range(filler_bytes // MIB)])
                filled.append(True)
            yield {"x": np.full(row, i % 251, np.uint8)}

    spec = {"x": tf.TensorSpec((row,), tf.uint8)}
    ds = tf.data.Dataset.from_generator(rows_then_someone_fills_the_region, output_signature=spec)
    ds = ds.apply(tf.data.experimental.assert_cardinality(rows))
    with pytest.raises(CapacityError) as info:
        write("cap_grows", ds, client=client, progress=False, batch_bytes=MIB)
    err = info.value
    assert filled, "the filler never ran: the write stopped before it"
    assert (err.region, err.max_size) == ("default", 64 * MIB)
    assert err.needed > 0 and err.used > before.used_size
    assert "cap_grows" in str(err) and "'default'" in str(err)
    assert "was destroyed" in " ".join(getattr(err, "__notes__", []))
    assert "cap_grows" not in client.cache_names()
    after = _region(client)
    assert after.used_size <= before.used_size + filler_bytes * 1.1 + 2 * MIB  # the write's rows are gone
    client.cache("cap_keep").remove_keys([-1 - j for j in range(filler_bytes // MIB)])
    _assert_intact(small_node, client, kept)


def test_write_of_100_mib_is_refused_up_front(small_node: LocalCluster, client: IgniteClient,
                                              kept: dict[str, np.ndarray]) -> None:
    before = _region(client)
    with pytest.raises(CapacityError) as info:
        write("cap_big", {"x": np.zeros((100, MIB), np.uint8)}, client=client, progress=False)
    err = info.value
    assert err.region == "default" and err.max_size == 64 * MIB and err.needed > 100 * MIB
    assert abs(err.used - before.used_size) < 2 * MIB
    text = str(err)
    assert "cap_big" in text and "'default'" in text and "64.0 MiB" in text and "refused" in text
    assert "cap_big" not in client.cache_names()  # nothing created, nothing written
    assert _region(client).used_size <= before.used_size + MIB
    _assert_intact(small_node, client, kept)


def test_append_that_does_not_fit_adds_nothing(small_node: LocalCluster, client: IgniteClient,
                                               kept: dict[str, np.ndarray]) -> None:
    more = {"x": np.zeros((120_000, 784), np.uint8)}  # ~110 MiB
    with pytest.raises(CapacityError):
        write("cap_keep", more, client=client, progress=False, mode="append")
    _assert_intact(small_node, client, kept)


def test_ignite_tf_load_of_100_mib_is_refused(small_node: LocalCluster, client: IgniteClient,
                                              kept: dict[str, np.ndarray], tmp_path: Path) -> None:
    path = tmp_path / "big.npz"
    np.savez(path, x=np.zeros((100, MIB), np.uint8))
    host, port = small_node.address()
    out = run_cli("load", "cap_load", str(path), "--host", host, "--port", str(port), "--no-progress")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "refused" in out.stderr and "'default'" in out.stderr and "64.0 MiB" in out.stderr, out.stderr
    assert "cap_load" not in client.cache_names()
    _assert_intact(small_node, client, kept)


def test_ignite_file_outgrown_while_written_is_dropped(small_node: LocalCluster, client: IgniteClient,
                                                      kept: dict[str, np.ndarray]) -> None:
    """A file written 4 MiB at a time; after 12 MiB another client fills the region.  A later
    ``write`` is refused, the file is never published and its blocks are deleted."""
    from tensorflow_ignite import fs as ignite_fs

    host, port = small_node.address()
    store = ignite_fs.store_for(f"{host}:{port}")
    filler = 0
    try:
        store.write_file("/capacity/small.txt", b"kept")
        before = _region(client)
        chunk = bytes(4 * MIB)
        writer = store.open_write("/capacity/stream.bin")
        for _ in range(3):
            writer.write(chunk)
        filler = max(0, before.free - 12 * MIB - 8 * MIB) // MIB  # leaves the guard ~8 MiB
        blob = bytes(MIB)
        client.cache("cap_keep").put_all([(-1 - j, blob) for j in range(filler)])
        with pytest.raises(CapacityError) as info:
            for _ in range(8):
                writer.write(chunk)
        assert "ignite_fs_data" in str(info.value) and info.value.region == "default"
        writer.close()  # drops the file: an earlier write failed
        store.drain()
        assert store.lookup("/capacity/stream.bin") is None
        assert store.read_file("/capacity/small.txt") == b"kept"
        after = _region(client)
        assert after.used_size <= before.used_size + filler * MIB * 1.1 + 2 * MIB  # its blocks are gone
    finally:
        client.cache("cap_keep").remove_keys([-1 - j for j in range(filler)])
        ignite_fs.close_stores()
        ignite_fs.reset()
        for name in ("ignite_fs_meta", "ignite_fs_data"):
            client.destroy_cache(name)
    _assert_intact(small_node, client, kept)


def test_ignite_file_of_100_mib_is_refused_and_not_published(small_node: LocalCluster, client: IgniteClient,
                                                             kept: dict[str, np.ndarray]) -> None:
    tf = pytest.importorskip("tensorflow")
    from tensorflow_ignite import fs as ignite_fs
    from tensorflow_ignite.fs.backend import IgniteBackend
    from tensorflow_ignite.native import loader

    host, port = small_node.address()
    root = f"ignite://{host}:{port}/capacity"
    previous = loader.set_backend(IgniteBackend())
    try:
        tf.io.gfile.makedirs(root)
        with tf.io.gfile.GFile(f"{root}/small.txt", "w") as f:
            f.write("kept")
        store = ignite_fs.store_for(f"{host}:{port}")
        before = _region(client)
        blob = bytes(100 * MIB)
        with pytest.raises(tf.errors.ResourceExhaustedError) as info:
            with tf.io.gfile.GFile(f"{root}/big.bin", "wb") as f:
                f.write(blob)
        text = str(info.value)
        assert "ignite_fs_data" in text and "'default'" in text and "refused" in text, text
        assert not tf.io.gfile.exists(f"{root}/big.bin")
        assert tf.io.gfile.GFile(f"{root}/small.txt").read() == "kept"
        store.drain()
        assert store.capacity.stats["refusals"] >= 1
        assert _region(client).used_size <= before.used_size + 2 * MIB  # no block left behind
        # the store API refuses the same way
        with pytest.raises(CapacityError):
            store.write_file("/capacity/big2.bin", blob)
        assert not tf.io.gfile.exists(f"{root}/big2.bin")
    finally:
        ignite_fs.close_stores()
        ignite_fs.reset()
        loader.set_backend(previous)
    for name in ("ignite_fs_meta", "ignite_fs_data"):
        client.destroy_cache(name)
    _assert_intact(small_node, client, kept)


def test_rewrites_delete_delayed_garbage_when_room_runs_short(small_node: LocalCluster, client: IgniteClient,
                                                              kept: dict[str, np.ndarray]) -> None:
    """A file rewritten again and again (a checkpoint loop) while replaced content waits out
    ``garbage_delay``: the writes that would not fit delete the delayed garbage and go on."""
    from tensorflow_ignite.fs.store import IgniteFileStore

    store = IgniteFileStore(client, cache_prefix="cap_rewrite", garbage_delay=3600, owns_client=False)
    try:
        # 8 x 5 MiB: more than the ~20 MiB the 64 MiB region has left (the module's other data)
        for i in range(8):
            store.write_file("/ckpt.bin", bytes([i]) * (5 * MIB))
        assert store.stats["garbage_released_for_room"] >= 1
        assert store.read_file("/ckpt.bin", 0, 16) == bytes([7]) * 16
        assert store.capacity.stats["refusals"] >= 1  # what the release answered
    finally:
        store.close()
        for name in ("cap_rewrite_meta", "cap_rewrite_data"):
            client.destroy_cache(name)
    _assert_intact(small_node, client, kept)
