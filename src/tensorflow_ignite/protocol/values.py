"""The Python value model of Ignite's binary format.

Decoding maps every type code to a Python value chosen so that encoding the
value again reproduces the same wire value:

==========================  ===================================================
type code                   Python value
==========================  ===================================================
1 byte, 2 short, 3 int      :class:`Int8`, :class:`Int16`, :class:`Int32` (``int``
                            subclasses that remember the wire width)
4 long                      ``int``
5 float                     :class:`Float32` (a ``float`` subclass)
6 double                    ``float``
7 char                      :class:`Char` (a one-code-unit ``str`` subclass)
8 bool                      ``bool``
9 string                    ``str`` (invalid UTF-8 replaced with U+FFFD, as Java)
10 UUID                     ``uuid.UUID``
11 date                     :class:`Date` (epoch milliseconds)
33 timestamp                :class:`Timestamp` (epoch ms + nanos within the ms)
36 time                     :class:`Time` (milliseconds of ``java.sql.Time``)
30 decimal                  ``decimal.Decimal`` (exact digits and scale)
28 enum, 38 binary enum     :class:`EnumValue` (type id + ordinal)
12-19 primitive arrays      1-D ``numpy.ndarray`` (int8, <i2, <i4, <i8, <f4,
                            <f8, <u2 for char, bool) -- zero-copy read-only views
                            of the frame unless the decoder copies
20/21/22/31/34/37 arrays    ``list`` (elements may be ``None``)
23 object array             :class:`ObjectArray` (a ``list`` with ``type_id``)
29 enum array               :class:`ObjectArray` with ``element_code=ENUM``
24 collection               :class:`Collection` (a ``list`` with ``kind``)
25 map                      :class:`Map` (a ``dict`` with ``kind``)
27 wrapped object           the wrapped value itself (usually a BinaryObject)
32 class                    :class:`JavaClass`
-2 optimized                :class:`Date`/:class:`Time`/:class:`Timestamp` for java.sql.Date,
                            java.util.Date, java.sql.Time, java.sql.Timestamp
                            (:mod:`.javatime`); other classes :class:`OptimizedObject`
                            (opaque Java bytes)
101 null                    ``None``
102 handle                  the very object it refers to (shared identity)
103 object                  :class:`BinaryObject`
==========================  ===================================================

So a decoded value encodes back to the same bytes, with three deliberate
exceptions that change bytes but not meaning: a wrapped object (27) is written
back as a plain object (103), handles are written as copies, and objects are
always written with full (not compact) footers.

For encoding, plain Python values map to defaults (``int`` -> long, ``float``
-> double, ``str`` -> string, ``bytes`` -> byte[], ``list``/``tuple`` ->
collection (ArrayList), ``set`` -> collection (HashSet), ``dict`` -> map
(HashMap), ``datetime`` -> timestamp, ``date`` -> date, ``time`` -> time);
:class:`Typed` or ``BinaryObject.field_types`` pick another wire type.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tensorflow_ignite.protocol.codes import CollectionKind, MapKind, TypeCode
from tensorflow_ignite.protocol.hashing import field_id as _field_id
from tensorflow_ignite.protocol.hashing import type_id as _type_id

__all__ = [
    "Int8",
    "Int16",
    "Int32",
    "Float32",
    "Char",
    "Date",
    "Timestamp",
    "Time",
    "EnumValue",
    "JavaClass",
    "OptimizedObject",
    "ObjectArray",
    "Collection",
    "Map",
    "Typed",
    "RawValue",
    "BinaryObject",
    "BinaryField",
    "BinaryType",
    "BinaryTypeRegistry",
    "values_equal",
]

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
_MS = _dt.timedelta(milliseconds=1)


def _datetime_to_epoch_us(value: _dt.datetime) -> int:
    """Microseconds since the epoch; a naive datetime is taken as UTC."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=_dt.UTC)
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


class Int8(int):
    """A Java ``byte`` (type 1): an ``int`` that encodes back as a byte."""

    __slots__ = ()
    type_code = TypeCode.BYTE

    def __repr__(self) -> str:
        return f"Int8({int(self)})"


class Int16(int):
    """A Java ``short`` (type 2)."""

    __slots__ = ()
    type_code = TypeCode.SHORT

    def __repr__(self) -> str:
        return f"Int16({int(self)})"


