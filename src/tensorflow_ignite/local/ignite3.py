"""Local Apache Ignite 3 nodes (embedded servers from Maven Central), for tests and trials.

The classpath is ``ignite-runner`` 3.1.0 and its runtime dependencies, assembled
by Maven from ``java/ignite3/pom.xml`` into ``java/target/ignite3-<version>/libs``
(``make setup`` does it; :func:`ignite3_home` does it on first use), with the
small launcher built from the same module
(``org.tensorflow.ignite.ignite3.Ignite3NodeLauncher``): it starts one
``IgniteServer`` from a HOCON file written here, the first node initialises the
cluster (``initCluster``: the first node holds the meta-storage and cluster
management groups), and every node writes ``ready`` to its status file once
the cluster is initialised.  Ready, for :meth:`Ignite3Cluster.start`, is that
status and the client port answering Ignite 3's handshake.

The JVM gets the ``--add-opens`` flags of Ignite 3's embedded-mode
documentation, a small heap and a small page memory (``storage_mb``) for the
default ``aipersist`` storage profile: several test JVMs share one machine.
Nodes started with an ``owner_pid`` (the pytest plugin passes its own) stop
when that process ends, however it ends.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import IgniteError, NodeError
from .cluster import (
    _is_our_process,
    _log_tail,
    _owner_default,
    _port_free,
    find_free_port_block,
    read_state,
    recorded_settings,
    terminate_nodes,
    write_state,
)
from .java import find_maven, java_module_dir, java_runtime, run_maven
from .tls import TLSMaterial, make_tls_material

if TYPE_CHECKING:
    from ..client.options import ConnectionOptions

__all__ = [
    "IGNITE3_VERSION",
    "Ignite3Cluster",
    "Ignite3Node",
    "ignite3_home",
    "ignite3_classpath",
    "GENERATION",
    "MEMORY_PROFILE",
]

#: ``generation`` in the state file of a work directory holding Ignite 3 nodes (Ignite 2 ones have none).
GENERATION = 3
#: The in-memory storage profile (engine ``aimem``: nothing on disk, gone when the nodes stop) every
#: local node has beside ``default`` (``aipersist``); a zone names it with ``STORAGE PROFILES ['aimem']``.
MEMORY_PROFILE = "aimem"

#: The Ignite 3 release local nodes run (``java/ignite3/pom.xml``'s ``ignite3.version``).
IGNITE3_VERSION = "3.1.0"
LAUNCHER_CLASS = "org.tensorflow.ignite.ignite3.Ignite3NodeLauncher"
LAUNCHER_JAR = "tensorflow-ignite3-launcher.jar"

#: Ignite 3's embedded-mode JVM flags (its documentation's list).
JVM_FLAGS: tuple[str, ...] = (
    *(
        f"--add-opens=java.base/{p}=ALL-UNNAMED"
        for p in (
            "java.lang",
            "java.lang.invoke",
            "java.lang.reflect",
            "java.io",
            "java.nio",
            "java.math",
            "java.util",
            "java.time",
            "jdk.internal.misc",
            "jdk.internal.access",
            "sun.nio.ch",
        )
    ),
    "-Dio.netty.tryReflectionSetAccessible=true",
)
#: Ports per node: client, network (cluster), REST.
_PORTS_PER_NODE = 3

_build_lock = threading.Lock()


def ignite3_home(version: str = IGNITE3_VERSION) -> Path:
    """``java/target/ignite3-<version>`` (``libs/`` and the launcher jar), assembled with Maven when missing."""
    home = java_module_dir() / "target" / f"ignite3-{version}"
    with _build_lock:
        if (home / LAUNCHER_JAR).exists() and (home / "libs" / f"ignite-runner-{version}.jar").exists():
            return home
        mvn = find_maven(f"to assemble Ignite {version} from Maven Central")
        pom_dir = java_module_dir() / "ignite3"
        if not (pom_dir / "pom.xml").is_file():
            raise NodeError(
                f"local Ignite 3 nodes need the java/ignite3 Maven module of a source checkout "
                f"(not found at {pom_dir}); point at an Ignite 3 cluster you run instead"
            )
        run_maven(
            mvn,
            ["-B", "-q", "package", f"-Dignite3.version={version}"],
            pom_dir,
            f"assembling Ignite {version} from Maven Central failed in ignite3/",
        )
    return home


def ignite3_classpath(version: str = IGNITE3_VERSION) -> str:
    """The launcher jar and Ignite 3's libs, as a ``-cp`` value."""
    home = ignite3_home(version)
    return f"{home / LAUNCHER_JAR}{os.pathsep}{home / 'libs' / '*'}"


