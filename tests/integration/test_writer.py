"""tensorflow_ignite.write and `ignite-tf load` against real Ignite nodes, read back with the client."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import tensorflow_ignite
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.data.tensor_schema import load_schema
from tensorflow_ignite.data.write import WriteError, WriteResult, write
from tensorflow_ignite.errors import ConfigurationError, IgniteConnectionError
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.protocol.codes import AtomicityMode, TypeCode, WriteSynchronizationMode
from tensorflow_ignite.protocol.values import BinaryObject, Timestamp, values_equal
from tests.unit.test_writer_encoding import reference_value


def connect(cluster: LocalCluster) -> IgniteClient:
    return IgniteClient(cluster.addresses(), **cluster.client_settings())


@pytest.fixture
def client(ignite_node: LocalCluster) -> Iterator[IgniteClient]:
    with connect(ignite_node) as c:
        yield c


@pytest.fixture
def sql_client(ignite_sql_node: LocalCluster) -> Iterator[IgniteClient]:
    with connect(ignite_sql_node) as c:
        yield c


def read_back(client: IgniteClient, cache: str) -> dict[Any, BinaryObject]:
    return dict(client.cache(cache).scan(page_size=4096))


def expected(column: np.ndarray, row: int) -> Any:
    """The value the client decodes for ``column[row]`` after write()."""
    v = column[row]
    if column.dtype.kind in "US":
        return v.decode() if isinstance(v, bytes) else str(v)
    if column.dtype == object:
        if v is None or (isinstance(v, float) and v != v):
            return None
        if isinstance(v, bytes):
            try:
                return v.decode("utf-8")
            except UnicodeDecodeError:
                return np.frombuffer(v, dtype=np.int8)
        return v
    return reference_value(column, row)


def assert_rows(client: IgniteClient, cache: str, data: dict[str, np.ndarray], *, keys: list[Any] | None = None,
                skip: tuple[str, ...] = ()) -> None:
    rows = read_back(client, cache)
    n = len(next(iter(data.values())))
    keys = list(range(n)) if keys is None else keys
    assert sorted(rows, key=str) == sorted(keys, key=str)
    for i, k in enumerate(keys):
        obj = rows[k]
        for name, col in data.items():
            if name in skip:
                continue
            want, got = expected(col, i), obj[name]
            assert values_equal(got, want) or (isinstance(want, float) and np.isnan(want) and np.isnan(got)), \
                (k, name, got, want)


def all_dtypes(n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    data: dict[str, np.ndarray] = {}
    for dtype in ["bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
                  "float16", "float32", "float64"]:
        if dtype == "bool":
            data[dtype] = rng.integers(0, 2, n).astype(bool)
        elif dtype.startswith(("int", "uint")):
            info = np.iinfo(dtype)
            data[dtype] = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
        else:
            data[dtype] = (rng.standard_normal(n) * 100).astype(dtype)
    data["when"] = (np.int64(1_700_000_000_000_000_000) + rng.integers(-10**17, 10**17, n)).astype("datetime64[ns]")
    data["img"] = rng.integers(0, 256, (n, 4, 4)).astype(np.uint8)
    data["vec"] = rng.standard_normal((n, 3)).astype(np.float32)
    data["grid"] = rng.integers(-1000, 1000, (n, 2, 2)).astype(np.int16)
    data["wide"] = rng.integers(0, 65536, (n, 3)).astype(np.uint16)
    return data


# ------------------------------------------------------------------ round trips
def test_every_dtype_round_trips_through_the_fixed_layout_path(client: IgniteClient, cache_name: str) -> None:
    data = all_dtypes(300, np.random.default_rng(0))
    result = write(cache_name, data, client=client, batch_bytes=8 << 10)
    assert isinstance(result, WriteResult)
    assert (result.rows, result.encoder, result.cache_name, result.key) == (300, "fixed-layout", cache_name, "key")
    assert result.type_name == tensorflow_ignite.data.write.default_type_name(cache_name)
    assert result.bytes_sent > 300 * 100 and result.seconds > 0
    assert_rows(client, cache_name, data)

    schema = load_schema(client, cache_name)
    assert schema is not None and schema.type_name == result.type_name
    assert (schema.key.name, schema.key.dtype, schema.key.type_code) == ("key", "int64", TypeCode.LONG)
    fields = {f.name: f for f in schema.fields}
    assert list(fields) == list(data)
    assert (fields["img"].dtype, fields["img"].shape, fields["img"].type_code) == ("uint8", (4, 4), TypeCode.BYTE_ARR)
    assert (fields["uint16"].dtype, fields["uint16"].type_code) == ("uint16", TypeCode.INT)
    assert (fields["when"].dtype, fields["when"].type_code) == ("datetime64[ns]", TypeCode.TIMESTAMP)
    meta = client.binary_type(result.type_name)
    assert meta is not None and meta.fields["grid"].type_code == TypeCode.SHORT_ARR


def test_strings_nulls_bytes_and_ragged_rows_use_the_generic_path(client: IgniteClient, cache_name: str) -> None:
    n = 50
    rng = np.random.default_rng(1)
    names = np.array([f"name-{i}-é" for i in range(n)])
    notes = np.empty(n, dtype=object)
    notes[:] = [None if i % 3 == 0 else f"n{i}" for i in range(n)]
    raw = np.empty(n, dtype=object)
    raw[:] = [bytes([255, i]) for i in range(n)]
    ragged = np.empty(n, dtype=object)
    ragged[:] = [np.arange(i % 5, dtype=np.int32) for i in range(n)]
    when = np.array(["2024-01-01T12:00:00.123456789"] * n, dtype="datetime64[ns]")
    when[7] = np.datetime64("NaT")
    data = {"name": names, "note": notes, "raw": raw, "seq": ragged, "when": when,
            "x": rng.standard_normal(n)}
    result = write(cache_name, data, client=client, key_offset=100)
    assert result.encoder == "generic"
    rows = read_back(client, cache_name)
    assert sorted(rows) == list(range(100, 100 + n))
    for i in range(n):
        obj = rows[100 + i]
        assert obj["name"] == names[i]
        assert obj["note"] == notes[i]
        assert np.array_equal(obj["raw"], np.frombuffer(raw[i], np.int8))
        assert np.array_equal(obj["seq"], ragged[i])
        assert obj["when"] == (None if i == 7 else Timestamp(1704110400123, 456789))
    fields = {f.name: f for f in load_schema(client, cache_name).fields}  # type: ignore[union-attr]
    assert (fields["raw"].dtype, fields["raw"].type_code) == ("bytes", TypeCode.BYTE_ARR)
    assert (fields["seq"].dtype, fields["seq"].shape) == ("int32", (-1,))
    assert (fields["note"].dtype, fields["note"].type_code) == ("str", TypeCode.STRING)


def test_file_inputs_npz_csv_parquet(client: IgniteClient, cache_name: str, tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    data = {"label": rng.integers(0, 10, 40), "pixels": rng.integers(0, 256, (40, 3, 3)).astype(np.uint8)}
    np.savez(tmp_path / "d.npz", **data)
    write(cache_name + "_npz", tmp_path / "d.npz", client=client)
    assert_rows(client, cache_name + "_npz", data)

    (tmp_path / "d.csv").write_text("id,score,city\n10,0.5,Oslo\n11,,\n12,2.25,Köln\n", encoding="utf-8")
    result = write(cache_name + "_csv", str(tmp_path / "d.csv"), client=client, key="id",
                   columns=["city", "score"])
    rows = read_back(client, cache_name + "_csv")
    assert sorted(rows) == [10, 11, 12] and result.key == "id"
    assert list(rows[10].fields) == ["city", "score"]
    assert (rows[10]["city"], rows[10]["score"]) == ("Oslo", 0.5)
    assert rows[11]["city"] is None and np.isnan(rows[11]["score"])
    assert rows[12]["city"] == "Köln"

    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"label": pa.array(data["label"]),
                             "pixels": pa.array(list(data["pixels"].reshape(40, 9)), pa.list_(pa.uint8(), 9)),
                             "tag": pa.array([None if i % 2 else f"t{i}" for i in range(40)])}),
                   tmp_path / "d.parquet")
    result = write(cache_name + "_pq", tmp_path / "d.parquet", client=client)
    rows = read_back(client, cache_name + "_pq")
    assert len(rows) == 40
    for i in range(40):
        assert rows[i]["label"] == data["label"][i]
        assert np.array_equal(rows[i]["pixels"], data["pixels"][i].reshape(-1).view(np.int8))
        assert rows[i]["tag"] == (None if i % 2 else f"t{i}")


def test_tf_dataset_input(client: IgniteClient, cache_name: str) -> None:
    tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(3)
    data = {"x": rng.standard_normal(30).astype(np.float32), "img": rng.integers(0, 256, (30, 2, 3)).astype(np.uint8),
            "word": np.array([f"w{i}" for i in range(30)])}
    ds = tf.data.Dataset.from_tensor_slices({k: tf.constant(v) for k, v in data.items()})
    result = write(cache_name, ds, client=client)
    assert result.rows == 30
    assert_rows(client, cache_name, data)
    fields = {f.name: f for f in load_schema(client, cache_name).fields}  # type: ignore[union-attr]
    assert (fields["img"].dtype, fields["img"].shape) == ("uint8", (2, 3))
    assert (fields["word"].dtype, fields["word"].type_code) == ("str", TypeCode.STRING)

    # Variable-length rows: a dimension the dataset leaves open is recorded as -1.
    def gen() -> Iterator[dict[str, Any]]:
        for i in range(12):
            yield {"seq": np.arange(i % 4, dtype=np.int64), "y": np.float64(i)}

    ragged = tf.data.Dataset.from_generator(gen, output_signature={
        "seq": tf.TensorSpec([None], tf.int64), "y": tf.TensorSpec([], tf.float64)})
    write(cache_name + "_r", ragged, client=client)
    rows = read_back(client, cache_name + "_r")
    assert [rows[i]["seq"].tolist() for i in range(12)] == [list(range(i % 4)) for i in range(12)]
    assert [rows[i]["y"] for i in range(12)] == [float(i) for i in range(12)]
    fields = {f.name: f for f in load_schema(client, cache_name + "_r").fields}  # type: ignore[union-attr]
    assert (fields["seq"].shape, fields["seq"].type_code) == ((-1,), TypeCode.LONG_ARR)


def test_key_columns(client: IgniteClient, cache_name: str) -> None:
    data = {"name": np.array(["alice", "bob", "carol"]), "age": np.array([31, 42, 27], np.int32)}
    result = write(cache_name, data, client=client, key="name")
    cache = client.cache(cache_name)
    assert result.key == "name" and cache.get("bob")["age"] == 42
    assert list(cache.get("alice").fields) == ["age"]  # the key is not repeated in the value
    assert load_schema(client, cache_name).key.dtype == "str"  # type: ignore[union-attr]

    ids = {"id": np.array([7, 9, 11], np.int32), "v": np.array([1.0, 2.0, 3.0])}
    write(cache_name + "_i", ids, client=client, key="id")
    assert client.cache(cache_name + "_i").get(9)["v"] == 2.0  # int keys are Java longs: get(9) finds them

    with pytest.raises(ConfigurationError, match="duplicate"):
        write(cache_name + "_d", {"id": np.array([1, 1]), "v": np.arange(2)}, client=client, key="id")
    assert cache_name + "_d" not in client.cache_names()


def test_sixty_thousand_mnist_rows(client: IgniteClient, cache_name: str) -> None:
    rng = np.random.default_rng(4)
    n = 60_000
    data = {"label": rng.integers(0, 10, n).astype(np.int64),
            "pixels": rng.integers(0, 256, (n, 28, 28)).astype(np.uint8)}
    result = write(cache_name, data, client=client)
    print(f"\n60k MNIST-shaped rows: {result.summary()}")
    assert (result.rows, result.encoder) == (n, "fixed-layout")
    cache = client.cache(cache_name)
    assert cache.size() == n
    sample = [0, 1, 12345, 59999] + rng.integers(0, n, 20).tolist()
    got = cache.get_all(sample)
    for k in sample:
        assert got[k]["label"] == data["label"][k]
        assert np.array_equal(got[k]["pixels"], data["pixels"][k].reshape(-1).view(np.int8))


# ------------------------------------------------------------------------- SQL
def test_sql_table_on_the_sql_node(sql_client: IgniteClient, cache_name: str) -> None:
    rng = np.random.default_rng(5)
    n = 25
    data = {"id": np.arange(100, 100 + n, dtype=np.int32), "label": rng.integers(0, 10, n).astype(np.int64),
            "score": rng.standard_normal(n).astype(np.float32), "ok": rng.integers(0, 2, n).astype(bool),
            "name": np.array([f"row {i}" for i in range(n)]),
            "pixels": rng.integers(0, 256, (n, 2, 2)).astype(np.uint8),
            "emb": rng.standard_normal((n, 3))}
    result = write(cache_name, data, client=sql_client, key="id")
    assert result.sql_table == f"PUBLIC.{cache_name.upper()}" and result.notes == ()
    rows = sql_client.sql(f"SELECT id, label, score, ok, name, pixels, emb FROM {cache_name} ORDER BY id").fetchall()
    assert len(rows) == n
    for i, row in enumerate(rows):
        assert row[:5] == [100 + i, data["label"][i], np.float32(data["score"][i]), bool(data["ok"][i]),
                           f"row {i}"]
        assert np.array_equal(row[5], data["pixels"][i].reshape(-1).view(np.int8))
        assert np.array_equal(row[6], data["emb"][i])
    count = sql_client.sql(f"SELECT COUNT(*) FROM {cache_name} WHERE label < 5").fetchall()[0][0]
    assert count == int((data["label"] < 5).sum())

    # Row-index keys show up as the column KEY; appending keeps the table in the result.
    plain = {"v": np.arange(5, dtype=np.int16)}
    write(cache_name + "_k", plain, client=sql_client)
    again = write(cache_name + "_k", plain, client=sql_client, mode="append")
    assert again.sql_table == f"PUBLIC.{cache_name.upper()}_K"
    assert sql_client.sql(f"SELECT key, v FROM {cache_name}_k WHERE key >= 5 ORDER BY key").fetchall() == \
        [[5 + i, i] for i in range(5)]


def test_plain_218_node_gets_no_sql_table(client: IgniteClient, cache_name: str) -> None:
    # Ignite 2.18 (ignite-core only) accepts a QueryEntity silently but cannot run SQL;
    # write() notices and creates the cache without one.
    result = write(cache_name, {"v": np.arange(3)}, client=client)
    assert result.sql_table is None
    assert any("no SQL engine" in note for note in result.notes)
    assert client.cache(cache_name).configuration().query_entities == []
    no_sql = write(cache_name + "_n", {"v": np.arange(3)}, client=client, sql=False)
    assert no_sql.notes == () and no_sql.sql_table is None


# ------------------------------------------------------------------------ modes
def test_create_append_overwrite(client: IgniteClient, cache_name: str) -> None:
    first = {"x": np.arange(10, dtype=np.int32), "y": np.ones((10, 2), np.float32)}
    write(cache_name, first, client=client, backups=1, atomicity="transactional", write_sync="full_sync")
    cfg = client.cache(cache_name).configuration()
    assert (cfg.backups, cfg.atomicity_mode, cfg.write_synchronization_mode) == (
        1, AtomicityMode.TRANSACTIONAL, WriteSynchronizationMode.FULL_SYNC)

    with pytest.raises(ConfigurationError, match="already exists and holds 10 entries"):
        write(cache_name, first, client=client)

    second = {"x": np.arange(100, 105, dtype=np.int32), "y": np.zeros((5, 2), np.float32)}
    appended = write(cache_name, second, client=client, mode="append")
    assert appended.rows == 5 and appended.type_name == load_schema(client, cache_name).type_name  # type: ignore
    rows = read_back(client, cache_name)
    assert sorted(rows) == list(range(15)) and rows[12]["x"] == 102

    with pytest.raises(ConfigurationError, match=r"column 'y' is float64 \[2\], recorded float32 \[2\]"):
        write(cache_name, {"x": np.arange(2, dtype=np.int32), "y": np.zeros((2, 2))}, client=client, mode="append")
    client.cache(cache_name).remove_key(3)  # 14 entries now, but key 14 is taken: no silent overwrite
    with pytest.raises(ConfigurationError, match="already holds keys"):
        write(cache_name, second, client=client, mode="append")
    assert client.cache(cache_name).size() == 14

    third = {"z": np.array(["a", "b"])}
    replaced = write(cache_name, third, client=client, mode="overwrite", type_name="OverwrittenRow")
    rows = read_back(client, cache_name)
    assert sorted(rows) == [0, 1] and rows[1]["z"] == "b"
    assert load_schema(client, cache_name).type_name == replaced.type_name == "OverwrittenRow"  # type: ignore
    assert client.cache(cache_name).configuration().backups == 0


def test_create_into_an_existing_empty_cache_keeps_its_configuration(client: IgniteClient, cache_name: str) -> None:
    from tensorflow_ignite.protocol.cache_config import CacheConfiguration

    client.create_cache(CacheConfiguration(cache_name, backups=2))
    write(cache_name, {"v": np.arange(4)}, client=client)
    assert client.cache(cache_name).size() == 4
    assert client.cache(cache_name).configuration().backups == 2


def test_type_name_clash_fails_before_anything_is_created(client: IgniteClient, cache_name: str) -> None:
    write(cache_name, {"x": np.arange(3, dtype=np.int64)}, client=client, type_name="ClashRow")
    with pytest.raises(ConfigurationError, match="'ClashRow' is already registered.*type_name="):
        write(cache_name + "_b", {"x": np.arange(3, dtype=np.int32)}, client=client, type_name="ClashRow")
    assert cache_name + "_b" not in client.cache_names()


# -------------------------------------------------------------- failed loads
def bad_row_data(n: int, bad: int) -> dict[str, np.ndarray]:
    big = np.empty(n, dtype=object)
    big[:] = list(range(n))
    big[bad] = 2**70  # an int that no Java long can hold: fails while encoding its batch
    return {"big": big, "pad": np.zeros((n, 16), np.uint8)}


def test_failed_create_leaves_no_cache(client: IgniteClient, cache_name: str) -> None:
    with pytest.raises(ConfigurationError, match=r"row 5000, column 'big'.*out of range") as info:
        write(cache_name, bad_row_data(8000, 5000), client=client, batch_bytes=16 << 10)
    assert any("was destroyed" in note for note in info.value.__notes__)
    assert cache_name not in client.cache_names()
    assert load_schema(client, cache_name) is None


def test_failed_overwrite_leaves_no_cache(client: IgniteClient, cache_name: str) -> None:
    write(cache_name, {"big": np.arange(3)}, client=client)
    with pytest.raises(ConfigurationError, match="row 5000"):
        write(cache_name, bad_row_data(6000, 5000), client=client, mode="overwrite", batch_bytes=16 << 10)
    assert cache_name not in client.cache_names()
    assert load_schema(client, cache_name) is None


def test_failed_append_keeps_what_was_written(client: IgniteClient, cache_name: str) -> None:
    ok = bad_row_data(100, 0)
    ok["big"][0] = 0
    write(cache_name, ok, client=client)
    with pytest.raises(WriteError, match=r"failed after [\d,]+ rows were written") as info:
        write(cache_name, bad_row_data(8000, 5000), client=client, mode="append", batch_bytes=16 << 10)
    written = info.value.rows_written
    assert 0 < written <= 5000 and isinstance(info.value.__cause__, ConfigurationError)
    assert client.cache(cache_name).size() == 100 + written


def test_failing_tf_pipeline_leaves_no_cache(client: IgniteClient, cache_name: str) -> None:
    tf = pytest.importorskip("tensorflow")

    def gen() -> Iterator[dict[str, Any]]:
        for i in range(8000):
            if i == 5000:
                raise ValueError("corrupt record 5000")
            yield {"x": np.float32(i), "v": np.zeros(8, np.uint8)}

    ds = tf.data.Dataset.from_generator(gen, output_signature={
        "x": tf.TensorSpec([], tf.float32), "v": tf.TensorSpec([8], tf.uint8)})
    with pytest.raises(Exception, match="corrupt record 5000"):
        write(cache_name, ds, client=client, batch_bytes=8 << 10)
    assert cache_name not in client.cache_names()


# -------------------------------------------------------------- multi-node
@pytest.mark.cluster
def test_three_node_cluster_with_backups(ignite_cluster: LocalCluster, cache_name: str) -> None:
    with connect(ignite_cluster) as c:
        data = {"x": np.arange(5000, dtype=np.int64), "img": np.zeros((5000, 8, 8), np.uint8)}
        result = write(cache_name, data, client=c, backups=1, batch_bytes=64 << 10)
        assert result.rows == 5000 and c.cache(cache_name).size() == 5000
        assert c.cache(cache_name).get(4321)["x"] == 4321


# ------------------------------------------------------------------------- CLI
def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``ignite-tf`` (the installed console script) in a child process, without a terminal."""
    full_env = dict(os.environ)
    full_env.pop("IGNITE_PASSWORD", None)
    full_env.update(env or {})
    script = Path(sys.executable).parent / "ignite-tf"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "tensorflow_ignite.cli.main"]
    return subprocess.run([*command, *args], capture_output=True, text=True, env=full_env, timeout=300,
                          stdin=subprocess.DEVNULL)


