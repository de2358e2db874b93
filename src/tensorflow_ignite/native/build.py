"""Compile the TensorFlow filesystem plugin (``tf_ignite_fs.cc``).

``python -m tensorflow_ignite.native.build`` compiles
``_tf_ignite_fs<EXT_SUFFIX>`` (e.g. ``_tf_ignite_fs.cpython-311-x86_64-linux-gnu.so``)
next to the source, with ``g++`` (or ``$CXX``), TensorFlow's
``tf.sysconfig.get_compile_flags()`` / ``get_link_flags()`` and Python's
include directory.  The same file is TensorFlow's plugin and a Python
extension module (see ``loader.py``).

Rebuilds only when something the library depends on changed: the source,
this recipe, the Python ABI, or the TensorFlow installation (its framework
library and C headers).  That check reads a stamp file (``.stamps/`` next to
the library) and hashes a few small files; it does not import TensorFlow, so
it takes milliseconds.  Concurrent builders (several workers starting at
once) serialize on a lock file and the library is replaced atomically.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tensorflow_ignite.errors import IgniteError

__all__ = [
    "NativeBuildError",
    "SOURCE",
    "MODULE_NAME",
    "library_filename",
    "package_dir",
    "user_cache_dir",
    "library_path",
    "is_up_to_date",
    "build",
    "main",
]

#: Bump when the compiler command below changes, to force rebuilds.
RECIPE_VERSION = 1

SOURCE = Path(__file__).resolve().with_name("tf_ignite_fs.cc")
MODULE_NAME = "_tf_ignite_fs"
EXPORTED_SYMBOLS = ("TF_InitPlugin", f"PyInit_{MODULE_NAME}")
STAMP_DIR = ".stamps"

# The TensorFlow C headers the shim includes (directly or not).
_TF_HEADERS = (
    "tensorflow/c/experimental/filesystem/filesystem_interface.h",
    "tensorflow/c/tf_status.h",
    "tensorflow/c/tf_file_statistics.h",
    "tensorflow/c/c_api_macros.h",
)
_TF_FRAMEWORK = "libtensorflow_framework.so.2"


class NativeBuildError(IgniteError):
    """The plugin could not be built (no compiler, no headers, compiler error)."""


# -------------------------------------------------------------------- locations
def library_filename() -> str:
    """File name of the plugin for this interpreter (ABI-tagged)."""
    return MODULE_NAME + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")


def package_dir() -> Path:
    """The directory of this package: where the plugin is built by default."""
    return SOURCE.parent


def user_cache_dir() -> Path:
    """Where the plugin is built when the package directory is read-only.

    ``$TF_IGNITE_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/tensorflow-ignite``
    (``~/.cache/tensorflow-ignite``), one sub-directory per Python ABI and
    TensorFlow installation so that environments do not overwrite each other.
    """
    base = os.environ.get("TF_IGNITE_CACHE_DIR")
    if base:
        root = Path(base)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = Path(xdg) / "tensorflow-ignite"
    key = hashlib.sha256(
        f"{sys.implementation.cache_tag}|{sysconfig.get_config_var('EXT_SUFFIX')}|"
        f"{_tensorflow_dir()}".encode()
    ).hexdigest()[:16]
    return root / "native" / key


def library_path(output_dir: str | os.PathLike[str] | None = None) -> Path:
    """Path of the plugin library in ``output_dir`` (default: the package directory)."""
    return Path(output_dir or package_dir()) / library_filename()


def _stamp_path(output_dir: Path) -> Path:
    return output_dir / STAMP_DIR / f"{MODULE_NAME}.json"


# -------------------------------------------------------------------- inputs
def _tensorflow_dir() -> Path:
    """TensorFlow's install directory, found without importing TensorFlow."""
    spec = importlib.util.find_spec("tensorflow")
    if spec is None or not spec.submodule_search_locations:
        raise NativeBuildError(
            "TensorFlow is not installed in this environment; install it with "
            "`pip install 'tensorflow-ignite[tf]'` (or tf-cpu) to build the ignite:// plugin"
        )
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _compiler() -> list[str]:
    return shlex.split(os.environ.get("CXX") or "g++")


