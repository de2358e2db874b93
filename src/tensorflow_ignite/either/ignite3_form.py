"""``IgniteClient`` on an Ignite 3 node: the common jobs over :class:`~tensorflow_ignite.ignite3.client.Ignite3Client`.

``tensorflow_ignite.IgniteClient("host:port")`` finds the generation at the handshake
(:mod:`tensorflow_ignite.generation`); on an Ignite 3 node it returns an
:class:`IgniteClient3`, a subclass of :class:`~.client.IgniteClient` whose
methods keep the Ignite 2 names, arguments and result shapes:

- ``sql(query, args)`` -- a :class:`SqlCursor3`: iterating yields rows as
  lists, ``column_names`` is set once it ran, ``fetchall()`` / ``execute()``
  as on Ignite 2 (a statement without rows yields one row ``[count]`` in a
  column ``UPDATED``, as Ignite 2's H2 engine answers DML).
- ``cache(name)`` -- a :class:`Cache3`: the table ``name`` (as SQL writes
  it: unquoted names upper-cased) through its key-value view.  A *key* is
  the bare value of the one key column, else a tuple of the key columns in
  key order (or a dict of them); a *value* is the bare value of the one other
  column of a two-column table, else a dict of the other columns.  Maps
  returned (``get_all``) are keyed the same way: bare values or tuples.
- ``cache_names()`` -- the tables; ``destroy_cache(name)`` -- ``DROP TABLE``.
- ``transaction()`` -- a :class:`Transaction3` with the Ignite 2
  transaction's methods (``get(cache, key)``, ``put(cache, key, value)``...),
  Ignite 3's isolation (pessimistic, serializable: see :mod:`tensorflow_ignite.ignite3.tx`).

What Ignite 3 has no counterpart of -- binary types, Ignite 2's partition
maps and connections, cache configurations, caches made without columns --
raises :class:`~tensorflow_ignite.errors.UnsupportedOperationError` naming
the method and what to use instead.  Nothing here speaks the wire: every
request is :class:`~tensorflow_ignite.ignite3.client.Ignite3Client`'s,
:mod:`tensorflow_ignite.ignite3.kv`'s or :mod:`tensorflow_ignite.ignite3.tx`'s.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

from ..client.cache import Cache
from ..client.client import parse_addresses
from ..client.sql import SqlCursor
from ..client.transactions import Transaction
from ..errors import ConfigurationError, UnsupportedOperationError
from ..ignite3.dataset import _identifier as sql_identifier  # keywords quoted too (VALUE, WHEN)
from .client import IgniteClient

if TYPE_CHECKING:
    from ..ignite3.client import Ignite3Client
    from ..ignite3.kv import KeyValueView, Table
    from ..ignite3.tx import Transaction as Ignite3Transaction

__all__ = ["Cache3", "IgniteClient3", "SqlCursor3", "Transaction3"]


def _unsupported(method: str, why: str, instead: str) -> NoReturn:
    raise UnsupportedOperationError(f"IgniteClient.{method} on an Ignite 3 cluster: {why}; {instead}")


class IgniteClient3(IgniteClient):
    """An :class:`~.client.IgniteClient` of an Ignite 3 cluster (``generation`` 3); see the module.

    Made by ``IgniteClient(address)`` when the address speaks Ignite 3 (or with
    ``generation="3"``), or from an open Ignite 3 client by :meth:`wrap`.  It works through
    :attr:`ignite3` (one :class:`~tensorflow_ignite.ignite3.client.Ignite3Client`), which the
    package's features take as ``client=`` when given this client.
    """

    generation: ClassVar[int] = 3
    #: The Ignite 3 client every request goes through.
    ignite3: "Ignite3Client"
    _tables: "dict[str, Table]"

    def __new__(cls, *args: Any, **kwargs: Any) -> "IgniteClient3":
        raise TypeError("IgniteClient3 is made by IgniteClient(address) or IgniteClient3.wrap(ignite3_client)")

    @classmethod
    def wrap(cls, client: "Ignite3Client", partition_awareness: bool | None = None) -> "IgniteClient3":
        """The ``IgniteClient`` form of the Ignite 3 client ``client`` (closing it closes ``client``)."""
        self = object.__new__(cls)
        self.ignite3 = client
        self.options = client.options
        self.seeds = parse_addresses(client.options.endpoints)
        # Ignite3Client routes a key to its primary when the options name several endpoints; this
        # setting is kept for what reads it and changes nothing on Ignite 3.
        self.partition_awareness = partition_awareness is not False
        self._closed = False
        self._tables = {}
        self._ready = True
        return self

    def _table(self, name: str) -> "Table":
        """The table ``name`` (looked up once per client; TableNotFoundError when there is none)."""
        table = self._tables.get(name)
        if table is None:
            table = self._tables[name] = self.ignite3.table(name)
        return table

    # ------------------------------------------------------------------ caches
    def cache(self, name: str) -> "Cache3":
        """The table ``name`` as a cache (no round trip: the table is looked up on first use)."""
        return Cache3(self, name)

    def cache_names(self) -> list[str]:
        """The tables of the cluster, as it spells them (``SCHEMA.TABLE`` outside the default schema)."""
        from ..ignite3.protocol.codes import ClientOp

        reader = self.ignite3.connection().call(ClientOp.TABLES_GET, what="listing the tables")
        first = reader.value()
        if isinstance(first, dict):  # a map: id -> name
            names = [str(n) for n in first.values()]
        else:
            names = []
            for _ in range(int(first)):
                reader.value()  # the table's id
                names.append(_qualified(reader.value()))
        return [n[len("PUBLIC.") :] if n.startswith("PUBLIC.") else n for n in names]

    def create_cache(self, config: Any) -> NoReturn:
        _unsupported(
            "create_cache",
            "an Ignite 3 table has typed columns, which a cache name or CacheConfiguration does not give",
            "create the table with client.sql('CREATE TABLE ...').execute() or tensorflow_ignite.write",
        )

    def get_or_create_cache(self, config: Any) -> NoReturn:
        _unsupported(
            "get_or_create_cache",
            "an Ignite 3 table has typed columns, which a cache name or CacheConfiguration does not give",
            "create the table with client.sql('CREATE TABLE IF NOT EXISTS ...').execute()",
        )

    def destroy_cache(self, name: str) -> None:
        """Drop the table ``name`` (TableNotFoundError when there is none)."""
        table = self._table(name)
        self.ignite3.execute(f"DROP TABLE {sql_identifier(table.name)}")
        self._tables.pop(name, None)

    # ------------------------------------------------------------------ SQL
    def sql(self, query: str, args: Sequence[Any] = (), **kwargs: Any) -> "SqlCursor3":
        """Run an SQL query or statement; see :class:`SqlCursor3`."""
        return SqlCursor3(self, query, args, **kwargs)

    # ------------------------------------------------------------ transactions
    def transaction(self, **kwargs: Any) -> "Transaction3":
        """Begin an Ignite 3 transaction with the Ignite 2 transaction's methods (see :class:`Transaction3`)."""
        return Transaction3(self, **kwargs)

    # ------------------------------------------------------ no Ignite 3 meaning
    def partition_map(self, cache_name: str, *, refresh: bool = False) -> NoReturn:
        _unsupported(
            "partition_map",
            "Ignite 3 tables have no Ignite 2 partition map (node ids by partition of a cache)",
            "client.ignite3.table(name).assignment() gives each partition's primary node by name",
        )

    def binary_type(self, type_id_or_name: int | str) -> NoReturn:
        _unsupported("binary_type", "Ignite 3 has no binary types: rows have table columns", "read the table's columns")

    def put_binary_type(self, binary_type: Any) -> NoReturn:
        _unsupported("put_binary_type", "Ignite 3 has no binary types", "create a table with the columns instead")

    def decoder(self) -> NoReturn:
        _unsupported("decoder", "Ignite 3 has no binary objects to decode", "use sql() or cache() values")

    def encoder(self) -> NoReturn:
        _unsupported("encoder", "Ignite 3 has no binary objects to encode", "write rows with cache().put()")

    def register_types(self, encoder: Any) -> NoReturn:
        _unsupported("register_types", "Ignite 3 has no binary types", "create a table with the columns instead")

    def request(self, encode: Any, op: int | None = None, **kwargs: Any) -> NoReturn:
        _unsupported(
            "request", "it sends an Ignite 2 thin-client frame", "client.ignite3.connection().call() speaks Ignite 3"
        )

    @property
    def default_connection(self) -> NoReturn:
        _unsupported(
            "default_connection", "it is an Ignite 2 connection", "client.ignite3.connection() is the Ignite 3 one"
        )

    def connection_for_node(self, node_id: Any) -> NoReturn:
        _unsupported(
            "connection_for_node",
            "Ignite 2 node ids do not name Ignite 3 nodes",
            "client.ignite3.node_connection(name)",
        )

    def drop_connection(self, conn: Any) -> NoReturn:
        _unsupported("drop_connection", "it drops an Ignite 2 connection", "close the client")

    def connections(self) -> NoReturn:
        _unsupported("connections", "it lists Ignite 2 connections", "client.ignite3.connection() is the Ignite 3 one")

    def server_nodes(self) -> NoReturn:
        _unsupported("server_nodes", "it asks Ignite 2's cluster group", "client.sql('SELECT * FROM SYSTEM.NODES')")

    def node_endpoints(self, refresh: bool = False) -> NoReturn:
        _unsupported("node_endpoints", "Ignite 3 nodes do not announce client endpoints", "name them in the address")

    @property
    def node_ids(self) -> NoReturn:
        _unsupported("node_ids", "Ignite 3 nodes are named, not numbered", "client.sql('SELECT * FROM SYSTEM.NODES')")

    def stats(self) -> NoReturn:
        _unsupported(
            "stats",
            "request counters are kept for Ignite 2 connections only",
            "the datasets' ReadStats and WriteResult count an Ignite 3 read or write",
        )

    # ------------------------------------------------------------------ closing
    def close(self) -> None:
        """Close the Ignite 3 client (idempotent)."""
        self._closed = True
        self.ignite3.close()

    def __repr__(self) -> str:
        return f"<IgniteClient {','.join(self.options.endpoints)} generation=3>"


