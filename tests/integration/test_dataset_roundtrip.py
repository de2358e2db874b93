"""Data written by tensorflow_ignite.write comes back from IgniteDataset with its dtypes and shapes."""

from __future__ import annotations

import numpy as np
import pytest

import tensorflow_ignite as ti
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.errors import SchemaError
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.protocol.values import BinaryObject


def test_write_then_read_every_dtype(ignite_node: LocalCluster, cache_name: str) -> None:
    host, port = ignite_node.address()
    n = 257
    rng = np.random.default_rng(1)
    data = {
        "i8": rng.integers(-128, 128, n).astype(np.int8),
        "u8": rng.integers(0, 256, n).astype(np.uint8),
        "i16": rng.integers(-(2**15), 2**15, n).astype(np.int16),
        "i32": rng.integers(-(2**31), 2**31, n).astype(np.int32),
        "i64": rng.integers(-(2**62), 2**62, n).astype(np.int64),
        "f32": rng.random(n).astype(np.float32),
        "f64": rng.random(n),
        "flag": rng.random(n) > 0.5,
        "name": np.array([f"row-{i}-é" for i in range(n)], dtype=object),
        "when": (np.datetime64("2024-01-01T00:00:00.123456789") + np.arange(n).astype("timedelta64[s]")),
        "image": rng.integers(0, 256, (n, 4, 5), dtype=np.uint8),
        "vec": rng.random((n, 3)).astype(np.float32),
    }
    result = ti.write(cache_name, data, host=host, port=port, progress=False)
    assert result.rows == n
    with IgniteClient(f"{host}:{port}") as client:
        from tensorflow_ignite.data.tensor_schema import SCHEMA_CACHE

        # The recorded shapes survive the loss of a node.
        assert client.cache(SCHEMA_CACHE).configuration().backups == 1
    ds = ti.IgniteDataset(cache_name, host, port, batch_size=64)
    spec = ds.element_spec["val"]
    assert spec["image"].shape.as_list() == [None, 4, 5] and spec["image"].dtype.name == "uint8"
    assert spec["vec"].shape.as_list() == [None, 3] and spec["vec"].dtype.name == "float32"
    got: dict[str, list[np.ndarray]] = {k: [] for k in data}
    keys = []
    for batch in ds.as_numpy_iterator():
        keys.append(batch["key"])
        for k in data:
            got[k].append(batch["val"][k])
    order = np.argsort(np.concatenate(keys))
    assert np.concatenate(keys)[order].tolist() == list(range(n))
    for k, original in data.items():
        back = np.concatenate(got[k])[order]
        if k == "name":
            assert [b.decode() for b in back] == list(original)
        elif k == "when":
            assert back.tolist() == original.astype("datetime64[ns]").astype(np.int64).tolist()
        elif k == "u8":
            assert back.astype(np.uint8).tolist() == original.tolist()
        else:
            assert back.dtype == original.dtype, k
            np.testing.assert_array_equal(back, original, err_msg=k)


def test_objects_of_different_types_are_a_clear_error(ignite_node: LocalCluster, cache_name: str) -> None:
    host, port = ignite_node.address()
    with IgniteClient(f"{host}:{port}") as client:
        cache = client.get_or_create_cache(cache_name)
        cache.put_all({i: BinaryObject("Cat", {"name": f"c{i}", "lives": 9}) for i in range(5)})
        cache.put(100, BinaryObject("Dog", {"name": "rex", "good": True}))
    ds = ti.IgniteDataset(cache_name, host, port, value_type="Cat")
    with pytest.raises(Exception) as info:
        list(ds)
    text = str(info.value)
    assert "SchemaError" in text or isinstance(info.value, SchemaError)
    assert cache_name in text
