"""One API for both Ignite generations (issue 45, item 1): the README's calls -- ``write``,
``IgniteDataset``, ``IgniteDataset.from_sql``, ``predict`` -- made unchanged against a local Ignite 2
node and a local Ignite 3 node (the session's nodes), with the same results; ``follow`` on Ignite 3 is
a clear ``UnsupportedOperationError``."""

from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

import tensorflow_ignite as ti
from tensorflow_ignite.data.reader import ReadStats
from tensorflow_ignite.errors import UnsupportedOperationError
from tensorflow_ignite.generation import generation_at
from tensorflow_ignite.client.options import ConnectionOptions


@pytest.fixture(params=[2, 3], ids=["ignite2", "ignite3"])
def where(request: pytest.FixtureRequest) -> tuple[str, int]:
    """A node's client address: the session's Ignite 2 node with SQL, or one of its plain Ignite 3 nodes."""
    if request.param == 2:
        return request.getfixturevalue("ignite_sql_node").address()
    return request.getfixturevalue("ignite3_plain_nodes").address(0)


def points(rows: int = 2000) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, 8)).astype(np.float32)
    return {"x": x, "y": (x.sum(axis=1) > 0).astype(np.int64)}


def test_the_readme_example_runs_unchanged(where: tuple[str, int], cache_name: str, request) -> None:  # type: ignore[no-untyped-def]
    """README, "On your own cluster": the same calls, the same tensors back, the model trained and saved."""
    host, port = where
    data = points()
    result = ti.write(cache_name, {"x": data["x"], "y": data["y"]}, host=host, port=port, mode="overwrite")
    assert isinstance(result, ti.WriteResult)
    assert (result.cache_name, result.rows, result.key) == (cache_name, 2000, "key")
    assert generation_at(ConnectionOptions(host=host, port=port)) == request.node.callspec.params["where"]

    ds = ti.IgniteDataset(cache_name, host, port, batch_size=64)
    spec = ds.element_spec
    assert spec["key"] == tf.TensorSpec([None], tf.int64)
    assert spec["val"] == {"x": tf.TensorSpec([None, 8], tf.float32), "y": tf.TensorSpec([None], tf.int64)}
    keys, xs, ys = [], [], []
    for batch in ds.as_numpy_iterator():
        keys.append(batch["key"])
        xs.append(batch["val"]["x"])
        ys.append(batch["val"]["y"])
    order = np.argsort(np.concatenate(keys))
    assert np.array_equal(np.concatenate(keys)[order], np.arange(2000))
    np.testing.assert_array_equal(np.concatenate(xs)[order], data["x"])
    np.testing.assert_array_equal(np.concatenate(ys)[order], data["y"])
    stats = ds.stats
    assert isinstance(stats, ReadStats) and stats.rows == 2000

    train = ds.map(lambda b: (b["val"]["x"], b["val"]["y"])).prefetch(tf.data.AUTOTUNE)
    model = tf.keras.Sequential([tf.keras.layers.Input((8,)), tf.keras.layers.Dense(2, activation="softmax")])
    model.compile(tf.keras.optimizers.Adam(0.05), "sparse_categorical_crossentropy", metrics=["accuracy"])
    history = model.fit(train, epochs=5, verbose=0)
    model.save(f"ignite://{host}:{port}/{cache_name}/model.keras")
    assert history.history["accuracy"][-1] > 0.9
    again = tf.keras.models.load_model(f"ignite://{host}:{port}/{cache_name}/model.keras")
    np.testing.assert_allclose(again.predict(data["x"][:16], verbose=0), model.predict(data["x"][:16], verbose=0))


