"""How ``ignite-tf`` commands reach a cluster: address, credentials and TLS files, one set of rules.

A password is never a command-line argument (other users could read it in
``ps``): it comes from an environment variable (``$IGNITE_PASSWORD`` unless a
command names another) or, on a terminal, from a prompt.  A client key's
password comes from ``$IGNITE_CERT_PASSWORD``.
"""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from typing import Any

from ..errors import ConfigurationError
from ..protocol.endpoint import DEFAULT_HOST, DEFAULT_PORT
from . import validate

__all__ = ["PASSWORD_ENV", "CERT_PASSWORD_ENV", "add_connection_arguments", "read_password", "client_settings"]

PASSWORD_ENV = "IGNITE_PASSWORD"
CERT_PASSWORD_ENV = "IGNITE_CERT_PASSWORD"


def add_connection_arguments(p: argparse.ArgumentParser) -> None:
    """``--host/--port/--username/--password-env/--cafile/--certfile/--keyfile`` as a group."""
    conn = p.add_argument_group(
        "connection",
        f"The password is read from the variable named by --password-env (default ${PASSWORD_ENV}) or "
        f"asked for on the terminal, never taken from the command line; a client key's password "
        f"comes from ${CERT_PASSWORD_ENV}.",
    )
    conn.add_argument("--host", default=DEFAULT_HOST, help=f"an Ignite node's host (default {DEFAULT_HOST})")
    conn.add_argument("--port", type=validate.port, default=DEFAULT_PORT,
                      help=f"its thin-client port (default {DEFAULT_PORT})")
    conn.add_argument("--username", help="user name, for clusters with authentication")
    conn.add_argument("--password-env", default=PASSWORD_ENV, metavar="VAR",
                      help=f"environment variable holding the password (default {PASSWORD_ENV})")
    conn.add_argument("--cafile", help="CA certificate (PEM) to verify the node's TLS certificate; enables TLS")
    conn.add_argument("--certfile", help="client certificate (PEM), for nodes that require one")
    conn.add_argument("--keyfile", help="private key of --certfile (PEM)")


def read_password(username: str | None, env: str = PASSWORD_ENV) -> str | None:
    """``username``'s password from ``$env``, else a terminal prompt; None without a user."""
    if username is None:
        return None
    value = os.environ.get(env)
    if value is not None:
        return value
    if not sys.stdin.isatty():
        raise ConfigurationError(f"--username {username} needs a password: set ${env} (no terminal to ask on)")
    return getpass.getpass(f"Ignite password for {username}: ")


def client_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The connection keywords (``username``, ``password``, ``cafile``, ``certfile``,
    ``keyfile``, ``cert_password``) a command's ``--username/--cafile/--certfile/--keyfile``
    ask for; only those given.  ``args.password_env``, when the command has it, names
    the password's variable."""
    keyfile = getattr(args, "keyfile", None)
    certfile = getattr(args, "certfile", None)
    if keyfile and not certfile:
        raise ConfigurationError("--keyfile needs --certfile")
    settings: dict[str, Any] = {}
    username = getattr(args, "username", None)
    if username is not None:
        settings.update(username=username,
                        password=read_password(username, getattr(args, "password_env", None) or PASSWORD_ENV))
    if getattr(args, "cafile", None):
        settings["cafile"] = args.cafile
    if certfile:
        settings.update(certfile=certfile, keyfile=keyfile)
        if os.environ.get(CERT_PASSWORD_ENV):
            settings["cert_password"] = os.environ[CERT_PASSWORD_ENV]
    return settings
