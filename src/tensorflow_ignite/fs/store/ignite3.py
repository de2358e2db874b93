"""The file store's tables on Ignite 3: ``<PREFIX>_META`` and ``<PREFIX>_DATA`` in a zone of their own.

    CREATE ZONE IF NOT EXISTS <PREFIX>_ZONE (REPLICAS <2 * backups + 1>) STORAGE PROFILES ['<storage>']
    CREATE TABLE IF NOT EXISTS <PREFIX>_META (KEY VARCHAR PRIMARY KEY, VAL VARCHAR(2147483647)) ZONE ...
    CREATE TABLE IF NOT EXISTS <PREFIX>_DATA (KEY VARCHAR PRIMARY KEY, VAL VARBINARY(2147483647)) ZONE ...

``backups`` means what it means on Ignite 2: how many nodes may be lost with
no file lost or unwritable.  Ignite 3 replicates each partition by Raft, which
needs a majority of its replicas to read and write, so surviving ``b`` lost
nodes takes ``2b + 1`` replicas (the default, 1, gives 3).  A zone with more
replicas than the cluster has nodes is allowed: each partition has a replica on
every node (one node: one replica, which is its own majority).

``storage`` (the ``storage`` setting) names the zone's storage profile, one the
nodes' configuration defines (``ignite.storage.profiles``): ``default`` when
unset, or for instance an in-memory (``aimem``) profile, whose files are gone
when the nodes stop.  A zone keeps the profile it was made with; a store that
names another is refused with a :class:`~tensorflow_ignite.errors.ConfigurationError`.

The keys and values are :mod:`..layout`'s, as in Ignite 2's caches.  The value
columns are as long as Ignite allows: a listing bucket of long names, or a
garbage record of a large delete, passes the 64 KiB default, and a store
opened later with a larger block size works on the same tables.

* Meta reads and writes outside transactions are single requests (the node
  runs each in an implicit transaction of its own).
* Metadata transactions are Ignite 3 read-write transactions: serializable
  through locks taken as they read and write; a conflict (wait-die: the
  younger of two dies) fails at the lock, at once, with an
  :class:`~tensorflow_ignite.errors.Ignite3TransactionConflictError` -- a
  ``TransactionConflictError``, which the store's retry loop runs again.
  Read-only ones (a listing of several buckets) read a snapshot, no locks.
* Blocks are rows of DATA, read and written without a transaction; the
  key-value view routes each request to the key's primary node when the
  client has a connection to it (the endpoints name several nodes).

An ``Ignite3Connection`` carries one request at a time, and an older
transaction waiting for a lock a younger one holds would block the younger's
requests behind it on a shared connection.  So the tables keep a pool of
clients (connections): a transaction has one to itself from begin to
commit, every other request borrows one for its duration.  Each client
hands what it has seen (its observable timestamp) to the next borrower, so
a read on one connection sees what the store wrote on another.

Ignite 3.1 reports no storage figures to clients: there is no capacity
guard (:meth:`Ignite3Tables.capacity` is None).
"""

from __future__ import annotations

import collections
import logging
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from ...client import TransactionConflictError
from ...client.lease import LeasePool
from ...errors import (
    ClientError,
    ConfigurationError,
    Ignite3ServerError,
    IgniteConnectionError,
    ReplicaUnavailableError,
    TableNotFoundError,
)
from .common import FRAME_ROOM, RecoveryWait

if TYPE_CHECKING:
    from ...ignite3 import Ignite3Client, KeyValueView, Transaction

__all__ = ["Ignite3Tables", "replicas_for"]

log = logging.getLogger(__name__)
T = TypeVar("T")

#: Clients (connections) the tables open at most; a borrower beyond waits for one.
MAX_CLIENTS = 64
#: Seconds a metadata transaction may run before the node rolls it back.
TX_TIMEOUT = 30.0
#: Seconds an idempotent request (a block's get or put, a meta get) is sent again while its partition has
#: no reachable primary replica (a node lost: Raft elects a leader, the placement driver a new primary;
#: measured on 3 local nodes: the lost node's partitions answered again ~30 s after the kill).
REPLICA_WAIT = 90.0
#: The longest VARCHAR / VARBINARY Ignite 3 accepts.
MAX_LENGTH = 2147483647

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def replicas_for(backups: int) -> int:
    """The zone's replicas for ``backups`` nodes that may be lost: a Raft majority must survive them."""
    return 2 * backups + 1


class _Pooled:
    """One client of the pool with the views of the two tables on it (looked up on first use)."""

    def __init__(self, client: "Ignite3Client", owned: bool) -> None:
        self.client = client
        self.owned = owned
        self._views: dict[str, KeyValueView] = {}

    def view(self, table: str) -> "KeyValueView":
        v = self._views.get(table)
        if v is None:
            v = self._views[table] = self.client.table(table).kv()
        return v

    def forget_views(self) -> None:
        self._views.clear()


