"""The layers of ARCHITECTURE.md hold in the imports: lower packages never import higher ones."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tensorflow_ignite

PACKAGE = Path(tensorflow_ignite.__file__).parent


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports (at any depth of its code), as absolute dotted names."""
    module = "tensorflow_ignite." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    if path.name == "__init__.py":
        module = module.removesuffix(".__init__")
        package = module
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            out.add(base)
            out.update(f"{base}.{alias.name}" for alias in node.names)
    return out


@pytest.mark.parametrize(("lower", "higher"), [
    ("native", "fs"), ("client", "fs"), ("protocol", "fs"),
    ("protocol", "client"), ("client", "data"), ("launcher/worker.py", "data"), ("capacity.py", "launcher"),
    ("ignite3/protocol", "client"), ("ignite3/protocol", "ignite3.connection"), ("ignite3/protocol", "data"),
    ("protocol", "ignite3"), ("client", "ignite3"),
])
def test_no_upward_imports(lower: str, higher: str) -> None:
    root = PACKAGE / lower
    files = [root] if root.suffix == ".py" else sorted(root.rglob("*.py"))
    assert files
    forbidden = f"tensorflow_ignite.{higher}"
    offenders = {str(f.relative_to(PACKAGE)): sorted(m for m in _imports(f) if m == forbidden
                                                     or m.startswith(forbidden + "."))
                 for f in files}
    assert not {f: m for f, m in offenders.items() if m}, f"{lower} imports {higher}"
