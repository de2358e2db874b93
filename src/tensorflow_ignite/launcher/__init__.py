"""The ``ignite-tf`` job launcher: distributed TensorFlow next to Ignite's partitions.

* The supervisor is a Java Ignite service (``java/.../launcher/TfJobService``), a
  cluster singleton that every ``NodeLauncher`` deploys; Ignite keeps it alive by
  moving it when its node dies.  It plans one worker per server node holding
  primary partitions of the job's cache, starts the workers through an agent on
  each of those nodes, and restarts them all (bounded retries, backoff) when a
  worker fails, a node leaves or joins, or primaries move.
* :class:`~.jobs.JobClient` (used by ``ignite-tf start|ps|describe|logs|attach|stop|rm``)
  submits, stops and removes jobs through the thin client's service-invoke
  operation and reads state and output from the launcher's caches (:mod:`.layout`).
* :mod:`.worker` has the helpers training scripts use; :mod:`.shim` is the
  parent process of every worker (and arms the ``ignite://`` hook in it through
  ``_sitehook/sitecustomize.py``).

Importing this package imports neither TensorFlow nor the client.
"""

from __future__ import annotations

from .._lazy import lazy_getattr

__all__ = [
    "JobClient",
    "JobNotFoundError",
    "LauncherError",
    "LauncherNotDeployedError",
    "LauncherPermissionError",
    "OutputLine",
    "WorkerContext",
    "report",
]

# Lazy: the worker shim (``python -m tensorflow_ignite.launcher.shim``) imports this
# package and must start in milliseconds, without the client and NumPy.
__getattr__ = lazy_getattr(
    __name__, {name: ".jobs" for name in __all__[:6]} | {"WorkerContext": ".worker", "report": ".worker"}
)
