"""A loop over the dataset op left by an exception: the exception reaches the caller.

Leaving ``for batch in dataset`` by ``raise`` destroys the op's iterator while
the exception unwinds, and the iterator closes its Python source on that
thread.  The op used to call Python with the exception still pending: the
source's ``close()`` cleared it and CPython crashed (SIGSEGV) re-raising it in
the enclosing ``finally``.  A child process, because the failure was a crash.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import tensorflow_ignite

SRC_ROOT = Path(tensorflow_ignite.__file__).resolve().parents[1]

CHILD = textwrap.dedent('''
    import numpy as np
    import tensorflow as tf
    from tensorflow_ignite.native import data_source

    closed = []

    def pages():
        try:
            for i in range(3):
                yield {"label": np.arange(i * 4, i * 4 + 4, dtype=np.int32)}
        finally:
            closed.append("closed")  # Python run by the iterator's destruction

    ds = data_source.python_source(pages, {"label": tf.TensorSpec((None,), tf.int32)})
    for attempt in range(3):
        try:
            try:
                for batch in ds:
                    raise KeyError(f"raised in the loop {attempt}")
            finally:
                pass  # re-raises the pending exception: it must still be there
        except KeyError as exc:
            print("caught", exc.args[0], flush=True)
    print("sources closed:", len(closed), flush=True)
''')


def test_an_exception_raised_in_the_loop_reaches_the_caller_through_finally() -> None:
    env = dict(os.environ, PYTHONPATH=str(SRC_ROOT), TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, f"exit status {proc.returncode}\n{proc.stderr[-3000:]}"
    assert [line for line in proc.stdout.splitlines() if line.startswith("caught")] == [
        f"caught raised in the loop {i}" for i in range(3)
    ], proc.stdout
    assert "sources closed: 3" in proc.stdout, proc.stdout
