"""TLS settings for thin-client connections.

The server certificate and host name are verified by default.  Turning either
check off takes an argument whose name says what it does and logs a warning
every time a context is built with it:

* ``insecure_skip_hostname_verification=True`` -- the certificate must still
  be signed by a trusted CA, but may be issued for another name (a node reached
  through an address its certificate does not list);
* ``insecure_skip_verify=True`` -- no check at all: encrypted, not authenticated.

:func:`tls_error` turns what :mod:`ssl` raises into a :class:`~..errors.TLSError`
that names the node and the host name checked, and says what to do.
"""

from __future__ import annotations

import logging
import ssl
from dataclasses import dataclass, field

from ..errors import ConfigurationError, TLSError

__all__ = ["TLSConfig", "tls_error"]

log = logging.getLogger(__name__)

# OpenSSL verification codes (``X509_V_ERR_*``) that mean "signed by a trusted CA
# but issued for another host name / IP address".
_HOSTNAME_MISMATCH = 62
_IP_MISMATCH = 64


@dataclass(frozen=True)
class TLSConfig:
    """How to secure a connection.

    ``cafile`` -- PEM bundle of CAs trusted for the server certificate (system
    store when omitted).  ``certfile``/``keyfile``/``cert_password`` -- a client
    certificate and its (optionally encrypted) key.  ``server_hostname`` --
    name checked against the certificate (defaults to the host connected to).
    ``insecure_skip_hostname_verification`` / ``insecure_skip_verify`` -- see
    the module docstring; both log a warning.
    """

    cafile: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    cert_password: str | None = field(default=None, repr=False)
    server_hostname: str | None = None
    insecure_skip_verify: bool = False
    insecure_skip_hostname_verification: bool = False

    def __repr__(self) -> str:  # the key password never reaches a log line
        return (
            f"TLSConfig(cafile={self.cafile!r}, certfile={self.certfile!r}, "
            f"keyfile={self.keyfile!r}, server_hostname={self.server_hostname!r}, "
            f"insecure_skip_verify={self.insecure_skip_verify}, "
            f"insecure_skip_hostname_verification={self.insecure_skip_hostname_verification})"
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
            if self.insecure_skip_hostname_verification:
                log.warning(
                    "TLS host name verification is DISABLED (insecure_skip_hostname_verification=True): "
                    "any certificate signed by the trusted CA is accepted, whatever host it was issued for"
                )
                ctx.check_hostname = False  # verify_mode stays CERT_REQUIRED: the chain is still checked
            try:
                if self.cafile:
                    ctx.load_verify_locations(cafile=self.cafile)
                else:
                    ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
            except (OSError, ssl.SSLError) as exc:
                raise ConfigurationError(
                    f"cannot load CA file {self.cafile!r}: {getattr(exc, 'strerror', None) or exc}; "
                    "pass the PEM file of the CA that signed the nodes' certificates"
                ) from None
        if self.certfile:
            asked = []

            def no_password() -> bytes:
                # Without this OpenSSL would prompt on the terminal for an encrypted key.
                asked.append(True)
                return b""

            try:
                ctx.load_cert_chain(
                    self.certfile, self.keyfile or None,
                    password=self.cert_password.encode() if self.cert_password else no_password,
                )
            except (OSError, ssl.SSLError) as exc:
                # The exception text comes from OpenSSL and never contains the password.
                if asked:
                    raise ConfigurationError(
                        f"the client key {self.keyfile or self.certfile!r} is encrypted: pass its password "
                        "as cert_password=... (or $IGNITE_CERT_PASSWORD / $IGNITE_DATASET_CERT_PASSWORD)"
                    ) from None
                raise ConfigurationError(
                    f"cannot load client certificate {self.certfile!r} / key {self.keyfile!r}: "
                    f"{exc.__class__.__name__}: {getattr(exc, 'reason', None) or exc.strerror or exc} "
                    "(wrong key password?)"
                ) from None
        elif self.keyfile:
            raise ConfigurationError("keyfile given without certfile")
        return ctx

    def hostname_for(self, host: str) -> str:
        """The name the server certificate is checked against when connecting to ``host``."""
        return self.server_hostname or host


def tls_error(exc: BaseException, address: str, hostname: str, *, stage: str = "handshake") -> TLSError:
    """A :class:`TLSError` for a TLS failure with ``address`` (its certificate checked as ``hostname``).

    ``stage`` says when it happened (``"handshake"``, or ``"connection"`` for an
    alert received later, e.g. a refused client certificate under TLS 1.3).
    """
    if isinstance(exc, ssl.SSLCertVerificationError):
        if exc.verify_code in (_HOSTNAME_MISMATCH, _IP_MISMATCH):
            return TLSError(
                f"TLS: the certificate of {address} is not valid for the host name {hostname!r} "
                f"({exc.verify_message}). Connect with a name or address the certificate lists, pass "
                "server_hostname=<name in the certificate>, or -- only if you accept the risk -- "
                "insecure_skip_hostname_verification=True",
                address=address,
            )
        return TLSError(
            f"TLS: the certificate of {address} (checked as {hostname!r}) was not accepted: "
            f"{exc.verify_message}. Pass the CA that signed the node's certificate as cafile=...",
            address=address,
        )
    if isinstance(exc, ssl.SSLError):
        text = str(exc)
        hint = ""
        if "WRONG_VERSION_NUMBER" in text or "record layer" in text or "PACKET_LENGTH_TOO_LONG" in text:
            hint = " The node does not seem to speak TLS on this port (plaintext client connector?)."
        elif "CERTIFICATE_REQUIRED" in text or "HANDSHAKE_FAILURE" in text or "BAD_CERTIFICATE" in text:
            hint = (" The node may require a client certificate signed by a CA it trusts: pass "
                    "certfile=... and keyfile=... (and cert_password=... for an encrypted key)")
        return TLSError(f"TLS {stage} with {address} failed: {exc.reason or exc}.{hint}", address=address)
    return TLSError(f"TLS {stage} with {address} failed: {exc}", address=address)
