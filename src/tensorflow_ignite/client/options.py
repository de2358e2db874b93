"""How to reach a cluster: :class:`ConnectionOptions`, the one connection-options type.

The dataset, the writer, ``ignite://`` (its settings hold one), the launcher and
the CLI describe a cluster with this type, and :func:`.pool.shared_client`
keeps one :class:`~.client.IgniteClient` per options in a process, so a
program that reads a cache, loads data and checkpoints into ``ignite://`` on
the same cluster opens one connection per node, not one per feature.

TLS is on when any TLS option is set (``cafile``, ``certfile``,
``server_hostname``, or one of the ``insecure_*`` opt-outs); the server's
certificate chain and host name are then verified unless an ``insecure_*``
option says otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..protocol.endpoint import DEFAULT_HOST, DEFAULT_PORT

if TYPE_CHECKING:
    from .client import IgniteClient

__all__ = ["ConnectionOptions"]


@dataclass(frozen=True)
class ConnectionOptions:
    """Where and how to connect; secrets are kept out of ``repr``.

    ``fallbacks`` are more ``host:port`` endpoints of the same cluster, tried
    when ``host:port`` does not answer.
    """

    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    cafile: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    cert_password: str | None = field(default=None, repr=False)
    insecure_skip_verify: bool = False
    server_hostname: str | None = None
    insecure_skip_hostname_verification: bool = False
    timeout: float = 30.0
    fallbacks: tuple[str, ...] = ()

    @classmethod
    def from_address(cls, address: str | Sequence[str], port: int = DEFAULT_PORT, **options: Any) -> "ConnectionOptions":
        """Options for ``"host"``, ``"host:port"`` or ``"h1:p1,h2:p2"`` (the first is dialled first)."""
        from .client import parse_addresses

        endpoints = parse_addresses(address, default_port=port)
        (host, first), rest = endpoints[0], endpoints[1:]
        return cls(host=host, port=first, fallbacks=tuple(_join(h, p) for h, p in rest), **options)

    def __repr__(self) -> str:
        return (f"ConnectionOptions(host={self.host!r}, port={self.port}, username={self.username!r}, "
                f"tls={self.uses_tls})")

    @property
    def uses_tls(self) -> bool:
        """True when any TLS option is set (TLS is then on for every node)."""
        return bool(self.cafile or self.certfile or self.insecure_skip_verify or self.server_hostname
                    or self.insecure_skip_hostname_verification)

    @property
    def endpoints(self) -> list[str]:
        """Every endpoint, ``host:port`` first."""
        return [_join(self.host, self.port), *self.fallbacks]

    def client_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of :class:`~.client.IgniteClient` for these options."""
        return dict(username=self.username, password=self.password, cafile=self.cafile, certfile=self.certfile,
                    keyfile=self.keyfile, cert_password=self.cert_password,
                    insecure_skip_verify=self.insecure_skip_verify, server_hostname=self.server_hostname,
                    insecure_skip_hostname_verification=self.insecure_skip_hostname_verification,
                    timeout=self.timeout)

    def open(self) -> "IgniteClient":
        """A new client of its own (the caller closes it)."""
        from .client import IgniteClient

        return IgniteClient(self.endpoints, **self.client_kwargs())

    def connect(self) -> "IgniteClient":
        """The client this process shares for these options (see :mod:`.pool`); do not close it."""
        from .pool import shared_client

        return shared_client(self)


def _join(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
