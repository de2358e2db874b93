"""Key-value requests and cache management (create, configure, destroy, partitions)."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..binary import BinaryEncoder
from ..buffer import I32, ByteWriter
from ..cache_config import CacheConfiguration, encode_cache_configuration
from ..codes import V1_7_0, Feature, Op, PeekMode, ProtocolVersion, TypeCode
from ..framing import DEFAULT_FEATURES, REQUEST_HEADER, encode_request, finish_request, start_request
from .common import CacheOptions, _enc, cache_header


# ------------------------------------------------------------------ key-value
def _key_op(
    op: int,
    request_id: int,
    cache_id: int,
    values: Sequence[tuple[Any, int | None]],
    opts: CacheOptions | None,
    encoder: BinaryEncoder | None,
) -> bytes:
    enc = _enc(encoder)
    w = start_request(op, request_id)
    cache_header(w, cache_id, opts)
    for value, code in values:
        enc.write(w, value, code)
    return finish_request(w)


def _keys_op(
    op: int,
    request_id: int,
    cache_id: int,
    keys: Iterable[Any],
    key_type: int | None,
    opts: CacheOptions | None,
    encoder: BinaryEncoder | None,
) -> bytes:
    enc = _enc(encoder)
    keys = list(keys)
    w = start_request(op, request_id)
    cache_header(w, cache_id, opts)
    w.i32(len(keys))
    for k in keys:
        enc.write(w, k, key_type)
    return finish_request(w)


class _CacheRequest:
    """Encoder of one cache operation whose requests differ from their kin only in the op code."""

    def __init__(self, op: Op, body: str) -> None:
        self.op = op
        self.__name__ = self.__qualname__ = op.name.lower()
        self.__doc__ = f"OP_{op.name} ({int(op)}): {body}."

    def __repr__(self) -> str:
        return f"<request encoder {self.__name__}>"


class KeyRequest(_CacheRequest):
    """A request about one key; called as ``(request_id, cache_id, key, *, key_type, opts, encoder)``."""

    def __call__(
        self,
        request_id: int,
        cache_id: int,
        key: Any,
        *,
        key_type: int | None = None,
        opts: CacheOptions | None = None,
        encoder: BinaryEncoder | None = None,
    ) -> bytes:
        return _key_op(self.op, request_id, cache_id, [(key, key_type)], opts, encoder)


class KeyValueRequest(_CacheRequest):
    """A request about a key and a value; called as ``(request_id, cache_id, key, value, *, ...)``."""

    def __call__(
        self,
        request_id: int,
        cache_id: int,
        key: Any,
        value: Any,
        *,
        key_type: int | None = None,
        value_type: int | None = None,
        opts: CacheOptions | None = None,
        encoder: BinaryEncoder | None = None,
    ) -> bytes:
        return _key_op(self.op, request_id, cache_id, [(key, key_type), (value, value_type)], opts, encoder)


class KeysRequest(_CacheRequest):
    """A request about a set of keys; called as ``(request_id, cache_id, keys, *, key_type, opts, encoder)``."""

    def __call__(
        self,
        request_id: int,
        cache_id: int,
        keys: Iterable[Any],
        *,
        key_type: int | None = None,
        opts: CacheOptions | None = None,
        encoder: BinaryEncoder | None = None,
    ) -> bytes:
        return _keys_op(self.op, request_id, cache_id, keys, key_type, opts, encoder)


# The requests of one shape differ only in their op code and the answer the server sends.
cache_get = KeyRequest(Op.CACHE_GET, "key; answer: value or null")
cache_get_and_remove = KeyRequest(Op.CACHE_GET_AND_REMOVE, "key; answer: previous value")
cache_contains_key = KeyRequest(Op.CACHE_CONTAINS_KEY, "key; answer: bool")
cache_clear_key = KeyRequest(Op.CACHE_CLEAR_KEY, "key; empty answer")
cache_remove_key = KeyRequest(Op.CACHE_REMOVE_KEY, "key; answer: bool")

cache_put = KeyValueRequest(Op.CACHE_PUT, "key, value; empty answer")
cache_put_if_absent = KeyValueRequest(Op.CACHE_PUT_IF_ABSENT, "key, value; answer: bool")
cache_get_and_put = KeyValueRequest(Op.CACHE_GET_AND_PUT, "key, value; answer: previous value")
cache_get_and_replace = KeyValueRequest(Op.CACHE_GET_AND_REPLACE, "key, value; answer: previous value")
cache_get_and_put_if_absent = KeyValueRequest(Op.CACHE_GET_AND_PUT_IF_ABSENT, "key, value; answer: previous value")
cache_replace = KeyValueRequest(Op.CACHE_REPLACE, "key, value; answer: bool")
cache_remove_if_equals = KeyValueRequest(Op.CACHE_REMOVE_IF_EQUALS, "key, value; answer: bool")

cache_get_all = KeysRequest(Op.CACHE_GET_ALL, "int count, keys; answer: int count, (key, value) pairs")
cache_contains_keys = KeysRequest(Op.CACHE_CONTAINS_KEYS, "int count, keys; answer: bool")
cache_clear_keys = KeysRequest(Op.CACHE_CLEAR_KEYS, "int count, keys; empty answer")
cache_remove_keys = KeysRequest(Op.CACHE_REMOVE_KEYS, "int count, keys; empty answer")


def cache_replace_if_equals(
    request_id: int,
    cache_id: int,
    key: Any,
    old_value: Any,
    new_value: Any,
    *,
    key_type: int | None = None,
    value_type: int | None = None,
    opts: CacheOptions | None = None,
    encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_CACHE_REPLACE_IF_EQUALS (1010): key, old value, new value; answer: bool."""
    return _key_op(
        Op.CACHE_REPLACE_IF_EQUALS,
        request_id,
        cache_id,
        [(key, key_type), (old_value, value_type), (new_value, value_type)],
        opts,
        encoder,
    )


