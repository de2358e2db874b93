"""A digit classifier trained with ParameterServerStrategy across the Ignite cluster (Keras 3, custom loop).

Run by::

    ignite-tf start DIGITS examples/launcher_jobs/ps_train --strategy ps --num-ps 1 \\
        -e EVAL_CACHE=DIGITS_TEST -- python train.py

The launcher starts the same script as every task of the TF cluster, each with
its own ``TF_CONFIG`` (``TF_IGNITE_TASK_TYPE`` says the role):

* ``ps`` and ``worker`` tasks start a ``tf.distribute.Server`` and serve until
  the launcher stops them.  They import ``tensorflow_ignite`` first: the
  dataset op, and the rebuilder that turns its description back into a
  reader, must exist in the process that runs it.  Each worker has its node's
  primary partitions in ``IGNITE_DATASET_PARTS``.
* The ``chief`` is the coordinator: ``ParameterServerStrategy`` over
  ``TFConfigClusterResolver``, a ``ClusterCoordinator``, a Keras 3 model and
  optimizer built under ``strategy.scope()`` (their variables live on the ps
  tasks; Keras 3 works here in a custom loop, no tf_keras needed).  Its
  ``dataset_fn`` builds ``IgniteDataset(cache, per_worker=True)`` once;
  ``create_per_worker_dataset`` ships it to every worker, which rebuilds it
  from its description and reads *its own* ``IGNITE_DATASET_PARTS`` from its
  own node.  Nothing is sharded by TensorFlow: a worker's partitions are its
  share.  Training is asynchronous: ``coordinator.schedule`` hands each step to
  whichever worker is free, ``coordinator.join()`` ends an epoch of
  ``ceil(rows / BATCH_SIZE)`` steps (each worker's dataset repeats, so a worker
  with fewer rows never runs dry).
* Resume: model, optimizer and the epoch counter are saved by the chief after
  every epoch to ``$TF_IGNITE_CHECKPOINT_DIR`` (``ignite:///tf-jobs/JOB``).  Any
  task failing makes the launcher restart all of them; the new chief restores
  the latest checkpoint and continues with the epoch it lost.
* Evaluation: the chief (which has no ``IGNITE_DATASET_PARTS``) reads all of
  ``EVAL_CACHE`` (or the training cache) and scores the model.

The chief reports (``ignite-tf describe``) its attempt, start epoch, epochs
done, loss per epoch, accuracy and, per TF worker, the keys it trained on;
ps and worker tasks report their role, node and partitions.

Environment: ``EPOCHS`` (4), ``BATCH_SIZE`` (32), ``EVAL_CACHE``,
``TRAIN_HOLD_AFTER_EPOCH`` (fault-injection demos: attempt 1's chief blocks
after that epoch's checkpoint until the launcher stops it, e.g. because a
worker was killed).
"""

from __future__ import annotations

import math
import os
import threading

import tensorflow_ignite  # noqa: F401  -- first: the IgniteDataset op and its rebuilder in every task

import tensorflow as tf

from tensorflow_ignite import IgniteDataset
from tensorflow_ignite.launcher.worker import WorkerContext, report

ctx = WorkerContext.from_env()
resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()

if ctx.task_type in ("ps", "worker"):
    report({"task_type": ctx.task_type, "task_index": ctx.task_index, "node": ctx.node,
            "partitions": list(ctx.partitions), "attempt": ctx.attempt})
    server = tf.distribute.Server(resolver.cluster_spec(), job_name=resolver.task_type,
                                  task_index=resolver.task_id, protocol=resolver.rpc_layer or "grpc", start=True)
    print(f"{ctx.task_type} {ctx.task_index} on {ctx.node}: serving"
          + (f", {len(ctx.partitions)} partitions" if ctx.task_type == "worker" else ""), flush=True)
    server.join()  # until the launcher stops the task
    raise SystemExit(0)

import keras  # noqa: E402  -- the chief only

from tensorflow_ignite.client import ConnectionOptions  # noqa: E402
from tensorflow_ignite.launcher.worker import node_client_settings  # noqa: E402

EPOCHS = int(os.environ.get("EPOCHS", "4"))
BATCH = int(os.environ.get("BATCH_SIZE", "32"))
EVAL_CACHE = os.environ.get("EVAL_CACHE")
HOLD_AFTER = int(os.environ.get("TRAIN_HOLD_AFTER_EPOCH", "0"))
CKPT_DIR = ctx.checkpoint_dir or os.path.join(os.getcwd(), "checkpoints")

strategy = tf.distribute.ParameterServerStrategy(resolver)
coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)

client = ConnectionOptions(host=ctx.host, port=ctx.port, **node_client_settings()).connect()
train_rows = client.cache(ctx.cache).size()
steps = math.ceil(train_rows / BATCH)


