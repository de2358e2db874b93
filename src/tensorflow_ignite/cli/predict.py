"""``ignite-tf predict MODEL SOURCE --out OUTPUT``: score a cache or SQL query in place -- in this process,
or with ``--on-cluster`` as a launcher job, one worker per server node (:mod:`tensorflow_ignite.scoring.cluster`)."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import ConfigurationError, IgniteError
from . import validate
from .credentials import add_connection_arguments, client_settings, connection_options
from .grammar import (
    add_backups_argument,
    add_json_argument,
    add_progress_argument,
    options_of,
    print_error,
    print_result,
)
from .job import add_worker_arguments, report_submitted

__all__ = ["register"]


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the ``predict`` command."""
    p = sub.add_parser(
        "predict",
        help="score every row of a cache or SQL query with a model and write the predictions to a cache",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Load MODEL once (a .keras file or a SavedModel directory, local or ignite://), run it over every\n"
            'row of SOURCE (a cache name, or an SQL query such as "SELECT key, a, b FROM T" whose result\n'
            "holds the row's key in a column KEY, _KEY or ID, or the one --key names) and write one entry per\n"
            "source key into the cache OUTPUT (created if missing; also an SQL table when the cluster has\n"
            "SQL): one field per model output plus model_hash, which model wrote it.  The same as\n"
            "tensorflow_ignite.predict, in this process.\n\n"
            "Model inputs take the source fields of the same name (case-insensitive); map others with\n"
            "--inputs INPUT=FIELD,...  Inputs that do not fit the fields (name, dtype, shape), a model\n"
            "that does not load, an empty source or an output cache of another layout are refused before\n"
            "anything is written.\n\n"
            "Exactly once and resumable: partitions are recorded complete once their predictions are\n"
            "stored.  --mode skip-existing (default) skips partitions an earlier run of the same model\n"
            "completed and rescores the rest (so an interrupted run is finished by running it again);\n"
            "--mode overwrite scores everything again (an output of the same layout is rewritten in\n"
            "place, key by key; another layout is replaced).  A run over a whole cache removes the\n"
            "predictions of keys the source no longer holds.\n\n"
            "--on-cluster runs it on the nodes that hold the data: a launcher job (see ignite-tf start) with\n"
            "one worker per server node holding primary partitions of the SOURCE cache, each loading the model\n"
            "once and scoring its node's partitions (a local MODEL is shipped with the job). The checks and the\n"
            "output cache come first, here; then the job's output is followed (Ctrl+C detaches) and the\n"
            "command exits with the job's exit code. `ignite-tf describe JOB` shows each worker's progress;\n"
            "logs and stop work as for training jobs. A crashed worker or a lost node restarts the job, which\n"
            "skips the partitions already complete. The job's command is `python -m\n"
            "tensorflow_ignite.scoring.worker predict.json`: a launcher whose allowedCommands lists the\n"
            "interpreter (--python, default this one) runs it."
        ),
        epilog="example: ignite-tf predict ignite:///models/digits.keras DIGITS_TEST --out DIGITS_PRED",
    )
    p.add_argument("model", metavar="MODEL", help="a .keras/.h5 file or SavedModel directory (local or ignite://)")
    p.add_argument("source", metavar="SOURCE", help="a cache name, or an SQL query (SELECT ...)")
    p.add_argument("--out", required=True, metavar="OUTPUT", help="the cache receiving the predictions")
    p.add_argument(
        "--mode",
        choices=("skip-existing", "overwrite"),
        default="skip-existing",
        help="skip-existing (default): skip partitions already scored by this model; "
        "overwrite: score everything again, rewriting the output",
    )
    p.add_argument("--inputs", metavar="INPUT=FIELD,...", help="map model inputs to source fields")
    p.add_argument("--key", metavar="COLUMN", help="the key column of an SQL SOURCE (default KEY, _KEY or ID)")
    p.add_argument(
        "--batch-size", type=validate.int_between(1), default=1024, help="rows per model call (default 1024)"
    )
    p.add_argument(
        "--record-every",
        type=validate.int_between(1),
        default=16,
        metavar="N",
        help="record complete partitions every N batches (default 16)",
    )
    add_backups_argument(p, "backup copies of the output cache when it is created (default 0)")
    p.add_argument("--no-sql", action="store_true", help="do not make the output cache an SQL table")
    add_progress_argument(p)
    add_json_argument(
        p,
        "the result (rows, seconds, units scored and skipped, model, rows per node; with "
        "--on-cluster --detach: the job name)",
    )
    cluster = p.add_argument_group("on the cluster (--on-cluster)")
    cluster.add_argument(
        "--on-cluster",
        action="store_true",
        help="score on the server nodes through the launcher: one worker per node, its partitions",
    )
    cluster.add_argument("--name", help="job name (default predict-OUTPUT plus a random suffix)")
    add_worker_arguments(cluster, "Python interpreter on the nodes (default: this one)")
    cluster.add_argument("-d", "--detach", action="store_true", help="print the job name and return at once")
    add_connection_arguments(p)
    p.set_defaults(handler=_predict)


