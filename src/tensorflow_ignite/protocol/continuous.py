"""Thin-client continuous queries: the registration request and the event notifications.

``OP_QUERY_CONTINUOUS`` (2006, ``ClientCacheQueryContinuousRequest``): the cache
header, ``int`` page size, ``long`` time interval (ms), ``bool`` include
expired, the remote filter object (``null`` here: every event), followed by a
platform byte only when a filter is given.  The answer is the ``long`` id of
the query, a resource of the connection: the query lives as long as that
connection (or until ``OP_RESOURCE_CLOSE``).

Events come as server-pushed frames whose header carries the NOTIFICATION
flag, the op code ``OP_QUERY_CONTINUOUS_EVENT_NOTIFICATION`` (2007) and the
query id in place of a request id (``ClientCacheEntryEventNotification``):
``int`` count, then per event the key, the old value, the value (``null``
for removed and expired entries) and a ``byte`` event type (:class:`EventType`).
An event holds no partition and no update counter (what the follower's
guarantee is built around: :mod:`tensorflow_ignite.data.follow`).
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

import numpy as np

from tensorflow_ignite.errors import ProtocolError
from tensorflow_ignite.protocol.codes import Op
from tensorflow_ignite.protocol.columns import value_end
from tensorflow_ignite.protocol.framing import finish_request, start_request
from tensorflow_ignite.protocol.requests.common import CacheOptions, cache_header

__all__ = ["EventType", "ContinuousEvents", "query_continuous", "decode_continuous_events"]

_I32 = struct.Struct("<i")
_NULL = 101


class EventType(enum.IntEnum):
    """The ``byte`` event type of a notification (``javax.cache.event.EventType`` by ordinal of Ignite's switch)."""

    CREATED = 0
    UPDATED = 1
    REMOVED = 2
    EXPIRED = 3


def query_continuous(
    request_id: int,
    cache_id: int,
    *,
    page_size: int = 256,
    time_interval_ms: int = 0,
    include_expired: bool = False,
    opts: CacheOptions | None = None,
) -> bytes:
    """OP_QUERY_CONTINUOUS (2006) without a remote filter: every event of the cache.

    ``page_size`` events are gathered on the server before they are sent,
    or fewer once ``time_interval_ms`` passed (0: each update is sent as it
    happens when ``page_size`` is 1; Ignite's Java thin client sends 1 and 0).
    """
    if page_size <= 0:
        raise ValueError(f"continuous query page size must be positive, got {page_size}")
    if time_interval_ms < 0:
        raise ValueError(f"continuous query time interval must not be negative, got {time_interval_ms}")
    w = start_request(Op.QUERY_CONTINUOUS, request_id)
    cache_header(w, cache_id, opts, data_request=False)
    w.i32(page_size)
    w.i64(time_interval_ms)
    w.bool(include_expired)
    w.u8(_NULL)  # no remote filter, hence no platform byte
    return finish_request(w)


@dataclass(frozen=True)
class ContinuousEvents:
    """One notification's events, located but not decoded.

    ``offsets[i]`` holds the start of event ``i``'s key, old value and value
    and the end of its value; ``types[i]`` its :class:`EventType`.
    :meth:`rows` gathers (key, value) pairs into a region laid out like a scan
    page's rows, which the scan's column decoder reads as it is.
    """

    body: memoryview
    offsets: np.ndarray  # int64 [n, 4]: key, old value, value, end of value
    types: np.ndarray  # uint8 [n]

    def __len__(self) -> int:
        return len(self.types)

    def key(self, i: int) -> memoryview:
        """The serialized key of event ``i``."""
        return self.body[int(self.offsets[i, 0]) : int(self.offsets[i, 1])]

    def rows(self, keep: np.ndarray, *, old: bool = False) -> bytes:
        """The (key, value) -- or (key, old value) -- pairs of the events ``keep`` selects, back to back."""
        body = self.body
        out = bytearray()
        for i in np.flatnonzero(keep):
            k0, o0, v0, end = (int(x) for x in self.offsets[i])
            out += body[k0:o0]
            out += body[o0:v0] if old else body[v0:end]
        return bytes(out)


def decode_continuous_events(body: bytes | bytearray | memoryview) -> ContinuousEvents:
    """Locate the events of an OP_QUERY_CONTINUOUS_EVENT_NOTIFICATION body (after the frame header)."""
    view = body if isinstance(body, memoryview) else memoryview(body)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    if len(view) < 4:
        raise ProtocolError(f"continuous query notification of {len(view)} bytes: no event count")
    n = _I32.unpack_from(view, 0)[0]
    # Every event takes at least four bytes (three null values and its type).
    if n < 0 or 4 + 4 * n > len(view):
        raise ProtocolError(f"continuous query notification claims {n} events in {len(view)} bytes")
    offsets = np.empty((n, 4), dtype=np.int64)
    types = np.empty(n, dtype=np.uint8)
    pos = 4
    for i in range(n):
        row = offsets[i]
        for j in range(3):
            row[j] = pos
            pos = value_end(view, pos)
        row[3] = pos
        if pos >= len(view):
            raise ProtocolError(f"continuous query notification: event {i} of {n} has no event type")
        kind = view[pos]
        if kind > EventType.EXPIRED:
            raise ProtocolError(f"continuous query notification: unknown event type {kind} (event {i} of {n})")
        types[i] = kind
        pos += 1
    if pos != len(view):
        raise ProtocolError(f"continuous query notification: {len(view) - pos} bytes left after {n} events")
    return ContinuousEvents(view, offsets, types)
