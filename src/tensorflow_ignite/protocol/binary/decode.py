"""The general binary decoder: any value on the wire to Python (:mod:`~tensorflow_ignite.protocol.values`)."""

from __future__ import annotations

import decimal
import functools
import struct
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from tensorflow_ignite.errors import MissingSchemaError, ProtocolError, UnsupportedJavaObjectError
from tensorflow_ignite.protocol.binary.format import HEADER_LEN, OBJECT_HEADER
from tensorflow_ignite.protocol.buffer import F32, F64, I16, I32, I64, U16, UUID_STRUCT, uuid_from_java
from tensorflow_ignite.protocol.codes import ObjectFlag, TypeCode
from tensorflow_ignite.protocol.hashing import type_id
from tensorflow_ignite.protocol.javatime import decode_java_time
from tensorflow_ignite.protocol.types import ARRAY_DTYPES, JAVA_TYPE_NAMES, TYPED_ARRAY_ELEMENTS
from tensorflow_ignite.protocol.values import (
    BinaryObject,
    Char,
    Collection,
    Date,
    EnumValue,
    Float32,
    Int8,
    Int16,
    Int32,
    JavaClass,
    Map,
    ObjectArray,
    OptimizedObject,
    Time,
    Timestamp,
)

_NULL = TypeCode.NULL
_HANDLE = TypeCode.HANDLE


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
        # Arrays come from the type-code registry, as the encoder's writers do.
        for code in ARRAY_DTYPES:
            table[code] = functools.partial(self._prim_array, code)
        for code, element in TYPED_ARRAY_ELEMENTS.items():
            what = JAVA_TYPE_NAMES[element].rpartition(".")[2] + "[]"
            table[code] = functools.partial(self._typed_elements, element, what)
        self._readers = table

    # ---------------------------------------------------------------- entry points
    def decode(self, data: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None) -> Any:
        """Decode the single value starting at ``pos``."""
        return self.decode_at(data, pos, end)[0]

    def decode_at(self, data: bytes | bytearray | memoryview, pos: int = 0, end: int | None = None) -> tuple[Any, int]:
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
        except (
            struct.error,
            IndexError,
            ValueError,
            OverflowError,
            TypeError,
            RecursionError,
            UnicodeError,
            decimal.InvalidOperation,
        ) as exc:
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
    def _prim_array(self, code: int, p: int, start: int) -> tuple[Any, int]:
        """The reader of the primitive array type ``code`` (bound to it in ``_readers``): a numpy array."""
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

    def _typed_elements(self, elem_code: int, what: str, p: int, start: int) -> tuple[Any, int]:
        """The reader of an array of typed values (bound to its element code in ``_readers``): a list."""
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
        return self._items(ObjectArray((), tid, name, code), n, p, start)

    def _r_collection(self, p: int, start: int) -> tuple[Any, int]:
        n = self._count(p, "collection size")
        return self._items(Collection((), self._kind(p + 4, "collection kind")), n, p + 5, start)

    def _items(self, container: list[Any], n: int, p: int, start: int) -> tuple[Any, int]:
        """Read ``n`` values at ``p`` into ``container`` (an object array or a collection), which is
        the value at ``start``: registered as its handle first, since its items may refer back to it."""
        self._handles[start] = container
        self._enter(start)
        try:
            for _ in range(n):
                value, p = self._read(p)
                container.append(value)
        finally:
            self._depth -= 1
        return container, p

    def _kind(self, p: int, what: str) -> int:
        """The signed ``byte`` kind of a collection or map (``CollectionKind``, ``MapKind``) at ``p``."""
        self._need(p, 1, what)
        kind = self._buf[p]
        return kind - 256 if kind > 127 else kind

    def _r_map(self, p: int, start: int) -> tuple[Any, int]:
        n = self._count(p, "map size", 2)
        kind = self._kind(p + 4, "map kind")
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
        self._need(start, HEADER_LEN, "object header")
        if buf[p] != 1:
            raise ProtocolError(f"unsupported binary object version {buf[p]} at offset {start}")
        flags, tid, hash_code, total_len, sid, schema_off = OBJECT_HEADER.unpack_from(buf, start + 2)
        obj_end = start + total_len
        if total_len < HEADER_LEN or obj_end > self._end:
            raise ProtocolError(
                f"binary object at offset {start} claims length {total_len}, {self._end - start} bytes available"
            )
        data_start = start + HEADER_LEN
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
                        fid = ids[i]  # type: ignore[index]  # compact footers only with a schema: ids is set above
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
