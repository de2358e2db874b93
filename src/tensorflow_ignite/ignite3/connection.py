"""One connection to an Apache Ignite 3 node: socket, TLS, handshake, requests.

It takes the project's one options type,
:class:`~tensorflow_ignite.client.options.ConnectionOptions` (host, port, user
name and password -- Ignite 3's ``basic`` authentication --, the TLS files and
checks, the timeout), builds the TLS context from it as the Ignite 2
connection does (:func:`tensorflow_ignite.client.tls.ssl_context`) and speaks
the wire through the sans-I/O :mod:`.protocol` package.  Frames are split by
the project's one :class:`~tensorflow_ignite.protocol.receive.FrameReader`
(Ignite 3's big-endian length prefix; a receive buffer, large frames received
in place into reused buffers), as on Ignite 2.

It dials through :func:`tensorflow_ignite.client.dial.dial` and bounds its
waits with the same :class:`~tensorflow_ignite.client.dial.WaitBounds` as an
Ignite 2 connection: ``connect_timeout`` for dialling and the handshake, a
heartbeat after half of ``idle_timeout`` of silence and the node abandoned
after all of it, ``timeout`` for a request's answer.

Requests are sent and answered one at a time (a lock per connection); several
threads may share a connection.  A timeout or a broken stream closes the
connection (the stream may be mid-frame) and raises a typed
:class:`~tensorflow_ignite.errors.IgniteConnectionError` naming the node.
"""

from __future__ import annotations

import itertools
import socket
import ssl
import threading
import time

from ..client.dial import SocketConnection, WaitBounds, dial, recv_bounded, send_all
from ..client.options import ConnectionOptions
from ..client.tls import tls_error
from ..errors import ConnectionTimeoutError, HandshakeError, IgniteConnectionError, ProtocolError, TLSError
from ..protocol.receive import DEFAULT_MAX_FRAME, FrameReader
from .protocol.codes import MAGIC, ClientOp
from .protocol.framing import (
    LENGTH,
    Handshake,
    handshake_request,
    parse_handshake,
    parse_response,
    request,
    server_error,
)
from .protocol.msgpack_io import Reader

__all__ = ["Ignite3Connection", "DEFAULT_MAX_FRAME"]


