"""Errors raised by tensorflow-ignite.

Every error the library raises derives from :class:`IgniteError`.  Errors are
split by origin, the way asyncpg splits them:

* :class:`ClientError` -- something went wrong on our side (bad arguments,
  a frame we could not decode, a cache whose data does not fit the schema).
* :class:`IgniteConnectionError` family -- the network or the peer (refused,
  closed, timed out, TLS failure, handshake rejected).
* :class:`ServerError` -- the Ignite node answered a request with an error
  status; the numeric status code is kept on ``.status``, and :func:`lookup`
  gives the subclass a status code stands for (:class:`CacheNotFoundError`...).
* :class:`NodeError` (local nodes) and :class:`FileSystemError` (``ignite://``;
  also an ``OSError``, so file code can catch what it always catches).

Messages name the cache, field, type or node involved and say what to do.
"""

from __future__ import annotations

__all__ = [
    "IgniteError",
    "ClientError",
    "ProtocolError",
    "SchemaError",
    "ConfigurationError",
    "CapacityError",
    "UnsupportedOperationError",
    "PredictError",
    "ModelLoadError",
    "ModelInputError",
    "OutputLayoutError",
    "EmptySourceError",
    "IgniteConnectionError",
    "ConnectionTimeoutError",
    "TLSError",
    "HandshakeError",
    "AuthenticationError",
    "ServerError",
    "CacheNotFoundError",
    "CacheExistsError",
    "ResourceNotFoundError",
    "TooManyCursorsError",
    "TransactionNotFoundError",
    "lookup",
    "NodeError",
    "FileSystemError",
    "StaleFileError",
    "LauncherError",
    "JobNotFoundError",
    "LauncherNotDeployedError",
    "LauncherModuleError",
]


class IgniteError(Exception):
    """Base class of every error raised by tensorflow-ignite."""


# --------------------------------------------------------------------- client side
class ClientError(IgniteError):
    """An error detected on the client side, before or after talking to Ignite."""


class ProtocolError(ClientError):
    """A frame or binary object could not be decoded (malformed, truncated, hostile)."""


class SchemaError(ClientError):
    """Data in a cache does not match the schema a dataset expects."""


class ConfigurationError(ClientError, ValueError):
    """An argument, environment variable or setting is invalid."""


class CapacityError(ClientError):
    """A write was refused because it would not fit in the target cache's data region.

    Filling an in-memory Ignite data region makes the node fail (Ignite treats
    ``IgniteOutOfMemoryException`` as critical and stops the node), so writers
    check the region before and while writing (:mod:`tensorflow_ignite.capacity`)
    and roll back what they stored.  ``region``, ``node``, ``max_size``,
    ``used`` and ``needed`` (bytes, ``needed`` as estimated for that node) say
    which limit was hit.  TensorFlow sees it as ``ResourceExhaustedError``.
    """

    tf_error_code = 8  # RESOURCE_EXHAUSTED (native/status.py)

    def __init__(self, message: str, *, region: str, node: str, max_size: int, used: int, needed: int,
                 cache_name: str | None = None) -> None:
        super().__init__(message)
        self.region = region
        self.node = node
        self.max_size = max_size
        self.used = used
        self.needed = needed
        self.cache_name = cache_name


# ----------------------------------------------------------------- network / peer
class UnsupportedOperationError(ClientError, NotImplementedError):
    """A dataset cannot do what was asked: be rebuilt outside its process (a Python-only source),
    be split across tf.data service workers, or save its position (an SQL query)."""


class PredictError(ClientError):
    """``tensorflow_ignite.predict`` refused its inputs before writing anything (the subclasses say why)."""


class ModelLoadError(PredictError):
    """The model could not be loaded; ``path`` is what was given, the message says why."""

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


