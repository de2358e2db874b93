"""Real Apache Ignite server nodes on this machine, started and stopped by us.

:class:`LocalCluster` is the one mechanism behind ``ignite-tf node start|stop|status``,
the pytest fixtures, the demo and the benchmarks.  Each node is a JVM running the
project's ``NodeLauncher`` with loopback-only discovery over a port range that no
other cluster uses, a log file and a JSON status file under the work directory.

Readiness is observed, never assumed: a node is ready when its status file reports
the expected number of server nodes (and an active cluster) and a thin-client
handshake on its client port succeeds.  Stopping is exact: only the PIDs recorded
in the cluster's state file, and only while their command line still carries that
work directory, are signalled.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ..errors import ConfigurationError, IgniteError, NodeError
from ..launcher.module import LauncherSecurity
from .cds import cds_flags, dump_recorded
from .java import JVM_OPENS, LAUNCHER_CLASS, java_runtime, launcher_classpath
from .state import write_json_atomically
from .tls import TLSMaterial, make_tls_material

__all__ = [
    "LocalCluster",
    "NodeInfo",
    "DEFAULT_USER",
    "DEFAULT_PASSWORD",
    "DISCOVERY_SLOTS",
    "find_free_port_block",
    "local_port_range",
    "PORT_RANGE_VARIABLE",
    "ephemeral_port_floor",
    "stop_nodes_with_process",
]

DEFAULT_USER = "ignite"
DEFAULT_PASSWORD = "ignite"
STATE_FILE = "cluster.json"
#: Discovery slots reserved per cluster: nodes added later find the others.
DISCOVERY_SLOTS = 10

_default_owner: int | None = None


def stop_nodes_with_process(pid: int | None) -> None:
    """Nodes started from now on in this process stop by themselves when process ``pid`` ends.

    However ``pid`` ends -- also killed by a signal or a CI timeout, when no
    ``stop()`` runs -- its nodes follow it within a second (the node launcher
    watches the process).  The pytest plugin and the benchmarks tie their nodes
    to their own process this way; ``None`` (the default) lets nodes outlive the
    process that started them, as ``ignite-tf node start`` needs.  A cluster's
    own ``owner_pid`` overrides this.
    """
    global _default_owner
    _default_owner = pid


def _owner_default() -> int | None:
    return _default_owner


@dataclass
class NodeInfo:
    """One node of a local cluster, as recorded in the cluster's state file."""

    index: int
    name: str
    host: str
    client_port: int
    discovery_port: int
    communication_port: int
    pid: int = 0
    log: str = ""
    status_file: str = ""
    #: A stock node's Spring XML file (its command line names it instead of a status file).
    config_file: str = ""
    #: Whether the node carries the tensorflow-ignite module (the launcher's attribute and service).
    launcher_module: bool = True

    def status(self) -> dict[str, Any]:
        """The node's last published status (``{}`` before it wrote any)."""
        try:
            status: dict[str, Any] = json.loads(Path(self.status_file).read_text())
            return status
        except (OSError, ValueError):
            return {}

    @property
    def marker(self) -> str:
        """A path only this node's command line carries (guards against PID reuse)."""
        return self.config_file or self.status_file

    def alive(self) -> bool:
        """True while our JVM for this node is running."""
        return _is_our_process(self.pid, self.marker)


