"""Where ``ignite://`` paths live and how to connect: settings, endpoints, the store pool.

Resolution, for each setting, first match wins:

1. :func:`configure` (programmatic, this process only);
2. ``IGNITE_FS_<NAME>`` environment variables;
3. ``IGNITE_DATASET_<NAME>`` (the dataset's variables: one set of settings
   serves both features);
4. built-in defaults (``127.0.0.1:10800``, no TLS, no credentials).

The connection variables are those of every feature, read by
:meth:`ConnectionOptions.from_env <tensorflow_ignite.client.ConnectionOptions.from_env>`
(:mod:`tensorflow_ignite.client.env`): ``HOST``, ``PORT`` (the default endpoint, used for
``ignite:///path`` and ``igfs:///path``), ``USERNAME``, ``PASSWORD``, ``CAFILE``,
``CERTFILE``, ``KEYFILE``, ``CERT_PASSWORD``, ``SERVER_HOSTNAME``,
``INSECURE_SKIP_VERIFY``, ``INSECURE_SKIP_HOSTNAME_VERIFICATION``, ``TIMEOUT``;
file-store options (``IGNITE_FS_`` only): ``CACHE_PREFIX`` (default
``ignite_fs``), ``BLOCK_SIZE`` (bytes, suffixes ``k``/``m`` allowed; default 4m),
``BACKUPS`` (default 1), ``GARBAGE_DELAY`` (seconds replaced or removed content
stays readable for readers in other processes that opened it before; default 10),
``READ_AHEAD`` (bytes a sequential reader fetches ahead, per open file, suffixes
allowed; default 16m, 0 turns it off), ``GENERATION`` (``2``, ``3`` or ``auto``, the
default: the endpoint's handshake tells whether it is an Ignite 2 or an Ignite 3 node),
``STORAGE`` (where the store's tables live: an Ignite 3 storage profile of the nodes,
such as an in-memory ``aimem`` one, or an Ignite 2 data region; default: the cluster's
default one).

``ignite://host:port/path`` always uses that host and port; a host of several
nodes of one cluster, ``ignite://h1:10800,h2:10800/path``, dials them in that
order (the first that answers), so the store starts and goes on while any of
them is up.  An Ignite 2 client also learns every other node's address from
the cluster; an Ignite 3 client knows only the nodes named, so there naming
several is the way to survive the loss of the first.  Credentials and
TLS are never taken from a URI (a ``user@`` part is rejected without echoing
it).  One :class:`~tensorflow_ignite.fs.store.IgniteFileStore` exists per
(endpoint, settings), its client the process's shared one for those
connection options (:mod:`tensorflow_ignite.client.pool`, which datasets and
writes use too, so one connection per node) -- shared by TensorFlow, fsspec
and every thread of the process.  A forked child drops the stores it
inherited, as the client pool drops their clients (:func:`~tensorflow_ignite.client.pool.at_fork_in_child`).
"""

from __future__ import annotations

import atexit
import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from ..client.env import CONNECTION_VARIABLES, DATASET_PREFIX, FS_PREFIX, connection_env, parse_int
from ..client.options import ConnectionOptions
from ..client.pool import at_fork_in_child
from ..errors import ConfigurationError
from ..generation import parse_generation
from ..protocol.endpoint import DEFAULT_PORT, format_endpoint

if TYPE_CHECKING:
    from .store import IgniteFileStore

__all__ = [
    "FsSettings",
    "configure",
    "parse_settings",
    "settings",
    "overrides",
    "reset",
    "parse_endpoint",
    "parse_endpoints",
    "reject_query",
    "store_for",
    "close_stores",
    "SETTING_NAMES",
    "DEFAULT_PORT",
]

_PREFIXES = (FS_PREFIX, DATASET_PREFIX)


