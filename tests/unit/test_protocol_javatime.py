"""Optimized-marshaller Java dates and java.time values (protocol.javatime), lossless widening and the
timestamp range in the column decoder."""

from __future__ import annotations

import numpy as np
import pytest

from tensorflow_ignite.errors import ProtocolError, SchemaError
from tensorflow_ignite.protocol import columns as C
from tensorflow_ignite.protocol.binary import decode_value, encode_value
from tensorflow_ignite.protocol.codes import TypeCode
from tensorflow_ignite.protocol.javatime import (
    UnsupportedJavaObjectError,
    decode_java_time,
    describe_java_object,
    encode_java_time,
    encode_java_time_ser,
)
from tensorflow_ignite.protocol.types import COLUMN_DTYPES
from tensorflow_ignite.protocol.values import Date, Float32, Int8, Int16, Int32, OptimizedObject, Time, Timestamp

# Bytes a 2.17 node sent for SQL DATE values (INSERT of 1970-01-04 and DATE '2020-02-29').
NODE_SQL_DATE_1970_01_04 = bytes.fromhex("663aded54097660014730f00000000")
NODE_SQL_DATE_2020_02_29 = bytes.fromhex("663aded5409766001c3e8e70010000")


def test_sql_date_bytes_from_a_node() -> None:
    assert decode_java_time(NODE_SQL_DATE_1970_01_04) == Date(3 * 86_400_000)
    assert decode_java_time(NODE_SQL_DATE_2020_02_29) == Date(1_582_934_400_000)
    assert encode_java_time("java.sql.Date", 1_582_934_400_000) == NODE_SQL_DATE_2020_02_29


def test_other_classes_round_trip() -> None:
    assert decode_java_time(encode_java_time("java.util.Date", -1)) == Date(-1)
    assert decode_java_time(encode_java_time("java.sql.Time", 3_723_004)) == Time(3_723_004)
    ts = decode_java_time(encode_java_time("java.sql.Timestamp", -2000, 999_999_999))
    assert ts == Timestamp.from_epoch_ns(-2000 * 1_000_000 + 999_999_999)


@pytest.mark.parametrize("data", [
    NODE_SQL_DATE_1970_01_04[:-1],                       # truncated
    NODE_SQL_DATE_1970_01_04 + b"\x00",                  # trailing byte
    NODE_SQL_DATE_1970_01_04[:5] + b"\x00\x00" + NODE_SQL_DATE_1970_01_04[7:],  # wrong checksum
    encode_java_time("java.sql.Timestamp", 0)[:-4] + (10**9).to_bytes(4, "little"),  # nanos out of range
])
def test_malformed(data: bytes) -> None:
    with pytest.raises(ProtocolError) as info:
        decode_java_time(data)
    assert not isinstance(info.value, UnsupportedJavaObjectError)


def test_other_class_is_named() -> None:
    list_bytes = b"\x66" + (-1).to_bytes(4, "little", signed=True) + b"\x00\x00"
    with pytest.raises(UnsupportedJavaObjectError, match="type id -1"):
        decode_java_time(list_bytes)
    with pytest.raises(UnsupportedJavaObjectError, match="tag 0xac"):
        decode_java_time(b"\xac\xed\x00\x05")
    assert describe_java_object(NODE_SQL_DATE_1970_01_04) == "java.sql.Date"


def test_general_decoder_gives_native_values() -> None:
    wire = encode_value(OptimizedObject(NODE_SQL_DATE_2020_02_29))
    assert decode_value(wire) == Date(1_582_934_400_000)
    assert decode_value(encode_value(OptimizedObject(b"\xac\xed"))) == OptimizedObject(b"\xac\xed")


def _page(values: list[object]) -> tuple[bytes, int]:
    return b"".join(encode_value(v) for v in values), len(values)


