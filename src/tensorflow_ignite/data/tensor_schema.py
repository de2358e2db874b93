"""The tensor schema of a cache written by tensorflow-ignite.

Ignite's binary metadata tells a field's wire type (``byte[]``) but not the
tensor it came from (``uint8`` of shape ``[28, 28]``).  When
:func:`tensorflow_ignite.write` fills a cache it also records, in the small
system cache :data:`SCHEMA_CACHE` under the cache's name, one JSON document
describing the key and every value field as a tensor.  ``IgniteDataset`` reads
it back so the data comes out with the dtypes and shapes that went in; for
caches written by anything else the schema is derived from Ignite's metadata.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import SchemaError

if TYPE_CHECKING:
    from ..client import IgniteClient

__all__ = ["SCHEMA_CACHE", "TensorField", "TensorSchemaRecord", "save_schema", "load_schema"]

#: Cache holding one JSON schema document per data cache (key: the cache name).
SCHEMA_CACHE = "__tensorflow_ignite_schemas"
_VERSION = 1


@dataclass(frozen=True)
class TensorField:
    """One field as a tensor: NumPy dtype name, per-row shape, Ignite type code.

    ``shape`` is the shape of one row's value (``[]`` for scalars); arrays are
    stored flattened in row-major order.
    """

    name: str
    dtype: str
    shape: tuple[int, ...] = ()
    type_code: int = 0

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["shape"] = list(self.shape)
        return d


@dataclass(frozen=True)
class TensorSchemaRecord:
    """Key and value layout of a cache written by :func:`tensorflow_ignite.write`."""

    type_name: str
    key: TensorField
    fields: tuple[TensorField, ...] = field(default_factory=tuple)

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": _VERSION,
                "type_name": self.type_name,
                "key": self.key.to_json(),
                "fields": [f.to_json() for f in self.fields],
            }
        )

    @classmethod
    def from_json(cls, text: str, *, cache_name: str = "") -> "TensorSchemaRecord":
        try:
            doc = json.loads(text)
            if doc.get("version") != _VERSION:
                raise ValueError(f"unknown schema version {doc.get('version')!r}")

            def tf(d: dict[str, Any]) -> TensorField:
                return TensorField(
                    str(d["name"]),
                    str(d["dtype"]),
                    tuple(int(x) for x in d.get("shape", ())),
                    int(d.get("type_code", 0)),
                )

            return cls(str(doc["type_name"]), tf(doc["key"]), tuple(tf(f) for f in doc["fields"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise SchemaError(
                f"the tensor schema recorded for cache {cache_name!r} in {SCHEMA_CACHE!r} is unreadable: {exc}; "
                "rewrite the cache with tensorflow_ignite.write or pass schema= explicitly"
            ) from None

    def field(self, name: str) -> TensorField | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None


def save_schema(client: "IgniteClient", cache_name: str, record: TensorSchemaRecord) -> None:
    """Record ``record`` for ``cache_name`` (overwriting an older one).

    The schema cache keeps one backup, written synchronously, so losing a node
    does not lose the shapes of the caches whose schemas it held.
    """
    from ..protocol.cache_config import CacheConfiguration
    from ..protocol.codes import WriteSynchronizationMode

    config = CacheConfiguration(SCHEMA_CACHE, backups=1, write_synchronization_mode=WriteSynchronizationMode.FULL_SYNC)
    client.get_or_create_cache(config).put(cache_name, record.to_json())


def load_schema(client: "IgniteClient", cache_name: str) -> TensorSchemaRecord | None:
    """The schema recorded for ``cache_name``, or None."""
    if SCHEMA_CACHE not in client.cache_names():
        return None
    text = client.cache(SCHEMA_CACHE).get(cache_name)
    if text is None:
        return None
    return TensorSchemaRecord.from_json(str(text), cache_name=cache_name)


def delete_schema(client: "IgniteClient", cache_name: str) -> None:
    """Forget the schema of ``cache_name`` (when the cache is destroyed)."""
    if SCHEMA_CACHE in client.cache_names():
        client.cache(SCHEMA_CACHE).remove_key(cache_name)
