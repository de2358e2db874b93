"""``ignite-tf node start --ignite 3`` and ``stop``/``status`` of such nodes: local Apache Ignite 3 servers.

The nodes are :class:`~tensorflow_ignite.local.ignite3.Ignite3Cluster`'s (embedded
``ignite-runner`` from Maven Central, one JVM per node, the cluster initialised by
the first); their work directory's state file says they are Ignite 3 nodes, so
``node stop`` and ``node status`` need no flag.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from ..errors import ConfigurationError, NodeError
from ..local.cluster import DEFAULT_PASSWORD, DEFAULT_USER
from ..local.ignite3 import MEMORY_PROFILE, Ignite3Cluster
from ..local.tls import describe_tls
from .grammar import print_json, print_result, print_table

__all__ = ["start", "stop", "states", "print_status", "UNSUPPORTED"]

#: ``node start`` flags that have no meaning for Ignite 3 nodes: (attribute, flag, why).
UNSUPPORTED: tuple[tuple[str, str, str], ...] = (
    ("persistence", "--persistence", "Ignite 3 tables are always stored on disk (aipersist) here"),
    ("sql", "--sql", "Ignite 3 always has its SQL engine"),
    ("classpath", "--classpath", "Ignite 3 loads code through deployment units, not the node's classpath"),
)


def start(args: argparse.Namespace, work_dir: Path) -> int:
    given = [(flag, why) for attr, flag, why in UNSUPPORTED if getattr(args, attr)]
    if given:
        raise ConfigurationError("; ".join(f"{flag} does not apply to --ignite 3 ({why})" for flag, why in given))
    from .node import cluster_settings

    cluster = Ignite3Cluster(
        **cluster_settings(args, work_dir),
        storage_mb=args.region_mb,
        owner_pid=None,
        username=DEFAULT_USER if args.auth else None,
        password=DEFAULT_PASSWORD if args.auth else None,
    )
    human = sys.stderr if args.json else sys.stdout  # with --json, stdout holds the one JSON document
    print(f"Starting {args.nodes} Ignite 3 node(s) in {work_dir} ...", file=human, flush=True)
    cluster.start(timeout=args.timeout)
    if args.json:
        from .node import tls_files

        print_json(
            {
                "work_dir": str(work_dir),
                "ignite": 3,
                "nodes": states(cluster),
                "address": ",".join(cluster.endpoints),
                "username": cluster.username,
                "tls": tls_files(cluster.tls_material, cluster.tls_client_auth),
                "stop": f"ignite-tf node stop --work-dir {work_dir}",
            }
        )
    else:
        _print_started(cluster)
    if not args.foreground:
        if not args.json:
            print(f"Stop them with: ignite-tf node stop --work-dir {work_dir}")
        return 0
    try:  # Ctrl+C, SIGTERM and SIGHUP all arrive as KeyboardInterrupt (cli.signals)
        print("Running in the foreground; Ctrl+C stops the nodes.", file=human, flush=True)
        while any(cluster.is_alive(n) for n in cluster.members):
            time.sleep(1.0)  # polling the nodes' processes
        print("all nodes exited", file=human, flush=True)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        cluster.stop()
        print("nodes stopped", file=human, flush=True)


def _print_started(cluster: Ignite3Cluster) -> None:
    print_status(cluster)
    host, port = cluster.endpoints[0].rsplit(":", 1)
    print(f"Read its tables with: tensorflow_ignite.IgniteDataset(TABLE, {host!r}, {port})")
    print(
        f"Storage profiles: default (aipersist, on disk) and {MEMORY_PROFILE} (in memory: "
        f"CREATE ZONE ... STORAGE PROFILES ['{MEMORY_PROFILE}'], or IGNITE_FS_STORAGE={MEMORY_PROFILE} for ignite://)"
    )
    if cluster.username:
        print(f"Authentication: user {cluster.username}, password {DEFAULT_PASSWORD}")
    if cluster.tls_material is not None:
        print("\n".join(describe_tls(cluster.tls_material, cluster.tls_client_auth)))


def stop(cluster: Ignite3Cluster, *, as_json: bool = False) -> int:
    running = [n for n in cluster.members if cluster.is_alive(n)]
    cluster.stop()
    left = [n.pid for n in cluster.members if cluster.is_alive(n)]
    if left:
        raise NodeError(f"Ignite 3 node processes still running after stop: {left}")
    return print_result(
        as_json,
        {"stopped": len(running), "work_dir": str(cluster.work_dir), "ignite": 3},
        [f"stopped {len(running)} Ignite 3 node(s) from {cluster.work_dir}"],
    )


def states(cluster: Ignite3Cluster) -> list[dict[str, object]]:
    """One record per node (what ``status --json`` prints)."""
    out: list[dict[str, object]] = []
    for n in cluster.members:
        alive = cluster.is_alive(n)
        out.append(
            {
                "name": n.name,
                "pid": n.pid,
                "state": "running" if alive else "stopped",
                "host": n.host,
                "client_port": n.client_port,
                "network_port": n.network_port,
                "rest_port": n.rest_port,
                "ignite": 3,
                "ready": alive and n.status() == "ready",
            }
        )
    return out


def print_status(cluster: Ignite3Cluster) -> bool:
    rows = [("NODE", "PID", "STATE", "CLIENT", "NETWORK", "STATUS")]
    for n, st in zip(cluster.members, states(cluster)):
        rows.append(
            (
                n.name,
                str(n.pid),
                str(st["state"]),
                f"{n.host}:{n.client_port}",
                str(n.network_port),
                (n.status() or "-") if st["state"] == "running" else "-",
            )
        )
    print_table(rows)
    ready = sum(1 for st in states(cluster) if st["ready"])
    print(f"Ignite 3 cluster {cluster.name!r}: {ready}/{len(cluster.members)} recorded node(s) running and ready")
    return bool(cluster.members) and ready == len(cluster.members)
