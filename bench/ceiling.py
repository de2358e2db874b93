"""The loopback ceiling: a tiny server process streaming bytes, read as fast as Python can.

The server (``python -m bench.ceiling``, a separate process like an Ignite node)
listens on 127.0.0.1, prints its port, and for every connection reads a request
``<q nbytes><i chunk>`` and answers with ``nbytes`` bytes sent ``chunk`` at a
time from one preallocated buffer.  The client reads them with ``recv_into`` into
one reusable page buffer -- the least any thin-client reader must do to move the
same bytes, with no protocol, no decoding and no copies.
"""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["CeilingServer", "read_stream"]

_REQUEST = struct.Struct("<qi")


def _serve() -> None:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    print(srv.getsockname()[1], flush=True)
    buffers: dict[int, memoryview] = {}
    while True:
        conn, _ = srv.accept()
        with conn:
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            head = b""
            while len(head) < _REQUEST.size:
                more = conn.recv(_REQUEST.size - len(head))
                if not more:
                    break
                head += more
            if len(head) < _REQUEST.size:
                continue
            nbytes, chunk = _REQUEST.unpack(head)
            if nbytes < 0:  # shutdown request
                return
            chunk = max(1, min(chunk, 64 << 20))
            buf = buffers.get(chunk)
            if buf is None:
                buf = buffers[chunk] = memoryview(bytes(chunk))
            left = nbytes
            try:
                while left > 0:
                    n = min(left, chunk)
                    conn.sendall(buf[:n])
                    left -= n
            except OSError:
                pass


class CeilingServer:
    """The server process; ``with CeilingServer() as s: read_stream(s.port, ...)``."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.port = 0

    def __enter__(self) -> "CeilingServer":
        self.proc = subprocess.Popen([sys.executable, "-m", "bench.ceiling"], stdout=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, text=True,
                                     cwd=str(Path(__file__).resolve().parents[1]))
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.strip().isdigit():
            self.close()
            raise RuntimeError(f"the ceiling server did not start (printed {line!r})")
        self.port = int(line)
        return self

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=2) as s:
                s.sendall(_REQUEST.pack(-1, 0))
            proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()  # our own child, by its handle
            proc.wait()

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_stream(port: int, nbytes: int, chunk: int) -> float:
    """Read ``nbytes`` from the server in ``chunk``-sized receives; returns seconds taken."""
    page = bytearray(max(1, chunk))
    view = memoryview(page)
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)  # as our Connection does
        t0 = time.perf_counter()
        s.sendall(_REQUEST.pack(nbytes, chunk))
        left = nbytes
        while left > 0:
            want = min(left, len(page))
            got = 0
            while got < want:
                k = s.recv_into(view[got:want], want - got)
                if k == 0:
                    raise ConnectionError("the ceiling server closed the stream early")
                got += k
            left -= want
        return time.perf_counter() - t0


if __name__ == "__main__":
    _serve()
