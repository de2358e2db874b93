"""Garbage: deleting blocks no entry references, once no reader can still be using them.

The transaction that drops the last reference to blocks writes a ``g:``
record; ``garbage_delay`` seconds after the commit the blocks and the record
are deleted -- later if a reader in this process pinned that content, or an
open that may not have pinned it yet started before the commit.  The delay is
for readers in *other* processes, which this process cannot see: one that
opened the old file just before it was replaced reads it to the end, as long
as it does so within the delay (after it, :class:`StaleFileError`).
:meth:`Garbage.collect_garbage` finishes what crashed processes left (``g:``
and stale ``w:`` records).
"""

from __future__ import annotations

import collections
import contextlib
import heapq
import json
import logging
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

from ...errors import CapacityError
from ..layout import FileEntry, Range, block_key, decode_garbage, garbage_key
from .common import StoreState, now_ns, recreates_caches

log = logging.getLogger(__name__)


class Garbage(StoreState):
    """Part of :class:`~.core.IgniteFileStore`: pins and garbage collection."""

    def _init_garbage(self, delay: float) -> None:
        #: Seconds between the commit that makes blocks garbage and their deletion.
        self.garbage_delay = max(0.0, float(delay))
        # (due on the monotonic clock, commit sequence, gid, ranges): garbage waiting out the delay.
        self._delayed: list[tuple[float, int, str, list[Range]]] = []
        self._delay_wakeup = threading.Condition(self._lock)
        self._delay_thread: threading.Thread | None = None
        self._delay_stop = False

    def _garbage_committed(self, gid: str, ranges: list[Range], seq: int) -> None:
        """Garbage ``gid`` was committed (at sequence ``seq``): delete it after the delay."""
        if self.garbage_delay <= 0:
            self._background(self._collect, gid, ranges, seq)
            return
        with self._lock:
            if self._delay_stop:  # closing: no timer any more
                late = True
            else:
                late = False
                heapq.heappush(self._delayed, (time.monotonic() + self.garbage_delay, seq, gid, ranges))
                if self._delay_thread is None:
                    # One thread per store, started with its first garbage and kept: it
                    # sleeps until the earliest due garbage and hands it to the executor.
                    self._delay_thread = threading.Thread(target=self._delay_loop, name="ignite-fs-gc", daemon=True)
                    self._delay_thread.start()
                self._delay_wakeup.notify()
        if late:
            self._background(self._collect, gid, ranges, seq)

    def _delay_loop(self) -> None:
        while True:
            with self._lock:
                while not self._delay_stop and (not self._delayed or self._delayed[0][0] > time.monotonic()):
                    timeout = self._delayed[0][0] - time.monotonic() if self._delayed else None
                    self._delay_wakeup.wait(timeout)
                if self._delay_stop:
                    return
                due = []
                while self._delayed and self._delayed[0][0] <= time.monotonic():
                    due.append(heapq.heappop(self._delayed))
            for _, seq, gid, ranges in due:
                self._background(self._collect, gid, ranges, seq)

    def _release_delayed(self, *, stop: bool = False) -> None:
        """Start deleting every delayed garbage now (``drain``, ``close``); ``stop`` ends the timer."""
        with self._lock:
            due, self._delayed = self._delayed, []
            if stop:
                self._delay_stop = True
                self._delay_wakeup.notify()
            thread = self._delay_thread if stop else None
        for _, seq, gid, ranges in sorted(due):
            self._background(self._collect, gid, ranges, seq)
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def admit_write(self, payload: int, entries: int, **kwargs: Any) -> None:
        """Admit ``entries`` blocks of ``payload`` bytes to the capacity guard (``CapacityGuard.admit``'s
        arguments): the one check every write of this store passes before it stores blocks.

        Garbage only waiting out ``garbage_delay`` still holds room in the data
        region: a write that would not fit deletes it at once and asks again,
        rather than fail for room that is only being kept as a courtesy (a
        loop rewriting large checkpoints holds ``garbage_delay`` seconds' worth).
        """
        if self.capacity is None:
            return  # no storage figures (Ignite 3): a write that does not fit fails at the node
        try:
            self.capacity.admit(payload, entries, **kwargs)
        except CapacityError:
            with self._lock:
                delayed = len(self._delayed)
            if not delayed:
                raise
            log.info(
                "ignite:// write short of room in cache %s: deleting %d delayed garbage record(s) now",
                self.tables.data_name,
                delayed,
            )
            self.stats["garbage_released_for_room"] += delayed
            self.drain()
            self.capacity.regions(refresh=True)
            self.capacity.admit(payload, entries, **kwargs)

    @property
    def delayed_garbage(self) -> int:
        """How many garbage records are waiting out ``garbage_delay`` (not yet deleting)."""
        with self._lock:
            return len(self._delayed)

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

    @recreates_caches
    def collect_garbage(self, stale_after: float = 24 * 3600.0) -> dict[str, int]:
        """Delete blocks left behind by crashed processes (scans the meta cache).

        ``g:`` records (garbage whose deletion was interrupted) are deleted
        once the ``garbage_delay`` their writer committed them with has passed
        (another live process's garbage still waiting it out is left to that
        process, so readers it protects are not cut short), except content that
        readers of this process still use;
        ``w:`` records older than ``stale_after`` seconds are writes whose
        writer never closed them: blocks their file does not reference are
        deleted.  Live writers refresh their record every minute.
        """
        stats = collections.Counter(
            {"garbage_records": 0, "garbage_waiting": 0, "stale_writes": 0, "blocks_deleted": 0}
        )
        before = self.stats["blocks_deleted"]
        now = now_ns()
        records = [*self.tables.scan_meta("g:"), *self.tables.scan_meta("w:")]
        for key, value in records:
            if key.startswith("g:"):
                ranges, written_ns, delay = decode_garbage(value)
                with self._lock:
                    seq = self._seq
                    if any(gid == key[2:] for _, _, gid, _ in self._delayed):
                        continue  # this store's own, waiting out garbage_delay
                if now - written_ns < delay * 1e9:
                    stats["garbage_waiting"] += 1  # another process's, still waiting out its delay
                    continue
                stats["garbage_records"] += 1
                self._collect(key[2:], ranges, seq)
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
            if self.tables.contains_block(key):
                self.tables.remove_blocks([key])
                self.stats["blocks_deleted"] += 1
                misses = 0
            else:
                misses += 1
            index += 1
