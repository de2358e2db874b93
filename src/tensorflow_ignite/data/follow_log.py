"""Following a cache through the module's follow log: every update after a position, exactly once.

When the server nodes carry the tensorflow-ignite module configured to log a
cache (``FollowLog`` in the Java module; ``NodeLauncher --follow-log``), each
update of it is written into the log cache ``tf_follow_log_<cache>`` under
the key (partition, update counter), with the update's event type, the
counter of the partition's previous update (``prev``) and the key and value
bytes.  A :class:`LogRun` follows that log instead of the cache:

* **position** -- per followed partition, the update counter handed out last
  (:class:`~.follow.FollowState` ``positions``);
* **start** -- the module's ``head`` (each partition's update counter, after
  the log's query is registered) is the first position; with
  ``start="beginning"`` the cache is then scanned.  A row written between the
  head and the scan's visit of its key comes twice (scan, then log): the
  snapshot is at least once for those rows, everything after it exactly once;
* **a checkpoint inside the snapshot** -- the state holds the head and the
  scan's own state (:class:`~.reader.ScanRun`, the plain scan's exactly-once
  resume); a restore scans on from there, then reads the log after the head:
  nothing handed out before the checkpoint comes again;
* **restore / lost query** -- a thin-client continuous query on the log is
  registered first, then each partition's log entries after its position are
  read back (a scan of that log partition: log partition p holds the cache's
  partition p), then the query's events; entries at or before the position are
  dropped, so nothing comes twice and nothing after the position is missed.
  After a lost query the position is the last row *yielded*: the events of the
  micro-batch being gathered went with the query and are read back too;
* **order** -- a partition's log grows in counter order (the nodes' writers
  write in the order Ignite hands them the events), and a query's events of
  one partition come in the order they were written;
* **loss** -- an entry whose ``prev`` is beyond the position means the log no
  longer holds what came in between (older than the retention, or lost with
  every node that had it): :class:`~tensorflow_ignite.errors.FollowPositionLostError`.
"""

from __future__ import annotations

import collections
import hashlib
import logging
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..client import IgniteClient
from ..errors import (
    FollowPositionLostError,
    IgniteConnectionError,
    ServerError,
)
from ..protocol import continuous, requests, responses
from ..protocol.codes import Op
from ..protocol.hashing import affinity_partition
from .follow import FollowRun, FollowState

if TYPE_CHECKING:
    from .follow import Follower, _Query

__all__ = [
    "ATTRIBUTE",
    "SERVICE_NAME",
    "LOG_PREFIX",
    "LogEntry",
    "LogRun",
    "has_follow_log",
    "log_cache_name",
    "log_head",
    "read_log_partition",
    "verify_entries",
]

log = logging.getLogger(__name__)

#: The node attribute listing the caches a node logs (comma-separated), set by the Java ``FollowLog``.
ATTRIBUTE = "tensorflow-ignite.follow-log"
#: The module's follow-log service (a node singleton on every module node).
SERVICE_NAME = "tf-ignite-follow-log"
LOG_PREFIX = "tf_follow_log_"
_REMOVED = (int(continuous.EventType.REMOVED), int(continuous.EventType.EXPIRED))
#: Log events that write an entry: created, and updated -- the writers overwriting an entry a client put first.
_WRITTEN = (int(continuous.EventType.CREATED), int(continuous.EventType.UPDATED))
#: Entries one ``verify`` call checks at most (the service's ``MAX_VERIFY``).
_MAX_VERIFY = 65536
_SEAL_BYTES = 32
#: A first scan to read from its start (LogRun._snapshot holds a scan's saved state otherwise).
_FROM_START = b""


def log_cache_name(cache: str) -> str:
    """The follow log of ``cache``."""
    return LOG_PREFIX + cache


