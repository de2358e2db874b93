"""Key-value operations and scan queries on one cache."""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import (
    CacheNotFoundError,
    IgniteConnectionError,
    IgniteError,
    ProtocolError,
    ServerError,
)
from ..protocol import requests, responses
from ..protocol.cache_config import CacheConfiguration
from ..protocol.codes import Op
from ..protocol.columns import value_offsets
from ..protocol.framing import reusable_frame
from ..protocol.hashing import cache_id as _cache_id
from ..protocol.hashing import java_key_hash
from ..protocol.responses import ScanPage
from .connection import Connection
from .cursor import stream_pages
from .retry import ignite2_server_transient, transient

if TYPE_CHECKING:
    import uuid as _uuid

    from .client import IgniteClient, PartitionMap

__all__ = ["Cache", "NodeScanProgress", "select_rows"]

log = logging.getLogger(__name__)


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
    def _key_node(self, key: Any, key_type: int | None = None) -> "_uuid.UUID | None":
        """The primary node of ``key`` when this client can place it (``Long``, ``Integer``,
        ``Short``, ``Byte`` and ``String`` keys of a cache with the default affinity), else None
        (= the default connection; the node it reaches forwards the request)."""
        if not self.client.partition_awareness:
            return None
        key_hash = java_key_hash(key, key_type)
        if key_hash is None:
            return None
        try:
            pmap = self.client.partition_map(self.name)
        except IgniteError:  # routing is an optimization: the request itself reports what is wrong
            return None
        return pmap.primary_of_key(key_hash)

    def _call(self, encode: Any, op: int, *, retry: bool = True, node_id: "_uuid.UUID | None" = None) -> memoryview:
        try:
            return self.client.request(encode, op, retry=retry, node_id=node_id)
        except ServerError as exc:
            if isinstance(exc, CacheNotFoundError):
                raise CacheNotFoundError(
                    f"cache {self.name!r} does not exist on the cluster; create it first "
                    f"(e.g. tensorflow_ignite.write(...) or client.get_or_create_cache({self.name!r}))",
                    status=exc.status,
                    op=op,
                ) from None
            raise

    def _write(self, build: Any, op: int, *, retry: bool = True, node_id: "_uuid.UUID | None" = None) -> memoryview:
        """Encode a write once, register the binary types it contains, then send it.

        The frame is built with request id 0 and the real id patched in at its
        fixed offset (after the length and op code), so nothing is encoded twice.
        """
        enc = self.client.encoder()
        frame = bytearray(build(0, enc))
        self.client.register_types(enc)
        return self._call(reusable_frame(frame), op, retry=retry, node_id=node_id)

    # ------------------------------------------------------------ key-value
    # Single-key operations go to the key's primary node (:meth:`_key_node`), as scans,
    # writes and ignite:// blocks do; operations on many keys go to the default connection.
    def get(self, key: Any, *, key_type: int | None = None) -> Any:
        """The value stored under ``key`` (None when absent)."""
        body = self._call(
            lambda rid: requests.cache_get(rid, self.cache_id, key, key_type=key_type),
            Op.CACHE_GET,
            node_id=self._key_node(key, key_type),
        )
        return responses.decode_object(body, self.client.decoder())

    def get_all(self, keys: Iterable[Any], *, key_type: int | None = None) -> dict[Any, Any]:
        """The entries of ``keys`` that exist; ``key_type`` (a type code) as for :meth:`get`."""
        keys = list(keys)
        body = self._call(
            lambda rid: requests.cache_get_all(rid, self.cache_id, keys, key_type=key_type), Op.CACHE_GET_ALL
        )
        return dict(responses.decode_get_all(body, self.client.decoder()))

    def put(self, key: Any, value: Any, *, key_type: int | None = None, value_type: int | None = None) -> None:
        """Store ``value`` under ``key``."""
        self._write(
            lambda rid, enc: requests.cache_put(
                rid, self.cache_id, key, value, key_type=key_type, value_type=value_type, encoder=enc
            ),
            Op.CACHE_PUT,
            node_id=self._key_node(key, key_type),
        )

    def put_all(
        self,
        entries: Mapping[Any, Any] | Iterable[tuple[Any, Any]],
        *,
        key_type: int | None = None,
        value_type: int | None = None,
    ) -> None:
        """Store many entries in one request."""
        pairs = list(entries.items()) if isinstance(entries, Mapping) else list(entries)
        self._write(
            lambda rid, enc: requests.cache_put_all(
                rid, self.cache_id, pairs, key_type=key_type, value_type=value_type, encoder=enc
            ),
            Op.CACHE_PUT_ALL,
        )

    def put_if_absent(self, key: Any, value: Any) -> bool:
        """Store ``value`` unless ``key`` exists; True when stored."""
        body = self._write(
            lambda rid, enc: requests.cache_put_if_absent(rid, self.cache_id, key, value, encoder=enc),
            Op.CACHE_PUT_IF_ABSENT,
            retry=False,
            node_id=self._key_node(key),
        )
        return responses.decode_bool(body)

    def replace_if_equals(self, key: Any, expected: Any, value: Any) -> bool:
        """Atomically replace ``expected`` by ``value`` (compare-and-set)."""
        body = self._write(
            lambda rid, enc: requests.cache_replace_if_equals(rid, self.cache_id, key, expected, value, encoder=enc),
            Op.CACHE_REPLACE_IF_EQUALS,
            retry=False,
            node_id=self._key_node(key),
        )
        return responses.decode_bool(body)

    def remove_if_equals(self, key: Any, expected: Any) -> bool:
        return self._ask_key(
            key,
            lambda rid: requests.cache_remove_if_equals(rid, self.cache_id, key, expected),
            Op.CACHE_REMOVE_IF_EQUALS,
        )

    def contains_key(self, key: Any) -> bool:
        return self._ask_key(
            key, lambda rid: requests.cache_contains_key(rid, self.cache_id, key), Op.CACHE_CONTAINS_KEY, retry=True
        )

    def remove_key(self, key: Any) -> bool:
        return self._ask_key(
            key, lambda rid: requests.cache_remove_key(rid, self.cache_id, key), Op.CACHE_REMOVE_KEY, retry=True
        )

    def _ask_key(self, key: Any, encode: Any, op: int, *, retry: bool = False) -> bool:
        """A request about ``key`` (no value to encode), sent to its primary node; its boolean answer."""
        return responses.decode_bool(self._call(encode, op, retry=retry, node_id=self._key_node(key)))

    def remove_keys(self, keys: Iterable[Any], *, key_type: int | None = None) -> None:
        """Remove the entries of ``keys`` (absent ones are no error); ``key_type`` as for :meth:`get`."""
        keys = list(keys)
        self._call(
            lambda rid: requests.cache_remove_keys(rid, self.cache_id, keys, key_type=key_type), Op.CACHE_REMOVE_KEYS
        )

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
        body = self._call(lambda rid: requests.cache_get_configuration(rid, self.cache_id), Op.CACHE_GET_CONFIGURATION)
        return responses.decode_cache_configuration_response(body, conn.version, self.client.decoder())

    def exists(self) -> bool:
        return self.name in self.client.cache_names()

    # ---------------------------------------------------------------- scans
    def scan_pages(
        self,
        *,
        page_size: int = 1024,
        partition: int = -1,
        local: bool = False,
        connection: Connection | None = None,
        read_ahead: int = 0,
    ) -> Iterator[ScanPage]:
        """Stream raw scan pages (rows undecoded), one page requested ahead.

        A single-partition scan goes to that partition's primary node.  The
        cursor is closed on the server if the iterator is abandoned early.
        ``read_ahead`` > 0: a thread keeps fetching pages while the caller
        works, holding up to about that many bytes of them
        (:func:`~.cursor.stream_pages`).
        """
        conn = connection if connection is not None else self._route(partition)
        yield from _scan(conn, self, page_size=page_size, partition=partition, local=local, ahead_bytes=read_ahead)

    def _route(self, partition: int) -> Connection:
        """The connection to the primary of ``partition`` (the default one for ``-1``)."""
        if partition >= 0 and self.client.partition_awareness:
            pmap = self.client.partition_map(self.name)
            return self.client.connection_for_node(pmap.primary(partition))
        return self.client.default_connection

    def scan_partitions(
        self,
        partitions: Iterable[int],
        *,
        page_size: int | Callable[[], int] = 1024,
        local: bool = False,
        window: int | Callable[[], int] = 8,
        failover_timeout: float | None = None,
        on_failover: Callable[[int, BaseException], None] | None = None,
    ) -> Iterator[tuple[int, ScanPage]]:
        """Scan several partitions in order, pipelined, every row exactly once despite node failures.

        Yields ``(position, page)`` where ``position`` indexes ``partitions``;
        the pages of one partition come before those of the next.  Up to
        ``window`` partitions have their scan request on the wire at once, each
        sent to its primary node, so a partition holding a few rows costs no
        round trip of its own (connections are multiplexed by request id).
        ``partitions`` may be lazy (a generator): it is pulled only as far as
        the window needs.
        ``page_size`` and ``window`` may be callables, asked before each
        request (the dataset sizes both from observed row sizes).

        When the node serving a partition fails (connection lost, node left,
        the server reports a failed query), the partition map is fetched again
        and the partition is scanned again on its current primary, with
        exponential backoff, until ``failover_timeout`` seconds (default: the
        client's ``timeout``) have passed since the failure; then the last error
        is raised as :class:`IgniteConnectionError` naming what was tried.  Rows
        of that partition already yielded are dropped from the new scan by key
        (their raw pages are kept while the partition is in flight and only
        decoded after a failure), so nothing is lost or repeated as long as the
        cache's contents do not change during the scan.  ``on_failover(partition,
        error)`` is called for every retry.  Whole-cache (``-1``) and ``local``
        scans are not retried: their rows cannot be found again elsewhere.
        """
        size = page_size if callable(page_size) else (lambda: page_size)
        width = window if callable(window) else (lambda: window)
        timeout = self.client.settings.timeout if failover_timeout is None else float(failover_timeout)
        source = iter(partitions)
        sent = 0
        exhausted = False
        inflight: deque[_PartitionScan] = deque()
        try:
            while True:
                want = max(1, int(width()))
                # Refill when half the window is consumed, in one write per node
                # (one system call and one wake-up of the node per batch).
                if not exhausted and len(inflight) <= want // 2:
                    batch: list[tuple[int, int]] = []
                    while len(inflight) + len(batch) < want:
                        try:
                            batch.append((sent + len(batch), int(next(source))))
                        except StopIteration:
                            exhausted = True
                            break
                    inflight.extend(self._send_scans(batch, local, size()))
                    sent += len(batch)
                if not inflight:
                    return
                yield from self._drain(inflight.popleft(), local, size, timeout, on_failover)
        finally:
            # Stopped early (or failed): collect the answers already on the wire
            # and close their cursors, so no frame is parked forever and no
            # server cursor leaks.
            while inflight:
                self._abandon(inflight.popleft())

    def scan_nodes(
        self,
        row_ids: Callable[[ScanPage], tuple[Any, Any]],
        partitions: int,
        *,
        page_size: int | Callable[[], int] = 1024,
        window: int | Callable[[], int] = 8,
        failover_timeout: float | None = None,
        on_failover: Callable[[int, BaseException], None] | None = None,
        on_rescan: Callable[[list[int]], None] | None = None,
        progress: "NodeScanProgress | None" = None,
        read_ahead: int = 0,
        fetch_paths: MutableMapping[str, int] | None = None,
    ) -> Iterator[tuple[Any, Any, ScanPage]]:
        """Scan the whole cache with one scan per node, every row exactly once despite failures.

        Each node scans its own primary partitions (a ``local`` scan sent to
        it) in large pages: a node sets up one scan instead of one per partition,
        which made reading many small rows about twice as fast.  ``row_ids(page)``
        returns ``(partition of each row, int64 identity of each row)`` as NumPy
        arrays (the key's affinity partition and the key itself); yields
        ``(partitions, ids, page)``: each row's partition and identity.
        ``partitions`` is the cache's partition count.

        Rows a node returns for a partition it was not primary of when the
        epoch began are dropped from its pages.  After the node scans the
        partition map is fetched again: when a node failed, or the topology
        changed, or rows were dropped, the affected partitions (all of them when
        the topology changed) are scanned again one by one on their current
        primaries (:meth:`scan_partitions`, with its own failover), and rows
        whose identity was already yielded are dropped -- so nothing is lost or
        repeated as long as the cache's contents do not change during the scan.
        ``on_rescan(partitions)`` is told which partitions are scanned again.
        ``progress`` is kept up to date with what the scan has established so
        far (which partitions will be scanned again, which were), for a reader
        that must tell at any moment which partitions it has read completely.
        ``read_ahead`` > 0: each node's pages are fetched by a thread while the
        caller works, up to about that many bytes (:func:`~.cursor.stream_pages`);
        ``fetch_paths`` counts those pages per fetcher (the compiled scan pump or Python).
        """
        watch = progress if progress is not None else NodeScanProgress()
        size = page_size if callable(page_size) else (lambda: page_size)
        try:
            start = self.client.partition_map(self.name, refresh=True)
        except (IgniteConnectionError, ServerError) as exc:
            if not _is_transient(exc):
                raise
            start = None  # no node answers now: partition scans, with their failover, say why
        if start is None or not start.applicable or start.partitions != partitions:
            yield from self._rescan(
                set(range(partitions)), [], row_ids, size, window, failover_timeout, on_failover, on_rescan, watch
            )
            return
        watch.start = start
        owners = sorted({n for n in start.nodes if n is not None}, key=str)
        owner_index = np.array([owners.index(n) if n is not None else -1 for n in start.nodes], dtype=np.int64)
        delivered: list[Any] = []
        repair = watch.suspect
        repair.update(p for p, n in enumerate(start.nodes) if n is None)
        scans: list[_PartitionScan] = []
        cid = self.cache_id
        for i, node in enumerate(owners):
            scan = _PartitionScan(i, -1)
            try:
                scan.conn = self.client.connection_for_node(node)
                scan.request_id = scan.conn.send(
                    lambda rid: requests.query_scan(rid, cid, page_size=size(), partition=-1, local=True)
                )
            except (IgniteConnectionError, ServerError) as exc:
                scan.error = exc
            scans.append(scan)
        try:
            for i, scan in enumerate(scans):
                mine = owner_index == i
                pages = self._stream(scan, read_ahead, fetch_paths)
                try:
                    for page in pages:
                        if not page.row_count:
                            continue
                        parts, ids = row_ids(page)
                        keep = mine[parts]
                        if not keep.all():
                            # Rows of partitions this node was not primary of: their
                            # partitions are scanned again -- and this node's own, in case
                            # the rows' partitions were computed wrong.
                            repair.update(int(p) for p in np.unique(parts[~keep]))
                            repair.update(int(p) for p in np.flatnonzero(mine))
                            page, parts, ids = select_rows(page, keep), parts[keep], ids[keep]
                            if not page.row_count:
                                continue
                        delivered.append(ids)
                        yield parts, ids, page
                except (IgniteConnectionError, ServerError) as exc:
                    if not _is_transient(exc):
                        raise
                    log.info(
                        "cache %r: the scan of node %s failed (%s); its partitions are scanned again",
                        self.name,
                        owners[i],
                        exc,
                    )
                    if isinstance(exc, IgniteConnectionError) and scan.conn is not None:
                        self.client.drop_connection(scan.conn)
                    failed = [p for p, n in enumerate(start.nodes) if n == owners[i]]
                    if on_failover is not None:
                        for p in failed:
                            on_failover(p, exc)
                    repair.update(failed)
                finally:
                    pages.close()
                    scans[i] = _PartitionScan(i, -1)  # consumed: nothing left to abandon
        finally:
            for scan in scans:
                self._abandon(scan)
        try:
            end: PartitionMap | None = self.client.partition_map(self.name, refresh=True)
        except (IgniteConnectionError, ServerError) as exc:
            if not _is_transient(exc):
                raise
            end = None
        if end is None or end.topology_version != start.topology_version or end.nodes != start.nodes:
            log.info(
                "cache %r: the topology changed during the scan (%s -> %s); every partition is checked again",
                self.name,
                start.topology_version,
                end.topology_version if end else "unknown",
            )
            repair.update(range(start.partitions))
        yield from self._rescan(
            repair, delivered, row_ids, size, window, failover_timeout, on_failover, on_rescan, watch
        )

    def _rescan(
        self,
        repair: set[int],
        delivered: list[Any],
        row_ids: Callable[[ScanPage], tuple[Any, Any]],
        size: Callable[[], int],
        window: int | Callable[[], int],
        failover_timeout: float | None,
        on_failover: Callable[[int, BaseException], None] | None,
        on_rescan: Callable[[list[int]], None] | None,
        watch: "NodeScanProgress",
    ) -> Iterator[tuple[Any, Any, ScanPage]]:
        """Scan ``repair`` partition by partition, without the rows whose identity is in ``delivered``."""
        watch.rescanning = True
        if not repair:
            return
        order = sorted(repair)
        if on_rescan is not None:
            on_rescan(order)
        seen = np.unique(np.concatenate(delivered)) if delivered else np.zeros(0, np.int64)
        current = -1
        for position, page in self.scan_partitions(
            order, page_size=size, window=window, failover_timeout=failover_timeout, on_failover=on_failover
        ):
            if position != current:
                if current >= 0:
                    watch.verified.add(order[current])
                current = position
            if not page.row_count:
                continue
            parts, ids = row_ids(page)
            fresh = ~np.isin(ids, seen)
            if not fresh.all():
                page, parts, ids = select_rows(page, fresh), parts[fresh], ids[fresh]
                if not page.row_count:
                    continue
            yield parts, ids, page
        if current >= 0:
            watch.verified.add(order[current])

    def _send_scans(self, items: Sequence[tuple[int, int]], local: bool, page_size: int) -> list["_PartitionScan"]:
        """Send the scan requests of ``(position, partition)`` items, batched per node."""
        scans = [_PartitionScan(position, partition) for position, partition in items]
        by_conn: dict[int, list[_PartitionScan]] = {}
        conns: dict[int, Connection] = {}
        for scan in scans:
            try:
                scan.conn = self._route(scan.partition)
            except (IgniteConnectionError, ServerError) as exc:
                scan.error = exc  # raised (and failed over) when this scan's turn comes
                continue
            by_conn.setdefault(id(scan.conn), []).append(scan)
            conns[id(scan.conn)] = scan.conn
        for key, group in by_conn.items():
            encoders = [self._scan_encoder(scan.partition, local, page_size) for scan in group]
            try:
                ids = conns[key].send_many(encoders)
            except IgniteConnectionError as exc:
                for scan in group:
                    scan.error = exc
                continue
            for scan, rid in zip(group, ids):
                scan.request_id = rid
        return scans

    def _scan_encoder(self, partition: int, local: bool, page_size: int) -> Callable[[int], bytes]:
        cid = self.cache_id
        return lambda rid: requests.query_scan(rid, cid, page_size=page_size, partition=partition, local=local)

    def _stream(
        self, scan: "_PartitionScan", ahead_bytes: int = 0, paths: MutableMapping[str, int] | None = None
    ) -> Iterator[ScanPage]:
        if scan.error is not None:
            raise scan.error
        assert scan.conn is not None and scan.request_id is not None
        conn, rid = scan.conn, scan.request_id
        yield from _scan_pages(conn, self.name, lambda: conn.receive(rid, Op.QUERY_SCAN), ahead_bytes, paths)

    def _drain(
        self,
        scan: "_PartitionScan",
        local: bool,
        size: Callable[[], int],
        timeout: float,
        on_failover: Callable[[int, BaseException], None] | None,
    ) -> Iterator[tuple[int, ScanPage]]:
        """The pages of one partition scan, scanning again elsewhere when its node fails."""
        retryable = scan.partition >= 0 and not local
        # Raw pages of this partition already handed out.  Nothing is decoded on
        # the happy path; after a failure their keys filter the new scan.
        delivered: list[ScanPage] = []
        seen: set[bytes] = set()
        deadline: float | None = None
        attempts = server_errors = 0
        tried: list[str] = []
        while True:
            pages = self._stream(scan)
            try:
                for page in pages:
                    if seen and page.row_count:
                        page = without_keys(page, seen)
                    if retryable and page.row_count:
                        delivered.append(page)
                    yield scan.position, page
                return
            except (IgniteConnectionError, ServerError) as exc:
                if not retryable or not _is_transient(exc):
                    raise
                now = time.monotonic()
                deadline = now + timeout if deadline is None else deadline
                if scan.conn is not None:
                    if scan.conn.address not in tried:
                        tried.append(scan.conn.address)
                    if isinstance(exc, IgniteConnectionError):
                        self.client.drop_connection(scan.conn)
                server_errors += isinstance(exc, ServerError)
                if now >= deadline or server_errors > _MAX_SERVER_ERROR_RETRIES:
                    raise _gave_up(self.name, scan.partition, timeout, attempts, tried, exc) from None
                log.info(
                    "cache %r, partition %d: %s; scanning it again (attempt %d)",
                    self.name,
                    scan.partition,
                    exc,
                    attempts + 1,
                )
                if on_failover is not None:
                    on_failover(scan.partition, exc)
                for done in delivered:
                    seen.update(row_keys(done))
                delivered.clear()
                if attempts:
                    # Backoff while the cluster notices the loss and moves primaries.
                    time.sleep(min(_BACKOFF_FIRST * 2 ** (attempts - 1), _BACKOFF_MAX, max(0.0, deadline - now)))
                attempts += 1
                scan = self._send_scans([(scan.position, scan.partition)], local, size())[0]
            finally:
                pages.close()

    def _abandon(self, scan: "_PartitionScan") -> None:
        conn = scan.conn
        if conn is None or scan.request_id is None or scan.error is not None or conn.closed:
            return
        try:
            first = responses.decode_scan_page(conn.receive(scan.request_id, Op.QUERY_SCAN), first=True)
            if first.has_more and first.cursor_id is not None:
                cid = first.cursor_id
                conn.request(lambda rid: requests.resource_close(rid, cid), Op.RESOURCE_CLOSE)
        except (ServerError, IgniteConnectionError, ProtocolError) as exc:
            log.debug("cache %r: abandoning the scan of partition %d: %s", self.name, scan.partition, exc)

    def scan(self, *, page_size: int = 1024, partition: int = -1, local: bool = False) -> Iterator[tuple[Any, Any]]:
        """Stream ``(key, value)`` pairs, decoded to Python values."""
        dec = self.client.decoder()
        for page in self.scan_pages(page_size=page_size, partition=partition, local=local):
            yield from responses.decode_scan_rows(page, dec)


