"""``tensorflow_ignite.ignite3.write``: columns of data into an Ignite 3 table.

The data is a mapping of column name to a 1-D array-like (NumPy arrays, lists,
TensorFlow tensors); every column has the same length.  With ``create=True``
the table is created first when missing, from the data's dtypes
(:data:`SQL_TYPES`) with ``key`` as its primary key.

Two ways in (``method``):

* ``"streamer"`` (the default): the streamer op, as Ignite's Java
  ``DataStreamer`` -- rows batched per partition, each batch sent to the
  partition's primary node, several in flight (:mod:`.streamer`).  An
  *upsert*: a key written again replaces its row.  The values each column type
  takes are :mod:`.protocol.rows`'s.
* ``"sql"``: one ``INSERT`` statement run for a batch of ``batch_rows`` rows per
  request (SQL_EXEC_BATCH).  An *insert*: a row whose key exists already fails
  the batch with the server's error (the rows of earlier batches stay written).
  For when a duplicate key must be an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Unpack

import numpy as np

from ..client.options import ConnectionKeywords, ConnectionOptions
from ..errors import ConfigurationError, WriteError
from .client import Ignite3Client
from .dataset import _identifier, _options
from .protocol import sql
from .protocol.codes import ClientOp
from .streamer import stream

__all__ = ["write", "SQL_TYPES", "create_table_statement"]

#: The SQL type of a column created from a NumPy dtype (kind and item size).
SQL_TYPES: dict[str, str] = {
    "b1": "BOOLEAN",
    "i1": "TINYINT",
    "i2": "SMALLINT",
    "i4": "INT",
    "i8": "BIGINT",
    "u1": "SMALLINT",
    "u2": "INT",
    "u4": "BIGINT",
    "f4": "REAL",
    "f8": "DOUBLE",
    "U": "VARCHAR",
    "S": "VARBINARY",
    "O": "VARCHAR",
}
# Also made from the data (not a dtype alone): datetime64 -> DATE (days) or TIMESTAMP(9); object columns of
# bytes -> VARBINARY, uuid.UUID -> UUID, datetime -> TIMESTAMP(9), date -> DATE, Decimal -> DECIMAL(p, s)
# with the largest scale present.


def _column_arrays(data: Mapping[str, Any]) -> dict[str, np.ndarray]:
    if not data:
        raise ConfigurationError("write needs at least one column of data")
    cols = {}
    for name, values in data.items():
        arr = np.asarray(values.numpy() if hasattr(values, "numpy") else values)
        if arr.ndim != 1:
            raise ConfigurationError(
                f"column {name!r} has shape {arr.shape}: Ignite 3 columns take one value per row (1-D data)"
            )
        cols[name] = arr
    lengths = {len(a) for a in cols.values()}
    if len(lengths) != 1:
        raise ConfigurationError(
            "the columns have different lengths: " + ", ".join(f"{n}={len(a)}" for n, a in cols.items())
        )
    return cols


def _sql_type(name: str, arr: np.ndarray) -> str:
    kind = arr.dtype.kind
    if kind == "M":  # datetime64: whole days are DATE, anything finer TIMESTAMP at nanoseconds
        return "DATE" if np.datetime_data(arr.dtype)[0] in ("Y", "M", "W", "D") else "TIMESTAMP(9)"
    key = kind if kind in "USO" else f"{kind}{arr.dtype.itemsize}"
    if kind == "O":
        typed = _object_sql_type(name, arr)
        if typed is not None:
            return typed
    try:
        return SQL_TYPES[key]
    except KeyError:
        raise ConfigurationError(
            f"column {name!r} has dtype {arr.dtype}, which has no Ignite 3 column type here; "
            "convert it (to int64, float64, bool, str, bytes, datetime64, Decimal or "
            "UUID)"
        ) from None


def _object_sql_type(name: str, arr: np.ndarray) -> str | None:
    """The column type of an object column by its first non-None value (bytes, Decimal, UUID, datetime,
    date); None: text (VARCHAR)."""
    import datetime as _dt
    import decimal
    import uuid

    first = next((v for v in arr if v is not None), None)
    if isinstance(first, (bytes, bytearray)):
        return "VARBINARY"
    if isinstance(first, uuid.UUID):
        return "UUID"
    if isinstance(first, _dt.datetime):
        return "TIMESTAMP(9)"
    if isinstance(first, _dt.date):
        return "DATE"
    if isinstance(first, decimal.Decimal):
        values = [v for v in arr if isinstance(v, decimal.Decimal) and v.is_finite()]
        scale = max((max(0, -int(v.as_tuple().exponent)) for v in values), default=0)
        digits = max((len(v.as_tuple().digits) + max(0, int(v.as_tuple().exponent)) for v in values), default=1)
        return f"DECIMAL({max(38, digits + scale)}, {scale})"
    return None


def create_table_statement(table: str, data: Mapping[str, Any], key: str, zone: str | None = None) -> str:
    """``CREATE TABLE IF NOT EXISTS`` for ``data``'s columns with ``key`` as the primary key (in ``zone``,
    a distribution zone, when given: its replicas and storage profile are the table's)."""
    cols = _column_arrays(data)
    if key not in cols:
        raise ConfigurationError(f"key={key!r} is not one of the columns ({', '.join(cols)})")
    defs = ", ".join(
        f"{_identifier(n)} {_sql_type(n, a)}" + (" PRIMARY KEY" if n == key else "") for n, a in cols.items()
    )
    return f"CREATE TABLE IF NOT EXISTS {_identifier(table)} ({defs})" + (f" ZONE {_identifier(zone)}" if zone else "")


