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

from typing import ClassVar

__all__ = [
    "IgniteError",
    "ClientError",
    "ProtocolError",
    "MissingSchemaError",
    "UnsupportedJavaObjectError",
    "SchemaError",
    "FieldTypeError",
    "ArrayLengthError",
    "ConfigurationError",
    "CapacityError",
    "UnsupportedOperationError",
    "PredictError",
    "ModelLoadError",
    "ModelInputError",
    "OutputLayoutError",
    "EmptySourceError",
    "IgniteConnectionError",
    "NotificationOverflowError",
    "FollowPositionLostError",
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
    "TransactionConflictError",
    "lookup",
    "WriteError",
    "NativeBuildError",
    "BuildInProgressError",
    "DemoError",
    "NodeError",
    "FileSystemError",
    "StaleFileError",
    "LauncherError",
    "JobNotFoundError",
    "LauncherNotDeployedError",
    "LauncherModuleError",
    "Ignite3ServerError",
    "TableNotFoundError",
    "SqlError",
    "Ignite3TransactionConflictError",
    "ReplicaUnavailableError",
]


class IgniteError(Exception):
    """Base class of every error raised by tensorflow-ignite."""


# --------------------------------------------------------------------- client side
class ClientError(IgniteError):
    """An error detected on the client side, before or after talking to Ignite."""


class ProtocolError(ClientError):
    """A frame or binary object could not be decoded (malformed, truncated, hostile)."""


class MissingSchemaError(ProtocolError):
    """A compact-footer object whose schema (field ids) the metadata does not know.

    The caller should fetch the type's metadata (``OP_BINARY_TYPE_GET``) and
    decode again.
    """

    def __init__(self, type_id: int, schema_id: int) -> None:
        super().__init__(
            f"binary object of type id {type_id} uses compact footer schema {schema_id}, which is not in the "
            "known metadata; fetch the type with OP_BINARY_TYPE_GET and retry"
        )
        self.type_id = type_id
        self.schema_id = schema_id


class UnsupportedJavaObjectError(ProtocolError):
    """Optimized-marshaller bytes of a class this library does not decode."""

    def __init__(self, message: str, class_name: str) -> None:
        super().__init__(message)
        self.class_name = class_name


class SchemaError(ClientError):
    """Data in a cache does not match the schema a dataset expects."""


class FieldTypeError(SchemaError):
    """A row whose value has a type the column cannot hold without loss.

    ``path`` is the column (``"val.price"``), ``row`` its index in the decoded
    region, ``found``/``expected`` the two types (readers add the cache and key).
    """

    def __init__(self, path: str, row: int, found: str, expected: str) -> None:
        super().__init__(
            f"column {path!r}: row {row} holds type code {found}, the plan expects {expected}, and it does "
            "not convert to it without loss; fix the plan or the data"
        )
        self.path = path
        self.row = row
        self.found = found
        self.expected = expected


class ArrayLengthError(SchemaError):
    """A row whose array does not have the length its dense column declares.

    Raised when a primitive-array field is read as a dense tensor (``IgniteDataset(shapes=...)``,
    a model input of fixed shape in ``predict``, or the shape ``write`` recorded) and one row's
    array is longer or shorter.  ``path`` is the column (``"val.pixels"``), ``row`` its index in
    the decoded region, ``found``/``expected`` the two lengths; readers fill in ``cache`` and
    ``key`` (the message then names them).
    """

    def __init__(
        self,
        path: str,
        row: int,
        found: int,
        expected: int,
        *,
        cache: str | None = None,
        key: object = None,
        shape: tuple[int, ...] | None = None,
    ) -> None:
        field = path.split(".", 1)[1] if "." in path else path
        declared = list(shape) if shape else [expected]
        shown = repr(int(key)) if isinstance(key, int) and not isinstance(key, bool) else repr(key)
        where = f"cache {cache!r}, field {field!r}, key {shown}" if cache is not None else f"column {path!r}, row {row}"
        super().__init__(
            f"{where}: the array has {found} elements, but the read declares the dense shape {declared} "
            f"({expected} elements) for this field (IgniteDataset shapes=..., a model input of that shape, or "
            "the shape tensorflow_ignite.write recorded); fix that row, or read the field as a ragged tensor "
            "(leave it out of shapes=)"
        )
        self.path = path
        self.row = row
        self.found = found
        self.expected = expected
        self.cache = cache
        self.key = key


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

    def __init__(
        self,
        message: str,
        *,
        region: str,
        node: str,
        max_size: int,
        used: int,
        needed: int,
        cache_name: str | None = None,
    ) -> None:
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
class NotificationOverflowError(IgniteError):
    """A reader of server-pushed frames (continuous query events) fell so far behind that its
    connection's bounded queue dropped them; the reader must start over (re-register, re-read)."""

    def __init__(self, message: str, *, address: str | None = None) -> None:
        super().__init__(message)
        self.address = address


