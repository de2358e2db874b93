"""LocalDirBackend semantics, URI canonicalization and the exception -> TF_Code table.

No TensorFlow here: these run in milliseconds.  The same semantics are checked
through TensorFlow in test_native_tf.py.
"""

from __future__ import annotations

import errno
import os

import pytest

from tensorflow_ignite import errors as ignite_errors
from tensorflow_ignite.native.backend import (
    FileStat,
    FileSystemBackend,
    LocalDirBackend,
    ReadHandle,
    WriteHandle,
)
from tensorflow_ignite.native.status import TFCode, code_for_exception, status_for_exception
from tensorflow_ignite.native.uri import canonical_uri, is_root, parse_uri

ROOT = "ignite://127.0.0.1:10800"  # the default endpoint (igfs:/// resolves to it)

# (input, canonical) -- also checked against the C++ translate_name in test_native_tf.py.
URI_CASES = [
    ("ignite://localhost:10800", "ignite://localhost:10800/"),
    ("ignite://localhost:10800/", "ignite://localhost:10800/"),
    ("ignite://h:1//a///b/", "ignite://h:1/a/b"),
    ("ignite://h:1/a/./b/../c", "ignite://h:1/a/c"),
    ("ignite://h:1/../../x", "ignite://h:1/x"),
    ("ignite://h:1/a/..", "ignite://h:1/"),
    ("igfs:///hello.txt", "igfs:///hello.txt"),
    ("igfs://", "igfs:///"),
    ("ignite://Host.Example:10800/Dir/File", "ignite://Host.Example:10800/Dir/File"),
    ("ignite://h/a b/ünï.txt", "ignite://h/a b/ünï.txt"),
    ("ignite://h/.hidden/..x/...", "ignite://h/.hidden/..x/..."),
]


def read_all(backend: LocalDirBackend, path: str, chunk: int = 7) -> bytes:
    handle = backend.open_read(path)
    try:
        out = bytearray()
        buffer = bytearray(chunk)  # small by default: several read_into calls
        while n := handle.read_into(len(out), memoryview(buffer)):
            out += buffer[:n]
        return bytes(out)
    finally:
        handle.close()


def write(backend: LocalDirBackend, path: str, data: bytes, append: bool = False) -> None:
    handle = backend.open_write(path, append)
    handle.write(memoryview(data))
    handle.close()


@pytest.fixture
def backend(tmp_path) -> LocalDirBackend:
    return LocalDirBackend(tmp_path / "store")


# ------------------------------------------------------------------------- URIs
@pytest.mark.parametrize(("uri", "expected"), URI_CASES)
def test_canonical_uri(uri: str, expected: str) -> None:
    assert canonical_uri(uri) == expected


def test_parse_uri_parts_and_errors() -> None:
    parsed = parse_uri("igfs://h:1/a/b")
    assert (parsed.scheme, parsed.host, parsed.path) == ("igfs", "h:1", "/a/b")
    assert is_root("ignite://h:1") and not is_root("ignite://h:1/a")
    with pytest.raises(ValueError, match="no scheme"):
        parse_uri("/local/path")
    with pytest.raises(ValueError, match="unsupported scheme"):
        parse_uri("s3://bucket/key")


# ---------------------------------------------------------------------- status
@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (FileNotFoundError(errno.ENOENT, "x"), TFCode.NOT_FOUND),
        (FileExistsError(errno.EEXIST, "x"), TFCode.ALREADY_EXISTS),
        (IsADirectoryError(errno.EISDIR, "x"), TFCode.FAILED_PRECONDITION),
        (NotADirectoryError(errno.ENOTDIR, "x"), TFCode.FAILED_PRECONDITION),
        (OSError(errno.ENOTEMPTY, "not empty"), TFCode.FAILED_PRECONDITION),
        (OSError(errno.EXDEV, "cross"), TFCode.FAILED_PRECONDITION),
        (OSError(errno.ENOSPC, "full"), TFCode.RESOURCE_EXHAUSTED),
        (PermissionError(errno.EACCES, "x"), TFCode.PERMISSION_DENIED),
        (ConnectionRefusedError(), TFCode.UNAVAILABLE),
        (ignite_errors.IgniteConnectionError("down"), TFCode.UNAVAILABLE),
        (ignite_errors.ConnectionTimeoutError("slow"), TFCode.UNAVAILABLE),
        (ignite_errors.AuthenticationError("bad password"), TFCode.UNAUTHENTICATED),
        (TimeoutError(), TFCode.DEADLINE_EXCEEDED),
        (ValueError("bad"), TFCode.INVALID_ARGUMENT),
        (NotImplementedError(), TFCode.UNIMPLEMENTED),
        (RuntimeError("boom"), TFCode.INTERNAL),
        (OSError(errno.EIO, "io"), TFCode.INTERNAL),
    ],
)
def test_code_for_exception(exc: BaseException, code: TFCode) -> None:
    assert code_for_exception(exc) is code


