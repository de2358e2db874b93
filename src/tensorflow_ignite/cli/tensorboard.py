"""``ignite-tf tensorboard --logdir ignite://host:port/path``: TensorBoard reading from Ignite.

TensorBoard only reads a custom scheme through TensorFlow's filesystem layer,
i.e. with ``--load_fast=false`` and with the ``ignite://`` plugin registered
in *its* process.  This command therefore runs TensorBoard in a child Python
process started as ``python -m tensorflow_ignite.cli.tensorboard ...``, which
registers the plugin (:func:`tensorflow_ignite.fs.register`) and then hands
over to TensorBoard's own ``main``.  The parent waits until the port answers,
prints the URL, and stops the child (SIGTERM, then SIGKILL) on Ctrl+C, SIGTERM or
SIGHUP (:mod:`.signals`).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import time

from ..errors import ConfigurationError
from . import validate
from .credentials import add_connection_arguments, client_settings
from .grammar import add_listen_port_argument, add_seconds_argument

__all__ = ["register", "run", "child_main"]

_STARTUP_TIMEOUT = 120.0


def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add the ``tensorboard`` command."""
    p = sub.add_parser(
        "tensorboard",
        help="start TensorBoard on event files stored in ignite:// (or igfs://)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=(
            "Start TensorBoard in a child process with the ignite:// filesystem loaded and\n"
            "--load_fast=false (TensorBoard's fast loader cannot read custom schemes), wait until\n"
            "it serves, print its URL, and stop it on Ctrl+C.\n\n"
            "LOGDIR is ignite://HOST:PORT/path (or igfs://...), or ignite:///path on the cluster the\n"
            "connection options name (--host HOST[:PORT][,...]); without --host, ignite:///path uses\n"
            "$IGNITE_FS_HOST/$IGNITE_FS_PORT (else $IGNITE_DATASET_HOST/PORT, else 127.0.0.1:10800).\n"
            "--username, --cafile, --certfile, --keyfile and --server-hostname reach TensorBoard's\n"
            "process as $IGNITE_FS_* variables, as do the password (from $IGNITE_PASSWORD, or asked for\n"
            "on the terminal) and a client key's password ($IGNITE_CERT_PASSWORD); without them the\n"
            "$IGNITE_FS_USERNAME, _PASSWORD, _CAFILE, ... variables (else the IGNITE_DATASET_* ones)\n"
            "apply. Credentials are never taken from the URI.\n\n"
            "TensorBoard's own HTTP server listens on --bind (default 127.0.0.1) and --http-port\n"
            "(default 6006).  Arguments after `--` go to TensorBoard unchanged (e.g. -- --reload_interval 5)."
        ),
        epilog="example: ignite-tf tensorboard --logdir ignite:///runs --host 10.0.0.5:10800 --http-port 6006",
    )
    p.add_argument(
        "--logdir",
        required=True,
        metavar="LOGDIR",
        type=validate.logdir,
        help="directory of event files, e.g. ignite://127.0.0.1:10800/runs",
    )
    http = p.add_argument_group("TensorBoard's HTTP server")
    http.add_argument(
        "--bind",
        default="127.0.0.1",
        metavar="ADDRESS",
        help="address TensorBoard listens on (default 127.0.0.1; 0.0.0.0 for all interfaces)",
    )
    add_listen_port_argument(http, "--http-port", 6006, "HTTP port for TensorBoard (default 6006; 0 picks a free one)")
    add_connection_arguments(p, without_host="LOGDIR's endpoint, or the $IGNITE_FS_* variables")
    add_seconds_argument(p, "--timeout", _STARTUP_TIMEOUT, "how long to wait for TensorBoard to start")
    p.add_argument("extra", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    p.set_defaults(handler=run)


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host if host not in ("0.0.0.0", "") else "127.0.0.1", 0))
        return int(s.getsockname()[1])


def _port_open(host: str, port: int) -> bool:
    target = "127.0.0.1" if host in ("0.0.0.0", "", "::") else host
    try:
        with socket.create_connection((target, port), timeout=0.5):
            return True
    except OSError:
        return False


def child_command(logdir: str, host: str, port: int, extra: list[str]) -> list[str]:
    """The child's command line: this module as ``__main__`` with TensorBoard's flags."""
    return [
        sys.executable,
        "-m",
        "tensorflow_ignite.cli.tensorboard",
        "--logdir",
        logdir,
        "--host",
        host,
        "--port",
        str(port),
        "--load_fast=false",
        *extra,
    ]


