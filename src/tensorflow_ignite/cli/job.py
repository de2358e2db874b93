"""``ignite-tf start|ps|describe|logs|attach|stop|rm``: distributed training jobs.

A job runs one TensorFlow worker per Ignite server node that holds primary
partitions of its cache, next to the data, supervised by the cluster's
``tf-ignite-launcher`` service (deployed by every node that ``ignite-tf node
start`` runs).  These commands talk to that service over the thin client.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from typing import Any, TextIO

from ..errors import ConfigurationError, IgniteConnectionError
from ..launcher import layout
from ..launcher.jobs import JobClient, OutputLine
from . import validate
from .credentials import add_connection_arguments, connection_options
from .grammar import add_json_argument, add_seconds_argument, options_of, print_json, print_result, print_table

__all__ = ["register", "add_worker_arguments", "report_submitted"]

_EPILOG_ENV = (
    "Each worker gets TF_CONFIG, IGNITE_DATASET_HOST/PORT (its own node), IGNITE_DATASET_PARTS "
    "(that node's primary partitions), TF_IGNITE_CACHE, TF_IGNITE_CHECKPOINT_DIR, TF_IGNITE_JOB_ID, "
    "TF_IGNITE_ATTEMPT, TF_IGNITE_WORKER_INDEX, TF_IGNITE_NUM_WORKERS, TF_IGNITE_TASK_TYPE/INDEX and "
    "TF_IGNITE_NODE; `IgniteDataset(cache)` in the script then reads exactly the local partitions. "
    "On secured clusters workers get their credentials from their node's TF_IGNITE_WORKER_* settings, "
    "never from the job: --env refuses names that look like secrets."
)


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the job commands."""
    start = sub.add_parser(
        "start",
        help="run a training job next to a cache's partitions",
        description=(
            "Ship JOB_DIR through Ignite, start CMD in it on every server node that holds primary "
            "partitions of CACHE (one worker per node), and follow the workers' output. Exits with "
            "the job's exit code. Ctrl+C detaches; the job keeps running (`ignite-tf stop JOB`)."
        ),
        epilog=_EPILOG_ENV,
        usage="ignite-tf start [OPTIONS] CACHE JOB_DIR -- CMD [ARGS...]",
    )
    add_connection_arguments(start)
    start.add_argument("cache", metavar="CACHE", help="the cache whose partitions the workers read")
    start.add_argument("job_dir", metavar="JOB_DIR", help="directory with the training script (shipped to the nodes)")
    start.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="-- CMD [ARGS...]",
        help="the command each worker runs in its copy of JOB_DIR, e.g. -- python train.py",
    )
    start.add_argument("--name", help="job name (default: JOB_DIR's name plus a random suffix)")
    start.add_argument(
        "-e",
        "--env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="environment variable for the workers (repeatable)",
    )
    start.add_argument(
        "--checkpoint-dir",
        metavar="URI",
        help="passed to workers as TF_IGNITE_CHECKPOINT_DIR (default ignite:///tf-jobs/JOB)",
    )
    start.add_argument(
        "--strategy",
        default="multi_worker_mirrored",
        choices=("multi_worker_mirrored", "mwms", "parameter_server", "ps"),
        help="TF roles: one worker per data node (multi_worker_mirrored, default), or a chief, "
        "--num-ps ps tasks and one worker per data node (parameter_server; the job ends when "
        "the chief exits)",
    )
    start.add_argument(
        "--num-ps",
        type=validate.int_between(1, 16),
        metavar="N",
        help="ps tasks of a parameter_server job (default 1), placed on the data nodes",
    )
    add_worker_arguments(start, "Python interpreter on the nodes (default: this one); first on the workers' PATH")
    add_seconds_argument(start, "--backoff", 1.0, "delay before the first restart, doubled each time up to 30 s")
    add_seconds_argument(start, "--settle", 1.0, "how long the partition map must hold still before workers start")
    add_seconds_argument(start, "--grace", 10.0, "time workers get after SIGTERM before SIGKILL when stopped")
    start.add_argument("-d", "--detach", action="store_true", help="print the job name and return at once")
    add_json_argument(start, "the submitted job's name and cache (with --detach)")
    start.set_defaults(handler=_start, start_parser=start)

    ps = sub.add_parser("ps", help="list jobs", description="List the cluster's jobs, newest first.")
    add_connection_arguments(ps)
    ps.add_argument("--active", action="store_true", help="only jobs that have not finished")
    add_json_argument(ps, "the job records (an array)")
    ps.set_defaults(handler=_ps)

    describe = _job_command(
        sub,
        "describe",
        "show a job's state, workers, restarts and their reasons",
        "Show a job: state, exit code, the current plan (worker, node, partitions, pid), "
        "every restart with its reason, the workers' reported results and the launcher's events.",
    )
    add_json_argument(describe, "the raw job, worker and result records")
    describe.set_defaults(handler=_describe)

    logs = _job_command(
        sub,
        "logs",
        "print a job's output",
        "Print the output of every worker of a job, each line labelled [wINDEX NODE] "
        "(plus #ATTEMPT after restarts), and the launcher's own events as [launcher] lines.",
    )
    logs.add_argument("-f", "--follow", action="store_true", help="keep printing until the job finishes")
    logs.add_argument("--attempt", type=int, action="append", metavar="N", help="only this attempt (repeatable)")
    logs.add_argument("--worker", type=int, action="append", metavar="I", help="only this worker (repeatable)")
    logs.add_argument("--no-launcher", action="store_true", help="leave out the launcher's [launcher] lines")
    logs.set_defaults(handler=_logs)

    attach = _job_command(
        sub,
        "attach",
        "follow a job's output and exit with its exit code",
        "Print the job's output so far, follow it until the job finishes, and exit with "
        "the job's exit code. Ctrl+C detaches without stopping the job.",
    )
    attach.set_defaults(handler=_attach)

    stop = _job_command(
        sub,
        "stop",
        "stop a job and all its worker processes",
        "Stop every worker of the job on every node (SIGTERM to each worker's process "
        "group, SIGKILL after the grace period) and wait until the job is STOPPED.",
    )
    stop.add_argument("--no-wait", action="store_true", help="return once the stop is requested")
    add_seconds_argument(stop, "--timeout", 120.0, "how long to wait for the job to stop")
    add_json_argument(stop, "the job's state and message")
    stop.set_defaults(handler=_stop)

    rm = sub.add_parser(
        "rm",
        help="delete jobs and what they left in the cluster",
        description="Delete jobs: the job record, worker records, output, results and shipped files "
        "in the launcher's caches, and each node's copy of the job directory. A job that is still "
        "running is refused unless --force (which stops it first). Checkpoints are kept.",
    )
    add_connection_arguments(rm)
    rm.add_argument("jobs", nargs="*", metavar="JOB", help="jobs to delete")
    rm.add_argument("--finished", action="store_true", help="delete every SUCCEEDED, FAILED or STOPPED job")
    rm.add_argument("--force", action="store_true", help="stop running jobs first instead of refusing")
    add_json_argument(rm, "the jobs removed")
    rm.set_defaults(handler=_rm)


