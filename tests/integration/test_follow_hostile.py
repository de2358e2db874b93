"""The follow log against a hostile authenticated user: nothing a client does moves a follower.

Ignite 2 OSS has authentication but no authorization: every authenticated user may invoke any
public method of a deployed service by name and read and write every cache, the follow log's
too. Two nodes with authentication keep the follow log of the caches below (and, for (a) and (b),
one stock 2.17 node from Spring XML does); alice follows, mallory (authenticated, not an admin) attacks:

(a) every public method of ``FollowLogService``: the setters, ``init``, ``execute`` and
    ``cancel`` are refused (the no-argument ``Service`` defaults do nothing), and afterwards the
    log is still written on both nodes and a follower still gets each update once;
(b) a forged entry at counter 2^62 with a plausible ``prev``: neither delivered nor moving the
    position (a live follower and one restored from a checkpoint get every real update after it);
(c) a forged entry at the next real (partition, counter) is overwritten by the writers and the
    real update delivered; an entry's value replaced after it was written is never delivered
    (the restored follower stops with ``FollowPositionLostError``: the real update is gone --
    unless a writer that had not written that entry yet overwrote the replacement);
(d) a real entry copied to other counters and another partition (replay): never delivered.
"""

from __future__ import annotations

import re
import secrets
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tensorflow as tf

from tensorflow_ignite import IgniteDataset
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.data.dataset import close_shared_clients
from tensorflow_ignite.data.follow_log import SERVICE_NAME, LogEntry, log_cache_name, log_head, read_log_partition
from tensorflow_ignite.errors import AuthenticationError, ServerError
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.local.java import module_jar
from tensorflow_ignite.local.stock import StockCluster
from tensorflow_ignite.protocol import requests, responses
from tensorflow_ignite.protocol.binary.encode import encode_value
from tensorflow_ignite.protocol.cache_config import CacheConfiguration
from tensorflow_ignite.protocol.codes import CacheMode, Op, WriteSynchronizationMode
from tensorflow_ignite.protocol.hashing import affinity_partition, binary_object_hash, cache_id, java_key_hash
from tensorflow_ignite.protocol.requests.cache import cache_put
from tensorflow_ignite.protocol.values import BinaryObject
from tensorflow_ignite.testing.service_surface import public_methods
from tensorflow_ignite.testing.waiting import wait_for

from .test_dataset_follow_log import FollowInThread, seq_row

SURFACE = "tf_follow_hostile_surface"
FORGED = "tf_follow_hostile_forged"
OCCUPY = "tf_follow_hostile_occupy"
REPLAY = "tf_follow_hostile_replay"
KEYS = 8
SERVICE_CLASS = "org.tensorflow.ignite.follow.FollowLogService"
REFUSED, NO_OP, ANSWERS = "refused", "no-op", "answers"
CACHE = object()  # stands for the followed cache's name in CALLS

#: Every public method of FollowLogService (name, parameter count): what it must do when a client calls
#: it, and its arguments (CACHE: the followed cache's name). tests/unit/test_service_surface.py classifies the
#: same enumeration; a method this table does not know fails test (a).
CALLS: dict[tuple[str, int], tuple[str, tuple[Any, ...]]] = {
    ("setCaches", 1): (REFUSED, (["evil"],)), ("setRetentionSeconds", 1): (REFUSED, (1,)),
    ("init", 1): (REFUSED, (None,)), ("execute", 1): (REFUSED, (None,)), ("cancel", 1): (REFUSED, (None,)),
    # Service's argument-less defaults: no-ops (they must stay so).
    ("init", 0): (NO_OP, ()), ("execute", 0): (NO_OP, ()), ("cancel", 0): (NO_OP, ()),
    ("head", 1): (ANSWERS, (CACHE,)), ("verify", 2): (ANSWERS, (CACHE, b"")), ("retention", 0): (ANSWERS, ()),
    ("getCaches", 0): (ANSWERS, ()), ("getRetentionSeconds", 0): (ANSWERS, ()),
}