def test_cli_load_end_to_end(ignite_node: LocalCluster, cache_name: str, tmp_path: Path) -> None:
    host, port = ignite_node.address()
    data = {"label": np.arange(500), "pixels": np.ones((500, 28, 28), np.uint8)}
    np.savez(tmp_path / "mnist.npz", **data)
    started = time.monotonic()
    ok = run_cli("load", cache_name, str(tmp_path / "mnist.npz"), "--host", host, "--port", str(port))
    assert ok.returncode == 0, ok.stderr
    assert re.search(r"^500 rows, [\d.]+ MB, [\d.]+ s", ok.stdout, re.M), ok.stdout
    assert f"cache '{cache_name}'" in ok.stdout
    assert "no SQL engine" in ok.stdout
    with connect(ignite_node) as c:
        assert c.cache(cache_name).size() == 500
        assert load_schema(c, cache_name).field("pixels").shape == (28, 28)  # type: ignore[union-attr]

    again = run_cli("load", cache_name, str(tmp_path / "mnist.npz"), "--host", host, "--port", str(port))
    assert again.returncode == 1
    lines = again.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ignite-tf: error:") and "already exists" in lines[0]

    missing = run_cli("load", cache_name + "_m", str(tmp_path / "nope.csv"), "--port", str(port))
    assert missing.returncode == 1 and "no such file" in missing.stderr

    # --host lists nodes (one that does not answer first), --json reports the load as one document.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        nobody = sock.getsockname()[1]
    more = run_cli("load", cache_name, str(tmp_path / "mnist.npz"), "--host", f"127.0.0.1:{nobody},{host}",
                   "--port", str(port), "--mode", "append", "--json", "--batch-bytes", "64K")
    assert more.returncode == 0, more.stderr
    report = json.loads(more.stdout)
    assert (report["rows"], report["cache"], report["sql_table"]) == (500, cache_name, None), report
    assert report["bytes"] > 500 * 28 * 28 and report["seconds"] > 0
    with connect(ignite_node) as c:
        assert c.cache(cache_name).size() == 1000
    assert time.monotonic() - started < 120


