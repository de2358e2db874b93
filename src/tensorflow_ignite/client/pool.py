"""One :class:`~.client.IgniteClient` per :class:`~.options.ConnectionOptions` in a process.

Datasets, writes and ``ignite://`` stores that reach the same cluster the same
way share the client -- and so one connection per node -- however many of
them a program builds; a dataset rebuilt from its description in the process
that built it finds its client here.  A shared client reconnects by itself
when a node goes away; :func:`close_shared_clients` closes them all (at exit
too), after which the next use connects again.

The pool is fork-safe: a forked child never uses its parent's clients (their
sockets are the parent's, mid-conversation); its first use of any options
connects afresh, and what the child inherited is dropped without being closed
(closing would not touch the parent's connections, but a TLS close could).
Modules that keep objects built on pooled clients (``ignite://``'s stores)
register with :func:`at_fork_in_child` to drop them too.  Dialling -- which may
take seconds -- happens outside the pool's lock: one thread dials per options,
the others wait for it, and users of other options are not held up.
"""

from __future__ import annotations

import atexit
import os
import threading
from collections.abc import Callable

from .client import IgniteClient
from .options import ConnectionOptions

__all__ = ["shared_client", "pooled_options", "close_shared_clients", "at_fork_in_child"]

_POOL: dict[ConnectionOptions, IgniteClient] = {}
#: Options being dialled now -> set when that attempt has ended (either way).
_DIALLING: dict[ConnectionOptions, threading.Event] = {}
_LOCK = threading.Lock()
_FORK_HOOKS: list[Callable[[], None]] = []


def shared_client(options: ConnectionOptions) -> IgniteClient:
    """The client shared by every user of ``options`` in this process (opened on first use)."""
    while True:
        with _LOCK:
            client = _POOL.get(options)
            if client is not None and not client.closed:
                return client
            pending = _DIALLING.get(options)
            if pending is None:
                done = _DIALLING[options] = threading.Event()
        if pending is not None:
            pending.wait()  # another thread is dialling these options: use its client (or try again)
            continue
        try:
            client = options.open()
        finally:
            with _LOCK:
                if _DIALLING.get(options) is done:
                    del _DIALLING[options]
            done.set()
        with _LOCK:
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


def at_fork_in_child(forget: Callable[[], None]) -> None:
    """Call ``forget()`` in every forked child, after the pool dropped its parent's clients:
    for caches of objects built on pooled clients.  It must not close anything."""
    _FORK_HOOKS.append(forget)


def _before_fork() -> None:
    _LOCK.acquire()  # the child gets the pool in a consistent state (never mid-update)


def _after_fork_in_parent() -> None:
    _LOCK.release()


def _after_fork_in_child() -> None:
    global _LOCK
    _LOCK = threading.Lock()  # the parent's one is held (by _before_fork, maybe by other threads)
    _POOL.clear()
    _DIALLING.clear()  # nobody dials in the child (only the forking thread exists there)
    for forget in list(_FORK_HOOKS):
        forget()


os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)
atexit.register(close_shared_clients)
