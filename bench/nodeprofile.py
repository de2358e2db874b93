"""Where an Ignite node's time goes: async-profiler attached to the node JVMs.

The Python profile (:mod:`bench.profiling`) sees our process only.  For the
filesystem scenarios most of the CPU is the node's (serving ``get``/``put``
of 4 MiB blocks), so the report also needs the node's side.  The agent is
async-profiler from Maven Central (``tools.profiler:async-profiler``, fetched
by ``bench/java``'s Maven build into ``target/profiler``); it is loaded into
the *running* nodes with ``jcmd PID JVMTI.agent_load`` right before the
profiled operations and stopped right after, so the profile holds those
operations alone -- not the node's start-up, the JIT's warm-up or the other
scenarios.  ``itimer`` sampling (CPU time, every thread including the JIT and
GC) needs no perf-event permissions.

Use::

    with NodeProfile(pids) as prof:
        ...                       # the operations to profile
    print(prof.summary())
"""

from __future__ import annotations

import collections
import platform
import re
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path
from types import TracebackType

from .javaclient import PROFILER
from .profiling import read_collapsed

__all__ = ["NodeProfile", "agent_library", "summarize_java_collapsed"]

#: Sampling interval (ns of CPU time).
INTERVAL_NS = 1_000_000

#: Where a node sample is charged: the outermost frame matching one of these decides.
_AREAS: list[tuple[str, re.Pattern[str]]] = [
    ("JIT compiler", re.compile(r"CompileBroker|C2Compiler|Compiler::compile")),
    ("garbage collector", re.compile(r"^G1|GCTask|ConcurrentGCThread|WorkerThread::run|VM_G1")),
    ("cache get (B+ tree lookup, value read from memory pages, copies)", re.compile(r"ClientCacheGet(All)?Request")),
    ("cache put (memory pages, free lists, backups)", re.compile(r"ClientCachePut(All)?Request|ClientCacheReplace")),
    # ignite:// deleting the blocks of removed files (about a third of the node CPU their puts took).
    ("block deletion (removed files' blocks)", re.compile(r"ClientCache(RemoveKeys|ClearKeys)Request")),
    ("transactions (file metadata)", re.compile(r"ClientTx|GridNearTx|IgniteTxManager|GridDhtTx")),
    ("response encoding (value -> response bytes)", re.compile(r"ClientListenerNioListener\.handleResponse|ClientMessageParser\.encode")),
    ("socket write (NIO)", re.compile(r"processWrite")),
    ("socket read, request decoding (NIO)", re.compile(r"processRead|GridNioCodecFilter|ClientMessageParser\.decode")),
]

# Frames (shortened) that only wrap the real work: not listed.
_WRAPPERS = re.compile(
    r"^(Thread\.run|GridWorker\.run|ThreadPoolExecutor.*|GridWorkerPool\$\d+\.run|GridNioFilter\w*.*|"
    r"GridNioAsyncNotifyFilter.*|GridNioServer\$\w*\.body|start_thread|thread_native_entry|Thread::call_run|"
    r"JavaThread::\w+|clone3|\[.*\])$"
)


def agent_library() -> Path | None:
    """async-profiler's agent for this machine, extracted from its Maven jar (None if missing)."""
    arch = {"x86_64": "linux-x64", "amd64": "linux-x64", "aarch64": "linux-arm64"}.get(platform.machine().lower())
    jars = sorted(PROFILER.glob("async-profiler-*.jar"))
    if arch is None or not jars or platform.system() != "Linux":
        return None
    out = PROFILER / arch / "libasyncProfiler.so"
    if not out.exists() or out.stat().st_mtime < jars[-1].stat().st_mtime:
        with zipfile.ZipFile(jars[-1]) as jar:
            jar.extract(f"{arch}/libasyncProfiler.so", PROFILER)
    return out


def _jcmd() -> str | None:
    from tensorflow_ignite.local.java import java_runtime

    candidate = Path(java_runtime().executable).resolve().with_name("jcmd")
    return str(candidate) if candidate.exists() else shutil.which("jcmd")


def _short(frame: str) -> str:
    """``org/apache/ignite/internal/.../BPlusTree.read`` -> ``BPlusTree.read``; native frames as they are."""
    frame = frame.replace("/", ".")
    if frame.endswith("_[j]") or frame.endswith("_[i]") or frame.endswith("_[0]"):
        frame = frame[:-4]
    m = re.match(r"^(?:[a-z_$][\w$]*\.)+([A-Z][\w$]*\.[\w$<>]+)$", frame)
    return m.group(1) if m else frame


