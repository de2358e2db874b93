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
from typing import Any, Generic, Protocol, TypeVar

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

_T = TypeVar("_T")


class _Slot(Generic[_T]):
    """One compiled piece the op library's loader installs, or why it is missing."""

    def __init__(self) -> None:
        self.value: _T | None = None
        self.missing = "the op library is not loaded (TensorFlow is not imported in this process)"

    def set(self, value: _T | None, reason: str) -> None:
        self.value = value
        self.missing = reason or "it was turned off"

    def reason(self) -> str | None:
        return None if self.value is not None else self.missing


_decoder: _Slot[CompiledLayoutDecoder] = _Slot()
_told: set[str] = set()


def set_compiled_decoder(decoder: CompiledLayoutDecoder | None, reason: str = "") -> None:
    """Install (or, with None and the ``reason`` why, remove) the compiled layout decoder.

    The op library's loader (``native/data_source.py``) installs it when the
    library loads, unless ``TF_IGNITE_DECODER=python`` forces the NumPy path.
    """
    _decoder.set(decoder, reason)


def compiled_decoder_reason() -> str | None:
    """Why pages are not decoded by the compiled decoder (None when it is installed)."""
    return _decoder.reason()


def installed() -> CompiledLayoutDecoder | None:
    """The compiled layout decoder, or None (then :func:`compiled_decoder_reason` says why)."""
    return _decoder.value


def fallback(reason: str, what: str = "page decoded in Python, not by the compiled decoder") -> None:
    """Say once per process and reason why work went the Python way (``what``: which work)."""
    key = f"{what}: {reason}"
    if key not in _told:
        _told.add(key)
        log.info("%s: %s", what, reason)


class ScanPumpType(Protocol):
    """``_tf_ignite_data.ScanPump`` (see ``native/tf_ignite_data_scan.cc`` and ``client/pump.py``).

    ``SendLock()`` (absent from a library built from older sources): the lock a lease installs as the
    connection's send lock, shared with the pump's thread when the pump sends the page requests itself
    (``request``, ``send_lock``, ``take_ids``).
    """

    def __call__(
        self,
        fd: int,
        send_next: Callable[[], int] | None,
        file_frame: Callable[[bytes], None],
        limit: int,
        timeout: float,
        max_frame: int,
        peer: str,
        *,
        request: bytes | None = None,
        send_lock: Any = None,
        take_ids: Callable[[int], int] | None = None,
    ) -> Any: ...


_pump: _Slot[ScanPumpType] = _Slot()


def set_scan_pump(pump: ScanPumpType | None, reason: str = "") -> None:
    """Install (or, with None and the ``reason`` why, remove) the compiled scan pump.

    The op library's loader (``native/data_source.py``) installs it when the
    library loads, unless ``TF_IGNITE_DECODER=python`` or ``TF_IGNITE_SCAN=python``
    forces the Python read-ahead.
    """
    _pump.set(pump, reason)


def scan_pump_reason() -> str | None:
    """Why scans are not fetched by the compiled pump (None when it is installed)."""
    return _pump.reason()


def installed_scan_pump() -> ScanPumpType | None:
    """The compiled scan pump, or None (then :func:`scan_pump_reason` says why)."""
    return _pump.value
