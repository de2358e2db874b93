"""Hostile bytes against every protocol decoder: only typed errors, bounded memory, no deep recursion.

The targets are those of ``protocol.fuzz_targets`` (shared with the atheris
harness in ``fuzz/``).  Random bytes, mutated valid messages and hand-made
hostile messages (lengths claiming 2 GiB, nesting 100,000 levels deep, huge
partition numbers and row counts) must end in a return or a ``ProtocolError``
/ ``SchemaError`` -- never ``IndexError``, ``struct.error``, ``MemoryError``,
``RecursionError``.
"""

from __future__ import annotations

import struct
import time
import tracemalloc
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tensorflow_ignite.errors import ProtocolError
from tensorflow_ignite.protocol import responses
from tensorflow_ignite.protocol.binary import BinaryDecoder
from tensorflow_ignite.protocol.buffer import ByteReader, ByteWriter
from tensorflow_ignite.protocol.codes import TypeCode
from tensorflow_ignite.protocol.columns import PagePlan, decode_page, scalar, value_offsets
from tensorflow_ignite.protocol.framing import decode_handshake_response, decode_response_header
from tensorflow_ignite.protocol.receive import FrameReader
from tensorflow_ignite.protocol.fuzz_targets import ALLOWED_ERRORS, SEEDS, encode_input, run_target, target_names

_FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_TWO_GIB = 0x7FFFFFFF  # the largest int32 length: "2 GiB"


def _run(data: bytes) -> None:
    try:
        run_target(data)
    except ALLOWED_ERRORS:
        pass


@contextmanager
def _bounded(max_bytes: int = 4 << 20, max_seconds: float = 5.0) -> Iterator[None]:
    """Fail if the block allocates more than ``max_bytes`` (Python heap) or runs too long."""
    tracemalloc.start()
    start = time.monotonic()
    try:
        yield
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    elapsed = time.monotonic() - start
    assert peak < max_bytes, f"peak allocation {peak} bytes"
    assert elapsed < max_seconds, f"took {elapsed:.1f}s"


# ------------------------------------------------------------------ random input
@_FUZZ
@given(st.sampled_from(target_names()), st.integers(0, 255), st.binary(max_size=512))
def test_random_bytes_only_typed_errors(target: str, param: int, payload: bytes) -> None:
    _run(encode_input(target, payload, param))


@_FUZZ
@given(st.sampled_from(SEEDS), st.data())
def test_mutated_valid_messages_only_typed_errors(seed: bytes, data: st.DataObject) -> None:
    wire = bytearray(seed)
    # Keep the target byte most of the time so mutations hit the decoder the seed was made for.
    edits = data.draw(st.lists(st.tuples(st.integers(1, max(1, len(wire) - 1)), st.integers(0, 255)), max_size=6))
    for pos, byte in edits:
        if pos < len(wire):
            wire[pos] = byte
    # Splice in a hostile int (negative, huge, 2 GiB) somewhere: lengths and counts live in ints.
    if data.draw(st.booleans()) and len(wire) > 6:
        at = data.draw(st.integers(2, len(wire) - 4))
        wire[at : at + 4] = struct.pack("<i", data.draw(st.sampled_from([-1, -(2**31), _TWO_GIB, 1 << 24, 65536])))
    cut = data.draw(st.integers(2, len(wire)))
    _run(bytes(wire[:cut]))


@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: target_names()[s[0]])
def test_every_truncation_of_a_seed_is_a_typed_error_or_valid(seed: bytes) -> None:
    for cut in range(2, len(seed) + 1):
        _run(seed[:cut])


def test_seeds_are_valid() -> None:
    # The seeds must decode, or the fuzzers would start from garbage.
    for seed in SEEDS:
        run_target(seed)


# ------------------------------------------------------------------ 2 GiB claims
_LENGTH_CODES = [
    TypeCode.STRING, TypeCode.BYTE_ARR, TypeCode.SHORT_ARR, TypeCode.INT_ARR, TypeCode.LONG_ARR,
    TypeCode.FLOAT_ARR, TypeCode.DOUBLE_ARR, TypeCode.CHAR_ARR, TypeCode.BOOL_ARR, TypeCode.STRING_ARR,
    TypeCode.UUID_ARR, TypeCode.DATE_ARR, TypeCode.TIMESTAMP_ARR, TypeCode.TIME_ARR, TypeCode.DECIMAL_ARR,
    TypeCode.COLLECTION, TypeCode.MAP, TypeCode.BINARY_OBJ, TypeCode.OPTIMIZED,
]


