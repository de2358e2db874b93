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
"""

from __future__ import annotations

import datetime as _dt
import decimal
import struct
import uuid as _uuid
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from tensorflow_ignite.errors import ConfigurationError, ProtocolError
from tensorflow_ignite.protocol.buffer import (
    F32,
    F64,
    I16,
    I32,
    I64,
    U16,
    UUID_STRUCT,
    ByteWriter,
    uuid_from_java,
    uuid_to_java,
)
from tensorflow_ignite.protocol.codes import CollectionKind, MapKind, ObjectFlag, TypeCode
from tensorflow_ignite.protocol.hashing import binary_object_hash, field_id, schema_id, type_id
from tensorflow_ignite.protocol.javatime import UnsupportedJavaObjectError, decode_java_time
from tensorflow_ignite.protocol.values import (
    BinaryField,
    Char,
    Float32,
    Int8,
    Int16,
    Int32,
    BinaryObject,
    BinaryType,
    Collection,
    Date,
    EnumValue,
    JavaClass,
    Map,
    ObjectArray,
    OptimizedObject,
    RawValue,
    Time,
    Timestamp,
    Typed,
)

__all__ = [
    "MissingSchemaError",
    "MetadataResolver",
    "SchemaResolver",
    "BinaryDecoder",
    "BinaryEncoder",
    "decode_value",
    "encode_value",
    "OBJECT_HEADER",
    "ARRAY_DTYPES",
]

#: Header after the type code and version byte: flags, type id, hash, length, schema id, schema offset.
OBJECT_HEADER = struct.Struct("<hiiiii")
_HEADER_LEN = 24

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

_NULL = TypeCode.NULL
_HANDLE = TypeCode.HANDLE


class MissingSchemaError(ProtocolError):
    """A compact-footer object whose schema (field ids) the metadata does not know.

    The caller should fetch the type's metadata (``OP_BINARY_TYPE_GET``) and
    decode again.
    """

    def __init__(self, type_id: int, schema_id: int) -> None:
        super().__init__(
            f"binary object of type id {type_id} uses compact footer schema {schema_id}, which is not in the "
            "known metadata; fetch the type with OP_BINARY_TYPE_GET and retry"
        )
        self.type_id = type_id
        self.schema_id = schema_id


#: ``(type_id, schema_id) -> field ids`` of a compact-footer schema, or None if unknown.
SchemaResolver = Callable[[int, int], "tuple[int, ...] | None"]


class MetadataResolver(Protocol):
    """What the decoder asks the binary metadata (see ``BinaryTypeRegistry``)."""

    def schema_field_ids(self, type_id: int, schema_id: int) -> tuple[int, ...] | None: ...

    def field_name(self, type_id: int, fid: int) -> str | None: ...

    def type_name(self, type_id: int) -> str | None: ...


def _no_schema(type_id: int, schema_id: int) -> None:
    return None


def _no_name(type_id: int, fid: int) -> None:
    return None


def _no_type_name(type_id: int) -> None:
    return None


def _read_error(what: str, pos: int) -> ProtocolError:
    return ProtocolError(f"truncated or malformed binary value: {what} at offset {pos}")


# ====================================================================== decoder
class BinaryDecoder:
    """Decodes binary values from a buffer; reusable, not thread-safe.

    ``metadata`` supplies compact-footer schemas and field/type names
    (typically a ``BinaryTypeRegistry``); ``schema_resolver`` overrides the
    schema lookup with a plain ``(type_id, schema_id) -> field ids`` callback.
    Without names, object fields are keyed by int field id.

    With ``copy_arrays=False`` (default) primitive arrays are read-only numpy
    views into the decoded buffer: no copy, and numpy keeps the buffer alive;
    pass ``True`` for independent writable arrays.
    """

    __slots__ = (
        "_schema",
        "_fname",
        "_tname",
        "copy_arrays",
        "max_depth",
        "_buf",
        "_end",
        "_full_end",
        "_handles",
        "_depth",
        "_readers",
        "_keys",
    )

    def __init__(
        self,
        metadata: MetadataResolver | None = None,
        *,
        schema_resolver: SchemaResolver | None = None,
        copy_arrays: bool = False,
        max_depth: int = 100,
    ) -> None:
        self._schema: SchemaResolver = (
            schema_resolver
            if schema_resolver is not None
            else (metadata.schema_field_ids if metadata is not None else _no_schema)
        )
        self._fname = metadata.field_name if metadata is not None else _no_name
        self._tname = metadata.type_name if metadata is not None else _no_type_name
        self.copy_arrays = copy_arrays
        self.max_depth = max_depth
        self._buf: memoryview = memoryview(b"")
        self._end = 0
        self._full_end = 0
        self._handles: dict[int, Any] = {}
        self._depth = 0
        self._keys: dict[tuple[int, int], str | int] = {}
        table: list[Callable[[int, int], tuple[Any, int]]] = [self._r_unknown] * 256
        for code, name in _READERS.items():
            table[code & 0xFF] = getattr(self, name)
        self._readers = table

    # ---------------------------------------------------------------- entry points
    def decode(self, data: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None) -> Any:
        """Decode the single value starting at ``pos``."""
        return self.decode_at(data, pos, end)[0]

    def decode_at(
        self, data: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None
    ) -> tuple[Any, int]:
        """Decode the value at ``pos``; return it and the offset just past it.

        Each call is its own handle scope, as each ``writeObject`` is in Java.
        """
        buf = data if isinstance(data, memoryview) else memoryview(data)
        if buf.ndim != 1 or buf.itemsize != 1:
            buf = buf.cast("B")
        stop = len(buf) if end is None else end
        if not 0 <= pos <= stop <= len(buf):
            raise ProtocolError(f"invalid decode window [{pos}, {end}) over {len(buf)} bytes")
        saved = (self._buf, self._end, self._full_end, self._handles, self._depth)
        self._buf, self._end, self._full_end, self._handles, self._depth = buf, stop, stop, {}, 0
        try:
            return self._read(pos)
        except ProtocolError:
            raise
        except (struct.error, IndexError, ValueError, OverflowError, TypeError, RecursionError,
                UnicodeError, decimal.InvalidOperation) as exc:
            raise ProtocolError(f"malformed binary value at offset {pos}: {exc}") from exc
        finally:
            self._buf, self._end, self._full_end, self._handles, self._depth = saved

    def decode_sequence(
        self, data: bytes | bytearray | memoryview, count: int, pos: int = 0, end: int | None = None
    ) -> tuple[list[Any], int]:
        """Decode ``count`` consecutive values (e.g. a page's rows, flattened)."""
        out: list[Any] = []
        for _ in range(count):
            value, pos = self.decode_at(data, pos, end)
            out.append(value)
        return out, pos

    # ---------------------------------------------------------------- internals
    def _read(self, pos: int) -> tuple[Any, int]:
        if pos >= self._end:
            raise _read_error("type code past end of data", pos)
        return self._readers[self._buf[pos]](pos + 1, pos)

    def _need(self, p: int, size: int, what: str) -> None:
        if size < 0 or p + size > self._end:
            raise _read_error(f"{what} needs {size} bytes, {self._end - p} left", p)

    def _count(self, p: int, what: str, elem_size: int = 1) -> int:
        self._need(p, 4, what)
        n = I32.unpack_from(self._buf, p)[0]
        if n < 0 or n * elem_size > self._end - p - 4:
            raise _read_error(f"{what} {n} exceeds the {self._end - p - 4} bytes left", p)
        return n

    def _r_unknown(self, p: int, start: int) -> tuple[Any, int]:
        code = self._buf[start]
        code = code - 256 if code > 127 else code
        raise ProtocolError(f"unknown or unsupported binary type code {code} at offset {start}")

    # primitives ------------------------------------------------------------
    def _r_null(self, p: int, start: int) -> tuple[Any, int]:
        return None, p

    def _r_byte(self, p: int, start: int) -> tuple[Any, int]:
        self._need(p, 1, "byte")
        b = self._buf[p]
        return Int8(b - 256 if b > 127 else b), p + 1

    def _r_short(self, p: int, start: int) -> tuple[Any, int]:
        self._need(p, 2, "short")
        return Int16(I16.unpack_from(self._buf, p)[0]), p + 2

    def _r_int(self, p: int, start: int) -> tuple[Any, int]:
        self._need(p, 4, "int")
        return Int32(I32.unpack_from(self._buf, p)[0]), p + 4

    def _r_long(self, p: int, start: int) -> tuple[Any, int]:
        self._need(p, 8, "long")
        return I64.unpack_from(self._buf, p)[0], p + 8

    def _r_float(self, p: int, start: int) -> tuple[Any, int]:
        self._need(p, 4, "float")
        return Float32(F32.unpack_from(self._buf, p)[0]), p + 4

    def _r_double(self, p: int, start: int) -> tuple[Any, int]:
        self._need(p, 8, "double")
        return F64.unpack_from(self._buf, p)[0], p + 8

    def _r_char(self, p: int, start: int) -> tuple[Any, int]:
        self._need(p, 2, "char")
        return Char(chr(U16.unpack_from(self._buf, p)[0])), p + 2

    def _r_bool(self, p: int, start: int) -> tuple[Any, int]:
        self._need(p, 1, "bool")
        return self._buf[p] != 0, p + 1

    def _r_string(self, p: int, start: int) -> tuple[Any, int]:
        n = self._count(p, "string length")
        p += 4
        return str(self._buf[p : p + n], "utf-8", "replace"), p + n

    def _r_uuid(self, p: int, start: int) -> tuple[Any, int]:
        self._need(p, 16, "uuid")
        msb, lsb = UUID_STRUCT.unpack_from(self._buf, p)
        return uuid_from_java(msb, lsb), p + 16

    def _r_date(self, p: int, start: int) -> tuple[Any, int]:
        self._need(p, 8, "date")
        return Date(I64.unpack_from(self._buf, p)[0]), p + 8

    def _r_timestamp(self, p: int, start: int) -> tuple[Any, int]:
        self._need(p, 12, "timestamp")
        ms = I64.unpack_from(self._buf, p)[0]
        nanos = I32.unpack_from(self._buf, p + 8)[0]
        return Timestamp(ms, nanos), p + 12

    def _r_time(self, p: int, start: int) -> tuple[Any, int]:
        self._need(p, 8, "time")
        return Time(I64.unpack_from(self._buf, p)[0]), p + 8

    def _r_decimal(self, p: int, start: int) -> tuple[Any, int]:
        self._need(p, 4, "decimal scale")
        scale = I32.unpack_from(self._buf, p)[0]
        n = self._count(p + 4, "decimal magnitude length")
        if n == 0:
            raise _read_error("decimal with an empty magnitude", p)
        p += 8
        return _decimal_from_wire(scale, bytes(self._buf[p : p + n])), p + n

    # arrays ----------------------------------------------------------------
    def _prim_array(self, p: int, code: int) -> tuple[Any, int]:
        dtype = ARRAY_DTYPES[code]
        n = self._count(p, "array length", dtype.itemsize)
        p += 4
        if code == TypeCode.BOOL_ARR:
            # Java writes 0/1, but never trust a byte to be a valid numpy bool.
            arr = np.frombuffer(self._buf, np.uint8, n, p) != 0
        else:
            arr = np.frombuffer(self._buf, dtype, n, p)
            if self.copy_arrays:
                arr = arr.copy()
        return arr, p + n * dtype.itemsize

    def _r_byte_arr(self, p: int, start: int) -> tuple[Any, int]:
        return self._prim_array(p, TypeCode.BYTE_ARR)

    def _r_short_arr(self, p: int, start: int) -> tuple[Any, int]:
        return self._prim_array(p, TypeCode.SHORT_ARR)

    def _r_int_arr(self, p: int, start: int) -> tuple[Any, int]:
        return self._prim_array(p, TypeCode.INT_ARR)

    def _r_long_arr(self, p: int, start: int) -> tuple[Any, int]:
        return self._prim_array(p, TypeCode.LONG_ARR)

    def _r_float_arr(self, p: int, start: int) -> tuple[Any, int]:
        return self._prim_array(p, TypeCode.FLOAT_ARR)

    def _r_double_arr(self, p: int, start: int) -> tuple[Any, int]:
        return self._prim_array(p, TypeCode.DOUBLE_ARR)

    def _r_char_arr(self, p: int, start: int) -> tuple[Any, int]:
        return self._prim_array(p, TypeCode.CHAR_ARR)

    def _r_bool_arr(self, p: int, start: int) -> tuple[Any, int]:
        return self._prim_array(p, TypeCode.BOOL_ARR)

    def _typed_elements(self, p: int, elem_code: int, what: str) -> tuple[Any, int]:
        n = self._count(p, f"{what} length")
        p += 4
        out: list[Any] = []
        reader = self._readers[elem_code]
        buf = self._buf
        for _ in range(n):
            if p >= self._end:
                raise _read_error(f"{what} element past end of data", p)
            code = buf[p]
            if code == _NULL:
                out.append(None)
                p += 1
            elif code == elem_code:
                value, p = reader(p + 1, p)
                out.append(value)
            else:
                raise ProtocolError(f"{what}: element type code {code} at offset {p}, expected {elem_code} or null")
        return out, p

    def _r_string_arr(self, p: int, start: int) -> tuple[Any, int]:
        return self._typed_elements(p, TypeCode.STRING, "string[]")

    def _r_uuid_arr(self, p: int, start: int) -> tuple[Any, int]:
        return self._typed_elements(p, TypeCode.UUID, "UUID[]")

    def _r_date_arr(self, p: int, start: int) -> tuple[Any, int]:
        return self._typed_elements(p, TypeCode.DATE, "Date[]")

    def _r_timestamp_arr(self, p: int, start: int) -> tuple[Any, int]:
        return self._typed_elements(p, TypeCode.TIMESTAMP, "Timestamp[]")

    def _r_time_arr(self, p: int, start: int) -> tuple[Any, int]:
        return self._typed_elements(p, TypeCode.TIME, "Time[]")

    def _r_decimal_arr(self, p: int, start: int) -> tuple[Any, int]:
        return self._typed_elements(p, TypeCode.DECIMAL, "BigDecimal[]")

    # type id (+ class name when unregistered), as enums/arrays/classes write it
    def _type_ref(self, p: int, what: str) -> tuple[int, str | None, int]:
        self._need(p, 4, f"{what} type id")
        tid = I32.unpack_from(self._buf, p)[0]
        p += 4
        if tid != 0:
            return tid, None, p
        self._need(p, 1, f"{what} class name")
        if self._buf[p] != TypeCode.STRING:
            raise ProtocolError(f"{what}: unregistered type without a class name string at offset {p}")
        name, p = self._r_string(p + 1, p)
        return 0, name, p

    def _r_enum(self, p: int, start: int) -> tuple[Any, int]:
        tid, name, p = self._type_ref(p, "enum")
        self._need(p, 4, "enum ordinal")
        ordinal = I32.unpack_from(self._buf, p)[0]
        return EnumValue(tid, ordinal, self._buf[start], name), p + 4

    def _r_class(self, p: int, start: int) -> tuple[Any, int]:
        tid, name, p = self._type_ref(p, "class")
        return JavaClass(tid, name), p

    def _r_optimized(self, p: int, start: int) -> tuple[Any, int]:
        n = self._count(p, "optimized object length")
        p += 4
        data = bytes(self._buf[p : p + n])
        try:
            # java.sql.Date (every SQL DATE) and its relatives: as the native types.
            return decode_java_time(data), p + n
        except UnsupportedJavaObjectError:
            return OptimizedObject(data), p + n

    def _enter(self, start: int) -> None:
        self._depth += 1
        if self._depth > self.max_depth:
            raise ProtocolError(f"binary value nested deeper than {self.max_depth} levels at offset {start}")

    def _r_obj_arr(self, p: int, start: int) -> tuple[Any, int]:
        code = self._buf[start]
        tid, name, p = self._type_ref(p, "object array")
        n = self._count(p, "object array length")
        p += 4
        arr = ObjectArray((), tid, name, code)
        self._handles[start] = arr
        self._enter(start)
        try:
            for _ in range(n):
                value, p = self._read(p)
                arr.append(value)
        finally:
            self._depth -= 1
        return arr, p

    def _r_collection(self, p: int, start: int) -> tuple[Any, int]:
        n = self._count(p, "collection size")
        self._need(p + 4, 1, "collection kind")
        kind = self._buf[p + 4]
        kind = kind - 256 if kind > 127 else kind
        p += 5
        col = Collection((), kind)
        self._handles[start] = col
        self._enter(start)
        try:
            for _ in range(n):
                value, p = self._read(p)
                col.append(value)
        finally:
            self._depth -= 1
        return col, p

    def _r_map(self, p: int, start: int) -> tuple[Any, int]:
        n = self._count(p, "map size", 2)
        self._need(p + 4, 1, "map kind")
        kind = self._buf[p + 4]
        kind = kind - 256 if kind > 127 else kind
        p += 5
        result = Map((), kind)
        self._handles[start] = result
        self._enter(start)
        try:
            for _ in range(n):
                key, p = self._read(p)
                value, p = self._read(p)
                try:
                    result[key] = value
                except TypeError as exc:
                    raise ProtocolError(
                        f"map key of type {type(key).__name__} at offset {p} cannot be a Python dict key"
                    ) from exc
        finally:
            self._depth -= 1
        return result, p

    def _r_handle(self, p: int, start: int) -> tuple[Any, int]:
        self._need(p, 4, "handle offset")
        target = start - I32.unpack_from(self._buf, p)[0]
        if not 0 <= target < start:
            raise ProtocolError(f"handle at offset {start} points to {target}, not an earlier value")
        hit = self._handles.get(target, self._handles)
        if hit is not self._handles:
            return hit, p + 4
        # Not seen yet (e.g. decoding started inside the referenced value): read it there.
        saved_end = self._end
        self._end = self._full_end
        self._enter(start)
        try:
            value, _ = self._read(target)
        finally:
            self._end = saved_end
            self._depth -= 1
        return value, p + 4

    def _r_wrapped(self, p: int, start: int) -> tuple[Any, int]:
        n = self._count(p, "wrapped object length")
        inner_start = p + 4
        self._need(inner_start + n, 4, "wrapped object offset")
        offset = I32.unpack_from(self._buf, inner_start + n)[0]
        if not 0 <= offset < n:
            raise ProtocolError(f"wrapped object offset {offset} outside its {n}-byte array at {start}")
        inner = self._buf[inner_start : inner_start + n]
        saved = (self._buf, self._end, self._full_end, self._handles)
        self._buf, self._end, self._full_end, self._handles = inner, n, n, {}
        self._enter(start)
        try:
            value, _ = self._read(offset)
        finally:
            self._buf, self._end, self._full_end, self._handles = saved
            self._depth -= 1
        return value, inner_start + n + 4

    def _r_object(self, p: int, start: int) -> tuple[Any, int]:
        buf = self._buf
        self._need(start, _HEADER_LEN, "object header")
        if buf[p] != 1:
            raise ProtocolError(f"unsupported binary object version {buf[p]} at offset {start}")
        flags, tid, hash_code, total_len, sid, schema_off = OBJECT_HEADER.unpack_from(buf, start + 2)
        obj_end = start + total_len
        if total_len < _HEADER_LEN or obj_end > self._end:
            raise ProtocolError(
                f"binary object at offset {start} claims length {total_len}, {self._end - start} bytes available"
            )
        data_start = start + _HEADER_LEN
        type_name: str | None
        if tid == 0:
            # Unregistered type: the class name follows the header.
            if data_start >= obj_end or buf[data_start] != TypeCode.STRING:
                raise ProtocolError(f"unregistered binary object at {start} has no class name")
            saved_end = self._end
            self._end = obj_end
            try:
                type_name, data_start = self._r_string(data_start + 1, data_start)
            finally:
                self._end = saved_end
            tid = type_id(type_name)
        else:
            type_name = self._tname(tid)

        has_schema = flags & ObjectFlag.HAS_SCHEMA
        has_raw = flags & ObjectFlag.HAS_RAW
        if has_schema:
            footer_start = start + schema_off
            footer_end = obj_end - 4 if has_raw else obj_end
            if not data_start <= footer_start <= footer_end:
                raise ProtocolError(f"binary object at {start}: footer offset {schema_off} out of bounds")
            raw_start = start + I32.unpack_from(buf, obj_end - 4)[0] if has_raw else footer_start
        else:
            footer_start = footer_end = obj_end
            raw_start = start + schema_off if has_raw else obj_end
        if has_raw and not data_start <= raw_start <= footer_start:
            raise ProtocolError(f"binary object at {start}: raw data offset out of bounds")

        obj = BinaryObject.__new__(BinaryObject)
        obj.type_id = tid
        obj.type_name = type_name
        obj.hash_code = hash_code
        obj.schema_id = sid
        obj.raw = bytes(buf[raw_start:footer_start]) if has_raw else None
        fields: dict[str | int, Any] = {}
        ftypes: dict[str | int, int] = {}
        obj.fields = fields
        obj.field_types = ftypes
        self._handles[start] = obj

        if has_schema and footer_end > footer_start:
            off_size = 1 if flags & ObjectFlag.OFFSET_ONE_BYTE else 2 if flags & ObjectFlag.OFFSET_TWO_BYTES else 4
            compact = flags & ObjectFlag.COMPACT_FOOTER
            entry = off_size if compact else 4 + off_size
            span = footer_end - footer_start
            if span % entry:
                raise ProtocolError(f"binary object at {start}: footer of {span} bytes is not whole entries")
            count = span // entry
            ids: tuple[int, ...] | None = None
            if compact:
                ids = self._schema(tid, sid)
                if ids is None:
                    raise MissingSchemaError(tid, sid)
                if len(ids) != count:
                    raise ProtocolError(
                        f"binary object at {start}: schema {sid} of type {tid} has {len(ids)} fields, "
                        f"footer has {count}"
                    )
            fields_end = raw_start
            saved_end = self._end
            self._end = fields_end
            self._enter(start)
            keys = self._keys
            readers = self._readers
            try:
                pos = footer_start
                for i in range(count):
                    if compact:
                        fid = ids[i]  # type: ignore[index]
                        opos = pos
                    else:
                        fid = I32.unpack_from(buf, pos)[0]
                        opos = pos + 4
                    if off_size == 1:
                        off = buf[opos]
                    elif off_size == 2:
                        off = U16.unpack_from(buf, opos)[0]
                    else:
                        off = I32.unpack_from(buf, opos)[0]
                    pos += entry
                    fpos = start + off
                    if not data_start <= fpos < fields_end:
                        raise ProtocolError(f"binary object at {start}: field offset {off} outside the data")
                    code = buf[fpos]
                    value, _ = readers[code](fpos + 1, fpos)
                    key = keys.get((tid, fid))
                    if key is None:
                        name = self._fname(tid, fid)
                        key = name if name is not None else fid
                        keys[(tid, fid)] = key
                    fields[key] = value
                    if code != _NULL and code != _HANDLE:
                        ftypes[key] = code
            finally:
                self._end = saved_end
                self._depth -= 1
        return obj, obj_end


def _decimal_from_wire(scale: int, magnitude: bytes) -> decimal.Decimal:
    negative = magnitude[0] & 0x80
    if negative:
        magnitude = bytes([magnitude[0] & 0x7F]) + magnitude[1:]
    unscaled = int.from_bytes(magnitude, "big")
    digits = tuple(int(c) for c in str(unscaled))
    return decimal.Decimal((1 if negative else 0, digits, -scale))


_READERS: dict[int, str] = {
    TypeCode.BYTE: "_r_byte",
    TypeCode.SHORT: "_r_short",
    TypeCode.INT: "_r_int",
    TypeCode.LONG: "_r_long",
    TypeCode.FLOAT: "_r_float",
    TypeCode.DOUBLE: "_r_double",
    TypeCode.CHAR: "_r_char",
    TypeCode.BOOL: "_r_bool",
    TypeCode.STRING: "_r_string",
    TypeCode.UUID: "_r_uuid",
    TypeCode.DATE: "_r_date",
    TypeCode.TIMESTAMP: "_r_timestamp",
    TypeCode.TIME: "_r_time",
    TypeCode.DECIMAL: "_r_decimal",
    TypeCode.BYTE_ARR: "_r_byte_arr",
    TypeCode.SHORT_ARR: "_r_short_arr",
    TypeCode.INT_ARR: "_r_int_arr",
    TypeCode.LONG_ARR: "_r_long_arr",
    TypeCode.FLOAT_ARR: "_r_float_arr",
    TypeCode.DOUBLE_ARR: "_r_double_arr",
    TypeCode.CHAR_ARR: "_r_char_arr",
    TypeCode.BOOL_ARR: "_r_bool_arr",
    TypeCode.STRING_ARR: "_r_string_arr",
    TypeCode.UUID_ARR: "_r_uuid_arr",
    TypeCode.DATE_ARR: "_r_date_arr",
    TypeCode.TIMESTAMP_ARR: "_r_timestamp_arr",
    TypeCode.TIME_ARR: "_r_time_arr",
    TypeCode.DECIMAL_ARR: "_r_decimal_arr",
    TypeCode.OBJ_ARR: "_r_obj_arr",
    TypeCode.ENUM_ARR: "_r_obj_arr",
    TypeCode.COLLECTION: "_r_collection",
    TypeCode.MAP: "_r_map",
    TypeCode.BINARY_OBJ: "_r_wrapped",
    TypeCode.ENUM: "_r_enum",
    TypeCode.BINARY_ENUM: "_r_enum",
    TypeCode.CLASS: "_r_class",
    TypeCode.OPTIMIZED: "_r_optimized",
    TypeCode.NULL: "_r_null",
    TypeCode.HANDLE: "_r_handle",
    TypeCode.OBJ: "_r_object",
}


def decode_value(
    data: bytes | bytearray | memoryview,
    pos: int = 0,
    *,
    metadata: MetadataResolver | None = None,
    copy_arrays: bool = False,
) -> Any:
    """Decode one value at ``pos`` (convenience wrapper around :class:`BinaryDecoder`)."""
    return BinaryDecoder(metadata, copy_arrays=copy_arrays).decode(data, pos)


# ====================================================================== encoder
_I8_RANGE = (-(1 << 7), (1 << 7) - 1)
_I16_RANGE = (-(1 << 15), (1 << 15) - 1)
_I32_RANGE = (-(1 << 31), (1 << 31) - 1)
_I64_RANGE = (-(1 << 63), (1 << 63) - 1)

#: Type code recorded in metadata for a field written with a given code.
_META_CODE = {
    TypeCode.BINARY_ENUM: TypeCode.ENUM,
    TypeCode.BINARY_OBJ: TypeCode.OBJ,
    TypeCode.HANDLE: TypeCode.OBJ,
    TypeCode.NULL: TypeCode.OBJ,
}

_NP_SCALAR_CODES: dict[type, int] = {
    np.bool_: TypeCode.BOOL,
    np.int8: TypeCode.BYTE,
    np.int16: TypeCode.SHORT,
    np.int32: TypeCode.INT,
    np.int64: TypeCode.LONG,
    np.uint8: TypeCode.SHORT,
    np.uint16: TypeCode.INT,
    np.uint32: TypeCode.LONG,
    np.uint64: TypeCode.LONG,
    np.float16: TypeCode.FLOAT,
    np.float32: TypeCode.FLOAT,
    np.float64: TypeCode.DOUBLE,
}

_NP_ARRAY_CODES: dict[str, int] = {
    "i1": TypeCode.BYTE_ARR,
    "u1": TypeCode.BYTE_ARR,  # same bytes as Java byte[]; reinterpreted (images)
    "i2": TypeCode.SHORT_ARR,
    "u2": TypeCode.CHAR_ARR,
    "i4": TypeCode.INT_ARR,
    "i8": TypeCode.LONG_ARR,
    "f4": TypeCode.FLOAT_ARR,
    "f8": TypeCode.DOUBLE_ARR,
    "b1": TypeCode.BOOL_ARR,
}

_WIDTH_TYPES = frozenset({Int8, Int16, Int32, Float32, Char})

_TYPED_ARRAY_ELEMENT = {
    TypeCode.STRING_ARR: TypeCode.STRING,
    TypeCode.UUID_ARR: TypeCode.UUID,
    TypeCode.DATE_ARR: TypeCode.DATE,
    TypeCode.TIMESTAMP_ARR: TypeCode.TIMESTAMP,
    TypeCode.TIME_ARR: TypeCode.TIME,
    TypeCode.DECIMAL_ARR: TypeCode.DECIMAL,
}


def _bad(value: Any, code: int, reason: str = "") -> ConfigurationError:
    try:
        name = TypeCode(code).name
    except ValueError:
        name = str(code)
    extra = f": {reason}" if reason else ""
    return ConfigurationError(f"cannot encode {type(value).__name__} value {value!r:.80} as {name}{extra}")


class BinaryEncoder:
    """Encodes Python values into Ignite's binary format.

    Objects are written with a full (non-compact) footer, so the server can read
    them without our metadata; every object type written is also recorded, with
    the schema used, in :attr:`types` so the caller can register it
    (``OP_BINARY_TYPE_PUT``) before sending data.  ``metadata`` (optional) lets
    a ``None`` field take the type code the cluster already knows for it, which
    keeps metadata consistent across objects.
    """

    def __init__(self, metadata: Any | None = None) -> None:
        self.metadata = metadata
        #: type id -> BinaryType (with schemas) of every object encoded so far.
        self.types: dict[int, BinaryType] = {}
        self._active: set[int] = set()
        self._code: int = TypeCode.NULL  # code of the value being written, for shared writers
        self._writers: dict[int, Callable[[ByteWriter, Any], None]] = {
            TypeCode.NULL: self._w_null,
            TypeCode.BYTE: self._w_byte,
            TypeCode.SHORT: self._w_short,
            TypeCode.INT: self._w_int,
            TypeCode.LONG: self._w_long,
            TypeCode.FLOAT: self._w_float,
            TypeCode.DOUBLE: self._w_double,
            TypeCode.CHAR: self._w_char,
            TypeCode.BOOL: self._w_bool,
            TypeCode.STRING: self._w_string,
            TypeCode.UUID: self._w_uuid,
            TypeCode.DATE: self._w_date,
            TypeCode.TIMESTAMP: self._w_timestamp,
            TypeCode.TIME: self._w_time,
            TypeCode.DECIMAL: self._w_decimal,
            TypeCode.ENUM: self._w_enum,
            TypeCode.BINARY_ENUM: self._w_enum,
            TypeCode.CLASS: self._w_class,
            TypeCode.OPTIMIZED: self._w_optimized,
            TypeCode.OBJ_ARR: self._w_obj_arr,
            TypeCode.ENUM_ARR: self._w_obj_arr,
            TypeCode.COLLECTION: self._w_collection,
            TypeCode.MAP: self._w_map,
            TypeCode.OBJ: self._w_object,
            TypeCode.BINARY_OBJ: self._w_wrapped,
        }
        for code in ARRAY_DTYPES:
            self._writers[code] = self._w_prim_array
        for code in _TYPED_ARRAY_ELEMENT:
            self._writers[code] = self._w_typed_array

    # ---------------------------------------------------------------- entry points
    def encode(self, value: Any, type_code: int | None = None) -> bytes:
        """Encode one value to bytes."""
        w = ByteWriter()
        self.write(w, value, type_code)
        return bytes(w.buf)

    def write(self, w: ByteWriter, value: Any, type_code: int | None = None) -> None:
        """Append one value (type code first) to ``w``."""
        if isinstance(value, Typed):
            value, type_code = value.value, value.type_code
        if isinstance(value, RawValue):
            w.buf += value.data
            return
        if value is None:
            w.buf.append(_NULL)
            return
        code = self.infer_type_code(value) if type_code is None else int(type_code)
        writer = self._writers.get(code)
        if writer is None:
            raise _bad(value, code, "type code not supported for writing")
        # Writers shared by several codes (arrays, enums) read the code from here.
        self._code = code
        try:
            writer(w, value)
        except ConfigurationError:
            raise
        except RecursionError as exc:
            raise ConfigurationError("value nested too deeply to encode") from exc
        except (struct.error, OverflowError, ValueError, TypeError, decimal.InvalidOperation) as exc:
            raise _bad(value, code, str(exc)) from exc

    @staticmethod
    def infer_type_code(value: Any) -> int:
        """The wire type a value gets without an explicit hint."""
        if value is None:
            return TypeCode.NULL
        t = type(value)
        if t is bool:
            return TypeCode.BOOL
        if t is int:
            return TypeCode.LONG
        if t is float:
            return TypeCode.DOUBLE
        if t is str:
            return TypeCode.STRING
        code = getattr(t, "type_code", None)
        if code is not None and t in _WIDTH_TYPES:
            return code
        if isinstance(value, BinaryObject):
            return TypeCode.OBJ
        if isinstance(value, (bytes, bytearray, memoryview)):
            return TypeCode.BYTE_ARR
        if isinstance(value, np.ndarray):
            code = _NP_ARRAY_CODES.get(value.dtype.str[1:])
            if code is None or value.ndim != 1:
                raise _bad(value, TypeCode.OBJ_ARR, f"no Ignite array type for dtype {value.dtype} ndim {value.ndim}")
            return code
        if isinstance(value, np.generic):
            code = _NP_SCALAR_CODES.get(type(value))
            if code is None:
                raise _bad(value, TypeCode.OBJ, "unsupported numpy scalar type")
            return code
        if isinstance(value, Timestamp):
            return TypeCode.TIMESTAMP
        if isinstance(value, Date):
            return TypeCode.DATE
        if isinstance(value, Time):
            return TypeCode.TIME
        if isinstance(value, _uuid.UUID):
            return TypeCode.UUID
        if isinstance(value, decimal.Decimal):
            return TypeCode.DECIMAL
        if isinstance(value, _dt.datetime):
            return TypeCode.TIMESTAMP
        if isinstance(value, _dt.date):
            return TypeCode.DATE
        if isinstance(value, _dt.time):
            return TypeCode.TIME
        if isinstance(value, EnumValue):
            return value.code
        if isinstance(value, ObjectArray):
            return value.element_code
        if isinstance(value, Collection):
            return TypeCode.COLLECTION
        if isinstance(value, Map):
            return TypeCode.MAP
        if isinstance(value, JavaClass):
            return TypeCode.CLASS
        if isinstance(value, OptimizedObject):
            return TypeCode.OPTIMIZED
        if isinstance(value, (list, tuple, set, frozenset)):
            return TypeCode.COLLECTION
        if isinstance(value, dict):
            return TypeCode.MAP
        if isinstance(value, int):  # int subclasses (IntEnum...)
            return TypeCode.LONG
        if isinstance(value, float):
            return TypeCode.DOUBLE
        if isinstance(value, str):
            return TypeCode.STRING
        raise ConfigurationError(f"cannot encode a {type(value).__name__}: no Ignite binary type for it")

    # ---------------------------------------------------------------- scalars
    @staticmethod
    def _int(value: Any, bounds: tuple[int, int], code: int) -> int:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            raise _bad(value, code, "an integer is required")
        v = int(value)
        if not bounds[0] <= v <= bounds[1]:
            raise _bad(value, code, "out of range")
        return v

    def _w_null(self, w: ByteWriter, value: Any) -> None:
        w.buf.append(_NULL)

    def _w_byte(self, w: ByteWriter, value: Any) -> None:
        w.buf.append(TypeCode.BYTE)
        w.buf.append(self._int(value, _I8_RANGE, TypeCode.BYTE) & 0xFF)

    def _w_short(self, w: ByteWriter, value: Any) -> None:
        w.buf.append(TypeCode.SHORT)
        w.buf += I16.pack(self._int(value, _I16_RANGE, TypeCode.SHORT))

    def _w_int(self, w: ByteWriter, value: Any) -> None:
        w.buf.append(TypeCode.INT)
        w.buf += I32.pack(self._int(value, _I32_RANGE, TypeCode.INT))

    def _w_long(self, w: ByteWriter, value: Any) -> None:
        w.buf.append(TypeCode.LONG)
        w.buf += I64.pack(self._int(value, _I64_RANGE, TypeCode.LONG))

    def _w_float(self, w: ByteWriter, value: Any) -> None:
        w.buf.append(TypeCode.FLOAT)
        w.buf += F32.pack(float(value))

    def _w_double(self, w: ByteWriter, value: Any) -> None:
        w.buf.append(TypeCode.DOUBLE)
        w.buf += F64.pack(float(value))

    def _w_char(self, w: ByteWriter, value: Any) -> None:
        if isinstance(value, str):
            if len(value) != 1 or ord(value) > 0xFFFF:
                raise _bad(value, TypeCode.CHAR, "a char is one UTF-16 code unit")
            unit = ord(value)
        else:
            unit = self._int(value, (0, 0xFFFF), TypeCode.CHAR)
        w.buf.append(TypeCode.CHAR)
        w.buf += U16.pack(unit)

    def _w_bool(self, w: ByteWriter, value: Any) -> None:
        w.buf.append(TypeCode.BOOL)
        w.buf.append(1 if value else 0)

    def _w_string(self, w: ByteWriter, value: Any) -> None:
        if not isinstance(value, str):
            raise _bad(value, TypeCode.STRING, "a str is required")
        data = value.encode("utf-8", "surrogatepass")
        w.buf.append(TypeCode.STRING)
        w.buf += I32.pack(len(data))
        w.buf += data

    def _w_uuid(self, w: ByteWriter, value: Any) -> None:
        if isinstance(value, str):
            value = _uuid.UUID(value)
        if not isinstance(value, _uuid.UUID):
            raise _bad(value, TypeCode.UUID, "a uuid.UUID is required")
        w.buf.append(TypeCode.UUID)
        w.buf += UUID_STRUCT.pack(*uuid_to_java(value))

    def _w_date(self, w: ByteWriter, value: Any) -> None:
        if isinstance(value, Date):
            ms = value.epoch_ms
        elif isinstance(value, Timestamp):
            ms = value.epoch_ms
        elif isinstance(value, _dt.date):
            ms = Date.from_datetime(value).epoch_ms
        else:
            ms = self._int(value, _I64_RANGE, TypeCode.DATE)
        w.buf.append(TypeCode.DATE)
        w.buf += I64.pack(ms)

    def _w_timestamp(self, w: ByteWriter, value: Any) -> None:
        if isinstance(value, Timestamp):
            ts = value
        elif isinstance(value, _dt.datetime):
            ts = Timestamp.from_datetime(value)
        elif isinstance(value, Date):
            ts = Timestamp(value.epoch_ms, 0)
        else:
            raise _bad(value, TypeCode.TIMESTAMP, "a Timestamp or datetime is required")
        if not 0 <= ts.nanos < 1_000_000:
            raise _bad(value, TypeCode.TIMESTAMP, "nanos must be within the millisecond [0, 1e6)")
        w.buf.append(TypeCode.TIMESTAMP)
        w.buf += I64.pack(ts.epoch_ms)
        w.buf += I32.pack(ts.nanos)

    def _w_time(self, w: ByteWriter, value: Any) -> None:
        if isinstance(value, Time):
            ms = value.millis
        elif isinstance(value, _dt.time):
            ms = Time.from_time(value).millis
        else:
            ms = self._int(value, _I64_RANGE, TypeCode.TIME)
        w.buf.append(TypeCode.TIME)
        w.buf += I64.pack(ms)

    def _w_decimal(self, w: ByteWriter, value: Any) -> None:
        if isinstance(value, float):
            value = decimal.Decimal(repr(value))
        elif not isinstance(value, decimal.Decimal):
            value = decimal.Decimal(value)
        if not value.is_finite():
            raise _bad(value, TypeCode.DECIMAL, "NaN and infinities have no BigDecimal form")
        sign, digits, exponent = value.as_tuple()
        unscaled = int("".join(map(str, digits))) if digits else 0
        scale = -int(exponent)
        if not _I32_RANGE[0] <= scale <= _I32_RANGE[1]:
            raise _bad(value, TypeCode.DECIMAL, "scale out of int range")
        # BigInteger.toByteArray of the magnitude: minimal two's complement, so a
        # leading zero byte appears whenever the top bit would be set.
        magnitude = bytearray(unscaled.to_bytes(unscaled.bit_length() // 8 + 1, "big"))
        if sign:
            magnitude[0] |= 0x80
        w.buf.append(TypeCode.DECIMAL)
        w.buf += I32.pack(scale)
        w.buf += I32.pack(len(magnitude))
        w.buf += magnitude

    def _w_type_ref(self, w: ByteWriter, tid: int, class_name: str | None, what: str) -> None:
        w.buf += I32.pack(tid)
        if tid == 0:
            if class_name is None:
                raise ConfigurationError(f"{what} with type id 0 needs a class name")
            w.typed_string(class_name)

    def _w_enum(self, w: ByteWriter, value: Any) -> None:
        if not isinstance(value, EnumValue):
            raise _bad(value, self._code, "an EnumValue is required")
        w.buf.append(self._code)
        self._w_type_ref(w, value.type_id, value.class_name, "enum")
        w.buf += I32.pack(value.ordinal)

    def _w_class(self, w: ByteWriter, value: Any) -> None:
        if not isinstance(value, JavaClass):
            raise _bad(value, TypeCode.CLASS, "a JavaClass is required")
        w.buf.append(TypeCode.CLASS)
        self._w_type_ref(w, value.type_id, value.class_name, "class")

    def _w_optimized(self, w: ByteWriter, value: Any) -> None:
        data = value.data if isinstance(value, OptimizedObject) else bytes(value)
        w.buf.append(TypeCode.OPTIMIZED & 0xFF)
        w.buf += I32.pack(len(data))
        w.buf += data

    # ---------------------------------------------------------------- arrays
    def _w_prim_array(self, w: ByteWriter, value: Any) -> None:
        code = self._code
        dtype = ARRAY_DTYPES[code]
        if code == TypeCode.BYTE_ARR and isinstance(value, (bytes, bytearray, memoryview)):
            data = value if not isinstance(value, memoryview) else value.cast("B")
            w.buf.append(code)
            w.buf += I32.pack(len(data))
            w.buf += data
            return
        if code == TypeCode.CHAR_ARR and isinstance(value, str):
            value = np.frombuffer(value.encode("utf-16-le", "surrogatepass"), dtype="<u2")
        if isinstance(value, np.ndarray):
            arr = value
            if arr.ndim != 1:
                raise _bad(value, code, "only 1-D arrays have an Ignite array type")
            if arr.dtype != dtype:
                same_width_int = (
                    arr.dtype.kind in "iu" and dtype.kind in "iu" and arr.dtype.itemsize == dtype.itemsize
                )
                arr = arr.astype(dtype.newbyteorder("<")) if not same_width_int else arr.view(dtype)
        else:
            arr = np.asarray(list(value), dtype=dtype)
        arr = np.ascontiguousarray(arr, dtype=dtype)
        w.buf.append(code)
        w.buf += I32.pack(len(arr))
        w.buf += arr.tobytes()

    def _w_typed_array(self, w: ByteWriter, value: Any) -> None:
        code = self._code
        elem = _TYPED_ARRAY_ELEMENT[code]
        items = list(value)
        w.buf.append(code)
        w.buf += I32.pack(len(items))
        writer = self._writers[elem]
        for item in items:
            if item is None:
                w.buf.append(_NULL)
            else:
                self._code = elem
                writer(w, item)

    def _enter(self, value: Any) -> None:
        key = id(value)
        if key in self._active:
            raise ConfigurationError(f"cannot encode a cyclic structure ({type(value).__name__} contains itself)")
        self._active.add(key)

    def _w_obj_arr(self, w: ByteWriter, value: Any) -> None:
        code = self._code
        if isinstance(value, ObjectArray):
            tid, class_name = value.type_id, value.class_name
        elif code == TypeCode.ENUM_ARR:
            first = next((v for v in value if isinstance(v, EnumValue)), None)
            tid, class_name = (first.type_id, first.class_name) if first else (-1, None)
        else:
            tid, class_name = -1, None
        items = list(value)
        self._enter(value)
        try:
            w.buf.append(code)
            self._w_type_ref(w, tid, class_name, "object array")
            w.buf += I32.pack(len(items))
            for item in items:
                self.write(w, item)
        finally:
            self._active.discard(id(value))

    def _w_collection(self, w: ByteWriter, value: Any) -> None:
        if isinstance(value, Collection):
            kind = value.kind
        elif isinstance(value, (set, frozenset)):
            kind = CollectionKind.HASH_SET
        else:
            kind = CollectionKind.ARRAY_LIST
        items = list(value)
        self._enter(value)
        try:
            w.buf.append(TypeCode.COLLECTION)
            w.buf += I32.pack(len(items))
            w.buf.append(kind & 0xFF)
            for item in items:
                self.write(w, item)
        finally:
            self._active.discard(id(value))

    def _w_map(self, w: ByteWriter, value: Any) -> None:
        kind = value.kind if isinstance(value, Map) else MapKind.HASH_MAP
        items = list(value.items())
        self._enter(value)
        try:
            w.buf.append(TypeCode.MAP)
            w.buf += I32.pack(len(items))
            w.buf.append(kind & 0xFF)
            for k, v in items:
                self.write(w, k)
                self.write(w, v)
        finally:
            self._active.discard(id(value))

    # ---------------------------------------------------------------- objects
    def _known_field_type(self, tid: int, name: str | int) -> int | None:
        if isinstance(name, str):
            known = self.types.get(tid)
            if known is not None and name in known.fields:
                return known.fields[name].type_code
            if self.metadata is not None and hasattr(self.metadata, "field_type"):
                code = self.metadata.field_type(tid, name)
                if code is not None:
                    return int(code)
        return None

    def _w_wrapped(self, w: ByteWriter, value: Any) -> None:
        inner = ByteWriter()
        self._code = TypeCode.OBJ
        self._w_object(inner, value)
        w.buf.append(TypeCode.BINARY_OBJ)
        w.buf += I32.pack(len(inner.buf))
        w.buf += inner.buf
        w.buf += I32.pack(0)

    def _w_object(self, w: ByteWriter, value: Any) -> None:
        if not isinstance(value, BinaryObject):
            raise _bad(value, TypeCode.OBJ, "a BinaryObject is required")
        obj = value
        self._enter(obj)
        try:
            self._write_object_body(w, obj)
        finally:
            self._active.discard(id(obj))

    def _write_object_body(self, w: ByteWriter, obj: BinaryObject) -> None:
        buf = w.buf
        start = len(buf)
        buf += bytes(_HEADER_LEN)
        tid = obj.type_id
        ids: list[int] = []
        offsets: list[int] = []
        meta: dict[str, BinaryField] = {}
        names_known = obj.type_name is not None
        ftypes = obj.field_types
        for key, val in obj.fields.items():
            fid = key if isinstance(key, int) else field_id(key)
            offsets.append(len(buf) - start)
            ids.append(fid)
            hint = ftypes.get(key)
            if isinstance(val, Typed):
                val, hint = val.value, val.type_code
            if val is None:
                buf.append(_NULL)
                code = hint if hint is not None else self._known_field_type(tid, key)
                if code is None:
                    code = TypeCode.OBJ
            else:
                code = int(hint) if hint is not None else self.infer_type_code(val)
                self.write(w, val, code)
            if isinstance(key, str):
                meta[key] = BinaryField(key, _META_CODE.get(code, code), fid)
            else:
                names_known = False
        raw = obj.raw
        raw_off = len(buf) - start
        if raw:
            buf += raw
        footer_start = len(buf)
        hash_code = binary_object_hash(bytes(buf[start + _HEADER_LEN : footer_start]))
        flags = ObjectFlag.USER_TYPE
        if ids:
            flags |= ObjectFlag.HAS_SCHEMA
            last = offsets[-1]
            if last < 0x100:
                flags |= ObjectFlag.OFFSET_ONE_BYTE
                for fid, off in zip(ids, offsets):
                    buf += I32.pack(fid)
                    buf.append(off)
            elif last < 0x10000:
                flags |= ObjectFlag.OFFSET_TWO_BYTES
                for fid, off in zip(ids, offsets):
                    buf += I32.pack(fid)
                    buf += U16.pack(off)
            else:
                for fid, off in zip(ids, offsets):
                    buf += I32.pack(fid)
                    buf += I32.pack(off)
            if raw:
                flags |= ObjectFlag.HAS_RAW
                buf += I32.pack(raw_off)
            sid = schema_id(ids)
            schema_off = footer_start - start
        else:
            sid = 0
            if raw:
                flags |= ObjectFlag.HAS_RAW
                schema_off = raw_off
            else:
                schema_off = 0
        total = len(buf) - start
        buf[start] = TypeCode.OBJ
        buf[start + 1] = 1
        OBJECT_HEADER.pack_into(buf, start + 2, int(flags), tid, hash_code, total, sid, schema_off)
        if names_known and obj.type_name is not None:
            self._record_type(BinaryType(tid, obj.type_name, meta, schemas={sid: tuple(ids)} if ids else {}))

    def _record_type(self, binary_type: BinaryType) -> None:
        known = self.types.get(binary_type.type_id)
        if known is None:
            self.types[binary_type.type_id] = binary_type
        else:
            known.merge(binary_type)


def encode_value(value: Any, type_code: int | None = None) -> bytes:
    """Encode one value (convenience wrapper around :class:`BinaryEncoder`)."""
    return BinaryEncoder().encode(value, type_code)

