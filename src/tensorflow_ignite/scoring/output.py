"""The output cache of a scoring run: its layout, its checks and creation, and the batched, routed writes.

Every entry has the source row's key (``long`` or ``String``) and a binary
object with one field per model output (the dtype and per-row shape the model
produces, e.g. ``scores`` ``float32[10]``) plus ``model_hash``: the first 64
bits of the model's SHA-256, the same in every entry one model wrote (the
ledger maps it back to the model's URI and full hash).  The layout is planned,
recorded and sent by the writer (:mod:`tensorflow_ignite.data.write`): the
same plan, tensor schema record, SQL table, capacity guard and put-all sender
as ``tensorflow_ignite.write``, so predictions are encoded a batch at a time
and each batch's rows go to the primary node of their keys, one put-all per
node in flight.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..capacity import CapacityGuard
from ..data.tensor_schema import load_schema, save_schema
from ..data.write.cache import default_type_name, existing_sql_table, prepare_cache, sql_engine_available
from ..data.write.plan import check_append_schema, estimate_row_bytes, make_plan
from ..data.write.sender import PutAllSender, send_all
from ..data.write.sources import open_source
from ..errors import ConfigurationError, OutputLayoutError, ServerError

if TYPE_CHECKING:
    import uuid

    from ..client import IgniteClient

__all__ = ["KEY", "MODEL_HASH", "OutputCache", "CREATED", "REPLACED", "KEPT"]

#: What :meth:`OutputCache.open` did with the output cache: created it (new, or destroyed and created
#: again), kept it to overwrite its entries in place, or kept it to add to (skip-existing).
CREATED, REPLACED, KEPT = "created", "replaced in place", "kept"

#: The key column of the output (the source row's key).
KEY = "key"
#: The field holding which model wrote an entry.
MODEL_HASH = "model_hash"

_BATCH_BYTES = 4 << 20


class _CountingSender(PutAllSender):
    """The writer's sender, counting the rows sent to each node (the summary's per-node figures).

    A run writes each source key once, so put-alls may overtake each other: a few in flight per
    node keep the scoring thread from waiting on every previous batch's answer.
    """

    max_in_flight = 4

    def __init__(self, client: "IgniteClient", cache_name: str) -> None:
        super().__init__(client, cache_name)
        self.rows_per_node: dict[str, int] = {}

    def submit(self, rows: int, payload: bytes | bytearray | memoryview, node: "uuid.UUID | None" = None) -> None:
        name = str(node) if node is not None else "any"
        self.rows_per_node[name] = self.rows_per_node.get(name, 0) + rows
        super().submit(rows, payload, node)


class OutputCache:
    """The planned output of one run; :meth:`check` before anything is written, :meth:`open`, :meth:`send`."""

    def __init__(
        self,
        client: "IgniteClient",
        name: str,
        sample: Mapping[str, np.ndarray],
        key_sample: np.ndarray,
        model_hash: "int | Callable[[], int]",
    ) -> None:
        """``model_hash``: the value of every entry's ``model_hash`` field, or a function giving it (called
        at the first :meth:`send`, so the model's hash may still be computing while the output is opened)."""
        clash = [n for n in sample if n.lower() in (KEY, MODEL_HASH)]
        if clash:
            raise ConfigurationError(
                f"model output(s) {clash} clash with the output's own fields "
                f"{KEY!r}/{MODEL_HASH!r}; rename the model's outputs"
            )
        self.client = client
        self.name = name
        self._model_hash = model_hash
        self.outputs = list(sample)
        columns = {KEY: key_sample, **sample, MODEL_HASH: np.zeros(len(key_sample), dtype=np.int64)}
        self.plan = make_plan(open_source(columns, None, KEY), KEY, default_type_name(name))
        self.row_bytes = estimate_row_bytes(self.plan, columns)
        self.sender: _CountingSender | None = None
        self.guard: CapacityGuard | None = None
        self.sql_table: str | None = None
        self.used: set[str] = set()

    @property
    def model_hash(self) -> int:
        """The ``model_hash`` field of every entry this run writes."""
        if callable(self._model_hash):
            self._model_hash = int(self._model_hash())
        return self._model_hash

    @property
    def exists(self) -> bool:
        return self.name in self.client.cache_names()

    def check(self) -> None:
        """Refuse an existing output of another layout (:class:`OutputLayoutError`); writes nothing."""
        if not self.exists:
            return
        recorded = load_schema(self.client, self.name)
        if recorded is None:
            size = self.client.cache(self.name).size()
            if size:
                raise OutputLayoutError(
                    f"output cache {self.name!r} exists and holds {size:,} entries not written by "
                    "tensorflow_ignite (no tensor schema recorded); score into another cache or pass "
                    "mode='overwrite' to replace it"
                )
            return
        try:
            check_append_schema(self.name, recorded, self.plan.record())
        except ConfigurationError as exc:
            raise OutputLayoutError(
                f"output cache {self.name!r} holds entries of another layout than this model's predictions: {exc}"
            ) from None

    def open(
        self,
        *,
        overwrite: bool,
        backups: int,
        atomicity: int,
        write_sync: int,
        sql: bool,
        expected_rows: int | None,
        in_place: bool = False,
    ) -> str:
        """Create the cache (destroyed first with ``overwrite``), register the type, record the schema.

        With ``overwrite`` and ``in_place``, an existing output of this layout and configuration is kept
        and its entries are overwritten key by key (the caller removes the keys its source no longer
        has, :meth:`remove_absent`): no destroy, and every write an update rather than an insert into
        new partitions, which costs the nodes about half as much; applications reading the output keep
        seeing a prediction for every key meanwhile.  Returns :data:`CREATED` (the cache holds nothing
        from earlier runs), :data:`REPLACED` or :data:`KEPT`.
        """
        existing = self.exists
        replace = existing and overwrite and in_place and self._replaceable(backups, atomicity, write_sync, sql)
        kept = existing and (not overwrite or replace)
        copies = 1 + backups
        if kept:
            copies = 1 + int(self.client.cache(self.name).configuration().backups or 0)
        # The module's region figures where the nodes carry it (else the SQL views), as write() has them.
        self.guard = CapacityGuard(self.client, self.name, copies=copies, what="predict", region=None if kept else "")
        rows = expected_rows or 0
        # Overwriting in place replaces entries of about the same size: no new room is needed for them,
        # so no check up front (a round trip to every node's region figures); the sends are guarded as always.
        if not replace:
            self.guard.check(
                self.row_bytes * rows, rows, largest_entry=self.row_bytes, new_partitions=0 if kept else 1024
            )
        try:
            self.client.put_binary_type(self.plan.binary_type())
        except ServerError as exc:
            raise OutputLayoutError(
                f"binary type {self.plan.type_name!r} is registered on the cluster with other field types "
                f"than output cache {self.name!r} needs (Ignite keeps binary metadata for good); score into "
                f"a cache of another name. Server: {' '.join(str(exc).split())}"
            ) from None
        mode = "overwrite" if overwrite and not replace else "append"
        _cache, created, _emptied, self.sql_table = prepare_cache(
            self.client,
            self.name,
            existing,
            self.plan,
            mode=mode,
            backups=backups,
            atomicity=atomicity,
            write_sync=write_sync,
            sql=sql,
        )
        if not replace:
            save_schema(self.client, self.name, self.plan.record())
        self.sender = _CountingSender(self.client, self.name)
        return CREATED if created else REPLACED if replace else KEPT

    def _replaceable(self, backups: int, atomicity: int, write_sync: int, sql: bool) -> bool:
        """Whether the existing output is what :meth:`open` would create: this layout (the recorded
        tensor schema), these backups, atomicity and write synchronization, and an SQL table as asked."""
        recorded = load_schema(self.client, self.name)
        if recorded is None:
            return False
        try:
            check_append_schema(self.name, recorded, self.plan.record())
        except ConfigurationError:
            return False
        cache = self.client.cache(self.name)
        config = cache.configuration()
        if (int(config.backups or 0), config.atomicity_mode, config.write_synchronization_mode) != (
            backups,
            atomicity,
            write_sync,
        ):
            return False
        has_table = existing_sql_table(cache) is not None
        if has_table != sql:
            # Asked for a table the cluster cannot make (no SQL engine): a new cache would lack one too.
            return sql and not has_table and not sql_engine_available(self.client)[0]
        return True

    def remove_absent(self, source: str, key_type: int | None, *, page_size: int = 4096) -> int:
        """Remove the entries whose key ``source`` (a cache) no longer holds; how many were removed.

        Called at the end of a run that scored or skipped every partition of ``source``: every key
        read has its entry, so when the output holds no more entries than the source, nothing is
        stale and this is two size requests.  Otherwise the output's keys are checked against the
        source's in pages (a key missing there loses its prediction).
        """
        out = self.client.cache(self.name)
        src = self.client.cache(source)
        if out.size() <= src.size():
            return 0
        removed = 0
        keys: list[Any] = []

        def check() -> int:
            present = src.get_all(keys, key_type=key_type)
            gone = [k for k in keys if k not in present]
            if gone:
                out.remove_keys(gone)
            keys.clear()
            return len(gone)

        for k, _v in out.scan(page_size=page_size):
            keys.append(k)
            if len(keys) >= page_size:
                removed += check()
        if keys:
            removed += check()
        return removed

    def send(self, keys: np.ndarray, predictions: Mapping[str, np.ndarray]) -> None:
        """Encode one batch and send it, each row to the primary node of its key (answers collected later)."""
        assert self.sender is not None, "open() first"
        columns: dict[str, Any] = {KEY: keys}
        for name in self.outputs:
            columns[name] = predictions[name]
        columns[MODEL_HASH] = np.full(len(keys), self.model_hash, dtype=np.int64)
        send_all(
            self.plan,
            open_source(columns, None, KEY),
            self.sender,
            self.client,
            key=KEY,
            offset=0,
            batch_bytes=_BATCH_BYTES,
            used=self.used,
            guard=self.guard,
            row_bytes=self.row_bytes,
        )

    def flush(self) -> None:
        """Wait until every batch sent so far is stored."""
        if self.sender is not None:
            self.sender.wait()
