"""Lazy module attributes: the one mechanism behind the package's deferred imports.

The command line, the worker shim and ``import tensorflow_ignite`` must start in
milliseconds, without TensorFlow, NumPy or the client; their packages name what
they export in a table and import it on first use.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_getattr"]


def lazy_getattr(
    module: str,
    table: Mapping[str, str],
    *,
    on_load: Callable[[str], None] | None = None,
) -> Callable[[str], Any]:
    """A module-level ``__getattr__`` for ``module``: ``table`` maps an attribute name to the
    module (absolute, or relative to ``module``) that defines it under the same name.

    The first access imports it and stores it in ``module``, so later ones are plain
    attribute reads; ``on_load(name)`` runs after each first import.
    """

    def __getattr__(name: str) -> Any:
        source = table.get(name)
        if source is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source, module), name)
        setattr(sys.modules[module], name, value)
        if on_load is not None:
            on_load(name)
        return value

    return __getattr__
