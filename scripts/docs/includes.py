"""MkDocs hook: pages that show a file of the repository root (BENCHMARKS.md, RELIABILITY.md,
ARCHITECTURE.md, CHANGELOG.md) hold ``<!-- include: NAME.md -->``; the file's text replaces it when
the site is built, so the root files stay the one copy (tests and ``bench/`` read them there).

Links between root files become links between their pages; any other relative link of an included
file (a source file, a folder) is a link into the repository, which the site does not hold, and fails
the strict build like any broken link.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
_INCLUDE = re.compile(r"^<!--\s*include:\s*(?P<name>[\w.-]+)\s*-->\s*$", re.MULTILINE)
#: Root files shown as pages: the page each one's links point at.
PAGES = {
    "README.md": "index.md",
    "BENCHMARKS.md": "benchmarks.md",
    "RELIABILITY.md": "reliability.md",
    "ARCHITECTURE.md": "architecture.md",
    "CHANGELOG.md": "changelog.md",
}
_LINK = re.compile(r"\]\((?P<file>[A-Z]+\.md)(?P<anchor>#[^)]*)?\)")


def _relative(page_path: str, target: str) -> str:
    depth = page_path.count("/")
    return "../" * depth + target


def include(page_path: str, name: str) -> str:
    """The text of root file ``name`` as it is shown on ``page_path``: links to other root files
    rewritten to their pages."""
    path = ROOT / name
    if name not in PAGES or not path.is_file():
        raise ValueError(f"{page_path}: <!-- include: {name} --> names no root file shown in the site "
                         f"(known: {', '.join(sorted(PAGES))})")
    text = path.read_text(encoding="utf-8")

    def link(m: re.Match[str]) -> str:
        target = PAGES.get(m.group("file"))
        if target is None:
            return m.group(0)
        return f"]({_relative(page_path, target)}{m.group('anchor') or ''})"

    return _LINK.sub(link, text)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace each ``<!-- include: NAME.md -->`` line with the file's text."""
    return _INCLUDE.sub(lambda m: include(page.file.src_uri, m.group("name")), markdown)
