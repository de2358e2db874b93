"""``Closeable``: what ``with`` closes -- clients, connections, cursors, file readers.

Every object of the package that holds something open (sockets, server cursors, a job
client's connection, a file's read-ahead) gives it back in ``close()`` and is closed at the
end of a ``with`` block; this base class is that rule, written once.
"""

from __future__ import annotations

from typing import Self

__all__ = ["Closeable"]


class Closeable:
    """A ``with`` block over it closes it at the end (:meth:`close`, the subclass's)."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
