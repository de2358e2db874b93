"""The op library's ScanPump (native/tf_ignite_data_scan.cc) on a socket pair: framing, filing, failures.

The peer here writes thin-client answer frames by hand; a real node's pages
are in tests/integration/test_compiled_scan.py.
"""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("tensorflow")

from tensorflow_ignite.native import data_source


@pytest.fixture(scope="module")
def ScanPump() -> type:
    assert data_source.unavailable_reason() is None, data_source.unavailable_reason()
    data_source.ensure_loaded()
    module = data_source._load()[1]
    return module.ScanPump  # type: ignore[no-any-return]


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    a.setblocking(False)
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def page_frame(rid: int, rows: bytes, n: int, more: bool, flags: int = 0) -> bytes:
    body = struct.pack("<qh", rid, flags) + struct.pack("<i", n) + rows + bytes([1 if more else 0])
    return struct.pack("<i", len(body)) + body


class Peer:
    """Answers each request id the pump sends (through ``send_next``) with the next scripted frame."""

    def __init__(self, sock: socket.socket, script: list[bytes | None]) -> None:
        self.sock = sock
        self.script = script
        self.next_id = 100
        self.sent: list[int] = []
        self.filed: list[bytes] = []

    def send_next(self) -> int:
        self.next_id += 1
        rid = self.next_id
        self.sent.append(rid)
        frame = self.script.pop(0) if self.script else None
        if frame is not None:
            self.sock.sendall(frame.replace(b"RID_____", struct.pack("<q", rid)))
        return rid

    def file_frame(self, frame: bytes) -> None:
        self.filed.append(frame)


REQUEST = struct.pack("<ihqq", 18, 2001, 0, 0xC0FFEE)  # OP_QUERY_SCAN_CURSOR_GET_PAGE, request id 0, cursor


def rid_page(rows: bytes, n: int, more: bool) -> bytes:
    frame = page_frame(0, rows, n, more)
    return frame[:4] + b"RID_____" + frame[12:]


