"""Read handles: a file's content as it was at open, fetched by block."""

from __future__ import annotations

import collections
import errno
import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING

from ...client.closeable import Closeable
from ...errors import IgniteError, StaleFileError
from ..layout import FileEntry
from .common import READ_CACHE_BLOCKS
from .readahead import ReadAheadWindow, ReadStats, window_blocks

if TYPE_CHECKING:
    from .core import IgniteFileStore


class _Slot:
    """One block a reader holds or is fetching: its future, and how it got there."""

    __slots__ = ("future", "prefetch", "ahead", "running", "orphan", "task")

    def __init__(self, ahead: bool) -> None:
        self.future: Future[memoryview] = Future()
        #: Fetched ahead of the reader.
        self.prefetch = ahead
        #: Fetched ahead and not read yet.
        self.ahead = ahead
        #: Its get is queued or in flight.
        self.running = True
        #: Dropped from the cache while its get was in flight (still counted as held).
        self.orphan = False
        #: The I/O thread's task of a read-ahead (cancelled if it has not started when dropped).
        self.task: Future[None] | None = None


class FileReader(Closeable):
    """A read handle pinned to the content the file had when it was opened.

    Blocks are fetched whole and kept (a few at a time).  A sequential reader
    has the blocks ahead of it fetched on the store's I/O threads, several
    gets in flight to the nodes that own them (:mod:`.readahead`: up to the
    store's ``read_ahead`` bytes, discarded on a seek and on close; ``stats``
    shows what the reader holds).  Whole blocks inside one large read bypass
    that cache: they are received straight into the caller's buffer.  Safe for
    concurrent ``read_into`` calls from many threads.
    """

    def __init__(self, store: "IgniteFileStore", path: str, entry: FileEntry) -> None:
        self.store = store
        self.path = path
        self.entry = entry
        self._cids = entry.content_ids()
        store._pin(self._cids)
        self._lock = threading.Lock()
        self._cache: collections.OrderedDict[int, _Slot] = collections.OrderedDict()
        ahead = window_blocks(store.read_ahead, entry.block_size)
        self._window = ReadAheadWindow(entry.blocks, ahead)
        self._capacity = max(READ_CACHE_BLOCKS, self._window.capacity)
        self._orphans = 0
        #: What this reader holds and fetched (:class:`~.readahead.ReadStats`).
        self.stats = ReadStats(self._capacity * entry.block_size)
        self._closed = False

    @property
    def size(self) -> int:
        return self.entry.size

    @property
    def read_ahead_blocks(self) -> int:
        """Blocks fetched ahead of a sequential reader at most (0: no read-ahead)."""
        return self._window.ahead

    def _fetch(self, index: int) -> memoryview:
        key = self.entry.key_of(index)
        try:
            data = self.store._get_block(key)
        except IgniteError as exc:
            if not isinstance(exc, StaleFileError) and exc.args and isinstance(exc.args[0], str):
                # Same type and attributes (TF's status code follows the type); the
                # message names the file, the block and the node it was asked of.
                exc.args = (
                    f"{self.store.uri(self.path)}: reading block {index} (key {key}) from "
                    f"{self.store.tables.node_name(self.store.block_node(key))} failed: {exc.args[0]}",
                    *exc.args[1:],
                )
            raise
        return self._checked(index, data)

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

    # ------------------------------------------------------------ the block cache (lock held)
    def _drop(self, index: int) -> None:
        """Take block ``index`` out of the cache; a get still in flight stays counted until it ends."""
        slot = self._cache.pop(index)
        if slot.ahead:
            # Nobody waits for a block fetched ahead and not read yet: a get not
            # started is cancelled (its future never completes; nobody has it).
            self.stats.count("prefetches_discarded")
            if slot.running and slot.task is not None and slot.task.cancel():
                slot.running = False
        if slot.running:
            slot.orphan = True
            self._orphans += 1
        else:
            self.stats.release(self.entry.block_size)

    def _room(self, keep: int, evict_ahead: bool) -> bool:
        """Make room for one more block (dropping the least recently used, never ``keep``);
        blocks fetched ahead are dropped only with ``evict_ahead``.  False if there is none."""
        while len(self._cache) + self._orphans >= self._capacity:
            victim = next((i for i, s in self._cache.items() if i != keep and not s.ahead), None)
            if victim is None and evict_ahead:
                victim = next((i for i in self._cache if i != keep), None)
            if victim is None:
                return False
            self._drop(victim)
        return True

    def _new_slot(self, index: int, ahead: bool) -> _Slot | None:
        """A slot for block ``index``; None for a read-ahead when there is no room.  A block a
        caller waits for always gets one (only threads reading one handle at once, each
        waiting for its block, can take the reader past its bound)."""
        if not self._room(index, evict_ahead=not ahead) and ahead:
            return None
        slot = _Slot(ahead)
        self._cache[index] = slot
        self.stats.hold(self.entry.block_size)
        return slot

    def _discard_ahead(self, keep: range) -> None:
        """A seek: drop the blocks fetched ahead and not read, except those in ``keep``."""
        for i in [i for i, s in self._cache.items() if s.ahead and i not in keep]:
            self._drop(i)

    def _plan(self, first: int, last: int) -> list[tuple[int, _Slot]]:
        """Record a read of blocks ``first..last`` and reserve the blocks to fetch ahead."""
        step = self._window.access(first, last)
        if not step.sequential:
            self._discard_ahead(range(first, last + 1))
        todo = []
        for i in step.fetch:
            if i in self._cache:
                continue
            slot = self._new_slot(i, ahead=True)
            if slot is None:
                break
            todo.append((i, slot))
        return todo

    # ------------------------------------------------------------------- fetching
    def _fill(self, index: int, slot: _Slot) -> None:
        try:
            data = self._fetch(index)
        except BaseException as exc:  # noqa: BLE001 - raised by the read that needs the block
            if slot.prefetch:
                self.stats.count("prefetch_errors")
            slot.future.set_exception(exc)
            del exc
        else:
            slot.future.set_result(data)
            self.stats.count("blocks_fetched")
            if slot.prefetch:
                self.stats.count("blocks_prefetched")
            del data
        with self._lock:
            slot.running = False
            if slot.orphan:
                slot.orphan = False
                self._orphans -= 1
                self.stats.release(self.entry.block_size)

    def _start(self, todo: list[tuple[int, _Slot]]) -> None:
        """Fetch the reserved blocks on the store's I/O threads (each get on the connection to
        the block's primary node; several in flight at once)."""
        for index, slot in todo:
            try:
                slot.task = self.store._io.submit(self._fill, index, slot)
            except RuntimeError:  # executor shut down: fetched inline when read
                self._unreserve([(index, slot)])

    def _unreserve(self, todo: list[tuple[int, _Slot]]) -> None:
        """Give up blocks reserved by :meth:`_plan` whose gets were never started."""
        with self._lock:
            for index, slot in todo:
                if self._cache.get(index) is slot:
                    slot.running = False
                    self._drop(index)
                elif slot.orphan:
                    slot.orphan = slot.running = False
                    self._orphans -= 1
                    self.stats.release(self.entry.block_size)

    def block(self, index: int) -> memoryview:
        """Block ``index`` of the file (a read-only view; do not keep it past close).

        An error of its read-ahead get is raised here, by the read that needs it.
        """
        if self._closed:
            raise ValueError(f"{self.store.uri(self.path)}: read handle is closed")
        with self._lock:
            slot = self._cache.get(index)
            mine = slot is None
            if slot is None:
                slot = self._new_slot(index, ahead=False)
                assert slot is not None
            else:
                self._cache.move_to_end(index)
                if slot.ahead:
                    slot.ahead = False
                    self.stats.count("prefetch_hits")
            todo = self._plan(index, index)
        self._start(todo)
        if mine:
            self._fill(index, slot)
        try:
            return slot.future.result()
        except BaseException:
            with self._lock:  # the next read of this block fetches it again
                if self._cache.get(index) is slot:
                    self._drop(index)
            raise

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
            view[got : got + n] = data[within : within + n]
            got += n
            offset += n
        return got

    def _read_direct(self, first: int, last: int, view: memoryview) -> None:
        """Receive blocks ``[first, last)`` into ``view`` (which starts at block ``first``).

        The tables receive each block into its place in ``view`` (on Ignite 2 several
        gets in flight, each answer read from the socket into place, a failed
        connection's gets fetched again elsewhere: :meth:`.ignite2.Ignite2Tables.get_blocks_into`).
        Blocks already cached (a read-ahead) are copied.
        """
        bs = self.entry.block_size
        with self._lock:
            cached = {i: self._cache[i].future for i in range(first, last) if i in self._cache}
            for i in cached:
                slot = self._cache[i]
                if slot.ahead:
                    slot.ahead = False
                    self.stats.count("prefetch_hits")
            # Blocks ahead are reserved now (a read continuing at block `last` is
            # sequential) and fetched after the direct gets below.
            ahead = self._plan(first, last - 1)
        try:
            self._receive_direct(first, last, view, cached)
        except BaseException:
            self._unreserve(ahead)
            raise
        # Not earlier: the background fetches would receive (and park) some of the
        # answers expected above.
        self._start(ahead)
        for index, fut in cached.items():
            start = (index - first) * bs
            into = view[start : start + min(bs, self.entry.size - index * bs)]
            try:
                into[:] = fut.result()[: len(into)]
            except BaseException:
                with self._lock:  # the next read of this block fetches it again
                    slot = self._cache.get(index)
                    if slot is not None and slot.future is fut:
                        self._drop(index)
                raise

    def _receive_direct(self, first: int, last: int, view: memoryview, cached: dict[int, Future[memoryview]]) -> None:
        """The gets of :meth:`_read_direct` for the blocks not in ``cached``, each received into
        its place in ``view`` (:meth:`~.backend.StoreTables.get_blocks_into`)."""
        bs = self.entry.block_size
        todo = [i for i in range(first, last) if i not in cached]
        if not todo:
            return
        views = []
        for index in todo:
            start = (index - first) * bs
            views.append(view[start : start + min(bs, self.entry.size - index * bs)])
        short = self.store.tables.get_blocks_into([self.entry.key_of(i) for i in todo], views)
        if short:
            self._checked(todo[short[0]], None)  # raises StaleFileError

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for index in list(self._cache):  # read-ahead not started is cancelled
                self._drop(index)
        self.store._unpin(self._cids)
