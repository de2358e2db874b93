"""Frames, the handshake, request and response headers and server errors of Ignite 3's protocol.

Pure functions over bytes (no sockets): the connection
(:mod:`tensorflow_ignite.ignite3.connection`) sends what these build and hands
them what it receives, and the unit tests feed them golden bytes.

* A frame is a 4-byte big-endian length and that many bytes of MsgPack values.
* Handshake: the client sends ``IGNI`` then a frame (version major, minor,
  patch, client type, feature bitmask as binary, extensions as a count then
  key/value strings -- user name and password go there); the server answers
  ``IGNI`` then a frame (version, nil or an error, idle timeout, node id and
  name, cluster ids, cluster name, observable timestamp, the cluster's version,
  its feature bitmask, extensions).
* Request: op code, request id, the op's values.  Response: request id, flags,
  the new partition assignment's time when flag 1 is set, the observable
  timestamp, an error when flag 4 is set, then the op's values.
* Error: trace id (UUID), code (``group << 16 | number``), Java class name,
  message, stack trace (nil unless the server sends traces), extensions.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from ...errors import (
    AuthenticationError,
    HandshakeError,
    Ignite3ServerError,
    Ignite3TransactionConflictError,
    ProtocolError,
    ReplicaUnavailableError,
    SqlError,
    TableNotFoundError,
)
from ...protocol.receive import BIG_ENDIAN_LENGTH
from .codes import (
    CLIENT_TYPE_GENERAL,
    MAGIC,
    PROTOCOL_VERSION,
    ErrorCode,
    ErrorGroup,
    ResponseFlag,
    error_group,
    error_name,
)
from .msgpack_io import Reader, Writer

__all__ = [
    "LENGTH",
    "frame",
    "handshake_request",
    "Handshake",
    "parse_handshake",
    "request",
    "ResponseHeader",
    "parse_response",
    "ServerErrorInfo",
    "read_error",
    "error_class",
    "server_error",
]

#: The frame length prefix: 4 bytes, big-endian (frames are split by the one
#: :class:`~tensorflow_ignite.protocol.receive.FrameReader`, given this prefix).
LENGTH = BIG_ENDIAN_LENGTH


def frame(body: bytes) -> bytes:
    """``body`` with its length prefix."""
    return LENGTH.pack(len(body)) + body


def handshake_request(username: str | None = None, password: str | None = None, *, features: bytes = b"") -> bytes:
    """``IGNI`` and the handshake frame; with ``username`` basic authentication's extensions."""
    w = Writer().values(*PROTOCOL_VERSION, CLIENT_TYPE_GENERAL, features)
    if username is not None:
        w.values(3, "authn-type", "basic", "authn-identity", username, "authn-secret", password or "")
    else:
        w.value(0)
    return MAGIC + frame(w.bytes())


@dataclass(frozen=True)
class Handshake:
    """What a node says about itself when it accepts a connection."""

    version: tuple[int, int, int]
    idle_timeout_ms: int
    node_id: uuid.UUID
    node_name: str
    cluster_ids: tuple[uuid.UUID, ...]
    cluster_name: str
    observable_timestamp: int
    server_version: str
    features: bytes
    extensions: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class ServerErrorInfo:
    """An error a node sent: its code, Java class, message and trace id."""

    code: int
    class_name: str
    message: str | None
    trace_id: uuid.UUID
    stack_trace: str | None = None
    extensions: dict[str, object] = field(default_factory=dict)

    @property
    def code_name(self) -> str:
        return error_name(self.code)

    def describe(self) -> str:
        text = self.message or self.class_name
        return f"{text} ({self.code_name}, trace id {self.trace_id})"


def read_error(r: Reader) -> ServerErrorInfo:
    """The error values of a response or a handshake answer."""
    trace_id = r.uuid()
    code = r.int()
    class_name = r.str()
    message = r.str_or_none()
    stack = r.str_or_none()
    extensions: dict[str, object] = {}
    count = r.int_or_none() or 0
    for _ in range(count):
        key = r.str()
        extensions[key] = r.value()
    return ServerErrorInfo(code, class_name, message, trace_id, stack, extensions)


