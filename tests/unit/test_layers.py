"""The floors of ARCHITECTURE.md hold in the imports: every import points to its own unit or down.

``FLOORS`` declares every unit of the package (a subpackage, or a top-level module) on a floor,
lowest first.  A module may import its own unit and the units of lower floors; never a unit of its
own floor (siblings stay independent) or of a higher one.  Every import counts: module-level,
inside functions and under ``TYPE_CHECKING``.  A new subpackage or top-level module must be given
a floor here (the test names it), and the unit graph must stay free of cycles.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

import tensorflow_ignite

PACKAGE = Path(tensorflow_ignite.__file__).parent
ROOT = "tensorflow_ignite"

#: Lowest first. A unit is a subpackage or top-level module (dotted, relative to the package);
#: a module is in the unit with the longest name that contains it; "" is the package's __init__.
FLOORS: list[tuple[str, ...]] = [
    # The wire's numbers (pure enums, no imports) and the lazy-attribute helper.
    ("protocol.codes", "_lazy", "_version"),
    # The error hierarchy (a status code's class from protocol.codes).
    ("errors",),
    # Ignite 2's binary protocol: bytes to values and back, no I/O.
    ("protocol",),
    # The Ignite 2 thin client and the generation-neutral connection pieces (options, environment
    # variables, TLS, dialling and the connect/idle/request deadlines, described connections, service
    # calls); the native libraries' loader and tf.data op.
    ("client", "native"),
    # The Ignite 3 stack (on those pieces and protocol's FrameReader); the capacity guard (region
    # figures from the module's service or SQL views).
    ("ignite3", "capacity"),
    # Which generation an address speaks, found at the handshake (a client of either stack).
    ("generation",),
    # Features: datasets and writes (both generations), the ignite:// filesystem, the job launcher.
    ("data", "fs", "launcher", "either"),
    # Features built on those: scoring (on the launcher for cluster runs), local nodes.
    ("scoring", "local"),
    # The package's namespace (lazy exports of the features).
    ("",),
    # The command line (and its `demo` command), the pytest fixtures; scripts that run in other
    # processes and import the package as a user does: the demo's jobs, the workers' site hook.
    ("cli", "demo", "testing", "demo_jobs", "launcher._sitehook"),
]

#: Units that are one unit although they are two names: the `demo` command is part of the command line.
SAME_UNIT = {"demo": "cli"}

#: Arrows against the floors still to remove, each with the change that removes it (the test fails
#: once one is gone, so that its entry goes too). Nothing else may be added here.
PENDING: dict[tuple[str, str], str] = {}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join((ROOT, *parts))


def _is_module(dotted: str) -> bool:
    rel = Path(*dotted.split(".")[1:]) if "." in dotted else Path()
    return (PACKAGE / rel).with_suffix(".py").is_file() or (PACKAGE / rel / "__init__.py").is_file()


def _imports(path: Path) -> list[tuple[str, int]]:
    """Every module of the package ``path`` imports (at any depth of its code), with the line."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: list[tuple[str, int]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.extend((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.append((full if _is_module(full) else base, node.lineno))
    return [(m, line) for m, line in out if m == ROOT or m.startswith(ROOT + ".")]


UNITS = {unit: floor for floor, units in enumerate(FLOORS) for unit in units}


def _unit(module: str) -> str:
    rel = module.removeprefix(ROOT).removeprefix(".")
    parts = rel.split(".") if rel else []
    for n in range(len(parts), -1, -1):
        name = ".".join(parts[:n])
        if name in UNITS:
            return SAME_UNIT.get(name, name)
    raise AssertionError(f"{module} is in no unit of FLOORS")


def _graph() -> dict[str, dict[str, list[str]]]:
    """unit -> imported unit -> the places ("file:line") that import it."""
    graph: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(PACKAGE.rglob("*.py")):
        src = _unit(_module_name(path))
        for target, line in _imports(path):
            dst = _unit(target)
            if dst != src:
                graph[src][dst].append(f"{path.relative_to(PACKAGE)}:{line}")
    return graph


def test_every_unit_is_declared() -> None:
    children = {p.stem if p.suffix == ".py" else p.name for p in PACKAGE.iterdir()
                if (p.suffix == ".py" and p.name != "__init__.py") or (p / "__init__.py").is_file()
                or (p.is_dir() and any(p.rglob("*.py")) and p.name != "__pycache__")}
    undeclared = {c for c in children if c not in UNITS}
    assert not undeclared, f"give these a floor in FLOORS (and ARCHITECTURE.md's table): {sorted(undeclared)}"
    gone = [u for u in UNITS if u and not _is_module(f"{ROOT}.{u}") and not (PACKAGE / u.replace(".", "/")).is_dir()]
    assert not gone, f"FLOORS names units that no longer exist: {gone}"


def test_imports_point_down() -> None:
    wrong = []
    graph = _graph()
    for src, dst in PENDING:
        assert dst in graph.get(src, {}), f"{src} -> {dst} is gone: remove it from PENDING"
    for src, targets in graph.items():
        for dst, places in targets.items():
            if UNITS[dst] >= UNITS[src] and (src, dst) not in PENDING:
                how = "a sibling on the same floor" if UNITS[dst] == UNITS[src] else "a higher floor"
                wrong.append(f"{src or '(package)'} -> {dst or '(package)'} ({how}): {', '.join(sorted(set(places)))}")
    assert not wrong, "imports against the floors of ARCHITECTURE.md:\n" + "\n".join(sorted(wrong))


def test_no_cycle_between_units() -> None:
    graph = {src: {dst for dst in targets if (src, dst) not in PENDING} for src, targets in _graph().items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(unit: str) -> None:
        state[unit] = 1
        stack.append(unit)
        for nxt in sorted(graph.get(unit, ())):
            if state.get(nxt) == 1:
                cycle = [*stack[stack.index(nxt):], nxt]
                pytest.fail("import cycle between units: " + " -> ".join(u or "(package)" for u in cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[unit] = 2

    for unit in sorted(graph):
        if unit not in state:
            visit(unit)


def test_the_checker_sees_function_level_and_relative_imports(tmp_path: Path) -> None:
    """The test itself: an import inside a function, relative and of a name of a package, is seen."""
    found = dict(_imports(PACKAGE / "capacity.py"))
    assert f"{ROOT}.client.services" in found  # `from .client.services import ...` inside region_usage
    assert _unit(f"{ROOT}.ignite3.protocol.codes") == "ignite3" and _unit(f"{ROOT}.protocol.codes") == "protocol.codes"
    assert _unit(ROOT) == "" and _unit(f"{ROOT}.demo") == "cli"


def test_architecture_table_lists_the_same_floors() -> None:
    """ARCHITECTURE.md's floors table names the units of FLOORS, each on its floor (the picture stays true)."""
    text = (PACKAGE.parents[1] / "ARCHITECTURE.md").read_text()
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    table: dict[str, int] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].isdigit():
            continue
        for name in re.findall(r"`([^`]+)`", cells[1]):
            table["" if name == "__init__" else name] = int(cells[0])
    declared = {u: f for u, f in UNITS.items()}
    assert table == declared, (
        "ARCHITECTURE.md's floors table and FLOORS differ: "
        f"only in the table {sorted(set(table.items()) - set(declared.items()))}, "
        f"only in FLOORS {sorted(set(declared.items()) - set(table.items()))}"
    )
