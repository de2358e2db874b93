"""``ignite-tf node start|stop|status``: real Ignite nodes on this machine."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import NodeError
from ..launcher.module import follow_log_caches
from ..local.cluster import DEFAULT_PASSWORD, DEFAULT_USER, DISCOVERY_SLOTS, LocalCluster
from ..local.state import state_dir
from ..local.tls import describe_tls
from ..protocol.endpoint import DEFAULT_HOST
from . import validate
from .grammar import (
    add_deprecated_alias,
    add_json_argument,
    add_listen_port_argument,
    add_seconds_argument,
    print_json,
    print_result,
    print_table,
)
from .module import add_follow_log_arguments, follow_log_retention_refused

__all__ = ["register", "default_work_dir", "node_states", "cluster_settings"]


def default_work_dir() -> Path:
    """``$IGNITE_TF_HOME/nodes``, else ``$XDG_STATE_HOME/tensorflow-ignite/nodes``."""
    return state_dir() / "nodes"


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the ``node`` command group."""
    p = sub.add_parser(
        "node",
        help="start, stop and inspect local Apache Ignite nodes",
        description=(
            "Run real Apache Ignite 2.18 server nodes on this machine (loopback only), or Apache "
            "Ignite 3.1 nodes with --ignite 3. "
            "Logs, status and data live under --work-dir; `stop` stops exactly the nodes "
            "`start` started there."
        ),
    )
    nsub = p.add_subparsers(dest="node_command", metavar="ACTION", required=True)

    start = nsub.add_parser(
        "start",
        help="start N nodes and wait until they form a cluster",
        description="Start nodes in the background, wait until every node sees the whole "
        "topology and answers a thin-client handshake, then return.",
    )
    _work_dir_arg(start)
    start.add_argument(
        "--ignite",
        type=int,
        choices=(2, 3),
        default=2,
        metavar="{2,3}",
        help="the Ignite generation: 2 (default; 2.18) or 3 (3.1, embedded servers from Maven "
        "Central; --region-mb sizes its storage profile)",
    )
    start.add_argument(
        "--nodes",
        type=validate.int_between(1, DISCOVERY_SLOTS),
        default=1,
        metavar="N",
        help="number of server nodes (default 1)",
    )
    add_listen_port_argument(
        start,
        "--client-port",
        10800,
        "thin-client port of the first node; node i uses PORT+i (default 10800; 0 picks free ports)",
    )
    start.add_argument(
        "--bind",
        default=DEFAULT_HOST,
        metavar="ADDRESS",
        help=f"address the nodes listen on (default {DEFAULT_HOST}: this machine only)",
    )
    add_deprecated_alias(start, "--host", "--bind", "bind", metavar="ADDRESS")
    start.add_argument("--persistence", action="store_true", help="enable native persistence (data survives restarts)")
    start.add_argument(
        "--auth",
        action="store_true",
        help=f"require username/password (implies --persistence; user {DEFAULT_USER}/{DEFAULT_PASSWORD})",
    )
    start.add_argument(
        "--tls", action="store_true", help="TLS on the client connector with a private CA generated under WORK_DIR/tls"
    )
    start.add_argument("--tls-client-auth", action="store_true", help="with --tls: require client certificates")
    start.add_argument(
        "--sql",
        action="store_true",
        help="enable the H2 SQL engine (runs Ignite 2.17.0: no SQL engine of 2.18.0 is on Maven Central)",
    )
    start.add_argument(
        "--region-mb",
        type=validate.int_between(16),
        default=1024,
        help="max size of the default data region in MiB (default 1024)",
    )
    start.add_argument(
        "--heap-mb", type=validate.int_between(64), default=1024, help="JVM heap per node in MiB (default 1024)"
    )
    start.add_argument(
        "--classpath",
        action="append",
        default=[],
        metavar="PATH",
        help="extra classpath entry for the nodes (repeatable)",
    )
    add_follow_log_arguments(start, "keep the follow log of these caches", "; Ignite 2 only")
    add_seconds_argument(start, "--timeout", 180.0, "how long to wait for the nodes to be ready")
    start.add_argument("--foreground", action="store_true", help="stay attached; stop the nodes on Ctrl+C or SIGTERM")
    add_json_argument(
        start,
        "the started nodes (name, pid, host, ports), the work directory and the stop "
        "command (with --foreground: once they are up)",
    )
    start.set_defaults(handler=_start)

    stop = nsub.add_parser(
        "stop",
        help="stop the nodes started from WORK_DIR",
        description="Stop exactly the nodes recorded in WORK_DIR (SIGTERM, then SIGKILL).",
    )
    _work_dir_arg(stop)
    add_json_argument(stop, "how many nodes were stopped, and the work directory")
    stop.set_defaults(handler=_stop)

    status = nsub.add_parser(
        "status",
        help="show nodes, ports and topology size",
        description="Exit code 0 when every recorded node is running, 1 otherwise.",
    )
    _work_dir_arg(status)
    add_json_argument(status, "the nodes: name, pid, state, host, ports, servers seen, cluster state")
    status.set_defaults(handler=_status)


