"""The ``IGNITE_DATASET_*`` / ``IGNITE_FS_*`` environment variables, read in this one place.

A process steers how every feature reaches its cluster through its environment
(``ignite-tf start`` sets these for each worker, pointing it at its own node):

=========================================  ==========================================
``<PREFIX>HOST``, ``<PREFIX>PORT``          the endpoint
``<PREFIX>USERNAME``, ``<PREFIX>PASSWORD``  authentication
``<PREFIX>CAFILE``, ``<PREFIX>CERTFILE``,   TLS files (the key password too)
``<PREFIX>KEYFILE``,
``<PREFIX>CERT_PASSWORD``
``<PREFIX>SERVER_HOSTNAME``                 the name the nodes' certificates are checked against
``<PREFIX>INSECURE_SKIP_VERIFY``,           the TLS opt-outs (``1/true/yes/on``, ``0/false/no/off``)
``<PREFIX>INSECURE_SKIP_HOSTNAME_``
``VERIFICATION``
``<PREFIX>TIMEOUT``                         seconds a request may take
``<PREFIX>CONNECT_TIMEOUT``                 seconds dialling a node may take
``<PREFIX>IDLE_TIMEOUT``                    seconds a node may stay silent (heartbeat unanswered)
=========================================  ==========================================

``<PREFIX>`` is ``IGNITE_DATASET_`` for every feature -- ``IgniteDataset``,
``tensorflow_ignite.write``, ``ignite://`` and launcher workers read the same
variables with the same meaning -- and ``ignite://`` reads ``IGNITE_FS_`` before
it (settings for the file store alone).  An empty variable counts as unset.
:meth:`~.options.ConnectionOptions.from_env` is how features use them;
:func:`env_partitions` reads ``IGNITE_DATASET_PARTS`` (a worker's partitions),
with :func:`parse_partition_list`: every feature asks it, none reads the
variable itself.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import ConfigurationError

__all__ = [
    "DATASET_PREFIX",
    "FS_PREFIX",
    "CONNECTION_VARIABLES",
    "connection_env",
    "parse_flag",
    "parse_int",
    "parse_partition_list",
    "env_partitions",
    "PARTS_VARIABLE",
]

DATASET_PREFIX = "IGNITE_DATASET_"
FS_PREFIX = "IGNITE_FS_"
#: The partitions this process reads (``ignite-tf start`` sets it for every worker: its node's primaries).
PARTS_VARIABLE = DATASET_PREFIX + "PARTS"

#: ``ConnectionOptions`` field -> how its variable's text becomes a value.
_PARSERS: dict[str, str] = {
    "host": "str",
    "port": "port",
    "username": "str",
    "password": "str",
    "cafile": "str",
    "certfile": "str",
    "keyfile": "str",
    "cert_password": "str",
    "server_hostname": "str",
    "insecure_skip_verify": "flag",
    "insecure_skip_hostname_verification": "flag",
    "timeout": "seconds",
    "connect_timeout": "seconds",
    "idle_timeout": "seconds",
}
#: The ``ConnectionOptions`` fields a variable sets (``<PREFIX><FIELD upper-cased>``).
CONNECTION_VARIABLES: tuple[str, ...] = tuple(_PARSERS)

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def parse_flag(name: str, text: str) -> bool:
    """``1/true/yes/on`` or ``0/false/no/off`` (any case); anything else is a ConfigurationError naming ``name``."""
    value = text.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigurationError(f"{name}={text!r} is not a boolean; use 1/0, true/false or yes/no")


def parse_int(name: str, text: str) -> int:
    """An integer variable, or a ConfigurationError naming ``name``."""
    try:
        return int(text)
    except ValueError:
        raise ConfigurationError(f"{name}={text!r} is not an integer") from None


def _parse(kind: str, name: str, text: str) -> Any:
    if kind == "flag":
        return parse_flag(name, text)
    if kind == "port":
        port = parse_int(name, text)
        if not 0 < port < 65536:
            raise ConfigurationError(f"{name}={text!r} is not a port number (1-65535)")
        return port
    if kind == "seconds":
        try:
            seconds = float(text)
        except ValueError:
            raise ConfigurationError(f"{name}={text!r} is not a number of seconds") from None
        if not seconds > 0:
            raise ConfigurationError(f"{name}={text!r}: a timeout is a positive number of seconds")
        return seconds
    return text


def connection_env(
    environ: Mapping[str, str] | None = None, prefixes: Sequence[str] = (DATASET_PREFIX,)
) -> dict[str, Any]:
    """The ``ConnectionOptions`` fields the variables set, typed; the first prefix that sets a field wins."""
    env = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for field, kind in _PARSERS.items():
        for prefix in prefixes:
            name = prefix + field.upper()
            text = env.get(name)
            if text:
                out[field] = _parse(kind, name, text)
                break
    return out


def env_partitions(environ: Mapping[str, str] | None = None) -> tuple[int, ...] | None:
    """The partitions ``IGNITE_DATASET_PARTS`` names (sorted, unique), or None when it is unset or empty."""
    env = os.environ if environ is None else environ
    text = env.get(PARTS_VARIABLE)
    return parse_partition_list(text) if text else None


def parse_partition_list(text: str, *, name: str = PARTS_VARIABLE) -> tuple[int, ...]:
    """Parse ``"0,1,5-9"`` (also spaces or JSON-ish brackets) into sorted unique partitions."""
    cleaned = text.strip().strip("[]()")
    parts: set[int] = set()
    for token in cleaned.replace(" ", ",").split(","):
        token = token.strip()
        if not token:
            continue
        try:
            if "-" in token[1:]:
                lo, hi = token.split("-", 1)
                a, b = int(lo), int(hi)
                if b < a:
                    raise ValueError
                parts.update(range(a, b + 1))
            else:
                parts.add(int(token))
        except ValueError:
            raise ConfigurationError(
                f"{name}={text!r}: {token!r} is not a partition number or range like 5-9"
            ) from None
    if any(p < 0 for p in parts):
        raise ConfigurationError(f"{name}={text!r}: partitions are non-negative")
    return tuple(sorted(parts))
