"""Connections to the nodes of an Ignite 3 cluster, one per node, named at their handshakes.

Ignite 3's client protocol answers a request on the node it was sent to (or
forwards it); routing a request to its partition's primary needs a connection
to that node, and only the handshake says which node an endpoint is (two
endpoints may be one node: a name and an address).  :func:`dial_nodes` is the
one place that dials the endpoints of the options and keeps one connection (or
client) per node: the streamer's connections per primary
(:mod:`.streamer`), a client's routed connections
(:meth:`.client.Ignite3Client.node_connection`) and a partition-aware read's
client per node (:mod:`.partitioned`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Protocol, TypeVar

from ..errors import IgniteConnectionError

__all__ = ["dial_nodes"]


class _Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=_Closable)


def dial_nodes(
    endpoints: Iterable[tuple[str, int]],
    open_one: Callable[[str, int], C],
    node_of: Callable[[C], str],
    *,
    held: Collection[str] = (),
) -> tuple[dict[str, C], list[IgniteConnectionError]]:
    """Open ``open_one(host, port)`` for each endpoint and name it ``node_of(it)`` (the name its node
    gave at the handshake); keep the first of each node not in ``held`` and close the others.

    Returns the kept ones by node name and the errors of the endpoints that did not answer (in
    order; an :class:`~tensorflow_ignite.errors.AuthenticationError` among them is the caller's
    to raise).
    """
    nodes: dict[str, C] = {}
    errors: list[IgniteConnectionError] = []
    for host, port in endpoints:
        try:
            one = open_one(host, port)
        except IgniteConnectionError as exc:
            errors.append(exc)
            continue
        try:
            name = node_of(one)
        except IgniteConnectionError as exc:
            one.close()
            errors.append(exc)
            continue
        if name in held or name in nodes:
            one.close()
        else:
            nodes[name] = one
    return nodes, errors
