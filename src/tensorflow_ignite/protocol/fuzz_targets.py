"""Every decoder a hostile or broken peer can reach, behind one entry point for fuzzers.

The hypothesis tests (``tests/unit/test_fuzz_protocol.py``) and the atheris
harness (``fuzz/fuzz_protocol.py``) feed arbitrary bytes to :func:`run_target`.
The contract checked is the one the decoders document: whatever the bytes,
a decoder returns or raises :class:`~tensorflow_ignite.errors.ProtocolError`
(malformed) or :class:`~tensorflow_ignite.errors.SchemaError` (well-formed data
that does not fit the page plan) -- never ``IndexError``, ``struct.error``,
``MemoryError``, ``RecursionError`` or a hang.

The first byte of the input picks the target and a parameter (protocol version,
first/later page, plan...), the rest is the payload, so a coverage-guided
fuzzer can reach every decoder from one corpus.  :data:`SEEDS` holds valid
messages to start mutating from.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import numpy as np

from tensorflow_ignite.errors import ProtocolError, SchemaError
from tensorflow_ignite.protocol import continuous, responses
from tensorflow_ignite.protocol.binary import BinaryDecoder, BinaryEncoder
from tensorflow_ignite.protocol.buffer import ByteReader, ByteWriter
from tensorflow_ignite.protocol.codes import SUPPORTED_VERSIONS, TypeCode
from tensorflow_ignite.protocol.columns import PagePlan, decode_page, obj, scalar, value_offsets
from tensorflow_ignite.protocol.framing import (
    DEFAULT_FEATURES,
    decode_handshake_response,
    decode_response_header,
)
from tensorflow_ignite.protocol.javatime import encode_java_time, encode_java_time_ser
from tensorflow_ignite.protocol.receive import FrameReader
from tensorflow_ignite.protocol.values import BinaryObject, Collection, Map, OptimizedObject, Typed

__all__ = ["ALLOWED_ERRORS", "TARGETS", "SEEDS", "run_target", "encode_input", "target_names"]

#: What a decoder may raise on bad input.
ALLOWED_ERRORS: tuple[type[BaseException], ...] = (ProtocolError, SchemaError)

#: Page plans the column decoder is fuzzed with (scan pages: key, value).
_PLANS: tuple[PagePlan, ...] = (
    PagePlan.scan(scalar("key", TypeCode.LONG), obj("value", scalar("a", TypeCode.INT), scalar("s", TypeCode.STRING))),
    PagePlan.scan(
        scalar("key", TypeCode.INT),
        obj("value", scalar("px", TypeCode.BYTE_ARR, fixed_length=4, dtype="uint8"), scalar("f", TypeCode.DOUBLE_ARR)),
    ),
    PagePlan.scan(
        None,
        obj(
            "value",
            obj("inner", scalar("t", TypeCode.TIMESTAMP), scalar("u", TypeCode.UUID)),
            scalar("d", TypeCode.DECIMAL),
        ),
    ),
    # Fixed-size fields only: pages whose rows repeat one layout, the compiled decoder's (where loaded).
    PagePlan.scan(
        scalar("key", TypeCode.LONG),
        obj(
            "value",
            scalar("label", TypeCode.INT),
            scalar("on", TypeCode.BOOL),
            scalar("px", TypeCode.BYTE_ARR, fixed_length=4, dtype="uint8"),
            scalar("m", TypeCode.BOOL_ARR, fixed_length=2),
        ),
    ),
    PagePlan.sql([scalar("A", TypeCode.LONG), scalar("B", TypeCode.STRING), scalar("C", TypeCode.DOUBLE)]),
    # Other clients: Java-serialized dates and values widened to the column's type.
    PagePlan.sql([scalar("D", TypeCode.DATE), scalar("TS", TypeCode.TIMESTAMP), scalar("L", TypeCode.LONG)]),
)


class _EndOfInput(Exception):
    """The in-memory byte source of :func:`_frames` is exhausted."""


def _frames(data: bytes, param: int) -> None:
    # The connection's own FrameReader, over the input delivered in chunks of a
    # size picked by ``param``, with buffers small enough that short inputs reach
    # every path (copied small frames, pooled large ones, frames that grow, the
    # peek/take/fill sequence of answers received into a caller's buffer).  It
    # must reject bad lengths before allocating for them and never hand out a
    # partial frame.
    step = 1 + param % 7
    pos = 0

    def source(view: memoryview) -> int:
        nonlocal pos
        if pos >= len(data):
            raise _EndOfInput
        n = min(step, len(data) - pos, len(view))
        view[:n] = data[pos : pos + n]
        pos += n
        return n

    reader = FrameReader(source, max_frame=1 << 20, buffer_size=256, small_frame=64, eager_frame=512, pool_bytes=4096)
    into_style = bool(param & 8)
    try:
        while True:
            if into_style and reader.peek_length() >= 0:
                length = reader.start_frame()
                reader.peek(min(length, 16))
                head = reader.take(min(length, 10))
                rest = bytearray(length - len(head))
                reader.fill(memoryview(rest))
            else:
                frame = reader.read_frame()
                if reader.bytes_received > len(data) or len(frame) > len(data):
                    raise AssertionError("a frame longer than the input")
    except _EndOfInput:
        pass


def _handshake(data: bytes, param: int) -> None:
    decode_handshake_response(data, SUPPORTED_VERSIONS[param % len(SUPPORTED_VERSIONS)])


def _response_header(data: bytes, param: int) -> None:
    decode_response_header(data, partition_awareness=bool(param & 1))


def _value(data: bytes, param: int) -> None:
    decoder = BinaryDecoder(schema_resolver=lambda t, s: (1, 2, 3) if param & 1 else None, copy_arrays=bool(param & 2))
    pos = 0
    # Decode consecutive values, as a page is read row by row.
    while pos < len(data):
        _, pos = decoder.decode_at(data, pos)


def _page(data: bytes, param: int) -> None:
    plan = _PLANS[param % len(_PLANS)]
    rows = (param >> 2) % 5
    # A row count the region could hold, else the page layer rejects it first.
    if param & 0x80:
        value_offsets(data, rows, len(plan.values))
    else:
        decode_page(data, rows, plan, schema_resolver=lambda t, s: (1, 2) if param & 0x40 else None)


def _scan_page(data: bytes, param: int) -> None:
    page = responses.decode_scan_page(data, first=bool(param & 1))
    responses.decode_scan_rows(page)


def _sql_page(data: bytes, param: int) -> None:
    if param & 1:
        page = responses.decode_sql_fields_page(data, first=True, include_field_names=bool(param & 2))
    else:
        page = responses.decode_sql_fields_page(data, first=False, column_count=1 + param % 3)
    responses.decode_sql_rows(page)


def _partitions(data: bytes, param: int) -> None:
    answer = responses.decode_cache_partitions(data, features=DEFAULT_FEATURES if param & 1 else ())
    for group in answer.groups:
        if group.applicable:
            group.partition_to_node()


def _binary_type(data: bytes, param: int) -> None:
    responses.decode_binary_type(data)


def _node_info(data: bytes, param: int) -> None:
    responses.decode_node_info(data)


def _node_ids(data: bytes, param: int) -> None:
    responses.decode_node_ids(data)


def _get_all(data: bytes, param: int) -> None:
    responses.decode_get_all(data)


def _cache_names(data: bytes, param: int) -> None:
    responses.decode_cache_names(data)


def _cache_config(data: bytes, param: int) -> None:
    responses.decode_cache_configuration_response(data, SUPPORTED_VERSIONS[param % len(SUPPORTED_VERSIONS)])


def _reader_strings(data: bytes, param: int) -> None:
    r = ByteReader(data)
    while not r.at_end():
        kind = r.u8("kind") % 3
        if kind == 0:
            r.typed_string()
        elif kind == 1:
            r.typed_byte_array()
        else:
            r.typed_uuid()


def _continuous_events(data: bytes, param: int) -> None:
    events = continuous.decode_continuous_events(data)
    if len(events):
        keep = np.ones(len(events), dtype=bool)
        events.rows(keep, old=bool(param & 1))


#: name -> decoder(data, param); the order is part of the fuzz input encoding (append new targets).
TARGETS: dict[str, Callable[[bytes, int], None]] = {
    "frames": _frames,
    "handshake": _handshake,
    "response_header": _response_header,
    "value": _value,
    "page": _page,
    "scan_page": _scan_page,
    "sql_page": _sql_page,
    "partitions": _partitions,
    "binary_type": _binary_type,
    "node_info": _node_info,
    "node_ids": _node_ids,
    "get_all": _get_all,
    "cache_names": _cache_names,
    "cache_config": _cache_config,
    "reader": _reader_strings,
    "continuous_events": _continuous_events,
}
_ORDER = tuple(TARGETS)


def target_names() -> tuple[str, ...]:
    """The target names in input-encoding order."""
    return _ORDER


def run_target(data: bytes) -> None:
    """Decode ``data`` with the target its first byte selects; see the module docstring.

    Raises only what :data:`ALLOWED_ERRORS` lists on bad input; anything else is
    a decoder bug.
    """
    if len(data) < 2:
        return
    target = _ORDER[data[0] % len(_ORDER)]
    TARGETS[target](data[2:], data[1])


def encode_input(target: str, payload: bytes, param: int = 0) -> bytes:
    """The fuzz input that runs ``target`` on ``payload`` with ``param``."""
    return bytes([_ORDER.index(target), param & 0xFF]) + payload


def _seed_values() -> list[bytes]:
    enc = BinaryEncoder()
    values: list[Any] = [
        1,
        "text",
        2.5,
        None,
        b"\x00\x01\x02",
        Collection([1, "a", None]),
        Map({"k": 1, 2: [3.0]}),
        BinaryObject("Row", {"a": Typed(7, TypeCode.INT), "s": "x", "nested": BinaryObject("In", {"v": 1})}),
    ]
    return [enc.encode(v) for v in values]


def _seed_page() -> bytes:
    enc = BinaryEncoder()
    w = ByteWriter()
    for i in range(3):
        enc.write(w, i)
        enc.write(w, BinaryObject("Row", {"a": Typed(i, TypeCode.INT), "s": f"row{i}"}))
    return bytes(w.buf)


def _seed_layout_page() -> bytes:
    """Three rows of the fixed-size plan, one layout: what the compiled decoder takes."""
    enc = BinaryEncoder()
    w = ByteWriter()
    for i in range(3):
        enc.write(w, i)
        fields: dict[str | int, Any] = {
            "label": Typed(i, TypeCode.INT),
            "on": bool(i % 2),
            "px": Typed(bytes([i, 1, 2, 3]), TypeCode.BYTE_ARR),
            "m": Typed([True, bool(i % 2)], TypeCode.BOOL_ARR),
        }
        enc.write(w, BinaryObject("Fixed", fields))
    return bytes(w.buf)


def _seed_java_dates_page() -> bytes:
    """Two SQL rows (DATE, TIMESTAMP, LONG) as other clients write them (java.sql.Date, java.time, narrower ints)."""
    enc = BinaryEncoder()
    w = ByteWriter()
    for i in range(2):
        if i == 0:
            enc.write(w, OptimizedObject(encode_java_time("java.sql.Date", i * 86_400_000)))
            enc.write(w, OptimizedObject(encode_java_time("java.sql.Timestamp", i * 1000, i)))
        else:
            enc.write(w, OptimizedObject(encode_java_time_ser("LocalDate", year=2024, month=2, day=29)))
            enc.write(
                w,
                OptimizedObject(
                    encode_java_time_ser(
                        "LocalDateTime", year=1969, month=12, day=31, hour=23, minute=59, second=59, nano=1
                    )
                ),
            )
        enc.write(w, Typed(i, TypeCode.SHORT))
    return bytes(w.buf)


def _seeds() -> list[bytes]:
    out = [encode_input("value", v, p) for v in _seed_values() for p in (0, 1)]
    page = _seed_page()
    out.append(encode_input("page", page, 3 << 2))
    # param: the last plan (param % plans), two rows ((param >> 2) % 5)
    param = next(p for p in range(64) if p % len(_PLANS) == len(_PLANS) - 1 and (p >> 2) % 5 == 2)
    out.append(encode_input("page", _seed_java_dates_page(), param))
    layout = next(i for i, p in enumerate(_PLANS) if p.values[1] is not None and p.values[1].fields[-1].name == "m")
    param = next(p for p in range(64) if p % len(_PLANS) == layout and (p >> 2) % 5 == 3)
    out.append(encode_input("page", _seed_layout_page(), param))
    scan = ByteWriter()
    scan.i64(42)
    scan.i32(3)
    scan.raw(page)
    scan.bool(False)
    out.append(encode_input("scan_page", scan.getvalue(), 1))
    hs = ByteWriter()
    hs.bool(True)
    hs.typed_byte_array(b"\xff\x03")
    hs.u8(10)
    hs.raw(bytes(16))
    out.append(encode_input("handshake", hs.getvalue(), len(SUPPORTED_VERSIONS) - 1))
    hdr = ByteWriter()
    hdr.i64(5)
    hdr.i16(3)
    hdr.i64(7)
    hdr.i32(1)
    hdr.i32(1000)
    hdr.typed_string("Cache does not exist")
    out.append(encode_input("response_header", hdr.getvalue(), 1))
    frames = ByteWriter()
    for n in (0, 3, 10):
        frames.i32(n)
        frames.raw(bytes(n))
    out.append(encode_input("frames", frames.getvalue(), 2))
    parts = ByteWriter()
    parts.i64(3)
    parts.i32(0)
    parts.i32(1)
    parts.bool(True)
    parts.i32(1)
    parts.i32(1234)
    parts.i32(0)
    parts.i32(1)
    parts.typed_uuid(uuid.UUID(int=1))
    parts.i32(2)
    parts.i32(0)
    parts.i32(1)
    parts.bool(True)
    out.append(encode_input("partitions", parts.getvalue(), 1))
    enc = BinaryEncoder()
    events = ByteWriter()
    events.i32(2)
    events.raw(enc.encode(1) + b"\x65" + enc.encode("new") + b"\x00")  # created
    events.raw(enc.encode(2) + enc.encode("old") + b"\x65" + b"\x02")  # removed
    out.append(encode_input("continuous_events", events.getvalue(), 1))
    return out


#: Valid inputs for every major target, for fuzzers to mutate.
SEEDS: tuple[bytes, ...] = tuple(_seeds())
