"""Key layout and records of the ``ignite://`` file store (no I/O).

Two caches per file tree (names from the prefix, default ``ignite_fs``):

``<prefix>_meta`` -- TRANSACTIONAL, FULL_SYNC, String keys:

==========================  ===================================================
key                         value (JSON text)
==========================  ===================================================
``e:<path>``                entry of a file or directory, keyed by its full,
                            clean path (``e:/runs/ckpt/checkpoint``); the root
                            ``e:/`` may be absent (then it is an empty
                            directory with one listing bucket)
``l:<dir path>#<i>``        listing bucket ``i`` of a directory: the names of
                            its children whose ``crc32(name) mod nb`` is ``i``,
                            as ``"<nb>|name/name/..."`` (``/`` never occurs in
                            a name)
``g:<id>``                  garbage: data-block ranges no entry references any
                            more, written in the transaction that dropped them,
                            as ``{"r": ranges, "t": ns, "d": s}``: when it was
                            written and the writer's ``garbage_delay`` (older
                            records: the bare ranges list)
``w:<content id>``          a write in progress: the blocks it may have left if
                            its writer dies before closing
==========================  ===================================================

``<prefix>_data`` -- ATOMIC, FULL_SYNC: ``"<content id>:<block index>"`` ->
``byte[]`` of at most the file's block size.

File entries carry their extents: ``[[first block, content id], ...]``.  Each
write session (open-write-close) writes blocks under a *fresh* content id, so
no two sessions ever write the same data key; an extent covers blocks from its
first block up to the next extent's.  A fresh write has one extent; each
append session adds one, starting at the block that held the old end of file
(that partial block is rewritten under the new id; nothing else is).
"""

from __future__ import annotations

import json
import os
import zlib
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any

from ..native.uri import clean_path

__all__ = [
    "DEFAULT_BLOCK_SIZE",
    "SPLIT_NAMES",
    "FileEntry",
    "DirEntry",
    "Entry",
    "ROOT_ENTRY",
    "entry_key",
    "bucket_key",
    "garbage_key",
    "pending_key",
    "block_key",
    "bucket_of",
    "decode_entry",
    "encode_entry",
    "decode_bucket",
    "encode_bucket",
    "decode_garbage",
    "encode_garbage",
    "normalize_path",
    "parent_of",
    "name_of",
    "ancestors",
    "new_id",
    "Range",
]

#: Default size of one data block (also the unit of the last-block rewrite on append).
DEFAULT_BLOCK_SIZE = 4 << 20
#: A listing bucket holding more names than this doubles the directory's buckets.
SPLIT_NAMES = 2000

#: ``(content id, first block, block count)``: data keys ``cid:first .. cid:first+count-1``.
Range = tuple[str, int, int]


def new_id() -> str:
    """A fresh random 64-bit id in hex (content ids, file ids, garbage ids)."""
    return os.urandom(8).hex()


# ----------------------------------------------------------------------- paths
def normalize_path(path: str) -> str:
    """``"a//b/./c/"`` -> ``"/a/b/c"``; ``..`` stops at the root (like TensorFlow's CleanPath).

    The same cleaning the TensorFlow plugin applies to URIs (``native.uri``).
    """
    return clean_path(path)


def parent_of(path: str) -> str:
    """Parent of a normalized path (the root is its own parent)."""
    head = path.rsplit("/", 1)[0]
    return head or "/"


def name_of(path: str) -> str:
    return path.rsplit("/", 1)[1]


def ancestors(path: str) -> list[str]:
    """Proper ancestors of ``path``, root first (``/a/b/c`` -> ``/``, ``/a``, ``/a/b``)."""
    out = ["/"]
    parts = [p for p in path.split("/") if p][:-1]
    for i in range(len(parts)):
        out.append("/" + "/".join(parts[: i + 1]))
    return out if path != "/" else []


# ------------------------------------------------------------------------ keys
def entry_key(path: str) -> str:
    return "e:" + path


def bucket_key(dir_path: str, index: int) -> str:
    return f"l:{dir_path}#{index}"


def garbage_key(gid: str) -> str:
    return "g:" + gid


def pending_key(cid: str) -> str:
    return "w:" + cid


def block_key(cid: str, index: int) -> str:
    return f"{cid}:{index}"


