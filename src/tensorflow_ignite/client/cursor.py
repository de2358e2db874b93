"""Paging through a server-side cursor with one page requested ahead.

Scan and SQL queries share this: the first answer carries the cursor id and a
page; while the caller works on a page, the request for the next one is
already on the wire.  Abandoning the iterator early collects the page in
flight and closes the cursor on the server.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Protocol, TypeVar

from ..errors import IgniteConnectionError, ServerError
from ..protocol import requests
from ..protocol.codes import Op
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
) -> Iterator[P]:
    """Yield the first page (from ``first_body``) and every following one.

    ``next_page(request_id, cursor_id)`` encodes the "get next page" request.
    """
    page = decode_first(first_body)
    pending: int | None = None
    open_cursor = page.has_more
    try:
        while True:
            if page.has_more and cursor_id is not None:
                cid = cursor_id
                pending = conn.send(lambda rid: next_page(rid, cid))
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
        if open_cursor and cursor_id is not None and not conn.closed:
            cid2 = cursor_id
            try:
                conn.request(lambda rid: requests.resource_close(rid, cid2), Op.RESOURCE_CLOSE)
            except (ServerError, IgniteConnectionError) as exc:
                log.debug("closing cursor %s failed: %s", cid2, exc)
