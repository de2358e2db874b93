"""fsspec filesystem for ``ignite://`` and ``igfs://`` (entry points in pyproject.toml).

Implements fsspec's primitives on :class:`~tensorflow_ignite.fs.store.IgniteFileStore`
and lets :class:`fsspec.AbstractFileSystem` derive the rest (glob, find, walk,
du, copy/get/put of trees...).  Where the store can do better than the
derived version it is used directly: ``mv`` is an atomic rename, ``rm -r`` the
store's ``rmtree``, ``cat_file`` a ranged read, ``pipe`` of many files one
batched write.

::

    import fsspec
    fs = fsspec.filesystem("ignite", host="10.0.0.5", port=10800)
    fs.pipe("/runs/notes.txt", b"hello")
    with fsspec.open("ignite://10.0.0.5:10800/runs/notes.txt") as f:
        print(f.read())

The URL's host and port pick the cluster (``ignite:///path`` the default from
:mod:`tensorflow_ignite.fs.config`); credentials and TLS come from the
keyword arguments or the same settings TensorFlow uses, never from the URL.
Instances for one endpoint share the process-wide store (one client).
"""

from __future__ import annotations

import datetime
import errno
from typing import Any

from fsspec.spec import AbstractBufferedFile, AbstractFileSystem

from .config import SETTING_NAMES, parse_settings, reject_query, store_for
from .layout import DirEntry, Entry, normalize_path
from .store import FileReader, FileWriter, IgniteFileStore

__all__ = ["IgniteFileSystem", "IgniteFile"]

_GLOB_CHARS = set("*?[")


