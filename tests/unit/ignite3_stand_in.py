"""The wire side of a stand-in Ignite 3 node for the unit tests of the client's connection: frames read
from a socket as a node reads them, and the node's handshake answer."""

from __future__ import annotations

import socket
import struct
import uuid

from tensorflow_ignite.ignite3.protocol.codes import MAGIC
from tensorflow_ignite.ignite3.protocol.framing import frame
from tensorflow_ignite.ignite3.protocol.msgpack_io import Writer


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """Exactly ``n`` bytes from ``sock``; ConnectionError when the client closes first."""
    out = b""
    while len(out) < n:
        got = sock.recv(n - len(out))
        if not got:
            raise ConnectionError("peer closed")
        out += got
    return out


def recv_frame(sock: socket.socket) -> bytes:
    """One frame's body: a big-endian 4-byte length, then that many bytes."""
    (n,) = struct.unpack(">i", recv_exact(sock, 4))
    return recv_exact(sock, n)


def handshake_answer() -> bytes:
    """The node's answer to a handshake: protocol 3.0.0, no error, a node named ``stand-in`` of ``cluster``."""
    body = Writer().values(3, 0, 0, None, 0, uuid.uuid4(), "stand-in", 1, uuid.uuid4(), "cluster", 1,
                           3, 1, 0, None, None, b"", 0).bytes()
    return MAGIC + frame(body)
