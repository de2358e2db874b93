"""Griffe extension: the package's docstrings are written for Sphinx (``:class:`X```, ``:func:``,
``:meth:``, ``:mod:``, ``:attr:``, ``:data:``, reST double-backtick literals); mkdocstrings reads
Markdown.  Before a docstring is parsed, each role becomes inline code naming its target (``~``
and leading dots dropped as Sphinx shows them) and each ````literal```` becomes `` `literal` ``.

Their ``Args:`` sections also document related parameters together (``host, port: ...``); such an
entry is split into one entry per name, each with the shared description, so every parameter of
the signature is listed under its own name.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj|py:\w+):`(?P<target>[^`]+)`")
_LITERAL = re.compile(r"``(?P<text>[^`]+?)``")
_SHARED = re.compile(r"^(?P<indent>\s+)(?P<names>\w+(?:,\s*\w+)+):(?P<rest>.*)$")


def _role(m: re.Match[str]) -> str:
    target = m.group("target").strip()
    explicit = re.match(r"^(?P<title>.+?)\s*<(?P<path>[^>]+)>$", target)
    if explicit:
        return f"`{explicit.group('title')}`"
    if target.startswith("~"):
        target = target[1:].rsplit(".", 1)[-1]
    return f"`{target.lstrip('.')}`"


def _split_shared(text: str) -> str:
    """``a, b: text`` in a section becomes ``a: text`` and ``b: text`` (continuation lines kept
    under each)."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = _SHARED.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        indent = m.group("indent")
        body = [m.group("rest")]
        j = i + 1
        while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > len(indent)):
            if not lines[j].strip() and (j + 1 >= len(lines) or
                                         len(lines[j + 1]) - len(lines[j + 1].lstrip()) <= len(indent)):
                break
            body.append(lines[j])
            j += 1
        for name in (n.strip() for n in m.group("names").split(",")):
            out.append(f"{indent}{name}:{body[0]}")
            out.extend(body[1:])
        i = j
    return "\n".join(out)


def convert(text: str) -> str:
    """A Sphinx-flavoured docstring as mkdocstrings' Markdown."""
    return _split_shared(_LITERAL.sub(lambda m: f"`{m.group('text')}`", _ROLE.sub(_role, text)))


class SphinxRoles(griffe.Extension):
    """Convert every docstring of the loaded objects before mkdocstrings parses it."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = convert(obj.docstring.value)
