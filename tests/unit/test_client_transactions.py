"""Which server errors mean "rolled back, safe to run the transaction again"."""

from __future__ import annotations

import pytest

from tensorflow_ignite.client.transactions import TransactionConflictError
from tensorflow_ignite.errors import ServerError
from tensorflow_ignite.protocol.codes import ClientStatus


@pytest.mark.parametrize("message", [
    "Cache transaction timed out: GridNearTxLocal[xid=...]",
    "Failed to prepare transaction, read/write conflict [key=...]",
    "class org.apache.ignite.transactions.TransactionOptimisticException: Failed to prepare",
    "Failed to acquire lock within provided timeout",
])
def test_conflicts_and_timeouts_are_retryable(message: str) -> None:
    assert TransactionConflictError.retryable(ServerError(message, status=ClientStatus.FAILED))


@pytest.mark.parametrize("exc", [
    ServerError("Cache does not exist", status=ClientStatus.CACHE_DOES_NOT_EXIST),
    ServerError("Failed to update keys: class cast", status=ClientStatus.FAILED),
    ValueError("not a server error"),
])
def test_other_errors_are_not(exc: BaseException) -> None:
    assert not TransactionConflictError.retryable(exc)
