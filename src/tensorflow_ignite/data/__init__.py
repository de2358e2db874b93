"""IgniteDataset and the writer: Ignite caches and SQL tables as ``tf.data`` pipelines.

Importing this package imports TensorFlow; :mod:`tensorflow_ignite` itself does
not, until ``tensorflow_ignite.IgniteDataset`` is used.

* :func:`register_credentials` -- a named credentials source for datasets
  rebuilt in other processes (:mod:`.portable`);
* :class:`BackupAndRestore` -- Keras's callback that also saves the input
  iterator, so training resumes mid-epoch (:mod:`.backup`, imports Keras);
* :class:`FollowDataset`, :class:`FollowStats` -- what ``IgniteDataset.follow``
  returns and its counters (:mod:`.follow_dataset`, :mod:`.follow`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr

if TYPE_CHECKING:
    from .backup import BackupAndRestore
    from .follow import FollowStats
    from .follow_dataset import FollowDataset
    from .portable import register_credentials

__all__ = ["BackupAndRestore", "FollowDataset", "FollowStats", "register_credentials"]

__getattr__ = lazy_getattr(
    __name__,
    {
        "BackupAndRestore": ".backup",
        "FollowDataset": ".follow_dataset",
        "FollowStats": ".follow",
        "register_credentials": ".portable",
    },
)