#: Retries of a partition scan the server answered with an error (node left,
#: partition moving); a deterministic error surfaces after this many.
_MAX_SERVER_ERROR_RETRIES = 5
_BACKOFF_FIRST = 0.05
_BACKOFF_MAX = 1.0


class NodeScanProgress:
    """What :meth:`Cache.scan_nodes` has established so far (updated as it goes).

    ``start`` is the partition map the node scans were planned with;
    ``suspect`` the partitions that will be (or are being) scanned again
    because a node failed, returned rows of partitions it did not own, or the
    topology changed; ``verified`` the partitions whose second scan is done;
    ``rescanning`` whether the node scans are over.
    """

    def __init__(self) -> None:
        self.start: "PartitionMap | None" = None
        self.suspect: set[int] = set()
        self.verified: set[int] = set()
        self.rescanning = False

    def trusted(self, partitions: set[int], cache: "Cache") -> set[int]:
        """Those of ``partitions`` whose rows a node scan returned completely.

        A node's rows of a partition are complete once its scan moved on to
        another partition, unless the partition is suspect or -- while the
        node scans still run -- the partition map has changed since they
        started (a partition that moved may have been cut short).
        """
        verified = partitions & self.verified
        candidates = partitions - self.suspect - verified
        if not candidates or self.start is None:
            return verified
        if not self.rescanning:
            try:
                now = cache.client.partition_map(cache.name, refresh=True)
            except (IgniteConnectionError, ServerError):
                return verified
            if now.topology_version != self.start.topology_version or now.nodes != self.start.nodes:
                return verified
        return verified | candidates


