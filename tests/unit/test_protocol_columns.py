"""Whole-page column decoding, checked against the general decoder and hand-built pages."""

from __future__ import annotations

import decimal
import struct
import uuid

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorflow_ignite.errors import ArrayLengthError, ProtocolError, SchemaError
from tensorflow_ignite.protocol.binary import BinaryDecoder, BinaryEncoder, MissingSchemaError
from tensorflow_ignite.protocol.buffer import ByteWriter
from tensorflow_ignite.protocol.codes import TypeCode
from tensorflow_ignite.protocol.columns import PagePlan, decode_page, obj, scalar, take
from tensorflow_ignite.protocol.hashing import field_id, schema_id, type_id
from tensorflow_ignite.protocol.values import BinaryObject, Date, EnumValue, Time, Timestamp, Typed


def page_of(rows: list[tuple[object, ...]], codes: tuple[int | None, ...] | None = None) -> memoryview:
    """Encode rows (tuples of values) back to back, as a page region."""
    enc = BinaryEncoder()
    w = ByteWriter()
    for row in rows:
        for i, value in enumerate(row):
            enc.write(w, value, None if codes is None else codes[i])
    return memoryview(bytes(w.buf))


def mnist(label: int, pixels: np.ndarray) -> BinaryObject:
    return BinaryObject("Mnist", {"label": Typed(label, TypeCode.INT), "pixels": pixels})


MNIST_PLAN = PagePlan.scan(
    scalar("key", TypeCode.INT),
    obj("value", scalar("label", TypeCode.INT), scalar("pixels", TypeCode.BYTE_ARR, fixed_length=4, dtype="uint8")),
)


def test_uniform_rows_dense_columns() -> None:
    rng = np.random.default_rng(1)
    pixels = rng.integers(0, 256, (50, 4), dtype=np.uint8)
    region = page_of([(i, mnist(i % 10, pixels[i])) for i in range(50)], (TypeCode.INT, None))
    cols = decode_page(region, 50, MNIST_PLAN)
    assert set(cols) == {"key", "value.label", "value.pixels"}
    np.testing.assert_array_equal(cols["key"].values, np.arange(50, dtype=np.int32))
    np.testing.assert_array_equal(cols["value.label"].values, np.arange(50) % 10)
    assert cols["value.pixels"].values.dtype == np.uint8 and cols["value.pixels"].values.shape == (50, 4)
    np.testing.assert_array_equal(cols["value.pixels"].values, pixels)
    assert cols["key"].mask.all() and cols["value.label"].values.dtype == np.int32


def test_wrapped_values_and_non_uniform_rows() -> None:
    rows = []
    enc = BinaryEncoder()
    w = ByteWriter()
    for i in range(6):
        enc.write(w, "k" * i)  # string keys of different lengths: rows are not uniform
        enc.write(w, mnist(i, np.full(4, i, dtype=np.uint8)), TypeCode.BINARY_OBJ if i % 2 else TypeCode.OBJ)
        rows.append(i)
    plan = PagePlan.scan(scalar("key", TypeCode.STRING), MNIST_PLAN.values[1])
    cols = decode_page(memoryview(bytes(w.buf)), 6, plan)
    assert list(cols["key"].values) == [b"k" * i for i in range(6)]
    np.testing.assert_array_equal(cols["value.pixels"].values, np.repeat(np.arange(6), 4).reshape(6, 4))
    np.testing.assert_array_equal(cols["value.label"].values, np.arange(6))


def test_nulls_missing_fields_and_nested_objects() -> None:
    rows = [
        (1, BinaryObject("P", {"name": "a", "age": Typed(5, TypeCode.INT), "addr": BinaryObject("A", {"zip": 7})})),
        (2, None),
        (3, BinaryObject("P", {"name": None, "addr": None})),  # different schema: no "age"
        (4, BinaryObject("P", {"name": "d", "age": Typed(9, TypeCode.INT), "addr": BinaryObject("A", {"zip": None})})),
    ]
    plan = PagePlan.scan(
        scalar("key", TypeCode.LONG),
        obj("value", scalar("name", TypeCode.STRING), scalar("age", TypeCode.INT),
            obj("addr", scalar("zip", TypeCode.LONG))),
    )
    cols = decode_page(page_of(rows), 4, plan)
    assert list(cols["value.name"].values) == [b"a", b"", b"", b"d"]
    assert list(cols["value.name"].mask) == [True, False, False, True]
    assert list(cols["value.age"].values) == [5, 0, 0, 9]
    assert list(cols["value.age"].mask) == [True, False, False, True]
    assert list(cols["value.addr.zip"].values) == [7, 0, 0, 0]
    assert list(cols["value.addr.zip"].mask) == [True, False, False, False]