class FollowPositionLostError(IgniteError):
    """A follower's saved position can no longer be resumed exactly once: the module's follow log
    lacks updates after it (older than the log's retention, or lost with every node that saw them)."""

    #: Reaches TensorFlow as ``tf.errors.FailedPreconditionError`` (not a transient failure to retry).
    tf_error_code = 9

    def __init__(self, message: str, *, cache_name: str, partition: int) -> None:
        super().__init__(message)
        self.cache_name = cache_name
        self.partition = partition


class ServerError(IgniteError):
    """An Ignite node answered a request with an error status.

    ``status`` is the server's numeric status code (``ClientStatus`` in Ignite's
    sources), ``op`` the operation that failed.  A subclass that stands for one
    status names it in ``status_name``; :func:`lookup` is generated from those.
    """

    #: The ``ClientStatus`` name this class stands for (None: no status of its own).
    status_name: ClassVar[str | None] = None

    def __init__(self, message: str, *, status: int, op: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.op = op


class CacheNotFoundError(ServerError):
    """The named cache does not exist on the cluster (status ``CACHE_DOES_NOT_EXIST``)."""

    status_name = "CACHE_DOES_NOT_EXIST"


class CacheExistsError(ServerError):
    """A cache of that name exists already (status ``CACHE_EXISTS``)."""

    status_name = "CACHE_EXISTS"


class ResourceNotFoundError(ServerError):
    """The node no longer has the cursor (or other resource) a request names: it was
    closed, expired, or the node restarted (status ``RESOURCE_DOES_NOT_EXIST``)."""

    status_name = "RESOURCE_DOES_NOT_EXIST"


class TooManyCursorsError(ServerError):
    """The node refused to open another cursor for this connection (status ``TOO_MANY_CURSORS``)."""

    status_name = "TOO_MANY_CURSORS"


class TransactionNotFoundError(ServerError):
    """The node no longer has the transaction: it timed out and was rolled back (status ``TX_NOT_FOUND``)."""

    status_name = "TX_NOT_FOUND"


class TransactionConflictError(ServerError):
    """The transaction lost a race with another one (optimistic conflict, lock
    timeout, deadlock) and was rolled back; running it again may succeed.

    Ignite reports these with the generic status ``FAILED``, the status of any
    other failure too, so :func:`lookup` tells them apart by the message
    (``CONFLICT_MARKERS``).
    """

    #: Substrings of the server's messages for a transaction that lost a race: an optimistic
    #: read/write conflict, a lock not taken in time, a detected deadlock.
    CONFLICT_MARKERS: ClassVar[tuple[str, ...]] = (
        "conflict",
        "TransactionOptimisticException",
        "Failed to acquire lock",
        "TransactionTimeoutException",
        "transaction timed out",  # "Cache transaction timed out": rolled back by the server
        "TransactionDeadlockException",
        "deadlock",
    )

    @staticmethod
    def retryable(exc: BaseException) -> bool:
        """True for server errors that mean "rolled back because of concurrency"."""
        if isinstance(exc, (TransactionConflictError, TransactionNotFoundError)):
            return True  # TransactionNotFoundError: timed out and rolled back by the server
        if not isinstance(exc, ServerError):
            return False
        return _is_conflict(exc.status, str(exc))


def _subclasses(cls: type[ServerError]) -> list[type[ServerError]]:
    out = []
    for sub in cls.__subclasses__():
        out.append(sub)
        out.extend(_subclasses(sub))
    return out


_BY_STATUS: dict[int, type[ServerError]] = {}
_FAILED: list[int] = []


def _status_map() -> dict[int, type[ServerError]]:
    """``ClientStatus`` code -> class, generated from every subclass's ``status_name`` (once)."""
    if not _BY_STATUS:
        from .protocol.codes import ClientStatus  # here: protocol's package imports this module

        by_status = {
            int(ClientStatus[cls.status_name]): cls for cls in _subclasses(ServerError) if cls.status_name is not None
        }
        _FAILED.append(int(ClientStatus.FAILED))
        _BY_STATUS.update(by_status)
    return _BY_STATUS


def _is_conflict(status: int, message: str) -> bool:
    _status_map()
    return status == _FAILED[0] and any(m in message for m in TransactionConflictError.CONFLICT_MARKERS)


def lookup(status: int, message: str | None = None) -> type[ServerError]:
    """The error class for a server status code (``ClientStatus``): the subclass of
    :class:`ServerError` that status stands for, :class:`ServerError` for the others.

    Errors the server reports with the generic status ``FAILED`` (1) are told apart
    only by their ``message``: transaction conflicts, lock timeouts and deadlocks are
    :class:`TransactionConflictError`; SQL and other errors stay :class:`ServerError`.
    """
    cls = _status_map().get(status)
    if cls is not None:
        return cls
    if message and _is_conflict(status, message):
        return TransactionConflictError
    return ServerError


# --------------------------------------------------------------------- features
class WriteError(IgniteError):
    """An ``append`` failed part-way; ``rows_written`` rows (at least) are in the cache.

    The original error is the ``__cause__``.
    """

    def __init__(self, message: str, *, cache_name: str, rows_written: int) -> None:
        super().__init__(message)
        self.cache_name = cache_name
        self.rows_written = rows_written


class NativeBuildError(IgniteError):
    """The native libraries could not be built (no compiler, no headers, compiler error)."""


class BuildInProgressError(NativeBuildError):
    """The native libraries are being built by this very process (a build asked for one of them,
    see ``native.build.build_lock``); they can be loaded once that build has finished."""


class DemoError(IgniteError):
    """The demo could not finish (e.g. the distributed training job failed)."""


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


# ------------------------------------------------------------------------ Ignite 3
class Ignite3ServerError(ServerError):
    """An Apache Ignite 3 node answered a request with an error.

    ``status`` is Ignite 3's error code (``group << 16 | number``; ``code_name``
    prints it as Ignite does, ``IGN-SQL-4``), ``op`` the operation,
    ``class_name`` the server's exception class, ``trace_id`` the id the
    node's log shows for it and ``extensions`` what the error carries besides
    (``expected-schema-ver`` for a schema version mismatch).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        op: int | None = None,
        code_name: str = "",
        class_name: str = "",
        trace_id: object = None,
        extensions: dict[str, object] | None = None,
    ) -> None:
        super().__init__(message, status=status, op=op)
        self.code_name = code_name
        self.class_name = class_name
        self.trace_id = trace_id
        self.extensions: dict[str, object] = dict(extensions or {})


class TableNotFoundError(Ignite3ServerError):
    """The Ignite 3 table (or schema) a request names does not exist."""


class SqlError(Ignite3ServerError):
    """An Ignite 3 node could not parse, validate or run an SQL statement (error group ``SQL``)."""


class Ignite3TransactionConflictError(Ignite3ServerError, TransactionConflictError):
    """An Ignite 3 node could not take a lock for a concurrent transaction; running the work again may succeed."""


class ReplicaUnavailableError(Ignite3ServerError):
    """An Ignite 3 partition's replica cannot serve now (error groups ``REP`` and ``PLACEMENTDRIVER``): the
    node holding its primary was lost and another replica is taking over (~30 s), or the zone lost its
    majority.  A request that had no effect may be sent again a little later; through ``ignite://`` it is a
    ``tf.errors.UnavailableError``."""

    tf_error_code = 14  # UNAVAILABLE (native/status.py)
