"""The ``ignite://`` file store: files as blocks in one Ignite cache, metadata in another.

Layout of keys and records: :mod:`tensorflow_ignite.fs.layout`.  Design in
ARCHITECTURE.md ("ignite:// file store").  In short:

* **Blocks first, then one transaction.**  A writer streams its blocks under a
  fresh content id nobody else knows; only then does one transaction publish
  the entry (and the directory listing change).  Readers look the entry up
  first, so they see the old file or the new one, never a partial one.
* **Metadata changes are optimistic serializable transactions** on the meta
  cache: they read what they depend on (the entry, the parents, a listing
  bucket), compute, write, and commit; a commit that lost a race is retried
  from the start.  Rename over an existing file, create-with-parents,
  exclusive create and append all get their atomicity from that.
* **Garbage is recorded in the same transaction** that drops the last
  reference to blocks (``g:`` records) and deleted right after the commit --
  later if a reader in this process still has them open; a crash in between
  leaves the record for :meth:`IgniteFileStore.collect_garbage`.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import functools
import json
import logging
import math
import os
import random
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from ..client import IgniteClient, TransactionConflictError
from ..errors import CacheNotFoundError, IgniteConnectionError, ProtocolError, StaleFileError
from ..protocol import requests, responses
from ..protocol.cache_config import CacheConfiguration
from ..protocol.codes import (
    AtomicityMode,
    CacheMode,
    Op,
    PartitionLossPolicy,
    TypeCode,
    WriteSynchronizationMode,
)
from ..protocol.framing import reusable_frame
from ..protocol.hashing import java_string_hash
from .layout import (
    DEFAULT_BLOCK_SIZE,
    ROOT_ENTRY,
    SPLIT_NAMES,
    DirEntry,
    Entry,
    FileEntry,
    Range,
    ancestors,
    block_key,
    bucket_key,
    bucket_of,
    decode_bucket,
    decode_entry,
    encode_bucket,
    encode_entry,
    entry_key,
    garbage_key,
    name_of,
    new_id,
    normalize_path,
    parent_of,
    pending_key,
)

if TYPE_CHECKING:
    from ..client.connection import Connection
    from .config import FsSettings

__all__ = ["IgniteFileStore", "FileReader", "FileWriter", "StaleFileError"]

log = logging.getLogger(__name__)

T = TypeVar("T")

#: Attempts of one metadata transaction before giving up under contention.
MAX_TX_ATTEMPTS = 60
#: Concurrent transactions per store (Ignite allows 100 per connection by default).
MAX_CONCURRENT_TX = 48
#: Blocks a writer keeps in flight while it fills the next one.
WRITE_AHEAD = 3
#: Threads per store for block transfers (shared by all its readers and writers).
IO_THREADS = 8
#: Blocks a reader keeps (the current, the read-ahead, one behind for re-reads).
READ_CACHE_BLOCKS = 3
#: Block gets in flight while a large read receives blocks straight into its buffer.
DIRECT_AHEAD = 3
#: Files per publication transaction in :meth:`IgniteFileStore.write_files`.
FILES_PER_TX = 500
#: Data keys per remove request when collecting garbage.
REMOVE_BATCH = 512
#: Refresh a writer's ``w:`` record at most this often (seconds).
PENDING_REFRESH = 60.0
#: First size of a writer's block buffer (it grows to the block size as needed).
INITIAL_BUFFER = 64 * 1024
#: Reserved room before a block for the put request's header (key included).
_FRAME_ROOM = 96

_I32 = struct.Struct("<i")
_DELETED = object()

F = TypeVar("F", bound=Callable[..., Any])


def _recreates_caches(method: F) -> F:
    """Run a store operation once more after re-creating caches that vanished.

    A missing cache is reported before anything was changed, so running the
    operation again is safe.  Only the first-level operations carry this."""

    @functools.wraps(method)
    def wrapper(self: "IgniteFileStore", *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except CacheNotFoundError as exc:
            self._caches_lost(exc)
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]



class _Superseded(Exception):
    """A writer's file was replaced or removed by someone else; its output is dropped."""


def _now_ns() -> int:
    return time.time_ns()


def _err(cls: type[OSError], code: int, uri: str, text: str | None = None) -> OSError:
    return cls(code, text or os.strerror(code), uri)


# ================================================================== transactions
class _TxView:
    """The meta cache as one transaction sees it: reads go to the server once per key
    (recording the versions the commit validates), writes are buffered and sent
    in two batches just before the commit.  Listing buckets are kept decoded
    (a set per bucket) while the transaction runs, so adding many names to one
    directory costs one encoding per bucket, not one per name."""

    def __init__(self, store: "IgniteFileStore", tx: Any) -> None:
        self.store = store
        self.tx = tx
        self._values: dict[str, Any] = {}
        self._dirty: dict[str, Any] = {}
        self._buckets: dict[str, tuple[int, set[str]]] = {}
        self._dirty_buckets: set[str] = set()
        self.garbage: list[Range] = []
        self.after_commit: list[Callable[[], None]] = []

    # ------------------------------------------------------------------ raw keys
    def fetch(self, keys: Iterable[str]) -> None:
        missing = [k for k in dict.fromkeys(keys) if k not in self._values]
        if missing:
            got = self.tx.get_all(self.store.meta, missing)
            for k in missing:
                self._values[k] = got.get(k)

    def get(self, key: str) -> Any:
        if key in self._buckets:
            nb, names = self._buckets[key]
            return encode_bucket(nb, names)
        self.fetch([key])
        return self._values[key]

    def put(self, key: str, value: Any) -> None:
        self._buckets.pop(key, None)
        self._dirty_buckets.discard(key)
        self._values[key] = value
        self._dirty[key] = value

    def remove(self, key: str) -> None:
        self._buckets.pop(key, None)
        self._dirty_buckets.discard(key)
        self._values[key] = None
        self._dirty[key] = _DELETED

    # ------------------------------------------------------------------- buckets
    def bucket(self, dir_path: str, index: int) -> set[str]:
        """The names in one listing bucket (a live set: mutate, then :meth:`touch_bucket`)."""
        key = bucket_key(dir_path, index)
        found = self._buckets.get(key)
        if found is None:
            self.fetch([key])
            found = decode_bucket(self._values[key])
            self._buckets[key] = found
        return found[1]

    def set_bucket(self, dir_path: str, index: int, nb: int, names: set[str]) -> None:
        key = bucket_key(dir_path, index)
        self._buckets[key] = (nb, names)
        self._dirty_buckets.add(key)
        self._dirty.pop(key, None)

    def touch_bucket(self, dir_path: str, index: int, nb: int) -> None:
        key = bucket_key(dir_path, index)
        self._buckets[key] = (nb, self._buckets[key][1])
        self._dirty_buckets.add(key)
        self._dirty.pop(key, None)

    # ------------------------------------------------------------------- entries
    def entry(self, path: str) -> Entry | None:
        raw = self.get(entry_key(path))
        if raw is None:
            return ROOT_ENTRY if path == "/" else None
        return decode_entry(raw, path)

    def put_entry(self, path: str, entry: Entry) -> None:
        self.put(entry_key(path), encode_entry(entry))

    def remove_entry(self, path: str) -> None:
        self.remove(entry_key(path))

    def fetch_entries(self, paths: Iterable[str], extra: Iterable[str] = ()) -> None:
        self.fetch([*(entry_key(p) for p in paths), *extra])

    def add_garbage(self, ranges: Iterable[Range]) -> None:
        self.garbage.extend(r for r in ranges if r[2] > 0)

    # --------------------------------------------------------------------- flush
    def flush(self) -> str | None:
        """Send the buffered writes (plus one ``g:`` record for the garbage); returns its id."""
        for key in self._dirty_buckets:
            nb, names = self._buckets[key]
            self._dirty[key] = encode_bucket(nb, names)
        self._dirty_buckets.clear()
        gid = None
        if self.garbage:
            gid = new_id()
            self._dirty[garbage_key(gid)] = json.dumps(self.garbage, separators=(",", ":"))
        puts = [(k, v) for k, v in self._dirty.items() if v is not _DELETED]
        removes = [k for k, v in self._dirty.items() if v is _DELETED]
        self.tx.put_all(self.store.meta, puts)
        self.tx.remove_keys(self.store.meta, removes)
        return gid


