"""Binary object codec: golden bytes per type code, objects, footers, handles, round trips, fuzz."""

from __future__ import annotations

import datetime as dt
import decimal
import struct
import uuid

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorflow_ignite.errors import ConfigurationError, ProtocolError
from tensorflow_ignite.protocol.binary import BinaryDecoder, BinaryEncoder, MissingSchemaError, decode_value, encode_value
from tensorflow_ignite.protocol.codes import CollectionKind, MapKind, TypeCode
from tensorflow_ignite.protocol.hashing import binary_object_hash, field_id, schema_id, type_id
from tensorflow_ignite.protocol.values import (
    BinaryField,
    BinaryObject,
    BinaryType,
    BinaryTypeRegistry,
    Char,
    Collection,
    Date,
    EnumValue,
    Float32,
    Int8,
    Int16,
    Int32,
    JavaClass,
    Map,
    ObjectArray,
    OptimizedObject,
    RawValue,
    Time,
    Timestamp,
    Typed,
    values_equal,
)


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", "").replace("\n", ""))


# ------------------------------------------------------------------ scalars
SCALARS = [
    (Typed(-1, TypeCode.BYTE), "01 ff", Int8(-1)),
    (Typed(0x1234, TypeCode.SHORT), "02 3412", Int16(0x1234)),
    (Typed(0x12345678, TypeCode.INT), "03 78563412", Int32(0x12345678)),
    (-2, "04 feffffffffffffff", -2),
    (Typed(1.5, TypeCode.FLOAT), "05 0000c03f", Float32(1.5)),
    (1.5, "06 000000000000f83f", 1.5),
    (Typed("A", TypeCode.CHAR), "07 4100", Char("A")),
    (True, "08 01", True),
    (False, "08 00", False),
    ("abc", "09 03000000 616263", "abc"),
    ("", "09 00000000", ""),
    ("é", "09 02000000 c3a9", "é"),
    (uuid.UUID("00112233-4455-6677-8899-aabbccddeeff"), "0a 7766554433221100 ffeeddccbbaa9988",
     uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")),
    (Date(1_000), "0b e803000000000000", Date(1_000)),
    (Date(-1), "0b ffffffffffffffff", Date(-1)),
    (Timestamp(1_000, 999_999), "21 e803000000000000 3f420f00", Timestamp(1_000, 999_999)),
    (Time(3_600_000), "24 80ee360000000000", Time(3_600_000)),
    (None, "65", None),
    (EnumValue(7, 2), "1c 07000000 02000000", EnumValue(7, 2)),
    (EnumValue(7, 2, TypeCode.BINARY_ENUM), "26 07000000 02000000", EnumValue(7, 2, TypeCode.BINARY_ENUM)),
    (EnumValue(0, 1, TypeCode.ENUM, "a.E"), "1c 00000000 09 03000000 612e45 01000000", EnumValue(0, 1, 28, "a.E")),
    (JavaClass(9), "20 09000000", JavaClass(9)),
    (JavaClass(0, "x.Y"), "20 00000000 09 03000000 782e59", JavaClass(0, "x.Y")),
    (OptimizedObject(b"\xac\xed"), "fe 02000000 aced", OptimizedObject(b"\xac\xed")),
]


@pytest.mark.parametrize(("value", "wire", "decoded"), SCALARS)
def test_scalar_golden(value: object, wire: str, decoded: object) -> None:
    assert encode_value(value) == h(wire)
    got = decode_value(h(wire))
    assert got == decoded and type(got) is type(decoded)
    assert encode_value(got) == h(wire)  # the decoded value remembers its wire type


def test_char_is_a_utf16_unit() -> None:
    assert decode_value(h("07 00d8")) == "\ud800"  # lone surrogate survives
    with pytest.raises(ConfigurationError):
        encode_value(Typed("\U0001F600", TypeCode.CHAR))
    assert encode_value(Typed(0x263A, TypeCode.CHAR)) == h("07 3a26")


def test_invalid_utf8_is_replaced_like_java() -> None:
    assert decode_value(h("09 02000000 c328")) == "\ufffd("


# ------------------------------------------------------------------ decimals
@pytest.mark.parametrize(
    ("text", "wire"),
    [
        ("123.45", "1e 02000000 02000000 3039"),
        ("-123.45", "1e 02000000 02000000 b039"),
        ("128", "1e 00000000 02000000 0080"),  # BigInteger.toByteArray keeps a sign byte
        ("-128", "1e 00000000 02000000 8080"),
        ("0", "1e 00000000 01000000 00"),
        ("1E+3", "1e fdffffff 01000000 01"),  # negative scale
        ("0.000", "1e 03000000 01000000 00"),
        ("-1", "1e 00000000 01000000 81"),
    ],
)
def test_decimal_golden(text: str, wire: str) -> None:
    value = decimal.Decimal(text)
    assert encode_value(value) == h(wire)
    got = decode_value(h(wire))
    assert got == value and got.as_tuple().exponent == value.as_tuple().exponent


def test_decimal_rejects_specials_and_empty_magnitude() -> None:
    with pytest.raises(ConfigurationError):
        encode_value(decimal.Decimal("NaN"))
    with pytest.raises(ProtocolError):
        decode_value(h("1e 00000000 00000000"))


# ------------------------------------------------------------------ arrays
@pytest.mark.parametrize(
    ("array", "wire"),
    [
        (np.array([1, -1], dtype=np.int8), "0c 02000000 01ff"),
        (np.array([1, -2], dtype=np.int16), "0d 02000000 0100 feff"),
        (np.array([1], dtype=np.int32), "0e 01000000 01000000"),
        (np.array([1], dtype=np.int64), "0f 01000000 0100000000000000"),
        (np.array([1.5], dtype=np.float32), "10 01000000 0000c03f"),
        (np.array([1.5], dtype=np.float64), "11 01000000 000000000000f83f"),
        (np.array([65, 66], dtype=np.uint16), "12 02000000 4100 4200"),
        (np.array([True, False]), "13 02000000 0100"),
        (np.array([], dtype=np.int32), "0e 00000000"),
    ],
)
def test_primitive_array_golden(array: np.ndarray, wire: str) -> None:
    assert encode_value(array) == h(wire)
    got = decode_value(h(wire))
    assert isinstance(got, np.ndarray) and got.dtype == array.dtype
    np.testing.assert_array_equal(got, array)


def test_primitive_arrays_are_zero_copy_views_unless_copied() -> None:
    data = h("0e 02000000 01000000 02000000")
    view = decode_value(data)
    assert not view.flags.writeable and view.base is not None
    copy = BinaryDecoder(copy_arrays=True).decode(data)
    assert copy.flags.writeable
    np.testing.assert_array_equal(view, [1, 2])


def test_byte_array_from_bytes_and_uint8() -> None:
    assert encode_value(b"\x01\xff") == h("0c 02000000 01ff")
    assert encode_value(np.array([1, 255], dtype=np.uint8)) == h("0c 02000000 01ff")
    assert encode_value(Typed([1, 2], TypeCode.INT_ARR)) == h("0e 02000000 01000000 02000000")
    assert encode_value(Typed("AB", TypeCode.CHAR_ARR)) == h("12 02000000 4100 4200")


@pytest.mark.parametrize(
    ("value", "wire"),
    [
        (Typed(["a", None], TypeCode.STRING_ARR), "14 02000000 09 01000000 61 65"),
        (Typed([uuid.UUID(int=1)], TypeCode.UUID_ARR), "15 01000000 0a 0000000000000000 0100000000000000"),
        (Typed([Date(1), None], TypeCode.DATE_ARR), "16 02000000 0b 0100000000000000 65"),
        (Typed([Timestamp(1, 2)], TypeCode.TIMESTAMP_ARR), "22 01000000 21 0100000000000000 02000000"),
        (Typed([Time(5)], TypeCode.TIME_ARR), "25 01000000 24 0500000000000000"),
        (Typed([decimal.Decimal("1")], TypeCode.DECIMAL_ARR), "1f 01000000 1e 00000000 01000000 01"),
    ],
)
def test_typed_object_arrays_golden(value: Typed, wire: str) -> None:
    assert encode_value(value) == h(wire)
    assert decode_value(h(wire)) == value.value


def test_typed_array_rejects_foreign_elements() -> None:
    with pytest.raises(ProtocolError):
        decode_value(h("14 01000000 03 01000000"))


def test_object_array_enum_array_collection_map_golden() -> None:
    arr = ObjectArray([Typed(1, TypeCode.INT), "a"], type_id=-1)
    wire = h("17 ffffffff 02000000 03 01000000 09 01000000 61")
    assert encode_value(arr) == wire
    got = decode_value(wire)
    assert isinstance(got, ObjectArray) and got.type_id == -1 and got == [1, "a"]

    enums = ObjectArray([EnumValue(5, 0), None], type_id=5, element_code=TypeCode.ENUM_ARR)
    wire = h("1d 05000000 02000000 1c 05000000 00000000 65")
    assert encode_value(enums) == wire
    got = decode_value(wire)
    assert got.element_code == TypeCode.ENUM_ARR and got == [EnumValue(5, 0), None]

    wire = h("18 02000000 01 03 07000000 65")
    assert encode_value([Typed(7, TypeCode.INT), None]) == wire
    col = decode_value(wire)
    assert isinstance(col, Collection) and col.kind == CollectionKind.ARRAY_LIST and col == [7, None]
    assert encode_value(col) == wire
    assert encode_value({Typed(1, TypeCode.INT)})[5] == CollectionKind.HASH_SET
    linked = Collection(["x"], kind=CollectionKind.LINKED_LIST)
    assert decode_value(encode_value(linked)).kind == CollectionKind.LINKED_LIST

    wire = h("19 01000000 01 09 01000000 6b 03 01000000")
    assert encode_value({"k": Typed(1, TypeCode.INT)}) == wire
    m = decode_value(wire)
    assert isinstance(m, Map) and m.kind == MapKind.HASH_MAP and m == {"k": 1}
    assert decode_value(encode_value(Map({"a": 1}, kind=MapKind.LINKED_HASH_MAP))).kind == 2


def test_unhashable_map_key_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="dict key"):
        decode_value(h("19 01000000 01 0e 00000000 65"))


