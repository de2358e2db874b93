"""Connections described without secrets, and opened again from the description in another process.

A dataset that leaves its process (:mod:`tensorflow_ignite.data.portable`: tf.data service workers,
a process restoring a checkpoint) carries a JSON *description*; its ``connection`` part is made and
read here, for either Ignite generation: the endpoints, the user name, whether a password, a client
certificate and a key password were used (booleans), the CA file, the TLS options and the timeouts,
and a credentials-source name -- never a password, a key, a key file or a key password.  The process
that opens it supplies those from a source registered under that name (:func:`register_credentials`)
or its ``IGNITE_DATASET_*`` variables (see :mod:`tensorflow_ignite.data.portable`).
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError
from ..protocol.endpoint import format_endpoint
from .env import DATASET_PREFIX, connection_env

if TYPE_CHECKING:
    from .client import IgniteClient
    from .options import ConnectionOptions

__all__ = [
    "DESCRIPTION_VERSION",
    "CREDENTIAL_FIELDS",
    "register_credentials",
    "check_name",
    "describe_connection",
    "describe_options",
    "dump_description",
    "connect_described",
    "described_options",
]

DESCRIPTION_VERSION = 1
#: Most endpoints a description lists (the first is the address the dataset was built with).
_MAX_ENDPOINTS = 16
CREDENTIAL_FIELDS = ("username", "password", "cafile", "certfile", "keyfile", "cert_password")

_providers: dict[str, Callable[[], Mapping[str, Any]]] = {}
_lock = threading.Lock()


def register_credentials(name: str, provider: Callable[[], Mapping[str, Any]] | None) -> None:
    """Keep ``provider`` (or remove it: ``None``) as the credentials source named ``name``.

    What a provider returns and when it is asked: the public
    :func:`tensorflow_ignite.data.register_credentials`, which calls this.
    """
    check_name(name)
    with _lock:
        if provider is None:
            _providers.pop(name, None)
        else:
            _providers[name] = provider


def check_name(name: str) -> None:
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", name):
        raise ConfigurationError(
            f"credentials source name {name!r}: use letters, digits and '_' "
            "(it becomes part of environment variable names)"
        )


def describe_connection(client: IgniteClient, credentials: str | None) -> dict[str, Any]:
    endpoints = [format_endpoint(h, p) for h, p in client.seeds]
    try:
        for addresses in client.node_endpoints().values():
            if addresses:
                text = format_endpoint(*addresses[0])
                if text not in endpoints:
                    endpoints.append(text)
    except Exception:  # noqa: BLE001 - the seeds alone still describe the cluster
        pass
    return describe_options(client.options, endpoints, credentials)


def describe_options(o: ConnectionOptions, endpoints: Sequence[str], credentials: str | None) -> dict[str, Any]:
    endpoints = list(endpoints)
    if credentials is not None:
        check_name(credentials)
    return {
        "endpoints": endpoints[:_MAX_ENDPOINTS],
        "username": o.username,
        "password": o.password is not None,
        "tls": o.uses_tls,
        "cafile": o.cafile,
        "client_cert": bool(o.certfile),
        "key_password": bool(o.cert_password),
        "server_hostname": o.server_hostname,
        "insecure_skip_verify": o.insecure_skip_verify,
        "insecure_skip_hostname_verification": o.insecure_skip_hostname_verification,
        "timeout": o.timeout,
        "connect_timeout": o.connect_timeout,
        "idle_timeout": o.idle_timeout,
        "credentials": credentials,
    }


def _split_endpoint(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host.strip("[]"), int(port)


def _env_name(source: str | None, field: str) -> str:
    return f"{DATASET_PREFIX}{source.upper()}_{field.upper()}" if source else f"{DATASET_PREFIX}{field.upper()}"


def _credentials(conn: Mapping[str, Any]) -> dict[str, Any]:
    """Credential settings of this process for a described connection (see the module docstring)."""
    source = conn.get("credentials")
    if source:
        with _lock:
            provider = _providers.get(source)
        if provider is not None:
            given = dict(provider())
            unknown = set(given) - set(CREDENTIAL_FIELDS)
            if unknown:
                raise ConfigurationError(
                    f"credentials source {source!r} returned unknown settings "
                    f"{sorted(unknown)}; expected some of {list(CREDENTIAL_FIELDS)}"
                )
            return given
        env = connection_env(prefixes=(_env_name(source, ""),))
    else:
        env = connection_env()
    return {f: env[f] for f in CREDENTIAL_FIELDS if f in env}


def connect_described(conn: Mapping[str, Any], what: str) -> IgniteClient:
    from .pool import pooled_options

    host, port, public = _public_settings(conn)
    # The process that built the dataset (or any process that built one like it) already
    # holds a client with the credentials: use it.
    for options in pooled_options():
        if (
            (options.host, options.port) == (host, port)
            and options.username == public["username"]
            and options.cafile == public["cafile"]
            and options.server_hostname == public["server_hostname"]
            and (options.password is not None) == conn["password"]
            and bool(options.certfile) == conn["client_cert"]
        ):
            return options.connect()
    return described_options(conn, what).connect()


def _public_settings(conn: Mapping[str, Any]) -> tuple[str, int, dict[str, Any]]:
    """The first endpoint and the settings of a described connection that are not credentials."""
    endpoints = list(conn["endpoints"])
    host, port = _split_endpoint(endpoints[0])
    # The connection variables of this process, as every feature reads them (credentials
    # apart: those come from _credentials, a named source's before the plain variables).
    env = {k: v for k, v in connection_env().items() if k not in CREDENTIAL_FIELDS}
    host, port = env.pop("host", host), env.pop("port", port)
    public = dict(
        username=conn["username"],
        cafile=conn["cafile"],
        server_hostname=conn["server_hostname"],
        insecure_skip_verify=conn["insecure_skip_verify"],
        insecure_skip_hostname_verification=conn["insecure_skip_hostname_verification"],
        timeout=float(conn["timeout"]),
        # Descriptions made before these options existed lack them: the defaults apply.
        **{k: float(conn[k]) for k in ("connect_timeout", "idle_timeout") if k in conn},
    )
    public.update(env)
    return host, port, public


def described_options(conn: Mapping[str, Any], what: str) -> ConnectionOptions:
    """The options of a described connection, with this process's credentials (see the module docstring)."""
    from .options import ConnectionOptions

    endpoints = list(conn["endpoints"])
    host, port, public = _public_settings(conn)
    given = _credentials(conn)
    source = conn.get("credentials")
    username = given.get("username", conn["username"])
    password = given.get("password")
    missing: list[str] = []
    if conn["password"] and given.get("password") is None:
        missing.append(_env_name(source, "password") + f" (the password of Ignite user {username!r})")
    if conn["client_cert"] and not (given.get("certfile") and given.get("keyfile")):
        missing.append(
            f"{_env_name(source, 'certfile')} and {_env_name(source, 'keyfile')} (the client "
            "certificate and its key, PEM files on this machine)"
        )
    if conn["key_password"] and given.get("cert_password") is None:
        missing.append(_env_name(source, "cert_password") + " (the password of the client key)")
    if missing:
        how = f" or register a provider: tensorflow_ignite.data.register_credentials({source!r}, ...)" if source else ""
        raise ConfigurationError(
            f"{what} needs credentials in this process (pid {os.getpid()}), which its description does not "
            f"carry: set {'; '.join(missing)}{how}"
        )
    if username is None or password is None:
        username = password = None
    return ConnectionOptions(
        **{
            **public,
            "host": host,
            "port": port,
            "fallbacks": tuple(endpoints[1:]),
            "username": username,
            "password": password,
            "cafile": given.get("cafile", conn["cafile"]),
            "certfile": given.get("certfile"),
            "keyfile": given.get("keyfile"),
            "cert_password": given.get("cert_password"),
        }
    )


def dump_description(d: Mapping[str, Any]) -> str:
    """A description as the op carries it: JSON with this version's ``v``."""
    return json.dumps({"v": DESCRIPTION_VERSION, **d}, separators=(",", ":"), sort_keys=True)