@dataclass(frozen=True)
class FsSettings:
    """Everything that decides which store a path lives in: the cluster (``connection``, whose
    client is the process's shared one) and the store's own options."""

    connection: ConnectionOptions = field(default_factory=ConnectionOptions)
    cache_prefix: str = "ignite_fs"
    block_size: int = 4 << 20
    backups: int = 1
    #: Seconds replaced or removed content is kept for readers in other processes.
    garbage_delay: float = 10.0
    #: Bytes a sequential reader fetches ahead, per open file (whole blocks; 0: none).
    read_ahead: int = 16 << 20
    #: The cluster's Ignite generation: ``"2"``, ``"3"`` or ``"auto"`` (the handshake tells).
    generation: str = "auto"
    #: The storage profile (Ignite 3) or data region (Ignite 2) of the store's tables; "": the default.
    storage: str = ""

    def updated(self, **changes: Any) -> "FsSettings":
        """A copy with ``changes`` applied: fields of this class or of :class:`ConnectionOptions`."""
        mine = {k: changes.pop(k) for k in _STORE_FIELDS if k in changes}
        connection = replace(self.connection, **changes) if changes else self.connection
        return replace(self, connection=connection, **mine)


_STORE_FIELDS = tuple(f.name for f in fields(FsSettings) if f.name != "connection")
#: What :func:`configure` accepts: the connection's fields (but its fallbacks) and the store's.
SETTING_NAMES = tuple(n for n in ConnectionOptions.field_names() if n != "fallbacks") + _STORE_FIELDS

_lock = threading.Lock()
_overrides: dict[str, Any] = {}
_overrides_version = 0
_stores: dict[FsSettings, "IgniteFileStore"] = {}
# (host, environment snapshot, overrides version, per-call overrides) -> store:
# the per-operation path, which must not re-parse the environment every time.
_resolved: dict[tuple[Any, ...], "IgniteFileStore"] = {}
_settings_cache: tuple[Any, ...] | None = None
_exit_hook = False

_ENV_NAMES = tuple(prefix + name.upper() for name in CONNECTION_VARIABLES for prefix in _PREFIXES) + tuple(
    FS_PREFIX + name.upper() for name in _STORE_FIELDS
)
_ENV_KEYS_RAW = tuple(os.fsencode(n) for n in _ENV_NAMES)


def _env_snapshot() -> tuple[Any, ...]:
    """The values of every variable this module reads, cheaply (``os.environ`` lookups
    are slow; its underlying ``_data`` dict, kept in sync by ``os.environ``, is not)."""
    data = getattr(os.environ, "_data", None)
    if isinstance(data, dict):
        return tuple(data.get(k) for k in _ENV_KEYS_RAW)
    return tuple(os.environ.get(n) for n in _ENV_NAMES)  # pragma: no cover - other platforms


def _parse_size(name: str, text: str, minimum: int = 1024) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmg]?)(?:i?b)?\s*", text.lower())
    if m is None:
        raise ConfigurationError(f"{name}={text!r} is not a size in bytes (e.g. 4194304, 4m, 512k)")
    value = int(float(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2)])
    if value < minimum:
        raise ConfigurationError(f"{name}={text!r}: must be at least {minimum:,} bytes")
    return value


def _store_env(environ: Any) -> dict[str, Any]:
    """The file-store options the ``IGNITE_FS_*`` variables set."""
    out: dict[str, Any] = {}
    for key in _STORE_FIELDS:
        name = FS_PREFIX + key.upper()
        raw = environ.get(name)
        if not raw:
            continue
        if key == "block_size":
            out[key] = _parse_size(name, raw)
        elif key == "read_ahead":
            out[key] = _parse_size(name, raw, minimum=0)
        elif key == "backups":
            out[key] = parse_int(name, raw)
        elif key == "generation":
            out[key] = parse_generation(raw, name)
        elif key == "garbage_delay":
            try:
                out[key] = float(raw)
            except ValueError:
                raise ConfigurationError(f"{name}={raw!r} is not a number of seconds") from None
        else:
            out[key] = raw
    return out


