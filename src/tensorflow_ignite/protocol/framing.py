"""Frames, the handshake and message headers -- no I/O.

Every message on the socket is ``int length`` followed by ``length`` bytes.

* Handshake request: ``byte 1 (HANDSHAKE), short major, short minor, short
  patch, byte 2 (THIN_CLIENT)``, then for 1.7.0+ the feature mask as a typed
  ``byte[]``, then (if the client advertises USER_ATTRIBUTES) a typed map of
  user attributes or null, then (1.1.0+, only when a user name is given) typed
  user name and password strings (``TcpClientChannel.handshakeReq``).
* Handshake response: ``bool success``; on success (1.7.0+) the server's
  feature mask as a typed ``byte[]`` and (1.4.0+) its node id as a typed UUID;
  on failure ``short major, short minor, short patch`` of the server's
  version, a typed error string and, if bytes remain, ``int status``.
* Request: ``short op, long request id``, then the op's body.
* Response (1.4.0+): ``long request id, short flags``; flag 2 (topology
  changed) adds ``long major, int minor`` *first*, flag 4 (notification) adds
  ``short op``, flag 1 (error) adds ``int status`` and a typed string -- in
  that order (``ClientResponse.encode``, ``TcpClientChannel.processNextMessage``).
  Before 1.4.0: ``long request id, int status`` (+ string when not 0).

The feature mask is ``java.util.BitSet.toByteArray()``: bit ``n`` is bit
``n % 8`` of byte ``n // 8``, trailing zero bytes dropped.
"""

from __future__ import annotations

import struct
import uuid as _uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from tensorflow_ignite.errors import (
    AuthenticationError,
    HandshakeError,
    ServerError,
    lookup,
)
from tensorflow_ignite.protocol.buffer import ByteReader, ByteWriter
from tensorflow_ignite.protocol.codes import (
    HANDSHAKE_REQUEST_CODE,
    STATUS_NAMES,
    SUPPORTED_VERSIONS,
    THIN_CLIENT_CODE,
    V1_1_0,
    V1_4_0,
    V1_7_0,
    ClientStatus,
    Feature,
    MapKind,
    ProtocolVersion,
    ResponseFlag,
    TypeCode,
)

__all__ = [
    "LENGTH_PREFIX",
    "REQUEST_HEADER",
    "DEFAULT_FEATURES",
    "features_to_bytes",
    "features_from_bytes",
    "encode_handshake",
    "HandshakeResponse",
    "decode_handshake_response",
    "start_request",
    "finish_request",
    "encode_request",
    "REQUEST_ID_OFFSET",
    "reusable_frame",
    "ResponseHeader",
    "decode_response_header",
    "server_error",
]

LENGTH_PREFIX = struct.Struct("<i")
#: ``int length, short op, long request id`` (the length counts what follows it).
REQUEST_HEADER = struct.Struct("<ihq")

#: Features this protocol package implements (wire layouts that depend on them included).
DEFAULT_FEATURES: frozenset[Feature] = frozenset(
    {
        Feature.USER_ATTRIBUTES,
        Feature.EXECUTE_TASK_BY_NAME,
        Feature.CLUSTER_STATES,
        Feature.CLUSTER_GROUP_GET_NODES_ENDPOINTS,
        Feature.CLUSTER_GROUPS,
        Feature.SERVICE_INVOKE,
        Feature.DEFAULT_QRY_TIMEOUT,
        Feature.QRY_PARTITIONS_BATCH_SIZE,
        Feature.BINARY_CONFIGURATION,
        Feature.GET_SERVICE_DESCRIPTORS,
        Feature.SERVICE_INVOKE_CALLCTX,
        Feature.HEARTBEAT,
        Feature.ALL_AFFINITY_MAPPINGS,
    }
)