def has_follow_log(client: IgniteClient, cache: str) -> bool:
    """Whether every server node logs ``cache`` (a node without it would leave its updates out).

    When not, one warning says the follower is at least once and how to make it exactly once.
    """
    nodes = client.server_nodes()
    logging_ = [n for n in nodes if cache in str(n.attributes.get(ATTRIBUTE) or "").split(",")]
    if nodes and len(logging_) == len(nodes):
        return True
    which = f"only {len(logging_)} of the {len(nodes)} server nodes keep" if logging_ else "the server nodes keep no"
    log.warning(
        "IgniteDataset.follow over cache %r: %s follow log of it, so this follower is at least once "
        "(stats.mode == 'resync'): after a lost query or a restored checkpoint it scans the cache again "
        "and delivers rows it had delivered. For exactly once, have every server node keep the cache's "
        "follow log: `ignite-tf module config --follow-log %s` (nodes started from Spring XML) or "
        "`ignite-tf node start --follow-log %s` (local nodes)",
        cache,
        which,
        cache,
        cache,
    )
    return False


def _invoke(client: IgniteClient, cache: str, method: str, args: list[Any], timeout: float) -> Any:
    """Call the follow-log service's ``method``, waiting out a service (re)deploying or a node leaving.

    Past ``timeout``: a connection failure raises :class:`IgniteConnectionError` (a run catches up),
    the service's own error :class:`ServerError`.
    """
    deadline = time.monotonic() + timeout
    delay = 0.05
    while True:
        features = client.default_connection.features
        try:
            body = client.request(
                lambda rid: requests.service_invoke(rid, SERVICE_NAME, method, args, features=features),  # noqa: B023 - called at once
                Op.SERVICE_INVOKE,
                retry=False,
            )
            return responses.decode_object(body, client.decoder())
        except (ServerError, IgniteConnectionError) as exc:
            # The service deploying on a node that just joined or started, or a node leaving.
            if time.monotonic() >= deadline:
                raise IgniteConnectionError(
                    f"IgniteDataset.follow over cache {cache!r}: the module's follow log did not answer {method!r} "
                    f"within {timeout}s ({type(exc).__name__}: {exc}); check the nodes' logs for 'tf-ignite follow "
                    "log', and that every server node carries this version of the module",
                    address=getattr(exc, "address", None),
                ) from None
            if isinstance(exc, IgniteConnectionError):
                client.drop_connection(client.default_connection)
            time.sleep(delay)
            delay = min(1.0, delay * 2)


def log_head(client: IgniteClient, cache: str, timeout: float) -> list[int]:
    """Each partition's update counter now, from the module (which first makes sure its log runs)."""
    return [int(c) for c in _invoke(client, cache, "head", [cache], timeout)]


def verify_entries(client: IgniteClient, cache: str, entries: list["LogEntry"], timeout: float) -> list[bool]:
    """Whether each of ``entries`` carries a valid seal: one service call per 65,536 entries.

    An entry without a well-formed seal, partition or counter is not sent (it cannot verify).
    """
    ok = [False] * len(entries)
    records: list[bytes] = []
    asked: list[int] = []
    for i, e in enumerate(entries):
        if (
            e.mac is None
            or len(e.mac) != _SEAL_BYTES
            or not -(2**31) <= e.partition < 2**31
            or not -(2**63) <= e.counter < 2**63
        ):
            continue
        records.append(struct.pack(">iq", e.partition, e.counter) + e.digest() + e.mac)
        asked.append(i)
    for start in range(0, len(records), _MAX_VERIFY):
        answer = _bytes(
            _invoke(client, cache, "verify", [cache, b"".join(records[start : start + _MAX_VERIFY])], timeout)
        )
        for i, flag in zip(asked[start : start + _MAX_VERIFY], answer):
            ok[i] = flag == 1
    return ok