class _PartitionScan:
    """One partition's scan request: where it was sent, or why it could not be."""

    __slots__ = ("position", "partition", "conn", "request_id", "error")

    def __init__(self, position: int, partition: int) -> None:
        self.position = position
        self.partition = partition
        self.conn: Connection | None = None
        self.request_id: int | None = None
        self.error: BaseException | None = None


def _is_transient(exc: BaseException) -> bool:
    """True for failures another attempt (perhaps on another node) can cure: :func:`.retry.transient`."""
    return transient(exc, ignite2_server_transient)


def _gave_up(
    cache: str, partition: int, timeout: float, attempts: int, tried: list[str], exc: BaseException
) -> IgniteError:
    where = f"; nodes tried: {', '.join(tried)}" if tried else ""
    message = (
        f"cache {cache!r}, partition {partition}: no node could serve the scan within the "
        f"{timeout:g} s timeout ({attempts + 1} attempt(s){where}). Last error: {exc}. "
        "Check that the Ignite nodes are running and reachable (or raise timeout=...); "
        "iterating again reconnects."
    )
    if isinstance(exc, ServerError):
        return type(exc)(message, status=exc.status, op=exc.op)
    address = getattr(exc, "address", None) or ",".join(tried) or None
    return IgniteConnectionError(message, address=address)


