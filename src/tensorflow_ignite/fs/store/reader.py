"""Read handles: a file's content as it was at open, fetched by block."""

from __future__ import annotations

import collections
import errno
import struct
import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING

from ...errors import IgniteConnectionError, ProtocolError, StaleFileError
from ...protocol import requests
from ...protocol.codes import Op, TypeCode
from ..layout import FileEntry
from .common import DIRECT_AHEAD, READ_CACHE_BLOCKS

if TYPE_CHECKING:
    from ...client.connection import Connection
    from .core import IgniteFileStore

_I32 = struct.Struct("<i")


class FileReader:
    """A read handle pinned to the content the file had when it was opened.

    Blocks are fetched whole and kept (a few at a time); a sequential reader
    gets the next block fetched in the background while it consumes this one.
    Whole blocks inside one large read bypass that cache: they are received
    straight into the caller's buffer.  Safe for concurrent ``read_into`` calls
    from many threads.
    """

    def __init__(self, store: "IgniteFileStore", path: str, entry: FileEntry) -> None:
        self.store = store
        self.path = path
        self.entry = entry
        self._cids = entry.content_ids()
        store._pin(self._cids)
        self._lock = threading.Lock()
        self._cache: collections.OrderedDict[int, Future[memoryview]] = collections.OrderedDict()
        self._last = -1
        self._closed = False

    @property
    def size(self) -> int:
        return self.entry.size

    def _fetch(self, index: int) -> memoryview:
        return self._checked(index, self.store._get_block(self.entry.key_of(index)))

    def _checked(self, index: int, data: memoryview | None) -> memoryview:
        """Block ``index`` as fetched, or :class:`StaleFileError` if it is gone or short."""
        expected = min(self.entry.block_size, self.entry.size - index * self.entry.block_size)
        if data is None or len(data) < expected:
            raise StaleFileError(
                errno.ESTALE,
                "content changed while reading: the file was replaced or deleted by another "
                f"process (block {index} is gone); reopen it",
                self.store.uri(self.path),
            )
        return data

    def _slot(self, index: int) -> tuple[Future[memoryview], bool]:
        """The future for block ``index`` and whether the caller must fill it. Lock held."""
        fut = self._cache.get(index)
        if fut is not None:
            self._cache.move_to_end(index)
            return fut, False
        fut = Future()
        self._cache[index] = fut
        while len(self._cache) > READ_CACHE_BLOCKS:
            self._cache.popitem(last=False)
        return fut, True

    def _fill(self, index: int, fut: Future[memoryview]) -> None:
        try:
            fut.set_result(self._fetch(index))
        except BaseException as exc:  # noqa: BLE001 - handed to whoever waits
            fut.set_exception(exc)
            with self._lock:
                if self._cache.get(index) is fut:
                    del self._cache[index]

    def block(self, index: int) -> memoryview:
        """Block ``index`` of the file (a read-only view; do not keep it past close)."""
        if self._closed:
            raise ValueError(f"{self.store.uri(self.path)}: read handle is closed")
        with self._lock:
            fut, mine = self._slot(index)
            sequential = index == self._last + 1
            self._last = index
            if sequential:
                self._cache.move_to_end(index)
        if sequential and index + 1 < self.entry.blocks:
            self._prefetch(index + 1)
        if mine:
            self._fill(index, fut)
        return fut.result()

    def _prefetch(self, index: int) -> None:
        """Fetch block ``index`` in the background unless it is cached or coming."""
        with self._lock:
            if index in self._cache:
                return
            fut, _ = self._slot(index)
        try:
            self.store._io.submit(self._fill, index, fut)
        except RuntimeError:  # executor shut down: fetch inline later
            with self._lock:
                if self._cache.get(index) is fut:
                    del self._cache[index]
            fut.cancel()

    def read_into(self, offset: int, buffer: memoryview) -> int:
        """Copy bytes from ``offset`` into ``buffer``; returns how many (0 at end of file).

        Blocks that lie wholly inside the request (a checkpoint restore reads each
        tensor with one call) are received straight into ``buffer``, several
        requests in flight; the partial blocks at either end go through the
        block cache (and its read-ahead).
        """
        if self._closed:
            raise ValueError(f"{self.store.uri(self.path)}: read handle is closed")
        size, bs = self.entry.size, self.entry.block_size
        want = min(len(buffer), size - offset)
        if want <= 0:
            return 0
        end = offset + want
        first = -(-offset // bs)
        last = self.entry.blocks if end == size else end // bs  # blocks [first, last) are inside
        if last <= first:
            return self._copy_blocks(offset, buffer[:want])
        head = first * bs - offset
        middle = min(last * bs, size) - offset
        self._copy_blocks(offset, buffer[:head])
        self._read_direct(first, last, buffer[head:middle])
        self._copy_blocks(offset + middle, buffer[middle:want])
        return want

    def read_range(self, start: int, end: int) -> bytes:
        """Bytes ``[start, end)``, ``end`` cut to the file's size (what ``read_into`` gives, call by call)."""
        end = min(end, self.size)
        if end <= start:
            return b""
        out = bytearray(end - start)
        view = memoryview(out)
        got = 0
        while got < len(out):
            n = self.read_into(start + got, view[got:])
            if n == 0:
                break
            got += n
        return bytes(out[:got])

    def _copy_blocks(self, offset: int, view: memoryview) -> int:
        """Fill ``view`` from ``offset`` through the block cache; returns the bytes copied."""
        size, bs = self.entry.size, self.entry.block_size
        want = len(view)
        got = 0
        while got < want and offset < size:
            index, within = divmod(offset, bs)
            data = self.block(index)
            n = min(len(data) - within, want - got, size - offset)
            view[got:got + n] = data[within:within + n]
            got += n
            offset += n
        return got

    def _read_direct(self, first: int, last: int, view: memoryview) -> None:
        """Receive blocks ``[first, last)`` into ``view`` (which starts at block ``first``).

        Up to :data:`DIRECT_AHEAD` gets are in flight; each answer is read from the
        socket into its place in ``view`` (:meth:`Connection.receive_into`), by
        whichever thread receives on that connection.  Blocks already cached (a
        read-ahead) are copied.  A connection that fails (its node died, or fell
        silent for ``idle_timeout``: its host cut off) is dropped and the gets that
        were on it are fetched again the ordinary way (another node, with its
        retry); the gets in flight to the other nodes are still received -- their
        connections are healthy and stay open.
        """
        store, bs = self.store, self.entry.block_size
        with self._lock:
            cached = {i: self._cache[i] for i in range(first, last) if i in self._cache}
            self._last = last - 1  # a read continuing at block `last` is sequential
        todo = collections.deque(i for i in range(first, last) if i not in cached)
        inflight: collections.deque[tuple[int, Connection, int]] = collections.deque()
        lost: list[int] = []  # blocks whose connection failed: fetched again below
        cache_id = store.data.cache_id

        def target(index: int) -> memoryview:
            start = (index - first) * bs
            return view[start:start + min(bs, self.entry.size - index * bs)]

        def abandon(conn: Connection) -> None:
            """Drop a failed connection; its gets in flight join ``lost``, the others stay."""
            store.client.drop_connection(conn)
            kept = [e for e in inflight if e[1] is not conn]
            for index, c, rid in inflight:
                if c is conn:
                    conn.forget_into(rid)
                    lost.append(index)
            inflight.clear()
            inflight.extend(kept)

        def send(index: int) -> None:
            key = self.entry.key_of(index)
            conn = store.client.connection_for_node(store.block_node(key))
            into = target(index)

            def encode(rid: int) -> bytes:
                frame = requests.cache_get(rid, cache_id, key)
                # Registered before the request leaves: no thread can read the answer first.
                conn.expect_into(rid, into, 5)
                inflight.append((index, conn, rid))
                return frame

            try:
                conn.send(encode)
            except IgniteConnectionError:
                if not any(i == index for i, _, _ in inflight):
                    lost.append(index)
                abandon(conn)

        try:
            while todo or inflight:
                while todo and len(inflight) < DIRECT_AHEAD:
                    send(todo.popleft())
                if not inflight:
                    continue
                index, conn, rid = inflight[0]
                try:
                    body, filled = conn.receive_into(rid, Op.CACHE_GET)
                except IgniteConnectionError:
                    abandon(conn)
                    continue
                inflight.popleft()
                into = target(index)
                if filled:
                    (n,) = _I32.unpack_from(body, 1)
                    if body[0] != TypeCode.BYTE_ARR or n != len(into):
                        raise ProtocolError(f"data block {self.entry.key_of(index)}: unexpected answer header")
                    store.stats["blocks_read"] += 1
                else:
                    data = self._checked(index, store._block_of(self.entry.key_of(index), body))
                    into[:] = data[:len(into)]  # a block being rewritten may be longer
        finally:
            for _, conn, rid in inflight:
                conn.forget_into(rid)
        for i in sorted(lost):
            into = target(i)
            into[:] = self._fetch(i)[:len(into)]
        if last < self.entry.blocks:
            # The next read most likely starts there.  Not earlier: the background
            # fetch would receive (and park) some of the answers expected above.
            self._prefetch(last)
        for index, fut in cached.items():
            into = target(index)
            into[:] = fut.result()[:len(into)]

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._cache.clear()
        self.store._unpin(self._cids)

    def __enter__(self) -> "FileReader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
