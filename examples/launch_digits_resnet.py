"""Train a small ResNet-style digit classifier across the cluster with the ``ignite-tf`` launcher.

Loads scikit-learn's digits (1,797 8x8 images) into ``DIGITS`` (training, 80 %)
and ``DIGITS_TEST`` (held out), then runs ``launcher_jobs/digits_resnet/train.py``
with one worker per Ignite node -- the Python equivalent of::

    ignite-tf start DIGITS examples/launcher_jobs/digits_resnet \\
        -e EVAL_CACHE=DIGITS_TEST -- python train.py

Each worker trains on its node's primary partitions (MultiWorkerMirroredStrategy,
Keras 3 model, custom loop, equal step counts) and checkpoints every epoch; the
job ends with the held-out accuracy summed over all workers.

Needs nodes started by ``ignite-tf node start --nodes 3`` (they run the launcher).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

import tensorflow_ignite
from tensorflow_ignite.launcher.jobs import JobClient

JOB_DIR = Path(__file__).resolve().parent / "launcher_jobs" / "digits_resnet"


def load_digits_caches(host: str, port: int, train_cache: str, test_cache: str, seed: int = 0,
                       backups: int = 0) -> tuple[int, int]:
    """Write an 80/20 split of the digits into two caches; returns their sizes.

    ``backups=1`` lets training survive the loss of a node without losing rows.
    """
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    cut = int(0.8 * len(order))
    for name, idx in ((train_cache, order[:cut]), (test_cache, order[cut:])):
        tensorflow_ignite.write(name, {"image": images[idx], "label": labels[idx]}, host=host, port=port,
                                mode="overwrite", progress=False, backups=backups)
    return cut, len(order) - cut


def main(host: str = "localhost", port: int = 10800, *, train_cache: str = "DIGITS", test_cache: str = "DIGITS_TEST",
         epochs: int = 4, checkpoint_dir: str | None = None, env: Mapping[str, str] | None = None,
         max_restarts: int = 3, timeout: float = 900.0, quiet: bool = False) -> dict[str, Any]:
    train_rows, test_rows = load_digits_caches(host, port, train_cache, test_cache)
    job_env = {"EPOCHS": str(epochs), "EVAL_CACHE": test_cache, "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})}
    with JobClient.connect(host, port) as jobs:
        rec = jobs.submit(train_cache, JOB_DIR, ["python", "train.py"], env=job_env,
                          checkpoint_dir=checkpoint_dir, max_restarts=max_restarts, settle=0.5)
        lines = []
        for line in jobs.output(rec["id"], follow=True):
            lines.append(line)
            if not quiet:
                print(line)
        final = jobs.job(rec["id"])
        results = jobs.results(rec["id"])
    if results:
        print(f"held-out accuracy: {results[0]['accuracy']:.3f} on {results[0]['eval_rows']} digits")
    return {"job": final, "results": results, "train_rows": train_rows, "test_rows": test_rows, "lines": lines}


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import parse_address

    args = parse_address(__doc__ or "")
    out = main(args.host, args.port)
    sys.exit(int(out["job"].get("exit_code") or 0))
