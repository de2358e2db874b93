"""Things lent to one borrower at a time -- connections, clients -- grouped by node: :class:`LeasePool`.

A connection that carries one request at a time (Ignite 3's), or a client whose
connection a transaction holds, is used by one thread at a time.  A
:class:`LeasePool` keeps such items by key (a node's name, or ``None`` for "any
node"), lends a free one (:meth:`LeasePool.take`, waiting while all of a key's
are lent and no more may be made) and takes it back (:meth:`LeasePool.give`).
Items are added as they are dialled (:meth:`LeasePool.add`) or made on demand
by the pool's ``make`` up to ``limit`` per key.  The Ignite 3 streamer lends
its connections per primary node through it, and ``ignite://`` on Ignite 3 its
clients; it knows nothing of either generation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

__all__ = ["LeasePool"]

T = TypeVar("T")
_GONE = object()
K = TypeVar("K", bound=Hashable)


class LeasePool(Generic[K, T]):
    """Items by key, each lent to one borrower at a time; thread-safe.

    ``make(key)`` makes a new item when a key has none free and fewer than ``limit``
    (None: no new item is made; :meth:`take` then waits for one to be given back).
    """

    def __init__(self, make: Callable[[K], T] | None = None, *, limit: int = 1) -> None:
        self._make = make
        self.limit = limit
        self._free: dict[K, list[T]] = {}
        self._count: dict[K, int] = {}
        self._key_of: dict[int, K] = {}
        self._items: list[T] = []
        self._cond = threading.Condition()

    def add(self, key: K, item: T) -> None:
        """Keep ``item`` (free) under ``key``."""
        with self._cond:
            self._free.setdefault(key, []).append(item)
            self._count[key] = self._count.get(key, 0) + 1
            self._key_of[id(item)] = key
            self._items.append(item)
            self._cond.notify_all()

    def keys(self) -> list[K]:
        """Every key with an item."""
        with self._cond:
            return list(self._count)

    def __len__(self) -> int:
        with self._cond:
            return len(self._items)

    def items(self) -> list[T]:
        """Every item, lent or free."""
        with self._cond:
            return list(self._items)

    def free(self, key: K) -> int:
        """Items of ``key`` not lent now."""
        with self._cond:
            return len(self._free.get(key, ()))

    def take(self, key: K) -> T:
        """A free item of ``key``: made when there is none and the key may have more, else waited for.

        A key that has no item and no ``make`` raises :class:`KeyError`.
        """
        with self._cond:
            while True:
                free = self._free.get(key)
                if free:
                    return free.pop()
                if self._make is not None and self._count.get(key, 0) < self.limit:
                    self._count[key] = self._count.get(key, 0) + 1  # its place, while it is made
                    break
                if key not in self._count:
                    raise KeyError(key)
                self._cond.wait()
        try:
            item = self._make(key)
        except BaseException:
            with self._cond:
                self._count[key] -= 1
                self._cond.notify_all()
            raise
        with self._cond:
            self._key_of[id(item)] = key
            self._items.append(item)
        return item

    def give(self, item: T) -> None:
        """Take back a lent ``item`` (one the pool forgot meanwhile, :meth:`drain`, is left alone)."""
        with self._cond:
            key = self._key_of.get(id(item), _GONE)
            if key is not _GONE:
                self._free.setdefault(key, []).append(item)  # type: ignore[arg-type]  # a K: _GONE was ruled out
                self._cond.notify_all()

    @contextmanager
    def lent(self, key: K) -> Iterator[T]:
        """:meth:`take` for the block, :meth:`give` after it."""
        item = self.take(key)
        try:
            yield item
        finally:
            self.give(item)

    def drain(self) -> list[T]:
        """Forget every item and return them (to close); items lent now are not given back to the pool."""
        with self._cond:
            items, self._items = self._items, []
            self._free.clear()
            self._count.clear()
            self._key_of.clear()
        return items