@pytest.mark.parametrize(("code", "values", "expected"), [
    (TypeCode.LONG, [Int8(-3), Int16(300), Int32(-70000), 2**40, None], [-3, 300, -70000, 2**40, 0]),
    (TypeCode.INT, [Int32(5), Int8(-128), Int16(-32768)], [5, -128, -32768]),
    (TypeCode.DOUBLE, [1.25, Float32(0.1), Int32(2**31 - 1)], [1.25, float(np.float32(0.1)), 2**31 - 1]),
    (TypeCode.TIMESTAMP, [Timestamp(5, 7), Date(6), OptimizedObject(encode_java_time("java.sql.Timestamp", 1000, 5)),
                          OptimizedObject(NODE_SQL_DATE_1970_01_04)],
     [5_000_007, 6_000_000, 1_000_000_005, 3 * 86_400_000 * 1_000_000]),
    (TypeCode.DATE, [OptimizedObject(NODE_SQL_DATE_1970_01_04), Date(9), None], [3 * 86_400_000, 9, 0]),
    (TypeCode.TIME, [Time(1), OptimizedObject(encode_java_time("java.sql.Time", 3_723_004))], [1, 3_723_004]),
])
def test_widening(code: int, values: list[object], expected: list[object]) -> None:
    region, n = _page(values)
    col = C.decode_page(region, n, C.PagePlan.sql([C.scalar("x", code)]))["x"]
    assert col.values.tolist() == expected
    assert col.values.dtype == np.dtype(COLUMN_DTYPES[code])
    assert col.mask is not None and col.mask.tolist() == [v is not None for v in values]


@pytest.mark.parametrize(("code", "value", "found"), [
    (TypeCode.INT, 7, "LONG (4)"),
    (TypeCode.FLOAT, Int32(7), "INT (3)"),
    (TypeCode.DOUBLE, 7, "LONG (4)"),
    (TypeCode.LONG, "7", "STRING (9)"),
    (TypeCode.DATE, Timestamp(1, 0), "TIMESTAMP (33)"),
    (TypeCode.DATE, OptimizedObject(encode_java_time("java.sql.Time", 1)), "java.sql.Time"),
    (TypeCode.TIMESTAMP, OptimizedObject(b"\xac\xed"), "tag 0xac"),
])
def test_no_lossless_conversion(code: int, value: object, found: str) -> None:
    region, n = _page([_ok(code), value])
    with pytest.raises(C.FieldTypeError) as info:
        C.decode_page(region, n, C.PagePlan.sql([C.scalar("x", code)]))
    err = info.value
    assert isinstance(err, SchemaError) and err.row == 1 and err.path == "x"
    assert found in err.found and err.expected.startswith(TypeCode(code).name)


def _ok(code: int) -> object:
    return {TypeCode.INT: Int32(1), TypeCode.FLOAT: Float32(1.0), TypeCode.DOUBLE: 1.0, TypeCode.LONG: 1,
            TypeCode.DATE: Date(1), TypeCode.TIMESTAMP: Timestamp(1, 0)}[code]


def test_many_java_dates_decode_at_once_like_one_by_one() -> None:
    rng = np.random.default_rng(5)
    ms = rng.integers(-2**42, 2**42, 300).tolist()  # int64 nanoseconds reach +-292 years
    classes = ["java.sql.Date", "java.util.Date", "java.sql.Timestamp"]
    values: list[object] = []
    expected = []
    for i, m in enumerate(ms):
        name = classes[i % 3]
        if name == "java.sql.Timestamp":
            sec, nanos = m // 1000 * 1000, i * 3_333_333 % 1_000_000_000
            values.append(OptimizedObject(encode_java_time(name, sec, nanos)))
            expected.append(sec * 1_000_000 + nanos)
        else:
            values.append(OptimizedObject(encode_java_time(name, m)))
            expected.append(m * 1_000_000)
    values[7] = None
    expected[7] = 0
    values[8] = Date(5)
    expected[8] = 5_000_000
    region, n = _page(values)
    col = C.decode_page(region, n, C.PagePlan.sql([C.scalar("x", TypeCode.TIMESTAMP)]))["x"]
    assert col.values.tolist() == expected
    assert col.mask is not None and col.mask.tolist() == [v is not None for v in values]
    # The same rows one by one (a page per row) give the same values.
    one = [C.decode_page(*_page([v]), C.PagePlan.sql([C.scalar("x", TypeCode.TIMESTAMP)]))["x"].values[0]
           for v in values]
    assert one == expected