def _qualified(name: Any) -> str:
    """A table name of a TABLES_GET answer: a string, or (schema, name) when the node qualifies it."""
    if isinstance(name, (list, tuple)):
        return ".".join(str(p) for p in name)
    return str(name)


class Cache3(Cache):
    """An Ignite 3 table used as a cache (keys and values as the module says)."""

    client: IgniteClient3

    def __init__(self, client: IgniteClient3, name: str) -> None:
        super().__init__(client, name)
        self._view: KeyValueView | None = None

    def __repr__(self) -> str:
        return f"<Cache {self.name!r} (Ignite 3 table)>"

    @property
    def table(self) -> "Table":
        """The Ignite 3 table (looked up on first use)."""
        return self.client._table(self.name)

    @property
    def view(self) -> "KeyValueView":
        if self._view is None:
            self._view = self.table.kv()
        return self._view

    def _columns(self) -> tuple[list[str], list[str]]:
        """The key columns (in key order) and the other columns (in schema order) of the latest schema."""
        schema = self.table.schema()
        keys = sorted((c for c in schema.columns if c.is_key), key=lambda c: c.key_index)
        return [c.name for c in keys], [c.name for c in schema.columns if not c.is_key]

    def key_of(self, key: Any) -> Any:
        """A key as the key-value view takes it: a dict of the key columns, or the bare value of one."""
        if isinstance(key, Mapping):
            return key
        keys, _ = self._columns()
        if len(keys) == 1:
            return {keys[0]: key}
        if not isinstance(key, (tuple, list)) or len(key) != len(keys):
            raise ConfigurationError(
                f"table {self.table.name} has a key of {len(keys)} columns ({', '.join(keys)}): give a key as a "
                "tuple of them in that order, or a dict"
            )
        return dict(zip(keys, key))

    def _key_out(self, row: Mapping[str, Any]) -> Any:
        keys, _ = self._columns()
        return row[keys[0]] if len(keys) == 1 else tuple(row[k] for k in keys)

    def _value_out(self, row: Mapping[str, Any] | None) -> Any:
        if row is None:
            return None
        _, values = self._columns()
        if len(values) == 1:
            return row[values[0]]
        return {c: row[c] for c in values}

    def row_of(self, key: Any, value: Any) -> dict[str, Any]:
        """The table row of ``key`` and ``value``."""
        row = dict(self.key_of(key))
        _, values = self._columns()
        if isinstance(value, Mapping) and not (len(values) == 1 and values[0] not in value):
            row.update(value)
        elif len(values) == 1:
            row[values[0]] = value
        else:
            raise ConfigurationError(
                f"table {self.table.name} has {len(values)} value columns ({', '.join(values)}): give a value as a "
                "dict of them"
            )
        return row

    # ------------------------------------------------------------ key-value
    def get(self, key: Any, *, key_type: int | None = None) -> Any:
        """The value of ``key`` (None when absent); ``key_type`` is Ignite 2's and ignored."""
        return self._value_out(self.view.get(self.key_of(key)))

    def get_all(self, keys: Iterable[Any], *, key_type: int | None = None) -> dict[Any, Any]:
        """The entries of ``keys`` that exist."""
        rows = self.view.get_all([self.key_of(k) for k in keys])
        return {self._key_out(r): self._value_out(r) for r in rows if r is not None}

    def put(self, key: Any, value: Any, *, key_type: int | None = None, value_type: int | None = None) -> None:
        """Store ``value`` under ``key`` (insert or replace the row)."""
        self.view.put(self.row_of(key, value))

    def put_all(
        self,
        entries: Mapping[Any, Any] | Iterable[tuple[Any, Any]],
        *,
        key_type: int | None = None,
        value_type: int | None = None,
    ) -> None:
        """Store many entries in one request (all or nothing)."""
        pairs = list(entries.items()) if isinstance(entries, Mapping) else list(entries)
        self.view.put_all([self.row_of(k, v) for k, v in pairs])

    def put_if_absent(self, key: Any, value: Any) -> bool:
        """Store ``value`` unless ``key`` exists (in one transaction); True when stored."""
        with self.client.ignite3.transaction() as tx:
            if self.view.contains(self.key_of(key), tx=tx):
                return False
            self.view.put(self.row_of(key, value), tx=tx)
            return True

    def replace_if_equals(self, key: Any, expected: Any, value: Any) -> bool:
        """Replace ``expected`` by ``value`` (in one transaction: compare-and-set)."""
        with self.client.ignite3.transaction() as tx:
            if self._value_out(self.view.get(self.key_of(key), tx=tx)) != expected:
                return False
            self.view.put(self.row_of(key, value), tx=tx)
            return True

    def remove_if_equals(self, key: Any, expected: Any) -> bool:
        """Remove ``key`` if its value is ``expected`` (in one transaction)."""
        with self.client.ignite3.transaction() as tx:
            row = self.view.get(self.key_of(key), tx=tx)
            if row is None or self._value_out(row) != expected:
                return False
            return self.view.remove(self.key_of(key), tx=tx)

    def contains_key(self, key: Any) -> bool:
        return self.view.contains(self.key_of(key))

    def remove_key(self, key: Any) -> bool:
        return self.view.remove(self.key_of(key))

    def remove_keys(self, keys: Iterable[Any], *, key_type: int | None = None) -> None:
        """Remove the rows of ``keys`` (absent ones are no error)."""
        self.view.remove_all([self.key_of(k) for k in keys])

    def remove_all(self) -> None:
        """Remove every row (``DELETE FROM``)."""
        self.client.ignite3.execute(f"DELETE FROM {sql_identifier(self.table.name)}")

    def clear(self) -> None:
        """Remove every row (``DELETE FROM``)."""
        self.remove_all()

    def size(self, peek_modes: Iterable[int] = ()) -> int:
        """The number of rows (``SELECT COUNT(*)``); ``peek_modes`` are Ignite 2's: none is the only answer."""
        if list(peek_modes):
            _unsupported("Cache.size(peek_modes)", "Ignite 3 has no peek modes", "call size() without them")
        rows = self.client.sql(f"SELECT COUNT(*) FROM {sql_identifier(self.table.name)}").fetchall()
        return int(rows[0][0])

    def exists(self) -> bool:
        from ..errors import TableNotFoundError

        try:
            self.client._table(self.name)
        except TableNotFoundError:
            return False
        return True

    def scan(self, *, page_size: int = 1024, partition: int = -1, local: bool = False) -> Iterator[tuple[Any, Any]]:
        """Every entry, as (key, value) (a ``SELECT`` of the table); ``partition`` and ``local`` are Ignite 2's."""
        if partition != -1 or local:
            _unsupported(
                "Cache.scan(partition=, local=)",
                "Ignite 3 scans are SQL queries, not Ignite 2 partition scans",
                "scan the whole table, or read it with tensorflow_ignite.IgniteDataset(name, parts=...)",
            )
        cursor = self.client.sql(f"SELECT * FROM {sql_identifier(self.table.name)}", page_size=page_size)
        for row in cursor:
            named = dict(zip(cursor.column_names or (), row))
            yield self._key_out(named), self._value_out(named)

    def configuration(self) -> NoReturn:
        _unsupported(
            "Cache.configuration", "an Ignite 3 table has no CacheConfiguration", "read its columns from SYSTEM.TABLES"
        )

    def scan_pages(self, *args: Any, **kwargs: Any) -> NoReturn:
        _unsupported(
            "Cache.scan_pages", "it reads Ignite 2 binary scan pages", "use scan() or tensorflow_ignite.IgniteDataset"
        )

    def scan_partitions(self, *args: Any, **kwargs: Any) -> NoReturn:
        _unsupported(
            "Cache.scan_partitions",
            "it scans Ignite 2 partitions",
            "use tensorflow_ignite.IgniteDataset(name, parts=...)",
        )

    def scan_nodes(self, *args: Any, **kwargs: Any) -> NoReturn:
        _unsupported("Cache.scan_nodes", "it scans Ignite 2 nodes", "use tensorflow_ignite.IgniteDataset(name)")


