"""Compile the native libraries: the filesystem plugin and the dataset op.

``python -m tensorflow_ignite.native.build`` compiles, next to their sources,
with ``g++`` (or ``$CXX``), TensorFlow's ``tf.sysconfig.get_compile_flags()`` /
``get_link_flags()`` and Python's include directory:

* :data:`FS_PLUGIN` -- ``_tf_ignite_fs<EXT_SUFFIX>`` from ``tf_ignite_fs.cc``,
  TensorFlow's ``ignite://`` filesystem plugin (C API only, see ``loader.py``);
* :data:`DATA_OPS` -- ``_tf_ignite_data<EXT_SUFFIX>`` from ``tf_ignite_data.cc``
  and ``tf_ignite_data_layout.cc``, the ``IgnitePyDataset`` tf.data source op
  (TensorFlow's C++ framework API, see ``data_source.py``) and the compiled
  page decoder.

Each file is both a TensorFlow library and a Python extension module.

Where the libraries come from (see :func:`tensorflow_ignite.native.loader`):

* a wheel ships them prebuilt (``make wheel`` builds them with ``--wheel``:
  relocatable, and :data:`BUILD_INFO` records the TensorFlow series they were
  compiled against); they are used when the installed TensorFlow is of that
  series, and nothing is compiled or written into the installation at run time;
* a source checkout builds them next to their sources (``make setup``) and
  rebuilds them there when an input changed;
* anywhere else, only with ``TF_IGNITE_BUILD_NATIVE=1`` (:data:`BUILD_ENV`):
  built into :func:`user_cache_dir`.

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
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tensorflow_ignite.errors import BuildInProgressError, NativeBuildError

__all__ = [
    "NativeBuildError",
    "BuildInProgressError",
    "Library",
    "FS_PLUGIN",
    "DATA_OPS",
    "LIBRARIES",
    "SOURCE",
    "MODULE_NAME",
    "library_filename",
    "package_dir",
    "user_cache_dir",
    "library_path",
    "is_up_to_date",
    "build",
    "BUILD_ENV",
    "BUILD_INFO",
    "source_checkout",
    "tensorflow_dir",
    "tensorflow_version",
    "tensorflow_series",
    "tensorflow_flags",
    "build_lock",
    "read_build_info",
    "write_build_info",
    "main",
]

#: Bump when the compiler command below changes, to force rebuilds.
RECIPE_VERSION = 2

STAMP_DIR = ".stamps"
#: ``TF_IGNITE_BUILD_NATIVE=1``: an installed package may compile its native
#: libraries (into :func:`user_cache_dir`) when it has none for this TensorFlow.
BUILD_ENV = "TF_IGNITE_BUILD_NATIVE"
#: ``0`` keeps ``import tensorflow`` from registering ``ignite://`` (read by
#: ``fs/registration.py``, which holds the same name: this module does not import ``fs/``).
AUTOREGISTER_ENV = "TF_IGNITE_FS_AUTOREGISTER"
#: Written next to prebuilt libraries by ``--wheel`` builds: what they were built against.
BUILD_INFO = "_build_info.json"
_TF_FRAMEWORK = "libtensorflow_framework.so.2"


@dataclass(frozen=True)
class Library:
    """One native library: its source, module name, exports and the headers it hangs on."""

    #: Python extension module name (also the file's stem).
    module_name: str
    #: The C++ source next to this file.
    source: Path
    #: Dynamic symbols left visible; everything else is hidden.
    exported_symbols: tuple[str, ...]
    #: TensorFlow headers whose change forces a rebuild (hashed; others follow the framework library).
    tf_headers: tuple[str, ...]
    #: What it is, for messages.
    what: str
    #: Extra compiler flags.
    extra_flags: tuple[str, ...] = ()
    #: Headers of its own next to the source (hashed with it).
    headers: tuple[Path, ...] = ()
    #: More C++ sources next to ``source``, compiled and linked into the same library.
    extra_sources: tuple[Path, ...] = ()

    @property
    def sources(self) -> tuple[Path, ...]:
        """Every C++ source of the library, ``source`` first."""
        return (self.source, *self.extra_sources)

    def source_digest(self) -> str:
        """SHA-256 of the sources and their own headers: what a rebuild is decided on."""
        h = hashlib.sha256()
        for path in (*self.sources, *self.headers):
            h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        return h.hexdigest()


_HERE = Path(__file__).resolve().parent

#: The ``ignite://`` filesystem plugin: TensorFlow's C API only (stable across TF 2.x).
FS_PLUGIN = Library(
    module_name="_tf_ignite_fs",
    source=_HERE / "tf_ignite_fs.cc",
    headers=(_HERE / "python_guard.h", _HERE / "fs_bridge.h", _HERE / "fs_files.h"),
    exported_symbols=("TF_InitPlugin", "PyInit__tf_ignite_fs"),
    tf_headers=(
        "tensorflow/c/experimental/filesystem/filesystem_interface.h",
        "tensorflow/c/tf_status.h",
        "tensorflow/c/tf_file_statistics.h",
        "tensorflow/c/c_api_macros.h",
    ),
    what="the ignite:// plugin",
)

#: The ``IgnitePyDataset`` op: TensorFlow's C++ framework API, so it is rebuilt
#: whenever the TensorFlow installation changes (the framework library's stamp).
DATA_OPS = Library(
    module_name="_tf_ignite_data",
    source=_HERE / "tf_ignite_data.cc",
    extra_sources=(
        _HERE / "tf_ignite_data_layout.cc",
        _HERE / "tf_ignite_data_scan.cc",
        _HERE / "tf_ignite_data_rows.cc",
    ),
    headers=(
        _HERE / "python_guard.h",
        _HERE / "tf_ignite_data_layout.h",
        _HERE / "tf_ignite_data_scan.h",
        _HERE / "tf_ignite_data_rows.h",
    ),
    # The op and kernel register themselves from static initializers at dlopen.
    exported_symbols=("PyInit__tf_ignite_data",),
    tf_headers=(
        "tensorflow/core/framework/dataset.h",
        "tensorflow/core/framework/op_kernel.h",
        "tensorflow/core/framework/tensor.h",
        "tensorflow/core/public/version.h",
    ),
    what="the IgniteDataset op library",
    # TensorFlow's C++ headers trip warnings of their own (deprecated tsl::mutex, ...).
    extra_flags=(
        "-Wno-deprecated-declarations",
        "-Wno-interference-size",
        "-Wno-ignored-qualifiers",
        "-Wno-dangling-pointer",
    ),
)

LIBRARIES: tuple[Library, ...] = (FS_PLUGIN, DATA_OPS)

# Backward-compatible names for the filesystem plugin.
SOURCE = FS_PLUGIN.source
MODULE_NAME = FS_PLUGIN.module_name
EXPORTED_SYMBOLS = FS_PLUGIN.exported_symbols


# -------------------------------------------------------------------- locations
def library_filename(library: Library = FS_PLUGIN) -> str:
    """File name of ``library`` for this interpreter (ABI-tagged)."""
    return library.module_name + (sysconfig.get_config_var("EXT_SUFFIX") or ".so")


def package_dir() -> Path:
    """The directory of this package: where the plugin is built by default."""
    return _HERE


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
        f"{sys.implementation.cache_tag}|{sysconfig.get_config_var('EXT_SUFFIX')}|{tensorflow_dir()}".encode()
    ).hexdigest()[:16]
    return root / "native" / key


def source_checkout() -> bool:
    """True when this package runs from a source checkout (``src/`` next to ``pyproject.toml``).

    Only there are the libraries built (and rebuilt) in the package directory.
    """
    src = _HERE.parents[1]
    return src.name == "src" and (src.parent / "pyproject.toml").is_file()


def tensorflow_version() -> str:
    """Version of the installed TensorFlow, from its package metadata (no import).

    The metadata is that of whichever distribution installed the ``tensorflow``
    package (``tensorflow``, ``tensorflow-cpu``, ``tf-nightly``, ...).
    """
    tf_dir = tensorflow_dir()
    for dist_info in sorted(tf_dir.parent.glob("*.dist-info")):
        try:
            if "tensorflow" not in (dist_info / "top_level.txt").read_text().split():
                continue
            metadata = (dist_info / "METADATA").read_text(errors="replace")
        except OSError:
            continue
        m = re.search(r"^Version:\s*(\S+)", metadata, re.MULTILINE)
        if m:
            return m.group(1)
    raise NativeBuildError(
        f"cannot tell which TensorFlow is installed at {tf_dir}: no package metadata names it; "
        "reinstall TensorFlow with pip"
    )


def tensorflow_series() -> str:
    """``"MAJOR.MINOR"`` of the installed TensorFlow (no import)."""
    version = tensorflow_version()
    m = re.match(r"(\d+)\.(\d+)", version)
    if m is None:
        raise NativeBuildError(f"cannot read TensorFlow's version {version!r}; reinstall TensorFlow")
    return f"{m.group(1)}.{m.group(2)}"


def read_build_info(output_dir: str | os.PathLike[str] | None = None) -> dict[str, object] | None:
    """The :data:`BUILD_INFO` of prebuilt libraries in ``output_dir``, or ``None``."""
    try:
        info = json.loads((Path(output_dir or package_dir()) / BUILD_INFO).read_text())
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


def write_build_info(output_dir: str | os.PathLike[str] | None = None) -> Path:
    """Record what the libraries in ``output_dir`` were built against (for a wheel)."""
    out_dir = Path(output_dir or package_dir())
    info = {
        "tensorflow_series": tensorflow_series(),
        "python_abi": sysconfig.get_config_var("EXT_SUFFIX"),
        "libraries": [library_filename(lib) for lib in LIBRARIES],
        "recipe": RECIPE_VERSION,
    }
    path = out_dir / BUILD_INFO
    path.write_text(json.dumps(info, indent=2) + "\n")
    return path


def library_path(output_dir: str | os.PathLike[str] | None = None, library: Library = FS_PLUGIN) -> Path:
    """Path of ``library`` in ``output_dir`` (default: the package directory)."""
    return Path(output_dir or package_dir()) / library_filename(library)


def _stamp_path(output_dir: Path, library: Library) -> Path:
    return output_dir / STAMP_DIR / f"{library.module_name}.json"


# -------------------------------------------------------------------- inputs
def tensorflow_dir() -> Path:
    """TensorFlow's install directory, found without importing TensorFlow."""
    spec = importlib.util.find_spec("tensorflow")
    if spec is None or not spec.submodule_search_locations:
        raise NativeBuildError(
            "TensorFlow is not installed in this environment; install it with "
            "`pip install 'tensorflow-ignite[tf]'` (or tf-cpu) to build the native libraries"
        )
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _compiler() -> list[str]:
    return shlex.split(os.environ.get("CXX") or "g++")


