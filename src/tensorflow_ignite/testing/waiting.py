"""Waiting for a cluster to get somewhere, for tests, the soak and benchmarks: never a fixed sleep.

:func:`wait_for` polls with backoff until a condition holds and fails naming
what it waited for; :func:`wait_rebalanced` waits until every live node is a
primary of a cache and every row has its backup copies -- the moment after
which killing one more node loses nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from ..local.cluster import LocalCluster

__all__ = ["wait_for", "wait_rebalanced"]

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], timeout: float, what: str, *, first_delay: float = 0.05) -> T:
    """Poll ``predicate`` (backing off to 0.5 s) until it returns something truthy, and return that.

    Raises ``AssertionError`` naming ``what`` after ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    delay = first_delay
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(delay)
        delay = min(delay * 1.5, 0.5)


def wait_rebalanced(
    cluster: "LocalCluster", caches: str | Sequence[str], rows: int | None = None, timeout: float = 180.0
) -> None:
    """Every live node of ``cluster`` is a primary of each cache, and every entry has its backup copy
    (none expected with a single node left); with ``rows``, each cache also holds exactly that many."""
    from ..client import IgniteClient
    from ..errors import IgniteError
    from ..protocol.codes import PeekMode

    names = [caches] if isinstance(caches, str) else list(caches)

    def settled() -> bool:
        live = len(cluster.addresses())
        try:
            with IgniteClient(cluster.addresses()) as client:
                for name in names:
                    pmap = client.partition_map(name, refresh=True)
                    c = client.cache(name)
                    primary = c.size([PeekMode.PRIMARY])
                    if len({n for n in pmap.nodes if n is not None}) != live:
                        return False
                    if rows is not None and primary != rows:
                        return False
                    if c.size([PeekMode.BACKUP]) != (primary if live > 1 else 0):
                        return False
            return True
        except IgniteError:
            return False

    wait_for(settled, timeout, f"{', '.join(map(repr, names))} to be rebalanced over {len(cluster.addresses())} nodes")
