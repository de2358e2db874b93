"""The ``ignite://`` file store: files as blocks in one Ignite cache (or table), metadata in another.

Layout of keys and records: :mod:`tensorflow_ignite.fs.layout`.  Design in
ARCHITECTURE.md ("ignite:// file store").  In short:

* **Blocks first, then one transaction.**  A writer streams its blocks under a
  fresh content id nobody else knows; only then does one transaction publish
  the entry (and the directory listing change).  Readers look the entry up
  first, so they see the old file or the new one, never a partial one.
* **Metadata changes are serializable transactions** on the meta cache
  (optimistic on Ignite 2, locking on Ignite 3): they read what they depend on
  (the entry, the parents, a listing bucket), compute, write, and commit; a
  transaction that lost a race is retried from the start.  Rename over an existing file, create-with-parents,
  exclusive create and append all get their atomicity from that.
* **Garbage is recorded in the same transaction** that drops the last
  reference to blocks (``g:`` records) and deleted right after the commit --
  later if a reader in this process still has them open; a crash in between
  leaves the record for :meth:`IgniteFileStore.collect_garbage`.

The store is a package, one module per part: :mod:`.core` (``IgniteFileStore``:
threads, whole-file operations), :mod:`.tx`, :mod:`.namespace`,
:mod:`.blocks`, :mod:`.gc`, :mod:`.reader` (with :mod:`.readahead`), :mod:`.writer`;
what they do on the wire goes through :mod:`.backend`'s interface, implemented
on Ignite 2 caches (:mod:`.ignite2`) and Ignite 3 tables (:mod:`.ignite3`), the
generation chosen by :mod:`.generation`.
"""

from ...errors import StaleFileError
from .core import IgniteFileStore
from .reader import FileReader
from .writer import FileWriter

__all__ = ["IgniteFileStore", "FileReader", "FileWriter", "StaleFileError"]