def _inputs(library: Library = FS_PLUGIN, relocatable: bool = False) -> dict[str, object]:
    """Everything the built library depends on, cheap to compute (no TF import)."""
    tf_dir = tensorflow_dir()
    include = tf_dir / "include"
    headers: dict[str, str] = {}
    for header in library.tf_headers:
        path = include / header
        if not path.is_file():
            raise NativeBuildError(
                f"TensorFlow's header {header} is missing under {include}; the "
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
        "library": library.module_name,
        "source_sha256": library.source_digest(),
        "python": sys.version,
        "ext_suffix": sysconfig.get_config_var("EXT_SUFFIX"),
        "tensorflow_dir": str(tf_dir),
        "tensorflow_framework": [fst.st_size, fst.st_mtime_ns],
        "tensorflow_headers": headers,
        "compiler": _compiler(),
        "relocatable": relocatable,
    }


def is_up_to_date(output_dir: str | os.PathLike[str] | None = None, library: Library = FS_PLUGIN) -> bool:
    """True if ``library`` in ``output_dir`` exists and matches the current inputs."""
    out_dir = Path(output_dir or package_dir())
    if not library_path(out_dir, library).is_file():
        return False
    try:
        stamp = json.loads(_stamp_path(out_dir, library).read_text())
    except (OSError, ValueError):
        return False
    return isinstance(stamp, dict) and stamp.get("inputs") == json.loads(json.dumps(_inputs(library)))


