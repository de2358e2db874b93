"""The pieces of ``ignite-tf``'s one command-line grammar that are not about connecting.

Every command that prints a result takes ``--json`` (:func:`add_json_argument`:
one JSON document on stdout instead of the human lines); every command that
shows progress bars takes ``--progress/--no-progress`` (:func:`add_progress_argument`);
durations are seconds (floats).  Connecting is :mod:`.credentials`'
:func:`~.credentials.add_connection_arguments`.

An option renamed keeps its old spelling for one release as a hidden alias
(:func:`add_deprecated_alias`): it works, is left out of ``--help``, and prints
one warning line naming the new spelling.  ``tests/unit/test_cli_grammar.py``
walks every parser and checks these rules.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "add_json_argument",
    "add_progress_argument",
    "add_deprecated_alias",
    "print_json",
    "print_error",
    "DEPRECATED_HELP",
]

#: The ``help=`` of a deprecated alias: hidden from ``--help`` (argparse.SUPPRESS).
DEPRECATED_HELP = argparse.SUPPRESS


def add_json_argument(p: argparse.ArgumentParser | Any, what: str) -> None:
    """``--json``: print ``what`` as one JSON document on stdout instead of the human lines."""
    p.add_argument("--json", action="store_true", help=f"print {what} as JSON on stdout (for scripts)")


def print_json(value: Any) -> None:
    """One JSON document on stdout (what ``--json`` prints)."""
    print(json.dumps(value, indent=2, default=str), flush=True)


def print_error(exc: BaseException) -> int:
    """``exc`` as one ``ignite-tf: error:`` line on stderr (a server's message may span several); returns 1."""
    print(f"ignite-tf: error: {' '.join(str(exc).split())}", file=sys.stderr)
    return 1


def add_progress_argument(p: argparse.ArgumentParser | Any) -> None:
    """``--progress/--no-progress``: progress bars on stderr; default: only when stderr is a terminal."""
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show progress bars on stderr, or never (default: only when stderr is a terminal)",
    )


class _DeprecatedAlias(argparse.Action):
    """An old spelling: stores into the new option's ``dest`` and warns once on stderr."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str,
        *,
        new: str,
        convert: Callable[[Any], Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.new = new
        self.convert = convert

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(
            f"ignite-tf: warning: {option_string} is deprecated and will be removed in a later release; use {self.new}",
            file=sys.stderr,
        )
        setattr(namespace, self.dest, self.convert(values) if self.convert is not None else values)


def add_deprecated_alias(
    p: argparse.ArgumentParser | Any,
    old: str,
    new: str,
    dest: str,
    *,
    type: Callable[[str], Any] | None = None,
    convert: Callable[[Any], Any] | None = None,
    metavar: str | None = None,
) -> None:
    """Keep ``old`` working as a hidden alias of ``new`` (which stores into ``dest``); ``convert`` maps its value."""
    typed: dict[str, Any] = {"type": type} if type is not None else {}
    p.add_argument(
        old,
        dest=dest,
        action=_DeprecatedAlias,
        new=new,
        convert=convert,
        metavar=metavar,
        help=DEPRECATED_HELP,
        default=argparse.SUPPRESS,
        **typed,
    )