class _Pool:
    """Clients of one cluster, each used by one borrower at a time (a
    :class:`~tensorflow_ignite.client.lease.LeasePool`: made on demand, up to ``MAX_CLIENTS``)."""

    def __init__(self, first: "Ignite3Client") -> None:
        def make(_key: None) -> _Pooled:
            from ...ignite3 import Ignite3Client

            return _Pooled(Ignite3Client(first.options), owned=True)

        self._lease: LeasePool[None, _Pooled] = LeasePool(make, limit=MAX_CLIENTS)
        self._lease.add(None, _Pooled(first, owned=False))
        self._lock = threading.Lock()
        self._seen = 0  # the latest observable timestamp any borrower brought back

    @contextmanager
    def borrowed(self) -> Iterator[_Pooled]:
        p = self.take()
        try:
            yield p
        finally:
            self.give(p)

    def call(self, fn: Callable[[_Pooled], T]) -> T:
        """``fn`` on a borrowed client; run once more if its connection failed (the connection closes
        itself and the client dials again), and again for up to ``REPLICA_WAIT`` seconds while the node
        answers that the partition's replica cannot serve it (a node of the cluster was lost and its
        partitions are moving to other replicas).  For idempotent requests only: reads, upserts, removes."""
        with self.borrowed() as p:
            redialed = False
            wait = RecoveryWait(REPLICA_WAIT)
            while True:
                try:
                    return fn(p)
                except IgniteConnectionError as exc:
                    if redialed:
                        raise
                    redialed = True
                    log.info("ignite:// on Ignite 3: %s; sending the request again on a new connection", exc)
                except ReplicaUnavailableError as exc:
                    if not wait.started:
                        log.warning(
                            "ignite:// on Ignite 3: %s; sending the request again for up to %.0f s", exc, REPLICA_WAIT
                        )
                    if not wait.pause():
                        raise

    def take(self) -> _Pooled:
        p = self._lease.take(None)
        p.client.observe(self.seen)
        return p

    def give(self, p: _Pooled) -> None:
        seen = p.client.observed_timestamp()
        with self._lock:
            self._seen = max(self._seen, seen)
        self._lease.give(p)

    @property
    def seen(self) -> int:
        """The latest observable timestamp any borrower brought back."""
        with self._lock:
            return self._seen

    def forget_views(self) -> None:
        for p in self._lease.items():
            p.forget_views()

    def close(self) -> None:
        """Close the clients the pool made (the first one is its caller's)."""
        for p in self._lease.drain():
            if p.owned:
                p.client.close()
            else:
                self._lease.add(None, p)


class _Meta:
    """The meta table outside transactions (a :class:`~.backend.MetaTable`)."""

    def __init__(self, pool: _Pool, name: str) -> None:
        self._pool = pool
        self.name = name

    def get(self, key: str) -> Any:
        row = self._pool.call(lambda p: p.view(self.name).get(key))
        return None if row is None else row["VAL"]

    def get_all(self, keys: Iterable[str]) -> dict[Any, Any]:
        keys = list(dict.fromkeys(keys))
        if not keys:
            return {}
        rows = self._pool.call(lambda p: p.view(self.name).get_all(keys))
        return {k: r["VAL"] for k, r in zip(keys, rows) if r is not None}

    def put(self, key: str, value: str) -> None:
        self._pool.call(lambda p: p.view(self.name).put({"KEY": key, "VAL": value}))

    def put_all(self, entries: Mapping[str, str] | Iterable[tuple[str, str]]) -> None:
        items = entries.items() if isinstance(entries, Mapping) else entries
        rows = [{"KEY": k, "VAL": v} for k, v in items]
        if rows:
            self._pool.call(lambda p: p.view(self.name).put_all(rows))

    def remove_key(self, key: str) -> bool:
        return self._pool.call(lambda p: p.view(self.name).remove(key))

    def remove_keys(self, keys: Iterable[str]) -> None:
        keys = list(keys)
        if keys:
            self._pool.call(lambda p: p.view(self.name).remove_all(keys))