def test_a_foreign_class_among_dates_is_named() -> None:
    other = b"\x66" + (123).to_bytes(4, "little") + b"\x01\x00" + bytes(8)  # 15 bytes, unknown type id
    values = [OptimizedObject(NODE_SQL_DATE_1970_01_04)] * 5 + [OptimizedObject(other)]
    region, n = _page(values)
    with pytest.raises(C.FieldTypeError) as info:
        C.decode_page(region, n, C.PagePlan.sql([C.scalar("x", TypeCode.DATE)]))
    assert info.value.row == 5 and "type id 123" in info.value.found


def test_column_decoding_never_reads_outside_the_page() -> None:
    from tensorflow_ignite.protocol.javatime import decode_java_time_columns

    page = np.frombuffer(NODE_SQL_DATE_1970_01_04, np.uint8)
    kind, value = decode_java_time_columns(page, np.array([0, 1, -1, 0]), np.array([15, 15, 15, 19]))
    assert kind.tolist() == [1, 0, 0, 0] and value.tolist() == [3 * 86_400_000, 0, 0, 0]


def test_schema_names_a_foreign_java_class() -> None:
    from tensorflow_ignite.data.schema import object_schema
    from tensorflow_ignite.protocol.hashing import field_id
    from tensorflow_ignite.protocol.values import BinaryField, BinaryObject, BinaryType

    bt = BinaryType(1, "T", {"x": BinaryField("x", TypeCode.OBJ, field_id("x"))})
    foreign = OptimizedObject(b"\x66" + (5).to_bytes(4, "little") + b"\x00\x00")
    with pytest.raises(SchemaError, match=r"T\.x holds a Java-serialized Java class with type id 5"):
        object_schema("val", bt, samples=[BinaryObject("T", {"x": foreign}, type_id=1)])
    date = OptimizedObject(NODE_SQL_DATE_1970_01_04)
    decoded = decode_value(encode_value(date))
    schema = object_schema("val", bt, samples=[BinaryObject("T", {"x": decoded}, type_id=1)])
    assert (schema.fields[0].type_code, schema.fields[0].dtype) == (TypeCode.DATE, "int64")


# ------------------------------------------------------------------ java.time
# Bytes a Java thick client (Ignite 2.17) wrote for POJO fields: java.time values travel through
# their serialization proxy java.time.Ser (an Externalizable, tag 0x65).
NODE_LOCAL_DATE_2023_11_21 = bytes.fromhex("65ebdf3606b24803e70700000b15")
NODE_LOCAL_DATE_TIME_1969_12_31_23_59_59_999999999 = bytes.fromhex("65ebdf3606b24805b10700000c1f173b3bffc99a3b")
NODE_LOCAL_TIME_MIDNIGHT = bytes.fromhex("65ebdf3606b24804ff")
NODE_LOCAL_TIME_01_07_01_001 = bytes.fromhex("65ebdf3606b2480401070140420f00")
NODE_INSTANT_1940_01_09 = bytes.fromhex("65ebdf3606b2480200f79bc7ffffffff00000000")


def test_java_time_bytes_from_a_client() -> None:
    assert decode_java_time(NODE_LOCAL_DATE_2023_11_21) == Date(19_682 * 86_400_000)
    assert decode_java_time(NODE_LOCAL_DATE_TIME_1969_12_31_23_59_59_999999999) == Timestamp.from_epoch_ns(-1)
    assert decode_java_time(NODE_LOCAL_TIME_MIDNIGHT) == Time(0)
    assert decode_java_time(NODE_LOCAL_TIME_01_07_01_001) == Time((3600 + 7 * 60 + 1) * 1000 + 1)
    assert decode_java_time(NODE_INSTANT_1940_01_09) == Timestamp.from_epoch_ns(-946_080_000 * 10**9)
    assert describe_java_object(NODE_LOCAL_DATE_2023_11_21) == "java.time.LocalDate"
    assert describe_java_object(NODE_INSTANT_1940_01_09) == "java.time.Instant"
    # The encoder writes what Java writes.
    assert encode_java_time_ser("LocalDate", year=2023, month=11, day=21) == NODE_LOCAL_DATE_2023_11_21
    assert encode_java_time_ser("LocalDateTime", year=1969, month=12, day=31, hour=23, minute=59, second=59,
                                nano=999_999_999) == NODE_LOCAL_DATE_TIME_1969_12_31_23_59_59_999999999
    assert encode_java_time_ser("LocalTime") == NODE_LOCAL_TIME_MIDNIGHT
    assert encode_java_time_ser("LocalTime", hour=1, minute=7, second=1, nano=1_000_000) == NODE_LOCAL_TIME_01_07_01_001
    assert encode_java_time_ser("Instant", epoch_second=-946_080_000) == NODE_INSTANT_1940_01_09


