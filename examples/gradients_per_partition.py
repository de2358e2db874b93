"""The seed's distributed-gradient example in TF 2: gradients per partition, summed.

Groups of partitions are read on their own (``parts=[...]``: each partition is
scanned on its primary node), the loss gradient of a linear model is computed
on each group, and the partial gradients are summed.  The sum equals the gradient over
the whole dataset, which is what lets workers compute next to their data.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

import tensorflow_ignite
from tensorflow_ignite import IgniteDataset
from tensorflow_ignite.client import IgniteClient


def main(host: str = "localhost", port: int = 10800, cache_name: str = "POINTS") -> dict[str, np.ndarray]:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(1000, 4)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32) + 0.1).astype(np.float32)
    tensorflow_ignite.write(cache_name, {"x": x, "y": y}, host=host, port=port, mode="overwrite", progress=False)

    w = tf.Variable(tf.zeros([4]))

    def gradient(dataset: tf.data.Dataset) -> tf.Tensor:
        total = tf.zeros([4])
        for batch in dataset:
            with tf.GradientTape() as tape:
                pred = tf.linalg.matvec(batch["val"]["x"], w)
                loss = tf.reduce_sum(tf.square(pred - batch["val"]["y"]))  # a sum: it splits over partitions
            total += tape.gradient(loss, w)
        return total

    with IgniteClient(f"{host}:{port}") as client:
        pmap = client.partition_map(cache_name)
    # One group of partitions per node, as the ignite-tf launcher gives each worker
    # its node's primary partitions; each group is split further to show the sum.
    partial = []
    for node in sorted(set(pmap.nodes), key=str):
        for chunk in np.array_split(np.array(pmap.partitions_of(node)), 4):
            if len(chunk):
                partial.append(gradient(IgniteDataset(cache_name, host, port, parts=chunk.tolist(), batch_size=256)))
    summed = tf.reduce_sum(tf.stack(partial), axis=0).numpy()
    whole = gradient(IgniteDataset(cache_name, host, port, batch_size=256)).numpy()
    print("sum of per-partition gradients:", summed)
    print("gradient over the whole cache: ", whole)
    return {"summed": summed, "whole": whole, "parts": np.array(len(partial))}


if __name__ == "__main__":
    from _common import parse_address

    args = parse_address(__doc__ or "")
    main(args.host, args.port)