def test_cli_load_with_tls_and_password_from_the_environment(ignite_secure_node: LocalCluster, cache_name: str,
                                                             tmp_path: Path) -> None:
    host, port = ignite_secure_node.address()
    settings = ignite_secure_node.client_settings()
    (tmp_path / "d.csv").write_text("a,b\n1,x\n2,y\n")
    args = ["load", cache_name, str(tmp_path / "d.csv"), "--host", host, "--port", str(port),
            "--username", settings["username"], "--cafile", settings["cafile"],
            "--certfile", settings["certfile"], "--keyfile", settings["keyfile"], "--server-hostname", host,
            "--no-progress"]
    env = {"IGNITE_PASSWORD": settings["password"], "IGNITE_CERT_PASSWORD": settings["cert_password"] or ""}
    ok = run_cli(*args, env=env)
    assert ok.returncode == 0, ok.stderr
    assert "--password" not in args  # the secret travels in the environment only
    with connect(ignite_secure_node) as c:
        assert c.cache(cache_name).get(1)["b"] == "y"

    no_password = run_cli(*args[:-1], "--mode", "overwrite")
    assert no_password.returncode == 1 and "IGNITE_PASSWORD" in no_password.stderr


def test_a_write_that_fills_the_nodes_memory_says_the_node_stopped(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # Ignite stops a node whose data region is full (IgniteOutOfMemoryException is a
    # critical failure).  The writer's error must point there -- not at TLS or at a
    # wrong port, which is what a dropped handshake or a refused connection suggest
    # for a node that never answered.  The capacity guard would refuse this write
    # (test_capacity.py); it is off here, as it is where it cannot learn the region's
    # figures, to show what the error says then.
    monkeypatch.setenv("TF_IGNITE_CAPACITY_GUARD", "0")
    with LocalCluster(tmp_path / "full", nodes=1, region_mb=64, heap_mb=256, name="tfi-full") as cluster:
        host, port = cluster.address()
        node = cluster.members[0]
        with pytest.raises(IgniteConnectionError) as info:
            write("too_big", {"blob": np.zeros((160, 1 << 20), np.uint8)}, host=host, port=port, progress=False)
        message = str(info.value)
        assert "has stopped or is restarting" in message and "Out of memory in data region" in message, message
        assert "TLS" not in message and "Is a node running there" not in message, message
        assert not node.alive()
        assert "Out of memory in data region [name=default" in Path(node.log).read_text()