class ModelInputError(PredictError):
    """The model's inputs do not match the source's fields: a missing field, or another dtype or shape.
    ``problems`` lists one line per input at fault, naming the field and both types."""

    def __init__(self, message: str, *, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems


class OutputLayoutError(PredictError):
    """The output cache exists and holds entries of another layout than the model's predictions."""


class EmptySourceError(PredictError):
    """The source cache or query has no rows to score."""


class IgniteConnectionError(IgniteError, ConnectionError):
    """The connection to an Ignite node failed or was lost."""

    def __init__(self, message: str, *, address: str | None = None) -> None:
        super().__init__(message)
        self.address = address


class ConnectionTimeoutError(IgniteConnectionError, TimeoutError):
    """Connecting to, or waiting for an answer from, a node took too long."""


class TLSError(IgniteConnectionError):
    """The TLS handshake failed (wrong CA, hostname mismatch, plaintext peer...)."""


class HandshakeError(IgniteConnectionError):
    """The node rejected the thin-client handshake, or is not an Ignite node."""


class AuthenticationError(HandshakeError):
    """The node rejected the username or password."""


# -------------------------------------------------------------------- server side
class ServerError(IgniteError):
    """An Ignite node answered a request with an error status.

    ``status`` is the server's numeric status code (``ClientStatus`` in Ignite's
    sources), ``op`` the operation that failed.
    """

    def __init__(self, message: str, *, status: int, op: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.op = op


class CacheNotFoundError(ServerError):
    """The named cache does not exist on the cluster (status ``CACHE_DOES_NOT_EXIST``)."""


class CacheExistsError(ServerError):
    """A cache of that name exists already (status ``CACHE_EXISTS``)."""


class ResourceNotFoundError(ServerError):
    """The node no longer has the cursor (or other resource) a request names: it was
    closed, expired, or the node restarted (status ``RESOURCE_DOES_NOT_EXIST``)."""


class TooManyCursorsError(ServerError):
    """The node refused to open another cursor for this connection (status ``TOO_MANY_CURSORS``)."""


class TransactionNotFoundError(ServerError):
    """The node no longer has the transaction: it timed out and was rolled back (status ``TX_NOT_FOUND``)."""


#: ``ClientStatus`` name -> the error class a response with that status raises.  Keyed
#: by name (``protocol.codes`` is generated from Ignite's sources and imports this module's
#: package); a test checks every name against ``ClientStatus``.
_BY_STATUS_NAME: dict[str, type[ServerError]] = {
    "CACHE_DOES_NOT_EXIST": CacheNotFoundError,
    "CACHE_EXISTS": CacheExistsError,
    "RESOURCE_DOES_NOT_EXIST": ResourceNotFoundError,
    "TOO_MANY_CURSORS": TooManyCursorsError,
    "TX_NOT_FOUND": TransactionNotFoundError,
}
_BY_STATUS: dict[int, type[ServerError]] = {}


def lookup(status: int) -> type[ServerError]:
    """The error class for a server status code (``ClientStatus``): the subclass of
    :class:`ServerError` that status stands for, :class:`ServerError` for the others.

    Errors the server reports with the generic status ``FAILED`` (1) -- transaction
    conflicts, lock timeouts, SQL errors -- are told apart only by their message.
    """
    if not _BY_STATUS:
        from .protocol.codes import ClientStatus  # here: protocol's package imports this module

        _BY_STATUS.update({int(ClientStatus[name]): cls for name, cls in _BY_STATUS_NAME.items()})
    return _BY_STATUS.get(status, ServerError)


class NodeError(IgniteError):
    """A local Ignite node managed by ``ignite-tf node`` failed to start or stop."""


class FileSystemError(IgniteError, OSError):
    """An ``ignite://`` filesystem operation failed."""


class StaleFileError(FileSystemError, FileNotFoundError):
    """The blocks of an open ``ignite://`` file disappeared: another process replaced or
    deleted the file while it was being read (like NFS's ``ESTALE``); reopen it."""


# ------------------------------------------------------------------------ launcher
class LauncherError(IgniteError):
    """The training launcher refused a request, or a job could not be found or followed."""


class JobNotFoundError(LauncherError):
    """No job of that name exists on the cluster."""


class LauncherPermissionError(LauncherError):
    """The launcher refused the caller: authentication is off and not opted out of, the user is
    not among the launcher's submitters/admins, the job is another user's, or a program is not
    among its allowed commands.  The message names the user and the node setting to change."""


class LauncherNotDeployedError(LauncherError):
    """No server node of the cluster has the tensorflow-ignite module (no launcher service)."""


class LauncherModuleError(LauncherError):
    """Some server nodes lack the tensorflow-ignite module, or run another version of it.

    ``nodes`` maps each node at fault (consistent id) to its module version (None: no module).
    """

    def __init__(self, message: str, *, nodes: dict[str, str | None]) -> None:
        super().__init__(message)
        self.nodes = nodes
