"""``IgniteDataset``: a ``tf.data`` source over an Ignite cache or an SQL query.

Shape of the pipeline ("describe ranges, read a chunk"):

1. When the dataset is built (eagerly, in Python) the client connects, the
   schema is resolved from metadata (:mod:`.schema`) and a
   :class:`~.plan.PartitionPlan` lists the scans (one per partition, or one
   ``local`` scan).
2. A reader (:mod:`.reader`) walks the scans, one run per iterator;
   TensorFlow pulls it through the native source op
   (:mod:`tensorflow_ignite.native.data_source`), whose description of the read
   lets other processes rebuild it (:mod:`.portable`) and whose saved state is
   per-partition progress (:mod:`.progress`), or, with
   ``num_parallel_reads`` > 1, interleaves that many ``from_generator``
   readers, each walking its share of the scans.  Each scan streams pages of its partition *from that
   partition's primary node* (one page requested ahead, and the next
   partitions' scans already on the wire: :meth:`Cache.scan_partitions`); a
   partition whose node fails is read again from its new primary without
   repeating rows.  Pages are decoded at once (consecutive small pages
   together) into columnar NumPy batches
   (:func:`tensorflow_ignite.protocol.columns.decode_page`).
3. Batches are re-cut to ``batch_size`` (by the native source, as slices of
   the decoded pages; with ``from_generator`` by ``rebatch``), or unbatched to
   single elements when no ``batch_size`` is given, so the per-element cost of
   the Python source is paid per page or batch, not per row.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Unpack

import numpy as np
import tensorflow as tf

from ..client import ConnectionKeywords, ConnectionOptions, IgniteClient, close_shared_clients
from ..client.progress import ShuffledEpochs
from ..errors import CacheNotFoundError, ConfigurationError
from ..generation import on_ignite3
from ..native import data_source
from ..native.source_dataset import SourceDataset
from ..protocol.codes import TypeCode
from ..protocol.endpoint import DEFAULT_HOST, DEFAULT_PORT
from ..protocol.pool import aligned_empty
from . import arguments, portable
from .discover import cache_schema, sql_schema, suggest_shapes
from .env import apply_env_overrides
from .plan import PartitionPlan, ScanTask
from .reader import DEFAULT_PAGE_BYTES, PageSizer, ReadStats, ScanReader, SqlReader
from .schema import DatasetSchema, apply_shapes

if TYPE_CHECKING:
    from .follow_dataset import FollowDataset

__all__ = ["IgniteDataset", "ConnectionOptions", "ReadStats", "close_shared_clients"]


_DEFAULT_READERS = 1

log = logging.getLogger(__name__)


class IgniteDataset(SourceDataset):
    """A ``tf.data.Dataset`` over an Apache Ignite cache.

    Elements look like ``{'key': 1, 'val': {'NAME': b'WARM KITTY'}}``: ``key`` and
    ``val`` are tensors for scalar keys/values and (nested) dicts of tensors for
    binary objects; see :mod:`tensorflow_ignite.data.schema` for the type mapping.

    The positional parameters are those of the original
    ``tf.contrib.ignite.IgniteDataset``; every one of them can be overridden by
    an ``IGNITE_DATASET_*`` environment variable (:mod:`.env`).  ``host``,
    ``port``, ``local``, ``part`` and ``page_size`` may be scalar tensors, as
    in tensorflow-io's op, also symbolic ones inside ``Dataset.interleave``,
    ``flat_map``, ``map`` or a ``tf.function``: the dataset then reads what
    their values name when it runs (:mod:`.arguments`); ``cache_name`` may be
    a tensor whose value is known when the dataset is built.

    Args:
      cache_name: the cache to read.
      host, port: a node's thin-client endpoint; the other nodes are discovered.
        ``host`` may be ``"host:port"`` when given as a tensor.  Given as a
        tensor known only when the dataset runs, the schema and partitions
        are read when it is built through ``client``, which is then required.
      local: scan only the entries stored on the connected node.
      part: scan only this partition (``-1``: all).
      page_size: rows per page; ``None`` sizes pages to about ``page_bytes``.
      username, password: credentials for clusters with authentication.
      certfile, keyfile, cert_password: client certificate for TLS.
      cafile: CA that signed the nodes' certificates (TLS is on when this or
        ``certfile`` is given; the server certificate is always verified unless
        ``insecure_skip_verify=True``).
      server_hostname: check the nodes' certificates against this name instead
        of the address dialled (e.g. nodes reached through a proxy or NAT).
      insecure_skip_hostname_verification: verify the certificate chain but not
        the host name (logged as a warning).
      batch_size: yield batches of this many rows instead of single elements.
      drop_remainder: drop the short last batch, so that every batch has exactly
        ``batch_size`` rows (a static batch dimension); needs ``batch_size``.
      parts: scan exactly these partitions (``IGNITE_DATASET_PARTS``).
      num_parallel_reads: readers walking the partitions concurrently (default 1: one reader
        already keeps up to 16 partition scans on the wire).
      value_type: binary type name of the values, when the cache declares none.
      key_type: Java class name (``"java.lang.Integer"``) or type code of the keys,
        for typed but empty caches (default ``long``).
      fields: only these value fields (default: all).
      schema: an explicit :class:`~.schema.DatasetSchema`.
      null_masks: add ``<field>_present`` booleans next to nullable fields.
      shapes: read these primitive-array fields (``float[]``, ``long[]``, ``byte[]``...
        as any writer stores them: Ignite records no length) as dense tensors of
        the given per-row shape instead of ragged ones, e.g.
        ``shapes={"pixels": [64]}`` gives ``pixels`` as ``[batch, 64]``
        (``[8, 8]``: ``[batch, 8, 8]``, row-major).  Fields of nested objects go
        by their dotted names as in the element (``"image.pixels"``), a value
        that is itself an array by ``"val"``.  A row whose array has another
        length fails the read with
        :class:`~tensorflow_ignite.errors.ArrayLengthError` naming the cache,
        the field and the row's key; a null array is zeros (its
        ``_present`` mask False with ``null_masks``).  Dense fields keep the
        dataset on the native source (serializable, checkpointable, tf.data
        service); without ``shapes`` a ragged array field makes it a
        process-local ``from_generator``, and the dataset logs the
        ``shapes=`` to pass when every array of the first page had one length.
      decimal_as: ``"float64"`` (default) or ``"string"``.
      client: an existing :class:`IgniteClient` to use (then ``host``/``port`` and
        the credential arguments are ignored, unless ``host``/``port`` are
        tensors known only when the dataset runs: the reads connect there).
      timeout: seconds to wait for a node's answer, and the longest a partition
        scan is retried on other nodes after its node failed before iteration
        raises :class:`~tensorflow_ignite.errors.IgniteConnectionError` (default 30).
      connect_timeout, idle_timeout: seconds to dial a node (default 5), and of
        silence before a node is abandoned (default 8; see
        :class:`~tensorflow_ignite.client.ConnectionOptions`).  The connection
        keywords are those of every entry point (:class:`~tensorflow_ignite.client.ConnectionKeywords`).
      credentials: the name of a credentials source other processes use when
        they rebuild this dataset (tf.data service workers, a process restoring
        a checkpoint; see :mod:`.portable`): a provider registered with
        :func:`~.portable.register_credentials`, else ``IGNITE_DATASET_<NAME>_*``
        variables.  By default they read ``IGNITE_DATASET_PASSWORD`` etc.
      known_cardinality: count the cache's entries when the dataset is built
        (one size request; on Ignite 3 the table's ``SELECT COUNT(*)``) and
        give the dataset that cardinality (rows, or batches of ``batch_size``:
        the short last one not counted with ``drop_remainder``), so Keras
        knows the steps per epoch.  An
        epoch that yields another number of rows -- the cache changed since --
        fails with TensorFlow's cardinality error rather than training on a
        silently different epoch.  Whole-cache reads only.  Otherwise the
        cardinality is ``UNKNOWN``: a live cache has no fixed size.
      shuffle, seed: read the partitions in an order drawn from ``seed`` and
        the epoch (each new iterator is the next epoch): the same seed gives
        the same order in every run and every process, and a saved iterator
        resumes the order it was reading.  Rows keep Ignite's order within a
        partition, so this is a global shuffle of partitions, not of rows:
        add a small ``.shuffle(buffer)`` behind it to mix rows too (see the
        README).  Without ``seed`` one is drawn at random.  One reader only.
        On Ignite 3 the partitions are read one after the other, a query
        each: Ignite 3.1 does not narrow a query to its partitions, so each
        scans the table at its node (a shuffled read of a large table costs
        the node that many scans), and waits to be mapped (up to ~250 ms on
        an idle 3.1 cluster: about a quarter second per partition).
      per_worker: every process that *runs* the read takes its partitions
        from its own ``IGNITE_DATASET_PARTS`` (and its node from
        ``IGNITE_DATASET_HOST``/``_PORT``), which ``ignite-tf start`` sets for
        each worker.  For ParameterServerStrategy's
        ``ClusterCoordinator.create_per_worker_dataset``: the coordinator
        builds the dataset once, every worker rebuilds it from its description
        and reads its own node's primary partitions.  Iterated in the process
        that built it, it reads that process's share (the whole cache where
        ``IGNITE_DATASET_PARTS`` is unset).  Never sharded again by a strategy.

    The dataset leaves its process: the op carries a description of the read
    (never a password or key), so it runs on the tf.data service -- both
    ``"parallel_epochs"`` and ``"distributed_epoch"``, which hands out
    partitions -- and its iterators can be saved with
    ``tf.train.Checkpoint(iterator=it)`` and restored, exactly once, in any
    process.  Not with ``num_parallel_reads`` > 1, ragged fields (see ``shapes``) or
    ``TF_IGNITE_DATASET_SOURCE=generator`` (``from_generator``, process-local).
    """

    def __init__(
        self,
        cache_name: str,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        local: bool = False,
        part: int = -1,
        page_size: int | None = None,
        username: str | None = None,
        password: str | None = None,
        certfile: str | None = None,
        keyfile: str | None = None,
        cert_password: str | None = None,
        *,
        cafile: str | None = None,
        insecure_skip_verify: bool = False,
        server_hostname: str | None = None,
        insecure_skip_hostname_verification: bool = False,
        batch_size: int | None = None,
        drop_remainder: bool = False,
        parts: Sequence[int] | None = None,
        num_parallel_reads: int | None = None,
        page_bytes: int = DEFAULT_PAGE_BYTES,
        value_type: str | None = None,
        key_type: str | int | None = None,
        fields: Sequence[str] | None = None,
        schema: DatasetSchema | None = None,
        null_masks: bool = False,
        decimal_as: str = "float64",
        client: IgniteClient | None = None,
        timeout: float | None = None,
        connect_timeout: float | None = None,
        idle_timeout: float | None = None,
        credentials: str | None = None,
        shapes: Mapping[str, Sequence[int]] | None = None,
        known_cardinality: bool = False,
        shuffle: bool = False,
        seed: int | None = None,
        per_worker: bool = False,
    ) -> None:
        settings = ConnectionOptions.settings_in(locals())  # credentials, TLS, timeout as given
        cache_name = arguments.static_string("cache_name", cache_name)
        given, tensors = arguments.split(dict(host=host, port=port, local=local, part=part, page_size=page_size))
        params = apply_env_overrides(dict(given, parts=parts))
        # An IGNITE_DATASET_* variable wins over a tensor as over a Python value.
        tensors = {name: t for name, t in tensors.items() if params[name] is None}
        described = _tensor_arguments(cache_name, tensors, given, params, client)
        params.update({name: {"part": -1, "local": False}[name] for name in tensors if name in ("part", "local")})
        if params["page_size"] is not None and params["page_size"] <= 0:
            raise ConfigurationError(f"page_size must be positive, got {params['page_size']}")
        if batch_size is not None and batch_size <= 0:
            raise ConfigurationError(f"batch_size must be positive, got {batch_size}")
        if decimal_as not in ("float64", "string"):
            raise ConfigurationError("decimal_as is 'float64' or 'string'")
        _check_remainder(f"IgniteDataset over {cache_name!r}", batch_size, drop_remainder)
        shuffled = _shuffled(cache_name, shuffle, seed, num_parallel_reads)
        self.cache_name = cache_name
        self.connection = ConnectionOptions.from_env(
            **settings, host=params["host"] or DEFAULT_HOST, port=params["port"] or DEFAULT_PORT
        )
        self.client: IgniteClient
        self._table: Any = None  # the Ignite 3 table read under this dataset (on_ignite3), else None
        if on_ignite3(client, self.connection):
            from .on_ignite3 import table_dataset  # the same read of the table cache_name

            self.client = client  # type: ignore[assignment]  # on Ignite 3: the Ignite3Client given, or None
            self.batch_size = batch_size
            self._dataset, self._table = table_dataset(cache_name, self.connection, params, tensors, locals())
            if known_cardinality:
                from .on_ignite3 import table_rows

                share = params.get("parts") is not None or params["part"] >= 0
                read = self._table._reader  # its client: the Ignite3Client the table is read with, or None
                rows = self._cardinality(
                    share, lambda: table_rows(cache_name, self.connection, read.client), batch_size, drop_remainder
                )
                self._dataset = self._dataset.apply(tf.data.experimental.assert_cardinality(rows))
            super().__init__(self._dataset)
            return
        self.client = client if client is not None else self.connection.connect()

        if cache_name not in self.client.cache_names():
            raise CacheNotFoundError(
                f"cache {cache_name!r} does not exist on the cluster at {self.connection.host}:"
                f"{self.connection.port}; existing caches: {sorted(self.client.cache_names())[:20]}",
                status=1000,
            )
        if schema is not None:
            self.schema = apply_shapes(schema, shapes, cache_name=cache_name)
        else:
            self.schema = cache_schema(
                self.client,
                cache_name,
                value_type=value_type,
                key_type=key_type,
                fields=fields,
                null_masks=null_masks,
                decimal_as=decimal_as,
                shapes=shapes,
            )
            if not shapes:
                suggest_shapes(self.client, cache_name, self.schema)
        pmap = self.client.partition_map(cache_name)
        if params.get("parts") is None and params["part"] < 0 and not params["local"] and not pmap.applicable:
            self.plan = PartitionPlan((ScanTask(-1),))  # replicated cache: one scan
        else:
            self.plan = PartitionPlan.build(
                partitions=pmap.partitions or 1024,
                part=params["part"],
                parts=params.get("parts"),
                local=bool(params["local"]),
                cache_name=cache_name,
            )
        self.batch_size = batch_size
        self._reader = ScanReader(
            self.client, cache_name, self.schema, self.plan.tasks, PageSizer(params["page_size"], page_bytes)
        )
        self._reader.shuffle = shuffled
        key = self.schema.key
        if (
            not shuffle
            and not per_worker
            and params.get("parts") is None
            and params["part"] < 0
            and not params["local"]
            and pmap.applicable
            and pmap.partitions
            and self.client.partition_awareness
            and key is not None
            and not key.is_object
            and int(key.type_code) in (TypeCode.LONG, TypeCode.INT)
        ):
            # The whole cache with scalar keys: one scan per node (see Cache.scan_nodes).
            self._reader.node_scans = True
            self._reader.partitions = pmap.partitions
        # One reader by default: it already keeps many partition scans on the wire,
        # more threads only contend for the GIL, and every reader beyond the first
        # adds an interleave whose start costs tens of milliseconds per epoch
        # (60k small rows, 2 cores: 1/2/4 readers 0.64/0.68/0.81 s).
        reads = num_parallel_reads or min(len(self.plan), _DEFAULT_READERS)
        pool = self._reader.pool
        description = portable.describe_cache(
            self.client,
            cache_name,
            self.plan.tasks,
            partitions=self._reader.partitions or pmap.partitions,
            node_scans=self._reader.node_scans,
            schema=self.schema,
            page_size=params["page_size"],
            page_bytes=page_bytes,
            batch_size=batch_size,
            drop_remainder=drop_remainder,
            credentials=credentials,
            shuffle_seed=shuffled.seed if shuffled is not None else None,
            per_worker=per_worker,
            arguments=described,
        )
        self._dataset = _assemble(
            self._reader.worker_batches,
            self._reader.run,
            len(self.plan),
            self.schema,
            reads,
            batch_size,
            drop_remainder,
            allocate=lambda shape, dtype: aligned_empty(shape, dtype, pool),
            description=description,
            splits=len(self.plan) if self._reader.splittable and not tensors else 0,
            arguments=list(tensors.values()),
        )
        share = (
            params.get("parts") is not None
            or params["part"] >= 0
            or bool(params["local"])
            or per_worker
            or "part" in tensors
            or "local" in tensors
        )
        if known_cardinality:
            size = self.client.cache(cache_name).size
            self._dataset = self._dataset.apply(
                tf.data.experimental.assert_cardinality(self._cardinality(share, size, batch_size, drop_remainder))
            )
        self._dataset = self._dataset.with_options(_shard_options(share))
        super().__init__(self._dataset)

    def _cardinality(self, share: bool, count: Callable[[], int], batch_size: int | None, drop_remainder: bool) -> int:
        """``known_cardinality``'s figure, both generations: ``count()`` rows (the cache's size, the table's
        ``COUNT(*)``), or the batches of ``batch_size`` they make (the short last one dropped with
        ``drop_remainder``)."""
        if share:
            raise ConfigurationError(
                f"known_cardinality=True counts the whole cache {self.cache_name!r}; Ignite cannot count the "
                "entries of some partitions without reading them (this dataset reads parts/part/local/per_worker)"
            )
        rows = int(count())
        if batch_size is None:
            return rows
        return rows // batch_size if drop_remainder else -(-rows // batch_size)

    # ---------------------------------------------------------------- tf.data
    @property
    def stats(self) -> ReadStats:
        """A snapshot of what this dataset's reads have done (rows, scan mode, failovers, rescans)."""
        if self._table is not None:
            from .on_ignite3 import read_stats

            return read_stats(self._table, self._table._reader.page_size)
        return self._reader.stats()

    # ---------------------------------------------------------------- following
    @staticmethod
    def follow(
        cache_name: str,
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        *,
        start: str = "beginning",
        batch_size: int = 256,
        max_wait: float = 0.1,
        stream_timeout: float | None = None,
        max_rows: int | None = None,
        deletes: str = "drop",
        max_buffered: int = 1024,
        parts: Sequence[int] | None = None,
        per_worker: bool = False,
        client: IgniteClient | None = None,
        value_type: str | None = None,
        key_type: str | int | None = None,
        fields: Sequence[str] | None = None,
        schema: DatasetSchema | None = None,
        null_masks: bool = False,
        decimal_as: str = "float64",
        shapes: Mapping[str, Sequence[int]] | None = None,
        page_size: int | None = None,
        **connection: Unpack[ConnectionKeywords],
    ) -> FollowDataset:
        """A dataset that follows a cache: its rows, then every insert and update as it happens.

        Elements are micro-batches of up to ``batch_size`` rows (the scan's
        element structure, ``{'key': ..., 'val': ...}``), cut early once
        ``max_wait`` seconds passed since the oldest row waiting in the batch.
        ``start="beginning"`` first delivers the rows that exist (a scan
        after the query is registered, so nothing written meanwhile falls
        between), ``"now"`` only what is written from now on.  Deleted and
        expired entries are dropped (``deletes="drop"``), or delivered with
        their last value and ``deleted=True`` in a ``'deleted'`` boolean
        (``"flag"``).  The dataset ends after ``stream_timeout`` seconds
        without a row (default: never) or after ``max_rows`` rows (counted
        across a checkpoint restore).  ``parts`` / ``per_worker`` and the
        schema arguments are those of :class:`IgniteDataset`: a launcher
        worker follows its node's primary partitions.

        Iterators are checkpointable (``tf.train.Checkpoint(iterator=it)``,
        small: per partition an update counter at most).  The guarantee (see
        ARCHITECTURE.md, "Following a cache") depends on the nodes.  When every
        server node keeps the module's follow log of the cache (``FollowLog``,
        ``NodeLauncher --follow-log``; ``stats.mode == "log"``), every update
        after the saved position is delivered exactly once, in counter order
        per partition, through a process crash + restore, a lost query or a
        node's death (``stats.catch_ups``); the initial snapshot is at least
        once for rows written while it is scanned; a position older than the
        log's retention raises :class:`~tensorflow_ignite.errors.FollowPositionLostError`.
        Without the log (``stats.mode == "resync"``): while the continuous
        query lives, each update is delivered once; when it is lost (its node
        died, the consumer fell more than ``max_buffered`` notification
        frames behind, a restore from a checkpoint) the follower registers a
        new query and scans the partitions again, so the latest value of
        every key is always delivered -- rows may come again, values
        overwritten in the gap and deletes in the gap are not seen
        (``stats.resyncs``).  The dataset runs in the process that built it
        (not on the tf.data service).
        """
        settings = ConnectionOptions.settings_given("IgniteDataset.follow", connection)
        from .follow import FollowOptions
        from .follow_dataset import FollowDataset
        from .on_ignite3 import refuse_follow

        refuse_follow(cache_name, client, host, port, settings)
        options = FollowOptions(
            start=start,
            batch_size=batch_size,
            max_wait=max_wait,
            stream_timeout=stream_timeout,
            max_rows=max_rows,
            deletes=deletes,
            max_buffered=max_buffered,
        )
        base = IgniteDataset(
            cache_name,
            host,
            port,
            **settings,
            page_size=page_size,
            parts=parts,
            value_type=value_type,
            key_type=key_type,
            fields=fields,
            schema=schema,
            null_masks=null_masks,
            decimal_as=decimal_as,
            client=client,
            per_worker=per_worker,
            shapes=shapes,
        )
        return FollowDataset(base, options)

    # ---------------------------------------------------------------- SQL
    @staticmethod
    def from_sql(
        query: str,
        args: Sequence[Any] = (),
        host: str = DEFAULT_HOST,
        port: int = DEFAULT_PORT,
        *,
        batch_size: int | None = None,
        drop_remainder: bool = False,
        page_size: int = 1024,
        schema: str = "PUBLIC",
        column_types: Mapping[str, int] | None = None,
        null_masks: bool = False,
        client: IgniteClient | None = None,
        lazy: bool = True,
        credentials: str | None = None,
        **connection: Unpack[ConnectionKeywords],
    ) -> tf.data.Dataset:
        """A dataset of the rows of an SQL query: ``{COLUMN: tensor}`` per row (or batch of ``batch_size``;
        ``drop_remainder`` drops the short last one).

        Projection and filtering run in Ignite.  Column types come from one
        sampled row; for a query that may return nothing pass ``column_types``
        (column name -> :class:`~tensorflow_ignite.protocol.codes.TypeCode`).
        The dataset runs in other processes too (``credentials``: as for
        :class:`IgniteDataset`), but has no partitions: tf.data service workers
        read it whole (``"parallel_epochs"``) and its iterators cannot be saved.
        """
        settings = ConnectionOptions.settings_given("IgniteDataset.from_sql", connection)
        options = ConnectionOptions.from_env(**settings, host=host, port=port)
        _check_remainder(f"IgniteDataset.from_sql({query[:60]!r})", batch_size, drop_remainder)
        if on_ignite3(client, options):
            from .on_ignite3 import sql_dataset

            return sql_dataset(query, args, options, client, locals())  # ignite3.from_sql
        cl = client if client is not None else options.connect()
        sql_kwargs = dict(schema=schema, page_size=page_size, lazy=lazy)
        ds_schema = replace(sql_schema(cl, query, args, sql_kwargs, column_types or {}), null_masks=null_masks)
        reader = SqlReader(cl, query, args, ds_schema, sql_kwargs)
        description = portable.describe_sql(
            cl,
            query,
            args,
            schema=ds_schema,
            sql_kwargs=sql_kwargs,
            batch_size=batch_size,
            drop_remainder=drop_remainder,
            credentials=credentials,
        )
        return _assemble(
            lambda _w, _n: reader.batches(),
            reader.run,
            1,
            ds_schema,
            1,
            batch_size,
            drop_remainder,
            description=description,
        ).with_options(_shard_options(False))


