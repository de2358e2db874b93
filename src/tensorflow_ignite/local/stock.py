"""Stock Apache Ignite nodes with the tensorflow-ignite module: how users run Ignite, for tests.

A :class:`StockCluster` is a :class:`~tensorflow_ignite.local.cluster.LocalCluster`
(same ports, readiness wait, state file, kill/restart and stop) whose nodes are
what a user runs, not our ``NodeLauncher``:

* Ignite 2.16 and 2.17: ``org.apache.ignite.startup.cmdline.CommandLineStartup``
  with a Spring XML file written here, i.e. ``ignite.sh config.xml``.  The
  classpath is a distribution's ``libs/`` assembled by Maven from Maven Central
  (``ignite-core``, ``ignite-spring`` and their dependencies; ``java/stock/pom.xml``)
  plus the module jar (:func:`~tensorflow_ignite.local.java.module_jar`), and the
  JVM gets the Java 17 ``--add-opens`` flags Ignite's scripts set.  The XML holds
  only what a user's loopback cluster needs (discovery, communication and client
  ports, the data region) and the module's fragment
  (:func:`~tensorflow_ignite.launcher.module.xml_fragment`), inserted verbatim, so
  these nodes prove the documented configuration works (with ``follow_log``, the
  fragment's follow log too: ``ignite-tf module config --follow-log``).
* Ignite 2.18: Maven Central publishes no ``ignite-spring`` 2.18.0, so these nodes
  are configured in Java: ``NodeLauncher`` on the 2.18.0 ``libs/``, which applies
  the module's Java entry point ``TfLauncherModule.configure(cfg)`` -- the same
  attribute and service the XML fragment declares.

``CommandLineStartup`` cannot watch the process that started it, so when the
cluster has an ``owner_pid`` each XML node gets a small watcher process that
stops the node when the owner ends (as ``NodeLauncher --exit-with`` does).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from ..errors import IgniteError, NodeError
from .cluster import DISCOVERY_SLOTS, LocalCluster, NodeInfo
from .java import find_maven, java_module_dir, module_jar, run_maven

__all__ = ["StockCluster", "IGNITE_VERSIONS", "XML_VERSIONS", "NEWEST_VERSION", "NEWEST_XML_VERSION", "stock_libs"]

#: Ignite releases the module is tested against, oldest first.
IGNITE_VERSIONS: tuple[str, ...] = ("2.16.0", "2.17.0", "2.18.0")
#: Releases whose ``ignite-spring`` is on Maven Central: their nodes read Spring XML.
XML_VERSIONS: tuple[str, ...] = ("2.16.0", "2.17.0")
NEWEST_VERSION = IGNITE_VERSIONS[-1]
NEWEST_XML_VERSION = XML_VERSIONS[-1]

COMMAND_LINE_STARTUP = "org.apache.ignite.startup.cmdline.CommandLineStartup"

_build_lock = threading.Lock()


def stock_home(version: str) -> Path:
    """``java/target/ignite-<version>``: the stand-in for an unpacked distribution (``libs/`` inside)."""
    return java_module_dir() / "target" / f"ignite-{version}"


def stock_libs(version: str) -> Path:
    """The ``libs/`` folder of Ignite ``version`` from Maven Central; assembled with Maven when missing."""
    if version not in IGNITE_VERSIONS:
        raise NodeError(f"Ignite {version} is not one of the tested versions {', '.join(IGNITE_VERSIONS)}")
    libs = stock_home(version) / "libs"
    with _build_lock:
        if (libs / f"ignite-core-{version}.jar").exists():
            return libs
        mvn = find_maven(f"to assemble Ignite {version} from Maven Central")
        pom_dir = java_module_dir() / "stock"
        flags = [f"-Dignite.version={version}"] + ([] if version in XML_VERSIONS else ["-P-spring"])
        run_maven(
            mvn,
            ["-B", "-q", "package", *flags],
            pom_dir,
            f"assembling Ignite {version} from Maven Central failed in {pom_dir.name}/",
        )
    return libs


def spring_xml(
    info: NodeInfo, *, discovery: str | Sequence[str], region_mb: int, work_dir: Path, fragment: str, auth: bool = False
) -> str:
    """One node's Spring XML: a loopback cluster's settings and the module's ``fragment``.

    ``discovery`` is the static IP finder's address list: ranges (``host:first..last``) or
    ``host:port`` entries, one ``<value>`` each.  ``auth``:
    Ignite's authentication with the persistence it needs (the cluster starts inactive:
    :meth:`StockCluster.start` activates it; the default user is ``ignite``/``ignite``).
    """

    def prop(name: str, value: object) -> str:
        return f"<property name={quoteattr(name)} value={quoteattr(str(value))}/>"

    host = info.host
    finder = "".join(f"<value>{escape(a)}</value>" for a in ([discovery] if isinstance(discovery, str) else discovery))
    indented = "".join(f"    {line}\n" if line else "\n" for line in fragment.splitlines())
    secured = (
        ""
        if not auth
        else f"""
    {prop("authenticationEnabled", "true")}"""
    )
    persistent = (
        ""
        if not auth
        else f"""
            {prop("persistenceEnabled", "true")}"""
    )
    wal = (
        ""
        if not auth
        else f"""
        {prop("walSegmentSize", 16 * 1024 * 1024)}
        {prop("walSegments", 4)}"""
    )
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- {info.name}: written by tensorflow_ignite.local.stock. -->
<beans xmlns="http://www.springframework.org/schema/beans"
       xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
       xsi:schemaLocation="http://www.springframework.org/schema/beans
                           http://www.springframework.org/schema/beans/spring-beans.xsd">
  <bean class="org.apache.ignite.configuration.IgniteConfiguration">
    {prop("igniteInstanceName", info.name)}
    {prop("consistentId", info.name)}
    {prop("localHost", host)}
    {prop("workDirectory", work_dir)}
    {prop("metricsLogFrequency", 0)}{secured}
    <property name="discoverySpi">
      <bean class="org.apache.ignite.spi.discovery.tcp.TcpDiscoverySpi">
        {prop("localAddress", host)}
        {prop("localPort", info.discovery_port)}
        {prop("localPortRange", 0)}
        <property name="ipFinder">
          <bean class="org.apache.ignite.spi.discovery.tcp.ipfinder.vm.TcpDiscoveryVmIpFinder">
            <property name="addresses"><list>{finder}</list></property>
          </bean>
        </property>
      </bean>
    </property>
    <property name="communicationSpi">
      <bean class="org.apache.ignite.spi.communication.tcp.TcpCommunicationSpi">
        {prop("localAddress", host)}
        {prop("localPort", info.communication_port)}
        {prop("localPortRange", 0)}
      </bean>
    </property>
    <property name="clientConnectorConfiguration">
      <bean class="org.apache.ignite.configuration.ClientConnectorConfiguration">
        {prop("host", host)}
        {prop("port", info.client_port)}
        {prop("portRange", 0)}
      </bean>
    </property>
    <property name="dataStorageConfiguration">
      <bean class="org.apache.ignite.configuration.DataStorageConfiguration">
        <property name="defaultDataRegionConfiguration">
          <bean class="org.apache.ignite.configuration.DataRegionConfiguration">
            {prop("name", "default")}
            {prop("initialSize", min(256, region_mb) * 1024 * 1024)}
            {prop("maxSize", region_mb * 1024 * 1024)}{persistent}
          </bean>
        </property>{wal}
      </bean>
    </property>
    <!-- The tensorflow-ignite module (ignite-tf module config). -->
{indented}  </bean>
</beans>
"""