def test_raw_value_is_written_verbatim() -> None:
    assert encode_value([RawValue(h("03 01000000"))]) == h("18 01000000 01 03 01000000")


# ------------------------------------------------------------------ objects
PERSON = "67 01 0b00 559be3c4 fd64e101 22000000 dd033463 1d000000 03 05000000 1b0d0000 18"


def test_object_full_footer_golden() -> None:
    # Person {id: int 5}: flags USER|HAS_SCHEMA|ONE_BYTE_OFFSETS, hash = Arrays.hashCode(data),
    # length 34, schema id FNV-1 of [field_id("id") = 3355], footer at 29: (3355, offset 24).
    obj = BinaryObject("Person", {"id": Typed(5, TypeCode.INT)})
    assert encode_value(obj) == h(PERSON)
    got = decode_value(h(PERSON))
    assert isinstance(got, BinaryObject)
    assert got.type_id == type_id("Person") and got.fields == {3355: 5}  # no metadata: ids as keys
    assert got.field_types == {3355: TypeCode.INT}
    assert got.hash_code == binary_object_hash(h("03 05000000"))
    assert got.schema_id == schema_id([3355])
    named = decode_value(h(PERSON), metadata=_person_registry())
    assert named.type_name == "Person" and named.fields == {"id": 5}
    assert encode_value(named) == h(PERSON)  # decoded object re-encodes identically