def _check_remainder(what: str, batch_size: int | None, drop_remainder: bool) -> None:
    """``drop_remainder`` drops the short last batch: without ``batch_size`` there is none to drop."""
    if drop_remainder and batch_size is None:
        raise ConfigurationError(
            f"{what}: drop_remainder=True drops the short last batch of batch_size rows, but no batch_size "
            "was given (single rows); give batch_size too, or leave drop_remainder out"
        )


def _shuffled(
    cache_name: str, shuffle: bool, seed: int | None, num_parallel_reads: int | None
) -> ShuffledEpochs | None:
    """The partition order of ``shuffle=True`` (``seed``, else one drawn at random), both generations; None
    when not shuffled."""
    shuffled = ShuffledEpochs.of(shuffle, seed)
    if shuffled is not None and num_parallel_reads is not None and num_parallel_reads > 1:
        raise ConfigurationError(
            f"IgniteDataset over cache {cache_name!r}: shuffle=True reads with one reader; leave num_parallel_reads unset"
        )
    return shuffled


def _tensor_arguments(
    cache_name: str,
    tensors: Mapping[str, Any],
    given: Mapping[str, Any],
    params: Mapping[str, Any],
    client: IgniteClient | None,
) -> dict[str, Any] | None:
    """What the description says of the arguments given as tensors known only when the dataset runs."""
    if not tensors:
        return None
    if ("host" in tensors or "port" in tensors) and client is None:
        raise ConfigurationError(
            f"IgniteDataset over cache {cache_name!r}: {' and '.join(n for n in ('host', 'port') if n in tensors)} "
            "is a tensor whose value is known only when the dataset runs, but the cache's schema and partitions "
            "are read when the dataset is built: pass client= (an IgniteClient of the same cluster) to read "
            "them with; the reads connect to the tensor's address"
        )
    return {
        "names": list(tensors),
        "host": params["host"] if "host" not in tensors else None,
        "port": params["port"] if "port" not in tensors else None,
        "part": params["part"] if "part" not in tensors else -1,
        "local": bool(params["local"]) if "local" not in tensors else False,
        "parts": params.get("parts") is not None,
    }


