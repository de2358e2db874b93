"""Layout constants of binary objects shared by the decoder, the encoders and the column decoder."""

from __future__ import annotations

import struct

import numpy as np

from tensorflow_ignite.protocol.codes import TypeCode

#: Header after the type code and version byte: flags, type id, hash, length, schema id, schema offset.
OBJECT_HEADER = struct.Struct("<hiiiii")
HEADER_LEN = 24

#: numpy dtypes of the primitive array type codes (little-endian on the wire).
ARRAY_DTYPES: dict[int, np.dtype] = {
    TypeCode.BYTE_ARR: np.dtype(np.int8),
    TypeCode.SHORT_ARR: np.dtype("<i2"),
    TypeCode.INT_ARR: np.dtype("<i4"),
    TypeCode.LONG_ARR: np.dtype("<i8"),
    TypeCode.FLOAT_ARR: np.dtype("<f4"),
    TypeCode.DOUBLE_ARR: np.dtype("<f8"),
    TypeCode.CHAR_ARR: np.dtype("<u2"),
    TypeCode.BOOL_ARR: np.dtype(np.bool_),
}
