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


def test_the_status_map_is_generated_from_every_server_error_class() -> None:
    import tensorflow_ignite.errors as errors

    declared = [cls for cls in vars(errors).values()
                if isinstance(cls, type) and issubclass(cls, ServerError) and cls.status_name is not None]
    assert len(declared) == 5
    for cls in declared:
        assert lookup(ClientStatus[cls.status_name]) is cls  # every name is a real ClientStatus


def test_conflicts_reported_as_failed_are_told_apart_by_their_message() -> None:
    err = server_error(ClientStatus.FAILED, "Failed to acquire lock within provided timeout", Op.TX_END)
    assert type(err) is TransactionConflictError and TransactionConflictError.retryable(err)
    assert type(server_error(ClientStatus.FAILED, "Failed to parse query")) is ServerError


def test_the_public_exceptions_live_in_errors_and_keep_their_old_names() -> None:
    import tensorflow_ignite.errors as errors
    from tensorflow_ignite.data.write import WriteError
    from tensorflow_ignite.demo import DemoError
    from tensorflow_ignite.native.build import NativeBuildError
    from tensorflow_ignite.protocol.binary.decode import MissingSchemaError
    from tensorflow_ignite.protocol.columns.plan import FieldTypeError
    from tensorflow_ignite.protocol.javatime import UnsupportedJavaObjectError

    for cls in (WriteError, DemoError, NativeBuildError, MissingSchemaError, FieldTypeError,
                UnsupportedJavaObjectError, TransactionConflictError):
        assert cls.__module__ == "tensorflow_ignite.errors" and getattr(errors, cls.__name__) is cls
        assert cls.__name__ in errors.__all__