def _person_registry(**schemas: tuple[int, ...]) -> BinaryTypeRegistry:
    t = BinaryType(type_id("Person"), "Person", {"id": BinaryField("id", TypeCode.INT, 3355)},
                   schemas={schema_id([3355]): (3355,)})
    return BinaryTypeRegistry([t])


def _object(tid: int, fields: list[tuple[int, bytes]], *, compact: bool = False, offset_size: int = 1,
            raw: bytes = b"", class_name: str | None = None, hash_code: int = 0) -> bytes:
    """Hand-assemble an object from the spec (independent of the encoder)."""
    prefix = b"" if class_name is None else b"\x09" + struct.pack("<i", len(class_name)) + class_name.encode()
    data = prefix
    offsets = []
    for _, value in fields:
        offsets.append(24 + len(data))
        data += value
    raw_off = 24 + len(data)
    data += raw
    flags = 0x01
    footer = b""
    fmt = {1: "<B", 2: "<H", 4: "<i"}[offset_size]
    if fields:
        flags |= 0x02 | {1: 0x08, 2: 0x10, 4: 0}[offset_size] | (0x20 if compact else 0)
        for (fid, _), off in zip(fields, offsets):
            footer += (b"" if compact else struct.pack("<i", fid)) + struct.pack(fmt, off)
        if raw:
            flags |= 0x04
            footer += struct.pack("<i", raw_off)
        schema_off = 24 + len(data)
        sid = schema_id([f for f, _ in fields])
    else:
        sid = 0
        schema_off = raw_off if raw else 0
        if raw:
            flags |= 0x04
    total = 24 + len(data) + len(footer)
    return b"\x67\x01" + struct.pack("<hiiiii", flags, tid, hash_code, total, sid, schema_off) + data + footer


