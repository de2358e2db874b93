"""The general binary encoder: Python values to the wire, recording the binary types it writes."""

from __future__ import annotations

import datetime as _dt
import decimal
import struct
import uuid as _uuid
from collections.abc import Callable
from typing import Any

import numpy as np

from tensorflow_ignite.errors import ConfigurationError
from tensorflow_ignite.protocol.binary.format import HEADER_LEN, OBJECT_HEADER
from tensorflow_ignite.protocol.buffer import F32, F64, I16, I32, I64, U16, UUID_STRUCT, ByteWriter, uuid_to_java
from tensorflow_ignite.protocol.codes import CollectionKind, MapKind, ObjectFlag, TypeCode
from tensorflow_ignite.protocol.hashing import binary_object_hash, field_id, schema_id
from tensorflow_ignite.protocol.types import (
    ARRAY_DTYPES,
    METADATA_CODES,
    NUMPY_ARRAY_CODES,
    NUMPY_SCALAR_CODES,
    TYPED_ARRAY_ELEMENTS,
)
from tensorflow_ignite.protocol.values import (
    BinaryField,
    BinaryObject,
    BinaryType,
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
    RawValue,
    Time,
    Timestamp,
    Typed,
)

_NULL = TypeCode.NULL

_I8_RANGE = (-(1 << 7), (1 << 7) - 1)
_I16_RANGE = (-(1 << 15), (1 << 15) - 1)
_I32_RANGE = (-(1 << 31), (1 << 31) - 1)
_I64_RANGE = (-(1 << 63), (1 << 63) - 1)

_WIDTH_TYPES = frozenset({Int8, Int16, Int32, Float32, Char})


def _bad(value: Any, code: int, reason: str = "") -> ConfigurationError:
    try:
        name = TypeCode(code).name
    except ValueError:
        name = str(code)
    extra = f": {reason}" if reason else ""
    return ConfigurationError(f"cannot encode {type(value).__name__} value {value!r:.80} as {name}{extra}")


def _ndarray_code(value: np.ndarray) -> int:
    code = NUMPY_ARRAY_CODES.get(value.dtype.str[1:])
    if code is None or value.ndim != 1:
        raise _bad(value, TypeCode.OBJ_ARR, f"no Ignite array type for dtype {value.dtype} ndim {value.ndim}")
    return code


def _numpy_scalar_code(value: np.generic) -> int:
    code = NUMPY_SCALAR_CODES.get(type(value))
    if code is None:
        raise _bad(value, TypeCode.OBJ, "unsupported numpy scalar type")
    return code


#: The wire type of a value of these classes (or a function of the value giving it), first match
#: wins: subclasses come before their bases (``np.bytes_`` is ``bytes``, ``np.float64`` a ``float``,
#: ``Collection`` a ``list``, ``datetime`` a ``date``).
_INFERRED_CODES: tuple[tuple[type | tuple[type, ...], int | Callable[[Any], int]], ...] = (
    (BinaryObject, TypeCode.OBJ),
    ((bytes, bytearray, memoryview), TypeCode.BYTE_ARR),
    (np.ndarray, _ndarray_code),
    (np.generic, _numpy_scalar_code),
    (Timestamp, TypeCode.TIMESTAMP),
    (Date, TypeCode.DATE),
    (Time, TypeCode.TIME),
    (_uuid.UUID, TypeCode.UUID),
    (decimal.Decimal, TypeCode.DECIMAL),
    (_dt.datetime, TypeCode.TIMESTAMP),
    (_dt.date, TypeCode.DATE),
    (_dt.time, TypeCode.TIME),
    (EnumValue, lambda value: value.code),
    (ObjectArray, lambda value: value.element_code),
    (Collection, TypeCode.COLLECTION),
    (Map, TypeCode.MAP),
    (JavaClass, TypeCode.CLASS),
    (OptimizedObject, TypeCode.OPTIMIZED),
    ((list, tuple, set, frozenset), TypeCode.COLLECTION),
    (dict, TypeCode.MAP),
    (int, TypeCode.LONG),  # int subclasses (IntEnum...)
    (float, TypeCode.DOUBLE),
    (str, TypeCode.STRING),
)


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
        for code in TYPED_ARRAY_ELEMENTS:
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
        for classes, inferred in _INFERRED_CODES:
            if isinstance(value, classes):
                return inferred if isinstance(inferred, int) else inferred(value)
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
        self._w_i64(w, TypeCode.LONG, value, None)

    def _w_i64(self, w: ByteWriter, code: int, value: Any, converted: int | None) -> None:
        """A LONG, DATE or TIME (one long): ``converted`` from a value class, else ``value``, an integer."""
        w.buf.append(code)
        w.buf += I64.pack(self._int(value, _I64_RANGE, code) if converted is None else converted)

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
        ms = None
        if isinstance(value, (Date, Timestamp)):
            ms = value.epoch_ms
        elif isinstance(value, _dt.date):
            ms = Date.from_datetime(value).epoch_ms
        self._w_i64(w, TypeCode.DATE, value, ms)

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
        ms = None
        if isinstance(value, Time):
            ms = value.millis
        elif isinstance(value, _dt.time):
            ms = Time.from_time(value).millis
        self._w_i64(w, TypeCode.TIME, value, ms)

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
                same_width_int = arr.dtype.kind in "iu" and dtype.kind in "iu" and arr.dtype.itemsize == dtype.itemsize
                arr = arr.astype(dtype.newbyteorder("<")) if not same_width_int else arr.view(dtype)
        else:
            arr = np.asarray(list(value), dtype=dtype)
        arr = np.ascontiguousarray(arr, dtype=dtype)
        w.buf.append(code)
        w.buf += I32.pack(len(arr))
        w.buf += arr.tobytes()

    def _w_typed_array(self, w: ByteWriter, value: Any) -> None:
        code = self._code
        elem = TYPED_ARRAY_ELEMENTS[code]
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
        buf += bytes(HEADER_LEN)
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
                meta[key] = BinaryField(key, METADATA_CODES.get(code, code), fid)
            else:
                names_known = False
        raw = obj.raw
        raw_off = len(buf) - start
        if raw:
            buf += raw
        footer_start = len(buf)
        hash_code = binary_object_hash(bytes(buf[start + HEADER_LEN : footer_start]))
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
