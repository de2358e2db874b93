"""Dialling a node and bounding every wait on it: the same for both Ignite generations.

:func:`dial` opens the TCP connection (``connect_timeout``), sets the socket
options and, when the options ask for TLS, completes the TLS handshake
(:func:`.tls.ssl_context`); what fails is a typed error naming the node.
The Ignite 2 connection (:class:`~.connection.Connection`) and the Ignite 3 one
(:class:`~tensorflow_ignite.ignite3.connection.Ignite3Connection`) both dial
through it, and both decide how long to wait for an answer with
:class:`WaitBounds` -- the three deadlines of
:class:`~.options.ConnectionOptions`:

* the protocol handshake's answer: ``connect_timeout`` (or ``timeout`` when shorter);
* once connected the socket wakes every half ``idle_timeout`` (when the node
  answers heartbeats): the reader then sends one heartbeat, and a node that has
  said nothing -- not even that heartbeat's answer -- for ``idle_timeout`` is
  abandoned (frozen, or its host cut off, where no reset ever comes);
* a request's answer from a node that is alive but slow: ``timeout``.
"""

from __future__ import annotations

import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import ConnectionTimeoutError, IgniteConnectionError
from ..protocol.receive import FrameReader
from .closeable import Closeable
from .options import ConnectionOptions
from .tls import tls_error

__all__ = ["dial", "recv_bounded", "send_all", "SocketConnection", "WaitBounds", "request_timeout_message"]

#: Kernel receive buffer asked for (pages of a scan arrive faster than one read a wake-up drains).
RECEIVE_BUFFER = 4 << 20


def dial(
    host: str, port: int, options: ConnectionOptions, *, connect_timeout: float, product: str, refused_hint: str
) -> socket.socket | ssl.SSLSocket:
    """A connected socket to ``host:port`` -- TLS wrapped when ``options`` use TLS -- with ``connect_timeout``
    as its timeout (the protocol handshake's bound; the caller sets the reading interval after it).

    ``product`` names what was dialled in errors (``"Ignite"``, ``"Ignite 3"``); ``refused_hint`` is
    said when nothing listens there.  Raises :class:`~tensorflow_ignite.errors.ConnectionTimeoutError`,
    :class:`~tensorflow_ignite.errors.IgniteConnectionError` or :class:`~tensorflow_ignite.errors.TLSError`.
    """
    address = f"{host}:{port}"
    try:
        raw = socket.create_connection((host, port), timeout=connect_timeout)
    except TimeoutError:
        raise ConnectionTimeoutError(
            f"connecting to {product} at {address} timed out after {connect_timeout}s", address=address
        ) from None
    except OSError as exc:
        raise IgniteConnectionError(
            f"cannot connect to {product} at {address}: {exc.strerror or exc}. {refused_hint}", address=address
        ) from None
    try:
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
        except OSError:
            pass
        if not options.uses_tls:
            return raw
        hostname = options.tls_hostname(host)
        try:
            return options.ssl_context().wrap_socket(raw, server_hostname=hostname)
        except (TimeoutError, ssl.SSLError, OSError) as exc:
            raise tls_error(exc, address, hostname) from None
    except BaseException:
        raw.close()
        raise


def recv_bounded(
    sock: socket.socket | ssl.SSLSocket,
    view: memoryview,
    *,
    peer: str,
    address: str,
    give_up: Callable[[float], str | None],
    probe: Callable[[], bool],
) -> int:
    """One ``recv_into`` of at least one byte, waiting in steps of the socket's timeout.

    After each silent step ``give_up(seconds silent)`` says why to stop (raised as
    :class:`~tensorflow_ignite.errors.ConnectionTimeoutError`; the caller closes the connection: the
    stream position is unknown now), or None to wait on; the first silent step also calls ``probe()``
    (a heartbeat; False when it could not be sent now, so the next step tries again).  A closed
    stream raises :class:`~tensorflow_ignite.errors.IgniteConnectionError` naming ``peer``; other
    socket errors propagate.
    """
    silent = 0.0
    probed = False
    while True:
        try:
            k = sock.recv_into(view)
        except TimeoutError:
            silent += sock.gettimeout() or 0.0
            reason = give_up(silent)
            if reason is not None:
                raise ConnectionTimeoutError(reason, address=address) from None
            if not probed:
                probed = probe()
            continue
        if k == 0:
            raise IgniteConnectionError(f"{peer} closed the connection", address=address)
        return k