def test_explicit_tf_error_code_wins() -> None:
    class Aborted(RuntimeError):
        tf_error_code = 10

    assert code_for_exception(Aborted()) is TFCode.ABORTED
    bogus = RuntimeError()
    bogus.tf_error_code = 99  # type: ignore[attr-defined]
    assert code_for_exception(bogus) is TFCode.INTERNAL
    ok = RuntimeError()
    ok.tf_error_code = 0  # type: ignore[attr-defined]  # OK is not an error code
    assert code_for_exception(ok) is TFCode.INTERNAL


def test_status_message_keeps_exception_text() -> None:
    code, message = status_for_exception(PermissionError("nope, read-only"), "stat", f"{ROOT}/x")
    assert code == TFCode.PERMISSION_DENIED
    assert message == f"ignite filesystem: stat({ROOT}/x) failed: PermissionError: nope, read-only"


# ------------------------------------------------------------- LocalDirBackend
def test_satisfies_protocols(backend: LocalDirBackend) -> None:
    assert isinstance(backend, FileSystemBackend)
    write(backend, f"{ROOT}/f", b"x")
    reader = backend.open_read(f"{ROOT}/f")
    writer = backend.open_write(f"{ROOT}/g", False)
    assert isinstance(reader, ReadHandle) and isinstance(writer, WriteHandle)
    reader.close()
    writer.close()


def test_root_exists_and_default_host(backend: LocalDirBackend) -> None:
    assert backend.stat(f"{ROOT}/").is_dir
    assert backend.stat("igfs:///").is_dir
    write(backend, "igfs:///hello.txt", b"hi")
    assert read_all(backend, f"{ROOT}/hello.txt") == b"hi"
    assert backend.listdir("ignite://127.0.0.1:10800/") == ["hello.txt"]
    assert backend.listdir("ignite://LOCALHOST:10800/") == []  # another host name, another store
    assert (backend.root / "127.0.0.1:10800" / "hello.txt").read_bytes() == b"hi"
    with pytest.raises(ValueError, match="invalid host"):
        backend.stat("ignite://.staging/")


def test_stat(backend: LocalDirBackend) -> None:
    write(backend, f"{ROOT}/f", b"12345")
    st = backend.stat(f"{ROOT}/f")
    assert st == FileStat(5, st.mtime_ns, False) and st.mtime_ns > 0
    backend.mkdir(f"{ROOT}/d")
    assert backend.stat(f"{ROOT}/d") == FileStat(0, backend.stat(f"{ROOT}/d").mtime_ns, True)
    with pytest.raises(FileNotFoundError) as info:
        backend.stat(f"{ROOT}/missing")
    assert info.value.filename == f"{ROOT}/missing"  # errors name the URI, not the local path


def test_write_visible_only_at_close_without_flush_publishing(tmp_path) -> None:
    backend = LocalDirBackend(tmp_path, publish_on_flush=False)
    write(backend, f"{ROOT}/f", b"old")
    handle = backend.open_write(f"{ROOT}/f", False)
    handle.write(memoryview(b"new content"))
    handle.flush()
    assert read_all(backend, f"{ROOT}/f") == b"old"
    assert backend.listdir(f"{ROOT}/") == ["f"]  # the staging file is not listed
    handle.close()
    assert read_all(backend, f"{ROOT}/f") == b"new content"
    assert os.listdir(backend.root / ".staging") == []


