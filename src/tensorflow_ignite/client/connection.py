"""One thin-client connection to one Ignite node: socket, TLS, handshake, framing.

Requests from many threads share a connection.  Writes are serialized by a lock;
responses are matched to requests by id: whichever thread holds the read lock
reads frames until its own answer arrives and parks the others' answers for them.
That lets a reader *send* the request for the next page, decode the current one,
and only then *receive* (prefetch without a background thread).

Frames are split by :class:`~tensorflow_ignite.protocol.receive.FrameReader`
over this connection's socket (a receive buffer, length checks, large frames
received in place into reused buffers) -- the same class the fuzzers drive. An
answer registered with :meth:`Connection.expect_into` is received straight into
the caller's buffer by whichever thread reads it.

No wait is unbounded (the options' ``connect_timeout``, ``idle_timeout`` and
``timeout``): dialling and the handshake take at most ``connect_timeout``; once
connected, a reader that hears nothing for half of ``idle_timeout`` sends a
heartbeat, and a node that stays silent for ``idle_timeout`` -- frozen, or its
host cut off, where no reset ever comes -- is abandoned (the connection closed,
:class:`~tensorflow_ignite.errors.ConnectionTimeoutError`); a node that answers
heartbeats but not the request is given up on after ``timeout``.  A send that
makes no progress for ``idle_timeout`` is abandoned the same way.
"""

from __future__ import annotations

import collections
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import (
    AuthenticationError,
    ConnectionTimeoutError,
    HandshakeError,
    IgniteConnectionError,
    ProtocolError,
    TLSError,
)
from ..protocol import framing
from ..protocol.codes import SUPPORTED_VERSIONS, V1_7_0, ClientStatus, Feature, ProtocolVersion, ResponseFlag
from ..protocol.receive import DEFAULT_MAX_FRAME, FrameReader
from ..protocol.requests import heartbeat
from .dial import SocketConnection, WaitBounds, dial, recv_bounded, request_timeout_message, send_all
from .direct import PLAIN_HEADER, DirectAnswers
from .notifications import Notifications
from .options import ConnectionOptions
from .tls import tls_error

__all__ = ["Connection", "ConnectionSettings", "probe"]

_OP = struct.Struct("<h")  # op code at offset 4 of a request frame
_LONG = struct.Struct("<q")  # request id at offset 0 of a response frame

#: Encodes a complete request frame given the request id (``protocol.requests``).
FrameEncoder = Callable[[int], bytes]

#: The largest frame we accept from a server (a page of 1 GiB is already absurd).
MAX_FRAME = DEFAULT_MAX_FRAME

#: (address, TLS on) of every node that completed a handshake in this process:
#: when one of them later refuses or drops connections, the node has stopped
#: (or is restarting), and a hint about TLS or a wrong port would mislead.
_answered: set[tuple[str, bool]] = set()
_answered_lock = threading.Lock()
_STOPPED_HINT = (
    "A node answered there earlier in this process, so it has stopped or is restarting; its log says "
    "why (a node whose data region is full stops itself: 'Out of memory in data region' -- give its "
    "region more room, e.g. `ignite-tf node start --region-mb`, or store less)."
)


@dataclass(frozen=True)
class ConnectionSettings:
    """Everything needed to open a connection, minus the address: the cluster's
    :class:`~.options.ConnectionOptions` (credentials, TLS, request timeout; their
    host and port are not used here) and what only a single connection decides."""

    options: ConnectionOptions = field(default_factory=ConnectionOptions)
    #: Seconds dialling and the handshake may take (None: the options' ``connect_timeout``).
    connect_timeout: float | None = None
    #: Largest frame accepted from a node; a length prefix above it is refused
    #: before anything is allocated (raise it only for pages of huge rows).
    max_frame: int = MAX_FRAME

    def __post_init__(self) -> None:
        if self.connect_timeout is None:
            object.__setattr__(self, "connect_timeout", self.options.connect_timeout)

    @property
    def timeout(self) -> float:
        """Seconds a request may wait for its answer."""
        return self.options.timeout

    @property
    def idle_timeout(self) -> float:
        """Seconds a node may stay silent (a heartbeat unanswered) before it is abandoned."""
        return self.options.idle_timeout

    @property
    def bounds(self) -> WaitBounds:
        """How long a connection waits on its node (the generation-neutral :class:`~.dial.WaitBounds`)."""
        assert self.connect_timeout is not None
        return WaitBounds(self.options, self.connect_timeout)

    @property
    def tls(self) -> bool:
        """Whether connections use TLS (:attr:`.ConnectionOptions.uses_tls`, the one rule)."""
        return self.options.uses_tls


