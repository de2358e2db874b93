"""How to reach a cluster: :class:`ConnectionOptions`, the one connection-options type.

The dataset, the writer, ``ignite://`` (its settings hold one), the launcher and
the CLI describe a cluster with this type, and :func:`.pool.shared_client`
keeps one :class:`~.client.IgniteClient` per options in a process, so a
program that reads a cache, loads data and checkpoints into ``ignite://`` on
the same cluster opens one connection per node, not one per feature.

It is also the one record of these settings: :class:`~.connection.Connection`
(through :class:`~.connection.ConnectionSettings`), :func:`~.connection.probe`,
``ignite://``'s :class:`~tensorflow_ignite.fs.config.FsSettings` and the TLS
context (:func:`.tls.ssl_context`) all take one, and
:meth:`ConnectionOptions.from_env` is the one reader of the
``IGNITE_DATASET_*`` / ``IGNITE_FS_*`` variables (:mod:`.env`).

TLS is on when any TLS option is set (``cafile``, ``certfile``,
``server_hostname``, or one of the ``insecure_*`` opt-outs) -- :attr:`uses_tls`,
the one rule; the server's certificate chain and host name are then verified
unless an ``insecure_*`` option says otherwise.

Every wait on a node is bounded by one of three timeouts (seconds):

=====================  =======  ====================================================
``connect_timeout``    5        dialling a node (TCP connect, TLS, handshake answer)
``idle_timeout``       8        silence while an answer is awaited: after half of it
                                the client sends a heartbeat; a node that has said
                                nothing -- not even that heartbeat's answer -- for
                                ``idle_timeout`` is abandoned (its connection closed,
                                the request failed over or raised)
``timeout``            30       one request's answer from a node that is alive
                                (answering heartbeats) but slow; also how long a
                                partition scan keeps failing over to other nodes
=====================  =======  ====================================================

The defaults fit Ignite's default ``failureDetectionTimeout`` (10 s): a node cut
off or frozen is abandoned before the cluster has dropped it, so a read goes on
elsewhere within ``failureDetectionTimeout`` plus a little (RELIABILITY.md,
"Network faults").  Clusters with a longer ``failureDetectionTimeout`` need no
change; a much shorter ``idle_timeout`` only adds heartbeats.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, TypedDict

from ..errors import ConfigurationError
from ..protocol.endpoint import DEFAULT_HOST, DEFAULT_PORT, format_endpoint
from .env import DATASET_PREFIX, connection_env

if TYPE_CHECKING:
    import ssl

    from .client import Address, IgniteClient

__all__ = ["ConnectionKeywords", "ConnectionOptions"]

#: The fields that say where the cluster is, rather than how to talk to it.
_ENDPOINT = ("host", "port", "fallbacks")


class ConnectionKeywords(TypedDict, total=False):
    """How to talk to the cluster, as keywords: what every entry point takes besides where the
    cluster is (``IgniteClient``, ``IgniteDataset`` and ``from_sql``, ``write``, ``predict``).

    They are :class:`ConnectionOptions`' fields but its endpoint, with the same names and
    defaults (None: the default).  Credentials: ``username`` and ``password``, both or
    neither.  TLS: ``cafile``, ``certfile``, ``keyfile``, ``cert_password``,
    ``server_hostname`` and the two ``insecure_*`` opt-outs (any of them turns TLS on).
    Deadlines in seconds: ``timeout`` (30), ``connect_timeout`` (5), ``idle_timeout`` (8).
    """

    username: str | None
    password: str | None
    cafile: str | None
    certfile: str | None
    keyfile: str | None
    cert_password: str | None
    insecure_skip_verify: bool
    server_hostname: str | None
    insecure_skip_hostname_verification: bool
    timeout: float | None
    connect_timeout: float | None
    idle_timeout: float | None


@dataclass(frozen=True)
class ConnectionOptions:
    """Where and how to connect; secrets are kept out of ``repr``.

    ``fallbacks`` are more ``host:port`` endpoints of the same cluster, tried
    when ``host:port`` does not answer.  TLS: ``cafile`` -- PEM bundle of the
    CAs trusted for the nodes' certificates (the system store when omitted);
    ``certfile``/``keyfile``/``cert_password`` -- a client certificate and its
    (optionally encrypted) key; ``server_hostname`` -- the name the
    certificates are checked against (default: the host dialled);
    ``insecure_skip_hostname_verification`` / ``insecure_skip_verify`` -- the
    warned-about opt-outs (:mod:`.tls`).  ``connect_timeout``, ``idle_timeout`` and
    ``timeout`` bound every wait on a node (see the module docstring for what each bounds).
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
    connect_timeout: float = 5.0
    idle_timeout: float = 8.0

    def __post_init__(self) -> None:
        for name in ("timeout", "connect_timeout", "idle_timeout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ConfigurationError(f"{name}={value!r}: a timeout is a positive number of seconds")

    @classmethod
    def from_address(
        cls, address: "str | Address | Sequence[str | Address]", port: int = DEFAULT_PORT, **options: Any
    ) -> "ConnectionOptions":
        """Options for ``"host"``, ``"host:port"`` or ``"h1:p1,h2:p2"`` (the first is dialled first; also
        ``(host, port)`` tuples or a list, as :class:`~.client.IgniteClient` takes them)."""
        from .client import parse_addresses

        endpoints = parse_addresses(address, default_port=port)
        (host, first), rest = endpoints[0], endpoints[1:]
        return cls(host=host, port=first, fallbacks=tuple(format_endpoint(h, p) for h, p in rest), **options)

    @classmethod
    def from_env(
        cls, environ: Mapping[str, str] | None = None, *, prefixes: Sequence[str] = (DATASET_PREFIX,), **given: Any
    ) -> "ConnectionOptions":
        """Options from ``given`` (fields) with every ``IGNITE_DATASET_*`` variable that is set applied over
        them (:mod:`.env`; ``prefixes`` name more families, the first that sets a field wins).

        The variable wins over the argument, as in TensorFlow's contrib dataset: a
        worker's environment points every feature at its own node.
        """
        return cls(**given).with_env(environ, prefixes=prefixes)

    def with_env(
        self, environ: Mapping[str, str] | None = None, *, prefixes: Sequence[str] = (DATASET_PREFIX,)
    ) -> "ConnectionOptions":
        """These options with every ``IGNITE_DATASET_*`` variable that is set applied (see :meth:`from_env`)."""
        env = connection_env(environ, prefixes)
        return replace(self, **env) if env else self

    def __repr__(self) -> str:
        return (
            f"ConnectionOptions(host={self.host!r}, port={self.port}, username={self.username!r}, tls={self.uses_tls})"
        )

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The names of the fields (what ``fs.configure`` accepts, but ``fallbacks``)."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def settings_in(cls, keywords: Mapping[str, Any]) -> dict[str, Any]:
        """The fields of this type but the endpoint (``host``, ``port``, ``fallbacks``) among ``keywords``.

        ``keywords`` is what a function that takes the connection settings as keyword
        arguments was given (its ``locals()``, called before it binds other names); a
        setting given as None is left out, so it takes the field's default.  The public
        functions spell the settings out in their signatures (typed, documented); this is
        how each of them hands them on, the one list being this type's fields.
        """
        return {
            name: keywords[name]
            for name in cls.field_names()
            if name not in _ENDPOINT and keywords.get(name) is not None
        }

    @classmethod
    def settings_given(cls, what: str, connection: Mapping[str, Any]) -> dict[str, Any]:
        """The settings among ``connection`` (the :class:`ConnectionKeywords` an entry point named
        ``what`` was given), None left out so that it takes the default.

        Raises TypeError for a keyword that is not a setting, as Python does for a
        function's unknown keyword (naming the closest setting), and ConfigurationError for
        a username without a password or the other way round.
        """
        known = ConnectionKeywords.__annotations__
        for name in connection:
            if name not in known:
                close = difflib.get_close_matches(name, list(known), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else f"; the connection keywords are {', '.join(known)}"
                raise TypeError(f"{what}() got an unexpected keyword argument {name!r}{hint}")
        if (connection.get("username") is None) != (connection.get("password") is None):
            raise ConfigurationError(f"{what}: username and password go together: give both or neither")
        return {name: value for name, value in connection.items() if value is not None}

    @property
    def uses_tls(self) -> bool:
        """True when any TLS option is set (TLS is then on for every node)."""
        return bool(
            self.cafile
            or self.certfile
            or self.insecure_skip_verify
            or self.server_hostname
            or self.insecure_skip_hostname_verification
        )

    def tls_hostname(self, host: str) -> str:
        """The name a node's certificate is checked against when dialling ``host``."""
        return self.server_hostname or host

    def ssl_context(self) -> "ssl.SSLContext":
        """The client-side TLS context of these options (:func:`.tls.ssl_context`)."""
        from .tls import ssl_context

        return ssl_context(self)

    @property
    def endpoints(self) -> list[str]:
        """Every endpoint, ``host:port`` first."""
        return [format_endpoint(self.host, self.port), *self.fallbacks]

    def open(self) -> "IgniteClient":
        """A new client of its own (the caller closes it)."""
        from .client import IgniteClient

        return IgniteClient.from_options(self)

    def connect(self) -> "IgniteClient":
        """The client this process shares for these options (see :mod:`.pool`); do not close it."""
        from .pool import shared_client

        return shared_client(self)
