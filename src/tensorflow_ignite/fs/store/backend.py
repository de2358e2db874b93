"""What the file store needs of a cluster: one interface, one implementation per Ignite generation.

:class:`~.core.IgniteFileStore` keeps its layout (:mod:`..layout`: the same
keys and JSON values) in a *meta* key-value table (entries, listing buckets,
``g:`` and ``w:`` records; transactional) and a *data* table (one block per
key; no transactions).  Everything the store's parts do on the wire goes
through a :class:`StoreTables`:

* the meta table's single-key and batch operations (:class:`MetaTable`) and a
  scan by key prefix (:meth:`StoreTables.scan_meta`);
* metadata transactions (:meth:`StoreTables.transaction`: a
  :class:`MetaTransaction` with ``get_all``/``put_all``/``remove_all`` and
  commit/rollback) and which of their failures mean "lost a race, run again"
  (:meth:`StoreTables.retryable`);
* block transfers at block level, each request routed to the block key's
  primary node where the client can: put from a buffer (with room for a
  request header in front), send straight from the caller's memory, get, get
  several into the caller's buffer, remove;
* creating the tables when missing (:meth:`StoreTables.ensure_tables`) and the
  capacity guard (:meth:`StoreTables.capacity`, None where the cluster reports
  no storage figures).

Two implementations: :mod:`.ignite2` (caches, the Ignite 2 thin client's
transactions, zero-copy CACHE_PUT framing) and :mod:`.ignite3` (tables through
:class:`~tensorflow_ignite.ignite3.Ignite3Client`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ...capacity import CapacityGuard

__all__ = ["MetaTable", "MetaTransaction", "StoreTables"]


class MetaTable(Protocol):
    """The meta table outside transactions: string keys, string (JSON) values."""

    name: str

    def get(self, key: str) -> Any:
        """The value of ``key``, None if absent."""

    def get_all(self, keys: Iterable[str]) -> dict[Any, Any]:
        """The values of the ``keys`` that exist (one request)."""

    def put(self, key: str, value: str) -> None:
        """Insert or replace one value."""

    def put_all(self, entries: Mapping[str, str] | Iterable[tuple[str, str]]) -> None:
        """Insert or replace several values (one request)."""

    def remove_key(self, key: str) -> bool:
        """Remove one key; whether it was there."""

    def remove_keys(self, keys: Iterable[str]) -> None:
        """Remove several keys (one request)."""


class MetaTransaction(Protocol):
    """One read-write (or read-only) transaction on the meta table."""

    def get_all(self, keys: Sequence[str]) -> dict[str, Any]:
        """The values of the ``keys`` that exist, as this transaction sees them."""

    def put_all(self, entries: Sequence[tuple[str, str]]) -> None:
        """Write several values in the transaction."""

    def remove_all(self, keys: Sequence[str]) -> None:
        """Remove several keys in the transaction."""

    def commit(self) -> None:
        """Commit; a lost race raises an error :meth:`StoreTables.retryable` accepts."""

    def rollback(self) -> None:
        """Roll back (also after a failed operation)."""

    def abandon(self) -> None:
        """The transaction's connection failed: drop that connection (the node rolls back)."""


class StoreTables(Protocol):
    """The two tables of one store on one cluster, and the operations the store uses on them."""

    #: The Ignite generation: 2 or 3.
    generation: int
    #: The meta table outside transactions.
    meta: MetaTable
    #: The longest pause (seconds) between two runs of a transaction that lost a race.
    max_backoff: float
    #: Seconds requests are sent again while :meth:`recovering` says the cluster will serve them soon.
    recovery_wait: float
    #: Names of the meta and data tables (caches on Ignite 2), for messages.
    meta_name: str
    data_name: str

    def ensure_tables(self) -> None:
        """Create the tables if missing (existing ones keep their configuration)."""

    def describe(self) -> str:
        """``caches x_meta/x_data`` or ``tables X_META/X_DATA``: for messages."""

    def capacity(self) -> "CapacityGuard | None":
        """The guard every block write passes (None: the cluster reports no storage figures)."""

    def retryable(self, exc: BaseException) -> bool:
        """Whether ``exc`` means a transaction lost a race (rolled back; running it again may succeed)."""

    def missing_tables(self, exc: BaseException) -> bool:
        """Whether ``exc`` says the tables are gone (a restarted in-memory cluster): create them again."""

    def recovering(self, exc: BaseException) -> bool:
        """Whether ``exc`` says the cluster cannot serve the request *yet*: a lost node's partitions are
        getting new primaries (Ignite 3's replica errors).  A request that had no effect -- an idempotent
        one, or a transaction not yet committing -- may be sent again for up to ``recovery_wait`` seconds."""

    def transaction(self, *, label: str, read_only: bool = False) -> MetaTransaction:
        """Begin a metadata transaction."""

    def scan_meta(self, prefix: str) -> Iterator[tuple[str, str]]:
        """Every meta record whose key starts with ``prefix`` (not a snapshot; rare and slow)."""

    # ------------------------------------------------------------------ blocks
    def block_node(self, key: str) -> Any:
        """The node requests for block ``key`` go to (its primary), None if any node."""

    def node_name(self, node: Any) -> str:
        """``node <id> (host:port)`` for messages."""

    def get_block(self, key: str) -> memoryview | None:
        """The bytes of one block, None when absent."""

    def get_blocks_into(self, keys: Sequence[str], views: Sequence[memoryview]) -> list[int]:
        """Fetch each block ``keys[i]`` into ``views[i]`` (several requests in flight where the
        connection allows); returns the positions whose block was absent or shorter than its view."""

    def put_block(self, buffer: bytearray, key: str, length: int) -> None:
        """Store ``buffer[FRAME_ROOM:FRAME_ROOM + length]`` as block ``key`` (the room in front is
        free for a request header)."""

    def send_block_from(self, key: str, block: memoryview) -> Callable[[], None]:
        """Send block ``key`` from memory the caller keeps only until this returns; the returned
        function waits for the acknowledgement."""

    def put_block_and_record(self, buffer: bytearray, key: str, length: int, record_key: str, record: str) -> None:
        """:meth:`put_block` and a meta ``put`` of ``record``, in as few round trips as possible."""

    def put_blocks(self, items: Sequence[tuple[str, bytes]]) -> None:
        """Store several small blocks (one request where possible)."""

    def contains_block(self, key: str) -> bool:
        """Whether block ``key`` exists."""

    def remove_blocks(self, keys: Sequence[str]) -> None:
        """Remove blocks (one request)."""

    def close(self) -> None:
        """Release what the tables hold (not a shared client)."""