def test_compact_footers_need_a_resolver() -> None:
    # Hand-build compact-footer objects {a: int}: flags USER|HAS_SCHEMA|ONE_BYTE|COMPACT.
    tid, fid = type_id("C"), field_id("a")
    sid = schema_id([fid])

    def compact(v: int) -> bytes:
        data = b"\x03" + struct.pack("<i", v)
        return b"\x67\x01" + struct.pack("<hiiiii", 0x2B, tid, 0, 24 + 5 + 1, sid, 29) + data + b"\x18"

    region = b"".join(b"\x03" + struct.pack("<i", i) + compact(10 * i) for i in range(3))
    plan = PagePlan.scan(None, obj("value", scalar("a", TypeCode.INT)))
    with pytest.raises(MissingSchemaError):
        decode_page(region, 3, plan)
    cols = decode_page(region, 3, plan, schema_resolver=lambda t, s: (fid,) if (t, s) == (tid, sid) else None)
    assert list(cols["value.a"].values) == [0, 10, 20]
    assert "key" not in cols  # skipped value


def test_all_leaf_types() -> None:
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    value = BinaryObject("L", {
        "b": Typed(-1, TypeCode.BYTE), "s": Typed(-2, TypeCode.SHORT), "f": Typed(1.5, TypeCode.FLOAT),
        "d": 2.5, "c": Typed("A", TypeCode.CHAR), "z": True, "u": u, "date": Date(86_400_000),
        "ts": Timestamp(1_000, 7), "t": Time(5), "dec": decimal.Decimal("-1.25"), "e": EnumValue(3, 2),
        "be": EnumValue(3, 1, TypeCode.BINARY_ENUM), "ia": np.array([1, 2, 3], dtype=np.int32),
        "bytes": b"xyz", "ba": np.array([True, False]),
    })
    plan = PagePlan.scan(None, obj("v", *[
        scalar("b", TypeCode.BYTE), scalar("s", TypeCode.SHORT), scalar("f", TypeCode.FLOAT),
        scalar("d", TypeCode.DOUBLE), scalar("c", TypeCode.CHAR), scalar("z", TypeCode.BOOL),
        scalar("u", TypeCode.UUID), scalar("date", TypeCode.DATE), scalar("ts", TypeCode.TIMESTAMP),
        scalar("t", TypeCode.TIME), scalar("dec", TypeCode.DECIMAL), scalar("e", TypeCode.ENUM),
        scalar("be", TypeCode.BINARY_ENUM), scalar("ia", TypeCode.INT_ARR),
        scalar("bytes", TypeCode.BYTE_ARR, as_bytes=True), scalar("ba", TypeCode.BOOL_ARR, fixed_length=2),
    ]))
    cols = decode_page(page_of([(1, value), (2, value)]), 2, plan)
    first = {k: (c.values[0] if c.row_splits is None else c.values[c.row_splits[0]:c.row_splits[1]])
             for k, c in cols.items()}
    assert first["v.b"] == -1 and cols["v.b"].values.dtype == np.int8
    assert first["v.s"] == -2 and first["v.f"] == 1.5 and cols["v.f"].values.dtype == np.float32
    assert first["v.d"] == 2.5 and first["v.c"] == ord("A") and cols["v.c"].values.dtype == np.uint16
    assert first["v.z"] is np.True_
    assert first["v.u"] == str(u).encode()
    assert first["v.date"] == 86_400_000 and first["v.t"] == 5
    assert first["v.ts"] == 1_000 * 1_000_000 + 7
    assert first["v.dec"] == -1.25 and first["v.e"] == 2 and first["v.be"] == 1
    np.testing.assert_array_equal(first["v.ia"], [1, 2, 3])
    np.testing.assert_array_equal(cols["v.ia"].row_splits, [0, 3, 6])
    assert first["v.bytes"] == b"xyz"
    np.testing.assert_array_equal(cols["v.ba"].values, [[True, False], [True, False]])


