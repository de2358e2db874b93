"""Cross-check the binary codec against pyignite, used only as an independent implementation.

pyignite's datatypes serialize without a server once its binary-type registry is
fed locally (the subclass below never touches the network).
"""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections import OrderedDict

import numpy as np
import pytest

pyignite = pytest.importorskip("pyignite")

from pyignite import GenericObjectMeta  # noqa: E402
from pyignite.datatypes import (  # noqa: E402
    BinaryEnumObject,
    BoolObject,
    ByteArrayObject,
    ByteObject,
    CharObject,
    CollectionObject,
    DateObject,
    DecimalObject,
    DoubleObject,
    FloatObject,
    IntArrayObject,
    IntObject,
    LongObject,
    MapObject,
    ObjectArrayObject,
    ShortObject,
    String,
    StringArrayObject,
    TimeObject,
    TimestampObject,
    UUIDObject,
)
from pyignite.datatypes.complex import BinaryObject as PyBinaryObject  # noqa: E402
from pyignite.stream import BinaryStream  # noqa: E402
from pyignite.stream.binary_stream import READ_BACKWARD  # noqa: E402
from pyignite.utils import entity_id  # noqa: E402

from tensorflow_ignite.protocol.binary import BinaryDecoder, encode_value  # noqa: E402
from tensorflow_ignite.protocol.codes import TypeCode  # noqa: E402
from tensorflow_ignite.protocol.hashing import field_id, schema_id, type_id  # noqa: E402
from tensorflow_ignite.protocol.values import (  # noqa: E402
    BinaryObject,
    Date,
    EnumValue,
    ObjectArray,
    Time,
    Timestamp,
    Typed,
)


class OfflineClient(pyignite.Client):
    """A pyignite client whose binary-type registry is purely local."""

    def register_binary_type(self, data_class, affinity_key_field=None):  # type: ignore[no-untyped-def]
        self._registry[data_class.type_id][data_class.schema_id] = data_class

    def query_binary_type(self, binary_type, schema=None):  # type: ignore[no-untyped-def]
        return self._get_from_registry(entity_id(binary_type), schema)


class Inner(metaclass=GenericObjectMeta, type_name="Inner", schema=OrderedDict([("x", IntObject)])):
    pass


BIG_SCHEMA = OrderedDict(
    [
        ("b", ByteObject), ("s", ShortObject), ("i", IntObject), ("l", LongObject), ("f", FloatObject),
        ("d", DoubleObject), ("c", CharObject), ("z", BoolObject), ("str", String), ("u", UUIDObject),
        ("date", DateObject), ("ts", TimestampObject), ("t", TimeObject), ("dec", DecimalObject),
        ("ba", ByteArrayObject), ("ia", IntArrayObject), ("sa", StringArrayObject), ("col", CollectionObject),
        ("m", MapObject), ("oa", ObjectArrayObject), ("e", BinaryEnumObject), ("inner", PyBinaryObject),
        ("n", String),
    ]
)


class Big(metaclass=GenericObjectMeta, type_name="Big", schema=BIG_SCHEMA):
    pass


WHEN = dt.datetime(2020, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)


def _pyignite_big() -> object:
    return Big(
        b=-5, s=300, i=70000, l=2**40, f=1.5, d=2.25, c="Z", z=True, str="héllo", u=uuid.UUID(int=12345),
        date=WHEN, ts=(WHEN.replace(microsecond=123000), 456), t=dt.timedelta(hours=1, milliseconds=5),
        dec=decimal.Decimal("-123.45"), ba=bytearray(b"\x01\x02"), ia=[1, 2, 3], sa=["a", None],
        col=(1, [1, "two"]), m=(1, {"k": 1}), oa=(-1, [1, "x"]), e=(7, 3), inner=Inner(x=9), n=None,
    )


def _our_big() -> BinaryObject:
    return BinaryObject(
        "Big",
        {
            "b": Typed(-5, TypeCode.BYTE), "s": Typed(300, TypeCode.SHORT), "i": Typed(70000, TypeCode.INT),
            "l": 2**40, "f": Typed(1.5, TypeCode.FLOAT), "d": 2.25, "c": Typed("Z", TypeCode.CHAR), "z": True,
            "str": "héllo", "u": uuid.UUID(int=12345), "date": Date.from_datetime(WHEN),
            "ts": Timestamp(1577934245123, 456), "t": Time(3_600_005), "dec": decimal.Decimal("-123.45"),
            "ba": b"\x01\x02", "ia": np.array([1, 2, 3], dtype=np.int32),
            "sa": Typed(["a", None], TypeCode.STRING_ARR), "col": [1, "two"], "m": {"k": 1},
            "oa": ObjectArray([1, "x"]), "e": EnumValue(7, 3, TypeCode.BINARY_ENUM),
            "inner": BinaryObject("Inner", {"x": Typed(9, TypeCode.INT)}), "n": None,
        },
    )


