"""``Ignite3Client``: SQL on an Apache Ignite 3 cluster through the project's options type.

It connects to the first endpoint of its
:class:`~tensorflow_ignite.client.options.ConnectionOptions` that answers
(``host:port``, then ``fallbacks``), runs statements (:meth:`execute`), asks
a query's columns without running it (:meth:`columns`) and reads a query's
result page by page (:meth:`query`, a :class:`SqlCursor`).  A page stays
undecoded rows until the caller turns it into columns
(:meth:`SqlCursor.column_pages`).  Rows by key: :meth:`table` (``.kv()``,
:mod:`.kv`) and :meth:`transaction` (:mod:`.tx`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ClassVar, Unpack

from ..client.client import parse_addresses
from ..client.closeable import Closeable
from ..client.options import ConnectionKeywords, ConnectionOptions
from ..errors import AuthenticationError, HandshakeError, IgniteConnectionError, ResourceNotFoundError, TLSError
from .connection import Ignite3Connection
from .kv import Table
from .nodes import dial_nodes
from .protocol import sql
from .protocol.codes import ClientOp
from .protocol.columns import PageColumns, decode_page
from .protocol.msgpack_io import RowPage
from .tx import Transaction

__all__ = ["Ignite3Client", "SqlCursor"]


class Ignite3Client(Closeable):
    """A client of one Ignite 3 cluster (one connection, opened on first use; thread-safe)."""

    #: The Ignite generation whose handshake this client speaks (:mod:`tensorflow_ignite.generation`).
    generation: ClassVar[int] = 3

    def __init__(self, options: ConnectionOptions | None = None, **fields: Any) -> None:
        self.options = options if options is not None else ConnectionOptions(**fields)
        self._conn: Ignite3Connection | None = None
        self._lock = threading.Lock()
        #: Connections by node name (besides ``_conn``), dialled on the first :meth:`node_connection`.
        self._nodes: dict[str, Ignite3Connection] | None = None
        self._nodes_lock = threading.Lock()

    @classmethod
    def connect(cls, address: str = "127.0.0.1:10800", **connection: Unpack[ConnectionKeywords]) -> "Ignite3Client":
        """A client of the cluster at ``address`` (``"host:port"``, or several, comma-separated)."""
        return cls(
            ConnectionOptions.from_address(address, **ConnectionOptions.settings_given("Ignite3Client", connection))
        )

    def connection(self) -> Ignite3Connection:
        """The open connection (dialled now if there is none)."""
        with self._lock:
            if self._conn is not None and not self._conn.closed:
                return self._conn
            errors = []
            refused: HandshakeError | None = None
            for host, port in parse_addresses(self.options.endpoints):
                try:
                    self._conn = Ignite3Connection(self.options, host, port)
                    return self._conn
                except (AuthenticationError, TLSError):
                    raise  # another node would say the same
                except HandshakeError as exc:
                    refused = refused or exc  # not an Ignite 3 port: try the others, then say so
                    errors.append(str(exc))
                except IgniteConnectionError as exc:
                    errors.append(str(exc))
            if refused is not None:
                raise refused
            raise IgniteConnectionError(
                "no Ignite 3 node answered at " + ", ".join(self.options.endpoints) + ": " + "; ".join(errors),
                address=self.options.endpoints[0],
            )

    def node_connection(self, node: str) -> Ignite3Connection | None:
        """The client's connection to the node named ``node``, if it has one (None otherwise).

        The first call dials every endpoint of the options besides the one :meth:`connection` uses and
        learns each node's name at its handshake (an endpoint that does not answer is left out); a
        connection that closed since is dropped, not dialled again.
        """
        default = self.connection()
        if default.handshake.node_name == node:
            return default
        with self._nodes_lock:
            if self._nodes is None:
                self._nodes = self._dial_others(default)
            conn = self._nodes.get(node)
            if conn is not None and conn.closed:
                del self._nodes[node]
                conn = None
            return conn

    def _dial_others(self, default: Ignite3Connection) -> dict[str, Ignite3Connection]:
        """A connection to each other node of the options' endpoints (:func:`.nodes.dial_nodes`); one that
        does not answer is left out (its keys go through the default connection: the node forwards them)."""
        nodes, _ = dial_nodes(
            [(h, p) for h, p in parse_addresses(self.options.endpoints) if f"{h}:{p}" != default.address],
            lambda host, port: Ignite3Connection(self.options, host, port),
            lambda conn: conn.handshake.node_name,
            held=(default.handshake.node_name,),
        )
        return nodes

    def observe(self, timestamp: int) -> None:
        """Raise the observable timestamp of the client's connections to ``timestamp`` (a time another of
        its connections saw), so its statements and read-only transactions see what those wrote."""
        conns = [self._conn] + list((self._nodes or {}).values())
        for c in conns:
            if c is not None and c.observable_timestamp < timestamp:
                c.observable_timestamp = timestamp

    def observed_timestamp(self) -> int:
        """The latest observable timestamp of the client's open connections: what it has seen (to hand
        to another client with :meth:`observe`, so that it reads what this one wrote)."""
        conns = [self._conn, *(self._nodes or {}).values()]
        return max((c.observable_timestamp for c in conns if c is not None and not c.closed), default=0)

    @property
    def server_version(self) -> str:
        """The version the connected node reported (``3.1.0``)."""
        return self.connection().handshake.server_version

    def _exec(self, query: str, args: Sequence[Any], page_size: int, schema: str | None) -> sql.ExecResult:
        conn = self.connection()
        body = sql.exec_request(
            query, args, schema=schema, page_size=page_size, observable_timestamp=conn.observable_timestamp
        )
        return sql.parse_exec(conn.call(ClientOp.SQL_EXEC, body, what=f"SQL {query[:80]!r}"))

    def execute(self, query: str, args: Sequence[Any] = (), *, schema: str | None = None) -> int:
        """Run a statement; the rows it changed (-1 for DDL). A row set it returns is closed unread."""
        res = self._exec(query, args, sql.DEFAULT_PAGE_SIZE, schema)
        if res.cursor_id is not None and res.has_more:
            self._close_cursor(res.cursor_id)
        return res.affected_rows

    def columns(self, query: str, *, schema: str | None = None) -> tuple[sql.ColumnMeta, ...]:
        """The result columns of ``query``, without running it (SQL_QUERY_META)."""
        conn = self.connection()
        _, cols = sql.parse_meta(
            conn.call(
                ClientOp.SQL_QUERY_META, sql.meta_request(query, schema=schema), what=f"SQL metadata of {query[:80]!r}"
            )
        )
        return cols

    def query(
        self, query: str, args: Sequence[Any] = (), *, page_size: int = 4096, schema: str | None = None
    ) -> "SqlCursor":
        """Run ``query``; its rows through the returned cursor (close it, or read it to the end)."""
        return SqlCursor(self, self._exec(query, args, page_size, schema))

    def table(self, name: str) -> Table:
        """The table ``name`` (as SQL writes it: unquoted names upper-cased); ``.kv()`` reads and writes rows by key.

        Raises :class:`~tensorflow_ignite.errors.TableNotFoundError` when there is no such table.
        """
        return Table(self, name)

    def transaction(self, *, read_only: bool = False, timeout: float | None = None) -> Transaction:
        """Begin a transaction (a context manager: commits at the end of the block, rolls back when it raises).

        ``timeout`` in seconds (None: the cluster's default); ``read_only`` reads a snapshot, takes no locks.
        """
        return Transaction(self, read_only=read_only, timeout=timeout)

    def _next_page(self, cursor_id: int) -> tuple[RowPage, bool]:
        conn = self.connection()
        return sql.parse_next_page(
            conn.call(
                ClientOp.SQL_CURSOR_NEXT_PAGE,
                sql.cursor_request(cursor_id),
                what="reading the next page of an SQL result",
            )
        )

    def _close_cursor(self, cursor_id: int) -> None:
        try:
            self.connection().call(
                ClientOp.SQL_CURSOR_CLOSE, sql.cursor_request(cursor_id), what="closing an SQL cursor"
            )
        except (ResourceNotFoundError, IgniteConnectionError):
            pass  # closed already, or the connection is gone (and the cursor with it)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            conn, self._conn = self._conn, None
        with self._nodes_lock:
            others, self._nodes = list((self._nodes or {}).values()), None
        for c in [conn, *others]:
            if c is not None:
                c.close()

    def __repr__(self) -> str:
        return f"Ignite3Client({self.options!r})"


class SqlCursor(Closeable):
    """The pages of one query's result; iterating yields each page's rows (binary tuples)."""

    def __init__(self, client: Ignite3Client, first: sql.ExecResult) -> None:
        self.client = client
        self.columns: tuple[sql.ColumnMeta, ...] = first.columns
        #: Whether the statement returns rows (a query), else ``affected_rows`` says what it did.
        self.has_row_set = first.has_row_set
        #: The rows a DML statement changed (-1 for DDL and queries).
        self.affected_rows = first.affected_rows
        self._first: RowPage | None = first.rows
        self._cursor_id = first.cursor_id
        self._more = first.has_more

    def pages(self, *, prefetch: bool = True) -> Iterator[RowPage]:
        """Each page's rows, the first page first; the cursor closes when the last is read.

        With ``prefetch`` the next page is requested (on a helper thread) before the
        current one is handed out, so the node produces it while the caller decodes.
        """
        pending: Future[tuple[RowPage, bool]] | None = None
        executor = ThreadPoolExecutor(1, thread_name_prefix="ignite3-page") if prefetch else None
        try:
            if self._first is not None:
                first, self._first = self._first, None
                if executor is not None and self._more and self._cursor_id is not None:
                    pending = executor.submit(self.client._next_page, self._cursor_id)
                if first:
                    yield first
            while self._more and self._cursor_id is not None:
                if pending is not None:
                    rows, self._more = pending.result()
                    pending = None
                else:
                    rows, self._more = self.client._next_page(self._cursor_id)
                if executor is not None and self._more:
                    pending = executor.submit(self.client._next_page, self._cursor_id)
                if rows:
                    yield rows
        finally:
            if pending is not None:
                try:
                    _, self._more = pending.result()  # the request in flight ends before the close
                except Exception:  # noqa: BLE001 - the caller is leaving; closing is best effort
                    self._more = False
            if executor is not None:
                executor.shutdown(wait=True)
            self.close()

    __iter__ = pages

    def column_pages(
        self, *, decimal_as: str = "float64", select: Sequence[int] | None = None
    ) -> Iterator[PageColumns]:
        """Each page decoded into NumPy columns (:func:`~.protocol.columns.decode_page`)."""
        for rows in self.pages():
            yield decode_page(rows, self.columns, decimal_as=decimal_as, select=select)

    def close(self) -> None:
        """Tell the node to drop the cursor if pages are left (idempotent)."""
        if self._more and self._cursor_id is not None:
            self._more = False
            self.client._close_cursor(self._cursor_id)
