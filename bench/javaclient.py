"""Run the Java thin-client reference programs of ``bench/java/`` from Python.

Programs built on Apache Ignite's own Java clients serve as references for our
Python client:

* ``ScanBench`` -- the benchmark reference: a ScanQuery over a cache (or one
  partition) with the thin client (``IgniteClient``, ignite-core 2.18.0), every field
  of every value touched, one JSON line per repetition;
* ``TypeWriter`` -- an independent thin-client writer of values of every Ignite type
  (or, with ``sql=True``, of a table with a column of every SQL type) that prints the
  values it wrote as JSON, for the decoder tests;
* ``ThickClientWriter`` -- a *thick* client (a client-mode node, run on the cluster's
  own Ignite jars) writing POJOs with ``cache.put`` and an ``IgniteDataStreamer``, Java
  collections, enums, nested objects, ``java.time`` fields and an ``@QuerySqlField`` type,
  printing what it wrote as JSON;
* ``LoadBench`` -- the loading references, one long-lived JVM per benchmark scenario
  (:class:`JavaLoader`): the thin client's ``putAll`` in batches, or a thick client (joined
  as ``ThickClientWriter`` joins) streaming with an ``IgniteDataStreamer``.
* ``Ignite3ReadBench`` (module ``bench/java/ignite3``, on Ignite 3's Java client 3.1.0) -- the Ignite 3
  scenario's reference (``bench/ignite3.py``): every row of a table by SQL or through the record view.
* ``FollowBench`` -- the follow scenario's reference (``bench/follow.py``): the thin client's
  ``ContinuousQuery`` with a local listener, latency from a row's written wall clock to the listener.

The JSON formats are documented in the Java sources (``ScanBench``, ``ExpectedJson``,
``TypeWriter``, ``ThickClientWriter``).  The JVM gets the project's ``--add-opens`` list (``JVM_OPENS``):
the thin client itself needs ``java.base/java.nio`` and ``java.base/java.util`` on
Java 17, and reading an SQL ``DATE`` column (stored by the server as an
OptimizedMarshaller blob of ``java.sql.Date``) also needs ``java.sql/java.sql``.

Usage::

    from javaclient import build_java_tools, run_scan_bench, run_thick_client_writer, run_type_writer
    build_java_tools()                      # mvn package when sources changed
    rows = run_type_writer("127.0.0.1", 10800, "my_cache", 5)
    runs = run_scan_bench("127.0.0.1", 10800, "my_cache", page_size=1024, repeat=3)
    entries = run_thick_client_writer(cluster.discovery_addresses(), cluster.ignite_classpath(), "pfx",
                                      work_dir=tmp)
    with JavaLoader.thin("127.0.0.1", 10800) as loader:   # or JavaLoader.thick(discovery, classpath, work_dir=...)
        rec = loader.load("cache", "rows.bin", rows=1000, row_bytes=784, labels=True, batch=500)
"""

from __future__ import annotations

import fcntl
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tensorflow_ignite.local.java import JVM_OPENS, java_runtime

__all__ = [
    "JavaLoader",
    "JavaToolError",
    "JAVA_MODULE",
    "build_java_tools",
    "java_tools_classpath",
    "run_ignite3_read_bench",
    "run_scan_bench",
    "run_thick_client_writer",
    "run_type_writer",
]

JAVA_MODULE = Path(__file__).resolve().parent / "java"
JAR = JAVA_MODULE / "target" / "tensorflow-ignite-bench.jar"
LIB = JAVA_MODULE / "target" / "lib"
#: async-profiler's jar (its native agents inside), for bench/nodeprofile.py.
PROFILER = JAVA_MODULE / "target" / "profiler"
PACKAGE = "org.tensorflow.ignite.bench"
#: The Ignite 3 reference program (``Ignite3ReadBench``): a module of its own, since Ignite 3's client
#: jars cannot share a classpath with the Ignite 2.18 ones.
IGNITE3_MODULE = JAVA_MODULE / "ignite3"
IGNITE3_JAR = IGNITE3_MODULE / "target" / "tensorflow-ignite-bench-ignite3.jar"
IGNITE3_LIB = IGNITE3_MODULE / "target" / "lib"

_build_lock = threading.Lock()


class JavaToolError(RuntimeError):
    """A Java reference program could not be built or failed; the message has its stderr tail."""


def _sources_mtime(module: Path = JAVA_MODULE) -> float:
    paths = [module / "pom.xml", *module.glob("src/**/*.java")]
    return max((p.stat().st_mtime for p in paths if p.is_file()), default=0.0)


