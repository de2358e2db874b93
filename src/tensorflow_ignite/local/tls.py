"""A private certificate authority for local TLS nodes (tests, demos, development).

Generates, into a directory of its own, a CA, a server certificate valid for
``localhost``/``127.0.0.1`` packed as a PKCS#12 keystore for the Java node, a
truststore holding the CA (so the node can verify client certificates), and a
client certificate whose private key is protected by a password (kept beside it in
``client-key-password``, mode 0600, like every file there).  Nothing made
here is meant for production, and nothing is ever committed: the files live under
the node's work directory.
"""

from __future__ import annotations

import datetime as _dt
import ipaddress
import os
import secrets
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ..errors import NodeError

__all__ = ["TLSMaterial", "describe_tls", "make_tls_material"]


@dataclass(frozen=True)
class TLSMaterial:
    """Paths and passwords of a generated CA, server keystore and client certificate."""

    directory: Path
    ca_cert: Path
    server_keystore: Path
    server_truststore: Path
    keystore_password: str
    client_cert: Path
    client_key: Path
    client_key_password: str

    def __repr__(self) -> str:  # never print the passwords
        return f"TLSMaterial(directory={str(self.directory)!r})"


def _name(common_name: str):
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "tensorflow-ignite local"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _issue(subject_cn: str, issuer_key, issuer_name, *, ca: bool, key=None, server: bool = False):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID

    key = key or ec.generate_private_key(ec.SECP256R1())
    now = _dt.datetime.now(_dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject_cn))
        .issuer_name(issuer_name or _name(subject_cn))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _dt.timedelta(minutes=5))
        .not_valid_after(now + _dt.timedelta(days=30))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        ).add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
    elif not ca:
        builder = builder.add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
    cert = builder.sign(issuer_key or key, hashes.SHA256())
    return key, cert


def make_tls_material(directory: str | os.PathLike[str]) -> TLSMaterial:
    """Create a CA, a server keystore/truststore and a client certificate in ``directory``.

    Requires the ``cryptography`` package and the JDK's ``keytool`` (for the Java
    truststore).
    """
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.serialization import pkcs12
    except ImportError as exc:  # pragma: no cover - dependency missing
        raise NodeError("TLS nodes need the `cryptography` package: pip install cryptography") from exc

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    os.chmod(out, 0o700)
    store_pw = secrets.token_urlsafe(18)
    client_pw = secrets.token_urlsafe(18)

    ca_key, ca_cert = _issue("tensorflow-ignite test CA", None, None, ca=True)
    server_key, server_cert = _issue("localhost", ca_key, ca_cert.subject, ca=False, server=True)
    client_key, client_cert = _issue("tf-ignite-client", ca_key, ca_cert.subject, ca=False)

    pem = serialization.Encoding.PEM
    (out / "ca.pem").write_bytes(ca_cert.public_bytes(pem))
    (out / "client.pem").write_bytes(client_cert.public_bytes(pem))
    (out / "client.key").write_bytes(
        client_key.private_bytes(
            pem,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(client_pw.encode()),
        )
    )
    (out / "server.p12").write_bytes(
        pkcs12.serialize_key_and_certificates(
            b"server",
            server_key,
            server_cert,
            [ca_cert],
            serialization.BestAvailableEncryption(store_pw.encode()),
        )
    )
    truststore = out / "truststore.p12"
    keytool = shutil.which("keytool")
    if keytool is None and os.environ.get("JAVA_HOME"):
        keytool = str(Path(os.environ["JAVA_HOME"]) / "bin" / "keytool")
    if keytool is None:
        raise NodeError("the JDK's `keytool` was not found; install a JDK 17 or set JAVA_HOME")
    truststore.unlink(missing_ok=True)
    proc = subprocess.run(
        [
            keytool,
            "-importcert",
            "-noprompt",
            "-storetype",
            "PKCS12",
            "-alias",
            "ca",
            "-file",
            str(out / "ca.pem"),
            "-keystore",
            str(truststore),
            "-storepass:env",
            "TF_IGNITE_TRUSTSTORE_PASSWORD",
        ],
        env={**os.environ, "TF_IGNITE_TRUSTSTORE_PASSWORD": store_pw},
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise NodeError(f"keytool could not write the truststore: {proc.stderr.strip()}")
    # The client key's password, for a command line or another process (the directory and files are 0600).
    (out / "client-key-password").write_text(client_pw + "\n")
    for f in out.iterdir():
        os.chmod(f, 0o600)
    return TLSMaterial(
        directory=out,
        ca_cert=out / "ca.pem",
        server_keystore=out / "server.p12",
        server_truststore=truststore,
        keystore_password=store_pw,
        client_cert=out / "client.pem",
        client_key=out / "client.key",
        client_key_password=client_pw,
    )


def describe_tls(material: TLSMaterial, client_auth: bool) -> list[str]:
    """Lines telling a user of ``node start`` what to pass to connect: the CA, and with ``client_auth``
    the client certificate, its key and where the key's password is (never the password itself)."""
    lines = [f"TLS: CA certificate {material.ca_cert} (cafile=)"]
    if client_auth:
        lines.append(
            f"TLS client certificate (required): certfile={material.client_cert} "
            f"keyfile={material.client_key}, the key's password in "
            f"{material.directory / 'client-key-password'} (cert_password=; ignite-tf reads "
            "$IGNITE_CERT_PASSWORD)"
        )
    return lines
