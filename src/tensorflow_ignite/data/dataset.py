"""``IgniteDataset``: a ``tf.data`` source over an Ignite cache or an SQL query.

Shape of the pipeline ("describe ranges, read a chunk"):

1. When the dataset is built (eagerly, in Python) the client connects, the
   schema is resolved from metadata (:mod:`.schema`) and a
   :class:`~.plan.PartitionPlan` lists the scans (one per partition, or one
   ``local`` scan).
2. A generator walks the scans; TensorFlow pulls it through the native source
   op (:mod:`tensorflow_ignite.native.data_source`), or, with
   ``num_parallel_reads`` > 1, interleaves that many ``from_generator``
   readers, each walking its share of the scans.  Each scan streams pages of its partition *from that
   partition's primary node* (one page requested ahead, and the next
   partitions' scans already on the wire: :meth:`Cache.scan_partitions`); a
   partition whose node fails is read again from its new primary without
   repeating rows.  Pages are decoded at once (consecutive small pages
   together) into columnar NumPy batches
   (:func:`tensorflow_ignite.protocol.columns.decode_page`).
3. Batches are re-cut to ``batch_size`` (by the native source, as slices of
   the decoded pages; with ``from_generator`` by ``rebatch``), or unbatched to
   single elements when no ``batch_size`` is given, so the per-element cost of
   the Python source is paid per page or batch, not per row.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import tensorflow as tf

from ..client import IgniteClient
from ..errors import CacheNotFoundError, ConfigurationError, SchemaError
from ..native import data_source
from ..protocol import columns as C
from ..protocol.codes import TypeCode
from ..protocol.endpoint import DEFAULT_HOST, DEFAULT_PORT
from ..protocol.pool import BufferPool, aligned_empty
from ..protocol.responses import ScanPage, decode_scan_rows
from .env import apply_env_overrides
from .plan import PartitionPlan, ScanTask
from .schema import DatasetSchema, FieldSchema, leaf_from_type_code, resolve_schema, rows_to_columns
from .tensor_schema import load_schema

__all__ = ["IgniteDataset", "ConnectionOptions", "ReadStats"]

log = logging.getLogger(__name__)

#: Default target size of one scan page when ``page_size`` is not given.
DEFAULT_PAGE_BYTES = 4 << 20
_MIN_PAGE_ROWS = 16
_MAX_PAGE_ROWS = 65536
#: Bytes of first pages a reader lets partition scans have on the wire at once,
#: and the most scans it pipelines (Ignite allows 128 open cursors per connection).
_PIPELINE_BYTES = 16 << 20
_MAX_WINDOW = 16
_DEFAULT_READERS = 1
#: Most bytes of reused memory a dataset keeps for decoding (coalesced pages, array columns).
_DECODE_POOL_BYTES = 128 << 20
#: Rows of a reader's first coalesced batch; each next one may be twice as large.
_FIRST_BATCH_ROWS = 512


@dataclass(frozen=True)
class ConnectionOptions:
    """Where and how to connect; secrets are kept out of ``repr``."""

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    username: str | None = None
    password: str | None = None
    cafile: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    cert_password: str | None = None
    insecure_skip_verify: bool = False
    server_hostname: str | None = None
    insecure_skip_hostname_verification: bool = False
    timeout: float = 30.0

    def __repr__(self) -> str:
        return (f"ConnectionOptions(host={self.host!r}, port={self.port}, username={self.username!r}, "
                f"tls={self.uses_tls})")

    @property
    def uses_tls(self) -> bool:
        """True when any TLS option is set (TLS is then on for every node)."""
        return bool(self.cafile or self.certfile or self.insecure_skip_verify or self.server_hostname
                    or self.insecure_skip_hostname_verification)

    def connect(self) -> IgniteClient:
        """A client for these options, shared by every dataset of this process that uses them."""
        with _POOL_LOCK:
            client = _POOL.get(self)
            if client is None or client.closed:
                client = IgniteClient(
                    f"{self.host}:{self.port}", username=self.username, password=self.password,
                    cafile=self.cafile, certfile=self.certfile, keyfile=self.keyfile,
                    cert_password=self.cert_password, insecure_skip_verify=self.insecure_skip_verify,
                    server_hostname=self.server_hostname,
                    insecure_skip_hostname_verification=self.insecure_skip_hostname_verification,
                    timeout=self.timeout,
                )
                _POOL[self] = client
            return client


# Datasets built with the same connection options share one client (and so one
# connection per node), however many datasets a program builds.
_POOL: dict[ConnectionOptions, IgniteClient] = {}
_POOL_LOCK = threading.Lock()


def close_shared_clients() -> None:
    """Close the clients shared by datasets (they reconnect on next use)."""
    with _POOL_LOCK:
        clients = list(_POOL.values())
        _POOL.clear()
    for c in clients:
        c.close()


atexit.register(close_shared_clients)


class _PageSizer:
    """Chooses scan page sizes (rows) from a byte target and observed row sizes."""

    def __init__(self, page_rows: int | None, page_bytes: int) -> None:
        self.fixed = page_rows
        self.page_bytes = page_bytes
        self._bytes = 0
        self._rows = 0
        self._lock = threading.Lock()

    @property
    def known(self) -> bool:
        return self.fixed is not None or self._rows > 0

    def observe(self, nbytes: int, rows: int) -> None:
        with self._lock:
            self._bytes += nbytes
            self._rows += rows

    def row_bytes(self) -> float:
        """Average bytes per row seen so far (a page's worth of ``page_bytes`` before any)."""
        with self._lock:
            if self._rows:
                return max(1.0, self._bytes / self._rows)
        return self.page_bytes / max(1, self.rows())

    def rows(self) -> int:
        if self.fixed is not None:
            return self.fixed
        with self._lock:
            if not self._rows:
                return 64
            per_row = max(1.0, self._bytes / self._rows)
        return int(min(_MAX_PAGE_ROWS, max(_MIN_PAGE_ROWS, self.page_bytes / per_row)))


@dataclass(frozen=True)
class ReadStats:
    """What a dataset's reads have done in this process, as of the moment it was taken.

    ``IgniteDataset.stats`` returns one; monitoring and the fault tests read it.
    """

    #: Rows read per scan task (index into the dataset's partition plan), all epochs so far.
    rows_per_task: Mapping[int, int]
    #: ``"nodes"`` (one local scan per node) or ``"partitions"``: how the last epoch was read
    #: (``""`` before the first).
    scan_mode: str
    #: ``(partition, error)`` of every partition scan that was repeated after a failure.
    failovers: tuple[tuple[int, str], ...]
    #: The partitions scanned again after each per-node read that could not be trusted whole
    #: (a node failed, rows of foreign partitions, the partition map changed).
    rescans: tuple[tuple[int, ...], ...]
    #: The scan page size, in rows, that the next scan will ask for.
    page_rows: int
    #: Bytes of decode memory the dataset keeps for reuse.
    pooled_bytes: int

    @property
    def rows(self) -> int:
        """Rows read in all epochs so far."""
        return sum(self.rows_per_task.values())


class _ScanReader:
    """State shared by the generators of one dataset: client, schema, plan, sizing."""

    def __init__(self, client: IgniteClient, cache_name: str, schema: DatasetSchema,
                 tasks: Sequence[ScanTask], sizer: _PageSizer) -> None:
        self.client = client
        self.cache_name = cache_name
        self.schema = schema
        self.plan = schema.page_plan()
        self.tasks = tuple(tasks)
        self.sizer = sizer
        #: Rows read per scan task index during the current process (tests and launcher stats).
        self.rows_read: dict[int, int] = {}
        #: ``(partition, error)`` of every partition scan repeated after a failure.
        self.failovers: list[tuple[int, str]] = []
        self._stats_lock = threading.Lock()
        #: Reused memory for coalesced pages and decoded array columns (see protocol.pool).
        self.pool = BufferPool(_DECODE_POOL_BYTES)
        #: Scan the whole cache with one scan per node (set by IgniteDataset when the plan
        #: covers every partition, the cache has LONG or INT keys and partition awareness).
        self.node_scans = False
        self.partitions = 0
        #: "nodes" or "partitions": how the last epoch was scanned.
        self.last_scan = ""
        #: Partitions scanned again after per-node scans (a node failed, the topology changed).
        self.rescans: list[list[int]] = []
        self._partition_rows = 0
        self._partitions_done = 0

    def stats(self) -> ReadStats:
        with self._stats_lock:
            return ReadStats(
                rows_per_task=dict(self.rows_read), scan_mode=self.last_scan,
                failovers=tuple(self.failovers), rescans=tuple(tuple(r) for r in self.rescans),
                page_rows=self.sizer.rows(), pooled_bytes=self.pool.nbytes,
            )

    def _measure(self) -> None:
        # One entry of the cache tells how big rows are, so the first real
        # scan already gets pages of about `page_bytes`.
        cache = self.client.cache(self.cache_name)
        for page in cache.scan_pages(page_size=1):
            if page.row_count:
                self.sizer.observe(len(page.rows), page.row_count)
            break

    def batches(self, index: int) -> Iterator[dict[str, Any]]:
        """The batches of one scan task (one decoded batch per page)."""
        return self._read([int(index)], coalesce=False)

    def worker_batches(self, worker: int, workers: int) -> Iterator[dict[str, Any]]:
        """The batches of every ``workers``-th scan task from ``worker`` on, small pages coalesced.

        One generator per reader rather than per partition: creating and
        finishing a ``from_generator`` costs ~1 ms, as much as reading a small
        partition.  Consecutive pages are decoded together up to ``page_bytes``
        (or 65,536 rows), because decoding has a fixed cost per call and every
        batch handed to TensorFlow costs a ``from_generator`` step (60k MNIST
        rows in pages of 1024: median 0.32 -> 0.28 s against a page per batch).
        """
        return self._read(range(int(worker), len(self.tasks), max(1, int(workers))), coalesce=True)

    def _read(self, indices: Sequence[int] | range, *, coalesce: bool) -> Iterator[dict[str, Any]]:
        if not self.sizer.known:
            self._measure()
        indices = list(indices)
        if not indices:
            return
        cache = self.client.cache(self.cache_name)
        tasks = [self.tasks[i] for i in indices]
        pending: list[memoryview] = []
        pending_rows = 0
        pending_bytes = 0
        parts: list[int] = []
        # The first batches are cut small, so that a consumer (a training step)
        # starts while the rest of the epoch is read; then up to a page's rows.
        ramp = _FIRST_BATCH_ROWS
        for partitions, page in self._pages(cache, indices, tasks):
            n = page.row_count
            self.sizer.observe(len(page.rows), n)
            pending.append(page.rows)
            pending_rows += n
            pending_bytes += len(page.rows)
            for partition in partitions:
                if not parts or parts[-1] != partition:
                    parts.append(partition)
            if (not coalesce or pending_rows >= min(ramp, _MAX_PAGE_ROWS)
                    or pending_bytes >= self.sizer.page_bytes):
                yield self._decode(pending, pending_rows, parts)
                pending, pending_rows, pending_bytes, parts = [], 0, 0, []
                ramp *= 2
        if pending_rows:
            yield self._decode(pending, pending_rows, parts)

    def _pages(self, cache: Any, indices: list[int], tasks: list[ScanTask]) -> Iterator[tuple[list[int], ScanPage]]:
        """Non-empty pages of the given scan tasks, each with the partitions its rows come from (in order).

        A reader that covers every partition of the cache scans it with one scan
        per node (:meth:`Cache.scan_nodes`): a node sets up one scan instead of
        one per partition.  Otherwise pipelined partition scans
        (:meth:`Cache.scan_partitions`): the next partitions' requests are on
        the wire while this one is consumed.  Both read a partition whose node
        dies again from its new primary without repeating rows already yielded.
        """
        if self.node_scans and len(indices) == len(self.tasks):
            task_of = {t.partition: i for i, t in enumerate(self.tasks)}
            self.last_scan = "nodes"
            for partitions, page in cache.scan_nodes(self._row_ids, self.partitions, page_size=self.sizer.rows,
                                                     window=self._window,
                                                     on_failover=self._note_failover,
                                                     on_rescan=self.rescans.append):
                counts = np.bincount(partitions)
                for p in np.flatnonzero(counts).tolist():
                    index = task_of[p]
                    self.rows_read[index] = self.rows_read.get(index, 0) + int(counts[p])
                yield np.unique(partitions).tolist(), page
            return
        self.last_scan = "partitions"
        pages = cache.scan_partitions(
            [t.partition for t in tasks], local=tasks[0].local, page_size=self.sizer.rows,
            window=self._window, on_failover=self._note_failover,
        )
        current = -1
        try:
            for position, page in pages:
                if position != current:
                    self._count_partition(current >= 0)
                    current = position
                n = page.row_count
                if not n:
                    continue
                self._partition_rows += n
                index = indices[position]
                self.rows_read[index] = self.rows_read.get(index, 0) + n
                yield [tasks[position].partition], page
            self._count_partition(current >= 0)
        finally:
            pages.close()

    def _row_ids(self, page: ScanPage) -> tuple[np.ndarray, np.ndarray]:
        """Affinity partition and identity (the key) of every row of a page with LONG or INT keys."""
        starts = C.value_offsets(page.rows, page.row_count, 2)[:, 0]
        buf = np.frombuffer(page.rows, np.uint8)
        codes = C.take(buf, starts, np.uint8)
        longs = codes == TypeCode.LONG
        ints = codes == TypeCode.INT
        all_longs = bool(longs.all())
        if not all_longs and not np.all(longs | ints):
            bad = int(np.flatnonzero(~(longs | ints))[0])
            raise SchemaError(f"cache {self.cache_name!r}: a key has type code {int(codes[bad])}; the other keys "
                              "are LONG or INT, and a cache read as a dataset needs keys of one type")
        ids = np.empty(len(starts), np.int64)
        h = np.empty(len(starts), np.uint32)
        if all_longs or longs.any():  # Long.hashCode(): (int) (v ^ v >>> 32)
            v = C.take(buf, (starts if all_longs else starts[longs]) + 1, "<i8")
            u = v.view(np.uint64)
            hashes = ((u ^ (u >> np.uint64(32))) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
            if all_longs:
                ids, h = v, hashes
            else:
                ids[longs] = v
                h[longs] = hashes
        if not all_longs and ints.any():  # Integer.hashCode(): the value
            v32 = C.take(buf, starts[ints] + 1, "<i4")
            ids[ints] = v32
            h[ints] = v32.view(np.uint32)
        parts = self.partitions
        if parts & (parts - 1) == 0:  # RendezvousAffinityFunction: (h ^ h >>> 16) & mask
            partition = ((h ^ (h >> np.uint32(16))) & np.uint32(parts - 1)).astype(np.int64)
        else:  # |h % parts| with Java's remainder (the dividend's sign)
            partition = np.abs(np.fmod(h.view(np.int32).astype(np.int64), parts))
        return partition, ids

    def _count_partition(self, done: bool) -> None:
        if done:
            with self._stats_lock:
                self._partitions_done += 1

    def _window(self) -> int:
        """How many partition scans to keep on the wire: about ``_PIPELINE_BYTES`` of first pages.

        A first page holds a whole partition or a page, whichever is smaller;
        the average partition is learned as partitions complete.
        """
        per_row = self.sizer.row_bytes()
        rows = float(self.sizer.rows())
        with self._stats_lock:
            if self._partitions_done:
                rows = min(rows, max(1.0, self._partition_rows / self._partitions_done))
        return int(min(_MAX_WINDOW, max(1, _PIPELINE_BYTES // max(1.0, rows * per_row))))

    def _note_failover(self, partition: int, error: BaseException) -> None:
        with self._stats_lock:
            self.failovers.append((partition, f"{type(error).__name__}: {error}"))

    def _join(self, chunks: list[memoryview]) -> memoryview:
        """The chunks back to back, in reused memory when they are large."""
        total = sum(len(c) for c in chunks)
        if total < self.pool.min_size:
            return memoryview(b"".join(chunks))
        view = memoryview(self.pool.get(total))
        pos = 0
        for c in chunks:
            view[pos:pos + len(c)] = c
            pos += len(c)
        return view[:total]

    def _decode(self, chunks: list[memoryview], n: int, parts: list[int]) -> dict[str, Any]:
        # Page row regions are self-contained (object offsets are relative), so
        # the rows of several pages concatenate into one valid region.
        data = chunks[0] if len(chunks) == 1 else self._join(chunks)
        per_row = self.schema.per_row_leaves()
        try:
            columns = C.decode_page(data, n, self.plan, schema_resolver=self.client.metadata.schema_field_ids,
                                    pool=self.pool)
            if per_row:
                # Collections, maps, typed/object arrays: the general decoder, row by row.
                rows = decode_scan_rows(ScanPage(None, n, data, False), self.client.decoder())
                columns.update(rows_to_columns(per_row, rows))
        except C.FieldTypeError as exc:
            raise SchemaError(self._type_error(exc, data, n)) from None
        except SchemaError as exc:
            where = f"partition {parts[0]}" if len(parts) == 1 else f"partitions {parts[0]}..{parts[-1]}"
            raise SchemaError(f"cache {self.cache_name!r}, {where}: {exc}") from None
        return self.schema.to_batch(columns, n)

    def _type_error(self, exc: C.FieldTypeError, data: memoryview, n: int) -> str:
        """The message of a value that does not fit its column: cache, field, key of the row, both types."""
        try:
            start = int(C.value_offsets(data, n, 2)[exc.row, 0])
            key: Any = self.client.decoder().decode(data, start)
        except Exception as err:  # noqa: BLE001 - the message must not hide the original error
            key = f"<undecodable key: {err}>"
        field = exc.path.split(".", 1)[1] if "." in exc.path else exc.path
        return (f"cache {self.cache_name!r}, field {field!r}, key {key!r}: the value is {exc.found}, which does "
                f"not convert without loss to {exc.expected}, the field's type in the dataset schema "
                f"(column {exc.path!r}, holds type code {exc.found}). Fix the data, or pass schema=... / "
                "fields=[...] to read other fields")


class _SqlReader:
    def __init__(self, client: IgniteClient, query: str, args: Sequence[Any], schema: DatasetSchema,
                 sql_kwargs: Mapping[str, Any]) -> None:
        self.client = client
        self.query = query
        self.args = tuple(args)
        self.schema = schema
        self.plan = schema.page_plan()
        self.sql_kwargs = dict(sql_kwargs)

    def batches(self) -> Iterator[dict[str, Any]]:
        cursor = self.client.sql(self.query, self.args, **self.sql_kwargs)
        for page in cursor.pages():
            n = page.row_count
            if not n:
                continue
            try:
                columns = C.decode_page(page.rows, n, self.plan)
            except C.FieldTypeError as exc:
                raise SchemaError(f"query {self.query!r}: {exc}") from None  # exc names the column
            yield self.schema.to_batch(columns, n)


class IgniteDataset(tf.data.Dataset):
    """A ``tf.data.Dataset`` over an Apache Ignite cache.

    Elements look like ``{'key': 1, 'val': {'NAME': b'WARM KITTY'}}``: ``key`` and
    ``val`` are tensors for scalar keys/values and (nested) dicts of tensors for
    binary objects; see :mod:`tensorflow_ignite.data.schema` for the type mapping.

    The positional parameters are those of the original
    ``tf.contrib.ignite.IgniteDataset``; every one of them can be overridden by
    an ``IGNITE_DATASET_*`` environment variable (:mod:`.env`).

    Args:
      cache_name: the cache to read.
      host, port: a node's thin-client endpoint; the other nodes are discovered.
      local: scan only the entries stored on the connected node.
      part: scan only this partition (``-1``: all).
      page_size: rows per page; ``None`` sizes pages to about ``page_bytes``.
      username, password: credentials for clusters with authentication.
      certfile, keyfile, cert_password: client certificate for TLS.
      cafile: CA that signed the nodes' certificates (TLS is on when this or
        ``certfile`` is given; the server certificate is always verified unless
        ``insecure_skip_verify=True``).
      server_hostname: check the nodes' certificates against this name instead
        of the address dialled (e.g. nodes reached through a proxy or NAT).
      insecure_skip_hostname_verification: verify the certificate chain but not
        the host name (logged as a warning).
      batch_size: yield batches of this many rows instead of single elements.
      parts: scan exactly these partitions (``IGNITE_DATASET_PARTS``).
      num_parallel_reads: readers walking the partitions concurrently (default 1: one reader
        already keeps up to 16 partition scans on the wire).
      value_type: binary type name of the values, when the cache declares none.
      key_type: Java class name (``"java.lang.Integer"``) or type code of the keys,
        for typed but empty caches (default ``long``).
      fields: only these value fields (default: all).
      schema: an explicit :class:`~.schema.DatasetSchema`.
      null_masks: add ``<field>_present`` booleans next to nullable fields.
      decimal_as: ``"float64"`` (default) or ``"string"``.
      client: an existing :class:`IgniteClient` to use (then ``host``/``port`` and
        the credential arguments are ignored).
      timeout: seconds to wait for a node's answer, and the longest a partition
        scan is retried on other nodes after its node failed before iteration
        raises :class:`~tensorflow_ignite.errors.IgniteConnectionError`.
    """

    def __init__(
        self,
        cache_name: str,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        local: bool = False,
        part: int = -1,
        page_size: int | None = None,
        username: str | None = None,
        password: str | None = None,
        certfile: str | None = None,
        keyfile: str | None = None,
        cert_password: str | None = None,
        *,
        cafile: str | None = None,
        insecure_skip_verify: bool = False,
        server_hostname: str | None = None,
        insecure_skip_hostname_verification: bool = False,
        batch_size: int | None = None,
        drop_remainder: bool = False,
        parts: Sequence[int] | None = None,
        num_parallel_reads: int | None = None,
        page_bytes: int = DEFAULT_PAGE_BYTES,
        value_type: str | None = None,
        key_type: str | int | None = None,
        fields: Sequence[str] | None = None,
        schema: DatasetSchema | None = None,
        null_masks: bool = False,
        decimal_as: str = "float64",
        client: IgniteClient | None = None,
        timeout: float = 30.0,
    ) -> None:
        params = apply_env_overrides(dict(
            host=host, port=port, local=local, part=part, page_size=page_size, username=username,
            password=password, certfile=certfile, keyfile=keyfile, cert_password=cert_password,
            cafile=cafile, parts=parts,
        ))
        if params["page_size"] is not None and params["page_size"] <= 0:
            raise ConfigurationError(f"page_size must be positive, got {params['page_size']}")
        if batch_size is not None and batch_size <= 0:
            raise ConfigurationError(f"batch_size must be positive, got {batch_size}")
        if decimal_as not in ("float64", "string"):
            raise ConfigurationError("decimal_as is 'float64' or 'string'")
        self.cache_name = cache_name
        self.connection = ConnectionOptions(
            host=params["host"], port=int(params["port"]), username=params["username"],
            password=params["password"], cafile=params["cafile"], certfile=params["certfile"],
            keyfile=params["keyfile"], cert_password=params["cert_password"],
            insecure_skip_verify=insecure_skip_verify, server_hostname=server_hostname,
            insecure_skip_hostname_verification=insecure_skip_hostname_verification, timeout=timeout,
        )
        self.client = client if client is not None else self.connection.connect()

        if cache_name not in self.client.cache_names():
            raise CacheNotFoundError(
                f"cache {cache_name!r} does not exist on the cluster at {self.connection.host}:"
                f"{self.connection.port}; existing caches: {sorted(self.client.cache_names())[:20]}",
                status=1000,
            )
        self.schema = schema or self._resolve_schema(value_type, key_type, fields, null_masks, decimal_as)
        pmap = self.client.partition_map(cache_name)
        if params.get("parts") is None and params["part"] < 0 and not params["local"] and not pmap.applicable:
            self.plan = PartitionPlan((ScanTask(-1),))  # replicated cache: one scan
        else:
            self.plan = PartitionPlan.build(
                partitions=pmap.partitions or 1024, part=params["part"], parts=params.get("parts"),
                local=bool(params["local"]), cache_name=cache_name,
            )
        self.batch_size = batch_size
        self._reader = _ScanReader(self.client, cache_name, self.schema, self.plan.tasks,
                                   _PageSizer(params["page_size"], page_bytes))
        key = self.schema.key
        if (params.get("parts") is None and params["part"] < 0 and not params["local"] and pmap.applicable
                and pmap.partitions and self.client.partition_awareness and key is not None
                and not key.is_object and int(key.type_code) in (TypeCode.LONG, TypeCode.INT)):
            # The whole cache with scalar keys: one scan per node (see Cache.scan_nodes).
            self._reader.node_scans = True
            self._reader.partitions = pmap.partitions
        # One reader by default: it already keeps many partition scans on the wire,
        # more threads only contend for the GIL, and every reader beyond the first
        # adds an interleave whose start costs tens of milliseconds per epoch
        # (60k small rows, 2 cores: 1/2/4 readers 0.64/0.68/0.81 s).
        reads = num_parallel_reads or min(len(self.plan), _DEFAULT_READERS)
        pool = self._reader.pool
        self._dataset = _assemble(self._reader.worker_batches, len(self.plan), self.schema, reads,
                                  batch_size, drop_remainder,
                                  allocate=lambda shape, dtype: aligned_empty(shape, dtype, pool))
        super().__init__(self._dataset._variant_tensor)

    # ---------------------------------------------------------------- schema
    def _resolve_schema(self, value_type: str | None, key_type: str | int | None,
                        fields: Sequence[str] | None, null_masks: bool,
                        decimal_as: str) -> DatasetSchema:
        record = load_schema(self.client, self.cache_name)
        entity = None
        if record is None:
            config = self.client.cache(self.cache_name).configuration()
            entity = config.query_entities[0] if config.query_entities else None
        # Entries are sampled only where metadata cannot tell: untyped caches, and
        # fields Ignite records as plain "object" (nested objects, first-null fields).
        type_name = value_type or (record.type_name if record else None) or (entity.value_type if entity else None)
        samples: list[tuple[Any, Any]] = []
        if type_name is None or _has_object_fields(self.client, type_name):
            samples = _sample_entries(self.client, self.cache_name, 32)
        return resolve_schema(
            self.client, self.cache_name, value_type=value_type, key_type=key_type,
            fields=list(fields) if fields else None,
            null_masks=null_masks, decimal_as=decimal_as, record=record, samples=samples, query_entity=entity,
        )

    # ---------------------------------------------------------------- tf.data
    def _inputs(self) -> list[tf.data.Dataset]:
        return []

    @property
    def element_spec(self) -> Any:
        return self._dataset.element_spec

    @property
    def stats(self) -> ReadStats:
        """A snapshot of what this dataset's reads have done (rows, scan mode, failovers, rescans)."""
        return self._reader.stats()

    # ---------------------------------------------------------------- SQL
    @staticmethod
    def from_sql(
        query: str,
        args: Sequence[Any] = (),
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        *,
        batch_size: int | None = None,
        drop_remainder: bool = False,
        page_size: int = 1024,
        schema: str = "PUBLIC",
        column_types: Mapping[str, int] | None = None,
        null_masks: bool = False,
        username: str | None = None,
        password: str | None = None,
        cafile: str | None = None,
        certfile: str | None = None,
        keyfile: str | None = None,
        cert_password: str | None = None,
        insecure_skip_verify: bool = False,
        server_hostname: str | None = None,
        insecure_skip_hostname_verification: bool = False,
        client: IgniteClient | None = None,
        lazy: bool = True,
    ) -> tf.data.Dataset:
        """A dataset of the rows of an SQL query: ``{COLUMN: tensor}`` per row (or batch).

        Projection and filtering run in Ignite.  Column types come from one
        sampled row; for a query that may return nothing pass ``column_types``
        (column name -> :class:`~tensorflow_ignite.protocol.codes.TypeCode`).
        """
        params = apply_env_overrides(dict(host=host, port=port, username=username, password=password,
                                          cafile=cafile, certfile=certfile, keyfile=keyfile,
                                          cert_password=cert_password))
        options = ConnectionOptions(host=params["host"], port=int(params["port"]), username=params["username"],
                                    password=params["password"], cafile=params["cafile"],
                                    certfile=params["certfile"], keyfile=params["keyfile"],
                                    cert_password=params["cert_password"],
                                    insecure_skip_verify=insecure_skip_verify,
                                    server_hostname=server_hostname,
                                    insecure_skip_hostname_verification=insecure_skip_hostname_verification)
        cl = client if client is not None else options.connect()
        sql_kwargs = dict(schema=schema, page_size=page_size, lazy=lazy)
        ds_schema = replace(_sql_schema(cl, query, args, sql_kwargs, column_types or {}), null_masks=null_masks)
        reader = _SqlReader(cl, query, args, ds_schema, sql_kwargs)
        return _assemble(lambda _w, _n: reader.batches(), 1, ds_schema, 1, batch_size, drop_remainder)


def _sample_entries(client: IgniteClient, cache_name: str, n: int) -> list[tuple[Any, Any]]:
    out: list[tuple[Any, Any]] = []
    for page in client.cache(cache_name).scan_pages(page_size=n):
        out.extend(decode_scan_rows(page, client.decoder()))
        break  # closing the generator frees the server cursor
    return out


def _has_object_fields(client: IgniteClient, type_name: str) -> bool:
    bt = client.binary_type(type_name)
    return bt is not None and any(int(f.type_code) == TypeCode.OBJ for f in bt.fields.values())


def _sql_schema(client: IgniteClient, query: str, args: Sequence[Any], sql_kwargs: Mapping[str, Any],
                column_types: Mapping[str, int], sample_rows: int = 64) -> DatasetSchema:
    cursor = client.sql(query, args, **{**sql_kwargs, "page_size": sample_rows})
    sample: list[list[Any]] = []
    for row in cursor:
        sample.append(row)
        if len(sample) >= sample_rows:
            break
    names = cursor.column_names or ()
    cols: list[FieldSchema] = []
    for i, name in enumerate(names):
        seen = next((r[i] for r in sample if r[i] is not None), None)
        if name in column_types:
            cols.append(replace(leaf_from_type_code(name, int(column_types[name])), name=name))
        elif seen is not None:
            from ..protocol.binary import BinaryEncoder

            cols.append(replace(leaf_from_type_code(name, int(BinaryEncoder.infer_type_code(seen))), name=name))
        else:
            raise SchemaError(
                f"cannot tell the type of SQL column {name!r}: it is NULL in every sampled row (or there "
                f"are none); pass column_types={{'{name}': TypeCode.X}}"
            )
    return DatasetSchema(None, None, columns=tuple(cols))


#: ``TF_IGNITE_DATASET_SOURCE=generator`` makes datasets use ``tf.data.Dataset.from_generator``
#: instead of the native source op (``native``, the default when it can be built).
SOURCE_ENV = "TF_IGNITE_DATASET_SOURCE"
_native_warned = False


def _use_native_source(signature: Any) -> bool:
    """The native source op for this signature, unless disabled or unavailable (warned once)."""
    global _native_warned
    choice = os.environ.get(SOURCE_ENV, "native").strip().lower()
    if choice not in ("native", "generator"):
        raise ConfigurationError(f"{SOURCE_ENV} is 'native' or 'generator', not {choice!r}")
    if choice == "generator" or not data_source.supports(signature):
        return False
    reason = data_source.unavailable_reason()
    if reason is None:
        return True
    if not _native_warned:
        _native_warned = True
        log.warning("IgniteDataset falls back to tf.data.Dataset.from_generator (a slower start of "
                    "every epoch): the native source op is not available: %s", reason)
    return False


def _assemble(batches: Any, n_tasks: int, schema: DatasetSchema, parallel: int, batch_size: int | None,
              drop_remainder: bool, allocate: data_source.Allocator | None = None) -> tf.data.Dataset:
    """Interleave ``parallel`` generators ``batches(worker, workers)``, then cut batches or unbatch.

    Each generator walks its share of the ``n_tasks`` scans (see
    :meth:`_ScanReader.worker_batches`).  One reader runs through the native
    source op (:mod:`tensorflow_ignite.native.data_source`) when the element
    spec is dense (batches spanning two pages are joined into ``allocate``'s
    memory); several readers, ragged fields or ``TF_IGNITE_DATASET_SOURCE=generator``
    use ``from_generator``.
    """
    signature = schema.element_spec(batched=True)
    workers = max(1, min(parallel, n_tasks))

    def make(worker: Any) -> tf.data.Dataset:
        return tf.data.Dataset.from_generator(batches, args=(worker, np.int64(workers)), output_signature=signature)

    if workers == 1 and _use_native_source(signature):
        def factory() -> Any:
            return batches(np.int64(0), np.int64(1))

        if batch_size is not None:  # cut in Python: cheaper per batch than Dataset.rebatch
            return data_source.python_source(factory, signature, batch_size=batch_size,
                                             drop_remainder=drop_remainder, allocate=allocate)
        return data_source.python_source(factory, signature).unbatch()
    if workers == 1:
        ds = make(np.int64(0))
    else:
        ds = tf.data.Dataset.range(workers).interleave(
            make, cycle_length=workers, num_parallel_calls=workers, deterministic=False,
        )
    if batch_size is None:
        return ds.unbatch()
    return ds.rebatch(batch_size, drop_remainder=drop_remainder)