def test_single_rows_fields_and_modes(where: tuple[str, int], cache_name: str) -> None:
    """Single elements, ``fields=``, a key column, ``append`` and ``create``'s refusal, the same on both."""
    host, port = where
    ids = np.array([7, 3, 9], dtype=np.int64)
    ti.write(cache_name, {"id": ids, "name": np.array(["a", "b", "c"]), "w": np.array([1.5, 2.5, 3.5])},
             key="id", host=host, port=port, mode="overwrite")
    more = ti.write(cache_name, {"id": np.array([11], dtype=np.int64), "name": np.array(["d"]),
                                 "w": np.array([4.5])}, key="id", host=host, port=port, mode="append")
    assert (more.rows, more.key) == (1, "id")
    rows = sorted((int(e["key"]), e["val"]["name"], float(e["val"]["w"]))
                  for e in ti.IgniteDataset(cache_name, host, port).as_numpy_iterator())
    assert rows == [(3, b"b", 2.5), (7, b"a", 1.5), (9, b"c", 3.5), (11, b"d", 4.5)]
    only = next(iter(ti.IgniteDataset(cache_name, host, port, fields=["w"])))
    assert set(only["val"]) == {"w"}
    with pytest.raises(ti.ConfigurationError):
        ti.write(cache_name, {"id": ids, "name": np.array(["a", "b", "c"]), "w": np.array([1.5, 2.5, 3.5])},
                 key="id", host=host, port=port, mode="create")


def test_sql(where: tuple[str, int], cache_name: str) -> None:
    """``IgniteDataset.from_sql`` over the table ``write`` made: the same columns and rows."""
    host, port = where
    ti.write(cache_name, {"name": np.array(["WARM KITTY", "SOFT KITTY", "BALL OF FUR"]),
                          "weight": np.array([2.5, 1.5, 3.0])}, host=host, port=port, mode="overwrite")
    heavy = ti.IgniteDataset.from_sql(f"SELECT NAME, WEIGHT FROM {cache_name} WHERE WEIGHT > ?", [2.0], host, port)
    assert sorted((r["NAME"], float(r["WEIGHT"])) for r in heavy.as_numpy_iterator()) == [
        (b"BALL OF FUR", 3.0), (b"WARM KITTY", 2.5)]
    batched = ti.IgniteDataset.from_sql(f"SELECT WEIGHT FROM {cache_name}", [], host, port, batch_size=2)
    assert sorted(len(b["WEIGHT"]) for b in batched.as_numpy_iterator()) == [1, 2]


def test_follow_on_ignite3_is_a_clear_error(ignite3_plain_nodes, cache_name: str) -> None:  # type: ignore[no-untyped-def]
    host, port = ignite3_plain_nodes.address(0)
    with pytest.raises(UnsupportedOperationError, match="no continuous queries"):
        ti.IgniteDataset.follow(cache_name, host, port)


def test_the_launcher_on_ignite3_is_a_clear_error(  # type: ignore[no-untyped-def]
    ignite3_plain_nodes, capsys: pytest.CaptureFixture[str]
) -> None:
    """The launcher is an Ignite 2 service: its commands say so on an Ignite 3 address, not with the
    Ignite 2 handshake's failure."""
    from tensorflow_ignite.cli.main import main
    from tensorflow_ignite.launcher.jobs import JobClient

    host, port = ignite3_plain_nodes.address(0)
    with pytest.raises(UnsupportedOperationError, match=f"cluster at {host}:{port} is Ignite 3: the job launcher"):
        JobClient.connect(host, port)
    assert main(["ps", "--host", host, "--port", str(port)]) != 0
    err = capsys.readouterr().err
    assert "is Ignite 3: the job launcher is a service" in err, err


