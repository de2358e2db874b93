"""The readers behind IgniteDataset: scan pages in, columnar batches out, progress kept.

:class:`ScanReader` reads a cache's partitions (:class:`~.plan.PartitionPlan`)
and :class:`SqlReader` an SQL query; both turn pages into batches of NumPy
columns (:func:`tensorflow_ignite.protocol.columns.decode_page`).  A reader is
built once per dataset (or once per process rebuilding a dataset from its
description, :mod:`.portable`); every iterator TensorFlow creates starts a
*run* (:meth:`ScanReader.run`): the batches of one epoch, the rows it has
handed out (:class:`~.progress.ReadProgress`) and the state a checkpoint
saves.  A run reads either

* the whole plan: one scan per node when the plan covers every partition of a
  cache with ``long``/``int`` keys (:meth:`Cache.scan_nodes`), else pipelined
  partition scans (:meth:`Cache.scan_partitions`);
* the partitions a saved state has not finished, the partly read ones without
  the rows already handed out (partition scans);
* or the partitions a split provider hands it (the tf.data service's dynamic
  sharding: ``next_split()`` returns plan indices), pulled as the scan window
  needs them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..client import IgniteClient
from ..client.cache import NodeScanProgress, select_rows
from ..client.progress import (
    ReadProgress,
    ResumeState,
    ShuffledEpochs,
    plan_fingerprint,
    resume_from,
    row_identities,
)
from ..client.pump import pumped_row_ids
from ..errors import ArrayLengthError, ConfigurationError, SchemaError, UnsupportedOperationError
from ..protocol import columns as C
from ..protocol.codes import TypeCode
from ..protocol.hashing import affinity_partitions, long_hash_codes
from ..protocol.pool import BufferPool
from ..protocol.responses import ScanPage, decode_scan_rows
from .plan import ScanTask
from .schema import DatasetSchema, rows_to_columns

__all__ = ["PageSizer", "ReadStats", "ScanReader", "ScanRun", "SqlReader", "NextSplit", "DEFAULT_PAGE_BYTES"]

#: ``next_split()`` -> the plan index of the next partition to read, or None when there are no more.
NextSplit = Callable[[], "int | None"]

#: Default target size of one scan page when ``page_size`` is not given.
DEFAULT_PAGE_BYTES = 4 << 20
_MIN_PAGE_ROWS = 16
_MAX_PAGE_ROWS = 65536
#: Bytes of first pages a reader lets partition scans have on the wire at once,
#: and the most scans it pipelines (Ignite allows 128 open cursors per connection).
_PIPELINE_BYTES = 16 << 20
_MAX_WINDOW = 16
#: Most bytes of reused memory a dataset keeps for decoding (coalesced pages, array columns).
_DECODE_POOL_BYTES = 128 << 20
#: A node scan's pages are read ahead of the decoder by a thread, up to this many coalesced
#: batches' worth (``page_bytes`` each): the node keeps serving while a batch is decoded and
#: handed out. Measured on 60k MNIST rows, one node, pages of 1024 rows: IgniteDataset in TF
#: 0.55-0.56x -> 0.65-0.68x the raw-page rate (paired medians of 21-25 reads; 4 and 16 MiB alike).
#: Not for pages larger than half of it (bulk rows: see ``ScanReader._read_ahead``).
_READ_AHEAD_BATCHES = 2
#: Rows of a reader's first coalesced batch; each next one may be twice as large.
_FIRST_BATCH_ROWS = 512


class PageSizer:
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
    #: Rows dropped by resumed reads because a saved state says they were handed out already.
    resumed_skips: int = 0
    #: Batches decoded per decoder, all epochs so far: ``"compiled"`` (pages whose rows repeat one
    #: layout, through the op library's compiled decoder) and ``"python"`` (the rest, or every
    #: batch where the op library is not loaded or ``TF_IGNITE_DECODER=python``; a log line says why).
    decode_paths: Mapping[str, int] = field(default_factory=dict)
    #: Pages after each node scan's first, all epochs so far, per fetcher: ``"compiled"`` (the op
    #: library's scan pump, on the connection leased to it) and ``"python"`` (the Python read-ahead:
    #: where the pump cannot run -- TLS, no op library, ``TF_IGNITE_SCAN=python`` -- a log line says why).
    fetch_paths: Mapping[str, int] = field(default_factory=dict)
    #: Pages of node scans given their rows' keys and partitions, all epochs so far, per path:
    #: ``"pump"`` (computed by the compiled scan pump's thread as it received the page, without the
    #: GIL) and ``"python"`` (the rest: first pages, the Python read-ahead, keys or values the pump
    #: does not step over).
    id_paths: Mapping[str, int] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        """Rows read in all epochs so far."""
        return sum(self.rows_per_task.values())


class ScanRun:
    """One iterator's read of a :class:`ScanReader`: its batches, and its state for a checkpoint.

    Iterating yields the batches; the consumer reports the rows it hands to
    TensorFlow with :meth:`emitted`; :meth:`save` encodes the state as of
    those rows (:class:`~.progress.ResumeState`).
    """

    def __init__(self, reader: "ScanReader", resume: ResumeState | None, next_split: NextSplit | None) -> None:
        self.splits = next_split is not None
        n = len(reader.tasks)
        order: Sequence[int] = range(n)
        #: The shuffled epoch this run reads (None: plan order, or the order a dispatcher hands out).
        self.epoch: int | None = None
        if reader.shuffle is not None and next_split is None:
            self.epoch = reader.shuffle.start(resume.epoch if resume is not None else None)
            order = reader.shuffle.order(self.epoch, n)
        self.progress = ReadProgress(reader.fingerprint, resume, epoch=self.epoch)
        #: ``emitted(rows)``: ``rows`` more rows were handed to TensorFlow.
        self.emitted = self.progress.emitted
        indices: Iterable[int]
        if next_split is not None:
            indices = _split_indices(next_split, n, reader.cache_name)
        elif resume is not None:
            indices = [i for i in order if reader.tasks[i].partition not in resume.done]
        else:
            indices = order
        self._batches = reader._read(
            indices,
            coalesce=True,
            progress=self.progress,
            whole=resume is None and next_split is None and self.epoch is None,
        )
        self._cache = reader.cache_name

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self._batches

    def save(self) -> bytes:
        if self.splits:
            raise UnsupportedOperationError(
                f"IgniteDataset over cache {self._cache!r}: this iterator reads the partitions a tf.data "
                "service dispatcher hands out (processing_mode='distributed_epoch'), which it does not "
                "checkpoint; save iterators of the dataset itself (tf.train.Checkpoint(iterator=iter(ds))), "
                "which resume exactly once"
            )
        return self.progress.state().encode()

    def close(self) -> None:
        self._batches.close()


def _split_indices(next_split: NextSplit, n: int, cache_name: str) -> Iterator[int]:
    while True:
        index = next_split()
        if index is None:
            return
        if not 0 <= index < n:
            raise ConfigurationError(
                f"cache {cache_name!r}: split {index} is outside the dataset's plan of "
                f"{n} partitions (was the dataset rebuilt from another description?)"
            )
        yield int(index)


class ScanReader:
    """State shared by the runs of one dataset: client, schema, plan, sizing."""

    def __init__(
        self, client: IgniteClient, cache_name: str, schema: DatasetSchema, tasks: Sequence[ScanTask], sizer: PageSizer
    ) -> None:
        self.client = client
        self.cache_name = cache_name
        self.schema = schema
        self.plan = schema.page_plan()
        self.tasks = tuple(tasks)
        self.sizer = sizer
        #: Identifies the plan in saved states (a state resumes only the plan it came from).
        self.fingerprint = plan_fingerprint(cache_name, [t.partition for t in self.tasks])
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
        self.resumed_skips = 0
        #: Batches decoded per decoder (``ReadStats.decode_paths``).
        self.decode_paths: dict[str, int] = {}
        #: Read-ahead pages fetched per fetcher (``ReadStats.fetch_paths``).
        self.fetch_paths: dict[str, int] = {}
        #: Node-scan pages given row ids per path (``ReadStats.id_paths``).
        self.id_paths: dict[str, int] = {}
        self._partition_rows = 0
        self._partitions_done = 0
        #: Read the partitions in an order drawn from a seed and the epoch (``shuffle=True``).
        self.shuffle: ShuffledEpochs | None = None

    @property
    def splittable(self) -> bool:
        """True when the plan is a list of partitions that any node can serve (splits for the tf.data service)."""
        return bool(self.tasks) and all(t.partition >= 0 and not t.local for t in self.tasks)

    def stats(self) -> ReadStats:
        with self._stats_lock:
            return ReadStats(
                rows_per_task=dict(self.rows_read),
                scan_mode=self.last_scan,
                failovers=tuple(self.failovers),
                rescans=tuple(tuple(r) for r in self.rescans),
                page_rows=self.sizer.rows(),
                pooled_bytes=self.pool.nbytes,
                resumed_skips=self.resumed_skips,
                decode_paths=dict(self.decode_paths),
                fetch_paths=dict(self.fetch_paths),
                id_paths=dict(self.id_paths),
            )

    def run(self, state: bytes | None = None, next_split: NextSplit | None = None) -> ScanRun:
        """A read from the beginning, from a saved ``state``, or of the partitions ``next_split`` hands out."""
        read = f"read of cache {self.cache_name!r} ({len(self.tasks)} partitions)"
        resume = resume_from(state, ResumeState.decode, self.fingerprint, read=read, same="same cache, same parts=...")
        return ScanRun(self, resume, next_split)

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
        workers = max(1, int(workers))
        return self._read(range(int(worker), len(self.tasks), workers), coalesce=True, whole=workers == 1)

    def _read(
        self, indices: Iterable[int], *, coalesce: bool, progress: ReadProgress | None = None, whole: bool = False
    ) -> Iterator[dict[str, Any]]:
        if not self.sizer.known:
            self._measure()
        cache = self.client.cache(self.cache_name)
        pending: list[memoryview] = []
        pending_rows = 0
        pending_bytes = 0
        parts: list[int] = []
        # The first batches are cut small, so that a consumer (a training step)
        # starts while the rest of the epoch is read; then up to a page's rows.
        ramp = _FIRST_BATCH_ROWS
        for partitions, page in self._pages(cache, indices, whole, progress):
            n = page.row_count
            self.sizer.observe(len(page.rows), n)
            pending.append(page.rows)
            pending_rows += n
            pending_bytes += len(page.rows)
            for partition in partitions:
                if not parts or parts[-1] != partition:
                    parts.append(partition)
            if not coalesce or pending_rows >= min(ramp, _MAX_PAGE_ROWS) or pending_bytes >= self.sizer.page_bytes:
                yield self._decode(pending, pending_rows, parts)
                pending, pending_rows, pending_bytes, parts = [], 0, 0, []
                ramp *= 2
        if pending_rows:
            yield self._decode(pending, pending_rows, parts)

    def _pages(
        self, cache: Any, indices: Iterable[int], whole: bool, progress: ReadProgress | None
    ) -> Iterator[tuple[list[int], ScanPage]]:
        """Non-empty pages of the given scan tasks, each with the partitions its rows come from (in order).

        A read of every partition of the cache (``whole``) scans it with one
        scan per node (:meth:`Cache.scan_nodes`): a node sets up one scan
        instead of one per partition.  Otherwise pipelined partition scans
        (:meth:`Cache.scan_partitions`): the next partitions' requests are on
        the wire while this one is consumed (``indices`` may be lazy: they are
        pulled as the window needs them).  Both read a partition whose node
        dies again from its new primary without repeating rows already yielded.
        Every page goes into ``progress``'s ledger before it is yielded.
        """
        if self.node_scans and whole:
            yield from self._node_pages(cache, progress)
            return
        self.last_scan = "partitions"
        pulled: list[int] = []

        def partitions() -> Iterator[int]:
            for i in indices:
                pulled.append(i)
                yield self.tasks[i].partition

        local = bool(self.tasks) and self.tasks[0].local
        pages = cache.scan_partitions(
            partitions(), local=local, page_size=self.sizer.rows, window=self._window, on_failover=self._note_failover
        )
        current = -1
        partition = -1
        skip: np.ndarray | None = None
        try:
            for position, page in pages:
                if position != current:
                    self._count_partition(current >= 0)
                    if progress is not None and current >= 0:
                        progress.complete(partition)
                    current = position
                    partition = self.tasks[pulled[position]].partition
                    skip = progress.partial_ids(partition) if progress is not None else None
                n = page.row_count
                if not n:
                    continue
                if skip is not None:  # resumed: drop the rows the saved state says were handed out
                    keep = ~np.isin(row_identities(page.rows, n), skip)
                    if not keep.all():
                        with self._stats_lock:
                            self.resumed_skips += n - int(np.count_nonzero(keep))
                        page = select_rows(page, keep)
                        n = page.row_count
                        if not n:
                            continue
                self._partition_rows += n
                index = pulled[position]
                self.rows_read[index] = self.rows_read.get(index, 0) + n
                if progress is not None:
                    progress.add_page(partition, page.rows, n)
                yield [partition], page
            self._count_partition(current >= 0)
            if progress is not None and current >= 0:
                progress.complete(partition)
        finally:
            pages.close()

    def _node_pages(self, cache: Any, progress: ReadProgress | None) -> Iterator[tuple[list[int], ScanPage]]:
        task_of = {t.partition: i for i, t in enumerate(self.tasks)}
        self.last_scan = "nodes"
        watch = NodeScanProgress()
        if progress is not None:
            progress.trust = lambda partitions: watch.trusted(partitions, cache)
        for partitions, ids, page in cache.scan_nodes(
            self._row_ids,
            self.partitions,
            page_size=self.sizer.rows,
            window=self._window,
            on_failover=self._note_failover,
            on_rescan=self.rescans.append,
            progress=watch,
            read_ahead=self._read_ahead(),
            fetch_paths=self.fetch_paths,
        ):
            counts = np.bincount(partitions)
            for p in np.flatnonzero(counts).tolist():
                index = task_of[p]
                self.rows_read[index] = self.rows_read.get(index, 0) + int(counts[p])
            if progress is not None:
                progress.add_rows(partitions, ids)
            yield np.unique(partitions).tolist(), page

    def _read_ahead(self) -> int:
        """Bytes a node scan reads ahead of the decoder: two coalesced batches, when two pages fit in them.

        Pages larger than that (bulk rows) are not read ahead: the thread could hold only the
        next page, as one request ahead does, and handing each page over cost 5-7 % of the rate.
        """
        budget = _READ_AHEAD_BATCHES * self.sizer.page_bytes
        return budget if 2 * self.sizer.rows() * self.sizer.row_bytes() <= budget else 0

    def _row_ids(self, page: ScanPage) -> tuple[np.ndarray, np.ndarray]:
        """Affinity partition and identity (the key) of every row of a page with LONG or INT keys.

        The compiled scan pump computes keys and hash codes on its own thread for the pages it
        fetches (:func:`~tensorflow_ignite.client.pump.pumped_row_ids`); other pages here.
        """
        pumped = pumped_row_ids(page.rows, page.row_count)
        path = "python" if pumped is None else "pump"
        with self._stats_lock:
            self.id_paths[path] = self.id_paths.get(path, 0) + 1
        if pumped is not None:
            return affinity_partitions(pumped[1], self.partitions), pumped[0]
        starts = C.value_offsets(page.rows, page.row_count, 2)[:, 0]
        buf = np.frombuffer(page.rows, np.uint8)
        codes = C.take(buf, starts, np.uint8)
        longs = codes == TypeCode.LONG
        ints = codes == TypeCode.INT
        all_longs = bool(longs.all())
        if not all_longs and not np.all(longs | ints):
            bad = int(np.flatnonzero(~(longs | ints))[0])
            raise SchemaError(
                f"cache {self.cache_name!r}: a key has type code {int(codes[bad])}; the other keys "
                "are LONG or INT, and a cache read as a dataset needs keys of one type"
            )
        ids = np.empty(len(starts), np.int64)
        h = np.empty(len(starts), np.uint32)
        if all_longs or longs.any():  # Long.hashCode(): (int) (v ^ v >>> 32)
            v = C.take(buf, (starts if all_longs else starts[longs]) + 1, "<i8")
            hashes = long_hash_codes(v)
            if all_longs:
                ids, h = v, hashes
            else:
                ids[longs] = v
                h[longs] = hashes
        if not all_longs and ints.any():  # Integer.hashCode(): the value
            v32 = C.take(buf, starts[ints] + 1, "<i4")
            ids[ints] = v32
            h[ints] = v32.view(np.uint32)
        return affinity_partitions(h, self.partitions), ids

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
            view[pos : pos + len(c)] = c
            pos += len(c)
        return view[:total]

    def decode_rows(self, region: memoryview, n: int) -> dict[str, Any]:
        """A batch of ``n`` (key, value) pairs laid out as a scan page's rows (a follower's events)."""
        return self._decode([region], n, [])

    def _decode(self, chunks: list[memoryview], n: int, parts: list[int]) -> dict[str, Any]:
        # Page row regions are self-contained (object offsets are relative), so
        # the rows of several pages concatenate into one valid region.
        data = chunks[0] if len(chunks) == 1 else self._join(chunks)
        per_row = self.schema.per_row_leaves()
        try:
            paths: dict[str, int] = {}
            columns = C.decode_page(
                data,
                n,
                self.plan,
                schema_resolver=self.client.metadata.schema_field_ids,
                pool=self.pool,
                paths=paths,
            )
            with self._stats_lock:
                for path, count in paths.items():
                    self.decode_paths[path] = self.decode_paths.get(path, 0) + count
            if per_row:
                # Collections, maps, typed/object arrays: the general decoder, row by row.
                rows = decode_scan_rows(ScanPage(None, n, data, False), self.client.decoder())
                columns.update(rows_to_columns(per_row, rows))
        except C.FieldTypeError as exc:
            raise SchemaError(self._type_error(exc, data, n)) from None
        except ArrayLengthError as exc:
            raise ArrayLengthError(
                exc.path,
                exc.row,
                exc.found,
                exc.expected,
                cache=self.cache_name,
                key=self._row_key(data, n, exc.row),
                shape=self._shape_of(exc.path),
            ) from None
        except SchemaError as exc:
            where = (
                "events"
                if not parts
                else f"partition {parts[0]}"
                if len(parts) == 1
                else f"partitions {parts[0]}..{parts[-1]}"
            )
            raise SchemaError(f"cache {self.cache_name!r}, {where}: {exc}") from None
        return self.schema.to_batch(columns, n)

    def _row_key(self, data: memoryview, n: int, row: int) -> Any:
        """The key of row ``row`` of a decoded region (for error messages)."""
        try:
            start = int(C.value_offsets(data, n, 2)[row, 0])
            return self.client.decoder().decode(data, start)
        except Exception as err:  # noqa: BLE001 - the message must not hide the original error
            return f"<undecodable key: {err}>"

    def _shape_of(self, path: str) -> tuple[int, ...] | None:
        """The declared per-row shape of the dense column at ``path`` (``"val.pixels"``)."""
        for p, f in self.schema.leaves():
            if p == path:
                return tuple(int(d) for d in f.shape if d is not None) or None
        return None

    def _type_error(self, exc: C.FieldTypeError, data: memoryview, n: int) -> str:
        """The message of a value that does not fit its column: cache, field, key of the row, both types."""
        key = self._row_key(data, n, exc.row)
        field = exc.path.split(".", 1)[1] if "." in exc.path else exc.path
        return (
            f"cache {self.cache_name!r}, field {field!r}, key {key!r}: the value is {exc.found}, which does "
            f"not convert without loss to {exc.expected}, the field's type in the dataset schema "
            f"(column {exc.path!r}, holds type code {exc.found}). Fix the data, or pass schema=... / "
            "fields=[...] to read other fields"
        )


class SqlReader:
    """The rows of an SQL fields query, page by page, as columnar batches."""

    def __init__(
        self,
        client: IgniteClient,
        query: str,
        args: Sequence[Any],
        schema: DatasetSchema,
        sql_kwargs: Mapping[str, Any],
    ) -> None:
        self.client = client
        self.query = query
        self.args = tuple(args)
        self.schema = schema
        self.plan = schema.page_plan()
        self.sql_kwargs = dict(sql_kwargs)

    def run(self, state: bytes | None = None, next_split: NextSplit | None = None) -> "SqlRun":
        if state is not None or next_split is not None:
            raise UnsupportedOperationError(self._unsupported())
        return SqlRun(self)

    def _unsupported(self) -> str:
        return (
            f"IgniteDataset.from_sql({self.query!r}): an SQL query's rows carry no partition or key to "
            "resume or split by, so its iterators cannot be saved in a checkpoint and tf.data service "
            "workers can only read it whole (processing_mode='parallel_epochs'); for exactly-once resume "
            "read the table's cache with IgniteDataset(cache_name, fields=[...])"
        )

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


class SqlRun:
    """One iterator's read of an SQL query (not resumable: see :meth:`SqlReader.run`)."""

    def __init__(self, reader: SqlReader) -> None:
        self._reader = reader
        self._batches = reader.batches()

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self._batches

    def emitted(self, rows: int) -> None:
        pass

    def save(self) -> bytes:
        raise UnsupportedOperationError(self._reader._unsupported())

    def close(self) -> None:
        self._batches.close()