def _pyignite_bytes(value: object, compact: bool = False) -> bytes:
    client = OfflineClient(compact_footer=compact)
    with BinaryStream(client) as stream:
        PyBinaryObject.from_python(stream, value)
        return bytes(stream.getvalue())


def test_encoder_output_is_byte_identical_to_pyignite() -> None:
    assert encode_value(_our_big()) == _pyignite_bytes(_pyignite_big())


def test_decoder_reads_pyignite_output() -> None:
    got = BinaryDecoder().decode(_pyignite_bytes(_pyignite_big()))
    names = {field_id(k): k for k in BIG_SCHEMA}
    fields = {names[k]: v for k, v in got.fields.items()}
    assert got.type_id == type_id("Big")
    assert fields["b"] == -5 and fields["s"] == 300 and fields["i"] == 70000 and fields["l"] == 2**40
    assert fields["f"] == 1.5 and fields["d"] == 2.25 and fields["c"] == "Z" and fields["z"] is True
    assert fields["str"] == "héllo" and fields["u"] == uuid.UUID(int=12345)
    assert fields["date"] == Date(1577934245000)
    assert fields["ts"] == Timestamp(1577934245123, 456)
    assert fields["t"] == Time(3_600_005)
    assert fields["dec"] == decimal.Decimal("-123.45")
    np.testing.assert_array_equal(fields["ba"], [1, 2])
    np.testing.assert_array_equal(fields["ia"], [1, 2, 3])
    assert fields["sa"] == ["a", None] and fields["col"] == [1, "two"] and fields["m"] == {"k": 1}
    assert fields["oa"] == [1, "x"] and fields["oa"].type_id == -1
    assert fields["e"] == EnumValue(7, 3, TypeCode.BINARY_ENUM)
    assert fields["inner"].fields == {field_id("x"): 9}
    assert fields["n"] is None


def test_pyignite_reads_our_output() -> None:
    client = OfflineClient(compact_footer=False)
    client.register_binary_type(Big)
    client.register_binary_type(Inner)
    with BinaryStream(client, encode_value(_our_big())) as stream:
        ctype = PyBinaryObject.parse(stream)
        obj = PyBinaryObject.to_python(stream.read_ctype(ctype, direction=READ_BACKWARD), client=client)
    assert obj.i == 70000 and obj.str == "héllo" and obj.ts[1] == 456 and obj.inner.x == 9
    assert obj.dec == decimal.Decimal("-123.45") and obj.sa == ["a", None] and obj.e == (7, 3)


def test_compact_footer_from_pyignite_with_schema_resolver() -> None:
    data = _pyignite_bytes(_pyignite_big(), compact=True)
    flags = int.from_bytes(data[2:4], "little")
    assert flags & 0x20  # pyignite really wrote a compact footer
    ids = tuple(field_id(k) for k in BIG_SCHEMA)
    inner_ids = (field_id("x"),)
    schemas = {(type_id("Big"), schema_id(ids)): ids, (type_id("Inner"), schema_id(inner_ids)): inner_ids}
    got = BinaryDecoder(schema_resolver=lambda t, s: schemas.get((t, s))).decode(data)
    assert got.fields[field_id("i")] == 70000 and got.fields[field_id("inner")].fields == {field_id("x"): 9}


@pytest.mark.parametrize(
    ("pyignite_type", "py_value", "ours"),
    [
        (IntObject, 7, Typed(7, TypeCode.INT)),
        (LongObject, -7, -7),
        (String, "abc", "abc"),
        (UUIDObject, uuid.UUID("12345678-1234-5678-1234-567812345678"),
         uuid.UUID("12345678-1234-5678-1234-567812345678")),
        (DecimalObject, decimal.Decimal("3.14159"), decimal.Decimal("3.14159")),
        (DecimalObject, decimal.Decimal("-1000000000000000000000.5"), decimal.Decimal("-1000000000000000000000.5")),
        (DateObject, WHEN, Date.from_datetime(WHEN)),
        (TimestampObject, (WHEN, 7), Timestamp(Date.from_datetime(WHEN).epoch_ms, 7)),
        (IntArrayObject, [1, -1], np.array([1, -1], dtype=np.int32)),
        (StringArrayObject, ["x", None], Typed(["x", None], TypeCode.STRING_ARR)),
    ],
)
def test_standalone_values_match_pyignite(pyignite_type: type, py_value: object, ours: object) -> None:
    client = OfflineClient()
    with BinaryStream(client) as stream:
        pyignite_type.from_python(stream, py_value)
        expected = bytes(stream.getvalue())
    assert encode_value(ours) == expected
