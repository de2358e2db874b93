"""Test-suite wiring: real Ignite nodes from the project's plugin; stack dumps of a stuck test.

A test stuck in native code (TensorFlow's runtime, the GIL, a socket) never
returns to the interpreter, so a SIGALRM-based timeout cannot fire there.  The
suite uses pytest-timeout's ``thread`` method (pyproject.toml); before it dumps
the Python stacks and ends the process, :func:`pytest_timeout_set_timer` below
also prints every thread's *native* stack (gdb), which is what tells a deadlock
between TensorFlow's threads and the GIL apart from a wait on the network.  The
nodes the run started stop by themselves once the process is gone
(``stop_nodes_with_process``).

That timer is a Python thread: if the stuck thread holds the GIL, it never
runs.  So pytest's faulthandler watchdog (``faulthandler_timeout``, a C thread)
is armed a little later: it dumps the Python stack of every thread without
taking the GIL and ends the process.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = ["tensorflow_ignite.testing.pytest_plugin"]

#: Frames shown per thread in the condensed native dump.
_NATIVE_FRAMES = 14


# A suite started in the background by a shell without job control (`make test &` in a script, as a CI
# runner may) inherits SIGINT ignored, and so would every command the tests start: Python leaves an
# ignored SIGINT ignored, so Ctrl+C (SIGINT) would not stop `ignite-tf tensorboard`, `node start` or the
# demo, and the tests that check it would hang.  A handler here is reset to the default in every child
# at exec, as a terminal starts them.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Every JVM the tests start (our nodes, stock nodes from their Spring XML, Ignite 3 nodes, the Java
# clients) compiles with C1 only.  A test node lives seconds to minutes: C2's optimised code would pay
# off long after, while its compiler threads compete with the test on two cores.  Measured on three
# nodes: ready in 7.8 s on 14 s of CPU, against 14 s on 27 s with both compilers (two Ignite 3 nodes:
# 12 s against 24 s).  The JVM itself reads the variable, so the nodes are still started exactly as a
# user starts them.  Benchmarks (bench/) do not run under pytest and keep both compilers.
os.environ.setdefault("JDK_JAVA_OPTIONS", "-XX:TieredStopAtLevel=1")
# Ignite 2 nodes map the classes an earlier node of their classpath loaded (a class-data-sharing
# archive, tensorflow_ignite.local.cds) instead of loading them again: a node was ready on 2.2-2.5 s
# of CPU instead of 3.5-4.4 s.  The first node of each classpath writes the archive when it stops.
# Under build/ (ignored by git), one directory per checkout: archives name the jars' sizes and times.
os.environ.setdefault("TF_IGNITE_CDS_DIR", str(Path(__file__).resolve().parent.parent / "build" / "cds"))


def _allow_gdb_to_attach() -> None:
    """Let a child process ptrace this one under Yama's ``ptrace_scope=1``."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(0x59616D61, ctypes.c_ulong(-1 & 0xFFFFFFFFFFFFFFFF), 0, 0, 0)  # PR_SET_PTRACER, ANY
    except (OSError, AttributeError):
        pass


def native_stacks(pid: int | None = None, timeout: float = 180.0) -> str:
    """Every thread's native backtrace of process ``pid`` (default: this one), condensed."""
    gdb = shutil.which("gdb")
    if gdb is None:
        return "(gdb is not installed: no native stacks)"
    _allow_gdb_to_attach()
    try:
        run = subprocess.run(
            [gdb, "-p", str(pid or os.getpid()), "-batch", "-nx", "-ex", "set pagination off",
             "-ex", f"thread apply all bt {_NATIVE_FRAMES}"],
            capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"(gdb failed: {exc})"
    lines: list[str] = []
    for line in run.stdout.splitlines():
        if line.startswith("Thread "):
            lines.append(line)
        elif line.startswith("#"):
            # "#3  0x... in fn (args) at file:line" -> "#3 fn  file:line"
            m = re.match(r"#(\d+)\s+(?:0x[0-9a-f]+ in )?(\S+)(?: \(.*?\))?(?: (?:at|from) (\S+))?", line)
            lines.append(f"  #{m.group(1)} {m.group(2)}  {m.group(3) or ''}" if m else f"  {line}")
    return "\n".join(lines) if lines else f"(no stacks from gdb: {run.stderr.strip()[-500:]})"


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> bool | None:
    """pytest-timeout's ``thread`` method, plus native stacks before the Python ones."""
    if settings.method != "thread":
        return None
    import pytest_timeout

    def expired() -> None:
        try:
            sys.stderr.write(f"\n+++ {item.nodeid}: no progress in {settings.timeout:.0f} s; "
                             "native stacks of every thread (gdb):\n")
            sys.stderr.write(native_stacks() + "\n")
            sys.stderr.flush()
        finally:
            pytest_timeout.timeout_timer(item, settings)  # Python stacks, then os._exit(1)

    timer = threading.Timer(settings.timeout, expired)
    timer.name = f"timeout {item.nodeid}"
    timer.daemon = True

    def cancel() -> None:
        timer.cancel()
        timer.join()

    item.cancel_timeout = cancel  # type: ignore[attr-defined]  # read by pytest-timeout's cancel hook
    timer.start()
    return True


#: Seconds spent per test file (setup, call and teardown), for the summary below.
_file_seconds: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = report.nodeid.split("::", 1)[0]
    _file_seconds[path] = _file_seconds.get(path, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Where the suite's time went, by file: CI's limit is watched by file, not by test."""
    if not _file_seconds:
        return
    terminalreporter.section("time by test file (slowest 30)")
    ranked = sorted(_file_seconds.items(), key=lambda kv: -kv[1])
    for path, seconds in ranked[:30]:
        terminalreporter.write_line(f"{seconds:8.1f}s  {path}")
    terminalreporter.write_line(f"{sum(_file_seconds.values()):8.1f}s  in {len(ranked)} files")
