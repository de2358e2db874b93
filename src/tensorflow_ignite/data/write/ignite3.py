"""``tensorflow_ignite.write`` on an Ignite 3 cluster: the same call, through :func:`tensorflow_ignite.ignite3.write`.

The cache is a table of the same name (SQL's upper case for a plain name): the key column (the row
index ``KEY``, or the ``key=`` column) is its primary key, every other column one column of its own --
a per-row array a VARBINARY column of its raw bytes, row-major.  The write's plan is Ignite 2's
(:func:`~.plan.make_plan`: the same checks, the same tensor schema record), kept in
:data:`~tensorflow_ignite.data.on_ignite3.SCHEMA_TABLE`, so ``IgniteDataset`` reads back the names,
dtypes and shapes written.  ``mode`` behaves as on Ignite 2: ``create`` refuses a table holding rows,
``overwrite`` drops the table first, ``append`` adds rows (row-index keys continue after the rows
there); a failed ``create``/``overwrite`` drops the table it made.  Options that configure Ignite 2
caches (``type_name``, ``backups``, ``write_sync``) raise
:class:`~tensorflow_ignite.errors.UnsupportedOperationError`: on Ignite 3 replicas and storage are a
distribution zone's (``tensorflow_ignite.ignite3.write(..., zone=)``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import ConfigurationError, TableNotFoundError, WriteError
from ..on_ignite3 import delete_record, load_record, save_record, sql_name
from .cache import default_type_name
from .plan import ROW_KEY, check_append_schema, check_unique_keys, make_plan
from .sources import Source

if TYPE_CHECKING:
    from ...ignite3.client import Ignite3Client
    from .api import WriteResult

__all__ = ["table_exists", "write_table"]

#: write's options without an Ignite 3 form: name -> (default, why).
REFUSED: dict[str, tuple[Any, str]] = {
    "type_name": (None, "Ignite 3 tables have columns, not binary types"),
    "backups": (0, "replicas are a distribution zone's: create the table with tensorflow_ignite.ignite3.write(zone=)"),
    "write_sync": ("primary_sync", "Ignite 3 writes are transactional, acknowledged by the partition's replicas"),
}

#: Rows per chunk streamed (the Ignite 3 streamer encodes a chunk at a time).
_CHUNK_ROWS = 1 << 16


def _table_columns(chunk: Mapping[str, np.ndarray], key: str | None, offset: int, start: int) -> dict[str, Any]:
    """A chunk of rows as the table's 1-D columns: the row index key first, per-row arrays as their bytes."""
    out: dict[str, Any] = {}
    n = len(next(iter(chunk.values())))
    if key is None:
        out[ROW_KEY] = np.arange(offset + start, offset + start + n, dtype=np.int64)
    for name, values in chunk.items():
        arr = np.asarray(values)
        if arr.ndim > 1:
            flat = np.ascontiguousarray(arr).reshape(n, -1)
            blobs = np.empty(n, dtype=object)
            blobs[:] = [row.tobytes() for row in flat]
            arr = blobs
        elif arr.dtype.kind == "f" and arr.dtype.itemsize == 2:
            arr = arr.astype(np.float32)  # no 16-bit column type: REAL, cast back on reading
        out[name] = arr
    return out


def table_exists(client: "Ignite3Client", table: str) -> bool:
    """Whether the Ignite 3 cluster of ``client`` has ``table``."""
    from ...ignite3.routes import find_table

    try:
        find_table(client.connection(), table)
    except TableNotFoundError:
        return False
    return True


def write_table(
    cache_name: str,
    source: Source,
    client: "Ignite3Client",
    *,
    key: str | None,
    key_offset: int | None,
    mode: str,
    started: float,
) -> "WriteResult":
    """``write(cache_name, ...)`` into the Ignite 3 table ``cache_name`` through ``client`` (the call's
    keywords without an Ignite 3 form, :data:`REFUSED`, were refused already: :func:`.on_ignite3.ignite3_call`)."""
    from ...ignite3.dataset import _identifier, count_rows
    from ...ignite3.write import write as write3
    from .api import WriteResult

    table = sql_name(cache_name)
    plan = make_plan(source, key, default_type_name(cache_name))
    record = plan.record()
    names = [ROW_KEY] if key is None else []
    names += [n for n in source.names]
    clash = sorted({sql_name(n) for n in names if sum(sql_name(m) == sql_name(n) for m in names) > 1})
    if clash:
        raise ConfigurationError(
            f"write to Ignite 3 table {table}: columns {clash} are one column name in SQL (names are upper-cased); "
            "rename them"
        )
    if key is not None and source.in_memory:
        check_unique_keys(key, source.first[key])
    existing = table_exists(client, table)
    rows_there = count_rows(client, table) if existing and mode != "overwrite" else 0
    if mode == "create" and rows_there:
        raise ConfigurationError(
            f"table {table} already holds {rows_there:,} rows; write with mode='append' or mode='overwrite'"
        )
    if mode == "append" and existing:
        recorded = load_record(client, table)
        if recorded is not None:
            check_append_schema(cache_name, recorded, record)
    if mode == "overwrite" and existing:
        client.execute(f"DROP TABLE IF EXISTS {_identifier(table)}")
        delete_record(client, table)
        existing = False
    offset = int(key_offset if key_offset is not None else (rows_there if mode == "append" else 0))
    created = not existing
    written = 0
    sent = 0
    try:
        start = 0
        for chunk in source.chunks(_CHUNK_ROWS):
            if not len(next(iter(chunk.values()))):
                continue
            cols = _table_columns(chunk, key, offset, start)
            sent += sum(int(getattr(a, "nbytes", 0)) for a in cols.values())
            written += write3(table, cols, key=key or ROW_KEY, create=created and start == 0, client=client)
            start += len(next(iter(chunk.values())))
        save_record(client, table, record)
    except BaseException as exc:
        if mode in ("create", "overwrite") and created:
            try:
                client.execute(f"DROP TABLE IF EXISTS {_identifier(table)}")  # never left half-loaded
            except Exception as cleanup:  # noqa: BLE001 - the first error is the one to report
                exc.add_note(f"tensorflow_ignite.write: dropping table {table} failed too: {cleanup}")
        if mode == "append" and isinstance(exc, Exception) and not isinstance(exc, WriteError):
            raise WriteError(
                f"append to table {table} failed after {written:,} rows were written (they stay): {exc}",
                cache_name=cache_name,
                rows_written=written,
            ) from exc
        raise
    return WriteResult(
        cache_name=cache_name,
        rows=written,
        bytes_sent=sent,
        seconds=time.perf_counter() - started,
        type_name="",
        key=plan.key.name,
        sql_table=f"PUBLIC.{table}",
        encoder="ignite3-streamer",
        notes=("Ignite 3: a table of the same name; no binary type",),
    )
