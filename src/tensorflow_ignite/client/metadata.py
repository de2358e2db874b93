"""Binary type metadata, fetched from the cluster on first use and cached.

The decoder needs a type's schemas to read compact footers (field ids are not
in the object) and its field names; the dataset needs field types to build a
schema without reading a row.  :class:`MetadataCache` answers both from a
:class:`~tensorflow_ignite.protocol.values.BinaryTypeRegistry`, asking the
cluster (``BINARY_TYPE_GET``) once per unknown type or schema.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ..protocol import requests, responses
from ..protocol.codes import Op
from ..protocol.hashing import type_id as _type_id
from ..protocol.values import BinaryType, BinaryTypeRegistry

if TYPE_CHECKING:
    from .client import IgniteClient

__all__ = ["MetadataCache"]


class MetadataCache:
    """A thread-safe :class:`~tensorflow_ignite.protocol.binary.MetadataResolver` backed by the cluster."""

    def __init__(self, client: "IgniteClient") -> None:
        self._client = client
        self.registry = BinaryTypeRegistry()
        self._lock = threading.Lock()
        self._missing: set[int] = set()

    # ------------------------------------------------------------ resolver API
    def schema_field_ids(self, type_id: int, schema_id: int) -> tuple[int, ...] | None:
        ids = self.registry.schema_field_ids(type_id, schema_id)
        if ids is None:
            self.fetch(type_id, force=True)
            ids = self.registry.schema_field_ids(type_id, schema_id)
        return ids

    def field_name(self, type_id: int, fid: int) -> str | None:
        name = self.registry.field_name(type_id, fid)
        if name is None and self.get(type_id) is not None:
            name = self.registry.field_name(type_id, fid)
        return name

    def type_name(self, type_id: int) -> str | None:
        t = self.get(type_id)
        return t.type_name if t is not None else None

    # -------------------------------------------------------------- lookups
    def get(self, type_id_or_name: int | str) -> BinaryType | None:
        """The type's metadata (cached), or None when the cluster does not know it."""
        tid = _type_id(type_id_or_name) if isinstance(type_id_or_name, str) else int(type_id_or_name)
        t = self.registry.get(tid)
        if t is None and tid not in self._missing:
            t = self.fetch(tid)
        return t

    def fetch(self, type_id: int, *, force: bool = False) -> BinaryType | None:
        """Ask the cluster for ``type_id`` (always, with ``force``), merging into the cache."""
        with self._lock:
            if not force and type_id in self._missing:
                return None
            body = self._client.request(lambda rid: requests.binary_type_get(rid, type_id), Op.BINARY_TYPE_GET)
            t = responses.decode_binary_type(body)
            if t is None:
                self._missing.add(type_id)
                return None
            self._missing.discard(type_id)
            self.registry.add(t)
            return self.registry.get(type_id)

    def put(self, binary_type: BinaryType) -> None:
        """Register (or extend) a type on the cluster and in this cache."""
        if binary_type.type_name:
            name = binary_type.type_name
            self._client.request(
                lambda rid: requests.binary_type_name_put(rid, binary_type.type_id, name),
                Op.BINARY_TYPE_NAME_PUT,
            )
        self._client.request(lambda rid: requests.binary_type_put(rid, binary_type), Op.BINARY_TYPE_PUT)
        with self._lock:
            self._missing.discard(binary_type.type_id)
            self.registry.add(binary_type)