def send_all(sock: socket.socket | ssl.SSLSocket, data: bytes | bytearray | memoryview, stall_limit: float) -> None:
    """Send every byte of ``data``; raises :class:`TimeoutError` once a send made no progress for
    ``stall_limit`` seconds (a plain socket: each byte sent restarts the count; TLS: ``sendall``'s own
    timeout).  Other failures raise what the socket raises."""
    if isinstance(sock, ssl.SSLSocket):
        sock.sendall(data)
        return
    view = memoryview(data).cast("B")
    stalled = 0.0
    while view:
        try:
            n = sock.send(view)
        except TimeoutError:
            stalled += sock.gettimeout() or 0.0
            if stalled >= stall_limit - 1e-3:
                raise
            continue
        view, stalled = view[n:], 0.0


class SocketConnection(Closeable):
    """What a connection of either generation does with its socket once dialled: it is closed
    (idempotently; the frame reader's pooled buffers dropped) and a context manager closes it."""

    _sock: socket.socket | ssl.SSLSocket | None
    reader: FrameReader

    @property
    def closed(self) -> bool:
        """Whether the socket is closed (by :meth:`close`, or after a failure)."""
        return self._sock is None

    def close(self) -> None:
        """Close the socket (idempotent)."""
        sock, self._sock = self._sock, None
        self.reader.release()
        if sock is not None:
            try:
                sock.close()
            except OSError:
                pass


def request_timeout_message(peer: str, timeout: float) -> str:
    """What a request that ``peer`` left unanswered for ``timeout`` seconds says."""
    return (
        f"no answer from {peer} within {timeout}s (timeout; the connection was closed). Check the "
        "node, or raise timeout=... for requests that legitimately take longer"
    )


@dataclass(frozen=True)
class WaitBounds:
    """How long one connection waits on its node (the three deadlines of its options).

    ``connect_timeout`` may differ from the options' (a probe dials with its own).
    """

    options: ConnectionOptions
    connect_timeout: float

    @property
    def handshake(self) -> float:
        """Seconds the protocol handshake's answer may take: ``connect_timeout``, or ``timeout`` when shorter."""
        return min(self.connect_timeout, self.options.timeout)

    @property
    def send_stall(self) -> float:
        """Seconds a send may make no progress before the node is abandoned: ``idle_timeout`` (or ``timeout``)."""
        return min(self.options.idle_timeout, self.options.timeout)

    def step(self, heartbeats: bool) -> float:
        """The socket's timeout once connected: half of ``idle_timeout`` when the node answers
        heartbeats (a silent reader probes, then gives up), else ``timeout``."""
        o = self.options
        return min(o.idle_timeout / 2, o.timeout) if heartbeats else o.timeout

    def give_up(
        self, peer: str, silent: float, deadline: float | None, *, handshaking: bool, heartbeats: bool
    ) -> str | None:
        """Why a reader that has heard nothing from ``peer`` for ``silent`` seconds stops waiting
        (None: wait on).  ``deadline``: when the request being answered must have been (monotonic)."""
        o = self.options
        if deadline is not None and time.monotonic() >= deadline:
            return request_timeout_message(peer, o.timeout)
        if handshaking:
            return f"no answer from {peer} within {self.handshake}s"
        if heartbeats:
            if silent < o.idle_timeout - 1e-3:
                return None
            return (
                f"{peer} sent nothing for {silent:g}s, not even the answer to a heartbeat "
                f"(idle_timeout={o.idle_timeout:g}): the node is frozen or its host unreachable; "
                "the connection was closed. Check the node and the network to it"
            )
        if silent < o.timeout - 1e-3:
            return None
        return request_timeout_message(peer, o.timeout)
