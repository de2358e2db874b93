"""Fixed-length primitive arrays as other clients write them, read dense (``IgniteDataset(shapes=...)``).

Ignite's binary metadata records ``float[]`` without a length, so such a field is
ragged unless the read declares its shape.  Data written by pyignite
(``FloatArrayObject``, ``ByteArrayObject``, a nested object's ``DoubleArrayObject``,
null arrays) and by Ignite's Java thin client (``TypeWriter``: ``float[64]``, ``double[64]``,
``long[64]``... in every key but one):

* the dense read runs on the native source op (its graph serializes without a
  Python function), resumes mid-epoch exactly once from a checkpoint, and
  gives the values written;
* without ``shapes=`` the dataset says which ``shapes=`` to pass;
* a row that does not fit fails with an ``ArrayLengthError`` naming the cache,
  the field and the key;
* ``predict`` of a Keras model with input ``pixels`` (64,) on such rows equals
  ``model.predict`` on every key, from Python and from ``ignite-tf predict``,
  and fails naming the key, before writing that batch, on a row that does not fit;
* ``write`` of a dense batch back stores ``float[]``/``byte[]`` fields, as
  pyignite reads them.

The Java thick client's arrays (``{label, pixels: float[64], ...}`` POJOs: the same dense read and
``predict``) are in test_thick_client_data.py (its module's writer).
"""

from __future__ import annotations

import importlib.util
import logging
import os
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path
from typing import Any

import keras
import numpy as np
import pytest
import tensorflow as tf

import tensorflow_ignite
from tensorflow_ignite import IgniteDataset
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.errors import ArrayLengthError, ConfigurationError
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.protocol.codes import TypeCode

from .resume_check import assert_resumes_the_rest_once

pyignite = pytest.importorskip("pyignite")

from pyignite import Client as PyClient  # noqa: E402
from pyignite import GenericObjectMeta  # noqa: E402
from pyignite.datatypes import BinaryObject as PyBinaryObject  # noqa: E402
from pyignite.datatypes import ByteArrayObject, DoubleArrayObject, FloatArrayObject, LongObject  # noqa: E402

ROWS = 600
BATCH = 64


def _pixels(k: int) -> list[float]:
    return [float(np.float32((k * 7 + j) % 17 / 16.0)) for j in range(64)]


def _raw(k: int) -> list[int] | None:
    return None if k % 10 == 3 else [(k + j) % 128 for j in range(16)]


def _write_digits(ignite_node: LocalCluster, cache: str, rows: int = ROWS, *, bad_key: int | None = None) -> None:
    """``{label: long, pixels: float[64], raw: byte[16] or null, img: {v: double[4]}}`` rows via pyignite."""
    class Img(metaclass=GenericObjectMeta, type_name=f"FixedImg_{cache}",
              schema=OrderedDict([("v", DoubleArrayObject)])):
        pass

    class Digit(metaclass=GenericObjectMeta, type_name=f"FixedDigit_{cache}",
                schema=OrderedDict([("label", LongObject), ("pixels", FloatArrayObject),
                                    ("raw", ByteArrayObject), ("img", PyBinaryObject)])):
        pass

    host, port = ignite_node.address()
    py = PyClient()
    with py.connect(host, port):
        c = py.get_or_create_cache(cache)
        for k in range(rows):
            pixels = _pixels(k)
            if k == bad_key:
                pixels = pixels[:63]
            c.put(k, Digit(label=k % 10, pixels=pixels, raw=_raw(k), img=Img(v=[k, -k, 0.5, k / 4])))


def _no_python_function(ds: tf.data.Dataset) -> bool:
    """True when the dataset's serialized graph runs without this process (no py_func / generator)."""
    graph = tf.compat.v1.GraphDef()
    graph.ParseFromString(ds._as_serialized_graph().numpy())  # TensorFlow's (private) serialization
    ops = {n.op for n in graph.node} | {n.op for f in graph.library.function for n in f.node_def}
    return "IgnitePyDataset" in ops and not ops & {"PyFunc", "EagerPyFunc", "PyFuncStateless"}