# ========================================================================= store
class IgniteFileStore:
    """A file tree stored in two caches of one Ignite cluster.

    Paths are absolute (``/dir/file``); :func:`~.layout.normalize_path` cleans
    them.  Errors are the builtin ``OSError`` subclasses the
    :class:`~tensorflow_ignite.native.backend.FileSystemBackend` contract names,
    with the ``ignite://host:port/path`` URI as filename.
    """

    def __init__(
        self,
        client: IgniteClient,
        *,
        cache_prefix: str = "ignite_fs",
        block_size: int = DEFAULT_BLOCK_SIZE,
        backups: int = 1,
        endpoint: str | None = None,
        owns_client: bool = True,
    ) -> None:
        if block_size < 1024:
            raise ValueError("block_size must be at least 1 KiB")
        self.client = client
        self.block_size = int(block_size)
        self.cache_prefix = cache_prefix
        self.backups = backups
        h, p = client.seeds[0]
        self.endpoint = endpoint or f"{h}:{p}"
        self._owns_client = owns_client
        self._open_caches()
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
        self.closed = False
        #: Counters for tests and diagnostics.
        self.stats: collections.Counter[str] = collections.Counter()

    def cache_configurations(self) -> tuple[CacheConfiguration, CacheConfiguration]:
        """The meta and data caches: partitioned, ``backups`` copies, FULL_SYNC (a write
        returns once primary and backups have it, so losing a node loses no
        acknowledged write), READ_WRITE_SAFE on partition loss.  Caches that
        already exist keep the configuration they were created with."""
        meta = CacheConfiguration(
            name=f"{self.cache_prefix}_meta", cache_mode=CacheMode.PARTITIONED,
            atomicity_mode=AtomicityMode.TRANSACTIONAL, backups=self.backups,
            write_synchronization_mode=WriteSynchronizationMode.FULL_SYNC,
            # A partition whose every copy is gone makes reads fail rather than
            # return "no such block/entry" (a file silently missing or torn).
            partition_loss_policy=PartitionLossPolicy.READ_WRITE_SAFE,
        )
        data = CacheConfiguration(
            name=f"{self.cache_prefix}_data", cache_mode=CacheMode.PARTITIONED,
            atomicity_mode=AtomicityMode.ATOMIC, backups=self.backups,
            write_synchronization_mode=WriteSynchronizationMode.FULL_SYNC,
            # A partition whose every copy is gone makes reads fail rather than
            # return "no such block/entry" (a file silently missing or torn).
            partition_loss_policy=PartitionLossPolicy.READ_WRITE_SAFE,
        )
        return meta, data

    def _open_caches(self) -> None:
        meta, data = self.cache_configurations()
        self.meta = self.client.get_or_create_cache(meta)
        self.data = self.client.get_or_create_cache(data)

    def _caches_lost(self, exc: CacheNotFoundError) -> None:
        """The caches are gone: an in-memory cluster was restarted (or someone
        destroyed them).  The file tree is then empty; create the caches again
        so that this pooled store keeps working instead of failing forever."""
        log.warning("ignite:// caches %s_meta/_data missing on %s (%s); creating them again: files stored "
                    "before the cluster restarted are gone", self.cache_prefix, self.endpoint, exc)
        self.stats["caches_recreated"] += 1
        self._open_caches()

    @classmethod
    def connect(cls, settings: "FsSettings") -> "IgniteFileStore":
        """Open a client for ``settings`` and the store's caches (created if missing)."""
        client = IgniteClient((settings.host, settings.port), **settings.client_kwargs())
        host = f"[{settings.host}]" if ":" in settings.host else settings.host
        try:
            return cls(client, cache_prefix=settings.cache_prefix, block_size=settings.block_size,
                       backups=settings.backups, endpoint=f"{host}:{settings.port}")
        except BaseException:
            client.close()
            raise

    def close(self) -> None:
        """Finish background work and close the client (if this store opened it)."""
        if self.closed:
            return
        self.closed = True
        self.drain()
        self._io.shutdown(wait=True)
        self._executor.shutdown(wait=True)
        if self._owns_client:
            self.client.close()

    def __repr__(self) -> str:
        return f"<IgniteFileStore ignite://{self.endpoint} caches {self.cache_prefix}_meta/_data>"

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
        """Wait for background work started so far (garbage deletion, record cleanup)."""
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

    # ------------------------------------------------------------- transactions
    def _transact(self, body: Callable[[_TxView], T], what: str) -> T:
        """Run ``body`` in an optimistic serializable transaction, retrying lost races.

        ``body`` reads and writes through the view only, so running it again is
        safe.  A connection that fails before the commit is sent is replaced and
        the transaction run again; one that fails during the commit is reported
        (the outcome is unknown).
        """
        delay = 0.001
        reconnects = 0
        for attempt in range(MAX_TX_ATTEMPTS):
            with self._tx_slots:
                tx = None
                committing = False
                try:
                    tx = self.client.transaction(timeout=30.0, label=f"ignite-fs {what}")
                    view = _TxView(self, tx)
                    result = body(view)
                    gid = view.flush()
                    committing = True
                    tx.commit()
                except BaseException as exc:
                    if tx is not None and not isinstance(exc, IgniteConnectionError):
                        tx.rollback()
                    if isinstance(exc, IgniteConnectionError) and not committing and reconnects < 2:
                        reconnects += 1
                        if tx is not None:
                            self.client.drop_connection(tx.connection)
                        log.info("%s: connection lost (%s); running the transaction again", what, exc)
                        continue
                    if TransactionConflictError.retryable(exc):
                        self.stats["tx_conflicts"] += 1
                        log.debug("%s: transaction conflict (attempt %d): %s", what, attempt + 1, exc)
                        time.sleep(delay * random.uniform(0.5, 1.5))  # jitter: racers drift apart
                        delay = min(delay * 2, 0.05)
                        continue
                    raise
            self.stats["tx_commits"] += 1
            if gid is not None:
                with self._lock:
                    self._seq += 1
                    seq = self._seq
                self._background(self._collect, gid, view.garbage, seq)
            for action in view.after_commit:
                action()
            return result
        raise OSError(errno.EAGAIN, f"{what}: gave up after {MAX_TX_ATTEMPTS} conflicting concurrent updates")

    # --------------------------------------------------------------- listings
    def _add_name(self, v: _TxView, dir_path: str, name: str) -> None:
        d = v.entry(dir_path)
        assert isinstance(d, DirEntry)
        index = bucket_of(name, d.nb)
        names = v.bucket(dir_path, index)
        if name in names:
            return
        names.add(name)
        v.touch_bucket(dir_path, index, d.nb)
        if len(names) > SPLIT_NAMES:
            self._split(v, dir_path, d)

    def _remove_name(self, v: _TxView, dir_path: str, name: str) -> None:
        d = v.entry(dir_path)
        if not isinstance(d, DirEntry):
            return
        index = bucket_of(name, d.nb)
        names = v.bucket(dir_path, index)
        if name in names:
            names.discard(name)
            v.touch_bucket(dir_path, index, d.nb)

    def _names(self, v: _TxView, dir_path: str, d: DirEntry) -> set[str]:
        v.fetch(k for k in (bucket_key(dir_path, i) for i in range(d.nb)) if k not in v._buckets)
        out: set[str] = set()
        for i in range(d.nb):
            out |= v.bucket(dir_path, i)
        return out

    def _split(self, v: _TxView, dir_path: str, d: DirEntry) -> None:
        """Double the listing buckets of a directory until every bucket is half full at most."""
        names = self._names(v, dir_path, d)
        nb = d.nb
        while True:
            nb *= 2
            counts = collections.Counter(bucket_of(n, nb) for n in names)
            if max(counts.values(), default=0) <= SPLIT_NAMES // 2 or nb >= 1 << 16:
                break
        groups: dict[int, set[str]] = collections.defaultdict(set)
        for n in names:
            groups[bucket_of(n, nb)].add(n)
        for i in range(nb):
            v.set_bucket(dir_path, i, nb, groups.get(i, set()))
        v.put_entry(dir_path, DirEntry(id=d.id, mtime_ns=d.mtime_ns, nb=nb))
        self.stats["bucket_splits"] += 1

    def _drop_listing(self, v: _TxView, dir_path: str, d: DirEntry) -> None:
        for i in range(d.nb):
            v.remove(bucket_key(dir_path, i))

    def _ensure_dirs(self, v: _TxView, path: str, now: int) -> DirEntry:
        """``path`` as a directory, creating it and missing ancestors (inside ``v``)."""
        chain = ancestors(path) + [path] if path != "/" else ["/"]
        v.fetch_entries(chain)
        for p in chain:
            e = v.entry(p)
            if e is None:
                e = DirEntry(id=new_id(), mtime_ns=now, nb=1)
                v.put_entry(p, e)
                self._add_name(v, parent_of(p), name_of(p))
            elif not e.is_dir:
                raise _err(NotADirectoryError, errno.ENOTDIR, self.uri(path), f"{p} is a file, not a directory")
        d = v.entry(path)
        assert isinstance(d, DirEntry)
        return d

    # ------------------------------------------------------------------ queries
    @_recreates_caches
    def lookup(self, path: str) -> Entry | None:
        """The entry at ``path`` or None (one read, no transaction)."""
        path = normalize_path(path)
        raw = self.meta.get(entry_key(path))
        if raw is None:
            return ROOT_ENTRY if path == "/" else None
        return decode_entry(raw, path)

    def stat(self, path: str) -> Entry:
        e = self.lookup(path)
        if e is None:
            raise _err(FileNotFoundError, errno.ENOENT, self.uri(normalize_path(path)))
        return e

    @_recreates_caches
    def lookup_many(self, paths: Sequence[str]) -> dict[str, Entry]:
        """Entries of the existing ``paths`` (one request)."""
        norm = [normalize_path(p) for p in paths]
        got = self.meta.get_all([entry_key(p) for p in norm]) if norm else {}
        out: dict[str, Entry] = {}
        for p in norm:
            raw = got.get(entry_key(p))
            if raw is not None:
                out[p] = decode_entry(raw, p)
            elif p == "/":
                out[p] = ROOT_ENTRY
        return out

    @_recreates_caches
    def listdir(self, path: str) -> list[str]:
        """Names in directory ``path``, sorted.

        Small directories (one listing bucket) take one read; larger ones are
        read in a transaction so that the buckets are seen at one instant.
        """
        path = normalize_path(path)
        got = self.meta.get_all([entry_key(path), bucket_key(path, 0)])
        raw = got.get(entry_key(path))
        d = decode_entry(raw, path) if raw is not None else (ROOT_ENTRY if path == "/" else None)
        if d is None:
            raise _err(FileNotFoundError, errno.ENOENT, self.uri(path))
        if not isinstance(d, DirEntry):
            raise _err(NotADirectoryError, errno.ENOTDIR, self.uri(path))
        if d.nb == 1:
            nb, names = decode_bucket(got.get(bucket_key(path, 0)))
            if nb <= 1:
                return sorted(names)

        def body(v: _TxView) -> list[str]:
            e = v.entry(path)
            if e is None:
                raise _err(FileNotFoundError, errno.ENOENT, self.uri(path))
            if not isinstance(e, DirEntry):
                raise _err(NotADirectoryError, errno.ENOTDIR, self.uri(path))
            return sorted(self._names(v, path, e))

        return self._transact(body, f"listdir {path}")

    def list_entries(self, path: str) -> list[tuple[str, Entry]]:
        """``(name, entry)`` of every child of ``path`` (for ``ls -l`` style listings)."""
        path = normalize_path(path)
        names = self.listdir(path)
        base = path.rstrip("/")
        out: list[tuple[str, Entry]] = []
        for i in range(0, len(names), 1000):
            chunk = names[i:i + 1000]
            got = self.lookup_many([f"{base}/{n}" for n in chunk])
            out.extend((n, got[f"{base}/{n}"]) for n in chunk if f"{base}/{n}" in got)
        return out

    def walk(self, path: str) -> Iterator[tuple[str, list[str], list[str]]]:
        """``os.walk``-style, top-down: ``(dir path, dir names, file names)``."""
        path = normalize_path(path)
        entries = self.list_entries(path)
        dirs = [n for n, e in entries if e.is_dir]
        files = [n for n, e in entries if not e.is_dir]
        yield path, dirs, files
        base = path.rstrip("/")
        for d in dirs:
            try:
                yield from self.walk(f"{base}/{d}")
            except FileNotFoundError:
                continue

    # ------------------------------------------------------------- directories
    @_recreates_caches
    def mkdir(self, path: str) -> None:
        path = normalize_path(path)
        if path == "/":
            raise _err(FileExistsError, errno.EEXIST, self.uri(path))
        parent = parent_of(path)

        def body(v: _TxView) -> None:
            v.fetch_entries([parent, path])
            p = v.entry(parent)
            if p is None:
                raise _err(FileNotFoundError, errno.ENOENT, self.uri(path), "parent directory does not exist")
            if not p.is_dir:
                raise _err(NotADirectoryError, errno.ENOTDIR, self.uri(path), f"{parent} is a file")
            if v.entry(path) is not None:
                raise _err(FileExistsError, errno.EEXIST, self.uri(path))
            v.put_entry(path, DirEntry(id=new_id(), mtime_ns=_now_ns(), nb=1))
            self._add_name(v, parent, name_of(path))

        self._transact(body, f"mkdir {path}")

    @_recreates_caches
    def makedirs(self, path: str) -> None:
        path = normalize_path(path)
        e = self.lookup(path)
        if e is not None:
            if not e.is_dir:
                raise _err(NotADirectoryError, errno.ENOTDIR, self.uri(path), "exists and is not a directory")
            return
        self._transact(lambda v: self._ensure_dirs(v, path, _now_ns()), f"makedirs {path}")

    @_recreates_caches
    def rmdir(self, path: str) -> None:
        path = normalize_path(path)
        if path == "/":
            raise _err(OSError, errno.EBUSY, self.uri(path), "the root directory cannot be removed")

        def body(v: _TxView) -> None:
            e = v.entry(path)
            if e is None:
                raise _err(FileNotFoundError, errno.ENOENT, self.uri(path))
            if not isinstance(e, DirEntry):
                raise _err(NotADirectoryError, errno.ENOTDIR, self.uri(path))
            if self._names(v, path, e):
                raise _err(OSError, errno.ENOTEMPTY, self.uri(path))
            self._drop_listing(v, path, e)
            v.remove_entry(path)
            self._remove_name(v, parent_of(path), name_of(path))

        self._transact(body, f"rmdir {path}")

    @_recreates_caches
    def rmtree(self, path: str) -> None:
        """Delete ``path`` and everything below (the root is emptied, not removed).

        Not one transaction: files go in batches, then each directory once it is
        empty, bottom-up -- like ``rm -r``, a concurrent reader may see part of
        the tree gone.  Each step is atomic, so nothing is ever left dangling.
        """
        path = normalize_path(path)
        e = self.stat(path)
        if not e.is_dir:
            self.remove(path)
            return
        self._rmtree_dir(path, depth=0)

    def _rmtree_dir(self, path: str, depth: int) -> None:
        for _ in range(10):
            entries = self.list_entries(path)
            base = path.rstrip("/")
            for name, e in entries:
                if e.is_dir:
                    self._rmtree_dir(f"{base}/{name}", depth + 1)
            files = [(f"{base}/{n}", e) for n, e in entries if not e.is_dir]
            for i in range(0, len(files), FILES_PER_TX):
                self._remove_files(files[i:i + FILES_PER_TX])
            if path == "/":
                if not self.listdir(path):
                    return
                continue
            try:
                self.rmdir(path)
                return
            except FileNotFoundError:
                return
            except OSError as exc:
                if exc.errno != errno.ENOTEMPTY:
                    raise
                # Something was created meanwhile: another round.
        raise _err(OSError, errno.ENOTEMPTY, self.uri(path), "entries keep appearing while it is being deleted")

    def _remove_files(self, files: Sequence[tuple[str, Entry]]) -> None:
        def body(v: _TxView) -> None:
            v.fetch_entries(p for p, _ in files)
            for p, _ in files:
                cur = v.entry(p)
                if cur is None or cur.is_dir:
                    continue  # gone or replaced by a directory meanwhile: rmtree looks again
                assert isinstance(cur, FileEntry)
                v.remove_entry(p)
                self._remove_name(v, parent_of(p), name_of(p))
                v.add_garbage(cur.ranges())

        self._transact(body, f"remove {len(files)} files")

    # -------------------------------------------------------------------- files
    @_recreates_caches
    def remove(self, path: str) -> None:
        path = normalize_path(path)

        def body(v: _TxView) -> None:
            e = v.entry(path)
            if e is None:
                raise _err(FileNotFoundError, errno.ENOENT, self.uri(path))
            if not isinstance(e, FileEntry):
                raise _err(IsADirectoryError, errno.EISDIR, self.uri(path))
            v.remove_entry(path)
            self._remove_name(v, parent_of(path), name_of(path))
            v.add_garbage(e.ranges())

        self._transact(body, f"remove {path}")

    @_recreates_caches
    def rename(self, src: str, dst: str) -> None:
        """Atomically move ``src`` to ``dst``: a file at ``dst`` is replaced, an empty
        directory at ``dst`` is replaced by a directory, missing parents of ``dst`` are
        created.  A directory moves with everything below it in the same transaction."""
        src, dst = normalize_path(src), normalize_path(dst)
        if src == "/" or dst == "/":
            raise _err(OSError, errno.EBUSY, self.uri(src), "the root directory cannot be renamed or replaced")
        if dst.startswith(src + "/"):
            raise _err(OSError, errno.EINVAL, self.uri(dst), f"cannot move {src} into itself")
        if src == dst:
            self.stat(src)
            return
        now = _now_ns()

        def body(v: _TxView) -> None:
            v.fetch_entries([src, dst, parent_of(src), *ancestors(dst)])
            s = v.entry(src)
            if s is None:
                raise _err(FileNotFoundError, errno.ENOENT, self.uri(src))
            d = v.entry(dst)
            if isinstance(s, DirEntry):
                if d is not None:
                    if not isinstance(d, DirEntry):
                        raise _err(NotADirectoryError, errno.ENOTDIR, self.uri(dst))
                    if self._names(v, dst, d):
                        raise _err(OSError, errno.ENOTEMPTY, self.uri(dst))
                    self._drop_listing(v, dst, d)
            else:
                if isinstance(d, DirEntry):
                    raise _err(IsADirectoryError, errno.EISDIR, self.uri(dst))
                if isinstance(d, FileEntry) and d.id != s.id:
                    v.add_garbage(d.ranges())
            self._ensure_dirs(v, parent_of(dst), now)
            if isinstance(s, DirEntry):
                self._move_tree(v, src, dst, s)
            v.remove_entry(src)
            self._remove_name(v, parent_of(src), name_of(src))
            v.put_entry(dst, s)
            if d is None:
                self._add_name(v, parent_of(dst), name_of(dst))

        self._transact(body, f"rename {src} -> {dst}")

    def _move_tree(self, v: _TxView, src: str, dst: str, d: DirEntry) -> None:
        """Re-key everything below directory ``src`` to ``dst`` (inside ``v``)."""
        names = self._names(v, src, d)
        for i in range(d.nb):
            key = bucket_key(src, i)
            value = v.get(key)
            v.remove(key)
            if value is not None:
                v.put(bucket_key(dst, i), value)
        children = [f"{src}/{n}" for n in names]
        v.fetch_entries(children)
        for child in children:
            e = v.entry(child)
            if e is None:
                continue
            target = dst + child[len(src):]
            if isinstance(e, DirEntry):
                self._move_tree(v, child, target, e)
            v.remove_entry(child)
            v.put_entry(target, e)

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
                    writer.write(reader.block(index)[:min(bs, size - index * bs)])
            except BaseException:
                writer.discard()
                raise
            writer.close()
        finally:
            reader.close()

    @_recreates_caches
    def open_read(self, path: str) -> "FileReader":
        path = normalize_path(path)
        with self._open_guard():
            e = self.lookup(path)
            if e is None:
                raise _err(FileNotFoundError, errno.ENOENT, self.uri(path))
            if not isinstance(e, FileEntry):
                raise _err(IsADirectoryError, errno.EISDIR, self.uri(path))
            return FileReader(self, path, e)

    @_recreates_caches
    def open_write(self, path: str, append: bool = False, exclusive: bool = False) -> "FileWriter":
        return FileWriter(self, normalize_path(path), append=append, exclusive=exclusive)

    def read_file(self, path: str, start: int = 0, end: int | None = None) -> bytes:
        """Bytes ``[start, end)`` of a file (negative offsets count from the end)."""
        reader = self.open_read(path)
        try:
            size = reader.entry.size
            start = max(0, size + start) if start < 0 else min(start, size)
            end = size if end is None else (max(0, size + end) if end < 0 else min(end, size))
            if end <= start:
                return b""
            out = bytearray(end - start)
            view = memoryview(out)
            got = 0
            while got < len(out):
                n = reader.read_into(start + got, view[got:])
                if n == 0:
                    break
                got += n
            return bytes(out[:got])
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

    @_recreates_caches
    def write_files(self, files: Mapping[str, bytes | bytearray | memoryview]) -> None:
        """Write many (small) files: blocks in batched requests, then one publishing
        transaction per :data:`FILES_PER_TX` files.  Each file appears atomically;
        existing files are replaced, missing parents created."""
        items = [(normalize_path(p), memoryview(d).cast("B")) for p, d in files.items()]
        bs = self.block_size
        now = _now_ns()
        for i in range(0, len(items), FILES_PER_TX):
            chunk = items[i:i + FILES_PER_TX]
            planned: list[tuple[str, FileEntry]] = []
            pending: dict[str, str] = {}
            batch: list[tuple[str, bytes]] = []
            batch_bytes = 0
            for path, data in chunk:
                if path == "/":
                    raise _err(IsADirectoryError, errno.EISDIR, self.uri(path))
                cid = new_id()
                entry = FileEntry(id=new_id(), size=len(data), mtime_ns=now, block_size=bs, gen=1,
                                  extents=((0, cid),) if len(data) else ())
                planned.append((path, entry))
                pending[pending_key(cid)] = json.dumps({"p": path, "b": 0, "t": now}, separators=(",", ":"))
            self.meta.put_all(pending)
            for (path, entry), (_, data) in zip(planned, chunk):
                for b in range(entry.blocks):
                    piece = bytes(data[b * bs:(b + 1) * bs])
                    batch.append((entry.key_of(b), piece))
                    batch_bytes += len(piece)
                    if batch_bytes >= 8 << 20:
                        self.data.put_all(batch)
                        batch, batch_bytes = [], 0
            if batch:
                self.data.put_all(batch)

            def body(v: _TxView, planned: list[tuple[str, FileEntry]] = planned,
                     pending: dict[str, str] = pending) -> None:
                v.fetch_entries([p for p, _ in planned] + [parent_of(p) for p, _ in planned])
                for path, entry in planned:
                    self._ensure_dirs(v, parent_of(path), now)
                    cur = v.entry(path)
                    if isinstance(cur, DirEntry):
                        raise _err(IsADirectoryError, errno.EISDIR, self.uri(path))
                    if isinstance(cur, FileEntry):
                        v.add_garbage(cur.ranges())
                        entry = FileEntry(entry.id, entry.size, entry.mtime_ns, entry.block_size,
                                          cur.gen + 1, entry.extents)
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

    # ------------------------------------------------------------------- blocks
    def _block_node(self, key: str) -> uuid.UUID | None:
        """The primary node of a data block, so that its request skips a hop.

        Ignite places a String key by ``String.hashCode()`` through the
        rendezvous affinity function (``(h ^ h >>> 16) & (parts - 1)`` for a
        power-of-two partition count), which is what this computes; None
        (= any node, which forwards) when the map is not known or not usable.
        """
        if not self.client.partition_awareness:
            return None
        try:
            pmap = self.client.partition_map(self.data.name)
        except Exception:  # noqa: BLE001 - routing is an optimization only
            return None
        parts = pmap.partitions
        if not pmap.applicable or parts <= 0:
            return None
        h = java_string_hash(key)
        if parts & (parts - 1) == 0:
            u = h & 0xFFFFFFFF
            partition = (u ^ (u >> 16)) & (parts - 1)
        else:
            partition = abs(int(math.fmod(h, parts)))
        return pmap.primary(partition)

    def _get_block(self, key: str) -> memoryview | None:
        """The bytes of one data block (a view over the response), None when absent."""
        cache_id = self.data.cache_id
        body = self.client.request(lambda rid: requests.cache_get(rid, cache_id, key), Op.CACHE_GET,
                                   node_id=self._block_node(key))
        return self._block_of(key, body)

    def _block_of(self, key: str, body: memoryview) -> memoryview | None:
        block = responses.decode_byte_array_view(body, f"data block {key} of cache {self.data.name!r}")
        if block is not None:
            self.stats["blocks_read"] += 1
        return block

    def _put_frame(self, buffer: bytearray, key: str, length: int) -> memoryview:
        """A CACHE_PUT request frame built in place in front of a block buffer.

        ``buffer`` holds the block at ``[_FRAME_ROOM, _FRAME_ROOM + length)``; the
        header is written just before it, so the block is never copied.
        """
        start = requests.cache_put_bytes_head_into(buffer, _FRAME_ROOM, self.data.cache_id, key, length)
        return memoryview(buffer)[start:_FRAME_ROOM + length]

    def _put_block(self, buffer: bytearray, key: str, length: int) -> None:
        encode = reusable_frame(self._put_frame(buffer, key, length))
        # idempotent: a retry writes the same bytes
        self.client.request(encode, Op.CACHE_PUT, node_id=self._block_node(key))
        self.stats["blocks_written"] += 1

    def _send_block_from(self, key: str, block: memoryview) -> "Callable[[], None]":
        """Send a CACHE_PUT of ``block`` (memory the caller does not own) straight from it.

        The frame's header is sent followed by ``block`` itself (no copy into a
        block buffer); every byte is on the socket when this returns, so the
        caller may release ``block`` at once.  A connection that fails while
        sending is dropped and the put sent once more to another node (the
        block is still at hand).  Returns a function that waits for the
        acknowledgement (call it from any thread); a connection lost after the
        send fails it -- the block is gone by then, it cannot be sent again.
        """
        head = bytearray(_FRAME_ROOM)
        start = requests.cache_put_bytes_head_into(head, _FRAME_ROOM, self.data.cache_id, key, len(block))
        encode = reusable_frame(memoryview(head)[start:])

        client = self.client
        conn = client.connection_for_node(self._block_node(key))
        try:
            rid = conn.send_parts(encode, block)
        except IgniteConnectionError:
            client.drop_connection(conn)
            conn = client.default_connection
            rid = conn.send_parts(encode, block)

        def acknowledged() -> None:
            try:
                conn.receive(rid, Op.CACHE_PUT)
            except IgniteConnectionError:
                client.drop_connection(conn)
                raise
            self.stats["blocks_written"] += 1

        return acknowledged

    def _put_block_and_record(self, buffer: bytearray, key: str, length: int, record_key: str,
                              record: str) -> None:
        """Store a meta record and a block with one round trip (both requests sent, then
        both answers read); falls back to two plain requests if the connection fails."""
        encode_block = reusable_frame(self._put_frame(buffer, key, length))
        meta_id = self.meta.cache_id

        conn = self.client.connection_for_node(self._block_node(key))
        try:
            first = conn.send(lambda rid: requests.cache_put(rid, meta_id, record_key, record))
            second = conn.send(encode_block)
            conn.receive(first, Op.CACHE_PUT)
            conn.receive(second, Op.CACHE_PUT)
        except IgniteConnectionError:
            self.client.drop_connection(conn)
            self.meta.put(record_key, record)
            self.client.request(encode_block, Op.CACHE_PUT)
        self.stats["blocks_written"] += 1

    def _delete_blocks(self, ranges: Iterable[Range]) -> None:
        keys = [block_key(cid, i) for cid, first, n in ranges for i in range(first, first + n)]
        for i in range(0, len(keys), REMOVE_BATCH):
            self.data.remove_keys(keys[i:i + REMOVE_BATCH])
        self.stats["blocks_deleted"] += len(keys)

    # ------------------------------------------------------------------ garbage
    @contextlib.contextmanager
    def _open_guard(self) -> Iterator[None]:
        """Around "look the entry up, then pin its content" (see ``_opening``)."""
        with self._lock:
            start = self._seq
            self._opening[start] += 1
        try:
            yield
        finally:
            with self._lock:
                self._opening[start] -= 1
                if self._opening[start] <= 0:
                    del self._opening[start]
                ready = self._ready_locked()
            for gid, ranges, seq in ready:
                self._background(self._collect, gid, ranges, seq)

    def _pin(self, cids: Iterable[str]) -> None:
        with self._lock:
            self._pins.update(cids)

    def _unpin(self, cids: Iterable[str]) -> None:
        with self._lock:
            self._pins.subtract(cids)
            for cid in [c for c, n in self._pins.items() if n <= 0]:
                del self._pins[cid]
            ready = self._ready_locked()
        for gid, ranges, seq in ready:
            self._background(self._collect, gid, ranges, seq)

    def _blocked_locked(self, ranges: list[Range], seq: int) -> bool:
        return any(start < seq for start in self._opening) or any(cid in self._pins for cid, _, _ in ranges)

    def _ready_locked(self) -> list[tuple[str, list[Range], int]]:
        ready = [(gid, r, seq) for gid, (r, seq) in self._deferred.items() if not self._blocked_locked(r, seq)]
        for gid, _, _ in ready:
            del self._deferred[gid]
        return ready

    def _collect(self, gid: str, ranges: list[Range], seq: int) -> None:
        """Delete garbage blocks now, or once no reader of this process can still use them."""
        with self._lock:
            if self._blocked_locked(ranges, seq):
                self._deferred[gid] = (ranges, seq)
                return
        try:
            self._delete_blocks(ranges)
            self.meta.remove_key(garbage_key(gid))
        except Exception as exc:  # noqa: BLE001 - recorded in g:, collect_garbage() finishes it
            log.warning("ignite:// garbage %s not deleted yet (%s); collect_garbage() will retry", gid, exc)

    @_recreates_caches
    def collect_garbage(self, stale_after: float = 24 * 3600.0) -> dict[str, int]:
        """Delete blocks left behind by crashed processes (scans the meta cache).

        ``g:`` records (garbage whose deletion was interrupted) are deleted
        outright, except content that readers of this process still use;
        ``w:`` records older than ``stale_after`` seconds are writes whose
        writer never closed them: blocks their file does not reference are
        deleted.  Live writers refresh their record every minute.
        """
        stats = collections.Counter({"garbage_records": 0, "stale_writes": 0, "blocks_deleted": 0})
        before = self.stats["blocks_deleted"]
        now = _now_ns()
        records = [(k, v) for k, v in self.meta.scan(page_size=1024)
                   if isinstance(k, str) and k[:2] in ("g:", "w:")]
        for key, value in records:
            if key.startswith("g:"):
                stats["garbage_records"] += 1
                with self._lock:
                    seq = self._seq
                self._collect(key[2:], [tuple(r) for r in json.loads(value)], seq)  # type: ignore[misc]
                continue
            info = json.loads(value)
            if now - int(info.get("t", 0)) < stale_after * 1e9:
                continue
            stats["stale_writes"] += 1
            cid, path, first = key[2:], info.get("p", "/"), int(info.get("b", 0))
            e = self.lookup(path)
            start = first
            if isinstance(e, FileEntry):
                for c, f, n in e.ranges():
                    if c == cid:
                        start = max(start, f + n)
            self._delete_orphans(cid, start)
            self.meta.remove_key(key)
        stats["blocks_deleted"] = self.stats["blocks_deleted"] - before
        return dict(stats)

    def _delete_orphans(self, cid: str, start: int) -> None:
        """Delete blocks ``cid:start``, ``cid:start+1``... until several in a row are absent."""
        misses, index = 0, start
        while misses < 8:
            key = block_key(cid, index)
            if self.data.contains_key(key):
                self.data.remove_key(key)
                self.stats["blocks_deleted"] += 1
                misses = 0
            else:
                misses += 1
            index += 1