def row_keys(page: ScanPage) -> list[bytes]:
    """The serialized key of every row of a scan page (a key's bytes are the same on every node)."""
    starts = value_offsets(page.rows, page.row_count, 2)
    rows = page.rows
    return [bytes(rows[k:v]) for k, v in zip(starts[:, 0].tolist(), starts[:, 1].tolist())]


def without_keys(page: ScanPage, seen: set[bytes]) -> ScanPage:
    """``page`` without the rows whose key is in ``seen`` (rows are self-contained byte ranges)."""
    starts = value_offsets(page.rows, page.row_count, 2)
    rows = page.rows
    key_starts = starts[:, 0].tolist()
    value_starts = starts[:, 1].tolist()
    ends = key_starts[1:] + [len(rows)]
    keep = [i for i in range(page.row_count) if bytes(rows[key_starts[i] : value_starts[i]]) not in seen]
    if len(keep) == page.row_count:
        return page
    region = b"".join(rows[key_starts[i] : ends[i]] for i in keep)
    return ScanPage(page.cursor_id, len(keep), memoryview(region), page.has_more)


def select_rows(page: ScanPage, keep: Any) -> ScanPage:
    """``page`` with only the rows where the boolean array ``keep`` is true."""
    starts = value_offsets(page.rows, page.row_count, 2)[:, 0].tolist()
    ends = starts[1:] + [len(page.rows)]
    rows = page.rows
    region = b"".join(rows[starts[i] : ends[i]] for i in np.flatnonzero(keep).tolist())
    return ScanPage(page.cursor_id, int(np.count_nonzero(keep)), memoryview(region), page.has_more)


