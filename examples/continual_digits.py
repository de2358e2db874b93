"""Continual learning on a cache that keeps changing: ``IgniteDataset.follow`` with checkpoints in Ignite.

Two processes share one cache of digits:

* ``write`` keeps adding digits (scikit-learn's bundled 8x8 set, no download)
  whose class mix drifts: the first rows are mostly 0-4, later rows mostly
  5-9.  Each row carries ``label``, ``pixels`` (64 floats) and ``seq``, its
  position in the stream.
* ``train`` follows the cache (the rows that exist, then each new one as it
  is written), takes one gradient step per micro-batch, and writes to
  ``ignite://``: a checkpoint of the model, the optimizer, the step and the
  dataset iterator every ``--save-every`` steps, and TensorBoard scalars.
  ``accuracy/newest`` is the model's accuracy on each micro-batch *before* it
  trains on it -- the newest rows, so the curve dips when the mix drifts and
  recovers as the model adapts.

Kill the trainer (even with ``kill -9``) and start it again with the same
arguments: it restores its last checkpoint -- weights, optimizer, step and
the follower's position -- and goes on with the rows written meanwhile.
(The follower's guarantee after a restore: every key's latest row arrives;
rows trained on before the checkpoint may come again -- see README,
"Following a cache".)  Run it::

    python examples/continual_digits.py write --rows 20000 --rate 200 &
    python examples/continual_digits.py train
    ignite-tf tensorboard --logdir ignite://localhost:10800/continual/logs
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass

import numpy as np

import tensorflow_ignite
from tensorflow_ignite import IgniteDataset

CACHE = "DIGITS_STREAM"


def drifting_digits(start: int, n: int, drift_rows: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Rows ``start .. start+n-1`` of the stream: digits whose class mix moves from 0-4 to 5-9.

    Row ``i`` draws a class from 5-9 with probability ``min(1, i / drift_rows)``
    (else from 0-4), then one of scikit-learn's images of that class with a
    little pixel noise.  Deterministic in ``(start, n, seed)``.
    """
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = (digits.images.reshape(-1, 64) / 16.0).astype(np.float32)
    by_class = [np.flatnonzero(digits.target == c) for c in range(10)]
    rng = np.random.default_rng([seed, start])
    seq = np.arange(start, start + n, dtype=np.int64)
    late = rng.random(n) < np.minimum(1.0, seq / max(1, drift_rows))
    labels = np.where(late, rng.integers(5, 10, n), rng.integers(0, 5, n)).astype(np.int64)
    picks = np.array([rng.choice(by_class[c]) for c in labels])
    pixels = np.clip(images[picks] + rng.normal(0, 0.05, (n, 64)).astype(np.float32), 0.0, 1.0)
    return {"label": labels, "pixels": pixels, "seq": seq}


def write_digits(host: str, port: int, start: int, n: int, *, cache: str = CACHE,
                 drift_rows: int = 10_000) -> int:
    """Append rows ``start .. start+n-1`` of the drifting stream (keys = ``seq``); the next ``start``."""
    tensorflow_ignite.write(cache, drifting_digits(start, n, drift_rows), host=host, port=port, mode="append",
                            key_offset=start, progress=False)
    return start + n


def writer(host: str, port: int, rows: int, rate: float, *, cache: str = CACHE, chunk: int = 50,
           drift_rows: int = 10_000) -> None:
    """Keep adding digits at about ``rate`` rows/s until ``rows`` rows exist (the ``write`` command)."""
    start = 0
    t0 = time.monotonic()
    while start < rows:
        start = write_digits(host, port, start, min(chunk, rows - start), cache=cache, drift_rows=drift_rows)
        time.sleep(max(0.0, t0 + start / rate - time.monotonic()))


@dataclass
class TrainResult:
    """What one ``train`` run did: the step it restored (0: fresh), the step it ended at, rows it trained on."""

    restored_step: int
    step: int
    rows: int