def _stale(module: Path) -> bool:
    """Whether ``module`` (``bench/java`` or ``bench/java/ignite3``) needs ``mvn package``."""
    if module == IGNITE3_MODULE:
        if not IGNITE3_JAR.exists() or not any(IGNITE3_LIB.glob("ignite-client-*.jar")):
            return True
        return IGNITE3_JAR.stat().st_mtime < _sources_mtime(IGNITE3_MODULE)
    if not JAR.exists() or not any(LIB.glob("ignite-core-*.jar")) or not any(PROFILER.glob("async-profiler-*.jar")):
        return True
    return JAR.stat().st_mtime < _sources_mtime(JAVA_MODULE)


def _needs_build() -> bool:
    return _stale(JAVA_MODULE) or _stale(IGNITE3_MODULE)


def build_java_tools(*, quiet: bool = True) -> Path:
    """Build ``bench/java`` and ``bench/java/ignite3`` with Maven when their sources are newer than
    their jars; return the Ignite 2 programs' jar.

    Safe to call from several threads and processes at once (a file lock serializes
    the Maven runs).  Raises :class:`JavaToolError` when Maven is missing or fails.
    """
    with _build_lock:
        if not _needs_build():
            return JAR
        (JAVA_MODULE / "target").mkdir(exist_ok=True)
        with open(JAVA_MODULE / "target" / ".build.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            for module, jar in ((JAVA_MODULE, JAR), (IGNITE3_MODULE, IGNITE3_JAR)):
                if _stale(module):  # else built by another process while we waited, or up to date
                    _maven_package(module, quiet=quiet)
                    # Maven leaves an unchanged jar's mtime alone; touch it so the check above settles.
                    jar.touch()
    return JAR


def _maven_package(module: Path, *, quiet: bool) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JavaToolError(
            f"Maven (`mvn`) was not found, and the Java reference programs in {module} "
            "are not built (or older than their sources). Install Maven "
            "(`apt-get install maven`, or `make setup`) and retry."
        )
    flags = ["-B", "-q"] if quiet else ["-B"]
    proc = subprocess.run([mvn, *flags, "package", "-DskipTests"], cwd=module, capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        raise JavaToolError(
            f"`mvn package` failed in {module} (exit {proc.returncode}):\n" + _tail(proc.stdout + proc.stderr, 40)
        )


def java_tools_classpath() -> str:
    """The classpath of the reference programs (building them first when needed)."""
    build_java_tools()
    return os.pathsep.join([str(JAR), str(LIB / "*")])


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def _connection_args(
    host: str, port: int, addresses: Sequence[str | tuple[str, int]] | None, partition_awareness: bool
) -> list[str]:
    if addresses:
        joined = ",".join(a if isinstance(a, str) else f"{a[0]}:{a[1]}" for a in addresses)
        args = ["--addresses", joined]
    else:
        args = ["--host", host, "--port", str(port)]
    if not partition_awareness:
        args.append("--no-partition-awareness")
    return args


def _java_command(main: str, args: list[str], *, jvm_options: Sequence[str], classpath: str | None) -> list[str]:
    return [
        java_runtime().executable, *JVM_OPENS, "-Djava.net.preferIPv4Stack=true", *jvm_options,
        "-cp", classpath or java_tools_classpath(), f"{PACKAGE}.{main}", *args,
    ]


def _run(main: str, args: list[str], *, jvm_options: Sequence[str], timeout: float,
         classpath: str | None = None) -> list[dict[str, Any]]:
    cmd = _java_command(main, args, jvm_options=jvm_options, classpath=classpath)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            text=True)
    peak = _PeakWatcher(proc.pid)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()  # our own child, by its handle
        _, stderr = proc.communicate()
        raise JavaToolError(f"{main} {' '.join(args)} did not finish in {timeout:.0f}s:\n{_tail(stderr)}") from None
    finally:
        peak_rss = peak.stop()
    if proc.returncode != 0:
        raise JavaToolError(
            f"{main} {' '.join(args)} failed (exit {proc.returncode}):\n{_tail(stderr)}"
        )
    records = []
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            record = json.loads(line)
            record["peak_rss_bytes"] = peak_rss
            records.append(record)
    return records


class _PeakWatcher:
    """Polls a child's ``VmHWM`` (its lifetime peak resident set, Linux only) until stopped."""

    def __init__(self, pid: int, interval: float = 0.02) -> None:
        self.pid = pid
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"peak-rss-{pid}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        status = Path(f"/proc/{self.pid}/status")
        while True:
            try:
                for line in status.read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        self.peak = max(self.peak, int(line.split()[1]) * 1024)
                        break
            except (OSError, ValueError):
                pass
            if self._stop.wait(self.interval):
                return

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def run_scan_bench(
    host: str,
    port: int,
    cache: str,
    page_size: int,
    *,
    partition: int | None = None,
    repeat: int = 1,
    warmup: int = 0,
    mode: str = "binary",
    addresses: Sequence[str | tuple[str, int]] | None = None,
    partition_awareness: bool = True,
    jvm_options: Sequence[str] = (),
    timeout: float = 1800.0,
) -> list[dict[str, Any]]:
    """Scan ``cache`` with Ignite's Java thin client; one dict per measured repetition.

    Each dict has ``rep, rows, bytes, key_bytes, wire_bytes, seconds, rows_per_s,
    mb_per_s, checksum, cache, page_size, partition, mode, addresses`` (``seconds`` is
    the scan alone, after connecting and after ``warmup`` unmeasured scans;
    ``mb_per_s = bytes / 1e6 / seconds``; ``peak_rss_bytes`` is the JVM's peak resident set,
    warm-up included, 0 where ``/proc`` is not readable).  ``addresses`` (several ``"h:p"`` or
    ``(h, p)``) replaces ``host``/``port``; ``mode="deserialize"`` lets the client
    build Java objects, which works only for values of standard types.
    """
    args = [
        *_connection_args(host, port, addresses, partition_awareness),
        "--cache", cache, "--page-size", str(page_size),
        "--repeat", str(repeat), "--warmup", str(warmup), "--mode", mode,
    ]
    if partition is not None:
        args += ["--partition", str(partition)]
    return _run("ScanBench", args, jvm_options=jvm_options, timeout=timeout)


def run_ignite3_read_bench(
    addresses: Sequence[str | tuple[str, int]],
    table: str,
    *,
    mode: str = "sql",
    page_size: int = 1024,
    repeat: int = 1,
    warmup: int = 0,
    heap: str = "1g",
    timeout: float = 900.0,
) -> list[dict[str, Any]]:
    """Read every row of Ignite 3 table ``table`` with Ignite 3's Java client; one dict per measured repetition.

    ``mode="sql"``: ``client.sql().execute`` of ``SELECT * FROM table``; ``mode="records"``: the
    record view's ``query`` with no criteria (which Ignite 3.1's client runs as that same SELECT:
    its table API has no scan op).  Each dict has ``rep, rows, bytes, seconds, rows_per_s, mb_per_s,
    checksum, table, mode, page_size`` and ``peak_rss_bytes`` (``Ignite3ReadBench``'s Javadoc);
    ``seconds`` is the read alone, after connecting and after ``warmup`` unmeasured reads.
    """
    if mode not in ("sql", "records"):
        raise ValueError(f"mode={mode!r}: it must be 'sql' or 'records'")
    build_java_tools()
    joined = ",".join(a if isinstance(a, str) else f"{a[0]}:{a[1]}" for a in addresses)
    args = ["--addresses", joined, "--table", table, "--mode", mode, "--page-size", str(page_size),
            "--repeat", str(repeat), "--warmup", str(warmup)]
    classpath = os.pathsep.join([str(IGNITE3_JAR), str(IGNITE3_LIB / "*")])
    return _run("Ignite3ReadBench", args, jvm_options=[f"-Xmx{heap}"], timeout=timeout, classpath=classpath)


def run_type_writer(
    host: str,
    port: int,
    cache: str,
    n: int,
    sql: bool = False,
    *,
    table: str | None = None,
    value_type: str | None = None,
    array_length: int | None = None,
    misfit_key: int | None = None,
    verify: bool = True,
    addresses: Sequence[str | tuple[str, int]] | None = None,
    timeout: float = 300.0,
) -> list[dict[str, Any]]:
    """Write ``n`` entries with Ignite's Java thin client; return the expected records.

    Cache mode: keys ``0..n-1`` of cache ``cache`` (created if missing) get binary
    objects of type ``AllTypes`` with a field of every Ignite type.  Its primitive arrays
    (``f_bytes`` .. ``f_bools``) hold ``3 * key`` elements, or ``array_length`` in every key
    (fixed-length arrays: ``float[64]`` pixels as applications write them) but ``misfit_key``,
    whose arrays hold ``array_length - 1`` (a row that does not fit).  SQL mode: a table
    (default name: ``cache``) with a column of every SQL type, stored in cache
    ``cache``, rows ``ID = 0..n-1`` with rotating NULLs.  One dict per key::

        {"key": k, "type_name": ..., "fields": {...}, "types": {field: Ignite type name}}

    plus ``"table"`` and ``"sql_types"`` in SQL mode.  Every entry is read back through
    the Java client and must match (unless ``verify=False``).
    """
    args = [*_connection_args(host, port, addresses, True), "--cache", cache, "--count", str(n)]
    if sql:
        args.append("--sql")
        if table is not None:
            args += ["--table", table]
        if value_type is not None:
            args += ["--value-type", value_type]
    if array_length is not None:
        args += ["--array-length", str(array_length)]
        if misfit_key is not None:
            args += ["--misfit-key", str(misfit_key)]
    if not verify:
        args.append("--no-verify")
    # C1 only: the writer does little work, so JIT warm-up would cost more than it saves.
    return _run("TypeWriter", args, jvm_options=["-XX:TieredStopAtLevel=1"], timeout=timeout)


def run_thick_client_writer(
    discovery: Sequence[str],
    ignite_classpath: str,
    prefix: str,
    *,
    work_dir: str | os.PathLike[str],
    count: int = 20,
    stream_count: int = 500,
    array_length: int | None = None,
    host: str = "127.0.0.1",
    timeout: float = 300.0,
) -> list[dict[str, Any]]:
    """Write five caches ``<prefix>_put|_stream|_nested|_sql|_mixed`` with a Java thick client,
    and with ``array_length`` a sixth, ``<prefix>_digits``: ``stream_count`` POJOs ``{label: long,
    pixels: float[L], weights: double[L], counts: long[L]}`` (``L = array_length`` in every entry).

    The client is a client-mode Ignite node that joins the cluster through its
    ``discovery`` addresses (``"host:port"``, e.g. ``LocalCluster.discovery_addresses()``)
    and runs on ``ignite_classpath`` -- the servers' own Ignite jars
    (``LocalCluster.ignite_classpath()``): a client node must be of the servers' release.
    ``work_dir`` is its Ignite work directory.  ``count`` entries go to every cache but
    ``_stream``, which gets ``stream_count`` through an ``IgniteDataStreamer``.  Returns one
    dict per entry written and read back by the client::

        {"cache": name, "key": k, "type_name": class, "fields": {...}, "types": {field: Ignite type}}

    (``ThickClientWriter``'s Javadoc has the caches, types and JSON encoding).  The JVM
    stops with this process, and is killed after ``timeout`` seconds.
    """
    build_java_tools()
    args = [*_thick_client_args(discovery, host, work_dir),
            "--prefix", prefix, "--count", str(count), "--stream-count", str(stream_count)]
    if array_length is not None:
        args += ["--array-length", str(array_length)]
    jvm = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xms64m", "-Xmx256m", *THICK_CLIENT_PROPERTIES]
    return _run("ThickClientWriter", args, jvm_options=jvm, timeout=timeout,
                classpath=_thick_client_classpath(ignite_classpath))


#: System properties of every thick client we start: no banner, no update check, no advice.
THICK_CLIENT_PROPERTIES = ("-DIGNITE_QUIET=true", "-DIGNITE_NO_ASCII=true", "-DIGNITE_UPDATE_NOTIFIER=false",
                           "-DIGNITE_PERFORMANCE_SUGGESTIONS_DISABLED=true")


def _thick_client_args(discovery: Sequence[str], host: str, work_dir: str | os.PathLike[str]) -> list[str]:
    """How a thick client (``ThickClientWriter.configuration``) joins: the servers' discovery addresses,
    its own host and a free communication port, its work directory, and this process as its owner."""
    from tensorflow_ignite.local.cluster import find_free_port_block

    return ["--discovery", ",".join(discovery), "--host", host,
            "--communication-port", str(find_free_port_block(host, 1)), "--work-dir", str(work_dir),
            "--exit-with", str(os.getpid())]


def _thick_client_classpath(ignite_classpath: str) -> str:
    """Our programs on the cluster's own Ignite jars (a client node must run the servers' release)."""
    return os.pathsep.join([str(JAR), ignite_classpath])


class JavaLoader:
    """A running ``LoadBench`` JVM: Ignite's own Java clients loading rows, one command at a time.

    Built with :meth:`thin` (``ClientCache.putAll`` in batches through the thin client) or
    :meth:`thick` (a client-mode node, joined as ``ThickClientWriter`` joins, streaming with
    an ``IgniteDataStreamer``).  The JVM stays up between :meth:`load` calls, so its JIT warms
    up once; :meth:`close` (or leaving the ``with`` block) stops it.  ``pid`` is the JVM's
    process id (its sockets are what :mod:`bench.loading` counts per node).
    """

    def __init__(self, args: list[str], *, jvm_options: Sequence[str], classpath: str | None = None,
                 start_timeout: float = 180.0) -> None:
        build_java_tools()
        self.kind = args[args.index("--client") + 1]
        self._log = tempfile.NamedTemporaryFile("w+", prefix=f"loadbench-{self.kind}-", suffix=".log")
        self._proc = subprocess.Popen(
            _java_command("LoadBench", args, jvm_options=jvm_options, classpath=classpath),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True, bufsize=1)
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, name=f"loadbench-{self._proc.pid}", daemon=True)
        self._reader.start()
        try:
            ready = self._next(start_timeout, "start")
        except BaseException:
            self.close()
            raise
        #: Seconds the JVM took to connect (thin) or join the cluster (thick).
        self.start_seconds = float(ready.get("start_seconds", 0.0))

    @classmethod
    def thin(cls, host: str, port: int, *, addresses: Sequence[str | tuple[str, int]] | None = None,
             partition_awareness: bool = True, heap: str = "2g") -> "JavaLoader":
        """The thin client, connected to ``host:port`` (or to every one of ``addresses``)."""
        return cls(["--client", "thin", *_connection_args(host, port, addresses, partition_awareness)],
                   jvm_options=[f"-Xmx{heap}"])

    @classmethod
    def thick(cls, discovery: Sequence[str], ignite_classpath: str, *, work_dir: str | os.PathLike[str],
              host: str = "127.0.0.1", heap: str = "4g") -> "JavaLoader":
        """A thick client joining through ``discovery`` (``LocalCluster.discovery_addresses()``), run on
        ``ignite_classpath`` (``LocalCluster.ignite_classpath()``)."""
        return cls(["--client", "thick", *_thick_client_args(discovery, host, work_dir)],
                   jvm_options=[f"-Xmx{heap}", *THICK_CLIENT_PROPERTIES],
                   classpath=_thick_client_classpath(ignite_classpath))

    @property
    def pid(self) -> int:
        return self._proc.pid

    def load(self, cache: str, path: str | os.PathLike[str], *, rows: int, row_bytes: int, labels: bool,
             batch: int = 0, buffer: int = 0, timeout: float = 900.0) -> dict[str, Any]:
        """Load ``rows`` rows of ``path`` into the existing cache ``cache``; returns LoadBench's record
        (``rows, bytes, seconds, rows_per_s, mb_per_s, requests``).  ``batch``: rows per ``putAll``
        (thin); ``buffer``: the streamer's ``perNodeBufferSize`` (thick; 0 = Ignite's default)."""
        if self._proc.poll() is not None:
            raise JavaToolError(f"LoadBench ({self.kind}) has exited ({self._proc.returncode}):\n{self._tail()}")
        fields = ["load", cache, str(path), str(rows), str(row_bytes), "1" if labels else "0", str(batch),
                  str(buffer)]
        assert self._proc.stdin is not None
        self._proc.stdin.write("\t".join(fields) + "\n")
        self._proc.stdin.flush()
        record = self._next(timeout, f"load {cache}")
        if "error" in record:
            raise JavaToolError(f"LoadBench ({self.kind}) failed to load cache {cache!r}: {record['error']}")
        return record

    def close(self, timeout: float = 60.0) -> None:
        """Ask the JVM to leave (a thick client leaves the cluster); kill it after ``timeout`` seconds."""
        if self._proc.poll() is None:
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.write("quit\n")
                self._proc.stdin.close()
            except OSError:
                pass
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()  # our own child, by its handle
                self._proc.wait()
        self._log.close()

    def __enter__(self) -> "JavaLoader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            if line.startswith("{"):
                self._lines.put(line)
        self._lines.put(None)

    def _next(self, timeout: float, what: str) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        try:
            line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise JavaToolError(f"LoadBench ({self.kind}): no answer to {what} in {timeout:.0f} s:\n"
                                f"{self._tail()}") from None
        if line is None:
            self._proc.wait()
            raise JavaToolError(f"LoadBench ({self.kind}) exited ({self._proc.returncode}) during {what}:\n"
                                f"{self._tail()}")
        return dict(json.loads(line))

    def _tail(self) -> str:
        self._log.flush()
        try:
            return _tail(Path(self._log.name).read_text(errors="replace"))
        except OSError:
            return ""
