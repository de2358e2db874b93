"""Scoring on stock Apache Ignite nodes started from Spring XML with the module (the ``stock_cluster``
fixture: three nodes, 2.17 by default): in this process, and as a launcher job whose workers each
write only to their own node."""

from __future__ import annotations

from pathlib import Path

import keras
import numpy as np
import pytest

import tensorflow_ignite
from tensorflow_ignite.cli.main import main as cli
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.launcher.jobs import JobClient
from tensorflow_ignite.local.stock import StockCluster
from tensorflow_ignite.scoring import MODEL_HASH

ROWS = 2000


def _assert_scored(client: IgniteClient, output: str, features: np.ndarray, model: keras.Model) -> None:
    entries = dict(client.cache(output).scan(page_size=4096))
    assert sorted(entries) == list(range(ROWS))
    got = np.stack([np.asarray(entries[k].fields["scores"], dtype=np.float32) for k in range(ROWS)])
    np.testing.assert_allclose(got, model.predict(features, verbose=0), rtol=1e-5, atol=1e-6)
    assert len({entries[k].fields[MODEL_HASH] for k in range(ROWS)}) == 1


def test_predict_in_process_and_on_the_nodes(stock_cluster: StockCluster, cache_name: str, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    host, port = stock_cluster.address()
    keras.utils.set_random_seed(3)
    x = keras.Input(shape=(8,), name="features")
    model = keras.Model(x, keras.layers.Dense(4, activation="softmax", name="scores")(x))
    path = tmp_path / "m.keras"
    model.save(path)
    features = np.random.default_rng(2).normal(size=(ROWS, 8)).astype(np.float32)
    with JobClient(IgniteClient(f"{host}:{port}"), owns_client=True) as jobs:
        client = jobs.client
        tensorflow_ignite.write(cache_name, {"features": features}, client=client)

        result = tensorflow_ignite.predict(str(path), cache_name, cache_name + "_here", client=client,
                                           progress=False)
        assert (result.rows, result.units_scored) == (ROWS, 1024)
        _assert_scored(client, cache_name + "_here", features, model)

        out = cache_name + "_nodes"
        capsys.readouterr()
        assert cli(["predict", str(path), cache_name, "--out", out, "--on-cluster", "--name", out.replace("_", "-"),
                    "--host", host, "--port", str(port)]) == 0
        job = out.replace("_", "-")
        _assert_scored(client, out, features, model)
        results = jobs.results(job)
        assert len(results) == len(stock_cluster.addresses())  # one worker per node
        assert sum(r["rows"] for r in results.values()) == ROWS
        # Reads and writes colocated: each worker's predictions all went to its own node, and nearly all of
        # its bytes (the rest: ledger records, metadata, the progress reports).
        for r in results.values():
            assert r["rows_elsewhere"] == 0 and r["bytes"] > 0
            assert r["own_node_bytes_share"] > 0.9  # measured: 0.992-0.997
