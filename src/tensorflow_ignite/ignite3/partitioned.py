"""Partition-aware, resumable reads of an Ignite 3 table: the runs behind ``from_table``.

Ignite 3.1 has no op that scans one partition, and its SQL does not prune on
the hidden partition column, so a read goes *node by node*: when a run starts
it dials every endpoint of its options (one connection per node, named at the
handshake), asks the partition assignment (PARTITION_ASSIGNMENT_GET) and
sends each primary node one query over its own partitions::

    SELECT <columns>[, <key columns not among them>] FROM T WHERE "__part" IN (...) [AND (<where>)]

A query over every partition of the table (one node, or the only one that
answers) has no ``"__part"`` filter; ``SELECT *`` of such a read is then
exactly the table's columns, the cheapest query for the node (no projection
to build per row).  The queries run in parallel, one thread each (pages
decoded there into NumPy columns), and their pages meet in one bounded queue
that the run's consumer -- the native source op
(:mod:`tensorflow_ignite.native.data_source`) -- empties.  A partition whose
primary is not among the connected nodes goes to any connected node (the
node forwards; routing saves work, it is not needed for correctness).

Progress is the Ignite 2 reader's (:class:`~tensorflow_ignite.client.progress.ReadProgress`):
every page enters the ledger with each row's partition and *identity* -- the
primary key: the value itself for one integer key column, else a 64-bit
BLAKE2b digest of the key columns' values -- when it is handed on, and a
partition is done when the query that read it has ended.  A row's partition
is not selected (``"__part"`` in the select list made the node project every
row: ~20% more node CPU for a read on one node): it is computed here from
the key columns read anyway, with the table's colocation hash
(:func:`~.protocol.colocation.row_hashes`, vectorized a column at a time), as
the node computes it.  A row of a partition its query was not asked for stops
the read (:class:`~tensorflow_ignite.errors.ProtocolError`): the hash would
disagree with the node's, and the ledger would be wrong.  So a saved
iterator holds, per partition, "done" or the identities of the rows handed
out so far, and a restored one reads the partitions not done and drops the
rows it already handed out.  Identities rather than positions: a query over
several partitions interleaves them as the engine likes, and a partition's
own order on another replica is not something this relies on.

A shuffled read (``shuffle=True``) reads its partitions one after the other, one query each, in
the order :class:`~tensorflow_ignite.client.progress.ShuffledEpochs` draws from its seed and the
run's epoch; the saved state carries the epoch, so a restored iterator goes on in the same order.
Each of those queries scans the table at its node (no pruning), the price of the order.

A query that fails midway -- its node died, or (no pruning: every query
touches every node) a node it needed did -- is not the end: the consumer has
by then handed on every page that query produced (one FIFO queue), so the
identities delivered of each of its partitions are known; the partitions are
asked again, after a backoff, of their primaries by then (the assignment
read again), and those rows are dropped.  Every row exactly once, as long as
the table does not change during the read; the run gives up after
``failover_timeout`` seconds without success.
"""

from __future__ import annotations

import hashlib
import logging
import queue
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..client.client import parse_addresses
from ..client.described import describe_options, dump_description
from ..client.env import parse_partition_list
from ..client.options import ConnectionOptions
from ..client.progress import (
    ReadProgress,
    ResumeState,
    ShuffledEpochs,
    format_ranges,
    plan_fingerprint,
    resume_from,
)
from ..client.retry import transient
from ..errors import (
    AuthenticationError,
    ConfigurationError,
    Ignite3ServerError,
    IgniteConnectionError,
    ProtocolError,
    ServerError,
    TableNotFoundError,
    UnsupportedOperationError,
)
from .client import Ignite3Client
from .nodes import dial_nodes
from .protocol.codes import ColumnType, ErrorCode, ErrorGroup, error_group
from .protocol.colocation import partitions_of, row_hashes
from .protocol.columns import decode_page
from .protocol.spans import as_objects
from .protocol.sql import ColumnMeta
from .routes import Assignments, find_table

__all__ = ["TableReader", "TableRun", "TableReadStats", "PART_COLUMN", "key_identities", "retryable"]

log = logging.getLogger(__name__)

