"""Data written by other clients, read back exactly by IgniteDataset.

* SQL DML (CREATE TABLE + INSERT with parameters): the table's ``SQL_PUBLIC_*``
  cache holds DATE values as optimized-marshaller ``java.sql.Date`` bytes
  (type -2); the cache scan and ``from_sql`` must both give the documented
  tensors (data/schema.py).
* pyignite (0.6.1) complex objects, some rows writing an int field with a
  narrower type: widened without loss.
* A field holding a string in one row and an int in another: a SchemaError
  naming the cache, the field, the row's key and both types.
"""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections import OrderedDict
from typing import Any

import numpy as np
import pytest

from tensorflow_ignite import IgniteDataset
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.errors import SchemaError
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.protocol.codes import TypeCode
from tensorflow_ignite.protocol.values import Date, Int32, Time, Timestamp

pyignite = pytest.importorskip("pyignite")

from pyignite import Client as PyClient  # noqa: E402
from pyignite import GenericObjectMeta  # noqa: E402
from pyignite.datatypes import (  # noqa: E402
    BoolObject,
    ByteObject,
    DateObject,
    DecimalObject,
    DoubleObject,
    FloatObject,
    IntObject,
    LongObject,
    ShortObject,
    String,
    TimestampObject,
    UUIDObject,
)

_UTC = dt.timezone.utc
_DAY_MS = 86_400_000


def _rows(ds: Any) -> dict[int, dict[str, Any]]:
    out = {}
    for e in ds.as_numpy_iterator():
        out[int(e["key"])] = e["val"]
    return out


# ---------------------------------------------------------------- (a) SQL DML
# (ID, D, T, TS, I, S, DEC) -- dates and times as our client's parameter types.
_SQL_ROWS = [
    (1, Date(3 * _DAY_MS), Time(3_723_004), Timestamp(1_700_000_000_123, 456_789), Int32(7), "x",
     decimal.Decimal("1.5")),
    (2, Date(-_DAY_MS), Time(0), Timestamp(-1, 999_999), Int32(-2**31), "ünï", decimal.Decimal("-0.25")),
    (3, Date(1_582_934_400_000), Time(86_399_999), Timestamp(0, 1), Int32(2**31 - 1), "", decimal.Decimal("1e3")),
]


def _expected_sql(row: tuple[Any, ...]) -> dict[str, Any]:
    _, d, t, ts, i, s, dec = row
    return {"D": d.epoch_ms, "T": t.millis, "TS": ts.epoch_ns, "I": int(i), "S": s.encode(), "DEC": float(dec)}


def test_sql_dml_table_through_its_cache_and_from_sql(ignite_sql_node: LocalCluster, cache_name: str) -> None:
    table = cache_name.upper()
    with IgniteClient(ignite_sql_node.addresses()) as client:
        client.sql(f"CREATE TABLE {table} (ID LONG PRIMARY KEY, D DATE, T TIME, TS TIMESTAMP, I INT, "
                   "S VARCHAR, DEC DECIMAL)").execute()
        try:
            for row in _SQL_ROWS:
                client.sql(f"INSERT INTO {table} (ID, D, T, TS, I, S, DEC) VALUES (?, ?, ?, ?, ?, ?, ?)",
                           list(row)).execute()
            # A row written with SQL literals (parsed by the node, not by us).
            client.sql(f"INSERT INTO {table} (ID, D, T, TS, I, S, DEC) VALUES (4, DATE '2024-02-29', "
                       "TIME '12:34:56', TIMESTAMP '2001-02-03 04:05:06.789012345', 42, 'lit', 9.75)").execute()
            expected = {int(r[0]): _expected_sql(r) for r in _SQL_ROWS}
            expected[4] = {"D": 1_709_164_800_000, "T": 45_296_000,
                           "TS": 981_173_106_789_012_345, "I": 42, "S": b"lit", "DEC": 9.75}

            # What the cache holds: DATE values as Java-serialized java.sql.Date (type -2).
            raw = bytes(next(client.cache(f"SQL_PUBLIC_{table}").scan_pages(page_size=1)).rows)
            assert b"\xfe\x0f\x00\x00\x00\x66" in raw  # OPTIMIZED, 15 bytes, SERIALIZABLE tag

            ds = IgniteDataset(f"SQL_PUBLIC_{table}", client=client)
            got = _rows(ds)
            assert sorted(got) == [1, 2, 3, 4]
            for k, want in expected.items():
                assert {f: got[k][f].item() if hasattr(got[k][f], "item") else got[k][f] for f in want} == want, k
            assert got[1]["D"].dtype == np.int64 and got[1]["TS"].dtype == np.int64

            sql = IgniteDataset.from_sql(f"SELECT ID, D, T, TS, I, S, DEC FROM {table} ORDER BY ID", client=client)
            rows = list(sql.as_numpy_iterator())
            assert [int(r["ID"]) for r in rows] == [1, 2, 3, 4]
            for r in rows:
                want = expected[int(r["ID"])]
                assert {f: r[f].item() if hasattr(r[f], "item") else r[f] for f in want} == want, r
        finally:
            client.sql(f"DROP TABLE IF EXISTS {table}").execute()


