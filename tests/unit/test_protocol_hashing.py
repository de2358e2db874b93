"""Java-compatible ids and hashes, checked against independent reference code and known Java values."""

from __future__ import annotations

import struct

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from tensorflow_ignite.protocol import hashing


# ----------------------------------------------------------- reference code
# Deliberately naive re-implementations written from the Java definitions.
def ref_string_hash(s: str) -> int:
    """java.lang.String.hashCode over UTF-16 code units, int32 overflow."""
    units = struct.unpack(f"<{len(s.encode('utf-16-le', 'surrogatepass')) // 2}H",
                          s.encode("utf-16-le", "surrogatepass"))
    h = 0
    for u in units:
        h = (h * 31 + u) % (1 << 32)
    return h - (1 << 32) if h >= 1 << 31 else h


def ref_schema_id(field_ids: list[int]) -> int:
    """BinaryUtils.schemaInitialId + updateSchemaId, byte by byte (FNV-1, xor then multiply)."""
    if not field_ids:
        return 0
    h = 0x811C9DC5
    for fid in field_ids:
        for shift in (0, 8, 16, 24):
            h ^= (fid >> shift) & 0xFF
            h = (h * 0x01000193) % (1 << 32)
    return h - (1 << 32) if h >= 1 << 31 else h


def ref_array_hash(data: bytes) -> int:
    """java.util.Arrays.hashCode(byte[]): signed bytes."""
    h = 1
    for b in data:
        h = (31 * h + (b if b < 128 else b - 256)) % (1 << 32)
    return h - (1 << 32) if h >= 1 << 31 else h


# ------------------------------------------------------------ known values
def test_known_java_string_hashes() -> None:
    # Values printed by Java for these literals.
    assert hashing.java_string_hash("") == 0
    assert hashing.java_string_hash("hello") == 99162322
    assert hashing.java_string_hash("Aa") == hashing.java_string_hash("BB") == 2112
    assert hashing.java_string_hash("Person") == -1907849355
    assert hashing.java_string_hash("person") == -991716523


def test_type_and_field_ids_lower_case_the_name() -> None:
    # "Person".toLowerCase().hashCode()
    assert hashing.type_id("Person") == -991716523
    assert hashing.type_id("PERSON") == hashing.type_id("person")
    assert hashing.field_id("Name") == ref_string_hash("name")
    assert hashing.type_id("org.apache.ignite.examples.Person") == ref_string_hash(
        "org.apache.ignite.examples.person"
    )


def test_cache_id_is_case_sensitive() -> None:
    assert hashing.cache_id("SQL_PUBLIC_PERSON") == ref_string_hash("SQL_PUBLIC_PERSON")
    assert hashing.cache_id("a") == 97
    assert hashing.cache_id("Cache") != hashing.cache_id("cache")


def test_non_bmp_characters_hash_as_surrogate_pairs() -> None:
    s = "a\U0001F600b"  # one emoji = two UTF-16 code units
    assert hashing.java_string_hash(s) == ref_string_hash(s)
    h = 0
    for unit in (0x61, 0xD83D, 0xDE00, 0x62):
        h = (31 * h + unit) % (1 << 32)
    assert hashing.java_string_hash(s) == h - (1 << 32) * (h >= 1 << 31)


def test_java_lower_uses_simple_case_mapping() -> None:
    # Character.toLowerCase('\u0130') == 'i' (Python's str.lower gives "i\u0307").
    assert hashing.java_lower("\u0130") == "i"
    assert hashing.type_id("\u0130D") == ref_string_hash("id")
    assert hashing.java_lower("ÄÖÜ") == "äöü"


def test_zero_ids_are_rejected() -> None:
    # "" hashes to 0, which Ignite reserves for "unregistered".
    import pytest

    with pytest.raises(ValueError):
        hashing.type_id("")
    with pytest.raises(ValueError):
        hashing.field_id("")


def test_schema_id_matches_reference() -> None:
    ids = [hashing.field_id(n) for n in ("id", "name", "salary")]
    assert hashing.schema_id(ids) == ref_schema_id(ids)
    assert hashing.schema_id([]) == 0
    # Initial value is the FNV-1 offset basis as a signed int.
    assert hashing.SCHEMA_INITIAL_ID == struct.unpack("<i", struct.pack("<I", 0x811C9DC5))[0]
    assert hashing.update_schema_id(hashing.SCHEMA_INITIAL_ID, 0) == ref_schema_id([0])


