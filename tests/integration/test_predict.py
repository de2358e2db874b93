"""tensorflow_ignite.predict and `ignite-tf predict` against real Ignite nodes and real Keras models."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import keras
import numpy as np
import pytest

import tensorflow_ignite
from tensorflow_ignite.client import IgniteClient, close_shared_clients
from tensorflow_ignite.errors import (CacheNotFoundError, ConfigurationError, EmptySourceError, IgniteError,
                                      ModelInputError, ModelLoadError, OutputLayoutError)
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.scoring import LEDGER_CACHE, MODEL_HASH, ModelRecord, models_of, recorded_units
from tensorflow_ignite.testing.waiting import wait_for, wait_rebalanced

from .test_writer import client, connect, sql_client  # noqa: F401  (the same fixtures)

ROWS = 3000




def tiny_model(features: int = 4, name: str = "features") -> keras.Model:
    keras.utils.set_random_seed(7)
    x = keras.Input(shape=(features,), name=name)
    h = keras.layers.Dense(8, activation="relu")(x)
    y = keras.layers.Dense(3, activation="softmax", name="scores")(h)
    return keras.Model(x, y)


def features_data(rows: int = ROWS) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    return {"features": rng.normal(size=(rows, 4)).astype(np.float32),
            "label": rng.integers(0, 3, size=rows).astype(np.int64)}


def read_output(client: IgniteClient, cache: str) -> dict[int, object]:
    return dict(client.cache(cache).scan(page_size=4096))


def assert_scored(client: IgniteClient, output: str, data: dict[str, np.ndarray], model: keras.Model,
                  model_hash: int) -> None:
    entries = read_output(client, output)
    assert sorted(entries) == list(range(len(data["features"])))  # one entry per key, none extra
    keys = np.array(sorted(entries))
    got = np.stack([np.asarray(entries[k].fields["scores"], dtype=np.float32) for k in keys])
    want = model.predict(data["features"][keys], verbose=0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    assert {entries[k].fields[MODEL_HASH] for k in keys} == {model_hash}


def test_predict_cache_matches_model_predict(client: IgniteClient, ignite_node: LocalCluster,
                                             cache_name: str, tmp_path: Path) -> None:
    data = features_data()
    tensorflow_ignite.write(cache_name, data, client=client)
    model = tiny_model()
    path = tmp_path / "m.keras"
    model.save(path)
    out = cache_name + "_scores"
    result = tensorflow_ignite.predict(str(path), cache_name, out, client=client, progress=False)
    assert result.rows == ROWS and result.units_skipped == 0 and result.units_scored == 1024
    assert result.model_uri == str(path) and len(result.model_sha256) == 64
    assert result.rows_per_second > 0
    assert sum(result.rows_per_node.values()) == ROWS and "any" not in result.rows_per_node
    assert_scored(client, out, data, model, result.model_hash)
    assert models_of(client, out) == {result.model_hash: ModelRecord(str(path), result.model_sha256)}
    # The output reads back as a dataset with the model's dtypes and shapes.
    ds = tensorflow_ignite.IgniteDataset(out, client=client, batch_size=ROWS)
    batch = next(iter(ds))
    assert batch["val"]["scores"].shape == (ROWS, 3) and batch["val"]["scores"].dtype.name == "float32"

    # Again with the same model: every partition is complete, nothing is scored or written.
    same_file = tensorflow_ignite.predict(str(path), cache_name, out, client=client, progress=False)
    assert (same_file.rows, same_file.units_scored, same_file.units_skipped) == (0, 0, 1024)
    # The object (hashed by architecture and weights, not file bytes) is another model identity: all rescored.
    again = tensorflow_ignite.predict(model, cache_name, out, client=client, progress=False)
    assert (again.rows, again.units_scored) == (ROWS, 1024) and again.model_sha256 != result.model_sha256
    assert again.model_uri.startswith("keras:")
    overwrite = tensorflow_ignite.predict(str(path), cache_name, out, client=client, mode="overwrite",
                                          progress=False)
    assert (overwrite.rows, overwrite.units_scored) == (ROWS, 1024)
    assert_scored(client, out, data, model, overwrite.model_hash)
    # The replaced output's records are forgotten (the object model's too), and swept from the ledger:
    # overwriting again leaves it the same size, not one more generation of records.
    assert models_of(client, out) == {overwrite.model_hash: ModelRecord(str(path), overwrite.model_sha256)}
    assert [len(units) for units in recorded_units(client, out).values()] == [1024]  # one source, all of it
    size = client.cache(LEDGER_CACHE).size()
    tensorflow_ignite.predict(str(path), cache_name, out, client=client, mode="overwrite", progress=False)
    assert client.cache(LEDGER_CACHE).size() == size
    assert sum(len(u) for u in recorded_units(client, out).values()) == 1024
    # A run that completed the whole source recorded it in one entry, not one per partition: the output's
    # records are its generation, its model and that entry.
    mine = [k for k, _v in client.cache(LEDGER_CACHE).scan() if isinstance(k, str) and k.startswith(out + "\x1f")]
    assert len(mine) == 3, mine


def test_predict_sql_table_matches_model_predict(sql_client: IgniteClient, cache_name: str,
                                                 tmp_path: Path) -> None:
    data = features_data(500)
    rng = np.random.default_rng(5)
    table = {"a": rng.normal(size=500), "b": rng.normal(size=500).astype(np.float32)}
    tensorflow_ignite.write(cache_name, table, client=sql_client)
    a = keras.Input(shape=(), name="a", dtype="float32")
    b = keras.Input(shape=(), name="b", dtype="float32")
    stacked = keras.layers.Concatenate()([keras.layers.Reshape((1,))(a), keras.layers.Reshape((1,))(b)])
    model = keras.Model({"a": a, "b": b}, keras.layers.Dense(2, name="scores")(stacked))
    export = tmp_path / "saved"
    model.export(str(export), verbose=False)
    out = cache_name + "_p"
    result = tensorflow_ignite.predict(str(export), f"SELECT key, a, b FROM {cache_name.upper()} WHERE a > ?",
                                       out, args=[0.0], client=sql_client, progress=False)
    expected_keys = np.flatnonzero(table["a"] > 0)
    assert result.rows == len(expected_keys) and result.units_scored == 1
    entries = read_output(sql_client, out)
    assert sorted(entries) == expected_keys.tolist()
    got = np.stack([np.asarray(entries[k].fields["output_0"]) for k in expected_keys.tolist()])
    want = model.predict({"a": table["a"][expected_keys].astype(np.float32), "b": table["b"][expected_keys]},
                         verbose=0)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    # The predictions are an SQL table too: join them with the source rows.
    joined = sql_client.sql(f"SELECT COUNT(*) FROM {cache_name.upper()} s JOIN {out.upper()} p ON s.key = p.key"
                            ).fetchall()
    assert joined[0][0] == len(expected_keys)
    del data


def test_bad_input_is_refused_before_anything_is_written(client: IgniteClient, cache_name: str,
                                                        tmp_path: Path) -> None:
    data = features_data(200)
    tensorflow_ignite.write(cache_name, data, client=client)
    out = cache_name + "_out"

    def nothing_written() -> None:
        assert out not in client.cache_names()

    with pytest.raises(ModelInputError) as mismatch:  # no field of that name
        tensorflow_ignite.predict(tiny_model(name="pixels"), cache_name, out, client=client, progress=False)
    assert "'pixels'" in str(mismatch.value) and "inputs=" in str(mismatch.value)
    nothing_written()
    with pytest.raises(ModelInputError) as shape:  # wrong shape: field and both types named
        tensorflow_ignite.predict(tiny_model(features=5), cache_name, out, client=client, progress=False)
    assert "'features' is float32[4]" in str(shape.value) and "float32[5]" in str(shape.value)
    nothing_written()
    x = keras.Input(shape=(4,), name="features", dtype="int32")
    with pytest.raises(ModelInputError) as dtype:  # floats into an integer input
        tensorflow_ignite.predict(keras.Model(x, keras.layers.Dense(1)(keras.layers.Identity()(x))), cache_name,
                                  out, client=client, progress=False)
    assert "float32[4]" in str(dtype.value) and "int32[4]" in str(dtype.value)
    nothing_written()
    broken = tmp_path / "broken.keras"
    broken.write_bytes(b"not a zip file")
    for path in (broken, tmp_path / "missing.keras"):
        with pytest.raises(ModelLoadError) as load:
            tensorflow_ignite.predict(str(path), cache_name, out, client=client, progress=False)
        assert load.value.path == str(path) and str(path) in str(load.value)
    nothing_written()
    client.get_or_create_cache(cache_name + "_empty")
    with pytest.raises(EmptySourceError):
        tensorflow_ignite.predict(tiny_model(), cache_name + "_empty", out, client=client, progress=False)
    nothing_written()
    with pytest.raises(CacheNotFoundError):
        tensorflow_ignite.predict(tiny_model(), cache_name + "_nope", out, client=client, progress=False)
    nothing_written()
    # The source as its own output: refused before its rows are touched, even with overwrite.
    with pytest.raises(ConfigurationError) as itself:
        tensorflow_ignite.predict(tiny_model(), cache_name, cache_name, client=client, mode="overwrite",
                                  progress=False)
    assert "its own source" in str(itself.value)
    assert client.cache(cache_name).size() == 200
    # An output of another layout: the entries that are there stay as they were.
    tensorflow_ignite.write(out, {"other": np.arange(5)}, client=client)
    before = read_output(client, out)
    with pytest.raises(OutputLayoutError) as layout:
        tensorflow_ignite.predict(tiny_model(), cache_name, out, client=client, progress=False)
    assert out in str(layout.value) and "overwrite" in str(layout.value)
    assert read_output(client, out) == before


CHILD = textwrap.dedent("""
    import sys
    import tensorflow_ignite
    from tensorflow_ignite.client import IgniteClient, close_shared_clients
    host, port, source, output, model = sys.argv[1:6]
    with IgniteClient([(host, int(port))]) as client:
        tensorflow_ignite.predict(model, source, output, client=client, batch_size=64, record_every=4,
                                  progress=False)
    print("finished", flush=True)
