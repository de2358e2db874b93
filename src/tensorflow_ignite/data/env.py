"""``IGNITE_DATASET_*`` environment overrides of :class:`~.dataset.IgniteDataset`'s arguments.

A worker process (for example one started by ``ignite-tf start``) steers every
``IgniteDataset`` it builds through its environment, so that the same training
script reads the local node's partitions on each worker.  The connection
variables (``IGNITE_DATASET_HOST``, ``_PORT``, ``_USERNAME``, ``_PASSWORD``,
``_CAFILE``, ``_CERTFILE``, ``_KEYFILE``, ``_CERT_PASSWORD``,
``_SERVER_HOSTNAME``, ``_INSECURE_SKIP_VERIFY``,
``_INSECURE_SKIP_HOSTNAME_VERIFICATION``, ``_TIMEOUT``) are every feature's
(:mod:`tensorflow_ignite.client.env` reads them); the dataset's own are:

=============================  ==============================================
variable                       overrides
=============================  ==============================================
``IGNITE_DATASET_PART``        ``part`` (one partition, ``-1`` for all)
``IGNITE_DATASET_PARTS``       a list of partitions, e.g. ``0,1,5-9``
``IGNITE_DATASET_LOCAL``       ``local`` (``1/true/yes`` or ``0/false/no``)
``IGNITE_DATASET_PAGE_SIZE``   ``page_size``
=============================  ==============================================

An environment value wins over the argument, as in the original TensorFlow
contrib dataset.  An empty variable counts as unset.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..client.env import (
    DATASET_PREFIX,
    connection_env,
    env_partitions,
    parse_flag,
    parse_int,
    parse_partition_list,
)

__all__ = ["apply_env_overrides", "parse_partition_list", "PREFIX"]

PREFIX = DATASET_PREFIX


def apply_env_overrides(params: dict[str, Any], environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Return ``params`` with every ``IGNITE_DATASET_*`` variable that is set applied."""
    env = os.environ if environ is None else environ
    out = dict(params)
    out.update(connection_env(env))
    for key in ("part", "page_size"):
        name = PREFIX + key.upper()
        if env.get(name):
            out[key] = parse_int(name, env[name])
    if env.get(PREFIX + "LOCAL"):
        out["local"] = parse_flag(PREFIX + "LOCAL", env[PREFIX + "LOCAL"])
    parts = env_partitions(env)
    if parts is not None:
        out["parts"] = parts
    return out
