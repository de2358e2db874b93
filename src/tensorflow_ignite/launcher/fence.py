"""Where a job's TensorFlow servers listen: the bind fence of the launcher's workers.

TensorFlow's gRPC servers (every task of a MultiWorkerMirrored or ParameterServer
job) listen on **every interface**, unauthenticated, and TensorFlow has no setting
for that: anyone who reaches the port can run TensorFlow ops -- read and write
files -- as the node's user while the job runs.  So the shim (:mod:`.shim`) starts
every worker with the bind fence (``native/bind_fence.cc``) in ``LD_PRELOAD``,
which pins each wildcard ``bind()`` of the job's processes to one address:

* by default the worker's own address in ``TF_CONFIG``, the one the node advertised
  to the other tasks (``ProbeNode``: the client connector's host when it names one,
  else the node's ``localHost``, else its first non-loopback address);
* the operator's choice: ``TF_IGNITE_WORKER_BIND_HOST`` in the node's environment,
  an address (or host name) of that node, or ``*`` for every interface (today's
  TensorFlow behaviour; only on a network where that is fenced otherwise).

Nothing a job submits changes it (``TF_IGNITE_*`` and ``LD_*`` are reserved names of
a job's environment).  When the fence is needed but its library is missing, the
worker does not start (:class:`FenceUnavailable`): a worker never listens wider
than the operator allowed.  Standard library only: the shim must start fast.
"""

from __future__ import annotations

import ipaddress
import json
import os
import socket
from collections.abc import Mapping

__all__ = [
    "BIND_HOST_ENV",
    "ADDRESS_ENV",
    "FILENAME",
    "FenceUnavailable",
    "fence_address",
    "fence_library",
    "fenced_environment",
]

#: The operator's setting, in the node's environment (inherited by the shim).
BIND_HOST_ENV = "TF_IGNITE_WORKER_BIND_HOST"
#: What the library reads (the same name as ``tensorflow_ignite.native.bind_fence.ADDRESS_ENV``).
ADDRESS_ENV = "TF_IGNITE_BIND_FENCE"
#: The library's file, in the package's ``native/`` directory (as ``native.bind_fence.FILENAME``).
FILENAME = "_tf_ignite_bind.so"


class FenceUnavailable(RuntimeError):
    """The worker would listen on every interface and the bind fence cannot stop it."""


def fence_library() -> str:
    """Path of the bind fence library as installed (it may be missing)."""
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(os.path.dirname(here), "native", FILENAME)


def _own_host(tf_config: str | None) -> str | None:
    """The host of this task's own entry in ``TF_CONFIG``, or None."""
    if not tf_config:
        return None
    try:
        config = json.loads(tf_config)
        task = config["task"]
        address = str(config["cluster"][task["type"]][int(task["index"])])
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    host = address.rsplit(":", 1)[0]
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def fence_address(environ: Mapping[str, str]) -> str | None:
    """The numeric address to pin listeners to, or None for every interface (no fence)."""
    setting = environ.get(BIND_HOST_ENV, "").strip()
    if setting == "*":
        return None
    host = setting or _own_host(environ.get("TF_CONFIG"))
    if not host:
        return None
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        try:
            infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except OSError as exc:
            raise FenceUnavailable(
                f"the worker's listen address {host!r} ({BIND_HOST_ENV} or TF_CONFIG) does not resolve: {exc}"
            ) from exc
        address = ipaddress.ip_address(str(infos[0][4][0]))
    if address.is_unspecified:
        return None
    return str(address)


def fenced_environment(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` with the bind fence armed (``LD_PRELOAD`` and :data:`ADDRESS_ENV`), when one applies.

    Raises :class:`FenceUnavailable` when the job's listeners must be fenced and the
    library is not there, saying what to do.
    """
    out = dict(env)
    address = fence_address(env)
    if address is None:
        out.pop(ADDRESS_ENV, None)
        return out
    library = fence_library()
    if not os.path.isfile(library):
        raise FenceUnavailable(
            f"the bind fence {library} is missing, so this worker's TensorFlow servers would listen on every "
            f"interface instead of {address} only; reinstall tensorflow-ignite (wheels ship it; a checkout "
            f"builds it with `make native`), or set {BIND_HOST_ENV}=* in the node's environment to allow "
            "every interface"
        )
    preload = [p for p in out.get("LD_PRELOAD", "").replace(" ", ":").split(":") if p and p != library]
    out["LD_PRELOAD"] = ":".join([library, *preload])
    out[ADDRESS_ENV] = address
    return out