@pytest.mark.parametrize(("kind", "fields", "expected"), [
    # Every length LocalTime.writeExternal produces (hour only, +minute, +second, +nanos).
    ("LocalTime", dict(hour=23), Time(23 * 3_600_000)),
    ("LocalTime", dict(hour=0, minute=1), Time(60_000)),
    ("LocalTime", dict(hour=12, minute=0, second=59), Time(12 * 3_600_000 + 59_000)),
    ("LocalTime", dict(hour=23, minute=59, second=59, nano=999_000_000), Time(86_399_999)),
    ("LocalDate", dict(year=1, month=1, day=1), Date(-719_162 * 86_400_000)),
    ("LocalDate", dict(year=2024, month=2, day=29), Date(19_782 * 86_400_000)),
    ("LocalDate", dict(year=-4713, month=11, day=24), Date(-2_440_588 * 86_400_000)),  # Julian day 0
    ("LocalDate", dict(year=999_999, month=12, day=31), Date(364_522_971 * 86_400_000)),
    ("LocalDateTime", dict(year=2262, month=4, day=11, hour=23, minute=47, second=16, nano=854_775_807),
     Timestamp.from_epoch_ns(2**63 - 1)),
    ("LocalDateTime", dict(year=1970, month=1, day=1, hour=0, minute=0), Timestamp(0, 0)),
    ("LocalDateTime", dict(year=2000, month=3, day=1, hour=5, minute=6), Timestamp.from_epoch_ns(
        (11_017 * 86_400 + 5 * 3600 + 6 * 60) * 10**9)),
    ("Instant", dict(epoch_second=-1, nano=999_999_999), Timestamp.from_epoch_ns(-1)),
    ("Instant", dict(epoch_second=10**11, nano=5), Timestamp.from_epoch_ns(10**20 + 5)),  # beyond int64 ns
])
def test_java_time_values(kind: str, fields: dict[str, int], expected: object) -> None:
    assert decode_java_time(encode_java_time_ser(kind, **fields)) == expected


@pytest.mark.parametrize("data", [
    NODE_LOCAL_DATE_2023_11_21[:-1],                                        # truncated
    NODE_LOCAL_DATE_2023_11_21 + b"\x00",                                   # trailing byte
    NODE_LOCAL_DATE_2023_11_21[:5] + b"\x00\x00" + NODE_LOCAL_DATE_2023_11_21[7:],  # wrong checksum
    encode_java_time_ser("LocalDate", year=2023, month=2, day=29),          # no such date
    encode_java_time_ser("LocalDate", year=2023, month=13, day=1),
    encode_java_time_ser("LocalTime", hour=24),                             # no such time
    encode_java_time_ser("LocalTime", hour=1, minute=60),
    encode_java_time_ser("LocalTime", hour=1, minute=2, second=3, nano=10**9),
    encode_java_time_ser("Instant", nano=-1),
    NODE_LOCAL_TIME_01_07_01_001[:-2],                                      # nanos cut short
])
def test_malformed_java_time(data: bytes) -> None:
    with pytest.raises(ProtocolError) as info:
        decode_java_time(data)
    assert not isinstance(info.value, UnsupportedJavaObjectError)


def test_java_time_that_does_not_convert_is_named() -> None:
    sub_ms = encode_java_time_ser("LocalTime", hour=1, minute=2, second=3, nano=500)
    with pytest.raises(UnsupportedJavaObjectError, match="sub-millisecond") as info:
        decode_java_time(sub_ms)
    assert info.value.class_name == "java.time.LocalTime"
    zoned = NODE_LOCAL_DATE_2023_11_21[:7] + b"\x06" + bytes(10)  # java.time.Ser kind 6
    with pytest.raises(UnsupportedJavaObjectError, match="java.time.ZonedDateTime"):
        decode_java_time(zoned)
    # The general decoder leaves them opaque; a column names the class.
    assert decode_value(encode_value(OptimizedObject(sub_ms))) == OptimizedObject(sub_ms)
    region, n = _page([Time(1), OptimizedObject(sub_ms)])
    with pytest.raises(C.FieldTypeError) as err:
        C.decode_page(region, n, C.PagePlan.sql([C.scalar("x", TypeCode.TIME)]))
    assert err.value.row == 1 and "java.time.LocalTime" in err.value.found


