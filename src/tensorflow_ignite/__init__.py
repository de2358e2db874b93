"""TensorFlow on Apache Ignite.

* :class:`IgniteDataset` -- a ``tf.data`` source over Ignite caches and SQL tables.
* ``ignite://`` (alias ``igfs://``) -- a TensorFlow filesystem stored in Ignite.
* ``ignite-tf`` -- local nodes, data loading and distributed training.

The package imports lazily: ``import tensorflow_ignite`` does not import
TensorFlow until something that needs it is used, so the command line stays fast.
"""

from __future__ import annotations

from typing import Any

from .errors import *  # noqa: F401,F403  (the error hierarchy is public API)

__version__ = "0.1.0.dev0"

# ignite:// and igfs:// for TensorFlow: registered now if TensorFlow is already
# imported, else as soon as it is (an import hook; no TensorFlow import here).
from .fs import registration as _fs_registration  # noqa: E402

_fs_registration.install()

_LAZY = {
    "IgniteDataset": ("tensorflow_ignite.data.dataset", "IgniteDataset"),
    "IgniteClient": ("tensorflow_ignite.client", "IgniteClient"),
    "LocalCluster": ("tensorflow_ignite.local.cluster", "LocalCluster"),
    "write": ("tensorflow_ignite.data.writer", "write"),
    "WriteResult": ("tensorflow_ignite.data.writer", "WriteResult"),
}


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'tensorflow_ignite' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(target[0]), target[1])
    if name == "IgniteDataset":  # TF-facing: TensorFlow is imported now, so is ignite://
        _fs_registration.ensure()
    globals()[name] = value
    return value
