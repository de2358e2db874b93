"""The store's tables on the cluster of an ``ignite://`` endpoint, for its Ignite generation.

The generation is named in the settings (``IGNITE_FS_GENERATION=2|3``) or, with
``auto`` (the default), found by the handshake -- the package's one place for
that, :mod:`tensorflow_ignite.generation` (:func:`connect_client`, re-exported
here); :func:`open_tables` picks the tables of the generation the client speaks.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Any

from ...generation import connect_client, generation_of

if TYPE_CHECKING:
    from .backend import StoreTables

__all__ = ["connect_client", "is_ignite3", "open_tables"]


def is_ignite3(client: Any) -> bool:
    """Whether ``client`` speaks Ignite 3 (:func:`tensorflow_ignite.generation.generation_of`)."""
    return generation_of(client) == 3


def open_tables(
    client: Any, prefix: str, backups: int, block_size: int, stats: collections.Counter[str], *, storage: str = ""
) -> "StoreTables":
    """The store's tables on ``client``'s cluster (created if missing), in ``storage``: the storage
    profile (Ignite 3) or data region (Ignite 2) named, or the cluster's default."""
    if is_ignite3(client):
        from .ignite3 import Ignite3Tables

        return Ignite3Tables(client, prefix, backups, block_size, stats, storage=storage)
    from .ignite2 import Ignite2Tables

    return Ignite2Tables(client, prefix, backups, stats, storage=storage)
