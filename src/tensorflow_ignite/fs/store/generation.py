"""Which Ignite generation an ``ignite://`` endpoint is, and the store's tables on it.

One connection-options type serves both generations
(:class:`~tensorflow_ignite.client.options.ConnectionOptions`: endpoints,
TLS, credentials); the generation is named in the settings
(``IGNITE_FS_GENERATION=2|3``) or, with ``auto`` (the default), found by the
handshake: an Ignite 2 node answers the thin-client handshake, an Ignite 3
node drops it at once (it expects ``IGNI``; over TLS the Ignite 2 client sees
the TLS connection closed), and the Ignite 3 handshake is tried next.  Wrong credentials or TLS settings are reported as they are, not
taken for the other generation.
"""

from __future__ import annotations

import collections
from typing import TYPE_CHECKING, Any

from ...errors import AuthenticationError, HandshakeError, IgniteConnectionError, TLSError
from ..config import parse_generation

if TYPE_CHECKING:
    from ...client.options import ConnectionOptions
    from .backend import StoreTables

__all__ = ["connect_client", "is_ignite3", "open_tables"]


def _ignite3_client(options: "ConnectionOptions") -> Any:
    from ...ignite3 import Ignite3Client  # needs msgpack: the ignite3 extra

    client = Ignite3Client(options)
    client.connection()  # the handshake now: errors surface here, typed
    return client


def connect_client(options: "ConnectionOptions", generation: str = "auto") -> Any:
    """A client of the cluster at ``options``: the process's shared ``IgniteClient`` on Ignite 2
    (do not close it), a new ``Ignite3Client`` on Ignite 3 (the caller closes it)."""
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


def is_ignite3(client: Any) -> bool:
    """Whether ``client`` is an ``Ignite3Client``."""
    return type(client).__name__ == "Ignite3Client"


def open_tables(
    client: Any, prefix: str, backups: int, block_size: int, stats: collections.Counter[str], *, storage: str = ""
) -> "StoreTables":
    """The store's tables on ``client``'s cluster (created if missing), in ``storage``: the storage
    profile (Ignite 3) or data region (Ignite 2) named, or the cluster's default."""
    if is_ignite3(client):
        from .ignite3 import Ignite3Tables

        return Ignite3Tables(client, prefix, backups, block_size, stats, storage=storage)
    from .ignite2 import Ignite2Tables

    return Ignite2Tables(client, prefix, backups, stats, storage=storage)