def cluster_logdir(args: argparse.Namespace) -> str:
    """LOGDIR on the cluster ``--host`` names: ``ignite:///path`` becomes ``ignite://H:P[,H:P]/path``."""
    from ..client.client import parse_addresses
    from ..protocol.endpoint import DEFAULT_PORT, format_endpoint

    if args.host is None:
        if args.port != DEFAULT_PORT:  # most likely the HTTP port, as --port was before --http-port
            raise ConfigurationError(
                f"--port {args.port} is the thin-client port of the --host nodes, and there is no --host: "
                "TensorBoard's own HTTP port is --http-port (formerly its --port)"
            )
        return str(args.logdir)

    scheme, sep, rest = str(args.logdir).partition("://")
    if not sep or rest.partition("/")[0]:
        raise ConfigurationError(
            f"--host names the cluster of an ignite:///path LOGDIR, but {scheme}{sep}{rest.partition('/')[0]}... "
            "names its own (or is not on ignite://): drop --host, or write the LOGDIR as ignite:///path. "
            "TensorBoard's own HTTP server takes --bind and --http-port (formerly its --host and --port)"
        )
    endpoints = ",".join(format_endpoint(h, p) for h, p in parse_addresses(args.host, default_port=args.port))
    return f"{scheme}://{endpoints}{rest}"


#: ``client_settings`` key -> the ``IGNITE_FS_*`` variable TensorBoard's process reads it from.
_FS_VARIABLES = {
    "username": "IGNITE_FS_USERNAME",
    "password": "IGNITE_FS_PASSWORD",
    "cafile": "IGNITE_FS_CAFILE",
    "certfile": "IGNITE_FS_CERTFILE",
    "keyfile": "IGNITE_FS_KEYFILE",
    "cert_password": "IGNITE_FS_CERT_PASSWORD",
    "server_hostname": "IGNITE_FS_SERVER_HOSTNAME",
}


def child_env(settings: dict[str, object] | None = None) -> dict[str, str]:
    """TensorBoard's environment: this one, the ``ignite://`` plugin, and ``settings``
    (:func:`~.credentials.client_settings`) as ``IGNITE_FS_*`` variables."""
    from ..fs.registration import BACKEND_SPEC

    env = dict(os.environ)
    for key, value in (settings or {}).items():
        if value is not None and key in _FS_VARIABLES:
            env[_FS_VARIABLES[key]] = str(value)
    env["TF_IGNITE_FS_BACKEND"] = BACKEND_SPEC
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def _stop(proc: "subprocess.Popen[bytes]") -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def run(args: argparse.Namespace) -> int:
    """Start TensorBoard, wait for its port, print the URL, wait until it ends or Ctrl+C."""
    extra = [a for a in args.extra if a != "--"]
    if not args.logdir.strip():
        raise ConfigurationError("--logdir must not be empty")
    logdir = cluster_logdir(args)
    settings = client_settings(args)
    bind = args.bind
    port = args.http_port or _free_port(bind)
    if _port_open(bind, port):
        raise ConfigurationError(f"port {port} on {bind} is already in use; pick another with --http-port")
    proc = subprocess.Popen(child_command(logdir, bind, port, extra), env=child_env(settings))
    try:
        deadline = time.monotonic() + args.timeout
        delay = 0.05
        while not _port_open(bind, port):
            if proc.poll() is not None:
                print(f"ignite-tf: TensorBoard exited with status {proc.returncode} before serving", file=sys.stderr)
                return proc.returncode or 1
            if time.monotonic() > deadline:
                print(f"ignite-tf: TensorBoard did not open port {port} within {args.timeout:.0f}s", file=sys.stderr)
                return 1
            time.sleep(delay)  # polling the port, bounded by the deadline
            delay = min(delay * 1.5, 0.5)
        shown = "localhost" if bind in ("0.0.0.0", "", "::") else bind
        print(f"TensorBoard serving {logdir} at http://{shown}:{port}/ (Ctrl+C to stop)", flush=True)
        return proc.wait() or 0
    except KeyboardInterrupt:
        print("ignite-tf: stopping TensorBoard", file=sys.stderr)
        return 0
    finally:
        _stop(proc)


def child_main() -> None:
    """Inside the child: register ``ignite://`` with TensorFlow, then run TensorBoard."""
    from tensorflow_ignite.fs import register as register_fs

    register_fs()
    from tensorboard import main as tensorboard_main

    sys.argv[0] = "tensorboard"
    tensorboard_main.run_main()


if __name__ == "__main__":  # pragma: no cover - the child process
    child_main()