def _shard_options(share: bool) -> tf.data.Options:
    """How a distribution strategy may shard this dataset across workers.

    A dataset reading only its share of the partitions (``parts``, ``part``,
    ``local``, ``per_worker``: launcher workers) is ``OFF``: sharding it again would keep only
    every N-th row of the worker's own partitions and lose the rest of the
    epoch.  Any other dataset is cut by rows (``DATA``: each worker reads
    everything and keeps its N-th, so the workers together read every row
    once).  The policy is set rather than left to ``AUTO``, which finds no
    files here and, on the bare source op, did not shard at all (TF 2.21):
    every worker trained on every row.

    The options also turn off TensorFlow's ``inject_prefetch`` rewrite.  With
    any ``with_options`` step above the source op, TensorFlow counted that step
    as a transformation and put a prefetch behind the reader (which it does not
    do for the bare op): measured on 60,000 small rows, 20-25 % more CPU per
    read and up to 25 % more wall time on 2 cores.  A pipeline that wants one
    ends in ``.prefetch(tf.data.AUTOTUNE)`` as usual.
    """
    options = tf.data.Options()
    policy = tf.data.experimental.AutoShardPolicy
    options.experimental_distribute.auto_shard_policy = policy.OFF if share else policy.DATA
    options.experimental_optimization.inject_prefetch = False
    return options


