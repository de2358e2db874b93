"""Helpers for training scripts run by ``ignite-tf start``.

The launcher starts each worker with::

    TF_CONFIG                   the TF cluster (MultiWorkerMirroredStrategy workers, or
                                ParameterServerStrategy chief/ps/workers), this task
    TF_IGNITE_TASK_TYPE/INDEX   this task's role (worker, chief, ps) and index in it
    IGNITE_DATASET_HOST/PORT    this node's thin-client endpoint
    IGNITE_DATASET_PARTS        this node's primary partitions of the job's cache
    TF_IGNITE_CACHE             the job's cache
    TF_IGNITE_CHECKPOINT_DIR    where to keep checkpoints / BackupAndRestore state
    TF_IGNITE_JOB_ID, TF_IGNITE_ATTEMPT, TF_IGNITE_WORKER_INDEX, TF_IGNITE_NUM_WORKERS,
    TF_IGNITE_NODE, TF_IGNITE_NODE_ID, TF_IGNITE_WORK_DIR

so ``IgniteDataset(cache)`` in a worker reads exactly its node's primary
partitions.  On secured clusters the node adds ``IGNITE_DATASET_USERNAME``,
``_PASSWORD``, ``_CAFILE``, ``_CERTFILE``, ``_KEYFILE``, ``_CERT_PASSWORD`` from its
own configuration (never from the job record); the dataset, ``write``, the
``ignite://`` filesystem and :func:`report` use them -- every connection
variable means the same to all of them (:mod:`tensorflow_ignite.client.env`
reads them; :func:`node_options` is the result).  :class:`WorkerContext` reads these; :func:`report` stores a small
result for the job's owner; :func:`gather_ints` and :func:`equal_steps` keep
step counts equal across workers whose nodes hold different numbers of rows
(MultiWorkerMirroredStrategy hangs at epoch end otherwise).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..client.env import env_partitions
from ..client.options import ConnectionOptions
from . import layout

__all__ = ["WorkerContext", "report", "node_options", "node_client_settings", "gather_ints", "equal_steps"]


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
    task_type: str = "worker"
    task_index: int = 0
    strategy: str = "multi_worker_mirrored"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "WorkerContext":
        env = os.environ if environ is None else environ
        node = node_options(env)
        return cls(
            job_id=env.get("TF_IGNITE_JOB_ID", "local"),
            attempt=int(env.get("TF_IGNITE_ATTEMPT", "1")),
            index=int(env.get("TF_IGNITE_WORKER_INDEX", "0")),
            num_workers=int(env.get("TF_IGNITE_NUM_WORKERS", "1")),
            node=env.get("TF_IGNITE_NODE", ""),
            cache=env.get("TF_IGNITE_CACHE", ""),
            partitions=env_partitions(env) or (),
            host=node.host,
            port=node.port,
            checkpoint_dir=env.get("TF_IGNITE_CHECKPOINT_DIR") or None,
            task_type=env.get("TF_IGNITE_TASK_TYPE", "worker"),
            task_index=int(env.get("TF_IGNITE_TASK_INDEX", env.get("TF_IGNITE_WORKER_INDEX", "0"))),
            strategy=env.get("TF_IGNITE_STRATEGY", "multi_worker_mirrored"),
        )

    @property
    def is_chief(self) -> bool:
        """The task that writes the real checkpoint: worker 0 under MultiWorkerMirroredStrategy,
        the ``chief`` task under ParameterServerStrategy."""
        if self.strategy == "parameter_server":
            return self.task_type == "chief"
        return self.index == 0

    @property
    def launched(self) -> bool:
        """True when run by the launcher (not by hand)."""
        return "TF_IGNITE_JOB_ID" in os.environ


_CREDENTIALS = ("username", "password", "cafile", "certfile", "keyfile", "cert_password")


def node_options(environ: Mapping[str, str] | None = None) -> ConnectionOptions:
    """How this worker reaches its node: the ``IGNITE_DATASET_*`` variables its node set, read
    as every feature reads them (:meth:`ConnectionOptions.from_env`)."""
    return ConnectionOptions.from_env(environ)


def node_client_settings(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Credentials and TLS files for this worker's node, from the ``IGNITE_DATASET_*``
    variables its node set (empty on an open cluster); :class:`ConnectionOptions` fields."""
    options = node_options(environ)
    return {key: getattr(options, key) for key in _CREDENTIALS if getattr(options, key)}


def report(values: Mapping[str, Any], *, context: WorkerContext | None = None, **client_settings: Any) -> None:
    """Store ``values`` (ints, floats, strings, lists, dicts) as this worker's result.

    The job's owner reads them with ``JobClient.results(job)``; ``ignite-tf
    describe`` shows them.  Written through this node's client endpoint, with
    the node's credentials (:func:`node_client_settings`) unless given here.
    """
    ctx = context or WorkerContext.from_env()
    # The worker's shared client for its node (its datasets use the same one).
    options = replace(node_options(), host=ctx.host, port=ctx.port, **client_settings)
    client = options.connect()
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
    return [round(v) for v in result.numpy().tolist()]


def equal_steps(
    examples: Any, *, batch_size: int, local_rows: int, steps: int, pad: Any, sample_weight: bool = False
) -> Any:
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

    With ``sample_weight=True`` (Keras ``fit``, e.g. tf_keras under
    MultiWorkerMirroredStrategy) an ``(x, y)`` example comes out as ``(x, y, w)``,
    the form ``fit`` takes sample weights in; ``.repeat()`` the result and pass
    ``steps_per_epoch=steps`` so that every worker runs the same steps.
    """
    import tensorflow as tf

    if steps * batch_size < local_rows:
        raise ValueError(f"{steps} steps of {batch_size} cannot hold this worker's {local_rows} rows")
    real = examples.map(lambda *e: (e[0] if len(e) == 1 else e, tf.constant(1.0)))
    filler = tf.data.Dataset.from_tensors((pad, tf.constant(0.0))).repeat(steps * batch_size - local_rows)
    batches = real.concatenate(filler).batch(batch_size, drop_remainder=True)
    if sample_weight:
        spec = batches.element_spec[0]
        if not (isinstance(spec, tuple) and len(spec) == 2):
            raise ValueError("sample_weight=True needs (x, y) examples, got " + repr(spec))
        batches = batches.map(lambda xy, w: (xy[0], xy[1], w))
    return batches
