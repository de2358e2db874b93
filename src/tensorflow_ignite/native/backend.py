"""The interface the C++ shim calls, and a local-directory implementation of it.

The TensorFlow plugin (``tf_ignite_fs.cc``) is a thin bridge: every filesystem
operation TensorFlow asks of ``ignite://`` / ``igfs://`` is forwarded to one
Python object, the *backend*, installed with
:func:`tensorflow_ignite.native.loader.register_filesystems`.
:class:`FileSystemBackend` lists exactly the methods the shim calls; nothing
else is ever called on a backend.

Conventions shared by every method
----------------------------------
* Paths are full canonical URIs, ``ignite://host:port/dir/file``, as produced
  by :func:`tensorflow_ignite.native.uri.canonical_uri` (the shim's
  ``translate_name``).  The host may be empty (``igfs:///file``): the backend
  chooses its default host then.  ``ignite`` and ``igfs`` name the same tree.
* The root of every host (``ignite://host/``) is a directory that always
  exists.  The shim enforces this for ``stat``/``exists``/``isdir``/``listdir``
  even if the backend answers :class:`FileNotFoundError` for it.
* Errors are Python exceptions; the shim turns them into TensorFlow status
  codes (see :mod:`tensorflow_ignite.native.status`).  Raise the most precise
  builtin: :class:`FileNotFoundError` (missing path or parent),
  :class:`FileExistsError`, :class:`IsADirectoryError` /
  :class:`NotADirectoryError` (wrong kind of entry), ``OSError(ENOTEMPTY)``
  (non-empty directory), :class:`PermissionError`, :class:`ConnectionError`
  (cluster unreachable, TF ``UnavailableError``), :class:`TimeoutError`.  An
  exception with an integer ``tf_error_code`` attribute chooses its code itself.
* Methods may be called concurrently from many TensorFlow threads (each holds
  the GIL while in Python).  Release the GIL around blocking I/O (sockets and
  ``os`` calls do) so that parallel readers overlap.

Read handles (:class:`ReadHandle`)
----------------------------------
``open_read`` returns a handle, pinned to the file's content at open time (a
snapshot: a later overwrite or rename does not change what an open handle
reads).  TensorFlow reads with ``pread`` semantics, from several threads at once
on one handle (``TFRecordDataset(num_parallel_reads=...)``, checkpoint
restore), mostly sequentially in 256 KiB steps (TFRecord) or one tensor per
call (checkpoints).  ``read_into(offset, buffer)`` fills a writable
``memoryview`` *over TensorFlow's own buffer* -- no copy in the shim -- and
returns the number of bytes stored; it may return fewer than ``len(buffer)``
(the shim asks again for the rest) and returns 0 only at end of file.  A
handle can keep per-file state (block map, read-ahead of the next blocks for
sequential readers).  The ``memoryview`` is released when the call returns:
never keep it or a slice of it.

Write handles (:class:`WriteHandle`)
------------------------------------
``open_write(path, append)`` returns a handle used by one thread at a time.
``write(data)`` appends all of ``data`` (a read-only ``memoryview`` over
TensorFlow's buffer, valid only during the call: copy what you keep).  The
shim coalesces TensorFlow's many small appends (TFRecord writers append a
12-byte header, the record and a 4-byte footer separately) into chunks of
256 KiB before calling ``write``.  ``tell()`` is the current size.
``flush()`` makes the bytes written so far visible to readers that open the
file afterwards (TensorBoard tails event files that the summary writer
flushes); ``close()`` publishes the complete file.  A file that was never
flushed appears atomically at ``close()``; until then readers see the previous
content (or nothing).  With ``append=True`` the handle starts with the current
content of the file (created empty if missing).  TensorFlow's ``Sync`` is
forwarded as ``flush``.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat as stat_module
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple, Protocol, runtime_checkable

from tensorflow_ignite.native.uri import IgniteURI, parse_uri
from tensorflow_ignite.protocol.endpoint import DEFAULT_ENDPOINT

__all__ = [
    "FileStat",
    "ReadHandle",
    "WriteHandle",
    "FileSystemBackend",
    "LocalDirBackend",
    "DEFAULT_HOST",
]

#: Host used for URIs without one (``igfs:///file``) by :class:`LocalDirBackend`:
#: Ignite's default thin-client endpoint.
DEFAULT_HOST = DEFAULT_ENDPOINT


class FileStat(NamedTuple):
    """What ``stat`` returns: a plain 3-tuple is accepted by the shim too."""

    size: int
    """Length in bytes (0 for directories)."""
    mtime_ns: int
    """Modification time, nanoseconds since the Unix epoch (0 if unknown)."""
    is_dir: bool


@runtime_checkable
class ReadHandle(Protocol):
    """An open file for reading; see the module documentation."""

    def read_into(self, offset: int, buffer: memoryview) -> int:
        """Copy bytes starting at ``offset`` into ``buffer``; return how many (0 = EOF)."""
        ...

    def close(self) -> None:
        """Release resources; called once, when TensorFlow drops the file."""
        ...


@runtime_checkable
class WriteHandle(Protocol):
    """An open file for writing; see the module documentation."""

    def write(self, data: memoryview) -> None:
        """Append all of ``data``."""
        ...

    def tell(self) -> int:
        """Current size of the file being written, in bytes."""
        ...

    def flush(self) -> None:
        """Make everything written so far visible to new readers."""
        ...

    def close(self) -> None:
        """Publish the file; no call follows."""
        ...


@runtime_checkable
class FileSystemBackend(Protocol):
    """The operations the TensorFlow shim forwards, one method per operation.

    TensorFlow operation -> method: ``FileExists``/``Stat``/``IsDirectory``/
    ``GetFileSize`` -> :meth:`stat`; ``GetChildren`` -> :meth:`listdir`
    (``tf.io.gfile.glob`` and ``walk`` are built by TensorFlow from ``listdir``
    and ``stat``); ``CreateDir`` -> :meth:`mkdir`; ``RecursivelyCreateDir`` ->
    :meth:`makedirs`; ``DeleteFile`` -> :meth:`remove`; ``DeleteDir`` ->
    :meth:`rmdir`; ``DeleteRecursively`` -> :meth:`rmtree`; ``RenameFile`` ->
    :meth:`rename`; ``CopyFile`` -> :meth:`copy`; ``NewRandomAccessFile`` and
    ``NewReadOnlyMemoryRegionFromFile`` -> :meth:`open_read`;
    ``NewWritableFile``/``NewAppendableFile`` -> :meth:`open_write`.
    """

    def stat(self, path: str) -> FileStat:
        """Size, mtime and kind of ``path``; :class:`FileNotFoundError` if absent."""
        ...

    def listdir(self, path: str) -> Sequence[str]:
        """Names (not paths) of the entries of directory ``path``.

        :class:`FileNotFoundError` if absent, :class:`NotADirectoryError` if a file.
        """
        ...

    def mkdir(self, path: str) -> None:
        """Create one directory: :class:`FileExistsError` if ``path`` exists,
        :class:`FileNotFoundError` if the parent is missing."""
        ...

    def makedirs(self, path: str) -> None:
        """Create ``path`` and missing parents; fine if it is already a directory,
        :class:`NotADirectoryError` if it or a parent is a file."""
        ...

    def remove(self, path: str) -> None:
        """Delete a file: :class:`FileNotFoundError`, :class:`IsADirectoryError`."""
        ...

    def rmdir(self, path: str) -> None:
        """Delete an empty directory: ``OSError(ENOTEMPTY)`` if it has entries,
        :class:`NotADirectoryError` for a file, :class:`FileNotFoundError`."""
        ...

    def rmtree(self, path: str) -> None:
        """Delete ``path`` and everything below it (a file is just deleted);
        the root keeps existing, empty.  :class:`FileNotFoundError` if absent."""
        ...

    def rename(self, src: str, dst: str) -> None:
        """Atomically move ``src`` to ``dst``, replacing a file at ``dst``;
        missing parents of ``dst`` are created."""
        ...

    def copy(self, src: str, dst: str) -> None:
        """Copy file ``src`` to ``dst`` (replaced atomically if it exists);
        missing parents of ``dst`` are created."""
        ...

    def open_read(self, path: str) -> ReadHandle:
        """Open a file for reading: :class:`FileNotFoundError`,
        :class:`IsADirectoryError`."""
        ...

    def open_write(self, path: str, append: bool) -> WriteHandle:
        """Open a file for writing (truncating unless ``append``).

        Missing parent directories are created (as HDFS, IGFS and object
        stores do: Keras and many scripts write ``gs://``-style paths without
        ``makedirs``); :class:`NotADirectoryError` if a parent is a file,
        :class:`IsADirectoryError` if ``path`` is a directory.
        """
        ...


# --------------------------------------------------------------------------------
# LocalDirBackend


def _os_error(err: OSError, uri: str) -> OSError:
    """Re-raise an ``os`` error naming the URI instead of the local path."""
    if err.errno is None:
        return err
    # OSError(errno, ...) picks the matching subclass (FileNotFoundError, ...).
    return OSError(err.errno, os.strerror(err.errno), uri)


@contextmanager
def _as_uri_errors(uri: str) -> Iterator[None]:
    try:
        yield
    except OSError as err:
        raise _os_error(err, uri) from None


class _LocalReadHandle:
    """``pread`` on an open descriptor: a snapshot of the file at open time."""

    __slots__ = ("_fd", "_uri")

    def __init__(self, fd: int, uri: str) -> None:
        self._fd = fd
        self._uri = uri

    def read_into(self, offset: int, buffer: memoryview) -> int:
        with _as_uri_errors(self._uri):
            return os.preadv(self._fd, [buffer], offset)

    def close(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)

    def __del__(self) -> None:
        self.close()


class _LocalWriteHandle:
    """Writes to a staging file; ``flush``/``close`` publish it by ``os.replace``.

    After the first publication the descriptor points at the visible file and
    later writes land in it directly (readers see a growing file, as on a local
    disk); a file that is never flushed appears atomically at close.
    """

    def __init__(self, fd: int, staging: Path, target: Path, uri: str, position: int, publish_on_flush: bool) -> None:
        self._fd = fd
        self._staging = staging
        self._target = target
        self._uri = uri
        self._position = position
        self._publish_on_flush = publish_on_flush
        self._published = False

    def write(self, data: memoryview) -> None:
        self._check_open()
        view = memoryview(data).cast("B")
        with _as_uri_errors(self._uri):
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
                self._position += written

    def tell(self) -> int:
        self._check_open()
        return self._position

    def flush(self) -> None:
        self._check_open()
        if self._publish_on_flush:
            self._publish()

    def close(self) -> None:
        if self._fd < 0:
            return
        try:
            self._publish()
        finally:
            os.close(self._fd)
            self._fd = -1
            if not self._published:
                self._staging.unlink(missing_ok=True)

    def _publish(self) -> None:
        if self._published:
            return
        with _as_uri_errors(self._uri):
            if self._target.is_dir():
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), self._uri)
            os.replace(self._staging, self._target)
        self._published = True

    def _check_open(self) -> None:
        if self._fd < 0:
            raise ValueError(f"{self._uri}: write handle is closed")

    def __del__(self) -> None:
        # Dropped without close(): discard, never publish a half-written file.
        if getattr(self, "_fd", -1) >= 0:
            os.close(self._fd)
            self._fd = -1
            if not self._published:
                self._staging.unlink(missing_ok=True)


class LocalDirBackend:
    """A :class:`FileSystemBackend` over a local directory, for tests and as the
    reference for the semantics the Ignite-backed store implements.

    ``ignite://host:port/a/b`` (and ``igfs://host:port/a/b``) maps to
    ``<root>/host:port/a/b``; a URI without host uses ``default_host``.
    Writes go to ``<root>/.staging/`` and are published with an atomic
    ``os.replace`` at ``close`` (and at ``flush`` unless
    ``publish_on_flush=False``); writes, copies and renames create missing
    parent directories; ``rename`` is atomic; ``rmdir`` of a non-empty
    directory fails; renames across hosts fail with ``EXDEV`` (they would cross
    clusters in the real store) while copies across hosts work.
    """

    STAGING_DIR = ".staging"

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        default_host: str = DEFAULT_HOST,
        publish_on_flush: bool = True,
    ) -> None:
        self.root = Path(root).resolve()
        self.default_host = default_host
        self.publish_on_flush = publish_on_flush
        self._staging = self.root / self.STAGING_DIR
        self._staging.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._hosts_ready: set[str] = set()

    def __repr__(self) -> str:
        return f"LocalDirBackend({str(self.root)!r}, default_host={self.default_host!r})"

    # ---------------------------------------------------------------- mapping
    def _host_dir(self, host: str) -> Path:
        host = (host or self.default_host).lower()
        if not host or host.startswith(".") or "/" in host or "\\" in host or "\0" in host:
            raise ValueError(f"invalid host {host!r} in ignite:// URI")
        directory = self.root / host
        if host not in self._hosts_ready:
            directory.mkdir(exist_ok=True)  # the root of every host always exists
            with self._lock:
                self._hosts_ready.add(host)
        return directory

    def _local(self, uri: str) -> tuple[IgniteURI, Path]:
        parsed = parse_uri(uri)
        base = self._host_dir(parsed.host)
        return parsed, base.joinpath(*[p for p in parsed.path.split("/") if p])

    def _staging_file(self) -> tuple[int, Path]:
        path = self._staging / uuid.uuid4().hex
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        return fd, path

    @staticmethod
    def _make_parent_dirs(local: Path, uri: str) -> None:
        try:
            os.makedirs(local.parent, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise NotADirectoryError(errno.ENOTDIR, "a parent is not a directory", uri) from None
        except OSError as err:
            raise _os_error(err, uri) from None

    # ---------------------------------------------------------------- queries
    def stat(self, path: str) -> FileStat:
        _, local = self._local(path)
        with _as_uri_errors(path):
            st = os.stat(local)
        is_dir = stat_module.S_ISDIR(st.st_mode)
        return FileStat(0 if is_dir else st.st_size, st.st_mtime_ns, is_dir)

    def listdir(self, path: str) -> list[str]:
        _, local = self._local(path)
        with _as_uri_errors(path):
            return sorted(os.listdir(local))

    # ---------------------------------------------------------------- directories
    def mkdir(self, path: str) -> None:
        _, local = self._local(path)
        with _as_uri_errors(path):
            os.mkdir(local)

    def makedirs(self, path: str) -> None:
        _, local = self._local(path)
        try:
            os.makedirs(local, exist_ok=True)
        except FileExistsError:  # exists, but as a file
            raise NotADirectoryError(errno.ENOTDIR, "exists and is not a directory", path) from None
        except OSError as err:
            raise _os_error(err, path) from None

    def rmdir(self, path: str) -> None:
        parsed, local = self._local(path)
        if parsed.is_root:
            raise OSError(errno.EBUSY, "the root directory cannot be removed", path)
        with _as_uri_errors(path):
            os.rmdir(local)

    def rmtree(self, path: str) -> None:
        parsed, local = self._local(path)
        with _as_uri_errors(path):
            st = os.lstat(local)
            if not stat_module.S_ISDIR(st.st_mode):
                os.unlink(local)
            elif parsed.is_root:
                for name in os.listdir(local):
                    child = local / name
                    if child.is_dir() and not child.is_symlink():
                        shutil.rmtree(child)
                    else:
                        child.unlink()
            else:
                shutil.rmtree(local)

    # ---------------------------------------------------------------- files
    def remove(self, path: str) -> None:
        _, local = self._local(path)
        with _as_uri_errors(path):
            os.unlink(local)

    def rename(self, src: str, dst: str) -> None:
        src_uri, src_local = self._local(src)
        dst_uri, dst_local = self._local(dst)
        if (src_uri.host or self.default_host).lower() != (dst_uri.host or self.default_host).lower():
            raise OSError(errno.EXDEV, "rename across Ignite clusters (hosts) is not atomic", dst)
        if src_uri.is_root or dst_uri.is_root:
            raise OSError(errno.EBUSY, "the root directory cannot be renamed", src)
        with _as_uri_errors(src):
            src_is_dir = stat_module.S_ISDIR(os.stat(src_local).st_mode)
        self._make_parent_dirs(dst_local, dst)
        if not src_is_dir and dst_local.is_dir():
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), dst)
        with _as_uri_errors(f"{src} -> {dst}"):
            os.replace(src_local, dst_local)

    def copy(self, src: str, dst: str) -> None:
        _, dst_local = self._local(dst)
        reader = self.open_read(src)
        try:
            if dst_local.is_dir():
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), dst)
            self._make_parent_dirs(dst_local, dst)
            fd, staging = self._staging_file()
            try:
                with _as_uri_errors(dst):
                    offset = 0
                    buffer = bytearray(1 << 20)
                    view = memoryview(buffer)
                    while n := reader.read_into(offset, view):
                        os.write(fd, view[:n])
                        offset += n
                    os.close(fd)
                    fd = -1
                    os.replace(staging, dst_local)
            finally:
                if fd >= 0:
                    os.close(fd)
                staging.unlink(missing_ok=True)
        finally:
            reader.close()

    def open_read(self, path: str) -> _LocalReadHandle:
        _, local = self._local(path)
        with _as_uri_errors(path):
            fd = os.open(local, os.O_RDONLY | os.O_CLOEXEC)
        if stat_module.S_ISDIR(os.fstat(fd).st_mode):
            os.close(fd)
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        return _LocalReadHandle(fd, path)

    def open_write(self, path: str, append: bool) -> _LocalWriteHandle:
        parsed, local = self._local(path)
        if parsed.is_root or local.is_dir():
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        self._make_parent_dirs(local, path)
        fd, staging = self._staging_file()
        position = 0
        try:
            if append:
                try:
                    with open(local, "rb") as existing:
                        with open(fd, "wb", closefd=False) as out:
                            shutil.copyfileobj(existing, out, 1 << 20)
                except FileNotFoundError:
                    pass
                position = os.lseek(fd, 0, os.SEEK_END)
        except BaseException:
            os.close(fd)
            staging.unlink(missing_ok=True)
            raise
        return _LocalWriteHandle(fd, staging, local, path, position, self.publish_on_flush)
