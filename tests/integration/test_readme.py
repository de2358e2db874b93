"""Every ``python`` and ``bash`` block of README.md and of the documentation site's pages
(docs/), run in order against a real node.

The snippets are one session against ``localhost:10800``: README's first, then the pages in
:data:`SESSION` order (a page's snippets use what earlier pages made).  Here they run
against a fresh SQL-enabled node on a free port: every ``10800`` in a block
becomes that port, ``IGNITE_FS_HOST/PORT`` point ``ignite:///`` paths at it, and
``ignite-tf`` is this environment's script.  Python blocks share one namespace
in one interpreter (compiled with their README line numbers, so a traceback
names the file and line); bash blocks run with ``bash -euo pipefail`` in the same
working directory, in document order between them.  A block preceded by
``<!-- not-run: reason -->`` is skipped; the reason is required.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import pytest

from tensorflow_ignite.local.cluster import LocalCluster

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
RUNNABLE = ("python", "bash")
#: Few blocks may be skipped: the quickstart's make targets, fixed-port nodes, a server, Ignite 3.
MAX_NOT_RUN = 4
#: README and every page of the site, in the order their blocks run.  Every page under docs/ is
#: listed (a new page with no place here fails test_every_page_has_its_place_in_the_session).
SESSION = (
    "README.md",
    "docs/index.md",
    "docs/install.md",
    "docs/quickstart.md",
    "docs/guide/local-nodes.md",
    "docs/guide/writing.md",
    "docs/guide/datasets.md",
    "docs/guide/tf-data.md",
    "docs/guide/following.md",
    "docs/guide/sql.md",
    "docs/guide/scoring.md",
    "docs/guide/filesystem.md",
    "docs/guide/launcher.md",
    "docs/guide/ignite3.md",
    "docs/guide/own-cluster.md",
    "docs/guide/security.md",
    "docs/reference/cli.md",
    "docs/guide/migrating.md",
    "docs/guide/limitations.md",
    "docs/guide/remote-clusters.md",
    "docs/guide/troubleshooting.md",
    "docs/development.md",
    "docs/reference/api.md",
    "docs/benchmarks.md",
    "docs/reliability.md",
    "docs/architecture.md",
    "docs/changelog.md",
)

_NOT_RUN = re.compile(r"^<!--\s*not-run:\s*(?P<reason>.*?)\s*-->$")


@dataclass(frozen=True)
class Block:
    """A fenced code block of the README."""

    lang: str
    line: int  # 1-based line of the block's first source line
    source: str
    not_run: str | None
    file: str = "README.md"


def readme_blocks(text: str, file: str = "README.md") -> list[Block]:
    """The fenced blocks of ``text`` with their language and ``not-run`` reason."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = re.match(r"^```(\S*)\s*$", lines[i])
        if not fence:
            i += 1
            continue
        lang = fence.group(1)
        start = i + 1
        end = start
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        if end == len(lines):
            raise AssertionError(f"{file}:{i + 1}: code block is never closed")
        previous = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = _NOT_RUN.match(previous)
        blocks.append(Block(lang, start + 1, "\n".join(lines[start:end]) + "\n",
                            marker.group("reason") if marker else None, file))
        i = end + 1
    return blocks


def session_blocks() -> list[Block]:
    """The fenced blocks of README and of every page in :data:`SESSION`, in that order."""
    return [b for file in SESSION for b in readme_blocks((ROOT / file).read_text(), file)]


def test_every_page_has_its_place_in_the_session() -> None:
    pages = {p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md")}
    assert pages == set(SESSION) - {"README.md"}, (sorted(pages - set(SESSION)), sorted(set(SESSION) - pages))
    assert len(SESSION) == len(set(SESSION))


def test_readme_blocks_say_what_they_are() -> None:
    blocks = session_blocks()
    assert all(b.lang for b in blocks), [(b.file, b.line) for b in blocks if not b.lang]  # ```text for output
    runnable = [b for b in blocks if b.lang in RUNNABLE]
    skipped = [b for b in runnable if b.not_run is not None]
    assert all(b.not_run for b in skipped), "a not-run marker needs a reason"
    assert len(skipped) <= MAX_NOT_RUN, [(b.file, b.line, b.not_run) for b in skipped]
    assert len(runnable) - len(skipped) >= 12
    assert {b.lang for b in runnable if b.not_run is None} == set(RUNNABLE)
    # The README's first code block is a checkout's two commands (the main job, the tests);
    # installing the wheel comes right after it.
    readme = readme_blocks(README.read_text())
    assert "make demo" in readme[0].source and "make test" in readme[0].source
    assert 'pip install "tensorflow-ignite[tf]"' in readme[1].source
    # README's own-cluster example is the Quickstart's (one example, run twice in the session).
    quickstart = [b.source for b in readme_blocks((ROOT / "docs/quickstart.md").read_text()) if b.lang == "python"]
    assert [b.source for b in readme if b.lang == "python"] == quickstart[-1:]


