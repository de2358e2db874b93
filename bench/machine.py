"""Facts about the machine and the software a benchmark ran on."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["MachineInfo", "collect", "load_average"]


@dataclass
class MachineInfo:
    cpu_model: str
    cores: int
    ram_bytes: int
    kernel: str
    python: str
    tensorflow: str
    keras: str
    numpy: str
    pyignite: str
    ignite: str
    java: str
    date: str
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float] | None = None
    load_samples: list[tuple[float, float, float]] = field(default_factory=list)
    copy_fresh_mb_s: float = 0.0
    copy_reused_mb_s: float = 0.0

    def lines(self) -> list[str]:
        ram = f"{self.ram_bytes / (1 << 30):.1f} GiB"
        out = [
            f"- Machine: {self.cpu_model}, {self.cores} cores, {ram} RAM, Linux {self.kernel}",
            f"- Software: Python {self.python}, TensorFlow {self.tensorflow}, Keras {self.keras}, "
            f"NumPy {self.numpy}, pyignite {self.pyignite}; Apache Ignite {self.ignite}; {self.java}",
            f"- Date: {self.date}",
            f"- Load average (1/5/15 min) before: {_fmt_load(self.load_before)}"
            + (f"; after: {_fmt_load(self.load_after)}" if self.load_after else ""),
        ]
        if self.copy_fresh_mb_s:
            out.append(f"- Memory copy: {self.copy_fresh_mb_s:,.0f} MB/s into freshly allocated memory vs "
                       f"{self.copy_reused_mb_s:,.0f} MB/s into memory already touched (page-fault cost)")
        if self.load_samples:
            one_min = [s[0] for s in self.load_samples]
            out.append(f"- 1-min load average seen during the run: min {min(one_min):.2f}, "
                       f"max {max(one_min):.2f} (on {self.cores} cores; other engineers' jobs share the machine)")
        return out


def _fmt_load(load: tuple[float, float, float] | None) -> str:
    return "n/a" if load is None else " / ".join(f"{x:.2f}" for x in load)


def load_average() -> tuple[float, float, float]:
    try:
        return os.getloadavg()
    except OSError:
        return (0.0, 0.0, 0.0)


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _ram_bytes() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _version(module: str) -> str:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:  # noqa: BLE001 - any failure means "unknown"
        return "n/a"


def _java() -> str:
    try:
        from tensorflow_ignite.local.java import java_runtime

        exe = java_runtime().executable
        proc = subprocess.run([exe, "-version"], capture_output=True, text=True, check=False)
        first = (proc.stderr or proc.stdout).strip().splitlines()[0]
        m = re.search(r'"([^"]+)"', first)
        vendor = first.split()[0]
        return f"Java {m.group(1) if m else first} ({vendor})"
    except Exception:  # noqa: BLE001
        return "Java n/a"


def _ignite_version() -> str:
    from tensorflow_ignite.local.java import java_module_dir

    libs = java_module_dir() / "target"
    core = sorted(p.name for p in (libs / "lib").glob("ignite-core-*.jar"))
    sql = sorted(p.name for p in (libs / "lib-sql").glob("ignite-core-*.jar"))
    def ver(names: list[str]) -> str:
        return names[0][len("ignite-core-"):-len(".jar")] if names else "?"
    return f"{ver(core)} (SQL nodes: {ver(sql)} + H2)"


def collect() -> MachineInfo:
    """Everything but the after-run load, which the caller fills in."""
    import numpy

    tf_version = _version("tensorflow-cpu")
    if tf_version == "n/a":
        tf_version = _version("tensorflow")
    try:
        ignite = _ignite_version()
    except Exception:  # noqa: BLE001
        ignite = "n/a"
    from .memory import fresh_vs_reused_copy

    fresh, reused = fresh_vs_reused_copy()
    return MachineInfo(
        cpu_model=_cpu_model(),
        cores=os.cpu_count() or 0,
        ram_bytes=_ram_bytes(),
        kernel=platform.release(),
        python=platform.python_version(),
        tensorflow=tf_version,
        keras=_version("keras"),
        numpy=numpy.__version__,
        pyignite=_version("pyignite"),
        ignite=ignite,
        java=_java(),
        date=_dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        load_before=load_average(),
        copy_fresh_mb_s=fresh,
        copy_reused_mb_s=reused,
    )
