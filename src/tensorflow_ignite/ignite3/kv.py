"""Key-value access to Ignite 3 tables: ``Ignite3Client.table(name).kv()``.

    view = client.table("META").kv()
    view.put({"KEY": "a", "VAL": "x"})
    view.get({"KEY": "a"})             # {"KEY": "a", "VAL": "x"}, or None
    view.get("a")                      # the same: a table with one key column takes the bare value
    with client.transaction() as tx:
        view.put_all([{"KEY": "b", "VAL": "y"}, {"KEY": "c", "VAL": "z"}], tx=tx)

Rows are dicts, column -> value, with the table's column names (SQL's:
upper-case unless quoted when created; a plain lower-case name given here
matches its upper-case column).  A row written names the key columns and any
others; a column it leaves out takes its default (NULL when it has none).  A
key names the key columns only.  The values each column type takes are the
streamer's (:mod:`.protocol.rows`); values come back as
:func:`~.protocol.binary_tuple.decode_value` reads them (DATE a
``datetime.date``, TIMESTAMP an aware ``datetime``, DECIMAL a
``decimal.Decimal``, BYTE_ARRAY ``bytes``...).

Each operation is one request (:mod:`.protocol.tuples`).  Without ``tx=`` the
node runs it in a transaction of its own (atomic: a ``put_all`` is all or
nothing) and the request goes to the primary node of its (first) key's
partition -- the colocation hash (:mod:`.protocol.colocation`) and the
partition assignment (PARTITION_ASSIGNMENT_GET, loaded again when a response
says it changed) -- when the client has a connection to that node
(:meth:`~.client.Ignite3Client.node_connection`: the options name several
endpoints), else over the client's connection (the node forwards it: routing
saves a hop, correctness does not need it).  With ``tx=`` it joins that
transaction and goes over the transaction's connection.  The table's schema is loaded when first needed and
kept per version; a request the node answers with a schema version mismatch is
written again in the version it names (as the Java client does), so columns
added meanwhile do not fail an operation.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import ConfigurationError, Ignite3ServerError, IgniteConnectionError, TableNotFoundError
from .connection import Ignite3Connection
from .protocol import table as tp
from .protocol import tuples as tu
from .protocol.codes import ClientOp, ErrorCode
from .protocol.colocation import partition_of
from .protocol.msgpack_io import Reader
from .routes import Assignments, find_table
from .tx import Transaction

if TYPE_CHECKING:
    from .client import Ignite3Client

__all__ = ["Table", "KeyValueView"]

T = TypeVar("T")

#: Requests written again after schema version mismatches before the error is raised.
SCHEMA_RETRIES = 3

Row = dict[str, Any]


class Table:
    """A table of an Ignite 3 cluster: its id and the schema versions this client has seen."""

    def __init__(self, client: "Ignite3Client", name: str) -> None:
        self.client = client
        #: The table's id and name as the cluster knows them.
        self.id, self.name = find_table(client.connection(), name)
        self._lock = threading.Lock()
        self._schemas: dict[int, tp.TableSchema] = {}
        self._latest: int | None = None
        #: The primary of each partition, kept until a response says it changed (:class:`.routes.Assignments`).
        self.assignments = Assignments(self.id, self.name, client.connection)

    def _load(self, version: int | None) -> tp.TableSchema:
        which = "the latest schema" if version is None else f"schema version {version}"
        what = f"reading {which} of table {self.name}"
        body = tp.schemas_request(self.id, None if version is None else [version])
        schemas = tp.parse_schemas(self.client.connection().call(ClientOp.SCHEMAS_GET, body, what=what))
        if not schemas or not schemas[-1].columns:
            raise TableNotFoundError(
                f"table {self.name} has no schema {'' if version is None else version} on the "
                "node (dropped meanwhile?)",
                status=int(ErrorCode.TABLE_NOT_FOUND),
            )
        with self._lock:
            for s in schemas:
                self._schemas[s.version] = s
            if version is None:
                self._latest = schemas[-1].version
        return schemas[-1]

    def schema(self, version: int | None = None) -> tp.TableSchema:
        """Schema ``version`` of the table (None: the latest this client knows, loaded on first use)."""
        with self._lock:
            v = self._latest if version is None else version
            known = self._schemas.get(v) if v is not None else None
        return known if known is not None else self._load(version)

    def refresh(self) -> tp.TableSchema:
        """The table's latest schema, asked of the node now."""
        return self._load(None)

    def saw_version(self, version: int) -> None:
        """A node answered with schema ``version``: a newer one than known is loaded on next use."""
        with self._lock:
            if self._latest is not None and version > self._latest:
                self._latest = None if version not in self._schemas else version

    def assignment(self) -> tp.PartitionAssignment:
        """The primary node of each partition (PARTITION_ASSIGNMENT_GET; kept until a response says it changed)."""
        return self.assignments.get()

    def saw_assignment(self, timestamp: int | None) -> None:
        """A node said the assignment changed at ``timestamp``: a newer one than known is read on next use."""
        self.assignments.saw(timestamp)

    def forget_assignment(self) -> None:
        """Read the assignment again on next use (a primary was lost)."""
        self.assignments.forget()

    def kv(self) -> "KeyValueView":
        """Key-value operations on the table's rows."""
        return KeyValueView(self)

    def __repr__(self) -> str:
        return f"Table({self.name!r}, id={self.id})"


