"""``IgniteClient``: connections to a cluster, partition map, routing, failover.

One connection per node, opened on demand.  The client starts from the seed
addresses it is given, learns the other server nodes' client endpoints from the
cluster (``CLUSTER_GROUP_GET_NODE_ENDPOINTS``) and each cache's partition ->
primary node map (``CACHE_PARTITIONS``), so a single-partition request goes
straight to the node that owns the partition.  Any response flagged "affinity
topology changed" makes the cached maps stale; they are fetched again on next
use.  A request that fails because its connection died is retried once on
another node when it is safe to repeat.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
import time
import uuid as _uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Unpack

import numpy as np

from ..errors import (
    CacheNotFoundError,
    ConfigurationError,
    HandshakeError,
    IgniteConnectionError,
    ServerError,
)
from ..protocol import requests, responses
from ..protocol.binary import BinaryDecoder, BinaryEncoder
from ..protocol.buffer import ByteReader
from ..protocol.cache_config import CacheConfiguration
from ..protocol.codes import Feature, Op
from ..protocol.endpoint import DEFAULT_ENDPOINT, DEFAULT_PORT
from ..protocol.framing import finish_request, start_request
from ..protocol.hashing import affinity_partition, affinity_partitions
from ..protocol.hashing import cache_id as _cache_id
from ..protocol.values import BinaryType
from .closeable import Closeable
from .connection import Connection, ConnectionSettings, FrameEncoder
from .metadata import MetadataCache
from .options import ConnectionKeywords, ConnectionOptions
from .retry import same_on_every_node
from .stats import ClientStats, ConnectionStats

if TYPE_CHECKING:
    from .cache import Cache
    from .sql import SqlCursor
    from .transactions import Transaction

__all__ = ["IgniteClient", "PartitionMap", "parse_addresses", "partition_awareness_from_env", "PARTITION_AWARENESS_ENV"]

log = logging.getLogger(__name__)

Address = tuple[str, int]


def parse_addresses(
    addresses: str | Address | Sequence[str | Address], default_port: int = DEFAULT_PORT
) -> list[Address]:
    """``"h1:p1,h2"`` / ``("h", p)`` / a list of either -> ``[(host, port), ...]``."""
    if isinstance(addresses, tuple) and len(addresses) == 2 and isinstance(addresses[1], int):
        items: list[str | Address] = [addresses]
    elif isinstance(addresses, str):
        items = [a for a in addresses.split(",") if a.strip()]
    else:
        items = list(addresses)
    out: list[Address] = []
    for item in items:
        if isinstance(item, tuple):
            out.append((str(item[0]), int(item[1])))
            continue
        text = item.strip()
        if text.startswith("["):  # [ipv6]:port
            host, _, rest = text[1:].partition("]")
            port = int(rest[1:]) if rest.startswith(":") else default_port
        elif text.count(":") == 1:
            host, p = text.split(":")
            try:
                port = int(p)
            except ValueError:
                raise ConfigurationError(f"bad port in address {text!r}") from None
        else:
            host, port = text, default_port
        out.append((host, port))
    if not out:
        raise ConfigurationError("no Ignite address given")
    return out


@dataclass(frozen=True)
class PartitionMap:
    """Primary node of every partition of one cache, at one topology version.

    ``nodes[p]`` is the primary of partition ``p`` (None when unknown);
    ``applicable`` is False for caches where the server does not allow
    partition awareness (replicated caches, custom affinity);
    ``default_affinity`` is False when the cache's affinity function is not
    the standard rendezvous one, so a key's partition cannot be computed here
    (the map of partitions to nodes still holds).
    """

    cache_id: int
    partitions: int
    nodes: tuple[_uuid.UUID | None, ...]
    topology_version: tuple[int, int]
    applicable: bool = True
    default_affinity: bool = True

    def primary(self, partition: int) -> _uuid.UUID | None:
        if 0 <= partition < len(self.nodes):
            return self.nodes[partition]
        return None

    def partitions_of(self, node_id: _uuid.UUID) -> tuple[int, ...]:
        """The partitions whose primary is ``node_id``."""
        return tuple(p for p, n in enumerate(self.nodes) if n == node_id)

    @property
    def maps_keys(self) -> bool:
        """Whether :meth:`primary_of_key` / :meth:`split_by_primary` can place keys (else they say None)."""
        return self.applicable and self.default_affinity and self.partitions > 0

    def primary_of_key(self, key_hash: int) -> _uuid.UUID | None:
        """The primary node of a key whose Java ``hashCode()`` is ``key_hash``; None when unknown.

        For keys without an affinity key mapping: primitive keys (``Long``,
        ``String``), whose hash is ``Long.hashCode`` / ``String.hashCode``.
        """
        if not self.maps_keys:
            return None
        return self.nodes[affinity_partition(key_hash, self.partitions)]

    @functools.cached_property
    def _owner_index(self) -> tuple[list[_uuid.UUID], np.ndarray]:
        """The primaries (sorted) and, per partition, its primary's index there (``len(owners)``: none);
        computed once per map, which a write consults for every batch."""
        owners = sorted({x for x in self.nodes if x is not None}, key=str)
        index = {node: i for i, node in enumerate(owners)}
        return owners, np.array([index[x] if x is not None else len(owners) for x in self.nodes], dtype=np.int64)

    def split_by_primary(self, key_hashes: np.ndarray) -> list[tuple[_uuid.UUID | None, np.ndarray]]:
        """The positions of ``key_hashes`` grouped by their keys' primary node: ``[(node, positions)]``.

        Positions keep their order within a group; keys whose primary is
        unknown -- all of them when keys cannot be placed -- are grouped under
        None (send those to any node: it forwards them).
        """
        n = len(key_hashes)
        if not self.maps_keys or not n:
            return [(None, np.arange(n))]
        owners, owner_of = self._owner_index
        if len(owners) == 1 and not owner_of.any():
            return [(owners[0], np.arange(n))]  # one node owns everything: nothing to compute
        slot = owner_of[affinity_partitions(key_hashes, self.partitions)]
        order = np.argsort(slot, kind="stable")
        bounds = np.searchsorted(slot[order], np.arange(len(owners) + 2))
        groups: list[tuple[_uuid.UUID | None, np.ndarray]] = []
        for i in range(len(owners) + 1):
            positions = order[bounds[i] : bounds[i + 1]]
            if len(positions):
                groups.append((owners[i] if i < len(owners) else None, positions))
        return groups


PARTITION_AWARENESS_ENV = "TF_IGNITE_PARTITION_AWARENESS"


def partition_awareness_from_env() -> bool:
    """``$TF_IGNITE_PARTITION_AWARENESS``: on unless ``0``, ``false``, ``no`` or ``off``."""
    value = os.environ.get(PARTITION_AWARENESS_ENV, "").strip().lower()
    return value not in ("0", "false", "no", "off")


class IgniteClient(Closeable):
    """A thin client for an Ignite cluster.

    ``addresses`` -- one or more ``host:port`` seeds (a string with commas, a
    list, or a ``(host, port)`` tuple).  ``username``/``password`` for clusters
    with authentication; ``cafile``/``certfile``/``keyfile``/``cert_password``
    for TLS, with the server certificate and host name verified unless
    ``insecure_skip_verify=True``.  ``server_hostname`` checks every node's
    certificate against that name instead of the address dialled;
    ``insecure_skip_hostname_verification=True`` checks the chain only.  The
    client keeps them as one :class:`~.options.ConnectionOptions` (``.options``;
    :meth:`from_options` builds a client from one).

    ``partition_awareness`` -- connect to every node and send each partition's
    requests to its primary (the default).  Off, every request goes through the
    seed connections only: for clusters whose nodes announce addresses this
    machine cannot reach (NAT, containers, a load balancer in front).  ``None``
    reads ``$TF_IGNITE_PARTITION_AWARENESS`` (``0``/``false``/``off`` turn it
    off), so the dataset, the writer, ``ignite://`` and launcher workers can be
    switched without code changes.

    ``timeout``, ``connect_timeout`` and ``idle_timeout`` bound every wait on a
    node (:class:`~.options.ConnectionOptions` documents them and their
    defaults; None takes the default).  The connection keywords are
    :class:`~.options.ConnectionKeywords`, the same for every entry point.
    """

    #: The Ignite generation whose handshake this client speaks (:mod:`tensorflow_ignite.generation`).
    generation: ClassVar[int] = 2

    def __init__(
        self,
        addresses: str | Address | Sequence[str | Address] = DEFAULT_ENDPOINT,
        *,
        partition_awareness: bool | None = None,
        **connection: Unpack[ConnectionKeywords],
    ) -> None:
        settings = ConnectionOptions.settings_given(type(self).__name__, connection)
        self.seeds = parse_addresses(addresses)
        #: How this client reaches its cluster (the first seed as host/port, the others as fallbacks).
        self.options = ConnectionOptions.from_address(self.seeds, **settings)
        self.settings = ConnectionSettings(self.options)
        self.partition_awareness = (
            partition_awareness if partition_awareness is not None else partition_awareness_from_env()
        )
        self._lock = threading.RLock()
        self._by_node: dict[_uuid.UUID, Connection] = {}
        self._by_address: dict[Address, Connection] = {}
        self._endpoints: dict[_uuid.UUID, list[Address]] = {}
        self._endpoint_version = -1
        self._partition_maps: dict[int, PartitionMap] = {}
        self._affinity_version: tuple[int, int] = (0, 0)
        #: Nodes whose connection failed or that could not be dialled -> when (monotonic): not
        #: dialled again for ``idle_timeout`` -- a node cut off would cost ``connect_timeout`` per
        #: partition routed to it; its requests go through another node meanwhile.
        self._unreachable: dict[_uuid.UUID, float] = {}
        self._closed = False
        self.metadata = MetadataCache(self)
        self._default = self._connect_any()

    @classmethod
    def from_options(cls, options: ConnectionOptions, *, partition_awareness: bool | None = None) -> "IgniteClient":
        """A new client for ``options`` (the caller closes it)."""
        return cls(
            options.endpoints, **ConnectionOptions.settings_in(vars(options)), partition_awareness=partition_awareness
        )

    # ------------------------------------------------------------- connections
    def _on_topology_change(self, major: int, minor: int) -> None:
        with self._lock:
            if (major, minor) > self._affinity_version:
                self._affinity_version = (major, minor)

    def _open(self, address: Address) -> Connection:
        conn = Connection(address[0], address[1], self.settings, on_topology_change=self._on_topology_change)
        with self._lock:
            old = self._by_address.get(address)
            if old is not None and old is not conn:
                old.close()
            self._by_address[address] = conn
            if conn.handshake is not None and conn.handshake.node_id is not None:
                self._by_node[conn.handshake.node_id] = conn
        return conn

    def _connect_any(self, exclude: Iterable[Address] = ()) -> Connection:
        skip = set(exclude)
        errors: list[str] = []
        candidates = [a for a in self.seeds if a not in skip]
        if self.partition_awareness:
            # Without partition awareness only the addresses given are dialled (as
            # Ignite's own thin clients do): nodes behind a proxy or NAT announce
            # addresses this client may not be meant to use.
            candidates += [a for eps in self._endpoints.values() for a in eps if a not in skip and a not in candidates]
        # Nodes just given up on are dialled last: a host cut off costs connect_timeout per try.
        shunned = {a for n, eps in self._endpoints.items() if self._recently_unreachable(n) for a in eps}
        candidates.sort(key=lambda a: a in shunned)
        failures: list[IgniteConnectionError] = []
        # Once the cluster's nodes are known, an address that answers as another node -- an island
        # left by a network partition, another cluster on an address this one announced -- is used
        # only when none of the known nodes answers (the whole cluster was restarted: new ids).
        known = set(self._endpoints)
        strangers: list[Connection] = []
        for address in candidates:
            existing = self._by_address.get(address)
            if existing is not None and not existing.closed:
                if self._member(existing, known):
                    return existing
                strangers.append(existing)
                continue
            try:
                conn = self._open(address)
                if not self._member(conn, known):
                    log.warning(
                        "%s answers as node %s, which is not in the cluster's topology; trying the known nodes first",
                        conn.address,
                        conn.handshake.node_id if conn.handshake else None,
                    )
                    strangers.append(conn)
                    continue
                for other in strangers:
                    self._forget(other)
                return conn
            except IgniteConnectionError as exc:
                failures.append(exc)
                errors.append(f"{address[0]}:{address[1]}: {exc}")
                # TLS or credentials: the next node is configured the same way, so
                # this will not get better.  (A plain HandshakeError may be a node
                # dying while we connect: try the others.)
                if same_on_every_node(exc):
                    raise
        if strangers:
            for other in strangers[1:]:
                self._forget(other)
            return strangers[0]
        if len(failures) == 1:
            raise failures[0]
        # Every address answered but refused the handshake: a HandshakeError still (what it is when one
        # address is given: e.g. nodes of an Ignite 3 cluster, which the file store then dials as such).
        kind = (
            HandshakeError
            if failures and all(isinstance(f, HandshakeError) for f in failures)
            else IgniteConnectionError
        )
        raise kind(
            "could not connect to any Ignite node:\n  " + "\n  ".join(errors or ["no addresses"]),
            address=",".join(f"{h}:{p}" for h, p in candidates),
        )

    @property
    def default_connection(self) -> Connection:
        """The connection used when no node is preferred (reconnecting if it died)."""
        conn = self._default
        if conn.closed:
            with self._lock:
                if self._default.closed:
                    self._default = self._connect_any()
                    # The node we talked to is gone: the cluster may have been
                    # restarted meanwhile (new node ids, topology versions counting
                    # from 1 again), so what was learned from it is not trusted.
                    self._endpoint_version = -1
                    self._affinity_version = (0, 0)
                    self._partition_maps.clear()
                conn = self._default
        return conn

    def _recently_unreachable(self, node_id: _uuid.UUID) -> bool:
        """Whether ``node_id``'s connection failed, or it could not be dialled, within ``idle_timeout``."""
        failed_at = self._unreachable.get(node_id)
        return failed_at is not None and time.monotonic() - failed_at < self.settings.idle_timeout

    @staticmethod
    def _member(conn: Connection, known: set[_uuid.UUID]) -> bool:
        """Whether ``conn``'s node is one of ``known`` (True when nothing is known yet)."""
        if not known:
            return True
        return conn.handshake is not None and conn.handshake.node_id in known

    def _forget(self, conn: Connection) -> None:
        """Close ``conn`` and unregister it, without marking its node unreachable."""
        conn.close()
        with self._lock:
            self._unregister(conn)

    def _unregister(self, conn: Connection) -> None:
        """Remove ``conn`` from the by-node and by-address tables (the caller holds the lock)."""
        for k, v in list(self._by_node.items()):
            if v is conn:
                del self._by_node[k]
        for a, v in list(self._by_address.items()):
            if v is conn:
                del self._by_address[a]

    def drop_connection(self, conn: Connection) -> None:
        """Close ``conn`` after it failed and forget what was learned through it.

        Partition maps are dropped too (the node may have left), so the next
        routed request fetches a fresh map; the default connection is reopened
        to another node on next use.
        """
        self._drop(conn)

    def _drop(self, conn: Connection) -> None:
        conn.close()
        with self._lock:
            if conn.handshake is not None and conn.handshake.node_id is not None:
                self._unreachable[conn.handshake.node_id] = time.monotonic()
            self._unregister(conn)
            self._partition_maps.clear()

    def connection_for_node(self, node_id: _uuid.UUID | None) -> Connection:
        """A live connection to ``node_id`` (opened on demand), else the default one."""
        if node_id is None or not self.partition_awareness:
            return self.default_connection
        conn = self._by_node.get(node_id)
        if conn is not None and not conn.closed:
            return conn
        if self._recently_unreachable(node_id):
            return self.default_connection
        endpoints = self.node_endpoints().get(node_id, [])
        # Serialized so that parallel readers open one connection per node, not one each.
        with self._lock:
            conn = self._by_node.get(node_id)
            if conn is not None and not conn.closed:
                return conn
            for address in endpoints:
                existing = self._by_address.get(address)
                if existing is not None and not existing.closed:
                    continue  # that address answers as another node
                try:
                    conn = self._open(address)
                except IgniteConnectionError as exc:
                    log.debug("cannot reach node %s at %s: %s", node_id, address, exc)
                    continue
                if conn.handshake is not None and conn.handshake.node_id == node_id:
                    self._unreachable.pop(node_id, None)
                    return conn
                # Another node answers at an address this node announced (127.0.0.1 on
                # another machine, a container's address): never used as this node.
                log.info(
                    "%s answers as node %s, not as %s; not used for it",
                    conn.address,
                    conn.handshake.node_id if conn.handshake else None,
                    node_id,
                )
                self._forget(conn)
            if endpoints:
                self._unreachable[node_id] = time.monotonic()
        return self.default_connection

    def server_nodes(self) -> list[responses.NodeInfo]:
        """Details of every server node of the cluster now: id, consistent id, addresses,
        attributes (user attributes included), product version."""
        ids = responses.decode_node_ids(
            self.request(
                lambda rid: requests.cluster_group_get_node_ids(rid, server_nodes=True), Op.CLUSTER_GROUP_GET_NODE_IDS
            )
        )
        if not ids.node_ids:
            return []
        body = self.request(
            lambda rid: requests.cluster_group_get_node_info(rid, ids.node_ids), Op.CLUSTER_GROUP_GET_NODE_INFO
        )
        return responses.decode_node_info(body, self.decoder())

    def node_endpoints(self, refresh: bool = False) -> dict[_uuid.UUID, list[Address]]:
        """Client-connector addresses of every server node (cached until the topology changes)."""
        conn = self.default_connection
        if not refresh and self._endpoints and self._endpoint_version >= self._affinity_version[0]:
            return self._endpoints
        if Feature.CLUSTER_GROUP_GET_NODES_ENDPOINTS not in conn.features:
            return self._endpoints

        def encode(rid: int) -> bytes:
            w = start_request(Op.CLUSTER_GROUP_GET_NODE_ENDPOINTS, rid)
            w.i64(-1)  # start topology version: everything
            w.i64(-1)  # end topology version: the current one
            return finish_request(w)

        body = self.request(encode, Op.CLUSTER_GROUP_GET_NODE_ENDPOINTS)
        r = ByteReader(body)
        version = r.i64("endpoints topology version")
        endpoints: dict[_uuid.UUID, list[Address]] = {}
        for _ in range(r.length("endpoint node count", 20)):
            node = r.raw_uuid("endpoint node id")
            port = r.i32("client port")
            hosts = [r.typed_string("node address") or "" for _ in range(r.length("address count", 1))]
            # Prefer the address we already reach the cluster by (loopback in tests).
            seed_hosts = {h for h, _ in self.seeds}
            ordered = sorted(set(hosts), key=lambda h: (h not in seed_hosts, ":" in h, h))
            endpoints[node] = [(h, port) for h in ordered if h]
        with self._lock:
            self._endpoints = endpoints
            self._endpoint_version = version
            self._forget_departed(endpoints)
        return endpoints

    def _forget_departed(self, endpoints: dict[_uuid.UUID, list[Address]]) -> None:
        """Close the connections to nodes that are no longer in the topology (lock held).

        A node killed while none of our requests was on its connection leaves
        that connection looking open: nothing reads from it any more, so its
        failure is never noticed.  Kept, it would also hold the node's address
        -- and a node restarted there (a new node id on the same port) would
        never be dialled, its partitions served through another node for good.
        """
        for node in [n for n in self._unreachable if n not in endpoints]:
            del self._unreachable[node]
        for node, conn in list(self._by_node.items()):
            if node in endpoints:
                continue
            log.info("node %s (%s) has left the cluster; closing its connection", node, conn.address)
            del self._by_node[node]
            for a, v in list(self._by_address.items()):
                if v is conn:
                    del self._by_address[a]
            conn.close()

    # ---------------------------------------------------------------- requests
    def request(
        self,
        encode: FrameEncoder,
        op: int | None = None,
        *,
        node_id: _uuid.UUID | None = None,
        retry: bool = True,
    ) -> memoryview:
        """Send one request (to ``node_id`` when given) and return its answer body.

        With ``retry`` (safe for idempotent requests), a connection that dies is
        dropped and the request is sent once more to another node.
        """
        conn = self.connection_for_node(node_id) if node_id is not None else self.default_connection
        try:
            return conn.request(encode, op)
        except IgniteConnectionError:
            self._drop(conn)
            if not retry:
                raise
            return self.default_connection.request(encode, op)

    # ------------------------------------------------------------------ caches
    def cache(self, name: str) -> "Cache":
        """A handle on an existing cache (no round trip)."""
        from .cache import Cache

        return Cache(self, name)

    def cache_names(self) -> list[str]:
        return responses.decode_cache_names(self.request(requests.cache_get_names, Op.CACHE_GET_NAMES))

    def create_cache(self, config: str | CacheConfiguration) -> "Cache":
        """Create a cache (error if it exists)."""
        return self._open_cache(config, create_only=True)

    def get_or_create_cache(self, config: str | CacheConfiguration) -> "Cache":
        """Create a cache unless it exists; return it."""
        return self._open_cache(config, create_only=False)

    def _open_cache(self, config: str | CacheConfiguration, *, create_only: bool) -> "Cache":
        """Create a cache by name or configuration; ``create_only``: an existing one is an error (never retried)."""
        if isinstance(config, str):
            name = config
            by_name, op = (
                (requests.cache_create_with_name, Op.CACHE_CREATE_WITH_NAME)
                if create_only
                else (requests.cache_get_or_create_with_name, Op.CACHE_GET_OR_CREATE_WITH_NAME)
            )
            self.request(lambda rid: by_name(rid, name), op, retry=not create_only)
        else:
            name = config.name
            version = self.default_connection.version
            by_config, op = (
                (requests.cache_create_with_configuration, Op.CACHE_CREATE_WITH_CONFIGURATION)
                if create_only
                else (requests.cache_get_or_create_with_configuration, Op.CACHE_GET_OR_CREATE_WITH_CONFIGURATION)
            )
            self.request(lambda rid: by_config(rid, config, version), op, retry=not create_only)
        return self.cache(name)

    def destroy_cache(self, name: str) -> None:
        cid = _cache_id(name)
        try:
            self.request(lambda rid: requests.cache_destroy(rid, cid), Op.CACHE_DESTROY)
        except ServerError as exc:
            raise CacheNotFoundError(f"cannot destroy cache {name!r}: {exc}", status=exc.status, op=exc.op) from None

    # -------------------------------------------------------------- partitions
    def partition_map(self, cache_name: str, *, refresh: bool = False) -> PartitionMap:
        """The partition -> primary node map of a cache (cached per topology version)."""
        cid = _cache_id(cache_name)
        cached = self._partition_maps.get(cid)
        if cached is not None and not refresh and cached.topology_version >= self._affinity_version:
            return cached
        conn = self.default_connection
        features = conn.features
        try:
            body = self.request(
                lambda rid: requests.cache_partitions(rid, [cid], features=features), Op.CACHE_PARTITIONS
            )
        except ServerError as exc:
            raise CacheNotFoundError(
                f"cannot read the partitions of cache {cache_name!r}: {exc}", status=exc.status, op=exc.op
            ) from None
        answer = responses.decode_cache_partitions(body, features=features)
        group = answer.group_for(cid)
        if group is None or not group.applicable:
            pmap = PartitionMap(cid, 0, (), answer.topology_version, applicable=False)
        else:
            nodes = tuple(group.partition_to_node())
            pmap = PartitionMap(
                cid, len(nodes), nodes, answer.topology_version, default_affinity=group.default_affinity
            )
        with self._lock:
            if answer.topology_version > self._affinity_version:
                self._affinity_version = answer.topology_version
            self._partition_maps[cid] = pmap
        return pmap

    # -------------------------------------------------------------- metadata
    def binary_type(self, type_id_or_name: int | str) -> BinaryType | None:
        """Binary type metadata from the cluster (cached)."""
        return self.metadata.get(type_id_or_name)

    def put_binary_type(self, binary_type: BinaryType) -> None:
        """Register binary type metadata on the cluster."""
        self.metadata.put(binary_type)

    def decoder(self) -> BinaryDecoder:
        """A fresh decoder that resolves schemas through this client's metadata."""
        return BinaryDecoder(self.metadata)

    def encoder(self) -> BinaryEncoder:
        """A fresh encoder that knows the cluster's field types."""
        return BinaryEncoder(self.metadata.registry)

    def register_types(self, encoder: BinaryEncoder) -> None:
        """Register every type ``encoder`` wrote that the cluster does not know yet."""
        for t in encoder.types.values():
            known = self.metadata.registry.get(t.type_id)
            if known is not None and set(t.schemas) <= set(known.schemas) and set(t.fields) <= set(known.fields):
                continue
            self.put_binary_type(t)

    # ------------------------------------------------------------ transactions
    def transaction(self, **kwargs: Any) -> "Transaction":
        """Start a transaction (see :class:`~tensorflow_ignite.client.transactions.Transaction`)."""
        from .transactions import Transaction

        return Transaction(self, **kwargs)

    # -------------------------------------------------------------------- SQL
    def sql(self, query: str, args: Sequence[Any] = (), **kwargs: Any) -> "SqlCursor":
        """Run an SQL fields query; see :class:`~tensorflow_ignite.client.sql.SqlCursor`."""
        from .sql import SqlCursor

        return SqlCursor(self, query, args, **kwargs)

    # ---------------------------------------------------------------- cluster
    @property
    def node_ids(self) -> list[_uuid.UUID]:
        """Server nodes with a client connector, as last learned."""
        return list(self.node_endpoints())

    def connections(self) -> list[Connection]:
        """Every open connection of this client (one per node it has talked to)."""
        with self._lock:
            return [c for c in self._by_address.values() if not c.closed]

    def stats(self) -> ClientStats:
        """A snapshot of every open connection: its node, requests (per op code) and bytes each way."""
        return ClientStats(
            tuple(
                ConnectionStats(
                    c.handshake.node_id if c.handshake is not None else None,
                    c.address,
                    c.requests_sent,
                    c.bytes_sent,
                    c.bytes_received,
                    dict(c.op_counts),
                )
                for c in self.connections()
            )
        )

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called (a closed client opens no more connections)."""
        return self._closed

    def close(self) -> None:
        """Close every connection (idempotent)."""
        with self._lock:
            conns = list(self._by_address.values())
            self._by_address.clear()
            self._by_node.clear()
            self._closed = True
        for c in conns:
            c.close()

    def __repr__(self) -> str:
        seeds = ",".join(f"{h}:{p}" for h, p in self.seeds)
        return f"<IgniteClient {seeds} connections={len(self.connections())}>"