@pytest.mark.parametrize("code", _LENGTH_CODES, ids=lambda c: TypeCode(c).name)
@pytest.mark.parametrize("claim", [_TWO_GIB, -1, 1 << 20])
def test_length_claims_beyond_the_data_allocate_nothing(code: int, claim: int) -> None:
    wire = bytes([code & 0xFF]) + struct.pack("<i", claim) + b"\x01" * 64
    with _bounded(), pytest.raises(ProtocolError, match="exceeds|left|offset"):
        BinaryDecoder().decode(wire)


def test_object_claiming_two_gib_total_length() -> None:
    header = bytes([TypeCode.OBJ, 1]) + struct.pack("<hiiiii", 0x3, 1, 0, _TWO_GIB, 0, 24)
    with _bounded(), pytest.raises(ProtocolError, match="claims length"):
        BinaryDecoder().decode(header + bytes(32))


def test_object_array_with_unregistered_type_and_huge_class_name() -> None:
    wire = bytes([TypeCode.OBJ_ARR]) + struct.pack("<i", 0) + bytes([TypeCode.STRING]) + struct.pack("<i", _TWO_GIB)
    with _bounded(), pytest.raises(ProtocolError):
        BinaryDecoder().decode(wire + b"abc")


def _source(data: bytes):  # type: ignore[no-untyped-def]
    chunks = [data]

    def recv_into(view: memoryview) -> int:
        if not chunks:
            raise EOFError
        chunk = chunks.pop()
        view[:len(chunk)] = chunk
        return len(chunk)

    return recv_into


def test_frame_reader_refuses_huge_length_before_buffering() -> None:
    with _bounded(), pytest.raises(ProtocolError, match="claiming 2147483647 bytes"):
        FrameReader(_source(struct.pack("<i", _TWO_GIB))).read_frame()
    with pytest.raises(ProtocolError, match="limit 1024"):
        FrameReader(_source(struct.pack("<i", 4096) + b"x" * 10), max_frame=1024).read_frame()
    with pytest.raises(ProtocolError):
        FrameReader(_source(struct.pack("<i", -5))).read_frame()


def test_reader_lengths_are_checked_against_what_is_left() -> None:
    for claim in (_TWO_GIB, -1):
        r = ByteReader(bytes([9]) + struct.pack("<i", claim) + b"abc")
        with _bounded(), pytest.raises(ProtocolError, match="length"):
            r.typed_string()
        r = ByteReader(struct.pack("<i", claim))
        with pytest.raises(ProtocolError):
            r.length("count", 8)


def test_cache_names_count_of_two_gib() -> None:
    with _bounded(), pytest.raises(ProtocolError, match="cache name count"):
        responses.decode_cache_names(struct.pack("<i", _TWO_GIB) + b"\x65" * 16)


def test_get_all_count_of_two_gib() -> None:
    with _bounded(), pytest.raises(ProtocolError):
        responses.decode_get_all(struct.pack("<i", _TWO_GIB) + b"\x65" * 16)


def test_page_row_count_of_two_gib_allocates_nothing() -> None:
    plan = PagePlan.scan(scalar("k", TypeCode.LONG), scalar("v", TypeCode.LONG))
    with _bounded(), pytest.raises(ProtocolError, match="rows"):
        decode_page(b"\x65" * 64, _TWO_GIB, plan)
    with _bounded(), pytest.raises(ProtocolError, match="rows"):
        value_offsets(b"\x65" * 64, _TWO_GIB, 2)
    body = struct.pack("<qi", 1, _TWO_GIB) + b"\x65" * 16 + b"\x00"
    with _bounded(), pytest.raises(ProtocolError, match="cannot fit"):
        responses.decode_scan_page(body, first=True)


