"""What a read has handed to TensorFlow, by partition: the state of a saved iterator.

A checkpointed ``IgniteDataset`` iterator resumes at *partition* granularity:
its state (:class:`ResumeState`) says which partitions of the plan were handed
out completely and, for each partition handed out in part, the identities of
the rows already handed out.  A resumed read scans every partition that is not
done -- on whatever node is its primary by then -- and drops the rows of the
partly read ones whose identity is in the state.  Rows within a partition may
come back in another order from another node (a backup promoted after a node
died, a partition moved by rebalancing): identities, not positions, make the
resume exactly-once.

A row's identity is its key: the value itself for ``long``/``int`` keys (exact),
otherwise a 64-bit BLAKE2b digest of the key's serialized bytes, which are the
same on every node (a false match needs two keys of one partition whose
digests collide: about ``n_saved * n_partition / 2**64``).

:class:`ReadProgress` keeps what is needed to compute the state at any moment:
a ledger of the pages put into the stream, in stream order, each with its first
row's offset, and where each partition's rows end once its read is complete.
The consumer (the native source's batch cutter) only adds up the rows it hands
to TensorFlow; :meth:`ReadProgress.state` works out, for that count, which
partitions are done and the identities of the rows of the others -- identities
are computed then, from the kept pages, never on the hot path.  Pages of a
partition are dropped from the ledger once it is done, so it holds the pages of
the partitions in flight (partition scans) or the keys of the epoch (node scans,
which already keep them for their own failover).

Node scans (:meth:`Cache.scan_nodes`) read a node's partitions one after the
other (Ignite's local scan walks partition stores in turn), so a partition is
complete *tentatively* when the stream moves on to another one; the reader's
``trust`` callback confirms such partitions when the state is taken (no
failure touched them and the partition map has not changed since the epoch
began), otherwise their rows count as handed out in part, by identity.

A shuffled read (``shuffle=True``) walks its partitions in an order drawn from
its seed and its *epoch* (:class:`ShuffledEpochs`: each new iterator is the
next epoch); the state carries the epoch, so a restored iterator -- in any
process -- draws the same order and reads the partitions not done in it.

Encoded size: a header (JSON: plan fingerprint, done partitions as ranges,
partly read partitions with their row counts) plus the identities, sorted,
delta-encoded and zlib-compressed -- a few hundred bytes for a plan of 1024
partitions plus at most 8 bytes per row handed out of the partitions in flight.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import struct
import threading
import zlib
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import numpy as np

from ..errors import ConfigurationError
from ..protocol import columns as C
from ..protocol.codes import TypeCode
from .env import parse_partition_list

__all__ = [
    "ResumeState",
    "ReadProgress",
    "ShuffledEpochs",
    "row_identities",
    "plan_fingerprint",
    "format_ranges",
    "resume_from",
]

log = logging.getLogger(__name__)

_MAGIC = b"TFIRS1\x00\x00"
_HEADER = struct.Struct("<I")


def format_ranges(values: Iterable[int]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``"0-2,5,7-8"`` (what :func:`.env.parse_partition_list` reads)."""
    out: list[str] = []
    ordered = sorted(set(int(v) for v in values))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)


def plan_fingerprint(cache_name: str, partitions: Sequence[int]) -> str:
    """A short digest of what a plan reads: a state only resumes the plan it was taken from."""
    text = f"{cache_name}\x00{format_ranges(partitions)}"
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


class _Planned(Protocol):
    @property
    def plan(self) -> str: ...  # the fingerprint of the plan a state was saved by


_State = TypeVar("_State", bound=_Planned)


