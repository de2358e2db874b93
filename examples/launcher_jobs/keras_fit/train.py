"""A digit classifier trained with tf_keras ``Model.fit`` across the Ignite cluster.

Run by::

    ignite-tf start DIGITS examples/launcher_jobs/keras_fit -e TF_USE_LEGACY_KERAS=1 -- python train.py

one worker per Ignite node, each reading only its node's primary partitions,
under MultiWorkerMirroredStrategy.  Keras 3 ``fit`` is broken under that
strategy (keras-team/keras#20585); tf_keras (Keras 2, selected for TensorFlow by
``TF_USE_LEGACY_KERAS=1`` in the job's environment) is not.

* Equal steps: ``fit`` needs the same ``steps_per_epoch`` on every worker.
  Each worker counts its rows, the counts are gathered, and every epoch is
  ``max(ceil(rows / BATCH_SIZE))`` batches, padded with zero-weight examples
  (``equal_steps(..., sample_weight=True)`` gives ``fit`` its ``(x, y, w)``).
  The ``rows`` metric sums those weights; Keras aggregates metrics over the
  workers, so it is the number of real rows the whole job trained on in the
  epoch -- the cache's row count when every row was read exactly once.
* Input: a ``DatasetCreator`` builds each worker's own dataset; nothing is
  auto-sharded (a worker's partitions are already its share).
* Resume: ``BackupAndRestore`` in ``$TF_IGNITE_CHECKPOINT_DIR``
  (``ignite:///tf-jobs/JOB``): a restarted job continues at the epoch it lost.

Environment: ``EPOCHS`` (3), ``BATCH_SIZE`` per worker (32), ``EVAL_CACHE``.
"""

from __future__ import annotations

import math
import os

if os.environ.get("TF_USE_LEGACY_KERAS") != "1":
    raise SystemExit("this job uses tf_keras: start it with -e TF_USE_LEGACY_KERAS=1")

import tensorflow as tf
import tf_keras as keras

from tensorflow_ignite import IgniteDataset
from tensorflow_ignite.launcher.worker import WorkerContext, equal_steps, gather_ints, report

ctx = WorkerContext.from_env()
strategy = tf.distribute.MultiWorkerMirroredStrategy()  # first: before any other TF op

EPOCHS = int(os.environ.get("EPOCHS", "3"))
BATCH = int(os.environ.get("BATCH_SIZE", "32"))
EVAL_CACHE = os.environ.get("EVAL_CACHE")
CKPT_DIR = ctx.checkpoint_dir or os.path.join(os.getcwd(), "checkpoints")


def examples(cache: str) -> tf.data.Dataset:
    """(pixels [b, 64], label [b]) batches of this node's partitions of ``cache``."""
    def to_xy(batch: dict) -> tuple[tf.Tensor, tf.Tensor]:
        image = batch["val"]["image"]
        if isinstance(image, tf.RaggedTensor):
            image = image.to_tensor()
        return tf.reshape(tf.cast(image, tf.float32), [-1, 64]), batch["val"]["label"]

    return IgniteDataset(cache, batch_size=256).map(to_xy)


local_rows = sum(int(tf.shape(y)[0]) for _, y in examples(ctx.cache))
counts = gather_ints(strategy, local_rows)
steps = max(math.ceil(c / BATCH) for c in counts)
print(f"worker {ctx.index} on {ctx.node}: {local_rows} rows in {len(ctx.partitions)} partitions; "
      f"rows per worker {counts} -> {steps} steps of {BATCH} per epoch")


def dataset_fn(input_context: tf.distribute.InputContext) -> tf.data.Dataset:
    # One epoch of exactly `steps` batches, repeated: fit runs `steps_per_epoch` of them.
    epoch = equal_steps(examples(ctx.cache).unbatch().shuffle(2048, seed=ctx.index), batch_size=BATCH,
                        local_rows=local_rows, steps=steps, pad=(tf.zeros([64]), tf.constant(0, tf.int64)),
                        sample_weight=True)
    return epoch.repeat()


class RowsSeen(keras.metrics.Metric):
    """Sum of the sample weights: the real (not padding) rows trained on this epoch (all workers)."""

    def __init__(self, name: str = "rows", **kwargs: object) -> None:
        super().__init__(name=name, **kwargs)
        self.total = self.add_weight(name="total", initializer="zeros")

    def update_state(self, y_true: tf.Tensor, y_pred: tf.Tensor, sample_weight: tf.Tensor | None = None) -> None:
        self.total.assign_add(tf.reduce_sum(sample_weight))

    def result(self) -> tf.Tensor:
        return self.total


with strategy.scope():
    model = keras.Sequential([
        keras.layers.Input((64,)),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(10),
    ])
    model.compile(optimizer=keras.optimizers.Adam(3e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  weighted_metrics=["accuracy", RowsSeen()])

rows_per_epoch: list[int] = []


class Progress(keras.callbacks.Callback):
    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        logs = logs or {}
        rows_per_epoch.append(int(round(float(logs.get("rows", 0)))))
        print(f"worker {ctx.index}: epoch {epoch + 1}/{EPOCHS}: {rows_per_epoch[-1]} rows (all workers), "
              f"{steps} steps, loss {float(logs.get('loss', float('nan'))):.4f}, accuracy {float(logs.get('accuracy', 0)):.3f}")


history = model.fit(
    keras.utils.experimental.DatasetCreator(dataset_fn),
    epochs=EPOCHS, steps_per_epoch=steps, verbose=0,
    callbacks=[keras.callbacks.BackupAndRestore(backup_dir=CKPT_DIR), Progress()],
)

accuracy = None
eval_rows = 0
if EVAL_CACHE:
    correct = total = 0
    for x, y in examples(EVAL_CACHE):
        correct += int(tf.reduce_sum(tf.cast(tf.argmax(model(x), -1) == y, tf.int32)))
        total += int(tf.shape(y)[0])
    sums = gather_ints(strategy, correct), gather_ints(strategy, total)
    eval_rows = sum(sums[1])
    accuracy = sum(sums[0]) / max(eval_rows, 1)
    print(f"worker {ctx.index}: held-out accuracy {accuracy:.3f} on {eval_rows} digits")

report({
    "node": ctx.node,
    "rows": local_rows,
    "partitions": list(ctx.partitions),
    "steps_per_epoch": steps,
    "rows_per_epoch": rows_per_epoch,
    "loss": [float(v) for v in history.history.get("loss", [])],
    "keras": keras.__version__,
    "accuracy": accuracy,
    "eval_rows": eval_rows,
})
