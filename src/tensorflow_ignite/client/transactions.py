"""Thin-client transactions (``OP_TX_START`` / ``OP_TX_END``).

An Ignite thin-client transaction belongs to the *connection* that started it:
every request of the transaction carries its id (cache flag ``TRANSACTIONAL``)
and must go over that same connection.  :class:`Transaction` therefore pins
one :class:`~tensorflow_ignite.client.connection.Connection` and sends its
requests there directly, bypassing the client's routing and retry (a request
of a transaction must never be repeated on another node).

Only caches created with ``atomicity_mode=TRANSACTIONAL`` take part; requests
on an ``ATOMIC`` cache inside a transaction are rejected by the server.

The default mode, ``OPTIMISTIC`` + ``SERIALIZABLE``, takes no locks while the
transaction runs: reads record entry versions and the commit fails with
:class:`TransactionConflictError` if any entry read or written was changed by
someone else meanwhile -- a multi-key compare-and-set.  Callers retry the whole
transaction on that error (see :meth:`TransactionConflictError.retryable`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import IgniteConnectionError, ServerError, TransactionConflictError
from ..protocol import requests, responses
from ..protocol.codes import Op, TxConcurrency, TxIsolation
from ..protocol.framing import reusable_frame
from ..protocol.requests import CacheOptions

if TYPE_CHECKING:
    from .cache import Cache
    from .client import IgniteClient
    from .connection import Connection

__all__ = ["Transaction", "TransactionConflictError", "TxConcurrency", "TxIsolation"]

log = logging.getLogger(__name__)


class Transaction:
    """One thin-client transaction on one connection.

    Use as a context manager: commits when the block ends normally, rolls back
    when it raises.  ``timeout`` is in seconds (0 = the cluster's default).
    Methods take the :class:`~tensorflow_ignite.client.cache.Cache` to act on;
    writes are sent immediately (``put_all``/``remove_keys`` batch them).
    """

    def __init__(
        self,
        client: "IgniteClient",
        *,
        concurrency: int = TxConcurrency.OPTIMISTIC,
        isolation: int = TxIsolation.SERIALIZABLE,
        timeout: float = 0.0,
        label: str | None = None,
    ) -> None:
        self.client = client
        self.connection: Connection = client.default_connection
        timeout_ms = max(0, int(timeout * 1000))
        body = self.connection.request(
            lambda rid: requests.tx_start(rid, concurrency, isolation, timeout_ms, label), Op.TX_START
        )
        self.tx_id = responses.decode_int(body)
        self._opts = CacheOptions(tx_id=self.tx_id)
        self._open = True

    def __repr__(self) -> str:
        state = "open" if self._open else "closed"
        return f"<Transaction {self.tx_id} on {self.connection.address} {state}>"

    # ---------------------------------------------------------------- requests
    def _request(self, encode: Any, op: int) -> memoryview:
        if not self._open:
            raise RuntimeError(f"transaction {self.tx_id} is already finished")
        return self.connection.request(encode, op)

    def get(self, cache: "Cache", key: Any) -> Any:
        """The value of ``key`` as seen by this transaction (None when absent)."""
        body = self._request(lambda rid: requests.cache_get(rid, cache.cache_id, key, opts=self._opts), Op.CACHE_GET)
        return responses.decode_object(body, self.client.decoder())

    def get_all(self, cache: "Cache", keys: Iterable[Any]) -> dict[Any, Any]:
        """Values of the present ``keys`` (absent keys are left out)."""
        keys = list(keys)
        if not keys:
            return {}
        body = self._request(
            lambda rid: requests.cache_get_all(rid, cache.cache_id, keys, opts=self._opts), Op.CACHE_GET_ALL
        )
        return dict(responses.decode_get_all(body, self.client.decoder()))

    def put(self, cache: "Cache", key: Any, value: Any) -> None:
        self.put_all(cache, [(key, value)])

    def put_all(self, cache: "Cache", entries: Mapping[Any, Any] | Iterable[tuple[Any, Any]]) -> None:
        pairs = list(entries.items()) if isinstance(entries, Mapping) else list(entries)
        if not pairs:
            return
        enc = self.client.encoder()
        frame = requests.cache_put_all(0, cache.cache_id, pairs, opts=self._opts, encoder=enc)
        self.client.register_types(enc)
        self._request(reusable_frame(bytearray(frame)), Op.CACHE_PUT_ALL)

    def remove_key(self, cache: "Cache", key: Any) -> bool:
        body = self._request(
            lambda rid: requests.cache_remove_key(rid, cache.cache_id, key, opts=self._opts), Op.CACHE_REMOVE_KEY
        )
        return responses.decode_bool(body)

    def remove_keys(self, cache: "Cache", keys: Iterable[Any]) -> None:
        keys = list(keys)
        if not keys:
            return
        self._request(
            lambda rid: requests.cache_remove_keys(rid, cache.cache_id, keys, opts=self._opts),
            Op.CACHE_REMOVE_KEYS,
        )

    # ----------------------------------------------------------------- ending
    def _end(self, commit: bool) -> None:
        if not self._open:
            return
        self._open = False
        tx_id = self.tx_id
        self.connection.request(lambda rid: requests.tx_end(rid, tx_id, commit), Op.TX_END)

    def commit(self) -> None:
        """Commit; :class:`TransactionConflictError` when it lost a race (already rolled back)."""
        try:
            self._end(True)
        except ServerError as exc:
            if TransactionConflictError.retryable(exc) and not isinstance(exc, TransactionConflictError):
                raise TransactionConflictError(str(exc), status=exc.status, op=exc.op) from None
            raise

    def rollback(self) -> None:
        """Roll back; errors are logged, not raised (the server drops the transaction
        anyway when it times out or the connection closes)."""
        try:
            self._end(False)
        except (ServerError, IgniteConnectionError) as exc:
            log.debug("rollback of transaction %s failed: %s", self.tx_id, exc)

    def __enter__(self) -> "Transaction":
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.rollback()
