"""Key-value operations on an Ignite 3 table: TUPLE_GET, TUPLE_GET_ALL, TUPLE_UPSERT(_ALL), TUPLE_DELETE(_ALL),
TUPLE_CONTAINS_KEY.

Facts of Ignite 3.1.0's ``client-handler`` (``ClientTupleRequestBase``,
``ClientTuplesRequestBase``, ``ClientTableCommon``, the ``ClientTuple*Request``
handlers) and of the Java client's ``ClientTupleSerializer``:

* A request: table id, the transaction (nil: an implicit one the node starts
  for this request; else the id TX_BEGIN answered, valid on that connection
  only), the schema version the tuples are written in, then one tuple -- or a
  count and that many -- each as the no-value bit set (MsgPack extension 8, the
  columns left to their defaults) and the binary tuple.  A *key* tuple holds
  the key columns in key order (their position in the key); a *row* holds every
  column in schema order.
* Answers (no transaction metadata: this client proposes no direct-mapping
  feature): TUPLE_GET: the schema version, then nil or the row (every column);
  TUPLE_GET_ALL: the schema version, a count, per key a boolean (found) and the
  row when found; TUPLE_UPSERT(_ALL): the table's latest schema version;
  TUPLE_DELETE and TUPLE_CONTAINS_KEY: the schema version and a boolean;
  TUPLE_DELETE_ALL: the schema version, a count and the keys that were not
  there (key tuples).
* A request written in a schema version the transaction cannot use fails with
  ``IGN-TBL-5`` (schema version mismatch) carrying the extension
  ``expected-schema-ver``: the client loads that version (SCHEMAS_GET) and sends
  the request again written in it.

Values are encoded by :mod:`.rows` (the streamer's encoder: each value as its
column's type) and decoded by :func:`.binary_tuple.decode_value`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...errors import ConfigurationError
from .binary_tuple import decode_value, element_bounds
from .msgpack_io import Reader, Writer
from .rows import encode_rows
from .table import TableColumn, TableSchema, bitset_ext

__all__ = [
    "EXPECTED_SCHEMA_VERSION",
    "EncodedTuples",
    "key_schema",
    "encode_keys",
    "encode_records",
    "tuples_request",
    "parse_get",
    "parse_get_all",
    "parse_version",
    "parse_flag",
    "parse_keys",
    "decode_row",
    "decode_key",
]

#: The error extension naming the schema version a request must be written in (``ErrorExtensions``).
EXPECTED_SCHEMA_VERSION = "expected-schema-ver"


@dataclass(frozen=True)
class EncodedTuples:
    """Tuples ready for a request: each as its no-value bit set (MsgPack) and its binary tuple; each
    one's colocation hash (the partition is ``abs(hash % partitions)``)."""

    masks: list[bytes]
    tuples: list[bytes]
    hashes: list[int]


def key_schema(schema: TableSchema) -> TableSchema:
    """The key columns of ``schema`` in key order: what a key tuple holds."""
    return TableSchema(
        schema.version, tuple(sorted((c for c in schema.columns if c.is_key), key=lambda c: c.key_index))
    )


def _object_column(values: Sequence[Any]) -> np.ndarray:
    arr = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):  # item by item: NumPy would turn bytes into a fixed-width 'S' array
        arr[i] = v
    return arr


def _encode(schema: TableSchema, rows: Sequence[Mapping[str, Any]], table: str) -> EncodedTuples:
    """``rows`` (dicts with the same columns) as tuples of ``schema``."""
    names = list(rows[0])
    data = {n: _object_column([r[n] for r in rows]) for n in names}
    enc = encode_rows(schema, data, table)
    mask = bitset_ext(enc.no_value)
    return EncodedTuples([mask] * len(rows), enc.rows, enc.hashes.tolist())


