"""A stuck or terminated test run ends, with stacks, instead of hanging CI.

Each test runs a small pytest session in a subprocess with this suite's
conftest (and so the project's pytest plugin): a test stuck in native code
(calling libc directly, as TensorFlow's runtime or a GIL wait would) ends the
run with native and Python stacks; SIGTERM ends the whole session.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path


CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"

STUCK = '''
import ctypes

def test_stuck_without_the_gil():
    ctypes.CDLL(None).pause()          # releases the GIL, never returns (no signal comes)

def test_stuck_holding_the_gil():
    ctypes.PyDLL(None).sleep(3600)     # keeps the GIL: no Python thread can run
'''


def _run(tmp_path: Path, test: str, timeout: float, faulthandler_timeout: float) -> tuple[subprocess.CompletedProcess[str], float]:
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "test_stuck.py").write_text(STUCK)
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\n"
        f"timeout = {timeout}\ntimeout_method = thread\n"
        f"faulthandler_timeout = {faulthandler_timeout}\nfaulthandler_exit_on_timeout = true\n"
    )
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"test_stuck.py::{test}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )
    return run, time.monotonic() - started


def test_a_test_stuck_in_native_code_reports_native_and_python_stacks_and_ends(tmp_path: Path) -> None:
    run, took = _run(tmp_path, "test_stuck_without_the_gil", timeout=3, faulthandler_timeout=120)
    out = run.stdout + run.stderr
    assert run.returncode == 1, out[-3000:]
    assert took < 100, f"took {took:.0f} s: the faulthandler backstop ended it, not the timer"
    assert "no progress in 3 s; native stacks" in out, out[-3000:]
    assert "pause" in out, out[-3000:]  # the native frame the test is stuck in
    assert "test_stuck.py" in out and "Timeout" in out  # then pytest-timeout's Python stacks


def test_a_test_stuck_holding_the_gil_still_ends_with_python_stacks(tmp_path: Path) -> None:
    run, took = _run(tmp_path, "test_stuck_holding_the_gil", timeout=2, faulthandler_timeout=6)
    out = run.stdout + run.stderr
    assert run.returncode != 0, out[-3000:]
    assert took < 120, f"took {took:.0f} s"
    assert "Timeout (0:00:06)" in out, out[-3000:]  # faulthandler's header
    assert "test_stuck_holding_the_gil" in out, out[-3000:]


SLOW = '''
import signal
from pathlib import Path

def test_first():
    Path("started").write_text("1")
    signal.pause()  # runs until the outer test's SIGTERM

def test_second():
    Path("second-ran").write_text("1")
'''


def test_sigterm_ends_the_whole_session_not_just_the_running_test(tmp_path: Path) -> None:
    shutil.copy(CONFTEST, tmp_path / "conftest.py")
    (tmp_path / "test_slow.py").write_text(SLOW)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_slow.py"],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "started").exists() and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
            time.sleep(0.05)  # polling for the marker, not a fixed wait
        proc.terminate()
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 128 + 15, out
    assert "terminated by signal 15" in out, out
    assert not (tmp_path / "second-ran").exists(), "the session went on after SIGTERM"
