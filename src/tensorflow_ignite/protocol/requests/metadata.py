"""Binary type metadata: names and schemas of binary types."""

from __future__ import annotations

import struct

from ..buffer import I32, ByteWriter
from ..codes import Op, PlatformId
from ..framing import encode_request, finish_request, start_request
from ..values import BinaryType

#: ``byte platform, int type id``: the head of the type-name requests.
_NAME_HEAD = struct.Struct("<Bi")


# ------------------------------------------------------------- binary metadata
def binary_type_name_get(request_id: int, type_id: int, platform: int = PlatformId.JAVA) -> bytes:
    """OP_BINARY_TYPE_NAME_GET (3000): byte platform, int type id; answer: string."""
    return encode_request(Op.BINARY_TYPE_NAME_GET, request_id, _NAME_HEAD.pack(platform, type_id))


def binary_type_name_put(request_id: int, type_id: int, type_name: str, platform: int = PlatformId.JAVA) -> bytes:
    """OP_BINARY_TYPE_NAME_PUT (3001): byte platform, int type id, string name; answer: bool."""
    w = start_request(Op.BINARY_TYPE_NAME_PUT, request_id)
    w.raw(_NAME_HEAD.pack(platform, type_id))
    w.typed_string(type_name)
    return finish_request(w)


def binary_type_get(request_id: int, type_id: int) -> bytes:
    """OP_BINARY_TYPE_GET (3002): int type id; answer: bool exists + metadata."""
    return encode_request(Op.BINARY_TYPE_GET, request_id, I32.pack(type_id))


def write_binary_type(w: ByteWriter, t: BinaryType) -> None:
    """Binary type metadata (``ClientUtils.binaryMetadata``): id, name, affinity field,
    fields (name, type code, field id), is-enum [+ values], schemas (id, field ids)."""
    w.i32(t.type_id)
    w.typed_string(t.type_name)
    w.typed_string(t.affinity_key_field)
    w.i32(len(t.fields))
    for f in t.fields.values():
        w.typed_string(f.name)
        w.i32(int(f.type_code))
        w.i32(f.field_id)
    w.bool(t.is_enum)
    if t.is_enum:
        w.i32(len(t.enum_values))
        for name, ordinal in t.enum_values.items():
            w.typed_string(name)
            w.i32(ordinal)
    w.i32(len(t.schemas))
    for sid, ids in t.schemas.items():
        w.i32(sid)
        w.i32(len(ids))
        for fid in ids:
            w.i32(fid)


def binary_type_put(request_id: int, binary_type: BinaryType) -> bytes:
    """OP_BINARY_TYPE_PUT (3003): metadata; empty answer."""
    w = start_request(Op.BINARY_TYPE_PUT, request_id)
    write_binary_type(w, binary_type)
    return finish_request(w)
