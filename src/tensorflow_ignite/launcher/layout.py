"""Names and key formats of the launcher's caches (mirrors ``LauncherCaches.java``).

=========================  ==================================  =====================================
cache                      key                                 value (Java HashMap / String / byte[])
=========================  ==================================  =====================================
``tf_ignite_jobs``         ``JOB``                             job record: spec, state, attempt,
                                                               plan, workers, failures, events
``tf_ignite_job_workers``  ``JOB/ATTEMPT/INDEX``               worker record: node, pid, state,
                                                               exit code, output chunk count
``tf_ignite_job_logs``     ``JOB/ATTEMPT/INDEX/CHUNK``         ``{t: ms, sealed: AES-GCM bytes}``
``tf_ignite_job_files``    ``JOB/N``                           chunk N of the job directory's zip
``tf_ignite_job_results``  ``JOB/ATTEMPT/INDEX``               what the worker ``report()``-ed
=========================  ==================================  =====================================

The supervisor writes job records, each node's agent its workers' records and
output, the CLI the files, workers their results.  Every authenticated user may
write these caches too (Ignite 2 has no authorization): they are views, and the
launcher decides from what it sealed in the metastorage (README, "Security").
"""

from __future__ import annotations

from ..client.services import MODULE_SERVICE
from ..protocol.cache_config import CacheConfiguration, CacheMode, WriteSynchronizationMode

__all__ = [
    "SERVICE_NAME",
    "JOBS",
    "WORKERS",
    "LOGS",
    "FILES",
    "RESULTS",
    "TERMINAL_STATES",
    "cache_config",
    "worker_key",
    "log_key",
    "file_key",
]

#: The supervisor's service name (a cluster singleton deployed by every NodeLauncher).
SERVICE_NAME = MODULE_SERVICE

JOBS = "tf_ignite_jobs"
WORKERS = "tf_ignite_job_workers"
LOGS = "tf_ignite_job_logs"
FILES = "tf_ignite_job_files"
RESULTS = "tf_ignite_job_results"

#: Job states after which nothing runs any more.
TERMINAL_STATES = frozenset({"SUCCEEDED", "FAILED", "STOPPED"})

#: Exit code of a job stopped with ``ignite-tf stop`` (as if SIGTERM'd).
STOPPED_EXIT_CODE = 143


def cache_config(name: str) -> CacheConfiguration:
    """The configuration the Java side creates these caches with (1 backup, FULL_SYNC)."""
    return CacheConfiguration(
        name=name,
        cache_mode=CacheMode.PARTITIONED,
        backups=1,
        write_synchronization_mode=WriteSynchronizationMode.FULL_SYNC,
    )


def worker_key(job: str, attempt: int, index: int) -> str:
    return f"{job}/{attempt}/{index}"


def log_key(job: str, attempt: int, index: int, chunk: int) -> str:
    return f"{job}/{attempt}/{index}/{chunk}"


def file_key(job: str, chunk: int) -> str:
    return f"{job}/{chunk}"
