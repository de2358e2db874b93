"""The default thin-client endpoint, the one place every part of the project takes it from.

Apache Ignite's client connector listens on port 10800 by default.  The default
host is the IPv4 loopback address rather than ``localhost``: local nodes bind
IPv4, and ``localhost`` may resolve to ``::1`` first, which costs a refused
connection (or a timeout behind some resolvers) before the IPv4 attempt.
"""

from __future__ import annotations

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "DEFAULT_ENDPOINT", "format_endpoint"]

#: Host used when none is given (CLI ``--host``, ``IgniteDataset``, ``write``, ``ignite://`` URIs without one).
DEFAULT_HOST = "127.0.0.1"
#: Ignite's default client connector port.
DEFAULT_PORT = 10800
#: ``host:port`` of the two above.
DEFAULT_ENDPOINT = f"{DEFAULT_HOST}:{DEFAULT_PORT}"


def format_endpoint(host: str, port: int) -> str:
    """``host:port``, with an IPv6 address in brackets (``[::1]:10800``)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