def test_sql_date_column_null_in_the_sampled_rows(ignite_sql_node: LocalCluster, cache_name: str) -> None:
    # Ignite's binary metadata says only "object" for a DATE column; the table's
    # query entity (java.sql.Date) decides, not a sample of null values.
    table = cache_name.upper()
    with IgniteClient(ignite_sql_node.addresses()) as client:
        client.sql(f"CREATE TABLE {table} (ID LONG PRIMARY KEY, D DATE, TS TIMESTAMP)").execute()
        try:
            for i in range(40):
                client.sql(f"INSERT INTO {table} (ID) VALUES (?)", [i]).execute()
            client.sql(f"INSERT INTO {table} (ID, D, TS) VALUES (?, ?, ?)",
                       [100, Date(-3 * _DAY_MS), Timestamp(7, 8)]).execute()
            ds = IgniteDataset(f"SQL_PUBLIC_{table}", client=client, null_masks=True)
            spec = ds.element_spec["val"]
            assert spec["D"].dtype.name == "int64" and spec["TS"].dtype.name == "int64"
            got = _rows(ds)
            assert sorted(got) == list(range(40)) + [100]
            assert [int(got[100]["D"]), int(got[100]["TS"]), bool(got[100]["D_present"])] == [
                -3 * _DAY_MS, 7_000_008, True]
            assert all(int(got[i]["D"]) == 0 and not got[i]["D_present"] for i in range(40))
        finally:
            client.sql(f"DROP TABLE IF EXISTS {table}").execute()


# ---------------------------------------------------------- (b) pyignite objects
_FIELDS = [("i", IntObject), ("l", LongObject), ("d", DoubleObject), ("s", String), ("dt", DateObject),
           ("ts", TimestampObject), ("dec", DecimalObject), ("u", UUIDObject), ("b", BoolObject)]


def _record_class(type_name: str, int_type: Any = IntObject, **other_types: Any) -> type:
    schema = OrderedDict((n, int_type if n == "i" else other_types.get(n, t)) for n, t in _FIELDS)

    class Rec(metaclass=GenericObjectMeta, type_name=type_name, schema=schema):
        pass

    return Rec


