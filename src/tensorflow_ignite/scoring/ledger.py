"""The completion ledger of scoring runs: which units of a source are scored into an output, by which model.

One small cache, :data:`LEDGER_CACHE` (one backup, written synchronously, so a
record outlives one node), holds, for each output (``|`` stands for the ASCII
unit separator, ``\\x1f``):

* ``"<output>|generation"``: a random token naming the output's current
  incarnation, replaced whenever the output is created (new, or destroyed and
  created again by ``mode="overwrite"``);
* ``"<output>|<token>|<source id>|<unit>"``: a completed unit, value the
  SHA-256 of the model that scored it;
* ``"<output>|<token>|<source id>|all"``: every unit of the source completed by
  one run, value ``"<SHA-256>/<number of units>"`` -- what a run over a whole
  cache records at its end instead of a record per partition (1,024 of them),
  so the ledger stays small and quick to scan however many outputs it serves.
  It never stands beside unit records of the same source: a run of another
  model drops it before writing anything (:meth:`Ledger.completed`), and a
  run writing it first removes the unit records that the marker
  ``"<output>|<token>|<source id>|parts"`` (put before the first of them)
  says may exist;
* ``"<output>|<token>|model|<model_hash>"``: value JSON ``{"uri", "sha256"}``,
  which model a ``model_hash`` field of the output stands for.

Records under another token than the current one speak of an output that no
longer exists, so forgetting an output is one put of a new token, not a scan of
the ledger; the stale records are removed on the side while the run scores
(:meth:`Ledger.begin` and :meth:`Ledger.finish`).  Records from before the
generation token (``"<output>|<source id>|<unit>"``) are never read; the first
run of a newer version scores such an output again in full, and removes them.

A unit's record is written only after every prediction of that unit has been
acknowledged by the nodes, so a run that stops anywhere leaves recorded units
complete; units in progress are scored again on the next run (each key is
written again, so every key still ends with one entry).
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..client import Cache, IgniteClient

__all__ = ["LEDGER_CACHE", "Ledger", "ModelRecord", "models_of", "recorded_units"]

log = logging.getLogger(__name__)

#: The cache holding the completion records of scoring runs.
LEDGER_CACHE = "__tensorflow_ignite_predictions"

_SEP = "\x1f"
#: The unit part of the record that says every unit of a source is complete.
_ALL = "all"
#: The unit part of the marker saying unit records of a source may exist.
_PARTS = "parts"


@dataclass(frozen=True)
class ModelRecord:
    """A model that wrote into an output: its URI and SHA-256 (``model_hash`` is the latter's first 64 bits)."""

    uri: str
    sha256: str


def _generation_key(output: str) -> str:
    return f"{output}{_SEP}generation"


def _current(client: "IgniteClient", output: str) -> tuple["Cache", str] | None:
    """The ledger cache and ``output``'s current token, or None when nothing is recorded for it."""
    if LEDGER_CACHE not in client.cache_names():
        return None
    cache = client.cache(LEDGER_CACHE)
    token = cache.get(_generation_key(output))
    return (cache, str(token)) if token is not None else None


def models_of(client: "IgniteClient", output: str) -> dict[int, ModelRecord]:
    """``model_hash`` -> :class:`ModelRecord` of every model that has written into ``output``."""
    current = _current(client, output)
    if current is None:
        return {}
    cache, token = current
    prefix = f"{output}{_SEP}{token}{_SEP}model{_SEP}"
    out: dict[int, ModelRecord] = {}
    for k, v in cache.scan(page_size=4096):
        if isinstance(k, str) and k.startswith(prefix):
            doc = json.loads(str(v))
            out[int(k[len(prefix) :])] = ModelRecord(str(doc["uri"]), str(doc["sha256"]))
    return out


def recorded_units(client: "IgniteClient", output: str) -> dict[str, set[int]]:
    """The units recorded complete for ``output``'s current incarnation: source id -> units (any model).

    A diagnostic (it scans the ledger): how far an interrupted run got, what the next one skips.
    """
    current = _current(client, output)
    if current is None:
        return {}
    cache, token = current
    prefix = f"{output}{_SEP}{token}{_SEP}"
    out: dict[str, set[int]] = {}
    for k, v in cache.scan(page_size=4096):
        if isinstance(k, str) and k.startswith(prefix):
            source, _, unit = k[len(prefix) :].partition(_SEP)
            if source == "model":
                continue
            if unit == _PARTS:
                continue
            units = out.setdefault(source, set())
            if unit == _ALL:
                units.update(range(_whole_count(v)))
            else:
                units.add(int(unit))
    return out


def _whole_count(value: object) -> int:
    """The number of units of a ``...|all`` record's value ``"<sha256>/<units>"`` (0 if unreadable)."""
    _sha, _, count = str(value).partition("/")
    return int(count) if count.isdigit() else 0


class Ledger:
    """The records of one (output, source, model) in :data:`LEDGER_CACHE`.

    :meth:`begin` before anything is read or recorded, :meth:`finish` at the end of the run.
    """

    def __init__(
        self, client: "IgniteClient", output: str, source_id: str, model_sha256: "str | Callable[[], str]"
    ) -> None:
        """``model_sha256``: the scoring model's hash, or a function giving it (called when first needed)."""
        from ..protocol.cache_config import CacheConfiguration
        from ..protocol.codes import WriteSynchronizationMode

        self.output = output
        self.source_id = source_id
        self._model_sha256 = model_sha256
        config = CacheConfiguration(
            LEDGER_CACHE, backups=1, write_synchronization_mode=WriteSynchronizationMode.FULL_SYNC
        )
        self.client = client
        self.cache = client.get_or_create_cache(config)
        self.token = ""
        #: The ``model_hash`` records carried over from the old token by ``begin(keep_models=True)``.
        self.carried: set[int] = set()
        self._sweep: threading.Thread | None = None
        self._parts_marked = False

    @property
    def model_sha256(self) -> str:
        if callable(self._model_sha256):
            self._model_sha256 = str(self._model_sha256())
        return self._model_sha256

    def begin(self, created: bool, *, keep_models: bool = False) -> None:
        """Find the output's token; ``created``: the output is new (or is overwritten), so start a new one
        (forgetting every record about the old output, whose stale records a background sweep removes
        until :meth:`finish`).  ``keep_models``: the new token still says which model each ``model_hash``
        of the old entries stands for (an output overwritten in place keeps them until rewritten)."""
        key = _generation_key(self.output)
        if created:
            models = models_of(self.client, self.output) if keep_models else {}
            self.carried = set(models)
            self.token = secrets.token_hex(8)
            if models:
                self.cache.put_all(
                    {self._model_key(h): json.dumps({"uri": m.uri, "sha256": m.sha256}) for h, m in models.items()}
                )
            self.cache.put(key, self.token)
            self._sweep = threading.Thread(target=self._remove_stale, name=f"ledger-sweep-{self.output}", daemon=True)
            self._sweep.start()
            return
        # An output created by a version without tokens, or whose records were cleared: start one
        # (put-if-absent, so concurrent workers of one job agree on it).
        self.cache.put_if_absent(key, secrets.token_hex(8))
        self.token = str(self.cache.get(key))

    def finish(self) -> None:
        """Wait for the sweep of stale records (a failed sweep only leaves them for the next one)."""
        if self._sweep is not None:
            self._sweep.join()
            self._sweep = None

    def _remove_stale(self) -> None:
        keep = (_generation_key(self.output), f"{self.output}{_SEP}{self.token}{_SEP}")
        prefix = f"{self.output}{_SEP}"
        try:
            stale = [
                k
                for k, _v in self.cache.scan(page_size=4096)
                if isinstance(k, str) and k.startswith(prefix) and k != keep[0] and not k.startswith(keep[1])
            ]
            for start in range(0, len(stale), 4096):
                self.cache.remove_keys(stale[start : start + 4096])
        except Exception as exc:  # noqa: BLE001 -- stale records are unreachable; removing them is housekeeping
            log.warning(
                "predict: could not remove stale ledger records of output %r (%s); they are never read "
                "and the next created output removes them",
                self.output,
                exc,
            )

    def _key(self, unit: int | str) -> str:
        return f"{self.output}{_SEP}{self.token}{_SEP}{self.source_id}{_SEP}{unit}"

    def completed(self, units: Sequence[int]) -> set[int]:
        """The units recorded as scored by this model."""
        assert self.token, "begin() first"
        whole = self.cache.get(self._key(_ALL))
        if whole is not None:
            if str(whole).partition("/")[0] == self.model_sha256:
                return set(units)
            # Another model completed the whole source; this run will rewrite some of its entries, so
            # that record goes before anything is written (that model would score everything again).
            self.cache.remove_keys([self._key(_ALL)])
        done: set[int] = set()
        for start in range(0, len(units), 4096):
            chunk = units[start : start + 4096]
            found = self.cache.get_all([self._key(u) for u in chunk])
            done.update(u for u in chunk if found.get(self._key(u)) == self.model_sha256)
        return done

    def record(self, units: Iterable[int]) -> None:
        """Record ``units`` as completely scored (after their predictions were acknowledged)."""
        assert self.token, "begin() first"
        if not self._parts_marked:
            self.cache.put(self._key(_PARTS), "1")  # a later whole record removes the unit records first
            self._parts_marked = True
        self.cache.put_all({self._key(u): self.model_sha256 for u in units})

    def record_whole(self, units: int) -> None:
        """Record every one of the source's ``units`` units as completely scored, in one entry."""
        assert self.token, "begin() first"
        if self.cache.get(self._key(_PARTS)) is not None:
            # Unit records of earlier runs (of any model) would stand beside this one: removed first.
            for start in range(0, units, 4096):
                self.cache.remove_keys([self._key(u) for u in range(start, min(units, start + 4096))])
            self.cache.remove_keys([self._key(_PARTS)])
        self.cache.put(self._key(_ALL), f"{self.model_sha256}/{units}")

    def record_model(self, hash64: int, uri: str) -> None:
        assert self.token, "begin() first"
        self.cache.put(self._model_key(hash64), json.dumps({"uri": uri, "sha256": self.model_sha256}))

    def forget_carried(self, keep: int) -> None:
        """Drop the model records :meth:`begin` carried over except ``keep``'s: every entry has been
        rewritten by the model ``keep`` stands for."""
        gone = [self._model_key(h) for h in self.carried if h != keep]
        if gone:
            self.cache.remove_keys(gone)
        self.carried = set()

    def _model_key(self, hash64: int) -> str:
        return f"{self.output}{_SEP}{self.token}{_SEP}model{_SEP}{hash64}"
