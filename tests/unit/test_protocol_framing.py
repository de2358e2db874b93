"""Handshake, headers and frame assembly against hand-derived bytes."""

from __future__ import annotations

import struct
import uuid

import pytest

from tensorflow_ignite.errors import (
    AuthenticationError,
    CacheNotFoundError,
    HandshakeError,
    ProtocolError,
    ServerError,
)
from tensorflow_ignite.protocol.codes import V1_0_0, V1_3_0, V1_4_0, V1_7_0, Feature, ProtocolVersion
from tensorflow_ignite.protocol.receive import FrameReader
from tensorflow_ignite.protocol.framing import (
    DEFAULT_FEATURES,
    decode_handshake_response,
    decode_response_header,
    encode_handshake,
    encode_request,
    features_from_bytes,
    features_to_bytes,
    server_error,
)


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", "").replace("\n", ""))


NODE = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
# msb 0x0011223344556677 and lsb 0x8899aabbccddeeff, each little-endian
NODE_WIRE = "77665544 33221100 ffeeddcc bbaa9988"


# ------------------------------------------------------------------ features
def test_feature_mask_is_java_bitset_to_byte_array() -> None:
    assert features_to_bytes([]) == b""
    assert features_to_bytes([0]) == b"\x01"
    assert features_to_bytes([7]) == b"\x80"
    assert features_to_bytes([8]) == b"\x00\x01"
    assert features_to_bytes([0, 18]) == b"\x01\x00\x04"
    # DEFAULT_FEATURES = bits 0-11 and 13
    assert features_to_bytes(DEFAULT_FEATURES) == h("ff 2f")
    assert features_from_bytes(h("ff 2f")) == frozenset(DEFAULT_FEATURES)
    assert features_from_bytes(None) == frozenset()
    assert features_from_bytes(b"\x00\x00\x04") == {18}


# ------------------------------------------------------------------ handshake
def test_handshake_1_7_0_default() -> None:
    frame = encode_handshake()
    assert frame == h(
        "10000000"  # length 16
        "01"  # HANDSHAKE
        "0100 0700 0000"  # 1.7.0
        "02"  # THIN_CLIENT
        "0c 02000000 ff2f"  # features as typed byte[]
        "65"  # user attributes: null (USER_ATTRIBUTES advertised)
    )


def test_handshake_with_credentials_and_attributes() -> None:
    frame = encode_handshake(
        V1_7_0, features=[Feature.USER_ATTRIBUTES], username="ignite", password="pw",
        user_attributes={"k": "v"},
    )
    body = (
        "01 0100 0700 0000 02"
        "0c 01000000 01"
        "19 01000000 01 09 01000000 6b 09 01000000 76"  # HashMap {"k": "v"}
        "09 06000000 69676e697465"  # "ignite"
        "09 02000000 7077"  # "pw"
    )
    assert frame == struct.pack("<i", len(h(body))) + h(body)


def test_handshake_without_user_attributes_feature_omits_the_map() -> None:
    frame = encode_handshake(V1_7_0, features=[Feature.HEARTBEAT])
    assert frame == h("0f000000 01 0100 0700 0000 02 0c 02000000 0008")


def test_handshake_old_versions() -> None:
    assert encode_handshake(V1_0_0) == h("08000000 01 0100 0000 0000 02")
    assert encode_handshake(V1_3_0, username="u", password="p") == h(
        "14000000 01 0100 0300 0000 02 09 01000000 75 09 01000000 70"
    )
    with pytest.raises(ValueError):
        encode_handshake(V1_0_0, username="u", password="p")
    with pytest.raises(ValueError):
        encode_handshake(ProtocolVersion(1, 8, 0))
    with pytest.raises(ValueError):
        encode_handshake(V1_4_0, user_attributes={"a": "b"})


def test_handshake_response_success() -> None:
    resp = decode_handshake_response(h("01 0c 02000000 ff2f 0a" + NODE_WIRE), V1_7_0)
    assert resp.success
    assert resp.features == frozenset(DEFAULT_FEATURES)
    assert resp.node_id == NODE
    assert resp.negotiated({Feature.HEARTBEAT, Feature.TX_AWARE_QUERIES}) == {Feature.HEARTBEAT}
    resp.raise_for_failure()
    # 1.4.0: node id but no features; 1.3.0: nothing
    resp14 = decode_handshake_response(h("01 0a" + NODE_WIRE), V1_4_0)
    assert resp14.node_id == NODE and resp14.features == frozenset()
    assert decode_handshake_response(h("01"), V1_3_0).success


def test_handshake_response_failures() -> None:
    resp = decode_handshake_response(h("00 0100 0600 0000 09 03000000 626164 01000000"), V1_7_0)
    assert not resp.success
    assert resp.server_version == ProtocolVersion(1, 6, 0)
    assert resp.message == "bad"
    assert resp.status == 1
    assert resp.should_retry_with() == ProtocolVersion(1, 6, 0)
    with pytest.raises(HandshakeError, match="bad"):
        resp.raise_for_failure()

    auth = decode_handshake_response(h("00 0100 0700 0000 09 01000000 78 d0070000"), V1_7_0)
    assert auth.status == 2000 and auth.should_retry_with() is None
    with pytest.raises(AuthenticationError):
        auth.raise_for_failure("host:10800")

    # old servers stop after the message: status defaults to FAILED
    legacy = decode_handshake_response(h("00 0100 0000 0000 65"), V1_7_0)
    assert legacy.status == 1 and legacy.message is None


