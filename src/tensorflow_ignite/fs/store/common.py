"""What the parts of the file store share: tunables, the state they work on, helpers."""

from __future__ import annotations

import collections
import functools
import os
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from ...capacity import CapacityGuard
    from ..layout import Entry, Range
    from .backend import MetaTable, StoreTables
    from .tx import TxView

T = TypeVar("T")

#: Attempts of one metadata transaction before giving up under contention.
MAX_TX_ATTEMPTS = 60
#: Concurrent transactions per store (Ignite allows 100 per connection by default).
MAX_CONCURRENT_TX = 48
#: Blocks a writer keeps in flight while it fills the next one.
WRITE_AHEAD = 3
#: Threads per store for block transfers (shared by all its readers and writers).
IO_THREADS = 8
#: Blocks a reader keeps at least (the current, one behind for re-reads, one more for
#: random access); its read-ahead adds to that (``read_ahead``, :mod:`.readahead`).
READ_CACHE_BLOCKS = 3
#: Block gets in flight while a large read receives blocks straight into its buffer.
DIRECT_AHEAD = 3
#: Files per publication transaction in :meth:`IgniteFileStore.write_files`.
FILES_PER_TX = 500
#: Data keys per remove request when collecting garbage.
REMOVE_BATCH = 512
#: Refresh a writer's ``w:`` record at most this often (seconds).
PENDING_REFRESH = 60.0
#: Seconds replaced or removed content is kept before its blocks are deleted, so that a
#: reader in another process that opened it just before still reads it whole.
GARBAGE_DELAY = 10.0
#: First size of a writer's block buffer (it grows to the block size as needed).
INITIAL_BUFFER = 64 * 1024
#: Reserved room before a block for the put request's header (key included).
FRAME_ROOM = 96


class StoreState:
    """The state of one :class:`~.core.IgniteFileStore`, shared by the parts it is made of.

    The store is one object; its methods live in one module per concern
    (transactions, namespace, blocks, garbage).  This declares what those parts
    use of each other, so that each module says what it relies on.
    """

    #: The cluster client (an ``IgniteClient`` on Ignite 2, an ``Ignite3Client`` on Ignite 3).
    client: Any
    #: The two tables and every operation on them (:mod:`.backend`).
    tables: StoreTables
    #: The meta table outside transactions.
    meta: MetaTable
    block_size: int
    #: Bytes a sequential reader fetches ahead of the block it reads.
    read_ahead: int
    cache_prefix: str
    endpoint: str
    #: Counters for tests and diagnostics.
    stats: collections.Counter[str]
    #: Seconds between the commit that makes blocks garbage and their deletion.
    garbage_delay: float
    #: The capacity guard of the data table (None: the cluster reports no storage figures).
    capacity: CapacityGuard | None
    _lock: threading.Lock
    _pins: collections.Counter[str]
    _deferred: dict[str, tuple[list[Range], int]]
    _seq: int
    _opening: collections.Counter[int]
    _tx_slots: threading.BoundedSemaphore
    _executor: ThreadPoolExecutor
    _io: ThreadPoolExecutor
    _background_work: set[Future[Any]]

    if TYPE_CHECKING:

        def uri(self, path: str) -> str: ...
        def _background(self, fn: Callable[..., Any], *args: Any) -> None: ...
        def _caches_lost(self, exc: BaseException) -> None: ...
        def _transact(self, body: Callable[[TxView], T], what: str, *, read_only: bool = False) -> T: ...
        def _collect(self, gid: str, ranges: list[Range], seq: int) -> None: ...
        def _garbage_committed(self, gid: str, ranges: list[Range], seq: int) -> None: ...
        def admit_write(self, payload: int, entries: int, **kwargs: Any) -> None: ...
        def drain(self) -> None: ...
        def _delete_blocks(self, ranges: Any) -> None: ...
        def block_node(self, key: str) -> Any: ...
        def lookup(self, path: str) -> Entry | None: ...


F = TypeVar("F", bound=Callable[..., Any])


def recreates_caches(method: F) -> F:
    """Run a store operation once more after re-creating tables (caches) that vanished.

    A missing cache or table is reported before anything was changed, so running
    the operation again is safe.  Only the first-level operations carry this."""

    @functools.wraps(method)
    def wrapper(self: StoreState, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            if not self.tables.missing_tables(exc):
                raise
            self._caches_lost(exc)
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]  # functools.wraps keeps method's signature, which F cannot express


class Superseded(Exception):
    """A writer's file was replaced or removed by someone else; its output is dropped."""


def now_ns() -> int:
    return time.time_ns()


def os_error(cls: type[OSError], code: int, uri: str, text: str | None = None) -> OSError:
    return cls(code, text or os.strerror(code), uri)


class RecoveryWait:
    """Pauses between re-sends of a request the cluster cannot serve *yet* (a lost node's partitions
    getting new primaries): jittered, doubling from 50 ms to 1 s, for at most ``limit`` seconds from the
    first.  The store's pooled requests and its metadata transactions wait with it."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.started = False
        self._deadline = 0.0
        self._delay = 0.05

    def pause(self) -> bool:
        """Sleep before the next attempt; False (no sleep) once ``limit`` has passed."""
        now = time.monotonic()
        if not self.started:
            self.started = True
            self._deadline = now + self.limit
        elif now > self._deadline:
            return False
        time.sleep(self._delay * random.uniform(0.5, 1.5))
        self._delay = min(self._delay * 2, 1.0)
        return True