# -------------------------------------------------------------------- build
_held_locks: set[Path] = set()


@contextlib.contextmanager
def build_lock(out_dir: Path) -> Iterator[None]:
    """Hold the build lock of ``out_dir`` (a lock file under its ``.stamps/``) for a build.

    Builders in other processes wait for it.  A build nested in a build of this
    process -- importing TensorFlow for its flags loads the dataset op and can
    register ``ignite://``, which ask for their libraries -- raises
    :class:`BuildInProgressError` at once, whatever its directory: for the same
    directory flock would never return, and for another (the package directory,
    while ``--output-dir`` builds a wheel's libraries against a build
    environment's TensorFlow) it would compile the package's libraries against
    that TensorFlow.
    """
    lock_dir = out_dir / STAMP_DIR
    lock_dir.mkdir(parents=True, exist_ok=True)
    key = lock_dir.resolve()
    if _held_locks:
        raise BuildInProgressError("the native libraries are being built by this process already")
    with open(lock_dir / "build.lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _held_locks.add(key)
        try:
            yield
        finally:
            _held_locks.discard(key)
            fcntl.flock(lock, fcntl.LOCK_UN)


def tensorflow_flags() -> tuple[list[str], list[str]]:
    """TensorFlow's compile and link flags (``tf.sysconfig``): imports TensorFlow.

    The import does not register ``ignite://`` (which would need the very library
    being built); ``$TF_IGNITE_FS_AUTOREGISTER`` is as it was afterwards.
    """
    # Importing TensorFlow would register ignite:// (tensorflow_ignite installs an
    # import hook), which needs the very library being built: not in this process.
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


def _command(output: Path, version_script: Path, library: Library = FS_PLUGIN, relocatable: bool = False) -> list[str]:
    """The compiler command.

    The library finds ``libtensorflow_framework`` through its RPATH: TensorFlow's
    directory as installed next to this package (``$ORIGIN/../../tensorflow``),
    and, unless ``relocatable`` (wheels), the absolute directory it was built against.
    """
    compiler = _compiler()
    if shutil.which(compiler[0]) is None:
        raise NativeBuildError(
            f"C++ compiler {compiler[0]!r} not found: install g++ (C++17, e.g. "
            f"`apt-get install g++`) or point $CXX at a compiler to build {library.what}"
        )
    cflags, ldflags = tensorflow_flags()
    tf_dir = tensorflow_dir()
    return [
        *compiler,
        *cflags,
        f"-I{_python_include()}",
        "-O2",
        "-fPIC",
        "-shared",
        # Export only the entry points (library.exported_symbols).
        "-fvisibility=hidden",
        "-fvisibility-inlines-hidden",
        "-Wall",
        "-Wextra",
        "-Wno-unused-parameter",
        *library.extra_flags,
        "-o",
        str(output),
        *(str(source) for source in library.sources),
        *ldflags,
        "-Wl,-rpath,$ORIGIN/../../tensorflow",
        *([] if relocatable else [f"-Wl,-rpath,{tf_dir}"]),
        f"-Wl,--version-script={version_script}",
    ]


def build(
    output_dir: str | os.PathLike[str] | None = None,
    *,
    force: bool = False,
    verbose: bool = False,
    library: Library = FS_PLUGIN,
    relocatable: bool = False,
) -> Path:
    """Build ``library`` into ``output_dir`` (default: the package directory) if needed.

    Returns the library's path.  Raises :class:`NativeBuildError` with what to
    do when the compiler, TensorFlow's headers or Python's headers are missing
    or the compiler fails.  ``relocatable``: no absolute RPATH (for a wheel).
    """
    out_dir = Path(output_dir or package_dir()).resolve()
    target = library_path(out_dir, library)
    if not force and is_up_to_date(out_dir, library):
        return target
    with build_lock(out_dir):
        if not force and is_up_to_date(out_dir, library):  # built by a concurrent process
            return target
        inputs = _inputs(library, relocatable)
        with tempfile.TemporaryDirectory(prefix="tf_ignite_native_build_") as tmp:
            version_script = Path(tmp) / "exports.map"
            version_script.write_text(
                "{\n  global:\n"
                + "".join(f"    {name};\n" for name in library.exported_symbols)
                + "  local:\n    *;\n};\n"
            )
            partial = out_dir / f".{target.name}.{os.getpid()}.tmp"
            command = _command(partial, version_script, library, relocatable)
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
                    f"compiling {library.source.name} failed (exit {proc.returncode}):\n{tail}\n"
                    f"command: {shlex.join(command)}"
                )
            os.replace(partial, target)  # atomic: processes that loaded the old file keep it
        stamp = {
            "inputs": inputs,
            "command": command,
            "built_at": time.time(),
            "seconds": round(time.monotonic() - started, 2),
        }
        stamp_path = _stamp_path(out_dir, library)
        tmp_stamp = stamp_path.with_suffix(f".{os.getpid()}.tmp")
        tmp_stamp.write_text(json.dumps(stamp, indent=2))
        os.replace(tmp_stamp, stamp_path)
    return target


