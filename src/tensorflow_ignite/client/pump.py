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
Requests stay Python's: the pump sends each page request through
:meth:`Connection.send` (under the send lock, with a request id of the
connection's sequence), so other threads may send on the connection, and
answers to their requests that the pump reads are filed for them as the
Python reader would (:func:`_file_frame`).  The pump reads frames exactly
(never past the last one) and the lease ends with :meth:`PumpedPages.stop`:
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
    ) -> None:
        self._conn = conn
        self._pump = pump
        self._fd = fd
        self._cursor_id = cursor_id
        self._next_op = next_op
        self._decode_next = decode_next
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
        # The pump reads a duplicate of the socket's descriptor: if another thread closes the
        # connection meanwhile, the number cannot be reused under the pump by another socket.
        fd = os.dup(sock.fileno())
        try:
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
            )
        except BaseException:
            os.close(fd)
            raise
    except BaseException:
        conn._release_reader()
        raise
    return PumpedPages(conn, handle, fd, cursor_id, next_op, decode_next)


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