# ======================================================================= readers
class FileReader:
    """A read handle pinned to the content the file had when it was opened.

    Blocks are fetched whole and kept (a few at a time); a sequential reader
    gets the next block fetched in the background while it consumes this one.
    Whole blocks inside one large read bypass that cache: they are received
    straight into the caller's buffer.  Safe for concurrent ``read_into`` calls
    from many threads.
    """

    def __init__(self, store: IgniteFileStore, path: str, entry: FileEntry) -> None:
        self.store = store
        self.path = path
        self.entry = entry
        self._cids = entry.content_ids()
        store._pin(self._cids)
        self._lock = threading.Lock()
        self._cache: collections.OrderedDict[int, Future[memoryview]] = collections.OrderedDict()
        self._last = -1
        self._closed = False

    @property
    def size(self) -> int:
        return self.entry.size

    def _fetch(self, index: int) -> memoryview:
        return self._checked(index, self.store._get_block(self.entry.key_of(index)))

    def _checked(self, index: int, data: memoryview | None) -> memoryview:
        """Block ``index`` as fetched, or :class:`StaleFileError` if it is gone or short."""
        expected = min(self.entry.block_size, self.entry.size - index * self.entry.block_size)
        if data is None or len(data) < expected:
            raise StaleFileError(
                errno.ESTALE,
                "content changed while reading: the file was replaced or deleted by another "
                f"process (block {index} is gone); reopen it",
                self.store.uri(self.path),
            )
        return data

    def _slot(self, index: int) -> tuple[Future[memoryview], bool]:
        """The future for block ``index`` and whether the caller must fill it. Lock held."""
        fut = self._cache.get(index)
        if fut is not None:
            self._cache.move_to_end(index)
            return fut, False
        fut = Future()
        self._cache[index] = fut
        while len(self._cache) > READ_CACHE_BLOCKS:
            self._cache.popitem(last=False)
        return fut, True

    def _fill(self, index: int, fut: Future[memoryview]) -> None:
        try:
            fut.set_result(self._fetch(index))
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
            fut.set_exception(exc)
            with self._lock:
                if self._cache.get(index) is fut:
                    del self._cache[index]

    def block(self, index: int) -> memoryview:
        """Block ``index`` of the file (a read-only view; do not keep it past close)."""
        if self._closed:
            raise ValueError(f"{self.store.uri(self.path)}: read handle is closed")
        with self._lock:
            fut, mine = self._slot(index)
            sequential = index == self._last + 1
            self._last = index
            if sequential:
                self._cache.move_to_end(index)
        if sequential and index + 1 < self.entry.blocks:
            self._prefetch(index + 1)
        if mine:
            self._fill(index, fut)
        return fut.result()

    def _prefetch(self, index: int) -> None:
        """Fetch block ``index`` in the background unless it is cached or coming."""
        with self._lock:
            if index in self._cache:
                return
            fut, _ = self._slot(index)
        try:
            self.store._io.submit(self._fill, index, fut)
        except RuntimeError:  # executor shut down: fetch inline later
            with self._lock:
                if self._cache.get(index) is fut:
                    del self._cache[index]
            fut.cancel()

    def read_into(self, offset: int, buffer: memoryview) -> int:
        """Copy bytes from ``offset`` into ``buffer``; returns how many (0 at end of file).

        Blocks that lie wholly inside the request (a checkpoint restore reads each
        tensor with one call) are received straight into ``buffer``, several
        requests in flight; the partial blocks at either end go through the
        block cache (and its read-ahead).
        """
        if self._closed:
            raise ValueError(f"{self.store.uri(self.path)}: read handle is closed")
        size, bs = self.entry.size, self.entry.block_size
        want = min(len(buffer), size - offset)
        if want <= 0:
            return 0
        end = offset + want
        first = -(-offset // bs)
        last = self.entry.blocks if end == size else end // bs  # blocks [first, last) are inside
        if last <= first:
            return self._copy_blocks(offset, buffer[:want])
        head = first * bs - offset
        middle = min(last * bs, size) - offset
        self._copy_blocks(offset, buffer[:head])
        self._read_direct(first, last, buffer[head:middle])
        self._copy_blocks(offset + middle, buffer[middle:want])
        return want

    def _copy_blocks(self, offset: int, view: memoryview) -> int:
        """Fill ``view`` from ``offset`` through the block cache; returns the bytes copied."""
        size, bs = self.entry.size, self.entry.block_size
        want = len(view)
        got = 0
        while got < want and offset < size:
            index, within = divmod(offset, bs)
            data = self.block(index)
            n = min(len(data) - within, want - got, size - offset)
            view[got:got + n] = data[within:within + n]
            got += n
            offset += n
        return got

    def _read_direct(self, first: int, last: int, view: memoryview) -> None:
        """Receive blocks ``[first, last)`` into ``view`` (which starts at block ``first``).

        Up to :data:`DIRECT_AHEAD` gets are in flight; each answer is read from the
        socket into its place in ``view`` (:meth:`Connection.receive_into`), by
        whichever thread receives on that connection.  Blocks already cached (a
        read-ahead) are copied; after a lost connection the rest are fetched the
        ordinary way (with its retry).
        """
        store, bs = self.store, self.entry.block_size
        with self._lock:
            cached = {i: self._cache[i] for i in range(first, last) if i in self._cache}
            self._last = last - 1  # a read continuing at block `last` is sequential
        todo = collections.deque(i for i in range(first, last) if i not in cached)
        inflight: collections.deque[tuple[int, Connection, int]] = collections.deque()
        cache_id = store.data.cache_id

        def target(index: int) -> memoryview:
            start = (index - first) * bs
            return view[start:start + min(bs, self.entry.size - index * bs)]

        def send(index: int) -> None:
            key = self.entry.key_of(index)
            conn = store.client.connection_for_node(store._block_node(key))
            into = target(index)

            def encode(rid: int) -> bytes:
                frame = requests.cache_get(rid, cache_id, key)
                # Registered before the request leaves: no thread can read the answer first.
                conn.expect_into(rid, into, 5)
                inflight.append((index, conn, rid))
                return frame

            conn.send(encode)

        try:
            while todo or inflight:
                while todo and len(inflight) < DIRECT_AHEAD:
                    send(todo.popleft())
                index, conn, rid = inflight[0]
                body, filled = conn.receive_into(rid, Op.CACHE_GET)
                inflight.popleft()
                into = target(index)
                if filled:
                    (n,) = _I32.unpack_from(body, 1)
                    if body[0] != TypeCode.BYTE_ARR or n != len(into):
                        raise ProtocolError(f"data block {self.entry.key_of(index)}: unexpected answer header")
                    store.stats["blocks_read"] += 1
                else:
                    data = self._checked(index, store._block_of(self.entry.key_of(index), body))
                    into[:] = data[:len(into)]  # a block being rewritten may be longer
        except IgniteConnectionError:
            lost = [i for i, _, _ in inflight]
            for _, conn, rid in inflight:
                store.client.drop_connection(conn)
                conn.forget_into(rid)
            inflight.clear()
            for i in (*lost, *todo):
                into = target(i)
                into[:] = self._fetch(i)[:len(into)]
        finally:
            for _, conn, rid in inflight:
                conn.forget_into(rid)
        if last < self.entry.blocks:
            # The next read most likely starts there.  Not earlier: the background
            # fetch would receive (and park) some of the answers expected above.
            self._prefetch(last)
        for index, fut in cached.items():
            into = target(index)
            into[:] = fut.result()[:len(into)]

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._cache.clear()
        self.store._unpin(self._cids)

    def __enter__(self) -> "FileReader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ======================================================================= writers
class FileWriter:
    """A write handle: blocks under a fresh content id, published by :meth:`flush`/:meth:`close`.

    See :class:`~tensorflow_ignite.native.backend.WriteHandle` for the contract.
    A writer is bound to the file it opened: once it has published, a later
    publication requires the entry it last published (same file id and
    generation); if another writer replaced the file or someone deleted it
    meanwhile, this writer's further output is dropped with a warning -- as
    writes to an unlinked file are on POSIX.

    Whole blocks inside a large ``write`` (TensorFlow's checkpoint writer
    appends 8 MiB at a time) are sent straight from the caller's memory, in
    the caller's thread, before ``write`` returns; smaller pieces are copied
    into a block buffer that the store's I/O threads send.  Either way up to
    ``WRITE_AHEAD`` puts await their acknowledgement while the writer goes on.
    A writer that lost a block (or failed in the middle of a ``write``) stores
    and publishes nothing more: the call that met the failure raises it, later
    writes and flushes raise ``EIO``, and ``close`` drops the file with a warning.
    """

    def __init__(self, store: IgniteFileStore, path: str, *, append: bool, exclusive: bool) -> None:
        self.store = store
        self.path = path
        self.exclusive = exclusive
        uri = store.uri(path)
        if path == "/":
            raise _err(IsADirectoryError, errno.EISDIR, uri)
        parent = parent_of(path)
        with store._open_guard():
            found = store.lookup_many([parent, path])
            cur = found.get(path)
            # An append reads the old partial last block: pin it like a reader.
            tail_reader = FileReader(store, path, cur) if append and isinstance(cur, FileEntry) else None
        p = found.get(parent)
        if p is None:
            store.makedirs(parent)
        elif not p.is_dir:
            raise _err(NotADirectoryError, errno.ENOTDIR, uri, f"{parent} is a file, not a directory")
        self._maybe_new = cur is None
        try:
            self._init_content(store, path, uri, cur, append, exclusive, tail_reader)
        finally:
            if tail_reader is not None:
                tail_reader.close()

    def _init_content(self, store: IgniteFileStore, path: str, uri: str, cur: Entry | None, append: bool,
                      exclusive: bool, tail_reader: "FileReader | None") -> None:
        if cur is not None and cur.is_dir:
            raise _err(IsADirectoryError, errno.EISDIR, uri)
        if exclusive and cur is not None:
            raise _err(FileExistsError, errno.EEXIST, uri)
        self.cid = new_id()
        self._base: FileEntry | None = cur if (append and isinstance(cur, FileEntry)) else None
        base = self._base
        self.block_size = base.block_size if base is not None else store.block_size
        bs = self.block_size
        # Small files are common (indexes, state files): start small, grow to a block.
        self._buffer = bytearray(_FRAME_ROOM + min(bs, INITIAL_BUFFER))
        self._filled = 0
        if base is not None:
            self.file_id = base.id
            self._expect: tuple[str, int] | None = (base.id, base.gen)
            self._first_block, tail = divmod(base.size, bs)
            self._prefix_extents = tuple(x for x in base.extents if x[0] < self._first_block)
            self._position = base.size
            if tail:
                # The old last block is partial: it is rewritten, extended, under our id.
                assert tail_reader is not None
                self._reserve(tail)
                self._buffer[_FRAME_ROOM:_FRAME_ROOM + tail] = tail_reader.block(self._first_block)[:tail]
                self._filled = tail
        else:
            self.file_id = new_id()
            self._expect = None
            self._first_block = 0
            self._prefix_extents = ()
            self._position = 0
        self._block = self._first_block
        # Blocks being stored, with their buffers; a buffer whose put completed is
        # reused for a later block (fresh 4 MiB buffers cost page faults).
        # Blocks sent straight from the caller's memory (:meth:`_ship_block_from`) have no buffer.
        self._inflight: collections.deque[tuple[Future[None], bytearray | None]] = collections.deque()
        self._spare: list[bytearray] = []
        self._pending_at = 0.0  # when the w: record was last written (0 = not yet)
        self._published_once = False
        self._published_size = 0
        self._dirty = True
        self._orphaned = False
        self._closed = False
        #: Why this writer failed (a block it took could not be stored): it publishes nothing more.
        self._failed: str | None = None

    # ---------------------------------------------------------------- contract
    def write(self, data: memoryview | bytes | bytearray) -> None:
        self._check_open()
        view = memoryview(data).cast("B") if not isinstance(data, memoryview) or data.format != "B" else data
        bs = self.block_size
        try:
            while view:
                if not self._filled and len(view) >= bs:
                    # A whole block inside the caller's data (TensorFlow's checkpoint
                    # writer appends 8 MiB at a time): sent from there, not copied.
                    self._ship_block_from(view[:bs])
                    self._position += bs
                    view = view[bs:]
                    continue
                n = min(bs - self._filled, len(view))
                self._reserve(self._filled + n)
                start = _FRAME_ROOM + self._filled
                self._buffer[start:start + n] = view[:n]
                self._filled += n
                self._position += n
                view = view[n:]
                if self._filled == bs:
                    self._ship_full_block()
        except BaseException as exc:
            # Part of ``data`` may be taken and part not, or a block lost: the
            # content is no longer what the caller wrote, so it is never published.
            self._fail(exc)
            raise
        if len(data):
            self._dirty = True

    def tell(self) -> int:
        self._check_open()
        return self._position

    def _reserve(self, size: int) -> None:
        """Grow the block buffer (geometrically, up to one block) to hold ``size`` bytes."""
        capacity = len(self._buffer) - _FRAME_ROOM
        if size <= capacity:
            return
        grown = bytearray(_FRAME_ROOM + min(self.block_size, max(size, 2 * capacity)))
        grown[_FRAME_ROOM:_FRAME_ROOM + self._filled] = self._buffer[_FRAME_ROOM:_FRAME_ROOM + self._filled]
        self._buffer = grown

    def flush(self) -> None:
        self._check_open()
        if self._orphaned or not self._dirty:
            return
        self._store_tail()
        self._publish(final=False)

    def close(self) -> None:
        if self._closed:
            return
        if self._failed is not None:
            # The failure was raised to the caller of the call that met it (as a
            # failed write(2) is, not again by close(2)); TensorFlow drops such a
            # file without Close, and the shim then closes it quietly.
            log.warning("%s was not published: an earlier write to it failed (%s)",
                        self.store.uri(self.path), self._failed)
            self.discard()
            return
        try:
            if self._orphaned:
                pass
            elif self._dirty or not self._published_once:
                self._store_tail()
                self._publish(final=True)
            elif self._pending_at:  # flushed just before closing (TF's Close after Flush/Sync)
                self.store._background(self.store.meta.remove_key, pending_key(self.cid))
        except BaseException:
            self._abandon()
            raise
        finally:
            self._closed = True
            self._buffer = bytearray()
            self._spare.clear()

    def discard(self) -> None:
        """Drop everything written and not yet published (no publication)."""
        if not self._closed:
            self._closed = True
            self._abandon()
            self._buffer = bytearray()
            self._spare.clear()

    # ------------------------------------------------------------------ blocks
    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"{self.store.uri(self.path)}: write handle is closed")
        self._check_failed()

    def _fail(self, exc: BaseException) -> None:
        if self._failed is None:
            self._failed = f"{type(exc).__name__}: {exc}"

    def _check_failed(self) -> None:
        if self._failed is not None:
            raise OSError(errno.EIO, f"an earlier write to this file failed ({self._failed}); "
                                     "nothing more is stored or published", self.store.uri(self.path))

    def _pending_record(self) -> str:
        record = {"p": self.path, "b": self._first_block, "t": _now_ns(),
                  "h": socket.gethostname(), "pid": os.getpid()}
        return json.dumps(record, separators=(",", ":"))

    def _register_pending(self) -> None:
        """Write (or refresh) this writer's ``w:`` record before its blocks."""
        now = time.monotonic()
        if self._pending_at and now - self._pending_at < PENDING_REFRESH:
            return
        self.store.meta.put(pending_key(self.cid), self._pending_record())
        self._pending_at = now

    def _ship_full_block(self) -> None:
        """Send the full buffer in the background and start a new one."""
        if self._orphaned:
            self._block += 1
            self._filled = 0
            return
        self._register_pending()
        while self._inflight and (len(self._inflight) >= WRITE_AHEAD or self._inflight[0][0].done()):
            self._retire()
        buffer, key = self._buffer, block_key(self.cid, self._block)
        length = self._filled
        try:
            fut = self.store._io.submit(self.store._put_block, buffer, key, length)
        except RuntimeError:  # store closing: write inline
            self.store._put_block(buffer, key, length)
            self._spare.append(buffer)
        else:
            self._inflight.append((fut, buffer))
        full = _FRAME_ROOM + self.block_size
        while self._spare and len(self._spare[-1]) != full:
            self._spare.pop()  # the first, smaller buffer of a small start
        self._buffer = self._spare.pop() if self._spare else bytearray(full)
        self._block += 1
        self._filled = 0

    def _ship_block_from(self, block: memoryview) -> None:
        """Store one whole block straight from the caller's memory (see :meth:`write`).

        ``block`` is valid only during the caller's call: it is written to the
        socket here, in the caller's thread, and only the acknowledgement is
        awaited in the background (it counts as one of the blocks in flight).
        """
        if self._orphaned:
            self._block += 1
            return
        self._register_pending()
        while self._inflight and (len(self._inflight) >= WRITE_AHEAD or self._inflight[0][0].done()):
            self._retire()
        key = block_key(self.cid, self._block)
        try:
            acknowledged = self.store._send_block_from(key, block)
        except BaseException as exc:
            # No traceback frame may keep a view of the caller's memory past this call.
            del block
            exc.__context__ = exc.__cause__ = None
            raise exc.with_traceback(None)
        del block
        self._block += 1
        try:
            fut = self.store._io.submit(acknowledged)
        except RuntimeError:  # store closing: wait inline
            acknowledged()
        else:
            self._inflight.append((fut, None))

    def _retire(self) -> None:
        """Wait for the oldest block in flight; its buffer (if it had one) becomes spare."""
        fut, buffer = self._inflight.popleft()
        try:
            fut.result()
        except BaseException as exc:
            self._fail(exc)  # a block of the file is missing
            raise
        if buffer is not None:
            self._spare.append(buffer)

    def _drain(self) -> None:
        while self._inflight:
            self._retire()

    def _store_tail(self) -> None:
        """Wait for blocks in flight and store the partial last block (kept for more writes)."""
        self._drain()
        if not self._filled:
            return
        key = block_key(self.cid, self._block)
        if not self._pending_at:
            # Typical small file: its one block and its w: record in one round trip.
            self.store._put_block_and_record(self._buffer, key, self._filled, pending_key(self.cid),
                                             self._pending_record())
            self._pending_at = time.monotonic()
            return
        self._register_pending()
        self.store._put_block(self._buffer, key, self._filled)

    # -------------------------------------------------------------- publishing
    def _entry(self, gen: int) -> FileEntry:
        extents = self._prefix_extents
        if self._position > self._first_block * self.block_size:
            extents = extents + ((self._first_block, self.cid),)
        return FileEntry(id=self.file_id, size=self._position, mtime_ns=_now_ns(),
                         block_size=self.block_size, gen=gen, extents=extents)

    def _publish(self, final: bool) -> None:
        store, path, parent = self.store, self.path, parent_of(self.path)
        uri = store.uri(path)
        base = self._base if not self._published_once else None

        # A new name needs the parent's listing bucket: read it with the entries
        # (bucket 0 is the right one unless the parent has more than one).
        speculative = [bucket_key(parent, 0)] if self._maybe_new else []

        def body(v: _TxView) -> FileEntry:
            v.fetch_entries([*ancestors(path), path], speculative)
            store._ensure_dirs(v, parent, _now_ns())
            cur = v.entry(path)
            if isinstance(cur, DirEntry):
                raise _err(IsADirectoryError, errno.EISDIR, uri)
            if self._expect is not None:
                if not isinstance(cur, FileEntry) or (cur.id, cur.gen) != self._expect:
                    raise _Superseded()
            elif self.exclusive and cur is not None:
                raise _err(FileExistsError, errno.EEXIST, uri)
            if isinstance(cur, FileEntry) and cur.id != self.file_id:
                v.add_garbage(cur.ranges())
            if base is not None and base.size % base.block_size:
                # Our first publication of an append: the old partial last block is ours now.
                k = self._first_block
                v.add_garbage([(base.content_of(k), k, 1)])
            new = self._entry(cur.gen + 1 if isinstance(cur, FileEntry) else 1)
            v.put_entry(path, new)
            if cur is None:
                store._add_name(v, parent, name_of(path))
            return new

        try:
            published = store._transact(body, f"publish {path}")
        except _Superseded:
            log.warning("%s was replaced or removed by another writer while open for writing; "
                        "this handle's further output is dropped", uri)
            self._orphaned = True
            self._abandon()
            return
        self._expect = (published.id, published.gen)
        self._published_once = True
        self._published_size = published.size
        self._maybe_new = False
        if final and self._pending_at:
            # After the commit, off the caller's path: a crash before this leaves a w:
            # record whose blocks the published entry references, which
            # collect_garbage() recognizes and keeps.
            store._background(store.meta.remove_key, pending_key(self.cid))
        self._dirty = False

    def _abandon(self) -> None:
        """Delete blocks this writer stored that no entry references (best effort)."""
        try:
            self._inflight_cancel()
            start = self._first_block
            if self._published_once and not self._orphaned:
                start = max(start, -(-self._published_size // self.block_size))  # published blocks stay
            count = self._block - start + 1
            if self._pending_at:
                if count > 0:
                    self.store._delete_blocks([(self.cid, start, count)])
                self.store.meta.remove_key(pending_key(self.cid))
        except Exception as exc:  # noqa: BLE001 - collect_garbage() cleans up later
            log.debug("cleanup of abandoned write to %s failed: %s", self.path, exc)

    def _inflight_cancel(self) -> None:
        while self._inflight:
            fut, _ = self._inflight.popleft()
            try:
                fut.result()
            except Exception:  # noqa: BLE001 - the block is deleted anyway
                pass

    def __enter__(self) -> "FileWriter":
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.discard()
