"""The file store's tables on Ignite 2: two caches, the thin client's transactions, zero-copy block puts.

The meta cache is TRANSACTIONAL (optimistic serializable transactions: no
locks, a commit fails if a key read changed), the data cache ATOMIC.  A
block is one ``byte[]`` value under ``"<content id>:<index>"``; requests go
to the block's primary node (``String.hashCode()`` through the partition
map).  Puts are framed in place in front of the block (no copy), or sent
straight from the caller's memory; gets of a large read are received
straight into the caller's buffer.
"""

from __future__ import annotations

import collections
import dataclasses
import struct
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ...capacity import CapacityGuard
from ...client import Cache, IgniteClient, TransactionConflictError
from ...client.connection import Connection
from ...client.transactions import Transaction
from ...errors import CacheNotFoundError, ConfigurationError, IgniteConnectionError, ProtocolError, ServerError
from ...protocol import requests, responses
from ...protocol.cache_config import CacheConfiguration
from ...protocol.codes import AtomicityMode, CacheMode, Op, PartitionLossPolicy, TypeCode, WriteSynchronizationMode
from ...protocol.framing import reusable_frame
from ...protocol.hashing import java_string_hash
from .common import DIRECT_AHEAD, FRAME_ROOM

__all__ = ["Ignite2Tables", "cache_configurations"]

_I32 = struct.Struct("<i")


def cache_configurations(prefix: str, backups: int, region: str = "") -> tuple[CacheConfiguration, CacheConfiguration]:
    """The meta and data caches: partitioned, ``backups`` copies, FULL_SYNC (a write
    returns once primary and backups have it, so losing a node loses no
    acknowledged write), READ_WRITE_SAFE on partition loss, in data region
    ``region`` (``""``: the nodes' default region).  Caches that already exist
    keep the configuration they were created with.  The meta cache is transactional,
    the data cache atomic; nothing else tells them apart."""
    meta = CacheConfiguration(
        name=f"{prefix}_meta",
        cache_mode=CacheMode.PARTITIONED,
        atomicity_mode=AtomicityMode.TRANSACTIONAL,
        backups=backups,
        write_synchronization_mode=WriteSynchronizationMode.FULL_SYNC,
        # A partition whose every copy is gone makes reads fail rather than
        # return "no such block/entry" (a file silently missing or torn).
        partition_loss_policy=PartitionLossPolicy.READ_WRITE_SAFE,
        data_region_name=region or None,
    )
    data = dataclasses.replace(meta, name=f"{prefix}_data", atomicity_mode=AtomicityMode.ATOMIC)
    return meta, data


class _Tx:
    """An Ignite 2 thin-client transaction on the meta cache (a :class:`~.backend.MetaTransaction`)."""

    def __init__(self, client: IgniteClient, meta: Cache, tx: Transaction) -> None:
        self.client, self.meta, self.tx = client, meta, tx

    def get_all(self, keys: Sequence[str]) -> dict[str, Any]:
        return self.tx.get_all(self.meta, keys)

    def put_all(self, entries: Sequence[tuple[str, str]]) -> None:
        self.tx.put_all(self.meta, entries)

    def remove_all(self, keys: Sequence[str]) -> None:
        self.tx.remove_keys(self.meta, keys)

    def commit(self) -> None:
        self.tx.commit()

    def rollback(self) -> None:
        self.tx.rollback()

    def abandon(self) -> None:
        self.client.drop_connection(self.tx.connection)


