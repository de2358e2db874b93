"""Where a table's rows live on an Ignite 3 cluster: its id, its schema and the primary of each partition.

The one place the Ignite 3 stack asks these: the streamer (:mod:`.streamer`),
the partition-aware reads (:mod:`.partitioned`) and the key-value view
(:mod:`.kv`) all look a table up with :func:`find_table` and keep its
partition assignment in an :class:`Assignments` -- read with
PARTITION_ASSIGNMENT_GET when first needed and kept until it is invalidated:
a response that says the assignment changed after the one kept (every
response carries that flag; :attr:`.connection.Ignite3Connection.assignment_time`),
or a caller that lost a primary (:meth:`Assignments.forget`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import TableNotFoundError
from .connection import Ignite3Connection
from .protocol import table as tp
from .protocol.codes import ClientOp, ErrorCode

__all__ = ["Assignments", "TableRoute", "find_table", "latest_schema", "table_route"]


def find_table(conn: Ignite3Connection, table: str, *, hint: str = "create it first (CREATE TABLE)") -> tuple[int, str]:
    """The id and name (as the cluster spells it) of ``table``, asked over ``conn``.

    Raises :class:`~tensorflow_ignite.errors.TableNotFoundError`, ending with ``hint``, when there is none.
    """
    found = tp.parse_table_get(
        conn.call(ClientOp.TABLE_GET, tp.table_get_request(table), what=f"looking up table {table}")
    )
    if found is None:
        raise TableNotFoundError(
            f"table {table} does not exist on the Ignite 3 cluster; {hint}", status=int(ErrorCode.TABLE_NOT_FOUND)
        )
    return found


def latest_schema(conn: Ignite3Connection, table_id: int, name: str) -> tp.TableSchema:
    """The latest schema of the table ``table_id`` (named ``name`` in errors), asked over ``conn``."""
    schemas = tp.parse_schemas(
        conn.call(ClientOp.SCHEMAS_GET, tp.schemas_request(table_id), what=f"reading the schema of table {name}")
    )
    if not schemas or not schemas[-1].columns:
        raise TableNotFoundError(
            f"table {name} has no schema on the node (dropped meanwhile?)", status=int(ErrorCode.TABLE_NOT_FOUND)
        )
    return schemas[-1]


class Assignments:
    """The primary node of each partition of one table, kept until the cluster says it changed.

    ``connect()`` gives the connection it is asked over (:meth:`get` may name another).
    Thread-safe.  An answer without primaries yet (a table just created) is not kept.
    """

    def __init__(self, table_id: int, name: str, connect: Callable[[], Ignite3Connection]) -> None:
        self.table_id = table_id
        self.name = name
        self._connect = connect
        self._lock = threading.Lock()
        self._known: tp.PartitionAssignment | None = None

    def get(self, conn: Ignite3Connection | None = None) -> tp.PartitionAssignment:
        """The assignment: the one kept, unless ``conn`` (default ``connect()``) has seen a newer one."""
        conn = conn if conn is not None else self._connect()
        self.saw(conn.assignment_time)
        with self._lock:
            known = self._known
        if known is not None:
            return known
        got = tp.parse_assignment(
            conn.call(
                ClientOp.PARTITION_ASSIGNMENT_GET,
                tp.assignment_request(self.table_id, 0),
                what=f"reading the partitions of table {self.name}",
            )
        )
        if got.timestamp:
            with self._lock:
                self._known = got
        return got

    def saw(self, timestamp: int | None) -> None:
        """A node said the assignment changed at ``timestamp``: one newer than the one kept is read on next use."""
        with self._lock:
            if timestamp is not None and self._known is not None and timestamp > self._known.timestamp:
                self._known = None

    def forget(self) -> None:
        """Read the assignment again on next use (a primary was lost)."""
        with self._lock:
            self._known = None


@dataclass(frozen=True)
class TableRoute:
    """What a write or a read plan needs of a table: id, SQL name, latest schema, primary node of each partition."""

    table_id: int
    name: str
    schema: tp.TableSchema
    assignment: tp.PartitionAssignment


def table_route(conn: Ignite3Connection, table: str) -> TableRoute:
    """The table's id, latest schema and partition assignment, asked over ``conn`` now."""
    table_id, name = find_table(conn, table, hint="create it (CREATE TABLE, or write(..., create=True, key=...))")
    schema = latest_schema(conn, table_id, name)
    return TableRoute(table_id, name, schema, Assignments(table_id, name, lambda: conn).get())