class IgniteFileSystem(AbstractFileSystem):
    """A file tree stored in Ignite caches, as an fsspec filesystem.

    ``host``/``port`` choose the cluster (default: the configured endpoint);
    the other settings :func:`~tensorflow_ignite.fs.configure` takes
    (``username``, ``password``, ``cafile``, ... ``cache_prefix``,
    ``block_size``, ``read_ahead``) override the configured ones for this instance;
    sizes are bytes or strings such as ``"8m"`` (:func:`~tensorflow_ignite.fs.config.parse_settings`).
    """

    protocol = ("ignite", "igfs")
    root_marker = "/"

    def __init__(self, host: str | None = None, port: int | None = None, **kwargs: Any) -> None:
        self._overrides = parse_settings(
            {k: kwargs.pop(k) for k in SETTING_NAMES if k in kwargs and k not in ("host", "port")}
        )
        super().__init__(**kwargs)
        if host and port:
            self.endpoint = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        elif host:
            self.endpoint = host
        elif port:
            from .config import settings

            self.endpoint = f"{settings().connection.host}:{port}"
        else:
            self.endpoint = ""

    # ------------------------------------------------------------------- paths
    @property
    def store(self) -> IgniteFileStore:
        """The pooled store of this instance's endpoint (connects on first use)."""
        return store_for(self.endpoint, **self._overrides)

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        path = str(path)
        if path.startswith(("ignite://", "igfs://")):
            reject_query(path)
        for proto in cls.protocol:
            for sep in ("://", "::"):
                if path.startswith(proto + sep):
                    rest = path[len(proto) + len(sep) :]
                    path = "/" + rest.partition("/")[2] if sep == "://" else rest
                    break
        return normalize_path(path)

    @staticmethod
    def _get_kwargs_from_urls(path: str) -> dict[str, Any]:
        for proto in IgniteFileSystem.protocol:
            if path.startswith(proto + "://"):
                netloc = path[len(proto) + 3 :].partition("/")[0]
                if not netloc:
                    return {}
                from .config import parse_endpoints

                endpoints = parse_endpoints(netloc)
                if len(endpoints) > 1:  # several nodes: the store resolves the list itself
                    return {"host": netloc}
                host, port = endpoints[0]
                return {"host": host, "port": port}
        return {}

    def unstrip_protocol(self, name: str) -> str:
        if name.startswith(("ignite://", "igfs://")):
            return name
        return f"ignite://{self.endpoint}{normalize_path(name)}"

    @classmethod
    def _parent(cls, path: str) -> str:
        p = cls._strip_protocol(path)
        return p.rsplit("/", 1)[0] or "/"

    # ---------------------------------------------------------------- metadata
    @staticmethod
    def _info(path: str, entry: Entry) -> dict[str, Any]:
        is_dir = isinstance(entry, DirEntry)
        return {
            "name": path,
            "size": 0 if is_dir else entry.size,
            "type": "directory" if is_dir else "file",
            "mtime": entry.mtime_ns / 1e9,
            "id": entry.id,
            **({} if is_dir else {"generation": entry.gen, "block_size": entry.block_size}),  # type: ignore[union-attr]  # not is_dir: entry is a file entry
        }

    def info(self, path: str, **kwargs: Any) -> dict[str, Any]:
        path = self._strip_protocol(path)
        return self._info(path, self.store.stat(path))

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> list[Any]:
        path = self._strip_protocol(path)
        store = self.store
        e = store.stat(path)
        if not isinstance(e, DirEntry):
            return [self._info(path, e)] if detail else [path]
        base = path.rstrip("/")
        if not detail:
            return [f"{base}/{n}" for n in store.listdir(path)]
        return [self._info(f"{base}/{n}", ce) for n, ce in store.list_entries(path)]

    def modified(self, path: str) -> datetime.datetime:
        return datetime.datetime.fromtimestamp(self.info(path)["mtime"], tz=datetime.UTC)

    def created(self, path: str) -> datetime.datetime:
        """Files are immutable once published, so creation = last modification."""
        return self.modified(path)

    # ------------------------------------------------------------- directories
    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        path = self._strip_protocol(path)
        if create_parents:
            if self.exists(path):
                raise FileExistsError(errno.EEXIST, "exists", path)
            self.store.makedirs(path)
        else:
            self.store.mkdir(path)

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        path = self._strip_protocol(path)
        if not exist_ok and path != "/" and self.exists(path):
            raise FileExistsError(errno.EEXIST, "exists", path)
        self.store.makedirs(path)

    def rmdir(self, path: str) -> None:
        self.store.rmdir(self._strip_protocol(path))

    # ------------------------------------------------------------------- files
    def rm_file(self, path: str) -> None:
        path = self._strip_protocol(path)
        store = self.store
        if isinstance(store.lookup(path), DirEntry):
            store.rmdir(path)
        else:
            store.remove(path)

    _rm = rm_file

    def rm(self, path: Any, recursive: bool = False, maxdepth: int | None = None) -> None:
        if not recursive or maxdepth is not None:
            super().rm(path, recursive=recursive, maxdepth=maxdepth)
            return
        store = self.store
        for p in self.expand_path(path, recursive=False):
            e = store.lookup(p)
            if e is None:
                continue
            if isinstance(e, DirEntry):
                store.rmtree(p)
            else:
                store.remove(p)

    def cp_file(self, path1: str, path2: str, **kwargs: Any) -> None:
        path1, path2 = self._strip_protocol(path1), self._strip_protocol(path2)
        store = self.store
        if isinstance(store.stat(path1), DirEntry):
            store.makedirs(path2)
        else:
            store.copy(path1, path2)

    def mv(self, path1: Any, path2: Any, recursive: bool = False, maxdepth: int | None = None, **kwargs: Any) -> None:
        """An atomic rename for one path (file, or directory with ``recursive``);
        fsspec's copy-and-delete for globs and lists."""
        if isinstance(path1, str) and isinstance(path2, str) and maxdepth is None and not (_GLOB_CHARS & set(path1)):
            p1, p2 = self._strip_protocol(path1), self._strip_protocol(path2)
            store = self.store
            src = store.stat(p1)
            dst = store.lookup(p2)
            if isinstance(dst, DirEntry) or path2.endswith("/"):
                p2 = f"{p2.rstrip('/')}/{p1.rsplit('/', 1)[1]}"  # into the directory, like `mv`
            if isinstance(src, DirEntry) and not recursive:
                raise IsADirectoryError(errno.EISDIR, "moving a directory needs recursive=True", path1)
            if p1 != p2:
                store.rename(p1, p2)
            return
        super().mv(path1, path2, recursive=recursive, maxdepth=maxdepth, **kwargs)

    def cat_file(self, path: str, start: int | None = None, end: int | None = None, **kwargs: Any) -> bytes:
        return self.store.read_file(self._strip_protocol(path), start or 0, end)

    def pipe_file(self, path: str, value: bytes, mode: str = "overwrite", **kwargs: Any) -> None:
        self.store.write_file(self._strip_protocol(path), value, exclusive=(mode == "create"))

    def pipe(self, path: Any, value: bytes | None = None, **kwargs: Any) -> None:
        """Many files in one go: blocks batched, one publishing transaction per 500 files."""
        if isinstance(path, dict) and kwargs.get("mode", "overwrite") == "overwrite":
            self.store.write_files({self._strip_protocol(k): v for k, v in path.items()})
            return
        super().pipe(path, value, **kwargs)

    def _open(
        self,
        path: str,
        mode: str = "rb",
        block_size: int | None = None,
        autocommit: bool = True,
        cache_options: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> "IgniteFile":
        return IgniteFile(
            self,
            self._strip_protocol(path),
            mode,
            block_size=block_size,
            autocommit=autocommit,
            cache_options=cache_options,
            **kwargs,
        )


class IgniteFile(AbstractBufferedFile):
    """A file opened through fsspec.

    Reading: pinned to the content at open time (the store reader caches and
    reads ahead whole blocks, so fsspec's own cache is off by default).
    Writing (``wb``, ``ab``, ``xb``): bytes go to a store writer as fsspec
    flushes its buffer; the file appears at ``close`` (or at ``commit`` inside
    ``fs.transaction``); ``xb`` fails at open if the file exists, and again at
    close if it was created meanwhile.
    """

    DEFAULT_BLOCK_SIZE = 4 << 20

    def __init__(
        self,
        fs: IgniteFileSystem,
        path: str,
        mode: str = "rb",
        *,
        block_size: int | None = None,
        autocommit: bool = True,
        cache_options: dict[str, Any] | None = None,
        cache_type: str = "none",
        **kwargs: Any,
    ) -> None:
        store = fs.store
        self._reader: FileReader | None = None
        self._writer: FileWriter | None = None
        if mode == "rb":
            self._reader = store.open_read(path)
            kwargs["size"] = self._reader.size
        elif mode in ("wb", "ab", "xb"):
            self._writer = store.open_write(path, append=(mode == "ab"), exclusive=(mode == "xb"))
        super().__init__(
            fs,
            path,
            mode,
            block_size=block_size or self.DEFAULT_BLOCK_SIZE,
            autocommit=autocommit,
            cache_type=cache_type,
            cache_options=cache_options,
            **kwargs,
        )
        if self._writer is not None and mode == "ab":
            self.loc = self._writer.tell()

    # reading
    def _fetch_range(self, start: int, end: int) -> bytes:
        assert self._reader is not None
        return self._reader.read_range(start, end)

    # writing
    def _initiate_upload(self) -> None:
        """The writer was opened with the file (``xb`` checks, parents created)."""

    def _upload_chunk(self, final: bool = False) -> bool:
        assert self._writer is not None
        data = self.buffer.getbuffer()
        try:
            if len(data):
                self._writer.write(data)
        finally:
            del data
        if final and self.autocommit:
            self._writer.close()
        return True

    def commit(self) -> None:
        if self._writer is not None:
            self._writer.close()

    def discard(self) -> None:
        if self._writer is not None:
            self._writer.discard()

    def close(self) -> None:
        if self.closed:
            return
        try:
            super().close()
        finally:
            if self._reader is not None:
                self._reader.close()

    def __del__(self) -> None:
        """An unclosed file is discarded, never published half-written (fsspec's
        default would close, i.e. publish).  The cleanup runs on the store's
        threads: no network I/O inside a finalizer."""
        writer = getattr(self, "_writer", None)
        if writer is not None and not self.closed:
            self._closed = True
            try:
                writer.store._background(writer.discard)
            except Exception:  # noqa: BLE001 - collect_garbage() cleans up later
                pass
        reader = getattr(self, "_reader", None)
        if reader is not None:
            reader.close()