def test_flush_publishes_prefix(backend: LocalDirBackend) -> None:
    handle = backend.open_write(f"{ROOT}/events", False)
    handle.write(memoryview(b"abc"))
    with pytest.raises(FileNotFoundError):
        backend.stat(f"{ROOT}/events")  # never flushed: invisible
    handle.flush()
    assert read_all(backend, f"{ROOT}/events") == b"abc"
    handle.write(memoryview(b"def"))
    handle.flush()
    assert read_all(backend, f"{ROOT}/events") == b"abcdef"
    assert handle.tell() == 6
    handle.close()
    assert read_all(backend, f"{ROOT}/events") == b"abcdef"


def test_dropped_writer_is_discarded(backend: LocalDirBackend) -> None:
    handle = backend.open_write(f"{ROOT}/f", False)
    handle.write(memoryview(b"partial"))
    del handle
    with pytest.raises(FileNotFoundError):
        backend.stat(f"{ROOT}/f")
    assert os.listdir(backend.root / ".staging") == []


def test_append_keeps_content(backend: LocalDirBackend) -> None:
    write(backend, f"{ROOT}/log", b"one,")
    handle = backend.open_write(f"{ROOT}/log", True)
    assert handle.tell() == 4
    handle.write(memoryview(b"two"))
    handle.close()
    assert read_all(backend, f"{ROOT}/log") == b"one,two"
    write(backend, f"{ROOT}/new", b"x", append=True)  # append creates
    assert read_all(backend, f"{ROOT}/new") == b"x"


def test_open_errors(backend: LocalDirBackend) -> None:
    backend.mkdir(f"{ROOT}/d")
    with pytest.raises(IsADirectoryError):
        backend.open_read(f"{ROOT}/d")
    with pytest.raises(IsADirectoryError):
        backend.open_write(f"{ROOT}/d", False)
    with pytest.raises(IsADirectoryError):
        backend.open_write(f"{ROOT}/", False)
    with pytest.raises(FileNotFoundError):
        backend.open_read(f"{ROOT}/missing")
    write(backend, f"{ROOT}/file", b"")
    with pytest.raises(NotADirectoryError):
        backend.open_write(f"{ROOT}/file/child", False)
    with pytest.raises(NotADirectoryError):
        backend.open_write(f"{ROOT}/file/sub/child", False)


def test_writes_create_missing_parents(backend: LocalDirBackend) -> None:
    write(backend, f"{ROOT}/new/parent/file", b"x")
    assert backend.stat(f"{ROOT}/new/parent").is_dir
    backend.copy(f"{ROOT}/new/parent/file", f"{ROOT}/copies/a/file")
    backend.rename(f"{ROOT}/copies/a/file", f"{ROOT}/moved/b/file")
    assert read_all(backend, f"{ROOT}/moved/b/file") == b"x"
    with pytest.raises(FileNotFoundError):  # a failing copy creates nothing
        backend.copy(f"{ROOT}/missing", f"{ROOT}/never/created")
    assert not (backend.root / "127.0.0.1:10800" / "never").exists()


def test_reader_is_a_snapshot(backend: LocalDirBackend) -> None:
    write(backend, f"{ROOT}/f", b"version 1")
    reader = backend.open_read(f"{ROOT}/f")
    write(backend, f"{ROOT}/f", b"version 2, longer")
    buffer = bytearray(64)
    n = reader.read_into(0, memoryview(buffer))
    assert bytes(buffer[:n]) == b"version 1"
    assert reader.read_into(n, memoryview(buffer)) == 0
    reader.close()


