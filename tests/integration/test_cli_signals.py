"""Commands that start child processes stop them on SIGINT, SIGTERM and SIGHUP alike.

Each case runs the real command in a subprocess, waits until it is ready (a line
it prints), sends the signal, and checks that the command exited and that the
processes it started are gone.  Every wait is bounded.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.launcher.jobs import JobClient
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.testing.waiting import wait_for

SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]


def signals_for(command: str, short: signal.Signals) -> list[object]:
    """The three signals for one command; every run sends ``short``, the other two run under ``--long``.

    All three commands stop through one mechanism (``cli.signals``), so the short form sends each
    signal to one command (tensorboard SIGINT, node start SIGTERM, demo SIGHUP) and
    test_attach_detaches_on_every_signal sends all three to one process; ``--long`` sends every signal
    to every command.
    """
    return [sig if sig is short else pytest.param(sig, marks=pytest.mark.long_only(
        f"test_cli_signals.py: {command} with {short.name}, and test_attach_detaches_on_every_signal "
        "(one mechanism, cli.signals, for every command)")) for sig in SIGNALS]


def _as_from_a_terminal() -> None:
    # A command typed in a terminal starts with SIGINT's default disposition, so Python turns Ctrl+C into
    # KeyboardInterrupt. A test run started in the background by a shell without job control (`cmd &` in a
    # script, as a CI runner may) ignores SIGINT, and its children inherit that: Python then leaves SIGINT
    # ignored, and the SIGINT cases would test nohup's semantics instead of Ctrl+C's.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def ignite_tf(*args: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONUNBUFFERED="1", TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.Popen([sys.executable, "-m", "tensorflow_ignite.cli.main", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, preexec_fn=_as_from_a_terminal)


def read_until(proc: subprocess.Popen[bytes], text: str, timeout: float) -> str:
    """The command's output until it contains ``text`` (fails after ``timeout`` s)."""
    assert proc.stdout is not None
    out = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while text.encode() not in out and time.monotonic() < deadline:
            if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            chunk = os.read(proc.stdout.fileno(), 65536)  # unbuffered: select() sees all that is left
            if not chunk:
                break
            out += chunk
    if text.encode() in out:
        return out.decode(errors="replace")
    proc.kill()
    pytest.fail(f"no {text!r} within {timeout:.0f}s; output:\n{out.decode(errors='replace')[-3000:]}")


def finish(proc: subprocess.Popen[bytes], timeout: float = 120) -> str:
    """Wait for the command to exit; its remaining output."""
    try:
        rest, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        left = children(proc.pid)  # a child left running would hold the pipe open: no end of output
        proc.kill()
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        rest, _ = proc.communicate(timeout=30)
        pytest.fail(f"the command did not exit within {timeout:.0f}s of the signal:\n"
                    f"{rest.decode(errors='replace')[-3000:]}")
    return rest.decode(errors="replace")


def gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state == "Z"


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    delay = 0.05
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} within {timeout:.0f}s")
        time.sleep(delay)  # polling, bounded by the deadline
        delay = min(delay * 1.5, 0.5)


def children(pid: int) -> list[int]:
    out: list[int] = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            out += [int(c) for c in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
        except OSError:
            pass
    return out


@pytest.fixture
def stop_leftover_nodes(tmp_path: Path) -> Iterator[Path]:
    """A work directory for the command's nodes; any node left in it is stopped afterwards."""
    work = tmp_path / "nodes"
    yield work
    cluster = LocalCluster.load_state(work)
    if cluster is not None:
        cluster.stop()


@pytest.mark.parametrize("sig", signals_for("tensorboard", signal.SIGINT), ids=lambda s: s.name)
def test_tensorboard_stops_tensorboard(ignite_node: LocalCluster, sig: signal.Signals) -> None:
    host, port = ignite_node.address()
    proc = ignite_tf("tensorboard", "--logdir", f"ignite://{host}:{port}/signals-{sig.name}", "--http-port", "0")
    read_until(proc, "TensorBoard serving", 180)
    tensorboard = children(proc.pid)
    assert len(tensorboard) == 1
    proc.send_signal(sig)
    finish(proc)
    wait_for(lambda: gone(tensorboard[0]), 30, f"TensorBoard (pid {tensorboard[0]}) still runs after {sig.name}")


@pytest.mark.parametrize("sig", signals_for("node start", signal.SIGTERM), ids=lambda s: s.name)
def test_node_start_foreground_stops_its_nodes(stop_leftover_nodes: Path, sig: signal.Signals) -> None:
    proc = ignite_tf("node", "start", "--foreground", "--work-dir", str(stop_leftover_nodes), "--client-port", "0",
                     "--heap-mb", "256", "--region-mb", "64")
    read_until(proc, "Running in the foreground", 180)
    cluster = LocalCluster.load_state(stop_leftover_nodes)
    assert cluster is not None and all(m.alive() for m in cluster.members)
    proc.send_signal(sig)
    assert "nodes stopped" in finish(proc)
    assert not any(m.alive() for m in cluster.members)


@pytest.mark.parametrize("sig", signals_for("demo", signal.SIGHUP), ids=lambda s: s.name)
def test_demo_stops_its_node(stop_leftover_nodes: Path, tmp_path: Path, sig: signal.Signals) -> None:
    proc = ignite_tf("demo", "--work-dir", str(stop_leftover_nodes), "--client-port", "0", "--epochs", "1",
                     "--no-progress", "--out-dir", str(tmp_path / "out"))
    read_until(proc, "Ignite ready at", 180)
    cluster = LocalCluster.load_state(stop_leftover_nodes)
    assert cluster is not None and cluster.members
    proc.send_signal(sig)
    rest = finish(proc)
    assert "Ignite node(s) stopped" in rest, rest[-3000:]
    assert not any(m.alive() for m in cluster.members)


def test_attach_detaches_on_every_signal(ignite_cluster: LocalCluster, cache_name: str, tmp_path: Path) -> None:
    host, port = ignite_cluster.address()
    with IgniteClient(f"{host}:{port}") as client:
        client.get_or_create_cache(cache_name).put_all({i: i for i in range(10)})
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    (job_dir / "job.py").write_text(textwrap.dedent("""
        import sys, threading
        print("job ready", flush=True)
        threading.Event().wait()  # until `ignite-tf stop`
    """))
    name = f"{cache_name}-attach"
    start = ignite_tf("start", "--host", host, "--port", str(port), "--settle", "0.2", "--detach", "--name", name,
                      cache_name, str(job_dir), "--", "python", "job.py")
    assert finish(start).strip().splitlines()[-1] == name
    try:
        for sig in SIGNALS:
            proc = ignite_tf("attach", name, "--host", host, "--port", str(port))
            read_until(proc, "job ready", 180)
            proc.send_signal(sig)
            rest = finish(proc, 60)
            assert "detached" in rest, (sig.name, rest[-2000:])
            assert proc.returncode != 0
            with JobClient.connect(host, port) as jobs:
                # attach only follows the job: it goes on (a worker may print before the supervisor has
                # started the last one and recorded RUNNING; a stopped job would never get there).
                wait_for(lambda: jobs.job(name)["state"] == "RUNNING", 60, f"{name} RUNNING after {sig.name}")
    finally:
        with JobClient.connect(host, port) as jobs:
            jobs.stop(name, wait=True, timeout=60)