#: Ignite 3's hidden column: the partition a row is stored in (the queries filter on it, never select it).
PART_COLUMN = '"__part"'
_KEY_ALIAS = "TFI__KEY"
#: Ignite 3.1 turns a query whose condition fixes the whole primary key into a key lookup
#: (KeyValueGet), which reads "__part" as -1: the partition filter then drops the row.  The planner
#: hint keeps it a table scan, whose "__part" is the row's partition.
_NO_KEY_LOOKUP = "/*+ DISABLE_RULE('TableScanToKeyValueGetRule') */"
_INTEGERS = (ColumnType.INT8, ColumnType.INT16, ColumnType.INT32, ColumnType.INT64)
#: Errors that running the query again cannot fix.
_PERMANENT = frozenset(
    {
        int(ErrorCode.STMT_PARSE),
        int(ErrorCode.STMT_VALIDATION),
        int(ErrorCode.SCHEMA_NOT_FOUND),
        int(ErrorCode.QUERY_NO_RESULT_SET),
        int(ErrorCode.TABLE_NOT_FOUND),
        int(ErrorCode.COLUMN_NOT_FOUND),
    }
)
_BACKOFF_FIRST = 0.2
_BACKOFF_MAX = 2.0
#: Decoded pages waiting for the consumer, per running query.
_QUEUE_PER_QUERY = 3


def retryable(exc: BaseException) -> bool:
    """True when a failed query may succeed if run again (a lost node, a moved primary): :func:`.retry.transient`."""
    return transient(exc, _server_transient)


def _server_transient(exc: ServerError) -> bool:
    """Ignite 3's rule for a server's error: a missing table, a bad query and refused credentials are final."""
    return (
        isinstance(exc, Ignite3ServerError)
        and not isinstance(exc, TableNotFoundError)
        and exc.status not in _PERMANENT
        and error_group(exc.status) != ErrorGroup.AUTHENTICATION
    )


@dataclass(frozen=True)
class TableReadStats:
    """What the runs of one ``from_table`` dataset have done in this process (a snapshot)."""

    #: Rows handed on, all runs so far.
    rows: int
    #: ``(partitions, error)`` of every query asked again after it failed midway.
    failovers: tuple[tuple[tuple[int, ...], str], ...]
    #: Rows dropped because they had been handed out already (failovers and restored iterators).
    skipped: int
    #: Queries sent, all runs so far (one per primary node per run, plus failovers).
    queries: int


@dataclass
class _Query:
    """One query in flight: the partitions it reads and the node it was sent to."""

    serial: int
    partitions: tuple[int, ...]
    node: str
    thread: threading.Thread | None = field(default=None, repr=False)