class KeyValueView:
    """Rows of one table read, written and removed by key (dicts: column -> value)."""

    def __init__(self, table: Table) -> None:
        self.table = table

    # ------------------------------------------------------------------ plumbing
    def _key(self, key: Any, schema: tp.TableSchema) -> Mapping[str, Any]:
        if isinstance(key, Mapping):
            return key
        cols = tu.key_schema(schema).columns
        if len(cols) != 1:
            raise ConfigurationError(
                f"table {self.table.name} has a key of {len(cols)} columns "
                f"({', '.join(c.name for c in cols)}): give a key as a dict of them"
            )
        return {cols[0].name: key}

    def _route(self, key_hash: int) -> Ignite3Connection:
        """The connection to the primary of the partition of ``key_hash`` if the client has one, else its own."""
        client = self.table.client
        if len(client.options.endpoints) > 1:
            assignment = self.table.assignment()
            node = assignment.primaries[partition_of(key_hash, assignment.partitions)]
            routed = client.node_connection(node) if node is not None else None
            if routed is not None:
                return routed
        return client.connection()

    def node_of(self, key: Any) -> str:
        """The node a request for ``key`` without a transaction goes to (its primary, when connected to it)."""
        schema = self.table.schema()
        enc = tu.encode_keys(schema, [self._key(key, schema)], self.table.name)
        return self._route(enc.hashes[0]).handshake.node_name

    def _call(
        self,
        op: ClientOp,
        items: Sequence[Any],
        *,
        keys: bool,
        single: bool,
        tx: Transaction | None,
        parse: Callable[[Reader], T],
    ) -> T:
        """Send ``items`` (keys or rows) as one request; written again in the schema version the node asks for."""
        version: int | None = None
        refreshed = False
        for attempt in range(SCHEMA_RETRIES + 1):
            schema = self.table.schema(version)
            try:
                if keys:
                    enc = tu.encode_keys(schema, [self._key(k, schema) for k in items], self.table.name)
                else:
                    enc = tu.encode_records(schema, items, self.table.name)
            except ConfigurationError:
                if refreshed or version is not None:
                    raise
                # Perhaps a column added since the schema was loaded: load the latest once and try again.
                self.table.refresh()
                refreshed = True
                continue
            tx_id = tx.check_open() if tx is not None else None
            conn = tx.connection if tx is not None else self._route(enc.hashes[0])
            body = tu.tuples_request(self.table.id, tx_id, schema.version, enc, single=single)
            try:
                try:
                    reader = conn.call(op, body, what=f"{op.name} on table {self.table.name}")
                except IgniteConnectionError:
                    if tx is not None or conn is self.table.client.connection():
                        raise
                    # The routed node is gone: once more through the client's own connection (the node
                    # forwards it), with the assignment read again next time.
                    self.table.forget_assignment()
                    conn = self.table.client.connection()
                    reader = conn.call(op, body, what=f"{op.name} on table {self.table.name}")
            except Ignite3ServerError as exc:
                if exc.status != ErrorCode.SCHEMA_VERSION_MISMATCH or attempt == SCHEMA_RETRIES:
                    raise
                expected = exc.extensions.get(tu.EXPECTED_SCHEMA_VERSION)
                if isinstance(expected, int) and not isinstance(expected, bool):
                    version = expected
                else:
                    self.table.refresh()
                    version = None
                continue
            finally:
                self.table.saw_assignment(conn.assignment_time)
            if conn is not self.table.client.connection():
                self.table.client.observe(conn.observable_timestamp)  # its SQL and transactions see this write
            return parse(reader)
        raise AssertionError("unreachable")

    def _row(self, version: int, data: bytes | None) -> Row | None:
        if data is None:
            return None
        self.table.saw_version(version)
        return tu.decode_row(self.table.schema(version), data)

    # ------------------------------------------------------------------ reads
    def get(self, key: Any, *, tx: Transaction | None = None) -> Row | None:
        """The row of ``key`` (a dict of the key columns, or the bare value of a one-column key); None if absent."""
        version, data = self._call(ClientOp.TUPLE_GET, [key], keys=True, single=True, tx=tx, parse=tu.parse_get)
        return self._row(version, data)

    def get_all(self, keys: Sequence[Any], *, tx: Transaction | None = None) -> list[Row | None]:
        """The row of each key, in the keys' order (None where a key has no row)."""
        keys = list(keys)
        if not keys:
            return []
        version, rows = self._call(ClientOp.TUPLE_GET_ALL, keys, keys=True, single=False, tx=tx, parse=tu.parse_get_all)
        if len(rows) != len(keys):
            raise ConfigurationError(f"table {self.table.name}: {len(keys)} keys asked, {len(rows)} rows answered")
        return [self._row(version, r) for r in rows]

    def contains(self, key: Any, *, tx: Transaction | None = None) -> bool:
        """Whether ``key`` has a row."""
        return self._call(ClientOp.TUPLE_CONTAINS_KEY, [key], keys=True, single=True, tx=tx, parse=tu.parse_flag)[1]

    # ------------------------------------------------------------------ writes
    def put(self, row: Mapping[str, Any], *, tx: Transaction | None = None) -> None:
        """Insert or replace the row of ``row``'s key."""
        self.table.saw_version(
            self._call(ClientOp.TUPLE_UPSERT, [row], keys=False, single=True, tx=tx, parse=tu.parse_version)
        )

    def put_all(self, rows: Sequence[Mapping[str, Any]], *, tx: Transaction | None = None) -> None:
        """Insert or replace each row (one request: all or nothing)."""
        rows = list(rows)
        if rows:
            self.table.saw_version(
                self._call(ClientOp.TUPLE_UPSERT_ALL, rows, keys=False, single=False, tx=tx, parse=tu.parse_version)
            )

    def remove(self, key: Any, *, tx: Transaction | None = None) -> bool:
        """Remove the row of ``key``; whether there was one."""
        return self._call(ClientOp.TUPLE_DELETE, [key], keys=True, single=True, tx=tx, parse=tu.parse_flag)[1]

    def remove_all(self, keys: Sequence[Any], *, tx: Transaction | None = None) -> list[Row]:
        """Remove the rows of ``keys``; the keys that had none (dicts of the key columns)."""
        keys = list(keys)
        if not keys:
            return []
        version, missing = self._call(
            ClientOp.TUPLE_DELETE_ALL, keys, keys=True, single=False, tx=tx, parse=tu.parse_keys
        )
        schema = self.table.schema(version)
        return [tu.decode_key(schema, k) for k in missing]

    def __repr__(self) -> str:
        return f"KeyValueView({self.table.name!r})"
