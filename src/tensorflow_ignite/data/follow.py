"""Following a cache: the rows that exist, then every insert and update as it happens.

:class:`Follower` is what ``IgniteDataset.follow`` reads with.  Each run (one
iterator) opens a connection of its own, registers a thin-client continuous
query on it (:mod:`tensorflow_ignite.protocol.continuous`) and only *then*
scans the plan's partitions with the dataset's scan reader; the events the
node pushes meanwhile wait on the connection and are delivered after the scan.
So every row that exists when the query starts is delivered by the scan, and
every write after it by an event: nothing falls between the two.

When every server node keeps the module's follow log of the cache, the run
is a :class:`~.follow_log.LogRun` instead: it follows the log, and every
update after the saved position is delivered exactly once (see there).
Without it, the guarantee, precisely (ARCHITECTURE.md, "Following a cache"):

* While the query lives, every insert and update of a followed partition is
  delivered once, in the order Ignite commits it per key (Ignite's continuous
  query: a primary that dies hands its unsent events over from its backup).
* A write racing with the scan can be delivered twice (by the scan and by
  its event); the event always comes after the scan, so the last value
  delivered for a key is its latest one.
* When the query is lost -- the node holding it dies, the connection drops,
  the reader fell behind the bounded queue, or the process crashed and an
  iterator is restored from a checkpoint -- the run *resyncs*: it registers
  a new query, scans the partitions again and goes on with the new query's
  events.  Per key, the latest value is always delivered (nothing written
  after the position is lost); values overwritten during the gap are not
  seen, rows already delivered come again, and deletes during the gap are
  not reported.  Thin-client events carry no partition update counter, so
  nothing finer can be resumed from.

The saved state is a few bytes (:class:`FollowState`): the plan, the rows
handed out (for ``max_rows``) and whether the first scan had been handed out
(and, following the log, an update counter per partition, and while the first
scan is handed out that scan's own state, with which a restore resumes it
exactly once: :mod:`.follow_log`).

Memory is bounded: a reader thread per run drains the query's connection
into a queue of at most ``max_buffered`` frames (of at most the query's page
size of events each); beyond that the queue is dropped, the query closed (the
node frees what it buffered for it) and the run resyncs when the consumer
comes back.  Neither the client nor the node buffers without bound behind a
slow consumer.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..client import IgniteClient
from ..client.connection import Connection
from ..client.progress import plan_fingerprint, resume_from
from ..errors import (
    CacheNotFoundError,
    ConfigurationError,
    IgniteConnectionError,
    NotificationOverflowError,
    ServerError,
    UnsupportedOperationError,
)
from ..protocol import continuous
from ..protocol.codes import Op
from ..protocol.hashing import affinity_partition, cache_id, java_key_hash, to_int32
from ..protocol.requests.common import CacheOptions, resource_close
from .plan import ScanTask
from .reader import NextSplit, ScanReader, ScanRun

__all__ = ["FollowOptions", "FollowState", "FollowStats", "Follower", "FollowRun", "START_MODES", "DELETE_MODES"]

log = logging.getLogger(__name__)

START_MODES = ("beginning", "now")
DELETE_MODES = ("drop", "flag")
#: Events the node gathers before it sends them, or fewer after ``max_wait``.
_QUERY_PAGE = 256
_STATE_VERSION = 2
_OBJ = 103
_KEEP_BINARY = CacheOptions(keep_binary=True)


@dataclass(frozen=True)
class FollowOptions:
    """How a follower starts, batches, ends and bounds its memory (see ``IgniteDataset.follow``)."""

    start: str = "beginning"
    batch_size: int = 256
    max_wait: float = 0.1
    stream_timeout: float | None = None
    max_rows: int | None = None
    deletes: str = "drop"
    max_buffered: int = 1024

    def __post_init__(self) -> None:
        if self.start not in START_MODES:
            raise ConfigurationError(f"start is one of {START_MODES} or a saved iterator state, got {self.start!r}")
        if self.deletes not in DELETE_MODES:
            raise ConfigurationError(f"deletes is one of {DELETE_MODES}, got {self.deletes!r}")
        if self.batch_size <= 0:
            raise ConfigurationError(f"batch_size must be positive, got {self.batch_size}")
        if self.max_wait < 0:
            raise ConfigurationError(f"max_wait must not be negative, got {self.max_wait}")
        if self.stream_timeout is not None and self.stream_timeout <= 0:
            raise ConfigurationError(
                f"stream_timeout must be positive (None: follow forever), got {self.stream_timeout}"
            )
        if self.max_rows is not None and self.max_rows <= 0:
            raise ConfigurationError(f"max_rows must be positive (None: no limit), got {self.max_rows}")
        if self.max_buffered <= 0:
            raise ConfigurationError(f"max_buffered must be positive, got {self.max_buffered}")


@dataclass(frozen=True)
class FollowState:
    """A follower's saved position: which plan, rows handed out, whether the first scan was handed out,
    and -- following the module's log -- the update counter handed out last per partition and, while
    the first scan is being handed out, that scan's own saved state (:class:`~.progress.ResumeState`)."""

    plan: str
    rows: int = 0
    scanned: bool = False
    #: Partition -> the last update counter handed out (None: not following a log).  While ``scan``
    #: is set: the head taken before the first scan, where the log is read from once it is done.
    positions: dict[int, int] | None = None
    #: The first scan's state as of the rows handed out (the scan's exactly-once resume), while it is
    #: handed out with the log on; None otherwise.
    scan: bytes | None = None

    def encode(self) -> bytes:
        raw: dict[str, Any] = {"follow": _STATE_VERSION, "plan": self.plan, "rows": self.rows, "scanned": self.scanned}
        if self.positions is not None:
            raw["log"] = [[p, c] for p, c in sorted(self.positions.items())]
        if self.scan is not None:
            raw["scan"] = base64.b64encode(self.scan).decode("ascii")
        return json.dumps(raw, separators=(",", ":")).encode()

    @classmethod
    def decode(cls, data: bytes, what: str) -> "FollowState":
        try:
            raw = json.loads(bytes(data).decode())
            # 1: before the log, read as a state without one. 2 gained "scan" (optional: a reader that
            # ignores it starts the first scan again, as before it existed).
            if raw.get("follow") not in (1, _STATE_VERSION):
                raise ValueError(f"version {raw.get('follow')!r}")
            positions = {int(p): int(c) for p, c in raw["log"]} if raw.get("log") is not None else None
            scan = base64.b64decode(raw["scan"], validate=True) if raw.get("scan") is not None else None
            return cls(str(raw["plan"]), int(raw["rows"]), bool(raw["scanned"]), positions, scan)
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError, binascii.Error) as exc:
            raise ConfigurationError(
                f"{what} is not the state of a follower (IgniteDataset.follow) ({exc}); restore a checkpoint "
                "saved by an iterator of a dataset built the same way"
            ) from None