def test_partition_number_cannot_size_the_partition_table() -> None:
    # One node owning partition 2**30: the map is a list indexed by partition.
    w = ByteWriter()
    w.i64(1)
    w.i32(0)
    w.i32(1)  # one group
    w.bool(True)
    w.i32(1)  # one cache
    w.i32(1234)
    w.i32(0)  # no key configs
    w.i32(1)  # one node
    w.typed_uuid(uuid.UUID(int=7))
    w.i32(1)
    w.i32(1 << 30)
    w.bool(True)
    with _bounded(), pytest.raises(ProtocolError, match="outside"):
        responses.decode_cache_partitions(w.getvalue())


# ---------------------------------------------------------------- deep nesting
def _nested(depth: int, opener: Callable[[], bytes], leaf: bytes = bytes([TypeCode.NULL])) -> bytes:
    return opener() * depth + leaf


@pytest.mark.parametrize(
    "opener",
    [
        lambda: bytes([TypeCode.COLLECTION]) + struct.pack("<i", 1) + b"\x01",
        lambda: bytes([TypeCode.OBJ_ARR]) + struct.pack("<ii", -1, 1),
        lambda: bytes([TypeCode.MAP]) + struct.pack("<i", 1) + b"\x01" + bytes([TypeCode.NULL]),
    ],
    ids=["collection", "object_array", "map_value"],
)
def test_deep_nesting_is_refused_not_a_stack_overflow(opener: Callable[[], bytes]) -> None:
    wire = _nested(100_000, opener)
    with _bounded(max_bytes=64 << 20), pytest.raises(ProtocolError, match="nested deeper"):
        BinaryDecoder().decode(wire)
    # Within the limit the same shape decodes.
    BinaryDecoder().decode(_nested(50, opener))


def test_deeply_nested_wrapped_objects_are_refused() -> None:
    # Wrapped objects (27) inside wrapped objects: each level is its own buffer.
    inner = bytes([TypeCode.NULL])
    for _ in range(2000):
        inner = bytes([TypeCode.BINARY_OBJ]) + struct.pack("<i", len(inner)) + inner + struct.pack("<i", 0)
    with pytest.raises(ProtocolError, match="nested deeper than 100 levels"):
        BinaryDecoder().decode(inner)


def test_handle_chains_stay_bounded() -> None:
    # Many handles back to the start of a collection: each resolves to the cached value.
    n = 5000
    body = bytes([TypeCode.COLLECTION]) + struct.pack("<i", n) + b"\x01"
    for i in range(n):
        pos = len(body)
        body += bytes([TypeCode.HANDLE]) + struct.pack("<i", pos)
    with _bounded(max_bytes=16 << 20):
        col = BinaryDecoder().decode(body)
    assert len(col) == n and all(item is col for item in col)


def test_handle_pointing_forward_or_to_itself() -> None:
    for back in (0, -4, 1 << 30):
        wire = bytes([TypeCode.COLLECTION]) + struct.pack("<i", 1) + b"\x01" + bytes([TypeCode.HANDLE]) + struct.pack(
            "<i", back
        )
        with pytest.raises(ProtocolError, match="handle"):
            BinaryDecoder().decode(wire)


# ----------------------------------------------------------- headers, handshake
@_FUZZ
@given(st.binary(max_size=64), st.booleans())
def test_response_header_random(payload: bytes, aware: bool) -> None:
    try:
        header = decode_response_header(payload, aware)
    except ProtocolError:
        return
    assert 0 <= header.body_offset <= len(payload)


@_FUZZ
@given(st.binary(max_size=64))
def test_handshake_response_random(payload: bytes) -> None:
    try:
        decode_handshake_response(payload)
    except ProtocolError:
        pass


def test_http_answer_is_not_a_handshake() -> None:
    with pytest.raises(ProtocolError):
        decode_handshake_response(b"TTP/1.1 400 Bad Request\r\n\r\n")


def test_atheris_finds_node_details_with_addresses_that_are_not_strings() -> None:
    """A crash a `make fuzz` session found (2026-11-25): node details whose address
    collection is a byte raised TypeError; now a ProtocolError naming the field."""
    import base64

    from tensorflow_ignite.protocol import fuzz_targets

    data = base64.b64decode("CRgBAAAAZQAAAAABigEAMAdlARgDAHoAZWVlZWVlZWVlZWVlZWVlZWVlZWVlZWVlZWVlZWVlZQAAMgdlAWUBBHRl"
                            "AQR0AP8A")
    with pytest.raises(ProtocolError, match="node addresses: expected a collection of strings"):
        fuzz_targets.run_target(data)