class _Tx:
    """An Ignite 3 transaction on the meta table with a client of its own (a :class:`~.backend.MetaTransaction`)."""

    def __init__(self, pool: _Pool, table: str, read_only: bool) -> None:
        self._pool = pool
        self._table = table
        self._p: _Pooled | None = pool.take()
        try:
            self._tx: Transaction = self._p.client.transaction(read_only=read_only, timeout=TX_TIMEOUT)
        except BaseException:
            self._release(drop=False)
            raise

    def _view(self) -> "KeyValueView":
        assert self._p is not None, "transaction finished"
        return self._p.view(self._table)

    def _release(self, *, drop: bool) -> None:
        p, self._p = self._p, None
        if p is not None:
            if drop:
                p.client.close()  # dialled again by its next borrower
            self._pool.give(p)

    def get_all(self, keys: Sequence[str]) -> dict[str, Any]:
        keys = list(keys)
        rows = self._view().get_all(keys, tx=self._tx)
        return {k: r["VAL"] for k, r in zip(keys, rows) if r is not None}

    def put_all(self, entries: Sequence[tuple[str, str]]) -> None:
        if entries:
            self._view().put_all([{"KEY": k, "VAL": v} for k, v in entries], tx=self._tx)

    def remove_all(self, keys: Sequence[str]) -> None:
        if keys:
            self._view().remove_all(list(keys), tx=self._tx)

    def commit(self) -> None:
        try:
            self._tx.commit()
        finally:
            self._release(drop=False)

    def rollback(self) -> None:
        try:
            if self._tx.state == "open":
                self._tx.rollback()
        except (Ignite3ServerError, IgniteConnectionError, ClientError):
            pass  # rolled back by the node already (a lock conflict does), or its connection is gone
        finally:
            self._release(drop=False)

    def abandon(self) -> None:
        self._release(drop=True)