class TableReader:
    """What the runs of one dataset share: where the table is, what to select, the partitions to read.

    ``select``: the SQL expressions of the output columns (quoted as needed);
    ``output``: their columns as SQL_QUERY_META reports them; ``keys``: the
    table's primary key columns (name, type) in key order; ``colocation``: the
    table's colocation columns in colocation order, each ``(position in keys,
    scale, precision)`` -- what each row's partition is computed from.
    """

    def __init__(
        self,
        options: ConnectionOptions,
        table: str,
        select: Sequence[str],
        output: Sequence[ColumnMeta],
        keys: Sequence[tuple[str, ColumnType]],
        partitions: Sequence[int],
        partition_count: int,
        *,
        colocation: Sequence[tuple[int, int, int]],
        where: str | None = None,
        args: Sequence[Any] = (),
        page_size: int = 4096,
        decimal_as: str = "float64",
        null_masks: bool = False,
        failover_timeout: float = 120.0,
        client: Ignite3Client | None = None,
        table_sql: str | None = None,
        per_node: bool = True,
        shuffle_seed: int | None = None,
    ) -> None:
        if not keys:
            raise ConfigurationError(f"table {table}: no primary key columns reported; cannot read it resumably")
        self.options = options
        self.select = tuple(select)
        self.table = table
        #: The table as the queries name it (default: each dot-separated part quoted when needed).
        self.table_sql = table_sql or _quote_table(table)
        self.output = tuple(output)
        self.keys = tuple(keys)
        self.colocation = tuple((int(k), int(scale), int(precision)) for k, scale, precision in colocation)
        if not self.colocation or any(not 0 <= k < len(self.keys) for k, _, _ in self.colocation):
            raise ConfigurationError(
                f"table {table}: colocation columns {list(self.colocation)} are not among its "
                f"{len(self.keys)} key columns"
            )
        self.partitions = tuple(sorted(set(int(p) for p in partitions)))
        self.partition_count = int(partition_count)
        self.where = where
        self.args = tuple(args)
        self.page_size = int(page_size)
        self.decimal_as = decimal_as
        self.null_masks = null_masks
        self.failover_timeout = float(failover_timeout)
        #: One query per primary node (True), or one query over every partition of the plan.
        self.per_node = bool(per_node)
        #: Read the partitions one at a time in an order drawn from a seed and the epoch (``shuffle=True``).
        self.shuffle = ShuffledEpochs(shuffle_seed) if shuffle_seed is not None else None
        #: The client the dataset was built with: runs read no earlier than its observable time.
        self.client = client
        # A key column among the output columns is read from there (a DECIMAL one as text, selected again):
        # a query of exactly the table's columns is the cheapest for the node to run.
        named = {c.name: i for i, c in reversed(list(enumerate(self.output)))}
        extra: list[str] = []
        #: Where each key column is in a page: its output column, or one selected after them.
        self.key_columns: tuple[int, ...] = ()
        for i, (name, t) in enumerate(self.keys):
            j = named.get(name)
            if t is not ColumnType.DECIMAL and j is not None and self.output[j].type is t:
                self.key_columns += (j,)
                continue
            self.key_columns += (len(self.output) + len(extra),)
            extra.append(
                f"{'CAST(' + _quote(name) + ' AS VARCHAR)' if t is ColumnType.DECIMAL else _quote(name)} "
                f"AS {_KEY_ALIAS}{i}"
            )
        #: Columns selected after the output columns (the key columns not among them).
        self.extra_columns = len(extra)
        self._columns_sql = ", ".join([*select, *extra])
        self.fingerprint = plan_fingerprint(f"ignite3\x00{table}\x00{where or ''}\x00{self.args!r}", self.partitions)
        self._lock = threading.Lock()
        self._rows = 0
        self._skipped = 0
        self._queries = 0
        self._failovers: list[tuple[tuple[int, ...], str]] = []

    def describe(self) -> dict[str, Any]:
        """What another process rebuilds this reader from (:meth:`rebuild`; JSON values, no secret).

        Raises :class:`~tensorflow_ignite.errors.UnsupportedOperationError` when a ``where`` argument
        is of a type JSON does not carry."""
        for i, a in enumerate(self.args):
            if a is not None and type(a) not in (bool, int, float, str):
                raise UnsupportedOperationError(
                    f"the read of Ignite 3 table {self.table}: where-argument {i} is a {type(a).__name__}, which "
                    "a description cannot carry; pass it as a number or a string (SQL converts it)"
                )
        return {
            "table": self.table,
            "table_sql": self.table_sql,
            "select": list(self.select),
            "output": [[c.name, int(c.type), c.nullable, c.scale, c.precision] for c in self.output],
            "keys": [[name, int(t)] for name, t in self.keys],
            "colocation": [list(c) for c in self.colocation],
            "partitions": format_ranges(self.partitions),
            "count": self.partition_count,
            "where": self.where,
            "args": list(self.args),
            "page_size": self.page_size,
            "decimal_as": self.decimal_as,
            "null_masks": self.null_masks,
            "failover_timeout": self.failover_timeout,
            "per_node": self.per_node,
            "shuffle_seed": self.shuffle.seed if self.shuffle is not None else None,
        }

    def description(self, *, batch_size: int | None, credentials: str | None, drop_remainder: bool = False) -> str:
        """The description a dataset over this read carries to other processes (JSON, no secret): the
        connection as :mod:`tensorflow_ignite.client.described` writes it and :meth:`describe` with
        ``batch_size`` and ``drop_remainder``; :func:`tensorflow_ignite.data.portable.rebuild` reads it back."""
        return dump_description(
            {
                "kind": "ignite3",
                "connection": describe_options(self.options, self.options.endpoints, credentials),
                "read": {**self.describe(), "batch_size": batch_size, "drop_remainder": drop_remainder},
            }
        )

    @classmethod
    def rebuild(cls, options: ConnectionOptions, d: Mapping[str, Any]) -> "TableReader":
        """The reader :meth:`describe` described, connecting with ``options``."""
        output = [
            ColumnMeta(name, ColumnType(t), bool(nullable), int(scale), int(precision))
            for name, t, nullable, scale, precision in d["output"]
        ]
        if "colocation" not in d:
            raise ConfigurationError(
                f"the description of the read of Ignite 3 table {d['table']!r} names no "
                "colocation columns (made by an older tensorflow-ignite); build the dataset "
                "again with this version"
            )
        return cls(
            options,
            d["table"],
            d["select"],
            output,
            [(n, ColumnType(t)) for n, t in d["keys"]],
            parse_partition_list(d["partitions"], name="partitions"),
            int(d["count"]),
            colocation=[tuple(c) for c in d["colocation"]],
            where=d["where"],
            args=d["args"],
            page_size=int(d["page_size"]),
            decimal_as=d["decimal_as"],
            null_masks=bool(d["null_masks"]),
            failover_timeout=float(d["failover_timeout"]),
            table_sql=d["table_sql"],
            per_node=bool(d.get("per_node", True)),
            shuffle_seed=d.get("shuffle_seed"),
        )

    def element_spec(self) -> dict[str, Any]:
        """The spec of the batches a run yields: a ``[None]`` tensor per output column (and mask)."""
        import tensorflow as tf

        from .dataset import element_dtypes

        dtypes = element_dtypes(self.output, decimal_as=self.decimal_as, null_masks=self.null_masks)
        return {name: tf.TensorSpec([None], tf.as_dtype(dtype)) for name, dtype in dtypes.items()}

    def query(self, partitions: Sequence[int]) -> str:
        """The SQL that reads ``partitions``: the output columns, then the key columns not among them."""
        text = f"SELECT {_NO_KEY_LOOKUP} {self._columns_sql} FROM {self.table_sql}"
        conditions = []
        if set(partitions) != set(range(self.partition_count)):  # every partition: no filter to evaluate
            conditions.append(f"{PART_COLUMN} IN ({', '.join(str(int(p)) for p in partitions)})")
        if self.where:
            conditions.append(f"({self.where})")
        return text + (" WHERE " + " AND ".join(conditions) if conditions else "")

    def row_partitions(self, keys: Sequence[np.ndarray]) -> np.ndarray:
        """The partition of each row (int64) from its key columns' values as a page decodes them: the
        table's colocation hash (:mod:`.protocol.colocation`), as the node computes it."""
        columns = [(keys[k], self.keys[k][1], scale, precision) for k, scale, precision in self.colocation]
        return partitions_of(row_hashes(columns), self.partition_count)

    def stats(self) -> TableReadStats:
        with self._lock:
            return TableReadStats(self._rows, tuple(self._failovers), self._skipped, self._queries)

    def _count(
        self, *, rows: int = 0, skipped: int = 0, queries: int = 0, failover: tuple[tuple[int, ...], str] | None = None
    ) -> None:
        with self._lock:
            self._rows += rows
            self._skipped += skipped
            self._queries += queries
            if failover is not None:
                self._failovers.append(failover)

    def run(self, state: bytes | None = None, next_split: Any = None) -> "TableRun":
        """A read from the beginning, or of what a saved ``state`` had not handed out."""
        if next_split is not None:
            raise UnsupportedOperationError(
                f"the Ignite 3 read of table {self.table}: the tf.data service's dynamic sharding "
                "(processing_mode='distributed_epoch') is not supported; read with 'parallel_epochs'"
            )
        read = f"read of Ignite 3 table {self.table} ({len(self.partitions)} partitions)"
        resume = resume_from(
            state, ResumeState.decode, self.fingerprint, read=read, same="same table, where=, args= and parts="
        )
        return TableRun(self, resume)


