"""argparse ``type=`` checks shared by the ``ignite-tf`` commands.

A bad value is reported by argparse itself (``argument --port: must be between
1 and 65535``, exit status 2) before anything is started or connected.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["int_between", "positive_float", "port", "listen_port", "size", "logdir"]


def int_between(low: int, high: int | None = None) -> Callable[[str], int]:
    """An int in ``[low, high]`` (no upper bound when ``high`` is None)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
        if value < low or (high is not None and value > high):
            if high is None:
                raise argparse.ArgumentTypeError(f"must be {low} or more, got {value}")
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}, got {value}")
        return value

    return parse


def positive_float(text: str) -> float:
    """A float > 0 (sizes, timeouts)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def size(text: str) -> int:
    """A positive size in bytes: ``4194304``, ``512K``, ``4M``, ``4MiB``, ``1G`` (K, M, G: powers of 1024)."""
    t = text.strip().lower()
    for tail in ("ib", "b"):
        if t.endswith(tail) and len(t) > len(tail):
            t = t[: -len(tail)]
            break
    unit = t[-1] if t and t[-1] in "kmg" else ""
    try:
        value = float(t[: len(t) - len(unit)])
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid size: {text!r} (bytes, or a number with K, M or G, e.g. 4M)"
        ) from None
    n = int(value * _SIZE_UNITS[unit]) if 0 < value < float("inf") else 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a positive size, got {text}")
    return n


#: A TCP port a client connects to.
port = int_between(1, 65535)
#: A port to listen on: 0 picks a free one.
listen_port = int_between(0, 65535)


def logdir(text: str) -> str:
    """A TensorBoard log directory; ``ignite://``/``igfs://`` ones are checked like the plugin checks them.

    Messages never repeat a URI's user-info or query string (they may hold a password).
    """
    from ..errors import ConfigurationError
    from ..fs.config import parse_endpoints, reject_query
    from ..native.uri import SCHEMES

    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    scheme, sep, rest = text.partition("://")
    if sep and scheme in SCHEMES:
        try:
            reject_query(text)
            host = rest.partition("/")[0]
            if host:
                parse_endpoints(host)
        except ConfigurationError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return text