@dataclass(frozen=True)
class LogEntry:
    """One update of the followed cache, as the log holds it."""

    partition: int
    counter: int
    kind: int  # continuous.EventType
    prev: int  # the partition's previous update counter the writer saw (-1: unknown)
    key: bytes
    value: bytes | None  # the old value for removed and expired entries
    writer: int = -1  # the topology order of the node whose writer wrote it (-1: not recorded)
    mac: bytes | None = None  # the seal (FollowLogSeal in the Java module; None: none)

    @classmethod
    def of(cls, key: Any, value: Any) -> "LogEntry":
        """From the decoded log key and log entry (binary objects)."""
        k, v = key.fields, value.fields
        data = v.get("v")
        seal = v.get("m")
        return cls(
            int(k["p"]),
            int(k["c"]),
            int(v["t"]),
            int(v["prev"]),
            _bytes(v["k"]),
            None if data is None else _bytes(data),
            int(v.get("w", -1)),
            None if seal is None else _bytes(seal),
        )

    @classmethod
    def parse(cls, key: Any, value: Any) -> "LogEntry | None":
        """:meth:`of`, or None for something else a client wrote into the log cache."""
        try:
            return cls.of(key, value)
        except (AttributeError, KeyError, TypeError, ValueError):
            return None

    def digest(self) -> bytes:
        """The SHA-256 of the sealed fields (``FollowLogSeal.digest``: t, prev, len(k), k, len(v), v)."""
        h = hashlib.sha256(struct.pack(">BQi", self.kind & 0xFF, self.prev & 0xFFFF_FFFF_FFFF_FFFF, len(self.key)))
        h.update(self.key)
        h.update(struct.pack(">i", -1 if self.value is None else len(self.value)))
        if self.value is not None:
            h.update(self.value)
        return h.digest()


def _bytes(a: Any) -> bytes:
    return a.tobytes() if isinstance(a, np.ndarray) else bytes(a)


def read_log_partition(client: IgniteClient, cache: str, partition: int, partitions: int, after: int) -> list[LogEntry]:
    """The log entries of ``cache``'s ``partition`` with a counter beyond ``after``, in counter order.

    The log key's affinity field is the partition (an int, its own Java hash), and the log has the
    cache's partition count, so Ignite's default affinity puts them in log partition ``partition``;
    one partition is read at a time, so a catch-up holds one partition's lag in memory.
    """
    return _read_log_partition(client, cache, partition, partitions, after)[0]


def _read_log_partition(
    client: IgniteClient, cache: str, partition: int, partitions: int, after: int
) -> tuple[list[LogEntry], int]:
    """:func:`read_log_partition`, and how many rows of the log partition were no log entry at all."""
    where = affinity_partition(partition, partitions)
    rows = client.cache(log_cache_name(cache)).scan(partition=where)
    parsed = [LogEntry.parse(k, v) for k, v in rows]
    out = [e for e in parsed if e is not None and e.partition == partition and e.counter > after]
    out.sort(key=lambda e: e.counter)
    return out, sum(e is None for e in parsed)