def _scan(
    conn: Connection, cache: Cache, *, page_size: int, partition: int, local: bool, ahead_bytes: int = 0
) -> Iterator[ScanPage]:
    cid = cache.cache_id
    yield from _scan_pages(
        conn,
        cache.name,
        lambda: conn.request(
            lambda rid: requests.query_scan(rid, cid, page_size=page_size, partition=partition, local=local),
            Op.QUERY_SCAN,
        ),
        ahead_bytes,
    )


def _scan_pages(
    conn: Connection,
    cache_name: str,
    first_answer: Callable[[], memoryview],
    ahead_bytes: int = 0,
    paths: MutableMapping[str, int] | None = None,
) -> Iterator[ScanPage]:
    """The pages of one scan whose first answer ``first_answer`` waits for, later pages fetched on ``conn``
    (read ahead by a thread up to ``ahead_bytes``: :func:`~.cursor.stream_pages`)."""
    try:
        body = first_answer()
    except CacheNotFoundError as exc:
        raise CacheNotFoundError(
            f"cache {cache_name!r} does not exist on the cluster", status=exc.status, op=Op.QUERY_SCAN
        ) from None
    first = responses.decode_scan_page(body, first=True)
    yield from stream_pages(
        conn,
        body,
        first.cursor_id,
        lambda _b: first,
        requests.query_scan_cursor_get_page,
        Op.QUERY_SCAN_CURSOR_GET_PAGE,
        lambda b: responses.decode_scan_page(b, first=False),
        ahead_bytes=ahead_bytes,
        paths=paths,
    )
