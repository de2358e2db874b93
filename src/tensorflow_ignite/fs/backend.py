"""The TensorFlow-facing backend: ``ignite://`` URIs -> the pooled store of their endpoint.

:class:`IgniteBackend` implements
:class:`~tensorflow_ignite.native.backend.FileSystemBackend`, the interface the
C++ shim calls.  Each URI's host selects a store from the process-wide pool
(:func:`tensorflow_ignite.fs.config.store_for`): ``ignite://h:p/x`` the
cluster at ``h:p``, ``ignite:///x`` and ``igfs:///x`` the default endpoint.

``tensorflow_ignite.fs.backend:IgniteBackend`` is the value of
``$TF_IGNITE_FS_BACKEND`` that other processes (TensorBoard, workers) use.
"""

from __future__ import annotations

import errno
from collections.abc import Sequence

from ..native.backend import FileStat
from ..native.uri import parse_uri
from .config import reject_query, settings, store_for
from .store import FileReader, FileWriter, IgniteFileStore

__all__ = ["IgniteBackend", "BACKEND_SPEC"]

#: What ``$TF_IGNITE_FS_BACKEND`` is set to for child processes.
BACKEND_SPEC = "tensorflow_ignite.fs.backend:IgniteBackend"


class IgniteBackend:
    """``FileSystemBackend`` over Ignite file stores; stateless apart from the pool."""

    def __repr__(self) -> str:
        return f"IgniteBackend(default={settings().connection.endpoints[0]})"

    @staticmethod
    def resolve(uri: str) -> tuple[IgniteFileStore, str]:
        """The pooled store serving ``uri`` (an ``ignite://`` or ``igfs://`` URI) and the path in it.

        Every call of this backend goes through here, so the store returned is
        the one TensorFlow's file operations on ``uri`` use (opened on first use).
        """
        reject_query(uri)
        parsed = parse_uri(uri)
        return store_for(parsed.host), parsed.path

    # ------------------------------------------------------------------ queries
    def stat(self, path: str) -> FileStat:
        store, p = self.resolve(path)
        e = store.stat(p)
        return FileStat(e.size, e.mtime_ns, e.is_dir)

    def listdir(self, path: str) -> Sequence[str]:
        store, p = self.resolve(path)
        return store.listdir(p)

    # -------------------------------------------------------------- directories
    def mkdir(self, path: str) -> None:
        store, p = self.resolve(path)
        store.mkdir(p)

    def makedirs(self, path: str) -> None:
        store, p = self.resolve(path)
        store.makedirs(p)

    def rmdir(self, path: str) -> None:
        store, p = self.resolve(path)
        store.rmdir(p)

    def rmtree(self, path: str) -> None:
        store, p = self.resolve(path)
        store.rmtree(p)

    # -------------------------------------------------------------------- files
    def remove(self, path: str) -> None:
        store, p = self.resolve(path)
        store.remove(p)

    def rename(self, src: str, dst: str) -> None:
        s_store, s = self.resolve(src)
        d_store, d = self.resolve(dst)
        if s_store is not d_store:
            raise OSError(errno.EXDEV, "rename across Ignite clusters (hosts) is not atomic; copy instead", dst)
        s_store.rename(s, d)

    def copy(self, src: str, dst: str) -> None:
        s_store, s = self.resolve(src)
        d_store, d = self.resolve(dst)
        s_store.copy(s, d, to=d_store)

    def open_read(self, path: str) -> FileReader:
        store, p = self.resolve(path)
        return store.open_read(p)

    def open_write(self, path: str, append: bool) -> FileWriter:
        store, p = self.resolve(path)
        return store.open_write(p, append=append)