def add_worker_arguments(p: argparse.ArgumentParser | Any, python_help: str) -> None:
    """``--python`` and ``--max-restarts``: how the launcher runs and restarts a job's workers
    (``start``, ``predict --on-cluster``)."""
    p.add_argument("--python", metavar="PATH", help=python_help)
    p.add_argument(
        "--max-restarts",
        type=validate.int_between(0, 1000),
        default=3,
        metavar="N",
        help="restarts after failures before the job fails (default 3)",
    )


def report_submitted(jobs: JobClient, args: argparse.Namespace, record: dict[str, Any], following: str) -> int:
    """After a submit: with ``--detach`` the job's name (``record`` with ``--json``) and exit code 0;
    else ``following`` on stderr and the job's output until it ends (:func:`_follow`: its exit code)."""
    if args.detach:
        return print_result(args.json, record, [record["job"]])
    print(following, file=sys.stderr)
    return _follow(jobs, record["job"])


def _job_command(
    sub: "argparse._SubParsersAction[argparse.ArgumentParser]", name: str, help: str, description: str
) -> argparse.ArgumentParser:
    """The parser of a command on one job: the connection options and the JOB argument."""
    p = sub.add_parser(name, help=help, description=description)
    add_connection_arguments(p)
    p.add_argument("job", metavar="JOB", help="the job's name (as `ignite-tf ps` lists it)")
    return p


def _connect(args: argparse.Namespace) -> JobClient:
    return JobClient.from_options(connection_options(args))