class LogRun(FollowRun):
    """A :class:`~.follow.FollowRun` over the module's follow log: positions per partition, exactly once."""

    keeps_snapshot = True

    def __init__(self, follower: "Follower", resume: "FollowState | None") -> None:
        f = follower
        self._parts = sorted(f.partitions) if f.partitions is not None else list(range(f.partition_count))
        #: Saved while the first scan was handed out: that scan's state, resumed before the log is read
        #: from the head taken before it (``known``).
        self._snapshot: bytes | None = None
        if (
            resume is not None
            and not resume.scanned
            and resume.scan is not None
            and resume.positions is not None
            and set(resume.positions) == set(self._parts)
        ):
            self._snapshot = resume.scan
        known = resume.positions if resume is not None and (resume.scanned or self._snapshot is not None) else None
        #: Per partition, the last counter handed to TensorFlow (saved), and the last one yielded (ahead of it).
        self._positions: dict[int, int] = dict(known) if known is not None else {}
        self._ahead: dict[int, int] = dict(self._positions)
        #: The last counter accepted from the log (ahead of ``_ahead`` by the rows of a micro-batch being
        #: gathered); a catch-up starts again from ``_ahead``, since a lost query drops that micro-batch.
        self._accepted: dict[int, int] = dict(self._positions)
        self._restored = known is not None
        #: Whether the next query starts from the head (a fresh run, until its snapshot is read).
        self._fresh = not self._restored
        self._head_asked = False
        #: Pieces yielded but not yet handed out: (rows, partition -> last counter in the piece).
        self._pieces: collections.deque[tuple[int, dict[int, int]]] = collections.deque()
        #: Partitions whose unsealed entries were logged already (one warning per partition and run).
        self._warned: set[int] = set()
        f.stats.mode = "log"
        super().__init__(follower, resume)

    def emitted(self, rows: int) -> None:
        super().emitted(rows)
        left = int(rows)
        while left > 0 and self._pieces:
            n, pos = self._pieces.popleft()
            self._positions.update(pos)
            left -= n

    def save(self) -> bytes:
        snap = self._snap
        scan = snap.save() if snap is not None and not self._scanned and self._positions else None
        return FollowState(self._f.fingerprint, self._rows, self._scanned, dict(self._positions), scan).encode()

    def _piece(self, tags: list[Any] | None, rows: int) -> None:
        pos: dict[int, int] = {}
        for p, c in tags or ():
            pos[p] = c  # tags of a partition come in counter order
        self._pieces.append((rows, pos))
        self._ahead.update(pos)

    # ---------------------------------------------------------------- the read
    def _register(self) -> "_Query":
        """A query on the log (the base class's loop reads its events)."""
        f = self._f
        if not self._restored and not self._head_asked:
            log_head(f.client, f.cache_name, f.client.options.timeout)  # the log cache exists before its query
            self._head_asked = True
        return f.open_query(log_cache_name(f.cache_name))

    def _before_events(self, lost: str | None) -> Iterator[dict[str, Any]]:
        """Fresh: the head is the position (then the snapshot, with ``start="beginning"``); restored
        or after a lost query: the rest of the snapshot if it was not read whole, then the log after
        the position (:meth:`_catch_up`)."""
        fresh = self._fresh
        if fresh:
            f = self._f
            head = log_head(f.client, f.cache_name, f.client.options.timeout)
            self._positions = {p: head[p] for p in self._parts}
            self._ahead = dict(self._positions)
            self._accepted = dict(self._positions)
            self._pieces.clear()
            self._fresh = False
            if self._opts.start == "beginning" or self._resume is not None:
                self._snapshot = _FROM_START
        if self._snapshot is not None:
            # The first scan, or the rest of it: restored while it was handed out, or its read failed
            # past the reader's own retries -- exactly once by its own state. Then the log from the head
            # taken before it; a row written since that head comes by the scan and by the log (the
            # snapshot is at least once for those rows).
            state, self._snapshot = self._snapshot, None
            try:
                yield from self._scan(state or None)
            except IgniteConnectionError:
                # The next query goes on after the rows yielded, not from the start.
                snap = self._snap
                self._snapshot = (
                    state if snap is None else snap.progress.state(rows=self._yielded - self._snap_start).encode()
                )
                raise
            if self._done():
                return
            self._scan_end = self._yielded
            if self._rows >= self._scan_end:
                self._scanned = True
                self._snap = None
        if not fresh:
            yield from self._catch_up()

    def _lost(self, reason: str) -> None:
        log.warning("IgniteDataset.follow over cache %r: catching up from the log after %s", self._f.cache_name, reason)
        self._f.stats.catch_ups.append(reason)

    def _accept(self, e: LogEntry) -> bool:
        """Whether ``e`` is next to deliver for its partition (False: delivered already); raises on a gap."""
        last = self._accepted.get(e.partition)
        if last is None:
            return False  # not a followed partition
        if e.counter <= last:
            return False
        if e.prev > last:
            raise FollowPositionLostError(
                f"IgniteDataset.follow over cache {self._f.cache_name!r}: the follow log of partition {e.partition} "
                f"has no entries between update counters {last} (the position) and {e.prev}: they are older than "
                "the log's retention or were lost with every node that held them, so this position cannot be "
                "resumed exactly once. Follow again from start='beginning' (a new snapshot), and raise the "
                "retention (--follow-log-retention-s / FollowLog.configure) if the follower lags that long",
                cache_name=self._f.cache_name,
                partition=e.partition,
            )
        self._accepted[e.partition] = e.counter
        return True

    def _unsealed(self, entries: list[LogEntry]) -> set[int]:
        """The indexes of ``entries`` that could be delivered or move a position but whose seal the
        service does not confirm (one call for all of them); each is counted, and logged once per partition."""
        candidates = [
            i
            for i, e in enumerate(entries)
            if e.partition in self._accepted and e.counter > self._accepted[e.partition]
        ]
        if not candidates:
            return set()
        f = self._f
        ok = verify_entries(f.client, f.cache_name, [entries[i] for i in candidates], f.client.options.timeout)
        bad = {i for i, good in zip(candidates, ok) if not good}
        for i in sorted(bad):
            self._refused(entries[i].partition, f"counter {entries[i].counter}")
        return bad

    def _refused(self, partition: int | None, what: str) -> None:
        """Count an entry of the log that is not the module's (and log the first one per partition)."""
        self._f.stats.unsealed_entries += 1
        seen = -1 if partition is None else partition
        if seen not in self._warned:
            self._warned.add(seen)
            where = "an unknown partition" if partition is None else f"partition {partition}"
            log.warning(
                "IgniteDataset.follow over cache %r: the follow log cache %r holds an entry (%s, %s) that the "
                "module's writers did not make (its seal does not verify): someone wrote into the log "
                "cache; it is treated as not written. Find who writes to it (every authenticated user can)",
                self._f.cache_name,
                log_cache_name(self._f.cache_name),
                where,
                what,
            )

    def _rows_of(self, entries: list[LogEntry]) -> tuple[bytes, np.ndarray, int, list[Any]]:
        """The rows of the entries to deliver (sealed, accepted in order), as :meth:`_decode_frames` gives them."""
        flag = self._opts.deletes == "flag"
        region = bytearray()
        gone: list[bool] = []
        tags: list[Any] = []
        unsealed = self._unsealed(entries)
        for i, e in enumerate(entries):
            if i in unsealed or not self._accept(e):
                continue
            removed = e.kind in _REMOVED
            if e.value is None or (removed and not flag):
                continue  # nothing to deliver; the position moves with the partition's next row
            region += e.key
            region += e.value
            gone.append(removed)
            tags.append((e.partition, e.counter))
        return bytes(region), np.asarray(gone, dtype=bool), len(tags), tags

    def _decode_frames(self, bodies: list[memoryview], flag: bool) -> tuple[bytes, np.ndarray, int, list[Any]]:
        """The log entries of the frames taken at once, their seals checked in one call (:meth:`_rows_of`)."""
        dec = self._f.client.decoder()
        entries: list[LogEntry] = []
        for body in bodies:
            entries += self._entries_of(continuous.decode_continuous_events(body), dec)
        return self._rows_of(entries)

    def _entries_of(self, events: continuous.ContinuousEvents, dec: Any) -> list[LogEntry]:
        """The log entries one frame of events wrote (anything else counted as not the module's)."""
        entries = []
        for i in range(len(events)):
            if events.types[i] not in _WRITTEN:
                continue  # the log's own expiries
            start, end = int(events.offsets[i, 2]), int(events.offsets[i, 3])
            try:
                entry = LogEntry.parse(dec.decode(events.key(i)), dec.decode(events.body[start:end]))
            except Exception:  # noqa: BLE001 - whatever a client wrote: not even a value this client can read
                entry = None
            if entry is None:
                self._refused(None, "not a log entry")
                continue
            entries.append(entry)
        return entries

    def _catch_up(self) -> Iterator[dict[str, Any]]:
        """Every followed partition's log entries after the last row yielded, partition by partition.

        From the last row *yielded*, not the last entry accepted: the events of a micro-batch being
        gathered when the query was lost (accepted, not yet yielded) went with it and are read again.
        """
        f = self._f
        flag = self._opts.deletes == "flag"
        self._accepted = dict(self._ahead)
        for p in self._parts:
            entries, junk = _read_log_partition(f.client, f.cache_name, p, f.partition_count, self._accepted[p])
            for _ in range(junk):
                self._refused(p, "not a log entry")
            for start in range(0, len(entries), self._opts.batch_size):
                region, gone, n, tags = self._rows_of(entries[start : start + self._opts.batch_size])
                if not n:
                    continue
                batch = f.scan.decode_rows(memoryview(region), n)
                if flag:
                    batch["deleted"] = gone
                f.stats.caught_up_rows += n
                yield from self._cut(batch, n, tags)
                if self._done():
                    return
