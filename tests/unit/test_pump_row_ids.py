"""Row ids computed by the compiled scan pump (native/tf_ignite_data_rows.cc) against the reader's Python ones.

For the same pages -- well-formed, mutated and cut short -- the keys and
partitions the pump computes equal what ``ScanReader._row_ids`` computes in
Python, and the pump computes none for a page Python refuses (it then
raises what it raised before).
"""

from __future__ import annotations

import socket
import struct
import threading
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("tensorflow")

from tensorflow_ignite.client import pump
from tensorflow_ignite.data.reader import ScanReader
from tensorflow_ignite.errors import SchemaError
from tensorflow_ignite.native import data_source
from tensorflow_ignite.protocol.binary import BinaryEncoder
from tensorflow_ignite.protocol.buffer import ByteWriter
from tensorflow_ignite.protocol.codes import TypeCode
from tensorflow_ignite.protocol.responses import ScanPage
from tensorflow_ignite.protocol.values import BinaryObject, Typed


@pytest.fixture(scope="module")
def module() -> Any:
    assert data_source.unavailable_reason() is None, data_source.unavailable_reason()
    data_source.ensure_loaded()
    return data_source._load()[1]


def page_rows(keys: list[int], values: list[Any], int_keys: list[bool]) -> bytes:
    enc = BinaryEncoder()
    w = ByteWriter()
    for key, value, small in zip(keys, values, int_keys, strict=True):
        enc.write(w, Typed(key, TypeCode.INT) if small else key)
        enc.write(w, value)
    return bytes(w.buf)


def value_of(kind: int, i: int) -> Any:
    if kind == 0:
        return BinaryObject("Row", {"label": Typed(i, TypeCode.INT), "px": Typed(bytes(i % 7), TypeCode.BYTE_ARR)})
    if kind == 1:
        return "text" * (i % 3)
    if kind == 2:
        return Typed([float(i)] * (i % 4), TypeCode.DOUBLE_ARR)
    if kind == 3:
        return None
    return float(i)


def python_ids(rows: bytes, n: int, partitions: int) -> tuple[np.ndarray, np.ndarray]:
    """``ScanReader._row_ids`` on a page whose rows are plain bytes (no pump ids: Python computes them)."""
    reader = SimpleNamespace(cache_name="c", partitions=partitions, _stats_lock=threading.Lock(), id_paths={})
    out = ScanReader._row_ids(reader, ScanPage(None, n, memoryview(rows), False))  # type: ignore[arg-type]
    assert reader.id_paths == {"python": 1}
    return out


def pumped(module: Any, frames: list[bytes]) -> list[Any]:
    """The ScanFrames a pump with ``row_ids=True`` receives for ``frames`` (answers to its requests)."""
    a, b = socket.socketpair()
    a.setblocking(False)
    ids = iter(range(101, 10_000))
    script = list(frames)

    def send_next() -> int:
        rid = next(ids)
        frame = script.pop(0)
        b.sendall(frame[:4] + struct.pack("<q", rid) + frame[12:])
        return rid

    p = module.ScanPump(a.fileno(), send_next, lambda f: None, 1 << 20, 10.0, 1 << 24, "peer", row_ids=True)
    try:
        got = []
        while (frame := p.next()) is not None:
            got.append(frame)
        return got
    finally:
        p.stop()
        a.close()
        b.close()


def frame_of(rows: bytes, n: int, more: bool, flags: int = 0) -> bytes:
    body = struct.pack("<qh", 0, flags) + (struct.pack("<qi", 1, 2) if flags & 2 else b"")
    body += struct.pack("<i", n) + rows + bytes([1 if more else 0])
    return struct.pack("<i", len(body)) + body


def page_from_frame(frame: Any, flags: int = 0) -> ScanPage:
    view = memoryview(frame)
    start = 10 + (12 if flags & 2 else 0)
    n = struct.unpack_from("<i", view, start)[0]
    return ScanPage(None, n, view[start + 4 : len(view) - 1], False)


