"""Which failures another attempt can cure: the one retry classification of both generations.

A read that fails midway (an Ignite 2 partition scan, an Ignite 3 table query) asks
:func:`transient` whether to try again, perhaps on another node.  The rules that do
not depend on the generation live here: credentials and TLS settings are the same
on every node (:func:`same_on_every_node`: never cured by another attempt), a lost
or silent connection is (another node, or the same one back).  What a *server's*
answer means is the one part each generation words in its own codes, so each
passes its rule for a :class:`~..errors.ServerError`: Ignite 2's is
:func:`ignite2_server_transient` (here, beside its client), Ignite 3's lives in
``ignite3/partitioned.py`` (its error codes are in ``ignite3/protocol``).
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import AuthenticationError, CacheNotFoundError, IgniteConnectionError, ServerError, TLSError
from ..protocol.codes import ClientStatus

__all__ = ["ServerRule", "transient", "same_on_every_node", "ignite2_server_transient"]

#: A generation's judgement of a server's error: True when running the request again may succeed.
ServerRule = Callable[[ServerError], bool]

#: Ignite 2 statuses a scan may outlive: the generic failure (a node leaving mid-query), a cursor
#: the node dropped, too many cursors open at once.
_IGNITE2_TRANSIENT = frozenset(
    {int(ClientStatus.FAILED), int(ClientStatus.RESOURCE_DOES_NOT_EXIST), int(ClientStatus.TOO_MANY_CURSORS)}
)


def same_on_every_node(exc: BaseException) -> bool:
    """True for refused credentials or a TLS failure: the next node is configured the same way."""
    return isinstance(exc, (AuthenticationError, TLSError))


def transient(exc: BaseException, server: ServerRule) -> bool:
    """True when another attempt (perhaps on another node) may cure ``exc``.

    ``server`` judges a server's error in the generation's own codes; anything that is
    neither a connection failure nor a server error (a bug, a bad argument) is final.
    """
    if same_on_every_node(exc):
        return False
    # A HandshakeError here comes from a node that dies while we connect to it: the
    # first connection of this client succeeded with the same settings.
    if isinstance(exc, IgniteConnectionError):
        return True
    if isinstance(exc, ServerError):
        return server(exc)
    return False


def ignite2_server_transient(exc: ServerError) -> bool:
    """Ignite 2's rule: a missing cache is final; a failed query, a lost cursor or too many cursors are not."""
    return not isinstance(exc, CacheNotFoundError) and exc.status in _IGNITE2_TRANSIENT
