"""``IgniteClient`` for either Ignite generation: ``tensorflow_ignite.IgniteClient``.

:class:`IgniteClient` (:mod:`.client`) finds at the handshake which generation an
address speaks (:mod:`tensorflow_ignite.generation`, the package's one detection)
and does the common jobs -- SQL, tables as caches, transactions -- with the same
methods on both: on Ignite 2 it is the thin client of :mod:`tensorflow_ignite.client`
(a subclass, nothing changed), on Ignite 3 its :class:`IgniteClient3` form
(:mod:`.ignite3_form`) over :class:`~tensorflow_ignite.ignite3.client.Ignite3Client`.
"""

from __future__ import annotations

from .client import IgniteClient
from .ignite3_form import Cache3, IgniteClient3, SqlCursor3, Transaction3

__all__ = ["Cache3", "IgniteClient", "IgniteClient3", "SqlCursor3", "Transaction3"]