def main(argv: list[str] | None = None) -> int:
    """``python -m tensorflow_ignite.native.build [--force] [--output-dir DIR] [--verbose]``."""
    parser = argparse.ArgumentParser(
        prog="python -m tensorflow_ignite.native.build",
        description="Build the native libraries (the ignite:// TensorFlow filesystem plugin and "
        "the IgniteDataset op) if their inputs changed.",
    )
    parser.add_argument("--force", action="store_true", help="rebuild even if up to date")
    parser.add_argument("--output-dir", help=f"directory for the libraries (default: {package_dir()})")
    parser.add_argument("--verbose", "-v", action="store_true", help="print the compiler commands")
    parser.add_argument(
        "--wheel",
        action="store_true",
        help=f"build for a wheel: relocatable (no absolute RPATH), and write {BUILD_INFO}",
    )
    args = parser.parse_args(argv)
    # This command imports TensorFlow only for its build flags (and loads the op it built):
    # TensorFlow's native notices (oneDNN, CPU features, absl's "before InitializeLog") say
    # nothing about the build, so they are left out; anything else on stderr is kept.
    from .quiet import filtered_stderr

    with contextlib.nullcontext() if args.verbose else filtered_stderr():
        return _build_all(args)


def _build_all(args: argparse.Namespace) -> int:
    for library in LIBRARIES:
        started = time.monotonic()
        try:
            fresh = not args.force and is_up_to_date(args.output_dir, library)
            path = build(
                args.output_dir, force=args.force, verbose=args.verbose, library=library, relocatable=args.wheel
            )
        except NativeBuildError as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
        state = "up to date" if fresh else f"built in {time.monotonic() - started:.1f} s"
        print(f"{path} ({state})")
    # The launcher's bind fence: libc only, beside the TensorFlow libraries.
    from . import bind_fence

    started = time.monotonic()
    try:
        fresh = not args.force and bind_fence.is_up_to_date(args.output_dir)
        path = bind_fence.build(args.output_dir, force=args.force, verbose=args.verbose)
    except NativeBuildError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"{path} ({'up to date' if fresh else f'built in {time.monotonic() - started:.1f} s'})")
    if args.wheel:
        print(write_build_info(args.output_dir))
    return 0


if __name__ == "__main__":
    # Run the package's own copy of this module, not ``__main__``: importing TensorFlow for
    # its flags loads the dataset op (``import tensorflow_ignite``), whose build goes through
    # ``tensorflow_ignite.native.build``; two copies would hold two ``_held_locks`` and the
    # nested build would wait forever on the lock this process holds.
    from tensorflow_ignite.native import build as _build

    sys.exit(_build.main())
