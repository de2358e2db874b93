"""Data written by a Java thick client, read back exactly by IgniteDataset and ``from_sql``.

``ThickClientWriter`` (bench/java) is a client-mode Ignite node -- what most Java
applications write with -- running on the test cluster's own Ignite jars.  It puts
POJOs into caches (Ignite's marshaller turns each class into a binary type named
after it), through ``cache.put`` and an ``IgniteDataStreamer``; POJOs with Java
collections, an enum, an enum array, nested POJOs (one referenced twice, which the
marshaller writes as a handle) and a composite POJO key; an ``@QuerySqlField``
type (an SQL table); a ``Number`` field holding a Long in every row but one; and
digits, ``{label: long, pixels: float[64], weights: double[64], counts: long[64]}`` POJOs,
read dense (``shapes=``) and scored by ``predict`` and ``ignite-tf predict``.
It prints what it wrote, as read back through Ignite's own binary view, and every
field here must equal it under the documented mapping (data/schema.py), dtypes
included: ``java.sql.Date`` and ``java.time`` fields arrive Java-serialized (type -2,
protocol/javatime.py) and read as dates, times and timestamps; the Double among
Longs is a SchemaError naming the cache, field, key and both types.

One JVM writes everything once for the module (the SQL node is the session's).
"""

from __future__ import annotations

import decimal
import importlib.util
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from tensorflow_ignite import IgniteDataset
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.errors import SchemaError
from tensorflow_ignite.local.cluster import LocalCluster

from .resume_check import assert_resumes_the_rest_once

COUNT = 20          # entries per cache written with cache.put
STREAM_COUNT = 300  # entries written through the IgniteDataStreamer
MIXED_KEY = 7       # ThickClientWriter.MIXED_KEY: the one Double among the Longs
PIXELS = 64         # the length of every array of the _digits cache (STREAM_COUNT entries)

_DAY_MS = 86_400_000

