"""Type checkers and editors see the package's public names typed, although they are imported lazily."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import tensorflow_ignite

PACKAGE = Path(tensorflow_ignite.__file__).parent
PROJECT = PACKAGE.parent.parent


def test_type_checking_imports_match_the_lazy_exports() -> None:
    """Every name of ``_EXPORTS`` is imported under ``TYPE_CHECKING`` from the same module (as itself)."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    typed: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom), ast.dump(imp)
                for alias in imp.names:
                    assert alias.asname == alias.name, f"{alias.name}: import it `as {alias.name}` (a re-export)"
                    typed[alias.name] = "." * imp.level + (imp.module or "")
    assert typed == tensorflow_ignite._EXPORTS
    assert set(typed) <= set(tensorflow_ignite.__all__)


def test_mypy_sees_the_lazy_exports_typed(tmp_path: Path) -> None:
    snippet = tmp_path / "use_api.py"
    snippet.write_text(
        "import tensorflow_ignite as ti\n"
        "reveal_type(ti.write)\n"
        "reveal_type(ti.predict)\n"
        "reveal_type(ti.IgniteDataset)\n"
        "reveal_type(ti.IgniteClient)\n"
        "wrong: int = ti.write  # a deliberate error: only reported when ti.write is typed\n"
    )
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(PROJECT / "pyproject.toml"), "--follow-imports=silent",
         "--cache-dir", str(tmp_path / "cache"), "--no-error-summary", str(snippet)],
        capture_output=True, text=True, cwd=PROJECT, timeout=300,
    )
    out = run.stdout
    revealed = [line.split("Revealed type is ", 1)[1] for line in out.splitlines() if "Revealed type is" in line]
    assert len(revealed) == 4, out + run.stderr
    write, predict, dataset, client = revealed
    assert "Any" not in write.split("->")[-1] and write.startswith('"def ('), write
    assert "PredictResult" in predict, predict
    assert "IgniteDataset" in dataset and "IgniteClient" in client, (dataset, client)
    assert 'use_api.py:6: error: Incompatible types in assignment (expression has type "def write(' in out, out
    assert run.returncode == 1, out + run.stderr