class Ignite2Tables:
    """The store's two caches on an Ignite 2 cluster (a :class:`~.backend.StoreTables`)."""

    generation = 2
    #: Optimistic transactions fail only at the commit: racers are short, pauses too.
    max_backoff = 0.05
    recovery_wait = 0.0

    def __init__(
        self, client: IgniteClient, prefix: str, backups: int, stats: collections.Counter[str], *, storage: str = ""
    ) -> None:
        self.client = client
        self.prefix = prefix
        self.backups = backups
        self.stats = stats
        #: The data region named by the ``storage`` setting ("": the nodes' default).
        self.region = storage
        self.meta_name, self.data_name = f"{prefix}_meta", f"{prefix}_data"
        self.ensure_tables()
        self._capacity = CapacityGuard(client, self.data.name, copies=1 + backups, what="ignite:// write")

    def ensure_tables(self) -> None:
        meta, data = cache_configurations(self.prefix, self.backups, self.region)
        try:
            self.meta: Cache = self.client.get_or_create_cache(meta)
            self.data: Cache = self.client.get_or_create_cache(data)
        except ServerError as exc:
            if not self.region:
                raise
            raise ConfigurationError(
                f"ignite:// could not create caches {meta.name}/{data.name} in data region {self.region!r} "
                f"(storage={self.region!r}): {exc}. Name a data region of the nodes' configuration "
                "(DataStorageConfiguration.dataRegionConfigurations), or leave storage unset for the "
                "default region"
            ) from exc
        if self.region:
            for cache in (self.meta, self.data):
                have = cache.configuration().data_region_name or "default"
                if have != self.region:
                    raise ConfigurationError(
                        f"ignite:// cache {cache.name} exists in data region {have!r}, not {self.region!r} as "
                        f"storage={self.region!r} asks; a cache cannot move: use another cache_prefix, or "
                        "destroy the store's caches (their files go with them)"
                    )

    def describe(self) -> str:
        return f"caches {self.meta_name}/_data"

    def capacity(self) -> CapacityGuard:
        return self._capacity

    def retryable(self, exc: BaseException) -> bool:
        return TransactionConflictError.retryable(exc)

    def missing_tables(self, exc: BaseException) -> bool:
        return isinstance(exc, CacheNotFoundError)

    def recovering(self, exc: BaseException) -> bool:
        return False  # a lost node's partitions move with the topology: the client re-routes, no error waits

    def transaction(self, *, label: str, read_only: bool = False) -> _Tx:
        # Ignite 2: the same optimistic serializable transaction either way (a read-only one
        # sees the keys it reads at one instant and writes nothing).
        return _Tx(self.client, self.meta, self.client.transaction(timeout=30.0, label=label))

    def scan_meta(self, prefix: str) -> Iterator[tuple[str, str]]:
        for k, v in self.meta.scan(page_size=1024):
            if isinstance(k, str) and k.startswith(prefix):
                yield k, v

    def close(self) -> None:
        pass  # the client is the store's (or the process's shared one)

    # ------------------------------------------------------------------ blocks
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

    def node_name(self, node: Any) -> str:
        if node is None:
            return "the cluster (no partition map: any node)"
        try:
            addresses = self.client.node_endpoints().get(node) or []
        except Exception:  # noqa: BLE001 - only for the message
            addresses = []
        where = ", ".join(f"{h}:{p}" for h, p in addresses[:2])
        return f"node {node}" + (f" ({where})" if where else "")

    def get_block(self, key: str) -> memoryview | None:
        cache_id = self.data.cache_id
        body = self.client.request(
            lambda rid: requests.cache_get(rid, cache_id, key), Op.CACHE_GET, node_id=self.block_node(key)
        )
        return self.block_of(key, body)

    def block_of(self, key: str, body: memoryview) -> memoryview | None:
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
        return memoryview(buffer)[start : FRAME_ROOM + length]

    def put_block(self, buffer: bytearray, key: str, length: int) -> None:
        encode = reusable_frame(self._put_frame(buffer, key, length))
        # idempotent: a retry writes the same bytes
        self.client.request(encode, Op.CACHE_PUT, node_id=self.block_node(key))
        self.stats["blocks_written"] += 1

    def send_block_from(self, key: str, block: memoryview) -> Callable[[], None]:
        """The frame's header is sent followed by ``block`` itself (no copy into a
        block buffer); every byte is on the socket when this returns.  A connection
        that fails while sending is dropped and the put sent once more to another
        node (the block is still at hand).  The returned function waits for the
        acknowledgement (from any thread); a connection lost after the send fails
        it -- the block is gone by then, it cannot be sent again."""
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

    def put_block_and_record(self, buffer: bytearray, key: str, length: int, record_key: str, record: str) -> None:
        """Both requests sent, then both answers read; two plain requests if the connection fails."""
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

    def put_blocks(self, items: Sequence[tuple[str, bytes]]) -> None:
        self.data.put_all(items)

    def contains_block(self, key: str) -> bool:
        return self.data.contains_key(key)

    def remove_blocks(self, keys: Sequence[str]) -> None:
        self.data.remove_keys(keys)

    def get_blocks_into(self, keys: Sequence[str], views: Sequence[memoryview]) -> list[int]:
        """Up to :data:`DIRECT_AHEAD` gets are in flight; each answer is read from the
        socket into its view (:meth:`Connection.receive_into`), by whichever thread
        receives on that connection.  A connection that fails (its node died, or fell
        silent for ``idle_timeout``: its host cut off) is dropped and the gets that
        were on it are fetched again the ordinary way (another node, with its
        retry); the gets in flight to the other nodes are still received -- their
        connections are healthy and stay open."""
        todo = collections.deque(range(len(keys)))
        inflight: collections.deque[tuple[int, Connection, int]] = collections.deque()
        lost: list[int] = []  # blocks whose connection failed: fetched again below
        short: list[int] = []
        cache_id = self.data.cache_id
        client = self.client

        def abandon(conn: Connection) -> None:
            """Drop a failed connection; its gets in flight join ``lost``, the others stay."""
            client.drop_connection(conn)
            kept = [e for e in inflight if e[1] is not conn]
            for pos, c, rid in inflight:
                if c is conn:
                    conn.forget_into(rid)
                    lost.append(pos)
            inflight.clear()
            inflight.extend(kept)

        def send(pos: int) -> None:
            key = keys[pos]
            conn = client.connection_for_node(self.block_node(key))
            into = views[pos]

            def encode(rid: int) -> bytes:
                frame = requests.cache_get(rid, cache_id, key)
                # Registered before the request leaves: no thread can read the answer first.
                conn.expect_into(rid, into, 5)
                inflight.append((pos, conn, rid))
                return frame

            try:
                conn.send(encode)
            except IgniteConnectionError:
                if not any(p == pos for p, _, _ in inflight):
                    lost.append(pos)
                abandon(conn)

        def take(pos: int, data: memoryview | None) -> None:
            into = views[pos]
            if data is None or len(data) < len(into):
                short.append(pos)
            else:
                into[:] = data[: len(into)]  # a block being rewritten may be longer

        try:
            while todo or inflight:
                while todo and len(inflight) < DIRECT_AHEAD:
                    send(todo.popleft())
                if not inflight:
                    continue
                pos, conn, rid = inflight[0]
                try:
                    body, filled = conn.receive_into(rid, Op.CACHE_GET)
                except IgniteConnectionError:
                    abandon(conn)
                    continue
                inflight.popleft()
                if filled:
                    (n,) = _I32.unpack_from(body, 1)
                    if body[0] != TypeCode.BYTE_ARR or n != len(views[pos]):
                        raise ProtocolError(f"data block {keys[pos]}: unexpected answer header")
                    self.stats["blocks_read"] += 1
                else:
                    take(pos, self.block_of(keys[pos], body))
        finally:
            for _, conn, rid in inflight:
                conn.forget_into(rid)
        for pos in sorted(lost):  # their connection failed: the ordinary way, another node, with its retry
            take(pos, self.get_block(keys[pos]))
        return sorted(short)