def test_compact_footer_needs_the_schema() -> None:
    wire = _object(type_id("Person"), [(3355, h("03 05000000"))], compact=True)
    with pytest.raises(MissingSchemaError) as err:
        decode_value(wire)
    assert err.value.type_id == type_id("Person") and err.value.schema_id == schema_id([3355])
    got = decode_value(wire, metadata=_person_registry())
    assert got.fields == {"id": 5}
    via_callback = BinaryDecoder(schema_resolver=lambda t, s: (3355,)).decode(wire)
    assert via_callback.fields == {3355: 5}
    with pytest.raises(ProtocolError, match="fields"):
        BinaryDecoder(schema_resolver=lambda t, s: (1, 2)).decode(wire)


@pytest.mark.parametrize("offset_size", [1, 2, 4])
@pytest.mark.parametrize("compact", [False, True])
def test_every_offset_width_decodes(offset_size: int, compact: bool) -> None:
    fields = [(field_id("a"), h("09 03000000 78797a")), (field_id("b"), h("04 0100000000000000"))]
    wire = _object(77, fields, compact=compact, offset_size=offset_size)
    dec = BinaryDecoder(schema_resolver=lambda t, s: (field_id("a"), field_id("b")))
    assert dec.decode(wire).fields == {field_id("a"): "xyz", field_id("b"): 1}


def test_encoder_picks_the_offset_width_from_the_last_offset() -> None:
    small = encode_value(BinaryObject("T", {"a": "x" * 200, "b": 1}))
    assert struct.unpack_from("<h", small, 2)[0] == 0x0B
    medium = encode_value(BinaryObject("T", {"a": "x" * 300, "b": 1}))
    assert struct.unpack_from("<h", medium, 2)[0] == 0x13
    large = encode_value(BinaryObject("T", {"a": "x" * 70000, "b": 1}))
    assert struct.unpack_from("<h", large, 2)[0] == 0x03
    for wire, n in ((small, 200), (medium, 300), (large, 70000)):
        got = decode_value(wire)
        assert got.fields[field_id("a")] == "x" * n and got.fields[field_id("b")] == 1


