"""``Transaction``: an explicit Ignite 3 transaction (TX_BEGIN .. TX_COMMIT / TX_ROLLBACK).

    with client.transaction() as tx:
        row = view.get({"KEY": "a"}, tx=tx)
        view.put({"KEY": "a", "VAL": row["VAL"] + 1}, tx=tx)

The block commits when it ends normally and rolls back when it raises.  What
isolation this gives is Ignite 3's, not Ignite 2's: a read-write transaction
takes locks as it reads and writes (pessimistic, serializable) under Ignite's
wait-die policy: a younger transaction asking for a lock an older one holds
fails at once with a
:class:`~tensorflow_ignite.errors.Ignite3TransactionConflictError` (the node
has rolled it back; running the whole block again may succeed), an older one
waits for the younger to finish -- so one thread must not keep two open
transactions on the same rows.  A read-only transaction reads a snapshot (at
a time no older than the client's observable timestamp) and takes no locks.

The transaction belongs to the connection it was begun on: its operations go
over that connection, and losing the connection rolls it back on the node.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ..errors import ClientError, Ignite3ServerError, IgniteConnectionError
from .connection import Ignite3Connection
from .protocol import tx as txp
from .protocol.codes import ClientOp

if TYPE_CHECKING:
    from .client import Ignite3Client

__all__ = ["Transaction", "TransactionClosedError"]


class TransactionClosedError(ClientError):
    """The transaction was already committed or rolled back: begin a new one."""


class Transaction:
    """An open Ignite 3 transaction; commit or roll it back once (a context manager does it)."""

    def __init__(self, client: "Ignite3Client", *, read_only: bool = False, timeout: float | None = None) -> None:
        self.read_only = bool(read_only)
        timeout_ms = 0 if timeout is None else round(timeout * 1000)
        conn = client.connection()
        body = txp.begin_request(self.read_only, timeout_ms, conn.observable_timestamp)
        self.resource_id = txp.parse_begin(conn.call(ClientOp.TX_BEGIN, body, what="beginning a transaction"))
        #: The connection the transaction lives on (its requests go over it).
        self.connection: Ignite3Connection = conn
        self._lock = threading.Lock()
        self._state = "open"

    @property
    def state(self) -> str:
        """``open``, ``committed`` or ``rolled back``."""
        return self._state

    def check_open(self) -> int:
        """The resource id to send with an operation of this transaction (raises when it is finished)."""
        if self._state != "open":
            raise TransactionClosedError(
                f"the Ignite 3 transaction is {self._state}; begin a new one (Ignite3Client.transaction())"
            )
        return self.resource_id

    def _finish(self, op: ClientOp, state: str) -> None:
        with self._lock:
            self.check_open()
            self._state = state  # whatever the answer: the node forgets the transaction either way
            self.connection.call(
                op,
                txp.finish_request(self.resource_id),
                what=f"{'committing' if op is ClientOp.TX_COMMIT else 'rolling back'} a transaction",
            )

    def commit(self) -> None:
        """Commit; a failure raises (the transaction is then rolled back on the node)."""
        self._finish(ClientOp.TX_COMMIT, "committed")

    def rollback(self) -> None:
        """Roll back (nothing the transaction wrote becomes visible)."""
        self._finish(ClientOp.TX_ROLLBACK, "rolled back")

    def __enter__(self) -> "Transaction":
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if self._state != "open":
            return
        if exc_type is None:
            self.commit()
            return
        try:
            self.rollback()
        except (Ignite3ServerError, IgniteConnectionError):
            pass  # the block's own error says more; the node rolls back a lost connection's transactions anyway

    def __repr__(self) -> str:
        kind = "read-only" if self.read_only else "read-write"
        return f"Transaction({kind}, {self._state}, on {self.connection.address})"