def test_pyignite_arrays_read_dense_on_the_native_op(ignite_node: LocalCluster, cache_name: str,
                                                     caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    _write_digits(ignite_node, cache_name)
    with IgniteClient(ignite_node.addresses()) as client:
        # Without shapes=: ragged, and one line saying what to pass.
        with caplog.at_level(logging.WARNING, logger="tensorflow_ignite.data.dataset"):
            ragged = IgniteDataset(cache_name, client=client, batch_size=BATCH)
        assert isinstance(ragged.element_spec["val"]["pixels"], tf.RaggedTensorSpec)
        hints = [r.getMessage() for r in caplog.records if "shapes=" in r.getMessage()]
        assert len(hints) == 1, hints
        assert "shapes={'pixels': [64], 'raw': [16], 'img.v': [4]}" in hints[0], hints[0]
        assert not _no_python_function(ragged)

        shapes = {"pixels": [64], "raw": [16], "img.v": [2, 2]}
        ds = IgniteDataset(cache_name, client=client, batch_size=BATCH, shapes=shapes, null_masks=True)
        spec = ds.element_spec["val"]
        assert spec["pixels"] == tf.TensorSpec([None, 64], tf.float32)
        assert spec["raw"] == tf.TensorSpec([None, 16], tf.uint8)
        assert spec["img"]["v"] == tf.TensorSpec([None, 2, 2], tf.float64)
        assert _no_python_function(ds)

        seen: dict[int, int] = {}
        for batch in ds.as_numpy_iterator():
            val = batch["val"]
            for i, k in enumerate(batch["key"].tolist()):
                seen[k] = seen.get(k, 0) + 1
                np.testing.assert_array_equal(val["pixels"][i], np.array(_pixels(k), np.float32))
                raw = _raw(k)
                assert bool(val["raw_present"][i]) is (raw is not None), k
                np.testing.assert_array_equal(val["raw"][i], np.zeros(16, np.uint8) if raw is None
                                              else np.array(raw, np.uint8))
                np.testing.assert_array_equal(val["img"]["v"][i], np.array([[k, -k], [0.5, k / 4]]))
        assert seen == {k: 1 for k in range(ROWS)}

        # Checkpointed mid-epoch, restored into the same dataset rebuilt: the rest, exactly once.
        it = iter(ds)
        first = [int(k) for _ in range(3) for k in next(it)["key"].numpy()]
        path = tf.train.Checkpoint(iterator=it).write(str(tmp_path / "ckpt"))
        again = IgniteDataset(cache_name, client=client, batch_size=BATCH, shapes=shapes, null_masks=True)
        resumed = iter(again)
        tf.train.Checkpoint(iterator=resumed).read(path).assert_consumed()
        rest = [int(k) for b in resumed for k in b["key"].numpy()]
        assert sorted(first + rest) == list(range(ROWS))

        with pytest.raises(ConfigurationError, match=r"'label' is int64\[\], not a primitive array"):
            IgniteDataset(cache_name, client=client, shapes={"label": [1]})
        with pytest.raises(ConfigurationError, match="names 'nope', but the dataset has no such field"):
            IgniteDataset(cache_name, client=client, shapes={"nope": [64]})
        with pytest.raises(ConfigurationError, match="positive integers"):
            IgniteDataset(cache_name, client=client, shapes={"pixels": [0]})


def test_a_row_that_does_not_fit_names_cache_field_and_key(ignite_node: LocalCluster, cache_name: str) -> None:
    _write_digits(ignite_node, cache_name, rows=200, bad_key=137)
    with IgniteClient(ignite_node.addresses()) as client:
        with pytest.raises((ArrayLengthError, tf.errors.OpError)) as info:
            for _ in IgniteDataset(cache_name, client=client, batch_size=BATCH, shapes={"pixels": [64]}):
                pass
    message = str(info.value)
    assert f"cache {cache_name!r}, field 'pixels', key 137" in message, message
    assert "63 elements" in message and "[64]" in message, message


def _digits_model(field: str = "pixels") -> keras.Model:
    """A Keras model scoring ``field`` (64 floats) into ``scores`` (10 floats)."""
    keras.utils.set_random_seed(5)
    x = keras.Input(shape=(64,), name=field)
    y = keras.layers.Dense(10, activation="softmax", name="scores")(keras.layers.Dense(16, activation="relu")(x))
    return keras.Model(x, y)


def _assert_predictions(client: IgniteClient, out: str, keys: list[int], want: np.ndarray) -> None:
    """``out`` holds one prediction per key of ``keys``, equal to ``want`` (rows in the keys' order)."""
    entries = dict(client.cache(out).scan(page_size=4096))
    assert sorted(entries) == keys, out
    got = np.stack([np.asarray(entries[k].fields["scores"], np.float32) for k in keys])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=out)


