"""Which Ignite generation an address speaks: found at the handshake, decided in this one place.

Both generations share one connection-options type
(:class:`~tensorflow_ignite.client.options.ConnectionOptions`: endpoints, TLS,
credentials, deadlines).  A generation is either named (``"2"``, ``"3"``) or,
with ``"auto"``, found by the protocol: an Ignite 2 node answers the
thin-client handshake; an Ignite 3 node drops it at once (it expects ``IGNI``;
over TLS the Ignite 2 client sees the TLS connection closed), and the Ignite 3
handshake is tried next.  Wrong credentials or TLS settings are reported as
they are, not taken for the other generation.

A client knows the generation whose handshake it completed:
:attr:`IgniteClient.generation <tensorflow_ignite.client.client.IgniteClient.generation>`
is 2, :attr:`Ignite3Client.generation <tensorflow_ignite.ignite3.client.Ignite3Client.generation>`
3 -- :func:`generation_of` reads that, never a type's name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import AuthenticationError, ConfigurationError, HandshakeError, IgniteConnectionError, TLSError

if TYPE_CHECKING:
    from .client.client import IgniteClient
    from .client.options import ConnectionOptions
    from .ignite3.client import Ignite3Client

__all__ = ["GENERATIONS", "connect_client", "generation_of", "parse_generation"]

#: What a ``generation`` setting accepts.
GENERATIONS = ("auto", "2", "3")


def parse_generation(value: object, name: str = "generation") -> str:
    """``"auto"``, ``"2"`` or ``"3"`` from a setting (an int or a string)."""
    text = str(value).strip().lower()
    if text not in GENERATIONS:
        raise ConfigurationError(
            f"{name}={value!r}: expected one of {', '.join(GENERATIONS)} (the Ignite "
            "generation of the cluster; auto asks the node at the handshake)"
        )
    return text


def generation_of(client: Any) -> int:
    """The Ignite generation (2 or 3) whose handshake ``client`` completed."""
    generation = getattr(client, "generation", None)
    if generation not in (2, 3):
        raise TypeError(f"{type(client).__name__} is not a client of an Ignite cluster")
    return int(generation)


def _ignite3_client(options: "ConnectionOptions") -> "Ignite3Client":
    from .ignite3 import Ignite3Client  # needs msgpack: the ignite3 extra

    client = Ignite3Client(options)
    client.connection()  # the handshake now: errors surface here, typed
    return client


def connect_client(options: "ConnectionOptions", generation: str = "auto") -> "IgniteClient | Ignite3Client":
    """A client of the cluster at ``options``: the process's shared ``IgniteClient`` on Ignite 2
    (do not close it), a new ``Ignite3Client`` on Ignite 3 (the caller closes it).

    ``generation``: ``"2"``, ``"3"``, or ``"auto"`` -- the one whose handshake the endpoint answers.
    """
    generation = parse_generation(generation)
    if generation == "2":
        return options.connect()
    if generation == "3":
        return _ignite3_client(options)
    try:
        return options.connect()
    except AuthenticationError:
        raise
    except (HandshakeError, TLSError) as exc2:
        # An Ignite 3 node drops the Ignite 2 handshake: over TLS that looks like a TLS failure.
        try:
            return _ignite3_client(options)
        except AuthenticationError:
            raise
        except HandshakeError as exc3:
            if isinstance(exc2, TLSError):
                raise exc2 from None  # not Ignite 3 either: the TLS problem is the likelier story
            raise HandshakeError(
                f"{options.endpoints[0]} answered neither the Ignite 2 thin-client handshake ({exc2}) nor the "
                f"Ignite 3 one ({exc3}); check the port and the TLS settings, or name the generation "
                "(IGNITE_FS_GENERATION=2 or 3)",
                address=options.endpoints[0],
            ) from None
        except IgniteConnectionError:
            raise exc2 from None
