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


def _hash_column(values, t, scale=0, precision=0):  # type: ignore[no-untyped-def]
    """``co.hash_column`` of the whole column, checked against its value-by-value path (a few values at a time)."""
    whole = co.hash_column(values, t, scale, precision)
    pieces = [co.hash_column(values[i:i + 5], t, scale, precision) for i in range(0, len(values), 5)]
    assert whole.tolist() == np.concatenate(pieces).tolist() if pieces else whole.size == 0, t
    return whole


def test_decoded_column_hashes_equal_the_row_by_row_ones() -> None:
    # hash_column takes a column as the reader decodes it (protocol/columns); value_hash takes Python values.
    rng = np.random.default_rng(5)
    n = 300
    ints = rng.integers(-2**62, 2**62, n)
    for t, dtype in ((T.INT8, np.int8), (T.INT16, np.int16), (T.INT32, np.int32), (T.INT64, np.int64)):
        v = ints.astype(dtype)
        assert _hash_column(v, t).tolist() == [co.value_hash(t, int(x)) for x in v], t
    flags = rng.random(n) < 0.5
    assert _hash_column(flags, T.BOOLEAN).tolist() == [co.value_hash(T.BOOLEAN, bool(x)) for x in flags]
    doubles = np.concatenate([rng.normal(0, 1e9, n), [0.0, -0.0, 1.5, np.inf]])
    assert _hash_column(doubles, T.DOUBLE).tolist() == [co.value_hash(T.DOUBLE, float(x)) for x in doubles]
    floats = doubles.astype(np.float32)
    assert _hash_column(floats, T.FLOAT).tolist() == [co.value_hash(T.FLOAT, float(x)) for x in floats]
    # Strings of every tail length and of several blocks, one past the vectorized limit, and empty.
    texts = [bytes(rng.integers(0, 256, k, dtype=np.uint8)) for k in list(range(50)) + [16 * 64, 16 * 64 + 16, 3000]]
    want = [co.hash_bytes(x) for x in texts]
    assert _hash_column(np.array(texts, object), T.BYTE_ARRAY).tolist() == want
    assert co.hash_bytes_array(texts[::-1]).tolist() == want[::-1]
    words = ["", "a", "héllo wörld", "k" * 40]
    assert _hash_column(np.array([w.encode() for w in words], object), T.STRING).tolist() == \
        [co.value_hash(T.STRING, w) for w in words]
    uuids = [uuid.UUID(int=int(x)) for x in rng.integers(0, 2**63, 20)] + [uuid.UUID(int=2**128 - 1), uuid.uuid4()]
    text = np.array([str(u).encode() for u in uuids], object)
    assert _hash_column(text, T.UUID).tolist() == [co.value_hash(T.UUID, u) for u in uuids]
    assert _hash_column(np.array([str(u).upper().encode() for u in uuids], object), T.UUID).tolist() == \
        _hash_column(text, T.UUID).tolist()
    decs = [b"1.5", b"-0.0001", b"123456789.1234", b"0", b"1E+3", b"-99999999.99995"]
    assert _hash_column(np.array(decs, object), T.DECIMAL, scale=4).tolist() == \
        [co.value_hash(T.DECIMAL, decimal.Decimal(d.decode()), scale=4) for d in decs]
    # Temporal columns as decoded: DATE ms, TIME ns of the day, DATETIME/TIMESTAMP ns since 1970.
    days = rng.integers(-700_000, 700_000, n)  # years 53..3886 (Python dates: 1..9999)
    day_ms = days * 86_400_000
    assert _hash_column(day_ms, T.DATE).tolist() == \
        [co.value_hash(T.DATE, dt.date(1970, 1, 1) + dt.timedelta(days=int(d))) for d in days]
    tod = rng.integers(0, 86_400_000, n) * 1_000_000 + rng.integers(0, 1_000_000, n)
    for precision in (0, 3, 6, 9):
        got = _hash_column(tod, T.TIME, precision=precision).tolist()
        assert got == [co.time_hash(int(x) // 3_600_000_000_000, int(x) // 60_000_000_000 % 60,
                                    int(x) // 1_000_000_000 % 60, int(x) % 1_000_000_000, precision) for x in tod]
    ns = days[:100] * 86_400_000_000_000 + tod[:100]
    for precision in (3, 6):
        assert _hash_column(ns, T.TIMESTAMP, precision=precision).tolist() == \
            [co.timestamp_hash(int(x) // 10**9, int(x) % 10**9, precision) for x in ns]
        want = []
        for x in ns.tolist():
            d, rest = divmod(x, 86_400 * 10**9)
            when = dt.date(1970, 1, 1) + dt.timedelta(days=d)
            s, nano = divmod(rest, 10**9)
            want.append(co.combine(co.date_hash(when.year, when.month, when.day),
                                   co.time_hash(s // 3600, s // 60 % 60, s % 60, nano, precision)))
        assert _hash_column(ns, T.DATETIME, precision=precision).tolist() == want
    # A row's hash: its colocation columns combined in order, as row_hash does.
    got = co.row_hashes([(ints[:20], T.INT64, 0, 0), (np.array(texts[:20], object), T.BYTE_ARRAY, 0, 0)])
    assert got.tolist() == [co.row_hash([(T.INT64, int(a), 0, 0), (T.BYTE_ARRAY, b, 0, 0)])
                            for a, b in zip(ints[:20], texts[:20])]


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