def _zone_exists(client: Ignite3Client, zone: str) -> bool:
    """Whether the cluster's catalog has distribution zone ``zone`` (a name as SQL reads it unquoted or quoted)."""
    name = _identifier(zone)
    name = name[1:-1].replace('""', '"') if name.startswith('"') else name
    with client.query("SELECT COUNT(*) FROM SYSTEM.ZONES WHERE ZONE_NAME = ?", (name,)) as cursor:
        return any(int(v) for page in cursor.column_pages() for v in page.values[0])


def _python(value: Any) -> Any:
    if isinstance(value, np.str_):
        return str(value)
    if isinstance(value, np.bytes_):
        return bytes(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.floating) and value.dtype.itemsize == 8:
        return float(value)
    return value


_METHODS = ("streamer", "sql")


def write(
    table: str,
    data: Mapping[str, Any],
    *,
    key: str | None = None,
    create: bool = False,
    zone: str | None = None,
    method: str = "streamer",
    batch_rows: int = 1000,
    parallel: int = 2,
    host: str = "127.0.0.1",
    port: int = 10800,
    options: ConnectionOptions | None = None,
    client: Ignite3Client | None = None,
    **connection: Unpack[ConnectionKeywords],
) -> int:
    """Write the rows of ``data`` (column name -> 1-D values) into ``table``; the rows written.

    ``create=True`` creates the table when missing (``key`` names its primary key column),
    in distribution zone ``zone`` when given (an existing zone: its replicas and storage
    profile -- an in-memory ``aimem`` one, say -- are the table's; default: the cluster's
    default zone).
    ``method``: ``"streamer"`` (upsert, batched per partition; ``parallel`` connections
    per node) or ``"sql"`` (INSERT; a duplicate key fails); ``batch_rows``: rows per
    request.  Connection keywords as in :func:`~.dataset.from_sql`.  A failure part-way is
    a :class:`~tensorflow_ignite.errors.WriteError` with the rows written before it.
    """
    if batch_rows < 1:
        raise ConfigurationError(f"batch_rows={batch_rows}: it must be at least 1")
    if parallel < 1:
        raise ConfigurationError(f"parallel={parallel}: it must be at least 1")
    if method not in _METHODS:
        raise ConfigurationError(f"method={method!r}: it must be one of {', '.join(_METHODS)}")
    if zone is not None and not create:
        raise ConfigurationError(
            "zone= places a table when write creates it: pass create=True (an existing table stays in its zone)"
        )
    cols = _column_arrays(data)
    if client is None:
        with Ignite3Client(_options(options, host, port, connection, "ignite3.write")) as own:
            return write(
                table,
                cols,
                key=key,
                create=create,
                zone=zone,
                method=method,
                batch_rows=batch_rows,
                parallel=parallel,
                client=own,
            )
    if create:
        if key is None:
            raise ConfigurationError("create=True needs key=: the column that is the table's primary key")
        if zone and not _zone_exists(client, zone):
            raise ConfigurationError(
                f"zone={zone!r}: the cluster has no distribution zone {zone!r} to create table {table} in; "
                f"create it first, e.g. CREATE ZONE {_identifier(zone)} (REPLICAS 3) STORAGE PROFILES ['default'] "
                "(a storage profile the nodes define, such as an in-memory aimem one)"
            )
        client.execute(create_table_statement(table, cols, key, zone))
    if not len(next(iter(cols.values()))):
        return 0
    if method == "streamer":
        return stream(client, _identifier(table), cols, batch_rows=batch_rows, parallel=parallel)
    names = list(cols)
    statement = (
        f"INSERT INTO {_identifier(table)} ({', '.join(_identifier(n) for n in names)}) "
        f"VALUES ({', '.join('?' for _ in names)})"
    )
    n = len(next(iter(cols.values())))
    written = 0
    for lo in range(0, n, batch_rows):
        hi = min(n, lo + batch_rows)
        rows = list(zip(*(map(_python, cols[c][lo:hi]) for c in names)))
        conn = client.connection()
        try:
            reader = conn.call(
                ClientOp.SQL_EXEC_BATCH,
                sql.batch_request(statement, rows, observable_timestamp=conn.observable_timestamp),
                what=f"inserting rows {lo}..{hi - 1} into {table}",
            )
            counts = sql.parse_batch(reader)
        except Exception as exc:
            raise WriteError(
                f"writing {table} failed after {written} rows: {exc}", cache_name=table, rows_written=written
            ) from exc
        written += sum(c for c in counts if c > 0)
    return written
