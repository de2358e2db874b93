"""The type-code registry: what the project knows about each Ignite binary type code.

One table, :data:`TYPES`, holds per type code (:class:`~.codes.TypeCode`) the
facts every layer needs -- wire size and NumPy dtype, the decoded column's
dtype, the TensorFlow dtype a dataset yields, the Java class name of query
entities, the element type of arrays, the code binary metadata records.  The
lookup tables the codec, the column decoder, the schema resolver and the writer
use are derived from it below; each is a plain dict, for speed on hot paths.

Choices of this library, not facts of Ignite's, are kept apart at the end:
which type code a NumPy value is written as (:data:`NUMPY_SCALAR_CODES`,
:data:`NUMPY_ARRAY_CODES` for :class:`~.binary.BinaryEncoder`,
:data:`WRITE_CODES` for ``tensorflow_ignite.write``) and which wire types a
column of another type holds without loss (:data:`WIDENING`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from tensorflow_ignite.protocol.codes import TypeCode as T

__all__ = [
    "TypeInfo",
    "TYPES",
    "ARRAY_DTYPES",
    "ARRAY_OF",
    "FIXED_WIRE",
    "COLUMN_DTYPES",
    "TF_DTYPES",
    "TF_ARRAY_DTYPES",
    "JAVA_TYPE_NAMES",
    "JAVA_CLASS_TYPE_CODES",
    "TYPED_ARRAY_ELEMENTS",
    "METADATA_CODES",
    "NUMPY_SCALAR_CODES",
    "NUMPY_ARRAY_CODES",
    "WRITE_CODES",
    "WIDENING",
]


@dataclass(frozen=True)
class TypeInfo:
    """What is known about one type code; ``None`` where a fact does not apply.

    ``size``: bytes after the type code when fixed.  ``wire``: NumPy dtype of
    those bytes (``""`` when they are not one number), or of each element of a
    primitive array.  ``column``: NumPy type of the column the page decoder
    makes.  ``tf``: TensorFlow dtype name an ``IgniteDataset`` yields (for a
    primitive array: of its elements).  ``java``: the Java class name used in
    query entities, ``java_aliases`` other names that mean the same type.
    ``element``: the element type of an array type.  ``metadata``: the code
    binary metadata records for a field written with this code.
    """

    code: T
    size: int | None = None
    wire: Any = None
    column: Any = None
    tf: str | None = None
    java: str | None = None
    java_aliases: tuple[str, ...] = ()
    element: T | None = None
    metadata: T | None = None

    @property
    def is_primitive_array(self) -> bool:
        return self.element is not None and self.element in _PRIMITIVES


_PRIMITIVES = frozenset({T.BYTE, T.SHORT, T.INT, T.LONG, T.FLOAT, T.DOUBLE, T.CHAR, T.BOOL})

_I = TypeInfo
#: Every type code with facts attached (codes absent here have none: objects, collections...).
TYPES: dict[int, TypeInfo] = {
    info.code: info
    for info in (
        # Scalars.
        _I(T.BYTE, 1, "i1", np.int8, "int8", "java.lang.Byte", ("byte",)),
        _I(T.SHORT, 2, "<i2", np.int16, "int16", "java.lang.Short", ("short",)),
        _I(T.INT, 4, "<i4", np.int32, "int32", "java.lang.Integer", ("int",)),
        _I(T.LONG, 8, "<i8", np.int64, "int64", "java.lang.Long", ("long",)),
        _I(T.FLOAT, 4, "<f4", np.float32, "float32", "java.lang.Float", ("float",)),
        _I(T.DOUBLE, 8, "<f8", np.float64, "float64", "java.lang.Double", ("double",)),
        _I(T.CHAR, 2, "<u2", np.uint16, "uint16", "java.lang.Character", ("char",)),
        _I(T.BOOL, 1, "u1", np.bool_, "bool", "java.lang.Boolean", ("boolean",)),
        _I(T.STRING, tf="string", java="java.lang.String"),
        _I(T.UUID, 16, "", tf="string", java="java.util.UUID"),  # two longs, most significant first
        _I(T.DATE, 8, "<i8", np.int64, "int64", "java.util.Date", ("java.sql.Date", "java.time.LocalDate")),  # epoch ms
        _I(
            T.TIMESTAMP,
            12,
            "",
            np.int64,
            "int64",
            "java.sql.Timestamp",
            ("java.time.LocalDateTime", "java.time.Instant"),
        ),  # epoch ms + int ns; column: epoch ns
        _I(T.TIME, 8, "<i8", np.int64, "int64", "java.sql.Time", ("java.time.LocalTime",)),  # ms since midnight
        _I(T.DECIMAL, column=np.float64, tf="float64", java="java.math.BigDecimal"),
        _I(T.ENUM, column=np.int32, tf="int32"),  # ordinal
        _I(T.BINARY_ENUM, column=np.int32, tf="int32", metadata=T.ENUM),
        # Primitive arrays: int length, then the elements.  A byte[] column reads as uint8 (pixels, raw bytes).
        _I(T.BYTE_ARR, wire=np.dtype(np.int8), tf="uint8", java="[B", element=T.BYTE),
        _I(T.SHORT_ARR, wire=np.dtype("<i2"), tf="int16", java="[S", element=T.SHORT),
        _I(T.INT_ARR, wire=np.dtype("<i4"), tf="int32", java="[I", element=T.INT),
        _I(T.LONG_ARR, wire=np.dtype("<i8"), tf="int64", java="[J", element=T.LONG),
        _I(T.FLOAT_ARR, wire=np.dtype("<f4"), tf="float32", java="[F", element=T.FLOAT),
        _I(T.DOUBLE_ARR, wire=np.dtype("<f8"), tf="float64", java="[D", element=T.DOUBLE),
        _I(T.CHAR_ARR, wire=np.dtype("<u2"), tf="uint16", java="[C", element=T.CHAR),
        _I(T.BOOL_ARR, wire=np.dtype(np.bool_), tf="bool", java="[Z", element=T.BOOL),
        # Arrays of typed values: int length, then each element with its type code.
        _I(T.STRING_ARR, element=T.STRING),
        _I(T.UUID_ARR, element=T.UUID),
        _I(T.DATE_ARR, element=T.DATE),
        _I(T.TIMESTAMP_ARR, element=T.TIMESTAMP),
        _I(T.TIME_ARR, element=T.TIME),
        _I(T.DECIMAL_ARR, element=T.DECIMAL),
        # Codes that metadata records as a plain object.
        _I(T.BINARY_OBJ, metadata=T.OBJ),
        _I(T.HANDLE, metadata=T.OBJ),
        _I(T.NULL, metadata=T.OBJ),
    )
}
del _I

_SCALAR_INFO = [i for i in TYPES.values() if i.element is None]
_ARRAY_INFO = [i for i in TYPES.values() if i.element is not None]

# ------------------------------------------------------------ derived lookups
#: Primitive array code -> NumPy dtype of its elements (little-endian on the wire).
ARRAY_DTYPES: dict[int, np.dtype] = {i.code: i.wire for i in _ARRAY_INFO if i.is_primitive_array}
#: Primitive scalar code -> the array code of its arrays.
ARRAY_OF: dict[int, int] = {i.element: i.code for i in _ARRAY_INFO if i.is_primitive_array}  # type: ignore[misc]  # _ARRAY_INFO holds only infos whose element is not None
#: Fixed-size scalar code -> (bytes after the type code, NumPy dtype of them or "").
FIXED_WIRE: dict[int, tuple[int, str]] = {i.code: (i.size, i.wire) for i in _SCALAR_INFO if i.size is not None}
#: Scalar code -> NumPy type of the column the page decoder makes of it.
COLUMN_DTYPES: dict[int, Any] = {i.code: i.column for i in _SCALAR_INFO if i.column is not None}
#: Scalar code -> TensorFlow dtype name of a dataset field of that type.
TF_DTYPES: dict[int, str] = {i.code: i.tf for i in _SCALAR_INFO if i.tf is not None}
#: Primitive array code -> TensorFlow dtype name of its elements.
TF_ARRAY_DTYPES: dict[int, str] = {i.code: i.tf for i in _ARRAY_INFO if i.tf is not None}
#: Type code -> the Java class name Ignite's SQL expects in ``QueryEntity`` fields.
JAVA_TYPE_NAMES: dict[int, str] = {i.code: i.java for i in TYPES.values() if i.java is not None}
#: Java class names (query entities, SQL, primitive names) -> type codes.
JAVA_CLASS_TYPE_CODES: dict[str, int] = {
    name: i.code for i in TYPES.values() if i.java is not None for name in (i.java, *i.java_aliases)
}
#: Typed-array code -> the code of its elements (``STRING_ARR`` -> ``STRING``...).
TYPED_ARRAY_ELEMENTS: dict[int, int] = {
    i.code: i.element  # type: ignore[misc]  # _ARRAY_INFO holds only infos whose element is not None
    for i in _ARRAY_INFO
    if not i.is_primitive_array
}
#: Type code recorded in binary metadata for a field written with a given code (others: the code itself).
METADATA_CODES: dict[int, int] = {i.code: i.metadata for i in TYPES.values() if i.metadata is not None}

# ------------------------------------------------------------- this library's choices
#: NumPy scalar type -> the type code :class:`~.binary.BinaryEncoder` writes it as
#: (unsigned types widened to the next signed one so the value is kept).
NUMPY_SCALAR_CODES: dict[type, int] = {
    np.bool_: T.BOOL,
    np.int8: T.BYTE,
    np.int16: T.SHORT,
    np.int32: T.INT,
    np.int64: T.LONG,
    np.uint8: T.SHORT,
    np.uint16: T.INT,
    np.uint32: T.LONG,
    np.uint64: T.LONG,
    np.float16: T.FLOAT,
    np.float32: T.FLOAT,
    np.float64: T.DOUBLE,
}

#: NumPy array dtype (``dtype.str`` without the byte order) -> the array code
#: :class:`~.binary.BinaryEncoder` writes a 1-d array as.
NUMPY_ARRAY_CODES: dict[str, int] = {
    "i1": T.BYTE_ARR,
    "u1": T.BYTE_ARR,  # same bytes as Java byte[]; reinterpreted (images)
    "i2": T.SHORT_ARR,
    "u2": T.CHAR_ARR,
    "i4": T.INT_ARR,
    "i8": T.LONG_ARR,
    "f4": T.FLOAT_ARR,
    "f8": T.DOUBLE_ARR,
    "b1": T.BOOL_ARR,
}

#: NumPy dtype name of a column -> the scalar code ``tensorflow_ignite.write`` stores it as
#: (per-row arrays: that code's array).  The tensor schema records the original dtype.
WRITE_CODES: dict[str, int] = {
    "bool": T.BOOL,
    "int8": T.BYTE,
    "uint8": T.BYTE,  # same bits, two's complement
    "int16": T.SHORT,
    "uint16": T.INT,  # widened: Java has no unsigned short
    "int32": T.INT,
    "uint32": T.LONG,  # widened
    "int64": T.LONG,
    "uint64": T.LONG,  # same bits; the schema says uint64
    "float16": T.FLOAT,
    "float32": T.FLOAT,
    "float64": T.DOUBLE,
}

#: Column type -> wire types whose every value it holds exactly (widening only).
#: OPTIMIZED: Java-serialized ``java.sql.Date``/``java.util.Date`` (-> date,
#: timestamp), ``java.sql.Time`` (-> time), ``java.sql.Timestamp`` (-> timestamp);
#: see :mod:`tensorflow_ignite.protocol.javatime`.
WIDENING: dict[int, frozenset[int]] = {
    int(T.SHORT): frozenset({int(T.BYTE)}),
    int(T.INT): frozenset({int(T.BYTE), int(T.SHORT)}),
    int(T.LONG): frozenset({int(T.BYTE), int(T.SHORT), int(T.INT)}),
    int(T.FLOAT): frozenset({int(T.BYTE), int(T.SHORT)}),
    int(T.DOUBLE): frozenset({int(T.BYTE), int(T.SHORT), int(T.INT), int(T.FLOAT)}),
    int(T.DATE): frozenset({int(T.OPTIMIZED)}),
    int(T.TIME): frozenset({int(T.OPTIMIZED)}),
    int(T.TIMESTAMP): frozenset({int(T.DATE), int(T.OPTIMIZED)}),
}
