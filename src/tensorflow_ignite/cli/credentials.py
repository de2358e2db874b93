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
import textwrap
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError
from ..protocol.endpoint import DEFAULT_HOST, DEFAULT_PORT
from . import validate
from .grammar import add_hook_option

if TYPE_CHECKING:
    from ..client import ConnectionOptions

__all__ = [
    "PASSWORD_ENV",
    "CERT_PASSWORD_ENV",
    "CONNECTION_OPTIONS",
    "add_connection_arguments",
    "read_password",
    "client_settings",
    "connection_options",
]

PASSWORD_ENV = "IGNITE_PASSWORD"
CERT_PASSWORD_ENV = "IGNITE_CERT_PASSWORD"

#: The options of :func:`add_connection_arguments`: every command that connects to a cluster takes all of them.
CONNECTION_OPTIONS: tuple[str, ...] = (
    "--host",
    "--port",
    "--username",
    "--password-env",
    "--cafile",
    "--certfile",
    "--keyfile",
    "--server-hostname",
)


def add_connection_arguments(p: argparse.ArgumentParser, *, without_host: str | None = None) -> Any:
    """The one set of connection options, as the group "connection" of ``p`` (returned, for more options).

    ``--host HOST[:PORT][,HOST[:PORT]...]`` (the first answering is used, the others are
    fallbacks) with ``--port`` the port of hosts given without one, ``--username`` and
    ``--password-env`` (the password never on the command line), and TLS: ``--cafile``,
    ``--certfile``, ``--keyfile``, ``--server-hostname``.  ``without_host`` makes
    ``--host`` optional (default None) and says what the command does without it
    (``demo``: start nodes of its own).
    """
    # Wrapped here: commands with a raw description formatter print the group's text as given.
    conn = p.add_argument_group(
        "connection",
        textwrap.fill(
            f"--host takes HOST, HOST:PORT or a comma-separated list of them (the others are tried when the "
            f"first does not answer). The password is read from the variable named by --password-env "
            f"(default ${PASSWORD_ENV}) or asked for on the terminal, never taken from the command line; a "
            f"client key's password comes from ${CERT_PASSWORD_ENV}. Any of --cafile, --certfile and "
            f"--server-hostname turns TLS on.",
            width=78,
        ),
    )
    if without_host is None:
        conn.add_argument(
            "--host",
            default=DEFAULT_HOST,
            metavar="HOST[:PORT][,...]",
            help=f"the cluster's node(s) to connect to (default {DEFAULT_HOST})",
        )
    else:
        conn.add_argument(
            "--host",
            default=None,
            metavar="HOST[:PORT][,...]",
            help=f"the cluster's node(s) to connect to (default: {without_host})",
        )
    conn.add_argument(
        "--port",
        type=validate.port,
        default=DEFAULT_PORT,
        help=f"thin-client port of the hosts given without one (default {DEFAULT_PORT})",
    )
    conn.add_argument("--username", help="user name, for clusters with authentication")
    conn.add_argument(
        "--password-env",
        default=PASSWORD_ENV,
        metavar="VAR",
        help=f"environment variable holding the password (default {PASSWORD_ENV}; "
        f"without it, asked for on the terminal)",
    )
    # Hidden: without it argparse would take `--password SECRET` as an abbreviation of --password-env.
    add_hook_option(
        conn, "--password", hook=_refuse_password, nargs="?", default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )
    conn.add_argument("--cafile", help="CA certificate (PEM) to verify the nodes' TLS certificates; enables TLS")
    conn.add_argument("--certfile", help="client certificate (PEM), for nodes that require one; enables TLS")
    conn.add_argument("--keyfile", help="private key of --certfile (PEM)")
    conn.add_argument(
        "--server-hostname",
        metavar="NAME",
        help="the name the nodes' TLS certificates are checked against (default: the host dialled); enables TLS",
    )
    return conn


def _refuse_password(parser: argparse.ArgumentParser, _ns: argparse.Namespace, _value: Any, _used: str | None) -> None:
    """``--password``: refused, without repeating its value (it would end up in logs)."""
    parser.error(
        f"--password: a password is never a command-line argument (other users could read it in "
        f"`ps`): set ${PASSWORD_ENV} (or the variable --password-env names), or let it be asked for "
        f"on the terminal"
    )


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
    ``keyfile``, ``cert_password``, ``server_hostname``) a command's
    ``--username/--cafile/--certfile/--keyfile/--server-hostname`` ask for; only those given.  ``args.password_env``, when the command has it, names
    the password's variable."""
    keyfile = getattr(args, "keyfile", None)
    certfile = getattr(args, "certfile", None)
    if keyfile and not certfile:
        raise ConfigurationError("--keyfile needs --certfile")
    settings: dict[str, Any] = {}
    username = getattr(args, "username", None)
    if username is not None:
        settings.update(
            username=username, password=read_password(username, getattr(args, "password_env", None) or PASSWORD_ENV)
        )
    if getattr(args, "cafile", None):
        settings["cafile"] = args.cafile
    if certfile:
        settings.update(certfile=certfile, keyfile=keyfile)
        if os.environ.get(CERT_PASSWORD_ENV):
            settings["cert_password"] = os.environ[CERT_PASSWORD_ENV]
    if getattr(args, "server_hostname", None):
        settings["server_hostname"] = args.server_hostname
    return settings


def connection_options(args: argparse.Namespace) -> "ConnectionOptions":
    """The :class:`~tensorflow_ignite.client.ConnectionOptions` of a command's connection options
    (``--host`` may list several ``HOST[:PORT]``; the password is read as :func:`read_password` says)."""
    from ..client import ConnectionOptions

    return ConnectionOptions.from_address(args.host, args.port, **client_settings(args))