def resume_from(
    state: bytes | None, decode: Callable[..., _State], plan: str, *, read: str, same: str
) -> _State | None:
    """What a run starts from: None without a saved ``state`` (the beginning), else the state
    ``decode(state, what=...)`` reads (:meth:`ResumeState.decode`, a follower's state).

    A state saved by another read -- its plan fingerprint (:func:`plan_fingerprint`) is not
    ``plan`` -- is refused with a :class:`~tensorflow_ignite.errors.ConfigurationError` naming
    this ``read`` and the dataset to restore it into (built the ``same`` way).
    """
    if state is None:
        return None
    resume = decode(state, what=f"the saved iterator of this {read}")
    if resume.plan != plan:
        raise ConfigurationError(
            f"the saved iterator belongs to another dataset, not this {read}; restore it into an "
            f"iterator of the dataset that saved it ({same})"
        )
    return resume


def row_identities(rows: memoryview, row_count: int) -> np.ndarray:
    """The identity (int64) of every row of a scan page region (see the module docstring)."""
    n = int(row_count)
    if n == 0:
        return np.zeros(0, np.int64)
    offsets = C.value_offsets(rows, n, 2)
    keys, values = offsets[:, 0], offsets[:, 1]
    buf = np.frombuffer(rows, np.uint8)
    codes = buf[keys]
    ids = np.empty(n, np.int64)
    longs = codes == TypeCode.LONG
    ints = codes == TypeCode.INT
    if longs.any():
        ids[longs] = C.take(buf, keys[longs] + 1, "<i8")
    if ints.any():
        ids[ints] = C.take(buf, keys[ints] + 1, "<i4")
    for i in np.flatnonzero(~(longs | ints)).tolist():
        digest = hashlib.blake2b(rows[int(keys[i]) : int(values[i])], digest_size=8).digest()
        ids[i] = int.from_bytes(digest, "little", signed=True)
    return ids


@dataclass(frozen=True)
class ResumeState:
    """Where a read stands: partitions done, and per partly read partition the rows handed out."""

    #: :func:`plan_fingerprint` of the plan this state belongs to.
    plan: str
    #: Partitions whose every row was handed out.
    done: frozenset[int] = frozenset()
    #: Partition -> sorted unique identities (int64) of the rows handed out so far.
    partial: Mapping[int, np.ndarray] = field(default_factory=dict)
    #: The epoch of a shuffled read (its partition order is drawn from the seed and this), else None.
    epoch: int | None = None

    @property
    def rows(self) -> int:
        """Identities held (rows handed out of partly read partitions)."""
        return sum(len(v) for v in self.partial.values())

    def encode(self) -> bytes:
        parts = sorted(self.partial)
        fields: dict[str, object] = {
            "v": 1,
            "plan": self.plan,
            "done": format_ranges(self.done),
            "partial": [[p, len(self.partial[p])] for p in parts],
        }
        if self.epoch is not None:
            fields["epoch"] = int(self.epoch)
        header = json.dumps(fields, separators=(",", ":")).encode()
        chunks = []
        for p in parts:
            ids = np.sort(np.asarray(self.partial[p], np.int64))
            if len(ids):  # deltas of sorted keys are small: they compress well
                ids = np.concatenate((ids[:1], np.diff(ids)))
            chunks.append(ids.astype("<i8").tobytes())
        return _MAGIC + _HEADER.pack(len(header)) + header + zlib.compress(b"".join(chunks), 6)

    @classmethod
    def decode(cls, data: bytes, *, what: str = "the iterator state") -> "ResumeState":
        try:
            if not data.startswith(_MAGIC):
                raise ValueError("not an IgniteDataset iterator state")
            (size,) = _HEADER.unpack_from(data, len(_MAGIC))
            start = len(_MAGIC) + _HEADER.size
            header = json.loads(data[start : start + size])
            if header.get("v") != 1:
                raise ValueError(f"state version {header.get('v')!r} is not supported by this version")
            body = np.frombuffer(zlib.decompress(data[start + size :]), "<i8")
            partial: dict[int, np.ndarray] = {}
            pos = 0
            for p, count in header["partial"]:
                deltas = body[pos : pos + count]
                if len(deltas) != count:
                    raise ValueError("truncated identities")
                partial[int(p)] = np.cumsum(deltas, dtype=np.int64)
                pos += count
            done = frozenset(parse_partition_list(header["done"], name="done")) if header["done"] else frozenset()
            epoch = header.get("epoch")
            return cls(str(header["plan"]), done, partial, None if epoch is None else int(epoch))
        except (ValueError, KeyError, TypeError, struct.error, zlib.error, ConfigurationError) as exc:
            raise ConfigurationError(
                f"{what} cannot be read ({exc}); it was not written by an IgniteDataset "
                "iterator of a compatible version"
            ) from None


