"""MkDocs hook: the command-line reference (reference/cli.md) is generated from ``ignite-tf``'s
own argparse parsers (``tensorflow_ignite.cli.main.build_parser``) when the site is built, so an
option added, renamed or removed in the code changes the page with it.

``<!-- cli-reference -->`` in the page becomes, for every command and subcommand: its usage, its
description and a table of its arguments and options (flags, value, default, help).
"""

from __future__ import annotations

import argparse
import html
import os
from collections.abc import Iterator
from typing import Any

MARKER = "<!-- cli-reference -->"


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[
        tuple[tuple[str, ...], argparse.ArgumentParser, str]]:
    """Every (command path, parser, one-line help) under ``parser``, depth first, the root first."""
    if not path:
        yield (), parser, parser.description or ""
    for action in parser._actions:  # argparse has no public accessor for its subcommands
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                if sub.prog.split()[-1] != name:  # an alias: documented under its own name
                    continue
                yield path + (name,), sub, helps.get(name, "")
                yield from commands(sub, path + (name,))


def _cell(text: str) -> str:
    text = html.escape(" ".join(text.split()), quote=False)
    return text.replace("|", "\\|").replace("[", "\\[").replace("]", "\\]").replace("*", "\\*")


def _options_table(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            flags = ", ".join(f"`{s}`" for s in action.option_strings)
        else:
            flags = f"`{action.metavar or action.dest}`"
        takes_value = action.nargs != 0
        value = ""
        if action.option_strings and takes_value:
            metavar = action.metavar or (action.dest.upper() if not action.choices else
                                         "{" + ",".join(map(str, action.choices)) + "}")
            value = f"`{metavar if isinstance(metavar, str) else ' '.join(metavar)}`"
        default = ""
        if (takes_value and action.default not in (None, argparse.SUPPRESS, [], "")
                and not isinstance(action.default, argparse.Namespace)):
            default = f"`{action.default}`"
        helptext = action.help or ""
        if "%(" in helptext:
            helptext = helptext % {**vars(action), "prog": parser.prog, "default": action.default}
        rows.append(f"| {flags} | {value} | {default} | {_cell(helptext)} |")
    if not rows:
        return []
    return ["| argument | value | default | what it does |", "|---|---|---|---|", *rows, ""]


def reference_markdown() -> str:
    """The generated part of the CLI page."""
    from tensorflow_ignite.cli.main import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # usage lines wrapped the same on every machine
    try:
        out: list[str] = []
        for path, parser, summary in commands(build_parser()):
            title = " ".join(("ignite-tf",) + path)
            out += [f"## `{title}`", ""]
            if summary and path:
                out += [_cell(summary), ""]
            out += ["```text", parser.format_usage().strip(), "```", ""]
            if parser.description and path:
                out += ["```text", parser.description.strip(), "```", ""]
            out += _options_table(parser)
            if parser.epilog:
                out += ["```text", parser.epilog.strip(), "```", ""]
        return "\n".join(out)
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, "\n" + reference_markdown())
