"""One :class:`~.client.IgniteClient` per :class:`~.options.ConnectionOptions` in a process.

Datasets, writes and ``ignite://`` stores that reach the same cluster the same
way share the client -- and so one connection per node -- however many of
them a program builds; a dataset rebuilt from its description in the process
that built it finds its client here.  A shared client reconnects by itself
when a node goes away; :func:`close_shared_clients` closes them all (at exit
too), after which the next use connects again.
"""

from __future__ import annotations

import atexit
import threading

from .client import IgniteClient
from .options import ConnectionOptions

__all__ = ["shared_client", "pooled_options", "close_shared_clients"]

_POOL: dict[ConnectionOptions, IgniteClient] = {}
_LOCK = threading.Lock()


def shared_client(options: ConnectionOptions) -> IgniteClient:
    """The client shared by every user of ``options`` in this process (opened on first use)."""
    with _LOCK:
        client = _POOL.get(options)
        if client is None or client.closed:
            client = options.open()
            _POOL[options] = client
        return client


def pooled_options() -> list[ConnectionOptions]:
    """The options of every shared client this process holds now."""
    with _LOCK:
        return [o for o, c in _POOL.items() if not c.closed]


def close_shared_clients() -> None:
    """Close every shared client (each reconnects on its next use)."""
    with _LOCK:
        clients = list(_POOL.values())
        _POOL.clear()
    for c in clients:
        c.close()


atexit.register(close_shared_clients)
