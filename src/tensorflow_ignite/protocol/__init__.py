"""The Ignite thin-client protocol, without any I/O.

Modules:

* :mod:`.codes` -- op codes, type codes, status codes, feature bits, enums
  (the op, type and status codes generated from Ignite's sources by ``scripts/update_codes.py``);
* :mod:`.types` -- the type-code registry: per type code its sizes, dtypes, Java names;
* :mod:`.hashing` -- Java-compatible cache/type/field/schema ids and object hashes;
* :mod:`.buffer` -- bounds-checked little-endian reader and writer;
* :mod:`.values` -- the Python value model (``BinaryObject``, ``Timestamp``...);
* :mod:`.binary` -- binary object codec (``BinaryDecoder``, ``BinaryEncoder``);
* :mod:`.framing` -- handshake, request/response headers;
* :mod:`.receive` -- the receive buffer and frame splitter (``FrameReader``);
* :mod:`.requests` / :mod:`.responses` -- per-operation bodies;
* :mod:`.cache_config` -- cache configuration and query entities;
* :mod:`.columns` -- whole-page decoding into numpy columns for datasets;
* :mod:`.fuzz_targets` -- every decoder a peer can reach, behind one entry point
  for the fuzz tests (hypothesis, atheris): bad bytes raise only ``ProtocolError``
  or ``SchemaError``.

The I/O layer sends what these functions return, receives frames through a
:class:`~.receive.FrameReader` over its socket, and hands them to the decoders.
"""

from tensorflow_ignite.protocol.binary import (
    BinaryDecoder,
    BinaryEncoder,
    MetadataResolver,
    MissingSchemaError,
    decode_value,
    encode_value,
)
from tensorflow_ignite.protocol.codes import (
    SUPPORTED_VERSIONS,
    V1_7_0,
    ClientStatus,
    Feature,
    Op,
    ProtocolVersion,
    TypeCode,
)
from tensorflow_ignite.protocol.framing import (
    DEFAULT_FEATURES,
    HandshakeResponse,
    ResponseHeader,
    decode_handshake_response,
    decode_response_header,
    encode_handshake,
)
from tensorflow_ignite.protocol.hashing import cache_id, field_id, schema_id, type_id
from tensorflow_ignite.protocol.receive import FrameReader
from tensorflow_ignite.protocol.values import (
    BinaryField,
    BinaryObject,
    BinaryType,
    BinaryTypeRegistry,
    Char,
    Collection,
    Date,
    EnumValue,
    Float32,
    Int8,
    Int16,
    Int32,
    Map,
    ObjectArray,
    RawValue,
    Time,
    Timestamp,
    Typed,
)

__all__ = [
    "BinaryDecoder",
    "BinaryEncoder",
    "MetadataResolver",
    "MissingSchemaError",
    "decode_value",
    "encode_value",
    "SUPPORTED_VERSIONS",
    "V1_7_0",
    "ClientStatus",
    "Feature",
    "Op",
    "ProtocolVersion",
    "TypeCode",
    "DEFAULT_FEATURES",
    "FrameReader",
    "HandshakeResponse",
    "ResponseHeader",
    "decode_handshake_response",
    "decode_response_header",
    "encode_handshake",
    "cache_id",
    "field_id",
    "schema_id",
    "type_id",
    "BinaryField",
    "BinaryObject",
    "BinaryType",
    "BinaryTypeRegistry",
    "Char",
    "Float32",
    "Int8",
    "Int16",
    "Int32",
    "Collection",
    "Date",
    "EnumValue",
    "Map",
    "ObjectArray",
    "RawValue",
    "Time",
    "Timestamp",
    "Typed",
]
