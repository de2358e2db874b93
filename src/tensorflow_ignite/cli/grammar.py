"""The pieces of ``ignite-tf``'s one command-line grammar that are not about connecting.

Every command that prints a result takes ``--json`` (:func:`add_json_argument`:
one JSON document on stdout instead of the human lines); every command that
shows progress bars takes ``--progress/--no-progress`` (:func:`add_progress_argument`);
durations are seconds (floats); an option more than one command takes is built here once
(``--backups``: :func:`add_backups_argument`; a port to listen on:
:func:`add_listen_port_argument`).  Connecting is :mod:`.credentials`'
:func:`~.credentials.add_connection_arguments`.

An option renamed keeps its old spelling for one release as a hidden alias
(:func:`add_deprecated_alias`): it works, is left out of ``--help``, and prints
one warning line naming the new spelling.  ``tests/unit/test_cli_grammar.py``
walks every parser and checks these rules.

A command's result goes out through :func:`print_result` (the JSON record or the human
lines) and tables through :func:`print_table`; options a command passes on under their own
names are :func:`options_of`; an option that acts the moment it is parsed (``--version``,
the refused ``--password``) is :func:`add_hook_option`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TextIO

from . import validate

__all__ = [
    "add_json_argument",
    "add_progress_argument",
    "add_deprecated_alias",
    "add_backups_argument",
    "add_hook_option",
    "add_listen_port_argument",
    "options_of",
    "print_json",
    "print_error",
    "print_result",
    "print_table",
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


def print_result(as_json: bool, record: Any, lines: Iterable[str]) -> int:
    """A command's result: ``record`` as one JSON document with ``--json``, else ``lines`` on stdout; returns 0."""
    if as_json:
        print_json(record)
    else:
        for line in lines:
            print(line)
    return 0


def print_table(rows: Sequence[Sequence[str]], out: TextIO | None = None, indent: str = "") -> None:
    """``rows`` (the first one the header) as left-aligned columns two spaces apart, on ``out`` (stdout)."""
    out = out or sys.stdout
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        out.write(indent + "  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() + "\n")


def options_of(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    """The options ``names`` of ``args``, as keyword arguments of the same names (for the function a command runs)."""
    return {name: getattr(args, name) for name in names}


def add_backups_argument(p: argparse.ArgumentParser | Any, help: str) -> None:
    """``--backups N``: backup copies of each partition of a cache the command creates (default 0)."""
    p.add_argument("--backups", type=validate.int_between(0), default=0, help=help)


def add_listen_port_argument(p: argparse.ArgumentParser | Any, flag: str, default: int, help: str) -> None:
    """``flag PORT``: a port that something this command starts listens on (0: a free one)."""
    p.add_argument(flag, type=validate.listen_port, default=default, metavar="PORT", help=help)


def add_seconds_argument(p: argparse.ArgumentParser | Any, flag: str, default: float, help: str) -> None:
    """``flag SECONDS``: a duration in seconds (positive), its default appended to ``help``."""
    p.add_argument(
        flag, type=validate.positive_float, default=default, metavar="SECONDS", help=f"{help} (default {default:g})"
    )


def add_progress_argument(p: argparse.ArgumentParser | Any) -> None:
    """``--progress/--no-progress``: progress bars on stderr; default: only when stderr is a terminal."""
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="show progress bars on stderr, or never (default: only when stderr is a terminal)",
    )


#: What an option made with :func:`add_hook_option` runs when it is parsed:
#: ``hook(parser, namespace, values, option_string)``.
OptionHook = Callable[[argparse.ArgumentParser, argparse.Namespace, Any, "str | None"], None]


class _Hook(argparse.Action):
    """The grammar's one custom action: runs its hook when the option is parsed."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, hook: OptionHook, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, **kwargs)
        self.hook = hook

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        self.hook(parser, namespace, values, option_string)


def add_hook_option(p: argparse.ArgumentParser | Any, *flags: str, hook: OptionHook, **kwargs: Any) -> None:
    """An option that runs ``hook`` as soon as it is parsed (prints and exits, refuses, or stores and warns)."""
    p.add_argument(*flags, action=_Hook, hook=hook, **kwargs)


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

    def warn_and_store(
        _p: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, used: str | None
    ) -> None:
        print(
            f"ignite-tf: warning: {used} is deprecated and will be removed in a later release; use {new}",
            file=sys.stderr,
        )
        setattr(namespace, dest, convert(values) if convert is not None else values)

    add_hook_option(
        p,
        old,
        hook=warn_and_store,
        dest=dest,
        metavar=metavar,
        help=DEPRECATED_HELP,
        default=argparse.SUPPRESS,
        **typed,
    )
