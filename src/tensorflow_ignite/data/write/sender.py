"""Sending rows: chunks encoded into put-all requests, each sent to the primary node of its keys.

A chunk's rows are grouped by the primary node of their keys (the client's
partition map, the same routing single-key requests and ``ignite://`` blocks
use), so no node has to forward entries to another.  One put-all per node is
in flight while the next chunk is encoded.
"""

from __future__ import annotations

import logging
import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import IgniteConnectionError, IgniteError
from ...protocol import requests
from ...protocol.codes import Op, TypeCode
from ...protocol.framing import reusable_frame
from ...protocol.hashing import cache_id as _cache_id
from ...protocol.hashing import long_hash_codes, string_hash_codes
from .encode import GenericRowEncoder, python_values, wire_keys
from .plan import WritePlan, check_chunk
from .sources import Source

if TYPE_CHECKING:
    from ...capacity import CapacityGuard
    from ...client import IgniteClient, PartitionMap
    from ...client.connection import Connection

log = logging.getLogger(__name__)

#: Positions of a batch's rows grouped by primary node (None: unknown, any node forwards them).
Groups = list[tuple["uuid.UUID | None", np.ndarray]]


@dataclass
class _InFlight:
    """A put-all on the wire: where it went and what to send again if that connection dies."""

    conn: "Connection"
    request_id: int
    frame: bytearray
    rows: int
    seq: int = 0


class PutAllSender:
    """``OP_CACHE_PUT_ALL`` frames to the primary node of their keys, :attr:`max_in_flight` per node.

    :meth:`route` groups a batch's rows by primary node; :meth:`submit` sends one
    group's put-all on that node's connection after collecting the answer of
    the oldest put-all in flight there, when that node already has
    :attr:`max_in_flight`.  A lost connection is repaired once: the
    unacknowledged frame is sent again through the client (put is idempotent).
    """

    #: Put-alls in flight per node.  One keeps a key written twice in order (a node may
    #: answer the requests of one connection in any order); a sender whose rows never
    #: repeat a key may keep more.
    max_in_flight = 1

    def __init__(self, client: "IgniteClient", cache_name: str) -> None:
        self.client = client
        self.cache_name = cache_name
        self.cache_id = _cache_id(cache_name)
        self.pending: list[_InFlight] = []
        self._sent = 0
        self._failed: set[int] = set()
        self.rows_acked = 0
        self.bytes_sent = 0
        self.on_ack: Callable[[int], None] = lambda rows: None
        self._map: "PartitionMap | None" = None

    @staticmethod
    def _encoder(frame: bytearray) -> Callable[[int], bytearray]:
        return reusable_frame(frame)

    def route(self, key_hashes: np.ndarray | None, flush: Callable[[], None] = lambda: None) -> Groups:
        """Positions of the keys whose Java ``hashCode()`` is ``key_hashes``, grouped by primary node.

        Everything goes to one group of unknown node (None) when partition
        awareness is off, the keys' hashes are unknown (``None``) or the cache's
        map cannot place keys.  When the map changed since the last call,
        ``flush()`` (rows the caller still buffers by node) runs and every
        put-all in flight is answered first: a key written twice must not have
        its later row overtake the earlier one on the way to its old primary.
        """
        if key_hashes is None or not self.client.partition_awareness:
            return [(None, np.arange(0 if key_hashes is None else len(key_hashes)))]
        try:
            pmap = self.client.partition_map(self.cache_name)
        except IgniteError as exc:  # routing only saves a hop: any node forwards what it does not own
            log.debug("cache %r: no partition map (%s); put-alls go to any node", self.cache_name, exc)
            return [(None, np.arange(len(key_hashes)))]
        if self._map is not None and pmap is not self._map:
            flush()
            self.wait()
        self._map = pmap
        return pmap.split_by_primary(key_hashes)

    def submit(self, rows: int, payload: bytes | bytearray | memoryview, node: "uuid.UUID | None" = None) -> None:
        """Send ``rows`` encoded entries in one put-all to ``node`` (None: the default connection)."""
        frame = requests.cache_put_all_encoded(self.cache_id, rows, payload)
        conn = self.client.connection_for_node(node)
        mine = [f for f in self.pending if f.conn is conn]
        if len(mine) >= self.max_in_flight:
            self._collect(mine[: len(mine) - self.max_in_flight + 1])
        try:
            rid = conn.send(self._encoder(frame))
        except IgniteConnectionError as exc:
            self._send_again(conn, frame, exc)
            self._acked(rows, len(frame))
            return
        self._sent += 1
        self.pending.append(_InFlight(conn, rid, frame, rows, self._sent))

    def mark(self) -> frozenset[int]:
        """The put-alls in flight now, as a token for :meth:`answered`."""
        return frozenset(f.seq for f in self.pending)

    def answered(self, mark: frozenset[int]) -> bool:
        """Whether every put-all in flight at :meth:`mark` has been answered (stored), without waiting."""
        return not any(f.seq in mark for f in self.pending) and not (mark & self._failed)

    def wait(self) -> None:
        """Collect the answer of every put-all in flight."""
        self._collect(list(self.pending))

    def _collect(self, batches: Sequence[_InFlight]) -> None:
        """Collect ``batches``' answers; every one is collected even when one fails (the first error is raised)."""
        first: BaseException | None = None
        for f in batches:
            self.pending.remove(f)
            try:
                try:
                    f.conn.receive(f.request_id, Op.CACHE_PUT_ALL)
                except IgniteConnectionError as exc:
                    self._send_again(f.conn, f.frame, exc)
            except IgniteError as exc:
                self._failed.add(f.seq)
                first = first or exc
                continue
            self._acked(f.rows, len(f.frame))
        if first is not None:
            raise first

    def _send_again(self, conn: "Connection", frame: bytearray, exc: IgniteConnectionError) -> None:
        log.warning(
            "connection to %s lost while writing %r (%s); sending the batch again", conn.address, self.cache_name, exc
        )
        self.client.drop_connection(conn)
        self.client.request(self._encoder(frame), Op.CACHE_PUT_ALL)

    def _acked(self, rows: int, size: int) -> None:
        self.rows_acked += rows
        self.bytes_sent += size
        self.on_ack(rows)