def summarize_java_collapsed(path: str | Path, *, top: int = 14, per_area: int = 3) -> str:
    """Areas (with their hottest innermost frames) and inclusive shares of an async-profiler collapsed profile.

    Call chains show every frame at about the same share; the inclusive list
    keeps the innermost frame of such a run (the one that says most).
    """
    inclusive: collections.Counter[str] = collections.Counter()
    areas: collections.Counter[str] = collections.Counter()
    area_self: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    depth: dict[str, int] = {}
    total = 0
    for raw, n in read_collapsed(path):
        total += n
        area = next((name for f in raw for name, rx in _AREAS if rx.search(f.replace("/", "."))), "other")
        areas[area] += n
        frames = [_short(f) for f in raw]
        for i, f in enumerate(frames):
            depth[f] = max(depth.get(f, 0), i)
        for f in set(frames):
            if not _WRAPPERS.match(f):
                inclusive[f] += n
        if frames:
            area_self[area][frames[-1]] += n
    if not total:
        return "(no node samples)"
    ms = INTERVAL_NS / 1e6
    lines = [f"{total} samples ({total * ms / 1000:.2f} s of node CPU, every thread)", "node CPU by area, "
             "with the innermost frames most often on CPU there:"]
    for name, n in areas.most_common():
        hot = ", ".join(f"{f} {100 * k / n:.0f}%" for f, k in area_self[name].most_common(per_area))
        lines.append(f"  {100 * n / total:5.1f}%  {name}  [{hot}]")
    lines.append("inclusive  frame (of a call chain at one share, its innermost frame)")
    ranked = sorted(inclusive.items(), key=lambda kv: (-kv[1], -depth.get(kv[0], 0)))
    shown: list[int] = []
    for f, n in ranked:
        if any(abs(n - m) <= total * 0.005 for m in shown):
            continue
        shown.append(n)
        lines.append(f"  {100 * n / total:5.1f}%  {f}")
        if len(shown) >= top:
            break
    return "\n".join(lines)


class NodeProfile:
    """CPU profile of the given node JVMs between ``__enter__`` and ``__exit__``."""

    def __init__(self, pids: list[int]) -> None:
        self.pids = list(pids)
        self.agent = agent_library()
        self.jcmd = _jcmd()
        self.dir = Path(tempfile.mkdtemp(prefix="bench-nodeprof-"))
        self.files: list[Path] = []
        self.error: str | None = None
        if self.agent is None:
            self.error = "async-profiler's agent is not there (bench/java not built, or not Linux x64/arm64)"
        elif self.jcmd is None:
            self.error = "`jcmd` (JDK) was not found"

    def _load(self, pid: int, args: str) -> None:
        assert self.jcmd is not None and self.agent is not None
        # Quoted: jcmd would read "start,event=itimer" as a named argument "start,event".
        run = subprocess.run([self.jcmd, str(pid), "JVMTI.agent_load", str(self.agent), f'"{args}"'],
                             capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        if run.returncode != 0 or "return code: 0" not in run.stdout:
            raise RuntimeError(f"jcmd {pid} JVMTI.agent_load {args}: {(run.stdout + run.stderr).strip()[-300:]}")

    def __enter__(self) -> "NodeProfile":
        if self.error is None:
            try:
                for pid in self.pids:
                    self._load(pid, f"start,event=itimer,interval={INTERVAL_NS}")
            except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
                self.error = str(exc)
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        if self.error is not None:
            return
        for pid in self.pids:
            out = self.dir / f"node-{pid}.collapsed"
            try:
                self._load(pid, f"stop,file={out},collapsed")
                self.files.append(out)
            except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
                self.error = str(exc)

    def summary(self) -> str:
        """The summary of every node's profile (or why there is none)."""
        if self.error is not None:
            return f"(no node profile: {self.error})"
        if not self.files:
            return "(no node profile)"
        merged = self.dir / "nodes.collapsed"
        with open(merged, "w") as out:
            for f in self.files:
                if f.exists():
                    out.write(f.read_text(errors="replace"))
        return f"profiler: async-profiler (itimer, {INTERVAL_NS // 1000} us), nodes {self.pids}\n" + \
            summarize_java_collapsed(merged)
