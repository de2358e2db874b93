"""The op library's compiled layout decoder against the NumPy one, on the same pages.

``decode_layout`` (``native/tf_ignite_data_layout.cc``) decodes pages whose rows repeat
one layout; every other page, and every page where the op library is not
loaded, goes through NumPy.  Both must give the same columns for the same
bytes, and bytes that are not such a page must never reach past the page.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

tf = pytest.importorskip("tensorflow")

from tensorflow_ignite.errors import ProtocolError, SchemaError  # noqa: E402
from tensorflow_ignite.native import data_source  # noqa: E402
from tensorflow_ignite.protocol import columns as C  # noqa: E402
from tensorflow_ignite.protocol.binary import BinaryEncoder  # noqa: E402
from tensorflow_ignite.protocol.buffer import ByteWriter  # noqa: E402
from tensorflow_ignite.protocol.codes import TypeCode  # noqa: E402
from tensorflow_ignite.protocol.columns import compiled as D  # noqa: E402
from tensorflow_ignite.protocol.columns import layout as L  # noqa: E402
from tensorflow_ignite.protocol.values import BinaryObject, Timestamp, Typed  # noqa: E402

PLAN = C.PagePlan.scan(
    C.scalar("key", TypeCode.LONG),
    C.obj(
        "value",
        C.scalar("label", TypeCode.INT),
        C.scalar("flag", TypeCode.BOOL),
        C.scalar("score", TypeCode.DOUBLE),
        C.scalar("px", TypeCode.BYTE_ARR, fixed_length=6, dtype="uint8"),
        C.scalar("mask", TypeCode.BOOL_ARR, fixed_length=3),
        C.scalar("w", TypeCode.FLOAT_ARR, fixed_length=2),
    ),
)
#: Only the label: the other fields' bytes are part of the layout.
LABEL_PLAN = C.PagePlan.scan(C.scalar("key", TypeCode.LONG), C.obj("value", C.scalar("label", TypeCode.INT)))
#: A plan with a timestamp: a layout the compiled decoder leaves to NumPy.
TS_PLAN = C.PagePlan.scan(
    C.scalar("key", TypeCode.LONG), C.obj("value", C.scalar("label", TypeCode.INT), C.scalar("t", TypeCode.TIMESTAMP))
)


def rows(n: int, seed: int = 0) -> bytes:
    """``n`` rows of PLAN's shape, all of one layout."""
    rng = np.random.default_rng(seed)
    enc = BinaryEncoder()
    w = ByteWriter()
    for i in range(n):
        enc.write(w, i * 7)
        fields = {
            "label": Typed(int(rng.integers(-(2**31), 2**31)), TypeCode.INT),
            "flag": bool(rng.integers(0, 2)),
            "score": float(rng.normal()),
            "px": Typed(bytes(rng.integers(0, 256, 6, dtype=np.uint8)), TypeCode.BYTE_ARR),
            "mask": Typed([bool(b) for b in rng.integers(0, 2, 3)], TypeCode.BOOL_ARR),
            "w": Typed([float(x) for x in rng.normal(size=2).astype(np.float32)], TypeCode.FLOAT_ARR),
        }
        enc.write(w, BinaryObject("Row", fields))
    return bytes(w.buf)


@pytest.fixture(scope="module")
def compiled() -> Iterator[D.CompiledLayoutDecoder]:
    reason = data_source.unavailable_reason()
    assert reason is None, f"the op library must load here: {reason}"
    assert D.installed() is not None, C.compiled_decoder_reason()
    yield D.installed()


def decode_both(page: bytes, n: int, plan: C.PagePlan, compiled: D.CompiledLayoutDecoder):  # type: ignore[no-untyped-def]
    """(columns, path) from the compiled decoder, then from NumPy alone (fresh layouts for each)."""
    out = []
    for decoder, reason in ((compiled, ""), (None, "turned off by the test")):
        L.clear_layout_cache()
        C.set_compiled_decoder(decoder, reason)
        try:
            paths: dict[str, int] = {}
            out.append((C.decode_page(page, n, plan, paths=paths), paths))
        finally:
            C.set_compiled_decoder(compiled)
    return out


def assert_same(a: dict[str, C.Column], b: dict[str, C.Column]) -> None:
    assert a.keys() == b.keys()
    for path in a:
        x, y = a[path].values, b[path].values
        assert x.dtype == y.dtype, path
        assert x.shape == y.shape, path
        np.testing.assert_array_equal(x, y, err_msg=path)


