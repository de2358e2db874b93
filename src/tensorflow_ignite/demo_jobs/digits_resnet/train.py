"""A small ResNet-style digit classifier trained across the Ignite cluster (Keras 3, custom loop).

Run by ``ignite-tf start DIGITS examples/launcher_jobs/digits_resnet -- python train.py``:
one worker per Ignite node, each reading only its node's primary partitions,
kept in step by MultiWorkerMirroredStrategy.  Keras 3 ``fit`` is broken under
that strategy (keras-team/keras#20585), hence the ``strategy.run`` loop.

* Equal steps: every worker counts its rows, the counts are gathered, and each
  epoch is exactly ``max(ceil(rows / BATCH_SIZE))`` steps of ``BATCH_SIZE``,
  padded with zero-weight examples (``equal_steps``): each row is read once per
  epoch and no worker waits for a collective that never comes.
* Resume: model, optimizer and the epoch counter are checkpointed after every
  epoch to ``$TF_IGNITE_CHECKPOINT_DIR`` (``ignite:///tf-jobs/JOB`` by
  default); a restarted job restores the latest checkpoint and continues with
  the next epoch instead of epoch 0.
* Evaluation: each worker scores its partitions of ``EVAL_CACHE`` (same
  partitioning as the training cache) and the counts are summed.

Environment: ``EPOCHS`` (4), ``BATCH_SIZE`` per worker (32), ``EVAL_CACHE``,
``TENSORBOARD_DIR`` (the chief writes its loss per epoch and the held-out
accuracy there, e.g. ``ignite:///runs/digits``), ``TRAIN_HOLD_AFTER_EPOCH`` (fault-injection demos: attempt 1 blocks after
that epoch's checkpoint until the launcher stops it, e.g. because a worker
was killed).
"""

from __future__ import annotations

import math
import os
import threading

import keras
import tensorflow as tf

from tensorflow_ignite import IgniteDataset
from tensorflow_ignite.launcher.worker import WorkerContext, equal_steps, gather_ints, report

ctx = WorkerContext.from_env()
strategy = tf.distribute.MultiWorkerMirroredStrategy()  # first: before any other TF op

EPOCHS = int(os.environ.get("EPOCHS", "4"))
BATCH = int(os.environ.get("BATCH_SIZE", "32"))
EVAL_CACHE = os.environ.get("EVAL_CACHE")
HOLD_AFTER = int(os.environ.get("TRAIN_HOLD_AFTER_EPOCH", "0"))
CKPT_DIR = ctx.checkpoint_dir or os.path.join(os.getcwd(), "checkpoints")
TB_DIR = os.environ.get("TENSORBOARD_DIR")
# Only the chief writes summaries: one event file per run, not one per worker.
summaries = tf.summary.create_file_writer(TB_DIR) if TB_DIR and ctx.is_chief else None


def examples(cache: str) -> tf.data.Dataset:
    """(image [b, 8, 8, 1], label [b]) batches of this node's partitions of ``cache``."""

    def to_xy(batch: dict) -> tuple[tf.Tensor, tf.Tensor]:
        image = batch["val"]["image"]
        if isinstance(image, tf.RaggedTensor):
            image = image.to_tensor()
        # Explicit shape: without the writer's recorded schema (e.g. lost with a node)
        # the images come back as flat 64-float rows.
        return tf.reshape(tf.cast(image, tf.float32), [-1, 8, 8, 1]), batch["val"]["label"]

    return IgniteDataset(cache, batch_size=256).map(to_xy)


def resnet() -> keras.Model:
    inputs = keras.Input((8, 8, 1))
    x = keras.layers.Conv2D(32, 3, padding="same", activation="relu")(inputs)
    for _ in range(2):  # two residual blocks
        y = keras.layers.Conv2D(32, 3, padding="same", activation="relu")(x)
        y = keras.layers.Conv2D(32, 3, padding="same")(y)
        x = keras.layers.Activation("relu")(keras.layers.Add()([x, y]))
    x = keras.layers.Flatten()(x)  # 8x8 is small: keeping where a stroke is beats pooling it away
    return keras.Model(inputs, keras.layers.Dense(10)(x))


