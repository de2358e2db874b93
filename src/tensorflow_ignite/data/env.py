"""``IGNITE_DATASET_*`` environment overrides.

A worker process (for example one started by ``ignite-tf start``) steers every
``IgniteDataset`` it builds through its environment, so that the same training
script reads the local node's partitions on each worker:

=============================  ==============================================
variable                       overrides
=============================  ==============================================
``IGNITE_DATASET_HOST``        ``host``
``IGNITE_DATASET_PORT``        ``port``
``IGNITE_DATASET_PART``        ``part`` (one partition, ``-1`` for all)
``IGNITE_DATASET_PARTS``       a list of partitions, e.g. ``0,1,5-9``
``IGNITE_DATASET_LOCAL``       ``local`` (``1/true/yes`` or ``0/false/no``)
``IGNITE_DATASET_PAGE_SIZE``   ``page_size``
``IGNITE_DATASET_USERNAME``    ``username``
``IGNITE_DATASET_PASSWORD``    ``password``
``IGNITE_DATASET_CERTFILE``    ``certfile``
``IGNITE_DATASET_KEYFILE``     ``keyfile``
``IGNITE_DATASET_CERT_PASSWORD`` ``cert_password``
``IGNITE_DATASET_CAFILE``      ``cafile``
=============================  ==============================================

An environment value wins over the argument, as in the original TensorFlow
contrib dataset.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError

if TYPE_CHECKING:
    from ..client.options import ConnectionOptions

__all__ = ["apply_env_overrides", "connection_options", "parse_partition_list", "PREFIX"]

PREFIX = "IGNITE_DATASET_"

_STRINGS = ("host", "username", "password", "certfile", "keyfile", "cert_password", "cafile")
_INTS = ("port", "part", "page_size")
#: The connection arguments the variables override.
_CONNECTION = ("host", "port", "username", "password", "cafile", "certfile", "keyfile", "cert_password")


def _parse_bool(name: str, value: str) -> bool:
    v = value.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off", ""):
        return False
    raise ConfigurationError(f"{name}={value!r} is not a boolean; use 1/0, true/false or yes/no")


def parse_partition_list(text: str, *, name: str = PREFIX + "PARTS") -> tuple[int, ...]:
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


def apply_env_overrides(params: dict[str, Any], environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Return ``params`` with every ``IGNITE_DATASET_*`` variable that is set applied."""
    env = os.environ if environ is None else environ
    out = dict(params)
    for key in _STRINGS:
        value = env.get(PREFIX + key.upper())
        if value is not None:
            out[key] = value
    for key in _INTS:
        name = PREFIX + key.upper()
        value = env.get(name)
        if value is not None:
            try:
                out[key] = int(value)
            except ValueError:
                raise ConfigurationError(f"{name}={value!r} is not an integer") from None
    local = env.get(PREFIX + "LOCAL")
    if local is not None:
        out["local"] = _parse_bool(PREFIX + "LOCAL", local)
    parts = env.get(PREFIX + "PARTS")
    if parts is not None:
        out["parts"] = parse_partition_list(parts)
    return out


def connection_options(params: Mapping[str, Any], **options: Any) -> "ConnectionOptions":
    """The :class:`~tensorflow_ignite.client.ConnectionOptions` of ``params`` as
    :func:`apply_env_overrides` returned them (address, credentials, TLS files), plus
    ``options`` (settings no variable overrides: the TLS opt-outs, ``timeout``)."""
    from ..client.options import ConnectionOptions

    given = {key: params[key] for key in _CONNECTION}
    return ConnectionOptions(**{**given, "port": int(given["port"])}, **options)