def test_predict_on_pyignite_arrays_equals_model_predict(ignite_node: LocalCluster, cache_name: str,
                                                         tmp_path: Path) -> None:
    _write_digits(ignite_node, cache_name)
    model = _digits_model()
    path = tmp_path / "digits.keras"
    model.save(path)
    want = model.predict(np.array([_pixels(k) for k in range(ROWS)], np.float32), verbose=0)
    host, port = ignite_node.address()
    with IgniteClient(ignite_node.addresses()) as client:
        result = tensorflow_ignite.predict(model, cache_name, cache_name + "_py", client=client, progress=False)
        assert result.rows == ROWS

        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        done = subprocess.run([sys.executable, "-m", "tensorflow_ignite.cli.main", "predict", str(path), cache_name,
                               "--out", cache_name + "_cli", "--host", host, "--port", str(port), "--no-progress"],
                              env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        for out in (cache_name + "_py", cache_name + "_cli"):
            _assert_predictions(client, out, list(range(ROWS)), want)


def test_predict_fails_naming_the_key_before_writing_its_batch(ignite_node: LocalCluster, cache_name: str) -> None:
    _write_digits(ignite_node, cache_name, rows=100, bad_key=42)
    out = cache_name + "_out"
    with IgniteClient(ignite_node.addresses()) as client:
        with pytest.raises(ArrayLengthError, match=f"cache {cache_name!r}, field 'pixels', key 42"):
            tensorflow_ignite.predict(_digits_model(), cache_name, out, client=client, progress=False)
        # 100 rows are one page and one batch: nothing of it was written.
        assert client.cache(out).size() == 0


def test_write_back_keeps_the_array_types_pyignite_reads(ignite_node: LocalCluster, cache_name: str) -> None:
    _write_digits(ignite_node, cache_name, rows=100)
    back = cache_name + "_back"
    with IgniteClient(ignite_node.addresses()) as client:
        ds = IgniteDataset(cache_name, client=client, batch_size=100, fields=["label", "pixels", "raw"],
                           shapes={"pixels": [64], "raw": [16]})
        batch = next(ds.as_numpy_iterator())
        assert batch["val"]["pixels"].dtype == np.float32 and batch["val"]["pixels"].shape == (100, 64)
        tensorflow_ignite.write(back, {"key": batch["key"], **batch["val"]}, client=client, key="key",
                                type_name=f"FixedDigit_{cache_name}", sql=False)
        types = client.cache(back).get(5).field_types
        assert types["pixels"] == TypeCode.FLOAT_ARR and types["raw"] == TypeCode.BYTE_ARR, types
    host, port = ignite_node.address()
    py = PyClient()
    with py.connect(host, port):
        for k in (0, 5, 99):
            row = py.get_cache(back).get(k)
            assert list(row.pixels) == _pixels(k), k
            raw = _raw(k)
            assert list(row.raw) == (raw if raw is not None else [0] * 16), k


# ------------------------------------------------------------ Java thin client
def _load_javaclient() -> Any:
    path = Path(__file__).resolve().parents[2] / "bench" / "javaclient.py"
    spec = importlib.util.spec_from_file_location("javaclient", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("javaclient", module)
    spec.loader.exec_module(module)
    return module


JAVA_ROWS = 150
MISFIT_KEY = 37  # TypeWriter's arrays hold 63 elements in this key, 64 in every other


def test_java_thin_client_arrays(ignite_node: LocalCluster, cache_name: str, tmp_path: Path) -> None:
    host, port = ignite_node.address()
    written = _load_javaclient().run_type_writer(host, port, cache_name, JAVA_ROWS, array_length=64,
                                                  misfit_key=MISFIT_KEY)
    records = {r["key"]: r["fields"] for r in written}
    assert {len(f["f_floats"]) for k, f in records.items() if k != MISFIT_KEY} == {64}
    assert len(records[MISFIT_KEY]["f_floats"]) == 63
    shapes = {"f_floats": [64], "f_doubles": [64], "f_longs": [64], "f_bytes": [64], "f_bools": [64]}
    model = _digits_model("f_floats")
    with IgniteClient(ignite_node.addresses()) as client:
        # The row that does not fit: the read and predict name the cache, the field and the key.
        with pytest.raises((ArrayLengthError, tf.errors.OpError)) as info:
            list(IgniteDataset(cache_name, client=client, shapes=shapes, fields=list(shapes)))
        message = str(info.value)
        assert f"cache {cache_name!r}, field 'f_" in message and f"key {MISFIT_KEY}" in message, message
        assert "63 elements" in message and "[64]" in message, message
        out = cache_name + "_misfit"
        with pytest.raises(ArrayLengthError, match=f"cache {cache_name!r}, field 'f_floats', key {MISFIT_KEY}"):
            tensorflow_ignite.predict(model, cache_name, out, client=client, progress=False)
        assert client.cache(out).size() == 0  # one batch, and nothing of it was written
        client.cache(cache_name).remove_keys([MISFIT_KEY], key_type=TypeCode.INT)  # TypeWriter's keys are ints
        keys = sorted(k for k in records if k != MISFIT_KEY)

        def dense() -> IgniteDataset:
            return IgniteDataset(cache_name, client=client, batch_size=16, shapes=shapes, fields=list(shapes))

        ds = dense()
        spec = ds.element_spec["val"]
        assert spec["f_floats"] == tf.TensorSpec([None, 64], tf.float32)
        assert spec["f_doubles"] == tf.TensorSpec([None, 64], tf.float64)
        assert spec["f_longs"] == tf.TensorSpec([None, 64], tf.int64)
        assert _no_python_function(ds)
        seen: dict[int, int] = {}
        for batch in ds.as_numpy_iterator():
            val = batch["val"]
            for i, k in enumerate(batch["key"].tolist()):
                seen[k] = seen.get(k, 0) + 1
                want = records[k]
                np.testing.assert_array_equal(val["f_floats"][i], np.array(want["f_floats"], np.float32))
                np.testing.assert_array_equal(val["f_doubles"][i], np.array(want["f_doubles"], np.float64))
                np.testing.assert_array_equal(val["f_longs"][i], np.array(want["f_longs"], np.int64))
                np.testing.assert_array_equal(val["f_bytes"][i],
                                              np.array(want["f_bytes"], np.int64).astype(np.uint8))
                np.testing.assert_array_equal(val["f_bools"][i], np.array(want["f_bools"], bool))
        assert seen == {k: 1 for k in keys}

        # Checkpointed mid-epoch, restored into the dataset rebuilt: the rest, exactly once.
        assert_resumes_the_rest_once(dense, tmp_path, keys)

        # predict from Python and from ignite-tf predict: model.predict's scores on every key.
        want = model.predict(np.array([records[k]["f_floats"] for k in keys], np.float32), verbose=0)
        result = tensorflow_ignite.predict(model, cache_name, cache_name + "_py", client=client, progress=False)
        assert result.rows == len(keys)
        model_path = tmp_path / "digits.keras"
        model.save(model_path)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        done = subprocess.run([sys.executable, "-m", "tensorflow_ignite.cli.main", "predict", str(model_path),
                               cache_name, "--out", cache_name + "_cli", "--host", host, "--port", str(port),
                               "--no-progress"], env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        for out in (cache_name + "_py", cache_name + "_cli"):
            _assert_predictions(client, out, keys, want)