def test_pyignite_objects_read_exactly(ignite_node: LocalCluster, cache_name: str) -> None:
    type_name = f"OtherClients_{cache_name}"
    rec = _record_class(type_name)
    host, port = ignite_node.address()
    expected: dict[int, dict[str, Any]] = {}
    py = PyClient()
    with py.connect(host, port):
        cache = py.get_or_create_cache(cache_name)
        for k in range(40):
            when = dt.datetime(2020, 1, 1, tzinfo=_UTC) + dt.timedelta(days=k, seconds=k * 37)
            u = uuid.UUID(int=(k + 1) * 0x0123456789ABCDEF0123456789ABCDEF % (1 << 128))
            values = dict(i=(-1) ** k * k * 1_000_003, l=k * 10**12 - 5, d=k / 8 - 1.0, s=f"row-{k}-é",
                          dt=when, ts=(when, k * 1234 % 1_000_000), dec=decimal.Decimal(k) / 4,
                          u=u, b=k % 3 == 0)
            cache.put(k, rec(**values))
            ms = int(when.timestamp()) * 1000
            expected[k] = dict(i=values["i"], l=values["l"], d=values["d"], s=values["s"].encode(), dt=ms,
                               ts=ms * 1_000_000 + values["ts"][1], dec=float(values["dec"]),
                               u=str(u).encode(), b=values["b"])
        # Rows whose int field pyignite wrote as a short or a byte (same type, other schema).
        for k, (int_type, v) in {100: (ShortObject, -32768), 101: (ByteObject, 127), 102: (ShortObject, 12345),
                                 103: (ByteObject, -128)}.items():
            when = dt.datetime(1969, 12, 31, 23, 59, 59, tzinfo=_UTC)
            u = uuid.UUID(int=k)
            narrow = _record_class(type_name, int_type)
            cache.put(k, narrow(i=v, l=-k, d=-0.5, s="", dt=when, ts=(when, 999_999),
                                dec=decimal.Decimal("-1.125"), u=u, b=True))
            expected[k] = dict(i=v, l=-k, d=-0.5, s=b"", dt=-1000, ts=-1000 * 1_000_000 + 999_999,
                               dec=-1.125, u=str(u).encode(), b=True)
        # A row whose long is an int, double a float and timestamp a date.
        wide = _record_class(type_name, ShortObject, l=IntObject, d=FloatObject, ts=DateObject)
        when = dt.datetime(2001, 2, 3, 4, 5, 6, tzinfo=_UTC)
        cache.put(200, wide(i=-7, l=-2**31, d=0.1, s="w", dt=when, ts=when, dec=decimal.Decimal(0),
                            u=uuid.UUID(int=200), b=False))
        ms = int(when.timestamp()) * 1000
        expected[200] = dict(i=-7, l=-2**31, d=float(np.float32(0.1)), s=b"w", dt=ms, ts=ms * 1_000_000,
                             dec=0.0, u=str(uuid.UUID(int=200)).encode(), b=False)

    with IgniteClient(ignite_node.addresses()) as client:
        # The rows really hold the narrower types (pyignite did not convert them).
        narrow_types = {k: v.field_types for k, v in client.cache(cache_name).get_all([0, 100, 101, 200]).items()}
        assert [narrow_types[k]["i"] for k in (0, 100, 101, 200)] == [
            TypeCode.INT, TypeCode.SHORT, TypeCode.BYTE, TypeCode.SHORT]
        assert [narrow_types[200][f] for f in ("l", "d", "ts")] == [TypeCode.INT, TypeCode.FLOAT, TypeCode.DATE]
        ds = IgniteDataset(cache_name, client=client)
        spec = ds.element_spec["val"]
        assert spec["i"].dtype.name == "int32" and spec["ts"].dtype.name == "int64"
        got = _rows(ds)
        assert sorted(got) == sorted(expected)
        for k, want in expected.items():
            row = {f: got[k][f].item() if hasattr(got[k][f], "item") else got[k][f] for f in want}
            assert row == want, k


# ------------------------------------------------------ (c) no lossless conversion
def test_mixed_field_types_name_cache_field_key_and_types(ignite_node: LocalCluster, cache_name: str) -> None:
    import tensorflow as tf

    type_name = f"OtherClientsMixed_{cache_name}"
    as_string = _class_with(type_name, String)
    as_int = _class_with(type_name, IntObject)
    host, port = ignite_node.address()
    py = PyClient()
    with py.connect(host, port):
        cache = py.get_or_create_cache(cache_name)
        for k in range(10):
            cache.put(k, as_string(v=f"s{k}", n=k))
        cache.put(77, as_int(v=77, n=77))
    with IgniteClient(ignite_node.addresses()) as client:
        with pytest.raises((SchemaError, tf.errors.OpError)) as info:
            for _ in IgniteDataset(cache_name, client=client):
                pass
    message = str(info.value)
    assert f"cache {cache_name!r}" in message, message
    assert "field 'v'" in message and "key 77" in message, message
    assert "INT (3)" in message and "STRING (9)" in message, message


def _class_with(type_name: str, v_type: Any) -> type:
    class Mixed(metaclass=GenericObjectMeta, type_name=type_name,
                schema=OrderedDict([("v", v_type), ("n", LongObject)])):
        pass

    return Mixed
