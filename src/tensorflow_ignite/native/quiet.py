"""Keep TensorFlow's native start-up chatter out of ``ignite-tf``'s output.

Importing TensorFlow prints a few informational lines from its C++ runtime
straight to file descriptor 2 (oneDNN, CPU features, absl's "log messages
before absl::InitializeLog()" note); ``TF_CPP_MIN_LOG_LEVEL`` no longer filters
all of them.  Our commands import TensorFlow lazily, often in the middle of a
progress bar, so :func:`quiet_tensorflow_import` installs an import hook: the
first ``import tensorflow`` runs with fd 2 pointed at a temporary file, and
afterwards every captured line that is not such chatter (an error, a
traceback) is written to the real stderr.  ``ignite-tf -v`` leaves stderr
alone.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import re
import sys
import tempfile
import threading
from types import ModuleType

__all__ = ["quiet_tensorflow_import", "is_chatter", "filtered_stderr"]

# glog/absl-style info and warning lines ("I0000 00:00:1795... 2745 port.cc:153] ..."),
# absl's note about logging before initialisation, and the second line of TF's
# CPU-feature notice.
_CHATTER = re.compile(
    r"^(?:[IW]\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ \S+:\d+\] "
    r"|WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR"
    r"|To enable the following instructions: .*rebuild TensorFlow with the appropriate compiler flags\.)"
)


def is_chatter(line: str) -> bool:
    """Whether ``line`` is informational output of TensorFlow's native runtime."""
    return bool(_CHATTER.match(line))


class _QuietLoader(importlib.abc.Loader):
    def __init__(self, inner: importlib.abc.Loader) -> None:
        self._inner = inner

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        with filtered_stderr():
            self._inner.exec_module(module)


class _TensorFlowFinder(importlib.abc.MetaPathFinder):
    """Wraps the loader of the top-level ``tensorflow`` package, once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    def find_spec(self, name: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        if name != "tensorflow":
            return None
        with self._lock:
            if self in sys.meta_path:
                sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _QuietLoader(spec.loader)
        return spec


class filtered_stderr:
    """``with filtered_stderr():`` fd 2 goes to a temporary file for the duration, and every line that
    is not TensorFlow's native chatter (:func:`is_chatter`) is written to the real stderr afterwards."""

    def __enter__(self) -> None:
        sys.stderr.flush()
        self._saved = os.dup(2)
        self._tmp = tempfile.TemporaryFile()
        os.dup2(self._tmp.fileno(), 2)

    def __exit__(self, *exc: object) -> None:
        sys.stderr.flush()
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._tmp.seek(0)
        captured = self._tmp.read().decode("utf-8", "replace")
        self._tmp.close()
        kept = [line for line in captured.splitlines() if line.strip() and not is_chatter(line)]
        if kept:
            sys.stderr.write("\n".join(kept) + "\n")
            sys.stderr.flush()


def quiet_tensorflow_import() -> None:
    """Filter the native chatter of the first ``import tensorflow`` in this process (idempotent)."""
    if "tensorflow" in sys.modules or any(isinstance(f, _TensorFlowFinder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, _TensorFlowFinder())
