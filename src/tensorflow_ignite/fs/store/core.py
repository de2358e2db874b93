"""``IgniteFileStore``: the two caches, the store's threads, and whole-file operations.

The store is composed of one part per concern -- :mod:`.tx` (transactions),
:mod:`.namespace` (the tree), :mod:`.blocks` (block transfers), :mod:`.gc`
(garbage) -- and opens :mod:`.reader` and :mod:`.writer` handles.
"""

from __future__ import annotations

import collections
import errno
import json
import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from ...protocol.cache_config import CacheConfiguration
from ..layout import (
    DEFAULT_BLOCK_SIZE,
    DirEntry,
    FileEntry,
    Range,
    name_of,
    new_id,
    normalize_path,
    parent_of,
    pending_key,
)
from .backend import StoreTables
from .blocks import Blocks
from .common import FILES_PER_TX, GARBAGE_DELAY, IO_THREADS, MAX_CONCURRENT_TX, now_ns, os_error, recreates_caches
from .gc import Garbage
from .generation import connect_client, is_ignite3, open_tables
from .ignite2 import cache_configurations
from .namespace import Namespace
from .readahead import DEFAULT_READ_AHEAD
from .reader import FileReader
from .tx import Transactions, TxView
from .writer import FileWriter

if TYPE_CHECKING:
    from ...client import IgniteClient
    from ...ignite3 import Ignite3Client
    from ..config import FsSettings

log = logging.getLogger(__name__)