@pytest.mark.parametrize("partitions", [1024, 1000, 1])
def test_pump_ids_equal_python_ids(module: Any, partitions: int) -> None:
    rng = np.random.default_rng(partitions)
    pages = []
    for kind in range(5):
        n = 50 + kind
        keys = [int(k) for k in rng.integers(-(2**62), 2**62, n)]
        small = [kind == 1 or (kind == 2 and i % 2 == 0) for i in range(n)]
        keys = [k % (2**31) - 2**30 if s else k for k, s in zip(keys, small, strict=True)]
        pages.append((page_rows(keys, [value_of(kind, i) for i in range(n)], small), n))
    flags = [0, 2, 0, 2, 0]  # some answers say the topology changed: the page starts later
    frames = [frame_of(rows, n, i < len(pages) - 1, f) for i, ((rows, n), f) in enumerate(zip(pages, flags))]
    got = pumped(module, frames)
    assert len(got) == len(pages)
    for (rows, n), frame, f in zip(pages, got, flags, strict=True):
        page = page_from_frame(frame, f)
        assert bytes(page.rows) == rows
        reader = SimpleNamespace(cache_name="c", partitions=partitions, _stats_lock=threading.Lock(), id_paths={})
        parts, ids = ScanReader._row_ids(reader, page)  # type: ignore[arg-type]
        assert reader.id_paths == {"pump": 1}
        want_parts, want_ids = python_ids(rows, n, partitions)
        np.testing.assert_array_equal(ids, want_ids)
        np.testing.assert_array_equal(parts, want_parts)
        assert parts.dtype == want_parts.dtype and ids.dtype == want_ids.dtype


def test_pages_the_pump_does_not_take_get_python_ids(module: Any) -> None:
    # A String key: the pump computes none, Python refuses the page as before.
    rows = page_rows([0, 1], [1.0, 2.0], [False, False])
    bad = rows[:0] + bytes([TypeCode.STRING]) + struct.pack("<i", 3) + b"abc" + rows[9:]
    (frame,) = pumped(module, [frame_of(bad, 2, False)])
    assert frame.row_ids() is None
    with pytest.raises(SchemaError, match="type code 9"):
        python_ids(bad, 2, 1024)
    # An error answer: no ids, whatever its bytes.
    (frame,) = pumped(module, [frame_of(rows, 2, False, flags=1)])
    assert frame.row_ids() is None
    # A value the pump does not step over (a collection): Python's ids, the same as before.
    enc = BinaryEncoder()
    w = ByteWriter()
    enc.write(w, 5)
    enc.write(w, [1, 2, 3])
    assert module.scan_row_ids(bytes(w.buf), 1) is None
    np.testing.assert_array_equal(python_ids(bytes(w.buf), 1, 1024)[1], [5])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    kind=st.integers(0, 4),
    n=st.integers(1, 12),
    small=st.booleans(),
    edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=3),
    cut=st.integers(0, 40),
    claim=st.integers(-1, 2),
)
def test_mutated_and_short_pages_agree(
    module: Any, kind: int, n: int, small: bool, edits: list[tuple[int, int]], cut: int, claim: int
) -> None:
    keys = [i * 977 - 3000 for i in range(n)]
    data = bytearray(page_rows(keys, [value_of(kind, i) for i in range(n)], [small] * n))
    for at, byte in edits:
        data[at % len(data)] = byte
    rows = bytes(data[: max(0, len(data) - cut)])
    count = max(0, n + claim)
    got = module.scan_row_ids(rows, count)
    try:
        want = python_ids(rows, count, 1024)
    except Exception:  # noqa: BLE001 -- ProtocolError, SchemaError, or the general decoder's errors for unknown codes
        assert got is None  # the pump takes no page Python refuses
        return
    if got is None:
        return  # a value the pump does not step over: Python's ids stand
    ids = np.frombuffer(got[0], np.int64)
    np.testing.assert_array_equal(ids, want[1])
    page = ScanPage(None, count, memoryview(rows), False)
    assert pump.pumped_row_ids(page.rows, count) is None  # plain bytes: not a pump's frame


def test_arguments_are_checked(module: Any) -> None:
    assert module.scan_row_ids(b"abc", 4) is None
    with pytest.raises(ValueError, match="n must be"):
        module.scan_row_ids(b"abc", -1)
    assert module.scan_row_ids(b"", 0) == (b"", b"")
