"""The writer's encoders: the vectorized fixed-layout encoder is byte-for-byte BinaryEncoder's output."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorflow_ignite.data.write import (
    FieldPlan,
    FixedLayoutEncoder,
    GenericRowEncoder,
    default_type_name,
    plan_column,
    sql_table_name,
)
from tensorflow_ignite.errors import ConfigurationError
from tensorflow_ignite.protocol.binary import BinaryDecoder, BinaryEncoder
from tensorflow_ignite.protocol.buffer import ByteWriter
from tensorflow_ignite.protocol.codes import ObjectFlag, TypeCode
from tensorflow_ignite.protocol.hashing import binary_object_hash, type_id
from tensorflow_ignite.protocol.values import BinaryObject, BinaryType, BinaryTypeRegistry, Timestamp

NUMERIC = ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
           "float16", "float32", "float64"]

# dtype -> (scalar code, array code): the mapping write() promises.
MAPPING = {
    "bool": (TypeCode.BOOL, TypeCode.BOOL_ARR),
    "int8": (TypeCode.BYTE, TypeCode.BYTE_ARR),
    "uint8": (TypeCode.BYTE, TypeCode.BYTE_ARR),
    "int16": (TypeCode.SHORT, TypeCode.SHORT_ARR),
    "uint16": (TypeCode.INT, TypeCode.INT_ARR),
    "int32": (TypeCode.INT, TypeCode.INT_ARR),
    "uint32": (TypeCode.LONG, TypeCode.LONG_ARR),
    "int64": (TypeCode.LONG, TypeCode.LONG_ARR),
    "uint64": (TypeCode.LONG, TypeCode.LONG_ARR),
    "float16": (TypeCode.FLOAT, TypeCode.FLOAT_ARR),
    "float32": (TypeCode.FLOAT, TypeCode.FLOAT_ARR),
    "float64": (TypeCode.DOUBLE, TypeCode.DOUBLE_ARR),
}


def random_column(rng: np.random.Generator, dtype: str, rows: int, shape: tuple[int, ...]) -> np.ndarray:
    full = (rows, *shape)
    if dtype == "bool":
        return rng.integers(0, 2, full).astype(bool)
    if dtype.startswith(("int", "uint")):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, full, dtype=dtype, endpoint=True)
    if dtype.startswith("datetime64"):
        ns = rng.integers(-(10**18), 10**18, full)
        return ns.astype("datetime64[ns]").astype(dtype)
    values = rng.standard_normal(full) * 1e3
    out = values.astype(dtype)
    if out.size > 2:
        out.reshape(-1)[1] = np.nan
        out.reshape(-1)[2] = -np.inf
    return out


def reference_value(column: np.ndarray, row: int) -> object:
    """What the Java side should see, derived independently of the writer's code."""
    value = column[row]
    kind = column.dtype.kind
    if kind == "M":
        ns = int(np.asarray(value).astype("datetime64[ns]").view(np.int64))
        return Timestamp.from_epoch_ns(ns)
    name = column.dtype.name
    wire = {"uint8": np.int8, "uint16": np.int32, "uint32": np.int64, "uint64": np.int64,
            "float16": np.float32}.get(name)
    if column.ndim > 1:
        flat = np.asarray(value).reshape(-1)
        if name in ("uint8", "uint64"):
            return flat.view(wire)
        return flat.astype(wire) if wire is not None else flat
    if name == "bool":
        return bool(value)
    if kind in "iu":
        if name in ("uint8", "uint64"):
            return int(np.asarray(value).view(wire))
        return int(value)
    return float(value)


def reference_entries(type_name: str, columns: dict[str, np.ndarray], keys: np.ndarray) -> list[bytes]:
    out = []
    codes = {n: plan_column(n, c).code for n, c in columns.items()}
    for i, k in enumerate(keys.tolist()):
        enc = BinaryEncoder()
        w = ByteWriter()
        enc.write(w, k, TypeCode.LONG)
        enc.write(w, BinaryObject(type_name, {n: reference_value(c, i) for n, c in columns.items()},
                                  field_types=codes))
        out.append(bytes(w.buf))
    return out


def encode_fixed(type_name: str, columns: dict[str, np.ndarray], keys: np.ndarray) -> np.ndarray:
    plans = [plan_column(n, c) for n, c in columns.items()]
    return FixedLayoutEncoder(type_id(type_name), plans).encode(keys, columns)


def objects(*items: object) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    for i, v in enumerate(items):
        out[i] = v
    return out


# --------------------------------------------------------------------- mapping
@pytest.mark.parametrize("dtype", NUMERIC)
def test_dtype_maps_to_the_promised_type_codes(dtype: str) -> None:
    scalar = plan_column("x", np.zeros(3, dtype=dtype))
    array = plan_column("x", np.zeros((3, 2, 2), dtype=dtype))
    assert (scalar.code, array.code) == MAPPING[dtype]
    assert scalar.shape == () and array.shape == (2, 2)
    assert scalar.dtype == array.dtype == dtype
    assert scalar.fixed_size is not None and array.fixed_size is not None


