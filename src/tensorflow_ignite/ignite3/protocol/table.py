"""Tables in Ignite 3's protocol: TABLE_GET, SCHEMAS_GET, PARTITION_ASSIGNMENT_GET, STREAMER_BATCH_SEND.

Facts of Ignite 3.1.0's ``client-handler`` (``ClientTableGetRequest``,
``ClientSchemasGetRequest``, ``ClientTablePartitionPrimaryReplicasGetRequest``,
``ClientStreamerBatchSendRequest``) and of the Java client's
``ClientTupleSerializer.writeStreamerTuples``:

* TABLE_GET: the table's name as SQL writes it (unquoted: upper-cased) ->
  nil, or its id and its name.
* SCHEMAS_GET: table id, nil (the latest version) or a count of versions and
  each version -> a count of schemas, each:
  version, a count of columns, each column 7 properties -- name, type id,
  position in the key (-1: not a key column), nullable, position in the
  colocation key (-1: not one), scale, precision.
* PARTITION_ASSIGNMENT_GET: table id, the assignment time the client knows
  (0: none) -> partition count, whether an assignment is known; when it is, its
  time and each partition's primary node name (nil when unknown).
* STREAMER_BATCH_SEND: table id, partition, the deleted rows' bit set (nil:
  none), schema version, row count, then per row its no-value bit set (MsgPack
  extension 8, ``ClientMsgPackType.BITMASK``: the columns left to their defaults) and the row as a binary
  tuple of every column in schema order -> the table's latest schema version.
  The node upserts the rows into that partition as given: the partition must
  be the one the row's colocation hash names (:mod:`.colocation`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...errors import ProtocolError
from .codes import ColumnType
from .msgpack_io import Reader, Writer

__all__ = [
    "TableColumn",
    "TableSchema",
    "PartitionAssignment",
    "table_get_request",
    "parse_table_get",
    "schemas_request",
    "parse_schemas",
    "assignment_request",
    "parse_assignment",
    "streamer_batch",
    "BITMASK_EXT",
]

#: ``ClientMsgPackType.BITMASK``: the MsgPack extension type of a bit set.
BITMASK_EXT = 8


@dataclass(frozen=True)
class TableColumn:
    """One column of a table's schema."""

    name: str
    type: ColumnType
    key_index: int
    nullable: bool
    colocation_index: int
    scale: int
    precision: int

    @property
    def is_key(self) -> bool:
        return self.key_index >= 0


@dataclass(frozen=True)
class TableSchema:
    """A version of a table's schema: its columns in schema order."""

    version: int
    columns: tuple[TableColumn, ...]

    @property
    def colocation_columns(self) -> tuple[TableColumn, ...]:
        """The columns the partition is computed from, in colocation order."""
        cols = [c for c in self.columns if c.colocation_index >= 0]
        return tuple(sorted(cols, key=lambda c: c.colocation_index))


@dataclass(frozen=True)
class PartitionAssignment:
    """The primary node of each partition (None: not known), as of ``timestamp``."""

    partitions: int
    timestamp: int
    primaries: tuple[str | None, ...]


def table_get_request(name: str) -> bytes:
    return Writer().value(name).bytes()


def parse_table_get(r: Reader) -> tuple[int, str] | None:
    """The table's id and name, or None when there is no such table."""
    if r.is_nil():
        return None
    return r.int(), r.str()


def schemas_request(table_id: int, versions: Sequence[int] | None = None) -> bytes:
    """SCHEMAS_GET of the latest schema version, or of the given ``versions`` (a count, then each)."""
    if versions is None:
        return Writer().values(table_id, None).bytes()
    return Writer().values(table_id, len(versions), *versions).bytes()


def parse_schemas(r: Reader) -> list[TableSchema]:
    count = r.count("schemas answer", "schemas")
    out = []
    for _ in range(count):
        version = r.int()
        if r.is_nil():
            out.append(TableSchema(version, ()))
            continue
        ncols = r.count("schemas answer", "columns")
        cols = []
        for i in range(ncols):
            props = r.int()
            if props < 7:
                raise ProtocolError(f"schemas answer: column {i} has {props} properties (7 or more expected)")
            name, type_id, key_index, nullable, coloc, scale, precision = (
                r.str(),
                r.int(),
                r.int(),
                r.bool(),
                r.int(),
                r.int(),
                r.int(),
            )
            r.skip(props - 7)
            try:
                col_type = ColumnType(type_id)
            except ValueError:
                raise ProtocolError(f"schemas answer: column {name!r} has the unknown type id {type_id}") from None
            cols.append(TableColumn(name, col_type, key_index, nullable, coloc, scale, precision))
        out.append(TableSchema(version, tuple(cols)))
    return out


def assignment_request(table_id: int, known_timestamp: int = 0) -> bytes:
    return Writer().values(table_id, known_timestamp).bytes()


def parse_assignment(r: Reader) -> PartitionAssignment:
    count = r.int()
    if count <= 0 or count > 65536:
        raise ProtocolError(f"partition assignment answer: {count} partitions")
    if not r.bool():
        return PartitionAssignment(count, 0, (None,) * count)
    ts = r.int()
    primaries = tuple(None if r.is_nil() else r.str() for _ in range(count))
    return PartitionAssignment(count, ts, primaries)


def _bin_header(n: int) -> bytes:
    if n <= 0xFF:
        return b"\xc4" + bytes([n])
    if n <= 0xFFFF:
        return b"\xc5" + n.to_bytes(2, "big")
    return b"\xc6" + n.to_bytes(4, "big")


def bitset_ext(bits: Sequence[int]) -> bytes:
    """A bit set (Java's ``BitSet.toByteArray``: little-endian bytes, trailing zero bytes dropped) as
    MsgPack extension 8."""
    v = 0
    for b in bits:
        v |= 1 << b
    data = v.to_bytes((v.bit_length() + 7) // 8, "little")
    n = len(data)
    if n in (1, 2, 4, 8, 16):
        head = bytes([{1: 0xD4, 2: 0xD5, 4: 0xD6, 8: 0xD7, 16: 0xD8}[n]])
    elif n <= 0xFF:
        head = b"\xc7" + bytes([n])
    else:
        head = b"\xc8" + n.to_bytes(2, "big")
    return head + bytes([BITMASK_EXT]) + data


def streamer_batch(
    table_id: int, partition: int, schema_version: int, rows: Sequence[bytes], no_value: Sequence[int] = ()
) -> bytes:
    """The body of STREAMER_BATCH_SEND: ``rows`` (binary tuples of every column) upserted into ``partition``;
    ``no_value``: the schema indexes of columns no row gives (the node applies their defaults)."""
    head = Writer().values(table_id, partition, None, schema_version, len(rows)).bytes()
    mask = bitset_ext(no_value)
    parts = [head]
    for row in rows:
        parts.append(mask)
        parts.append(_bin_header(len(row)))
        parts.append(row)
    return b"".join(parts)