def test_many_java_time_values_decode_at_once_like_one_by_one() -> None:
    rng = np.random.default_rng(11)
    plans = {TypeCode.DATE: [], TypeCode.TIME: [], TypeCode.TIMESTAMP: []}
    for i in range(400):
        y, mo, d = int(rng.integers(1678, 2262)), int(rng.integers(1, 13)), int(rng.integers(1, 29))
        h, mi, s = int(rng.integers(0, 24)), int(rng.integers(0, 60)), int(rng.integers(0, 60))
        nano = [0, int(rng.integers(1, 10**9)), 0, 0][i % 4]
        if i % 4 == 2:
            s = 0
        if i % 4 == 3:
            s, mi = 0, 0
        plans[TypeCode.DATE].append(encode_java_time_ser("LocalDate", year=y, month=mo, day=d))
        plans[TypeCode.TIME].append(encode_java_time_ser("LocalTime", hour=h, minute=mi, second=s,
                                                         nano=nano // 1_000_000 * 1_000_000))
        plans[TypeCode.TIMESTAMP].append(encode_java_time_ser(
            "LocalDateTime", year=y, month=mo, day=d, hour=h, minute=mi, second=s, nano=nano) if i % 2 else
            encode_java_time_ser("Instant", epoch_second=int(rng.integers(-2**33, 2**33)), nano=nano))
    for code, raw in plans.items():
        values = [OptimizedObject(b) for b in raw]
        values[5] = None
        region, n = _page(values)
        col = C.decode_page(region, n, C.PagePlan.sql([C.scalar("x", code)]))["x"]
        expected = [0 if v is None else _column_value(decode_java_time(v.data)) for v in values]
        assert col.values.tolist() == expected, code
        assert col.mask is not None and col.mask.tolist() == [v is not None for v in values]
    # The vectorized path took them all: none is left to the per-row decoder.
    from tensorflow_ignite.protocol.javatime import decode_java_time_columns

    for raw in plans.values():
        page = np.frombuffer(b"".join(raw), np.uint8)
        lengths = np.array([len(b) for b in raw])
        kind, _ = decode_java_time_columns(page, np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
        assert (kind != 0).all()


def _column_value(v: object) -> int:
    if isinstance(v, Timestamp):
        return v.epoch_ns
    if isinstance(v, Date):
        return v.epoch_ms
    assert isinstance(v, Time)
    return v.millis


@pytest.mark.parametrize("value", [
    Timestamp(253_402_300_799_999, 0),                                     # 9999-12-31T23:59:59.999
    Timestamp(-62_135_596_800_000, 0),                                     # 0001-01-01
    Date(253_402_300_799_999),                                             # a date widened to a timestamp
    OptimizedObject(encode_java_time("java.sql.Timestamp", 253_402_300_799_000, 5)),
    OptimizedObject(encode_java_time("java.sql.Date", 253_402_300_799_999)),
    OptimizedObject(encode_java_time_ser("LocalDateTime", year=2262, month=4, day=12)),
    OptimizedObject(encode_java_time_ser("Instant", epoch_second=10**11)),
])
def test_timestamps_beyond_int64_nanoseconds_raise(value: object) -> None:
    for values in ([Timestamp(1, 2), value], [value, value]):  # mixed rows; uniform rows (one layout)
        region, n = _page(values)
        with pytest.raises(C.FieldTypeError) as info:
            C.decode_page(region, n, C.PagePlan.sql([C.scalar("x", TypeCode.TIMESTAMP)]))
        assert info.value.row == n - 1 if values[0] != value else info.value.row == 0
        assert "TIMESTAMP (33)" in info.value.expected
    # The edges themselves still fit.
    region, n = _page([Timestamp.from_epoch_ns(-(2**63) + 224_192 + 775_808), Timestamp.from_epoch_ns(2**63 - 1)])
    col = C.decode_page(region, n, C.PagePlan.sql([C.scalar("x", TypeCode.TIMESTAMP)]))["x"]
    assert col.values.tolist() == [-(2**63) + 1_000_000, 2**63 - 1]
