"""A scan cursor's later pages fetched by the op library's compiled scan pump, on a leased connection.

Python dials, handshakes and authenticates the connection, opens the cursor
and reads its first page; :func:`lease` then hands the connection's socket to
``ScanPump`` (``native/tf_ignite_data_scan.cc``), whose thread asks for the
cursor's next pages and receives them with the GIL released, holding up to
``limit`` bytes of them ahead of the reader -- what
:class:`~.cursor._ReadAhead` does in Python, where each page's receive,
framing and filing need the GIL.

The lease: the reader's role on the connection (its receive lock) is taken
for the pump's lifetime, so no Python thread reads the socket meanwhile.
The pump sends the page requests itself, without the GIL: for the lease the
connection's send lock is a ``ScanPump.SendLock`` that Python's senders and
the pump's thread share (:meth:`Connection._swap_send_lock`), so other
threads may still send on the connection, and the request ids come from the
connection's sequence in blocks (:meth:`Connection._take_ids`).  (Through
Python, each request waited for the GIL -- up to the interpreter's switch
interval, about 3 ms a page measured while the reader decoded -- with the
node idle.)  Answers to other threads' requests that the pump reads are
filed for them as the Python reader would (:func:`_file_frame`).  The pump
reads frames exactly (never past the last one) and hands each over as a
read-only buffer that owns it (no copy).  For a scan cursor the pump's thread
also computes each page's row identities (the LONG or INT keys) and their hash
codes (``native/tf_ignite_data_rows.cc``), which :func:`pumped_row_ids` reads,
so the node scan's reader does not compute them in Python.  The lease ends with
:meth:`PumpedPages.stop`:
the pump answers its request in flight, the connection goes back to Python at
a frame boundary, and a cursor the server still holds is closed.  A socket
failure comes back as :class:`~tensorflow_ignite.errors.IgniteConnectionError`
naming the node (the connection is closed: the stream position is lost), and
the scan's failover takes over as it does for the Python read-ahead.

Where the pump cannot run -- the op library is not loaded,
``TF_IGNITE_DECODER=python``, a TLS connection, a connection another thread is
reading -- the Python read-ahead runs, with one log line per reason and
process; :func:`fetch_counts` says how many pages each path fetched.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import IgniteConnectionError, ProtocolError, ServerError
from ..protocol import requests
from ..protocol.codes import Op, ResponseFlag
from ..protocol.columns.compiled import (
    ScanPumpType,
    fallback,
    installed_scan_pump,
    scan_pump_reason,
    set_scan_pump,
)

if TYPE_CHECKING:
    from .connection import Connection

__all__ = [
    "COMPILED",
    "PYTHON",
    "PumpedPages",
    "ScanPumpType",
    "lease",
    "set_scan_pump",
    "installed_scan_pump",
    "scan_pump_reason",
    "fetch_counts",
    "pumped_row_ids",
]

log = logging.getLogger(__name__)

#: The paths a cursor's later pages can be fetched by (:func:`fetch_counts`).
COMPILED = "compiled"
PYTHON = "python"


_counts: dict[str, int] = {}
_counts_lock = threading.Lock()


def fetch_counts() -> dict[str, int]:
    """Later pages of read-ahead cursors fetched so far in this process, per path (:data:`COMPILED`,
    :data:`PYTHON`)."""
    with _counts_lock:
        return dict(_counts)


def count(path: str, paths: MutableMapping[str, int] | None = None) -> None:
    """Count one page fetched by ``path``, in this process's counts and in ``paths`` (a reader's) if given."""
    with _counts_lock:
        _counts[path] = _counts.get(path, 0) + 1
        if paths is not None:
            paths[path] = paths.get(path, 0) + 1


def pumped_row_ids(rows: memoryview, row_count: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The keys (int64) and key hash codes (uint32) of a scan page's rows as the pump computed them.

    ``rows`` is a page's rows region; they are known when it lies in a frame the
    pump received and computed them for (a scan cursor's page whose keys are all
    LONG or INT and whose values it could step over): else None, and the caller
    computes them.
    """
    get = getattr(rows.obj, "row_ids", None)
    if get is None:
        return None
    got = get()
    if got is None:
        return None
    ids = np.frombuffer(got[0], np.int64)
    if len(ids) != row_count:  # not this frame's whole page (cannot happen for pages decoded from it)
        return None
    return ids, np.frombuffer(got[1], np.uint32)


def _fallback(reason: str) -> None:
    fallback(reason, "scan pages fetched in Python, not by the compiled scan pump")


