"""IgniteDataset and the writer: Ignite caches and SQL tables as ``tf.data`` pipelines.

Importing this package imports TensorFlow; :mod:`tensorflow_ignite` itself does
not, until ``tensorflow_ignite.IgniteDataset`` is used.

* :func:`register_credentials` -- a named credentials source for datasets
  rebuilt in other processes (:mod:`.portable`);
* :class:`BackupAndRestore` -- Keras's callback that also saves the input
  iterator, so training resumes mid-epoch (:mod:`.backup`, imports Keras).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr

if TYPE_CHECKING:
    from .backup import BackupAndRestore
    from .portable import register_credentials

__all__ = ["BackupAndRestore", "register_credentials"]

__getattr__ = lazy_getattr(__name__, {"BackupAndRestore": ".backup", "register_credentials": ".portable"})
