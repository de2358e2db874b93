"""Ignite services through the thin client: one call of a deployed service's method.

The tensorflow-ignite node module deploys one service, :data:`MODULE_SERVICE` (a cluster
singleton): the launcher's supervisor (:class:`tensorflow_ignite.launcher.jobs.JobClient`)
and the capacity guard's region reports (:mod:`tensorflow_ignite.capacity`) both call it
through :func:`invoke_service`, so neither feature needs the other's package.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..protocol import requests, responses
from ..protocol.codes import Op

if TYPE_CHECKING:
    from .client import IgniteClient

__all__ = ["MODULE_SERVICE", "invoke_service", "plain"]

#: The service the tensorflow-ignite module deploys on every cluster that carries it (``NodeLauncher``).
MODULE_SERVICE = "tf-ignite-launcher"


def plain(value: Any) -> Any:
    """Java maps/collections decoded by the client -> plain ``dict``/``list`` (recursively)."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def invoke_service(client: IgniteClient, service: str, method: str, args: Sequence[Any] = ()) -> Any:
    """``service.method(*args)`` on the cluster, its answer as plain Python values.

    Not retried (a service method need not be idempotent); a failure is the server's
    :class:`~tensorflow_ignite.errors.ServerError`, whose text says "Service not found"
    when no node has deployed ``service``.
    """
    features = client.default_connection.features
    body = client.request(
        lambda rid: requests.service_invoke(rid, service, method, args, features=features),
        Op.SERVICE_INVOKE,
        retry=False,
    )
    return plain(responses.decode_object(body, client.decoder()))
