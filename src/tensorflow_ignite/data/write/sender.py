"""Sending rows: chunks encoded into put-all requests, one in flight while the next is encoded."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import IgniteConnectionError
from ...protocol import requests
from ...protocol.codes import Op, TypeCode
from ...protocol.framing import reusable_frame
from ...protocol.hashing import cache_id as _cache_id
from .encode import GenericRowEncoder, python_values, wire_keys
from .plan import WritePlan, check_chunk
from .sources import Source

if TYPE_CHECKING:
    from ...capacity import CapacityGuard
    from ...client import IgniteClient

log = logging.getLogger(__name__)


class PutAllSender:
    """``OP_CACHE_PUT_ALL`` frames, one in flight while the caller encodes the next.

    A lost connection is repaired once: unacknowledged frames are sent again
    through the client (put is idempotent).
    """

    def __init__(self, client: "IgniteClient", cache_name: str) -> None:
        self.client = client
        self.cache_name = cache_name
        self.cache_id = _cache_id(cache_name)
        self.conn = client.default_connection
        self.pending: tuple[int, bytearray, int] | None = None  # request id, frame, rows
        self.rows_acked = 0
        self.bytes_sent = 0
        self.on_ack: Callable[[int], None] = lambda rows: None

    @staticmethod
    def _encoder(frame: bytearray) -> Callable[[int], bytearray]:
        return reusable_frame(frame)

    def submit(self, rows: int, payload: bytes | bytearray | memoryview) -> None:
        frame = requests.cache_put_all_encoded(self.cache_id, rows, payload)
        self.wait()
        try:
            rid = self.conn.send(self._encoder(frame))
        except IgniteConnectionError as exc:
            log.warning("connection lost while writing %r (%s); sending the batch again", self.cache_name, exc)
            self.conn.close()
            self.client.request(self._encoder(frame), Op.CACHE_PUT_ALL)
            self._acked(rows, len(frame))
            self.conn = self.client.default_connection
            return
        self.pending = (rid, frame, rows)

    def wait(self) -> None:
        """Collect the answer of the request in flight, if any."""
        if self.pending is None:
            return
        rid, frame, rows = self.pending
        self.pending = None
        try:
            self.conn.receive(rid, Op.CACHE_PUT_ALL)
        except IgniteConnectionError as exc:
            log.warning("connection lost while writing %r (%s); sending the batch again", self.cache_name, exc)
            self.conn.close()
            self.client.request(self._encoder(frame), Op.CACHE_PUT_ALL)
            self.conn = self.client.default_connection
        self._acked(rows, len(frame))

    def _acked(self, rows: int, size: int) -> None:
        self.rows_acked += rows
        self.bytes_sent += size
        self.on_ack(rows)


def progress_bar(progress: bool | None, total: int | None, cache_name: str) -> Any:
    if progress is None:
        progress = bool(getattr(sys.stderr, "isatty", lambda: False)())
    from tqdm import tqdm

    return tqdm(total=total, unit="row", unit_scale=True, desc=f"write {cache_name}", disable=not progress,
                file=sys.stderr, leave=False, dynamic_ncols=True)


def send_all(plan: WritePlan, source: Source, sender: PutAllSender, client: "IgniteClient", *, key: str | None,
              offset: int, batch_bytes: int, used: set[str], guard: "CapacityGuard | None" = None,
              row_bytes: int = 0) -> None:
    """Encode and send every chunk of ``source``; before each put-all ``guard.admit`` checks that
    the batch -- and, when the source's size is known, the rest of the write -- still fits."""
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
    pending = bytearray()
    pending_rows = 0
    row = 0
    submitted = 0  # rows handed to the sender so far

    def flush() -> None:
        nonlocal pending, pending_rows, submitted
        if pending_rows:
            admit(len(pending), pending_rows, submitted)
            sender.submit(pending_rows, pending)
            submitted += pending_rows
            pending = bytearray()
            pending_rows = 0

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
        if fixed is not None and fixed.accepts(chunk):
            flush()
            used.add("fixed-layout")
            encoded = fixed.encode(keys, chunk)
            admit(encoded.nbytes, n, submitted)
            sender.submit(n, memoryview(encoded).cast("B"))
            submitted += n
        else:
            used.add("generic")
            if generic is None:
                generic = GenericRowEncoder(plan.type_name, plan.fields, plan.key, client.metadata.registry)
            for entry in generic.encode_rows(keys.tolist() if isinstance(keys, np.ndarray) else keys, chunk, row):
                pending += entry
                pending_rows += 1
                if len(pending) >= batch_bytes:
                    flush()
        row += n
    flush()