def parse_handshake(body: bytes | bytearray | memoryview, *, address: str = "") -> Handshake:
    """The node's handshake frame body (after ``IGNI`` and the length prefix)."""
    r = Reader(body, "handshake response")
    version = (r.int(), r.int(), r.int())
    if not r.is_nil():
        err = read_error(r)
        cls = AuthenticationError if error_group(err.code) == ErrorGroup.AUTHENTICATION else HandshakeError
        what = "rejected the user name or password" if cls is AuthenticationError else "rejected the handshake"
        raise cls(f"Ignite 3 node {address or '?'} {what}: {err.describe()}", address=address or None)
    idle = r.int()
    node_id = r.uuid()
    node_name = r.str()
    n_ids = r.int()
    if n_ids <= 0 or n_ids > 1024:
        raise ProtocolError(f"handshake response: {n_ids} cluster ids")
    cluster_ids = tuple(r.uuid() for _ in range(n_ids))
    cluster_name = r.str()
    observable = r.int()
    major, minor, maintenance = r.int(), r.int(), r.int()
    patch = r.int_or_none()
    pre_release = r.str_or_none()
    server_version = (
        f"{major}.{minor}.{maintenance}" + (f".{patch}" if patch else "") + (f"-{pre_release}" if pre_release else "")
    )
    features = r.bin()
    extensions = {}
    for _ in range(r.int()):
        key = r.str()
        extensions[key] = r.value()
    return Handshake(
        version, idle, node_id, node_name, cluster_ids, cluster_name, observable, server_version, features, extensions
    )


def request(op: int, request_id: int, body: bytes = b"") -> bytes:
    """One request frame: op code, request id, then ``body`` (the op's MsgPack values)."""
    return frame(Writer().values(op, request_id).bytes() + body)


@dataclass(frozen=True)
class ResponseHeader:
    """The values before a response's own: id, flags, timestamps, the error if it failed."""

    request_id: int
    flags: int
    assignment_time: int | None
    observable_timestamp: int
    error: ServerErrorInfo | None

    @property
    def assignment_changed(self) -> bool:
        return bool(self.flags & ResponseFlag.PARTITION_ASSIGNMENT_CHANGED)

    @property
    def is_notification(self) -> bool:
        return bool(self.flags & ResponseFlag.NOTIFICATION)


def parse_response(body: bytes | bytearray | memoryview) -> tuple[ResponseHeader, Reader]:
    """A response frame's header, and a reader positioned at the op's values."""
    r = Reader(body, "response")
    request_id = r.int()
    flags = r.int()
    assignment = r.int() if flags & ResponseFlag.PARTITION_ASSIGNMENT_CHANGED else None
    observable = r.int()
    error = read_error(r) if flags & ResponseFlag.ERROR else None
    return ResponseHeader(request_id, flags, assignment, observable, error), r


# ------------------------------------------------------------------ typed errors
#: Error codes with a class of their own (the rest of group SQL is SqlError).
_BY_CODE: dict[int, type[Ignite3ServerError]] = {
    ErrorCode.TABLE_NOT_FOUND: TableNotFoundError,
    ErrorCode.SCHEMA_NOT_FOUND: TableNotFoundError,
    ErrorCode.ACQUIRE_LOCK: Ignite3TransactionConflictError,
    ErrorCode.ACQUIRE_LOCK_TIMEOUT: Ignite3TransactionConflictError,
    # Rolled back by the node when its timeout passed: as Ignite 2's TX_NOT_FOUND, running it again may succeed.
    ErrorCode.TX_ALREADY_FINISHED_WITH_TIMEOUT: Ignite3TransactionConflictError,
}


def error_class(code: int, message: str | None = None) -> type[Ignite3ServerError]:
    """The exception class of an Ignite 3 error code."""
    cls = _BY_CODE.get(code)
    if cls is not None:
        return cls
    if error_group(code) in (ErrorGroup.REP, ErrorGroup.PLACEMENTDRIVER):
        return ReplicaUnavailableError
    if error_group(code) == ErrorGroup.SQL:
        # SQL's validator names a missing table "Object 'X' not found".
        if message and "Object '" in message and "not found" in message:
            return TableNotFoundError
        return SqlError
    return Ignite3ServerError


def server_error(info: ServerErrorInfo, op: int | None, what: str) -> Ignite3ServerError:
    """The typed exception of ``info`` for ``what`` (the request, in words)."""
    cls = error_class(info.code, info.message)
    return cls(
        f"{what} failed on the Ignite 3 node: {info.describe()}",
        status=info.code,
        op=op,
        code_name=info.code_name,
        class_name=info.class_name,
        trace_id=info.trace_id,
        extensions=info.extensions,
    )
