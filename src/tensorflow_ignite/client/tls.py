"""TLS for thin-client connections: the context built from :class:`~.options.ConnectionOptions`.

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
from typing import TYPE_CHECKING

from ..errors import ConfigurationError, TLSError

if TYPE_CHECKING:
    from .options import ConnectionOptions

__all__ = ["ssl_context", "tls_error"]

log = logging.getLogger(__name__)

# OpenSSL verification codes (``X509_V_ERR_*``) that mean "signed by a trusted CA
# but issued for another host name / IP address".
_HOSTNAME_MISMATCH = 62
_IP_MISMATCH = 64


def ssl_context(options: "ConnectionOptions") -> ssl.SSLContext:
    """The client-side :class:`ssl.SSLContext` for the TLS fields of ``options``."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    if options.insecure_skip_verify:
        log.warning(
            "TLS certificate verification is DISABLED (insecure_skip_verify=True): "
            "the connection is encrypted but the server is not authenticated"
        )
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    else:
        if options.insecure_skip_hostname_verification:
            log.warning(
                "TLS host name verification is DISABLED (insecure_skip_hostname_verification=True): "
                "any certificate signed by the trusted CA is accepted, whatever host it was issued for"
            )
            ctx.check_hostname = False  # verify_mode stays CERT_REQUIRED: the chain is still checked
        try:
            if options.cafile:
                ctx.load_verify_locations(cafile=options.cafile)
            else:
                ctx.load_default_certs(ssl.Purpose.SERVER_AUTH)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigurationError(
                f"cannot load CA file {options.cafile!r}: {getattr(exc, 'strerror', None) or exc}; "
                "pass the PEM file of the CA that signed the nodes' certificates"
            ) from None
    if options.certfile:
        asked = []

        def no_password() -> bytes:
            # Without this OpenSSL would prompt on the terminal for an encrypted key.
            asked.append(True)
            return b""

        try:
            ctx.load_cert_chain(
                options.certfile,
                options.keyfile or None,
                password=options.cert_password.encode() if options.cert_password else no_password,
            )
        except (OSError, ssl.SSLError) as exc:
            # The exception text comes from OpenSSL and never contains the password.
            if asked:
                raise ConfigurationError(
                    f"the client key {options.keyfile or options.certfile!r} is encrypted: pass its password "
                    "as cert_password=... (or $IGNITE_CERT_PASSWORD / $IGNITE_DATASET_CERT_PASSWORD)"
                ) from None
            raise ConfigurationError(
                f"cannot load client certificate {options.certfile!r} / key {options.keyfile!r}: "
                f"{exc.__class__.__name__}: {getattr(exc, 'reason', None) or exc.strerror or exc} "
                "(wrong key password?)"
            ) from None
    elif options.keyfile:
        raise ConfigurationError("keyfile given without certfile")
    return ctx


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
        elif any(
            alert in text
            for alert in (
                "CERTIFICATE_REQUIRED",
                "HANDSHAKE_FAILURE",
                "BAD_CERTIFICATE",
                "UNKNOWN_CA",
                "CERTIFICATE_UNKNOWN",
            )
        ):
            hint = (
                " The node may require a client certificate signed by a CA it trusts: pass "
                "certfile=... and keyfile=... (and cert_password=... for an encrypted key)"
            )
        elif isinstance(exc, ssl.SSLEOFError) or "EOF" in text:
            # The node closed the TLS connection: how a refused client certificate looks when its
            # alert loses the race with the close.
            hint = (
                " The node closed the connection; it may require a client certificate signed by a CA it "
                "trusts: pass certfile=... and keyfile=... (and cert_password=... for an encrypted key)"
            )
        return TLSError(f"TLS {stage} with {address} failed: {exc.reason or exc}.{hint}", address=address)
    return TLSError(f"TLS {stage} with {address} failed: {exc}", address=address)
