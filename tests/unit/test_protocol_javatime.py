"""Optimized-marshaller Java dates (protocol.javatime) and lossless widening in the column decoder."""

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