def _mapping(text: str | None) -> dict[str, str] | None:
    if not text:
        return None
    out: dict[str, str] = {}
    for item in text.split(","):
        name, sep, field = item.partition("=")
        if not sep or not name.strip() or not field.strip():
            raise ConfigurationError(f"--inputs takes INPUT=FIELD pairs separated by commas; got {item!r}")
        out[name.strip()] = field.strip()
    return out


def _scoring_options(args: argparse.Namespace) -> dict[str, Any]:
    """What to score and how, the same in this process and on the cluster."""
    return {
        "inputs": _mapping(args.inputs),
        "sql": not args.no_sql,
        **options_of(args, "mode", "batch_size", "record_every", "backups"),
    }


def _on_cluster(args: argparse.Namespace) -> int:
    from ..launcher.jobs import JobClient
    from ..scoring.cluster import submit_predict

    if args.key:
        raise ConfigurationError("--key names the key column of an SQL query; --on-cluster scores a cache")
    if args.json and not args.detach:
        raise ConfigurationError(
            "--json with --on-cluster needs --detach (it prints the job's name; the job's "
            "output is followed as text: `ignite-tf describe JOB --json` reports on it)"
        )
    with JobClient.from_options(connection_options(args)) as jobs:
        try:
            rec = submit_predict(
                jobs,
                args.model,
                args.source,
                args.out,
                **_scoring_options(args),
                **options_of(args, "name", "python", "max_restarts"),
            )
        except (IgniteError, OSError) as exc:
            return print_error(exc)
        job_id = rec["id"]
        return report_submitted(
            jobs,
            args,
            {"job": job_id, "source": args.source, "output": args.out},
            f"ignite-tf: job {job_id} scores cache {args.source} into {args.out!r} on the nodes; following its "
            f"output (Ctrl+C detaches, `ignite-tf describe {job_id}` shows each node's progress)",
        )


def _predict(args: argparse.Namespace) -> int:
    from ..scoring import predict

    if args.on_cluster:
        return _on_cluster(args)
    stray = [
        flag
        for flag, value in (
            ("--name", args.name),
            ("--python", args.python),
            ("--detach", args.detach),
            ("--max-restarts", args.max_restarts != 3),
        )
        if value
    ]
    if stray:
        raise ConfigurationError(
            f"{', '.join(stray)}: only with --on-cluster (scoring as a launcher job); "
            "without it predict runs in this process"
        )
    try:
        result = predict(
            args.model,
            args.source,
            args.out,
            **_scoring_options(args),
            **options_of(args, "key", "host", "port", "progress"),
            **client_settings(args),
        )
    except (IgniteError, OSError) as exc:
        return print_error(exc)
    return print_result(
        args.json,
        {
            "rows": result.rows,
            "seconds": result.seconds,
            "rows_per_second": result.rows_per_second,
            "output": result.output,
            "source": result.source,
            "output_action": result.output_action,
            "units_scored": result.units_scored,
            "units_skipped": result.units_skipped,
            "model_uri": result.model_uri,
            "model_sha256": result.model_sha256,
            "model_hash": result.model_hash,
            "rows_per_node": dict(result.rows_per_node),
            "stale_removed": result.stale_removed,
            "sql_table": result.sql_table,
        },
        [
            f"{result.rows} rows, {result.seconds:.2f} s ({result.rows_per_second:,.0f} rows/s) -> cache "
            f"{result.output!r}; {result.units_scored} unit(s) scored, {result.units_skipped} already complete",
            f"model: {result.model_uri} (sha256 {result.model_sha256}, model_hash {result.model_hash})",
            *(f"  node {node}: {rows} rows" for node, rows in sorted(result.rows_per_node.items())),
            *([f"SQL table: {result.sql_table}"] if result.sql_table else []),
        ],
    )
