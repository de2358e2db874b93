"""What a client's connections have carried: a snapshot per open connection.

Routing is only visible from outside through where requests went, so tests,
benchmarks and the soak read it from here (``IgniteClient.stats()``) rather than
from the client's private tables: how many connections there are per node, and
the requests, request bytes and answer bytes each connection carried.
"""

from __future__ import annotations

import uuid as _uuid
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["ClientStats", "ConnectionStats"]


@dataclass(frozen=True)
class ConnectionStats:
    """Counters of one open connection; each starts at zero when the connection is opened.

    ``node_id`` is the node that answered the handshake (None for a node too
    old to say); ``requests`` and ``ops`` (requests per op code) count requests
    sent; ``bytes_sent`` their frames' bytes, ``bytes_received`` the answers'.
    """

    node_id: _uuid.UUID | None
    address: str
    requests: int
    bytes_sent: int
    bytes_received: int
    ops: Mapping[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ClientStats:
    """The open connections of one client at one moment (closed ones are not listed)."""

    connections: tuple[ConnectionStats, ...]

    def connections_per_node(self) -> dict[_uuid.UUID | None, int]:
        """Open connections per node id: 1 each when routing works, never more."""
        return dict(Counter(c.node_id for c in self.connections))

    def by_node(self) -> dict[_uuid.UUID | None, ConnectionStats]:
        """Each node's counters, summed over its open connections."""
        out: dict[_uuid.UUID | None, ConnectionStats] = {}
        for c in self.connections:
            prev = out.get(c.node_id)
            if prev is None:
                out[c.node_id] = c
                continue
            ops = Counter(prev.ops)
            ops.update(c.ops)
            out[c.node_id] = ConnectionStats(
                c.node_id,
                f"{prev.address},{c.address}",
                prev.requests + c.requests,
                prev.bytes_sent + c.bytes_sent,
                prev.bytes_received + c.bytes_received,
                dict(ops),
            )
        return out

    def requests(self, op: int) -> dict[_uuid.UUID | None, int]:
        """Requests of op code ``op`` per node (nodes that got none are left out)."""
        return {n: s.ops[op] for n, s in self.by_node().items() if s.ops.get(op)}