# ------------------------------------------------------------------- handlers
def _start(args: argparse.Namespace) -> int:
    command = list(args.command)
    if "--" in command and command[0] != "--":
        # Options written after CACHE JOB_DIR (`start C D --name n -- cmd`): argparse's
        # remainder swallowed them; parse them now.
        # Parsing into `args` itself keeps every value given before CACHE (argparse
        # only fills in defaults for attributes the namespace lacks).
        cut = command.index("--")
        args.start_parser.parse_args([*command[:cut], args.cache, args.job_dir], namespace=args)
        command = command[cut:]
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise ConfigurationError("no command: put it after --, e.g. ignite-tf start CACHE DIR -- python train.py")
    if args.json and not args.detach:
        raise ConfigurationError(
            "--json needs --detach (it prints the job's name; a followed job's output is "
            "text: `ignite-tf describe JOB --json` reports on it)"
        )
    env = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigurationError(f"--env {item!r}: use KEY=VALUE")
        env[key] = value
    with _connect(args) as jobs:
        rec = jobs.submit(
            args.cache,
            args.job_dir,
            command,
            env=env,
            **options_of(
                args,
                "name",
                "python",
                "checkpoint_dir",
                "max_restarts",
                "strategy",
                "num_ps",
                "backoff",
                "settle",
                "grace",
            ),
        )
        job_id = rec["id"]
        return report_submitted(
            jobs,
            args,
            {"job": job_id, "cache": args.cache, "state": rec.get("state")},
            f"ignite-tf: job {job_id} submitted (cache {args.cache}); following its output "
            f"(Ctrl+C detaches, `ignite-tf stop {job_id}` stops it)",
        )


