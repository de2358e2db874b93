"""errors.lookup: server status codes to error classes, used for every failed response."""

from __future__ import annotations

import pytest

from tensorflow_ignite.client.transactions import TransactionConflictError
from tensorflow_ignite.errors import (
    CacheExistsError,
    CacheNotFoundError,
    ResourceNotFoundError,
    ServerError,
    TooManyCursorsError,
    TransactionNotFoundError,
    lookup,
)
from tensorflow_ignite.protocol.codes import ClientStatus, Op
from tensorflow_ignite.protocol.framing import server_error


@pytest.mark.parametrize(("status", "cls"), [
    (ClientStatus.CACHE_DOES_NOT_EXIST, CacheNotFoundError),
    (ClientStatus.CACHE_EXISTS, CacheExistsError),
    (ClientStatus.RESOURCE_DOES_NOT_EXIST, ResourceNotFoundError),
    (ClientStatus.TOO_MANY_CURSORS, TooManyCursorsError),
    (ClientStatus.TX_NOT_FOUND, TransactionNotFoundError),
    (ClientStatus.FAILED, ServerError),
    (ClientStatus.SECURITY_VIOLATION, ServerError),
    (12345, ServerError),  # a status of a newer server
])
def test_lookup(status: int, cls: type[ServerError]) -> None:
    assert lookup(status) is cls
    err = server_error(status, "the node's message", Op.CACHE_GET)
    assert type(err) is cls and err.status == status and err.op == Op.CACHE_GET
    assert "the node's message" in str(err)


def test_status_names_appear_in_messages() -> None:
    assert "(CACHE_EXISTS)" in str(server_error(ClientStatus.CACHE_EXISTS, "exists"))
    assert "(UNKNOWN)" in str(server_error(12345, None))


def test_a_transaction_the_server_dropped_is_retryable() -> None:
    assert TransactionConflictError.retryable(server_error(ClientStatus.TX_NOT_FOUND, "Transaction 7 not found"))
    assert not TransactionConflictError.retryable(server_error(ClientStatus.CACHE_EXISTS, "conflict in the name"))
