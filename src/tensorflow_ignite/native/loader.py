"""Register the ``ignite://`` / ``igfs://`` filesystems with TensorFlow.

Call :func:`register_filesystems` once in every process that touches
``ignite://`` paths through TensorFlow -- the training script, each worker,
the TensorBoard process.  TensorFlow does not load filesystem plugins from
its ``tensorflow-plugins/`` folder by itself.

How the backend reaches the C++ shim
------------------------------------
The compiled library is both TensorFlow's plugin and a Python extension
module, ``_tf_ignite_fs``.  This module

1. finds the library (:func:`locate_library`): the wheel's prebuilt one, built
   next to its source in a checkout, or -- opt-in only -- built into
   :func:`.build.user_cache_dir`,
2. imports it as an extension module from that path,
3. hands the same path to ``tf.experimental.register_filesystem_plugin``;
   both loaders ``dlopen`` one file, so TensorFlow's plugin and the extension
   module share the shim's globals,
4. installs the backend object with ``_tf_ignite_fs.set_backend(backend)``
   (a strong reference held by the shim; replacing it is atomic under the
   GIL) and the exception mapper (:func:`.status.status_for_exception`),
5. registers an ``atexit`` hook that makes the shim refuse new calls and
   wait (GIL released) for calls in flight, before the interpreter starts
   finalizing -- a TensorFlow thread that needs the GIL after that point is
   killed by CPython, which either crashes the process or hangs TensorFlow
   objects that wait for that thread (see :func:`_shutdown_hook`).

Why not have the shim import a Python module lazily instead: the plugin is
registered by Python code anyway (no process gets it without calling this
module), an explicit object is easier to replace in tests and needs no import
machinery on TensorFlow threads, and the extension module also gives the
shutdown hook a C entry point that runs without the GIL.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.util
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from tensorflow_ignite.errors import ConfigurationError, FileSystemError
from tensorflow_ignite.native import build
from tensorflow_ignite.native.backend import FileSystemBackend
from tensorflow_ignite.native.status import status_for_exception

__all__ = [
    "BackendFactory",
    "register_filesystems",
    "set_backend",
    "get_backend",
    "native_module",
    "plugin_path",
    "locate_library",
    "BACKEND_ENV",
    "SHUTDOWN_TIMEOUT_ENV",
    "EXIT_STUCK",
]

#: ``module:callable`` returning the backend, used by :func:`register_filesystems`
#: when no backend is given and none is installed (TensorBoard, workers).
BACKEND_ENV = "TF_IGNITE_FS_BACKEND"
#: Cap, in seconds, on how long the exit hook waits for ``ignite://`` calls in
#: flight (default: as long as they take, with a progress line every 10 s).
SHUTDOWN_TIMEOUT_ENV = "TF_IGNITE_FS_SHUTDOWN_TIMEOUT"
#: Exit status when calls were still stuck after the cap (EX_SOFTWARE).
EXIT_STUCK = 70

_EXTENSION_NAME = "tensorflow_ignite.native._tf_ignite_fs"

BackendFactory = Callable[[], FileSystemBackend]

_lock = threading.RLock()
_native: ModuleType | None = None
_plugin_path: Path | None = None


def register_filesystems(
    backend_factory: BackendFactory | FileSystemBackend | None = None,
) -> FileSystemBackend:
    """Make ``ignite://`` and ``igfs://`` usable by TensorFlow in this process.

    ``backend_factory`` is a zero-argument callable returning a
    :class:`~tensorflow_ignite.native.backend.FileSystemBackend` (a backend
    instance is accepted too); its backend replaces the one already installed,
    if any.  With ``None`` the installed backend is kept, or one is created
    from ``$TF_IGNITE_FS_BACKEND`` (``package.module:factory``).

    Idempotent and thread-safe: the plugin is built if needed and registered
    with TensorFlow once per process.  Returns the installed backend.
    """
    with _lock:
        native = _ensure_plugin()
        if backend_factory is not None:
            native.set_backend(_as_backend(backend_factory, native))
        elif native.get_backend() is None:
            native.set_backend(_as_backend(_default_factory(), native))
        return native.get_backend()


def set_backend(backend: FileSystemBackend | None) -> FileSystemBackend | None:
    """Install ``backend`` (``None`` uninstalls) and return the previous one.

    Registers the plugin first if needed.  Calls already running keep the
    backend they started with.
    """
    with _lock:
        native = _ensure_plugin()
        if backend is not None:
            _check_backend(backend, native)
        return native.set_backend(backend)


def get_backend() -> FileSystemBackend | None:
    """The backend installed in this process, or ``None``."""
    with _lock:
        return None if _native is None else _native.get_backend()


def native_module() -> ModuleType:
    """The ``_tf_ignite_fs`` extension module (plugin registered)."""
    with _lock:
        return _ensure_plugin()


def plugin_path() -> Path:
    """Path of the library registered with TensorFlow."""
    with _lock:
        _ensure_plugin()
        assert _plugin_path is not None
        return _plugin_path


# ------------------------------------------------------------------ internals
def _ensure_plugin() -> ModuleType:
    global _native, _plugin_path
    if _native is not None:
        return _native
    path = locate_library()
    native = _load_extension(path)
    if not native.is_registered():
        import tensorflow as tf

        try:
            tf.experimental.register_filesystem_plugin(str(path))
        except tf.errors.AlreadyExistsError as err:
            raise FileSystemError(
                "TensorFlow already has a filesystem for ignite:// or igfs:// that is not "
                f"this plugin ({path}): another copy of tensorflow-ignite (or another "
                f"plugin) registered it first in this process. {err.message}"
            ) from err
        native.mark_registered()
    native.set_error_mapper(status_for_exception)
    atexit.register(_shutdown_hook, native)
    os.register_at_fork(after_in_child=native.after_fork_in_child)
    _native, _plugin_path = native, path
    return native


def locate_library(library: build.Library = build.FS_PLUGIN) -> Path:
    """The ``library`` to load for the installed TensorFlow; never writes into an installation.

    * source checkout: built (or rebuilt, when an input changed) next to its source,
      as ``make setup`` does;
    * installed package: the prebuilt library of the wheel when the installed
      TensorFlow is the series it was compiled against (its ``_build_info.json``);
      otherwise, only with ``TF_IGNITE_BUILD_NATIVE=1``, built into the user cache
      directory; else :class:`~tensorflow_ignite.native.build.NativeBuildError`
      saying which TensorFlow the package supports and how to get a matching one.
    """
    package_dir = build.package_dir()
    if build.source_checkout():
        return build.build(package_dir, library=library)
    prebuilt = build.library_path(package_dir, library)
    info = build.read_build_info(package_dir)
    series = build.tensorflow_series()
    if info is not None and prebuilt.is_file() and info.get("tensorflow_series") == series:
        return prebuilt
    cache_dir = build.user_cache_dir()
    if build.is_up_to_date(cache_dir, library):  # built earlier with the opt-in below
        return build.library_path(cache_dir, library)
    if os.environ.get(build.BUILD_ENV, "").strip() == "1":
        cache_dir.mkdir(parents=True, exist_ok=True)
        return build.build(cache_dir, library=library)
    if info is None or not prebuilt.is_file():
        why = (
            f"this installation of tensorflow-ignite has no prebuilt {prebuilt.name} for this "
            "Python (it was not installed from a wheel built by `make wheel`)"
        )
    else:
        why = (
            f"its prebuilt {prebuilt.name} is compiled against TensorFlow "
            f"{info.get('tensorflow_series')}.x but TensorFlow {series} is installed"
        )
    supported = info.get("tensorflow_series") if info else None
    raise build.NativeBuildError(
        f"{library.what} is not available: {why}. "
        + (
            f"Install TensorFlow {supported}.x (`pip install 'tensorflow-ignite[tf]'`), or "
            if supported
            else "Install tensorflow-ignite from its wheel, or "
        )
        + f"set {build.BUILD_ENV}=1 to compile it for this TensorFlow into {cache_dir} "
        "(needs g++ and the Python headers)"
    )


def _load_extension(path: Path) -> ModuleType:
    existing = sys.modules.get(_EXTENSION_NAME)
    if existing is not None and Path(existing.__file__ or "").resolve() == path.resolve():
        return existing
    spec = importlib.util.spec_from_file_location(_EXTENSION_NAME, path)
    if spec is None or spec.loader is None:  # pragma: no cover - path checked by build
        raise FileSystemError(f"cannot load the ignite:// plugin from {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[_EXTENSION_NAME] = module
    return module


def _check_backend(backend: object, native: ModuleType) -> None:
    missing = [name for name in native.BACKEND_METHODS if not callable(getattr(backend, name, None))]
    if missing:
        raise TypeError(f"{type(backend).__name__} is not a FileSystemBackend: missing " + ", ".join(missing))


def _as_backend(candidate: object, native: ModuleType) -> FileSystemBackend:
    if not isinstance(candidate, type) and all(
        callable(getattr(candidate, name, None)) for name in native.BACKEND_METHODS
    ):
        return candidate  # type: ignore[return-value]  # a duck-typed backend: every method checked just above
    if not callable(candidate):
        _check_backend(candidate, native)  # raises with the missing methods
    backend = candidate()  # type: ignore[operator]  # callable, or _check_backend raised just above
    _check_backend(backend, native)
    return backend


def _default_factory() -> BackendFactory:
    spec = os.environ.get(BACKEND_ENV, "").strip()
    if not spec:
        raise ConfigurationError(
            "no ignite:// backend installed: pass one to register_filesystems(...) or set "
            f"${BACKEND_ENV}=package.module:factory"
        )
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ConfigurationError(f"${BACKEND_ENV}={spec!r}: expected package.module:factory")
    target: object = importlib.import_module(module_name)
    for part in attr.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise ConfigurationError(f"${BACKEND_ENV}={spec!r} is not callable")
    return target


def _shutdown_hook(native: ModuleType) -> None:
    """At exit: close the shim and wait for calls in flight (see ``shutdown`` in the shim).

    Waits as long as calls take unless ``$TF_IGNITE_FS_SHUTDOWN_TIMEOUT`` caps
    it.  When the cap expires, letting the interpreter finalize would kill the
    threads still inside the backend and can hang TensorFlow (a tf.data
    iterator waits for them) or crash it, so the process ends right away with
    ``os._exit(EXIT_STUCK)`` after flushing stdout/stderr.
    """
    raw = os.environ.get(SHUTDOWN_TIMEOUT_ENV, "").strip()
    timeout: float | None
    try:
        timeout = float(raw) if raw else None
    except ValueError:
        timeout = None
    if native.shutdown(timeout):
        return
    sys.stderr.write(
        f"tensorflow-ignite: {native.in_flight()} ignite:// operation(s) still running "
        f"after ${SHUTDOWN_TIMEOUT_ENV}={raw} s at exit; ending the process now "
        f"(exit status {EXIT_STUCK}) because finalizing Python under them would hang or "
        "crash TensorFlow\n"
    )
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass
    os._exit(EXIT_STUCK)
