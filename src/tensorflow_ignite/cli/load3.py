"""``ignite-tf load --ignite 3 TABLE PATH``: a .npz, .csv or .parquet file into an Apache Ignite 3 table.

Through :func:`tensorflow_ignite.ignite3.write` (the streamer, batched per
partition and sent to each partition's primary).  The table is created from the
file's columns when missing; a table needs a primary key, so without ``--key``
the rows get an ``ID`` column of row numbers.  ``create`` refuses a table that
holds rows, ``overwrite`` drops the table first, ``append`` adds to it (an
upsert: a key loaded again replaces its row).  A failed load drops the table it
created (``overwrite``, or ``create``/``append`` of a missing table), so nothing
half-written stays behind; a table that existed before keeps what it held.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from ..errors import ConfigurationError, TableNotFoundError, WriteError

__all__ = ["load", "KEY_COLUMN"]

#: The primary-key column of row numbers added when ``--key`` is not given.
KEY_COLUMN = "ID"


def _refuse_ignite2_flags(args: argparse.Namespace) -> None:
    wrong = [
        flag
        for flag, given in (
            ("--type-name", args.type_name is not None),
            ("--backups", args.backups != 0),
            ("--atomicity", args.atomicity != "atomic"),
            ("--write-sync", args.write_sync != "primary_sync"),
            ("--no-sql", args.no_sql),
        )
        if given
    ]
    if wrong:
        raise ConfigurationError(
            f"{', '.join(wrong)} configure Ignite 2 caches; an Ignite 3 table takes its "
            "replicas and storage from its distribution zone (name one with --zone)"
        )


def load(args: argparse.Namespace, settings: dict[str, Any]) -> int:
    """Run ``load --ignite 3``; the process's exit code."""
    from .. import ignite3
    from ..client import ConnectionOptions
    from ..data.write.sources import read_columns
    from ..ignite3.dataset import _identifier

    _refuse_ignite2_flags(args)
    columns = [c.strip() for c in args.columns.split(",") if c.strip()] if args.columns else None
    data: dict[str, Any] = dict(read_columns(args.path, columns))
    if not data:
        raise ConfigurationError(f"{args.path} has no columns to load")
    rows = len(next(iter(data.values())))
    key = args.key
    if key is None:
        if KEY_COLUMN in {c.upper() for c in data}:
            raise ConfigurationError(
                f"{args.path} has a column named {KEY_COLUMN}: name the key column with "
                "--key (without it the rows get an ID column of row numbers)"
            )
        data = {KEY_COLUMN: np.arange(rows, dtype=np.int64) + (args.key_offset or 0), **data}
        key = KEY_COLUMN
    elif args.key_offset is not None:
        raise ConfigurationError("--key-offset numbers rows when there is no --key column")
    elif key not in data:
        raise ConfigurationError(f"--key {key!r} is not a column of {args.path} ({', '.join(data)})")
    options = ConnectionOptions.from_address(args.host, args.port, **settings)
    table = _identifier(args.cache)
    began = time.perf_counter()
    with ignite3.Ignite3Client(options) as client:
        held = _rows_in(client, table)
        if args.mode == "overwrite":
            client.execute(f"DROP TABLE IF EXISTS {table}")
        elif args.mode == "create":
            if held:
                raise ConfigurationError(
                    f"Ignite 3 table {args.cache} already holds {held:,} rows; load with "
                    "--mode append to add to it or --mode overwrite to replace it"
                )
        try:
            written = ignite3.write(
                args.cache,
                data,
                key=key,
                create=True,
                zone=args.zone,
                client=client,
                batch_rows=max(1, args.batch_bytes // _row_bytes(data)),
            )
        except (WriteError, ConfigurationError):
            if args.mode == "overwrite" or held is None:  # a table this load created: nothing half-written stays
                client.execute(f"DROP TABLE IF EXISTS {table}")
            raise
    seconds = time.perf_counter() - began
    if args.json:
        from .grammar import print_json

        print_json(
            {
                "rows": written,
                "seconds": seconds,
                "rows_per_second": written / max(seconds, 1e-9),
                "table": args.cache,
                "key": key,
                "ignite": 3,
            }
        )
        return 0
    print(
        f"{written} rows, {seconds:.2f} s ({written / max(seconds, 1e-9):,.0f} rows/s) -> Ignite 3 table "
        f"{args.cache} (primary key {key})"
    )
    return 0


def _rows_in(client: Any, table: str) -> int | None:
    """Rows ``table`` (an SQL identifier) holds; None when it does not exist (the cluster's table lookup says)."""
    try:
        client.table(table)
    except TableNotFoundError:
        return None
    with client.query(f"SELECT COUNT(*) FROM {table}") as cursor:
        for page in cursor.column_pages():
            return int(page.values[0][0])
    return 0


def _row_bytes(data: dict[str, Any]) -> int:
    total = 0
    for values in data.values():
        arr = np.asarray(values)
        total += arr.dtype.itemsize if arr.dtype.kind not in "OUS" else 32
    return max(1, total)
