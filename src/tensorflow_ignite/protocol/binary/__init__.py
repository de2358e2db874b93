"""Ignite's binary object format: decode any value to Python, encode Python back.

Layout facts (checked against ``GridBinaryMarshaller``, ``BinaryUtils``,
``BinaryWriterExImpl``, ``BinaryWriterSchemaHolder``, ``BinaryObjectImpl``):

* every value starts with a type code byte (see :class:`~.codes.TypeCode`);
* a complex object (103) has a 24-byte header -- code, version (1), short
  flags, int type id, int hash code, int total length, int schema id, int
  schema (footer) offset -- then, for an unregistered type (type id 0), the
  class name as a typed string, then the field data, optional raw data, and a
  footer of ``[int field id,] offset`` entries (field ids omitted with the
  compact-footer flag).  Offsets are relative to the object start and take 1,
  2 or 4 bytes; the writer picks the width from the *last* field offset
  (< 256 -> 1, < 65536 -> 2).  With raw data and a schema, the raw offset is
  the last int of the object; without a schema it sits in the schema-offset
  slot.  An object without fields has schema id 0 and no HAS_SCHEMA flag;
* a handle (102) is an int back-offset from the handle's own position to an
  earlier value of the same top-level value (objects, collections, maps and
  object arrays register their position);
* a wrapped object (27) is ``int length, bytes, int start``: an object inside
  its own array, whose handles are relative to that array;
* decimals are ``int scale, int length, big-endian magnitude`` with the sign in
  the top bit of the first magnitude byte;
* UUIDs are the most then the least significant long, each little-endian.

Decoding is strict and bounded: every length is checked against the bytes left
before anything is allocated, and any malformed input raises
:class:`~tensorflow_ignite.errors.ProtocolError`.

The codec is split by direction: :mod:`.decode` (:class:`BinaryDecoder`),
:mod:`.encode` (:class:`BinaryEncoder`), :mod:`.format` (constants both use).
"""

from tensorflow_ignite.protocol.binary.decode import (
    BinaryDecoder,
    MetadataResolver,
    MissingSchemaError,
    SchemaResolver,
    decode_value,
)
from tensorflow_ignite.protocol.binary.encode import BinaryEncoder, encode_value
from tensorflow_ignite.protocol.binary.format import OBJECT_HEADER

__all__ = [
    "MissingSchemaError",
    "MetadataResolver",
    "SchemaResolver",
    "BinaryDecoder",
    "BinaryEncoder",
    "decode_value",
    "encode_value",
    "OBJECT_HEADER",
]
