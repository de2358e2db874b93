"""``IgniteClient``: the thin client of whichever Ignite generation an address speaks.

Why a subclass on this floor rather than a change to
:class:`tensorflow_ignite.client.IgniteClient`: that class is the Ignite 2 thin
client, on a floor below the Ignite 3 stack and the generation detection
(ARCHITECTURE.md, "Layers"), so it cannot reach them.  This class can: its
``__new__`` asks :func:`~tensorflow_ignite.generation.connect_client` -- with
this class's own Ignite 2 construction as the Ignite 2 attempt, so an Ignite 2
address costs exactly the handshake the Ignite 2 client makes anyway -- and
returns either an instance of this class (all of the Ignite 2 client's
behaviour, inherited unchanged) or its Ignite 3 form
(:class:`~.ignite3_form.IgniteClient3`, a subclass of this one).  Both are
instances of this class and of the Ignite 2 class, so ``isinstance`` and type
checkers see one client type; ``generation`` (2 or 3) tells them apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Unpack

from ..client import client as ignite2
from ..client.options import ConnectionKeywords, ConnectionOptions
from ..generation import connect_client, parse_generation
from ..protocol.endpoint import DEFAULT_ENDPOINT

if TYPE_CHECKING:
    from ..ignite3.client import Ignite3Client

__all__ = ["IgniteClient"]

Address = ignite2.Address


class IgniteClient(ignite2.IgniteClient):
    """A thin client of an Ignite cluster of either generation, found at the handshake.

    The keywords are :class:`tensorflow_ignite.client.IgniteClient`'s (addresses,
    credentials, TLS, deadlines, ``partition_awareness``), plus ``generation``:
    ``"auto"`` (the default), ``"2"`` or ``"3"``
    (:func:`~tensorflow_ignite.generation.parse_generation`).  With ``auto`` the
    Ignite 2 handshake is tried first (on an Ignite 2 node this client's own
    first connection: no extra round trip), then Ignite 3's; an address found
    before is not asked again.

    On Ignite 2 the client is the Ignite 2 thin client.  On Ignite 3 it is an
    :class:`~.ignite3_form.IgniteClient3` (a subclass of this class): ``sql``,
    ``cache`` and its key-value methods, ``cache_names``, ``destroy_cache``,
    ``transaction``, ``close``/``closed`` and the ``with`` block take the same
    arguments and give results of the same shapes (a table is a cache: see
    :mod:`.ignite3_form` for its keys and values); the Ignite-2-only methods
    (binary types, partition maps, cache configurations, connections, ``stats``)
    raise :class:`~tensorflow_ignite.errors.UnsupportedOperationError` naming
    the method, why, and what to use instead.  :attr:`generation` is 2 or 3.

    The package's features (``IgniteDataset``, ``write``, ``predict``) take
    either form as ``client=``.
    """

    #: Set once the client is connected: ``__new__`` may have made it whole, and then the
    #: ``__init__`` Python calls after it has nothing left to do.
    _ready: bool = False

    def __new__(
        cls,
        addresses: "str | Address | Sequence[str | Address]" = DEFAULT_ENDPOINT,
        *,
        partition_awareness: bool | None = None,
        generation: str | int = "auto",
        **connection: Unpack[ConnectionKeywords],
    ) -> "IgniteClient":
        generation = parse_generation(generation)
        if cls is not IgniteClient or generation == "2":
            return super().__new__(cls)  # __init__ connects: the Ignite 2 client, as it always was
        settings = ConnectionOptions.settings_given("IgniteClient", connection)
        options = ConnectionOptions.from_address(ignite2.parse_addresses(addresses), **settings)

        def connect2() -> "IgniteClient":
            client = super(IgniteClient, cls).__new__(cls)
            ignite2.IgniteClient.__init__(client, addresses, partition_awareness=partition_awareness, **connection)
            client._ready = True
            return client

        found = connect_client(options, generation, ignite2=connect2)
        if found.generation == 2:
            assert isinstance(found, IgniteClient)  # connect2 made it
            return found
        from .ignite3_form import IgniteClient3

        ignite3: Ignite3Client = found  # type: ignore[assignment]  # generation 3: connect_client's Ignite3Client
        return IgniteClient3.wrap(ignite3, partition_awareness)

    def __init__(
        self,
        addresses: "str | Address | Sequence[str | Address]" = DEFAULT_ENDPOINT,
        *,
        partition_awareness: bool | None = None,
        generation: str | int = "auto",
        **connection: Unpack[ConnectionKeywords],
    ) -> None:
        if self._ready:
            return  # made whole by __new__
        super().__init__(addresses, partition_awareness=partition_awareness, **connection)
        self._ready = True

    @classmethod
    def from_options(
        cls, options: ConnectionOptions, *, partition_awareness: bool | None = None, generation: str | int = "auto"
    ) -> "IgniteClient":
        """A new client for ``options`` (the caller closes it); ``generation`` as for the constructor."""
        return IgniteClient(
            options.endpoints,
            **ConnectionOptions.settings_in(vars(options)),
            partition_awareness=partition_awareness,
            generation=generation,
        )