def encode_keys(schema: TableSchema, keys: Sequence[Mapping[str, Any]], table: str) -> EncodedTuples:
    """``keys`` (dicts of the key columns) as key tuples of ``schema``."""
    ks = key_schema(schema)
    key_names = {c.name for c in ks.columns}
    for k in keys:
        extra = [n for n in k if n not in key_names and n.upper() not in key_names]
        if extra:
            raise ConfigurationError(
                f"a key of table {table} holds its key columns ({', '.join(key_names)}) only, "
                f"not {', '.join(map(repr, extra))}"
            )
    return _group(ks, keys, table)


def encode_records(schema: TableSchema, rows: Sequence[Mapping[str, Any]], table: str) -> EncodedTuples:
    """``rows`` (dicts: column -> value, the key columns required; a column left out takes its default)
    as full tuples of ``schema``."""
    return _group(schema, rows, table)


def _group(schema: TableSchema, rows: Sequence[Mapping[str, Any]], table: str) -> EncodedTuples:
    """Rows encoded a group of equal column sets at a time (one no-value set per group), in their order."""
    if not rows:
        return EncodedTuples([], [], [])
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, r in enumerate(rows):
        if not isinstance(r, Mapping):
            raise ConfigurationError(
                f"a row or key of table {table} is a mapping of column -> value, not {type(r).__name__}"
            )
        groups.setdefault(tuple(r), []).append(i)
    masks: list[bytes] = [b""] * len(rows)
    tuples: list[bytes] = [b""] * len(rows)
    hashes: list[int] = [0] * len(rows)
    for idx in groups.values():
        enc = _encode(schema, [rows[i] for i in idx], table)
        for j, i in enumerate(idx):
            masks[i], tuples[i], hashes[i] = enc.masks[j], enc.tuples[j], enc.hashes[j]
    return EncodedTuples(masks, tuples, hashes)


def tuples_request(
    table_id: int, tx: int | None, schema_version: int, enc: EncodedTuples, *, single: bool = False
) -> bytes:
    """The body of a tuple request: one tuple (``single``) or a count and the tuples."""
    w = Writer().values(table_id, tx, schema_version)
    if single:
        if len(enc.tuples) != 1:
            raise ConfigurationError(f"a single-tuple request takes one tuple, not {len(enc.tuples)}")
    else:
        w.value(len(enc.tuples))
    parts = [w.bytes()]
    for mask, t in zip(enc.masks, enc.tuples):
        parts.append(mask)
        parts.append(Writer().value(t).bytes())
    return b"".join(parts)


def parse_get(r: Reader) -> tuple[int, bytes | None]:
    """TUPLE_GET's answer: the row's schema version and the row (None: no such key)."""
    version = r.int()
    return version, (None if r.is_nil() else r.bin())


def parse_get_all(r: Reader) -> tuple[int, list[bytes | None]]:
    """TUPLE_GET_ALL's answer: the rows' schema version and a row per key asked (None: not there)."""
    version = r.int()
    count = r.count("get-all answer", "rows")
    return version, [r.bin() if r.bool() else None for _ in range(count)]


def parse_version(r: Reader) -> int:
    """The answer of an upsert: the table's latest schema version."""
    return r.int()


def parse_flag(r: Reader) -> tuple[int, bool]:
    """TUPLE_DELETE's and TUPLE_CONTAINS_KEY's answer: the schema version and whether the key was there."""
    return r.int(), r.bool()


def parse_keys(r: Reader) -> tuple[int, list[bytes]]:
    """TUPLE_DELETE_ALL's answer: the schema version and the key tuples that were not there."""
    version = r.int()
    count = r.count("delete-all answer", "keys")
    return version, [r.bin() for _ in range(count)]


def _decode(columns: Sequence[TableColumn], data: bytes) -> dict[str, Any]:
    bounds = element_bounds(data, len(columns))
    return {c.name: decode_value(int(c.type), data, b, e) for c, (b, e) in zip(columns, bounds)}


def decode_row(schema: TableSchema, data: bytes) -> dict[str, Any]:
    """A row (every column, schema order) as a dict: column -> value (None: NULL)."""
    return _decode(schema.columns, data)


def decode_key(schema: TableSchema, data: bytes) -> dict[str, Any]:
    """A key tuple as a dict of the key columns."""
    return _decode(key_schema(schema).columns, data)
