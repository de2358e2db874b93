"""Turning a backend's Python exception into a TensorFlow status.

The shim calls :func:`status_for_exception` (installed by the loader) whenever
a backend method raises; the code picks the ``tf.errors`` class the user sees
(``tf.errors.NotFoundError`` for :class:`FileNotFoundError`, ...), the message
keeps the original exception's text.  Kept in Python, not in the C++ shim, so
the table is easy to read, test and extend.
"""

from __future__ import annotations

import enum
import errno

from tensorflow_ignite import errors as ignite_errors

__all__ = ["TFCode", "status_for_exception", "code_for_exception", "redact_query"]


class TFCode(enum.IntEnum):
    """``TF_Code`` from ``tensorflow/c/tf_status.h`` (same numbers as ``absl::StatusCode``)."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16


# Checked in order: the first matching class wins, so subclasses come first.
_BY_CLASS: tuple[tuple[type[BaseException], TFCode], ...] = (
    (FileNotFoundError, TFCode.NOT_FOUND),
    (FileExistsError, TFCode.ALREADY_EXISTS),
    (IsADirectoryError, TFCode.FAILED_PRECONDITION),
    (NotADirectoryError, TFCode.FAILED_PRECONDITION),
    (PermissionError, TFCode.PERMISSION_DENIED),
    (ignite_errors.AuthenticationError, TFCode.UNAUTHENTICATED),
    (ConnectionError, TFCode.UNAVAILABLE),  # incl. IgniteConnectionError, TLS, handshake
    (TimeoutError, TFCode.DEADLINE_EXCEEDED),
    (ignite_errors.CacheNotFoundError, TFCode.NOT_FOUND),
    (ignite_errors.ConfigurationError, TFCode.INVALID_ARGUMENT),
    (NotImplementedError, TFCode.UNIMPLEMENTED),
    (MemoryError, TFCode.RESOURCE_EXHAUSTED),
    (KeyboardInterrupt, TFCode.CANCELLED),
    (SystemExit, TFCode.CANCELLED),
)

# Plain OSError (no dedicated subclass) by errno.
_BY_ERRNO: dict[int, TFCode] = {
    errno.ENOTEMPTY: TFCode.FAILED_PRECONDITION,
    errno.EBUSY: TFCode.FAILED_PRECONDITION,
    errno.EXDEV: TFCode.FAILED_PRECONDITION,
    errno.ENOSPC: TFCode.RESOURCE_EXHAUSTED,
    errno.EDQUOT: TFCode.RESOURCE_EXHAUSTED,
    errno.EFBIG: TFCode.RESOURCE_EXHAUSTED,
    errno.EROFS: TFCode.PERMISSION_DENIED,
    errno.EINVAL: TFCode.INVALID_ARGUMENT,
    errno.ENAMETOOLONG: TFCode.INVALID_ARGUMENT,
}


def code_for_exception(exc: BaseException) -> TFCode:
    """The TensorFlow status code for ``exc``."""
    explicit = getattr(exc, "tf_error_code", None)
    if isinstance(explicit, int) and not isinstance(explicit, bool):
        try:
            code = TFCode(explicit)
        except ValueError:
            code = TFCode.INTERNAL
        return TFCode.INTERNAL if code is TFCode.OK else code
    for cls, code in _BY_CLASS:
        if isinstance(exc, cls):
            return code
    if isinstance(exc, OSError) and exc.errno in _BY_ERRNO:
        return _BY_ERRNO[exc.errno]
    if isinstance(exc, ValueError):  # bad path, bad argument (incl. UnicodeError)
        return TFCode.INVALID_ARGUMENT
    return TFCode.INTERNAL


def status_for_exception(exc: BaseException, op: str, path: str) -> tuple[int, str]:
    """``(TF_Code, message)`` for an exception raised by backend method ``op`` on ``path``.

    A ``KeyboardInterrupt`` (Ctrl-C while the main thread runs backend code)
    becomes ``tf.errors.CancelledError``.  Re-raising Ctrl-C afterwards is not
    possible: TensorFlow's pybind11 layer aborts the error conversion with a
    ``RuntimeError`` when another exception appears while it raises its own.
    """
    code = code_for_exception(exc)
    text = str(exc)
    detail = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return int(code), f"ignite filesystem: {op}({redact_query(path)}) failed: {detail}"


def redact_query(path: object) -> object:
    """``ignite://h/p?password=x`` -> ``ignite://h/p?<query removed>`` and
    ``ignite://user:pw@h/p`` -> ``ignite://<credentials removed>@h/p``: a query string
    or user-info part may carry credentials (the plugin never reads them) and must
    not reach logs."""
    if not isinstance(path, str):
        return path
    if "?" in path and "=" in path.partition("?")[2]:
        path = path.partition("?")[0] + "?<query removed>"
    scheme, sep, rest = path.partition("://")
    authority = rest.partition("/")[0]
    if sep and "@" in authority:
        path = f"{scheme}://<credentials removed>@{authority.rpartition('@')[2]}{rest[len(authority) :]}"
    return path