def configure(**options: Any) -> FsSettings:
    """Set defaults for ``ignite://`` in this process (they win over the environment).

    Accepts the fields of :class:`~tensorflow_ignite.client.ConnectionOptions`
    (``host``, ``port``, ``username``, ``password``, ``cafile``, ``certfile``,
    ``keyfile``, ``cert_password``, ``server_hostname``, the ``insecure_*``
    opt-outs, ``timeout``) and the store's own (``cache_prefix``,
    ``block_size``, ``backups``, ``garbage_delay``, ``read_ahead``, ``generation``, ``storage``).  Passing ``None`` removes
    an override.  Returns the resulting default settings.
    Stores already open keep their settings; new paths use the new ones.
    """
    options = parse_settings(options)
    global _overrides_version
    with _lock:
        for k, v in options.items():
            if v is None:
                _overrides.pop(k, None)
            else:
                _overrides[k] = v
        _overrides_version += 1
    return settings()


def parse_settings(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` checked against :data:`SETTING_NAMES`, sizes parsed: what :func:`configure`
    and :class:`~tensorflow_ignite.fs.fsspec_fs.IgniteFileSystem` do with their keyword arguments.

    ``block_size`` and ``read_ahead`` take bytes as an int or a string with the
    suffixes ``IGNITE_FS_BLOCK_SIZE`` takes (``"8m"``, ``"8MiB"``, ``"512k"``); other
    values pass as given, ``None`` included (it removes an override).  Raises
    :class:`~tensorflow_ignite.errors.ConfigurationError` naming an unknown setting or a
    size it cannot read.
    """
    known = set(SETTING_NAMES)
    unknown = set(options) - known
    if unknown:
        raise ConfigurationError(
            f"unknown ignite:// setting(s): {', '.join(sorted(unknown))}; expected some of {', '.join(sorted(known))}"
        )
    out = dict(options)
    for name, minimum in (("block_size", 1024), ("read_ahead", 0)):
        if out.get(name) is not None:
            out[name] = _parse_size(name, str(out[name]), minimum=minimum)
    if out.get("generation") is not None:
        out["generation"] = parse_generation(out["generation"])
    return out


def overrides() -> dict[str, Any]:
    """A copy of the :func:`configure` values in force now (to put them back later)."""
    with _lock:
        return dict(_overrides)


def reset() -> None:
    """Forget :func:`configure` overrides (open stores stay open)."""
    global _overrides_version
    with _lock:
        _overrides.clear()
        _overrides_version += 1


def settings(environ: Any = None) -> FsSettings:
    """The default settings now: :func:`configure`, then the environment, then defaults."""
    global _settings_cache
    if environ is None:
        key = (_env_snapshot(), _overrides_version)
        cached = _settings_cache
        if cached is not None and cached[0] == key:
            return cached[1]
    env = os.environ if environ is None else environ
    with _lock:
        given = dict(_overrides)
    result = FsSettings(ConnectionOptions(**connection_env(env, _PREFIXES)), **_store_env(env)).updated(**given)
    if environ is None:
        _settings_cache = (key, result)
    return result


def reject_query(uri: str) -> None:
    """Refuse ``...?key=value`` in an ignite:// URI without echoing it: settings (and
    credentials) never come from a URI, and a query string must not reach logs."""
    if "?" in uri and "=" in uri.partition("?")[2]:
        raise ConfigurationError(
            "query strings are not supported in ignite:// URIs (not shown here, they may hold "
            "secrets); set IGNITE_FS_* variables or call tensorflow_ignite.fs.configure(...)"
        )


def parse_endpoint(host: str, defaults: FsSettings | None = None) -> tuple[str, int]:
    """``""`` -> the default endpoint; ``"h"`` -> ``(h, default port)``; ``"h:p"``; ``"[v6]:p"``."""
    d = defaults or settings()
    if "@" in host:
        # Never echo what precedes '@': it is likely a password.
        raise ConfigurationError(
            "credentials in ignite:// URIs are not supported (and are never logged); set "
            "IGNITE_FS_USERNAME/IGNITE_FS_PASSWORD or call tensorflow_ignite.fs.configure(...)"
        )
    if not host:
        return d.connection.host, d.connection.port
    if host.startswith("["):
        name, bracket, rest = host[1:].partition("]")
        if not bracket or (rest and not rest.startswith(":")):
            raise ConfigurationError(
                f"malformed ignite:// host {host!r}: write an IPv6 address as [address] or [address]:port"
            )
        port_text = rest[1:]
    elif host.count(":") == 1:
        name, _, port_text = host.partition(":")
    else:
        name, port_text = host, ""
    if not port_text:
        return name or d.connection.host, d.connection.port
    try:
        port = int(port_text)
    except ValueError:
        raise ConfigurationError(f"bad port {port_text!r} in ignite:// host {name!r}") from None
    if not 0 < port < 65536:
        raise ConfigurationError(f"port {port} out of range in ignite:// host {name!r}")
    return name or d.connection.host, port


def parse_endpoints(host: str, defaults: FsSettings | None = None) -> list[tuple[str, int]]:
    """The endpoints of a URI host: one as :func:`parse_endpoint` reads it, or several, comma-separated
    (``"h1:10800,h2:10800"``: nodes of one cluster, dialled in that order -- the store goes on through
    another when the first is lost)."""
    if "," not in host:
        return [parse_endpoint(host, defaults)]
    pieces = [piece.strip() for piece in host.split(",")]
    if not all(pieces):
        raise ConfigurationError(f"empty endpoint in ignite:// host {host!r}: write host:port,host:port")
    return [parse_endpoint(piece, defaults) for piece in pieces]


def store_for(host: str = "", **overrides: Any) -> "IgniteFileStore":
    """The shared store for a URI host (``""`` = the default endpoint), opened on first use."""
    fast_key = (host, _env_snapshot(), _overrides_version, tuple(sorted(overrides.items())) if overrides else ())
    store = _resolved.get(fast_key)
    if store is not None and not store.closed:
        return store
    store = _store_for(host, overrides)
    with _lock:
        if len(_resolved) > 256:
            _resolved.clear()
        _resolved[fast_key] = store
    return store


def _store_for(host: str, overrides: dict[str, Any]) -> "IgniteFileStore":
    base = settings()
    if overrides:
        base = base.updated(**{k: v for k, v in parse_settings(overrides).items() if v is not None})
    (name, port), *others = parse_endpoints(host, base)
    key = base.updated(host=name.lower(), port=port, fallbacks=tuple(format_endpoint(h.lower(), p) for h, p in others))
    with _lock:
        store = _stores.get(key)
        if store is not None and not store.closed:
            return store
    from .store import IgniteFileStore  # heavy import (client, numpy) only when used

    # Connect outside the lock (it may take seconds); the first to finish wins.
    candidate = IgniteFileStore.connect(key)
    global _exit_hook
    with _lock:
        if not _exit_hook:
            # Registered after the client pool's hook (imported by connect), so it runs
            # first: stores delete the garbage they were still delaying while their
            # clients are open, instead of leaving it for collect_garbage().
            atexit.register(close_stores)
            _exit_hook = True
        store = _stores.get(key)
        if store is not None and not store.closed:
            winner = store
        else:
            _stores[key] = candidate
            winner = candidate
    if winner is not candidate:
        candidate.close()
    return winner


def close_stores() -> None:
    """Close every pooled store (they reopen on next use)."""
    with _lock:
        stores = list(_stores.values())
        _stores.clear()
        _resolved.clear()
    for s in stores:
        s.close()


def _forget_after_fork() -> None:
    """In a forked child the parent's stores (their clients, threads and sockets) are not
    ours: start afresh, closing nothing (the parent still uses them)."""
    global _lock
    _lock = threading.Lock()
    _stores.clear()
    _resolved.clear()


at_fork_in_child(_forget_after_fork)
