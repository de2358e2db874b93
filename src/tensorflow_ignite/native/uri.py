"""``ignite://`` and ``igfs://`` URIs: parsing and the canonical form.

TensorFlow hands every path through the plugin's ``translate_name`` before it
calls an operation, and the C++ shim (``tf_ignite_fs.cc``) implements that in
C, without the GIL.  :func:`canonical_uri` is the same algorithm in Python so
that backends, the fsspec layer and tests agree with the shim byte for byte
(``tests/unit/test_native_tf.py`` checks the two against each other).

Canonical form: ``scheme://host/clean/path`` where the path always starts with
``/``, has no empty, ``.`` or ``..`` segments and no trailing ``/`` (except the
root, ``scheme://host/``).  ``..`` at the root stays at the root, as in
TensorFlow's ``io::CleanPath``.  The host is kept as written (it may be empty,
``igfs:///file``: the backend picks its default host then).
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["SCHEMES", "IgniteURI", "parse_uri", "canonical_uri", "clean_path", "is_root"]

#: The schemes the plugin registers with TensorFlow; ``igfs`` is an alias kept so
#: that code written for the old IGFS plugin runs unchanged.
SCHEMES: tuple[str, ...] = ("ignite", "igfs")


class IgniteURI(NamedTuple):
    """A parsed, canonical ``ignite://`` URI."""

    scheme: str
    host: str
    """``host``, ``host:port`` or empty (= the backend's default host)."""
    path: str
    """Absolute, clean path inside the host's file tree; ``/`` is the root."""

    def __str__(self) -> str:
        return f"{self.scheme}://{self.host}{self.path}"

    @property
    def is_root(self) -> bool:
        return self.path == "/"


def clean_path(path: str) -> str:
    """``"a//b/./c/"`` -> ``"/a/b/c"``; ``..`` stops at the root (TensorFlow's CleanPath)."""
    parts: list[str] = []
    for segment in path.split("/"):
        if segment in ("", "."):
            continue
        if segment == "..":
            if parts:
                parts.pop()
            continue
        parts.append(segment)
    return "/" + "/".join(parts)


def parse_uri(uri: str) -> IgniteURI:
    """Split ``uri`` into scheme, host and clean absolute path.

    Raises :class:`ValueError` when ``uri`` has no ``scheme://`` or the scheme is
    not one of :data:`SCHEMES`.
    """
    scheme, sep, rest = uri.partition("://")
    if not sep:
        raise ValueError(f"not an ignite:// URI (no scheme): {uri!r}")
    if scheme not in SCHEMES:
        raise ValueError(
            f"unsupported scheme {scheme!r} in {uri!r}; expected one of " + ", ".join(f"{s}://" for s in SCHEMES)
        )
    host, slash, path = rest.partition("/")
    return IgniteURI(scheme, host, clean_path(slash + path))


def canonical_uri(uri: str) -> str:
    """The canonical spelling of ``uri`` (what the shim's ``translate_name`` returns)."""
    return str(parse_uri(uri))


def is_root(uri: str) -> bool:
    """True when ``uri`` names the root directory of its host."""
    return parse_uri(uri).is_root
