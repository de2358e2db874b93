"""Which compiled pieces of the op library, if any, a read may use, and why not when it may not.

The op library's loader (``native/data_source.py``) installs ``decode_layout``
(``native/tf_ignite_data_layout.cc``) here with :func:`set_compiled_decoder`, and
``ScanPump`` (``native/tf_ignite_data_scan.cc``) with :func:`set_scan_pump`, when
the library loads, or records why it did not (the library failed to load,
``TF_IGNITE_DECODER=python``, ``TF_IGNITE_SCAN=python``).  Every page that does
not go through the decoder is decoded by NumPy, and :func:`fallback` says why once
per process and reason; the scan read-ahead (``client/pump.py``) asks
:func:`installed_scan_pump`.  The slots live on this floor, below both the op
library's loader and the client, so that neither imports the other.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

__all__ = [
    "COMPILED",
    "PYTHON",
    "CompiledLayoutDecoder",
    "set_compiled_decoder",
    "compiled_decoder_reason",
    "installed",
    "fallback",
    "ScanPumpType",
    "set_scan_pump",
    "scan_pump_reason",
    "installed_scan_pump",
]

log = logging.getLogger(__name__)

#: ``decode_layout(page, n, row_len, fixed_idx, fixed_ref, leaves) -> bool``: the compiled layout
#: decoder (``native/tf_ignite_data_layout.cc``), installed by the op library's loader; None: NumPy only.
CompiledLayoutDecoder = Callable[[Any, int, int, np.ndarray, np.ndarray, list[tuple[int, int, int, Any]]], bool]

#: The paths a page can be decoded by, as ``decode_page`` counts them in its ``paths``.
COMPILED = "compiled"
PYTHON = "python"

_compiled: CompiledLayoutDecoder | None = None
#: Why the compiled decoder is not installed (one log line per reason and process names it).
_compiled_missing = "the op library is not loaded (TensorFlow is not imported in this process)"
_told: set[str] = set()


def set_compiled_decoder(decoder: CompiledLayoutDecoder | None, reason: str = "") -> None:
    """Install (or, with None and the ``reason`` why, remove) the compiled layout decoder.

    The op library's loader (``native/data_source.py``) installs it when the
    library loads, unless ``TF_IGNITE_DECODER=python`` forces the NumPy path.
    """
    global _compiled, _compiled_missing
    _compiled = decoder
    _compiled_missing = reason or "it was turned off"


def compiled_decoder_reason() -> str | None:
    """Why pages are not decoded by the compiled decoder (None when it is installed)."""
    return None if _compiled is not None else _compiled_missing


def installed() -> CompiledLayoutDecoder | None:
    """The compiled layout decoder, or None (then :func:`compiled_decoder_reason` says why)."""
    return _compiled


def fallback(reason: str, what: str = "page decoded in Python, not by the compiled decoder") -> None:
    """Say once per process and reason why work went the Python way (``what``: which work)."""
    key = f"{what}: {reason}"
    if key not in _told:
        _told.add(key)
        log.info("%s: %s", what, reason)


class ScanPumpType(Protocol):
    """``_tf_ignite_data.ScanPump`` (see ``native/tf_ignite_data_scan.cc`` and ``client/pump.py``)."""

    def __call__(
        self,
        fd: int,
        send_next: Callable[[], int],
        file_frame: Callable[[bytes], None],
        limit: int,
        timeout: float,
        max_frame: int,
        peer: str,
    ) -> Any: ...


_pump: ScanPumpType | None = None
_pump_missing = "the op library is not loaded (TensorFlow is not imported in this process)"


def set_scan_pump(pump: ScanPumpType | None, reason: str = "") -> None:
    """Install (or, with None and the ``reason`` why, remove) the compiled scan pump.

    The op library's loader (``native/data_source.py``) installs it when the
    library loads, unless ``TF_IGNITE_DECODER=python`` or ``TF_IGNITE_SCAN=python``
    forces the Python read-ahead.
    """
    global _pump, _pump_missing
    _pump = pump
    _pump_missing = reason or "it was turned off"


def scan_pump_reason() -> str | None:
    """Why scans are not fetched by the compiled pump (None when it is installed)."""
    return None if _pump is not None else _pump_missing


def installed_scan_pump() -> ScanPumpType | None:
    """The compiled scan pump, or None (then :func:`scan_pump_reason` says why)."""
    return _pump
