"""SIGTERM and SIGHUP stop a command as Ctrl+C does.

Commands that start child processes (``tensorboard``, ``node start
--foreground``, ``demo``) stop them on ``KeyboardInterrupt``, and followers
(``attach``, ``start``) detach.  Python raises ``KeyboardInterrupt`` for SIGINT
only; SIGTERM -- what ``kill``, systemd, ``docker stop`` and process managers
send -- and SIGHUP -- a closed terminal or SSH session -- end the process
without running that cleanup, leaving the children running.
:func:`terminate_as_interrupt` makes both raise :class:`Terminated` (a
``KeyboardInterrupt``) in the main thread while a command runs, so one path
handles all three.  A second SIGTERM or SIGHUP while the command cleans up is
ignored (SIGKILL still ends it); a second Ctrl+C interrupts the cleanup, as usual.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["Terminated", "terminate_as_interrupt", "SIGNALS"]

#: The signals turned into :class:`Terminated` (those this platform has).
SIGNALS: tuple[signal.Signals, ...] = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)


class Terminated(KeyboardInterrupt):
    """The command was asked to stop by a signal other than SIGINT (:attr:`signum`)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise(signum: int, frame: FrameType | None) -> None:
    for sig in SIGNALS:  # the first one stops the command; cleanup is not interrupted by more
        signal.signal(sig, signal.SIG_IGN)
    raise Terminated(signum)


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP raise :class:`Terminated` as SIGINT raises ``KeyboardInterrupt``.

    Only in the main thread (where Python runs signal handlers); elsewhere the
    block runs unchanged.  The previous handlers are restored afterwards.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _raise) for sig in SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
