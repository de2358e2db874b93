"""Garbage: deleting blocks no entry references, once no reader of this process uses them.

The transaction that drops the last reference to blocks writes a ``g:``
record; after the commit the blocks and the record are deleted -- later if a
reader in this process pinned that content, or an open that may not have
pinned it yet started before the commit.  :meth:`Garbage.collect_garbage`
finishes what crashed processes left (``g:`` and stale ``w:`` records).
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
from collections.abc import Iterable, Iterator

from ..layout import FileEntry, Range, block_key, garbage_key
from .common import StoreState, now_ns, recreates_caches

log = logging.getLogger(__name__)


class Garbage(StoreState):
    """Part of :class:`~.core.IgniteFileStore`: pins and garbage collection."""

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
        outright, except content that readers of this process still use;
        ``w:`` records older than ``stale_after`` seconds are writes whose
        writer never closed them: blocks their file does not reference are
        deleted.  Live writers refresh their record every minute.
        """
        stats = collections.Counter({"garbage_records": 0, "stale_writes": 0, "blocks_deleted": 0})
        before = self.stats["blocks_deleted"]
        now = now_ns()
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