def cache_put_all(
    request_id: int,
    cache_id: int,
    entries: Mapping[Any, Any] | Iterable[tuple[Any, Any]],
    *,
    key_type: int | None = None,
    value_type: int | None = None,
    opts: CacheOptions | None = None,
    encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_CACHE_PUT_ALL (1004): int count, (key, value) pairs; empty answer."""
    enc = _enc(encoder)
    pairs = list(entries.items()) if isinstance(entries, Mapping) else list(entries)
    w = start_request(Op.CACHE_PUT_ALL, request_id)
    cache_header(w, cache_id, opts)
    w.i32(len(pairs))
    for k, v in pairs:
        enc.write(w, k, key_type)
        enc.write(w, v, value_type)
    return finish_request(w)


#: ``int cache id, byte flags`` of a plain cache request ...
_CACHE_HEAD = struct.Struct("<ib")
#: ... and of a put-all, followed by ``int count``.
_PUT_ALL_HEAD = struct.Struct("<ibi")
_STRING_HEAD = struct.Struct("<Bi")  # type code, length: a String or a byte[] header


def cache_put_all_encoded(cache_id: int, rows: int, entries: bytes | bytearray | memoryview) -> bytearray:
    """A CACHE_PUT_ALL frame (request id 0, see :func:`~.framing.reusable_frame`) around
    ``rows`` key/value pairs already encoded back to back (the writer's bulk encoder)."""
    head = REQUEST_HEADER.size + _PUT_ALL_HEAD.size
    frame = bytearray(head + len(entries))
    REQUEST_HEADER.pack_into(frame, 0, len(frame) - 4, Op.CACHE_PUT_ALL, 0)
    _PUT_ALL_HEAD.pack_into(frame, REQUEST_HEADER.size, cache_id, 0, rows)
    frame[head:] = entries
    return frame


def cache_put_bytes_head_into(buffer: bytearray, end: int, cache_id: int, key: str, length: int) -> int:
    """Write the head of a CACHE_PUT of a String key and a ``length``-byte ``byte[]`` value so
    that it ends at ``buffer[end]``; returns where it starts.

    The value's bytes are not part of it: they follow in the buffer (a block read into
    place after the head's room) or are sent from the caller's memory
    (``Connection.send_parts``), so a large value is never copied into a frame.  The
    request id is 0 (:func:`~.framing.reusable_frame`).
    """
    kb = key.encode()
    head_len = REQUEST_HEADER.size + _CACHE_HEAD.size + _STRING_HEAD.size + len(kb) + _STRING_HEAD.size
    start = end - head_len
    if start < 0:
        raise ValueError(f"key {key!r} too long for the {end} bytes of room before the value")
    p = start
    REQUEST_HEADER.pack_into(buffer, p, head_len - 4 + length, Op.CACHE_PUT, 0)
    p += REQUEST_HEADER.size
    _CACHE_HEAD.pack_into(buffer, p, cache_id, 0)
    p += _CACHE_HEAD.size
    _STRING_HEAD.pack_into(buffer, p, TypeCode.STRING, len(kb))
    p += _STRING_HEAD.size
    buffer[p : p + len(kb)] = kb
    p += len(kb)
    _STRING_HEAD.pack_into(buffer, p, TypeCode.BYTE_ARR, length)
    return start


def cache_clear(request_id: int, cache_id: int, *, opts: CacheOptions | None = None) -> bytes:
    """OP_CACHE_CLEAR (1013): empty body after the cache header."""
    return _key_op(Op.CACHE_CLEAR, request_id, cache_id, (), opts, None)


def cache_remove_all(request_id: int, cache_id: int, *, opts: CacheOptions | None = None) -> bytes:
    """OP_CACHE_REMOVE_ALL (1019): empty body after the cache header."""
    return _key_op(Op.CACHE_REMOVE_ALL, request_id, cache_id, (), opts, None)


def cache_get_size(
    request_id: int, cache_id: int, peek_modes: Iterable[int] = (), *, opts: CacheOptions | None = None
) -> bytes:
    """OP_CACHE_GET_SIZE (1020): int count, byte peek modes (none = ALL); answer: long."""
    modes = [int(m) for m in peek_modes]
    w = start_request(Op.CACHE_GET_SIZE, request_id)
    cache_header(w, cache_id, opts)
    _peek_modes(w, modes)
    return finish_request(w)


def _peek_modes(w: ByteWriter, modes: Sequence[int]) -> None:
    """``int count, byte modes``: the peek modes of a size or local-peek request."""
    w.i32(len(modes))
    for m in modes:
        w.u8(m)


def cache_local_peek(
    request_id: int,
    cache_id: int,
    key: Any,
    peek_modes: Iterable[int] = (PeekMode.ALL,),
    *,
    key_type: int | None = None,
    opts: CacheOptions | None = None,
    encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_CACHE_LOCAL_PEEK (1021): key, int count, byte peek modes; answer: value."""
    modes = [int(m) for m in peek_modes]
    w = start_request(Op.CACHE_LOCAL_PEEK, request_id)
    cache_header(w, cache_id, opts)
    _enc(encoder).write(w, key, key_type)
    _peek_modes(w, modes)
    return finish_request(w)


# ------------------------------------------------------------ cache management
def cache_get_names(request_id: int) -> bytes:
    """OP_CACHE_GET_NAMES (1050): empty body; answer: int count, strings."""
    return encode_request(Op.CACHE_GET_NAMES, request_id)


def cache_create_with_name(request_id: int, name: str) -> bytes:
    """OP_CACHE_CREATE_WITH_NAME (1051): typed string name."""
    return _named(Op.CACHE_CREATE_WITH_NAME, request_id, name)


def cache_get_or_create_with_name(request_id: int, name: str) -> bytes:
    """OP_CACHE_GET_OR_CREATE_WITH_NAME (1052): typed string name."""
    return _named(Op.CACHE_GET_OR_CREATE_WITH_NAME, request_id, name)


def _named(op: int, request_id: int, name: str) -> bytes:
    w = start_request(op, request_id)
    w.typed_string(name)
    return finish_request(w)


def cache_create_with_configuration(
    request_id: int, config: CacheConfiguration, version: ProtocolVersion = V1_7_0
) -> bytes:
    """OP_CACHE_CREATE_WITH_CONFIGURATION (1053): property list (see ``cache_config``)."""
    return _configured(Op.CACHE_CREATE_WITH_CONFIGURATION, request_id, config, version)


def cache_get_or_create_with_configuration(
    request_id: int, config: CacheConfiguration, version: ProtocolVersion = V1_7_0
) -> bytes:
    """OP_CACHE_GET_OR_CREATE_WITH_CONFIGURATION (1054): property list."""
    return _configured(Op.CACHE_GET_OR_CREATE_WITH_CONFIGURATION, request_id, config, version)


def _configured(op: int, request_id: int, config: CacheConfiguration, version: ProtocolVersion) -> bytes:
    w = start_request(op, request_id)
    encode_cache_configuration(w, config, version)
    return finish_request(w)


def cache_get_configuration(request_id: int, cache_id: int) -> bytes:
    """OP_CACHE_GET_CONFIGURATION (1055): int cache id, byte flags."""
    w = start_request(Op.CACHE_GET_CONFIGURATION, request_id)
    cache_header(w, cache_id, None, data_request=False)
    return finish_request(w)


def cache_destroy(request_id: int, cache_id: int) -> bytes:
    """OP_CACHE_DESTROY (1056): int cache id only (no flags byte)."""
    return encode_request(Op.CACHE_DESTROY, request_id, I32.pack(cache_id))


def cache_partitions(
    request_id: int,
    cache_ids: Iterable[int],
    *,
    features: Iterable[int] = DEFAULT_FEATURES,
    custom_mappings: bool = False,
) -> bytes:
    """OP_CACHE_PARTITIONS (1101): [bool custom mappings], int count, int cache ids.

    The leading bool exists only when ALL_AFFINITY_MAPPINGS (13) was negotiated
    (``ClientCachePartitionsRequest``).
    """
    ids = [int(c) for c in cache_ids]
    w = start_request(Op.CACHE_PARTITIONS, request_id)
    if Feature.ALL_AFFINITY_MAPPINGS in frozenset(int(f) for f in features):
        w.bool(custom_mappings)
    w.i32(len(ids))
    for c in ids:
        w.i32(c)
    return finish_request(w)