@pytest.fixture(scope="module", params=["own-nodes", "stock-2.17-xml"])
def hostile(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """Two of the project's own nodes, or one stock 2.17 node from Spring XML (the fragment of
    ``ignite-tf module config``), each with authentication, SQL and the follow log of the caches above.
    (c) and (d) run on the own nodes only: they need two writers; (a) and (b) on both."""
    caches = (SURFACE, FORGED, OCCUPY, REPLAY)
    if request.param == "own-nodes":
        cluster: LocalCluster = LocalCluster(tmp_path_factory.mktemp("follow-hostile"), nodes=2,
                                             name="tfi-follow-hostile", auth=True, sql=True, heap_mb=384,
                                             region_mb=128, follow_log=caches, follow_log_retention_s=600)
    else:
        cluster = StockCluster(tmp_path_factory.mktemp("follow-hostile-xml"), nodes=1, name="tfi-follow-hostxml",
                               heap_mb=384, region_mb=128, ignite_version="2.17.0", auth=True, sql=True,
                               follow_log=caches, follow_log_retention_s=600)
    try:
        # A generous deadline: twice, on a machine running two suites at once, these two nodes with
        # authentication and the follow log took about three minutes to answer their first handshake
        # (a timeout leaves the nodes' thread dumps beside their logs, named in the error).
        cluster.start(timeout=360)
        passwords = {u: "pw-" + secrets.token_hex(8) for u in ("alice", "mallory")}
        with IgniteClient(cluster.addresses(), **cluster.client_settings()) as admin:
            for user, password in passwords.items():
                admin.sql(f"CREATE USER \"{user}\" WITH PASSWORD '{password}'").fetchall()
        env = {"cluster": cluster, "passwords": passwords}
        # A user created through one node reaches the others' security processor a moment later
        # (seen: node 1 refused mallory right after CREATE USER returned on a loaded machine).
        for node in range(cluster.nodes):
            for user in passwords:
                wait_for(lambda u=user, n=node: _accepted(env, u, n), 60, f"node {node} to accept user {user}")
        yield env
    finally:
        close_shared_clients()
        cluster.stop()


def _as(env: dict[str, Any], user: str, node: int | None = None) -> IgniteClient:
    cluster: LocalCluster = env["cluster"]
    addresses = cluster.addresses() if node is None else [cluster.address(node)]
    return IgniteClient(addresses, timeout=20, username=user, password=env["passwords"][user])


def _accepted(env: dict[str, Any], user: str, node: int) -> bool:
    try:
        with _as(env, user, node) as client:
            client.cache_names()
    except AuthenticationError:
        return False
    return True


def _invoke(client: IgniteClient, method: str, args: tuple[Any, ...]) -> Any:
    features = client.default_connection.features
    body = client.request(lambda rid: requests.service_invoke(rid, SERVICE_NAME, method, list(args),
                                                              features=features), Op.SERVICE_INVOKE, retry=False)
    return responses.decode_object(body, client.decoder())


def _create(client: IgniteClient, cache: str) -> None:
    client.create_cache(CacheConfiguration(cache, cache_mode=CacheMode.PARTITIONED, backups=1,
                                           write_synchronization_mode=WriteSynchronizationMode.FULL_SYNC))
    client.cache(cache).put_all({k: seq_row(k, 0) for k in range(KEYS)})
    log_head(client, cache, 30)  # the nodes' queries are registered: every update from here is logged


def _log(client: IgniteClient, cache: str) -> dict[int, list[LogEntry]]:
    """The log of the partitions of keys 0..KEYS-1 (reading all 1024 partitions takes seconds)."""
    partitions = len(client.partition_map(cache).nodes)
    ours = sorted({affinity_partition(java_key_hash(k), partitions) for k in range(KEYS)})
    return {p: es for p in ours if (es := read_log_partition(client, cache, p, partitions, -1))}


def _logged(client: IgniteClient, cache: str, key: int, seq: int) -> LogEntry:
    """The log entry of the update of ``key`` to ``seq`` (waits for it)."""
    dec = client.decoder()

    def find() -> LogEntry | None:
        for entries in _log(client, cache).values():
            for e in entries:
                if e.value is not None and dec.decode(e.key) == key and dec.decode(e.value).fields["seq"] == seq:
                    return e
        return None

    return wait_for(find, 30, f"the log entry of {cache}[{key}] = {seq}")


def _java_key(client: IgniteClient, cache: str) -> bytes:
    """The bytes of a log key as the module's writers make it (compact footer): a template for forgeries.

    Our client writes objects with a full footer, which Ignite holds as another key than the writers'
    one for the same (p, c); a hostile client (Ignite's Java thin client, or bytes on the wire) writes
    the writers' form and so replaces their entries. Taken from a scan page of the log, undecoded.
    """
    log = client.cache(log_cache_name(cache))
    for page in log.scan_pages():
        raw = bytes(page.rows)
        if raw[0] == 27:  # wrapped: int length, the bytes, int offset of the object in them
            size = int.from_bytes(raw[1:5], "little")
            raw = raw[5:5 + size][int.from_bytes(raw[5 + size:9 + size], "little"):]
        klen = int.from_bytes(raw[12:16], "little")  # header: type, version, flags, type id, hash, length...
        assert raw[0] == 103 and raw[2] & 0x20, f"not a compact-footer object: {raw[:24].hex()}"
        key = raw[:klen]
        assert _hash(key) == key[8:12], "our hash of the data section is Ignite's"
        return key
    raise AssertionError(f"the log of {cache} is empty")


def _hash(key: bytes) -> bytes:
    offset = int.from_bytes(key[20:24], "little")
    return (binary_object_hash(key[24:offset]) & 0xFFFF_FFFF).to_bytes(4, "little")


def _key_at(template: bytes, p: int, c: int) -> bytes:
    """``template`` (the writers' key of some (p', c')) made the key of (p, c): its fields and hash code."""
    key = bytearray(template)
    assert key[24] == 3 and key[29] == 4, f"layout: int p at 24, long c at 29: {template.hex()}"
    key[25:29] = p.to_bytes(4, "little", signed=True)
    key[30:38] = c.to_bytes(8, "little", signed=True)
    key[8:12] = _hash(bytes(key))
    return bytes(key)


def _put_entry(client: IgniteClient, cache: str, template: bytes, p: int, c: int, *, prev: int, key: bytes,
               value: bytes | None, seal: bytes | None = None, writer: int = 1) -> None:
    """Write a log entry at (p, c) as a hostile client can: the writers' own key bytes, any fields."""
    v = BinaryObject("TfFollowLogEntry", {"t": 1, "prev": prev, "w": writer, "k": key, "v": value,
                                          "m": seal if seal is not None else secrets.token_bytes(32)},
                     field_types={"t": 1, "prev": 4, "w": 4, "k": 12, "v": 12, "m": 12})
    placeholder = BinaryObject("TfFollowLogKey", {"p": -7, "c": -7}, field_types={"p": 3, "c": 4})
    ours = encode_value(placeholder)
    raw = _key_at(template, p, c)

    def request(rid: int) -> bytes:
        body = cache_put(rid, cache_id(log_cache_name(cache)), placeholder, v)
        at = body.index(ours)
        body = body[:at] + raw + body[at + len(ours):]
        return (len(body) - 4).to_bytes(4, "little") + body[4:]

    client.request(request, Op.CACHE_PUT)


def _copy(client: IgniteClient, cache: str, template: bytes, e: LogEntry, p: int, c: int) -> None:
    """``e``, seal and all, at (p, c): a replay."""
    _put_entry(client, cache, template, p, c, prev=e.prev, key=e.key, value=e.value, seal=e.mac, writer=e.writer)


def _follow(client: IgniteClient, cache: str, rounds: int) -> tuple[IgniteDataset, FollowInThread]:
    """A live follower of ``cache`` that ends after its snapshot and ``rounds`` rounds of updates.

    It ends by ``max_rows``, not by a quiet spell: the attacks between the writes take seconds on
    a loaded machine. A forged row delivered would take a real one's place (the check sees both)."""
    ds = IgniteDataset.follow(cache, client=client, batch_size=16, max_wait=0.05, max_rows=(rounds + 1) * KEYS)
    follower = FollowInThread(ds)
    follower.wait_rows(KEYS, 120, f"the snapshot of {cache}")
    return ds, follower


def _write(client: IgniteClient, cache: str, seqs: dict[int, int], rounds: int) -> None:
    """``rounds`` updates of every key, each with its next number."""
    for _ in range(rounds):
        for k in range(KEYS):
            seqs[k] += 1
            client.cache(cache).put(k, seq_row(k, seqs[k]))


def _position_after_one_round(client: IgniteClient, cache: str, seqs: dict[int, int], tmp_path: Path) -> str:
    """A follower's checkpoint after the snapshot and one round of updates (then it stops)."""
    it = iter(IgniteDataset.follow(cache, client=client, batch_size=16, max_wait=0.05))
    got = 0
    while got < KEYS:  # the snapshot, with nothing written meanwhile
        got += len(next(it)["key"])
    _write(client, cache, seqs, 1)
    while got < 2 * KEYS:  # past the snapshot: the saved state holds log positions
        got += len(next(it)["key"])
    path = tf.train.Checkpoint(iterator=it).write(str(tmp_path / f"ckpt-{cache}"))
    del it
    return path


def _assert_once(after: dict[int, list[int]], seqs: dict[int, int], start: int, what: str) -> None:
    """Each key's numbers start+1..seqs[k], once and in order, and nothing else (no forged key or number)."""
    want = {k: list(range(start + 1, seqs[k] + 1)) for k in range(KEYS)}
    got = {k: list(v) for k, v in after.items()}
    assert got == want, f"{what}: not exactly the real updates, once each: got {got}, want {want}"


def test_a_client_can_use_no_lifecycle_or_setter_of_the_service(hostile: dict[str, Any]) -> None:
    """(a) Every public method, called by mallory on each node: refused or harmless; the log goes on."""
    jar = module_jar()
    surface = public_methods(jar, next((jar.parent / "lib").glob("ignite-core-*.jar")), SERVICE_CLASS)
    methods = sorted((m.name, len(m.params)) for m in surface)
    assert set(methods) == set(CALLS), f"FollowLogService's public methods changed: {methods}; classify them in CALLS"
    cluster: LocalCluster = hostile["cluster"]
    with _as(hostile, "alice") as alice:
        _create(alice, SURFACE)
        ds, follower = _follow(alice, SURFACE, 5)
        follower.after.clear()
        for node in range(cluster.nodes):
            with _as(hostile, "mallory", node) as mallory:
                for name, count in methods:
                    kind, args = CALLS[(name, count)]
                    call = tuple(SURFACE if a is CACHE else a for a in args)
                    if kind == REFUSED:
                        with pytest.raises(ServerError, match="permission denied: "):
                            _invoke(mallory, name, call)
                    elif kind == NO_OP:
                        assert _invoke(mallory, name, call) is None
                    else:
                        _invoke(mallory, name, call)
                assert _invoke(mallory, "getCaches", ()) == [SURFACE, FORGED, OCCUPY, REPLAY]
                assert _invoke(mallory, "retention", ()) == 600
        seqs = dict.fromkeys(range(KEYS), 0)
        _write(alice, SURFACE, seqs, 5)
        follower.join()
        # Both nodes' writers still run: each wrote entries (w is the writer's topology order).
        partitions = len(alice.partition_map(SURFACE).nodes)
        writers = {e.writer for p in range(partitions) for e in read_log_partition(alice, SURFACE, p, partitions, -1)}
        orders = {n.order for n in alice.server_nodes()}
    assert writers == orders, f"log entries written by nodes {writers}, the servers are {orders}"
    assert ds.stats.mode == "log" and ds.stats.unsealed_entries == 0, ds.stats
    _assert_once(follower.after, seqs, 0, "after mallory's calls")


def test_a_forged_entry_far_ahead_neither_skips_nor_is_delivered(hostile: dict[str, Any], tmp_path: Path) -> None:
    """(b) An entry at counter 2^62 with prev = the partition's head: not delivered, the position stays."""
    with _as(hostile, "alice") as alice, _as(hostile, "mallory") as mallory:
        _create(alice, FORGED)
        seqs = dict.fromkeys(range(KEYS), 0)
        path = _position_after_one_round(alice, FORGED, seqs, tmp_path)
        ds, follower = _follow(alice, FORGED, 4)  # a live follower
        follower.after.clear()
        _write(alice, FORGED, seqs, 1)
        follower.wait_rows(2 * KEYS, 60, "the first updates")  # in the log, then
        head = log_head(mallory, FORGED, 30)  # a client may ask: a plausible prev
        touched = {e.partition for es in _log(alice, FORGED).values() for e in es}
        template = _java_key(mallory, FORGED)
        for p in touched:
            _put_entry(mallory, FORGED, template, p, 2**62, prev=head[p], key=encode_value(1000 + p),
                       value=encode_value(seq_row(1000 + p, 1)))
        _write(alice, FORGED, seqs, 3)
        follower.join()
        # max_rows counts the rows handed out before the saved state too: the snapshot, one round, then 4.
        restored = IgniteDataset.follow(FORGED, client=alice, batch_size=16, max_wait=0.05, max_rows=6 * KEYS)
        it2 = iter(restored)
        tf.train.Checkpoint(iterator=it2).read(path).assert_consumed()
        after: dict[int, list[int]] = defaultdict(list)
        for batch in it2:
            for k, s in zip(batch["key"].numpy().tolist(), batch["val"]["seq"].numpy().tolist()):
                after[k].append(s)
    assert ds.stats.unsealed_entries >= len(touched), ds.stats
    assert restored.stats.unsealed_entries >= len(touched) and restored.stats.caught_up_rows > 0, restored.stats
    _assert_once(follower.after, seqs, 1, "a live follower, forged entries at 2^62")
    _assert_once(after, seqs, 1, "restored from a checkpoint, forged entries at 2^62 in the log")


@pytest.mark.parametrize("hostile", ["own-nodes"], indirect=True)
def test_a_forged_or_altered_entry_at_a_real_counter_is_never_delivered(hostile: dict[str, Any],
                                                                       tmp_path: Path) -> None:
    """(c) A forgery waiting at the next real counter is overwritten by the writers (the real update is
    delivered); a value replaced after the writers wrote it is not delivered: the restored follower
    stops with FollowPositionLostError (the real update is no longer in the log) -- or, when one of
    the two nodes' writers had not written that entry yet, it overwrites the replacement and the
    real update is delivered."""
    with _as(hostile, "alice") as alice, _as(hostile, "mallory") as mallory:
        _create(alice, OCCUPY)
        ds, follower = _follow(alice, OCCUPY, 3)
        follower.after.clear()
        seqs = dict.fromkeys(range(KEYS), 0)
        _write(alice, OCCUPY, seqs, 1)
        first = _logged(alice, OCCUPY, 0, 1)
        p, head = first.partition, log_head(mallory, OCCUPY, 30)
        # The next update of key 0 gets counter head[p] + 1: a forgery waits there for it.
        template = _java_key(mallory, OCCUPY)
        _put_entry(mallory, OCCUPY, template, p, head[p] + 1, prev=head[p], key=first.key,
                   value=encode_value(seq_row(0, 777_777)))
        _write(alice, OCCUPY, seqs, 2)
        follower.join()
        real = _logged(alice, OCCUPY, 0, 2)  # the writers overwrote the forgery: one entry there, theirs
        assert (real.partition, real.counter) == (p, head[p] + 1)
        assert [e.counter for e in _log(alice, OCCUPY)[p]].count(real.counter) == 1
        assert ds.stats.unsealed_entries >= 1, ds.stats
        _assert_once(follower.after, seqs, 0, "a forgery waiting at the next counter")

        # Altered after it was written, while nobody follows.
        path = _position_after_one_round(alice, OCCUPY, seqs, tmp_path)
        _write(alice, OCCUPY, seqs, 1)
        victim = _logged(alice, OCCUPY, 0, seqs[0])
        _put_entry(mallory, OCCUPY, template, victim.partition, victim.counter, prev=victim.prev, key=victim.key,
                   value=encode_value(seq_row(0, 888_888)), seal=victim.mac)
        _write(alice, OCCUPY, seqs, 1)  # the next entry names the altered one as its previous update
        restored = IgniteDataset.follow(OCCUPY, client=alice, batch_size=1, max_wait=0.05, max_rows=4 * KEYS,
                                        stream_timeout=10.0)
        it2 = iter(restored)
        tf.train.Checkpoint(iterator=it2).read(path).assert_consumed()
        delivered: list[tuple[int, int]] = []
        lost = None
        try:
            for batch in it2:
                delivered += zip(batch["key"].numpy().tolist(), batch["val"]["seq"].numpy().tolist())
        except tf.errors.FailedPreconditionError as exc:
            lost = str(exc)
    assert (0, 888_888) not in delivered and (0, 777_777) not in delivered, delivered
    if lost is not None:  # the replacement stood: the real update is not in the log any more, and that is said
        assert re.search(f"FollowPositionLostError.*{OCCUPY}.*partition {victim.partition}", lost), lost
        assert restored.stats.unsealed_entries >= 1, restored.stats
    else:  # a writer that had not written the entry yet found the replacement and overwrote it (under load)
        assert delivered.count((0, seqs[0] - 1)) == 1, delivered


@pytest.mark.parametrize("hostile", ["own-nodes"], indirect=True)
def test_a_replayed_entry_is_never_delivered(hostile: dict[str, Any]) -> None:
    """(d) A real entry, seal and all, copied to the next counter of its partition, to 2^62 and to another
    partition: none is delivered; the real updates that then take those counters are, once each."""
    with _as(hostile, "alice") as alice, _as(hostile, "mallory") as mallory:
        _create(alice, REPLAY)
        ds, follower = _follow(alice, REPLAY, 4)
        follower.after.clear()
        seqs = dict.fromkeys(range(KEYS), 0)
        _write(alice, REPLAY, seqs, 1)
        real = _logged(alice, REPLAY, 0, 1)
        head = log_head(mallory, REPLAY, 30)
        other = next(p for p in range(len(head)) if p != real.partition)
        template = _java_key(mallory, REPLAY)
        _copy(mallory, REPLAY, template, real, real.partition, head[real.partition] + 1)
        _copy(mallory, REPLAY, template, real, real.partition, 2**62)
        _copy(mallory, REPLAY, template, real, other, head[other] + 1)
        _write(alice, REPLAY, seqs, 3)
        follower.join()
    assert ds.stats.unsealed_entries >= 3, ds.stats
    _assert_once(follower.after, seqs, 0, "real entries replayed at other counters")
