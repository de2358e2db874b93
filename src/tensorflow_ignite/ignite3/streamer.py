"""Rows into an Ignite 3 table through the streamer op, batched per partition and sent to its primary.

What Ignite 3's Java ``DataStreamer`` does, for columns of data: the table's
id (TABLE_GET) and latest schema (SCHEMAS_GET), the partition count and each
partition's primary node (PARTITION_ASSIGNMENT_GET) -- :func:`.routes.table_route`,
the stack's one source of these; each row encoded as a
binary tuple of the table's columns and hashed on its colocation columns
(:mod:`.protocol.rows`, :mod:`.protocol.colocation`); rows grouped by
partition into batches of ``batch_rows``; each batch one STREAMER_BATCH_SEND,
which upserts it (a key written again is replaced).

A batch goes over a connection to its partition's primary node when this
client has one -- it dials every endpoint of its options and learns each
node's name at the handshake -- and over any connection otherwise (the node
forwards it; the routing saves a hop, it is not needed for correctness).
``parallel`` connections per node send batches concurrently (encoding the next
rows overlaps the sends).  A batch whose connection is lost is sent again over
another one (an upsert can be repeated); a server error stops the write with a
:class:`~tensorflow_ignite.errors.WriteError` counting the rows acknowledged.
"""

from __future__ import annotations

import queue
from collections import defaultdict
from collections.abc import Mapping
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait

import numpy as np

from ..client.client import parse_addresses
from ..errors import ConfigurationError, IgniteConnectionError, TableNotFoundError, WriteError
from .client import Ignite3Client
from .connection import Ignite3Connection
from .protocol import table as tp
from .protocol.codes import ClientOp
from .protocol.colocation import partitions_of
from .protocol.rows import encode_rows
from .routes import table_route

__all__ = ["stream"]

#: Rows encoded at a time (bounds the memory of encoded rows).
CHUNK_ROWS = 65_536


class _Pools:
    """Connections by node name (each a queue a sender takes one from), opened for one write."""

    def __init__(self, client: Ignite3Client, parallel: int) -> None:
        self.default = client.connection()
        self.owned: list[Ignite3Connection] = []
        self.by_node: dict[str, queue.Queue[Ignite3Connection]] = {}
        names: dict[str, tuple[str, int]] = {}
        for host, port in parse_addresses(client.options.endpoints):
            try:
                conn = Ignite3Connection(client.options, host, port)
            except IgniteConnectionError:
                continue  # a node that does not answer: its partitions go through the others
            name = conn.handshake.node_name
            if name in names:
                conn.close()
                continue
            names[name] = (host, port)
            self._add(name, conn)
        for name, (host, port) in names.items():
            for _ in range(parallel - 1):
                try:
                    self._add(name, Ignite3Connection(client.options, host, port))
                except IgniteConnectionError:
                    break
        if not self.by_node:
            self._add(self.default.handshake.node_name, None)

    def _add(self, name: str, conn: Ignite3Connection | None) -> None:
        if conn is not None:
            self.owned.append(conn)
        self.by_node.setdefault(name, queue.Queue()).put(conn if conn is not None else self.default)

    @property
    def size(self) -> int:
        return sum(q.qsize() for q in self.by_node.values())

    def pool_for(self, node: str | None) -> queue.Queue[Ignite3Connection]:
        pool = self.by_node.get(node) if node is not None else None
        return pool if pool is not None else max(self.by_node.values(), key=lambda q: q.qsize())

    def others(self, pool: queue.Queue[Ignite3Connection]) -> list[queue.Queue[Ignite3Connection]]:
        return [q for q in self.by_node.values() if q is not pool]

    def close(self) -> None:
        for c in self.owned:
            c.close()


