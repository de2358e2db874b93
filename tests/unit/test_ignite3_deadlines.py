"""An Ignite 3 connection keeps the same three deadlines as an Ignite 2 one (``client.dial.WaitBounds``).

A stand-in peer speaks the handshake's bytes and then behaves as a node that is slow (it answers
heartbeats, not the request), frozen (it answers nothing) or mute from the start (not even the
handshake): ``timeout`` ends the first, ``idle_timeout`` -- after one heartbeat sent at half of it --
the second, ``connect_timeout`` the third.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

pytest.importorskip("msgpack")

from tensorflow_ignite.client.options import ConnectionOptions  # noqa: E402
from tensorflow_ignite.errors import ConnectionTimeoutError  # noqa: E402
from tensorflow_ignite.ignite3.connection import Ignite3Connection  # noqa: E402
from tensorflow_ignite.ignite3.protocol.codes import ClientOp  # noqa: E402
from tensorflow_ignite.ignite3.protocol.framing import frame  # noqa: E402
from tensorflow_ignite.ignite3.protocol.msgpack_io import Reader, Writer  # noqa: E402

from .ignite3_stand_in import handshake_answer, recv_exact, recv_frame  # noqa: E402


class StandIn:
    """``mode``: "slow" answers heartbeats only once confirmed; "frozen" nothing after the confirming
    heartbeat; "mute" not even the handshake."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.heartbeats: list[float] = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        try:
            conn, _ = self._server.accept()
        except OSError:
            return
        with conn:
            try:
                recv_exact(conn, 4)
                recv_frame(conn)
                if self.mode == "mute":
                    conn.recv(1)  # until the client gives up and closes
                    return
                conn.sendall(handshake_answer())
                confirmed = False
                while True:
                    r = Reader(recv_frame(conn), "request")
                    op, request_id = r.int(), r.int()
                    if op == ClientOp.HEARTBEAT and not confirmed:
                        confirmed = True
                    elif op == ClientOp.HEARTBEAT:
                        self.heartbeats.append(time.monotonic())
                        if self.mode == "frozen":
                            continue
                    else:
                        continue  # the request: never answered
                    conn.sendall(frame(Writer().values(request_id, 0, 0).bytes()))
            except (ConnectionError, OSError):
                pass

    def close(self) -> None:
        self._server.close()


@pytest.fixture
def peer(request: pytest.FixtureRequest) -> Iterator[StandIn]:
    p = StandIn(request.param)
    yield p
    p.close()


@pytest.mark.parametrize("peer", ["slow"], indirect=True)
def test_a_slow_node_answering_heartbeats_is_given_timeout(peer: StandIn) -> None:
    conn = Ignite3Connection(ConnectionOptions(host="127.0.0.1", port=peer.port, idle_timeout=0.6, timeout=2.0))
    start = time.monotonic()
    with pytest.raises(ConnectionTimeoutError, match=r"within 2\.0s \(timeout"):
        conn.call(ClientOp.SQL_EXEC, b"", what="a slow statement")
    assert 1.9 <= time.monotonic() - start < 5.0
    assert peer.heartbeats, "a silent wait sends a heartbeat, and the answer keeps the connection alive"
    assert conn.closed


@pytest.mark.parametrize("peer", ["frozen"], indirect=True)
def test_a_frozen_node_is_abandoned_after_idle_timeout(peer: StandIn) -> None:
    conn = Ignite3Connection(ConnectionOptions(host="127.0.0.1", port=peer.port, idle_timeout=1.0, timeout=30.0))
    start = time.monotonic()
    with pytest.raises(ConnectionTimeoutError, match="not even the answer to a heartbeat"):
        conn.call(ClientOp.SQL_EXEC, b"", what="a statement")
    elapsed = time.monotonic() - start
    assert 0.9 <= elapsed < 5.0, elapsed  # idle_timeout, not timeout (30 s)
    assert len(peer.heartbeats) == 1 and 0.4 <= peer.heartbeats[0] - start < 2.0  # at half of idle_timeout


@pytest.mark.parametrize("peer", ["mute"], indirect=True)
def test_a_handshake_is_bounded_by_connect_timeout(peer: StandIn) -> None:
    start = time.monotonic()
    with pytest.raises(ConnectionTimeoutError, match=r"within 0\.5s"):
        Ignite3Connection(ConnectionOptions(host="127.0.0.1", port=peer.port, connect_timeout=0.5, timeout=30.0))
    assert time.monotonic() - start < 5.0