def _follow(jobs: JobClient, job_id: str, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    try:
        for line in jobs.output(job_id, follow=True):
            _print_line(line, out)
    except KeyboardInterrupt:
        print(f"\nignite-tf: detached; job {job_id} keeps running", file=sys.stderr)
        return 130
    except IgniteConnectionError as exc:
        # The job runs in the cluster, not here: losing the cluster ends only the following.
        print(
            f"\nignite-tf: error: lost the cluster while following job {job_id}: {exc}\n"
            f"ignite-tf: the job itself runs on in the cluster; once the cluster is reachable again, "
            f"`ignite-tf attach {job_id}` follows it again (`ignite-tf describe {job_id}` shows its state)",
            file=sys.stderr,
        )
        return 1
    rec = jobs.job(job_id)
    code = rec.get("exit_code")
    print(f"ignite-tf: job {job_id} {rec.get('state')} (exit code {code}): {rec.get('message')}", file=sys.stderr)
    return int(code) if code is not None else 1


def _print_line(line: OutputLine, out: TextIO) -> None:
    out.write(f"{line}\n")
    out.flush()


def _ps(args: argparse.Namespace) -> int:
    with _connect(args) as jobs:
        records = jobs.jobs()
    if args.active:
        records = [r for r in records if r.get("state") not in layout.TERMINAL_STATES]
    if args.json:
        print_json(records)
        return 0
    rows = [("JOB", "STATE", "EXIT", "ATTEMPT", "RESTARTS", "WORKERS", "CACHE", "AGE", "COMMAND")]
    now = time.time() * 1000
    for r in records:
        rows.append(
            (
                str(r.get("id")),
                str(r.get("state")),
                "" if r.get("exit_code") is None else str(r.get("exit_code")),
                str(r.get("attempt")),
                str(r.get("restarts")),
                str(len(r.get("workers") or ())),
                str(r.get("cache")),
                _age(now - (r.get("created_ms") or now)),
                shlex.join(str(c) for c in r.get("command") or ()),
            )
        )
    print_table(rows)
    return 0


def _submitter(rec: dict[str, Any]) -> str:
    """``alice (from 10.0.0.5:51234)``: the user the node authenticated when the job was submitted."""
    who = rec.get("submitted_by") or "(no authentication)"
    where = rec.get("submitted_from")
    return f"{who} (from {where})" if where else str(who)


def _describe(args: argparse.Namespace) -> int:
    with _connect(args) as jobs:
        rec = jobs.job(args.job)
        workers = jobs.workers(args.job)
        results = jobs.results(args.job)
    if args.json:
        print_json({"job": rec, "workers": workers, "results": results})
        return 0
    out = sys.stdout
    code = rec.get("exit_code")
    state = f"{rec.get('state')}" + ("" if code is None else f" (exit code {code})")
    fields = [
        ("Job", rec.get("id")),
        ("State", state),
        ("Message", rec.get("message")),
        ("Submitted by", _submitter(rec)),
        ("Cache", rec.get("cache")),
        ("Command", shlex.join(str(c) for c in rec.get("command") or ())),
        (
            "Strategy",
            f"{rec.get('strategy')}"
            + (f" ({rec.get('num_ps')} ps)" if rec.get("strategy") == "parameter_server" else ""),
        ),
        ("Checkpoints", rec.get("checkpoint_dir") or "-"),
        ("Attempt", rec.get("attempt")),
        ("Restarts", f"{rec.get('restarts')} of at most {rec.get('max_restarts')}"),
        ("Created", _when(rec.get("created_ms"))),
    ]
    if rec.get("finished_ms"):
        fields.append(("Finished", _when(rec.get("finished_ms"))))
    if rec.get("env"):
        fields.append(("Environment", " ".join(f"{k}={v}" for k, v in sorted(rec["env"].items()))))
    width = max(len(k) for k, _ in fields) + 2
    for k, v in fields:
        out.write(f"{k + ':':<{width}}{v}\n")
    by_index = {int(w.get("index", -1)): w for w in workers}
    planned = rec.get("workers") or []
    if planned:
        out.write(f"\nWorkers (attempt {rec.get('attempt')}):\n")
        rows = [("#", "ROLE", "NODE", "TF SERVER", "DATASET", "PARTITIONS", "PID", "STATE", "EXIT")]
        for w in planned:
            idx = int(w.get("index", -1))
            st = by_index.get(idx, {})
            parts = str(w.get("partitions") or "")
            rows.append(
                (
                    str(idx),
                    f"{w.get('task_type') or 'worker'} {w.get('task_index', idx)}",
                    str(w.get("node")),
                    f"{w.get('host')}:{w.get('port')}",
                    f"{w.get('dataset_host')}:{w.get('dataset_port')}",
                    f"{w.get('partition_count')} ({parts if len(parts) <= 30 else parts[:27] + '...'})",
                    str(st.get("pid") or w.get("pid") or ""),
                    str(st.get("state") or "?"),
                    "" if st.get("exit_code") is None else str(st.get("exit_code")),
                )
            )
        print_table(rows, out, indent="  ")
    failures = rec.get("failures") or []
    out.write(f"\nRestarts ({len(failures)} failure(s)):\n" if failures else "\nRestarts: none\n")
    for f in failures:
        out.write(
            f"  {_when(f.get('t'))}  attempt {f.get('attempt')}  [{f.get('kind')}] {f.get('reason')}"
            f"  -> {f.get('action')}\n"
        )
    if results:
        out.write("\nResults:\n")
        for idx in sorted(results):
            out.write(f"  w{idx}: {json.dumps(results[idx], default=str)[:300]}\n")
    events = rec.get("events") or []
    if events:
        out.write("\nEvents:\n")
        for e in events[-20:]:
            out.write(f"  {_when(e.get('t'))}  {e.get('message')}\n")
    return 0


def _logs(args: argparse.Namespace) -> int:
    with _connect(args) as jobs:
        try:
            for line in jobs.output(
                args.job, follow=args.follow, launcher=not args.no_launcher, attempts=args.attempt, workers=args.worker
            ):
                _print_line(line, sys.stdout)
        except KeyboardInterrupt:
            return 130
    return 0


def _attach(args: argparse.Namespace) -> int:
    with _connect(args) as jobs:
        jobs.job(args.job)  # a clear error for an unknown job before following
        return _follow(jobs, args.job)


def _stop(args: argparse.Namespace) -> int:
    with _connect(args) as jobs:
        rec = jobs.stop(args.job, wait=not args.no_wait, timeout=args.timeout)
    return print_result(
        args.json,
        {"job": args.job, "state": rec.get("state"), "message": rec.get("message")},
        [f"job {args.job}: {rec.get('state')}" + (f" ({rec.get('message')})" if rec.get("message") else "")],
    )


def _rm(args: argparse.Namespace) -> int:
    if not args.jobs and not args.finished:
        raise ConfigurationError("name the jobs to delete (ignite-tf rm JOB...) or use --finished")
    report: list[dict[str, Any]] = []
    with _connect(args) as jobs:
        for job_id in args.jobs:
            out = jobs.remove(job_id, force=args.force)
            report.append({"job": job_id, "state": out.get("state"), "entries": out.get("entries")})
            if not args.json:
                print(f"removed job {job_id} ({out.get('state')}, {out.get('entries')} cache entries)")
        if args.finished:
            removed = jobs.remove_finished()
            report += [{"job": job_id, "state": "finished"} for job_id in removed]
            if not args.json:
                print(f"removed {len(removed)} finished job(s)" + (": " + ", ".join(removed) if removed else ""))
    return print_result(args.json, {"removed": report}, ())


# --------------------------------------------------------------------- format
def _age(ms: float) -> str:
    s = max(0, int(ms / 1000))
    if s < 120:
        return f"{s}s"
    if s < 7200:
        return f"{s // 60}m"
    return f"{s // 3600}h"


def _when(ms: Any) -> str:
    if not ms:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(int(ms) / 1000))