@dataclass
class FollowStats:
    """What a follower's runs have done in this process (tests and monitoring read it)."""

    #: ``host:port`` of the node holding the current query ("" when none is registered).
    query_address: str = ""
    #: Queries registered (the first one, and one per resync).
    registrations: int = 0
    #: Resyncs, each with its reason.
    resyncs: list[str] = field(default_factory=list)
    #: Rows delivered by scans and by events.
    scanned_rows: int = 0
    event_rows: int = 0
    #: Most notification frames queued at once, unread.
    peak_buffered: int = 0
    #: "log" when following the module's follow log (exactly once), "resync" without it.
    mode: str = "resync"
    #: Following the log: queries lost and caught up from the position, each with its reason.
    catch_ups: list[str] = field(default_factory=list)
    #: Following the log: rows read back from the log by catch-ups (after a restore or a lost query).
    caught_up_rows: int = 0
    #: Following the log: entries of the log cache the module's writers did not make (their seal does not
    #: verify: written, altered or copied by a client), treated as not written.
    unsealed_entries: int = 0


class _Query:
    """One registered continuous query on a connection of its own, drained by a thread into a bounded queue."""

    def __init__(self, conn: Connection, cache: str, max_buffered: int, interval_s: float, stats: FollowStats) -> None:
        self.conn = conn
        self._stats = stats
        conn.limit_notifications(max_buffered)
        cid = cache_id(cache)
        # Nodes holding primaries gather up to a page of events, sent after the interval at the latest.
        interval = max(10, int(interval_s * 1000))
        self.id = int(
            np.frombuffer(
                conn.request(
                    lambda rid: continuous.query_continuous(
                        rid, cid, page_size=_QUERY_PAGE, time_interval_ms=interval, opts=_KEEP_BINARY
                    ),
                    Op.QUERY_CONTINUOUS,
                )[:8],
                dtype="<i8",
            )[0]
        )
        self.failure: BaseException | None = None
        self._stop = threading.Event()
        self._frames: list[memoryview] = []
        self._cv = threading.Condition()
        self._max = max_buffered
        self._thread = threading.Thread(target=self._drain, name=f"ignite-follow-{cache}", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        try:
            while not self._stop.is_set():
                body = self.conn.next_notification(self.id, 0.2)
                if body is None:
                    continue
                with self._cv:
                    if len(self._frames) >= self._max:
                        raise NotificationOverflowError(
                            f"{self.conn.address}: the follower's consumer is {self._max} notification frames "
                            "behind; the query was closed and the follower resyncs",
                            address=self.conn.address,
                        )
                    self._frames.append(body)
                    self._stats.peak_buffered = max(self._stats.peak_buffered, len(self._frames))
                    self._cv.notify_all()
        except BaseException as exc:  # noqa: BLE001 - reported to the run, which resyncs
            with self._cv:
                self.failure = exc
                self._cv.notify_all()
            self.conn.close()  # the node drops the query and what it buffered for it

    def take(self, timeout: float) -> list[memoryview]:
        """Frames received so far (waiting up to ``timeout`` for one); raises the reader thread's failure."""
        with self._cv:
            if not self._frames and self.failure is None:
                self._cv.wait(timeout=max(0.0, timeout))
            frames, self._frames = self._frames, []
            if not frames and self.failure is not None:
                raise self.failure
            return frames

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        if not self.conn.closed:
            try:
                self.conn.request(lambda rid: resource_close(rid, self.id))
            except Exception:  # noqa: BLE001 - closing the connection drops the query anyway
                pass
            self.conn.forget_notifications(self.id)
            self.conn.close()


class Follower:
    """What every run of one follow dataset shares: client, scan reader, partition filter, options."""

    def __init__(
        self,
        client: IgniteClient,
        cache_name: str,
        scan: ScanReader,
        tasks: Sequence[ScanTask],
        partitions: int,
        options: FollowOptions,
        *,
        follow_all: bool,
    ) -> None:
        self.client = client
        self.cache_name = cache_name
        self.scan = scan
        self.options = options
        self.fingerprint = "follow:" + plan_fingerprint(cache_name, [t.partition for t in tasks])
        #: The partitions whose events are delivered (None: every event, the plan covers the cache).
        self.partitions: frozenset[int] | None = None if follow_all else frozenset(t.partition for t in tasks)
        self.partition_count = partitions
        self.stats = FollowStats()
        #: Whether the nodes keep the module's follow log of this cache (set by the dataset: exactly once).
        self.log = False

    def run(self, state: bytes | None = None, next_split: NextSplit | None = None) -> "FollowRun":
        """A run from the start, or from a saved ``state`` (which resyncs: see the module docstring)."""
        if next_split is not None:
            raise UnsupportedOperationError(
                f"IgniteDataset.follow over cache {self.cache_name!r} cannot take partitions from a tf.data service "
                "dispatcher (processing_mode='distributed_epoch'): give each worker its partitions with "
                "parts=... or per_worker=True instead"
            )
        read = f"follower of cache {self.cache_name!r} with its partitions"
        resume = resume_from(state, FollowState.decode, self.fingerprint, read=read, same="same cache, same parts=...")
        if self.log:
            from .follow_log import LogRun  # the exactly-once run over the module's log

            return LogRun(self, resume)
        return FollowRun(self, resume)

    def open_query(self, cache: str | None = None) -> _Query:
        """Register a query on ``cache`` (default: the followed one) on a new connection to a live node."""
        deadline = time.monotonic() + self.client.options.timeout
        delay = 0.05
        while True:
            base = None
            try:
                base = self.client.default_connection
                conn = Connection(base.host, base.port, self.client.settings)
                try:
                    query = _Query(
                        conn, cache or self.cache_name, self.options.max_buffered, self.options.max_wait, self.stats
                    )
                except BaseException:
                    conn.close()
                    raise
                self.stats.query_address = conn.address
                self.stats.registrations += 1
                return query
            except (IgniteConnectionError, ServerError) as exc:
                if isinstance(exc, CacheNotFoundError):
                    raise
                if base is not None and isinstance(exc, IgniteConnectionError):
                    self.client.drop_connection(base)
                if time.monotonic() >= deadline:
                    if isinstance(exc, ServerError):
                        raise  # the node's own answer, not a node going away
                    raise IgniteConnectionError(
                        f"IgniteDataset.follow over cache {self.cache_name!r}: no node accepted a continuous "
                        f"query within {self.client.options.timeout}s (last: {type(exc).__name__}: {exc}); "
                        "check the cluster, or raise timeout=...",
                        address=getattr(exc, "address", None),
                    ) from None
                # A node leaving, or the topology changing under the registration: try again.
                time.sleep(delay)
                delay = min(1.0, delay * 2)

    def keep(self, events: continuous.ContinuousEvents) -> np.ndarray:
        """Which events belong to this follower's partitions (all of them when it follows the whole cache)."""
        n = len(events)
        if self.partitions is None:
            return np.ones(n, dtype=bool)
        out = np.zeros(n, dtype=bool)
        decoder = self.client.decoder()
        for i in range(n):
            key = events.key(i)
            code = key[0]
            if code == _OBJ:
                key_hash = to_int32(int.from_bytes(key[8:12], "little", signed=True))
            else:
                key_hash = java_key_hash(decoder.decode(key), int(code))
                if key_hash is None:
                    raise ConfigurationError(
                        f"IgniteDataset.follow over cache {self.cache_name!r}: a key of type code {code} cannot "
                        "be placed in a partition here, so parts=.../per_worker cannot pick its events; follow "
                        "the whole cache, or use long, int, string or binary object keys"
                    )
            out[i] = affinity_partition(key_hash, self.partition_count) in self.partitions
        return out


class FollowRun:
    """One iterator of a follower: its batches (``__iter__``), ``emitted``, ``save`` and ``close``."""

    #: Whether the first scan's own state is kept while it is handed out (a subclass that can resume it
    #: exactly once: the log's run; without the log a restore rescans anyway).
    keeps_snapshot = False

    def __init__(self, follower: Follower, resume: FollowState | None) -> None:
        self._f = follower
        self._opts = follower.options
        self._rows = resume.rows if resume is not None else 0  # handed to TensorFlow
        self._yielded = self._rows
        self._scanned = resume.scanned if resume is not None else False
        # Rows yielded by the first scan: once handed out, the state says the scan was.
        self._scan_end: int | None = None
        self._resume = resume
        self._query: _Query | None = None
        #: The first scan's read (its ledger of rows handed out: ``ScanRun.save``) while it is handed
        #: out, and the row count (as ``_rows`` counts) its first row has (``keeps_snapshot`` only).
        self._snap: ScanRun | None = None
        self._snap_start = 0
        self._batches = self._run()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self._batches

    def emitted(self, rows: int) -> None:
        before = self._rows
        self._rows += int(rows)
        if self._snap is not None:
            # Rows are handed out in the order they were yielded: those of the first scan go to its ledger.
            end = self._rows if self._scan_end is None else min(self._rows, self._scan_end)
            if end > max(before, self._snap_start):
                self._snap.emitted(end - max(before, self._snap_start))
        if self._scan_end is not None and self._rows >= self._scan_end:
            self._scanned = True
            self._snap = None  # handed out whole: its ledger is no longer needed

    def save(self) -> bytes:
        return FollowState(self._f.fingerprint, self._rows, self._scanned).encode()

    def close(self) -> None:
        self._batches.close()

    # ---------------------------------------------------------------- the read
    def _done(self) -> bool:
        return self._opts.max_rows is not None and self._yielded >= self._opts.max_rows

    def _run(self) -> Iterator[dict[str, Any]]:
        """Register a query, read what its events cannot give (:meth:`_before_events`), then its
        events; when the query is lost, all of it again with a new one (:meth:`_lost` says why)."""
        lost: str | None = None
        try:
            while not self._done():
                self._query = self._register()
                try:
                    yield from self._before_events(lost)
                    if self._scan_end is None:
                        self._scan_end = self._yielded
                        if self._rows >= self._scan_end:
                            self._scanned = True
                    yield from self._events(self._query)
                    return
                except (IgniteConnectionError, NotificationOverflowError) as exc:
                    lost = f"{type(exc).__name__}: {exc}"
                    self._lost(lost)
                finally:
                    self._query.close()
                    self._query = None
        finally:
            if self._query is not None:
                self._query.close()

    def _register(self) -> _Query:
        """A new query whose events :meth:`_events` reads."""
        return self._f.open_query()

    def _before_events(self, lost: str | None) -> Iterator[dict[str, Any]]:
        """What to deliver after registering a query and before its events (``lost``: why the
        previous query was lost, None for the first one): here a scan -- a restored or resynced
        run cannot know what was written since its position."""
        if lost is not None or self._resume is not None or self._opts.start == "beginning":
            yield from self._scan()

    def _lost(self, reason: str) -> None:
        """The query was lost (``reason``); a new one is registered next."""
        log.warning("IgniteDataset.follow over cache %r: resync after %s", self._f.cache_name, reason)
        self._f.stats.resyncs.append(reason)

    def _cut(self, batch: dict[str, Any], n: int, tags: list[Any] | None = None) -> Iterator[dict[str, Any]]:
        """``batch`` in pieces of at most ``batch_size`` rows, stopping at ``max_rows``.

        ``tags`` (one per row, or None) go to :meth:`_piece` with each piece before it is yielded.
        """
        size = self._opts.batch_size
        start = 0
        while start < n and not self._done():
            take = min(size, n - start)
            if self._opts.max_rows is not None:
                take = min(take, self._opts.max_rows - self._yielded)
            piece = _slice(batch, start, start + take)
            self._piece(None if tags is None else tags[start : start + take], take)
            self._yielded += take
            start += take
            yield piece

    def _piece(self, tags: list[Any] | None, rows: int) -> None:
        """A piece of ``rows`` rows (tagged ``tags``) is about to be yielded (a subclass keeps positions)."""

    def _decode_frames(self, bodies: list[memoryview], flag: bool) -> tuple[bytes, np.ndarray, int, list[Any] | None]:
        """The rows to deliver of the notification frames taken at once, as :meth:`_decode_body` gives
        them (a subclass may handle the frames together: the log's run checks their seals in one call)."""
        region = bytearray()
        gone: list[np.ndarray] = []
        added = 0
        tags: list[Any] | None = None
        for body in bodies:
            chunk, chunk_gone, n, chunk_tags = self._decode_body(body, flag)
            region += chunk
            gone.append(chunk_gone)
            added += n
            if chunk_tags is not None:
                tags = (tags or []) + list(chunk_tags)
        return bytes(region), np.concatenate(gone) if gone else np.zeros(0, dtype=bool), added, tags

    def _decode_body(self, body: memoryview, flag: bool) -> tuple[bytes, np.ndarray, int, list[Any] | None]:
        """One notification frame's rows to deliver: their (key, value) region, which are deletes,
        how many, and a tag per row (None: untagged)."""
        events = continuous.decode_continuous_events(body)
        keep = self._f.keep(events)
        gone = (events.types == continuous.EventType.REMOVED) | (events.types == continuous.EventType.EXPIRED)
        if flag:
            region = bytearray()
            for i in np.flatnonzero(keep):  # in event order: a delete and a re-insert stay in order
                region += events.rows(_one(len(events), i), old=bool(gone[i]))
            return bytes(region), gone[keep], int(keep.sum()), None
        live = keep & ~gone
        return events.rows(live), np.zeros(int(live.sum()), dtype=bool), int(live.sum()), None

    def _scan(self, state: bytes | None = None) -> Iterator[dict[str, Any]]:
        """The scan of the plan, from the start or from a scan's saved ``state`` (the rows it had not
        handed out, exactly once: :class:`~.reader.ScanRun`); the first one's ledger is kept while it is
        handed out when the run ``keeps_snapshot``."""
        flag = self._opts.deletes == "flag"
        run = self._f.scan.run(state)
        if self.keeps_snapshot and not self._scanned:
            self._snap, self._snap_start = run, self._yielded
        try:
            for batch in run:
                n = _rows(batch)
                if flag:
                    batch = {**batch, "deleted": np.zeros(n, dtype=bool)}
                self._f.stats.scanned_rows += n
                yield from self._cut(batch, n)
                if self._done():
                    return
        finally:
            run.close()

    def _events(self, query: _Query) -> Iterator[dict[str, Any]]:
        opts = self._opts
        f = self._f
        flag = opts.deletes == "flag"
        region = bytearray()
        deleted: list[np.ndarray] = []
        tags: list[Any] | None = None
        pending = 0
        first_at = 0.0
        last_event = time.monotonic()
        while not self._done():
            now = time.monotonic()
            if pending:
                wait = first_at + opts.max_wait - now
            elif opts.stream_timeout is not None:
                wait = last_event + opts.stream_timeout - now
            else:
                wait = 1.0
            frames = query.take(wait)
            if frames:
                chunk, gone, added, chunk_tags = self._decode_frames(frames, flag)
                region += chunk
                deleted.append(gone)
                if chunk_tags is not None:
                    tags = [] if tags is None else tags
                    tags.extend(chunk_tags)
                if added:
                    if not pending:
                        first_at = time.monotonic()
                    pending += added
                    last_event = time.monotonic()
            now = time.monotonic()
            if pending and (pending >= opts.batch_size or now - first_at >= opts.max_wait):
                batch = f.scan.decode_rows(memoryview(bytes(region)), pending)
                if flag:
                    batch["deleted"] = np.concatenate(deleted)
                f.stats.event_rows += pending
                n, batch_tags = pending, tags
                region, deleted, tags, pending = bytearray(), [], None, 0
                yield from self._cut(batch, n, batch_tags)
                last_event = time.monotonic()
            elif not pending and opts.stream_timeout is not None and now - last_event >= opts.stream_timeout:
                return


def _one(n: int, i: int) -> np.ndarray:
    mask = np.zeros(n, dtype=bool)
    mask[i] = True
    return mask


def _rows(batch: Any) -> int:
    while isinstance(batch, dict):
        batch = next(iter(batch.values()))
    return len(batch)


def _slice(batch: Any, start: int, stop: int) -> Any:
    if isinstance(batch, dict):
        return {k: _slice(v, start, stop) for k, v in batch.items()}
    return batch[start:stop]