def test_raw_data_with_and_without_schema() -> None:
    with_schema = _object(5, [(field_id("a"), h("03 01000000"))], raw=b"RAW!")
    got = decode_value(with_schema)
    assert got.raw == b"RAW!" and got.fields == {field_id("a"): 1}
    raw_only = _object(5, [], raw=b"xy")
    got = decode_value(raw_only)
    assert got.raw == b"xy" and got.fields == {}
    # the encoder writes raw data back in the same places
    obj = BinaryObject(type_id=5, fields={field_id("a"): Typed(1, TypeCode.INT)}, raw=b"RAW!")
    wire = encode_value(obj)
    assert wire[:8] == with_schema[:8] and wire[12:] == with_schema[12:]  # all but the hash
    assert encode_value(BinaryObject(type_id=5, raw=b"xy"))[12:] == raw_only[12:]


def test_object_without_fields() -> None:
    wire = encode_value(BinaryObject("Empty"))
    assert wire == b"\x67\x01" + struct.pack("<hiiiii", 1, type_id("Empty"), 1, 24, 0, 0)
    got = decode_value(wire)
    assert got.fields == {} and got.schema_id == 0


def test_unregistered_type_carries_its_class_name() -> None:
    wire = _object(0, [(field_id("v"), h("08 01"))], class_name="com.acme.Thing")
    got = decode_value(wire)
    assert got.type_name == "com.acme.Thing" and got.type_id == type_id("com.acme.Thing")
    assert got.fields == {field_id("v"): True}


def test_nested_objects_and_nulls() -> None:
    inner = BinaryObject("Address", {"city": "Oslo", "zip": None})
    outer = BinaryObject("Person", {"name": "Ann", "address": inner, "spouse": None})
    enc = BinaryEncoder()
    wire = enc.encode(outer)
    reg = BinaryTypeRegistry(enc.types.values())
    got = BinaryDecoder(reg).decode(wire)
    assert got == outer
    assert got.fields["address"].fields == {"city": "Oslo", "zip": None}
    assert "spouse" not in got.field_types  # nulls carry no type
    assert enc.types[type_id("Person")].fields["address"].type_code == TypeCode.OBJ
    assert enc.types[type_id("Address")].fields["zip"].type_code == TypeCode.OBJ


def test_encoder_records_binary_types_with_schemas() -> None:
    enc = BinaryEncoder()
    enc.encode(BinaryObject("P", {"a": Typed(1, TypeCode.INT), "b": "x"}))
    enc.encode(BinaryObject("P", {"a": Typed(2, TypeCode.INT)}))
    t = enc.types[type_id("P")]
    assert t.type_name == "P"
    assert t.fields == {
        "a": BinaryField("a", TypeCode.INT, field_id("a")),
        "b": BinaryField("b", TypeCode.STRING, field_id("b")),
    }
    assert t.schemas == {
        schema_id([field_id("a"), field_id("b")]): (field_id("a"), field_id("b")),
        schema_id([field_id("a")]): (field_id("a"),),
    }


def test_none_field_takes_the_known_type() -> None:
    reg = BinaryTypeRegistry([BinaryType(type_id("P"), "P", {"a": BinaryField("a", TypeCode.STRING, field_id("a"))})])
    enc = BinaryEncoder(metadata=reg)
    enc.encode(BinaryObject("P", {"a": None}))
    assert enc.types[type_id("P")].fields["a"].type_code == TypeCode.STRING
    enc2 = BinaryEncoder()
    enc2.encode(BinaryObject("Q", {"a": "s"}))
    enc2.encode(BinaryObject("Q", {"a": None}))
    assert enc2.types[type_id("Q")].fields["a"].type_code == TypeCode.STRING


def test_field_type_hints() -> None:
    obj = BinaryObject("H", {"i": 1, "s": 2, "f": 0.5}, field_types={"i": TypeCode.INT, "s": TypeCode.SHORT,
                                                                     "f": TypeCode.FLOAT})
    got = decode_value(encode_value(obj))
    assert got.field_types == {field_id("i"): 3, field_id("s"): 2, field_id("f"): 5}


# ------------------------------------------------------------------ handles & wrapped
def test_handle_to_an_earlier_collection_shares_identity() -> None:
    # [m, m] where the second element is a handle back to the map at offset 6.
    wire = h("18 02000000 01" "19 00000000 01" "66 06000000")  # handle at 12 -> map at 6
    got = decode_value(wire)
    assert got[0] is got[1] and got[0] == {}


