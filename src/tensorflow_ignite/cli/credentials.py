"""How every ``ignite-tf`` command gets credentials and TLS files: one set of rules.

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

__all__ = ["PASSWORD_ENV", "CERT_PASSWORD_ENV", "read_password", "client_settings"]

PASSWORD_ENV = "IGNITE_PASSWORD"
CERT_PASSWORD_ENV = "IGNITE_CERT_PASSWORD"


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
