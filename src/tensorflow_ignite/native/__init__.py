"""The native bridge between TensorFlow and tensorflow-ignite's Python core.

``tf_ignite_fs.cc`` is a TensorFlow filesystem plugin for ``ignite://`` and
``igfs://`` that forwards every operation to a Python backend object
(:class:`FileSystemBackend`).  :func:`register_filesystems` builds it if
needed, registers it with TensorFlow and installs the backend.

The loader functions are imported lazily so that ``python -m
tensorflow_ignite.native.build`` does not import its own module twice.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tensorflow_ignite._lazy import lazy_getattr
from tensorflow_ignite.native.backend import (
    FileStat,
    FileSystemBackend,
    LocalDirBackend,
    ReadHandle,
    WriteHandle,
)

if TYPE_CHECKING:
    from tensorflow_ignite.native.loader import get_backend, register_filesystems, set_backend

__all__ = [
    "FileStat",
    "FileSystemBackend",
    "LocalDirBackend",
    "ReadHandle",
    "WriteHandle",
    "register_filesystems",
    "set_backend",
    "get_backend",
]

__getattr__ = lazy_getattr(__name__, dict.fromkeys(("register_filesystems", "set_backend", "get_backend"), ".loader"))
