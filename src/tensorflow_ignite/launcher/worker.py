"""Helpers for training scripts run by ``ignite-tf start``.

The launcher starts each worker with::

    TF_CONFIG                   the MultiWorkerMirroredStrategy cluster, this worker's index
    IGNITE_DATASET_HOST/PORT    this node's thin-client endpoint
    IGNITE_DATASET_PARTS        this node's primary partitions of the job's cache
    TF_IGNITE_CACHE             the job's cache
    TF_IGNITE_CHECKPOINT_DIR    where to keep checkpoints / BackupAndRestore state
    TF_IGNITE_JOB_ID, TF_IGNITE_ATTEMPT, TF_IGNITE_WORKER_INDEX, TF_IGNITE_NUM_WORKERS,
    TF_IGNITE_NODE, TF_IGNITE_NODE_ID, TF_IGNITE_WORK_DIR

so ``IgniteDataset(cache)`` in a worker reads exactly its node's primary
partitions.  :class:`WorkerContext` reads these; :func:`report` stores a small
result for the job's owner; :func:`gather_ints` and :func:`equal_steps` keep
step counts equal across workers whose nodes hold different numbers of rows
(MultiWorkerMirroredStrategy hangs at epoch end otherwise).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..data.env import parse_partition_list
from . import layout

__all__ = ["WorkerContext", "report", "gather_ints", "equal_steps"]


@dataclass(frozen=True)
class WorkerContext:
    """Who and where this worker is, from the environment the launcher set."""

    job_id: str
    attempt: int
    index: int
    num_workers: int
    node: str
    cache: str
    partitions: tuple[int, ...]
    host: str
    port: int
    checkpoint_dir: str | None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "WorkerContext":
        env = os.environ if environ is None else environ
        return cls(
            job_id=env.get("TF_IGNITE_JOB_ID", "local"),
            attempt=int(env.get("TF_IGNITE_ATTEMPT", "1")),
            index=int(env.get("TF_IGNITE_WORKER_INDEX", "0")),
            num_workers=int(env.get("TF_IGNITE_NUM_WORKERS", "1")),
            node=env.get("TF_IGNITE_NODE", ""),
            cache=env.get("TF_IGNITE_CACHE", ""),
            partitions=parse_partition_list(env["IGNITE_DATASET_PARTS"]) if env.get("IGNITE_DATASET_PARTS") else (),
            host=env.get("IGNITE_DATASET_HOST", "localhost"),
            port=int(env.get("IGNITE_DATASET_PORT", "10800")),
            checkpoint_dir=env.get("TF_IGNITE_CHECKPOINT_DIR") or None,
        )

    @property
    def is_chief(self) -> bool:
        """Worker 0 plays the chief under MultiWorkerMirroredStrategy (writes the real checkpoint)."""
        return self.index == 0

    @property
    def launched(self) -> bool:
        """True when run by the launcher (not by hand)."""
        return "TF_IGNITE_JOB_ID" in os.environ


def report(values: Mapping[str, Any], *, context: WorkerContext | None = None, **client_settings: Any) -> None:
    """Store ``values`` (ints, floats, strings, lists, dicts) as this worker's result.

    The job's owner reads them with ``JobClient.results(job)``; ``ignite-tf
    describe`` shows them.  Written through this node's client endpoint.
    """
    from ..client import IgniteClient

    ctx = context or WorkerContext.from_env()
    with IgniteClient(f"{ctx.host}:{ctx.port}", **client_settings) as client:
        cache = client.get_or_create_cache(layout.cache_config(layout.RESULTS))
        cache.put(layout.worker_key(ctx.job_id, ctx.attempt, ctx.index), dict(values))


def gather_ints(strategy: Any, value: int) -> list[int]:
    """Every replica's ``value``, in replica order (one all-reduce across workers).

    Every worker must call it the same number of times, in the same order, like
    any collective.
    """
    import tensorflow as tf

    n = strategy.num_replicas_in_sync

    def one_hot(v: Any) -> Any:
        ctx = tf.distribute.get_replica_context()
        vec = tf.one_hot(ctx.replica_id_in_sync_group, n, dtype=tf.float64) * v
        return ctx.all_reduce(tf.distribute.ReduceOp.SUM, vec)

    # In a tf.function: eager collectives work too but warn about their overhead.
    run = tf.function(lambda v: strategy.run(one_hot, args=(v,)))
    result = strategy.experimental_local_results(run(tf.constant(float(value), tf.float64)))[0]
    return [int(round(v)) for v in result.numpy().tolist()]


def equal_steps(examples: Any, *, batch_size: int, local_rows: int, steps: int, pad: Any) -> Any:
    """One epoch of exactly ``steps`` batches of exactly ``batch_size``, as ``(example, weight)``.

    ``examples`` is this worker's unbatched data (``local_rows`` elements);
    ``steps`` must be the same on every worker -- the largest
    ``ceil(rows / batch_size)`` over the workers (see :func:`gather_ints`).  Real
    examples get weight 1.0, and ``pad`` (an element of the same structure)
    fills the rest with weight 0.0: every row is read exactly once per epoch,
    every worker takes the same number of steps (no hang at the end of an
    epoch), and every batch has one shape, so a ``tf.function`` step is traced
    once and every worker issues the same collectives.  Weight the loss by it::

        loss = tf.reduce_sum(per_example_loss * w) / global_sum_of_w
    """
    import tensorflow as tf

    if steps * batch_size < local_rows:
        raise ValueError(f"{steps} steps of {batch_size} cannot hold this worker's {local_rows} rows")
    real = examples.map(lambda *e: (e[0] if len(e) == 1 else e, tf.constant(1.0)))
    filler = tf.data.Dataset.from_tensors((pad, tf.constant(0.0))).repeat(steps * batch_size - local_rows)
    return real.concatenate(filler).batch(batch_size, drop_remainder=True)