def test_options_without_an_ignite3_form_name_themselves(ignite3_plain_nodes, cache_name: str) -> None:  # type: ignore[no-untyped-def]
    host, port = ignite3_plain_nodes.address(0)
    ti.write(cache_name, {"v": np.arange(3)}, host=host, port=port, mode="overwrite")
    with pytest.raises(UnsupportedOperationError, match="local=True"):
        ti.IgniteDataset(cache_name, host, port, local=True)
    with pytest.raises(UnsupportedOperationError, match="value_type"):
        ti.IgniteDataset(cache_name, host, port, value_type="Row")
    with pytest.raises(UnsupportedOperationError, match="backups=1"):
        ti.write(cache_name, {"v": np.arange(3)}, host=host, port=port, mode="overwrite", backups=1)
    # An Ignite 3 client given as client= says the generation itself.
    from tensorflow_ignite.ignite3 import Ignite3Client

    with Ignite3Client(ConnectionOptions(host=host, port=port)) as client:
        got = sorted(int(e["val"]["v"]) for e in ti.IgniteDataset(cache_name, client=client).as_numpy_iterator())
    assert got == [0, 1, 2]


def test_scoring(where: tuple[str, int], cache_name: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The scoring guide's calls: predictions for every key, then a second run that has nothing to do."""
    import keras

    host, port = where
    rng = np.random.default_rng(0)
    petals = rng.normal(size=(1000, 4)).astype("float32")
    ti.write(cache_name, {"petals": petals}, host=host, port=port, mode="overwrite")
    keras.utils.set_random_seed(1)
    x = keras.Input(shape=(4,), name="petals")
    model = keras.Model(x, keras.layers.Dense(3, activation="softmax", name="species")(x))
    model.save(tmp_path / "flowers.keras")

    output = f"{cache_name}_SCORES"
    result = ti.predict(str(tmp_path / "flowers.keras"), cache_name, output, host=host, port=port, mode="overwrite")
    assert isinstance(result, ti.PredictResult) and result.rows == 1000
    scores = next(iter(ti.IgniteDataset(output, host, port, batch_size=1000)))
    assert scores["val"]["species"].shape == (1000, 3)
    order = np.argsort(scores["key"].numpy())
    np.testing.assert_array_equal(scores["key"].numpy()[order], np.arange(1000))
    np.testing.assert_allclose(scores["val"]["species"].numpy()[order], model.predict(petals, verbose=0),
                               rtol=1e-5, atol=1e-6)
    assert set(scores["val"]["model_hash"].numpy().tolist()) == {result.model_hash}

    again = ti.predict(str(tmp_path / "flowers.keras"), cache_name, output, host=host, port=port)
    assert again.rows == 0 and again.units_skipped == result.units_scored


def test_load_finds_the_generation(where: tuple[str, int], cache_name: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``ignite-tf load`` without ``--ignite``: the file's rows in a cache or a table, whichever the address is."""
    from tensorflow_ignite.cli.main import main

    host, port = where
    path = tmp_path / "rows.csv"
    path.write_text("id,w\n1,0.5\n2,1.5\n3,2.5\n")
    assert main(["load", cache_name, str(path), "--host", host, "--port", str(port), "--key", "id",
                 "--no-progress"]) == 0
    rows = ti.IgniteDataset(cache_name, host, port).as_numpy_iterator()
    assert sorted(float(next(iter(r["val"].values()))) for r in rows) == [0.5, 1.5, 2.5]


def test_a_saved_iterator_resumes_exactly_once(where: tuple[str, int], cache_name: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``tf.train.Checkpoint(iterator=it)`` mid-epoch, restored into a new iterator: every key once, on both."""
    host, port = where
    ti.write(cache_name, {"v": np.arange(1000, dtype=np.int64)}, host=host, port=port, mode="overwrite")
    ds = ti.IgniteDataset(cache_name, host, port, batch_size=50)
    it = iter(ds)
    first = [next(it)["key"].numpy() for _ in range(5)]
    path = tf.train.Checkpoint(iterator=it).save(str(tmp_path / "ckpt"))
    again = iter(ti.IgniteDataset(cache_name, host, port, batch_size=50))
    tf.train.Checkpoint(iterator=again).restore(path)
    rest = [b["key"].numpy() for b in again]
    keys = np.concatenate(first + rest)
    assert sorted(keys.tolist()) == list(range(1000))