class SqlCursor3(SqlCursor):
    """An SQL query or statement on Ignite 3, run when first iterated, with the Ignite 2 cursor's API.

    Rows are lists of Python values (DATE a ``datetime.date``, DECIMAL a ``decimal.Decimal``...);
    ``column_names`` is set once it ran.  ``schema``, ``page_size``, ``max_rows`` and ``timeout_ms`` keep
    their meaning; ``lazy`` changes nothing (Ignite 3 pages every result); ``cache``, ``local``,
    ``distributed_joins``, ``partitions`` and ``node_id`` have no Ignite 3 form and are refused.
    """

    client: IgniteClient3

    def __init__(self, client: IgniteClient3, query: str, args: Sequence[Any] = (), **kwargs: Any) -> None:
        super().__init__(client, query, args, **kwargs)
        refused = {
            "cache": (self.cache_id != 0, "run it in the table's schema (schema=)"),
            "local": (self.local, "Ignite 3 runs every query on the whole cluster"),
            "distributed_joins": (self.distributed_joins, "Ignite 3 joins across nodes always"),
            "partitions": (self.partitions is not None, "read partitions with IgniteDataset(name, parts=...)"),
            "node_id": (self.node_id is not None, "Ignite 3's system views are cluster-wide (SYSTEM.*)"),
        }
        for name, (given, instead) in refused.items():
            if given:
                _unsupported(f"sql({name}=...)", f"{name} is an Ignite 2 query option", instead)

    def pages(self) -> NoReturn:
        _unsupported("SqlCursor.pages", "its pages are Ignite 2's binary pages", "iterate the cursor for rows")

    def __iter__(self) -> Iterator[list[Any]]:
        from ..ignite3.protocol.binary_tuple import decode_value, element_bounds

        ig3 = self.client.ignite3
        cursor = ig3.query(self.query, self.args, page_size=self.page_size, schema=self.schema)
        with cursor:
            self.column_names = tuple(c.name for c in cursor.columns)
            if not cursor.has_row_set:  # DML or DDL: the rows it changed, as Ignite 2 answers
                self.column_names = ("UPDATED",)
                yield [max(cursor.affected_rows, 0)]
                return
            types = [int(c.type) for c in cursor.columns]
            left = self.max_rows if self.max_rows > 0 else -1
            for page in cursor.pages():
                for i in range(len(page)):
                    data = page[i]
                    bounds = element_bounds(data, len(types))
                    yield [decode_value(t, data, b, e) for t, (b, e) in zip(types, bounds)]
                    left -= 1
                    if left == 0:
                        return