def test_ragged_arrays_with_nulls() -> None:
    rows = [(0, np.array([1.0, 2.0])), (1, None), (2, np.array([], dtype=np.float64)), (3, np.array([3.0]))]
    plan = PagePlan.scan(scalar("key", TypeCode.LONG), scalar("value", TypeCode.DOUBLE_ARR))
    col = decode_page(page_of(rows), 4, plan)["value"]
    np.testing.assert_array_equal(col.values, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(col.row_splits, [0, 2, 2, 2, 3])
    assert list(col.mask) == [True, False, True, True]


def test_fixed_length_with_null_rows_and_mismatch() -> None:
    rows = [(0, b"ab"), (1, None), (2, b"cd")]
    plan = PagePlan.scan(None, scalar("value", TypeCode.BYTE_ARR, fixed_length=2))
    col = decode_page(page_of(rows), 3, plan)["value"]
    np.testing.assert_array_equal(col.values, [[97, 98], [0, 0], [99, 100]])
    with pytest.raises(ArrayLengthError, match="row 0: the array has 2 elements") as info:
        decode_page(page_of(rows), 3, PagePlan.scan(None, scalar("value", TypeCode.BYTE_ARR, fixed_length=3)))
    assert (info.value.path, info.value.row, info.value.found, info.value.expected) == ("value", 0, 2, 3)
    assert isinstance(info.value, SchemaError)


def test_schema_errors() -> None:
    region = page_of([(1, "x")])
    with pytest.raises(SchemaError, match="expects INT"):
        decode_page(region, 1, PagePlan.scan(None, scalar("value", TypeCode.INT)))
    with pytest.raises(SchemaError, match="not nullable"):
        decode_page(page_of([(1, None)]), 1, PagePlan.scan(None, scalar("value", TypeCode.INT, nullable=False)))
    with pytest.raises(SchemaError, match="cannot be a column"):
        decode_page(page_of([(1, [1])]), 1, PagePlan.scan(None, scalar("value", TypeCode.COLLECTION)))
    ok = decode_page(page_of([(1, 5)]), 1, PagePlan.scan(None, scalar("value", TypeCode.LONG, nullable=False)))
    assert ok["value"].mask is None


def test_sql_page_columns() -> None:
    rows = [(Typed(i, TypeCode.INT), f"n{i}", i * 0.5) for i in range(5)]
    plan = PagePlan.sql([scalar("ID", TypeCode.INT), None, scalar("SCORE", TypeCode.DOUBLE)])
    cols = decode_page(page_of(rows), 5, plan)
    assert set(cols) == {"ID", "SCORE"}
    np.testing.assert_array_equal(cols["SCORE"].values, np.arange(5) * 0.5)


def test_field_handles_are_followed() -> None:
    # {a: X{v:1}, b: handle -> X}: the second field reuses the first object.
    fa, fb, fv = field_id("a"), field_id("b"), field_id("v")
    inner = BinaryEncoder().encode(BinaryObject("X", {"v": Typed(1, TypeCode.INT)}))
    handle_pos = 24 + len(inner)
    handle = b"\x66" + struct.pack("<i", handle_pos - 24)
    data = inner + handle
    footer = struct.pack("<iBiB", fa, 24, fb, handle_pos)
    total = 24 + len(data) + len(footer)
    outer = b"\x67\x01" + struct.pack("<hiiiii", 0x0B, 77, 0, total, schema_id([fa, fb]), 24 + len(data))
    region = outer + data + footer
    plan = PagePlan.sql([obj("o", obj("a", scalar("v", TypeCode.INT)), obj("b", scalar("v", TypeCode.INT)))])
    cols = decode_page(region, 1, plan)
    assert cols["o.a.v"].values[0] == 1 and cols["o.b.v"].values[0] == 1
    general = BinaryDecoder().decode(region)
    assert general.fields[fb] is general.fields[fa] and general.fields[fa].fields[fv] == 1


def test_objects_with_different_offset_widths_in_one_page() -> None:
    rows = [(i, BinaryObject("W", {"s": "x" * (10 if i % 2 else 400), "n": i})) for i in range(4)]
    plan = PagePlan.scan(None, obj("value", scalar("s", TypeCode.STRING), scalar("n", TypeCode.LONG)))
    cols = decode_page(page_of(rows), 4, plan)
    assert list(cols["value.n"].values) == [0, 1, 2, 3]
    assert [len(b) for b in cols["value.s"].values] == [400, 10, 400, 10]


@pytest.mark.parametrize(
    ("region", "count"),
    [
        (b"\x03\x01\x00", 1),  # truncated int
        (b"\x03\x01\x00\x00\x00", 2),  # fewer rows than claimed
        (b"\x03\x01\x00\x00\x00\x03", 1),  # stray bytes
        (b"\x67\x01" + b"\x00" * 10, 1),  # truncated header
        (b"\x09\xff\xff\xff\x7f", 1),  # 2 GiB string
    ],
)
def test_malformed_pages(region: bytes, count: int) -> None:
    plan = PagePlan.sql([scalar("x", TypeCode.INT)])
    with pytest.raises(ProtocolError):
        decode_page(region, count, plan)


# ------------------------------------------------------------------ property: columns == general decoder
_field_values = {
    "i": st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1).map(lambda v: Typed(v, TypeCode.INT))),
    "l": st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
    "d": st.one_of(st.none(), st.floats(allow_nan=False)),
    "s": st.one_of(st.none(), st.text(max_size=30)),
    "z": st.one_of(st.none(), st.booleans()),
    "ts": st.one_of(st.none(), st.builds(Timestamp, st.integers(-(2**40), 2**40), st.integers(0, 999_999))),
    "arr": st.one_of(st.none(), st.lists(st.integers(-(2**31), 2**31 - 1), max_size=6).map(
        lambda a: np.array(a, dtype=np.int32))),
}
_row_object = st.fixed_dictionaries({}, optional=_field_values).map(lambda f: BinaryObject("Row", f))
_PLAN = PagePlan.scan(
    scalar("key", TypeCode.LONG),
    obj("value", scalar("i", TypeCode.INT), scalar("l", TypeCode.LONG), scalar("d", TypeCode.DOUBLE),
        scalar("s", TypeCode.STRING), scalar("z", TypeCode.BOOL), scalar("ts", TypeCode.TIMESTAMP),
        scalar("arr", TypeCode.INT_ARR)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.none(), _row_object), max_size=25))
