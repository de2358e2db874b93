"""The pure parts of writing into Ignite 3 through the streamer: colocation hashes, partitions, rows as
binary tuples, the STREAMER_BATCH_SEND body."""

from __future__ import annotations

import datetime as dt
import decimal
import random
import uuid

import numpy as np
import pytest

from tensorflow_ignite.errors import ConfigurationError
from tensorflow_ignite.ignite3.protocol import colocation as co
from tensorflow_ignite.ignite3.protocol.binary_tuple import decode_value, element_bounds
from tensorflow_ignite.ignite3.protocol.codes import ColumnType as T
from tensorflow_ignite.ignite3.protocol.msgpack_io import Reader
from tensorflow_ignite.ignite3.protocol.rows import encode_rows
from tensorflow_ignite.ignite3.protocol.table import TableColumn, TableSchema, parse_assignment, parse_schemas, \
    streamer_batch


def test_fixed_width_hash_is_the_hash_of_its_little_endian_bytes() -> None:
    # Ignite's own HashUtilsTest property: hashing a byte/short/int/long equals hashing its bytes.
    rnd = random.Random(3)
    for width in (1, 2, 4, 8):
        for _ in range(100):
            v = rnd.getrandbits(8 * width)
            assert co.hash_fixed(v, width) == co.hash_bytes(v.to_bytes(width, "little"))
    for n in (0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33):
        data = bytes(rnd.getrandbits(8) for _ in range(n))
        assert -2**31 <= co.hash_bytes(data) < 2**31


def test_vectorized_hashes_equal_the_row_by_row_ones() -> None:
    keys = np.array([0, 1, -1, 101, 2**40, -2**63, 2**63 - 1], np.int64)
    vec = co.partitions_of(co.combine_arrays(np.zeros(len(keys), np.int32), co.hash_ints(keys, T.INT64)), 25)
    one = [co.partition_of(co.row_hash([(T.INT64, int(k), 0, 0)]), 25) for k in keys]
    assert vec.tolist() == one
    ints = np.array([5, -7, 2**31 - 1], np.int32)
    assert co.hash_ints(ints, T.INT32).tolist() == [co.value_hash(T.INT32, int(v)) for v in ints]
    # Two colocation columns: each combined into the running hash in order.
    two = co.row_hash([(T.INT32, 5, 0, 0), (T.STRING, "a", 0, 0)])
    assert two == co.combine(co.combine(0, co.value_hash(T.INT32, 5)), co.hash_bytes(b"a"))


def test_partitions_of_bigint_keys_are_ignites() -> None:
    # Ignite 3.1.0's own SQL test (system_columns.test): BIGINT keys 101, 102, 103 in a 25-partition
    # table are in partitions 19, 17 and 11.
    keys = np.array([101, 102, 103], np.int64)
    hashes = co.combine_arrays(np.zeros(3, np.int32), co.hash_ints(keys, T.INT64))
    assert co.partitions_of(hashes, 25).tolist() == [19, 17, 11]
    assert [co.partition_of(co.row_hash([(T.INT64, int(k), 0, 0)]), 25) for k in keys] == [19, 17, 11]


def test_partition_is_javas_abs_of_the_remainder() -> None:
    assert co.partition_of(-7, 5) == 2 and co.partition_of(7, 5) == 2
    assert co.partitions_of(np.array([-7, 7, -2**31], np.int32), 5).tolist() == [2, 2, 3]


def test_decimal_bytes_are_javas_big_integer_bytes() -> None:
    assert co.java_bigint_bytes(0) == b"\x00"
    assert co.java_bigint_bytes(-1) == b"\xff"
    assert co.java_bigint_bytes(127) == b"\x7f" and co.java_bigint_bytes(128) == b"\x00\x80"
    assert co.java_bigint_bytes(-128) == b"\x80" and co.java_bigint_bytes(-129) == b"\xff\x7f"
    # Hashed at the column's scale: 1.5 and 1.50 are one key in a DECIMAL(10, 2) column.
    assert co.value_hash(T.DECIMAL, decimal.Decimal("1.5"), scale=2) == co.value_hash(T.DECIMAL, "1.50", scale=2)


def test_time_hash_ignores_digits_beyond_the_column_precision() -> None:
    assert co.time_hash(1, 2, 3, 123_456_789, 3) == co.time_hash(1, 2, 3, 123_000_000, 3)
    assert co.time_hash(1, 2, 3, 123_456_789, 9) != co.time_hash(1, 2, 3, 123_000_000, 9)


def _col(name: str, t: T, key: int = -1, coloc: int = -1, scale: int = 0, precision: int = 0) -> TableColumn:
    return TableColumn(name, t, key, key < 0, coloc, scale, precision)


SCHEMA = TableSchema(3, (
    _col("ID", T.INT64, 0, 0), _col("I8", T.INT8), _col("F", T.FLOAT), _col("X", T.DOUBLE),
    _col("DEC", T.DECIMAL, scale=4, precision=12), _col("B", T.BOOLEAN), _col("S", T.STRING),
    _col("BY", T.BYTE_ARRAY), _col("U", T.UUID), _col("DT", T.DATE), _col("TM", T.TIME, precision=9),
    _col("DTM", T.DATETIME, precision=9), _col("TS", T.TIMESTAMP, precision=9), _col("EXTRA", T.INT32)))