class IgniteFileStore(Transactions, Namespace, Blocks, Garbage):
    """A file tree stored in two caches (Ignite 2) or tables (Ignite 3) of one cluster.

    ``client`` is an :class:`~tensorflow_ignite.client.IgniteClient` (Ignite 2) or an
    :class:`~tensorflow_ignite.ignite3.Ignite3Client` (Ignite 3); the store talks to
    it through :mod:`.backend`'s interface only (:mod:`.ignite2`, :mod:`.ignite3`).

    Paths are absolute (``/dir/file``); :func:`~.layout.normalize_path` cleans
    them.  Errors are the builtin ``OSError`` subclasses the
    :class:`~tensorflow_ignite.native.backend.FileSystemBackend` contract names,
    with the ``ignite://host:port/path`` URI as filename.
    """

    def __init__(
        self,
        client: "IgniteClient | Ignite3Client",
        *,
        cache_prefix: str = "ignite_fs",
        block_size: int = DEFAULT_BLOCK_SIZE,
        backups: int = 1,
        endpoint: str | None = None,
        owns_client: bool = True,
        garbage_delay: float = GARBAGE_DELAY,
        read_ahead: int = DEFAULT_READ_AHEAD,
        storage: str = "",
    ) -> None:
        if block_size < 1024:
            raise ValueError("block_size must be at least 1 KiB")
        if read_ahead < 0:
            raise ValueError(f"read_ahead must be >= 0 bytes (0 turns read-ahead off), not {read_ahead}")
        self.client = client
        self.block_size = int(block_size)
        #: Bytes each sequential reader fetches ahead (:mod:`.readahead`; 0: none).
        self.read_ahead = int(read_ahead)
        self.cache_prefix = cache_prefix
        self.backups = backups
        self.endpoint = endpoint or client.options.endpoints[0]
        self._owns_client = owns_client
        #: Counters for tests and diagnostics.
        self.stats: collections.Counter[str] = collections.Counter()
        #: The storage profile (Ignite 3) or data region (Ignite 2) of the tables; "": the cluster's default.
        self.storage = storage
        self.tables: StoreTables = open_tables(
            client, cache_prefix, backups, self.block_size, self.stats, storage=storage
        )
        self.meta = self.tables.meta
        #: The capacity guard of the data cache's region (capacity.py): writers admit every
        #: block before storing it, so a write that would fill the region fails instead.
        #: None on Ignite 3 (its client protocol reports no storage figures).
        self.capacity = self.tables.capacity()
        self._lock = threading.Lock()
        self._pins: collections.Counter[str] = collections.Counter()
        self._deferred: dict[str, tuple[list[Range], int]] = {}
        # Commit sequence and opens in progress (by the sequence they started at):
        # garbage committed at sequence n waits for opens that started before n,
        # which may have looked up the entry that referenced it and not pinned it yet.
        self._seq = 0
        self._opening: collections.Counter[int] = collections.Counter()
        self._tx_slots = threading.BoundedSemaphore(MAX_CONCURRENT_TX)
        self._executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="ignite-fs")
        # Block transfers (read-ahead, write-behind) have threads of their own, so
        # that garbage collection cannot delay them, nor they it.  The threads
        # mostly wait for the network with the GIL released.
        self._io = ThreadPoolExecutor(max_workers=IO_THREADS, thread_name_prefix="ignite-fs-io")
        self._background_work: set[Future[Any]] = set()
        self._init_garbage(garbage_delay)
        self.closed = False

    def cache_configurations(self) -> tuple[CacheConfiguration, CacheConfiguration]:
        """The meta and data caches this store creates on Ignite 2 (:func:`.ignite2.cache_configurations`)."""
        return cache_configurations(self.cache_prefix, self.backups, self.storage)

    @property
    def data(self) -> Any:
        """The data cache on Ignite 2 (tests and diagnostics read its size); None on Ignite 3, whose
        store reaches its data table through :attr:`tables` only."""
        return getattr(self.tables, "data", None)

    def _open_caches(self) -> None:
        self.tables.ensure_tables()
        self.meta = self.tables.meta

    def _caches_lost(self, exc: BaseException) -> None:
        """The tables are gone: an in-memory cluster was restarted (or someone
        dropped them).  The file tree is then empty; create the tables again
        so that this pooled store keeps working instead of failing forever."""
        log.warning(
            "ignite:// %s missing on %s (%s); creating them again: files stored before the cluster restarted are gone",
            self.tables.describe(),
            self.endpoint,
            exc,
        )
        self.stats["caches_recreated"] += 1
        self._open_caches()

    @classmethod
    def connect(cls, settings: "FsSettings") -> "IgniteFileStore":
        """A store on the process's shared client for ``settings`` (its tables created if missing).

        The generation is ``settings.generation`` (``2``, ``3``), or with ``auto`` the one whose
        handshake the endpoint answers (:func:`.generation.connect_client`)."""
        client = connect_client(settings.connection, settings.generation)
        # Ignite 2's client is the process's shared one; an Ignite 3 client is this store's own.
        return cls(
            client,
            cache_prefix=settings.cache_prefix,
            block_size=settings.block_size,
            backups=settings.backups,
            endpoint=",".join(settings.connection.endpoints),
            owns_client=is_ignite3(client),
            garbage_delay=settings.garbage_delay,
            read_ahead=settings.read_ahead,
            storage=settings.storage,
        )

    def close(self) -> None:
        """Finish background work and close the client (if this store opened it).

        Garbage still waiting out ``garbage_delay`` is deleted now: the process is
        done with the store, and blocks left behind would stay until
        :meth:`collect_garbage`."""
        if self.closed:
            return
        self.closed = True
        self._release_delayed(stop=True)
        self.drain()
        self._io.shutdown(wait=True)
        self._executor.shutdown(wait=True)
        self.tables.close()
        if self._owns_client:
            self.client.close()

    def __repr__(self) -> str:
        return f"<IgniteFileStore ignite://{self.endpoint} {self.tables.describe()}>"

    def uri(self, path: str) -> str:
        return f"ignite://{self.endpoint}{path}"

    # --------------------------------------------------------- background work
    def _background(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn`` on the store's threads (inline if the store is closing)."""
        try:
            fut = self._executor.submit(fn, *args)
        except RuntimeError:
            fn(*args)
            return
        with self._lock:
            self._background_work.add(fut)

        def done(f: Future[Any]) -> None:
            with self._lock:
                self._background_work.discard(f)

        fut.add_done_callback(done)

    def drain(self) -> None:
        """Finish background work: garbage waiting out ``garbage_delay`` is deleted now
        (unless a reader of this process still uses it), and whatever was started
        so far (garbage deletion, record cleanup) is waited for."""
        self._release_delayed()
        while True:
            with self._lock:
                pending = list(self._background_work)
            if not pending:
                return
            for fut in pending:
                try:
                    fut.result()
                except Exception as exc:  # noqa: BLE001 - logged where it matters
                    log.debug("background ignite:// work failed: %s", exc)

    # -------------------------------------------------------------------- files
    def copy(self, src: str, dst: str, *, to: "IgniteFileStore | None" = None) -> None:
        """Copy file ``src`` to ``dst`` (replaced atomically; parents created).

        ``to`` is the store ``dst`` lives in (another cluster), by default this one.
        """
        src, dst = normalize_path(src), normalize_path(dst)
        reader = self.open_read(src)
        try:
            writer = (to or self).open_write(dst)
            try:
                size, bs = reader.entry.size, reader.entry.block_size
                for index in range(reader.entry.blocks):
                    writer.write(reader.block(index)[: min(bs, size - index * bs)])
            except BaseException:
                writer.discard()
                raise
            writer.close()
        finally:
            reader.close()

    @recreates_caches
    def open_read(self, path: str) -> "FileReader":
        path = normalize_path(path)
        with self._open_guard():
            return FileReader(self, path, self._entry_as(FileEntry, self.lookup(path), path))

    @recreates_caches
    def open_write(self, path: str, append: bool = False, exclusive: bool = False) -> "FileWriter":
        return FileWriter(self, normalize_path(path), append=append, exclusive=exclusive)

    def read_file(self, path: str, start: int = 0, end: int | None = None) -> bytes:
        """Bytes ``[start, end)`` of a file (negative offsets count from the end)."""
        reader = self.open_read(path)
        try:
            size = reader.entry.size
            start = max(0, size + start) if start < 0 else min(start, size)
            end = size if end is None else (max(0, size + end) if end < 0 else min(end, size))
            return reader.read_range(start, end)
        finally:
            reader.close()

    def write_file(self, path: str, data: bytes | bytearray | memoryview, exclusive: bool = False) -> None:
        w = self.open_write(path, exclusive=exclusive)
        try:
            w.write(memoryview(data))
        except BaseException:
            w.discard()
            raise
        w.close()

    @recreates_caches
    def write_files(self, files: Mapping[str, bytes | bytearray | memoryview]) -> None:
        """Write many (small) files: blocks in batched requests, then one publishing
        transaction per :data:`FILES_PER_TX` files.  Each file appears atomically;
        existing files are replaced, missing parents created."""
        items = [(normalize_path(p), memoryview(d).cast("B")) for p, d in files.items()]
        bs = self.block_size
        now = now_ns()
        for i in range(0, len(items), FILES_PER_TX):
            chunk = items[i : i + FILES_PER_TX]
            planned: list[tuple[str, FileEntry]] = []
            pending: dict[str, str] = {}
            batch: list[tuple[str, bytes]] = []
            batch_bytes = 0
            for path, data in chunk:
                if path == "/":
                    raise os_error(IsADirectoryError, errno.EISDIR, self.uri(path))
                cid = new_id()
                entry = FileEntry(
                    id=new_id(),
                    size=len(data),
                    mtime_ns=now,
                    block_size=bs,
                    gen=1,
                    extents=((0, cid),) if len(data) else (),
                )
                planned.append((path, entry))
                pending[pending_key(cid)] = json.dumps({"p": path, "b": 0, "t": now}, separators=(",", ":"))
            size = sum(len(d) for _, d in chunk)
            blocks = sum(e.blocks for _, e in planned)
            self.admit_write(0, 0, remaining=(size, blocks), largest_entry=min(bs, size))
            self.meta.put_all(pending)

            def store(batch: list[tuple[str, bytes]], batch_bytes: int) -> None:
                self.admit_write(batch_bytes, len(batch), largest_entry=bs)
                self.tables.put_blocks(batch)

            try:
                for (_path, entry), (_, data) in zip(planned, chunk):
                    for b in range(entry.blocks):
                        piece = bytes(data[b * bs : (b + 1) * bs])
                        batch.append((entry.key_of(b), piece))
                        batch_bytes += len(piece)
                        if batch_bytes >= 8 << 20:
                            store(batch, batch_bytes)
                            batch, batch_bytes = [], 0
                if batch:
                    store(batch, batch_bytes)
            except BaseException:
                self._delete_blocks([(e.extents[0][1], 0, e.blocks) for _, e in planned if e.extents])
                self.meta.remove_keys(list(pending))
                raise

            def body(
                v: TxView, planned: list[tuple[str, FileEntry]] = planned, pending: dict[str, str] = pending
            ) -> None:
                v.fetch_entries([p for p, _ in planned] + [parent_of(p) for p, _ in planned])
                for path, entry in planned:
                    self._ensure_dirs(v, parent_of(path), now)
                    cur = v.entry(path)
                    if isinstance(cur, DirEntry):
                        raise os_error(IsADirectoryError, errno.EISDIR, self.uri(path))
                    if isinstance(cur, FileEntry):
                        v.add_garbage(cur.ranges())
                        entry = FileEntry(
                            entry.id, entry.size, entry.mtime_ns, entry.block_size, cur.gen + 1, entry.extents
                        )
                    else:
                        self._add_name(v, parent_of(path), name_of(path))
                    v.put_entry(path, entry)
                for k in pending:
                    v.remove(k)

            try:
                self._transact(body, f"publish {len(planned)} files")
            except BaseException:
                self._delete_blocks([(e.extents[0][1], 0, e.blocks) for _, e in planned if e.extents])
                self.meta.remove_keys(list(pending))
                raise
