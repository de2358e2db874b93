"""How datasets reach a cluster: :class:`ConnectionOptions`, and one shared client per options.

Datasets built with the same options share one :class:`IgniteClient` (and so
one connection per node) per process, however many datasets a program builds;
a dataset rebuilt from its description (:mod:`.portable`) in the process that
built it finds that client here.
"""

from __future__ import annotations

import atexit
import threading
from dataclasses import dataclass

from ..client import IgniteClient
from ..protocol.endpoint import DEFAULT_HOST, DEFAULT_PORT

__all__ = ["ConnectionOptions", "close_shared_clients", "pooled_options"]


@dataclass(frozen=True)
class ConnectionOptions:
    """Where and how to connect; secrets are kept out of ``repr``.

    ``fallbacks`` are more ``host:port`` endpoints of the same cluster, tried
    when ``host:port`` does not answer.
    """

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    username: str | None = None
    password: str | None = None
    cafile: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    cert_password: str | None = None
    insecure_skip_verify: bool = False
    server_hostname: str | None = None
    insecure_skip_hostname_verification: bool = False
    timeout: float = 30.0
    fallbacks: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return (f"ConnectionOptions(host={self.host!r}, port={self.port}, username={self.username!r}, "
                f"tls={self.uses_tls})")

    @property
    def uses_tls(self) -> bool:
        """True when any TLS option is set (TLS is then on for every node)."""
        return bool(self.cafile or self.certfile or self.insecure_skip_verify or self.server_hostname
                    or self.insecure_skip_hostname_verification)

    def connect(self) -> IgniteClient:
        """A client for these options, shared by every dataset of this process that uses them."""
        with _POOL_LOCK:
            client = _POOL.get(self)
            if client is None or client.closed:
                client = IgniteClient(
                    [f"{self.host}:{self.port}", *self.fallbacks], username=self.username,
                    password=self.password, cafile=self.cafile, certfile=self.certfile, keyfile=self.keyfile,
                    cert_password=self.cert_password, insecure_skip_verify=self.insecure_skip_verify,
                    server_hostname=self.server_hostname,
                    insecure_skip_hostname_verification=self.insecure_skip_hostname_verification,
                    timeout=self.timeout,
                )
                _POOL[self] = client
            return client


_POOL: dict[ConnectionOptions, IgniteClient] = {}
_POOL_LOCK = threading.Lock()


def pooled_options() -> list[ConnectionOptions]:
    """The options of every shared client this process holds now."""
    with _POOL_LOCK:
        return [o for o, c in _POOL.items() if not c.closed]


def close_shared_clients() -> None:
    """Close the clients shared by datasets (they reconnect on next use)."""
    with _POOL_LOCK:
        clients = list(_POOL.values())
        _POOL.clear()
    for c in clients:
        c.close()


atexit.register(close_shared_clients)
