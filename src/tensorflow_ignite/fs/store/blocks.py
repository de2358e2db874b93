"""Data blocks: reading, writing and deleting the blocks of the data table.

A block is one binary value under ``"<content id>:<index>"``; requests go to
the block's primary node.  How they travel is the tables' business
(:mod:`.backend`: :mod:`.ignite2` frames puts in place in front of the block
and sends from the caller's memory; :mod:`.ignite3` goes through the table's
key-value view); these are the store's entry points to them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..layout import Range, block_key
from .common import REMOVE_BATCH, StoreState


class Blocks(StoreState):
    """Part of :class:`~.core.IgniteFileStore`: block transfers."""

    def block_node(self, key: str) -> Any:
        """The node this store sends the requests of data block ``key`` to: its primary
        (the request skips a hop), or None (= any node, which forwards) when the client
        cannot place the key itself."""
        return self.tables.block_node(key)

    def _get_block(self, key: str) -> memoryview | None:
        """The bytes of one data block, None when absent."""
        return self.tables.get_block(key)

    def _put_block(self, buffer: bytearray, key: str, length: int) -> None:
        """Store ``buffer[FRAME_ROOM:FRAME_ROOM + length]`` as block ``key`` (idempotent)."""
        self.tables.put_block(buffer, key, length)

    def send_block_from(self, key: str, block: memoryview) -> Callable[[], None]:
        """Send a put of ``block`` (memory the caller does not own) straight from it.

        The primitive through which a writer stores every whole block it takes
        from the caller's memory (:meth:`~.writer.FileWriter.write`); tests wrap
        it on a store instance to observe those puts or to inject a lost one.
        Every byte is sent (or copied) when this returns, so the caller may
        release ``block`` at once.  Returns a function that waits for the
        acknowledgement (call it from any thread).
        """
        return self.tables.send_block_from(key, block)

    def _put_block_and_record(self, buffer: bytearray, key: str, length: int, record_key: str, record: str) -> None:
        """Store a meta record and a block with as few round trips as the tables allow."""
        self.tables.put_block_and_record(buffer, key, length, record_key, record)

    def _delete_blocks(self, ranges: Iterable[Range]) -> None:
        keys = [block_key(cid, i) for cid, first, n in ranges for i in range(first, first + n)]
        for i in range(0, len(keys), REMOVE_BATCH):
            self.tables.remove_blocks(keys[i : i + REMOVE_BATCH])
        self.stats["blocks_deleted"] += len(keys)
