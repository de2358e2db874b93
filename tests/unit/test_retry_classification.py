"""One retry classification for both generations (client/retry.py): the Ignite 2 scan and the Ignite 3
table read ask the same rules, and differ only in how each reads a server's status."""

from __future__ import annotations

import pytest

from tensorflow_ignite.client.cache import _is_transient
from tensorflow_ignite.client.retry import transient
from tensorflow_ignite.errors import (
    AuthenticationError,
    CacheNotFoundError,
    ConfigurationError,
    ConnectionTimeoutError,
    HandshakeError,
    IgniteConnectionError,
    ProtocolError,
    ServerError,
    TLSError,
)
from tensorflow_ignite.ignite3.partitioned import retryable
from tensorflow_ignite.protocol.codes import ClientStatus, Op

NOT_SERVER_ERRORS = [
    (AuthenticationError("refused", address="h:1"), False),
    (TLSError("bad certificate", address="h:1"), False),
    (HandshakeError("node died while we connected", address="h:1"), True),
    (IgniteConnectionError("node gone", address="h:1"), True),
    (ConnectionTimeoutError("silent", address="h:1"), True),
    (ProtocolError("garbled frame"), False),
    (ConfigurationError("bad argument"), False),
    (ValueError("a bug"), False),
]


@pytest.mark.parametrize(("exc", "expected"), NOT_SERVER_ERRORS, ids=lambda v: type(v).__name__)
def test_both_generations_classify_what_is_not_a_server_answer_alike(exc: BaseException, expected: bool) -> None:
    def no_server_rule(_: ServerError) -> bool:
        raise AssertionError("only a server's error reaches the generation's rule")

    assert transient(exc, no_server_rule) is expected
    assert _is_transient(exc) is expected  # Ignite 2's partition scans
    assert retryable(exc) is expected  # Ignite 3's table reads


def test_ignite2_server_answers_keep_their_rules() -> None:
    op = int(Op.QUERY_SCAN)
    assert _is_transient(ServerError("node left mid-query", status=ClientStatus.FAILED, op=op))
    assert _is_transient(ServerError("cursor dropped", status=ClientStatus.RESOURCE_DOES_NOT_EXIST, op=op))
    assert _is_transient(ServerError("too many", status=ClientStatus.TOO_MANY_CURSORS, op=op))
    assert not _is_transient(CacheNotFoundError("gone", status=ClientStatus.CACHE_DOES_NOT_EXIST, op=op))
    assert not _is_transient(ServerError("exists", status=ClientStatus.CACHE_EXISTS, op=op))
    # An Ignite 2 status means nothing to Ignite 3's rule: a plain ServerError is final there.
    assert not retryable(ServerError("node left mid-query", status=ClientStatus.FAILED, op=op))