def test_strings_bytes_timestamps_and_objects_are_planned() -> None:
    assert plan_column("s", np.array(["a", "bé"])).code == TypeCode.STRING
    assert plan_column("s", np.array([b"ok", b"fine"])).code == TypeCode.STRING
    raw = plan_column("b", np.array([b"\xff\xfe", b"x"], dtype=object))
    assert (raw.code, raw.dtype) == (TypeCode.BYTE_ARR, "bytes")
    nullable = plan_column("s", np.array(["a", None, float("nan")], dtype=object))
    assert nullable.code == TypeCode.STRING and nullable.nullable
    ts = plan_column("t", np.array(["2024-01-01T00:00:00.123456789"], dtype="datetime64[ns]"))
    assert (ts.code, ts.fixed_size) == (TypeCode.TIMESTAMP, 13)
    assert plan_column("t", np.array(["2024-01-01", "NaT"], dtype="datetime64[D]")).nullable
    assert plan_column("i", np.array([1, None, 3], dtype=object)).code == TypeCode.LONG
    assert plan_column("f", np.array([1, 2.5, None], dtype=object)).code == TypeCode.DOUBLE
    ragged = plan_column("r", objects(np.arange(3, dtype=np.int16), np.arange(5, dtype=np.int16)))
    assert (ragged.code, ragged.shape, ragged.dtype, ragged.fixed_size) == (TypeCode.SHORT_ARR, (-1,), "int16", None)
    sarr = plan_column("sa", np.array([["a", "b"], ["c", "d"]]))
    assert (sarr.code, sarr.shape) == (TypeCode.STRING_ARR, (2,))


