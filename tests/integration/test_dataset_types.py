"""Every Ignite type, written by Ignite's own Java client, read back by IgniteDataset exactly.

The Java ``TypeWriter`` (bench/java) writes objects with one field of every type
and prints the values it wrote; the dataset's tensors must equal them under the
documented type mapping (data/schema.py).
"""

from __future__ import annotations

import decimal
import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tensorflow_ignite import IgniteDataset
from tensorflow_ignite.local.cluster import LocalCluster

_spec = importlib.util.spec_from_file_location(
    "javaclient", Path(__file__).resolve().parents[2] / "bench" / "javaclient.py")
assert _spec and _spec.loader
javaclient = importlib.util.module_from_spec(_spec)
sys.modules["javaclient"] = javaclient
_spec.loader.exec_module(javaclient)

N = 4


def _scalar(kind: str, v: Any) -> Any:
    """Expected tensor value of one JSON-encoded Java value of type ``kind``."""
    if v is None:
        return None
    if kind in ("byte", "short", "int", "long", "Date", "Time"):
        return int(v)
    if kind == "float":
        return np.float32(v)
    if kind == "double":
        return float(v)
    if kind == "char":
        return ord(v)
    if kind == "boolean":
        return bool(v)
    if kind in ("String", "UUID"):
        return v.encode()
    if kind == "Timestamp":
        return v["epoch_ms"] * 1_000_000 + v["nanos"]
    if kind == "decimal":
        return float(decimal.Decimal(v))
    if kind == "Enum":
        return v["ordinal"]
    raise AssertionError(kind)


def _text(tagged: dict[str, Any]) -> bytes:
    """Expected text of an element of a mixed list (the schema module's text of one element)."""
    t, v = tagged["type"], tagged["value"]
    if v is None:
        return b""
    if t == "boolean":
        return b"true" if v else b"false"
    if t in ("int", "long", "byte", "short", "Date"):
        return str(int(v)).encode()
    if t == "double":
        return repr(float(v)).encode()
    if t in ("String", "UUID", "char"):
        return v.encode()
    if t == "Timestamp":
        return str(v["epoch_ms"] * 1_000_000 + v["nanos"]).encode()
    if t == "Object":
        return b"BinaryObject(" + v["type_name"].encode()
    raise AssertionError(t)


def _check_field(name: str, kind: str, expected: Any, got: dict[str, Any]) -> None:
    if kind == "Object" and expected is not None:
        # Nested objects are dicts; their leaves carry the presence masks.
        for fname, fv in expected["fields"].items():
            assert got[name][fname] == (fv.encode() if isinstance(fv, str) else fv), (name, fname)
            assert got[name][f"{fname}_present"]
        return
    present = got[f"{name}_present"]
    if expected is None:
        assert not present, name
        return
    assert present, name
    value = got[name]
    if kind == "byte[]":
        assert value.tolist() == np.array(expected, np.int8).view(np.uint8).tolist(), name
    elif kind.endswith("[]") and kind != "Object[]":
        elem = kind[:-2]
        want = [(_scalar(elem, x) if x is not None else (b"" if elem in ("String", "UUID") else 0))
                for x in expected]
        if elem == "float":
            np.testing.assert_array_equal(value, np.array(want, np.float32), err_msg=name)
        else:
            assert list(value.tolist()) == want, name
    elif kind in ("Object[]", "Collection"):
        got_text = list(value.tolist())
        want_text = [_text(t) for t in expected]
        for g, w in zip(got_text, want_text, strict=True):
            assert g.startswith(w) if w.startswith(b"BinaryObject(") else g == w, (name, g, w)
    elif kind == "Map":
        keys = [_text(k) for k, _ in expected]
        vals = [_text(v) for _, v in expected]
        assert value["keys"].tolist() == keys, name
        assert value["values"].tolist() == vals, name
    else:
        assert value == _scalar(kind, expected), (name, value, expected)


def test_every_type_written_by_java(ignite_node: LocalCluster, cache_name: str) -> None:
    host, port = ignite_node.address()
    expected = javaclient.run_type_writer(host, port, cache_name, N)
    assert len(expected) == N
    ds = IgniteDataset(cache_name, host, port, null_masks=True)
    got = {int(e["key"]): e["val"] for e in ds.as_numpy_iterator()}
    assert sorted(got) == list(range(N))
    checked = set()
    for record in expected:
        row = got[record["key"]]
        for name, kind in record["types"].items():
            _check_field(name, kind, record["fields"].get(name), row)
            checked.add(kind)
    # Every kind of field the Java writer produces was compared.
    assert {"Timestamp", "decimal", "Enum", "Map", "Collection", "Object[]", "Object", "UUID[]"} <= checked


def test_every_sql_type_inserted_by_sql(ignite_sql_node: LocalCluster, cache_name: str) -> None:
    from tensorflow_ignite.protocol.codes import TypeCode

    host, port = ignite_sql_node.address()
    expected = javaclient.run_type_writer(host, port, cache_name, N, sql=True)
    table = expected[0]["table"]
    ds = IgniteDataset.from_sql(f"SELECT * FROM {table}", host=host, port=port, null_masks=True,
                                column_types={"C_NULL": TypeCode.INT})
    got = {int(r["ID"]): r for r in ds.as_numpy_iterator()}
    assert sorted(got) == [r["key"] for r in expected]
    for record in expected:
        row = got[record["key"]]
        for name, kind in record["types"].items():
            if name == "C_DATE":
                kind = "Date"  # travels Java-serialized (type -2); read back as epoch ms
            _check_field(name, kind, record["fields"].get(name), row)