#: Ignite metadata type name -> dtype of the tensor it becomes (scalars and primitive arrays).
_DTYPES = {
    "byte": np.int8, "short": np.int16, "int": np.int32, "long": np.int64, "float": np.float32,
    "double": np.float64, "char": np.uint16, "boolean": np.bool_, "String": np.object_, "UUID": np.object_,
    "Date": np.int64, "Timestamp": np.int64, "Time": np.int64, "decimal": np.float64, "Enum": np.int32,
    "byte[]": np.uint8, "int[]": np.int32, "long[]": np.int64, "double[]": np.float64, "String[]": np.object_,
    "Enum[]": np.int32,
}


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
def written(ignite_sql_node: LocalCluster, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[dict[str, list[dict[str, Any]]]]:
    """``{cache suffix: [record, ...]}`` of what the thick client wrote (caches dropped afterwards)."""
    prefix = f"t_thick_{secrets.token_hex(3)}"
    javaclient = _load_javaclient()
    records = javaclient.run_thick_client_writer(
        ignite_sql_node.discovery_addresses(), ignite_sql_node.ignite_classpath(), prefix,
        work_dir=tmp_path_factory.mktemp("thick-client"), count=COUNT, stream_count=STREAM_COUNT,
        array_length=PIXELS)
    by_cache: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        by_cache.setdefault(r["cache"].removeprefix(prefix + "_"), []).append(r)
    by_cache["prefix"] = prefix  # type: ignore[assignment]
    try:
        yield by_cache
    finally:
        with IgniteClient(ignite_sql_node.addresses()) as client:
            for name in client.cache_names():
                if name.startswith(prefix):
                    client.destroy_cache(name)


# ------------------------------------------------------------ expected values
def _scalar(kind: str, v: Any) -> Any:
    """Expected tensor value of one JSON-encoded non-null scalar (``kind``: Ignite metadata type)."""
    if isinstance(v, dict) and "java_time" in v:  # Java-serialized java.time (metadata: Object)
        cls = v["java_time"]
        if cls == "java.time.LocalDate":
            return v["epoch_day"] * _DAY_MS            # its midnight, UTC, in ms
        if cls == "java.time.LocalTime":
            assert v["nano_of_day"] % 1_000_000 == 0
            return v["nano_of_day"] // 1_000_000       # ms since midnight
        return v["epoch_second"] * 10**9 + v["nano"]   # LocalDateTime (as UTC), Instant: ns
    if isinstance(v, dict) and "ordinal" in v:
        return v["ordinal"]
    if isinstance(v, dict) and "epoch_ms" in v:
        return v["epoch_ms"] * 1_000_000 + v["nanos"]
    if kind in ("byte", "short", "int", "long", "Date", "Time", "Object"):  # Object: java.sql.Date ms
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
    if kind == "decimal":
        return float(decimal.Decimal(v))
    raise AssertionError(f"no expectation for {kind} {v!r}")


def _element(tagged: Any) -> Any:
    """Expected element of a collection (tagged ``{"type", "value"}``) or enum array."""
    if isinstance(tagged, dict) and "type" in tagged and "value" in tagged:
        return _scalar(tagged["type"], tagged["value"])
    return _scalar("Enum", tagged)


def _check_object(path: str, types: dict[str, str] | None, want: dict[str, Any], got: dict[str, Any]) -> None:
    """Every field of the object document ``want`` against the dataset's dict ``got`` (null masks on)."""
    for name, v in want["fields"].items():
        kind = types[name] if types else _kind_of(v)
        _check_field(f"{path}.{name}", kind, v, got, name)


def _kind_of(v: Any) -> str:
    """Metadata type of a nested object's field (only the top level's types are printed)."""
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "double"
    if isinstance(v, str):
        return "String"
    return "Object"


def _check_field(path: str, kind: str, want: Any, got: dict[str, Any], name: str) -> None:
    if isinstance(want, dict) and "type_name" in want:  # a nested POJO: a nested dict
        _check_object(path, None, want, got[name])
        return
    if kind == "Object" and want is None and isinstance(got[name], dict):  # a null nested POJO
        _assert_all_absent(path, got[name])
        return
    present = got[f"{name}_present"]
    value = got[name]
    if want is None:
        assert not present, path
        assert (value.size == 0) if isinstance(value, np.ndarray) and value.ndim else not value, (path, value)
        return
    assert present, path
    if kind == "Map":
        assert value["keys"].tolist() == [_element(k) for k, _ in want], path
        assert value["values"].tolist() == [_element(v) for _, v in want], path
        return
    if kind in ("Collection", "Enum[]"):
        assert value.tolist() == [_element(x) for x in want], path
        if kind == "Enum[]":
            assert value.dtype == np.int32, path
        return
    if kind.endswith("[]"):
        elem = kind[:-2]
        if kind == "byte[]":
            expected = np.array(want, np.int8).view(np.uint8)
        else:
            expected = np.array([_scalar(elem, x) for x in want], dtype=_DTYPES[kind])
        assert value.dtype == _DTYPES[kind], (path, value.dtype)
        np.testing.assert_array_equal(value, expected, err_msg=path)
        return
    dtype = _DTYPES.get(kind, np.int64)  # Object: Java-serialized date/time, an int64
    if dtype is np.object_:
        assert isinstance(value, bytes), (path, value)  # tf.string
    else:
        assert np.asarray(value).dtype == dtype, (path, np.asarray(value).dtype, dtype)
    expected = _scalar(kind, want)
    assert (value.item() if hasattr(value, "item") else value) == expected, (path, value, expected)


def _assert_all_absent(path: str, got: dict[str, Any]) -> None:
    for name, v in got.items():
        if isinstance(v, dict):
            _assert_all_absent(f"{path}.{name}", v)
        elif name.endswith("_present"):
            assert not v, f"{path}.{name}"


def _check_cache(records: list[dict[str, Any]], rows: dict[Any, dict[str, Any]]) -> set[str]:
    """Every field of every record against the row of its key; returns the kinds compared."""
    assert sorted(rows, key=repr) == sorted((_key(r["key"]) for r in records), key=repr)
    kinds = set()
    for r in records:
        row = rows[_key(r["key"])]
        assert set(r["types"]) <= {k for k in row if not k.endswith("_present")}, r["key"]
        for name, kind in r["types"].items():
            _check_field(f"{r['cache']}[{r['key']}].{name}", kind, r["fields"].get(name), row, name)
            kinds.add(kind)
    return kinds


def _key(k: Any) -> Any:
    """A record's key as a hashable: the number, or (field, value) pairs of a POJO key."""
    if isinstance(k, dict):
        return tuple(sorted((n, v.encode() if isinstance(v, str) else v) for n, v in k["fields"].items()))
    return k


def _row_key(k: Any) -> Any:
    if isinstance(k, dict):
        return tuple(sorted((n, v.item() if hasattr(v, "item") else v) for n, v in k.items()))
    return int(k)


def _rows(ds: Any) -> Iterator[dict[str, Any]]:
    """The rows of a batched dataset, each as the unbatched element would be (dtypes kept)."""
    for batch in ds.as_numpy_iterator():
        n = len(next(iter(_leaves(batch))))
        for i in range(n):
            yield _row(batch, i)


def _leaves(tree: Any) -> Iterator[Any]:
    for v in tree.values():
        if isinstance(v, dict):
            yield from _leaves(v)
        else:
            yield v.row_splits[:-1] if hasattr(v, "row_splits") else v


def _row(tree: dict[str, Any], i: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, v in tree.items():
        if isinstance(v, dict):
            out[name] = _row(v, i)
        elif hasattr(v, "row_splits"):  # ragged: this row's slice of the flat values
            out[name] = np.asarray(v.values)[v.row_splits[i]:v.row_splits[i + 1]]
        else:
            out[name] = v[i]
    return out


def _read(client: IgniteClient, cache: str, **kwargs: Any) -> dict[Any, dict[str, Any]]:
    ds = IgniteDataset(cache, client=client, null_masks=True, batch_size=64, **kwargs)
    return {_row_key(e["key"]): e["val"] for e in _rows(ds)}


# ------------------------------------------------------------------- tests
def test_pojos_put_and_streamed_read_exactly(written: dict[str, Any], ignite_sql_node: LocalCluster) -> None:
    prefix = written["prefix"]
    assert len(written["put"]) == COUNT and len(written["stream"]) == STREAM_COUNT
    with IgniteClient(ignite_sql_node.addresses()) as client:
        for suffix in ("put", "stream"):
            rows = _read(client, f"{prefix}_{suffix}")
            kinds = _check_cache(written[suffix], rows)
            # Every width, the value classes, arrays and the Java-serialized date/time fields were compared.
            assert {"byte", "short", "int", "long", "float", "double", "char", "boolean", "String", "UUID",
                    "Date", "Timestamp", "Time", "decimal", "byte[]", "int[]", "long[]", "double[]",
                    "String[]", "Object"} <= kinds, kinds
    record = written["put"][0]
    assert record["types"]["localDay"] == "Object" and record["fields"]["localDay"]["java_time"] == "java.time.LocalDate"
    assert {record["fields"][f]["java_time"] for f in ("localDay", "localStamp", "localTime", "instant")} == {
        "java.time.LocalDate", "java.time.LocalDateTime", "java.time.LocalTime", "java.time.Instant"}


def test_collections_enums_nested_pojos_and_pojo_keys(written: dict[str, Any],
                                                      ignite_sql_node: LocalCluster) -> None:
    records = written["nested"]
    with IgniteClient(ignite_sql_node.addresses()) as client:
        ds = IgniteDataset(f"{written['prefix']}_nested", client=client, null_masks=True)
        spec = ds.element_spec
        assert spec["key"]["id"].dtype.name == "int32" and spec["key"]["region"].dtype.name == "string"
        assert spec["val"]["grade"].dtype.name == "int32" and spec["val"]["history"].dtype.name == "int32"
        assert spec["val"]["counts"].dtype.name == "int64" and spec["val"]["totals"]["values"].dtype.name == "int64"
        assert spec["val"]["work"]["location"]["lat"].dtype.name == "float64"
        rows = {_row_key({k: v for k, v in e["key"].items() if not k.endswith("_present")}): e["val"]
                for e in ds.as_numpy_iterator()}  # one by one: the unbatched elements
    kinds = _check_cache(records, rows)
    assert {"Collection", "Map", "Enum", "Enum[]", "Object"} <= kinds, kinds
    # The shapes the test means to cover really are in the data.
    fields = [r["fields"] for r in records]
    assert any(f["work"] is None for f in fields) and any(f["grade"] is None for f in fields)
    assert any(f["labels"] is None for f in fields) and any(f["totals"] for f in fields)
    # work == home (one object referenced twice: a handle on the wire) for even keys not divisible by 3.
    shared = [r for r in records if r["key"]["fields"]["id"] % 6 in (2, 4)]
    assert shared and all(r["fields"]["work"] == r["fields"]["home"] for r in shared)


def test_query_sql_field_pojo_through_its_cache_and_from_sql(written: dict[str, Any],
                                                             ignite_sql_node: LocalCluster) -> None:
    import tensorflow as tf

    cache = f"{written['prefix']}_sql"
    records = written["sql"]
    # The @QuerySqlField fields are the table's columns (SQL upper-cases their names); the table's
    # schema is the cache name.  HIRED is checked below.
    columns = ["name", "age", "visits", "rank", "level", "salary", "score", "active", "token", "updated",
               "balance", "manager", "birthday", "lastSeen"]
    with IgniteClient(ignite_sql_node.addresses()) as client:
        rows = _read(client, cache)
        kinds = _check_cache(records, rows)
        assert {"Object", "Date", "Timestamp", "decimal", "UUID"} <= kinds

        def query(sql: str) -> dict[int, dict[str, Any]]:
            ds = IgniteDataset.from_sql(sql, client=client, schema=cache, null_masks=True)
            return {int(r["K"]): {k.lower(): v for k, v in r.items()} for r in ds.as_numpy_iterator()}

        got = query(f"SELECT _KEY AS K, {', '.join(columns)} FROM PERSON ORDER BY _KEY")
        assert sorted(got) == [r["key"] for r in records]
        for r in records:
            for name in columns:
                row = {name: got[r["key"]][name.lower()], f"{name}_present": got[r["key"]][f"{name.lower()}_present"]}
                _check_field(f"{cache}[{r['key']}].{name}", r["types"][name], r["fields"].get(name), row, name)

        # A java.util.Date field is an SQL TIMESTAMP: the query returns timestamps (int64 ns) where
        # the cache scan gives the stored Date (ms)...
        hired = query("SELECT _KEY AS K, HIRED FROM PERSON WHERE YEAR(HIRED) BETWEEN 1678 AND 2261")
        assert len(hired) >= len(records) // 2
        for r in records:
            if r["key"] in hired:
                assert hired[r["key"]]["hired"].dtype == np.int64
                assert int(hired[r["key"]]["hired"]) == r["fields"]["hired"] * 1_000_000, r["key"]
        # ... and a date such as 9999-12-31 (a common "no end" value) is beyond them: an error, not a
        # wrapped-around number.
        far = next(r for r in records if r["fields"]["hired"] == 253_402_300_799_999)  # 9999-12-31T23:59:59.999
        with pytest.raises((SchemaError, tf.errors.OpError)) as info:
            query(f"SELECT _KEY AS K, HIRED FROM PERSON WHERE _KEY = {far['key']}")
        message = str(info.value)
        assert "column 'HIRED'" in message and "9999-12-31T23:59:59.999" in message, message
        assert "TIMESTAMP (33)" in message and "int64 nanoseconds" in message, message


def test_number_field_holding_two_wire_types(written: dict[str, Any], ignite_sql_node: LocalCluster) -> None:
    import tensorflow as tf

    cache = f"{written['prefix']}_mixed"
    records = {r["key"]: r for r in written["mixed"]}
    assert isinstance(records[MIXED_KEY]["fields"]["value"], float)
    assert all(isinstance(r["fields"]["value"], int) for k, r in records.items() if k != MIXED_KEY)
    with IgniteClient(ignite_sql_node.addresses()) as client:
        # A Double among Longs has no lossless conversion: the error names cache, field, key and types.
        with pytest.raises((SchemaError, tf.errors.OpError)) as info:
            for _ in IgniteDataset(cache, client=client):
                pass
        message = str(info.value)
        assert f"cache {cache!r}" in message and "field 'value'" in message, message
        assert f"key {MIXED_KEY}" in message, message
        assert "DOUBLE (6)" in message and "LONG (4)" in message, message
        # What the message advises works: the other fields read.
        rows = _read(client, cache, fields=["label"])
    assert {k: v["label"] for k, v in rows.items()} == {k: r["fields"]["label"].encode() for k, r in records.items()}


def test_fixed_length_arrays_read_dense(written: dict[str, Any], ignite_sql_node: LocalCluster,
                                        tmp_path: Path) -> None:
    """``long[2]`` (null in every sixth POJO) of streamed POJOs as a dense ``[batch, 2]`` on the native op;
    ``int[]`` of 1-3 elements declared ``[2]``: an ArrayLengthError naming cache, field and key."""
    import tensorflow as tf

    from tensorflow_ignite.errors import ArrayLengthError

    cache = f"{written['prefix']}_stream"
    records = {r["key"]: r["fields"] for r in written["stream"]}
    assert {len(f["longs"]) for f in records.values() if f["longs"] is not None} == {2}
    assert any(f["longs"] is None for f in records.values())
    with IgniteClient(ignite_sql_node.addresses()) as client:
        def dense() -> IgniteDataset:
            return IgniteDataset(cache, client=client, batch_size=32, fields=["longs", "l"],
                                 shapes={"longs": [2]}, null_masks=True)

        ds = dense()
        assert ds.element_spec["val"]["longs"] == tf.TensorSpec([None, 2], tf.int64)
        graph = tf.compat.v1.GraphDef()
        graph.ParseFromString(ds._as_serialized_graph().numpy())  # the native op, no Python function
        ops = {n.op for n in graph.node}
        assert "IgnitePyDataset" in ops and "EagerPyFunc" not in ops, ops
        got: dict[int, tuple[list[int], bool]] = {}
        for batch in ds.as_numpy_iterator():
            for i, k in enumerate(batch["key"].tolist()):
                got[k] = (batch["val"]["longs"][i].tolist(), bool(batch["val"]["longs_present"][i]))
        assert got == {k: (f["longs"] or [0, 0], f["longs"] is not None) for k, f in records.items()}

        it = iter(ds)
        first = [int(k) for _ in range(2) for k in next(it)["key"].numpy()]
        path = tf.train.Checkpoint(iterator=it).write(str(tmp_path / "ckpt"))
        resumed = iter(dense())
        tf.train.Checkpoint(iterator=resumed).read(path).assert_consumed()
        rest = [int(k) for b in resumed for k in b["key"].numpy()]
        assert sorted(first + rest) == sorted(records)

        with pytest.raises((ArrayLengthError, tf.errors.OpError)) as info:
            for _ in IgniteDataset(cache, client=client, batch_size=32, fields=["ints"], shapes={"ints": [2]}):
                pass
    message = str(info.value)
    bad = [k for k, f in records.items() if len(f["ints"]) != 2]
    assert f"cache {cache!r}, field 'ints', key " in message, message
    assert int(message.split(", key ", 1)[1].split(":", 1)[0]) in bad, message


def test_digits_read_dense_and_predict_equals_model_predict(written: dict[str, Any], ignite_sql_node: LocalCluster,
                                                            tmp_path: Path) -> None:
    """POJOs of fixed-length ``float[64]``/``double[64]``/``long[64]`` arrays: a dense ``[batch, 64]`` read on the
    native op, resumed mid-epoch from a checkpoint exactly once; ``predict`` and ``ignite-tf predict`` of a model
    with input ``pixels`` (64,) equal ``model.predict`` on every key."""
    import keras
    import tensorflow as tf

    import tensorflow_ignite

    cache = f"{written['prefix']}_digits"
    records = {r["key"]: r["fields"] for r in written["digits"]}
    assert sorted(records) == list(range(STREAM_COUNT))
    assert {len(f[name]) for f in records.values() for name in ("pixels", "weights", "counts")} == {PIXELS}
    shapes = {"pixels": [PIXELS], "weights": [PIXELS], "counts": [PIXELS]}
    with IgniteClient(ignite_sql_node.addresses()) as client:
        def dense() -> IgniteDataset:
            return IgniteDataset(cache, client=client, batch_size=32, shapes=shapes)

        ds = dense()
        spec = ds.element_spec["val"]
        assert spec["pixels"] == tf.TensorSpec([None, PIXELS], tf.float32)
        assert spec["weights"] == tf.TensorSpec([None, PIXELS], tf.float64)
        assert spec["counts"] == tf.TensorSpec([None, PIXELS], tf.int64)
        graph = tf.compat.v1.GraphDef()
        graph.ParseFromString(ds._as_serialized_graph().numpy())  # the native op, no Python function
        ops = {n.op for n in graph.node} | {n.op for f in graph.library.function for n in f.node_def}
        assert "IgnitePyDataset" in ops and not ops & {"PyFunc", "EagerPyFunc", "PyFuncStateless"}, ops
        seen: dict[int, int] = {}
        for batch in ds.as_numpy_iterator():
            val = batch["val"]
            for i, k in enumerate(batch["key"].tolist()):
                seen[k] = seen.get(k, 0) + 1
                f = records[k]
                assert int(val["label"][i]) == f["label"], k
                np.testing.assert_array_equal(val["pixels"][i], np.array(f["pixels"], np.float32), err_msg=str(k))
                np.testing.assert_array_equal(val["weights"][i], np.array(f["weights"], np.float64), err_msg=str(k))
                np.testing.assert_array_equal(val["counts"][i], np.array(f["counts"], np.int64), err_msg=str(k))
        assert seen == {k: 1 for k in records}

        assert_resumes_the_rest_once(dense, tmp_path, records)

        keras.utils.set_random_seed(5)
        x = keras.Input(shape=(PIXELS,), name="pixels")
        model = keras.Model(x, keras.layers.Dense(10, activation="softmax", name="scores")(
            keras.layers.Dense(16, activation="relu")(x)))
        keys = sorted(records)
        want = model.predict(np.array([records[k]["pixels"] for k in keys], np.float32), verbose=0)
        result = tensorflow_ignite.predict(model, cache, cache + "_py", client=client, progress=False)
        assert result.rows == len(keys)
        model_path = tmp_path / "digits.keras"
        model.save(model_path)
        host, port = ignite_sql_node.address()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        done = subprocess.run([sys.executable, "-m", "tensorflow_ignite.cli.main", "predict", str(model_path), cache,
                               "--out", cache + "_cli", "--host", host, "--port", str(port), "--no-progress"],
                              env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        for out in (cache + "_py", cache + "_cli"):
            entries = dict(client.cache(out).scan(page_size=4096))
            assert sorted(entries) == keys, out
            got = np.stack([np.asarray(entries[k].fields["scores"], np.float32) for k in keys])
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=out)