def test_the_same_page_decodes_the_same_both_ways(compiled: D.CompiledLayoutDecoder) -> None:
    page = rows(300)
    (fast, fast_paths), (slow, slow_paths) = decode_both(page, 300, PLAN, compiled)
    assert fast_paths == {C.COMPILED: 1}
    assert slow_paths == {C.PYTHON: 1}
    assert_same(fast, slow)
    assert fast["value.px"].values.ctypes.data % 64 == 0  # TensorFlow adopts it without a copy
    assert fast["value.mask"].values.dtype == np.bool_


def test_rows_off_the_layout_are_decoded_in_python(compiled: D.CompiledLayoutDecoder) -> None:
    """Reading only ``label``, the other fields' bytes must repeat row 0's: here they differ per row."""
    page = rows(40)
    (fast, fast_paths), (slow, slow_paths) = decode_both(page, 40, LABEL_PLAN, compiled)
    assert fast_paths == slow_paths == {C.PYTHON: 1}
    assert_same(fast, slow)
    # The same rows, all equal outside label and key: one layout, compiled.
    same = b"".join([rows(1)] * 40)
    (fast, fast_paths), (slow, _) = decode_both(same, 40, LABEL_PLAN, compiled)
    assert fast_paths == {C.COMPILED: 1}
    assert_same(fast, slow)


def test_a_layout_it_does_not_decode_says_why(
    compiled: D.CompiledLayoutDecoder, caplog: pytest.LogCaptureFixture
) -> None:
    enc = BinaryEncoder()
    w = ByteWriter()
    for i in range(4):
        enc.write(w, i)
        enc.write(
            w,
            BinaryObject("TsRow", {"label": Typed(i, TypeCode.INT), "t": Timestamp(1_700_000_000_000 + i, 0)}),
        )
    D._told.clear()
    L.clear_layout_cache()
    paths: dict[str, int] = {}
    with caplog.at_level(logging.INFO, logger=D.__name__):
        cols = C.decode_page(bytes(w.buf), 4, TS_PLAN, paths=paths)
    assert paths == {C.PYTHON: 1}
    assert cols["value.label"].values.tolist() == [0, 1, 2, 3]
    assert any("timestamp" in r.getMessage() and "'value.t'" in r.getMessage() for r in caplog.records)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_pages_decode_the_same_both_ways(compiled: D.CompiledLayoutDecoder, data: st.DataObject) -> None:
    """Fuzz: flipped bytes and truncations of a uniform page; the compiled decoder must agree with NumPy."""
    n = data.draw(st.integers(2, 12))
    page = bytearray(rows(n, seed=data.draw(st.integers(0, 3))))
    for _ in range(data.draw(st.integers(0, 4))):
        page[data.draw(st.integers(0, len(page) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, 8))
    region = bytes(page[: len(page) - cut])
    results = []
    for decoder in (compiled, None):
        L.clear_layout_cache()
        C.set_compiled_decoder(decoder, "turned off by the test")
        try:
            results.append(C.decode_page(region, n, PLAN))
        except (ProtocolError, SchemaError) as err:
            results.append(type(err))
        finally:
            C.set_compiled_decoder(compiled)
    fast, slow = results
    if isinstance(fast, dict) and isinstance(slow, dict):
        assert_same(fast, slow)
    else:
        assert fast == slow


@given(
    n=st.integers(0, 50),
    row_len=st.integers(1, 64),
    page_len=st.integers(0, 400),
    offset=st.integers(-5, 70),
    width=st.integers(-1, 70),
    out_len=st.integers(0, 400),
)
def test_arguments_that_do_not_fit_are_refused(
    compiled: D.CompiledLayoutDecoder, n: int, row_len: int, page_len: int, offset: int, width: int, out_len: int
) -> None:
    """The decoder reads only inside the page and writes only inside the outputs, whatever it is told."""
    page = bytes(page_len)
    out = np.zeros(out_len, np.uint8)
    fits = n * row_len <= page_len and 0 <= offset and 0 < width and offset + width <= row_len and out_len == n * width
    try:
        ok = compiled(page, n, row_len, np.zeros(0, np.int64), np.zeros(0, np.uint8), [(offset, width, 0, out)])
    except ValueError:
        assert not fits
    else:
        assert fits and ok


def test_the_fuzzers_reach_the_compiled_decoder(compiled: D.CompiledLayoutDecoder) -> None:
    """The fuzz targets' seeds include a page of one layout: in a process with the op library, the C++ decodes it."""
    from tensorflow_ignite.protocol.fuzz_targets import SEEDS, run_target

    calls: list[int] = []

    def counting(*args: object) -> bool:
        calls.append(1)
        return compiled(*args)  # type: ignore[arg-type]

    L.clear_layout_cache()
    C.set_compiled_decoder(counting)
    try:
        for seed in SEEDS:
            run_target(seed)
    finally:
        C.set_compiled_decoder(compiled)
    assert calls, "no fuzz seed reached the compiled decoder"