class TableRun:
    """One iterator's read: batches (dicts of NumPy columns) in, :meth:`save` / :meth:`emitted` for the op."""

    def __init__(self, reader: TableReader, resume: ResumeState | None) -> None:
        self.reader = reader
        order: Sequence[int] = reader.partitions
        #: The shuffled epoch this run reads (its partition order), None when unshuffled.
        self.epoch: int | None = None
        if reader.shuffle is not None:
            self.epoch = reader.shuffle.start(resume.epoch if resume is not None else None)
            order = [reader.partitions[i] for i in reader.shuffle.order(self.epoch, len(reader.partitions))]
        # No partition is complete until the query reading it has ended: tentative ends are never trusted.
        self.progress = ReadProgress(reader.fingerprint, resume, trust=lambda _parts: set(), epoch=self.epoch)
        #: ``emitted(rows)``: ``rows`` more rows were handed to TensorFlow.
        self.emitted = self.progress.emitted
        self._todo = [p for p in order if resume is None or p not in resume.done]
        #: Shuffled: the partitions still to launch, one query each, in order (one runs at a time).
        self._pending = list(self._todo) if reader.shuffle is not None else []
        # Identities to drop per partition: handed out before the saved state, or before a failover.
        self._skip: dict[int, np.ndarray] = {}
        if resume is not None:
            for p in self._todo:
                ids = self.progress.partial_ids(p)
                if ids is not None and len(ids):
                    self._skip[p] = ids
        self._stop = threading.Event()
        #: Notified when the consumer takes an item or the run stops: room for a waiting page.
        self._room = threading.Condition()
        self._queue: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self._clients: dict[str, Ignite3Client] = {}
        #: The table's partition assignment (looked up on the first launch, read again after a failure).
        self._assignments: Assignments | None = None
        self._serials = iter(range(1, 1 << 62))
        self._running: dict[int, _Query] = {}
        self._batches = self._read()

    def __iter__(self) -> Iterator[dict[str, np.ndarray]]:
        return self._batches

    def save(self) -> bytes:
        return self.progress.state().encode()

    def close(self) -> None:
        self._batches.close()

    # ------------------------------------------------------------ connections
    def _connect(self) -> None:
        """A client per node among the endpoints that answer (dialled again after a failure)."""
        for name in [n for n, c in self._clients.items() if c._conn is None or c._conn.closed]:
            self._clients.pop(name).close()
        floor = 0
        if self.reader.client is not None:
            floor = self.reader.client.connection().observable_timestamp
        known = {(c.options.host, c.options.port) for c in self._clients.values()}

        def open_one(host: str, port: int) -> Ignite3Client:
            client = Ignite3Client(replace(self.reader.options, host=host, port=port, fallbacks=()))
            try:
                client.connection()
            except BaseException:
                client.close()
                raise
            return client

        def node_of(client: Ignite3Client) -> str:
            conn = client.connection()
            conn.observable_timestamp = max(conn.observable_timestamp, floor)
            return conn.handshake.node_name

        found, failed = dial_nodes(
            [e for e in parse_addresses(self.reader.options.endpoints) if e not in known],
            open_one,
            node_of,
            held=self._clients,
        )
        for exc in failed:
            if isinstance(exc, AuthenticationError):
                for client in found.values():
                    client.close()
                raise exc
        self._clients.update(found)
        errors = [str(exc) for exc in failed]
        if not self._clients:
            raise IgniteConnectionError(
                f"reading Ignite 3 table {self.reader.table}: no node answered at "
                f"{', '.join(self.reader.options.endpoints)}: {'; '.join(errors)}",
                address=self.reader.options.endpoints[0],
            )

    def _primaries(self) -> tuple[str | None, ...]:
        """The primary of each partition (:class:`.routes.Assignments`), asked of any node that answers."""
        last: Exception | None = None
        for client in list(self._clients.values()):
            try:
                conn = client.connection()
                if self._assignments is None:
                    table_id, _ = find_table(conn, self.reader.table, hint="it was dropped during the read")
                    self._assignments = Assignments(table_id, self.reader.table, client.connection)
                assignment = self._assignments.get(conn)
                if assignment.partitions != self.reader.partition_count:
                    raise ConfigurationError(
                        f"table {self.reader.table} has {assignment.partitions} partitions now, "
                        f"{self.reader.partition_count} when the dataset was built; build the dataset again"
                    )
                return assignment.primaries
            except IgniteConnectionError as exc:
                last = exc
        raise (
            last
            if last is not None
            else IgniteConnectionError(f"reading Ignite 3 table {self.reader.table}: every connection is closed")
        )

    # ------------------------------------------------------------ queries
    def _launch(self, partitions: Sequence[int]) -> None:
        """Send the queries reading ``partitions``: one per primary node, each on a thread of its own."""
        primaries = self._primaries()
        names = sorted(self._clients)
        groups: dict[str, list[int]] = {}
        for i, p in enumerate(partitions):
            node = primaries[p]
            if not self.reader.per_node:
                node = names[0]
            elif node not in self._clients:  # unknown, or a node this client has no connection to
                node = names[i % len(names)]
            groups.setdefault(node, []).append(p)
        for node, parts in groups.items():
            q = _Query(next(self._serials), tuple(parts), node)
            q.thread = threading.Thread(
                target=self._work, args=(q, self._clients[node]), daemon=True, name=f"ignite3-read-{node}"
            )
            self._running[q.serial] = q
            self.reader._count(queries=1)
            q.thread.start()

    def _put(self, item: tuple[Any, ...]) -> bool:
        """Queue ``item``; a page waits while the queue is full (the consumer's pace). False: stopped."""
        with self._room:
            while not self._stop.is_set():
                limit = _QUEUE_PER_QUERY * max(1, len(self._running))
                if self._queue.qsize() < limit or item[0] != "page":
                    self._queue.put(item)
                    return True
                self._room.wait(1.0)  # woken when the consumer takes an item (or the run stops)
        return False

    def _take(self) -> tuple[Any, ...]:
        item = self._queue.get()
        with self._room:
            self._room.notify_all()
        return item

    def _work(self, q: _Query, client: Ignite3Client) -> None:
        r = self.reader
        try:
            ours = np.zeros(r.partition_count, bool)
            ours[list(q.partitions)] = True
            with client.query(r.query(q.partitions), r.args, page_size=r.page_size) as cursor:
                columns = cursor.columns
                n_out = len(r.output)
                if len(columns) != n_out + r.extra_columns:
                    raise ProtocolError(
                        f"reading Ignite 3 table {r.table}: the query returned {len(columns)} "
                        f"columns, {n_out + r.extra_columns} expected"
                    )
                for rows in cursor.pages():
                    if self._stop.is_set():
                        return
                    page = decode_page(rows, columns, decimal_as=r.decimal_as, strings="spans")
                    keys = [as_objects(page.values[i]) for i in r.key_columns]
                    parts = r.row_partitions(keys)
                    if not ours[parts].all():
                        strays = format_ranges(sorted(set(parts[~ours[parts]].tolist())))
                        raise ProtocolError(
                            f"reading Ignite 3 table {r.table}: the query over partitions "
                            f"{format_ranges(q.partitions)} returned rows of partitions {strays} "
                            "by this client's colocation hash; the client computes partitions differently from "
                            "the node (a bug: please report it with the table's key columns)"
                        )
                    ids = key_identities(keys, r.keys)
                    out = {}
                    for col, values, present in zip(r.output, page.values[:n_out], page.present[:n_out]):
                        out[col.name] = values
                        if r.null_masks and col.nullable:
                            out[f"{col.name}_present"] = present
                    if not self._put(("page", q.serial, parts, ids, out)):
                        return
            self._put(("done", q.serial))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which decides
            self._put(("error", q.serial, exc))

    # ------------------------------------------------------------ the stream
    def _read(self) -> Iterator[dict[str, np.ndarray]]:
        r = self.reader
        seen: dict[int, list[np.ndarray]] = {}
        deadline: float | None = None
        attempts = 0
        try:
            if not self._todo:
                return
            self._connect()
            self._launch(self._next_queries())
            while self._running:
                item = self._take()
                kind, serial = item[0], item[1]
                q = self._running[serial]
                if kind == "page":
                    parts, ids, out = item[2], item[3], item[4]
                    parts, ids, out = self._drop_delivered(parts, ids, out)
                    n = len(ids)
                    if not n:
                        continue
                    for p in np.unique(parts).tolist():
                        seen.setdefault(p, []).append(ids[parts == p])
                    self.progress.add_rows(parts, ids)
                    r._count(rows=n)
                    yield out
                elif kind == "done":
                    del self._running[serial]
                    deadline, attempts = None, 0  # the cluster answers again: a later failure starts afresh
                    for p in q.partitions:
                        self.progress.complete(p)
                        seen.pop(p, None)
                        self._skip.pop(p, None)
                    if self._pending:  # shuffled: the next partition of the epoch's order
                        self._launch(self._next_queries())
                else:
                    del self._running[serial]
                    exc = item[2]
                    if not retryable(exc):
                        raise exc
                    now = time.monotonic()
                    deadline = now + r.failover_timeout if deadline is None else deadline
                    if now >= deadline:
                        raise IgniteConnectionError(
                            f"reading Ignite 3 table {r.table}: partitions {format_ranges(q.partitions)} failed again "
                            f"after {r.failover_timeout:.0f}s of retries (node {q.node}); last error: {exc}",
                            address=None,
                        ) from exc
                    log.info(
                        "Ignite 3 table %s: the query over partitions %s on node %s failed (%s); reading them again",
                        r.table,
                        format_ranges(q.partitions),
                        q.node,
                        exc,
                    )
                    r._count(failover=(q.partitions, f"{type(exc).__name__}: {exc}"))
                    for p in q.partitions:  # every page of this query was handed on: FIFO
                        got = seen.pop(p, [])
                        if p in self._skip:
                            got.append(self._skip[p])
                        if got:
                            self._skip[p] = np.unique(np.concatenate(got))
                    # Backoff while the cluster notices the loss and moves primaries.
                    self._stop.wait(min(_BACKOFF_FIRST * 2**attempts, _BACKOFF_MAX, max(0.0, deadline - now)))
                    attempts += 1
                    self._relaunch(q.partitions, deadline)
        finally:
            self._stop.set()
            with self._room:
                self._room.notify_all()
            for q in list(self._running.values()):
                if q.thread is not None:
                    q.thread.join(timeout=r.options.timeout)
            for client in self._clients.values():
                client.close()
            self._clients.clear()

    def _next_queries(self) -> list[int]:
        """The partitions to launch now: all of them, or shuffled the next in the epoch's order."""
        if self.reader.shuffle is None:
            return self._todo
        return [self._pending.pop(0)]

    def _relaunch(self, partitions: Sequence[int], deadline: float) -> None:
        """Send the queries of failed ``partitions`` again, dialling and asking the assignment anew."""
        if self._assignments is not None:
            self._assignments.forget()  # a failed query may mean a moved primary
        while True:
            try:
                self._connect()
                self._launch(partitions)
                return
            except IgniteConnectionError:
                if time.monotonic() >= deadline:
                    raise
                self._stop.wait(_BACKOFF_MAX)

    def _drop_delivered(
        self, parts: np.ndarray, ids: np.ndarray, out: dict[str, np.ndarray]
    ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        if not self._skip:
            return parts, ids, out
        keep = np.ones(len(ids), bool)
        for p in np.unique(parts).tolist():
            skip = self._skip.get(p)
            if skip is not None:
                rows = parts == p
                keep[rows] = ~np.isin(ids[rows], skip)
        if keep.all():
            return parts, ids, out
        self.reader._count(skipped=int(len(keep) - np.count_nonzero(keep)))
        return parts[keep], ids[keep], {k: v[keep] for k, v in out.items()}


def key_identities(keys: Sequence[np.ndarray], types: Sequence[tuple[str, ColumnType]]) -> np.ndarray:
    """Each row's identity: its integer key, or a 64-bit digest of its key values."""
    if len(keys) == 1 and types[0][1] in _INTEGERS:
        return keys[0].astype(np.int64)
    n = len(keys[0])
    out = np.empty(n, np.int64)
    for i in range(n):
        h = hashlib.blake2b(digest_size=8)
        for col in keys:
            v = col[i]
            b = v if isinstance(v, bytes) else np.asarray(v).tobytes()
            h.update(len(b).to_bytes(4, "little"))
            h.update(b)
        out[i] = int.from_bytes(h.digest(), "little", signed=True)
    return out


def _quote(name: str) -> str:
    """A column name as SQL: kept when it is a plain upper-case identifier, else quoted."""
    plain = name.replace("_", "").isalnum() and name == name.upper() and not name[:1].isdigit()
    return name if plain else '"' + name.replace('"', '""') + '"'


def _quote_table(name: str) -> str:
    return ".".join(_quote(part) for part in name.split("."))
