"""Where the time goes: py-spy profiles of a contender, summarized for BENCHMARKS.md.

The contender is rebuilt in a child process from its ``spec`` (factory name and
arguments), which warms it up, says ``READY`` and waits.  Then py-spy attaches
(``record --pid``, raw collapsed stacks), the child runs the contender's timed
read ``reps`` times and exits, so the profile holds the read alone -- no
imports, no warm-up.  py-spy samples every Python thread, including the
tf.data threads that run ``from_generator`` bodies, which a main-thread
profiler (pyinstrument) cannot see; without py-spy, pyinstrument is used on the
child's main thread as a fallback.

Usage (child side; the parent is :func:`profile_contender`)::

    python -m bench.profiling '<json spec>' REPS
"""

from __future__ import annotations

import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["profile_contender", "summarize_collapsed", "tool_available"]

ROOT = Path(__file__).resolve().parents[1]
_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^():]*)(?::(?P<line>\d+))?\)$")


def tool_available() -> str | None:
    """``"py-spy"``, ``"pyinstrument"`` or None."""
    if _pyspy() is not None:
        return "py-spy"
    try:
        import pyinstrument  # noqa: F401
    except ImportError:
        return None
    return "pyinstrument"


def _pyspy() -> str | None:
    candidate = Path(sys.executable).with_name("py-spy")
    if candidate.exists():
        return str(candidate)
    return shutil.which("py-spy")


def _short(frame: str) -> str:
    m = _FRAME.match(frame.strip())
    if not m:
        return frame.strip()
    path = m.group("file")
    parts = Path(path).parts
    for anchor in ("tensorflow_ignite", "bench", "tensorflow", "pyignite", "keras", "numpy"):
        if anchor in parts:
            path = "/".join(parts[parts.index(anchor):])
            break
    else:
        path = parts[-1] if parts else path
    return f"{m.group('func')} ({path})"


# Frames that only wrap the real work: shown in neither list.
_WRAPPERS = re.compile(r"^(<module>|_child|_run_code|_run_module_as_main|Thread\._bootstrap(_inner)?|Thread\.run) ")


#: Areas a CPU sample is charged to: the innermost frame matching one of them decides.
_AREAS: list[tuple[str, re.Pattern[str]]] = [
    ("socket receive", re.compile(r"^Connection\.(_read_exact|_read_frame) \(tensorflow_ignite/client/connection")),
    ("request send / response matching", re.compile(r"\(tensorflow_ignite/client/")),
    ("decode to NumPy", re.compile(r"\(tensorflow_ignite/(protocol|data)/|\(numpy/")),
    ("TensorFlow (from_generator, tf.data, Keras)", re.compile(r"\((tensorflow|keras)/")),
    ("pyignite", re.compile(r"\(pyignite/")),
]


def read_collapsed(path: str | os.PathLike[str]) -> Iterator[tuple[list[str], int]]:
    """``(frames, samples)`` of every line of a collapsed profile (``outer;...;inner count``).

    Both py-spy's raw output and async-profiler's ``collapsed`` output use this
    format; lines that do not end in a count are skipped.
    """
    for line in Path(path).read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            yield [f for f in stack.split(";") if f], int(count)


def summarize_collapsed(path: str | os.PathLike[str], *, top: int = 22, self_top: int = 12,
                        rate: int = 0, seconds: float = 0.0) -> str:
    """Top functions of a py-spy raw (collapsed) profile: inclusive and self sample shares."""
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    areas: collections.Counter[str] = collections.Counter()
    total = 0
    for raw, n in read_collapsed(path):
        total += n
        frames = [_short(f) for f in raw]
        for f in set(frames):
            inclusive[f] += n
        if frames:
            own[frames[-1]] += n
            # The innermost frame that belongs to an area: numpy called by our decoder is
            # decoding, a traceback formatted inside a tf.data py_func is TensorFlow.
            area = next((name for f in reversed(frames) for name, rx in _AREAS if rx.search(f)), "other")
            areas[area] += n
    if not total:
        return "(no samples)"
    lines = []
    if rate and seconds:
        lines.append(f"{total} samples at {rate} Hz over {seconds:.1f} s of reading: on average "
                     f"{total / (rate * seconds):.2f} Python threads on CPU")
    lines.append("CPU samples by area: "
                 + "; ".join(f"{name} {100 * n / total:.0f}%" for name, n in areas.most_common()))
    lines.append("inclusive  function (where the samples were, callee included)")
    shown = 0
    for f, n in inclusive.most_common():
        if _WRAPPERS.match(f):
            continue
        lines.append(f"  {100 * n / total:5.1f}%  {f}")
        shown += 1
        if shown >= top:
            break
    lines.append("self       function (the innermost Python frame)")
    for f, n in own.most_common(self_top):
        lines.append(f"  {100 * n / total:5.1f}%  {f}")
    return "\n".join(lines)