def _work_dir_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="where node logs, status and data live (default: $IGNITE_TF_HOME/nodes or "
        "~/.local/state/tensorflow-ignite/nodes)",
    )


def _start(args: argparse.Namespace) -> int:
    work_dir = args.work_dir or default_work_dir()
    follow_log = follow_log_caches(args.follow_log)
    if follow_log_retention_refused(args, follow_log):
        return 2
    if args.ignite == 3:
        if follow_log:
            print(
                "ignite-tf: --follow-log is a module of Ignite 2 nodes; Ignite 3 nodes (--ignite 3) have no follow log",
                file=sys.stderr,
            )
            return 2
        from . import node3

        return node3.start(args, work_dir)
    cluster = LocalCluster(
        **cluster_settings(args, work_dir),
        persistence=args.persistence,
        auth=args.auth,
        sql=args.sql,
        region_mb=args.region_mb,
        extra_classpath=tuple(args.classpath),
        follow_log=tuple(follow_log),
        follow_log_retention_s=args.follow_log_retention,
    )
    human = sys.stderr if args.json else sys.stdout  # with --json, stdout holds the one JSON document
    print(f"Starting {args.nodes} Ignite node(s) in {cluster.work_dir} ...", file=human, flush=True)
    cluster.start(timeout=args.timeout)
    if not args.foreground:
        _print_started(cluster, args.json)
        if not args.json:
            print(f"Stop them with: ignite-tf node stop --work-dir {cluster.work_dir}")
        return 0
    # Ctrl+C, SIGTERM and SIGHUP all arrive as KeyboardInterrupt (cli.signals), from the start on.
    try:
        _print_started(cluster, args.json)
        print("Running in the foreground; Ctrl+C stops the nodes.", file=human, flush=True)
        while True:
            if not any(m.alive() for m in cluster.members):
                print("all nodes exited", file=human, flush=True)
                return 1
            time.sleep(1.0)  # polling the nodes' processes
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()
        print("nodes stopped", file=human, flush=True)
    return 0


def cluster_settings(args: argparse.Namespace, work_dir: Path) -> dict[str, Any]:
    """The ``node start`` options an Ignite 2 cluster and an Ignite 3 one (:mod:`.node3`) take alike."""
    return {
        "work_dir": work_dir,
        "nodes": args.nodes,
        "host": args.bind,
        "client_port": args.client_port or None,
        "heap_mb": args.heap_mb,
        "tls": args.tls or args.tls_client_auth,
        "tls_client_auth": args.tls_client_auth,
    }


def _print_started(cluster: LocalCluster, as_json: bool = False) -> None:
    if as_json:
        print_json(
            {
                "work_dir": str(cluster.work_dir),
                "ignite": 2,
                "nodes": node_states(cluster),
                "address": ",".join(f"{m.host}:{m.client_port}" for m in cluster.members),
                "username": DEFAULT_USER if cluster.auth else None,
                "tls": tls_files(cluster.tls_material, cluster.tls_client_auth),
                "launcher": _launcher_note(cluster),
                "stop": f"ignite-tf node stop --work-dir {cluster.work_dir}",
            }
        )
        return
    _print_status(cluster)
    if cluster.tls_material is not None:
        print("\n".join(describe_tls(cluster.tls_material, cluster.tls_client_auth)))
    print(f"Launcher (ignite-tf start): {_launcher_note(cluster)}")


def tls_files(material: Any, client_auth: bool) -> dict[str, str] | None:
    """What ``node start --json`` says about TLS: the files to connect with (``describe_tls``'s, as fields)."""
    if material is None:
        return None
    out = {"cafile": str(material.ca_cert)}
    if client_auth:
        out.update(
            certfile=str(material.client_cert),
            keyfile=str(material.client_key),
            key_password_file=str(material.directory / "client-key-password"),
        )
    return out