@pytest.mark.parametrize("payload", ["", "01 0c 02000000 ff", "01 0c ffffff7f", "00 0100", "01 0c 02000000 ff2f 0a 0011"])
def test_truncated_handshake_responses(payload: str) -> None:
    with pytest.raises(ProtocolError):
        decode_handshake_response(h(payload), V1_7_0)


# ------------------------------------------------------------------ headers
def test_request_frame() -> None:
    assert encode_request(1000, 1, b"\xaa") == h("0b000000 e803 0100000000000000 aa")


def test_response_header_ok() -> None:
    hdr = decode_response_header(h("0700000000000000 0000 aabb"))
    assert hdr.request_id == 7 and hdr.ok and hdr.body_offset == 10
    assert hdr.topology_version is None and not hdr.is_notification
    hdr.raise_for_status()


def test_response_header_error() -> None:
    hdr = decode_response_header(h("0800000000000000 0100 e8030000 09 05000000 6e6f636163"))
    assert hdr.status == 1000 and hdr.message == "nocac"
    with pytest.raises(CacheNotFoundError) as err:
        hdr.raise_for_status(1000)
    assert err.value.status == 1000 and err.value.op == 1000


def test_response_header_topology_comes_before_the_error() -> None:
    payload = h("0900000000000000 0300 0500000000000000 02000000 01000000 09 01000000 78")
    hdr = decode_response_header(payload)
    assert hdr.topology_version == (5, 2)
    assert hdr.status == 1 and hdr.message == "x"
    assert hdr.body_offset == len(payload)
    with pytest.raises(ServerError):
        hdr.raise_for_status()


def test_response_header_notification() -> None:
    hdr = decode_response_header(h("0a00000000000000 0400 7117 03 05000000"))
    assert hdr.notification_op == 6001 and hdr.request_id == 10 and hdr.body_offset == 12


def test_response_header_before_1_4() -> None:
    assert decode_response_header(h("0100000000000000 00000000"), partition_awareness=False).ok
    hdr = decode_response_header(h("0100000000000000 02000000 09 01000000 78"), partition_awareness=False)
    assert hdr.status == 2 and hdr.message == "x"


def test_server_error_mapping() -> None:
    assert isinstance(server_error(1000, "gone"), CacheNotFoundError)
    err = server_error(1012, "denied", 1001)
    assert type(err) is ServerError and err.status == 1012 and "SECURITY_VIOLATION" in str(err)


@pytest.mark.parametrize("payload", ["", "01000000", "0100000000000000 01", "0100000000000000 0100 e803",
                                     "0100000000000000 0200 01", "0100000000000000 0100 01000000 09 ff000000"])
def test_truncated_headers(payload: str) -> None:
    with pytest.raises(ProtocolError):
        decode_response_header(h(payload))


# ------------------------------------------------------------------ frames
class _Chunks:
    """An in-memory byte source for FrameReader: ``chunk`` bytes per call, then EOFError."""

    def __init__(self, data: bytes, chunk: int = 1) -> None:
        self.data, self.chunk, self.pos = data, chunk, 0

    def __call__(self, view: memoryview) -> int:
        if self.pos >= len(self.data):
            raise EOFError
        n = min(self.chunk, len(view), len(self.data) - self.pos)
        view[:n] = self.data[self.pos:self.pos + n]
        self.pos += n
        return n


def test_frame_reader_splits_and_joins() -> None:
    stream = h("02000000 aabb 00000000 03000000 010203")
    reader = FrameReader(_Chunks(stream, 1), small_frame=16, buffer_size=16)  # byte by byte
    assert bytes(reader.read_frame()) == h("aabb")
    assert bytes(reader.read_frame()) == b""
    assert bytes(reader.read_frame()) == h("010203")
    assert reader.bytes_received == len(stream)
    with pytest.raises(EOFError):
        reader.read_frame()


def test_frame_reader_peek_take_fill_follow_one_frame() -> None:
    body = bytes(range(40))
    reader = FrameReader(_Chunks(struct.pack("<i", len(body)) + body + h("01000000 ff"), 3), small_frame=16,
                         buffer_size=32)
    assert reader.peek_length() == 40 and reader.buffered() >= 4
    assert reader.start_frame() == 40
    assert bytes(reader.peek(4)) == body[:4]
    assert bytes(reader.take(10)) == body[:10]
    rest = bytearray(30)
    reader.fill(memoryview(rest))
    assert bytes(rest) == body[10:]
    assert bytes(reader.read_frame()) == h("ff")  # the next frame is intact


def test_frame_reader_rejects_hostile_lengths() -> None:
    closed: list[bool] = []
    reader = FrameReader(_Chunks(h("ffffff7f"), 4), max_frame=1 << 20, on_corrupt=lambda: closed.append(True))
    with pytest.raises(ProtocolError, match="limit 1048576"):  # 2 GiB: refused before any allocation
        reader.read_frame()
    assert closed == [True]
    with pytest.raises(ProtocolError):
        FrameReader(_Chunks(h("ffffffff"), 4)).read_frame()  # negative