"""The file tree: lookups, listings, directories, remove and rename.

Entries are keyed by full path (one ``get`` per ``stat`` at any depth); a
directory's names are kept in listing buckets that split as they grow
(ARCHITECTURE.md, "ignite:// file store").  Every change is one transaction
(:mod:`.tx`) that keeps the invariant: an entry exists only under an existing
directory entry.
"""

from __future__ import annotations

import collections
import errno
from collections.abc import Iterator, Sequence
from typing import TypeVar

from ..layout import (
    ROOT_ENTRY,
    SPLIT_NAMES,
    DirEntry,
    Entry,
    FileEntry,
    ancestors,
    bucket_key,
    bucket_of,
    decode_bucket,
    decode_entry,
    entry_key,
    name_of,
    new_id,
    normalize_path,
    parent_of,
)
from .common import FILES_PER_TX, StoreState, now_ns, os_error, recreates_caches
from .tx import TxView

_E = TypeVar("_E", DirEntry, FileEntry)


class Namespace(StoreState):
    """Part of :class:`~.core.IgniteFileStore`: the tree of names and entries."""

    def _entry_as(self, kind: type[_E], e: Entry | None, path: str) -> _E:
        """``e``, the entry at ``path``, when it is a ``kind`` (:class:`DirEntry` or :class:`FileEntry`);
        else the error a file system raises (missing; not a directory; a directory)."""
        if e is None:
            raise os_error(FileNotFoundError, errno.ENOENT, self.uri(path))
        if not isinstance(e, kind):
            if kind is DirEntry:
                raise os_error(NotADirectoryError, errno.ENOTDIR, self.uri(path))
            raise os_error(IsADirectoryError, errno.EISDIR, self.uri(path))
        return e

    def _add_name(self, v: TxView, dir_path: str, name: str) -> None:
        d = v.entry(dir_path)
        assert isinstance(d, DirEntry)
        index = bucket_of(name, d.nb)
        names = v.bucket(dir_path, index)
        if name in names:
            return
        names.add(name)
        v.touch_bucket(dir_path, index, d.nb)
        if len(names) > SPLIT_NAMES:
            self._split(v, dir_path, d)

    def _remove_name(self, v: TxView, dir_path: str, name: str) -> None:
        d = v.entry(dir_path)
        if not isinstance(d, DirEntry):
            return
        index = bucket_of(name, d.nb)
        names = v.bucket(dir_path, index)
        if name in names:
            names.discard(name)
            v.touch_bucket(dir_path, index, d.nb)

    def _names(self, v: TxView, dir_path: str, d: DirEntry) -> set[str]:
        v.fetch(k for k in (bucket_key(dir_path, i) for i in range(d.nb)) if k not in v._buckets)
        out: set[str] = set()
        for i in range(d.nb):
            out |= v.bucket(dir_path, i)
        return out

    def _split(self, v: TxView, dir_path: str, d: DirEntry) -> None:
        """Double the listing buckets of a directory until every bucket is half full at most."""
        names = self._names(v, dir_path, d)
        nb = d.nb
        while True:
            nb *= 2
            counts = collections.Counter(bucket_of(n, nb) for n in names)
            if max(counts.values(), default=0) <= SPLIT_NAMES // 2 or nb >= 1 << 16:
                break
        groups: dict[int, set[str]] = collections.defaultdict(set)
        for n in names:
            groups[bucket_of(n, nb)].add(n)
        for i in range(nb):
            v.set_bucket(dir_path, i, nb, groups.get(i, set()))
        v.put_entry(dir_path, DirEntry(id=d.id, mtime_ns=d.mtime_ns, nb=nb))
        self.stats["bucket_splits"] += 1

    def _drop_listing(self, v: TxView, dir_path: str, d: DirEntry) -> None:
        for i in range(d.nb):
            v.remove(bucket_key(dir_path, i))

    def _ensure_dirs(self, v: TxView, path: str, now: int) -> DirEntry:
        """``path`` as a directory, creating it and missing ancestors (inside ``v``)."""
        chain = ancestors(path) + [path] if path != "/" else ["/"]
        v.fetch_entries(chain)
        for p in chain:
            e = v.entry(p)
            if e is None:
                e = DirEntry(id=new_id(), mtime_ns=now, nb=1)
                v.put_entry(p, e)
                self._add_name(v, parent_of(p), name_of(p))
            elif not e.is_dir:
                raise os_error(NotADirectoryError, errno.ENOTDIR, self.uri(path), f"{p} is a file, not a directory")
        d = v.entry(path)
        assert isinstance(d, DirEntry)
        return d

    # ------------------------------------------------------------------ queries
    @recreates_caches
    def lookup(self, path: str) -> Entry | None:
        """The entry at ``path`` or None (one read, no transaction)."""
        path = normalize_path(path)
        raw = self.meta.get(entry_key(path))
        if raw is None:
            return ROOT_ENTRY if path == "/" else None
        return decode_entry(raw, path)

    def stat(self, path: str) -> Entry:
        e = self.lookup(path)
        if e is None:
            raise os_error(FileNotFoundError, errno.ENOENT, self.uri(normalize_path(path)))
        return e

    @recreates_caches
    def lookup_many(self, paths: Sequence[str]) -> dict[str, Entry]:
        """Entries of the existing ``paths`` (one request)."""
        norm = [normalize_path(p) for p in paths]
        got = self.meta.get_all([entry_key(p) for p in norm]) if norm else {}
        out: dict[str, Entry] = {}
        for p in norm:
            raw = got.get(entry_key(p))
            if raw is not None:
                out[p] = decode_entry(raw, p)
            elif p == "/":
                out[p] = ROOT_ENTRY
        return out

    @recreates_caches
    def listdir(self, path: str) -> list[str]:
        """Names in directory ``path``, sorted.

        Small directories (one listing bucket) take one read; larger ones are
        read in a (read-only) transaction so that the buckets are seen at one instant.
        """
        path = normalize_path(path)
        got = self.meta.get_all([entry_key(path), bucket_key(path, 0)])
        raw = got.get(entry_key(path))
        d = self._entry_as(
            DirEntry, decode_entry(raw, path) if raw is not None else (ROOT_ENTRY if path == "/" else None), path
        )
        if d.nb == 1:
            nb, names = decode_bucket(got.get(bucket_key(path, 0)))
            if nb <= 1:
                return sorted(names)

        def body(v: TxView) -> list[str]:
            e = self._entry_as(DirEntry, v.entry(path), path)
            return sorted(self._names(v, path, e))

        return self._transact(body, f"listdir {path}", read_only=True)

    def list_entries(self, path: str) -> list[tuple[str, Entry]]:
        """``(name, entry)`` of every child of ``path`` (for ``ls -l`` style listings)."""
        path = normalize_path(path)
        names = self.listdir(path)
        base = path.rstrip("/")
        out: list[tuple[str, Entry]] = []
        for i in range(0, len(names), 1000):
            chunk = names[i : i + 1000]
            got = self.lookup_many([f"{base}/{n}" for n in chunk])
            out.extend((n, got[f"{base}/{n}"]) for n in chunk if f"{base}/{n}" in got)
        return out

    def walk(self, path: str) -> Iterator[tuple[str, list[str], list[str]]]:
        """``os.walk``-style, top-down: ``(dir path, dir names, file names)``."""
        path = normalize_path(path)
        entries = self.list_entries(path)
        dirs = [n for n, e in entries if e.is_dir]
        files = [n for n, e in entries if not e.is_dir]
        yield path, dirs, files
        base = path.rstrip("/")
        for d in dirs:
            try:
                yield from self.walk(f"{base}/{d}")
            except FileNotFoundError:
                continue

    # ------------------------------------------------------------- directories
    @recreates_caches
    def mkdir(self, path: str) -> None:
        path = normalize_path(path)
        if path == "/":
            raise os_error(FileExistsError, errno.EEXIST, self.uri(path))
        parent = parent_of(path)

        def body(v: TxView) -> None:
            v.fetch_entries([parent, path])
            p = v.entry(parent)
            if p is None:
                raise os_error(FileNotFoundError, errno.ENOENT, self.uri(path), "parent directory does not exist")
            if not p.is_dir:
                raise os_error(NotADirectoryError, errno.ENOTDIR, self.uri(path), f"{parent} is a file")
            if v.entry(path) is not None:
                raise os_error(FileExistsError, errno.EEXIST, self.uri(path))
            v.put_entry(path, DirEntry(id=new_id(), mtime_ns=now_ns(), nb=1))
            self._add_name(v, parent, name_of(path))

        self._transact(body, f"mkdir {path}")

    @recreates_caches
    def makedirs(self, path: str) -> None:
        path = normalize_path(path)
        e = self.lookup(path)
        if e is not None:
            if not e.is_dir:
                raise os_error(NotADirectoryError, errno.ENOTDIR, self.uri(path), "exists and is not a directory")
            return
        self._transact(lambda v: self._ensure_dirs(v, path, now_ns()), f"makedirs {path}")

    @recreates_caches
    def rmdir(self, path: str) -> None:
        path = normalize_path(path)
        if path == "/":
            raise os_error(OSError, errno.EBUSY, self.uri(path), "the root directory cannot be removed")

        def body(v: TxView) -> None:
            e = self._entry_as(DirEntry, v.entry(path), path)
            if self._names(v, path, e):
                raise os_error(OSError, errno.ENOTEMPTY, self.uri(path))
            self._drop_listing(v, path, e)
            v.remove_entry(path)
            self._remove_name(v, parent_of(path), name_of(path))

        self._transact(body, f"rmdir {path}")

    @recreates_caches
    def rmtree(self, path: str) -> None:
        """Delete ``path`` and everything below (the root is emptied, not removed).

        Not one transaction: files go in batches, then each directory once it is
        empty, bottom-up -- like ``rm -r``, a concurrent reader may see part of
        the tree gone.  Each step is atomic, so nothing is ever left dangling.
        """
        path = normalize_path(path)
        e = self.stat(path)
        if not e.is_dir:
            self.remove(path)
            return
        self._rmtree_dir(path, depth=0)

    def _rmtree_dir(self, path: str, depth: int) -> None:
        for _ in range(10):
            entries = self.list_entries(path)
            base = path.rstrip("/")
            for name, e in entries:
                if e.is_dir:
                    self._rmtree_dir(f"{base}/{name}", depth + 1)
            files = [(f"{base}/{n}", e) for n, e in entries if not e.is_dir]
            for i in range(0, len(files), FILES_PER_TX):
                self._remove_files(files[i : i + FILES_PER_TX])
            if path == "/":
                if not self.listdir(path):
                    return
                continue
            try:
                self.rmdir(path)
                return
            except FileNotFoundError:
                return
            except OSError as exc:
                if exc.errno != errno.ENOTEMPTY:
                    raise
                # Something was created meanwhile: another round.
        raise os_error(OSError, errno.ENOTEMPTY, self.uri(path), "entries keep appearing while it is being deleted")

    def _remove_files(self, files: Sequence[tuple[str, Entry]]) -> None:
        def body(v: TxView) -> None:
            v.fetch_entries(p for p, _ in files)
            for p, _ in files:
                cur = v.entry(p)
                if cur is None or cur.is_dir:
                    continue  # gone or replaced by a directory meanwhile: rmtree looks again
                assert isinstance(cur, FileEntry)
                v.remove_entry(p)
                self._remove_name(v, parent_of(p), name_of(p))
                v.add_garbage(cur.ranges())

        self._transact(body, f"remove {len(files)} files")

    # -------------------------------------------------------------------- files
    @recreates_caches
    def remove(self, path: str) -> None:
        path = normalize_path(path)

        def body(v: TxView) -> None:
            e = self._entry_as(FileEntry, v.entry(path), path)
            v.remove_entry(path)
            self._remove_name(v, parent_of(path), name_of(path))
            v.add_garbage(e.ranges())

        self._transact(body, f"remove {path}")

    @recreates_caches
    def rename(self, src: str, dst: str) -> None:
        """Atomically move ``src`` to ``dst``: a file at ``dst`` is replaced, an empty
        directory at ``dst`` is replaced by a directory, missing parents of ``dst`` are
        created.  A directory moves with everything below it in the same transaction."""
        src, dst = normalize_path(src), normalize_path(dst)
        if src == "/" or dst == "/":
            raise os_error(OSError, errno.EBUSY, self.uri(src), "the root directory cannot be renamed or replaced")
        if dst.startswith(src + "/"):
            raise os_error(OSError, errno.EINVAL, self.uri(dst), f"cannot move {src} into itself")
        if src == dst:
            self.stat(src)
            return
        now = now_ns()

        def body(v: TxView) -> None:
            v.fetch_entries([src, dst, parent_of(src), *ancestors(dst)])
            s = v.entry(src)
            if s is None:
                raise os_error(FileNotFoundError, errno.ENOENT, self.uri(src))
            d = v.entry(dst)
            if isinstance(s, DirEntry):
                if d is not None:
                    if not isinstance(d, DirEntry):
                        raise os_error(NotADirectoryError, errno.ENOTDIR, self.uri(dst))
                    if self._names(v, dst, d):
                        raise os_error(OSError, errno.ENOTEMPTY, self.uri(dst))
                    self._drop_listing(v, dst, d)
            else:
                if isinstance(d, DirEntry):
                    raise os_error(IsADirectoryError, errno.EISDIR, self.uri(dst))
                if isinstance(d, FileEntry) and d.id != s.id:
                    v.add_garbage(d.ranges())
            self._ensure_dirs(v, parent_of(dst), now)
            if isinstance(s, DirEntry):
                self._move_tree(v, src, dst, s)
            v.remove_entry(src)
            self._remove_name(v, parent_of(src), name_of(src))
            v.put_entry(dst, s)
            if d is None:
                self._add_name(v, parent_of(dst), name_of(dst))

        self._transact(body, f"rename {src} -> {dst}")

    def _move_tree(self, v: TxView, src: str, dst: str, d: DirEntry) -> None:
        """Re-key everything below directory ``src`` to ``dst`` (inside ``v``)."""
        names = self._names(v, src, d)
        for i in range(d.nb):
            key = bucket_key(src, i)
            value = v.get(key)
            v.remove(key)
            if value is not None:
                v.put(bucket_key(dst, i), value)
        children = [f"{src}/{n}" for n in names]
        v.fetch_entries(children)
        for child in children:
            e = v.entry(child)
            if e is None:
                continue
            target = dst + child[len(src) :]
            if isinstance(e, DirEntry):
                self._move_tree(v, child, target, e)
            v.remove_entry(child)
            v.put_entry(target, e)
