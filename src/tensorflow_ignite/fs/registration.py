"""Registering ``ignite://`` and ``igfs://`` with TensorFlow, without importing it early.

``import tensorflow_ignite`` must stay fast and must not import TensorFlow (the
command line imports the package), yet ``tf.io.gfile`` must know the schemes
as soon as TensorFlow is there.  So :func:`install` (called by the package's
``__init__``):

* registers right away when ``tensorflow`` is already in ``sys.modules``
  (``import tensorflow as tf; import tensorflow_ignite`` -- the seed's order);
* otherwise puts a tiny finder at the front of ``sys.meta_path`` that, when
  ``tensorflow`` itself is imported (directly, or through ``keras``,
  ``IgniteDataset``...), lets the normal finders produce the module spec and
  only wraps *that loader instance's* ``exec_module``: once TensorFlow's
  ``__init__`` has run, the plugin is registered and the finder removes
  itself.  The module, its spec and its loader class stay TensorFlow's own.

Failures never break ``import tensorflow``: they become a warning, and
:func:`register` (``tensorflow_ignite.fs.register()``) raises them when called
explicitly.  ``TF_IGNITE_FS_AUTOREGISTER=0`` turns the automatic paths off.

Other processes -- TensorBoard, training workers -- get the backend through
``$TF_IGNITE_FS_BACKEND=tensorflow_ignite.fs.backend:IgniteBackend``, which
:func:`register` exports, and ``ignite-tf tensorboard`` sets for its child.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from typing import Any

__all__ = ["register", "install", "ensure", "on_tensorflow", "AUTOREGISTER_ENV", "BACKEND_SPEC"]

#: Set to ``0``/``false``/``no`` to stop ``import tensorflow_ignite`` from registering.
AUTOREGISTER_ENV = "TF_IGNITE_FS_AUTOREGISTER"
#: The backend factory other processes load (``loader.BACKEND_ENV``).
BACKEND_SPEC = "tensorflow_ignite.fs.backend:IgniteBackend"
_BACKEND_ENV = "TF_IGNITE_FS_BACKEND"  # = native.loader.BACKEND_ENV, without importing it

_lock = threading.RLock()
_done = False
#: What runs once TensorFlow is imported (:func:`on_tensorflow`), in order.
_actions: list[Any] = []


def register(force: bool = False) -> Any:
    """Register ``ignite://``/``igfs://`` with TensorFlow (imports it) and install
    the Ignite backend; idempotent.  A backend already installed is kept, and
    ``$TF_IGNITE_FS_BACKEND`` naming another factory is honoured, unless
    ``force``: then the Ignite backend replaces them.  Returns the backend."""
    global _done
    # TensorFlow first: if the import hook is still installed it fires here, on
    # its own, rather than inside the loader's registration (which would then
    # find the plugin registered twice).
    import tensorflow  # noqa: F401 - imported for the hook it fires (comment above)

    with _lock:
        from ..native import loader
        from .backend import IgniteBackend

        installed = loader.get_backend()
        if isinstance(installed, IgniteBackend) or (installed is not None and not force):
            _done = True
            return installed
        spec = os.environ.get(_BACKEND_ENV, "").strip()
        if spec and spec != BACKEND_SPEC and not force:
            # This process was told which backend to use (a test double, a wrapper):
            # honour it, as loader.register_filesystems() does.
            backend = loader.register_filesystems()
        else:
            os.environ.setdefault(_BACKEND_ENV, BACKEND_SPEC)
            backend = loader.register_filesystems(IgniteBackend())
        _done = True
        return backend


def _enabled() -> bool:
    return os.environ.get(AUTOREGISTER_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def ensure() -> None:
    """Register if automatic registration is on and not done yet; warn on failure."""
    if _done or not _enabled():
        return
    try:
        register()
    except Exception as exc:  # noqa: BLE001 - never break the user's import
        warnings.warn(
            f"tensorflow-ignite could not register the ignite:// filesystem with TensorFlow: {exc}. "
            "Call tensorflow_ignite.fs.register() to see the full error.",
            RuntimeWarning,
            stacklevel=3,
        )


class _TensorFlowImportHook:
    """Registers the plugin right after ``tensorflow`` finishes importing (a
    ``sys.meta_path`` finder; not derived from ``importlib.abc`` to keep
    ``import tensorflow_ignite`` light)."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != "tensorflow":
            return None
        for finder in list(sys.meta_path):
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        original = getattr(loader, "exec_module", None)
        if original is None:
            return spec

        def exec_module(module: Any) -> None:
            if getattr(module, "__name__", None) != "tensorflow":  # a loader shared with others
                original(module)
                return
            try:
                original(module)
            finally:
                try:
                    del loader.exec_module  # back to the class's method
                except AttributeError:
                    pass
                _uninstall()
            with _lock:
                actions = list(_actions)
                _actions.clear()
            for action in actions:
                action()

        try:
            loader.exec_module = exec_module  # this loader instance only
        except (AttributeError, TypeError):
            return spec
        return spec


_hook: _TensorFlowImportHook | None = None


def _uninstall() -> None:
    global _hook
    with _lock:
        if _hook is not None:
            try:
                sys.meta_path.remove(_hook)
            except ValueError:
                pass
            _hook = None


def on_tensorflow(action: Any) -> None:
    """Run ``action()`` now if TensorFlow is imported, else right after it is (the import hook).

    ``action`` must not raise (warn instead): it runs inside the user's ``import tensorflow``.
    """
    global _hook
    with _lock:
        if "tensorflow" not in sys.modules:
            _actions.append(action)
            if _hook is None:
                _hook = _TensorFlowImportHook()
                sys.meta_path.insert(0, _hook)
            return
    action()


def install() -> None:
    """Called by ``import tensorflow_ignite``: register now if TensorFlow is loaded,
    else when it gets imported.  Cheap; imports nothing heavy."""
    if _enabled():
        on_tensorflow(ensure)