class Int32(int):
    """A Java ``int`` (type 3)."""

    __slots__ = ()
    type_code = TypeCode.INT

    def __repr__(self) -> str:
        return f"Int32({int(self)})"


class Float32(float):
    """A Java ``float`` (type 5); the value is already rounded to single precision."""

    __slots__ = ()
    type_code = TypeCode.FLOAT

    def __repr__(self) -> str:
        return f"Float32({float(self)!r})"


class Char(str):
    """A Java ``char`` (type 7): one UTF-16 code unit."""

    __slots__ = ()
    type_code = TypeCode.CHAR

    def __repr__(self) -> str:
        return f"Char({str(self)!r})"


@dataclass(frozen=True, slots=True)
class Date:
    """``java.util.Date`` (type 11): milliseconds since 1970-01-01T00:00Z.

    Kept as an integer because Java's range (+-292 million years) exceeds
    ``datetime``'s; :meth:`to_datetime` converts when the value fits.
    """

    epoch_ms: int

    def to_datetime(self) -> _dt.datetime:
        """A timezone-aware UTC ``datetime`` (raises ``OverflowError`` out of range)."""
        return _EPOCH + self.epoch_ms * _MS

    @classmethod
    def from_datetime(cls, value: _dt.date) -> Date:
        """From a ``datetime`` (naive = UTC; sub-millisecond part floored) or a ``date`` (midnight UTC)."""
        if not isinstance(value, _dt.datetime):
            value = _dt.datetime(value.year, value.month, value.day, tzinfo=_dt.UTC)
        return cls(_datetime_to_epoch_us(value) // 1000)


@dataclass(frozen=True, slots=True)
class Timestamp:
    """``java.sql.Timestamp`` (type 33): epoch milliseconds plus nanoseconds within that millisecond.

    On the wire: ``long getTime()`` then ``int getNanos() % 1_000_000``
    (``BinaryWriterExImpl.doWriteTimestamp``), so ``nanos`` is in ``[0, 1e6)``
    and the exact instant is ``epoch_ns``.  A ``datetime`` would lose the
    nanoseconds, hence this type.
    """

    epoch_ms: int
    nanos: int = 0

    @property
    def epoch_ns(self) -> int:
        """Nanoseconds since the epoch."""
        return self.epoch_ms * 1_000_000 + self.nanos

    @classmethod
    def from_epoch_ns(cls, epoch_ns: int) -> Timestamp:
        ms, ns = divmod(epoch_ns, 1_000_000)
        return cls(ms, ns)

    def to_datetime(self) -> _dt.datetime:
        """A UTC ``datetime`` (sub-microsecond nanoseconds are truncated)."""
        return _EPOCH + _dt.timedelta(microseconds=self.epoch_ns // 1000)

    @classmethod
    def from_datetime(cls, value: _dt.datetime) -> Timestamp:
        """From a ``datetime`` (naive = UTC)."""
        return cls.from_epoch_ns(_datetime_to_epoch_us(value) * 1000)


@dataclass(frozen=True, slots=True)
class Time:
    """``java.sql.Time`` (type 36): its ``getTime()`` milliseconds.

    For a time of day this is milliseconds since midnight (UTC day 0).
    """

    millis: int

    def to_time(self) -> _dt.time:
        """The time of day (milliseconds modulo one day)."""
        ms = self.millis % 86_400_000
        return _dt.time(ms // 3_600_000, ms // 60_000 % 60, ms // 1000 % 60, ms % 1000 * 1000)

    @classmethod
    def from_time(cls, value: _dt.time) -> Time:
        """From a time of day (sub-millisecond part floored)."""
        return cls(((value.hour * 60 + value.minute) * 60 + value.second) * 1000 + value.microsecond // 1000)


@dataclass(frozen=True, slots=True)
class EnumValue:
    """An enum value (type 28, or 38 for a binary enum): type id and ordinal.

    ``class_name`` is set only when the writer did not register the type
    (type id 0 followed by the class name).  The constant's name is in the
    type's :class:`BinaryType` (``enum_values``).
    """

    type_id: int
    ordinal: int
    code: int = TypeCode.ENUM
    class_name: str | None = None


@dataclass(frozen=True, slots=True)
class JavaClass:
    """A ``java.lang.Class`` value (type 32)."""

    type_id: int
    class_name: str | None = None


@dataclass(frozen=True, slots=True)
class OptimizedObject:
    """A value Java wrote with its optimized marshaller (type -2): opaque bytes."""

    data: bytes


class ObjectArray(list):
    """``Object[]`` (type 23) or an enum array (type 29): a list plus the component type id.

    ``type_id`` -1 means ``java.lang.Object``; ``class_name`` is set for an
    unregistered component type (type id 0).
    """

    __slots__ = ("type_id", "class_name", "element_code")

    def __init__(
        self,
        items: Iterable[Any] = (),
        type_id: int = -1,
        class_name: str | None = None,
        element_code: int = TypeCode.OBJ_ARR,
    ) -> None:
        super().__init__(items)
        self.type_id = type_id
        self.class_name = class_name
        self.element_code = element_code

    def __repr__(self) -> str:
        return f"ObjectArray({list.__repr__(self)}, type_id={self.type_id})"


class Collection(list):
    """A Java collection (type 24): a list plus the collection kind byte."""

    __slots__ = ("kind",)

    def __init__(self, items: Iterable[Any] = (), kind: int = CollectionKind.ARRAY_LIST) -> None:
        super().__init__(items)
        self.kind = kind

    def __repr__(self) -> str:
        return f"Collection({list.__repr__(self)}, kind={self.kind})"


class Map(dict):
    """A Java map (type 25): a dict plus the map kind byte."""

    __slots__ = ("kind",)

    def __init__(self, items: Mapping[Any, Any] | Iterable[tuple[Any, Any]] = (), kind: int = MapKind.HASH_MAP) -> None:
        super().__init__(items)
        self.kind = kind

    def __repr__(self) -> str:
        return f"Map({dict.__repr__(self)}, kind={self.kind})"


@dataclass(frozen=True, slots=True)
class Typed:
    """An explicit wire type for one value, e.g. ``Typed(5, TypeCode.INT)``."""

    value: Any
    type_code: int


@dataclass(frozen=True, slots=True)
class RawValue:
    """Bytes of an already encoded value, written verbatim (type code included)."""

    data: bytes


def values_equal(a: Any, b: Any) -> bool:
    """Structural equality that understands numpy arrays inside containers."""
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return False
        return all(values_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True  # NaN payloads round-trip; treat NaN == NaN here
    try:
        return bool(a == b)
    except (ValueError, TypeError):
        return False


class BinaryObject:
    """A complex object (type 103): type and ordered field values.

    ``fields`` maps field names to values, in footer (write) order.  A field
    whose name is unknown (no metadata available when decoding) is keyed by its
    int field id instead.  ``field_types`` maps a field to the type code it was
    decoded from, or the one to write it as; a field absent there is inferred
    from its value on encoding.  ``raw`` holds the raw-data section, if any.
    """

    __slots__ = ("type_id", "type_name", "fields", "field_types", "hash_code", "schema_id", "raw")

    def __init__(
        self,
        type_name: str | None = None,
        fields: Mapping[str | int, Any] | None = None,
        *,
        type_id: int | None = None,
        field_types: Mapping[str | int, int] | None = None,
        raw: bytes | None = None,
        hash_code: int | None = None,
        schema_id: int | None = None,
    ) -> None:
        if type_id is None:
            if type_name is None:
                raise ValueError("BinaryObject needs a type_name or a type_id")
            type_id = _type_id(type_name)
        self.type_id: int = type_id
        self.type_name: str | None = type_name
        self.fields: dict[str | int, Any] = dict(fields or {})
        self.field_types: dict[str | int, int] = dict(field_types or {})
        self.raw: bytes | None = raw
        self.hash_code: int | None = hash_code
        self.schema_id: int | None = schema_id

    def __getitem__(self, name: str | int) -> Any:
        return self.fields[name]

    def __setitem__(self, name: str | int, value: Any) -> None:
        self.fields[name] = value

    def __contains__(self, name: object) -> bool:
        return name in self.fields

    def get(self, name: str | int, default: Any = None) -> Any:
        return self.fields.get(name, default)

    def field_ids(self) -> list[int]:
        """Field ids in order (name hashed with the default id mapper, or the int key)."""
        return [k if isinstance(k, int) else _field_id(k) for k in self.fields]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BinaryObject):
            return NotImplemented
        return (
            self.type_id == other.type_id
            and values_equal(self.fields, other.fields)
            and (self.raw or b"") == (other.raw or b"")
        )

    def __hash__(self) -> int:
        # Objects can be map keys; fields are mutable, so hash only the type.
        return hash(("BinaryObject", self.type_id))

    def __repr__(self) -> str:
        name = self.type_name if self.type_name is not None else f"type_id={self.type_id}"
        return f"BinaryObject({name}, {self.fields!r})"


@dataclass(frozen=True, slots=True)
class BinaryField:
    """One field of a binary type's metadata."""

    name: str
    type_code: int
    field_id: int


@dataclass(slots=True)
class BinaryType:
    """Binary type metadata (``BinaryMetadata``) as exchanged by ops 3002/3003.

    ``fields`` maps name -> :class:`BinaryField`; ``schemas`` maps schema id ->
    ordered field ids (what a compact footer omits); ``enum_values`` maps a
    constant name to its ordinal for enum types.
    """

    type_id: int
    type_name: str
    fields: dict[str, BinaryField] = field(default_factory=dict)
    affinity_key_field: str | None = None
    is_enum: bool = False
    enum_values: dict[str, int] = field(default_factory=dict)
    schemas: dict[int, tuple[int, ...]] = field(default_factory=dict)

    def field_name(self, fid: int) -> str | None:
        """Name of the field with id ``fid``, or None."""
        for f in self.fields.values():
            if f.field_id == fid:
                return f.name
        return None

    def merge(self, other: BinaryType) -> bool:
        """Add ``other``'s fields, schemas and enum values; return True if anything was new."""
        changed = False
        for name, f in other.fields.items():
            if name not in self.fields:
                self.fields[name] = f
                changed = True
        for sid, ids in other.schemas.items():
            if sid not in self.schemas:
                self.schemas[sid] = ids
                changed = True
        for name, ordinal in other.enum_values.items():
            if name not in self.enum_values:
                self.enum_values[name] = ordinal
                changed = True
        return changed


class BinaryTypeRegistry:
    """An in-memory map of type id -> :class:`BinaryType`; the decoder's metadata source.

    Implements the resolver protocol the decoder needs: ``schema_field_ids``
    (for compact footers), ``field_name`` and ``type_name``.
    """

    def __init__(self, types: Iterable[BinaryType] = ()) -> None:
        self._types: dict[int, BinaryType] = {}
        self._names: dict[int, dict[int, str]] = {}
        for t in types:
            self.add(t)

    def add(self, binary_type: BinaryType) -> bool:
        """Register or merge a type; returns True if the registry learned something."""
        known = self._types.get(binary_type.type_id)
        if known is None:
            self._types[binary_type.type_id] = BinaryType(
                binary_type.type_id,
                binary_type.type_name,
                dict(binary_type.fields),
                binary_type.affinity_key_field,
                binary_type.is_enum,
                dict(binary_type.enum_values),
                dict(binary_type.schemas),
            )
            changed = True
        else:
            changed = known.merge(binary_type)
        if changed:
            self._names[binary_type.type_id] = {
                f.field_id: f.name for f in self._types[binary_type.type_id].fields.values()
            }
        return changed

    def get(self, type_id: int) -> BinaryType | None:
        return self._types.get(type_id)

    def __contains__(self, type_id: object) -> bool:
        return type_id in self._types

    def __iter__(self) -> Iterator[BinaryType]:
        return iter(self._types.values())

    def __len__(self) -> int:
        return len(self._types)

    def schema_field_ids(self, type_id: int, schema_id: int) -> tuple[int, ...] | None:
        t = self._types.get(type_id)
        return None if t is None else t.schemas.get(schema_id)

    def field_name(self, type_id: int, fid: int) -> str | None:
        names = self._names.get(type_id)
        return None if names is None else names.get(fid)

    def type_name(self, type_id: int) -> str | None:
        t = self._types.get(type_id)
        return None if t is None else t.type_name

    def field_type(self, type_id: int, name: str) -> int | None:
        t = self._types.get(type_id)
        if t is None:
            return None
        f = t.fields.get(name)
        return None if f is None else f.type_code
