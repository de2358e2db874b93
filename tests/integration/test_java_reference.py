"""The Java thin-client reference programs (bench/java) against real nodes.

TypeWriter is the independent writer the decoder tests compare against, and ScanBench
the benchmark reference; both run on Apache Ignite's own Java thin client.  These
tests check the programs themselves: what they write, what they print, that a scan
sees it.  They do not use our Python client.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import uuid
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tensorflow_ignite.local.cluster import LocalCluster

N = 5

# Every field TypeWriter puts into AllTypes, with its Ignite metadata type name.
ALL_TYPES_FIELDS = {
    "f_byte": "byte", "f_short": "short", "f_int": "int", "f_long": "long",
    "f_float": "float", "f_double": "double", "f_char": "char", "f_bool": "boolean",
    "f_string": "String", "f_uuid": "UUID", "f_date": "Date", "f_timestamp": "Timestamp",
    "f_time": "Time", "f_decimal_pos": "decimal", "f_decimal_neg": "decimal",
    "f_decimal_large_scale": "decimal", "f_enum": "Enum",
    "f_bytes": "byte[]", "f_shorts": "short[]", "f_ints": "int[]", "f_longs": "long[]",
    "f_floats": "float[]", "f_doubles": "double[]", "f_chars": "char[]", "f_bools": "boolean[]",
    "f_strings": "String[]", "f_uuids": "UUID[]", "f_dates": "Date[]",
    "f_timestamps": "Timestamp[]", "f_times": "Time[]", "f_decimals": "decimal[]",
    "f_objects": "Object[]", "f_list": "Collection", "f_map": "Map", "f_inner": "Object",
    "f_inner_null": "Object", "f_null_string": "String", "f_null_uuid": "UUID",
    "f_null_ints": "int[]", "f_null_decimal": "decimal", "f_nullable_long": "long",
    "f_optional": "int",
}

SQL_COLUMNS = [
    "C_TINYINT", "C_SMALLINT", "C_INT", "C_BIGINT", "C_REAL", "C_DOUBLE", "C_BOOLEAN",
    "C_VARCHAR", "C_CHAR", "C_UUID", "C_DATE", "C_TIME", "C_TIMESTAMP", "C_DECIMAL",
    "C_BINARY", "C_VARBINARY", "C_NULL",
]


def _load_javaclient() -> ModuleType:
    """bench/ is not a package: load bench/javaclient.py by path."""
    path = Path(__file__).resolve().parents[2] / "bench" / "javaclient.py"
    spec = importlib.util.spec_from_file_location("javaclient", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("javaclient", module)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def javaclient() -> ModuleType:
    module = _load_javaclient()
    module.build_java_tools()
    return module


def _check_scan(javaclient: ModuleType, cluster: LocalCluster, cache: str) -> None:
    host, port = cluster.address()
    runs = javaclient.run_scan_bench(host, port, cache, page_size=2, repeat=2, warmup=1)
    assert [r["rep"] for r in runs] == [0, 1]
    for r in runs:
        assert r["rows"] == N, r
        assert r["bytes"] > 0 and r["wire_bytes"] > r["bytes"] // 2, r
        assert r["seconds"] > 0 and r["rows_per_s"] > 0 and r["mb_per_s"] > 0, r
        assert r["cache"] == cache and r["page_size"] == 2 and r["mode"] == "binary"
    assert runs[0]["checksum"] == runs[1]["checksum"]
    # Integer keys 0..1023 land in partition == key under the default rendezvous affinity.
    (one,) = javaclient.run_scan_bench(host, port, cache, page_size=10, partition=1)
    assert one["rows"] == 1 and one["partition"] == 1, one


def test_type_writer_writes_every_ignite_type(javaclient: ModuleType, ignite_node: LocalCluster,
                                              cache_name: str) -> None:
    host, port = ignite_node.address()
    records = javaclient.run_type_writer(host, port, cache_name, N)

    assert [r["key"] for r in records] == list(range(N))
    for r in records:
        k = r["key"]
        assert r["type_name"] == "AllTypes"
        fields: dict[str, Any] = r["fields"]
        expected_names = set(ALL_TYPES_FIELDS) - ({"f_optional"} if k % 2 else set())
        assert set(fields) == expected_names, k
        assert r["types"] == {f: ALL_TYPES_FIELDS[f] for f in fields}
        # The documented encodings parse as the types they stand for.
        uuid.UUID(fields["f_uuid"])
        for name in ("f_decimal_pos", "f_decimal_neg", "f_decimal_large_scale"):
            Decimal(fields[name])
        assert Decimal(fields["f_decimal_pos"]) > 0 > Decimal(fields["f_decimal_neg"])
        assert 0 < fields["f_timestamp"]["nanos"] < 1_000_000
        assert fields["f_enum"] == {"type": "TfiColor", "ordinal": k % 3, "name": ["RED", "GREEN", "BLUE"][k % 3]}
        assert fields["f_inner"] == {
            "type_name": "Inner", "fields": {"id": k * 1000, "label": f"inner-{k}", "ratio": k / 4},
        }
        assert len(fields["f_bytes"]) == 3 * k and all(-128 <= b < 128 for b in fields["f_bytes"])
        assert all(len(c) == 1 for c in fields["f_chars"]) and len(fields["f_char"]) == 1
        assert {e["type"] for e in fields["f_objects"]} >= {"int", "String", "null", "UUID", "Object"}
        assert [e["type"] for e in fields["f_list"]] == ["int", "String", "long", "null", "double", "Date"]
        assert [pair[0]["value"] for pair in fields["f_map"]] == ["a", "b", 3, "uuid", "none"]
        for name in ("f_inner_null", "f_null_string", "f_null_uuid", "f_null_ints", "f_null_decimal"):
            assert fields[name] is None
        assert (fields["f_nullable_long"] is None) == (k % 2 == 1)
    # Large longs and non-BMP text survive the JSON.
    assert records[0]["fields"]["f_long"] == (1 << 53) | 1
    assert records[1]["fields"]["f_long"] == 2**63 - 1
    assert records[2]["fields"]["f_long"] == -(2**63)
    assert "\U0001F600" in records[3]["fields"]["f_string"]
    assert json.loads(json.dumps(records)) == records

    _check_scan(javaclient, ignite_node, cache_name)


def test_type_writer_sql_table_of_every_sql_type(javaclient: ModuleType, ignite_sql_node: LocalCluster,
                                                 cache_name: str) -> None:
    host, port = ignite_sql_node.address()
    records = javaclient.run_type_writer(host, port, cache_name, N, sql=True)

    assert [r["key"] for r in records] == list(range(N))
    for r in records:
        assert r["type_name"] == "SqlAllTypes"
        assert r["table"] == f"PUBLIC.{cache_name.upper()}"
        assert list(r["fields"]) == SQL_COLUMNS
        assert r["sql_types"]["C_DECIMAL"] == "DECIMAL(20,5)"
        assert r["fields"]["C_NULL"] is None
    # Row k has NULL in every column j with j % 5 == k % 5: with 5 rows, each column
    # (but C_NULL) is NULL in exactly one of them.
    for j, col in enumerate(SQL_COLUMNS[:-1]):
        nulls = [r["key"] for r in records if r["fields"][col] is None]
        assert nulls == [j % 5], (col, nulls)
    types = records[0]["types"]
    assert types["C_TIMESTAMP"] == "Timestamp" and types["C_VARBINARY"] == "byte[]"
    # H2 hands DATE values to Ignite as java.sql.Date, which is no binary type: the server
    # stores them OptimizedMarshaller-serialized (type code -2), so the metadata says Object.
    assert types["C_DATE"] == "Object"
    assert Decimal(records[1]["fields"]["C_DECIMAL"]).as_tuple().exponent == -5

    _check_scan(javaclient, ignite_sql_node, cache_name)
