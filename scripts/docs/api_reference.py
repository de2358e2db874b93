"""MkDocs hook: the Python API reference (reference/api.md) is generated from the packages'
export lists when the site is built, so a name added to ``tensorflow_ignite`` or
``tensorflow_ignite.ignite3`` appears without editing the page.

``<!-- api-reference -->`` in the page becomes one mkdocstrings block per public name: the lazy
export table of ``tensorflow_ignite`` (``_EXPORTS``, each name at the module that defines it), the
error hierarchy (``tensorflow_ignite.errors.__all__``) and ``tensorflow_ignite.ignite3.__all__``.
The lists are read from the source (no import: the build needs neither TensorFlow nor msgpack).
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "tensorflow_ignite"
MARKER = "<!-- api-reference -->"


def _assigned(path: Path, name: str) -> Any:
    """The literal value assigned to ``name`` at the top of ``path`` (a list or dict of strings)."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets) and node.value is not None:
            return ast.literal_eval(node.value)
    raise LookupError(f"{path}: no literal assignment to {name}")


def public_names() -> dict[str, list[tuple[str, str]]]:
    """Section title -> [(public name, the dotted path mkdocstrings documents it at)]."""
    exports: dict[str, str] = _assigned(PACKAGE / "__init__.py", "_EXPORTS")
    errors: list[str] = _assigned(PACKAGE / "errors.py", "__all__")
    ignite3: list[str] = _assigned(PACKAGE / "ignite3" / "__init__.py", "__all__")
    return {
        "tensorflow_ignite": [(f"tensorflow_ignite.{n}", f"{importlib.util.resolve_name(m, 'tensorflow_ignite')}.{n}")
                              for n, m in exports.items()],
        "tensorflow_ignite errors": [(f"tensorflow_ignite.{n}", f"tensorflow_ignite.errors.{n}") for n in errors],
        "tensorflow_ignite.ignite3": [(f"tensorflow_ignite.ignite3.{n}", f"tensorflow_ignite.ignite3.{n}")
                                      for n in ignite3],
    }


def reference_markdown() -> str:
    """The generated part of the API page."""
    intro = {
        "tensorflow_ignite": "`import tensorflow_ignite as ti`: the dataset, the client, local nodes, "
                             "writing and scoring.",
        "tensorflow_ignite errors": "Every error is importable from `tensorflow_ignite` (and "
                                    "`tensorflow_ignite.errors`); all derive from `IgniteError`.",
        "tensorflow_ignite.ignite3": "Apache Ignite 3 (`pip install 'tensorflow-ignite[ignite3]'`).",
    }
    out: list[str] = []
    for section, names in public_names().items():
        out += [f"## {section.replace(' errors', ': errors')}", "", intro[section], ""]
        for public, path in names:
            out += [f"::: {path}", "    options:", "      show_root_full_path: false",
                    f"      show_root_toc_entry: true", ""]
    return "\n".join(out)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, reference_markdown())
