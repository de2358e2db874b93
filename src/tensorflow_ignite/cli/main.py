"""``ignite-tf``: the command line of tensorflow-ignite.

Each sub-command lives in its own module exposing ``register(subparsers)``; this
module only assembles them and turns library errors into one clear line and a
non-zero exit code.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from ..errors import IgniteError
from .. import demo
from . import job, load, node, tensorboard
from .quiet import quiet_tensorflow_import

__all__ = ["main", "build_parser"]

_COMMANDS = (node, load, demo, tensorboard, job)


def build_parser() -> argparse.ArgumentParser:
    """The full ``ignite-tf`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="ignite-tf",
        description=(
            "TensorFlow on Apache Ignite: run local Ignite nodes, load data into caches, "
            "and run distributed training next to the data."
        ),
        epilog="Run `ignite-tf COMMAND --help` for the options of each command.",
    )
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="log debug details, and let TensorFlow's native start-up messages through")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in _COMMANDS:
        module.register(sub)
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
        return int(args.handler(args) or 0)
    except IgniteError as exc:
        print(f"ignite-tf: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("ignite-tf: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
