"""Metadata transactions: the meta table as one transaction sees it, and the retry loop.

Every metadata change is a serializable transaction on the meta table: it
reads what it depends on (the entry, the parents, a listing bucket),
computes, writes, and commits; a transaction that lost a race is run again
from the start (a multi-key compare-and-set).  On Ignite 2 the transaction is
optimistic (no locks; the commit fails if a key read changed); on Ignite 3 it
takes locks as it reads and writes, and a conflict fails at the lock (wait-die:
the younger dies) -- the loop treats both the same (:meth:`~.backend.StoreTables.retryable`).
"""

from __future__ import annotations

import errno
import logging
import random
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from ...errors import IgniteConnectionError
from ..layout import (
    ROOT_ENTRY,
    Entry,
    Range,
    bucket_key,
    decode_bucket,
    decode_entry,
    encode_bucket,
    encode_entry,
    encode_garbage,
    entry_key,
    garbage_key,
    new_id,
)
from .common import MAX_TX_ATTEMPTS, RecoveryWait, StoreState, T, now_ns

if TYPE_CHECKING:
    from .backend import MetaTransaction

log = logging.getLogger(__name__)

_DELETED = object()


class TxView:
    """The meta table as one transaction sees it: reads go to the server once per key
    (recording the versions the commit validates, or taking the read locks), writes are buffered and sent
    in two batches just before the commit.  Listing buckets are kept decoded
    (a set per bucket) while the transaction runs, so adding many names to one
    directory costs one encoding per bucket, not one per name."""

    def __init__(self, store: StoreState, tx: "MetaTransaction") -> None:
        self.store = store
        self.tx = tx
        self._values: dict[str, object] = {}
        self._dirty: dict[str, object] = {}
        self._buckets: dict[str, tuple[int, set[str]]] = {}
        self._dirty_buckets: set[str] = set()
        self.garbage: list[Range] = []
        self.after_commit: list[Callable[[], None]] = []

    # ------------------------------------------------------------------ raw keys
    def fetch(self, keys: Iterable[str]) -> None:
        missing = [k for k in dict.fromkeys(keys) if k not in self._values]
        if missing:
            got = self.tx.get_all(missing)
            for k in missing:
                self._values[k] = got.get(k)

    def get(self, key: str) -> object:
        if key in self._buckets:
            nb, names = self._buckets[key]
            return encode_bucket(nb, names)
        self.fetch([key])
        return self._values[key]

    def put(self, key: str, value: object) -> None:
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
            self._dirty[garbage_key(gid)] = encode_garbage(self.garbage, now_ns(), self.store.garbage_delay)
        puts = [(k, v) for k, v in self._dirty.items() if v is not _DELETED]
        removes = [k for k, v in self._dirty.items() if v is _DELETED]
        self.tx.put_all(puts)  # type: ignore[arg-type]  # the values left are str once _DELETED is filtered out
        self.tx.remove_all(removes)
        return gid


class Transactions(StoreState):
    """Part of :class:`~.core.IgniteFileStore`: running metadata transactions."""

    def _transact(self, body: Callable[[TxView], T], what: str, *, read_only: bool = False) -> T:
        """Run ``body`` in a serializable transaction, retrying lost races.

        ``body`` reads and writes through the view only, so running it again is
        safe.  A connection that fails before the commit is sent is replaced and
        the transaction run again; one that fails during the commit is reported
        (the outcome is unknown).  So is a transaction that the cluster cannot
        serve yet before its commit (:meth:`~.backend.StoreTables.recovering`: a
        lost node's partitions getting new primaries), run again for up to
        ``recovery_wait`` seconds.  ``read_only``: ``body`` only reads (Ignite 3
        then reads a snapshot and takes no locks).
        """
        delay = 0.001
        reconnects = 0
        attempt = 0
        recovery = RecoveryWait(self.tables.recovery_wait)
        while attempt < MAX_TX_ATTEMPTS:
            with self._tx_slots:
                tx = None
                committing = False
                try:
                    tx = self.tables.transaction(label=f"ignite-fs {what}", read_only=read_only)
                    view = TxView(self, tx)
                    result = body(view)
                    gid = view.flush()
                    committing = True
                    tx.commit()
                except BaseException as exc:
                    if tx is not None:
                        if isinstance(exc, IgniteConnectionError):
                            tx.abandon()  # the node rolls back a lost connection's transaction
                        else:
                            tx.rollback()
                    if isinstance(exc, IgniteConnectionError) and not committing and reconnects < 2:
                        reconnects += 1
                        log.info("%s: connection lost (%s); running the transaction again", what, exc)
                        continue
                    if not committing and self.tables.recovering(exc):
                        if not recovery.started:
                            log.warning(
                                "%s: %s; running the transaction again for up to %.0f s",
                                what,
                                exc,
                                self.tables.recovery_wait,
                            )
                        if recovery.pause():
                            self.stats["tx_recovery_waits"] += 1
                            continue
                    if self.tables.retryable(exc):
                        attempt += 1
                        self.stats["tx_conflicts"] += 1
                        log.debug("%s: transaction conflict (attempt %d): %s", what, attempt, exc)
                        time.sleep(delay * random.uniform(0.5, 1.5))  # jitter: racers drift apart
                        delay = min(delay * 2, self.tables.max_backoff)
                        continue
                    raise
            self.stats["tx_commits"] += 1
            if gid is not None:
                with self._lock:
                    self._seq += 1
                    seq = self._seq
                self._garbage_committed(gid, view.garbage, seq)
            for action in view.after_commit:
                action()
            return result
        raise OSError(errno.EAGAIN, f"{what}: gave up after {MAX_TX_ATTEMPTS} conflicting concurrent updates")
