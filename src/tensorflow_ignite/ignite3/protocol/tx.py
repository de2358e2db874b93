"""Explicit transactions in Ignite 3's protocol: TX_BEGIN, TX_COMMIT, TX_ROLLBACK.

Facts of Ignite 3.1.0's ``client-handler`` (``ClientTransactionBeginRequest``,
``ClientTransactionCommitRequest``, ``ClientTransactionRollbackRequest``) and
the Java client's ``ClientTransactions``:

* TX_BEGIN: read-only (boolean), timeout in milliseconds (0: the cluster's
  configured default), the client's observable timestamp (read by the node for
  a read-only transaction only: it reads at a time no older than that) -> the
  transaction's resource id, which later requests name as their transaction.
  The transaction lives in that connection's resources: every request of it
  goes over the same connection, and closing the connection rolls it back.
* TX_COMMIT / TX_ROLLBACK: the resource id -> nothing.  (A client that
  negotiated the direct-mapping feature appends its own enlistments; this one
  does not propose it.)
"""

from __future__ import annotations

from .msgpack_io import Reader, Writer

__all__ = ["begin_request", "parse_begin", "finish_request"]


def begin_request(read_only: bool, timeout_ms: int, observable_timestamp: int) -> bytes:
    """TX_BEGIN's body."""
    if timeout_ms < 0:
        raise ValueError(f"a transaction timeout of {timeout_ms} ms; give 0 (the cluster's default) or more")
    return Writer().values(bool(read_only), int(timeout_ms), int(observable_timestamp)).bytes()


def parse_begin(r: Reader) -> int:
    """The new transaction's resource id."""
    return r.int()


def finish_request(resource_id: int) -> bytes:
    """TX_COMMIT's or TX_ROLLBACK's body."""
    return Writer().value(int(resource_id)).bytes()
