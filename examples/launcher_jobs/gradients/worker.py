"""One worker of the seed's "gradients per partition, summed" example, run by ``ignite-tf start``.

Every worker reads only its own node's primary partitions (``IgniteDataset``
takes host, port and partitions from the ``IGNITE_DATASET_*`` variables the
launcher sets), computes the loss gradient of a linear model on those rows,
and the partial gradients are summed across workers with one
MultiWorkerMirroredStrategy all-reduce: every worker ends up with the gradient
over the whole cache.  Each worker reports what it read (row count, keys,
partitions) so the job's owner can check that together they read every row
exactly once.

    ignite-tf start POINTS examples/launcher_jobs/gradients -- python worker.py
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from tensorflow_ignite import IgniteDataset
from tensorflow_ignite.launcher.worker import WorkerContext, report

ctx = WorkerContext.from_env()
# Created first: MultiWorkerMirroredStrategy must exist before other TF ops run.
strategy = tf.distribute.MultiWorkerMirroredStrategy()

w = tf.Variable(tf.zeros([4]))
gradient = tf.zeros([4])
rows = 0
keys: list[int] = []
for batch in IgniteDataset(ctx.cache, batch_size=256):
    with tf.GradientTape() as tape:
        pred = tf.linalg.matvec(batch["val"]["x"], w)
        loss = tf.reduce_sum(tf.square(pred - batch["val"]["y"]))  # a sum: it splits over partitions
    gradient += tape.gradient(loss, w)
    rows += int(tf.shape(batch["key"])[0])
    keys.extend(batch["key"].numpy().tolist())
print(f"worker {ctx.index} on {ctx.node}: {rows} rows from {len(ctx.partitions)} partitions, "
      f"partial gradient {[round(float(v), 3) for v in gradient.numpy()]}")


@tf.function
def summed(gradient: tf.Tensor, rows: tf.Tensor) -> tf.Tensor:
    def all_reduce(gradient: tf.Tensor, rows: tf.Tensor) -> tf.Tensor:
        partial = tf.concat([gradient, [rows]], axis=0)  # (an input as such cannot be all-reduced)
        return tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, partial)

    return strategy.run(all_reduce, args=(gradient, rows))


total = strategy.experimental_local_results(summed(gradient, tf.constant(float(rows))))[0].numpy()
print(f"worker {ctx.index}: summed gradient over {int(total[4])} rows: {[round(float(v), 3) for v in total[:4]]}")
report({
    "rows": rows,
    "keys": sorted(keys),
    "partitions": list(ctx.partitions),
    "node": ctx.node,
    "gradient": gradient.numpy().astype(float).tolist(),
    "global_gradient": total[:4].astype(float).tolist(),
    "global_rows": int(total[4]),
})
