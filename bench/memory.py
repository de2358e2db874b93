"""Peak resident memory of a piece of work, for this process or a child process.

In-process (Python contenders): Linux lets a process reset its own high-water
mark (``echo 5 > /proc/self/clear_refs``), so the peak RSS *during* the work is
``VmHWM`` read afterwards, minus ``VmRSS`` just before.  Where that reset is
not allowed a thread samples ``VmRSS`` every few milliseconds instead.

The JVM of the Java reference is measured by :mod:`bench.javaclient` (its
``VmHWM`` polled until it exits): an absolute peak (heap, metaspace, JIT,
warm-up scans), not a delta.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import TracebackType

__all__ = ["PeakRSS", "rss_bytes", "minor_faults", "format_bytes", "fresh_vs_reused_copy"]


def _status_field(pid: int | str, name: str) -> int | None:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(name + ":"):
            parts = line.split()
            return int(parts[1]) * 1024  # kB
    return None


def rss_bytes(pid: int | str = "self") -> int:
    """Current resident set size of a process (0 when unknown)."""
    return _status_field(pid, "VmRSS") or 0


def minor_faults(pid: int | str = "self") -> int:
    """Minor page faults of a process so far (all threads), 0 when unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[7])  # field 10 of stat(5)


def fresh_vs_reused_copy(nbytes: int = 256 << 20) -> tuple[float, float]:
    """MB/s of copying ``nbytes`` into freshly mapped memory vs into memory already touched.

    On VMs where a page fault is expensive the first figure is several times lower:
    every buffer a reader allocates anew pays it once per page.
    """
    import numpy as np

    src = np.ones(nbytes, np.uint8)
    fresh: list[float] = []
    reused: list[float] = []
    for _ in range(3):
        t0 = time.perf_counter()
        dst = src.copy()
        fresh.append(nbytes / 1e6 / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        np.copyto(dst, src)
        reused.append(nbytes / 1e6 / (time.perf_counter() - t0))
        del dst
    fresh, reused = sorted(fresh)[1], sorted(reused)[1]  # medians
    return fresh, reused


def _reset_hwm() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


class PeakRSS:
    """``with PeakRSS() as m: work()`` then ``m.delta`` = peak RSS during the work minus RSS before.

    ``m.faults`` counts the minor page faults of the process meanwhile (every
    freshly allocated page is one).
    """

    def __init__(self, interval: float = 0.005) -> None:
        self.interval = interval
        self.before = 0
        self.peak = 0
        self.faults = 0
        self.method = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def delta(self) -> int:
        return max(0, self.peak - self.before)

    def __enter__(self) -> "PeakRSS":
        self.faults = -minor_faults()
        self.before = rss_bytes()
        if _reset_hwm():
            self.method = "VmHWM"
        else:
            self.method = "sampled VmRSS"
            self.peak = self.before
            self._thread = threading.Thread(target=self._sample, name="bench-rss", daemon=True)
            self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, rss_bytes())

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.faults += minor_faults()
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self.peak = max(self.peak, rss_bytes())
        else:
            self.peak = _status_field("self", "VmHWM") or rss_bytes()


def format_bytes(n: float | None) -> str:
    if n is None:
        return "n/a"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def _selftest() -> None:  # pragma: no cover - manual check
    with PeakRSS() as m:
        block = bytearray(64 << 20)
        time.sleep(0.05)
        del block
    print(m.method, format_bytes(m.delta))


if __name__ == "__main__":  # pragma: no cover
    _selftest()
