"""The Python half of scripts/wheel-smoke.sh, run by the wheel's virtualenv against a running node.

    python wheel_smoke.py PORT

Writes a cache, reads it back through IgniteDataset and asserts that the native
source op served it (prebuilt: nothing compiled), follows the cache through one new row, then writes,
lists and reads a
file through tf.io.gfile and round-trips a checkpoint through ignite://.  Prints
one line per check.  Also run on an install from source (tests/integration/test_source_install.py).
"""

from __future__ import annotations

import sys

import numpy as np
import tensorflow as tf

import tensorflow_ignite as ti
from tensorflow_ignite.native import build, data_source, loader

port = int(sys.argv[1])
host = "127.0.0.1"

# Write: 1,000 rows of two columns.
features = np.arange(4000, dtype=np.float32).reshape(1000, 4)
labels = np.arange(1000, dtype=np.int64)
result = ti.write("WHEEL_SMOKE", {"label": labels, "features": features}, host=host, port=port,
                  mode="overwrite", progress=False)
assert result.rows == 1000, result.summary()
print(f"write: {result.rows} rows")

# Read through the op.
dataset = ti.IgniteDataset("WHEEL_SMOKE", host, port, batch_size=100)
assert data_source.uses_python_source(dataset._dataset), "IgniteDataset did not use the native source op"
seen = np.zeros(1000, dtype=bool)
total = 0.0
for batch in dataset:
    keys = batch["key"].numpy()
    seen[keys] = True
    np.testing.assert_array_equal(batch["val"]["features"].numpy(), features[keys])
    total += float(batch["val"]["label"].numpy().sum())
assert seen.all() and total == labels.sum(), (int(seen.sum()), total)
op_path = sys.modules["tensorflow_ignite.native._tf_ignite_data"].__file__
assert op_path == str(build.library_path(None, build.DATA_OPS)), op_path
print(f"IgniteDataset: 1000 rows through the prebuilt op {op_path}")

# IgniteDataset.follow: the rows that exist, then an update made while following, then max_rows ends it.
followed = ti.IgniteDataset.follow("WHEEL_SMOKE", host, port, batch_size=250, max_wait=0.05, max_rows=1001)
it = iter(followed)
got = 0
while got < 1000:
    got += len(next(it)["key"])
ti.write("WHEEL_SMOKE", {"label": np.array([5], np.int64), "features": np.full((1, 4), -1, np.float32)},
         host=host, port=port, mode="append", progress=False)
update = next(it)
assert update["key"].numpy().tolist() == [1000] and update["val"]["features"].numpy()[0, 0] == -1, update
assert next(it, None) is None, "max_rows=1001 ends the dataset"
print(f"IgniteDataset.follow: {got} rows, then the row written while following, then the end (max_rows)")

# ignite:// through tf.io.gfile: a file written, listed, statted and read back.
root = f"ignite://{host}:{port}/wheel-smoke/gfile"
payload = bytes(range(256)) * 1000
with tf.io.gfile.GFile(f"{root}/blob.bin", "wb") as out:
    out.write(payload)
assert tf.io.gfile.listdir(root) == ["blob.bin"], tf.io.gfile.listdir(root)
assert tf.io.gfile.stat(f"{root}/blob.bin").length == len(payload)
with tf.io.gfile.GFile(f"{root}/blob.bin", "rb") as back:
    assert back.read() == payload
print(f"tf.io.gfile: {len(payload)} bytes written, listed and read back at {root}")

# ignite:// round trip: a checkpoint saved and restored.
step = tf.Variable(41, dtype=tf.int64)
weights = tf.Variable(tf.random.stateless_normal([64, 32], seed=[1, 2]))
checkpoint = tf.train.Checkpoint(step=step, weights=weights)
manager = tf.train.CheckpointManager(checkpoint, f"ignite://{host}:{port}/wheel-smoke/ckpt", max_to_keep=2)
step.assign_add(1)
saved = manager.save()
expected = weights.numpy()
step.assign(0)
weights.assign(tf.zeros_like(weights))
checkpoint.restore(manager.latest_checkpoint).assert_consumed()
assert int(step.numpy()) == 42 and np.array_equal(weights.numpy(), expected)
plugin = loader.plugin_path()
assert plugin == build.library_path(None, build.FS_PLUGIN), plugin
print(f"ignite:// checkpoint: {saved} saved and restored through {plugin}")