class Connection(SocketConnection, DirectAnswers, Notifications):
    """A handshaken, thread-safe connection to one node.

    ``on_topology_change(major, minor)`` is called (outside the locks) when a
    response carries the "affinity topology changed" flag.
    """

    def __init__(
        self,
        host: str,
        port: int,
        settings: ConnectionSettings | None = None,
        *,
        on_topology_change: Callable[[int, int], None] | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.settings = settings or ConnectionSettings()
        self.on_topology_change = on_topology_change
        self.address = f"{host}:{port}"
        self._sock: socket.socket | ssl.SSLSocket | None = None
        self._send_lock = threading.Lock()
        self._recv_lock = threading.Lock()
        self._parked: dict[int, memoryview] = {}
        self._parked_cv = threading.Condition(threading.Lock())
        self._init_direct()
        self._init_notifications()
        self._next_id = 0
        self._id_lock = threading.Lock()
        #: Ids of heartbeats sent: their answers are dropped when read.
        self._heartbeats: set[int] = set()
        #: When the request of the thread now reading must have been answered (None: no limit).
        self._read_deadline: float | None = None
        self.handshake: framing.HandshakeResponse | None = None
        self.version: ProtocolVersion = V1_7_0
        #: Features both sides support (decides request layouts).
        self.features: frozenset[int] = frozenset()
        self.requests_sent = 0
        #: Bytes of every request frame sent on this connection (where writes went is read from these).
        self.bytes_sent = 0
        #: Requests sent per op code (routing is asserted from these in tests).
        self.op_counts: collections.Counter[int] = collections.Counter()
        #: The receive buffer and frame splitter (the same class the fuzzers drive).
        self.reader = FrameReader(
            self._recv_into, max_frame=self.settings.max_frame, peer=self.address, on_corrupt=self.close
        )
        self._connect()

    @property
    def bytes_received(self) -> int:
        """Bytes of every frame received on this connection, length prefixes included."""
        return self.reader.bytes_received

    # ------------------------------------------------------------------ connect
    def _connect(self) -> None:
        s = self.settings
        assert s.connect_timeout is not None
        hint = (
            _STOPPED_HINT
            if self._answered_before()
            else "Is a node running there with its client connector on this port?"
        )
        sock = dial(
            self.host, self.port, s.options, connect_timeout=s.connect_timeout, product="Ignite", refused_hint=hint
        )
        sock.settimeout(self._handshake_bound())  # _handshake then sets the reading interval
        if s.tls:
            # One OpenSSL connection must not read and write from two threads at
            # once: over TLS, sending waits while another thread is receiving.
            self._send_lock = self._recv_lock
        self._sock = sock
        try:
            self._handshake()
        except BaseException:
            self.close()
            raise

    def _answer_key(self) -> tuple[str, bool]:
        return self.address, self.settings.tls

    def _answered_before(self) -> bool:
        """Whether a handshake with this address and these settings succeeded earlier in this process."""
        with _answered_lock:
            return self._answer_key() in _answered

    def _handshake(self) -> None:
        s = self.settings
        version: ProtocolVersion | None = max(SUPPORTED_VERSIONS)
        while version is not None:
            frame = framing.encode_handshake(version, username=s.options.username, password=s.options.password)
            try:
                self._sendall(frame)
                payload = self.reader.read_frame()
                result = framing.decode_handshake_response(payload, version)
            except TLSError:
                raise
            except ConnectionTimeoutError:
                raise HandshakeError(
                    f"{self.address} accepted the connection but did not answer the thin-client handshake "
                    f"within {self._handshake_bound()}s. Either the node is frozen or overloaded (check its log and "
                    "GC pauses), or this is not an Ignite node's client connector (default port 10800); "
                    "if that connector uses TLS, pass cafile=... (or certfile) to enable TLS.",
                    address=self.address,
                ) from None
            except IgniteConnectionError as exc:
                if s.tls:
                    # Under TLS 1.3 a node checks the client certificate after the TLS
                    # handshake and, refusing it (or its absence), just closes the connection.
                    if s.options.certfile:
                        cause = (
                            f"the node probably refused the client certificate {s.options.certfile!r}: "
                            "it must be signed by a CA in the node's truststore and not expired"
                        )
                    else:
                        cause = (
                            "the node probably requires a client certificate: pass certfile=... and "
                            "keyfile=... (and cert_password=... for an encrypted key)"
                        )
                    raise TLSError(
                        f"{self.address} closed the TLS connection before the thin-client handshake ({exc}); {cause}",
                        address=self.address,
                    ) from None
                hint = (
                    _STOPPED_HINT
                    if self._answered_before()
                    else "If the node's client connector uses TLS, pass cafile=... (or certfile) to enable TLS. "
                    "An Ignite 3 node closes it too: tensorflow_ignite.IgniteClient takes either generation."
                )
                raise HandshakeError(
                    f"{self.address} closed the connection during the thin-client handshake ({exc}). {hint}",
                    address=self.address,
                ) from None
            except ProtocolError as exc:
                raise HandshakeError(
                    f"{self.address} does not speak the Ignite thin-client protocol ({exc}); check the "
                    "host and port: they must be an Ignite node's client connector (default port 10800)",
                    address=self.address,
                ) from None
            if result.success:
                with _answered_lock:
                    _answered.add(self._answer_key())
                self.handshake = result
                self.version = version
                self.features = result.negotiated()
                assert self._sock is not None
                self._sock.settimeout(self._wait_step())
                return
            if result.status == ClientStatus.AUTH_FAILED:
                if not s.options.username:
                    raise AuthenticationError(
                        f"{self.address} requires authentication: pass username=... and password=... "
                        f"({result.message})",
                        address=self.address,
                    )
                raise AuthenticationError(
                    f"{self.address} rejected the credentials of user {s.options.username!r}: {result.message}",
                    address=self.address,
                )
            retry = result.should_retry_with()
            if retry is None:
                result.raise_for_failure(self.address)
            version = retry
        raise HandshakeError(f"handshake with {self.address} failed", address=self.address)

    # ------------------------------------------------------------------ framing
    def _sendall(self, data: bytes | bytearray | memoryview) -> None:
        sock = self._sock
        if sock is None:
            # Closed by another thread that saw it fail (or by the client dropping it).
            raise IgniteConnectionError(f"connection to {self.address} is closed", address=self.address)
        try:
            send_all(sock, data, self.settings.bounds.send_stall)
        except TimeoutError:
            self.close()
            raise self._send_timeout() from None
        except OSError as exc:
            raise IgniteConnectionError(
                f"connection to {self.address} lost while sending: {exc}", address=self.address
            ) from None

    def _sendall_parts(self, head: bytes | bytearray | memoryview, payload: memoryview) -> None:
        """Send ``head`` then ``payload`` as one stream write where the socket allows it.

        Plain sockets use ``sendmsg`` with both buffers (one system call for a
        small header and a large body, no joined copy); TLS sockets send each
        part with ``sendall``.  On failure no reference to ``payload`` survives
        in the raised exception's frames (it may be a view over memory that is
        valid only during the caller's call).
        """
        sock = self._sock
        if sock is None:
            raise IgniteConnectionError(f"connection to {self.address} is closed", address=self.address)
        parts: list[memoryview] | None = [memoryview(head).cast("B"), payload.cast("B")]
        error: IgniteConnectionError | None = None
        try:
            if isinstance(sock, ssl.SSLSocket):
                for part in parts:
                    sock.sendall(part)
                del part
            else:
                stalled = 0.0
                while parts:
                    try:
                        n = sock.sendmsg(parts)
                    except TimeoutError:
                        stalled = self._send_stalled(stalled)
                        continue
                    stalled = 0.0
                    while parts and n >= len(parts[0]):
                        n -= len(parts[0])
                        parts.pop(0).release()
                    if n:
                        rest = parts[0][n:]
                        parts[0].release()
                        parts[0] = rest
                        del rest
        except TimeoutError:
            self.close()
            error = self._send_timeout()
        except OSError as exc:
            error = IgniteConnectionError(
                f"connection to {self.address} lost while sending: {exc}", address=self.address
            )
        finally:
            for part in parts or ():
                part.release()
            parts = None
            payload = None  # type: ignore[assignment]  # drops the buffer early; never read again
        if error is not None:
            raise error

    def _recv_into(self, view: memoryview) -> int:
        """One ``recv_into`` (> 0 bytes), with this connection's bounded waits and error handling."""
        sock = self._sock
        if sock is None:
            raise IgniteConnectionError(f"connection to {self.address} is closed", address=self.address)
        try:
            return recv_bounded(
                sock, view, peer=self.address, address=self.address, give_up=self._give_up, probe=self._probe
            )
        except ConnectionTimeoutError:
            # The stream position is unknown now (the answer may still come, or the
            # rest of a frame already begun): this connection cannot be trusted again.
            self.close()
            raise
        except IgniteConnectionError:
            raise
        except ssl.SSLError as exc:
            # With TLS 1.3 a refused client certificate only shows on the first read.
            self.close()
            raise tls_error(exc, self.address, self.host, stage="connection") from None
        except OSError as exc:
            raise IgniteConnectionError(f"connection to {self.address} lost: {exc}", address=self.address) from None

    # ------------------------------------------------------------ bounded waits
    def _heartbeats_on(self) -> bool:
        return self.handshake is not None and Feature.HEARTBEAT in self.features

    def _wait_step(self) -> float:
        """The socket's timeout once connected (:meth:`.dial.WaitBounds.step`)."""
        return self.settings.bounds.step(self._heartbeats_on())

    def _give_up(self, silent: float) -> str | None:
        """Why a reader that has heard nothing for ``silent`` seconds stops waiting (None: wait on)."""
        return self.settings.bounds.give_up(
            self.address,
            silent,
            self._read_deadline,
            handshaking=self.handshake is None,
            heartbeats=self._heartbeats_on(),
        )

    def _handshake_bound(self) -> float:
        """Seconds the handshake's answer may take: ``connect_timeout``, or ``timeout`` when shorter."""
        return self.settings.bounds.handshake

    def _probe(self) -> bool:
        """Send a heartbeat (its answer is dropped): a live node answers it even while it works on
        a long request.  False when it could not be sent now (another thread is sending)."""
        if not self._heartbeats_on():
            return False
        with self._id_lock:
            self._next_id += 1
            rid = self._next_id
        with self._parked_cv:
            self._heartbeats.add(rid)
        frame = heartbeat(rid)
        if self._send_lock is self._recv_lock:  # TLS: the reader (this thread) holds the one lock
            self._sendall(frame)
            return True
        lock = self._hold_send_lock(timeout=0.05)
        if lock is None:
            with self._parked_cv:
                self._heartbeats.discard(rid)
            return False
        try:
            self._sendall(frame)
        finally:
            lock.release()
        return True

    def _send_stalled(self, stalled: float) -> float:
        """Account one send timeout; raises once a send made no progress for ``idle_timeout``."""
        assert self._sock is not None
        stalled += self._sock.gettimeout() or 0.0
        if stalled >= self.settings.bounds.send_stall - 1e-3:
            raise TimeoutError
        return stalled

    def _send_timeout(self) -> ConnectionTimeoutError:
        return ConnectionTimeoutError(
            f"sending to {self.address} made no progress for {self.settings.idle_timeout:g}s (idle_timeout): "
            "the node is frozen or its host unreachable; the connection was closed",
            address=self.address,
        )

    # ----------------------------------------------------------------- requests
    def send(self, encode: FrameEncoder) -> int:
        """Send one request built by ``encode(request_id)``; returns the id for :meth:`receive`."""
        rid = self._take_ids(1)
        frame = encode(rid)
        lock = self._hold_send_lock()
        try:
            self._sendall(frame)
            self._count_sent((frame,), len(frame))
        finally:
            lock.release()
        return rid

    def send_parts(self, encode_head: FrameEncoder, payload: memoryview) -> int:
        """Send one request whose frame is ``encode_head(request_id)`` followed by ``payload``.

        For a request whose body ends in a large value the caller does not own
        (a file block inside TensorFlow's buffer): the frame is never assembled.
        ``encode_head`` returns the frame's first bytes, length prefix included
        (which must count ``payload``).  Every byte has been handed to the
        socket when this returns; the answer is awaited with :meth:`receive`.
        """
        rid = self._take_ids(1)
        head = encode_head(rid)
        lock = self._hold_send_lock()
        try:
            self._sendall_parts(head, payload)
            self._count_sent((head,), len(head) + payload.nbytes)
        finally:
            lock.release()
        return rid

    def send_many(self, encoders: "list[FrameEncoder]") -> list[int]:
        """Send several requests with one write; returns their ids, in order.

        Pipelined scans send a batch of requests at once: on loopback every
        write costs a system call plus waking the node's I/O thread, more than
        building the frames.
        """
        if not encoders:
            return []
        first = self._take_ids(len(encoders))
        ids = list(range(first, first + len(encoders)))
        frames = [encode(rid) for encode, rid in zip(encoders, ids)]
        lock = self._hold_send_lock()
        try:
            self._sendall(b"".join(frames))
            self._count_sent(frames, sum(len(f) for f in frames))
        finally:
            lock.release()
        return ids

    def _hold_send_lock(self, timeout: float = -1) -> Any:
        """Acquire the send lock in force and return it (None if ``timeout`` passed first).

        The lock may change while a thread waits for it: a scan pump's lease
        (``client/pump.py``) installs one its native thread shares, and puts
        the old one back when it ends; a thread that got the replaced lock
        tries again with the one in force.
        """
        while True:
            lock = self._send_lock
            if not lock.acquire(timeout=timeout):
                return None
            if lock is self._send_lock:
                return lock
            lock.release()

    def _swap_send_lock(self, lock: Any) -> Any:
        """Install ``lock`` as the send lock once no thread is sending; returns the one it replaced."""
        old = self._hold_send_lock()
        self._send_lock = lock
        old.release()
        return old

    def _take_ids(self, n: int) -> int:
        """Reserve ``n`` consecutive request ids; returns the first."""
        with self._id_lock:
            first = self._next_id + 1
            self._next_id += n
        return first

    def _count_sent(self, frames: Sequence[bytes], nbytes: int) -> None:
        """Count requests just sent (send lock held): how many, their bytes, and each one's op."""
        self.requests_sent += len(frames)
        self.bytes_sent += nbytes
        for frame in frames:
            self.op_counts[_OP.unpack_from(frame, 4)[0]] += 1

    def receive(self, request_id: int, op: int | None = None) -> memoryview:
        """Wait for the answer to ``request_id``; returns the body after the header.

        Raises :class:`~tensorflow_ignite.errors.ServerError` (or a subclass) when
        the node answered with an error status, and
        :class:`~tensorflow_ignite.errors.ConnectionTimeoutError` when no answer came
        within ``timeout`` (or the node fell silent for ``idle_timeout``).
        """
        deadline = time.monotonic() + self.settings.timeout
        while True:
            with self._parked_cv:
                frame = self._parked.pop(request_id, None)
            if frame is not None:
                return self._body(frame, op)
            if not self._recv_lock.acquire(timeout=0.05):
                self._check_deadline(deadline)
                with self._parked_cv:
                    if request_id not in self._parked:
                        self._parked_cv.wait(timeout=0.05)
                continue
            try:
                self._read_deadline = deadline
                with self._parked_cv:
                    frame = self._parked.pop(request_id, None)
                while frame is None:
                    self._check_deadline(deadline)
                    frame = self._read_answer(request_id)
            finally:
                self._read_deadline = None
                self._release_reader()
            return self._body(frame, op)

    def _release_reader(self) -> None:
        """Give up the reader's role: release the receive lock and wake the threads parked for
        their answers, so one of them takes the role at once (not when its wait times out: a
        hand-over stalled 50 ms whenever the previous reader had waited long for its answer)."""
        self._recv_lock.release()
        with self._parked_cv:
            self._parked_cv.notify_all()

    def _check_deadline(self, deadline: float) -> None:
        """Give up on a request whose ``timeout`` has passed (closing the connection: its answer
        may still arrive, and nobody would take it)."""
        if time.monotonic() < deadline:
            return
        self.close()
        raise ConnectionTimeoutError(request_timeout_message(self.address, self.settings.timeout), address=self.address)

    def _read_answer(self, mine: int) -> memoryview | None:
        """Read one answer frame (receive lock held) and return it if it answers ``mine``.

        Any other answer is parked for its waiter -- or, when a buffer was
        registered for it (:meth:`expect_into`) and it is a plain answer of the
        expected size, its body is received straight into that buffer.
        """
        if self._into and self._fill_registered():
            return None
        reader = self.reader
        frame = reader.read_frame()
        rid = self._response_id(frame)
        if len(frame) >= PLAIN_HEADER and frame[8] & ResponseFlag.NOTIFICATION and self.version >= (1, 4, 0):
            self._queue_notification(rid, frame)
            return None
        if rid == mine:
            return frame
        with self._parked_cv:
            if rid in self._heartbeats:
                self._heartbeats.discard(rid)
                return None
            self._parked[rid] = frame
            self._parked_cv.notify_all()
        return None

    def _body(self, frame: memoryview, op: int | None) -> memoryview:
        """The body of an answer frame, after its header; a server error is raised."""
        # Fast path: no flags (no error, no topology change) -- the header is
        # the id and two zero bytes.  Thousands of small scan answers per
        # second make the general decoder's cost visible.
        aware = self.version >= (1, 4, 0)
        if aware and len(frame) >= PLAIN_HEADER and frame[8] == 0 and frame[9] == 0:
            return frame[PLAIN_HEADER:]
        header = framing.decode_response_header(frame, aware)
        if header.topology_version is not None and self.on_topology_change is not None:
            self.on_topology_change(*header.topology_version)
        if header.status != 0:
            error = framing.server_error(header.status, header.message, op)
            error.args = (f"{error.args[0]} [node {self.address}]",)
            raise error
        return frame[header.body_offset :]

    def _response_id(self, frame: memoryview) -> int:
        if len(frame) < 8:
            self.close()
            raise ProtocolError(f"{self.address} sent a {len(frame)}-byte response, too short for its request id")
        return int(_LONG.unpack_from(frame, 0)[0])

    def request(self, encode: FrameEncoder, op: int | None = None) -> memoryview:
        """Send a request built by ``encode(request_id)`` and wait for its answer body."""
        return self.receive(self.send(encode), op)

    def __repr__(self) -> str:
        return f"<Connection {self.address}{' closed' if self.closed else ''}>"


def probe(host: str, port: int, *, timeout: float = 5.0, **settings: Any) -> framing.HandshakeResponse:
    """Connect, handshake and disconnect: raises a typed error when that fails.

    ``settings`` are the other fields of :class:`~.options.ConnectionOptions` (credentials,
    TLS); TLS is on by its rule (any TLS option set).  ``timeout`` bounds the dialling and
    the handshake's answer.
    """
    options = ConnectionOptions(host=host, port=port, timeout=timeout, **settings)
    with Connection(host, port, ConnectionSettings(options, connect_timeout=timeout)) as conn:
        assert conn.handshake is not None
        return conn.handshake
