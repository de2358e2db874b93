"""Train a digit classifier across the cluster with tf_keras ``Model.fit`` and the ``ignite-tf`` launcher.

Loads scikit-learn's digits into ``DIGITS`` (80 %) and ``DIGITS_TEST`` (20 %),
then runs ``launcher_jobs/keras_fit/train.py`` with one worker per Ignite node --
the Python equivalent of::

    ignite-tf start DIGITS examples/launcher_jobs/keras_fit \\
        -e TF_USE_LEGACY_KERAS=1 -e EVAL_CACHE=DIGITS_TEST -- python train.py

``TF_USE_LEGACY_KERAS=1`` is set for the job's workers only (Keras 3 ``fit``
does not work under MultiWorkerMirroredStrategy; tf_keras ``fit`` does).

Needs nodes started by ``ignite-tf node start --nodes 3`` (they run the launcher).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from launch_digits_resnet import load_digits_caches

from tensorflow_ignite.launcher.jobs import JobClient

JOB_DIR = Path(__file__).resolve().parent / "launcher_jobs" / "keras_fit"


def main(host: str = "localhost", port: int = 10800, *, train_cache: str = "DIGITS", test_cache: str = "DIGITS_TEST",
         epochs: int = 3, checkpoint_dir: str | None = None, env: Mapping[str, str] | None = None,
         timeout: float = 900.0, quiet: bool = False) -> dict[str, Any]:
    train_rows, test_rows = load_digits_caches(host, port, train_cache, test_cache)
    job_env = {"TF_USE_LEGACY_KERAS": "1", "EPOCHS": str(epochs), "EVAL_CACHE": test_cache,
               "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})}
    with JobClient.connect(host, port) as jobs:
        rec = jobs.submit(train_cache, JOB_DIR, ["python", "train.py"], env=job_env,
                          checkpoint_dir=checkpoint_dir, settle=0.5)
        lines = []
        for line in jobs.output(rec["id"], follow=True):
            lines.append(line)
            if not quiet:
                print(line)
        final = jobs.wait(rec["id"], timeout=timeout)
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