def test_pages_in_order_then_none(ScanPump: type, pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    peer = Peer(b, [rid_page(b"x" * 10, 1, True), rid_page(b"y" * 20, 2, True), rid_page(b"", 0, False)])
    pump = ScanPump(a.fileno(), peer.send_next, peer.file_frame, 1 << 20, 5.0, 1 << 20, "peer:1")
    frames = []
    while (frame := pump.next()) is not None:
        frames.append(frame)
    assert [len(f) for f in frames] == [10 + 4 + 10 + 1, 10 + 4 + 20 + 1, 10 + 4 + 1]
    assert [struct.unpack_from("<q", f)[0] for f in frames] == peer.sent
    assert pump.stop() == (False, True)  # the server closed the cursor; the stream is at a frame boundary


def test_other_answers_are_filed_not_returned(ScanPump: type, pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    other = page_frame(7, b"", 0, False)  # another request's answer, arriving first
    notification = page_frame(9, b"", 0, False, flags=4)
    peer = Peer(b, [other + notification + rid_page(b"", 0, False)])
    pump = ScanPump(a.fileno(), peer.send_next, peer.file_frame, 1 << 20, 5.0, 1 << 20, "peer:1")
    assert pump.next() is not None
    assert pump.next() is None
    assert peer.filed == [other[4:], notification[4:]]
    assert pump.stop() == (False, True)


def test_it_holds_no_more_than_its_limit(ScanPump: type, pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    peer = Peer(b, [rid_page(b"z" * 1000, 1, True) for _ in range(10)])
    pump = ScanPump(a.fileno(), peer.send_next, peer.file_frame, 2000, 5.0, 1 << 20, "peer:1")
    assert pump.next() is not None
    deadline = threading.Event()
    deadline.wait(0.3)  # the pump may fetch ahead only up to 2000 bytes
    assert len(peer.sent) <= 4, peer.sent
    cursor_open, known = pump.stop()
    assert cursor_open and known  # stopped mid-cursor at a frame boundary: Python closes the cursor


def test_a_closed_socket_is_a_connection_error_naming_the_peer(
    ScanPump: type, pair: tuple[socket.socket, socket.socket]
) -> None:
    a, b = pair
    peer = Peer(b, [rid_page(b"", 0, True), page_frame(0, b"", 0, True)[:7]])
    pump = ScanPump(a.fileno(), peer.send_next, peer.file_frame, 1 << 20, 5.0, 1 << 20, "node-a:10800")
    assert pump.next() is not None
    for _ in range(500):  # the second request is out (and half its answer) before the peer hangs up
        if len(peer.sent) == 2:
            break
        threading.Event().wait(0.01)
    b.shutdown(socket.SHUT_WR)
    with pytest.raises(ConnectionError, match="node-a:10800: the node closed the connection"):
        pump.next()
    assert pump.stop() == (False, False)  # broke off mid-frame: the connection must be closed


def test_a_frame_too_large_is_refused(ScanPump: type, pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    peer = Peer(b, [struct.pack("<i", 1 << 30) + b"\0" * 16])
    pump = ScanPump(a.fileno(), peer.send_next, peer.file_frame, 1 << 20, 5.0, 1 << 20, "peer:1")
    with pytest.raises(ValueError, match="claiming 1073741824 bytes"):
        pump.next()
    assert pump.stop() == (False, False)


def test_silence_times_out(ScanPump: type, pair: tuple[socket.socket, socket.socket]) -> None:
    a, b = pair
    peer = Peer(b, [None])
    pump = ScanPump(a.fileno(), peer.send_next, peer.file_frame, 1 << 20, 0.3, 1 << 20, "peer:1")
    with pytest.raises(ConnectionError, match="no answer within the timeout"):
        pump.next()
    assert pump.stop()[1] is False


def test_send_errors_reach_the_reader(ScanPump: type, pair: tuple[socket.socket, socket.socket]) -> None:
    a, _ = pair

    def failing() -> int:
        raise RuntimeError("cannot send")

    pump = ScanPump(a.fileno(), failing, lambda f: None, 1 << 20, 5.0, 1 << 20, "peer:1")
    with pytest.raises(RuntimeError, match="cannot send"):
        pump.next()
    assert pump.stop() == (False, True)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(stream=st.lists(st.binary(max_size=64), max_size=6), rid=st.integers(0, 3), native=st.booleans())
def test_any_byte_stream_gives_frames_or_an_error(ScanPump: type, stream: list[bytes], rid: int, native: bool) -> None:
    """Fuzz: whatever a peer sends, the pump returns whole frames, None, or a typed error -- and stops.

    ``native``: the pump sends the requests itself (ids ``rid``, ``rid + 1``, ...), else through Python.
    """
    a, b = socket.socketpair()
    a.setblocking(False)
    try:
        sent = []

        def send_next() -> int:
            if not sent:  # the whole stream, then end of stream: never a wait for the timeout
                b.sendall(b"".join(stream))
                b.shutdown(socket.SHUT_WR)
            sent.append(rid)
            return rid

        if native:
            pump = ScanPump(
                a.fileno(), None, lambda f: None, 4096, 2.0, 256, "fuzz:1",
                request=REQUEST, send_lock=ScanPump.SendLock(), take_ids=lambda n: send_next(),
            )  # fmt: skip
        else:
            pump = ScanPump(a.fileno(), send_next, lambda f: None, 4096, 2.0, 256, "fuzz:1")
        try:
            for i in range(16):
                frame = pump.next()
                if frame is None:
                    break
                assert 10 <= len(frame) <= 256
                assert struct.unpack_from("<q", frame)[0] == rid + (i if native else 0)
        except (ConnectionError, ValueError):
            pass
        cursor_open, known = pump.stop()
        assert isinstance(cursor_open, bool) and isinstance(known, bool)
    finally:
        a.close()
        b.close()


# --- The pump sending the page requests itself (request=, send_lock=, take_ids=): no GIL per page.


class NativePeer(threading.Thread):
    """Reads the page requests the pump writes and answers each with the next scripted page."""

    def __init__(self, sock: socket.socket, script: list[bytes]) -> None:
        super().__init__(daemon=True)
        self.sock = sock
        self.script = script
        self.requests: list[bytes] = []

    def run(self) -> None:
        reader = self.sock.makefile("rb")
        while self.script:
            head = reader.read(4)
            if len(head) < 4:
                return
            frame = head + reader.read(struct.unpack("<i", head)[0])
            self.requests.append(frame)
            rid = frame[6:14]
            self.sock.sendall(self.script.pop(0).replace(b"RID_____", rid))



def native_pump(ScanPump: type, sock: socket.socket, *, send_lock: Any, take_ids: Any, request: bytes = REQUEST) -> Any:
    """A pump on ``sock`` that sends its own page requests (``request``): the arguments the native tests share."""
    return ScanPump(
        sock.fileno(), None, lambda f: None, 1 << 20, 5.0, 1 << 20, "peer:1",
        request=request, send_lock=send_lock, take_ids=take_ids,
    )

def test_native_requests_carry_ids_from_blocks_under_the_send_lock(
    ScanPump: type, pair: tuple[socket.socket, socket.socket]
) -> None:
    a, b = pair
    peer = NativePeer(b, [rid_page(b"x" * 10, 1, True), rid_page(b"y" * 5, 1, True), rid_page(b"", 0, False)])
    peer.start()
    blocks: list[int] = []

    def take_ids(n: int) -> int:
        blocks.append(n)
        return 1000 * len(blocks)

    lock = ScanPump.SendLock()
    pump = native_pump(ScanPump, a, send_lock=lock, take_ids=take_ids)
    frames = []
    while (frame := pump.next()) is not None:
        frames.append(frame)
    assert pump.stop() == (False, True)
    peer.join(5)
    assert pump.sent() == 3
    assert len(blocks) == 1 and blocks[0] >= 3  # one block of ids for the whole scan
    rids = [struct.unpack_from("<q", r, 6)[0] for r in peer.requests]
    assert rids == [1000, 1001, 1002]
    assert [struct.unpack_from("<q", f)[0] for f in frames] == rids
    assert all(r[:6] == REQUEST[:6] and r[14:] == REQUEST[14:] for r in peer.requests)
    assert not lock.locked()


def test_native_requests_wait_for_the_send_lock(ScanPump: type, pair: tuple[socket.socket, socket.socket]) -> None:
    """A Python thread holding the connection's send lock keeps the pump's request off the socket."""
    a, b = pair
    peer = NativePeer(b, [rid_page(b"", 0, False)])
    peer.start()
    lock = ScanPump.SendLock()
    assert lock.acquire()
    pump = native_pump(ScanPump, a, send_lock=lock, take_ids=lambda n: 1)
    threading.Event().wait(0.2)
    assert peer.requests == []  # nothing written while Python sends
    assert lock.acquire(timeout=0.05) is False
    lock.release()
    assert pump.next() is not None  # the last page
    assert pump.next() is None
    assert pump.stop() == (False, True)
    assert len(peer.requests) == 1
    with pytest.raises(RuntimeError, match="release unlocked lock"):
        lock.release()


def test_native_request_arguments_are_checked(ScanPump: type, pair: tuple[socket.socket, socket.socket]) -> None:
    a, _ = pair
    with pytest.raises(ValueError, match=r"send_lock a ScanPump\.SendLock"):
        native_pump(ScanPump, a, send_lock=threading.Lock(), take_ids=lambda n: 1)
    with pytest.raises(ValueError, match="request must be a request frame"):
        native_pump(ScanPump, a, send_lock=ScanPump.SendLock(), take_ids=lambda n: 1, request=b"short")


def test_take_ids_errors_reach_the_reader(ScanPump: type, pair: tuple[socket.socket, socket.socket]) -> None:
    a, _ = pair

    def take_ids(n: int) -> int:
        raise RuntimeError("no ids")

    pump = native_pump(ScanPump, a, send_lock=ScanPump.SendLock(), take_ids=take_ids)
    with pytest.raises(RuntimeError, match="no ids"):
        pump.next()
    assert pump.stop() == (False, True)
    assert pump.sent() == 0