def test_object_hash_matches_arrays_hashcode() -> None:
    assert hashing.binary_object_hash(b"") == 1
    assert hashing.binary_object_hash(b"\x03\x05\x00\x00\x00") == ref_array_hash(b"\x03\x05\x00\x00\x00")
    big = bytes(range(256)) * 10  # exercises the numpy closed form
    assert hashing.binary_object_hash(big) == ref_array_hash(big)


@given(st.text())
def test_string_hash_property(s: str) -> None:
    assert hashing.java_string_hash(s) == ref_string_hash(s)
    assert hashing.cache_id(s) == ref_string_hash(s)


@given(st.lists(st.integers(min_value=-(2**31), max_value=2**31 - 1), max_size=20))
def test_schema_id_property(ids: list[int]) -> None:
    assert hashing.schema_id(ids) == ref_schema_id(ids)


@given(st.binary(max_size=3000))
def test_object_hash_property(data: bytes) -> None:
    assert hashing.binary_object_hash(data) == ref_array_hash(data)
    assert hashing.binary_object_hash(memoryview(data)) == ref_array_hash(data)


@given(st.text(alphabet=st.characters(max_codepoint=0x7F), min_size=1))
def test_ascii_type_id_property(name: str) -> None:
    expected = ref_string_hash(name.lower())
    if expected:
        assert hashing.type_id(name) == expected


# ------------------------------------------------------- key -> partition
def ref_long_hash(v: int) -> int:
    """java.lang.Long.hashCode: (int) (v ^ (v >>> 32)), as an unsigned 32-bit value."""
    u = v % (1 << 64)
    return (u ^ (u >> 32)) % (1 << 32)


def ref_partition(h: int, parts: int) -> int:
    """RendezvousAffinityFunction.partition from the key's int hashCode (any sign)."""
    u = h % (1 << 32)
    if parts & (parts - 1) == 0:
        return (u ^ (u >> 16)) & (parts - 1)
    signed = u - (1 << 32) if u >= 1 << 31 else u
    return abs(signed) % parts  # |signed % parts|: Java's % takes the dividend's sign


def test_known_key_partitions() -> None:
    # "hello".hashCode() = 99162322 = 0x05E918D2; 0x05E918D2 ^ 0x05E9 = 0x05E91D3B; & 1023 = 0x13B.
    assert hashing.affinity_partition(99162322, 1024) == 0x13B
    assert hashing.affinity_partition(5, 1024) == 5
    assert hashing.affinity_partition(-7, 10) == 7  # |-7 % 10|, not Python's -7 % 10 == 3


@given(st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), min_size=1, max_size=50),
       st.sampled_from([1, 2, 7, 100, 512, 1000, 1024, 65000]))
def test_long_key_partitions_property(values: list[int], parts: int) -> None:
    import numpy as np

    hashes = hashing.long_hash_codes(np.array(values, dtype=np.int64))
    assert hashes.tolist() == [ref_long_hash(v) for v in values]
    want = [ref_partition(ref_long_hash(v), parts) for v in values]
    assert hashing.affinity_partitions(hashes, parts).tolist() == want
    assert [hashing.affinity_partition(int(h), parts) for h in hashes.tolist()] == want


@given(st.lists(st.text(max_size=40), max_size=30))
def test_string_hash_codes_match_one_at_a_time(texts: list[str]) -> None:
    # The writer's vectorized hashes of String keys are String.hashCode(), key by key.
    codes = hashing.string_hash_codes(texts)
    assert codes.dtype == np.uint32
    assert codes.tolist() == [hashing.java_string_hash(t) & 0xFFFFFFFF for t in texts]


def test_string_hash_codes_of_known_strings() -> None:
    texts = ["", "hello", "ab" * 500, "\U0001F600", "key-00000042"]
    assert hashing.string_hash_codes(texts).view(np.int32).tolist() == [
        hashing.java_string_hash(t) for t in texts]
    assert hashing.string_hash_codes(["hello"]).view(np.int32)[0] == 99162322  # "hello".hashCode()