@pytest.mark.parametrize("values, match", [
    (np.array(["a", 1], dtype=object), "mixes values of types str, int"),
    (np.array([1 + 2j]), "complex128, which has no Ignite type"),
    (objects(np.arange(2), np.arange(2.0)), "one numeric dtype"),
    (objects(np.arange(2), np.arange(4).reshape(2, 2)), "different ranks"),
])
def test_unwritable_columns_are_clear_errors(values: np.ndarray, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        plan_column("col", values)


def test_names() -> None:
    assert default_type_name("mnist") == "MnistRow"
    assert default_type_name("my-cache.v2") == "MyCacheV2Row"
    assert default_type_name("2024_data") == "T2024DataRow"
    assert sql_table_name("my-cache.v2") == "MY_CACHE_V2"
    assert sql_table_name("9lives") == "T_9LIVES"


# -------------------------------------------------------- fixed-layout = encoder
def test_mnist_rows_equal_binary_encoder_output() -> None:
    rng = np.random.default_rng(1)
    cols = {"label": rng.integers(0, 10, 50).astype(np.int64),
            "pixels": rng.integers(0, 256, (50, 28, 28)).astype(np.uint8)}
    keys = np.arange(1000, 1050, dtype=np.int64)
    out = encode_fixed("MnistRow", cols, keys)
    assert [r.tobytes() for r in out] == reference_entries("MnistRow", cols, keys)
    # pixels at offset 24 + 9 = 33: two-byte footer offsets (last offset < 65536).
    flags = int.from_bytes(out[0, 11:13].tobytes(), "little")
    assert flags == ObjectFlag.USER_TYPE | ObjectFlag.HAS_SCHEMA | ObjectFlag.OFFSET_ONE_BYTE
    # The header hash is Arrays.hashCode of the field bytes.
    obj = out[0, 9:].tobytes()
    data_end = int.from_bytes(obj[20:24], "little")
    assert int.from_bytes(obj[8:12], "little", signed=True) == binary_object_hash(obj[24:data_end])


@pytest.mark.parametrize("tail, width_flag", [
    (200, ObjectFlag.OFFSET_ONE_BYTE),        # last field offset < 256
    (1000, ObjectFlag.OFFSET_TWO_BYTES),      # < 65536
    (70000, 0),                               # four-byte offsets
])
def test_footer_offset_width_follows_the_last_offset(tail: int, width_flag: int) -> None:
    rng = np.random.default_rng(2)
    cols = {"blob": rng.integers(0, 256, (3, tail)).astype(np.uint8), "x": np.array([1, -2, 3], np.int32)}
    keys = np.array([-5, 0, 2**62], dtype=np.int64)
    out = encode_fixed("Wide", cols, keys)
    assert [r.tobytes() for r in out] == reference_entries("Wide", cols, keys)
    flags = int.from_bytes(out[0, 11:13].tobytes(), "little")
    assert flags & (ObjectFlag.OFFSET_ONE_BYTE | ObjectFlag.OFFSET_TWO_BYTES) == width_flag


@pytest.mark.parametrize("unit", ["ns", "us", "ms", "s", "D"])
def test_timestamps_equal_encoder_output_before_and_after_the_epoch(unit: str) -> None:
    ns = np.array([-1, 0, 1, 999_999, 1_000_001, -86_400_000_000_123, 1_700_000_000_123_456_789])
    col = ns.astype("datetime64[ns]").astype(f"datetime64[{unit}]")
    cols = {"t": col, "v": np.arange(len(col), dtype=np.float32)}
    keys = np.arange(len(col), dtype=np.int64)
    assert [r.tobytes() for r in encode_fixed("TsRow", cols, keys)] == reference_entries("TsRow", cols, keys)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=st.lists(
        st.tuples(st.sampled_from(NUMERIC + ["datetime64[ns]"]),
                  st.sampled_from([(), (), (1,), (3,), (2, 3), (0,), (4, 1, 2)])),
        min_size=1, max_size=5,
    ),
    rows=st.integers(1, 6),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_fixed_layout_equals_binary_encoder_output(specs: list, rows: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    cols = {}
    for j, (dtype, shape) in enumerate(specs):
        if dtype.startswith("datetime64") and shape:
            shape = ()
        cols[f"Field_{j}"] = random_column(rng, dtype, rows, shape)
    keys = rng.integers(-(2**63), 2**63 - 1, rows, dtype=np.int64)
    fixed = encode_fixed("PropRow", cols, keys)
    assert [r.tobytes() for r in fixed] == reference_entries("PropRow", cols, keys)
    # The generic row encoder agrees with the vectorized one.
    plans = [plan_column(n, c) for n, c in cols.items()]
    generic = GenericRowEncoder("PropRow", plans, FieldPlan("key", "int64", (), TypeCode.LONG, "numeric", "<i8"))
    assert list(generic.encode_rows(keys.tolist(), cols, 0)) == [r.tobytes() for r in fixed]


def test_fixed_layout_objects_decode_back_to_the_values() -> None:
    rng = np.random.default_rng(3)
    cols = {"u16": rng.integers(0, 65536, (4, 3)).astype(np.uint16), "h": rng.standard_normal(4).astype(np.float16),
            "flag": np.array([True, False, True, True])}
    out = encode_fixed("DecRow", cols, np.arange(4, dtype=np.int64))
    plans = [plan_column(n, c) for n, c in cols.items()]
    registry = BinaryTypeRegistry()
    enc = BinaryEncoder()
    enc.encode(BinaryObject("DecRow", {p.name: None for p in plans}, field_types={p.name: p.code for p in plans}))
    for t in enc.types.values():
        registry.add(t)
    dec = BinaryDecoder(registry)
    for i in range(4):
        key, pos = dec.decode_at(out[i].tobytes(), 0)
        obj = dec.decode(out[i].tobytes(), pos)
        assert key == i
        assert np.array_equal(obj["u16"], cols["u16"][i].astype(np.int32))
        assert float(obj["h"]) == float(cols["h"][i])
        assert obj["flag"] is bool(cols["flag"][i])


def test_fixed_layout_rejects_variable_fields() -> None:
    with pytest.raises(ValueError):
        FixedLayoutEncoder(type_id("X"), [plan_column("s", np.array(["a"]))])


def test_generic_encoder_names_the_row_and_column_that_fail() -> None:
    col = np.array([1, 2, 2**70], dtype=object)
    plans = [plan_column("n", col), plan_column("ok", np.arange(3))]
    generic = GenericRowEncoder("BadRow", plans, FieldPlan("key", "int64", (), TypeCode.LONG, "numeric", "<i8"))
    rows = generic.encode_rows([0, 1, 2], {"n": col, "ok": np.arange(3)}, 5000)
    assert len([next(rows), next(rows)]) == 2
    with pytest.raises(ConfigurationError, match=r"row 5002, column 'n': .*out of range"):
        next(rows)


def test_nulls_are_written_as_null_with_declared_metadata() -> None:
    col = np.array(["x", None, float("nan")], dtype=object)
    plans = [plan_column("s", col)]
    generic = GenericRowEncoder("NullRow", plans, FieldPlan("key", "int64", (), TypeCode.LONG, "numeric", "<i8"))
    entries = list(generic.encode_rows([0, 1, 2], {"s": col}, 0))
    dec = BinaryDecoder()
    values = []
    for e in entries:
        _, pos = dec.decode_at(e, 0)
        values.append(list(dec.decode(e, pos).fields.values())[0])
    assert values == ["x", None, None]
    t: BinaryType = generic.encoder.types[type_id("NullRow")]
    assert t.fields["s"].type_code == TypeCode.STRING
