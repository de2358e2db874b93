"""Write handles: blocks under a fresh content id, then one publishing transaction."""

from __future__ import annotations

import collections
import errno
import json
import logging
import os
import socket
import time
from concurrent.futures import Future
from typing import TYPE_CHECKING

from ..layout import (
    DirEntry,
    Entry,
    FileEntry,
    ancestors,
    block_key,
    bucket_key,
    name_of,
    new_id,
    parent_of,
    pending_key,
)
from .common import (
    FRAME_ROOM,
    INITIAL_BUFFER,
    PENDING_REFRESH,
    WRITE_AHEAD,
    Superseded,
    now_ns,
    os_error,
)
from .reader import FileReader
from .tx import TxView

if TYPE_CHECKING:
    from .core import IgniteFileStore

log = logging.getLogger(__name__)


class FileWriter:
    """A write handle: blocks under a fresh content id, published by :meth:`flush`/:meth:`close`.

    See :class:`~tensorflow_ignite.native.backend.WriteHandle` for the contract.
    A writer is bound to the file it opened: once it has published, a later
    publication requires the entry it last published (same file id and
    generation); if another writer replaced the file or someone deleted it
    meanwhile, this writer's further output is dropped with a warning -- as
    writes to an unlinked file are on POSIX.

    Whole blocks inside a large ``write`` (TensorFlow's checkpoint writer
    appends 8 MiB at a time) are sent straight from the caller's memory, in
    the caller's thread, before ``write`` returns; smaller pieces are copied
    into a block buffer that the store's I/O threads send.  Either way up to
    ``WRITE_AHEAD`` puts await their acknowledgement while the writer goes on.
    A writer that lost a block (or failed in the middle of a ``write``) stores
    and publishes nothing more: the call that met the failure raises it, later
    writes and flushes raise ``EIO``, and ``close`` drops the file with a warning.
    """

    def __init__(self, store: "IgniteFileStore", path: str, *, append: bool, exclusive: bool) -> None:
        self.store = store
        self.path = path
        self.exclusive = exclusive
        uri = store.uri(path)
        if path == "/":
            raise os_error(IsADirectoryError, errno.EISDIR, uri)
        parent = parent_of(path)
        with store._open_guard():
            found = store.lookup_many([parent, path])
            cur = found.get(path)
            # An append reads the old partial last block: pin it like a reader.
            tail_reader = FileReader(store, path, cur) if append and isinstance(cur, FileEntry) else None
        p = found.get(parent)
        if p is None:
            store.makedirs(parent)
        elif not p.is_dir:
            raise os_error(NotADirectoryError, errno.ENOTDIR, uri, f"{parent} is a file, not a directory")
        self._maybe_new = cur is None
        try:
            self._init_content(store, path, uri, cur, append, exclusive, tail_reader)
        finally:
            if tail_reader is not None:
                tail_reader.close()

    def _init_content(
        self,
        store: "IgniteFileStore",
        path: str,
        uri: str,
        cur: Entry | None,
        append: bool,
        exclusive: bool,
        tail_reader: "FileReader | None",
    ) -> None:
        if cur is not None and cur.is_dir:
            raise os_error(IsADirectoryError, errno.EISDIR, uri)
        if exclusive and cur is not None:
            raise os_error(FileExistsError, errno.EEXIST, uri)
        self.cid = new_id()
        self._base: FileEntry | None = cur if (append and isinstance(cur, FileEntry)) else None
        base = self._base
        self.block_size = base.block_size if base is not None else store.block_size
        bs = self.block_size
        # Small files are common (indexes, state files): start small, grow to a block.
        self._buffer = bytearray(FRAME_ROOM + min(bs, INITIAL_BUFFER))
        self._filled = 0
        if base is not None:
            self.file_id = base.id
            self._expect: tuple[str, int] | None = (base.id, base.gen)
            self._first_block, tail = divmod(base.size, bs)
            self._prefix_extents = tuple(x for x in base.extents if x[0] < self._first_block)
            self._position = base.size
            if tail:
                # The old last block is partial: it is rewritten, extended, under our id.
                assert tail_reader is not None
                self._reserve(tail)
                self._buffer[FRAME_ROOM : FRAME_ROOM + tail] = tail_reader.block(self._first_block)[:tail]
                self._filled = tail
        else:
            self.file_id = new_id()
            self._expect = None
            self._first_block = 0
            self._prefix_extents = ()
            self._position = 0
        self._block = self._first_block
        # Blocks being stored, with their buffers; a buffer whose put completed is
        # reused for a later block (fresh 4 MiB buffers cost page faults).
        # Blocks sent straight from the caller's memory (:meth:`_ship_block_from`) have no buffer.
        self._inflight: collections.deque[tuple[Future[None], bytearray | None]] = collections.deque()
        self._spare: list[bytearray] = []
        self._pending_at = 0.0  # when the w: record was last written (0 = not yet)
        self._call_left = 0  # bytes of the current write() call not yet taken (for the capacity guard)
        self._published_once = False
        self._published_size = 0
        self._dirty = True
        self._orphaned = False
        self._closed = False
        #: Why this writer failed (a block it took could not be stored): it publishes nothing more.
        self._failed: str | None = None

    # ---------------------------------------------------------------- contract
    def write(self, data: memoryview | bytes | bytearray) -> None:
        self._check_open()
        view = memoryview(data).cast("B") if not isinstance(data, memoryview) or data.format != "B" else data
        bs = self.block_size
        try:
            if self._filled + len(view) >= bs:
                # At least one block leaves in this call: the whole call must fit (capacity.py).
                self._call_left = len(view)
                self.store.admit_write(0, 0, remaining=(len(view), -(-len(view) // bs)), largest_entry=bs)
            while view:
                if not self._filled and len(view) >= bs:
                    # A whole block inside the caller's data (TensorFlow's checkpoint
                    # writer appends 8 MiB at a time): sent from there, not copied.
                    self._ship_block_from(view[:bs])
                    self._position += bs
                    view = view[bs:]
                    self._call_left = len(view)
                    continue
                n = min(bs - self._filled, len(view))
                self._reserve(self._filled + n)
                start = FRAME_ROOM + self._filled
                self._buffer[start : start + n] = view[:n]
                self._filled += n
                self._position += n
                view = view[n:]
                self._call_left = len(view)
                if self._filled == bs:
                    self._ship_full_block()
        except BaseException as exc:
            # Part of ``data`` may be taken and part not, or a block lost: the
            # content is no longer what the caller wrote, so it is never published.
            self._fail(exc)
            raise
        if len(data):
            self._dirty = True

    def tell(self) -> int:
        self._check_open()
        return self._position

    def _reserve(self, size: int) -> None:
        """Grow the block buffer (geometrically, up to one block) to hold ``size`` bytes."""
        capacity = len(self._buffer) - FRAME_ROOM
        if size <= capacity:
            return
        grown = bytearray(FRAME_ROOM + min(self.block_size, max(size, 2 * capacity)))
        grown[FRAME_ROOM : FRAME_ROOM + self._filled] = self._buffer[FRAME_ROOM : FRAME_ROOM + self._filled]
        self._buffer = grown

    def flush(self) -> None:
        self._check_open()
        if self._orphaned or not self._dirty:
            return
        self._store_tail()
        self._publish(final=False)

    def close(self) -> None:
        if self._closed:
            return
        if self._failed is not None:
            # The failure was raised to the caller of the call that met it (as a
            # failed write(2) is, not again by close(2)); TensorFlow drops such a
            # file without Close, and the shim then closes it quietly.
            log.warning(
                "%s was not published: an earlier write to it failed (%s)", self.store.uri(self.path), self._failed
            )
            self.discard()
            return
        try:
            if self._orphaned:
                pass
            elif self._dirty or not self._published_once:
                self._store_tail()
                self._publish(final=True)
            elif self._pending_at:  # flushed just before closing (TF's Close after Flush/Sync)
                self.store._background(self.store.meta.remove_key, pending_key(self.cid))
        except BaseException:
            self._abandon()
            raise
        finally:
            self._closed = True
            self._buffer = bytearray()
            self._spare.clear()

    def discard(self) -> None:
        """Drop everything written and not yet published (no publication)."""
        if not self._closed:
            self._closed = True
            self._abandon()
            self._buffer = bytearray()
            self._spare.clear()

    # ------------------------------------------------------------------ blocks
    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"{self.store.uri(self.path)}: write handle is closed")
        self._check_failed()

    def _fail(self, exc: BaseException) -> None:
        if self._failed is None:
            self._failed = f"{type(exc).__name__}: {exc}"

    def _check_failed(self) -> None:
        if self._failed is not None:
            raise OSError(
                errno.EIO,
                f"an earlier write to this file failed ({self._failed}); nothing more is stored or published",
                self.store.uri(self.path),
            )

    def _admit(self, length: int) -> None:
        """The capacity guard's check before a block is stored (see :mod:`tensorflow_ignite.capacity`):
        this block and the rest of the current ``write`` call must fit the data cache's region.
        A refusal fails the writer (nothing more is stored or published; ``close`` drops the file)."""
        left = self._call_left
        try:
            self.store.admit_write(
                length,
                1,
                remaining=(left, -(-left // self.block_size)) if left else None,
                largest_entry=self.block_size,
            )
        except BaseException as exc:
            self._fail(exc)
            raise

    def _pending_record(self) -> str:
        record = {"p": self.path, "b": self._first_block, "t": now_ns(), "h": socket.gethostname(), "pid": os.getpid()}
        return json.dumps(record, separators=(",", ":"))

    def _register_pending(self) -> None:
        """Write (or refresh) this writer's ``w:`` record before its blocks."""
        now = time.monotonic()
        if self._pending_at and now - self._pending_at < PENDING_REFRESH:
            return
        self.store.meta.put(pending_key(self.cid), self._pending_record())
        self._pending_at = now

    def _ship_full_block(self) -> None:
        """Send the full buffer in the background and start a new one."""
        if self._orphaned:
            self._block += 1
            self._filled = 0
            return
        self._admit(self._filled)
        self._register_pending()
        while self._inflight and (len(self._inflight) >= WRITE_AHEAD or self._inflight[0][0].done()):
            self._retire()
        buffer, key = self._buffer, block_key(self.cid, self._block)
        length = self._filled
        try:
            fut = self.store._io.submit(self.store._put_block, buffer, key, length)
        except RuntimeError:  # store closing: write inline
            self.store._put_block(buffer, key, length)
            self._spare.append(buffer)
        else:
            self._inflight.append((fut, buffer))
        full = FRAME_ROOM + self.block_size
        while self._spare and len(self._spare[-1]) != full:
            self._spare.pop()  # the first, smaller buffer of a small start
        self._buffer = self._spare.pop() if self._spare else bytearray(full)
        self._block += 1
        self._filled = 0

    def _ship_block_from(self, block: memoryview) -> None:
        """Store one whole block straight from the caller's memory (see :meth:`write`).

        ``block`` is valid only during the caller's call: it is written to the
        socket here, in the caller's thread, and only the acknowledgement is
        awaited in the background (it counts as one of the blocks in flight).
        """
        if self._orphaned:
            self._block += 1
            return
        self._admit(len(block))
        self._register_pending()
        while self._inflight and (len(self._inflight) >= WRITE_AHEAD or self._inflight[0][0].done()):
            self._retire()
        key = block_key(self.cid, self._block)
        try:
            acknowledged = self.store.send_block_from(key, block)
        except BaseException as exc:  # noqa: BLE001 - re-raised below, without the frames
            # No traceback frame may keep a view of the caller's memory past this call.
            del block
            exc.__context__ = exc.__cause__ = None
            raise exc.with_traceback(None)  # noqa: B904 - the context is dropped on purpose (above)
        del block
        self._block += 1
        try:
            fut = self.store._io.submit(acknowledged)
        except RuntimeError:  # store closing: wait inline
            acknowledged()
        else:
            self._inflight.append((fut, None))

    def _retire(self) -> None:
        """Wait for the oldest block in flight; its buffer (if it had one) becomes spare."""
        fut, buffer = self._inflight.popleft()
        try:
            fut.result()
        except BaseException as exc:
            self._fail(exc)  # a block of the file is missing
            raise
        if buffer is not None:
            self._spare.append(buffer)

    def _drain(self) -> None:
        while self._inflight:
            self._retire()

    def _store_tail(self) -> None:
        """Wait for blocks in flight and store the partial last block (kept for more writes)."""
        self._drain()
        if not self._filled:
            return
        self._admit(self._filled)
        key = block_key(self.cid, self._block)
        if not self._pending_at:
            # Typical small file: its one block and its w: record in one round trip.
            self.store._put_block_and_record(
                self._buffer, key, self._filled, pending_key(self.cid), self._pending_record()
            )
            self._pending_at = time.monotonic()
            return
        self._register_pending()
        self.store._put_block(self._buffer, key, self._filled)

    # -------------------------------------------------------------- publishing
    def _entry(self, gen: int) -> FileEntry:
        extents = self._prefix_extents
        if self._position > self._first_block * self.block_size:
            extents = extents + ((self._first_block, self.cid),)
        return FileEntry(
            id=self.file_id,
            size=self._position,
            mtime_ns=now_ns(),
            block_size=self.block_size,
            gen=gen,
            extents=extents,
        )

    def _publish(self, final: bool) -> None:
        store, path, parent = self.store, self.path, parent_of(self.path)
        uri = store.uri(path)
        base = self._base if not self._published_once else None

        # A new name needs the parent's listing bucket: read it with the entries
        # (bucket 0 is the right one unless the parent has more than one).
        speculative = [bucket_key(parent, 0)] if self._maybe_new else []

        def body(v: TxView) -> FileEntry:
            v.fetch_entries([*ancestors(path), path], speculative)
            store._ensure_dirs(v, parent, now_ns())
            cur = v.entry(path)
            if isinstance(cur, DirEntry):
                raise os_error(IsADirectoryError, errno.EISDIR, uri)
            if self._expect is not None:
                if not isinstance(cur, FileEntry) or (cur.id, cur.gen) != self._expect:
                    raise Superseded()
            elif self.exclusive and cur is not None:
                raise os_error(FileExistsError, errno.EEXIST, uri)
            if isinstance(cur, FileEntry) and cur.id != self.file_id:
                v.add_garbage(cur.ranges())
            if base is not None and base.size % base.block_size:
                # Our first publication of an append: the old partial last block is ours now.
                k = self._first_block
                v.add_garbage([(base.content_of(k), k, 1)])
            new = self._entry(cur.gen + 1 if isinstance(cur, FileEntry) else 1)
            v.put_entry(path, new)
            if cur is None:
                store._add_name(v, parent, name_of(path))
            return new

        try:
            published = store._transact(body, f"publish {path}")
        except Superseded:
            log.warning(
                "%s was replaced or removed by another writer while open for writing; "
                "this handle's further output is dropped",
                uri,
            )
            self._orphaned = True
            self._abandon()
            return
        self._expect = (published.id, published.gen)
        self._published_once = True
        self._published_size = published.size
        self._maybe_new = False
        if final and self._pending_at:
            # After the commit, off the caller's path: a crash before this leaves a w:
            # record whose blocks the published entry references, which
            # collect_garbage() recognizes and keeps.
            store._background(store.meta.remove_key, pending_key(self.cid))
        self._dirty = False

    def _abandon(self) -> None:
        """Delete blocks this writer stored that no entry references (best effort)."""
        try:
            self._inflight_cancel()
            start = self._first_block
            if self._published_once and not self._orphaned:
                start = max(start, -(-self._published_size // self.block_size))  # published blocks stay
            count = self._block - start + 1
            if self._pending_at:
                if count > 0:
                    self.store._delete_blocks([(self.cid, start, count)])
                self.store.meta.remove_key(pending_key(self.cid))
        except Exception as exc:  # noqa: BLE001 - collect_garbage() cleans up later
            log.debug("cleanup of abandoned write to %s failed: %s", self.path, exc)

    def _inflight_cancel(self) -> None:
        while self._inflight:
            fut, _ = self._inflight.popleft()
            try:
                fut.result()
            except Exception:  # noqa: BLE001 - the block is deleted anyway
                pass

    def __enter__(self) -> "FileWriter":
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.discard()
