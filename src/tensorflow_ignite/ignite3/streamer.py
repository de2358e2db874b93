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

from collections import defaultdict
from collections.abc import Mapping
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait

import numpy as np

from ..client.client import parse_addresses
from ..client.lease import LeasePool
from ..errors import ConfigurationError, IgniteConnectionError, TableNotFoundError, WriteError
from .client import Ignite3Client
from .connection import Ignite3Connection
from .nodes import dial_nodes
from .protocol import table as tp
from .protocol.codes import ClientOp
from .protocol.colocation import partitions_of
from .protocol.rows import encode_rows
from .routes import table_route

__all__ = ["stream"]

#: Rows encoded at a time (bounds the memory of encoded rows).
CHUNK_ROWS = 65_536


class _Pools:
    """The write's connections, lent per node (:class:`~tensorflow_ignite.client.lease.LeasePool`):
    one to each node of the options' endpoints (:func:`.nodes.dial_nodes`) and ``parallel - 1`` more."""

    def __init__(self, client: Ignite3Client, parallel: int) -> None:
        self.default = client.connection()
        self.lease: LeasePool[str, Ignite3Connection] = LeasePool()
        self.owned: list[Ignite3Connection] = []
        nodes, _ = dial_nodes(
            parse_addresses(client.options.endpoints),
            lambda host, port: Ignite3Connection(client.options, host, port),
            lambda conn: conn.handshake.node_name,
        )
        for name, first in nodes.items():
            self._add(name, first)
            for _ in range(parallel - 1):
                try:
                    self._add(name, Ignite3Connection(client.options, first.host, first.port))
                except IgniteConnectionError:
                    break
        if not self.owned:  # no endpoint answered a second time: the client's own connection carries it all
            self.lease.add(self.default.handshake.node_name, self.default)

    def _add(self, name: str, conn: Ignite3Connection) -> None:
        self.owned.append(conn)
        self.lease.add(name, conn)

    @property
    def size(self) -> int:
        return len(self.lease)

    def key_for(self, node: str | None) -> str:
        """``node`` when the write has connections to it, else the node with the most free now."""
        keys = self.lease.keys()
        return node if node in keys else max(keys, key=self.lease.free)

    def others(self, key: str) -> list[str]:
        return [k for k in self.lease.keys() if k != key]

    def close(self) -> None:
        for c in self.owned:
            c.close()


def _send(pools: _Pools, key: str, body: bytes, what: str, rows: int) -> int:
    last: Exception | None = None
    for k in [key] + pools.others(key):
        with pools.lease.lent(k) as conn:
            if conn.closed:
                continue
            try:
                conn.call(ClientOp.STREAMER_BATCH_SEND, body, what=what)
                return rows
            except IgniteConnectionError as exc:
                last = exc  # this connection is gone: the batch (an upsert) goes again over another node's
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
                    key = pools.key_for(route.assignment.primaries[p])
                    for b in range(0, len(idx), batch_rows):
                        chunk = idx[b : b + batch_rows]
                        body = tp.streamer_batch(
                            route.table_id, p, route.schema.version, [enc.rows[i] for i in chunk], enc.no_value
                        )
                        current.append(
                            executor.submit(
                                _send,
                                pools,
                                key,
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
        nodes: dict[str, Ignite3Connection] = {}
        for conn in pools.lease.items():
            nodes.setdefault(conn.handshake.node_name, conn)
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