def _launcher_note(cluster: LocalCluster) -> str:
    """Who these nodes' launcher lets run jobs, in a line (README, "Security")."""
    security = cluster.launcher_settings()
    if not cluster.launcher_module:
        return "not installed on these nodes"
    if security.allow_unauthenticated and not cluster.auth:
        return (
            f"accepts jobs without authentication, since the nodes listen on {cluster.host} only "
            "(nobody outside this machine can reach them)"
        )
    if cluster.auth:
        return f"accepts jobs from the Ignite user(s) {', '.join(security.submitters) or '(none)'}"
    return (
        f"refuses every job: the nodes listen on {cluster.host} without authentication; start them with "
        "--auth (README, 'Security')"
    )


def _load(args: argparse.Namespace) -> LocalCluster:
    work_dir = args.work_dir or default_work_dir()
    cluster = LocalCluster.load_state(work_dir)
    if cluster is None:
        raise NodeError(f"no nodes were started from {work_dir} (no cluster.json there)")
    return cluster


def _ignite3(args: argparse.Namespace) -> Any:
    """The Ignite 3 nodes recorded in the work directory, or None (Ignite 2 nodes, or none)."""
    from ..local.ignite3 import Ignite3Cluster

    return Ignite3Cluster.load_state(args.work_dir or default_work_dir())


def _stop(args: argparse.Namespace) -> int:
    ig3 = _ignite3(args)
    if ig3 is not None:
        from . import node3

        return node3.stop(ig3, as_json=args.json)
    cluster = _load(args)
    running = [m for m in cluster.members if m.alive()]
    cluster.stop()
    left = cluster.java_pids()
    if left:
        raise NodeError(f"processes still running after stop: {left}")
    return print_result(
        args.json,
        {"stopped": len(running), "work_dir": str(cluster.work_dir)},
        [f"stopped {len(running)} node(s) from {cluster.work_dir}"],
    )


def _status(args: argparse.Namespace) -> int:
    ig3 = _ignite3(args)
    if ig3 is not None:
        from . import node3

        if args.json:
            nodes3 = node3.states(ig3)
            print_json({"work_dir": str(ig3.work_dir), "ignite": 3, "nodes": nodes3})
            return 0 if nodes3 and all(n["ready"] for n in nodes3) else 1
        return 0 if node3.print_status(ig3) else 1
    cluster = _load(args)
    if args.json:
        nodes = node_states(cluster)
        print_json({"work_dir": str(cluster.work_dir), "nodes": nodes})
        return 0 if nodes and all(n["state"] == "running" for n in nodes) else 1
    return 0 if _print_status(cluster) else 1


def node_states(cluster: LocalCluster) -> list[dict[str, Any]]:
    """One record per node recorded in ``cluster``'s work directory (what ``status --json`` prints)."""
    out = []
    for m in cluster.members:
        alive = m.alive()
        st = m.status() if alive else {}
        out.append(
            {
                "name": m.name,
                "pid": m.pid,
                "state": "running" if alive else "stopped",
                "host": m.host,
                "client_port": m.client_port,
                "discovery_port": m.discovery_port,
                "servers": len(st.get("servers", [])) if alive else None,
                "cluster_state": st.get("cluster_state") if alive else None,
            }
        )
    return out


def _print_status(cluster: LocalCluster) -> bool:
    rows = [("NODE", "PID", "STATE", "CLIENT", "DISCOVERY", "SERVERS", "CLUSTER")]
    all_up = True
    for m in cluster.members:
        st = m.status()
        alive = m.alive()
        all_up &= alive
        rows.append(
            (
                m.name,
                str(m.pid),
                "running" if alive else "stopped",
                f"{m.host}:{m.client_port}",
                str(m.discovery_port),
                str(len(st.get("servers", []))) if alive else "-",
                st.get("cluster_state", "-") if alive else "-",
            )
        )
    print_table(rows)
    up = [m for m in cluster.members if m.alive()]
    topo = max((len(m.status().get("servers", [])) for m in up), default=0)
    print(f"topology: {topo} server node(s); {len(up)}/{len(cluster.members)} recorded node(s) running")
    return all_up and bool(cluster.members)
