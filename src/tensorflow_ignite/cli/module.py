"""``ignite-tf module path|config|check``: the tensorflow-ignite module on your own Ignite cluster."""

from __future__ import annotations

import argparse
import sys

from ..errors import IgniteError
from .credentials import add_connection_arguments, connection_options
from .grammar import add_json_argument, print_json, print_table

__all__ = ["register", "duration", "add_follow_log_arguments", "follow_log_retention_refused"]

_DESCRIPTION = """\
`ignite-tf start` runs its training workers through a small Ignite module: one jar in every
server node's libs/ and two properties in the node's IgniteConfiguration. To install it on a
cluster you run with ignite.sh (or the Docker image, or Kubernetes):

  1. cp "$(ignite-tf module path)" $IGNITE_HOME/libs/        (Docker image: libs/user_libs)
  2. ignite-tf module config   -> paste inside <bean class="org.apache.ignite.configuration.IgniteConfiguration">
     (Java configuration: TfLauncherModule.configure(cfg, policy)); then say who may run jobs:
     the launcher refuses every job until authentication is on and its `submitters` lists
     users (or, on a trusted isolated network only, `allowUnauthenticated` is set).
     README, "Security".
     `ignite-tf module config --follow-log CACHE` also keeps CACHE's follow log, with which
     IgniteDataset.follow resumes exactly once (README, "Following a cache").
  3. restart the server nodes one at a time; `ignite-tf module check --host H:P` confirms.

IgniteDataset and the ignite:// filesystem need no module."""


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the ``module`` command group."""
    p = sub.add_parser(
        "module",
        help="the Ignite module `ignite-tf start` needs on your cluster's nodes",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    msub = p.add_subparsers(dest="module_command", metavar="ACTION", required=True)
    path = msub.add_parser(
        "path",
        help="print the absolute path of the module jar",
        description="Print the absolute path of the module jar shipped in this installation "
        "(one line), for copying into every server node's libs/.",
    )
    path.set_defaults(handler=_path)
    config = msub.add_parser(
        "config",
        help="print the XML to put inside the IgniteConfiguration bean",
        description="Print the Spring XML properties (the module's node attribute and the "
        "launcher service) that go inside a node's IgniteConfiguration bean. The launcher's "
        "security settings are in it, commented out: with none set it refuses every job.",
    )
    add_follow_log_arguments(config, "also keep the follow log of these caches", "")
    config.set_defaults(handler=_config)
    check = msub.add_parser(
        "check",
        help="show which server nodes have the module, and its version",
        description="List the cluster's server nodes with the module version each carries, "
        "and who the launcher lets run jobs (its security settings, as it reports them); "
        "exit code 0 when every node has this installation's version, 1 otherwise.",
    )
    add_connection_arguments(check)
    add_json_argument(check, "the server nodes with their module versions")
    check.set_defaults(handler=_check)


def add_follow_log_arguments(p: argparse.ArgumentParser, keep: str, scope: str) -> None:
    """``--follow-log`` (its help starting with ``keep``, ending with ``scope``) and ``--follow-log-retention``:
    the follow log of ``node start`` and ``module config``."""
    p.add_argument(
        "--follow-log",
        action="append",
        default=[],
        metavar="CACHE[,CACHE]",
        help=f"{keep}: every update, so that IgniteDataset.follow "
        f"resumes exactly once (README, 'Following a cache'); repeatable{scope}",
    )
    p.add_argument(
        "--follow-log-retention",
        type=duration,
        default=None,
        metavar="DURATION",
        help="how long the follow log keeps an update: seconds, or a number with s, m, h or d "
        "(default 1h); a follower stopped longer than this cannot resume exactly once",
    )


def follow_log_retention_refused(args: argparse.Namespace, caches: object) -> bool:
    """True, having said why on stderr, when ``--follow-log-retention`` comes without caches to log
    (the command then exits with 2)."""
    if args.follow_log_retention is not None and not caches:
        print("ignite-tf: --follow-log-retention needs --follow-log CACHE (which caches to log)", file=sys.stderr)
        return True
    return False


def _path(args: argparse.Namespace) -> int:
    from ..local.java import module_jar

    print(module_jar().resolve())
    return 0


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def duration(text: str) -> int:
    """``90``, ``90s``, ``30m``, ``1h``, ``2d`` -> whole seconds (positive)."""
    t = text.strip().lower()
    number, unit = (t[:-1], t[-1]) if t and t[-1] in _UNITS else (t, "s")
    try:
        seconds = float(number) * _UNITS[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration: use seconds or a number with s, m, h or d (e.g. 1h)"
        ) from None
    if seconds < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: the retention must be at least one second")
    return int(seconds)


def _config(args: argparse.Namespace) -> int:
    from ..launcher.module import xml_fragment

    if follow_log_retention_refused(args, args.follow_log):
        return 2
    sys.stdout.write(xml_fragment(follow_log=args.follow_log, follow_log_retention_s=args.follow_log_retention))
    return 0


def _check(args: argparse.Namespace) -> int:
    from ..launcher.jobs import JobClient
    from ..launcher.module import MODULE_VERSION, module_status, require_module

    with connection_options(args).open() as client:
        nodes = module_status(client)
        security = None
        if nodes and all(n.version == MODULE_VERSION for n in nodes):
            # Who the launcher lets run jobs, as the supervisor itself reports it.
            security = str(JobClient(client).invoke("securitySummary"))
    if args.json:
        print_json(
            [
                {
                    "node_id": str(n.node_id),
                    "name": n.name,
                    "addresses": list(n.addresses),
                    "ignite": n.ignite_version,
                    "module": n.version,
                }
                for n in nodes
            ]
        )
    else:
        rows = [("NODE", "ADDRESSES", "IGNITE", "MODULE")]
        rows += [(n.name, ", ".join(n.addresses[:3]), n.ignite_version, n.version or "-") for n in nodes]
        print_table(rows)
    try:
        require_module(nodes)
    except IgniteError as exc:
        print(f"ignite-tf: {exc}", file=sys.stderr)
        return 1
    print(f"every server node has the tensorflow-ignite module {MODULE_VERSION}", file=sys.stderr)
    if security:
        print(f"launcher: {security}", file=sys.stderr)
    return 0
