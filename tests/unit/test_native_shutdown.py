"""Processes that used the plugin exit cleanly (subprocesses: each pays a TF import).

The dangerous moment is interpreter finalization: a TensorFlow thread
(tf.data prefetch, parallel readers) that needs the GIL then is killed by
CPython, which crashes the process or hangs the tf.data iterator that waits
for it.  The loader's exit hook closes the shim first and waits for calls in
flight; with a cap ($TF_IGNITE_FS_SHUTDOWN_TIMEOUT) that expires, the process
ends with exit status 70 instead of hanging.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tensorflow_ignite

# TensorFlow is a requirement of the test environment (the children import it, not this process).
assert importlib.util.find_spec("tensorflow") is not None, "TensorFlow is not installed"

SRC_ROOT = Path(tensorflow_ignite.__file__).resolve().parents[1]

# A backend module the child processes load through $TF_IGNITE_FS_BACKEND, as
# a TensorBoard or worker process would.
BACKEND_MODULE = '''
import os, time
from tensorflow_ignite.native.backend import LocalDirBackend

class _SlowHandle:
    def __init__(self, inner):
        self.inner = inner
    def read_into(self, offset, buffer):
        mode = os.environ.get("SLOW_READS", "")
        if mode == "sleep":
            time.sleep(0.02)
        elif mode == "spin":  # holds the GIL most of the time
            end = time.monotonic() + 1
            while time.monotonic() < end:
                pass
        return self.inner.read_into(offset, buffer)
    def close(self):
        self.inner.close()

class SlowBackend(LocalDirBackend):
    def open_read(self, path):
        return _SlowHandle(super().open_read(path))

def make():
    return SlowBackend(os.environ["STORE_DIR"])
'''

PREAMBLE = '''
import os, sys, time
import tensorflow as tf
from tensorflow_ignite.native import loader
loader.register_filesystems()  # backend from $TF_IGNITE_FS_BACKEND
native = loader.native_module()
R = "ignite://127.0.0.1:10800"
tf.io.gfile.makedirs(R + "/rec")
for shard in range(4):
    with tf.io.TFRecordWriter(f"{R}/rec/{shard}.tfrecord") as writer:
        for i in range(300):
            writer.write(b"x" * 4000)
os.environ["SLOW_READS"] = os.environ["SLOW_AFTER_SETUP"]
dataset = tf.data.TFRecordDataset(
    tf.io.gfile.glob(R + "/rec/*"), num_parallel_reads=4, buffer_size=4096
).prefetch(10_000)
iterator = iter(dataset)
next(iterator)          # TF threads now read in the background
time.sleep(0.3)
print("in flight:", native.in_flight(), flush=True)
'''


REFUSED_AFTER_SHUTDOWN = """
assert native.shutdown(10.0) is True       # what the exit hook does
assert native.is_closed() and native.in_flight() == 0
try:
    tf.io.gfile.exists(R + "/rec/0.tfrecord")
except tf.errors.CancelledError as err:
    assert "shutting down" in err.message, err.message
else:
    raise AssertionError("call after shutdown was not refused")
try:
    for _ in iterator:                     # TF threads get the same error
        pass
except tf.errors.OpError as err:
    print("iterator:", type(err).__name__, flush=True)
print("exiting", flush=True)
"""

EXIT = 'print("exiting", flush=True)\n'

# name -> (script body, slow reads mode, $TF_IGNITE_FS_SHUTDOWN_TIMEOUT)
SCENARIOS = {
    "drain_sleeping_reads": (EXIT, "sleep", ""),
    "drain_gil_holding_reads": (EXIT, "spin", ""),
    "cap_expires": (EXIT, "spin", "0.2"),
    "refused_after_shutdown": (REFUSED_AFTER_SHUTDOWN, "sleep", ""),
}


@pytest.fixture(scope="module")
def children(tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    """Runs every scenario in its own interpreter, all at once (each imports TF)."""
    running = {}
    for name, (body, slow, timeout_env) in SCENARIOS.items():
        workdir = tmp_path_factory.mktemp(name)
        (workdir / "child_backend.py").write_text(BACKEND_MODULE)
        env = dict(os.environ)
        env.update(
            PYTHONPATH=os.pathsep.join([str(SRC_ROOT), str(workdir)]),
            TF_IGNITE_FS_BACKEND="child_backend:make",
            TF_IGNITE_FS_SHUTDOWN_TIMEOUT=timeout_env,
            STORE_DIR=str(workdir / "store"),
            SLOW_AFTER_SETUP=slow,
            TF_CPP_MIN_LOG_LEVEL="2",
        )
        args = [sys.executable, "-c", textwrap.dedent(PREAMBLE) + body]
        running[name] = subprocess.Popen(
            args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    results = {}
    for name, proc in running.items():
        try:
            out, err = proc.communicate(timeout=240)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
            err += "\n[test] TIMED OUT: the child hung"
        results[name] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    return results


def check(proc: subprocess.CompletedProcess, returncode: int = 0) -> None:
    crash_markers = ("Fatal Python error", "terminate called", "Segmentation fault", "TIMED OUT")
    assert not any(m in proc.stderr for m in crash_markers), proc.stderr[-3000:]
    assert proc.returncode == returncode, proc.stderr[-3000:]
    in_flight = int(proc.stdout.split("in flight:")[1].split()[0])
    assert in_flight > 0  # the scenario really had TF threads inside the backend
    assert "exiting" in proc.stdout


def test_exit_while_tf_threads_read(children) -> None:
    """Normal exit with tf.data threads inside the backend: the hook drains them."""
    proc = children["drain_sleeping_reads"]
    check(proc)
    assert "tensorflow-ignite" not in proc.stderr


def test_exit_while_tf_threads_hold_the_gil(children) -> None:
    """Backend calls that compute (hold the GIL) for a second still finish first."""
    proc = children["drain_gil_holding_reads"]
    check(proc)
    assert "still running" not in proc.stderr


def test_exit_with_calls_stuck_past_the_cap(children) -> None:
    """With a cap that expires, the process ends with status 70 instead of hanging."""
    proc = children["cap_expires"]
    check(proc, returncode=70)
    assert "still running after $TF_IGNITE_FS_SHUTDOWN_TIMEOUT=0.2 s at exit" in proc.stderr


def test_calls_after_shutdown_are_refused(children) -> None:
    proc = children["refused_after_shutdown"]
    check(proc)
    assert "iterator: CancelledError" in proc.stdout