class _Page:
    """One ledger entry: rows ``start .. start + n`` of the stream."""

    __slots__ = ("start", "n", "partition", "rows", "parts", "ids")

    def __init__(
        self,
        start: int,
        n: int,
        partition: int,
        rows: memoryview | None,
        parts: np.ndarray | None,
        ids: np.ndarray | None,
    ) -> None:
        self.start = start
        self.n = n
        self.partition = partition  # -1: rows of several partitions (``parts``)
        self.rows = rows  # raw page rows (identities computed when a state is taken)
        self.parts = parts  # partition of each row (node scans)
        self.ids = ids  # identity of each row (node scans)


class ReadProgress:
    """The ledger of one read (one iterator): see the module docstring."""

    def __init__(
        self,
        plan: str,
        resume: ResumeState | None = None,
        trust: Callable[[set[int]], set[int]] | None = None,
        epoch: int | None = None,
    ) -> None:
        self.plan = plan
        #: The shuffled epoch being read (saved with the state), None when unshuffled.
        self.epoch = epoch
        #: ``trust(partitions)`` -> those of the tentatively complete ``partitions`` that are complete.
        self.trust = trust
        self._done: set[int] = set(resume.done) if resume else set()
        self._carried: dict[int, np.ndarray] = dict(resume.partial) if resume else {}
        self._pages: deque[_Page] = deque()
        self._read = 0
        self._emitted = 0
        self._ends: dict[int, int] = {}
        self._tentative: set[int] = set()
        self._open: int | None = None

    # ------------------------------------------------------------ reader side
    def add_page(self, partition: int, rows: memoryview, n: int) -> None:
        """A page of one partition enters the stream (partition scans)."""
        if not n:
            return
        self._pages.append(_Page(self._read, n, partition, rows, None, None))
        self._read += n
        self._drop_done()

    def add_rows(self, parts: np.ndarray, ids: np.ndarray) -> None:
        """Rows of several partitions enter the stream (node scans): their partitions and identities.

        A partition is complete, tentatively, when the stream moves on to another one.
        """
        n = len(parts)
        if not n:
            return
        start = self._read
        # Partitions are < 65536: two bytes a row (the keys are shared with the node scan's own list).
        self._pages.append(_Page(start, n, -1, None, parts.astype(np.uint16), ids))
        self._read += n
        cuts = np.flatnonzero(parts[1:] != parts[:-1]) + 1
        firsts = [0, *cuts.tolist()]
        for i in firsts:
            p = int(parts[i])
            if p == self._open:
                continue
            if self._open is not None:
                self._ends[self._open] = start + i
                self._tentative.add(self._open)
            if p in self._ends:  # rows of a partition that seemed complete: open again
                del self._ends[p]
                self._tentative.discard(p)
            self._open = p

    def complete(self, partition: int) -> None:
        """No more rows of ``partition`` will enter the stream."""
        self._ends[partition] = self._read
        self._tentative.discard(partition)
        if self._open == partition:
            self._open = None

    def partial_ids(self, partition: int) -> np.ndarray | None:
        """Identities of ``partition``'s rows handed out before the state this read resumed from."""
        return self._carried.get(partition)

    # ---------------------------------------------------------- consumer side
    def emitted(self, rows: int) -> None:
        """``rows`` more rows were handed to TensorFlow."""
        self._emitted += rows

    # ------------------------------------------------------------------ state
    def state(self, rows: int | None = None) -> ResumeState:
        """The state as of the rows handed to TensorFlow so far, or as of the first ``rows`` rows of the
        stream (at least those handed out: a follower resuming its snapshot after the rows it yielded)."""
        emitted = self._emitted if rows is None else max(self._emitted, min(int(rows), self._read))
        complete = {p for p, end in self._ends.items() if end <= emitted}
        tentative = complete & self._tentative
        if tentative:
            trusted = self.trust(set(tentative)) if self.trust is not None else set()
            complete -= tentative - trusted
        done = self._done | complete
        groups: dict[int, list[np.ndarray]] = {p: [ids] for p, ids in self._carried.items() if p not in done}
        finished = np.fromiter(done, np.int64, len(done))
        for page in self._pages:
            if page.start >= emitted:
                break
            k = min(page.n, emitted - page.start)
            if page.rows is not None:
                if page.partition not in done:
                    groups.setdefault(page.partition, []).append(row_identities(page.rows, page.n)[:k])
                continue
            assert page.parts is not None and page.ids is not None
            parts, ids = page.parts[:k], page.ids[:k]
            if done:
                keep = ~np.isin(parts, finished)
                parts, ids = parts[keep], ids[keep]
            if not len(parts):
                continue
            order = np.argsort(parts, kind="stable")
            parts, ids = parts[order], ids[order]
            bounds = np.flatnonzero(parts[1:] != parts[:-1]) + 1
            for lo, hi in zip([0, *bounds.tolist()], [*bounds.tolist(), len(parts)]):
                groups.setdefault(int(parts[lo]), []).append(ids[lo:hi])
        partial = {p: np.unique(np.concatenate(v)) for p, v in groups.items()}
        return ResumeState(self.plan, frozenset(done), partial, self.epoch)

    def _drop_done(self) -> None:
        """Forget the pages of partitions handed out completely (partition scans)."""
        pages, ends, emitted = self._pages, self._ends, self._emitted
        while pages:
            p = pages[0].partition
            end = ends.get(p)
            if p < 0 or end is None or end > emitted or p in self._tentative:
                return
            pages.popleft()


