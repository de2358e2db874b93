"""fsspec's own conformance suites (``fsspec.tests.abstract``) against a real node."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import fsspec
import pytest
from fsspec.tests import abstract

from tensorflow_ignite.fs.fsspec_fs import IgniteFileSystem
from tensorflow_ignite.local.cluster import LocalCluster

PREFIX = "fs_fsspec_tests"


@pytest.fixture(scope="module")
def endpoint(ignite_node: LocalCluster) -> tuple[str, int]:
    return ignite_node.address()


class IgniteFixtures(abstract.AbstractFixtures):
    """The fixtures the abstract suites need: our filesystem and a fresh base path."""

    @pytest.fixture
    def fs(self, endpoint: tuple[str, int]) -> IgniteFileSystem:
        host, port = endpoint
        return IgniteFileSystem(host=host, port=port, cache_prefix=PREFIX, block_size=64 * 1024)

    @pytest.fixture
    def fs_path(self, fs: IgniteFileSystem) -> Iterator[str]:
        path = f"/conformance-{uuid.uuid4().hex[:8]}"
        yield path
        if fs.exists(path):
            fs.rm(path, recursive=True)


# The suites this fsspec version ships (checked: copy, get, put, open, pipe).
_SUITES = [name for name in ("AbstractCopyTests", "AbstractGetTests", "AbstractPutTests",
                             "AbstractOpenTests", "AbstractPipeTests") if hasattr(abstract, name)]


class TestIgniteCopy(IgniteFixtures, abstract.AbstractCopyTests):
    pass


class TestIgniteGet(IgniteFixtures, abstract.AbstractGetTests):
    pass


class TestIgnitePut(IgniteFixtures, abstract.AbstractPutTests):
    pass


if hasattr(abstract, "AbstractOpenTests"):

    class TestIgniteOpen(IgniteFixtures, abstract.AbstractOpenTests):
        pass


if hasattr(abstract, "AbstractPipeTests"):

    class TestIgnitePipe(IgniteFixtures, abstract.AbstractPipeTests):
        pass


def test_all_shipped_suites_are_run() -> None:
    assert {"AbstractCopyTests", "AbstractGetTests", "AbstractPutTests"} <= set(_SUITES)


# ------------------------------------------------------------- beyond the suites
def test_urls_entry_points_and_pooling(endpoint: tuple[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    host, port = endpoint
    monkeypatch.setenv("IGNITE_FS_CACHE_PREFIX", PREFIX)
    url = f"ignite://{host}:{port}/urls/hello.txt"
    with fsspec.open(url, "wb") as f:
        f.write(b"hello")
    fs, path = fsspec.core.url_to_fs(url)
    assert isinstance(fs, IgniteFileSystem) and path == "/urls/hello.txt"
    assert fs.cat(url) == b"hello"
    # igfs:// is the same tree; ignite:/// uses the default endpoint
    monkeypatch.setenv("IGNITE_FS_HOST", host)
    monkeypatch.setenv("IGNITE_FS_PORT", str(port))
    assert fsspec.filesystem("igfs").cat("/urls/hello.txt") == b"hello"
    with fsspec.open("igfs:///urls/hello.txt", "rb") as f:
        assert f.read() == b"hello"
    assert fs.store is fsspec.filesystem("ignite", host=host, port=port).store
    assert fs.unstrip_protocol("/a") == f"ignite://{host}:{port}/a"
    with pytest.raises(ValueError) as info:
        fsspec.open(f"ignite://{host}:{port}/urls/x?password=s3cret", "rb").open()
    assert "s3cret" not in str(info.value)
    fs.rm("/urls", recursive=True)


def test_a_host_of_several_nodes_starts_while_any_answers(endpoint: tuple[str, int],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """``ignite://dead:port,live:port/...``: the first node named is down; fsspec and tf.io.gfile reach
    the same tree through the next one, and name the whole host in what they return."""
    import socket

    import tensorflow as tf

    host, port = endpoint
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = s.getsockname()[1]
    monkeypatch.setenv("IGNITE_FS_CACHE_PREFIX", PREFIX)
    several = f"127.0.0.1:{dead},{host}:{port}"
    with fsspec.open(f"ignite://{host}:{port}/several/a.txt", "wb") as f:
        f.write(b"through the live node")
    fs, path = fsspec.core.url_to_fs(f"ignite://{several}/several/a.txt")
    assert isinstance(fs, IgniteFileSystem) and path == "/several/a.txt"
    assert fs.cat(path) == b"through the live node"
    assert fs.unstrip_protocol("/b") == f"ignite://{several}/b"
    assert tf.io.gfile.GFile(f"ignite://{several}/several/a.txt", "rb").read() == b"through the live node"
    tf.io.gfile.rename(f"ignite://{several}/several/a.txt", f"ignite://{several}/several/b.txt")
    assert fsspec.filesystem("ignite", host=host, port=port).cat("/several/b.txt") == b"through the live node"
    with pytest.raises(ValueError, match="empty endpoint"):
        fsspec.core.url_to_fs(f"ignite://{host}:{port},,{host}:{port}/x")
    fs.rm("/several", recursive=True)


def test_mv_is_an_atomic_rename(endpoint: tuple[str, int]) -> None:
    host, port = endpoint
    fs = IgniteFileSystem(host=host, port=port, cache_prefix=PREFIX)
    fs.pipe({"/mv/a/1": b"1", "/mv/a/2": b"2", "/mv/b": b"b"})
    ids = {p: fs.info(p)["id"] for p in ("/mv/a", "/mv/b")}
    fs.mv("/mv/b", "/mv/c")
    assert fs.info("/mv/c")["id"] == ids["/mv/b"], "renamed, not copied"
    fs.mv("/mv/a", "/mv/d", recursive=True)
    assert fs.info("/mv/d")["id"] == ids["/mv/a"] and fs.cat("/mv/d/2") == b"2"
    fs.mkdir("/mv/into")
    fs.mv("/mv/c", "/mv/into")
    assert fs.cat("/mv/into/c") == b"b"
    fs.rm("/mv", recursive=True)
    assert not fs.exists("/mv")


def test_files_modes_and_transactions(endpoint: tuple[str, int]) -> None:
    host, port = endpoint
    fs = IgniteFileSystem(host=host, port=port, cache_prefix=PREFIX, block_size=64 * 1024)
    data = os.urandom(200_000)
    with fs.open("/modes/f", "wb", block_size=70_000) as f:
        f.write(data[:100_000])
        assert not fs.exists("/modes/f"), "not visible before close"
        f.write(data[100_000:])
    with fs.open("/modes/f", "ab") as f:
        assert f.tell() == len(data)
        f.write(b"END")
    with fs.open("/modes/f", "rb") as f:
        f.seek(199_990)
        assert f.read() == data[199_990:] + b"END"
        f.seek(5)
        assert f.read(3) == data[5:8]
    assert fs.cat_file("/modes/f", start=-3) == b"END"
    assert fs.size("/modes/f") == len(data) + 3
    with fs.open("/modes/t.txt", "w") as t:
        t.write("line one\nline two\n")
    with fs.open("/modes/t.txt", "r") as t:
        assert t.readlines() == ["line one\n", "line two\n"]
    with fs.transaction:
        with fs.open("/modes/tx1", "wb") as f:
            f.write(b"1")
        assert not fs.exists("/modes/tx1"), "committed with the transaction"
    assert fs.cat("/modes/tx1") == b"1"
    assert fs.modified("/modes/f").year >= 2024
    with pytest.raises(FileNotFoundError):
        fs.info("/modes/missing")
    with pytest.raises(FileNotFoundError):
        fs.open("/modes/missing", "rb")
    assert fs.ls("/modes", detail=False) == ["/modes/f", "/modes/t.txt", "/modes/tx1"]
    assert fs.glob("/modes/t*") == ["/modes/t.txt", "/modes/tx1"]
    assert fs.du("/modes") == len(data) + 3 + 18 + 1
    fs.rm("/modes", recursive=True)