class PumpedPages:
    """The pages a :func:`lease`\\ d pump fetches: :meth:`pages`, then :meth:`stop` (always)."""

    def __init__(
        self,
        conn: Connection,
        pump: Any,
        fd: int,
        cursor_id: int,
        next_op: int,
        decode_next: Callable[[memoryview], Any],
        request: bytes,
        send_lock: Any,
        old_lock: Any,
    ) -> None:
        self._conn = conn
        self._pump = pump
        self._fd = fd
        self._cursor_id = cursor_id
        self._next_op = next_op
        self._decode_next = decode_next
        self._request = request
        self._send_lock = send_lock
        self._old_lock = old_lock
        self._leased = True

    def pages(self) -> Iterator[Any]:
        """The fetched pages in order; what ended the fetch, if it failed, after the pages before it."""
        conn = self._conn
        while True:
            try:
                frame = self._pump.next()
            except ConnectionError as exc:
                self.stop()
                raise IgniteConnectionError(
                    f"scan of cursor {self._cursor_id} on {conn.address} failed (compiled scan pump): {exc}",
                    address=conn.address,
                ) from None
            except ValueError as exc:
                self.stop()
                raise ProtocolError(f"{exc} (compiled scan pump; the connection was closed)") from None
            if frame is None:
                return
            page = self._decode_next(conn._body(memoryview(frame), self._next_op))
            yield page

    def stop(self) -> None:
        """End the lease: the pump answers its request in flight and stops; the cursor is closed if still open."""
        if not self._leased:
            return
        self._leased = False
        cursor_open, position_known = self._pump.stop()
        os.close(self._fd)
        conn = self._conn
        sent = self._pump.sent() if self._send_lock is not None else 0
        _restore_send_lock(conn, self._send_lock, self._old_lock, self._request, sent)
        conn._release_reader()
        if not position_known:
            conn.close()
        elif cursor_open and not conn.closed:
            cid = self._cursor_id
            try:
                conn.request(lambda rid: requests.resource_close(rid, cid), Op.RESOURCE_CLOSE)
            except (ServerError, IgniteConnectionError) as exc:
                log.debug("closing cursor %s failed: %s", cid, exc)


def lease(
    conn: Connection,
    cursor_id: int,
    next_page: Callable[[int, int], bytes],
    next_op: int,
    decode_next: Callable[[memoryview], Any],
    limit: int,
) -> PumpedPages | None:
    """Hand the cursor's later pages to the compiled pump on ``conn``; None (and a log line) where it cannot run."""
    pump = installed_scan_pump()
    if pump is None:
        _fallback(scan_pump_reason() or "it was turned off")
        return None
    if conn.settings.tls:
        _fallback("the connection uses TLS (the pump reads plain sockets only)")
        return None
    if conn.version < (1, 4, 0):
        _fallback(f"the node speaks thin-client protocol {conn.version}, before 1.4.0's response flags")
        return None
    if not conn._recv_lock.acquire(blocking=False):
        _fallback("another thread is reading the connection")
        return None
    try:
        sock = conn._sock
        reason = None
        if sock is None or conn.closed:
            reason = "the connection is closed"
        elif conn.reader.buffered():
            reason = "the connection has bytes received but not yet read"
        elif conn._into:
            reason = "the connection expects answers into callers' buffers"
        if reason is not None:
            _fallback(reason)
            conn._release_reader()
            return None
        assert sock is not None
        cid = cursor_id
        request = _request_template(next_page, cid)
        # The pump reads a duplicate of the socket's descriptor: if another thread closes the
        # connection meanwhile, the number cannot be reused under the pump by another socket.
        fd = os.dup(sock.fileno())
        send_lock = old_lock = None
        try:
            # An op library built from older sources has no SendLock: its pump sends through Python.
            lock_type = getattr(pump, "SendLock", None)
            native: dict[str, Any] = {}
            if lock_type is not None:
                send_lock = lock_type()
                old_lock = conn._swap_send_lock(send_lock)
                native = {"request": request, "send_lock": send_lock, "take_ids": conn._take_ids}
                if next_op == Op.QUERY_SCAN_CURSOR_GET_PAGE:
                    native["row_ids"] = True
            handle = pump(
                fd,
                lambda: conn.send(lambda rid: next_page(rid, cid)),
                lambda frame: _file_frame(conn, memoryview(frame)),
                limit,
                # The pump sends no heartbeats: a page must come within idle_timeout (a frozen or
                # cut-off node is abandoned as soon as by the Python reader; a slow one sooner).
                min(conn.settings.timeout, conn.settings.idle_timeout),
                conn.settings.max_frame,
                conn.address,
                **native,
            )
        except BaseException:
            if old_lock is not None:
                _restore_send_lock(conn, send_lock, old_lock, request, 0)
            os.close(fd)
            raise
    except BaseException:
        conn._release_reader()
        raise
    return PumpedPages(conn, handle, fd, cursor_id, next_op, decode_next, request, send_lock, old_lock)


def _request_template(next_page: Callable[[int, int], bytes], cursor_id: int) -> bytes:
    """The cursor's page request with request id 0: the pump writes each id at offset 6 (after length, op)."""
    frame = bytes(next_page(0, cursor_id))
    other = bytes(next_page(0x0102030405060708, cursor_id))
    if frame[:6] + frame[14:] != other[:6] + other[14:] or other[6:14] != bytes(range(8, 0, -1)):
        raise ProtocolError("a cursor page request does not carry its request id at offset 6")
    return frame


def _restore_send_lock(conn: Connection, send_lock: Any, old_lock: Any, request: bytes, sent: int) -> None:
    """Put the connection's own send lock back after a lease, counting the requests the pump sent."""
    if send_lock is None:  # the pump sent through Connection.send, which counted them
        return
    with send_lock:
        if sent:
            conn._count_sent([request] * sent, sent * len(request))
        conn._send_lock = old_lock


def _file_frame(conn: Connection, frame: memoryview) -> None:
    """File an answer the pump read for another request (or a notification) as the Python reader would.

    The same filing as ``Connection._read_answer``'s for answers that are not its own.
    """
    rid = conn._response_id(frame)
    if frame[8] & ResponseFlag.NOTIFICATION:
        conn._queue_notification(rid, frame)
        return
    with conn._parked_cv:
        if rid in conn._heartbeats:
            conn._heartbeats.discard(rid)
            return
        conn._parked[rid] = frame
        conn._parked_cv.notify_all()