def test_directories(backend: LocalDirBackend) -> None:
    backend.mkdir(f"{ROOT}/a")
    with pytest.raises(FileExistsError):
        backend.mkdir(f"{ROOT}/a")
    with pytest.raises(FileNotFoundError):
        backend.mkdir(f"{ROOT}/x/y")
    backend.makedirs(f"{ROOT}/a/b/c")
    backend.makedirs(f"{ROOT}/a/b/c")  # exists: fine
    write(backend, f"{ROOT}/a/f", b"")
    with pytest.raises(NotADirectoryError):
        backend.makedirs(f"{ROOT}/a/f")
    with pytest.raises(NotADirectoryError):
        backend.makedirs(f"{ROOT}/a/f/g")
    assert backend.listdir(f"{ROOT}/a") == ["b", "f"]
    with pytest.raises(NotADirectoryError):
        backend.listdir(f"{ROOT}/a/f")
    with pytest.raises(OSError) as info:
        backend.rmdir(f"{ROOT}/a")
    assert info.value.errno == errno.ENOTEMPTY
    assert code_for_exception(info.value) is TFCode.FAILED_PRECONDITION
    backend.rmdir(f"{ROOT}/a/b/c")
    with pytest.raises(NotADirectoryError):
        backend.rmdir(f"{ROOT}/a/f")
    with pytest.raises(OSError) as info:
        backend.rmdir(f"{ROOT}/")
    assert info.value.errno == errno.EBUSY


def test_remove_and_rmtree(backend: LocalDirBackend) -> None:
    backend.makedirs(f"{ROOT}/t/u")
    write(backend, f"{ROOT}/t/u/f", b"1")
    write(backend, f"{ROOT}/top", b"2")
    with pytest.raises(IsADirectoryError):
        backend.remove(f"{ROOT}/t")
    backend.remove(f"{ROOT}/top")
    with pytest.raises(FileNotFoundError):
        backend.remove(f"{ROOT}/top")
    backend.rmtree(f"{ROOT}/t")
    assert backend.listdir(f"{ROOT}/") == []
    with pytest.raises(FileNotFoundError):
        backend.rmtree(f"{ROOT}/t")
    write(backend, f"{ROOT}/single", b"")
    backend.rmtree(f"{ROOT}/single")  # a file is just deleted
    backend.makedirs(f"{ROOT}/x/y")
    write(backend, f"{ROOT}/z", b"")
    backend.rmtree(f"{ROOT}/")  # the root is emptied, not removed
    assert backend.listdir(f"{ROOT}/") == [] and backend.stat(f"{ROOT}/").is_dir


def test_rename(backend: LocalDirBackend) -> None:
    write(backend, f"{ROOT}/a", b"A")
    write(backend, f"{ROOT}/b", b"B")
    backend.rename(f"{ROOT}/a", f"{ROOT}/b")  # overwrite
    assert read_all(backend, f"{ROOT}/b") == b"A"
    assert backend.listdir(f"{ROOT}/") == ["b"]
    with pytest.raises(FileNotFoundError):
        backend.rename(f"{ROOT}/a", f"{ROOT}/c")
    backend.makedirs(f"{ROOT}/d/e")
    with pytest.raises(IsADirectoryError):
        backend.rename(f"{ROOT}/b", f"{ROOT}/d")
    backend.rename(f"{ROOT}/d", f"{ROOT}/d2")  # directories move too
    assert backend.listdir(f"{ROOT}/d2") == ["e"]
    with pytest.raises(OSError) as info:
        backend.rename(f"{ROOT}/b", "ignite://otherhost:10800/b")
    assert info.value.errno == errno.EXDEV
    backend.rename(f"{ROOT}/b", "igfs:///b3")  # same (default) host
    assert read_all(backend, f"{ROOT}/b3") == b"A"


def test_copy(backend: LocalDirBackend) -> None:
    data = os.urandom(3 << 20)
    write(backend, f"{ROOT}/src", data)
    write(backend, f"{ROOT}/dst", b"old")
    backend.copy(f"{ROOT}/src", f"{ROOT}/dst")
    assert read_all(backend, f"{ROOT}/dst", chunk=1 << 16) == data
    backend.copy(f"{ROOT}/src", "ignite://otherhost:1/copy")  # across hosts is fine
    assert backend.stat("ignite://otherhost:1/copy").size == len(data)
    backend.mkdir(f"{ROOT}/d")
    with pytest.raises(IsADirectoryError):
        backend.copy(f"{ROOT}/src", f"{ROOT}/d")
    with pytest.raises(IsADirectoryError):
        backend.copy(f"{ROOT}/d", f"{ROOT}/x")
    with pytest.raises(FileNotFoundError):
        backend.copy(f"{ROOT}/missing", f"{ROOT}/x")
    assert os.listdir(backend.root / ".staging") == []