def _decode(row: bytes, schema: TableSchema) -> list[object]:
    bounds = element_bounds(row, len(schema.columns))
    return [decode_value(c.type, row, b, e) for c, (b, e) in zip(schema.columns, bounds)]


def test_rows_encode_every_type_as_its_column_type() -> None:
    u = uuid.UUID("6f1e3a1c-2f5d-4b8e-9a77-0f4b2d7c9e10")
    data = {
        "id": np.array([1, 2**40]), "I8": [-7, None], "F": np.array([1.5, 2.0], np.float32),
        "X": np.array([0.1, 2.0]), "DEC": [decimal.Decimal("12345678.12345"), "100"], "B": [True, False],
        "S": ["héllo", ""], "BY": [b"\x80\x01", b""], "U": [str(u), None],
        "DT": np.array(["1969-12-31", "2262-04-11"], "datetime64[D]"),
        "TM": [dt.time(23, 59, 58, 125000), 1],
        "DTM": [dt.datetime(2000, 1, 2, 3, 4, 5, 6), -1],
        "TS": np.array(["1970-01-01T00:00:00.000001", "1969-12-31T23:59:59.999999999"], "datetime64[ns]"),
    }
    enc = encode_rows(SCHEMA, data, "T")
    first, second = (_decode(r, SCHEMA) for r in enc.rows)
    assert first[:9] == [1, -7, 1.5, 0.1, decimal.Decimal("12345678.1235"), True, "héllo", b"\x80\x01", u]
    assert first[9:12] == [dt.date(1969, 12, 31), dt.time(23, 59, 58, 125000), dt.datetime(2000, 1, 2, 3, 4, 5, 6)]
    assert first[12] == dt.datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=dt.timezone.utc)
    assert second[:3] == [2**40, None, 2.0]
    assert second[4] == decimal.Decimal(100) and second[6:9] == ["", b"", None]
    assert second[10] == dt.time(0, 0) and second[11] == dt.datetime(1969, 12, 31, 23, 59, 59, 999999)
    assert first[13] is None and enc.no_value == (13,)  # EXTRA not given: its default applies
    # The hash is the ID column's alone (the only colocation column).
    assert enc.hashes.tolist() == [co.row_hash([(T.INT64, 1, 0, 0)]), co.row_hash([(T.INT64, 2**40, 0, 0)])]


def test_rows_with_long_values_get_wider_offset_tables() -> None:
    schema = TableSchema(1, (_col("ID", T.INT32, 0, 0), _col("S", T.STRING)))
    enc = encode_rows(schema, {"ID": np.array([1, 2, 3]), "S": np.array(["a", "x" * 300, "y" * 70_000])}, "T")
    assert [r[0] for r in enc.rows] == [0, 1, 2]
    assert [_decode(r, schema)[1] for r in enc.rows] == ["a", "x" * 300, "y" * 70_000]


def test_rows_refuse_values_the_columns_cannot_hold() -> None:
    with pytest.raises(ConfigurationError, match="'I8'.*-128..127"):
        encode_rows(SCHEMA, {"ID": [1], "I8": [300]}, "T")
    with pytest.raises(ConfigurationError, match="'NOPE'.*not a column of table T"):
        encode_rows(SCHEMA, {"ID": [1], "NOPE": [1]}, "T")
    with pytest.raises(ConfigurationError, match="ID, the key of table T"):
        encode_rows(SCHEMA, {"X": [1.0]}, "T")
    with pytest.raises(ConfigurationError, match="takes integers"):
        encode_rows(SCHEMA, {"ID": np.array([1.5])}, "T")


def test_streamer_batch_body() -> None:
    body = streamer_batch(7, 3, 2, [b"\x00\x01\x05", b"\x00\x01\x06"], no_value=(1,))
    r = Reader(body)
    assert [r.int(), r.int()] == [7, 3] and r.is_nil() and [r.int(), r.int()] == [2, 2]
    for row in (b"\x00\x01\x05", b"\x00\x01\x06"):
        mask = r.value()
        assert mask.code == 8 and mask.data == b"\x02"  # bit 1: column 1 has no value
        assert r.bin() == row
    assert r.at_end()
    empty = Reader(streamer_batch(7, 0, 1, [b"\x00"]))
    empty.skip(5)
    assert empty.value().data == b""


def test_schema_and_assignment_answers() -> None:
    from tensorflow_ignite.ignite3.protocol.msgpack_io import Writer

    w = Writer().values(1, 4, 2, 7, "ID", int(T.INT64), 0, False, 0, 0, 19, 7, "V", int(T.STRING), -1, True, -1,
                        0, 65536)
    (schema,) = parse_schemas(Reader(w.bytes()))
    assert schema.version == 4 and [c.name for c in schema.colocation_columns] == ["ID"]
    assert schema.columns[1].type is T.STRING and not schema.columns[1].is_key
    a = parse_assignment(Reader(Writer().values(3, True, 99, "n1", None, "n2").bytes()))
    assert a.partitions == 3 and a.timestamp == 99 and a.primaries == ("n1", None, "n2")
    assert parse_assignment(Reader(Writer().values(25, False).bytes())).primaries == (None,) * 25
