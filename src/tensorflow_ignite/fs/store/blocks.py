"""Data blocks: reading, writing and deleting the blocks of the data cache.

A block is one ``byte[]`` value under ``"<content id>:<index>"``; requests go
to the block's primary node.  Puts are framed in place in front of the block
(no copy), or sent straight from the caller's memory.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable

from ...errors import IgniteConnectionError
from ...protocol import requests, responses
from ...protocol.codes import Op
from ...protocol.framing import reusable_frame
from ...protocol.hashing import java_string_hash
from ..layout import Range, block_key
from .common import FRAME_ROOM, REMOVE_BATCH, StoreState


class Blocks(StoreState):
    """Part of :class:`~.core.IgniteFileStore`: block transfers."""

    def block_node(self, key: str) -> uuid.UUID | None:
        """The node this store sends the requests of data block ``key`` to: its primary
        (the request skips a hop), or None (= any node, which forwards) when the client
        has no partition map for the data cache or cannot place String keys itself."""
        if not self.client.partition_awareness:
            return None
        try:
            pmap = self.client.partition_map(self.data.name)
        except Exception:  # noqa: BLE001 - routing is an optimization only
            return None
        return pmap.primary_of_key(java_string_hash(key))

    def _get_block(self, key: str) -> memoryview | None:
        """The bytes of one data block (a view over the response), None when absent."""
        cache_id = self.data.cache_id
        body = self.client.request(lambda rid: requests.cache_get(rid, cache_id, key), Op.CACHE_GET,
                                   node_id=self.block_node(key))
        return self._block_of(key, body)

    def _block_of(self, key: str, body: memoryview) -> memoryview | None:
        block = responses.decode_byte_array_view(body, f"data block {key} of cache {self.data.name!r}")
        if block is not None:
            self.stats["blocks_read"] += 1
        return block

    def _put_frame(self, buffer: bytearray, key: str, length: int) -> memoryview:
        """A CACHE_PUT request frame built in place in front of a block buffer.

        ``buffer`` holds the block at ``[FRAME_ROOM, FRAME_ROOM + length)``; the
        header is written just before it, so the block is never copied.
        """
        start = requests.cache_put_bytes_head_into(buffer, FRAME_ROOM, self.data.cache_id, key, length)
        return memoryview(buffer)[start:FRAME_ROOM + length]

    def _put_block(self, buffer: bytearray, key: str, length: int) -> None:
        encode = reusable_frame(self._put_frame(buffer, key, length))
        # idempotent: a retry writes the same bytes
        self.client.request(encode, Op.CACHE_PUT, node_id=self.block_node(key))
        self.stats["blocks_written"] += 1

    def send_block_from(self, key: str, block: memoryview) -> Callable[[], None]:
        """Send a CACHE_PUT of ``block`` (memory the caller does not own) straight from it.

        The primitive through which a writer stores every whole block it takes
        from the caller's memory (:meth:`~.writer.FileWriter.write`); tests wrap
        it on a store instance to observe those puts or to inject a lost one.

        The frame's header is sent followed by ``block`` itself (no copy into a
        block buffer); every byte is on the socket when this returns, so the
        caller may release ``block`` at once.  A connection that fails while
        sending is dropped and the put sent once more to another node (the
        block is still at hand).  Returns a function that waits for the
        acknowledgement (call it from any thread); a connection lost after the
        send fails it -- the block is gone by then, it cannot be sent again.
        """
        head = bytearray(FRAME_ROOM)
        start = requests.cache_put_bytes_head_into(head, FRAME_ROOM, self.data.cache_id, key, len(block))
        encode = reusable_frame(memoryview(head)[start:])

        client = self.client
        conn = client.connection_for_node(self.block_node(key))
        try:
            rid = conn.send_parts(encode, block)
        except IgniteConnectionError:
            client.drop_connection(conn)
            conn = client.default_connection
            rid = conn.send_parts(encode, block)

        def acknowledged() -> None:
            try:
                conn.receive(rid, Op.CACHE_PUT)
            except IgniteConnectionError:
                client.drop_connection(conn)
                raise
            self.stats["blocks_written"] += 1

        return acknowledged

    def _put_block_and_record(self, buffer: bytearray, key: str, length: int, record_key: str,
                              record: str) -> None:
        """Store a meta record and a block with one round trip (both requests sent, then
        both answers read); falls back to two plain requests if the connection fails."""
        encode_block = reusable_frame(self._put_frame(buffer, key, length))
        meta_id = self.meta.cache_id

        conn = self.client.connection_for_node(self.block_node(key))
        try:
            first = conn.send(lambda rid: requests.cache_put(rid, meta_id, record_key, record))
            second = conn.send(encode_block)
            conn.receive(first, Op.CACHE_PUT)
            conn.receive(second, Op.CACHE_PUT)
        except IgniteConnectionError:
            self.client.drop_connection(conn)
            self.meta.put(record_key, record)
            self.client.request(encode_block, Op.CACHE_PUT)
        self.stats["blocks_written"] += 1

    def _delete_blocks(self, ranges: Iterable[Range]) -> None:
        keys = [block_key(cid, i) for cid, first, n in ranges for i in range(first, first + n)]
        for i in range(0, len(keys), REMOVE_BATCH):
            self.data.remove_keys(keys[i:i + REMOVE_BATCH])
        self.stats["blocks_deleted"] += len(keys)
