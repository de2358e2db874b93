"""A TCP forwarder for tests: put it in front of a real Ignite node, then make it stall or slow.

Not a mock: every byte comes from the real node.  ``stall_after(n)`` lets ``n``
more bytes through from the node to the client and then holds the rest (the node
seems to stop answering mid-frame); ``listen_host`` lets a test reach the node
through another loopback address (one its TLS certificate does not list).

``set_link(rtt, loss)`` makes the path a slow, lossy network -- this machine's
kernel has no ``tc netem``, so it is done here, in user space: every chunk is
delivered half the round trip after it was read, in each direction, while
later chunks keep flowing (a pipe, not stop-and-wait); a "lost" chunk (with
probability ``loss``) arrives a retransmission timeout late, and what follows it
waits behind it, which is what loss looks like to an application over TCP.
"""

from __future__ import annotations

import random
import socket
import threading
import time
from collections import deque
from collections.abc import Callable


class TcpProxy:
    """Forward ``listen_host:<free port>`` to ``target``; see the module docstring."""

    def __init__(self, target: tuple[str, int], listen_host: str = "127.0.0.1") -> None:
        self.target = target
        self._server = socket.create_server((listen_host, 0))
        self._server.settimeout(0.2)
        self.address = (listen_host, self._server.getsockname()[1])
        self._lock = threading.Lock()
        self._budget: int | None = None  # bytes still allowed node -> client; None = unlimited
        self._released = threading.Event()
        self._stop = threading.Event()
        self._sockets: list[socket.socket] = []
        self._threads: list[threading.Thread] = []
        self.stalled = threading.Event()  # set once the budget ran out and data was held
        self._delay = 0.0  # one way, seconds
        self._loss = 0.0
        self._retransmit = 0.2
        self._random = random.Random(0)
        self._spawn(self._accept_loop)

    @property
    def url(self) -> str:
        return f"{self.address[0]}:{self.address[1]}"

    def stall_after(self, nbytes: int) -> None:
        """Let ``nbytes`` more bytes through towards the client, then hold everything."""
        with self._lock:
            self._budget = nbytes
            self._released.clear()

    def set_link(self, rtt: float = 0.0, loss: float = 0.0, *, retransmit: float = 0.2, seed: int = 0) -> None:
        """From now on: ``rtt`` seconds of round trip, and a share ``loss`` of chunks ``retransmit``
        seconds late (TCP's minimum retransmission timeout is 0.2 s)."""
        if rtt < 0 or not 0.0 <= loss < 1.0 or retransmit < 0:
            raise ValueError(
                f"set_link(rtt={rtt}, loss={loss}, retransmit={retransmit}): rtt and retransmit "
                "are seconds >= 0, loss a share in [0, 1)"
            )
        with self._lock:
            self._delay, self._loss, self._retransmit = rtt / 2, loss, retransmit
            self._random = random.Random(seed)

    def release(self) -> None:
        """Forward normally again."""
        with self._lock:
            self._budget = None
        self._released.set()

    def close(self) -> None:
        self._stop.set()
        self._released.set()
        try:
            self._server.close()
        except OSError:
            pass
        for s in list(self._sockets):
            try:
                s.close()
            except OSError:
                pass
        for t in self._threads:
            t.join(timeout=5)

    def __enter__(self) -> "TcpProxy":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- internals
    def _spawn(self, fn: Callable[..., object], *args: object) -> None:
        t = threading.Thread(target=fn, args=args, daemon=True)
        self._threads.append(t)
        t.start()

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            for s in (client, upstream):
                s.settimeout(0.2)
                self._sockets.append(s)
            self._spawn(self._pump, client, upstream, False)
            self._spawn(self._pump, upstream, client, True)

    def _allowance(self, want: int) -> int:
        """How many of ``want`` bytes may go to the client now (0: hold)."""
        with self._lock:
            if self._budget is None:
                return want
            n = min(want, self._budget)
            self._budget -= n
            return n

    def _due(self, previous: float) -> float:
        """When a chunk read now is delivered: after the link's delay, a lost one a retransmission
        later, never before the chunk ahead of it (one TCP stream: everything waits behind a loss)."""
        with self._lock:
            due = time.monotonic() + self._delay
            if self._loss and self._random.random() < self._loss:
                due += self._retransmit
        return max(due, previous)

    def _pump(self, src: socket.socket, dst: socket.socket, to_client: bool) -> None:
        """Read ``src`` into a queue of (due time, bytes); :meth:`_deliver` writes them to ``dst``."""
        queue: deque[tuple[float, bytes]] = deque()
        ready = threading.Condition()
        self._spawn(self._deliver, queue, ready, src, dst, to_client)
        last = 0.0
        while not self._stop.is_set():
            try:
                chunk = src.recv(65536)
            except TimeoutError:
                continue
            except OSError:
                chunk = b""
            last = self._due(last) if chunk else last
            with ready:
                queue.append((last, chunk))  # b"": the end of the stream, after what came before
                ready.notify()
            if not chunk:
                return
        with ready:
            queue.append((0.0, b""))
            ready.notify()

    def _deliver(
        self,
        queue: "deque[tuple[float, bytes]]",
        ready: threading.Condition,
        src: socket.socket,
        dst: socket.socket,
        to_client: bool,
    ) -> None:
        pending = b""
        while not self._stop.is_set():
            if not pending:
                with ready:
                    while not queue and not self._stop.is_set():
                        ready.wait(0.2)
                    if not queue:
                        break
                    due, pending = queue[0]
                    wait = due - time.monotonic()
                    if wait > 0:
                        pending = b""
                        ready.wait(min(wait, 0.2))  # a stop, or the chunk's time, ends the wait
                        continue
                    queue.popleft()
                if not pending:
                    break  # the source ended
            n = self._allowance(len(pending)) if to_client else len(pending)
            if n == 0:
                self.stalled.set()
                self._released.wait(0.2)  # held until release() or close()
                continue
            try:
                dst.sendall(pending[:n])
            except OSError:
                break
            pending = pending[n:]
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
