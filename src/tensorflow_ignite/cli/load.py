"""``ignite-tf load CACHE PATH``: a .npz, .csv or .parquet file into an Ignite cache."""

from __future__ import annotations

import argparse

from ..errors import ConfigurationError, IgniteError
from . import validate
from .credentials import CERT_PASSWORD_ENV, PASSWORD_ENV, add_connection_arguments, client_settings
from .grammar import (
    add_backups_argument,
    add_deprecated_alias,
    add_json_argument,
    add_progress_argument,
    options_of,
    print_error,
    print_result,
)

__all__ = ["register"]


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the ``load`` command."""
    p = sub.add_parser(
        "load",
        help="load a .npz, .csv or .parquet file into an Ignite cache",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Write every row of PATH into the cache CACHE as a binary object with one field per column\n"
            "(the same as tensorflow_ignite.write).  Per-row arrays (e.g. uint8 images) are stored as\n"
            "primitive arrays and their dtypes and shapes are recorded, so IgniteDataset gives back the\n"
            "tensors that went in.  Keys are row numbers (Java long) unless --key names a column.\n\n"
            "Inputs: .npz (one array per column, first axis = rows), .csv (header row; int64, float64,\n"
            "bool or string inferred per column), .parquet (needs pyarrow).\n\n"
            "Modes: create (default; fails if the cache holds data), append, overwrite (destroys the\n"
            "cache first).  In create/overwrite mode a failed load removes the half-written cache.\n"
            "A load that would not fit the cache's data region (which would make Ignite stop the node)\n"
            "is refused before anything is stored, or stopped and rolled back if the region fills meanwhile.\n\n"
            f"The password is read from ${PASSWORD_ENV} (or the variable --password-env names), or asked\n"
            f"for on the terminal; it is never a command-line argument (other users could see it in `ps`).\n"
            f"A password for an encrypted client key comes from ${CERT_PASSWORD_ENV}.\n\n"
            "On Ignite 3 (found at the handshake, or --ignite 3) CACHE is a table, created from the file's columns when missing\n"
            "(one value per row and column; the primary key is --key, or an added ID column of row\n"
            "numbers); create refuses a table holding rows, overwrite drops the table first."
        ),
        epilog="example: ignite-tf load mnist mnist.npz --host 10.0.0.5:10800,10.0.0.6:10800 --key id",
    )
    p.add_argument("cache", metavar="CACHE", help="name of the cache to write")
    p.add_argument("path", metavar="PATH", help="input file: .npz, .csv or .parquet")
    conn = add_connection_arguments(p)
    conn.add_argument(
        "--ignite",
        type=int,
        choices=(2, 3),
        default=None,
        metavar="{2,3}",
        help="the cluster's Ignite generation: 2 (a cache) or 3 (a table); default: found at the handshake",
    )
    data = p.add_argument_group("data")
    data.add_argument("--type-name", help="binary type of the values (default: <CacheName>Row)")
    data.add_argument("--key", metavar="COL", help="column whose values are the keys (default: the row number)")
    data.add_argument(
        "--key-offset",
        type=validate.int_between(0),
        default=None,
        help="first row-number key (default 0; in append mode: the number of entries already there)",
    )
    data.add_argument("--columns", help="comma-separated subset and order of columns to write")
    data.add_argument(
        "--mode",
        choices=("create", "append", "overwrite"),
        default="create",
        help="create (default), append or overwrite",
    )
    data.add_argument(
        "--batch-bytes",
        type=validate.size,
        default=4 << 20,
        metavar="SIZE",
        help="size of each put request: bytes, or a number with K, M or G (powers of 1024; default 4M)",
    )
    add_deprecated_alias(
        data,
        "--batch-mb",
        "--batch-bytes",
        "batch_bytes",
        type=validate.positive_float,
        convert=lambda mb: max(1, int(mb * (1 << 20))),
    )
    cache = p.add_argument_group("cache configuration (when the cache is created)")
    add_backups_argument(cache, "backup copies of each partition (default 0)")
    cache.add_argument(
        "--atomicity",
        choices=("atomic", "transactional"),
        default="atomic",
        help="cache atomicity mode (default atomic)",
    )
    cache.add_argument(
        "--write-sync",
        choices=("primary_sync", "full_sync", "full_async"),
        default="primary_sync",
        help="write synchronization mode (default primary_sync)",
    )
    cache.add_argument(
        "--no-sql",
        action="store_true",
        help="do not make the cache an SQL table (by default it is one when the cluster has SQL)",
    )
    cache.add_argument(
        "--zone",
        help="with --ignite 3: the distribution zone the table is created in (its "
        "replicas and storage profile, e.g. an in-memory aimem one; default: the cluster's default zone)",
    )
    add_progress_argument(p)
    add_json_argument(p, "what was loaded (rows, bytes, seconds, cache or table, SQL table, notes)")
    p.set_defaults(handler=_load)


def _load(args: argparse.Namespace) -> int:
    from ..client import ConnectionOptions
    from ..data.write import write
    from ..data.write.sources import readable_file
    from ..generation import generation_at

    settings = client_settings(args)
    columns = [c.strip() for c in args.columns.split(",") if c.strip()] if args.columns else None
    try:
        readable_file(args.path)  # a missing or unreadable file is named before any connection is tried
        generation = args.ignite or generation_at(ConnectionOptions.from_address(args.host, args.port, **settings))
        if generation == 3:
            from .load3 import load as load3

            return load3(args, settings)
        if args.zone is not None:
            raise ConfigurationError(
                "--zone places an Ignite 3 table (with --ignite 3); an Ignite 2 cache takes "
                "--backups, --atomicity and --write-sync"
            )
        # The process's shared client for the flags alone (write() would let IGNITE_DATASET_* win
        # over its arguments); shared, as write()'s own is, so a program calling main() repeatedly
        # keeps one connection per node.
        client = ConnectionOptions.from_address(args.host, args.port, **settings).connect()
        result = write(
            args.cache,
            args.path,
            client=client,
            columns=columns,
            sql=not args.no_sql,
            **options_of(
                args,
                "type_name",
                "key",
                "key_offset",
                "mode",
                "backups",
                "atomicity",
                "write_sync",
                "batch_bytes",
                "progress",
            ),
        )
    except (IgniteError, OSError) as exc:
        # Unreadable files are OSErrors.
        return print_error(exc)
    return print_result(
        args.json,
        {
            "rows": result.rows,
            "bytes": result.bytes_sent,
            "seconds": result.seconds,
            "rows_per_second": result.rows_per_second,
            "cache": result.cache_name,
            "type_name": result.type_name,
            "key": result.key,
            "sql_table": result.sql_table,
            "notes": list(result.notes),
        },
        [
            f"{result.rows} rows, {result.megabytes:.1f} MB, {result.seconds:.2f} s "
            f"({result.rows_per_second:,.0f} rows/s) -> cache {result.cache_name!r} (type {result.type_name})",
            *([f"SQL table: {result.sql_table}"] if result.sql_table else []),
            *(f"note: {note}" for note in result.notes),
        ],
    )
