"""A scoring worker of the launcher form: ``python -m tensorflow_ignite.scoring.worker predict.json``.

Started by the launcher on one server node (see :mod:`.cluster`), in the job
directory.  It reads what to score from the spec file, loads the model once,
and runs :func:`~tensorflow_ignite.scoring.predict` over its node's primary
partitions (``IGNITE_DATASET_PARTS``) through its node's client endpoint and
credentials (``IGNITE_DATASET_*``), with ``mode="skip-existing"``: after a
restart, partitions the ledger records complete are skipped.  Progress goes
to the job's output (a line per recording step, at most one every 2 s) and to
the worker's result (``ignite-tf describe`` shows it): ``state`` (``scoring``,
then ``done``), ``rows``, ``partitions_done`` of ``partitions``, and at the end
the run's summary: the predictions sent to other nodes than its own
(``rows_elsewhere``), the bytes its client sent and received (``bytes``) and the
share of them that was its own node's (``own_node_bytes_share``: reads and
writes colocated).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["main"]

#: Seconds between two progress reports.
REPORT_EVERY = 2.0


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print(
            "usage: python -m tensorflow_ignite.scoring.worker predict.json (run by ignite-tf predict "
            "--on-cluster through the launcher)",
            file=sys.stderr,
        )
        return 2
    with open(args[0], encoding="utf-8") as f:
        spec = json.load(f)

    from ..launcher.worker import WorkerContext, node_options, report
    from .api import predict
    from .model import load_model

    ctx = WorkerContext.from_env()
    client = node_options().connect()
    model = load_model(spec["model"])
    if model.sha256 != spec["model_sha256"]:
        print(
            f"tf-ignite predict: the model at {spec['model']!r} is not the one the job was submitted with "
            f"(sha256 {model.sha256[:12]}..., expected {spec['model_sha256'][:12]}...): it changed since; "
            "submit the job again",
            file=sys.stderr,
            flush=True,
        )
        return 3
    model.uri = str(spec["model_uri"])  # the worker's copy stands for the model the job was submitted with
    parts = ctx.partitions
    base = {"node": ctx.node, "attempt": ctx.attempt, "partitions": len(parts)}
    last = [0.0]

    def progress(rows: int, done: int, todo: int) -> None:
        now = time.monotonic()
        if now - last[0] < REPORT_EVERY and done < todo:
            return
        last[0] = now
        print(f"scored {rows:,} rows; {done} of {todo} partition(s) to score complete", flush=True)
        report(
            {**base, "state": "scoring", "rows": rows, "partitions_done": done, "partitions_todo": todo}, context=ctx
        )

    report({**base, "state": "starting", "rows": 0}, context=ctx)
    before = client.stats().by_node()
    result = predict(
        model,
        spec["source"],
        spec["output"],
        inputs=spec.get("inputs") or None,
        mode="skip-existing",
        client=client,
        batch_size=int(spec.get("batch_size", 1024)),
        record_every=int(spec.get("record_every", 16)),
        progress=False,
        parts=parts,
        on_record=progress,
    )
    traffic = _traffic(before, client.stats().by_node())
    own = os.environ.get("TF_IGNITE_NODE_ID", "")
    total = sum(sent + received for sent, received in traffic.values())
    share = round(sum(traffic.get(own, [0, 0])) / total, 4) if total else 1.0
    # Short enough for describe's one line per worker (it cuts results at 300 characters).
    summary: dict[str, Any] = {
        **base,
        "state": "done",
        "rows": result.rows,
        "seconds": round(result.seconds, 2),
        "rows_per_s": round(result.rows_per_second),
        "partitions_scored": result.units_scored,
        "partitions_skipped": result.units_skipped,
        "rows_elsewhere": sum(n for node, n in result.rows_per_node.items() if node != own),
        "bytes": total,
        "own_node_bytes_share": share,
    }
    report(summary, context=ctx)
    print(result.summary(), flush=True)
    return 0


def _traffic(before: Mapping[Any, Any], after: Mapping[Any, Any]) -> dict[str, list[int]]:
    """Bytes ``[sent, received]`` per node id between two ``IgniteClient.stats().by_node()`` snapshots."""
    out: dict[str, list[int]] = {}
    for node, now in after.items():
        then = before.get(node)
        sent = now.bytes_sent - (then.bytes_sent if then is not None else 0)
        received = now.bytes_received - (then.bytes_received if then is not None else 0)
        if sent or received:
            out[str(node)] = [int(sent), int(received)]
    return out


if __name__ == "__main__":
    sys.exit(main())