def _assemble(
    batches: Any,
    run: Any,
    n_tasks: int,
    schema: DatasetSchema,
    parallel: int,
    batch_size: int | None,
    drop_remainder: bool,
    allocate: data_source.Allocator | None = None,
    description: str = "",
    splits: int = 0,
    arguments: Sequence[Any] = (),
) -> tf.data.Dataset:
    """The dataset's pipeline: the native source op, or interleaved ``from_generator`` readers.

    One reader runs through the native source op
    (:mod:`tensorflow_ignite.native.data_source`) when the element spec is
    dense: every iterator starts ``run(state, next_split)`` (a
    :class:`~.reader.ScanRun`), and batches spanning two pages are joined into
    ``allocate``'s memory; ``description`` lets other processes rebuild it and
    ``splits`` is how many partitions the tf.data service may hand out;
    ``arguments`` are the op's tensor inputs (:mod:`.arguments`).
    Otherwise -- ``parallel`` > 1 readers, ragged fields,
    ``TF_IGNITE_DATASET_SOURCE=generator`` -- ``parallel`` ``from_generator``
    readers ``batches(worker, workers)`` each walk their share of the
    ``n_tasks`` scans, interleaved, then cut or unbatched (process-local).
    """
    signature = schema.element_spec(batched=True)
    workers = max(1, min(parallel, n_tasks))

    def make(worker: Any) -> tf.data.Dataset:
        return tf.data.Dataset.from_generator(batches, args=(worker, np.int64(workers)), output_signature=signature)

    if workers == 1 and data_source.use_native(signature):
        source: dict[str, Any] = dict(resumable=True, description=description, num_splits=splits, arguments=arguments)
        if batch_size is not None:  # cut in Python: cheaper per batch than Dataset.rebatch
            return data_source.python_source(
                run, signature, batch_size=batch_size, drop_remainder=drop_remainder, allocate=allocate, **source
            )
        return data_source.python_source(run, signature, **source).unbatch()
    if arguments:
        raise ConfigurationError(
            "IgniteDataset arguments given as tensors known only when the dataset runs are read through the "
            "native source op, which this dataset does not use (num_parallel_reads > 1, ragged fields, "
            f"{data_source.SOURCE_ENV}=generator or the op library unavailable); pass Python values"
        )
    if workers == 1:
        ds = make(np.int64(0))
    else:
        ds = tf.data.Dataset.range(workers).interleave(
            make,
            cycle_length=workers,
            num_parallel_calls=workers,
            deterministic=False,
        )
    if batch_size is None:
        return ds.unbatch()
    return ds.rebatch(batch_size, drop_remainder=drop_remainder)