def to_xyk(batch: dict) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """(pixels [b, 64], label [b], key [b])."""
    image = batch["val"]["image"]
    if isinstance(image, tf.RaggedTensor):
        image = image.to_tensor()
    return tf.reshape(tf.cast(image, tf.float32), [-1, 64]), batch["val"]["label"], batch["key"]


def dataset_fn() -> tf.data.Dataset:
    # Built here once; every worker rebuilds the IgniteDataset and reads its own IGNITE_DATASET_PARTS.
    rows = IgniteDataset(ctx.cache, batch_size=256, per_worker=True).map(to_xyk).unbatch()
    return rows.shuffle(1024).batch(BATCH).repeat()


with strategy.scope():
    model = keras.Sequential([
        keras.layers.Input((64,)),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(10),
    ])
    optimizer = keras.optimizers.Adam(3e-3)
    optimizer.build(model.trainable_variables)
epochs_done = tf.Variable(0, dtype=tf.int64, trainable=False)
checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, epochs_done=epochs_done)
manager = tf.train.CheckpointManager(checkpoint, CKPT_DIR, max_to_keep=2)
latest = manager.latest_checkpoint
if latest:
    checkpoint.restore(latest).assert_existing_objects_matched()
start_epoch = int(epochs_done.numpy())
print(f"chief: attempt {ctx.attempt}, {train_rows} rows, {steps} steps of {BATCH} per epoch, "
      + (f"resuming from {latest} after epoch {start_epoch}" if latest else "starting from scratch"), flush=True)

per_worker_dataset = coordinator.create_per_worker_dataset(dataset_fn)
per_worker_iterator = iter(per_worker_dataset)


@tf.function
def train_step(iterator: object) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    x, y, key = next(iterator)

    def step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(keras.losses.sparse_categorical_crossentropy(y, model(x, training=True),
                                                                               from_logits=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    # The step's own loss, averaged on the chief: a Keras 3 metric loses updates under this
    # strategy (its assign_add reads, then writes the variable on the ps; two workers at once
    # drop one's update): see examples/ps_keras_metrics.py.
    loss = strategy.run(step, args=(x, y))
    return loss, key, tf.distribute.coordinator.experimental_get_current_worker_index()


keys_by_worker: dict[int, set[int]] = {}
losses: list[float] = []
for epoch in range(start_epoch, EPOCHS):
    scheduled = [coordinator.schedule(train_step, args=(per_worker_iterator,)) for _ in range(steps)]
    coordinator.join()
    steps_by_worker: dict[int, int] = {}
    loss_sum = 0.0
    for remote in scheduled:
        loss, keys, worker = remote.fetch()  # numpy values
        loss_sum += float(loss)
        keys_by_worker.setdefault(int(worker), set()).update(int(k) for k in keys)
        steps_by_worker[int(worker)] = steps_by_worker.get(int(worker), 0) + 1
    losses.append(loss_sum / steps)
    epochs_done.assign(epoch + 1)
    manager.save()
    print(f"chief: epoch {epoch + 1}/{EPOCHS}: {steps} steps, loss {losses[-1]:.4f}, steps per worker "
          f"{dict(sorted(steps_by_worker.items()))}; "
          f"checkpoint saved (epoch {epoch + 1})", flush=True)
    if HOLD_AFTER and ctx.attempt == 1 and epoch + 1 == HOLD_AFTER:
        print(f"chief: holding after epoch {epoch + 1} (TRAIN_HOLD_AFTER_EPOCH)", flush=True)
        threading.Event().wait()  # until the launcher stops this attempt

eval_cache = EVAL_CACHE or ctx.cache
correct = total = 0
for x, y, _ in IgniteDataset(eval_cache, batch_size=256).map(to_xyk):  # the chief reads the whole cache
    correct += int(tf.reduce_sum(tf.cast(tf.argmax(model(x), -1) == y, tf.int32)))
    total += int(tf.shape(y)[0])
accuracy = correct / max(total, 1)
print(f"chief: accuracy {accuracy:.3f} on {total} digits of {eval_cache}", flush=True)

report({
    "task_type": "chief",
    "task_index": 0,
    "attempt": ctx.attempt,
    "start_epoch": start_epoch,
    "epochs_done": int(epochs_done.numpy()),
    "steps_per_epoch": steps,
    "train_rows": train_rows,
    "loss": losses,
    "accuracy": accuracy,
    "eval_cache": eval_cache,
    "eval_rows": total,
    "keys_by_worker": {str(w): sorted(k) for w, k in sorted(keys_by_worker.items())},
    "keras": keras.__version__,
})