def bucket_of(name: str, nb: int) -> int:
    """Listing bucket of ``name`` in a directory with ``nb`` (a power of two) buckets."""
    return zlib.crc32(name.encode("utf-8", "surrogatepass")) & (nb - 1)


# --------------------------------------------------------------------- records
@dataclass(frozen=True)
class FileEntry:
    """A file: its content is the blocks named by ``extents``."""

    id: str
    """Stable identity of this file (kept by rename and append, new on overwrite)."""
    size: int
    mtime_ns: int
    block_size: int
    gen: int
    """Generation: +1 on every publication at this path (overwrite, append, flush)."""
    extents: tuple[tuple[int, str], ...] = ()
    """``(first block, content id)`` in increasing block order."""

    is_dir = False

    @property
    def blocks(self) -> int:
        return -(-self.size // self.block_size)

    def content_of(self, block: int) -> str:
        """Content id holding block ``block``."""
        i = bisect_right(self.extents, (block, "\uffff")) - 1
        if i < 0:
            raise ValueError(f"block {block} precedes the first extent")
        return self.extents[i][1]

    def key_of(self, block: int) -> str:
        return block_key(self.content_of(block), block)

    def ranges(self) -> list[Range]:
        """The data blocks this entry references, as ranges per content id."""
        n = self.blocks
        out: list[Range] = []
        for i, (first, cid) in enumerate(self.extents):
            end = self.extents[i + 1][0] if i + 1 < len(self.extents) else n
            end = min(end, n)
            if end > first:
                out.append((cid, first, end - first))
        return out

    def content_ids(self) -> frozenset[str]:
        return frozenset(cid for cid, _, _ in self.ranges())


@dataclass(frozen=True)
class DirEntry:
    """A directory; its children are listed in ``nb`` listing buckets."""

    id: str
    mtime_ns: int
    nb: int = 1

    is_dir = True
    size = 0


Entry = FileEntry | DirEntry

#: The root when ``e:/`` was never written.
ROOT_ENTRY = DirEntry(id="0", mtime_ns=0, nb=1)


def encode_entry(entry: Entry) -> str:
    if isinstance(entry, DirEntry):
        return json.dumps({"t": "d", "id": entry.id, "mt": entry.mtime_ns, "nb": entry.nb}, separators=(",", ":"))
    return json.dumps(
        {
            "t": "f",
            "id": entry.id,
            "sz": entry.size,
            "mt": entry.mtime_ns,
            "bs": entry.block_size,
            "g": entry.gen,
            "x": [list(e) for e in entry.extents],
        },
        separators=(",", ":"),
    )


def decode_entry(value: Any, path: str = "?") -> Entry:
    if not isinstance(value, str):
        raise ValueError(f"ignite:// metadata for {path} is not a file-store record ({type(value).__name__})")
    d = json.loads(value)
    if d.get("t") == "d":
        return DirEntry(id=d["id"], mtime_ns=d["mt"], nb=d.get("nb", 1))
    return FileEntry(
        id=d["id"],
        size=d["sz"],
        mtime_ns=d["mt"],
        block_size=d["bs"],
        gen=d["g"],
        extents=tuple((int(a), str(b)) for a, b in d.get("x", ())),
    )


def encode_garbage(ranges: list[Range], written_ns: int, delay: float) -> str:
    """A ``g:`` record: the block ranges, when the transaction wrote it, the writer's garbage delay."""
    return json.dumps({"r": ranges, "t": int(written_ns), "d": float(delay)}, separators=(",", ":"))


def decode_garbage(value: Any) -> tuple[list[Range], int, float]:
    """``(ranges, written_ns, delay)`` of a ``g:`` record; one of an older version (the bare
    ranges list) has neither time nor delay: ``(ranges, 0, 0.0)``, deletable at once."""
    data = json.loads(value)
    if isinstance(data, list):
        return [tuple(r) for r in data], 0, 0.0
    return [tuple(r) for r in data["r"]], int(data.get("t", 0)), float(data.get("d", 0.0))


def encode_bucket(nb: int, names: set[str] | frozenset[str] | list[str]) -> str:
    return f"{nb}|" + "/".join(sorted(names))


def decode_bucket(value: Any) -> tuple[int, set[str]]:
    """``(nb the bucket was written under, names)``; an absent bucket is ``(0, {})``."""
    if value is None:
        return 0, set()
    head, _, body = str(value).partition("|")
    return int(head), (set(body.split("/")) if body else set())
