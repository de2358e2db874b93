"""Frames a node pushes unasked (continuous-query events): part of :class:`~.connection.Connection`.

A frame whose header carries the NOTIFICATION flag answers no request: its id is
the resource (the query) it belongs to.  Whichever thread reads it queues it per
resource, at most a set number of frames each, so a reader that falls behind
cannot make the process buffer without bound: past the limit the resource's
frames are dropped and its reader told (:class:`~tensorflow_ignite.errors.NotificationOverflowError`).
A connection that opened no such resource (:meth:`Notifications.limit_notifications` not called)
keeps no pushed frame, nor does one for a resource its reader closed.
"""

from __future__ import annotations

import collections
import select
import socket
import ssl
import threading
import time
from typing import TYPE_CHECKING

from ..errors import IgniteConnectionError, NotificationOverflowError
from ..protocol.codes import Op

if TYPE_CHECKING:
    from ..protocol.receive import FrameReader

__all__ = ["Notifications"]


class Notifications:
    """The connection's server-pushed-frames half (a mixin of :class:`~.connection.Connection`,
    which owns the socket, the locks and the frame reader used here)."""

    if TYPE_CHECKING:  # provided by Connection
        address: str
        reader: FrameReader
        _sock: socket.socket | ssl.SSLSocket | None
        _recv_lock: threading.Lock
        _parked_cv: threading.Condition

        def _read_answer(self, mine: int) -> memoryview | None: ...
        def _release_reader(self) -> None: ...
        def _body(self, frame: memoryview, op: int | None) -> memoryview: ...

    def _init_notifications(self) -> None:
        #: Server-pushed frames (continuous query events) by resource id, until taken
        #: (:meth:`next_notification`); at most ``_notification_limit`` frames each.
        self._notifications: dict[int, collections.deque[memoryview]] = {}
        self._overflowed: set[int] = set()
        #: Resources closed by their reader: frames still in flight for them are dropped.
        self._forgotten: set[int] = set()
        self._notification_limit = 0

    def limit_notifications(self, frames: int) -> None:
        """Accept pushed frames, keeping at most ``frames`` unread ones per resource.

        Until this is called a connection accepts none (a node pushes only for a
        resource a request of this connection opened: anything else is dropped,
        so a misbehaving peer cannot fill memory).  A resource whose queue is full loses its queued frames and every later
        one, and :meth:`next_notification` raises
        :class:`~tensorflow_ignite.errors.NotificationOverflowError` for it:
        memory stays bounded however far behind its reader is.
        """
        self._notification_limit = max(0, int(frames))

    def next_notification(self, resource_id: int, timeout: float) -> memoryview | None:
        """The body of the next frame the node pushed for ``resource_id``, or None after ``timeout`` seconds.

        Frames are read from the socket while waiting (answers to other
        requests are parked for their waiters); an idle connection is not
        an error here, unlike a request without an answer.
        """
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            with self._parked_cv:
                if resource_id in self._overflowed:
                    raise NotificationOverflowError(
                        f"{self.address}: more than {self._notification_limit} unread notification frames for "
                        f"resource {resource_id}; they were dropped: the reader fell behind the node",
                        address=self.address,
                    )
                queue = self._notifications.get(resource_id)
                frame = queue.popleft() if queue else None
            if frame is not None:
                return self._body(frame, Op.QUERY_CONTINUOUS_EVENT_NOTIFICATION)
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            if not self._recv_lock.acquire(timeout=min(left, 0.05)):
                with self._parked_cv:
                    if not self._notifications.get(resource_id):
                        self._parked_cv.wait(timeout=min(left, 0.05))
                continue
            try:
                if self._readable(min(left, 0.05)):
                    self._read_answer(-1)
            finally:
                self._release_reader()

    def forget_notifications(self, resource_id: int) -> None:
        """Drop the frames kept for ``resource_id`` (its resource was closed)."""
        with self._parked_cv:
            self._notifications.pop(resource_id, None)
            self._overflowed.discard(resource_id)
            self._forgotten.add(resource_id)

    def _readable(self, timeout: float) -> bool:
        """Whether a frame can be read without waiting longer than ``timeout`` for its first byte."""
        sock = self._sock
        if sock is None:
            raise IgniteConnectionError(f"connection to {self.address} is closed", address=self.address)
        if self.reader.buffered() or (isinstance(sock, ssl.SSLSocket) and sock.pending()):
            return True
        try:
            ready, _, _ = select.select([sock], [], [], timeout)
        except (OSError, ValueError) as exc:
            raise IgniteConnectionError(f"connection to {self.address} lost: {exc}", address=self.address) from None
        return bool(ready)

    def _queue_notification(self, rid: int, frame: memoryview) -> None:
        """Keep a pushed frame for its resource's reader (any thread reading the socket calls this)."""
        with self._parked_cv:
            if not self._notification_limit or rid in self._forgotten:
                return  # nobody asked for it, or its reader closed it
            queue = self._notifications.setdefault(rid, collections.deque())
            if self._notification_limit and len(queue) >= self._notification_limit:
                queue.clear()  # its reader is that far behind: it learns so and starts over
                self._overflowed.add(rid)
            elif rid not in self._overflowed:
                queue.append(frame)
            self._parked_cv.notify_all()