class Transaction3(Transaction):
    """An Ignite 3 transaction with the Ignite 2 transaction's methods; a context manager that commits
    at the end of the block and rolls back when it raises.

    ``timeout`` (seconds; 0: the cluster's default) and ``read_only`` (Ignite 3: a snapshot, no locks) are
    taken; ``label`` is Ignite 2's and ignored; ``concurrency`` and ``isolation`` have no Ignite 3 form
    (an Ignite 3 read-write transaction is pessimistic and serializable) and are refused.  A conflict
    raises :class:`~tensorflow_ignite.errors.Ignite3TransactionConflictError`, a
    :class:`~tensorflow_ignite.errors.TransactionConflictError` as on Ignite 2.
    """

    client: IgniteClient3

    def __init__(
        self,
        client: IgniteClient3,
        *,
        timeout: float = 0.0,
        read_only: bool = False,
        label: str | None = None,
        **ignite2: Any,
    ) -> None:
        for name in ignite2:
            if name in ("concurrency", "isolation"):
                _unsupported(
                    f"transaction({name}=...)",
                    "an Ignite 3 read-write transaction is pessimistic and serializable",
                    "leave it out (or read_only=True for a snapshot)",
                )
            raise TypeError(f"transaction() got an unexpected keyword argument {name!r}")
        self.client = client
        self.tx: Ignite3Transaction = client.ignite3.transaction(read_only=read_only, timeout=timeout or None)
        self.connection = self.tx.connection  # type: ignore[assignment]  # the Ignite 3 connection it lives on
        self._open = True

    def __repr__(self) -> str:
        return f"<Transaction {self.tx!r}>"

    @staticmethod
    def _cache(cache: Cache) -> Cache3:
        if not isinstance(cache, Cache3):
            raise ConfigurationError(f"{cache!r} is not a table of this Ignite 3 client: take it from client.cache()")
        return cache

    def get(self, cache: Cache, key: Any) -> Any:
        c = self._cache(cache)
        return c._value_out(c.view.get(c.key_of(key), tx=self.tx))

    def get_all(self, cache: Cache, keys: Iterable[Any]) -> dict[Any, Any]:
        c = self._cache(cache)
        rows = c.view.get_all([c.key_of(k) for k in keys], tx=self.tx)
        return {c._key_out(r): c._value_out(r) for r in rows if r is not None}

    def put(self, cache: Cache, key: Any, value: Any) -> None:
        c = self._cache(cache)
        c.view.put(c.row_of(key, value), tx=self.tx)

    def put_all(self, cache: Cache, entries: Mapping[Any, Any] | Iterable[tuple[Any, Any]]) -> None:
        c = self._cache(cache)
        pairs = list(entries.items()) if isinstance(entries, Mapping) else list(entries)
        c.view.put_all([c.row_of(k, v) for k, v in pairs], tx=self.tx)

    def remove_key(self, cache: Cache, key: Any) -> bool:
        c = self._cache(cache)
        return c.view.remove(c.key_of(key), tx=self.tx)

    def remove_keys(self, cache: Cache, keys: Iterable[Any]) -> None:
        c = self._cache(cache)
        c.view.remove_all([c.key_of(k) for k in keys], tx=self.tx)

    def _end(self, commit: bool) -> None:
        if not self._open:
            return
        self._open = False
        if commit:
            self.tx.commit()
        else:
            self.tx.rollback()

    def commit(self) -> None:
        """Commit; a conflict raises (the transaction is then rolled back on the node)."""
        self._end(True)
