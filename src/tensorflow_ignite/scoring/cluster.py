"""The launcher form of scoring: one worker per server node, each scoring its node's primary partitions.

:func:`submit_predict` (``ignite-tf predict --on-cluster``) does, in the
submitting process, everything that must happen once: it loads the model,
checks it against the source, checks or creates the output cache and its SQL
table (``mode="overwrite"`` replaces it) -- :func:`~tensorflow_ignite.scoring.predict`
over no partitions, so every bad input is refused before a job exists. Then it
submits a launcher job over the source cache whose command is::

    python -m tensorflow_ignite.scoring.worker predict.json

run in a job directory holding ``predict.json`` (what to score, :data:`SPEC_FILE`)
and, when the model is a local file or directory, the model itself (a model on
``ignite://`` is read by each worker through its own node).  ``python`` is the
job's interpreter, so a launcher whose ``allowedCommands`` lists that
interpreter accepts the job.  The launcher plans one worker per server node
holding primary partitions of the source, restarts every worker after a crash
or a topology change, and the workers (:mod:`.worker`) score with
``mode="skip-existing"``: partitions the ledger records complete are skipped,
the rest rescored key by key -- exactly one prediction per key when the job
ends.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Unpack

from ..errors import ConfigurationError
from .api import Mode, predict
from .source import is_query

if TYPE_CHECKING:
    from ..launcher.jobs import JobClient, RestartKeywords

__all__ = ["submit_predict", "SPEC_FILE", "WORKER_MODULE", "worker_command"]

#: The job directory's description of what to score (JSON).
SPEC_FILE = "predict.json"
#: The module each worker runs (``python -m``).
WORKER_MODULE = "tensorflow_ignite.scoring.worker"
_MODEL_STEM = "model"


def worker_command() -> list[str]:
    """The job's command: ``python`` (the job's interpreter, what ``allowedCommands`` lists) ``-m`` the worker."""
    return ["python", "-m", WORKER_MODULE, SPEC_FILE]


def submit_predict(
    jobs: "JobClient",
    model: str,
    source: str,
    output: str,
    *,
    inputs: Mapping[str, str] | None = None,
    mode: Mode = "skip-existing",
    batch_size: int = 1024,
    record_every: int = 16,
    backups: int = 0,
    sql: bool = True,
    name: str | None = None,
    python: str | None = None,
    **restart: Unpack[RestartKeywords],
) -> dict[str, Any]:
    """Check everything, prepare ``output``, and submit the scoring job; returns the job's record.

    ``model`` is a path (a ``.keras``/``.h5`` file or a SavedModel directory),
    local (shipped with the job) or ``ignite://`` (read by every worker);
    ``source`` a cache name (an SQL query has no partitions to spread over
    nodes: score it with :func:`~tensorflow_ignite.scoring.predict`).  The other
    arguments mean what they mean to ``predict``; ``name``, ``python`` and
    ``restart`` (:class:`~tensorflow_ignite.launcher.jobs.RestartKeywords`) what
    they mean to :meth:`JobClient.submit`.  Raises the errors ``predict`` raises
    for bad input (nothing written, no job), and the launcher's errors
    (:class:`~tensorflow_ignite.errors.LauncherPermissionError`, ...) -- then an
    output this call created is removed again.
    """
    from ..launcher.jobs import job_durations

    durations = job_durations("submit_predict", restart)  # checked before anything is written
    if not isinstance(model, (str, os.PathLike)):
        raise ConfigurationError(
            "the cluster form loads the model on every node: pass a path (a .keras file or "
            "a SavedModel directory, local or ignite://), not a model object"
        )
    model = os.fspath(model)
    if is_query(source):
        raise ConfigurationError(
            "an SQL query has no partitions to score where they live; score it in this "
            "process (ignite-tf predict without --on-cluster, tensorflow_ignite.predict)"
        )
    jobs.check_module()  # no module on the nodes: say so before anything is written
    if source in jobs.client.cache_names():
        from ..protocol.codes import CacheMode

        if jobs.client.cache(source).configuration().cache_mode == CacheMode.REPLICATED:
            raise ConfigurationError(
                f"cache {source!r} is replicated: every node holds all of it, so there are no "
                "per-node partitions to score; score it in one process (ignite-tf predict "
                "without --on-cluster, tensorflow_ignite.predict)"
            )
    existed = output in jobs.client.cache_names()
    prepared = predict(
        model,
        source,
        output,
        inputs=inputs,
        mode=mode,
        client=jobs.client,
        batch_size=batch_size,
        record_every=record_every,
        backups=backups,
        sql=sql,
        progress=False,
        parts=(),
    )
    spec = {
        "model": model,
        "model_uri": prepared.model_uri,
        "model_sha256": prepared.model_sha256,
        "source": source,
        "output": output,
        "inputs": dict(inputs or {}),
        "batch_size": batch_size,
        "record_every": record_every,
    }
    with tempfile.TemporaryDirectory(prefix="tfi-predict-") as job_dir:
        if "://" not in model:
            spec["model"] = _ship_model(model, job_dir)
        with open(os.path.join(job_dir, SPEC_FILE), "w", encoding="utf-8") as f:
            json.dump(spec, f, indent=2)
        try:
            return jobs.submit(
                source,
                job_dir,
                worker_command(),
                name=name or _job_name(output),
                python=python,
                checkpoint_dir="",
                max_restarts=durations["max_restarts"],
                backoff=durations["backoff_ms"] / 1000,
                settle=durations["settle_ms"] / 1000,
                grace=durations["grace_ms"] / 1000,
            )
        except Exception:
            if not existed and output in jobs.client.cache_names():
                jobs.client.cache(output).destroy()  # created for a job that never ran
            raise


def _ship_model(path: str, job_dir: str) -> str:
    """Copy a local model into the job directory; its path there."""
    if os.path.isdir(path):
        shutil.copytree(path, os.path.join(job_dir, _MODEL_STEM))
        return _MODEL_STEM
    local = _MODEL_STEM + (os.path.splitext(path)[1] or ".keras")
    shutil.copyfile(path, os.path.join(job_dir, local))
    return local


def _job_name(output: str) -> str:
    from ..launcher.jobs import new_job_id

    return new_job_id("predict-" + output)
