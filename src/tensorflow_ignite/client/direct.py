"""Answers received straight into a caller's buffer: part of :class:`~.connection.Connection`.

A request whose answer is a large value of known size (a file block of
``ignite://`` going into TensorFlow's read buffer) registers that buffer before
the request leaves (:meth:`DirectAnswers.expect_into`).  Whichever thread then
reads the answer off the socket -- its requester or another thread waiting on
the same connection -- receives the body into the buffer with no intermediate
copy, and drops every reference to it before telling the requester: the buffer
may be freed the moment the requester returns.
"""

from __future__ import annotations

import struct
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..protocol.codes import ProtocolVersion
    from ..protocol.receive import FrameReader
    from .connection import ConnectionSettings

__all__ = ["DirectAnswers"]

_LONG = struct.Struct("<q")  # request id at offset 0 of a response frame
#: Response header with no flags set (protocol 1.4+): long request id, short flags = 0.
PLAIN_HEADER = 10
#: What an answer's target points at once its buffer is filled (no reference to the caller's memory kept).
_FILLED = memoryview(b"")


class _IntoTarget:
    """Where the body of one expected answer goes (:meth:`DirectAnswers.expect_into`)."""

    __slots__ = ("into", "head", "result")

    def __init__(self, into: memoryview, head: int) -> None:
        self.into = into
        self.head = head
        #: The first ``head`` bytes of the body, once the rest was read into ``into``.
        self.result: memoryview | None = None


class DirectAnswers:
    """The connection's answers-into-buffers half (a mixin of :class:`~.connection.Connection`,
    which owns the socket, the locks and the frame reader used here)."""

    if TYPE_CHECKING:  # provided by Connection
        reader: FrameReader
        settings: ConnectionSettings
        version: ProtocolVersion
        _recv_lock: threading.Lock
        _parked_cv: threading.Condition
        _parked: dict[int, memoryview]
        _read_deadline: float | None

        def _read_answer(self, mine: int) -> memoryview | None: ...
        def _release_reader(self) -> None: ...
        def _check_deadline(self, deadline: float) -> None: ...
        def _body(self, frame: memoryview, op: int | None) -> memoryview: ...
        def receive(self, request_id: int, op: int | None = None) -> memoryview: ...

    def _init_direct(self) -> None:
        #: Answers to be read straight into a caller's buffer (:meth:`expect_into`).
        self._into: dict[int, _IntoTarget] = {}

    def expect_into(self, request_id: int, into: memoryview, head: int) -> None:
        """Have the answer to ``request_id`` read straight into ``into`` (see :meth:`receive_into`).

        Call it from the request's encoder (``send(encode)`` calls it with the id
        before the frame leaves), so that no thread can read the answer first.
        Every registration must end with :meth:`receive_into` or :meth:`forget_into`
        before ``into`` is released: until then any thread receiving on this
        connection may write into it.
        """
        with self._parked_cv:
            self._into[request_id] = _IntoTarget(into, head)

    def forget_into(self, request_id: int) -> None:
        """Cancel :meth:`expect_into`: once this returns, nothing writes into that buffer.

        The answer, if it still comes, is parked like any answer nobody waits for
        (meant for error paths, where the connection is usually dropped anyway).
        """
        with self._recv_lock:  # a reader filling the buffer holds this lock
            with self._parked_cv:
                self._into.pop(request_id, None)
                self._parked.pop(request_id, None)

    def receive_into(self, request_id: int, op: int | None = None) -> tuple[memoryview, bool]:
        """Wait for the answer to a request registered with :meth:`expect_into`.

        A plain answer (success, no flags) whose body is exactly ``head + len(into)``
        bytes has its first ``head`` bytes returned and the rest received from the
        socket straight into ``into`` (no intermediate buffer), and ``(head bytes,
        True)`` is returned.  Any other answer (another length, an error) is
        handled as :meth:`receive` handles it and returned whole, with ``False``;
        ``into`` is then not written.  Whichever thread reads an answer registered
        here fills its buffer, so several expected answers may be waited for in
        any order.
        """
        frame: memoryview | None = None
        deadline = time.monotonic() + self.settings.timeout
        try:
            while True:
                with self._parked_cv:
                    target = self._into.get(request_id)
                    frame = self._parked.pop(request_id, None)
                    if target is None or target.result is not None or frame is not None:
                        break
                if not self._recv_lock.acquire(timeout=0.05):
                    self._check_deadline(deadline)
                    with self._parked_cv:
                        if target.result is None and request_id not in self._parked:
                            self._parked_cv.wait(timeout=0.05)
                    continue
                try:
                    self._read_deadline = deadline
                    with self._parked_cv:  # parked by the thread that held the lock before us?
                        frame = self._parked.pop(request_id, None)
                    while frame is None and target.result is None:
                        self._check_deadline(deadline)
                        frame = self._read_answer(request_id)
                finally:
                    self._read_deadline = None
                    self._release_reader()
                break
        finally:
            with self._parked_cv:
                done = self._into.pop(request_id, None)
        if done is not None and done.result is not None:
            return done.result, True
        if frame is None:  # registration missing (never expected): wait the ordinary way
            return self.receive(request_id, op), False
        return self._body(frame, op), False

    def _fill_registered(self) -> bool:
        """If the next frame answers a registered request and fits its buffer, receive it there
        (receive lock held) and return True; else read nothing and return False."""
        reader = self.reader
        length = reader.peek_length()
        if PLAIN_HEADER <= length <= reader.max_frame and self.version >= (1, 4, 0):
            header = reader.peek(4 + PLAIN_HEADER)
            rid = int(_LONG.unpack_from(header, 4)[0])
            plain = header[12] == 0 and header[13] == 0
            del header
            with self._parked_cv:
                target = self._into.get(rid)
            if target is not None and plain and length - PLAIN_HEADER == target.head + len(target.into):
                reader.start_frame()
                reader.take(PLAIN_HEADER)
                into = target.into
                try:
                    head = reader.take(target.head)
                    reader.fill(into)
                except BaseException as exc:  # noqa: BLE001 - re-raised below, without the frames
                    # The caller's buffer is TensorFlow's: no traceback frame may keep
                    # a reference to it once the caller has given up on this answer.
                    del into
                    target = None
                    exc.__context__ = None
                    raise exc.with_traceback(None)  # noqa: B904 - the context is dropped on purpose (above)
                # The waiter may return (and its caller release the buffer) the moment
                # it is notified, possibly before this frame ends: drop every reference
                # to the buffer first.
                del into
                with self._parked_cv:
                    target.into = _FILLED
                    target.result = head
                    self._parked_cv.notify_all()
                return True
        return False
