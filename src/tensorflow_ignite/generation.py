"""Which Ignite generation an address speaks: found at the handshake, decided in this one place.

Both generations share one connection-options type
(:class:`~tensorflow_ignite.client.options.ConnectionOptions`: endpoints, TLS,
credentials, deadlines).  A generation is either named (``"2"``, ``"3"``) or,
with ``"auto"``, found by the protocol: an Ignite 2 node answers the
thin-client handshake; an Ignite 3 node drops it at once (it expects ``IGNI``;
over TLS the Ignite 2 client sees the TLS connection closed), and the Ignite 3
handshake is tried next.  Wrong credentials or TLS settings are reported as
they are, not taken for the other generation.

The generation found for an address is remembered for the process
(:func:`generation_at`), so the features that take either generation -- ``IgniteDataset``,
``write``, ``predict`` -- ask the handshake once per address: on Ignite 2 the handshake is
the one the shared client of :mod:`tensorflow_ignite.client.pool` makes anyway (no
connection of its own), on Ignite 3 the Ignite 2 attempt is not repeated.

A client knows the generation whose handshake it completed:
:attr:`IgniteClient.generation <tensorflow_ignite.client.client.IgniteClient.generation>`
is 2, :attr:`Ignite3Client.generation <tensorflow_ignite.ignite3.client.Ignite3Client.generation>`
3 -- :func:`generation_of` reads that, never a type's name.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .errors import AuthenticationError, ConfigurationError, HandshakeError, IgniteConnectionError, TLSError

if TYPE_CHECKING:
    from .client.client import IgniteClient
    from .client.options import ConnectionOptions
    from .ignite3.client import Ignite3Client

__all__ = [
    "GENERATIONS",
    "connect_client",
    "forget_generations",
    "generation_at",
    "generation_of",
    "ignite3_of",
    "on_ignite3",
    "parse_generation",
]

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


#: The generation each address answered with in this process: endpoints -> 2 or 3.
_FOUND: dict[tuple[str, ...], int] = {}
_FOUND_LOCK = threading.Lock()


def _address(options: "ConnectionOptions") -> tuple[str, ...]:
    return tuple(options.endpoints)


def _remember(options: "ConnectionOptions", client: Any) -> None:
    with _FOUND_LOCK:
        _FOUND[_address(options)] = generation_of(client)


def forget_generations() -> None:
    """Forget the generations found so far (an address may now be served by the other generation)."""
    with _FOUND_LOCK:
        _FOUND.clear()


def generation_at(options: "ConnectionOptions") -> int:
    """The Ignite generation (2 or 3) the cluster at ``options`` speaks, found at its handshake once per
    address and process.

    On Ignite 2 the handshake is the shared client's (:meth:`ConnectionOptions.connect
    <tensorflow_ignite.client.options.ConnectionOptions.connect>`): the caller's next ``connect()`` gets
    that client, no further connection.  On Ignite 3 the client made for the handshake is closed, and
    the next call for the address answers without a connection.
    """
    with _FOUND_LOCK:
        known = _FOUND.get(_address(options))
    if known == 3:
        return 3  # no connection: the Ignite 3 reads and writes make their own
    client = connect_client(options)  # Ignite 2: the shared client, checked as every connect() does
    found = generation_of(client)
    if found == 3:
        client.close()
    return found


def on_ignite3(client: Any, options: "ConnectionOptions | None") -> bool:
    """Whether a feature's call given ``client`` (an ``IgniteClient`` or ``Ignite3Client``), or without
    one the connection ``options``, reaches an Ignite 3 cluster: the one test each feature makes
    before taking its Ignite 3 form."""
    if client is not None:
        return getattr(client, "generation", 2) == 3
    assert options is not None
    return generation_at(options) == 3


def ignite3_of(client: Any) -> Any:
    """The :class:`~tensorflow_ignite.ignite3.client.Ignite3Client` a feature's Ignite 3 form runs with when
    given ``client``: ``client`` itself, or the one an ``IgniteClient`` of an Ignite 3 node works through
    (:class:`~tensorflow_ignite.either.ignite3_form.IgniteClient3`); None stays None."""
    return getattr(client, "ignite3", client)


def _ignite3_client(options: "ConnectionOptions") -> "Ignite3Client":
    from .ignite3 import Ignite3Client  # needs msgpack: the ignite3 extra

    client = Ignite3Client(options)
    client.connection()  # the handshake now: errors surface here, typed
    return client


def connect_client(
    options: "ConnectionOptions",
    generation: str = "auto",
    *,
    ignite2: "Callable[[], IgniteClient] | None" = None,
) -> "IgniteClient | Ignite3Client":
    """A client of the cluster at ``options``: the process's shared ``IgniteClient`` on Ignite 2
    (do not close it), a new ``Ignite3Client`` on Ignite 3 (the caller closes it).

    ``generation``: ``"2"``, ``"3"``, or ``"auto"`` -- the one whose handshake the endpoint answers.
    ``ignite2`` makes the Ignite 2 client instead of taking the shared one (``IgniteClient(address)``
    makes a client of its own this way); its handshake is the Ignite 2 attempt.
    """
    generation = parse_generation(generation)
    connect2: "Callable[[], IgniteClient]" = ignite2 if ignite2 is not None else options.connect
    if generation == "auto":
        with _FOUND_LOCK:
            known = _FOUND.get(_address(options))
        if known is not None:  # found before: no Ignite 2 attempt at an Ignite 3 node again
            try:
                return connect_client(options, str(known), ignite2=ignite2)
            except AuthenticationError:
                raise
            except (HandshakeError, TLSError):
                # The address now speaks the other generation (a cluster replaced on its port): ask again.
                with _FOUND_LOCK:
                    _FOUND.pop(_address(options), None)
    if generation == "2":
        return connect2()
    if generation == "3":
        return _ignite3_client(options)
    try:
        client: IgniteClient | Ignite3Client = connect2()
        _remember(options, client)
        return client
    except AuthenticationError:
        raise
    except (HandshakeError, TLSError) as exc2:
        # An Ignite 3 node drops the Ignite 2 handshake: over TLS that looks like a TLS failure.
        try:
            client = _ignite3_client(options)
            _remember(options, client)
            return client
        except AuthenticationError:
            raise
        except HandshakeError as exc3:
            if isinstance(exc2, TLSError):
                raise exc2 from None  # not Ignite 3 either: the TLS problem is the likelier story
            raise HandshakeError(
                f"{options.endpoints[0]} answered neither the Ignite 2 thin-client handshake ({exc2}) nor the "
                f"Ignite 3 one ({exc3}); check the port and the TLS settings, or name the generation "
                '(generation="2" or "3"; for ignite:// paths IGNITE_FS_GENERATION=2 or 3)',
                address=options.endpoints[0],
            ) from None
        except IgniteConnectionError:
            raise exc2 from None
