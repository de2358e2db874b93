"""``write``: the public entry point, its result and its error."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Unpack

from ...capacity import CapacityGuard
from ...errors import CapacityError, ConfigurationError, IgniteError, ServerError, WriteError
from ...generation import on_ignite3
from ...protocol.codes import AtomicityMode, WriteSynchronizationMode
from ...protocol.endpoint import DEFAULT_HOST, DEFAULT_PORT
from ..tensor_schema import SCHEMA_CACHE, load_schema, save_schema
from .cache import after_failure, default_type_name, prepare_cache
from .plan import ROW_KEY, check_append_schema, check_unique_keys, estimate_row_bytes, make_plan
from .sender import PutAllSender, progress_bar, send_all
from .sources import Source, open_source

if TYPE_CHECKING:
    from ...client import IgniteClient
    from ...client.options import ConnectionKeywords

log = logging.getLogger(__name__)

#: Partitions of a cache ``write`` creates (Ignite's default affinity function).
DEFAULT_PARTITIONS = 1024

Mode = Literal["create", "append", "overwrite"]
_MODES = ("create", "append", "overwrite")


@dataclass(frozen=True)
class WriteResult:
    """What :func:`write` did.

    ``rows`` entries were stored in ``cache_name`` as binary objects of
    ``type_name``; ``bytes_sent`` counts the put requests' bytes; ``key`` names
    the key (``"key"`` for the row index, else the key column); ``sql_table``
    is ``"PUBLIC.<TABLE>"`` when the cache is also an SQL table, else None;
    ``encoder`` is ``"fixed-layout"`` (vectorized) or ``"generic"``; ``notes``
    says what was decided along the way (e.g. no SQL engine on the cluster).
    """

    cache_name: str
    rows: int
    bytes_sent: int
    seconds: float
    type_name: str
    key: str = ROW_KEY
    sql_table: str | None = None
    encoder: str = "fixed-layout"
    notes: tuple[str, ...] = ()

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else float("inf")

    @property
    def megabytes(self) -> float:
        return self.bytes_sent / 1e6

    def summary(self) -> str:
        """One line for humans: rows, MB, seconds, rate, SQL table."""
        text = (
            f"wrote {self.rows:,} rows ({self.megabytes:.1f} MB) to cache {self.cache_name!r} "
            f"in {self.seconds:.2f} s ({self.rows_per_second:,.0f} rows/s, "
            f"{self.megabytes / max(self.seconds, 1e-9):.1f} MB/s)"
        )
        if self.sql_table:
            text += f"; SQL table {self.sql_table}"
        return text


_ATOMICITY = {"atomic": AtomicityMode.ATOMIC, "transactional": AtomicityMode.TRANSACTIONAL}
_WRITE_SYNC = {
    "primary_sync": WriteSynchronizationMode.PRIMARY_SYNC,
    "full_sync": WriteSynchronizationMode.FULL_SYNC,
    "full_async": WriteSynchronizationMode.FULL_ASYNC,
}


def _choice(value: str, table: Mapping[str, Any], what: str) -> Any:
    v = table.get(str(value).lower().replace("-", "_"))
    if v is None:
        raise ConfigurationError(f"{what} must be one of {', '.join(table)}; got {value!r}")
    return v


def write(
    cache_name: str,
    data: Any,
    *,
    client: "IgniteClient | None" = None,
    # Where the cluster is; how to talk to it: **connection (ConnectionKeywords).
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    type_name: str | None = None,
    key: str | None = None,
    key_offset: int | None = None,
    columns: Sequence[str] | None = None,
    mode: Mode = "create",
    backups: int = 0,
    atomicity: str = "atomic",
    write_sync: str = "primary_sync",
    sql: bool = True,
    batch_bytes: int = 4 << 20,
    progress: bool | None = None,
    **connection: Unpack[ConnectionKeywords],
) -> WriteResult:
    """Write columns of tensors into the Ignite cache ``cache_name``, one entry per row.

    ``data`` is a mapping of column name -> array (first axis = rows; a row's
    value is a scalar or an N-d array), a path to a ``.npz``, ``.csv`` (header
    row; int64/float64/bool/str inferred, empty fields are NaN or null) or
    ``.parquet`` file, or a ``tf.data.Dataset`` of dicts of tensors (unbatched).

    Values are binary objects of ``type_name`` (default ``"<CacheName>Row"``)
    with one field per column: bool -> boolean, (u)int8 -> byte, int16 ->
    short, uint16/int32 -> int, uint32/(u)int64 -> long, float16/32 -> float,
    float64 -> double, str -> String (bytes that are not UTF-8 -> byte[]),
    datetime64 -> Timestamp; per-row arrays -> the primitive array of the
    dtype, flattened row-major; None/NaN in object columns -> null.  The
    original dtypes and per-row shapes are recorded with
    :func:`~tensorflow_ignite.data.tensor_schema.save_schema`.

    Keys are the row index plus ``key_offset`` (Java ``long``), or the values
    of the ``key`` column (integers become ``long``, strings stay strings; keys
    must be unique).

    ``mode``:

    * ``"create"`` -- the cache must not exist or be empty; it is created with
      ``backups``, ``atomicity`` (``atomic``/``transactional``) and
      ``write_sync`` (``primary_sync``/``full_sync``/``full_async``);
    * ``"overwrite"`` -- an existing cache (and its data) is destroyed first;
    * ``"append"`` -- rows are added to an existing cache (created if absent);
      the recorded tensor schema must match.  ``key_offset`` defaults to the
      number of entries already there, so row-index keys continue.

    **Atomicity of the load.**  In ``create`` and ``overwrite`` mode a failure
    part-way (bad value, lost cluster, Ctrl+C) destroys the half-written cache
    -- or empties it, if it existed empty before -- and re-raises the error: the
    cache is never left half-loaded.  In ``append`` mode what was written
    stays, and a :class:`WriteError` says how many rows made it.

    **Capacity.**  Before anything is created or stored, and again before every
    put-all, the write checks that it fits the target cache's data region on every
    server node (:mod:`tensorflow_ignite.capacity`): filling an in-memory region
    makes Ignite stop the node.  A write that does not fit raises
    :class:`~tensorflow_ignite.errors.CapacityError` (region, node, max size, used,
    needed); one stopped part-way is rolled back as above, and an ``append`` with
    row-number keys removes the rows it added.

    With ``sql=True`` the cache is also an SQL table ``PUBLIC.<CACHE_NAME>``
    (scalar and primitive-array columns plus the key).  Clusters without an SQL
    engine (Ignite 2.18 with ``ignite-core`` only) accept query entities without
    complaint but cannot run queries; there the table is left out and
    ``WriteResult.notes`` says so.

    Rows are sent in put-all requests of about ``batch_bytes``.  ``progress``
    shows a tqdm bar on stderr (default: when stderr is a terminal).  Either
    pass a connected ``client`` or ``host``, ``port`` and the connection keywords
    (:class:`~tensorflow_ignite.client.ConnectionKeywords`; ``host`` may be
    ``"h1:p1,h2:p2"``; ``server_hostname`` is the name the nodes' TLS
    certificates are checked against, and turns TLS on); the
    ``IGNITE_DATASET_*`` connection variables (:mod:`tensorflow_ignite.client.env`)
    win over the latter, as for ``IgniteDataset``.

    On an Ignite 3 cluster (found at the handshake, or an ``Ignite3Client`` given as ``client``) the
    same call fills the table ``cache_name`` instead (:mod:`.ignite3`): the same modes, keys and
    result; per-row arrays become VARBINARY columns that ``IgniteDataset`` reads back in their shapes.
    """
    from ...client.options import ConnectionOptions

    settings = ConnectionOptions.settings_given("write", connection)
    if mode not in _MODES:
        raise ConfigurationError(f"mode must be one of {', '.join(_MODES)}; got {mode!r}")
    if not cache_name or cache_name == SCHEMA_CACHE:
        raise ConfigurationError(f"invalid cache name {cache_name!r}")
    if batch_bytes < 1:
        raise ConfigurationError("batch_bytes must be positive")
    if backups < 0:
        raise ConfigurationError("backups must be >= 0")
    atomicity_mode = _choice(atomicity, _ATOMICITY, "atomicity")
    sync_mode = _choice(write_sync, _WRITE_SYNC, "write_sync")

    started = time.perf_counter()
    source = open_source(data, columns, key)
    options = None
    if client is None:
        # The process's shared client for these options (the one its datasets and ignite:// use),
        # the IGNITE_DATASET_* variables applied as for every feature.
        options = ConnectionOptions.from_address(host, port, **settings).with_env()
    if on_ignite3(client, options):
        from ..on_ignite3 import ignite3_call
        from .ignite3 import REFUSED, write_table  # the same write into the table cache_name

        given = dict(type_name=type_name, backups=backups, write_sync=write_sync)
        what = f"write to {cache_name!r} on an Ignite 3 cluster"
        with ignite3_call(what, given, REFUSED, options, client) as on:  # type: ignore[arg-type]  # an Ignite3Client
            return write_table(cache_name, source, on, key=key, key_offset=key_offset, mode=mode, started=started)
    if client is None:
        assert options is not None
        client = options.connect()
    return _write(
        client,
        cache_name,
        source,
        type_name=type_name,
        key=key,
        key_offset=key_offset,
        mode=mode,
        backups=backups,
        atomicity=atomicity_mode,
        write_sync=sync_mode,
        sql=sql,
        batch_bytes=batch_bytes,
        progress=progress,
        started=started,
    )


def _write(
    client: "IgniteClient",
    cache_name: str,
    source: Source,
    *,
    type_name: str | None,
    key: str | None,
    key_offset: int | None,
    mode: str,
    backups: int,
    atomicity: int,
    write_sync: int,
    sql: bool,
    batch_bytes: int,
    progress: bool | None,
    started: float,
) -> WriteResult:
    existing = cache_name in client.cache_names()
    recorded = load_schema(client, cache_name) if existing and mode == "append" else None
    if type_name is None:
        type_name = recorded.type_name if recorded is not None else default_type_name(cache_name)
    plan = make_plan(source, key, type_name)
    if recorded is not None:
        check_append_schema(cache_name, recorded, plan.record())
    if key is not None and source.in_memory:
        check_unique_keys(key, source.first[key])

    # The capacity guard: refuse a write the target region cannot hold before the cache is
    # created, a type registered or anything stored (capacity.py); ``send_all`` checks again between batches.
    kept = existing and mode != "overwrite"  # the cache keeps its configuration (and backups)
    guard = CapacityGuard(
        client,
        cache_name,
        copies=_copies_of(client, cache_name) if kept else 1 + backups,
        what="write",
        region=None if kept else "",
    )
    row_bytes = estimate_row_bytes(plan, source.first)
    rows_known = source.total_rows or 0  # unknown (a tf.data source): checked batch by batch only
    guard.check(
        row_bytes * rows_known, rows_known, largest_entry=row_bytes, new_partitions=0 if kept else DEFAULT_PARTITIONS
    )

    # Register the value type first: a clash with an older type of the same name
    # fails here, before any cache is created or destroyed.
    try:
        client.put_binary_type(plan.binary_type())
    except ServerError as exc:
        server = " ".join(str(exc).split())
        raise ConfigurationError(
            f"binary type {type_name!r} is already registered on the cluster with other field types; "
            f"Ignite keeps binary metadata for good, so write with another type_name= (e.g. "
            f"{type_name + '2'!r}). Server: {server}"
        ) from None

    cache, created, emptied_ok, sql_table = prepare_cache(
        client,
        cache_name,
        existing,
        plan,
        mode=mode,
        backups=backups,
        atomicity=atomicity,
        write_sync=write_sync,
        sql=sql,
    )

    if key is None and key_offset is None:
        key_offset = 0
        if mode == "append" and not created:
            key_offset = cache.size()
            if key_offset and source.total_rows:
                end = key_offset + source.total_rows - 1
                if cache.contains_key(key_offset) or cache.contains_key(end):
                    raise ConfigurationError(
                        f"cache {cache_name!r} has {key_offset} entries but already holds keys in "
                        f"[{key_offset}, {end}]; pass key_offset= explicitly to append without overwriting"
                    )
    offset = int(key_offset or 0)

    sender = PutAllSender(client, cache_name)
    bar = progress_bar(progress, source.total_rows, cache_name)
    sender.on_ack = bar.update
    used: set[str] = set()
    try:
        send_all(
            plan,
            source,
            sender,
            client,
            key=key,
            offset=offset,
            batch_bytes=batch_bytes,
            used=used,
            guard=guard,
            row_bytes=row_bytes,
        )
        sender.wait()
        save_schema(client, cache_name, plan.record())
    except BaseException as exc:
        bar.close()
        if sender.pending:  # batches sent before the failure: collect their answers, count their rows
            try:
                sender.wait()
            except Exception as late:  # noqa: BLE001 - the first error is the one to report
                log.debug("the batch in flight failed too: %s", late)
        after_failure(client, cache, exc, mode=mode, created=created, emptied_ok=emptied_ok, rows=sender.rows_acked)
        if mode == "append" and isinstance(exc, CapacityError):
            _unappend(cache, exc, key=key, offset=offset, rows=sender.rows_acked)
            raise
        if mode == "append" and isinstance(exc, Exception):
            raise WriteError(
                f"append to cache {cache_name!r} failed after {sender.rows_acked:,} rows were written "
                f"(they stay in the cache): {exc}",
                cache_name=cache_name,
                rows_written=sender.rows_acked,
            ) from exc
        raise
    bar.close()
    notes = list(plan.notes)
    encoder = "+".join(sorted(used)) or ("fixed-layout" if plan.fixed else "generic")
    result = WriteResult(
        cache_name=cache_name,
        rows=sender.rows_acked,
        bytes_sent=sender.bytes_sent,
        seconds=time.perf_counter() - started,
        type_name=type_name,
        key=plan.key.name,
        sql_table=sql_table,
        encoder=encoder,
        notes=tuple(notes),
    )
    log.info("%s", result.summary())
    return result


def _copies_of(client: "IgniteClient", cache_name: str) -> int:
    """1 + the backups of an existing cache (1 when its configuration cannot be read)."""
    try:
        return 1 + int(client.cache(cache_name).configuration().backups or 0)
    except IgniteError as exc:
        log.debug("cannot read the configuration of %r: %s", cache_name, exc)
        return 1


def _unappend(cache: Any, exc: BaseException, *, key: str | None, offset: int, rows: int) -> None:
    """An append stopped by the capacity guard: remove the row-index keys it wrote (they were
    new: the append starts after the existing entries and checks its first and last key)."""
    if key is not None or not rows:
        exc.add_note(
            f"tensorflow_ignite.write: {rows:,} rows appended before the guard stopped the write stay "
            "in the cache (keys from a key column may have replaced older entries, so they are not "
            "removed)"
            if rows
            else "tensorflow_ignite.write: nothing was appended"
        )
        return
    try:
        step = 10_000
        for start in range(offset, offset + rows, step):
            cache.remove_keys(list(range(start, min(offset + rows, start + step))))
        exc.add_note(
            f"tensorflow_ignite.write: the {rows:,} rows appended before the guard stopped the write "
            f"were removed again (keys {offset}..{offset + rows - 1})"
        )
    except IgniteError as cleanup:
        exc.add_note(f"tensorflow_ignite.write: removing the {rows:,} appended rows failed too: {cleanup}")