def test_columns_match_the_general_decoder(values: list[BinaryObject | None]) -> None:
    rows = [(i, v) for i, v in enumerate(values)]
    region = page_of(rows)
    cols = decode_page(region, len(rows), _PLAN)
    dec = BinaryDecoder()
    pos = 0
    for i in range(len(rows)):
        key, pos = dec.decode_at(region, pos)
        value, pos = dec.decode_at(region, pos)
        assert cols["key"].values[i] == key
        for name in _field_values:
            col = cols[f"value.{name}"]
            expected = None if value is None else value.fields.get(field_id(name))
            if expected is None:
                assert not col.mask[i]
                continue
            assert col.mask[i]
            if name == "s":
                assert col.values[i] == expected.encode("utf-8", "surrogatepass")
            elif name == "ts":
                assert col.values[i] == expected.epoch_ns
            elif name == "arr":
                np.testing.assert_array_equal(col.values[col.row_splits[i]:col.row_splits[i + 1]], expected)
            else:
                assert col.values[i] == expected


@pytest.mark.parametrize("dtype", ["u1", "<i2", "<i4", "<i8", "<f8"])
@pytest.mark.parametrize("positions", [
    [], [5], [3, 4], [0, 7, 14, 21, 28], [1, 9, 17, 25],  # evenly spaced (strided, unaligned)
    [0, 7, 15, 21], [21, 14, 7, 0], [4, 4, 4], [2, 40, 3],  # not: fancy indexing
])
def test_take_reads_values_at_any_positions(dtype: str, positions: list[int]) -> None:
    rng = np.random.default_rng(7)
    page = rng.integers(0, 256, 64, dtype=np.uint8)
    idx = np.asarray(positions, dtype=np.int64)
    got = take(page, idx, dtype)
    size = np.dtype(dtype).itemsize
    expected = np.array([page[i:i + size].view(dtype)[0] for i in positions], dtype=dtype)
    assert got.dtype == np.dtype(dtype) and got.shape == (len(positions),)
    np.testing.assert_array_equal(got, expected)
    got[...] = 0  # a copy: the page is untouched
    np.testing.assert_array_equal(page, np.random.default_rng(7).integers(0, 256, 64, dtype=np.uint8))