class Ignite3Connection(SocketConnection):
    """A connection to one Ignite 3 node (``host:port`` of ``options``, or the given endpoint)."""

    def __init__(
        self,
        options: ConnectionOptions,
        host: str | None = None,
        port: int | None = None,
        *,
        max_frame: int = DEFAULT_MAX_FRAME,
    ) -> None:
        self.options = options
        self.host = host or options.host
        self.port = port or options.port
        self.address = f"{self.host}:{self.port}"
        self.max_frame = max_frame
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._sock: socket.socket | ssl.SSLSocket | None = None
        #: The connect, idle and request deadlines (the same rules as Ignite 2's connections).
        self.bounds = WaitBounds(options, options.connect_timeout)
        self._handshaking = True
        #: When the answer being read must have come (monotonic; None: no request waiting).
        self._deadline: float | None = None
        #: Ids of heartbeats sent while waiting: their answers are dropped when read.
        self._heartbeats: set[int] = set()
        self.reader = self._new_reader()
        self.observable_timestamp = 0
        #: Set when a response says the partition assignment changed (its time).
        self.assignment_time: int | None = None
        self.handshake: Handshake = self._connect_confirmed()

    #: Handshakes tried per connection when the node drops the first request after one (below).
    HANDSHAKE_ATTEMPTS = 3

    def _connect_confirmed(self) -> Handshake:
        """The handshake, then a heartbeat: the connection is open for requests once the heartbeat is answered.

        An Ignite 3.1 node with authentication answers the handshake before it marks the
        connection's handshake complete (``sendHandshakeResponse`` writes the answer, then sets
        the state), and it may run that on another event loop than the connection's reads. A
        request arriving in between fails with "Unexpected message received before handshake
        completion" and the node closes the connection (seen in ~5% of new connections on a busy
        machine). A heartbeat has no effect, so it takes that risk instead of the caller's first
        request; a connection the node drops there is made again.
        """
        for attempt in range(1, self.HANDSHAKE_ATTEMPTS + 1):
            hs = self._connect()
            try:
                self.call(ClientOp.HEARTBEAT, what="heartbeat after the handshake")
                self._handshaking = False
                if self._sock is not None:
                    self._sock.settimeout(self.bounds.step(heartbeats=True))
                return hs
            except (ConnectionTimeoutError, TLSError):
                raise
            except IgniteConnectionError:
                self.close()
                if attempt == self.HANDSHAKE_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

    def _new_reader(self) -> FrameReader:
        """A frame reader for the socket about to be opened (nothing of an earlier one carries over)."""
        return FrameReader(
            self._recv_into,
            max_frame=self.max_frame,
            peer=f"Ignite 3 node {self.address}",
            on_corrupt=self.close,
            prefix=LENGTH,
        )

    # ------------------------------------------------------------------ connect
    def _connect(self) -> Handshake:
        o = self.options
        sock = dial(
            self.host,
            self.port,
            o,
            connect_timeout=o.connect_timeout,
            product="Ignite 3",
            refused_hint="Is a node running there with its client connector (clientConnector.port) on this port?",
        )
        sock.settimeout(self.bounds.handshake)  # the reading interval once the handshake is confirmed
        self._handshaking = True
        self._sock = sock
        self.reader = self._new_reader()
        try:
            try:
                sock.sendall(handshake_request(o.username, o.password if o.username is not None else None))
            except ssl.SSLError as exc:  # a TLS 1.3 refusal of the client certificate may show here too
                raise tls_error(exc, self.address, o.tls_hostname(self.host), stage="connection") from None
            except OSError as exc:
                raise IgniteConnectionError(
                    f"connection to Ignite 3 node {self.address} lost: {exc}", address=self.address
                ) from None
            magic = bytes(self.reader.take(len(MAGIC)))
            if magic != MAGIC:
                raise HandshakeError(
                    f"{self.address} is not an Ignite 3 client port (it answered {magic!r}, "
                    f"not {MAGIC!r}); an Ignite 2 node? Use tensorflow_ignite.IgniteDataset "
                    "for Ignite 2",
                    address=self.address,
                )
            body = self.reader.read_frame()
            hs = parse_handshake(body, address=self.address)
        except ProtocolError as exc:
            self.close()
            raise HandshakeError(
                f"{self.address} answered the Ignite 3 handshake with something else: {exc}", address=self.address
            ) from None
        except (HandshakeError, ConnectionTimeoutError, TLSError):
            self.close()
            raise
        except IgniteConnectionError:
            self.close()
            if self.options.uses_tls:
                # The TLS handshake itself succeeded, so the node hung up on what came after: a node
                # that requires a client certificate closes the connection (TLS 1.3 sends its alert
                # after the handshake; the alert or a reset may come first, whichever the timing gives).
                raise TLSError(
                    f"TLS connection with {self.address} closed by the node during the Ignite 3 "
                    "handshake: a node requiring a client certificate (pass certfile= and keyfile=, "
                    "cert_password= for an encrypted key), or an Ignite 2 node? (use "
                    "tensorflow_ignite.IgniteDataset for Ignite 2)",
                    address=self.address,
                ) from None
            raise HandshakeError(
                f"{self.address} closed the connection during the Ignite 3 handshake: not an "
                "Ignite 3 client port as configured here -- a node whose client connector expects "
                "TLS (give cafile=, or the other TLS options), or an Ignite 2 node (use "
                "tensorflow_ignite.IgniteDataset for Ignite 2)",
                address=self.address,
            ) from None
        except BaseException:
            self.close()
            raise
        self.observable_timestamp = hs.observable_timestamp
        return hs

    # ------------------------------------------------------------------ I/O
    def _recv_into(self, view: memoryview) -> int:
        """One ``recv_into`` (> 0 bytes) for the frame reader, bounded by :attr:`bounds`.

        A node silent for half of ``idle_timeout`` is sent a heartbeat; one silent for all of it
        (not even answering that heartbeat) is abandoned, as is a request unanswered for
        ``timeout``.  A failure closes the connection (the stream may be mid-frame).
        """
        sock = self._sock
        if sock is None:
            raise IgniteConnectionError(
                f"the connection to Ignite 3 node {self.address} is closed", address=self.address
            )
        peer = f"Ignite 3 node {self.address}"
        try:
            return recv_bounded(
                sock,
                view,
                peer=peer,
                address=self.address,
                give_up=lambda silent: self.bounds.give_up(
                    peer, silent, self._deadline, handshaking=self._handshaking, heartbeats=True
                ),
                probe=self._probe,
            )
        except IgniteConnectionError:
            self.close()
            raise
        except ssl.SSLError as exc:
            # With TLS 1.3 a refused client certificate only shows on the first read.
            self.close()
            raise tls_error(exc, self.address, self.options.tls_hostname(self.host), stage="connection") from None
        except OSError as exc:
            self.close()
            raise IgniteConnectionError(
                f"connection to Ignite 3 node {self.address} lost: {exc}", address=self.address
            ) from None

    def _probe(self) -> bool:
        """Send a heartbeat while waiting (the lock is this thread's); its answer is dropped when read."""
        rid = next(self._ids)
        self._heartbeats.add(rid)
        self._send(request(int(ClientOp.HEARTBEAT), rid))
        return True

    def _send(self, data: bytes) -> None:
        sock = self._sock
        if sock is None:
            raise IgniteConnectionError(
                f"the connection to Ignite 3 node {self.address} is closed", address=self.address
            )
        try:
            send_all(sock, data, self.bounds.send_stall)
        except TimeoutError:
            self.close()
            raise ConnectionTimeoutError(
                f"sending to Ignite 3 node {self.address} made no progress for {self.bounds.send_stall:g}s "
                "(idle_timeout): the node is frozen or its host unreachable; the connection was closed",
                address=self.address,
            ) from None
        except OSError as exc:
            self.close()
            raise IgniteConnectionError(
                f"connection to Ignite 3 node {self.address} lost: {exc}", address=self.address
            ) from None

    def call(self, op: ClientOp, body: bytes = b"", *, what: str | None = None) -> Reader:
        """Send one request and wait for its answer; a reader over the answer's own values.

        A server error raises its typed :class:`~tensorflow_ignite.errors.Ignite3ServerError`.
        """
        with self._lock:
            request_id = next(self._ids)
            self._send(request(int(op), request_id, body))
            self._deadline = time.monotonic() + self.options.timeout
            try:
                while True:
                    header, reader = parse_response(self.reader.read_frame())
                    if header.is_notification:
                        continue  # not requested by this client (no features proposed); skip
                    if header.request_id in self._heartbeats:
                        self._heartbeats.discard(header.request_id)
                        continue  # the answer to a heartbeat sent while waiting
                    break
            finally:
                self._deadline = None
        if header.request_id != request_id:
            self.close()
            raise ProtocolError(
                f"Ignite 3 node {self.address} answered request {header.request_id}, expected {request_id}"
            )
        self.observable_timestamp = max(self.observable_timestamp, header.observable_timestamp)
        if header.assignment_changed:
            self.assignment_time = header.assignment_time
        if header.error is not None:
            raise server_error(header.error, int(op), what or op.name)
        return reader

    def __repr__(self) -> str:
        return f"Ignite3Connection({self.address}, closed={self.closed})"