class Ignite3Tables:
    """The store's two tables on an Ignite 3 cluster (a :class:`~.backend.StoreTables`)."""

    generation = 3
    #: Wait-die kills the younger of two transactions at the lock, so a retried one (the youngest)
    #: dies again while older ones hold the lock: pauses grow further than on Ignite 2.
    max_backoff = 0.5
    recovery_wait = REPLICA_WAIT

    def __init__(
        self,
        client: "Ignite3Client",
        prefix: str,
        backups: int,
        block_size: int,
        stats: collections.Counter[str],
        *,
        storage: str = "",
    ) -> None:
        if not _NAME.fullmatch(prefix):
            raise ConfigurationError(
                f"cache_prefix {prefix!r} cannot name Ignite 3 tables: use letters, digits "
                "and '_' (not first a digit), e.g. ignite_fs"
            )
        if backups < 0:
            raise ConfigurationError(f"backups must be >= 0, not {backups}")
        self.client = client
        self.prefix = prefix.upper()
        self.replicas = replicas_for(backups)
        self.block_size = block_size
        self.stats = stats
        self.zone = f"{self.prefix}_ZONE"
        if storage and not _NAME.fullmatch(storage):
            raise ConfigurationError(
                f"storage={storage!r} cannot name an Ignite 3 storage profile: use letters, "
                "digits and '_' (not first a digit), as in the nodes' ignite.storage.profiles"
            )
        #: The zone's storage profile: the ``storage`` setting, or ``default``.
        self.profile = storage or "default"
        self._check_profile = bool(storage)
        self.meta_name, self.data_name = f"{self.prefix}_META", f"{self.prefix}_DATA"
        self._pool = _Pool(client)
        self.meta = _Meta(self._pool, self.meta_name)
        self.ensure_tables()

    def ddl(self) -> list[str]:
        """The statements :meth:`ensure_tables` runs."""
        return [
            f"CREATE ZONE IF NOT EXISTS {self.zone} (REPLICAS {self.replicas}) STORAGE PROFILES ['{self.profile}']",
            f"CREATE TABLE IF NOT EXISTS {self.meta_name} (KEY VARCHAR PRIMARY KEY, VAL VARCHAR({MAX_LENGTH})) "
            f"ZONE {self.zone}",
            f"CREATE TABLE IF NOT EXISTS {self.data_name} (KEY VARCHAR PRIMARY KEY, VAL VARBINARY({MAX_LENGTH})) "
            f"ZONE {self.zone}",
        ]

    def ensure_tables(self) -> None:
        zone, *tables = self.ddl()
        with self._pool.borrowed() as p:
            try:
                p.client.execute(zone)
            except Ignite3ServerError as exc:
                if not self._check_profile:
                    raise
                raise ConfigurationError(
                    f"ignite:// could not create zone {self.zone} with storage profile {self.profile!r} "
                    f"(storage={self.profile!r}): {exc}. Name a storage profile the nodes define "
                    "(ignite.storage.profiles in their configuration), or leave storage unset for "
                    "'default'"
                ) from exc
            if self._check_profile:
                profiles = self.zone_profiles(p.client)
                if self.profile not in profiles:
                    raise ConfigurationError(
                        f"ignite:// zone {self.zone} exists with storage profile(s) {profiles}, not "
                        f"{self.profile!r} as storage={self.profile!r} asks; a zone keeps its profiles: use "
                        "another cache_prefix, or drop the store's tables and zone (their files go with them)"
                    )
            for statement in tables:
                p.client.execute(statement)
        self._pool.forget_views()  # tables made again have new ids

    def zone_profiles(self, client: "Ignite3Client | None" = None) -> list[str]:
        """The storage profiles of the store's zone, as the cluster's catalog has them."""

        def ask(c: "Ignite3Client") -> list[str]:
            with c.query(
                "SELECT STORAGE_PROFILE FROM SYSTEM.ZONE_STORAGE_PROFILES WHERE ZONE_NAME = ?", (self.zone,)
            ) as cursor:
                return sorted(
                    v.decode() if isinstance(v, bytes) else str(v)
                    for page in cursor.column_pages()
                    for v in page.values[0]
                )

        if client is not None:
            return ask(client)
        with self._pool.borrowed() as p:
            return ask(p.client)

    def describe(self) -> str:
        return f"tables {self.meta_name}/{self.data_name}"

    def observed_timestamp(self) -> int:
        """The latest observable timestamp the tables' clients brought back.  The store's writes may
        have gone through any of its pooled clients: another client reading the tables by SQL
        (a read-only snapshot no older than what it has observed) first observes this
        (:meth:`Ignite3Client.observe <tensorflow_ignite.ignite3.Ignite3Client.observe>`) to see them all."""
        return self._pool.seen

    def capacity(self) -> None:
        return None

    def retryable(self, exc: BaseException) -> bool:
        return TransactionConflictError.retryable(exc)

    def missing_tables(self, exc: BaseException) -> bool:
        return isinstance(exc, TableNotFoundError)

    def recovering(self, exc: BaseException) -> bool:
        return isinstance(exc, ReplicaUnavailableError)

    def transaction(self, *, label: str, read_only: bool = False) -> _Tx:
        return _Tx(self._pool, self.meta_name, read_only)

    def scan_meta(self, prefix: str) -> Iterator[tuple[str, str]]:
        """An SQL range query on META's key (``KEY >= prefix AND KEY < prefix'`` with the last
        character raised by one)."""
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        with self._pool.borrowed() as p:
            found: list[tuple[str, str]] = []
            cursor = p.client.query(f"SELECT KEY, VAL FROM {self.meta_name} WHERE KEY >= ? AND KEY < ?", [prefix, end])
            for page in cursor.column_pages():
                keys, values = page.values
                found.extend((_text(k), _text(v)) for k, v in zip(keys, values))
        return iter(found)

    def close(self) -> None:
        self._pool.close()

    # ------------------------------------------------------------------ blocks
    def block_node(self, key: str) -> str | None:
        """The name of the node a request for block ``key`` goes to (its primary when the client
        is connected to it)."""
        return self._pool.call(lambda p: p.view(self.data_name).node_of(key))

    def node_name(self, node: Any) -> str:
        return "the cluster (any node)" if node is None else f"node {node}"

    def get_block(self, key: str) -> memoryview | None:
        row = self._pool.call(lambda p: p.view(self.data_name).get(key))
        if row is None or row["VAL"] is None:
            return None
        self.stats["blocks_read"] += 1
        return memoryview(row["VAL"])

    def get_blocks_into(self, keys: Sequence[str], views: Sequence[memoryview]) -> list[int]:
        short = []
        for pos, (key, into) in enumerate(zip(keys, views)):
            data = self.get_block(key)
            if data is None or len(data) < len(into):
                short.append(pos)
            else:
                into[:] = data[: len(into)]
        return short

    def _put(self, key: str, value: bytes | memoryview) -> None:
        self._pool.call(lambda p: p.view(self.data_name).put({"KEY": key, "VAL": value}))
        self.stats["blocks_written"] += 1

    def put_block(self, buffer: bytearray, key: str, length: int) -> None:
        self._put(key, memoryview(buffer)[FRAME_ROOM : FRAME_ROOM + length])

    def send_block_from(self, key: str, block: memoryview) -> Callable[[], None]:
        """The block is copied now (the caller may release its memory at once) and put by the
        returned function (the writer runs it on the store's I/O threads)."""
        data = bytes(block)
        return lambda: self._put(key, data)

    def put_block_and_record(self, buffer: bytearray, key: str, length: int, record_key: str, record: str) -> None:
        self.meta.put(record_key, record)
        self.put_block(buffer, key, length)

    def put_blocks(self, items: Sequence[tuple[str, bytes]]) -> None:
        rows = [{"KEY": k, "VAL": v} for k, v in items]
        if rows:
            self._pool.call(lambda p: p.view(self.data_name).put_all(rows))
            self.stats["blocks_written"] += len(rows)

    def contains_block(self, key: str) -> bool:
        return self._pool.call(lambda p: p.view(self.data_name).contains(key))

    def remove_blocks(self, keys: Sequence[str]) -> None:
        if keys:
            self._pool.call(lambda p: p.view(self.data_name).remove_all(list(keys)))


def _text(value: object) -> str:
    return value.decode("utf-8") if isinstance(value, (bytes, bytearray)) else str(value)
