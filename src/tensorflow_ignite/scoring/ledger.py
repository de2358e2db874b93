"""The completion ledger of scoring runs: which units of a source are scored into an output, by which model.

One small cache, :data:`LEDGER_CACHE` (one backup, written synchronously, so a
record outlives one node), holds a record per completed unit:

* key ``"<output>|<source id>|<unit>"`` (``|`` is the ASCII unit separator,
  ``\\x1f``), value the SHA-256 of the model that scored it;
* key ``"<output>|model|<model_hash>"``, value JSON ``{"uri", "sha256"}``: which
  model a ``model_hash`` field of the output stands for.

A unit's record is written only after every prediction of that unit has been
acknowledged by the nodes, so a run that stops anywhere leaves recorded units
complete; units in progress are scored again on the next run (each key is
written again, so every key still ends with one entry).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..client import IgniteClient

__all__ = ["LEDGER_CACHE", "Ledger", "ModelRecord", "models_of"]

#: The cache holding the completion records of scoring runs.
LEDGER_CACHE = "__tensorflow_ignite_predictions"

_SEP = "\x1f"


@dataclass(frozen=True)
class ModelRecord:
    """A model that wrote into an output: its URI and SHA-256 (``model_hash`` is the latter's first 64 bits)."""

    uri: str
    sha256: str


def models_of(client: "IgniteClient", output: str) -> dict[int, ModelRecord]:
    """``model_hash`` -> :class:`ModelRecord` of every model that has written into ``output``."""
    if LEDGER_CACHE not in client.cache_names():
        return {}
    prefix = f"{output}{_SEP}model{_SEP}"
    out: dict[int, ModelRecord] = {}
    for k, v in client.cache(LEDGER_CACHE).scan(page_size=4096):
        if isinstance(k, str) and k.startswith(prefix):
            doc = json.loads(str(v))
            out[int(k[len(prefix):])] = ModelRecord(str(doc["uri"]), str(doc["sha256"]))
    return out


class Ledger:
    """The records of one (output, source, model) in :data:`LEDGER_CACHE`."""

    def __init__(self, client: "IgniteClient", output: str, source_id: str, model_sha256: str) -> None:
        from ..protocol.cache_config import CacheConfiguration
        from ..protocol.codes import WriteSynchronizationMode

        self.output = output
        self.source_id = source_id
        self.model_sha256 = model_sha256
        config = CacheConfiguration(LEDGER_CACHE, backups=1,
                                    write_synchronization_mode=WriteSynchronizationMode.FULL_SYNC)
        self.cache = client.get_or_create_cache(config)

    def _key(self, unit: int) -> str:
        return f"{self.output}{_SEP}{self.source_id}{_SEP}{unit}"

    def completed(self, units: Sequence[int]) -> set[int]:
        """The units recorded as scored by this model."""
        done: set[int] = set()
        for start in range(0, len(units), 4096):
            chunk = units[start:start + 4096]
            found = self.cache.get_all([self._key(u) for u in chunk])
            done.update(u for u in chunk if found.get(self._key(u)) == self.model_sha256)
        return done

    def record(self, units: Iterable[int]) -> None:
        """Record ``units`` as completely scored (after their predictions were acknowledged)."""
        self.cache.put_all({self._key(u): self.model_sha256 for u in units})

    def record_model(self, hash64: int, uri: str) -> None:
        self.cache.put(f"{self.output}{_SEP}model{_SEP}{hash64}",
                       json.dumps({"uri": uri, "sha256": self.model_sha256}))

    def forget_output(self) -> None:
        """Remove every record about ``output`` (it is being replaced)."""
        prefix = f"{self.output}{_SEP}"
        stale = [k for k, _v in self.cache.scan(page_size=4096) if isinstance(k, str) and k.startswith(prefix)]
        for start in range(0, len(stale), 4096):
            self.cache.remove_keys(stale[start:start + 4096])