def test_object_field_handle_and_cycles() -> None:
    # Object with fields a: string, b: handle -> a (the string value isn't handle-registered in
    # Java, only objects/collections/maps/arrays are; but a handle to the object itself is a cycle).
    a = field_id("a")
    b = field_id("b")
    # b = handle pointing back to the object start (offset = position of b - 0).
    body_a = h("09 01000000 78")
    placeholder = _object(9, [(a, body_a), (b, h("66 00000000"))])
    b_pos = 24 + len(body_a)
    wire = bytearray(placeholder)
    struct.pack_into("<i", wire, b_pos + 1, b_pos)
    got = decode_value(bytes(wire))
    assert got.fields[a] == "x"
    assert got.fields[b] is got  # self reference resolved to the same object


def test_handle_must_point_backwards() -> None:
    with pytest.raises(ProtocolError):
        decode_value(h("66 00000000"))
    with pytest.raises(ProtocolError):
        decode_value(h("18 01000000 01 66 f0ffffff"))


def test_wrapped_object() -> None:
    inner = h(PERSON)
    wire = b"\x1b" + struct.pack("<i", len(inner)) + inner + struct.pack("<i", 0)
    got = decode_value(wire, metadata=_person_registry())
    assert got.fields == {"id": 5}
    assert encode_value(got, TypeCode.BINARY_OBJ) == wire
    # start offset inside the wrapped array
    padded = b"\x00\x00" + inner
    wire2 = b"\x1b" + struct.pack("<i", len(padded)) + padded + struct.pack("<i", 2)
    assert decode_value(wire2, metadata=_person_registry()).fields == {"id": 5}
    with pytest.raises(ProtocolError):
        decode_value(b"\x1b" + struct.pack("<i", len(inner)) + inner + struct.pack("<i", 999))


# ------------------------------------------------------------------ malformed input
HOSTILE = [
    "09 ffffff7f 6162",  # 2 GiB string in a tiny buffer
    "09 ffffffff",  # negative length
    "0e ffffff0f 00",  # int[] claiming 1 GiB
    "18 ffffff7f 01",  # collection of 2**31-1 elements
    "19 ffffff7f 01",
    "17 ffffffff ffffff7f",
    "1e 00000000 ffffff7f 01",
    "67 01 0b00 00000000 00000000 ffffff7f 00000000 1d000000",  # object length 2 GiB
    "67 01 0b00 00000000 00000000 10000000 00000000 00000000",  # object length < header
    "67 02 0100 01000000 00000000 18000000 00000000 00000000",  # unknown version
    "67 01 0b00 01000000 00000000 1e000000 00000000 ff000000 00 00 00 00 00 00",  # footer out of bounds
    "23 00000000",  # proxy: unsupported
    "63",  # unknown type code
    "",
    "03 0100",
]


@pytest.mark.parametrize("wire", HOSTILE)
def test_hostile_input_raises_protocol_error(wire: str) -> None:
    with pytest.raises(ProtocolError):
        decode_value(h(wire))


def test_deep_nesting_is_bounded() -> None:
    wire = h("18 01000000 01") * 500 + h("65")
    with pytest.raises(ProtocolError, match="deeper"):
        decode_value(wire)


# ------------------------------------------------------------------ encoder errors
def test_encoder_rejects_bad_values() -> None:
    with pytest.raises(ConfigurationError):
        encode_value(Typed(300, TypeCode.BYTE))
    with pytest.raises(ConfigurationError):
        encode_value(2**63)
    with pytest.raises(ConfigurationError):
        encode_value(object())
    with pytest.raises(ConfigurationError):
        encode_value(Typed("x", TypeCode.INT))
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ConfigurationError, match="cyclic"):
        encode_value(loop)
    with pytest.raises(ConfigurationError):
        encode_value(np.zeros((2, 2), dtype=np.int32))