def key_hashes(plan: WritePlan, keys: Any) -> np.ndarray | None:
    """The Java ``hashCode()`` of every key (``Long`` or ``String``) as ``uint32``; None for other key types."""
    if isinstance(keys, np.ndarray) and plan.key.code == TypeCode.LONG:
        return long_hash_codes(keys)
    if plan.key.code == TypeCode.STRING:
        return string_hash_codes(keys if isinstance(keys, list) else list(keys))
    return None


def progress_bar(progress: bool | None, total: int | None, cache_name: str) -> Any:
    if progress is None:
        progress = bool(getattr(sys.stderr, "isatty", lambda: False)())
    from tqdm import tqdm

    return tqdm(
        total=total,
        unit="row",
        unit_scale=True,
        desc=f"write {cache_name}",
        disable=not progress,
        file=sys.stderr,
        leave=False,
        dynamic_ncols=True,
    )


def send_all(
    plan: WritePlan,
    source: Source,
    sender: PutAllSender,
    client: "IgniteClient",
    *,
    key: str | None,
    offset: int,
    batch_bytes: int,
    used: set[str],
    guard: "CapacityGuard | None" = None,
    row_bytes: int = 0,
) -> None:
    """Encode and send every chunk of ``source``, each row to the primary node of its key; before
    each batch (one put-all per node) ``guard.admit`` checks that the batch -- and, when the
    source's size is known, the rest of the write -- still fits."""
    fixed = plan.fixed
    total = source.total_rows

    def admit(size: int, rows: int, first_row: int) -> None:
        if guard is None:
            return
        remaining = None
        if total is not None:
            left = max(0, total - first_row)
            remaining = (left * row_bytes, left)
        guard.admit(size, rows, remaining=remaining, largest_entry=row_bytes)

    chunk_rows = max(1, batch_bytes // fixed.row_size) if fixed is not None else 2048
    generic: GenericRowEncoder | None = None
    # Encoded entries not sent yet, per primary node; sent when together they reach batch_bytes.
    pending: dict[uuid.UUID | None, bytearray] = {}
    pending_rows: dict[uuid.UUID | None, int] = {}
    pending_bytes = 0
    row = 0
    submitted = 0  # rows handed to the sender so far

    def flush() -> None:
        nonlocal pending, pending_rows, pending_bytes, submitted
        if not pending:
            return
        # One check for all the nodes' batches before any is sent: a refusal then leaves
        # the rows written so far a prefix of the source (an append's rollback relies on it).
        rows = sum(pending_rows.values())
        admit(pending_bytes, rows, submitted)
        for node, entries in pending.items():
            sender.submit(pending_rows[node], entries, node)
        submitted += rows
        pending, pending_rows = {}, {}
        pending_bytes = 0

    for chunk in source.chunks(chunk_rows):
        n = len(next(iter(chunk.values()))) if chunk else 0
        if not n:
            continue
        if not source.in_memory:
            check_chunk(plan, chunk, row)
        if key is None:
            keys: Any = np.arange(offset + row, offset + row + n, dtype="<i8")
        elif plan.key.code == TypeCode.LONG:
            keys = wire_keys(plan.key, chunk[key])
        else:
            keys = python_values(plan.key, chunk[key])
        groups = sender.route(key_hashes(plan, keys), flush)
        if fixed is not None and fixed.accepts(chunk):
            flush()
            used.add("fixed-layout")
            encoded = fixed.encode(keys, chunk)
            admit(encoded.nbytes, n, submitted)
            for node, positions in groups:
                part = encoded if len(positions) == n else encoded[positions]
                sender.submit(len(positions), memoryview(part).cast("B"), node)
            submitted += n
        else:
            used.add("generic")
            if generic is None:
                generic = GenericRowEncoder(plan.type_name, plan.fields, plan.key, client.metadata.registry)
            node_of: list[uuid.UUID | None] = [None] * n
            for node, positions in groups:
                for i in positions.tolist():
                    node_of[i] = node
            rows_keys = keys.tolist() if isinstance(keys, np.ndarray) else keys
            for i, entry in enumerate(generic.encode_rows(rows_keys, chunk, row)):
                node = node_of[i]
                entries = pending.get(node)
                if entries is None:
                    entries = pending[node] = bytearray()
                entries += entry
                pending_rows[node] = pending_rows.get(node, 0) + 1
                pending_bytes += len(entry)
                if pending_bytes >= batch_bytes:
                    flush()
        row += n
    flush()