def train(host: str, port: int, *, cache: str = CACHE, root: str = "/continual", batch_size: int = 64,
          save_every: int = 10, stream_timeout: float | None = None, max_rows: int | None = None,
          log_steps: bool = False) -> TrainResult:
    """Follow ``cache`` and train on each micro-batch; checkpoints and summaries under ``ignite://.../root``.

    Ends when the follower does (``stream_timeout`` seconds without a new row,
    ``max_rows`` rows; default: never).  With ``log_steps`` each step prints a
    JSON line (step, seq numbers trained on, whether a checkpoint was saved).
    """
    import keras
    import tensorflow as tf

    base = f"ignite://{host}:{port}{root}"
    model = keras.Sequential([keras.layers.Input((64,)), keras.layers.Dense(64, activation="relu"),
                              keras.layers.Dense(10)])
    optimizer = keras.optimizers.Adam(1e-2)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    step = tf.Variable(0, dtype=tf.int64)
    dataset = IgniteDataset.follow(cache, host, port, batch_size=batch_size, max_wait=0.2,
                                   stream_timeout=stream_timeout, max_rows=max_rows)
    iterator = iter(dataset)
    checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer, step=step, iterator=iterator)
    manager = tf.train.CheckpointManager(checkpoint, f"{base}/ckpt", max_to_keep=2)
    model.build((None, 64))
    optimizer.build(model.trainable_variables)  # its slots exist before a restore assigns them
    if manager.latest_checkpoint:
        checkpoint.restore(manager.latest_checkpoint).assert_consumed()
    restored = int(step.numpy())
    if log_steps:
        print(json.dumps({"restored_step": restored}), flush=True)
    summaries = tf.summary.create_file_writer(f"{base}/logs")

    @tf.function
    def train_step(x: tf.Tensor, y: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = loss_fn(y, logits)
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        # The prediction came before the update: accuracy on rows the model had not seen.
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, axis=1), y), tf.float32))
        return loss, accuracy

    rows = 0
    for batch in iterator:
        loss, accuracy = train_step(batch["val"]["pixels"], batch["val"]["label"])
        step.assign_add(1)
        seq = batch["val"]["seq"].numpy()
        rows += len(seq)
        with summaries.as_default(step=int(step.numpy())):
            tf.summary.scalar("accuracy/newest", accuracy)
            tf.summary.scalar("loss", loss)
            tf.summary.scalar("mix/share_of_5_to_9", tf.reduce_mean(tf.cast(batch["val"]["label"] >= 5, tf.float32)))
        saved = int(step.numpy()) % save_every == 0
        if saved:
            summaries.flush()
            manager.save(checkpoint_number=int(step.numpy()))
        if log_steps:
            print(json.dumps({"step": int(step.numpy()), "seq": seq.tolist(), "saved": saved,
                              "accuracy": float(accuracy)}), flush=True)
    summaries.flush()
    return TrainResult(restored, int(step.numpy()), rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="localhost", help="a node's host (default localhost)")
    parser.add_argument("--port", type=int, default=10800, help="its thin-client port (default 10800)")
    parser.add_argument("--cache", default=CACHE)
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("write", help="keep adding drifting digits")
    w.add_argument("--rows", type=int, default=20_000, help="stop when this many rows exist")
    w.add_argument("--rate", type=float, default=200.0, help="rows per second")
    w.add_argument("--drift-rows", type=int, default=10_000, help="rows over which the mix moves to 5-9")
    t = sub.add_parser("train", help="follow the cache and train, resuming from the last checkpoint")
    t.add_argument("--root", default="/continual", help="ignite:// directory of checkpoints and logs")
    t.add_argument("--batch-size", type=int, default=64)
    t.add_argument("--save-every", type=int, default=10, help="steps between checkpoints")
    t.add_argument("--stream-timeout", type=float, default=None, help="end after this many idle seconds")
    t.add_argument("--log-steps", action="store_true", help="print a JSON line per step")
    args = parser.parse_args(argv)
    if args.command == "write":
        writer(args.host, args.port, args.rows, args.rate, cache=args.cache, drift_rows=args.drift_rows)
    else:
        result = train(args.host, args.port, cache=args.cache, root=args.root, batch_size=args.batch_size,
                       save_every=args.save_every, stream_timeout=args.stream_timeout, log_steps=args.log_steps)
        print(json.dumps(result.__dict__), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