def test_python_temporal_inputs() -> None:
    when = dt.datetime(2020, 1, 2, 3, 4, 5, 678901, tzinfo=dt.timezone.utc)
    ts = decode_value(encode_value(when))
    assert isinstance(ts, Timestamp) and ts.to_datetime() == when
    assert ts.nanos == 901_000 and ts.epoch_ms == 1577934245678
    assert decode_value(encode_value(dt.date(1970, 1, 2))) == Date(86_400_000)
    assert decode_value(encode_value(dt.time(1, 0, 0, 1000))) == Time(3_600_001)
    assert Time(3_600_001).to_time() == dt.time(1, 0, 0, 1000)
    assert Date(86_400_000).to_datetime() == dt.datetime(1970, 1, 2, tzinfo=dt.timezone.utc)
    assert Timestamp.from_epoch_ns(-1).epoch_ms == -1 and Timestamp.from_epoch_ns(-1).nanos == 999_999


# ------------------------------------------------------------------ properties
_ints = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_leaf = st.one_of(
    st.none(),
    st.booleans(),
    _ints,
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.uuids(),
    st.decimals(allow_nan=False, allow_infinity=False, places=None).filter(lambda d: abs(d.as_tuple().exponent) < 1000),
    st.builds(Timestamp, _ints.filter(lambda v: abs(v) < 2**62), st.integers(0, 999_999)),
    st.builds(Date, _ints),
    st.builds(Time, _ints),
    st.builds(lambda v: Typed(v, TypeCode.INT), st.integers(-(2**31), 2**31 - 1)),
    st.builds(lambda v: Typed(v, TypeCode.SHORT), st.integers(-(2**15), 2**15 - 1)),
    st.builds(lambda v: Typed(v, TypeCode.BYTE), st.integers(-128, 127)),
    st.builds(lambda a: np.array(a, dtype=np.int32), st.lists(st.integers(-(2**31), 2**31 - 1), max_size=5)),
    st.builds(lambda a: np.array(a, dtype=np.float64), st.lists(st.floats(allow_nan=False), max_size=5)),
    st.builds(EnumValue, st.integers(1, 1000), st.integers(0, 50)),
)


def _objects(children: st.SearchStrategy) -> st.SearchStrategy:
    names = st.text(alphabet="abcdefghij", min_size=1, max_size=6)
    return st.builds(
        lambda tname, fields: BinaryObject("T" + tname, fields),
        names,
        st.dictionaries(names, children, max_size=5),
    )


_values = st.recursive(
    _leaf,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=5), st.integers(-5, 5)), children, max_size=4),
        _objects(children),
    ),
    max_leaves=20,
)


def _plain(value: object) -> object:
    """What a value decodes to (hints unwrapped)."""
    if isinstance(value, Typed):
        return value.value
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, BinaryObject):
        return BinaryObject(value.type_name, {k: _plain(v) for k, v in value.fields.items()}, type_id=value.type_id)
    return value


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_values)
def test_roundtrip_property(value: object) -> None:
    enc = BinaryEncoder()
    wire = enc.encode(value)
    reg = BinaryTypeRegistry(enc.types.values())
    got = BinaryDecoder(reg).decode(wire)
    assert values_equal(got, _plain(value))
    # decoded values re-encode to the same bytes (field types are remembered)
    assert BinaryEncoder().encode(got) == wire


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_values, st.data())
def test_truncated_or_corrupted_input_only_raises_protocol_error(value: object, data: st.DataObject) -> None:
    wire = bytearray(encode_value(value))
    cut = data.draw(st.integers(0, len(wire) - 1))
    with pytest.raises(ProtocolError):
        BinaryDecoder(schema_resolver=lambda t, s: None).decode(bytes(wire[:cut]), 0, cut) if cut else decode_value(b"")
    flips = data.draw(st.lists(st.tuples(st.integers(0, len(wire) - 1), st.integers(0, 255)), max_size=4))
    for pos, byte in flips:
        wire[pos] = byte
    try:
        BinaryDecoder().decode(bytes(wire))
    except ProtocolError:
        pass