local_rows = sum(int(tf.shape(y)[0]) for _, y in examples(ctx.cache))
counts = gather_ints(strategy, local_rows)
steps = max(math.ceil(c / BATCH) for c in counts)
print(
    f"worker {ctx.index} on {ctx.node}: {local_rows} rows in {len(ctx.partitions)} partitions; "
    f"rows per worker {counts} -> {steps} steps of {BATCH} per epoch"
)

with strategy.scope():
    model = resnet()
    optimizer = keras.optimizers.Adam(3e-3)
    optimizer.build(model.trainable_variables)
    epochs_done = tf.Variable(0, dtype=tf.int64, trainable=False)
checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, epochs_done=epochs_done)
# Every worker saves (the collectives need all of them); only the chief's copy is kept.
write_dir = CKPT_DIR if ctx.is_chief else f"{CKPT_DIR.rstrip('/')}/worker-tmp-{ctx.index}"
manager = tf.train.CheckpointManager(checkpoint, write_dir, max_to_keep=2)
latest = tf.train.latest_checkpoint(CKPT_DIR)
if latest:
    checkpoint.restore(latest)
start_epoch = int(epochs_done.numpy())
print(
    f"worker {ctx.index}: attempt {ctx.attempt}, "
    + (f"resuming from {latest} after epoch {start_epoch}" if latest else "starting from scratch")
)


@tf.function
def train_step(x: tf.Tensor, y: tf.Tensor, w: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    def step(x: tf.Tensor, y: tf.Tensor, w: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        replica = tf.distribute.get_replica_context()
        total_w = replica.all_reduce(tf.distribute.ReduceOp.SUM, tf.reduce_sum(w))
        with tf.GradientTape() as tape:
            per_example = keras.losses.sparse_categorical_crossentropy(y, model(x, training=True), from_logits=True)
            loss = tf.reduce_sum(per_example * w) / tf.maximum(total_w, 1.0)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))  # sums gradients across workers
        return tf.reduce_sum(per_example * w), tf.reduce_sum(w)

    return strategy.run(step, args=(x, y, w))


pad = (tf.zeros([8, 8, 1]), tf.constant(0, tf.int64))
rows_per_epoch: list[int] = []
loss = float("nan")
for epoch in range(start_epoch, EPOCHS):
    data = equal_steps(
        examples(ctx.cache).unbatch().shuffle(2048, seed=epoch),
        batch_size=BATCH,
        local_rows=local_rows,
        steps=steps,
        pad=pad,
    )
    loss_sum, seen = 0.0, 0.0
    for (x, y), w in data:
        step_loss, n = train_step(x, y, w)
        loss_sum += float(step_loss)
        seen += float(n)
    rows_per_epoch.append(int(seen))
    epochs_done.assign(epoch + 1)
    manager.save()
    if not ctx.is_chief:
        tf.io.gfile.rmtree(write_dir)
    loss = loss_sum / max(seen, 1.0)
    if summaries is not None:
        with summaries.as_default():
            tf.summary.scalar("chief_local_loss", loss, step=epoch + 1)
        summaries.flush()
    print(
        f"worker {ctx.index}: epoch {epoch + 1}/{EPOCHS}: {int(seen)} rows, {steps} steps, "
        f"local loss {loss:.4f}; checkpoint saved (epoch {epoch + 1})"
    )
    if HOLD_AFTER and ctx.attempt == 1 and epoch + 1 == HOLD_AFTER:
        print(f"worker {ctx.index}: holding after epoch {epoch + 1} (TRAIN_HOLD_AFTER_EPOCH)")
        threading.Event().wait()  # until the launcher stops this attempt

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
    if summaries is not None:
        with summaries.as_default():
            tf.summary.scalar("held_out_accuracy", accuracy, step=EPOCHS)
        summaries.close()

report(
    {
        "node": ctx.node,
        "rows": local_rows,
        "partitions": list(ctx.partitions),
        "steps_per_epoch": steps,
        "start_epoch": start_epoch,
        "rows_per_epoch": rows_per_epoch,
        "final_loss": loss,
        "accuracy": accuracy,
        "eval_rows": eval_rows,
    }
)
