"""``ignite-tf``: the command line of tensorflow-ignite.

Each sub-command lives in its own module exposing ``register(subparsers)``; this
module only assembles them and turns library errors into one clear line and a
non-zero exit code.  Every command stops on SIGTERM and SIGHUP as on Ctrl+C
(:mod:`.signals`): the commands that start child processes stop them.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any

from .. import demo
from ..errors import IgniteError
from ..native.quiet import quiet_tensorflow_import
from . import job, load, module, node, predict, tensorboard
from .grammar import add_hook_option
from .signals import Terminated, terminate_as_interrupt

__all__ = ["main", "build_parser", "version_text"]

_COMMANDS = (node, load, predict, demo, tensorboard, module, job)


_EPILOG = """\
One grammar for every command:
  connecting   --host HOST[:PORT][,HOST[:PORT]...] (the others are tried when the first does not
               answer) and --port (that of hosts without one, default 10800); --username with the
               password from $IGNITE_PASSWORD (--password-env VAR names another) or a terminal prompt,
               never the command line; TLS with --cafile, --certfile, --keyfile, --server-hostname.
  serving      servers this CLI starts listen on --bind (node start, tensorboard); local nodes'
               thin-client port is --client-port (node start, demo); TensorBoard's is --http-port.
  results      --json prints a command's result as one JSON document on stdout.
  progress     --progress / --no-progress (default: bars when stderr is a terminal).
  durations    seconds (--timeout, --backoff, --settle, --grace), as in the Python API.

Exit codes: 0 success; 1 an error (one line on stderr), or not every node up / carrying the module
(node status, module check); 2 bad arguments; start, attach and predict --on-cluster exit with the
job's exit code; 130 Ctrl+C (a followed job keeps running); 128+N stopped by signal N (143 SIGTERM,
129 SIGHUP).

Run `ignite-tf COMMAND --help` for the options of each command."""


def version_text() -> str:
    """What ``ignite-tf --version`` prints: this package, TensorFlow, protocol, bundled Ignite.

    Reads package metadata and file names only: TensorFlow is not imported.
    """
    from .. import __version__
    from ..local.java import jars_dir
    from ..native import build
    from ..protocol.codes import SUPPORTED_VERSIONS

    lines = [f"tensorflow-ignite {__version__}"]
    try:
        tf_version = build.tensorflow_version()
    except build.NativeBuildError:
        tf_version = "not installed (pip install 'tensorflow-ignite[tf]')"
    info = build.read_build_info()
    if info is not None:
        tf_version += f" (native libraries built for TensorFlow {info.get('tensorflow_series')}.x)"
    elif build.source_checkout():
        tf_version += " (native libraries built from this source checkout)"
    lines.append(f"TensorFlow {tf_version}")
    lines.append(f"thin-client protocol {SUPPORTED_VERSIONS[0]} (accepts down to {SUPPORTED_VERSIONS[-1]})")

    def bundled(name: str) -> str:
        jars = sorted((jars_dir() / name).glob("ignite-core-*.jar"))
        return jars[0].name[len("ignite-core-") : -len(".jar")] if jars else "not bundled"

    lines.append(f"local nodes: Apache Ignite {bundled('lib')} (SQL nodes: {bundled('lib-sql')} with H2)")
    return "\n".join(lines)


def _print_version(parser: argparse.ArgumentParser, _ns: argparse.Namespace, _value: Any, _used: str | None) -> None:
    """``--version``: print :func:`version_text` and exit (computed only when asked)."""
    print(version_text())
    parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The full ``ignite-tf`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="ignite-tf",
        description=(
            "TensorFlow on Apache Ignite: run local Ignite nodes, load data into caches, "
            "and run distributed training next to the data."
        ),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="log debug details, and let TensorFlow's native start-up messages through",
    )
    add_hook_option(
        parser,
        "--version",
        hook=_print_version,
        nargs=0,
        default=argparse.SUPPRESS,
        help="show the versions of tensorflow-ignite, TensorFlow, the thin-client "
        "protocol and the bundled Apache Ignite, then exit",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in _COMMANDS:
        command.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``ignite-tf`` console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.verbose:
        quiet_tensorflow_import()
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        with terminate_as_interrupt():
            return int(args.handler(args) or 0)
    except IgniteError as exc:
        print(f"ignite-tf: error: {exc}", file=sys.stderr)
        return 1
    except Terminated as exc:
        print(f"ignite-tf: stopped ({exc})", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:
        print("ignite-tf: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
