"""The bind fence library: where it is and how it is built (``bind_fence.cc``).

TensorFlow's gRPC servers listen on every interface, and TensorFlow has no
setting for that.  The launcher starts each job's processes with
:data:`FILENAME` in ``LD_PRELOAD`` and :data:`ADDRESS_ENV` set, which pins every
wildcard ``bind()`` to that one address (see the source's header, and
:mod:`tensorflow_ignite.launcher.fence` for who sets it).

Unlike the TensorFlow libraries of :mod:`.build`, this one depends on libc
alone: it is compiled with the C++ compiler, no TensorFlow or Python flags, and
is not tied to a Python ABI or TensorFlow release (one file name everywhere).
It is built by ``python -m tensorflow_ignite.native.build`` with the others
(``make setup`` in a checkout, the wheel build for installs), rebuilt when its
source or the compiler changes.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from tensorflow_ignite.errors import NativeBuildError

__all__ = ["FILENAME", "SOURCE", "ADDRESS_ENV", "fence_path", "is_up_to_date", "build"]

#: The library's file name (no ABI tag: it holds no Python or TensorFlow code).
FILENAME = "_tf_ignite_bind.so"
#: Its source, next to this file.
SOURCE = Path(__file__).resolve().parent / "bind_fence.cc"
#: The variable the library reads: the numeric address wildcard binds are pinned to.
ADDRESS_ENV = "TF_IGNITE_BIND_FENCE"

_STAMP = "_tf_ignite_bind.json"


def fence_path(output_dir: str | os.PathLike[str] | None = None) -> Path:
    """Where the library is (default: this package's directory, as installed or checked out)."""
    return Path(output_dir or SOURCE.parent) / FILENAME


def _compiler() -> list[str]:
    return shlex.split(os.environ.get("CXX") or "g++")


def _command(output: Path) -> list[str]:
    return [
        *_compiler(),
        "-O2",
        "-fPIC",
        "-shared",
        "-fvisibility=hidden",
        "-Wall",
        "-Wextra",
        "-o",
        str(output),
        str(SOURCE),
        "-ldl",
        "-lpthread",
        # Only bind() is exported: everything else stays out of the processes it is loaded into.
        "-Wl,--exclude-libs,ALL",
    ]


def _inputs() -> dict[str, object]:
    return {"source_sha256": hashlib.sha256(SOURCE.read_bytes()).hexdigest(), "compiler": _compiler()}


def is_up_to_date(output_dir: str | os.PathLike[str] | None = None) -> bool:
    """True when the library exists and was built from the current source with this compiler."""
    out_dir = Path(output_dir or SOURCE.parent)
    if not fence_path(out_dir).is_file():
        return False
    try:
        stamp = json.loads((out_dir / ".stamps" / _STAMP).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(stamp, dict) and stamp.get("inputs") == _inputs()


def build(output_dir: str | os.PathLike[str] | None = None, *, force: bool = False, verbose: bool = False) -> Path:
    """Compile the library into ``output_dir`` (default: this package's directory) if needed.

    Raises :class:`NativeBuildError` naming the compiler and its output when it fails.
    """
    out_dir = Path(output_dir or SOURCE.parent).resolve()
    target = fence_path(out_dir)
    if not force and is_up_to_date(out_dir):
        return target
    compiler = _compiler()
    if shutil.which(compiler[0]) is None:
        raise NativeBuildError(
            f"C++ compiler {compiler[0]!r} not found: install g++ (or set $CXX) to build the launcher's bind fence"
        )
    (out_dir / ".stamps").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out_dir, prefix=".bind-fence-") as tmp:
        partial = Path(tmp) / FILENAME
        command = _command(partial)
        if verbose:
            print(shlex.join(command))
        started = time.monotonic()
        proc = subprocess.run(command, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-20:])
            raise NativeBuildError(
                f"compiling {SOURCE.name} failed (exit {proc.returncode}):\n{tail}\ncommand: {shlex.join(command)}"
            )
        os.replace(partial, target)  # atomic: running jobs keep the file they loaded
    stamp = {"inputs": _inputs(), "built_at": time.time(), "seconds": round(time.monotonic() - started, 2)}
    (out_dir / ".stamps" / _STAMP).write_text(json.dumps(stamp, indent=2))
    return target
