"""Receive buffering and buffer reuse: frames split correctly, reused memory never changes visible data.

The frame tests run :class:`FrameReader` over a real socket pair, as a connection does."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator

import numpy as np
import pytest

from tensorflow_ignite.client import connection as connection_module
from tensorflow_ignite.client.connection import Connection
from tensorflow_ignite.protocol.pool import ALIGNMENT, BufferPool, aligned_empty
from tensorflow_ignite.protocol.receive import FrameReader


class _Wired(Connection):
    """A connection over one end of a socket pair, no handshake (framing only)."""

    def __init__(self, sock: socket.socket) -> None:
        self._given = sock
        super().__init__("peer", 0)

    def _connect(self) -> None:
        self._given.settimeout(10)
        self._sock = self._given


@pytest.fixture()
def wired() -> Iterator[tuple[Connection, socket.socket]]:
    ours, theirs = socket.socketpair()
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16 << 10)  # a small send buffer: partial sendmsg calls
    conn = _Wired(ours)
    try:
        yield conn, theirs
    finally:
        conn.close()
        theirs.close()


@pytest.fixture()
def piped() -> Iterator[tuple[FrameReader, socket.socket]]:
    ours, theirs = socket.socketpair()
    ours.settimeout(10)
    try:
        yield FrameReader(ours.recv_into, peer="peer"), theirs
    finally:
        ours.close()
        theirs.close()


def _frame(payload: bytes) -> bytes:
    return struct.pack("<i", len(payload)) + payload


def _send_in_background(sock: socket.socket, data: bytes, chunk: int) -> threading.Thread:
    def send() -> None:
        for i in range(0, len(data), chunk):
            sock.sendall(data[i:i + chunk])

    t = threading.Thread(target=send, daemon=True)
    t.start()
    return t


def test_frames_that_arrive_together_come_out_one_by_one(piped: tuple[FrameReader, socket.socket]) -> None:
    conn, peer = piped
    rng = np.random.default_rng(1)
    payloads = [rng.bytes(int(n)) for n in rng.integers(0, 5000, 60)] + [b"", b"x"]
    peer.sendall(b"".join(_frame(p) for p in payloads))
    assert [bytes(conn.read_frame()) for _ in payloads] == payloads
    assert conn.bytes_received == sum(4 + len(p) for p in payloads)


@pytest.mark.parametrize("size", [10, 300_000, 3_000_000])
def test_a_frame_trickling_in_is_assembled(piped: tuple[FrameReader, socket.socket], size: int) -> None:
    conn, peer = piped
    payload = np.random.default_rng(size).bytes(size)
    # Two frames back to back, written in odd-sized pieces that cut through the
    # length prefixes and the receive buffer's boundaries.
    sender = _send_in_background(peer, _frame(payload) + _frame(payload[::-1]), 7919)
    assert bytes(conn.read_frame()) == payload
    assert bytes(conn.read_frame()) == payload[::-1]
    sender.join()


def test_a_large_frame_reuses_memory_only_when_nothing_refers_to_it(
        piped: tuple[FrameReader, socket.socket]) -> None:
    conn, peer = piped
    size = 2 << 20
    first, second, third = (bytes([i]) * size for i in (1, 2, 3))
    sender = _send_in_background(peer, _frame(first) + _frame(second) + _frame(third), 1 << 20)
    a = conn.read_frame()
    held = np.frombuffer(a, np.uint8)[:16]  # a NumPy view keeps the frame's buffer alive
    a_buffer = id(a.obj)
    del a
    b = conn.read_frame()
    assert id(b.obj) != a_buffer
    assert held.tolist() == [1] * 16 and bytes(b[:4]) == b"\x02" * 4
    b_buffer = id(b.obj)
    del b
    c = conn.read_frame()  # `a`'s buffer is still held by the NumPy view: `b`'s is reused
    assert id(c.obj) == b_buffer
    assert bytes(c[:4]) == b"\x03" * 4 and len(c) == size
    assert held.tolist() == [1] * 16
    sender.join()


def test_frames_above_the_eager_limit_grow_then_their_buffer_is_reused() -> None:
    ours, peer = socket.socketpair()
    ours.settimeout(10)
    conn = FrameReader(ours.recv_into, eager_frame=1 << 20)
    size = 3 << 20
    one, two = np.random.default_rng(2).bytes(size), np.random.default_rng(3).bytes(size)
    sender = _send_in_background(peer, _frame(one) + _frame(two), 1 << 16)
    first = conn.read_frame()
    assert bytes(first) == one
    first_buffer = id(first.obj)
    del first
    second = conn.read_frame()
    assert bytes(second) == two
    assert id(second.obj) == first_buffer  # no second growth: the finished buffer was kept
    sender.join()
    ours.close()
    peer.close()


# ------------------------------------------------------------------ BufferPool
def test_pool_hands_out_a_buffer_again_only_after_its_last_view_is_gone() -> None:
    pool = BufferPool(limit=64 << 20, min_size=1024)
    buf = pool.get(4096)
    view = memoryview(buf)[10:20]
    array = np.frombuffer(buf, np.uint8).reshape(64, 64)[1:3]
    del buf
    assert pool.take(4096) is None
    del view
    assert pool.take(4096) is None  # the NumPy view still refers to it
    del array
    assert pool.take(4096) is not None


def test_pool_respects_its_limit_and_minimum_size() -> None:
    pool = BufferPool(limit=10_000, min_size=1000)
    small = pool.get(500)
    assert pool.nbytes == 0 and len(small) == 500
    kept = [pool.get(4000), pool.get(4000)]
    extra = pool.get(4000)  # over the limit: handed out, not kept
    assert pool.nbytes == 8000 and len(extra) == 4000
    del kept, extra
    assert pool.take(4000) is not None and pool.take(5000) is None


def test_aligned_arrays_from_a_pool_are_aligned_and_independent() -> None:
    pool = BufferPool(limit=64 << 20, min_size=1024)
    a = aligned_empty((100, 784), np.uint8, pool)
    a[:] = 7
    b = aligned_empty((100, 784), np.uint8, pool)  # `a` is alive: other memory
    b[:] = 9
    assert a.ctypes.data % ALIGNMENT == 0 and b.ctypes.data % ALIGNMENT == 0
    assert a.flags.c_contiguous and int(a.sum()) == 7 * a.size
    address = a.ctypes.data
    del a
    c = aligned_empty((100, 784), np.uint8, pool)
    assert c.ctypes.data == address  # the freed buffer is reused
    assert aligned_empty((3, 5), np.float32).ctypes.data % ALIGNMENT == 0


def _read_exactly(sock: socket.socket, n: int, chunk: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        got = sock.recv(min(chunk, n - len(out)))
        assert got, "peer closed early"
        out += got
    return bytes(out)


@pytest.mark.parametrize("size", [0, 1, 70_000, 3_000_000])
def test_send_parts_sends_header_then_payload_and_keeps_no_view(
        wired: tuple[Connection, socket.socket], size: int) -> None:
    conn, peer = wired
    data = bytearray(np.random.default_rng(size).bytes(size))
    view = memoryview(data)
    head_len = 4 + 2 + 8 + 3

    def encode_head(rid: int) -> bytes:
        return struct.pack("<ihq", head_len - 4 + size, 1000, rid) + b"abc"

    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(_read_exactly(peer, head_len + size, 5003)))
    reader.start()
    rid = conn.send_parts(encode_head, view)
    reader.join(10)
    view.release()
    data.append(0)  # BufferError if any view (a slice, a cast) of the caller's memory were still alive
    data[:] = b"\0" * (size + 1)  # the caller's memory may change at once: everything was sent
    assert received == [encode_head(rid) + np.random.default_rng(size).bytes(size)]
    assert conn.op_counts[1000] == 1 and conn.requests_sent == 1


def test_send_parts_failure_keeps_no_view(wired: tuple[Connection, socket.socket]) -> None:
    conn, peer = wired
    peer.close()
    data = bytearray(1 << 20)
    view = memoryview(data)
    with pytest.raises(connection_module.IgniteConnectionError) as info:
        for _ in range(50):  # the first sends may still land in the socket buffer
            conn.send_parts(lambda rid: struct.pack("<ihq", 10 + len(data), 1000, rid), view)
    view.release()
    data.append(0)  # BufferError if a frame of the raised exception kept a view of ``data``


def _notification(resource_id: int, body: bytes) -> bytes:
    """A frame the node pushes for ``resource_id``: id, the NOTIFICATION flag, the event op, the body."""
    return _frame(struct.pack("<qhh", resource_id, 4, 2007) + body)


def test_pushed_frames_are_kept_only_when_asked_for_and_until_their_resource_is_closed(
        wired: tuple[Connection, socket.socket]) -> None:
    conn, peer = wired
    # A connection that opened no continuous query accepts no pushed frame: a peer cannot fill memory.
    peer.sendall(_notification(7, b"unasked"))
    assert conn.next_notification(7, 0.3) is None
    conn.limit_notifications(4)
    peer.sendall(_notification(8, b"event"))
    assert bytes(conn.next_notification(8, 10) or b"") == b"event"
    # Frames still in flight when the reader closes its resource are dropped, not kept for nobody.
    conn.forget_notifications(8)
    peer.sendall(_notification(8, b"late"))
    assert conn.next_notification(8, 0.3) is None
