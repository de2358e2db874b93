"""Apache Ignite 3: SQL tables and queries as ``tf.data`` datasets, over Ignite 3's own client protocol.

    import tensorflow_ignite.ignite3 as ignite3
    ds = ignite3.from_table("TRAIN", host="127.0.0.1", port=10800, batch_size=256)

:func:`from_sql` / :func:`from_table` (:mod:`.dataset`), :func:`write`
(:mod:`.write`: the streamer per partition, or SQL INSERT batches), :class:`Ignite3Client`
(:mod:`.client`; rows by key through ``client.table(name).kv()``, :mod:`.kv`, and
``client.transaction()``, :mod:`.tx`); the wire in :mod:`.protocol`, without I/O.  Needs the
``msgpack`` package: ``pip install 'tensorflow-ignite[ignite3]'`` (importing
this package without it raises an ``ImportError`` saying so).
:class:`tensorflow_ignite.IgniteDataset`, ``tensorflow_ignite.write`` and ``tensorflow_ignite.predict``
take an Ignite 3 address too (the generation is found at the handshake) and map onto this package;
it stays for what only Ignite 3 has (zones, rows by key, transactions) and its own keywords.  An
:class:`Ignite3Client` pointed at an Ignite 2 node is refused at the handshake with a
:class:`~tensorflow_ignite.errors.HandshakeError` saying which entry point to use.
"""

from __future__ import annotations

from .client import Ignite3Client, SqlCursor
from .dataset import element_dtypes, from_sql, from_table
from .kv import KeyValueView, Table
from .protocol import msgpack_io as _msgpack_io  # noqa: F401  (the clear error when msgpack is missing)
from .tx import Transaction, TransactionClosedError
from .write import write

__all__ = [
    "Ignite3Client",
    "SqlCursor",
    "Table",
    "KeyValueView",
    "Transaction",
    "TransactionClosedError",
    "from_sql",
    "from_table",
    "element_dtypes",
    "write",
]
