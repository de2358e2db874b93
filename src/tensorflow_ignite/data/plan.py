"""Which partitions a dataset reads, and from which node.

A :class:`PartitionPlan` is decided once, when the dataset is built: the list of
partitions to scan (all, one, or an explicit list from ``IGNITE_DATASET_PARTS``)
or a single whole-cache scan when ``local=True`` asks the connected node for
its local entries only.  Where each partition is read from is decided per scan,
at iteration time, from the client's current partition map, so a rebalanced
cluster is followed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import ConfigurationError

__all__ = ["PartitionPlan", "ScanTask"]


@dataclass(frozen=True)
class ScanTask:
    """One scan query: a partition (``-1`` = the whole cache) and the ``local`` flag."""

    partition: int
    local: bool = False


@dataclass(frozen=True)
class PartitionPlan:
    """The scans a dataset performs, in order."""

    tasks: tuple[ScanTask, ...]

    @classmethod
    def build(
        cls,
        *,
        partitions: int,
        part: int = -1,
        parts: Sequence[int] | None = None,
        local: bool = False,
        cache_name: str = "",
    ) -> "PartitionPlan":
        """Plan the scans of a cache with ``partitions`` partitions.

        ``parts`` (a list) wins over ``part`` (one partition, ``-1`` = all);
        ``local=True`` with neither scans the connected node's local entries in
        one query (the seed's semantics).
        """
        if parts is not None:
            chosen = sorted(set(int(p) for p in parts))
        elif part is not None and part >= 0:
            chosen = [int(part)]
        elif local:
            return cls((ScanTask(-1, local=True),))
        else:
            chosen = list(range(partitions))
        bad = [p for p in chosen if p < 0 or (partitions > 0 and p >= partitions)]
        if bad:
            raise ConfigurationError(
                f"cache {cache_name!r} has {partitions} partitions; partition {bad[0]} does not exist "
                f"(valid: 0..{partitions - 1})"
            )
        return cls(tuple(ScanTask(p, local=local) for p in chosen))

    @property
    def partitions(self) -> tuple[int, ...]:
        return tuple(t.partition for t in self.tasks)

    def __len__(self) -> int:
        return len(self.tasks)
