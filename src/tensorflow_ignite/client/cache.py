"""Key-value operations and scan queries on one cache."""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from ..errors import CacheNotFoundError, ServerError
from ..protocol import requests, responses
from ..protocol.cache_config import CacheConfiguration
from ..protocol.codes import ClientStatus, Op
from ..protocol.hashing import cache_id as _cache_id
from ..protocol.responses import ScanPage
from .connection import Connection
from .cursor import stream_pages

if TYPE_CHECKING:
    from .client import IgniteClient

__all__ = ["Cache"]

log = logging.getLogger(__name__)

_REQUEST_ID = struct.Struct("<q")  # at offset 6 of every request frame


class Cache:
    """A cache of an Ignite cluster, by name.

    Values are Python values in the model of :mod:`tensorflow_ignite.protocol.values`
    (``BinaryObject`` for complex objects).  Writes that contain binary objects
    register their types with the cluster first, so SQL and other clients can
    read them.
    """

    def __init__(self, client: "IgniteClient", name: str) -> None:
        self.client = client
        self.name = name
        self.cache_id = _cache_id(name)

    def __repr__(self) -> str:
        return f"<Cache {self.name!r}>"

    # ------------------------------------------------------------ helpers
    def _call(self, encode: Any, op: int, *, retry: bool = True) -> memoryview:
        try:
            return self.client.request(encode, op, retry=retry)
        except ServerError as exc:
            if exc.status == ClientStatus.CACHE_DOES_NOT_EXIST or isinstance(exc, CacheNotFoundError):
                raise CacheNotFoundError(
                    f"cache {self.name!r} does not exist on the cluster; create it first "
                    f"(e.g. tensorflow_ignite.write(...) or client.get_or_create_cache({self.name!r}))",
                    status=exc.status, op=op,
                ) from None
            raise

    def _write(self, build: Any, op: int, *, retry: bool = True) -> memoryview:
        """Encode a write once, register the binary types it contains, then send it.

        The frame is built with request id 0 and the real id patched in at its
        fixed offset (after the length and op code), so nothing is encoded twice.
        """
        enc = self.client.encoder()
        frame = bytearray(build(0, enc))
        self.client.register_types(enc)

        def encode(rid: int) -> bytearray:
            _REQUEST_ID.pack_into(frame, 6, rid)
            return frame

        return self._call(encode, op, retry=retry)

    # ------------------------------------------------------------ key-value
    def get(self, key: Any, *, key_type: int | None = None) -> Any:
        """The value stored under ``key`` (None when absent)."""
        body = self._call(lambda rid: requests.cache_get(rid, self.cache_id, key, key_type=key_type), Op.CACHE_GET)
        return responses.decode_object(body, self.client.decoder())

    def get_all(self, keys: Iterable[Any]) -> dict[Any, Any]:
        keys = list(keys)
        body = self._call(lambda rid: requests.cache_get_all(rid, self.cache_id, keys), Op.CACHE_GET_ALL)
        return dict(responses.decode_get_all(body, self.client.decoder()))

    def put(self, key: Any, value: Any, *, key_type: int | None = None, value_type: int | None = None) -> None:
        """Store ``value`` under ``key``."""
        self._write(lambda rid, enc: requests.cache_put(
            rid, self.cache_id, key, value, key_type=key_type, value_type=value_type, encoder=enc), Op.CACHE_PUT)

    def put_all(
        self, entries: Mapping[Any, Any] | Iterable[tuple[Any, Any]], *,
        key_type: int | None = None, value_type: int | None = None,
    ) -> None:
        """Store many entries in one request."""
        pairs = list(entries.items()) if isinstance(entries, Mapping) else list(entries)
        self._write(lambda rid, enc: requests.cache_put_all(
            rid, self.cache_id, pairs, key_type=key_type, value_type=value_type, encoder=enc), Op.CACHE_PUT_ALL)

    def put_if_absent(self, key: Any, value: Any) -> bool:
        """Store ``value`` unless ``key`` exists; True when stored."""
        body = self._write(lambda rid, enc: requests.cache_put_if_absent(
            rid, self.cache_id, key, value, encoder=enc), Op.CACHE_PUT_IF_ABSENT, retry=False)
        return responses.decode_bool(body)

    def replace_if_equals(self, key: Any, expected: Any, value: Any) -> bool:
        """Atomically replace ``expected`` by ``value`` (compare-and-set)."""
        body = self._write(lambda rid, enc: requests.cache_replace_if_equals(
            rid, self.cache_id, key, expected, value, encoder=enc), Op.CACHE_REPLACE_IF_EQUALS, retry=False)
        return responses.decode_bool(body)

    def remove_if_equals(self, key: Any, expected: Any) -> bool:
        body = self._call(lambda rid: requests.cache_remove_if_equals(rid, self.cache_id, key, expected),
                          Op.CACHE_REMOVE_IF_EQUALS, retry=False)
        return responses.decode_bool(body)

    def contains_key(self, key: Any) -> bool:
        body = self._call(lambda rid: requests.cache_contains_key(rid, self.cache_id, key), Op.CACHE_CONTAINS_KEY)
        return responses.decode_bool(body)

    def remove_key(self, key: Any) -> bool:
        body = self._call(lambda rid: requests.cache_remove_key(rid, self.cache_id, key), Op.CACHE_REMOVE_KEY)
        return responses.decode_bool(body)

    def remove_keys(self, keys: Iterable[Any]) -> None:
        keys = list(keys)
        self._call(lambda rid: requests.cache_remove_keys(rid, self.cache_id, keys), Op.CACHE_REMOVE_KEYS)

    def remove_all(self) -> None:
        self._call(lambda rid: requests.cache_remove_all(rid, self.cache_id), Op.CACHE_REMOVE_ALL)

    def clear(self) -> None:
        self._call(lambda rid: requests.cache_clear(rid, self.cache_id), Op.CACHE_CLEAR)

    def size(self, peek_modes: Iterable[int] = ()) -> int:
        """Number of entries (all nodes, primary copies, unless ``peek_modes`` say otherwise)."""
        modes = list(peek_modes)
        body = self._call(lambda rid: requests.cache_get_size(rid, self.cache_id, modes), Op.CACHE_GET_SIZE)
        return responses.decode_long(body)

    def __len__(self) -> int:
        return self.size()

    def destroy(self) -> None:
        self.client.destroy_cache(self.name)

    def configuration(self) -> CacheConfiguration:
        """The cache's configuration, including its query entities (SQL schema)."""
        conn = self.client.default_connection
        body = self._call(lambda rid: requests.cache_get_configuration(rid, self.cache_id),
                          Op.CACHE_GET_CONFIGURATION)
        return responses.decode_cache_configuration_response(body, conn.version, self.client.decoder())

    def exists(self) -> bool:
        return self.name in self.client.cache_names()

    # ---------------------------------------------------------------- scans
    def scan_pages(
        self, *, page_size: int = 1024, partition: int = -1, local: bool = False,
        connection: Connection | None = None,
    ) -> Iterator[ScanPage]:
        """Stream raw scan pages (rows undecoded), one page requested ahead.

        A single-partition scan goes to that partition's primary node.  The
        cursor is closed on the server if the iterator is abandoned early.
        """
        conn = connection
        if conn is None:
            if partition >= 0 and self.client.partition_awareness:
                pmap = self.client.partition_map(self.name)
                conn = self.client.connection_for_node(pmap.primary(partition))
            else:
                conn = self.client.default_connection
        yield from _scan(conn, self, page_size=page_size, partition=partition, local=local)

    def scan(self, *, page_size: int = 1024, partition: int = -1, local: bool = False) -> Iterator[tuple[Any, Any]]:
        """Stream ``(key, value)`` pairs, decoded to Python values."""
        dec = self.client.decoder()
        for page in self.scan_pages(page_size=page_size, partition=partition, local=local):
            yield from responses.decode_scan_rows(page, dec)


def _scan(conn: Connection, cache: Cache, *, page_size: int, partition: int, local: bool) -> Iterator[ScanPage]:
    try:
        body = conn.request(
            lambda rid: requests.query_scan(rid, cache.cache_id, page_size=page_size, partition=partition,
                                            local=local),
            Op.QUERY_SCAN,
        )
    except ServerError as exc:
        if exc.status == ClientStatus.CACHE_DOES_NOT_EXIST:
            raise CacheNotFoundError(
                f"cache {cache.name!r} does not exist on the cluster", status=exc.status, op=Op.QUERY_SCAN
            ) from None
        raise
    first = responses.decode_scan_page(body, first=True)
    yield from stream_pages(
        conn, body, first.cursor_id, lambda _b: first, requests.query_scan_cursor_get_page,
        Op.QUERY_SCAN_CURSOR_GET_PAGE, lambda b: responses.decode_scan_page(b, first=False),
    )
