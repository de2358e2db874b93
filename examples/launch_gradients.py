"""The seed's per-partition gradients as a distributed job: one TF worker per Ignite node.

Loads 1,000 points of a linear model into ``POINTS``, then runs
``launcher_jobs/gradients/worker.py`` with ``ignite-tf``'s launcher (the Python
equivalent of ``ignite-tf start POINTS examples/launcher_jobs/gradients -- python
worker.py``): each worker computes the gradient on its node's primary partitions
and MultiWorkerMirroredStrategy sums them.  Prints what each worker read and
compares the summed gradient with one computed here over the whole cache.

Needs nodes started by ``ignite-tf node start --nodes 3`` (they run the launcher).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

import tensorflow_ignite
from tensorflow_ignite.launcher.jobs import JobClient

JOB_DIR = Path(__file__).resolve().parent / "launcher_jobs" / "gradients"


def main(host: str = "localhost", port: int = 10800, cache_name: str = "POINTS", *,
         rows: int = 1000, timeout: float = 600.0) -> dict[str, Any]:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(rows, 4)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32) + 0.1).astype(np.float32)
    tensorflow_ignite.write(cache_name, {"x": x, "y": y}, host=host, port=port, mode="overwrite", progress=False)

    with JobClient.connect(host, port) as jobs:
        rec = jobs.submit(cache_name, JOB_DIR, ["python", "worker.py"],
                          env={"TF_CPP_MIN_LOG_LEVEL": "2"}, settle=0.5)
        for line in jobs.output(rec["id"], follow=True):
            print(line)
        final = jobs.job(rec["id"])
        results = jobs.results(rec["id"])
    whole = -2.0 * (x.T @ (y - x @ np.zeros(4, np.float32)))  # d/dw sum((xw - y)^2) at w = 0
    for idx in sorted(results):
        r = results[idx]
        print(f"worker {idx} on {r['node']}: {r['rows']} rows, {len(r['partitions'])} partitions")
    if results:
        print("summed gradient:", np.round(results[0]["global_gradient"], 3))
    print("whole-cache gradient:", np.round(whole, 3))
    return {"job": final, "results": results, "whole": whole, "rows": rows}


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _common import parse_address

    args = parse_address(__doc__ or "")
    out = main(args.host, args.port)
    sys.exit(int(out["job"].get("exit_code") or 0))