class ShuffledEpochs:
    """The partition order of the shuffled runs of one dataset, both generations' readers.

    Each new run reads the next epoch, a restored one the epoch its state saved; an epoch's order
    is drawn from ``seed`` and the epoch alone, so it is the same in every run and every process.
    """

    def __init__(self, seed: int | None = None) -> None:
        #: The seed the orders are drawn from (kept in the dataset's description); drawn at random when None.
        self.seed = int(seed) if seed is not None else secrets.randbits(63)
        self._next = 0
        self._lock = threading.Lock()

    @classmethod
    def of(cls, shuffle: bool, seed: int | None) -> "ShuffledEpochs | None":
        """The order of a read given ``shuffle=`` and ``seed=`` (as the datasets take them): None unshuffled;
        a :class:`~tensorflow_ignite.errors.ConfigurationError` for a seed without ``shuffle``."""
        if not shuffle:
            if seed is not None:
                raise ConfigurationError("seed=... orders partitions only with shuffle=True")
            return None
        return cls(seed)

    def start(self, resumed: int | None) -> int:
        """The epoch a new run reads: ``resumed`` (a saved state's), else the one after the last started."""
        with self._lock:
            epoch = self._next if resumed is None else int(resumed)
            self._next = max(self._next, epoch + 1)
            return epoch

    def order(self, epoch: int, n: int) -> list[int]:
        """The indices ``0..n-1`` in the order ``epoch`` reads them."""
        rng = np.random.default_rng([self.seed & (2**63 - 1), int(epoch)])
        return [int(i) for i in rng.permutation(n)]