def profile_contender(spec: tuple[str, list[Any], dict[str, Any]], *, reps: int = 1, rate: int = 250,
                      timeout: float = 600.0, log: Any = print, node_pids: list[int] | None = None) -> str:
    """Profile ``reps`` timed reads of the contender built from ``spec``; returns the summary text.

    With ``node_pids``, the Ignite nodes are profiled over the same reads
    (:class:`bench.nodeprofile.NodeProfile`) and their summary follows.
    """
    from .nodeprofile import NodeProfile

    tool = tool_available()
    if tool is None:
        return "(no profiler: `pip install py-spy` or `pip install pyinstrument` into the venv)"
    env = dict(os.environ, BENCH_PROFILER=tool)
    child = subprocess.Popen([sys.executable, "-m", "bench.profiling", json.dumps(spec), str(reps)],
                             cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, env=env)
    assert child.stdin is not None and child.stdout is not None
    spy: subprocess.Popen[bytes] | None = None
    try:
        deadline = time.monotonic() + timeout
        line = ""
        while time.monotonic() < deadline:
            line = child.stdout.readline()
            if not line or line.startswith("READY"):
                break
        if not line.startswith("READY"):
            child.wait(timeout=30)
            return f"(the profiled child failed before it was ready; exit {child.returncode})"
        out = Path(tempfile.mkdtemp(prefix="bench-prof-")) / "profile.txt"
        if tool == "py-spy":
            spy = subprocess.Popen([_pyspy() or "py-spy", "record", "--pid", str(child.pid), "--rate", str(rate),
                                    "--format", "raw", "--output", str(out), "--nonblocking"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            time.sleep(1.5)  # let py-spy attach before the work starts
        nodes = NodeProfile(node_pids) if node_pids else None
        if nodes is not None:
            nodes.__enter__()
        try:
            child.stdin.write("go\n")
            child.stdin.flush()
            result: dict[str, Any] = {}
            for line in child.stdout:
                if line.startswith("RESULT "):
                    result = json.loads(line[len("RESULT "):])
            child.wait(timeout=timeout)
        finally:
            if nodes is not None:
                nodes.__exit__(None, None, None)
        seconds = float(result.get("seconds", 0.0))
        if tool == "py-spy" and spy is not None:
            _, err = spy.communicate(timeout=60)
            if not out.exists():
                return f"(py-spy wrote no profile: {err.decode(errors='replace').strip()[-300:]})"
            text = summarize_collapsed(out, rate=rate, seconds=seconds)
            spy = None
        else:
            text = result.get("text", "(no pyinstrument output)")
        head = f"profiler: {tool}; {reps} timed read(s), {seconds:.2f} s"
        if result.get("rate"):
            head += f", {result['rate']:,.0f} units/s while profiled"
        if nodes is not None:
            text += "\n\nthe node(s) during the same reads:\n" + nodes.summary()
        return head + "\n" + text
    finally:
        if spy is not None and spy.poll() is None:
            spy.terminate()
            spy.wait()
        if child.poll() is None:
            child.kill()  # our own child, by its handle
            child.wait()


def _child(spec_json: str, reps: int) -> None:
    from . import contenders

    name, args, kwargs = json.loads(spec_json)
    if ":" in name:  # "bench.filesystem:checkpoint_write": a factory outside bench.contenders
        import importlib

        module, _, name = name.partition(":")
        contender = getattr(importlib.import_module(module), name)(*args, **kwargs)
    else:
        contender = getattr(contenders, name)(*args, **kwargs)
    if contender.warmup is not None:
        contender.warmup()
    print("READY", flush=True)
    sys.stdin.readline()
    profiler = None
    if os.environ.get("BENCH_PROFILER") == "pyinstrument":
        from pyinstrument import Profiler

        profiler = Profiler(interval=0.001)
        profiler.start()
    t0 = time.perf_counter()
    units = 0
    for _ in range(reps):
        units += contender.run().units
        if contender.after is not None:
            contender.after()
    seconds = time.perf_counter() - t0
    out: dict[str, Any] = {"seconds": seconds, "rate": units / seconds if seconds else 0.0}
    if profiler is not None:
        profiler.stop()
        out["text"] = profiler.output_text(unicode=False, color=False)[:6000]
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    _child(sys.argv[1], int(sys.argv[2]))
