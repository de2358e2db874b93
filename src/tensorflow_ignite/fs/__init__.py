"""The ``ignite://`` filesystem (alias ``igfs://``): files stored in Ignite caches.

* :class:`~.store.IgniteFileStore` -- the store (blocks + metadata, atomic publish).
* :class:`~.backend.IgniteBackend` -- what TensorFlow's ``tf.io.gfile`` calls.
* :class:`~.fsspec_fs.IgniteFileSystem` -- the fsspec filesystem (``fsspec.filesystem("ignite")``).
* :func:`configure` -- default endpoint, credentials, TLS, cache names, block size.
* :func:`register` -- make ``ignite://`` known to TensorFlow in this process
  (``import tensorflow_ignite`` does it automatically; see :mod:`.registration`).

This package imports lazily: nothing here loads the client or TensorFlow
until used.
"""

from __future__ import annotations

from typing import Any

from .registration import register

__all__ = [
    "configure",
    "settings",
    "reset",
    "register",
    "store_for",
    "close_stores",
    "IgniteFileStore",
    "IgniteBackend",
    "IgniteFileSystem",
]

_LAZY = {
    "configure": ("tensorflow_ignite.fs.config", "configure"),
    "settings": ("tensorflow_ignite.fs.config", "settings"),
    "reset": ("tensorflow_ignite.fs.config", "reset"),
    "store_for": ("tensorflow_ignite.fs.config", "store_for"),
    "close_stores": ("tensorflow_ignite.fs.config", "close_stores"),
    "IgniteFileStore": ("tensorflow_ignite.fs.store", "IgniteFileStore"),
    "IgniteBackend": ("tensorflow_ignite.fs.backend", "IgniteBackend"),
    "IgniteFileSystem": ("tensorflow_ignite.fs.fsspec_fs", "IgniteFileSystem"),
}


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(target[0]), target[1])
    globals()[name] = value
    return value
