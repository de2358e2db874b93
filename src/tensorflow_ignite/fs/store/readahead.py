"""Read-ahead of one open file: which blocks to fetch ahead, and what a reader reports.

Pure logic, no I/O: :class:`ReadAheadWindow` watches the blocks a reader
touches and says which to fetch next; :class:`~.reader.FileReader` does the
fetching (on the store's I/O threads, several gets in flight on the
connections to the blocks' primary nodes) and keeps the blocks.

The rules:

* a read whose first block follows the last block read (or is the first block
  of the file) is *sequential*; one that stays in the last block read changes
  nothing; anything else is a *seek*;
* a sequential run fetches ahead of the block just read, the distance doubling
  with each block of the run (1, 2, 4, ...) up to ``ahead`` blocks, so a
  reader that reads one block and seeks elsewhere costs at most one extra get;
* a seek ends the run: blocks fetched ahead and not yet read are discarded
  (their gets are cancelled or their answers dropped) and nothing is fetched
  ahead until the reader is sequential again.

Memory: ``ahead`` blocks ahead plus the block being read and one behind it
(re-reads of a record across a block boundary); :func:`window_blocks` turns
the byte setting into blocks.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

__all__ = ["DEFAULT_READ_AHEAD", "KEPT_BEHIND", "ReadAheadWindow", "ReadStats", "Step", "window_blocks"]

#: Bytes a sequential reader fetches ahead of the block it reads (``IGNITE_FS_READ_AHEAD``).
DEFAULT_READ_AHEAD = 16 << 20
#: Blocks a reader keeps besides those ahead: the block being read and one behind it.
KEPT_BEHIND = 2


def window_blocks(read_ahead: int, block_size: int) -> int:
    """Blocks fetched ahead for ``read_ahead`` bytes: whole blocks, at least one unless it is 0."""
    if read_ahead < 0:
        raise ValueError(f"read_ahead must be >= 0 bytes, not {read_ahead}")
    if read_ahead == 0:
        return 0
    return max(1, read_ahead // block_size)


@dataclass(frozen=True)
class Step:
    """What one read means for the window: whether it was sequential, and the blocks to fetch now."""

    sequential: bool
    #: Blocks to fetch ahead (those not already held or coming), in order.
    fetch: range


class ReadAheadWindow:
    """The read-ahead decisions for one open file of ``blocks`` blocks (see the module doc).

    Not thread-safe: the reader calls it under its lock.
    """

    def __init__(self, blocks: int, ahead: int) -> None:
        if ahead < 0:
            raise ValueError(f"ahead must be >= 0 blocks, not {ahead}")
        self.blocks = blocks
        self.ahead = ahead
        #: The last block read (-1 before the first read).
        self.last = -1
        #: Blocks read in the current sequential run.
        self.run = 0

    @property
    def capacity(self) -> int:
        """Blocks a reader may hold at once: ``ahead`` plus :data:`KEPT_BEHIND`."""
        return self.ahead + KEPT_BEHIND

    def distance(self) -> int:
        """How many blocks past the last one read should be fetched or coming now."""
        if self.ahead == 0 or self.run == 0:
            return 0
        return min(self.ahead, 1 << min(self.run - 1, 30))

    def access(self, first: int, last: int | None = None) -> Step:
        """Record a read of blocks ``first`` .. ``last`` (inclusive; default ``first``)."""
        last = first if last is None else last
        if last < first:
            raise ValueError(f"empty block range {first}..{last}")
        if first == self.last and last == self.last:
            return Step(True, range(0))
        sequential = first in (self.last, self.last + 1)
        if sequential:
            self.run += last - self.last
        else:
            self.run = 0
        self.last = last
        start = last + 1
        return Step(sequential, range(start, min(self.blocks, start + self.distance())))


class ReadStats:
    """Counters of one :class:`~.reader.FileReader` (``reader.stats``), for diagnostics and tests.

    ``held_bytes`` counts the blocks the reader holds or has gets in flight for
    (whole blocks, also those discarded whose answer is still coming);
    ``peak_held_bytes`` its highest value; ``limit_bytes`` the bound it stays
    under: ``read_ahead`` rounded to whole blocks, plus two blocks.
    """

    __slots__ = (
        "_lock",
        "limit_bytes",
        "held_bytes",
        "peak_held_bytes",
        "blocks_fetched",
        "blocks_prefetched",
        "prefetch_hits",
        "prefetches_discarded",
        "prefetch_errors",
    )

    def __init__(self, limit_bytes: int) -> None:
        self._lock = threading.Lock()
        self.limit_bytes = limit_bytes
        self.held_bytes = 0
        self.peak_held_bytes = 0
        #: Blocks fetched into the reader's cache (read-ahead included; not direct reads).
        self.blocks_fetched = 0
        #: Of those, fetched ahead of the reader.
        self.blocks_prefetched = 0
        #: Reads served by a block fetched ahead.
        self.prefetch_hits = 0
        #: Blocks fetched (or about to be) ahead and dropped unread: a seek, or close.
        self.prefetches_discarded = 0
        #: Blocks fetched ahead whose get failed (raised by the read that needs the block, if any).
        self.prefetch_errors = 0

    def hold(self, nbytes: int) -> None:
        with self._lock:
            self.held_bytes += nbytes
            if self.held_bytes > self.peak_held_bytes:
                self.peak_held_bytes = self.held_bytes

    def release(self, nbytes: int) -> None:
        with self._lock:
            self.held_bytes -= nbytes

    def count(self, name: str, n: int = 1) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + n)

    def as_dict(self) -> dict[str, int]:
        """The counters as a plain dict."""
        with self._lock:
            return {k: getattr(self, k) for k in self.__slots__ if not k.startswith("_")}

    def __repr__(self) -> str:
        return f"ReadStats({', '.join(f'{k}={v}' for k, v in self.as_dict().items())})"
