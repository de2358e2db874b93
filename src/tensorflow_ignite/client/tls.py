"""TLS settings for thin-client connections.

The server certificate and host name are verified by default.  Turning that off
takes an argument whose name says what it does (``insecure_skip_verify=True``)
and logs a warning every time a context is built with it.
"""

from __future__ import annotations

import logging
import ssl
from dataclasses import dataclass

from ..errors import ConfigurationError

__all__ = ["TLSConfig"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TLSConfig:
    """How to secure a connection.

    ``cafile`` -- PEM bundle of CAs trusted for the server certificate (system
    store when omitted).  ``certfile``/``keyfile``/``cert_password`` -- a client
    certificate and its (optionally encrypted) key.  ``server_hostname`` --
    name checked against the certificate (defaults to the host connected to).
    """

    cafile: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    cert_password: str | None = None
    server_hostname: str | None = None
    insecure_skip_verify: bool = False

    def __repr__(self) -> str:  # the key password never reaches a log line
        return (
            f"TLSConfig(cafile={self.cafile!r}, certfile={self.certfile!r}, "
            f"keyfile={self.keyfile!r}, insecure_skip_verify={self.insecure_skip_verify})"
        )

    def context(self) -> ssl.SSLContext:
        """Build the client-side :class:`ssl.SSLContext`."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        if self.insecure_skip_verify:
            log.warning(
                "TLS certificate verification is DISABLED (insecure_skip_verify=True): "
                "the connection is encrypted but the server is not authenticated"
            )
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        else:
            try:
                if self.cafile:
                    ctx.load_verify_locations(cafile=self.cafile)
                else:
                    ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
            except (OSError, ssl.SSLError) as exc:
                raise ConfigurationError(f"cannot load CA file {self.cafile!r}: {exc}") from None
        if self.certfile:
            try:
                ctx.load_cert_chain(
                    self.certfile, self.keyfile or None,
                    password=self.cert_password.encode() if self.cert_password else None,
                )
            except (OSError, ssl.SSLError) as exc:
                raise ConfigurationError(
                    f"cannot load client certificate {self.certfile!r} / key {self.keyfile!r}: "
                    f"{exc.__class__.__name__}: {getattr(exc, 'reason', None) or exc.strerror or exc} "
                    "(wrong key password?)"
                ) from None
        elif self.keyfile:
            raise ConfigurationError("keyfile given without certfile")
        return ctx