def features_to_bytes(features: Iterable[int]) -> bytes:
    """Encode feature bit numbers like ``BitSet.toByteArray`` (minimal length)."""
    bits = 0
    for f in features:
        if int(f) < 0:
            raise ValueError(f"negative feature id {f}")
        bits |= 1 << int(f)
    return bits.to_bytes((bits.bit_length() + 7) // 8, "little")


def features_from_bytes(data: bytes | bytearray | memoryview | None) -> frozenset[int]:
    """Decode a feature mask into the set of bit numbers that are set."""
    if not data:
        return frozenset()
    bits = int.from_bytes(bytes(data), "little")
    out = set()
    n = 0
    while bits:
        if bits & 1:
            out.add(n)
        bits >>= 1
        n += 1
    return frozenset(out)


def encode_handshake(
    version: ProtocolVersion = V1_7_0,
    *,
    features: Iterable[int] = DEFAULT_FEATURES,
    username: str | None = None,
    password: str | None = None,
    user_attributes: Mapping[str, str] | None = None,
) -> bytes:
    """The complete handshake frame (length prefix included) for ``version``."""
    version = ProtocolVersion(*version)
    if version not in SUPPORTED_VERSIONS:
        raise ValueError(f"protocol version {version} is not one Ignite 2.x accepts: {SUPPORTED_VERSIONS}")
    features = frozenset(int(f) for f in features)
    w = ByteWriter()
    w.reserve_i32()
    w.u8(HANDSHAKE_REQUEST_CODE)
    w.i16(version.major)
    w.i16(version.minor)
    w.i16(version.patch)
    w.u8(THIN_CLIENT_CODE)
    if version >= V1_7_0:
        w.typed_byte_array(features_to_bytes(features))
        if Feature.USER_ATTRIBUTES in features:
            _write_string_map(w, user_attributes)
    elif user_attributes:
        raise ValueError("user attributes need protocol 1.7.0 (USER_ATTRIBUTES feature)")
    if username:
        if version < V1_1_0:
            raise ValueError("authentication needs protocol 1.1.0 or newer")
        w.typed_string(username)
        w.typed_string(password)
    w.patch_i32(0, len(w.buf) - 4)
    return bytes(w.buf)


def _write_string_map(w: ByteWriter, attrs: Mapping[str, str] | None) -> None:
    """A typed ``HashMap<String, String>`` (or null), as ``BinaryWriterExImpl.writeMap``."""
    if attrs is None:
        w.u8(TypeCode.NULL)
        return
    w.u8(TypeCode.MAP)
    w.i32(len(attrs))
    w.u8(MapKind.HASH_MAP)
    for k, v in attrs.items():
        w.typed_string(str(k))
        w.typed_string(None if v is None else str(v))


@dataclass(frozen=True, slots=True)
class HandshakeResponse:
    """The decoded handshake answer.

    On success ``features`` is the server's feature set and ``node_id`` the
    server node (1.4.0+).  On failure ``server_version`` is the version the
    server proposes, ``message`` its reason and ``status`` the code
    (``ClientStatus.AUTH_FAILED`` for bad credentials).
    """

    success: bool
    version: ProtocolVersion
    features: frozenset[int] = frozenset()
    node_id: _uuid.UUID | None = None
    server_version: ProtocolVersion | None = None
    message: str | None = None
    status: int | None = None

    def negotiated(self, client_features: Iterable[int] = DEFAULT_FEATURES) -> frozenset[int]:
        """Features both sides support -- what request layouts must follow."""
        return frozenset(int(f) for f in client_features) & self.features

    def should_retry_with(self) -> ProtocolVersion | None:
        """The version to retry with after a version mismatch, or None to give up."""
        if self.success or self.status == ClientStatus.AUTH_FAILED or self.server_version is None:
            return None
        if self.server_version == self.version or self.server_version not in SUPPORTED_VERSIONS:
            return None
        return self.server_version

    def raise_for_failure(self, address: str | None = None) -> None:
        """Raise ``AuthenticationError``/``HandshakeError`` if the handshake failed."""
        if self.success:
            return
        detail = self.message or "no reason given"
        if self.status == ClientStatus.AUTH_FAILED:
            raise AuthenticationError(f"Ignite rejected the user name or password: {detail}", address=address)
        raise HandshakeError(
            f"Ignite rejected the thin-client handshake for protocol {self.version} "
            f"(server proposes {self.server_version}, status {self.status}): {detail}",
            address=address,
        )


def decode_handshake_response(
    payload: bytes | bytearray | memoryview, version: ProtocolVersion = V1_7_0
) -> HandshakeResponse:
    """Decode a handshake response ``payload`` (the frame without its length prefix)."""
    version = ProtocolVersion(*version)
    r = ByteReader(payload)
    if r.bool("handshake success flag"):
        features: frozenset[int] = frozenset()
        node_id = None
        if version >= V1_7_0:
            features = features_from_bytes(r.typed_byte_array("server feature mask"))
        if version >= V1_4_0:
            node_id = r.typed_uuid("server node id")
        return HandshakeResponse(True, version, features, node_id)
    server_version = ProtocolVersion(r.i16("server major"), r.i16("server minor"), r.i16("server patch"))
    message = r.typed_string("handshake error message")
    status = r.i32("handshake status") if r.remaining >= 4 else int(ClientStatus.FAILED)
    return HandshakeResponse(False, version, server_version=server_version, message=message, status=status)


# ------------------------------------------------------------------- requests
def start_request(op: int, request_id: int) -> ByteWriter:
    """A writer holding a request header whose length :func:`finish_request` fills in."""
    w = ByteWriter()
    w.buf += REQUEST_HEADER.pack(0, op, request_id)
    return w


def finish_request(w: ByteWriter) -> bytes:
    """Patch the length prefix and return the frame."""
    w.patch_i32(0, len(w.buf) - 4)
    return bytes(w.buf)


def encode_request(op: int, request_id: int, body: bytes | bytearray | memoryview = b"") -> bytes:
    """A complete request frame from an already encoded body."""
    return REQUEST_HEADER.pack(10 + len(body), op, request_id) + bytes(body)


#: Where the request id sits in a request frame: after the int length and the short op code.
REQUEST_ID_OFFSET = 6
_REQUEST_ID = struct.Struct("<q")

FrameT = TypeVar("FrameT", bytearray, memoryview)


def reusable_frame(frame: FrameT) -> Callable[[int], FrameT]:
    """The request encoder (id -> frame) of a frame built once, with request id 0.

    For frames that are costly to build (a large ``put_all``, a file block): each
    send, a retry included, writes its own request id into the same memory.
    """

    def encode(request_id: int) -> FrameT:
        _REQUEST_ID.pack_into(frame, REQUEST_ID_OFFSET, request_id)
        return frame

    return encode


# ------------------------------------------------------------------- responses
def server_error(status: int, message: str | None, op: int | None = None) -> ServerError:
    """The typed exception for a failed response status."""
    name = STATUS_NAMES.get(status, "UNKNOWN")
    text = f"Ignite error {status} ({name})"
    if op is not None:
        text += f" for op {op}"
    text += f": {message or 'no message'}"
    return lookup(status, message)(text, status=status, op=op)


@dataclass(frozen=True, slots=True)
class ResponseHeader:
    """A decoded response header; ``body_offset`` is where the op's payload starts."""

    request_id: int
    flags: int
    status: int
    message: str | None
    topology_version: tuple[int, int] | None
    notification_op: int | None
    body_offset: int

    @property
    def ok(self) -> bool:
        return self.status == 0

    @property
    def is_notification(self) -> bool:
        return self.notification_op is not None

    def raise_for_status(self, op: int | None = None) -> None:
        """Raise the matching :class:`ServerError` when the status is not success."""
        if self.status != 0:
            raise server_error(self.status, self.message, op)


def decode_response_header(payload: bytes | bytearray | memoryview, partition_awareness: bool = True) -> ResponseHeader:
    """Decode the header of a response ``payload`` (frame without length prefix).

    ``partition_awareness`` is True for protocol 1.4.0+ (the flags layout).
    """
    r = ByteReader(payload)
    request_id = r.i64("response request id")
    flags = 0
    status = 0
    message = None
    topology = None
    notification = None
    if partition_awareness:
        flags = r.i16("response flags") & 0xFFFF
        if flags & ResponseFlag.AFFINITY_TOPOLOGY_CHANGED:
            topology = (r.i64("topology major version"), r.i32("topology minor version"))
        if flags & ResponseFlag.NOTIFICATION:
            notification = r.i16("notification op code")
        if flags & ResponseFlag.ERROR:
            status = r.i32("response status")
            message = r.typed_string("error message")
    else:
        status = r.i32("response status")
        if status != 0:
            message = r.typed_string("error message")
    return ResponseHeader(request_id, flags, status, message, topology, notification, r.pos)


# -------------------------------------------------------------- frame assembly
