"""Paging through a server-side cursor with one page requested ahead, or more read ahead.

Scan and SQL queries share this: the first answer carries the cursor id and a
page; while the caller works on a page, the request for the next one is
already on the wire.  Abandoning the iterator early collects the page in
flight and closes the cursor on the server.

A node serves one page of a cursor at a time (its cursors are not safe for
two page requests at once), so one request ahead leaves the node idle as soon
as the caller spends longer on a page than the node does -- a reader that
decodes several pages at once and hands them to TensorFlow.  With
``ahead_bytes`` a thread keeps asking for the next page while the caller
works, holding up to that many bytes of received pages: the node serves
pages back to back while the caller decodes -- the op library's compiled
scan pump (:mod:`.pump`: it needs the GIL only to send each request) where
it can run, else a Python thread (the socket calls release the GIL, but
framing and filing each answer take it).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, Protocol, TypeVar

from ..errors import IgniteConnectionError, ServerError
from ..protocol import requests
from ..protocol.codes import Op
from . import pump
from .connection import Connection

__all__ = ["Page", "stream_pages"]

log = logging.getLogger(__name__)


class Page(Protocol):
    @property
    def has_more(self) -> bool: ...


P = TypeVar("P", bound=Page)


def stream_pages(
    conn: Connection,
    first_body: memoryview,
    cursor_id: int | None,
    decode_first: Callable[[memoryview], P],
    next_page: Callable[[int, int], bytes],
    next_op: int,
    decode_next: Callable[[memoryview], P],
    *,
    ahead_bytes: int = 0,
    paths: MutableMapping[str, int] | None = None,
) -> Iterator[P]:
    """Yield the first page (from ``first_body``) and every following one.

    ``next_page(request_id, cursor_id)`` encodes the "get next page" request.
    ``ahead_bytes`` > 0: the compiled scan pump or a thread reads the following
    pages ahead of the caller, holding at most about that many bytes of them
    (plus the page in flight); errors reach the caller where the failed page
    would have.  ``paths``, when given, counts those pages per fetcher
    (:data:`.pump.COMPILED`, :data:`.pump.PYTHON`).
    """
    page = decode_first(first_body)
    if ahead_bytes > 0 and page.has_more and cursor_id is not None:
        # The op library's compiled pump where it can run (client/pump.py), else a Python thread.
        ahead: _ReadAhead | pump.PumpedPages | None = pump.lease(
            conn, cursor_id, next_page, next_op, decode_next, ahead_bytes
        )
        path = pump.COMPILED
        if ahead is None:
            ahead = _ReadAhead(conn, cursor_id, next_page, next_op, decode_next, ahead_bytes)
            path = pump.PYTHON
        try:
            yield page
            for later in ahead.pages():
                pump.count(path, paths)
                yield later
        finally:
            ahead.stop()
        return
    pending: int | None = None
    open_cursor = page.has_more
    try:
        while True:
            if page.has_more and cursor_id is not None:
                cid = cursor_id
                pending = conn.send(lambda rid: next_page(rid, cid))  # noqa: B023 - called within send()
            yield page
            if pending is None:
                open_cursor = False
                return
            # Forget the id before waiting: if this receive fails (server error,
            # dead socket) the answer is consumed or gone, and waiting for it
            # again in ``finally`` would block until the socket timeout.
            rid, pending = pending, None
            body = conn.receive(rid, next_op)
            page = decode_next(body)
            open_cursor = page.has_more
    finally:
        if pending is not None and not conn.closed:
            try:
                conn.receive(pending, next_op)
            except (ServerError, IgniteConnectionError):
                pass
        if open_cursor and cursor_id is not None:
            _close_cursor(conn, cursor_id)


def _close_cursor(conn: Connection, cursor_id: int) -> None:
    """Close a cursor the caller abandoned on the server (nothing to do if the connection is gone)."""
    if conn.closed:
        return
    try:
        conn.request(lambda rid: requests.resource_close(rid, cursor_id), Op.RESOURCE_CLOSE)
    except (ServerError, IgniteConnectionError) as exc:
        log.debug("closing cursor %s failed: %s", cursor_id, exc)


class _ReadAhead:
    """A thread fetching a cursor's pages after the first while the caller works on earlier ones."""

    def __init__(
        self,
        conn: Connection,
        cursor_id: int,
        next_page: Callable[[int, int], bytes],
        next_op: int,
        decode_next: Callable[[memoryview], Any],
        limit: int,
    ) -> None:
        self._conn = conn
        self._cursor_id = cursor_id
        self._next_page = next_page
        self._next_op = next_op
        self._decode_next = decode_next
        self._limit = limit
        self._cv = threading.Condition(threading.Lock())
        self._pages: deque[tuple[Any, int]] = deque()
        self._nbytes = 0
        self._stopping = False
        self._done = False
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._fetch, name=f"ignite-read-ahead-{cursor_id}", daemon=True)
        self._thread.start()

    def _fetch(self) -> None:
        conn, cursor_id = self._conn, self._cursor_id
        open_cursor = True
        try:
            while True:
                with self._cv:
                    while self._nbytes >= self._limit and not self._stopping:
                        self._cv.wait()
                    if self._stopping:
                        break
                body = conn.receive(conn.send(lambda rid: self._next_page(rid, cursor_id)), self._next_op)
                page = self._decode_next(body)
                open_cursor = page.has_more
                with self._cv:
                    self._pages.append((page, len(body)))
                    self._nbytes += len(body)
                    self._cv.notify_all()
                if not open_cursor:
                    break
        except BaseException as exc:  # noqa: BLE001 - handed to the caller: raised where the page would have come
            open_cursor = False
            with self._cv:
                self._error = exc
        finally:
            if open_cursor:
                _close_cursor(conn, cursor_id)
            with self._cv:
                self._done = True
                self._cv.notify_all()

    def pages(self) -> Iterator[Any]:
        """The fetched pages in order; the thread's error, if it failed, after the pages before it."""
        while True:
            with self._cv:
                while not self._pages and not self._done:
                    self._cv.wait()
                if not self._pages:
                    if self._error is not None:
                        raise self._error
                    return
                page, nbytes = self._pages.popleft()
                self._nbytes -= nbytes
                self._cv.notify_all()
            yield page

    def stop(self) -> None:
        """Stop fetching: the thread finishes the request in flight and closes the cursor.

        Waits for it; bounded by the connection's own timeouts, as every receive is.
        """
        with self._cv:
            self._stopping = True
            self._pages.clear()
            self._cv.notify_all()
        self._thread.join()
