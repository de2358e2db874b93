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

from .._lazy import lazy_getattr
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

__getattr__ = lazy_getattr(
    __name__,
    {
        "configure": ".config",
        "settings": ".config",
        "reset": ".config",
        "store_for": ".config",
        "close_stores": ".config",
        "IgniteFileStore": ".store",
        "IgniteBackend": ".backend",
        "IgniteFileSystem": ".fsspec_fs",
    },
)