_RUNNER = r'''
import json, subprocess, sys

ns = {"__name__": "__readme__"}
for step in json.load(open(sys.argv[1])):
    where = f"{step['file']}:{step['line']}"
    print(f"=== {where} {step['lang']}", flush=True)
    if step["lang"] == "python":
        # Padding: the traceback of a failing snippet names its file and line.
        exec(compile("\n" * (step["line"] - 1) + step["source"], step["file"], "exec"), ns)
    else:
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", step["source"]], timeout=600)
        if done.returncode:
            sys.exit(f"{where}: bash block failed with exit code {done.returncode}")
    print(f"=== ok {where}", flush=True)
'''


@pytest.fixture(scope="module")
def readme_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A node of the README's own, started as the pages tell a user to: ``ignite-tf node start`` with
    ``--follow-log READINGS`` (the follow example's cache, whose follow log the node keeps) and
    ``--sql`` (the SQL guide); stopped by ``ignite-tf node stop`` however the test ends."""
    work = tmp_path_factory.mktemp("readme-node")
    cli = [sys.executable, "-m", "tensorflow_ignite.cli.main", "node"]
    try:
        started = subprocess.run([*cli, "start", "--work-dir", str(work), "--sql", "--client-port", "0",
                                  "--follow-log", "READINGS", "--json"],
                                 capture_output=True, text=True, timeout=400, check=False)
        assert started.returncode == 0, started.stdout + started.stderr
        assert json.loads(started.stdout)["nodes"], started.stdout
        cluster = LocalCluster.load_state(work)
        assert cluster is not None  # the follow example asserts the log is kept (stats.mode == "log")
        yield cluster
    finally:
        stopped = subprocess.run([*cli, "stop", "--work-dir", str(work)], capture_output=True, text=True,
                                 timeout=120, check=False)
        left = LocalCluster.load_state(work)
        if left is not None and any(left.is_alive(m) for m in left.members):  # the command failed: stop them here
            left.stop()
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr


# README and every page in one interpreter: ~3 minutes on two idle cores, more on a loaded machine.  The
# runner's own timeout (1200 s) ends it first, with its output; pytest's default (600 s) would end the run.
@pytest.mark.timeout(1500)
def test_every_readme_snippet_runs(readme_node: LocalCluster, tmp_path: Path) -> None:
    host, port = readme_node.address()
    steps = [
        {**asdict(b), "source": b.source.replace("10800", str(port))}
        for b in session_blocks()
        if b.lang in RUNNABLE and b.not_run is None
    ]
    (tmp_path / "steps.json").write_text(json.dumps(steps))
    (tmp_path / "runner.py").write_text(_RUNNER)
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
        "IGNITE_FS_HOST": host,
        "IGNITE_FS_PORT": str(port),
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    work = tmp_path / "session"
    work.mkdir()
    proc = subprocess.run([sys.executable, str(tmp_path / "runner.py"), str(tmp_path / "steps.json")],
                          cwd=work, env=env, capture_output=True, text=True, timeout=1200)
    (tmp_path / "output.txt").write_text(proc.stdout + "\n--- stderr\n" + proc.stderr)
    assert proc.returncode == 0, f"{proc.stdout[-4000:]}\n{proc.stderr[-6000:]}"
    finished = re.findall(r"^=== ok (\S+):(\d+)$", proc.stdout, re.MULTILINE)
    assert [(f, int(n)) for f, n in finished] == [(s["file"], s["line"]) for s in steps]
    # Spot checks that the shell commands did their work (beyond exiting 0).
    out = proc.stdout
    assert "500 rows" in out and "-> cache 'DIGITS'" in out  # ignite-tf load
    assert f"worker 0 on {readme_node.members[0].name}: 2000 rows in 1024 partitions" in out  # the job's output
    assert re.search(r"^count-mnist\s+SUCCEEDED\s+0\b", out, re.MULTILINE), out[-3000:]  # ignite-tf ps
    assert 'w0: {"rows": 2000}' in out  # ignite-tf describe: the worker's reported result


def test_a_broken_snippet_fails_the_run_and_names_its_line(tmp_path: Path) -> None:
    """The runner itself: a failing python or bash block stops the run with its README line."""
    text = "intro\n\n```python\nx = 1\n```\n\n```python\nassert x == 2, 'x is 1'\n```\n\n```bash\nfalse\n```\n"
    blocks = readme_blocks(text)
    assert [(b.lang, b.line) for b in blocks] == [("python", 4), ("python", 8), ("bash", 12)]
    (tmp_path / "runner.py").write_text(_RUNNER)
    for broken, line in (([blocks[0], blocks[1]], 8), ([blocks[2]], 12)):
        (tmp_path / "steps.json").write_text(json.dumps([asdict(b) for b in broken]))
        proc = subprocess.run([sys.executable, str(tmp_path / "runner.py"), str(tmp_path / "steps.json")],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert proc.returncode != 0
        assert f'README.md", line {line}' in proc.stderr or f"README.md:{line}: bash block failed" in proc.stderr
        assert f"=== ok README.md:{line}" not in proc.stdout