""")


def ledger_records(client: IgniteClient, output: str) -> int:
    return sum(len(units) for units in recorded_units(client, output).values())


def test_killed_run_resumes_and_scores_every_key_exactly_once(client: IgniteClient, ignite_node: LocalCluster,
                                                              cache_name: str, tmp_path: Path) -> None:
    rows = 20_000
    data = features_data(rows)
    tensorflow_ignite.write(cache_name, data, client=client)
    model = tiny_model()
    path = tmp_path / "m.keras"
    model.save(path)
    out = cache_name + "_resume"
    host, port = ignite_node.addresses()[0]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, host, str(port), cache_name, out, str(path)],
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # Kill -9 as soon as some partitions are recorded complete, mid-run.
        wait_for(lambda: LEDGER_CACHE in client.cache_names() and ledger_records(client, out) >= 64
                   or child.poll() is not None, timeout=300, what="the child to complete some partitions")
        assert child.poll() is None, f"the child finished before it was killed: {child.communicate()}"
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    recorded = ledger_records(client, out)
    written = client.cache(out).size()
    assert 64 <= recorded < 1024 and written < rows
    result = tensorflow_ignite.predict(str(path), cache_name, out, client=client, progress=False)
    assert result.units_skipped == recorded and result.units_scored == 1024 - recorded
    assert result.rows < rows  # completed partitions were not scored again
    assert_scored(client, out, data, model, result.model_hash)
    assert ledger_records(client, out) == 1024


def test_cli_predict(client: IgniteClient, ignite_node: LocalCluster, cache_name: str, tmp_path: Path) -> None:
    data = features_data(300)
    tensorflow_ignite.write(cache_name, data, client=client)
    model = tiny_model()
    path = tmp_path / "m.keras"
    model.save(path)
    host, port = ignite_node.addresses()[0]
    out = cache_name + "_cli"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    cmd = [sys.executable, "-m", "tensorflow_ignite.cli.main", "predict", str(path), cache_name, "--out", out,
           "--host", host, "--port", str(port), "--no-progress"]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "300 rows" in done.stdout and out in done.stdout
    entries = read_output(client, out)
    assert len(entries) == 300
    helped = subprocess.run([sys.executable, "-m", "tensorflow_ignite.cli.main", "predict", "--help"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert helped.returncode == 0 and "skip-existing" in helped.stdout and "--out" in helped.stdout
    bad = subprocess.run(cmd[:-1] + ["--inputs", "features=NOPE", "--no-progress"], env=env, capture_output=True,
                         text=True, timeout=300)
    assert bad.returncode == 1 and "NOPE" in bad.stderr


@pytest.fixture
def three_nodes(tmp_path: Path) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path / "nodes", nodes=3, name="tfi-predict-fault", heap_mb=384, region_mb=256)
    try:
        cluster.start()
        yield cluster
    finally:
        close_shared_clients()
        cluster.stop()


def test_node_killed_mid_run_ends_with_every_key_scored_once(three_nodes: LocalCluster, cache_name: str,
                                                            tmp_path: Path) -> None:
    cluster = three_nodes
    rows = 20_000
    data = features_data(rows)
    with connect(cluster) as setup:
        tensorflow_ignite.write(cache_name, data, client=setup, backups=1)
    wait_rebalanced(cluster, cache_name, rows)
    model = tiny_model()
    out = cache_name + "_nodekill"
    outcome: dict[str, object] = {}

    def run() -> None:
        with connect(cluster) as c:
            try:
                outcome["result"] = tensorflow_ignite.predict(model, cache_name, out, client=c, backups=1,
                                                              batch_size=128, progress=False)
            except IgniteError as exc:  # a failure is allowed: the second run must finish the job
                outcome["error"] = exc

    worker = threading.Thread(target=run)
    with connect(cluster) as client:
        worker.start()
        wait_for(lambda: LEDGER_CACHE in client.cache_names() and ledger_records(client, out) >= 128
                 or not worker.is_alive(), timeout=300, what="some partitions scored")
        assert worker.is_alive(), f"the run ended before the kill: {outcome}"
        cluster.kill_node(2, signal.SIGKILL)
        worker.join(timeout=600)
        assert not worker.is_alive()
    with connect(cluster) as client:
        # Whatever the first run did, running it again completes the output with each key once.
        result = tensorflow_ignite.predict(model, cache_name, out, client=client, progress=False)
        assert result.units_skipped + result.units_scored == 1024
        if "result" in outcome:
            assert result.units_scored == 0
        assert_scored(client, out, data, model, result.model_hash)
        assert ledger_records(client, out) == 1024
    if "result" in outcome:  # each key's prediction went to its primary node: spread over the nodes
        first = outcome["result"]
        assert isinstance(first, tensorflow_ignite.PredictResult)
        assert sum(first.rows_per_node.values()) == first.rows and len(first.rows_per_node) >= 2
    print(f"first run: {outcome}; second run: {result.summary()}")