@dataclass
class Ignite3Node:
    """One node of a local Ignite 3 cluster."""

    index: int
    name: str
    host: str
    client_port: int
    network_port: int
    rest_port: int
    work_dir: str
    pid: int = 0

    @property
    def log(self) -> str:
        return str(Path(self.work_dir) / "node.log")

    @property
    def status_file(self) -> str:
        return str(Path(self.work_dir) / "status")

    def status(self) -> str:
        """``started``, ``ready``, ``failed: ...``, or ``""`` before the node wrote one."""
        try:
            return Path(self.status_file).read_text().strip()
        except OSError:
            return ""


def _hocon_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass
class Ignite3Cluster:
    """``nodes`` embedded Ignite 3 servers on ``host``, initialised as one cluster.

    ``heap_mb`` per JVM; ``storage_mb``: the page memory of the default storage
    profile (``aipersist``, files under ``work_dir``) and the most the in-memory
    profile :data:`MEMORY_PROFILE` (``aimem``) may grow to; ``owner_pid``: the nodes
    stop when that process ends (default: what
    :func:`~tensorflow_ignite.local.cluster.stop_nodes_with_process` set).
    ``username``/``password``: the cluster is initialised with security on and
    that one user (basic authentication); the password goes
    into a file of the work directory, never onto a command line.  ``tls``: the
    client connector speaks TLS with a certificate from a private CA made here
    (:func:`~tensorflow_ignite.local.tls.make_tls_material`; the keystore's
    password is in the node's configuration file, mode 0600).  ``tls_client_auth``
    (implies ``tls``): the client connector also requires a client certificate
    signed by that CA (``clientAuth = "require"``, the CA in its trust store);
    :meth:`client_options` then carries the client certificate and key.
    ``cluster_config``: HOCON merged into the configuration the cluster is
    initialised with (e.g. ``ignite { system { ... } }``).
    """

    work_dir: Path
    nodes: int = 1
    host: str = "127.0.0.1"
    name: str = "tfi3"
    heap_mb: int = 512
    storage_mb: int = 256
    version: str = IGNITE3_VERSION
    owner_pid: int | None = field(default_factory=_owner_default)
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    tls: bool = False
    tls_client_auth: bool = False
    #: The private CA, server keystore and client certificate of a ``tls`` cluster (made by :meth:`start`).
    tls_material: TLSMaterial | None = field(default=None, repr=False)
    members: list[Ignite3Node] = field(default_factory=list)
    #: Seconds the last :meth:`start` took until every node was ready.
    start_seconds: float = 0.0
    #: The first node's client port (node i: ``client_port + i``); None: free ports.
    client_port: int | None = None
    #: HOCON added to the cluster's initial configuration (after the security settings, if any).
    cluster_config: str = ""

    def __post_init__(self) -> None:
        self.work_dir = Path(self.work_dir)
        if self.tls_client_auth:
            self.tls = True
        self._procs: dict[int, subprocess.Popen[bytes]] = {}

    def __enter__(self) -> "Ignite3Cluster":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ start
    def _plan(self) -> None:
        base = find_free_port_block(self.host, _PORTS_PER_NODE * self.nodes)
        self.members = [
            Ignite3Node(
                i,
                f"{self.name}-{i}",
                self.host,
                self.client_port + i if self.client_port else base + i,
                base + self.nodes + i,
                base + 2 * self.nodes + i,
                str(self.work_dir / f"node-{i}"),
            )
            for i in range(self.nodes)
        ]

    def _config(self, node: Ignite3Node) -> str:
        finder = ", ".join(_hocon_string(f"{m.host}:{m.network_port}") for m in self.members)
        return f"""ignite {{
  network {{
    port = {node.network_port}
    nodeFinder.netClusterNodes = [{finder}]
  }}
  clientConnector.port = {node.client_port}{self._ssl_config()}
  rest.port = {node.rest_port}
  storage.profiles = [
    {{ name = default, engine = aipersist, sizeBytes = {self.storage_mb * 1024 * 1024} }},
    {{ name = {MEMORY_PROFILE}, engine = aimem, initSizeBytes = {16 << 20}, maxSizeBytes = {self.storage_mb * 1024 * 1024} }}
  ]
}}
"""

    def _ssl_config(self) -> str:
        m = self.tls_material
        if m is None:
            return ""
        secret = _hocon_string(m.keystore_password)
        trust = ""
        if self.tls_client_auth:  # the CA that signs client certificates, in the node's trust store
            trust = (
                f', clientAuth = "require", trustStore {{ type = PKCS12, '
                f"path = {_hocon_string(str(m.server_truststore))}, password = {secret} }}"
            )
        return (
            f"\n  clientConnector.ssl {{ enabled = true, keyStore {{ type = PKCS12, "
            f"path = {_hocon_string(str(m.server_keystore))}, password = {secret} }}{trust} }}"
        )

    def _cluster_config(self) -> Path:
        """The cluster's initial configuration (mode 0600): basic authentication on for :attr:`username`,
        then :attr:`cluster_config` (HOCON merges the two)."""
        path = self.work_dir / "cluster-init.conf"
        text = ""
        if self.username is not None:
            user = _hocon_string(self.username)
            secret = _hocon_string(self.password or "")
            text += (
                "ignite { security { enabled = true, authentication.providers = [ { name = default, "
                f"type = basic, users = [ {{ username = {user}, password = {secret} }} ] }} ] }} }}\n"
            )
        text += self.cluster_config + "\n"
        path.touch(mode=0o600)
        path.write_text(text)
        return path

    def client_options(self, index: int = 0, **fields: object) -> "ConnectionOptions":
        """Options reaching node ``index`` with this cluster's credentials (``fields`` override)."""
        from ..client.options import ConnectionOptions

        host, port = self.address(index)
        given: dict[str, object] = {"host": host, "port": port, "username": self.username, "password": self.password}
        m = self.tls_material
        if m is not None:
            given["cafile"] = str(m.ca_cert)
            if self.tls_client_auth:
                given.update(
                    certfile=str(m.client_cert), keyfile=str(m.client_key), cert_password=m.client_key_password
                )
        given.update(fields)
        return ConnectionOptions(**given)  # type: ignore[arg-type]  # given holds ConnectionOptions' fields by name, each of its type

    def _command(self, node: Ignite3Node, config: Path) -> list[str]:
        cmd = [
            java_runtime().executable,
            *JVM_FLAGS,
            f"-Xms{min(self.heap_mb, 128)}m",
            f"-Xmx{self.heap_mb}m",
            "-XX:+UseG1GC",
            "-Djava.net.preferIPv4Stack=true",
            "-cp",
            ignite3_classpath(self.version),
            LAUNCHER_CLASS,
            "--name",
            node.name,
            "--config",
            str(config),
            "--work-dir",
            str(Path(node.work_dir) / "ignite"),
            "--status-file",
            node.status_file,
        ]
        if node.index == 0:
            cmd += ["--init", self.name, "--meta-storage", self.members[0].name]
            if self.username is not None or self.cluster_config:
                cmd += ["--cluster-config", str(self._cluster_config())]
        if self.owner_pid is not None:
            cmd += ["--exit-with", str(self.owner_pid)]
        return cmd

    def start(self, timeout: float = 240.0) -> "Ignite3Cluster":
        """Start every node, initialise the cluster and wait until each is ready."""
        began = time.monotonic()
        ignite3_home(self.version)  # assemble before the clock of the readiness wait runs
        self._plan()
        if self.tls and self.tls_material is None:
            self.tls_material = make_tls_material(self.work_dir / "tls")
        for node in self.members:
            for port in (node.client_port, node.network_port, node.rest_port):
                if not _port_free(self.host, port):
                    raise NodeError(f"port {port} on {self.host} is already in use; cannot start {node.name}")
            Path(node.work_dir).mkdir(parents=True, exist_ok=True)
            Path(node.status_file).unlink(missing_ok=True)
            config = Path(node.work_dir) / "ignite-config.conf"
            config.touch(mode=0o600)
            config.write_text(self._config(node))
            with open(node.log, "ab") as log:
                proc = subprocess.Popen(
                    self._command(node, config),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    cwd=node.work_dir,
                    start_new_session=True,
                )
            node.pid = proc.pid
            self._procs[proc.pid] = proc
        self.save_state()  # before the wait: `ignite-tf node stop` finds nodes that never became ready too
        try:
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - began
        return self

    def wait_ready(self, timeout: float = 240.0) -> None:
        """Block until every node says ``ready`` and its client port accepts a handshake."""
        deadline = time.monotonic() + timeout
        pending = {n.index for n in self.members}
        delay = 0.1
        while pending:
            for node in self.members:
                if node.index not in pending:
                    continue
                status = node.status()
                if not self.is_alive(node) or status.startswith("failed"):
                    raise NodeError(
                        f"Ignite 3 node {node.name} (pid {node.pid}) failed to start "
                        f"({status or 'exited'}). Last lines of {node.log}:\n{_log_tail(node.log)}"
                    )
                if status == "ready" and self._answers(node):
                    pending.discard(node.index)
            if not pending:
                return
            if time.monotonic() > deadline:
                node = next(n for n in self.members if n.index in pending)
                raise NodeError(
                    f"Ignite 3 node {node.name} was not ready after {timeout:.0f}s (status: "
                    f"{node.status() or 'none yet'}). Last lines of {node.log}:\n{_log_tail(node.log)}"
                )
            time.sleep(delay)  # poll interval, bounded by the deadline above
            delay = min(delay * 1.5, 0.5)

    def _answers(self, node: Ignite3Node) -> bool:
        from ..ignite3.connection import Ignite3Connection

        try:
            Ignite3Connection(self.client_options(node.index, timeout=5.0)).close()
        except IgniteError:
            return False
        return True

    # ------------------------------------------------------------------ stop
    def is_alive(self, node: Ignite3Node) -> bool:
        """True while ``node``'s process runs (started here, or recorded in the state file)."""
        proc = self._procs.get(node.pid)
        if proc is not None:
            return proc.poll() is None
        # A node started by another process (``ignite-tf node start``): its command line names its directory.
        return _is_our_process(node.pid, node.work_dir)

    def kill_node(self, index: int, sig: int = signal.SIGKILL) -> None:
        """Send ``sig`` to one node and wait until it is gone."""
        node = self.members[index]
        if self.is_alive(node):
            os.kill(node.pid, sig)
            self._procs[node.pid].wait(timeout=60)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop every node this cluster started (or its state file records); SIGKILL what ignores SIGTERM."""
        terminate_nodes(self.members, self.is_alive, self._wait_gone, timeout)

    def _wait_gone(self, node: Ignite3Node, deadline: float) -> bool:
        proc = self._procs.get(node.pid)
        if proc is not None:
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                return True
            except subprocess.TimeoutExpired:
                return False
        delay = 0.05
        while self.is_alive(node):  # not our child: poll its /proc entry until it is gone
            if time.monotonic() > deadline:
                return False
            time.sleep(delay)
            delay = min(delay * 2, 0.5)
        return True

    # ------------------------------------------------------------------ state file
    def save_state(self) -> None:
        """Record the members (no secrets) in ``work_dir``, so another process can find and stop them."""
        write_state(
            self,
            generation=GENERATION,
            version=self.version,
            username=self.username,
            ca_cert=str(self.tls_material.ca_cert) if self.tls_material is not None else None,
        )

    @classmethod
    def load_state(cls, work_dir: str | os.PathLike[str]) -> "Ignite3Cluster | None":
        """The Ignite 3 cluster recorded in ``work_dir`` by :meth:`save_state` (None: none, or Ignite 2 nodes)."""
        state = read_state(work_dir)
        if state is None or state.get("generation") != GENERATION:
            return None
        cluster = cls(
            **recorded_settings(work_dir, state),
            version=state["version"],
            username=state.get("username"),
            owner_pid=None,
        )
        cluster.members = [Ignite3Node(**m) for m in state["members"]]
        return cluster

    # ------------------------------------------------------------------ addresses
    def address(self, index: int = 0) -> tuple[str, int]:
        """``(host, client port)`` of node ``index``."""
        node = self.members[index]
        return node.host, node.client_port

    @property
    def endpoints(self) -> list[str]:
        """``host:port`` of every node's client connector."""
        return [f"{n.host}:{n.client_port}" for n in self.members]