def _send(pools: _Pools, pool: queue.Queue[Ignite3Connection], body: bytes, what: str, rows: int) -> int:
    last: Exception | None = None
    for q in [pool] + pools.others(pool):
        conn = q.get()
        try:
            if conn.closed:
                continue
            conn.call(ClientOp.STREAMER_BATCH_SEND, body, what=what)
            return rows
        except IgniteConnectionError as exc:
            last = exc  # this connection is gone: the batch (an upsert) goes again over another node's
        finally:
            q.put(conn)
    raise last if last is not None else IgniteConnectionError(f"{what}: every connection to the cluster is closed")


class _Batches:
    """The batches sent so far: the rows acknowledged, the first failure."""

    def __init__(self) -> None:
        self.written = 0

    def settle(self, futures: list[Future[int]]) -> None:
        """Wait for ``futures``; on the first failure cancel what has not started and raise it."""
        done, _ = wait(futures, return_when=FIRST_EXCEPTION)
        failed = [f for f in done if f.exception() is not None]
        if failed:
            for f in futures:
                f.cancel()
            wait(futures)
        self.written += sum(f.result() for f in futures if not f.cancelled() and f.exception() is None)
        if failed:
            raise failed[0].exception()  # type: ignore[misc]  # failed holds only futures whose exception() is not None


def stream(
    client: Ignite3Client, table: str, data: Mapping[str, np.ndarray], *, batch_rows: int = 1000, parallel: int = 2
) -> int:
    """Upsert the rows of ``data`` (column name -> 1-D array) into ``table``; the rows written."""
    if parallel < 1:
        raise ConfigurationError(f"parallel={parallel}: it must be at least 1")
    n = len(next(iter(data.values())))
    route = table_route(client.connection(), table)
    pools = _Pools(client, parallel)
    batches = _Batches()
    try:
        with ThreadPoolExecutor(pools.size, thread_name_prefix="ignite3-streamer") as executor:
            previous: list[Future[int]] = []
            for lo in range(0, n, CHUNK_ROWS):
                hi = min(n, lo + CHUNK_ROWS)
                enc = encode_rows(route.schema, {k: v[lo:hi] for k, v in data.items()}, route.name)
                parts = partitions_of(enc.hashes, route.assignment.partitions)
                by_part: dict[int, list[int]] = defaultdict(list)
                for i, p in enumerate(parts.tolist()):
                    by_part[p].append(i)
                current: list[Future[int]] = []
                for p, idx in by_part.items():
                    pool = pools.pool_for(route.assignment.primaries[p])
                    for b in range(0, len(idx), batch_rows):
                        chunk = idx[b : b + batch_rows]
                        body = tp.streamer_batch(
                            route.table_id, p, route.schema.version, [enc.rows[i] for i in chunk], enc.no_value
                        )
                        current.append(
                            executor.submit(
                                _send,
                                pools,
                                pool,
                                body,
                                f"streaming {len(chunk)} rows into {route.name} partition {p}",
                                len(chunk),
                            )
                        )
                # One chunk in flight while the next is encoded; what is queued stays bounded.
                try:
                    batches.settle(previous)
                except BaseException:
                    for f in current:
                        f.cancel()
                    raise
                previous = current
            batches.settle(previous)
    except (ConfigurationError, TableNotFoundError):
        raise
    except Exception as exc:
        raise WriteError(
            f"writing {route.name} failed after {batches.written} rows: {exc}",
            cache_name=table,
            rows_written=batches.written,
        ) from exc
    finally:
        nodes = {name: q.queue[0] for name, q in pools.by_node.items() if q.queue}
        pools.close()
        # The caller's client reads what was written (Ignite 3 reads at the client's
        # observable timestamp; the streamer's answers do not advance it): the nodes'
        # clocks now, from fresh handshakes, are past every acknowledged batch.
        latest = 0
        for conn in nodes.values():
            try:
                with Ignite3Connection(client.options, conn.host, conn.port) as fresh:
                    latest = max(latest, fresh.handshake.observable_timestamp)
            except IgniteConnectionError:
                continue
        own = client.connection()
        own.observable_timestamp = max(own.observable_timestamp, latest)
    return batches.written
