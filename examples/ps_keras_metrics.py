"""Keras 3 metrics under ParameterServerStrategy lose updates; two ways to correct epoch metrics.

A minimal reproduction, with no Ignite in it: one ps task and two worker tasks
(subprocesses of this script), a coordinator scheduling steps that feed the
known values ``0 .. steps-1`` into a ``keras.metrics.Mean`` created under
``strategy.scope()``.  With one worker the epoch mean is exact; with two it is
not (e.g. 26.4 instead of 24.5 for 50 steps; Keras 3.15, TensorFlow 2.21).

Why: the metric's variables live on the ps task, and Keras 3's
``Variable.assign_add`` is ``self.assign(self + value)`` -- a read, then a
write.  Two workers running steps at once both read the same total and the
later write drops the other's update.  ``tf.Variable.assign_add`` is a single
atomic op on the ps; plain TensorFlow variables updated the same way count
every step.  The same holds for every Keras 3 metric (their states are
``assign_add``-ed), so ``SparseCategoricalAccuracy`` drifts too.

Correct epoch metrics, both shown here:

* ``fetched``: return the step's value from the scheduled function and
  average the fetched values on the coordinator (what
  ``examples/launcher_jobs/ps_train/train.py`` does for its loss);
* ``atomic``: a metric whose update is ``tf.Variable.assign_add`` on the
  variables underneath the Keras ones (:class:`AtomicMean`).

Run: ``python examples/ps_keras_metrics.py [WORKERS]`` (default 2).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _serve(spec: dict[str, list[str]], job: str, index: int) -> None:
    """A ps or worker task: serve until stdin closes."""
    import tensorflow as tf

    tf.distribute.Server(tf.train.ClusterSpec(spec), job_name=job, task_index=index, protocol="grpc", start=True)
    print("READY", flush=True)
    sys.stdin.read()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main(workers: int = 2, steps: int = 50, epochs: int = 2) -> list[dict[str, float]]:
    """Per epoch: the expected mean, Keras 3's ``Mean``, the fetched values' mean and :class:`AtomicMean`'s."""
    spec = {"worker": [f"127.0.0.1:{_free_port()}" for _ in range(workers)], "ps": [f"127.0.0.1:{_free_port()}"]}
    tasks = [subprocess.Popen([sys.executable, __file__, "--serve", json.dumps(spec), job, str(i)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
             for job in ("worker", "ps") for i in range(len(spec[job]))]
    try:
        for task in tasks:
            assert task.stdout is not None and task.stdout.readline().strip() == "READY"
        return _coordinate(spec, steps, epochs)
    finally:
        for task in tasks:
            assert task.stdin is not None
            task.stdin.close()
        for task in tasks:
            task.wait(timeout=60)


def _coordinate(spec: dict[str, list[str]], steps: int, epochs: int) -> list[dict[str, float]]:
    import keras
    import tensorflow as tf

    class AtomicMean(keras.metrics.Metric):
        """A mean whose updates are ``tf.Variable.assign_add`` (one op on the ps), not Keras 3's read-then-write."""

        def __init__(self, name: str = "atomic_mean") -> None:
            super().__init__(name=name)
            self.total = self.add_variable(shape=(), initializer="zeros", name="total", aggregation="sum")
            self.count = self.add_variable(shape=(), initializer="zeros", name="count", aggregation="sum")

        def update_state(self, values: Any) -> None:
            values = tf.cast(values, self.dtype)
            self.total.value.assign_add(tf.reduce_sum(values))  # .value: the tf.Variable itself
            self.count.value.assign_add(tf.cast(tf.size(values), self.dtype))

        def result(self) -> Any:
            return tf.math.divide_no_nan(self.total.value, self.count.value)

    resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(tf.train.ClusterSpec(spec), rpc_layer="grpc")
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        keras_mean = keras.metrics.Mean()
        atomic_mean = AtomicMean()

    @tf.function
    def step(x: tf.Tensor) -> Any:
        def replica(x: tf.Tensor) -> tf.Tensor:
            keras_mean.update_state(x)
            atomic_mean.update_state(x)
            return x  # the step's own value, fetched by the coordinator
        return strategy.run(replica, args=(x,))

    out = []
    for _ in range(epochs):
        keras_mean.reset_state()
        atomic_mean.reset_state()
        scheduled = [coordinator.schedule(step, args=(tf.constant(float(i)),)) for i in range(steps)]
        coordinator.join()
        fetched = [float(r.fetch()) for r in scheduled]
        out.append({"expected": sum(range(steps)) / steps, "keras": float(keras_mean.result()),
                    "fetched": sum(fetched) / len(fetched), "atomic": float(atomic_mean.result())})
    return out


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        _serve(json.loads(sys.argv[2]), sys.argv[3], int(sys.argv[4]))
        raise SystemExit(0)
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    for epoch, r in enumerate(main(n)):
        print(f"epoch {epoch}: expected {r['expected']:.3f}; keras.metrics.Mean {r['keras']:.3f}; "
              f"fetched step values {r['fetched']:.3f}; AtomicMean {r['atomic']:.3f}", flush=True)