_uniform_fields = {
    "i": st.integers(-(2**31), 2**31 - 1).map(lambda v: Typed(v, TypeCode.INT)),
    "l": st.integers(-(2**63), 2**63 - 1),
    "d": st.floats(allow_nan=False),
    "z": st.booleans(),
    "ts": st.builds(Timestamp, st.integers(-(2**40), 2**40), st.integers(0, 999_999)),
}


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.fixed_dictionaries(_uniform_fields), min_size=1, max_size=40), st.booleans())
def test_uniform_pages_match_the_general_decoder(values: list[dict[str, object]], int_keys: bool) -> None:
    """Rows of one layout (the strided path): same columns as decoding row by row."""
    code = TypeCode.INT if int_keys else TypeCode.LONG
    rows = [(i * 3 - 7, BinaryObject("Row", {**v, "arr": np.arange(i, i + 3, dtype=np.int32)}))
            for i, v in enumerate(values)]
    region = page_of(rows, (code, None))
    plan = PagePlan.scan(scalar("key", code), obj("value", *[
        scalar("i", TypeCode.INT), scalar("l", TypeCode.LONG), scalar("d", TypeCode.DOUBLE),
        scalar("z", TypeCode.BOOL), scalar("ts", TypeCode.TIMESTAMP),
        scalar("arr", TypeCode.INT_ARR, fixed_length=3)]))
    cols = decode_page(region, len(rows), plan)
    assert len(region) % len(rows) == 0  # every row has the same length
    np.testing.assert_array_equal(cols["key"].values, [k for k, _ in rows])
    np.testing.assert_array_equal(cols["value.i"].values, [v["i"].value for v in values])
    np.testing.assert_array_equal(cols["value.l"].values, [v["l"] for v in values])
    np.testing.assert_array_equal(cols["value.d"].values, [v["d"] for v in values])
    np.testing.assert_array_equal(cols["value.z"].values, [v["z"] for v in values])
    np.testing.assert_array_equal(cols["value.ts"].values, [v["ts"].epoch_ns for v in values])
    np.testing.assert_array_equal(cols["value.arr"].values, [np.arange(i, i + 3) for i in range(len(rows))])


def _pair(a: int, b: int, order: str = "ab", note: str = "xyz") -> BinaryObject:
    fields = {"a": Typed(a, TypeCode.INT), "b": Typed(b, TypeCode.LONG), "note": note}
    return BinaryObject("Pair", {k: fields[k] for k in (*order, "note")})


_PAIR_PLAN = PagePlan.scan(scalar("key", TypeCode.LONG),
                           obj("value", scalar("a", TypeCode.INT), scalar("b", TypeCode.LONG)))


def _decoded_pairs(rows: list[tuple[int, BinaryObject | None]]) -> dict[str, list[object]]:
    cols = decode_page(page_of(rows, (TypeCode.LONG, None)), len(rows), _PAIR_PLAN)
    return {k: c.values.tolist() for k, c in cols.items()} | {
        f"{k}.mask": c.mask.tolist() for k, c in cols.items() if c.mask is not None}


def test_layouts_are_made_once_and_checked_on_every_page() -> None:
    from tensorflow_ignite.protocol.columns import decode as columns

    columns.clear_layout_cache()
    rows = [(i, _pair(i, -i)) for i in range(8)]
    got = _decoded_pairs(rows)
    assert got["key"] == list(range(8)) and got["value.a"] == list(range(8)) and got["value.b"] == [-i for i in range(8)]
    assert len(columns.cached_layouts()) == 1  # the strided path was taken
    (layout,) = columns.cached_layouts()
    # Same row length, fields in another order (footer and offsets differ): the
    # kept layout must not be used; the page's own one replaces it.
    swapped = [(i, _pair(10 + i, 20 + i, order="ba")) for i in range(8)]
    got = _decoded_pairs(swapped)
    assert got["value.a"] == [10 + i for i in range(8)] and got["value.b"] == [20 + i for i in range(8)]
    assert columns.cached_layouts()[-1] is not layout


@pytest.mark.parametrize("case", ["unwanted field differs", "null in a later row", "null in row 0", "null object"])
def test_rows_that_do_not_repeat_one_layout_decode_like_before(case: str) -> None:
    rows: list[tuple[int, BinaryObject | None]] = [(i, _pair(i, 2 * i)) for i in range(6)]
    if case == "unwanted field differs":
        rows[3] = (3, _pair(3, 6, note="abc"))  # same length, other bytes in a field the plan skips
    elif case == "null in a later row":
        rows[4] = (4, BinaryObject("Pair", {"a": Typed(4, TypeCode.INT), "note": "xyz"}))
    elif case == "null in row 0":
        rows[0] = (0, BinaryObject("Pair", {"a": Typed(0, TypeCode.INT), "note": "xyz"}))
    else:
        rows[2] = (2, None)
    got = _decoded_pairs(rows)
    null_row = {"null in a later row": 4, "null in row 0": 0, "null object": 2}.get(case)
    expected_b = [0 if i == null_row else 2 * i for i in range(6)]
    assert got["key"] == list(range(6))
    assert got["value.b"] == expected_b
    assert got["value.b.mask"] == [i != null_row for i in range(6)]