#: Run by a watcher process: stop node ``argv[2]`` (SIGTERM, then SIGKILL) once process
#: ``argv[1]`` ends; exit when the node ends first.  pidfds: no polling, no PID-reuse race.
_WATCHER = r"""
import os, select, signal, sys
owner, node = int(sys.argv[1]), int(sys.argv[2])
try:
    node_fd = os.pidfd_open(node)
except OSError:
    sys.exit(0)
try:
    owner_fd = os.pidfd_open(owner)
    ready = select.select([owner_fd, node_fd], [], [])[0]
except OSError:
    ready = []
if node_fd not in ready:
    os.kill(node, signal.SIGTERM)
    if not select.select([node_fd], [], [], 20)[0]:
        os.kill(node, signal.SIGKILL)
"""


@dataclass
class StockCluster(LocalCluster):
    """Nodes of stock Apache Ignite ``ignite_version`` with the tensorflow-ignite module.

    XML nodes (2.16, 2.17) may have ``auth`` (authentication, persistent, activated once started;
    one node: a persistent cluster's baseline is the nodes present at its first activation)
    and ``sql`` (the ``ignite-indexing`` module on the classpath, as users copy it from a
    release's ``libs/optional`` into ``libs/``); no TLS.  Everything else -- ports,
    readiness, ``kill_node``, ``restart_nodes``, ``add_node``, ``stop`` -- is
    :class:`LocalCluster`'s.
    """

    ignite_version: str = NEWEST_XML_VERSION
    name: str = "tf-ignite-stock"
    _watchers: list[subprocess.Popen[bytes]] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.ignite_version not in IGNITE_VERSIONS:
            raise NodeError(
                f"stock Ignite {self.ignite_version} is not supported here; pick one of {', '.join(IGNITE_VERSIONS)}"
            )
        allowed = ("auth", "sql", "persistence") if self.xml_config else ()
        unsupported = [n for n in ("persistence", "auth", "tls", "sql") if getattr(self, n) and n not in allowed]
        if unsupported:
            raise NodeError(
                f"stock {self.ignite_version} test nodes do not support {', '.join(unsupported)} "
                "(XML nodes support auth and sql; use LocalCluster for the rest)"
            )
        if self.persistence and not self.auth:
            raise NodeError("stock test nodes are persistent only with auth")
        if self.auth and self.nodes != 1:
            raise NodeError("stock test nodes with auth are a single node")

    @property
    def xml_config(self) -> bool:
        """True when the nodes read Spring XML (``CommandLineStartup``), False when configured in Java."""
        return self.ignite_version in XML_VERSIONS

    def discovery_list(self) -> list[str]:
        """The addresses the XML nodes' static IP finder lists: this cluster's discovery port range
        on its host (a cluster spread over hosts lists each host's port instead)."""
        first = self._discovery_base
        return [f"{self.host}:{first}..{first + DISCOVERY_SLOTS - 1}"]

    def _main_class(self) -> str:
        return COMMAND_LINE_STARTUP if self.xml_config else super()._main_class()

    def _classpath(self) -> str:
        libs = stock_libs(self.ignite_version)
        return os.pathsep.join([str(libs / "*"), str(module_jar()), *self._sql_module(), *self.extra_classpath])

    def _sql_module(self) -> list[str]:
        """With ``sql``: the jars of ``ignite-indexing`` (H2) of the same release, but not its ignite-core."""
        if not self.sql:
            return []
        from .java import jars_dir

        found = [p for p in sorted((jars_dir() / "lib-sql").glob("*.jar")) if not p.name.startswith("ignite-core-")]
        indexing = [p for p in found if p.name.startswith("ignite-indexing-")]
        if not indexing or indexing[0].name != f"ignite-indexing-{self.ignite_version}.jar":
            raise NodeError(
                f"no ignite-indexing {self.ignite_version} among the packaged SQL jars "
                f"({jars_dir() / 'lib-sql'}); SQL on stock nodes is tested with 2.17.0"
            )
        return [str(p) for p in found]

    def _node_command(self, info: NodeInfo, node_dir: Path) -> list[str]:
        if not self.xml_config:  # 2.18: NodeLauncher applies TfLauncherModule.configure(cfg)
            return super()._node_command(info, node_dir)
        from ..launcher.module import xml_fragment

        config = node_dir / "ignite-config.xml"
        config.write_text(
            spring_xml(
                info,
                discovery=self.discovery_list(),
                region_mb=self.region_mb,
                work_dir=node_dir / "ignite",
                fragment=xml_fragment(
                    security=self.launcher_settings(),
                    follow_log=self.follow_log,
                    follow_log_retention_s=self.follow_log_retention_s,
                )
                if info.launcher_module
                else "",
                auth=self.auth,
            )
        )
        info.config_file = str(config)
        return [
            *self._jvm_command(self._classpath()),
            f"-DIGNITE_HOME={stock_home(self.ignite_version)}",
            self._main_class(),
            str(config),
        ]

    def _spawn(self, index: int, *, client_port: int | None = None, launcher_module: bool | None = None) -> NodeInfo:
        info = super()._spawn(index, client_port=client_port, launcher_module=launcher_module)
        if self.xml_config and self.owner_pid is not None:
            self._watchers = [w for w in self._watchers if w.poll() is None]
            self._watchers.append(
                subprocess.Popen(
                    [sys.executable, "-I", "-c", _WATCHER, str(self.owner_pid), str(info.pid)],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
        return info

    def start(self, timeout: float = 180.0) -> "StockCluster":
        """Start the nodes; a persistent (``auth``) cluster is then activated, as an operator does
        with ``control.sh --set-state ACTIVE`` (a persistent cluster starts inactive)."""
        super().start(timeout)
        if self.persistence:
            try:
                self._activate()
            except BaseException:
                self.stop()
                raise
        return self

    def _activate(self) -> None:
        from ..client import IgniteClient
        from ..protocol import requests
        from ..protocol.codes import ClusterState, Op

        with IgniteClient(self.addresses(), **self.client_settings()) as client:
            client.request(lambda rid: requests.cluster_change_state(rid, ClusterState.ACTIVE), Op.CLUSTER_CHANGE_STATE)

    def _member_ready(self, m: NodeInfo, expected: int) -> bool:
        if not self.xml_config:
            return super()._member_ready(m, expected)
        # No status file on a stock node: ask it, over the thin client, how many servers it sees.
        from ..client import IgniteClient

        try:
            with IgniteClient(
                f"{m.host}:{m.client_port}", timeout=5.0, connect_timeout=5.0, **self.client_settings()
            ) as client:
                return len(client.node_endpoints(refresh=True)) >= expected
        except (IgniteError, OSError):
            return False

    def stop(self, timeout: float = 30.0) -> None:
        super().stop(timeout)
        for w in self._watchers:  # each exits once its node is gone
            try:
                w.wait(timeout=10)
            except subprocess.TimeoutExpired:
                w.kill()
                w.wait()
        self._watchers.clear()
