"""The capacity guard: room left in a cache's data region, checked before and while writing.

Writing more than an in-memory Ignite data region holds makes the node throw
``IgniteOutOfMemoryException``, a critical failure: Ignite stops the node, and on
an in-memory cluster the data of every cache on it is gone.  ``write``,
``ignite-tf load`` and ``ignite://`` writes therefore ask, before they store
anything and again between batches, how full the target cache's region is on
every server node, and refuse with :class:`~tensorflow_ignite.errors.CapacityError`
(naming the region, its size, what is used and what the write needs) rather
than stop someone's node.  The writers then roll back what they stored.

**Where the numbers come from.**  The tensorflow-ignite module's launcher
service (``TfJobService.regions``, which broadcasts ``RegionReport`` to every
server node carrying the module; asked through the thin client's service call,
:func:`tensorflow_ignite.client.services.invoke_service`) returns each node's regions: name, max size,
persistence, page size, and ``TotalUsedSize`` (allocated pages minus the empty
pages a write can reuse; Ignite counts it whether or not the region enables
metrics).  Without the module, a cluster with an SQL engine answers the same
through its system views, asked on each node (``SYS.CONFIGURATION`` and
``SYS.METRICS``, checked on Ignite 2.17 with ``ignite-indexing``).  Ignite 2.18
``ignite-core`` alone has no SQL engine and the thin client's node details carry
no memory figures, so there the guard says once, as a logged warning, that it
cannot check, and lets the write proceed.

**What is at risk.**  Only in-memory regions without page eviction: a region
with persistence keeps pages on disk and replaces them in RAM (its max size
bounds the RAM cache, not the data), and a region with eviction drops old
entries instead of failing.  The guard skips both (``RegionUsage.guarded``).

**What a write needs** (measured on Ignite 2.18, see ARCHITECTURE.md / RELIABILITY.md):
an entry costs its encoded key and value plus ``ENTRY_OVERHEAD`` bytes (row
header, data-page item, hash-index item), divided by ``FILL_FACTOR`` (pages are
not filled completely), times the number of copies (``1 + backups``, at most
the number of nodes), spread over the nodes with ``IMBALANCE`` for uneven
partition placement.  A region counts as full at ``USABLE_FRACTION`` of its max
size (Ignite's page memory loses some of ``maxSize`` to segment headers and
page overhead, and the region's indexes and free lists need room to grow).
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import CapacityError, IgniteError

if TYPE_CHECKING:
    from .client import IgniteClient

__all__ = [
    "RegionUsage",
    "CapacityGuard",
    "region_usage",
    "sql_region_usage",
    "estimate_bytes",
    "node_share",
    "shortfall",
    "ENTRY_OVERHEAD",
    "FILL_FACTOR",
    "USABLE_FRACTION",
    "IMBALANCE",
]

log = logging.getLogger(__name__)

#: Bytes a stored entry costs beyond its encoded key and value (row header, data-page item,
#: hash-index item, the unused end of its last page); measured 84-190 (RELIABILITY.md).
ENTRY_OVERHEAD = 200
#: Encoded bytes take ``1 / FILL_FACTOR`` region bytes (page headers, fragment links); measured 1.022-1.035.
FILL_FACTOR = 0.95
#: Region bytes a new cache's partition takes on a node before any entry (meta page, tree roots,
#: free lists): measured 8.05 MiB for a 1,024-partition cache on one node, 2 pages per partition.
PARTITION_BYTES = 8448
#: Share of a region's max size the guard lets fill; Ignite failed at 97.3-98.1 % (measured).
USABLE_FRACTION = 0.90
#: How much more than its even share the busiest node may receive.
IMBALANCE = 1.20
#: Figures are read again after this many admitted bytes (or a quarter of the room left, if more)...
REFRESH_BYTES = 4 << 20
#: ... or when they are older than this many seconds.
REFRESH_SECONDS = 2.0
#: How long "no figures available" is remembered before asking again.
UNKNOWN_RETRY_SECONDS = 60.0

_MIB = 1 << 20


def _mib(n: float) -> str:
    return f"{n / _MIB:,.1f} MiB"


@dataclass(frozen=True)
class RegionUsage:
    """One data region on one server node, as ``TfJobService.regions`` reports it."""

    node: str
    node_id: str
    region: str
    default: bool
    persistence: bool
    eviction: str
    max_size: int
    used_size: int
    page_size: int

    @property
    def guarded(self) -> bool:
        """Whether a full region stops the node: in memory only, no page eviction."""
        return not self.persistence and self.eviction in ("", "DISABLED")

    @property
    def usable(self) -> int:
        """Bytes of the region that can hold data (``USABLE_FRACTION`` of the max size)."""
        return int(self.max_size * USABLE_FRACTION)

    @property
    def free(self) -> int:
        return max(0, self.usable - self.used_size)

    @classmethod
    def from_report(cls, row: dict[str, Any]) -> "RegionUsage":
        return cls(
            node=str(row.get("node", "?")),
            node_id=str(row.get("node_id", "")),
            region=str(row.get("region", "default")),
            default=bool(row.get("default", False)),
            persistence=bool(row.get("persistence", False)),
            eviction=str(row.get("eviction", "DISABLED")),
            max_size=int(row.get("max_size", 0)),
            used_size=int(row.get("used_size", 0)),
            page_size=int(row.get("page_size", 4096)),
        )


def estimate_bytes(payload: int, entries: int, *, copies: int = 1, partitions: int = 0) -> int:
    """Region bytes, all copies together, that ``entries`` entries of ``payload`` encoded bytes take,
    plus ``partitions`` new partitions (a cache about to be created: its partition count)."""
    if payload <= 0 and entries <= 0 and partitions <= 0:
        return 0
    one = int(payload / FILL_FACTOR) + entries * ENTRY_OVERHEAD + partitions * PARTITION_BYTES
    return one * max(1, copies)


def node_share(total: int, nodes: int, largest_entry: int = 0) -> int:
    """What the busiest of ``nodes`` nodes receives of ``total`` region bytes (all copies)."""
    if nodes <= 1:
        return total
    return min(total, int(total / nodes * IMBALANCE) + 2 * largest_entry)


class _Unavailable(Exception):
    """No region figures: the reason, for the one warning."""


def region_usage(client: "IgniteClient", *, module: bool = True) -> tuple[list[RegionUsage], str]:
    """Every server node's data regions and where the figures came from.

    First through the tensorflow-ignite module's service (``module``; its ``regions`` method),
    else through the SQL system views of a cluster with an SQL engine (:func:`sql_region_usage`).
    Raises ``_Unavailable`` (internal) with the reasons when neither can say.
    """
    from .client.services import MODULE_SERVICE, invoke_service
    from .errors import ServerError

    if not module:
        return sql_region_usage(client), "SQL system views"
    try:
        rows = invoke_service(client, MODULE_SERVICE, "regions")
    except ServerError as exc:
        # No module on the nodes ("Service not found"), or an older one without the method: the SQL views.
        reason = " ".join(str(exc).split())[:300]
        if "regions" in reason and ("method" in reason.lower() or "NoSuchMethod" in reason):
            reason = f"the nodes run an older tensorflow-ignite module without region reports ({reason})"
        try:
            return sql_region_usage(client), "SQL system views"
        except _Unavailable as sql:
            raise _Unavailable(f"{reason}; and {sql}") from None
    if not isinstance(rows, list):
        raise _Unavailable(f"the launcher service answered {type(rows).__name__}, not a list of regions")
    return [RegionUsage.from_report(r) for r in rows if isinstance(r, dict)], "launcher module"


_CONFIG_PREFIX = "DataStorageConfiguration."
_REGION_KEY = re.compile(
    r"^DataStorageConfiguration\.(DefaultDataRegionConfiguration|DataRegionConfigurations\[\d+\])\."
    r"(Name|MaxSize|PersistenceEnabled|PageEvictionMode)$"
)


def sql_region_usage(client: "IgniteClient") -> list[RegionUsage]:
    """Every server node's data regions from the SQL system views, asked on each node.

    ``SYS.CONFIGURATION`` gives the regions' names, max sizes, persistence and eviction,
    ``SYS.METRICS`` their ``io.dataregion.<name>.TotalUsedSize``.  Both views show the
    node that runs the query, so the query goes to each server node's own connection.
    Needs an SQL engine on the nodes (``ignite-indexing`` or ``ignite-calcite``; Ignite 2.18
    ``ignite-core`` alone has none) and a connection to every node (partition awareness).
    """
    from .errors import IgniteError

    out: list[RegionUsage] = []
    try:
        nodes = client.server_nodes()
    except IgniteError as exc:
        raise _Unavailable(f"the server nodes could not be listed ({exc})") from None
    for node in nodes:
        label = str(node.consistent_id if node.consistent_id is not None else node.node_id)
        conn = client.connection_for_node(node.node_id)
        if conn.handshake is None or conn.handshake.node_id != node.node_id:
            raise _Unavailable(
                f"no connection of its own to node {label} (partition awareness is off or its "
                "address cannot be reached), and the SQL system views show only the node asked"
            )
        try:
            config = client.sql(
                "SELECT NAME, VALUE FROM SYS.CONFIGURATION WHERE NAME LIKE ?",
                [_CONFIG_PREFIX + "%"],
                schema="SYS",
                node_id=node.node_id,
            ).fetchall()
            metrics = client.sql(
                "SELECT NAME, VALUE FROM SYS.METRICS WHERE NAME LIKE 'io.dataregion.%'",
                schema="SYS",
                node_id=node.node_id,
            ).fetchall()
        except IgniteError as exc:
            raise _Unavailable(
                f"the cluster's SQL system views cannot be read ({' '.join(str(exc).split())[:200]})"
            ) from None
        regions: dict[str, dict[str, str]] = {}
        page_size = 4096
        for name, value in config:
            if name == _CONFIG_PREFIX + "PageSize" and value and int(value) > 0:
                page_size = int(value)
            m = _REGION_KEY.match(str(name))
            if m is not None:
                regions.setdefault(m.group(1), {})[m.group(2)] = "" if value is None else str(value)
        used = {str(n): str(v) for n, v in metrics}
        for key, props in regions.items():
            region = props.get("Name") or "default"
            out.append(
                RegionUsage(
                    node=label,
                    node_id=str(node.node_id),
                    region=region,
                    default=key == "DefaultDataRegionConfiguration",
                    persistence=props.get("PersistenceEnabled", "false").lower() == "true",
                    eviction=props.get("PageEvictionMode") or "DISABLED",
                    max_size=int(props.get("MaxSize") or used.get(f"io.dataregion.{region}.MaxSize") or 0),
                    used_size=int(used.get(f"io.dataregion.{region}.TotalUsedSize", "0")),
                    page_size=page_size,
                )
            )
        if not regions:
            raise _Unavailable(f"node {label} lists no data regions in SYS.CONFIGURATION")
    return out


# One warning per cluster (seed addresses) and process when figures are not available.
_warned: set[str] = set()
_warned_lock = threading.Lock()


class CapacityGuard:
    """Checks that writes into ``cache_name`` fit its data region on every server node.

    :meth:`check` is the up-front test of a whole write; :meth:`admit` is called
    before each batch or block and re-reads the region figures after
    ``REFRESH_BYTES`` (or a quarter of the room left, if more) admitted bytes or
    ``REFRESH_SECONDS``, so a write that
    grows past the limit while it runs -- someone else filled the region, or the
    estimate was low -- stops with a :class:`CapacityError` before the node
    runs out of pages.  ``copies`` is ``1 + backups``.  ``enabled=False`` (or
    ``TF_IGNITE_CAPACITY_GUARD=0``) turns every check into a no-op.  The figures
    come from the module's service when the nodes carry it, else from the SQL system views
    (:func:`region_usage`); ``module=False`` asks only the latter.

    ``stats`` counts refreshes and checks (for tests and diagnostics).
    """

    def __init__(
        self,
        client: "IgniteClient",
        cache_name: str,
        *,
        copies: int = 1,
        region: str | None = None,
        what: str = "write",
        enabled: bool | None = None,
        module: bool = True,
    ) -> None:
        import os

        self.client = client
        self.cache_name = cache_name
        self.copies = max(1, int(copies))
        self.what = what
        self._region = region
        if enabled is None:
            enabled = os.environ.get("TF_IGNITE_CAPACITY_GUARD", "1").strip().lower() not in ("0", "false", "no", "off")
        self.enabled = enabled
        self._rows: list[RegionUsage] | None = None
        self._headroom = 0  # bytes the busiest node had left after the last check (for refresh pacing)
        self._module = module
        self._at = 0.0
        self._since = 0
        self._unknown_at = 0.0
        self._lock = threading.Lock()
        #: Where the figures came from: ``"launcher module"``, ``"SQL system views"``, or None while unknown.
        self.source: str | None = None
        self.stats = {"refreshes": 0, "checks": 0, "refusals": 0}

    # -------------------------------------------------------------- figures
    def _region_name(self) -> str | None:
        if self._region is not None:
            return self._region
        try:
            if self.cache_name in self.client.cache_names():
                self._region = self.client.cache(self.cache_name).configuration().data_region_name or ""
                return self._region
        except IgniteError as exc:
            log.debug("cannot read the configuration of cache %r: %s", self.cache_name, exc)
        return None  # not created yet: the default region

    def _refresh(self) -> list[RegionUsage] | None:
        now = time.monotonic()
        if self._unknown_at and now - self._unknown_at < UNKNOWN_RETRY_SECONDS:
            return None
        try:
            rows, source = region_usage(self.client, module=self._module)
        except (_Unavailable, IgniteError) as exc:
            self._unknown_at = now
            self._rows = None
            self._warn_once(str(exc))
            return None
        self._unknown_at = 0.0
        self.stats["refreshes"] += 1
        self.source = source
        name = self._region_name()
        if name:
            mine = [r for r in rows if r.region == name]
        else:
            mine = [r for r in rows if r.default]
        self._rows = mine
        self._at = now
        self._since = 0
        return mine

    def _warn_once(self, reason: str) -> None:
        cluster = ",".join(f"{h}:{p}" for h, p in self.client.seeds)
        with _warned_lock:
            if cluster in _warned:
                log.debug("capacity guard: no region figures for %s: %s", cluster, reason)
                return
            _warned.add(cluster)
        log.warning(
            "tensorflow-ignite cannot check how much room the data regions of %s have, so writes there are not "
            "guarded against filling a region (which makes Ignite stop the node): %s. The guard needs the "
            "tensorflow-ignite module on the server nodes (README, 'Use your own Ignite cluster').",
            cluster,
            reason,
        )

    def regions(self, *, refresh: bool = True) -> list[RegionUsage] | None:
        """The target region on every server node (None: not available)."""
        with self._lock:
            if refresh or self._rows is None:
                return self._refresh()
            return self._rows

    # --------------------------------------------------------------- checks
    def check(self, payload: int, entries: int, *, largest_entry: int = 0, new_partitions: int = 0) -> None:
        """Refuse, before anything is stored, a write of ``entries`` entries and ``payload`` bytes
        (into a cache still to be created with ``new_partitions`` partitions) that does not fit."""
        if not self.enabled:
            return
        with self._lock:
            rows = self._refresh()
            if rows is not None:
                self._verify(rows, estimate_bytes(payload, entries, partitions=new_partitions), largest_entry, 0)

    def admit(
        self, payload: int, entries: int, *, remaining: tuple[int, int] | None = None, largest_entry: int = 0
    ) -> None:
        """Before storing ``entries`` entries of ``payload`` bytes: raise :class:`CapacityError`
        if they -- or ``remaining`` (payload, entries) of the whole write still to come, when
        known -- no longer fit.  Figures are re-read every ``REFRESH_BYTES`` or ``REFRESH_SECONDS``."""
        if not self.enabled:
            return
        need = estimate_bytes(payload, entries)
        with self._lock:
            stale = (
                self._rows is None
                or self._since + need > max(REFRESH_BYTES, self._headroom // 4)
                or time.monotonic() - self._at > REFRESH_SECONDS
            )
            rows = self._refresh() if stale else self._rows
            if rows is None:
                return
            total = need
            if remaining is not None:
                total = max(need, estimate_bytes(remaining[0], remaining[1]))
            self._verify(rows, total, largest_entry, self._since)
            self._since += need

    def _verify(self, rows: Sequence[RegionUsage], need: int, largest_entry: int, pending: int) -> None:
        """``need`` and ``pending`` (admitted since the figures were read) are bytes of one copy."""
        self.stats["checks"] += 1
        short = shortfall(rows, need, copies=self.copies, largest_entry=largest_entry, pending=pending)
        guarded = [r for r in rows if r.guarded]
        if guarded:
            nodes = len(rows)
            copies = min(self.copies, nodes)
            self._headroom = (
                min(r.free for r in guarded)
                - node_share(need * copies, nodes, largest_entry)
                - node_share(pending * copies, nodes, 0)
            )
        else:
            self._headroom = 1 << 62
        if short is None:
            return
        r, share, pending_share = short
        self.stats["refusals"] += 1
        used = r.used_size + pending_share
        raise CapacityError(
            f"{self.what} into cache {self.cache_name!r} refused: it needs about {_mib(share)} more in data "
            f"region {r.region!r} on node {r.node}, which holds {_mib(r.max_size)} (max size) and already "
            f"uses {_mib(used)}; the guard keeps {100 - USABLE_FRACTION * 100:.0f} % of a region free, so "
            f"{_mib(max(0, r.free - pending_share))} are left. Filling an in-memory region makes Ignite stop "
            "the node. Free room (destroy caches you no longer need), raise the region's maxSize, add nodes, "
            "or enable persistence for that region.",
            region=r.region,
            node=r.node,
            max_size=r.max_size,
            used=used,
            needed=share,
            cache_name=self.cache_name,
        )


def shortfall(
    rows: Sequence[RegionUsage], need: int, *, copies: int = 1, largest_entry: int = 0, pending: int = 0
) -> tuple[RegionUsage, int, int] | None:
    """The node that cannot take a write, or None when every node can.

    ``rows`` is the target region on every server node; ``need`` the region bytes of one
    copy of the write (:func:`estimate_bytes`) and ``pending`` those admitted since ``rows``
    were read.  A node holds at most one copy of a partition, so ``copies`` counts up to the
    number of nodes; the busiest node takes :func:`node_share`.  Returns that node's row, its
    share of ``need`` and of ``pending``.  Regions that are not :attr:`RegionUsage.guarded`
    always fit.
    """
    guarded = [r for r in rows if r.guarded]
    if not guarded:
        return None
    nodes = len(rows)
    copies = min(max(1, copies), nodes)
    share = node_share(need * copies, nodes, largest_entry)
    pending_share = node_share(pending * copies, nodes, 0) if pending else 0
    for r in sorted(guarded, key=lambda r: r.free):
        if share + pending_share > r.free:
            return r, share, pending_share
    return None
