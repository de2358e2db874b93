"""Java-compatible hash functions Ignite uses for ids.

* cache id  = ``String.hashCode`` of the cache name as is (``ClientUtils.cacheId``);
* type id / field id = ``String.hashCode`` of the lower-cased name
  (``BinaryBasicIdMapper`` with its default ``isLowerCase = true``);
* schema id = Ignite's FNV-1 variant over the field ids, one byte at a time,
  least significant byte first (``BinaryUtils.updateSchemaId``);
* object hash code = ``Arrays.hashCode(byte[])`` over the object's data bytes
  (``BinaryArrayIdentityResolver``), which the server uses to find keys;
* a key's partition = ``RendezvousAffinityFunction.partition(key)`` over the
  key's ``hashCode()`` (``Long.hashCode``, ``String.hashCode``), which lets a
  client send a key's request straight to its primary node.

Java strings are UTF-16, so hashes run over UTF-16 code units (a character
outside the BMP contributes its two surrogates), and Java ``int`` arithmetic
wraps at 32 bits.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from .codes import TypeCode

__all__ = [
    "to_int32",
    "java_string_hash",
    "java_lower",
    "cache_id",
    "type_id",
    "field_id",
    "schema_id",
    "update_schema_id",
    "SCHEMA_INITIAL_ID",
    "FNV1_PRIME",
    "binary_object_hash",
    "long_hash_codes",
    "affinity_partition",
    "affinity_partitions",
    "string_hash_codes",
    "java_key_hash",
]

#: FNV-1 offset basis as a signed Java int (``0x811C9DC5``).
SCHEMA_INITIAL_ID = 0x811C9DC5 - (1 << 32)
#: FNV-1 prime.
FNV1_PRIME = 0x01000193

_MASK32 = 0xFFFFFFFF


def to_int32(value: int) -> int:
    """Wrap an arbitrary Python int to a signed 32-bit Java ``int``."""
    value &= _MASK32
    return value - (1 << 32) if value & 0x80000000 else value


def _code_units(text: str) -> Iterable[int]:
    """UTF-16 code units of ``text`` (what Java's ``charAt`` iterates over)."""
    if text.isascii():
        return text.encode("ascii")
    raw = text.encode("utf-16-le", "surrogatepass")
    return memoryview(raw).cast("H")


def java_string_hash(text: str) -> int:
    """``java.lang.String.hashCode()``: ``h = 31 * h + c`` over UTF-16 code units."""
    h = 0
    for unit in _code_units(text):
        h = (31 * h + unit) & _MASK32
    return to_int32(h)


def _java_lower_unit(unit: int) -> int:
    """``Character.toLowerCase(char)`` for one UTF-16 code unit.

    Python's ``str.lower`` applies full case mapping; Java's ``char`` version
    applies the simple one.  They differ only where the full mapping expands to
    several characters (U+0130 'İ' -> "i̇"); Java's simple mapping is the first
    of them, so taking ``[0]`` matches.  Surrogates are left alone, as in Java.
    """
    if unit < 0x80:
        return unit + 32 if 0x41 <= unit <= 0x5A else unit
    if 0xD800 <= unit <= 0xDFFF:
        return unit
    lowered = chr(unit).lower()
    return ord(lowered[0]) if lowered else unit


def java_lower(text: str) -> str:
    """Lower-case ``text`` exactly as ``BinaryBasicIdMapper`` does (per code unit)."""
    if text.isascii():
        return text.lower()
    units = [_java_lower_unit(u) for u in _code_units(text)]
    return b"".join(u.to_bytes(2, "little") for u in units).decode("utf-16-le", "surrogatepass")


def _lower_case_hash(text: str) -> int:
    h = 0
    if text.isascii():
        for unit in text.lower().encode("ascii"):
            h = (31 * h + unit) & _MASK32
    else:
        for unit in _code_units(text):
            h = (31 * h + _java_lower_unit(unit)) & _MASK32
    return to_int32(h)


def cache_id(name: str) -> int:
    """Cache id of a cache name: ``name.hashCode()`` (case-sensitive)."""
    return java_string_hash(name)


@lru_cache(maxsize=4096)
def type_id(type_name: str) -> int:
    """Type id under Ignite's default id mapper: hash of the lower-cased type name.

    Raises ``ValueError`` when the id is 0, which Ignite reserves for
    "unregistered type" and rejects as well.
    """
    result = _lower_case_hash(type_name)
    if result == 0:
        raise ValueError(f"type name {type_name!r} hashes to type id 0, which Ignite rejects; rename the type")
    return result


@lru_cache(maxsize=16384)
def field_id(field_name: str) -> int:
    """Field id under Ignite's default id mapper: hash of the lower-cased field name."""
    result = _lower_case_hash(field_name)
    if result == 0:
        raise ValueError(f"field name {field_name!r} hashes to field id 0, which Ignite rejects; rename the field")
    return result


def update_schema_id(schema: int, fid: int) -> int:
    """Fold one field id into a schema id (``BinaryUtils.updateSchemaId``)."""
    s = schema & _MASK32
    f = fid & _MASK32
    s = ((s ^ (f & 0xFF)) * FNV1_PRIME) & _MASK32
    s = ((s ^ ((f >> 8) & 0xFF)) * FNV1_PRIME) & _MASK32
    s = ((s ^ ((f >> 16) & 0xFF)) * FNV1_PRIME) & _MASK32
    s = ((s ^ ((f >> 24) & 0xFF)) * FNV1_PRIME) & _MASK32
    return to_int32(s)


def schema_id(field_ids: Iterable[int]) -> int:
    """Schema id of an ordered list of field ids; 0 for an object without fields.

    The writer starts from the FNV-1 offset basis and folds every field id in,
    but ``BinaryWriterExImpl.postWrite`` writes 0 when no field was written.
    """
    s = SCHEMA_INITIAL_ID
    count = 0
    for fid in field_ids:
        s = update_schema_id(s, fid)
        count += 1
    return s if count else 0


def binary_object_hash(data: bytes | bytearray | memoryview) -> int:
    """``Arrays.hashCode(byte[])`` over signed bytes: the hash of an object's data section.

    ``BinaryArrayIdentityResolver`` hashes the bytes between the end of the header
    (plus the class name of an unregistered type) and the start of the footer;
    the server trusts the hash in the header when it looks a key up, so a wrong
    hash makes ``get`` miss.
    """
    n = len(data)
    if n <= _SMALL_HASH:
        h = 1
        for b in bytes(data):
            h = (31 * h + (b - 256 if b > 127 else b)) & _MASK32
        return to_int32(h)
    # Closed form: 31**n + sum(b[i] * 31**(n-1-i)).  int32 arithmetic wraps modulo
    # 2**32, so the sum of int32 products is exact; einsum casts the bytes to int32 in
    # small buffers (no n * 8-byte temporary: 3-4x faster on a 1 MiB value).
    powers = _powers_of_31(n + 1)
    signed = np.frombuffer(data, dtype=np.int8)[::-1]  # b[n-1-k] * 31**k
    total = int(np.einsum("i,i->", signed, _POW31_I32[:n], dtype=np.int32)) + int(powers[n])
    return to_int32(total)


_SMALL_HASH = 48
_POW31: np.ndarray = np.ones(1, dtype=np.uint64)
#: The low 32 bits of ``_POW31`` as int32 (what the wrapping int32 sums need).
_POW31_I32: np.ndarray = np.ones(1, dtype=np.int32)


def _powers_of_31(count: int) -> np.ndarray:
    """``31**k mod 2**64`` for ``k < count`` (grown on demand, cached)."""
    global _POW31, _POW31_I32
    if len(_POW31) < count:
        size = max(count, 2 * len(_POW31), 1024)
        out = np.empty(size, dtype=np.uint64)
        acc = 1
        for k in range(size):
            out[k] = acc
            acc = (acc * 31) & 0xFFFFFFFFFFFFFFFF
        _POW31_I32 = out.astype(np.uint32).view(np.int32)  # first: readers check _POW31's length
        _POW31 = out
    return _POW31


def long_hash_codes(values: np.ndarray) -> np.ndarray:
    """``Long.hashCode()`` of every value, ``(int) (v ^ v >>> 32)``, as ``uint32``."""
    u = np.ascontiguousarray(values, dtype="<i8").view(np.uint64)
    return ((u ^ (u >> np.uint64(32))) & np.uint64(0xFFFFFFFF)).astype(np.uint32)


def string_hash_codes(texts: Sequence[str]) -> np.ndarray:
    """:func:`java_string_hash` of every string, as ``uint32``, computed over all of them at once.

    ``hashCode`` is ``sum(c[i] * 31**(n-1-i))`` modulo ``2**32`` over the UTF-16 code
    units: every unit is multiplied by its power of 31 (``uint32`` products wrap as
    Java's ints do) and the products are summed per string.
    """
    n = len(texts)
    if n == 0:
        return np.zeros(0, dtype=np.uint32)
    joined = "".join(texts)
    if joined.isascii():
        units = np.frombuffer(joined.encode("ascii"), dtype=np.uint8)
        lengths = np.fromiter(map(len, texts), dtype=np.int64, count=n)
    else:
        units = np.frombuffer(joined.encode("utf-16-le", "surrogatepass"), dtype="<u2")
        lengths = np.fromiter(
            (len(t.encode("utf-16-le", "surrogatepass")) // 2 for t in texts), dtype=np.int64, count=n
        )
    ends = np.cumsum(lengths)
    starts = ends - lengths
    longest = int(lengths.max())
    _powers_of_31(longest + 1)
    powers = _POW31_I32[: longest + 1].view(np.uint32)
    # Unit k of a string of length L ending at `end` has exponent end - 1 - k.
    exponent = np.repeat(ends - 1, lengths) - np.arange(len(units), dtype=np.int64)
    products = units.astype(np.uint32) * powers[exponent]
    out = np.zeros(n, dtype=np.uint32)
    nonempty = lengths > 0
    if len(products):
        sums = np.add.reduceat(products, starts[nonempty], dtype=np.uint32)
        out[nonempty] = sums
    return out


def java_key_hash(key: Any, key_type: int | None = None) -> int | None:
    """The Java ``hashCode()`` of a key as it goes on the wire (``key_type``, else the type a
    Python value gets: ``int`` -> ``Long``, ``str`` -> ``String``), for the key types whose
    hash is known here (``Long``, ``Integer``, ``Short``, ``Byte``, ``String``); else None."""
    if isinstance(key, bool):
        return None
    if isinstance(key, (int, np.integer)):
        code = TypeCode.LONG if key_type is None else key_type
        value = int(key)
        if code == TypeCode.LONG:
            u = value & 0xFFFFFFFFFFFFFFFF
            return to_int32(u ^ (u >> 32))
        if code in (TypeCode.INT, TypeCode.SHORT, TypeCode.BYTE):
            return to_int32(value)
        return None
    if isinstance(key, str) and key_type in (None, TypeCode.STRING):
        return java_string_hash(key)
    return None


def affinity_partition(key_hash: int, partitions: int) -> int:
    """The partition of a key whose Java ``hashCode()`` is ``key_hash`` (``RendezvousAffinityFunction``).

    ``(h ^ h >>> 16) & (partitions - 1)`` for a power-of-two count, else
    ``|h % partitions|`` with Java's remainder (it takes the dividend's sign).
    """
    if partitions & (partitions - 1) == 0:
        u = key_hash & _MASK32
        return (u ^ (u >> 16)) & (partitions - 1)
    h = to_int32(key_hash)
    return abs(h - int(h / partitions) * partitions)


def affinity_partitions(hashes: np.ndarray, partitions: int) -> np.ndarray:
    """:func:`affinity_partition` of every hash (``uint32`` or ``int32``), as ``int64``."""
    h = np.asarray(hashes).astype(np.uint32, copy=False)
    if partitions & (partitions - 1) == 0:
        return ((h ^ (h >> np.uint32(16))) & np.uint32(partitions - 1)).astype(np.int64)
    return np.abs(np.fmod(h.view(np.int32).astype(np.int64), partitions))