def read_state(work_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The state file a local cluster of either generation wrote into ``work_dir`` (None: none, or unreadable)."""
    try:
        state = json.loads((Path(work_dir).resolve() / STATE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


class _Recorded(Protocol):
    """What the state file records of a local cluster of either generation."""

    work_dir: Path
    name: str
    host: str
    nodes: int
    tls: bool
    tls_client_auth: bool

    @property
    def members(self) -> Sequence[Any]: ...


def write_state(cluster: _Recorded, **fields: Any) -> None:
    """Record ``cluster`` in its work directory (no secrets), for :func:`read_state`: its name,
    host, node count, TLS and members, and the generation's own ``fields``."""
    state = {
        "name": cluster.name,
        "host": cluster.host,
        "nodes": cluster.nodes,
        "tls": cluster.tls,
        "tls_client_auth": cluster.tls_client_auth,
        **fields,
        "members": [asdict(m) for m in cluster.members],
    }
    write_json_atomically(cluster.work_dir / STATE_FILE, state)


def recorded_settings(work_dir: str | os.PathLike[str], state: dict[str, Any]) -> dict[str, Any]:
    """The constructor arguments :func:`write_state` recorded for every generation, from ``state``."""
    return {
        "work_dir": Path(work_dir),
        "name": state["name"],
        "host": state["host"],
        "nodes": state["nodes"],
        "tls": bool(state.get("tls")),
        "tls_client_auth": bool(state.get("tls_client_auth")),
    }


class _Process(Protocol):
    pid: int


_Node = TypeVar("_Node", bound=_Process)


def terminate_nodes(
    nodes: Sequence[_Node],
    is_alive: Callable[[_Node], bool],
    wait_gone: Callable[[_Node, float], object],
    timeout: float,
) -> None:
    """SIGTERM every node of ``nodes`` that runs, wait up to ``timeout`` for them all, then SIGKILL what
    is left (and wait up to 10 s more for each); both generations' local clusters stop this way."""
    live = [n for n in nodes if is_alive(n)]
    for n in live:
        try:
            os.kill(n.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    for n in live:
        wait_gone(n, deadline)
    for n in live:
        if is_alive(n):
            try:
                os.kill(n.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            wait_gone(n, time.monotonic() + 10)


def _is_our_process(pid: int, marker: str) -> bool:
    if pid <= 0:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    # Guard against PID reuse: the command line must carry this node's marker path.
    if marker and marker not in cmdline:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def is_loopback(host: str) -> bool:
    """True for an address only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _port_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # As the JVM's server sockets do: connections of a stopped node lingering in
        # TIME_WAIT must not make its port look taken (a restart on the same port).
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def ephemeral_port_floor(default: int = 60000) -> int:
    """Lowest port the kernel hands out to outgoing connections (Linux; ``default`` elsewhere)."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return default
    return low


#: ``LOW-HIGH``: the ports local nodes of this process pick from (see :func:`find_free_port_block`).
PORT_RANGE_VARIABLE = "TF_IGNITE_LOCAL_PORTS"


def local_port_range(environ: Mapping[str, str] | None = None) -> tuple[int, int] | None:
    """``(low, high)`` from ``$TF_IGNITE_LOCAL_PORTS`` (``"LOW-HIGH"``, ``HIGH`` excluded), or None when unset.

    Processes that start local nodes side by side (two test runs, a test run and
    a benchmark) give each a range of its own: a block one process has found free
    and promised to nodes still starting cannot then be picked by the other.
    """
    text = (os.environ if environ is None else environ).get(PORT_RANGE_VARIABLE, "").strip()
    if not text:
        return None
    low, sep, high = text.partition("-")
    try:
        bounds = (int(low), int(high))
    except ValueError:
        bounds = (0, 0)
    if not sep or not 1024 <= bounds[0] < bounds[1] <= 65536:
        raise ConfigurationError(
            f"${PORT_RANGE_VARIABLE}={text!r}: give two ports LOW-HIGH with 1024 <= LOW < HIGH <= 65536, "
            "e.g. 20000-26000"
        )
    return bounds


def find_free_port_block(
    host: str, size: int, *, start: int | None = None, stop: int | None = None, avoid: Collection[int] = ()
) -> int:
    """First port ``p`` (from a per-process random start) with ``p .. p+size-1`` all free.

    By default the search runs over ``$TF_IGNITE_LOCAL_PORTS`` when set
    (:func:`local_port_range`), else from 20000 up to the kernel's ephemeral
    range: a port found free there can be taken by any outgoing connection
    before the node binds it.  ``avoid`` lists ports already promised to nodes
    that have not bound them yet (a cluster's client, discovery and
    communication blocks must not overlap).
    """
    configured = local_port_range() if start is None and stop is None else None
    if configured is not None:
        start, stop = configured
    if start is None:
        start = 20000
    if stop is None:
        floor = ephemeral_port_floor()
        stop = floor if floor - start >= 2000 else 60000
    span = stop - start - size
    offset = (os.getpid() * 7919 + time.monotonic_ns() // 1000) % span
    for i in range(0, span, size):
        base = start + (offset + i) % span
        block = range(base, base + size)
        if not any(p in avoid for p in block) and all(_port_free(host, p) for p in block):
            return base
    raise NodeError(f"no block of {size} free ports found on {host}")


def _thread_dump(m: NodeInfo) -> str | None:
    """Write the Java thread dump of member ``m`` next to its log (``jcmd PID Thread.print``); its path,
    or None when the JDK's ``jcmd`` is missing or the node does not answer. Diagnostics for a node that
    runs but is not ready: where its threads wait says why."""
    jcmd = shutil.which("jcmd")
    if not m.pid or not m.log or jcmd is None:
        return None
    path = Path(m.log).with_name(f"threads-{time.strftime('%Y%m%d-%H%M%S')}.txt")
    try:
        with open(path, "wb") as out:
            done = subprocess.run(
                [jcmd, str(m.pid), "Thread.print"], stdout=out, stderr=subprocess.STDOUT, timeout=30, check=False
            )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return str(path) if done.returncode == 0 else None


def _log_tail(path: str, lines: int = 30) -> str:
    try:
        text = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return "(no log written)"
    return "\n".join(text[-lines:])


@dataclass
class LocalCluster:
    """A cluster of real Ignite server nodes on loopback, owned by this process or CLI.

    Typical use::

        with LocalCluster(work_dir, nodes=3) as cluster:
            host, port = cluster.address()

    ``client_port=None`` picks free ports; an explicit port that is taken is an
    error naming the port.  ``sql=True`` runs nodes with the H2 SQL engine
    (Ignite 2.17.0, the newest release publishing one).  ``auth=True`` needs and
    implies persistence; the user is ``ignite``/``ignite``.  ``tls=True``
    generates a private CA under the work directory.  ``owner_pid``: the nodes
    stop by themselves when that process ends (default: the process given to
    :func:`stop_nodes_with_process`, else none -- the nodes outlive their starter).
    """

    work_dir: Path
    nodes: int = 1
    host: str = "127.0.0.1"
    client_port: int | None = None
    persistence: bool = False
    auth: bool = False
    tls: bool = False
    tls_client_auth: bool = False
    sql: bool = False
    region_mb: int = 512
    heap_mb: int = 512
    extra_classpath: tuple[str, ...] = ()
    jvm_options: tuple[str, ...] = ()
    #: Nodes carry the tensorflow-ignite module, as a user's nodes with it installed do
    #: (False: plain Ignite nodes, for tests of clusters without it).
    launcher_module: bool = True
    #: The launcher's security settings on these nodes. None: the local default -- with
    #: ``auth``, the cluster's own user ``ignite`` may submit; without it, loopback-only nodes
    #: accept unauthenticated jobs (:meth:`launcher_settings` says which).
    launcher_security: LauncherSecurity | None = None
    #: Caches whose updates the module logs, so that ``IgniteDataset.follow`` resumes them exactly
    #: once (``FollowLog`` on the nodes; needs ``launcher_module``), and the log's retention.
    follow_log: tuple[str, ...] = ()
    follow_log_retention_s: int | None = None
    name: str = "tf-ignite"
    owner_pid: int | None = field(default_factory=_owner_default)
    members: list[NodeInfo] = field(default_factory=list)
    tls_material: TLSMaterial | None = None
    _discovery_base: int = 0
    _communication_base: int = 0
    _procs: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict, repr=False)
    #: Members stopped on purpose (``kill_node``): not expected in the topology until restarted.
    _down: set[int] = field(default_factory=set, repr=False)
    _last_probe_error: dict[int, str] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.work_dir = Path(self.work_dir).resolve()
        if self.nodes < 1:
            raise NodeError("a cluster needs at least one node (--nodes >= 1)")
        if self.nodes > DISCOVERY_SLOTS:
            raise NodeError(f"at most {DISCOVERY_SLOTS} local nodes are supported")
        if self.auth:
            self.persistence = True

    def launcher_settings(self) -> LauncherSecurity:
        """The launcher's security settings these nodes run with (``launcher_security`` or the local default).

        The local default lets the nodes' own user submit: ``ignite`` with ``auth``; without
        authentication, anyone -- but only when the nodes listen on loopback alone, where
        nobody but this machine's users can reach them.  Nodes on another address without
        ``auth`` refuse every job until ``launcher_security`` says otherwise.
        """
        if self.launcher_security is not None:
            return self.launcher_security
        if self.auth:
            return LauncherSecurity(submitters=("ignite",))
        return LauncherSecurity(allow_unauthenticated=is_loopback(self.host))

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> "LocalCluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout: float = 180.0) -> "LocalCluster":
        """Start every node and return once the cluster is ready (or raise NodeError)."""
        existing = self.load_state(self.work_dir)
        if existing is not None and any(n.alive() for n in existing.members):
            raise NodeError(
                f"nodes recorded in {self.work_dir / STATE_FILE} are still running; "
                "stop them first (`ignite-tf node stop`) or use another --work-dir"
            )
        self.work_dir.mkdir(parents=True, exist_ok=True)
        java_runtime()  # fail early and clearly when Java is missing
        if self.tls and self.tls_material is None:
            self.tls_material = make_tls_material(self.work_dir / "tls")
        self.choose_ports()
        try:
            for i in range(self.nodes):
                self._spawn(i)
            self.wait_ready(timeout=timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def choose_ports(self) -> None:
        """Choose the cluster's ports: :attr:`client_port` (one per node; a given one is
        checked to be free), :attr:`discovery_ports` and :attr:`communication_ports`.

        Three disjoint blocks of free ports, below the kernel's ephemeral range
        (:func:`find_free_port_block`).  :meth:`start` calls this; called before,
        it tells the ports the nodes will get (``start`` chooses again).
        """
        if self.client_port is not None:
            taken = [p for p in range(self.client_port, self.client_port + self.nodes) if not _port_free(self.host, p)]
            if taken:
                raise NodeError(
                    f"client port {taken[0]} on {self.host} is already in use (another Ignite "
                    "node?). Stop it, or pick other ports with --client-port."
                )
            client_base = self.client_port
        else:
            client_base = find_free_port_block(self.host, self.nodes)
        self.client_port = client_base
        promised = set(range(client_base, client_base + self.nodes))
        self._discovery_base = find_free_port_block(self.host, DISCOVERY_SLOTS, avoid=promised)
        promised |= set(range(self._discovery_base, self._discovery_base + DISCOVERY_SLOTS))
        self._communication_base = find_free_port_block(self.host, DISCOVERY_SLOTS, avoid=promised)

    @property
    def discovery_ports(self) -> range:
        """The discovery ports reserved for this cluster's nodes (node ``i`` binds the ``i``-th)."""
        return range(self._discovery_base, self._discovery_base + DISCOVERY_SLOTS)

    @property
    def communication_ports(self) -> range:
        """The communication ports reserved for this cluster's nodes (node ``i`` binds the ``i``-th)."""
        return range(self._communication_base, self._communication_base + DISCOVERY_SLOTS)

    def _promised_ports(self) -> set[int]:
        """Ports this cluster's members use or will use (for choosing one more port)."""
        ports = {m.client_port for m in self.members}
        for base in (self._discovery_base, self._communication_base):
            ports |= set(range(base, base + DISCOVERY_SLOTS))
        return ports

    def _spawn(self, index: int, *, client_port: int | None = None, launcher_module: bool | None = None) -> NodeInfo:
        assert self.client_port is not None
        node_dir = self.work_dir / f"node-{index}"
        node_dir.mkdir(parents=True, exist_ok=True)
        info = NodeInfo(
            index=index,
            name=f"{self.name}-{index}",
            host=self.host,
            client_port=client_port if client_port is not None else self.client_port + index,
            discovery_port=self._discovery_base + index,
            communication_port=self._communication_base + index,
            log=str(node_dir / "node.log"),
            status_file=str(node_dir / "status.json"),
            launcher_module=self.launcher_module if launcher_module is None else launcher_module,
        )
        for port in (info.client_port, info.discovery_port, info.communication_port):
            if not _port_free(self.host, port):
                raise NodeError(f"port {port} on {self.host} is already in use; cannot start {info.name}")
        Path(info.status_file).unlink(missing_ok=True)
        cmd = self._node_command(info, node_dir)
        env = dict(os.environ)
        if self.tls_material is not None:
            env["TF_IGNITE_KEYSTORE_PASSWORD"] = self.tls_material.keystore_password
            if self.tls_client_auth:
                env["TF_IGNITE_TRUSTSTORE_PASSWORD"] = self.tls_material.keystore_password
        # Node-local credentials for the launcher's workers (WorkerAgent hands them to
        # the worker processes it starts), so that they never travel in a job record.
        for key, value in self.client_settings().items():
            env.setdefault(f"TF_IGNITE_WORKER_{key.upper()}", str(value))
        with open(info.log, "ab") as log:
            proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=node_dir,
                start_new_session=True,
            )
        info.pid = proc.pid
        self._procs[info.pid] = proc  # keep the handle: liveness without /proc races, reaping
        self._down.discard(index)
        self.members = [m for m in self.members if m.index != index] + [info]
        self.members.sort(key=lambda m: m.index)
        self.save_state()
        return info

    def _jvm_command(self, classpath: str) -> list[str]:
        """``java`` with the Java 17 flags Ignite's scripts set, heap and Ignite's quiet settings
        (and a class-data-sharing archive with ``$TF_IGNITE_CDS_DIR``: :mod:`.cds`)."""
        java = java_runtime().executable
        return [
            java,
            *cds_flags(java, classpath, self._main_class()),
            *JVM_OPENS,
            f"-Xms{min(self.heap_mb, 256)}m",
            f"-Xmx{self.heap_mb}m",
            "-XX:+UseG1GC",
            "-Djava.net.preferIPv4Stack=true",
            "-DIGNITE_UPDATE_NOTIFIER=false",
            "-DIGNITE_NO_ASCII=true",
            "-DIGNITE_QUIET=true",
            "-DIGNITE_PERFORMANCE_SUGGESTIONS_DISABLED=true",
            *self.jvm_options,
            "-cp",
            classpath,
        ]

    def _main_class(self) -> str:
        """The Java main class of this cluster's nodes (also how ``java_pids`` recognises them)."""
        return LAUNCHER_CLASS

    def _classpath(self) -> str:
        """The nodes' classpath: the launcher jar and its Ignite (built with Maven when needed)."""
        return launcher_classpath(sql=self.sql, extra=self.extra_classpath)

    def _node_command(self, info: NodeInfo, node_dir: Path) -> list[str]:
        """The command line of one node: our NodeLauncher configured by flags."""
        cmd = [
            *self._jvm_command(self._classpath()),
            self._main_class(),
            "--host",
            self.host,
            "--name",
            info.name,
            "--client-port",
            str(info.client_port),
            "--discovery-port",
            str(info.discovery_port),
            "--discovery-base",
            str(self._discovery_base),
            "--discovery-port-count",
            str(DISCOVERY_SLOTS),
            "--communication-port",
            str(info.communication_port),
            "--work-dir",
            str(node_dir / "ignite"),
            "--status-file",
            info.status_file,
            "--region-mb",
            str(self.region_mb),
        ]
        if self.owner_pid is not None:
            cmd += ["--exit-with", str(self.owner_pid)]
        if self.persistence:
            cmd += ["--persistence", "--activate-at", str(self.nodes)]
        if self.auth:
            cmd.append("--auth")
        if not info.launcher_module:
            cmd.append("--no-launcher-service")
        else:
            cmd += self.launcher_settings().node_arguments()
            if self.follow_log:
                cmd += ["--follow-log", ",".join(self.follow_log)]
                if self.follow_log_retention_s is not None:
                    cmd += ["--follow-log-retention-s", str(int(self.follow_log_retention_s))]
        if self.tls_material is not None:
            cmd += ["--tls-keystore", str(self.tls_material.server_keystore)]
            if self.tls_client_auth:
                cmd += ["--tls-truststore", str(self.tls_material.server_truststore), "--tls-client-auth"]
        return cmd

    def add_node(self, timeout: float = 180.0, *, launcher_module: bool | None = None) -> NodeInfo:
        """Start one more node that joins this cluster (for rebalancing tests); ``launcher_module``
        overrides the cluster's setting for this node."""
        index = max((m.index for m in self.members), default=-1) + 1
        if index >= DISCOVERY_SLOTS:
            raise NodeError(f"at most {DISCOVERY_SLOTS} local nodes are supported")
        assert self.client_port is not None
        port = find_free_port_block(self.host, 1, avoid=self._promised_ports())
        info = self._spawn(index, client_port=port, launcher_module=launcher_module)
        self.nodes += 1
        self.save_state()
        self.wait_ready(timeout=timeout)
        return info

    def wait_ready(self, timeout: float = 180.0) -> None:
        """Block until every live member sees the whole topology and accepts a handshake."""
        deadline = time.monotonic() + timeout
        expected = len([m for m in self.members if m.pid and m.index not in self._down])
        pending = {m.index for m in self.members if m.index not in self._down}
        delay = 0.05
        while pending:
            for m in list(self.members):
                if m.index not in pending:
                    continue
                if not self.is_alive(m):
                    raise NodeError(
                        f"Ignite node {m.name} (pid {m.pid}) exited during start-up. "
                        f"Last lines of {m.log}:\n{_log_tail(m.log)}"
                    )
                if self._member_ready(m, expected):
                    pending.discard(m.index)
            if not pending:
                self._write_class_archives()
                return
            if time.monotonic() > deadline:
                m = next(m for m in self.members if m.index in pending)
                probe_error = self._last_probe_error.get(m.index)
                dumps = [d for d in (_thread_dump(x) for x in self.members if x.index in pending) if d]
                raise NodeError(
                    f"Ignite node {m.name} was not ready after {timeout:.0f}s "
                    f"(status: {m.status() or 'none yet'}"
                    + (f"; its client port's last handshake failed: {probe_error}" if probe_error else "")
                    + (f"; thread dumps of the nodes not ready: {', '.join(dumps)}" if dumps else "")
                    + f"). Last lines of {m.log}:\n{_log_tail(m.log)}"
                )
            time.sleep(delay)  # poll interval, bounded by the deadline above
            delay = min(delay * 1.5, 0.5)

    def _write_class_archives(self) -> None:
        """Ready members that record their classes for later starts write them now (:mod:`.cds`)."""
        jcmd = shutil.which("jcmd") or str(Path(java_runtime().executable).with_name("jcmd"))
        for m in self.members:
            if m.pid and m.index not in self._down:
                dump_recorded(m.pid, jcmd if os.access(jcmd, os.X_OK) else None)

    def _member_ready(self, m: NodeInfo, expected: int) -> bool:
        """``m``'s status file shows ``expected`` servers (and an active cluster); its client port answers."""
        st = m.status()
        if st.get("state") != "running" or len(st.get("servers", ())) < expected:
            return False
        if self.persistence and st.get("cluster_state") != "ACTIVE":
            return False
        return self._handshake_ok(m)

    def _handshake_ok(self, node: NodeInfo) -> bool:
        from ..client.connection import probe  # local import: client imports are heavier

        try:
            probe(node.host, node.client_port, **self.client_settings(), timeout=5.0)
        except IgniteError as e:
            self._last_probe_error[node.index] = f"{type(e).__name__}: {e}"
            return False
        self._last_probe_error.pop(node.index, None)
        return True

    def stop(self, timeout: float = 30.0) -> None:
        """Stop every node this cluster started; SIGKILL what ignores SIGTERM."""
        terminate_nodes(self.members, self.is_alive, self._wait_gone, timeout)
        self.save_state()

    def is_alive(self, m: NodeInfo) -> bool:
        """True while member ``m``'s node process runs."""
        # Our own child: ask the handle. Right after fork, /proc/PID/cmdline still
        # shows the parent's command line, so the marker check would say "gone".
        proc = self._procs.get(m.pid)
        if proc is not None:
            return proc.poll() is None
        return m.alive()

    def _wait_gone(self, m: NodeInfo, deadline: float) -> None:
        proc = self._procs.get(m.pid)
        while self.is_alive(m) and time.monotonic() < deadline:
            if proc is not None:
                try:
                    proc.wait(timeout=0.1)
                except subprocess.TimeoutExpired:
                    pass
            else:
                time.sleep(0.05)

    def kill_node(self, index: int, sig: int = signal.SIGKILL) -> NodeInfo:
        """Send ``sig`` to one node (fault tests) and wait until it is gone."""
        m = next(m for m in self.members if m.index == index)
        self._down.add(index)
        os.kill(m.pid, sig)
        self._wait_gone(m, time.monotonic() + 30)
        return m

    def restart_nodes(self, indices: Sequence[int], timeout: float = 180.0) -> list[NodeInfo]:
        """Start stopped or killed members again on their own ports; wait until the cluster is whole."""
        started = []
        for index in indices:
            m = next(m for m in self.members if m.index == index)
            if self.is_alive(m):
                raise NodeError(f"Ignite node {m.name} (pid {m.pid}) is still running; stop it before restarting")
            started.append(self._spawn(index, client_port=m.client_port, launcher_module=m.launcher_module))
        self.wait_ready(timeout=timeout)
        return started

    # -------------------------------------------------------------------- queries
    def address(self, index: int = 0) -> tuple[str, int]:
        """``(host, client_port)`` of one node."""
        m = next(m for m in self.members if m.index == index)
        return m.host, m.client_port

    def addresses(self) -> list[tuple[str, int]]:
        """``(host, client_port)`` of every live node."""
        return [(m.host, m.client_port) for m in self.members if self.is_alive(m)]

    def discovery_addresses(self) -> list[str]:
        """``"host:port"`` of every live member's discovery port: where a thick client (a Java
        client-mode node with a static IP finder) joins this cluster."""
        return [f"{m.host}:{m.discovery_port}" for m in self.members if self.is_alive(m)]

    def ignite_classpath(self) -> str:
        """The classpath this cluster's nodes run on.  A Java thick client joining the cluster must run
        the same Ignite release, so a test's client program takes its Ignite jars from here."""
        return self._classpath()

    def client_settings(self) -> dict[str, Any]:
        """Keyword arguments for our client: TLS files and credentials of this cluster."""
        out: dict[str, Any] = {}
        if self.auth:
            out.update(username=DEFAULT_USER, password=DEFAULT_PASSWORD)
        if self.tls_material is not None:
            out.update(cafile=str(self.tls_material.ca_cert))
            if self.tls_client_auth:
                out.update(
                    certfile=str(self.tls_material.client_cert),
                    keyfile=str(self.tls_material.client_key),
                    cert_password=self.tls_material.client_key_password,
                )
        return out

    def java_pids(self) -> list[int]:
        """PIDs of every running JVM whose command line names this work directory."""
        pids = []
        marker = str(self.work_dir)
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmd = (entry / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            if self._main_class() in cmd and marker in cmd and _is_our_process(int(entry.name), marker):
                pids.append(int(entry.name))
        return pids

    # ---------------------------------------------------------------- state file
    def save_state(self) -> None:
        """Record the members (no secrets) so another process can find and stop them."""
        write_state(
            self,
            persistence=self.persistence,
            auth=self.auth,
            sql=self.sql,
            tls_dir=str(self.tls_material.directory) if self.tls_material else None,
        )

    @classmethod
    def load_state(cls, work_dir: str | os.PathLike[str]) -> "LocalCluster | None":
        """The cluster recorded in ``work_dir`` by a previous ``start`` (or None)."""
        state = read_state(work_dir)
        if state is None:
            return None
        cluster = cls(
            **recorded_settings(work_dir, state),
            persistence=state["persistence"],
            auth=state["auth"],
            sql=state.get("sql", False),
        )
        cluster.members = [NodeInfo(**m) for m in state["members"]]
        if cluster.members:
            cluster.client_port = cluster.members[0].client_port
        return cluster