def _inputs() -> dict[str, object]:
    """Everything the built library depends on, cheap to compute (no TF import)."""
    tf_dir = _tensorflow_dir()
    include = tf_dir / "include"
    headers: dict[str, str] = {}
    for header in _TF_HEADERS:
        path = include / header
        if not path.is_file():
            raise NativeBuildError(
                f"TensorFlow's C header {header} is missing under {include}; the "
                "TensorFlow wheel should ship it -- reinstall TensorFlow >= 2.21"
            )
        headers[header] = _sha256(path)
    framework = tf_dir / _TF_FRAMEWORK
    try:
        fst = framework.stat()
    except FileNotFoundError:
        raise NativeBuildError(f"{framework} is missing; reinstall TensorFlow") from None
    return {
        "recipe": RECIPE_VERSION,
        "source_sha256": _sha256(SOURCE),
        "python": sys.version,
        "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX"),
        "tensorflow_dir": str(tf_dir),
        "tensorflow_framework": [fst.st_size, fst.st_mtime_ns],
        "tensorflow_headers": headers,
        "compiler": _compiler(),
    }


def is_up_to_date(output_dir: str | os.PathLike[str] | None = None) -> bool:
    """True if the library in ``output_dir`` exists and matches the current inputs."""
    out_dir = Path(output_dir or package_dir())
    if not library_path(out_dir).is_file():
        return False
    try:
        stamp = json.loads(_stamp_path(out_dir).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(stamp, dict) and stamp.get("inputs") == json.loads(json.dumps(_inputs()))


# -------------------------------------------------------------------- build
_held_locks: set[Path] = set()


@contextlib.contextmanager
def _build_lock(out_dir: Path) -> Iterator[None]:
    lock_dir = out_dir / STAMP_DIR
    lock_dir.mkdir(parents=True, exist_ok=True)
    key = lock_dir.resolve()
    if key in _held_locks:
        # A build in this very process is waiting for us (e.g. importing TensorFlow
        # for its flags triggered filesystem registration): flock would never return.
        raise NativeBuildError("the TensorFlow plugin is being built by this process already")
    with open(lock_dir / "build.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _held_locks.add(key)
        try:
            yield
        finally:
            _held_locks.discard(key)
            fcntl.flock(lock, fcntl.LOCK_UN)


def _tensorflow_flags() -> tuple[list[str], list[str]]:
    # Importing TensorFlow would register ignite:// (tensorflow_ignite installs an
    # import hook), which needs the very library being built: not in this process.
    from ..fs.registration import AUTOREGISTER_ENV

    saved = os.environ.get(AUTOREGISTER_ENV)
    os.environ[AUTOREGISTER_ENV] = "0"
    try:
        import tensorflow as tf
    except ImportError as err:  # pragma: no cover - guarded by _inputs()
        raise NativeBuildError(f"cannot import TensorFlow to get its build flags: {err}") from err
    finally:
        if saved is None:
            os.environ.pop(AUTOREGISTER_ENV, None)
        else:
            os.environ[AUTOREGISTER_ENV] = saved
    return list(tf.sysconfig.get_compile_flags()), list(tf.sysconfig.get_link_flags())


def _python_include() -> Path:
    include = Path(sysconfig.get_paths()["include"])
    if not (include / "Python.h").is_file():
        raise NativeBuildError(
            f"Python.h not found in {include}: install the Python development headers "
            f"(e.g. `apt-get install python{sys.version_info.major}.{sys.version_info.minor}-dev`)"
        )
    return include


def _command(output: Path, version_script: Path) -> list[str]:
    compiler = _compiler()
    if shutil.which(compiler[0]) is None:
        raise NativeBuildError(
            f"C++ compiler {compiler[0]!r} not found: install g++ (C++17, e.g. "
            "`apt-get install g++`) or point $CXX at a compiler to build the ignite:// plugin"
        )
    cflags, ldflags = _tensorflow_flags()
    tf_dir = _tensorflow_dir()
    return [
        *compiler,
        *cflags,
        f"-I{_python_include()}",
        "-O2",
        "-fPIC",
        "-shared",
        # Export only the two entry points: TF_InitPlugin and PyInit__tf_ignite_fs.
        "-fvisibility=hidden",
        "-fvisibility-inlines-hidden",
        "-Wall",
        "-Wextra",
        "-Wno-unused-parameter",
        "-o",
        str(output),
        str(SOURCE),
        *ldflags,
        f"-Wl,-rpath,{tf_dir}",
        f"-Wl,--version-script={version_script}",
    ]


def build(
    output_dir: str | os.PathLike[str] | None = None,
    *,
    force: bool = False,
    verbose: bool = False,
) -> Path:
    """Build the plugin into ``output_dir`` (default: the package directory) if needed.

    Returns the library's path.  Raises :class:`NativeBuildError` with what to
    do when the compiler, TensorFlow's headers or Python's headers are missing
    or the compiler fails.
    """
    out_dir = Path(output_dir or package_dir()).resolve()
    target = library_path(out_dir)
    if not force and is_up_to_date(out_dir):
        return target
    with _build_lock(out_dir):
        if not force and is_up_to_date(out_dir):  # built by a concurrent process
            return target
        inputs = _inputs()
        with tempfile.TemporaryDirectory(prefix="tf_ignite_fs_build_") as tmp:
            version_script = Path(tmp) / "exports.map"
            version_script.write_text(
                "{\n  global:\n"
                + "".join(f"    {name};\n" for name in EXPORTED_SYMBOLS)
                + "  local:\n    *;\n};\n"
            )
            partial = out_dir / f".{target.name}.{os.getpid()}.tmp"
            command = _command(partial, version_script)
            if verbose:
                print(shlex.join(command), file=sys.stderr)
            started = time.monotonic()
            try:
                proc = subprocess.run(command, capture_output=True, text=True, check=False)
            except OSError as err:
                raise NativeBuildError(f"cannot run the C++ compiler {command[0]!r}: {err}") from err
            if proc.returncode != 0:
                partial.unlink(missing_ok=True)
                tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-40:])
                raise NativeBuildError(
                    f"compiling {SOURCE.name} failed (exit {proc.returncode}):\n{tail}\n"
                    f"command: {shlex.join(command)}"
                )
            os.replace(partial, target)  # atomic: processes that loaded the old file keep it
        stamp = {
            "inputs": inputs,
            "command": command,
            "built_at": time.time(),
            "seconds": round(time.monotonic() - started, 2),
        }
        stamp_path = _stamp_path(out_dir)
        tmp_stamp = stamp_path.with_suffix(f".{os.getpid()}.tmp")
        tmp_stamp.write_text(json.dumps(stamp, indent=2))
        os.replace(tmp_stamp, stamp_path)
    return target


def main(argv: list[str] | None = None) -> int:
    """``python -m tensorflow_ignite.native.build [--force] [--output-dir DIR] [--verbose]``."""
    parser = argparse.ArgumentParser(
        prog="python -m tensorflow_ignite.native.build",
        description="Build the ignite:// TensorFlow filesystem plugin if its inputs changed.",
    )
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    parser.add_argument(
        "--output-dir", help=f"directory for the library (default: {package_dir()})"
    )
    parser.add_argument("--verbose", "-v", action="store_true", help="print the compiler command")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        fresh = not args.force and is_up_to_date(args.output_dir)
        path = build(args.output_dir, force=args.force, verbose=args.verbose)
    except NativeBuildError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    state = "up to date" if fresh else f"built in {time.monotonic() - started:.1f} s"
    print(f"{path} ({state})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
