"""Several "hosts" on one machine, for tests of a cluster spread over a network and its faults.

:class:`HostNetwork` makes N Linux network namespaces, each with an address of
its own on one bridge (veth pairs); the test process stays in the root
namespace and reaches every host through the bridge, as a client on another
machine reaches a cluster.  :class:`HostCluster` runs one stock Apache Ignite
node per host, from Spring XML whose static ``TcpDiscoveryVmIpFinder`` lists
every host's discovery address -- the way users configure discovery across
machines -- and waits for readiness as :class:`~..local.cluster.LocalCluster`
does.

Faults (what a network does, unlike ``kill -9``):

* :meth:`HostCluster.cut` (:meth:`HostNetwork.cut` / :meth:`HostNetwork.heal`): the host's link goes down
  (``ip link set ... down`` on its end of the bridge) -- the node is alive but
  unreachable, its peers' packets vanish, nobody gets a reset -- and comes back.
* :meth:`HostCluster.pause` / :meth:`HostCluster.resume`: ``SIGSTOP`` /
  ``SIGCONT`` of a node: its host answers TCP, the node says nothing.
* Latency and loss: this machine's kernel has no ``tc netem``, so they are
  added in user space by a forwarding TCP proxy in front of a node (the test
  suite's :class:`~.tcp_proxy.TcpProxy`: a delay each way, and "loss" as TCP shows it
  to an application -- a retransmission timeout's delay on some segments).

Needs root (``ip netns``, bridges, veth).  Everything is named ``tfi<pid>...``
after the process that made it: :func:`remove_leftovers` deletes what a run
that died without cleaning up left behind (namespaces, their processes, the
bridge), and every :class:`HostNetwork` calls it before making its own.
"""

from __future__ import annotations

import ipaddress
import os
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import NodeError
from ..launcher.module import LauncherSecurity
from ..local.cluster import NodeInfo
from ..local.stock import NEWEST_XML_VERSION, StockCluster

__all__ = ["HostNetwork", "HostCluster", "remove_leftovers", "netns_unavailable", "FAILURE_DETECTION_TIMEOUT"]

#: Ignite's default ``failureDetectionTimeout`` (seconds), which these nodes keep: how long a silent
#: node stays in the topology.
FAILURE_DETECTION_TIMEOUT = 10.0
#: The priority of :meth:`HostNetwork.cut_submitter`'s routing rule (before the main table's 32766).
_SUBMITTER_RULE_PRIORITY = 1000

_NAME = re.compile(r"^tfi(\d+)(?:h\d+|br|v\d+)$")


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    if check and proc.returncode != 0:
        raise NodeError(f"`ip {' '.join(args)}` failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc


def netns_unavailable() -> str | None:
    """Why network namespaces cannot be made here (None when they can): not root, or no ``ip``."""
    if os.geteuid() != 0:
        return "network namespaces need root (the multi-host rig runs as root, as CI does)"
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2) is not installed"
    return None


def _pid_alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def remove_leftovers() -> list[str]:
    """Delete the namespaces, bridges and veth pairs of runs whose process is gone (and every process
    left in those namespaces); returns their names."""
    removed = []
    for line in _ip("netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.strip() else ""
        m = _NAME.match(name)
        if m is None or _pid_alive(int(m.group(1))):
            continue
        _kill_namespace_processes(name)
        _ip("netns", "del", name, check=False)
        removed.append(name)
    for line in _ip("-o", "link", "show", check=False).stdout.splitlines():  # bridges, veth ends
        parts = line.split(":")
        name = parts[1].strip().split("@")[0] if len(parts) > 1 else ""
        m = _NAME.match(name)
        if m is None or _pid_alive(int(m.group(1))):
            continue
        _ip("link", "del", name, check=False)
        removed.append(name)
    return removed


def _kill_namespace_processes(namespace: str) -> None:
    pids = [int(p) for p in _ip("netns", "pids", namespace, check=False).stdout.split() if p.isdigit()]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGCONT)  # a paused node is killed too (SIGKILL works anyway)
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _free_subnet() -> ipaddress.IPv4Network:
    """A /24 under 10.213.0.0/16 that no interface of this machine uses."""
    used = []
    for line in _ip("-o", "-4", "addr", "show", check=False).stdout.splitlines():
        m = re.search(r"inet (\S+)", line)
        if m:
            used.append(ipaddress.ip_interface(m.group(1)).network)
    start = os.getpid() % 250
    for i in range(250):
        net = ipaddress.ip_network(f"10.213.{(start + i) % 250}.0/24")
        if not any(net.overlaps(u) for u in used):
            return net
    raise NodeError("no free /24 under 10.213.0.0/16 for the test hosts")


class HostNetwork:
    """``hosts`` network namespaces on one bridge; host ``i`` has :meth:`address` ``(i)``.

    Use as a context manager (or :meth:`create` / :meth:`destroy`); ``destroy``
    removes everything it made and may be called any number of times.
    """

    def __init__(self, hosts: int) -> None:
        if not 1 <= hosts <= 20:
            raise NodeError(f"a host network has 1 to 20 hosts, not {hosts}")
        self.hosts = hosts
        self.tag = f"tfi{os.getpid()}"
        self.bridge = f"{self.tag}br"
        self.subnet: ipaddress.IPv4Network | None = None
        self._cut: set[int] = set()
        self._made = False
        #: True between :meth:`cut_submitter` and :meth:`heal_submitter`.
        self.submitter_cut = False

    def namespace(self, index: int) -> str:
        """The network namespace of host ``index``."""
        return f"{self.tag}h{index}"

    def _veth(self, index: int) -> str:
        return f"{self.tag}v{index}"  # the bridge's end; the host's end is eth0 in its namespace

    @property
    def gateway(self) -> str:
        """The root namespace's address on the bridge (where the test process is seen from)."""
        assert self.subnet is not None, "create() the network first"
        return str(self.subnet.network_address + 1)

    def address(self, index: int) -> str:
        """Host ``index``'s address."""
        assert self.subnet is not None, "create() the network first"
        return str(self.subnet.network_address + 2 + index)

    def exec_prefix(self, index: int) -> list[str]:
        """The command prefix that runs a program on host ``index`` (``ip netns exec``: the program's pid
        is the one the returned command's process gets)."""
        return ["ip", "netns", "exec", self.namespace(index)]

    def create(self) -> "HostNetwork":
        """Make the bridge and the hosts (after removing what crashed runs left)."""
        why = netns_unavailable()
        if why is not None:
            raise NodeError(why)
        remove_leftovers()
        self.destroy()  # a previous network of this very process, if any
        self.subnet = _free_subnet()
        self._made = True
        # A cut_submitter rule a crashed run left for this subnet would cut this network off.
        _ip("rule", "del", "to", str(self.subnet), "blackhole", "priority", str(_SUBMITTER_RULE_PRIORITY), check=False)
        try:
            prefix = self.subnet.prefixlen
            _ip("link", "add", self.bridge, "type", "bridge", "forward_delay", "0")
            _ip("addr", "add", f"{self.gateway}/{prefix}", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
            for i in range(self.hosts):
                ns, veth, peer = self.namespace(i), self._veth(i), f"{self.tag}p{i}"
                _ip("netns", "add", ns)
                _ip("link", "del", veth, check=False)  # left by an earlier network of this process
                _ip("link", "add", veth, "type", "veth", "peer", "name", peer)
                _ip("link", "set", peer, "netns", ns)
                _ip("link", "set", veth, "master", self.bridge)
                _ip("link", "set", veth, "up")
                _ip("-n", ns, "link", "set", peer, "name", "eth0")
                _ip("-n", ns, "addr", "add", f"{self.address(i)}/{prefix}", "dev", "eth0")
                _ip("-n", ns, "link", "set", "eth0", "up")
                _ip("-n", ns, "link", "set", "lo", "up")
        except BaseException:
            self.destroy()
            raise
        return self

    def cut(self, index: int) -> None:
        """Take host ``index``'s link down: it stays up but nothing reaches it or leaves it (no reset)."""
        _ip("link", "set", self._veth(index), "down")
        self._cut.add(index)

    def heal(self, index: int) -> None:
        """Bring host ``index``'s link back up."""
        _ip("link", "set", self._veth(index), "up")
        self._cut.discard(index)

    def is_cut(self, index: int) -> bool:
        return index in self._cut

    def cut_submitter(self) -> None:
        """Cut the root namespace (the test process, a submitter) off from every host, the hosts still
        reaching each other: its packets to the subnet are dropped silently (a ``blackhole`` routing
        rule; no error, no reset), as when a laptop loses the network."""
        assert self.subnet is not None, "create() the network first"
        if not self.submitter_cut:
            _ip("rule", "add", "to", str(self.subnet), "blackhole", "priority", str(_SUBMITTER_RULE_PRIORITY))
            self.submitter_cut = True

    def heal_submitter(self) -> None:
        """Undo :meth:`cut_submitter`."""
        if self.submitter_cut and self.subnet is not None:
            _ip(
                "rule",
                "del",
                "to",
                str(self.subnet),
                "blackhole",
                "priority",
                str(_SUBMITTER_RULE_PRIORITY),
                check=False,
            )
        self.submitter_cut = False

    def destroy(self) -> None:
        """Remove the hosts (killing any process still in them) and the bridge."""
        if not self._made:
            return
        self.heal_submitter()
        for i in range(self.hosts):
            ns = self.namespace(i)
            if _ip("netns", "pids", ns, check=False).returncode == 0:
                _kill_namespace_processes(ns)
            # The pair goes at once this way; with the namespace it would go later (the kernel
            # cleans up namespaces asynchronously), and a new network could not take its name.
            _ip("link", "del", self._veth(i), check=False)
            _ip("netns", "del", ns, check=False)
        _ip("link", "del", self.bridge, check=False)
        self._cut.clear()
        self._made = False

    def __enter__(self) -> "HostNetwork":
        return self.create()

    def __exit__(self, *exc: object) -> None:
        self.destroy()


@dataclass
class HostCluster(StockCluster):
    """One stock Ignite node (Spring XML, :data:`~..local.stock.NEWEST_XML_VERSION`) on each host of
    ``network``; node ``i`` runs on host ``i`` and binds that host's address only.

    The static IP finder lists every host's discovery address; ports are the
    cluster's own (chosen free as :class:`LocalCluster` does).  ``stop`` resumes
    paused nodes and heals cut links first, so the nodes stop cleanly.

    The nodes' addresses are not loopback, so the launcher would refuse every
    unauthenticated job; unless ``launcher_security`` says otherwise, they opt
    in (``allow_unauthenticated``): the bridge is an isolated network only this
    machine reaches.
    """

    network: HostNetwork | None = None
    ignite_version: str = NEWEST_XML_VERSION
    name: str = "tfi-hosts"
    _paused: set[int] = field(default_factory=set, repr=False)
    #: Nodes a fault was injected into (cut, paused) and not brought back with :meth:`rejoin` yet.
    _disturbed: set[int] = field(default_factory=set, repr=False)

    def __post_init__(self) -> None:
        if self.network is None:
            raise NodeError("a HostCluster needs the HostNetwork its nodes run in")
        if self.nodes > self.network.hosts:
            raise NodeError(f"{self.nodes} nodes need as many hosts; the network has {self.network.hosts}")
        self.host = self.network.gateway  # ports are chosen free there; each node binds its own host
        if self.launcher_security is None:
            self.launcher_security = LauncherSecurity(allow_unauthenticated=True)
        super().__post_init__()
        if not self.xml_config:
            raise NodeError("HostCluster runs stock nodes from Spring XML (2.16 or 2.17)")

    def discovery_list(self) -> list[str]:
        assert self.network is not None
        return [f"{self.network.address(i)}:{self._discovery_base + i}" for i in range(self.nodes)]

    def _node_command(self, info: NodeInfo, node_dir: Path) -> list[str]:
        assert self.network is not None
        info.host = self.network.address(info.index)
        return [*self.network.exec_prefix(info.index), *super()._node_command(info, node_dir)]

    def member(self, index: int) -> NodeInfo:
        return next(m for m in self.members if m.index == index)

    def cut(self, index: int) -> None:
        """Take node ``index``'s host off the network (:meth:`HostNetwork.cut`)."""
        assert self.network is not None
        self.network.cut(index)
        self._disturbed.add(index)

    def pause(self, index: int) -> None:
        """``SIGSTOP`` node ``index``: alive, its host reachable, the node silent."""
        os.kill(self.member(index).pid, signal.SIGSTOP)
        self._paused.add(index)
        self._disturbed.add(index)

    def resume(self, index: int) -> None:
        """``SIGCONT`` node ``index``."""
        os.kill(self.member(index).pid, signal.SIGCONT)
        self._paused.discard(index)

    def rejoin(self, index: int, timeout: float = 180.0) -> NodeInfo:
        """Bring node ``index`` back into the cluster and wait until the cluster is whole.

        Heals its link and resumes it; a node the others have dropped does not
        rejoin by itself (it goes on as a cluster of its own -- split brain), so
        it is then restarted on its host, as an operator does.
        """
        assert self.network is not None
        if self.network.is_cut(index):
            self.network.heal(index)
        if index in self._paused:
            self.resume(index)
        if self.is_alive(self.member(index)):
            self.kill_node(index, signal.SIGKILL)
        info = self.restart_nodes([index], timeout=timeout)[0]
        self._disturbed.discard(index)
        return info

    def ensure_whole(self, timeout: float = 180.0) -> None:
        """Bring back (:meth:`rejoin`) every node cut off, paused or dead: the state a test sharing
        this cluster starts from, whatever the test before it left."""
        for index in sorted(self._disturbed | {m.index for m in self.members if not self.is_alive(m)}):
            self.rejoin(index, timeout=timeout)

    def stop(self, timeout: float = 30.0) -> None:
        for index in list(self._paused):
            try:
                self.resume(index)
            except ProcessLookupError:
                self._paused.discard(index)
        if self.network is not None:
            self.network.heal_submitter()
            for index in range(self.network.hosts):
                if self.network.is_cut(index):
                    self.network.heal(index)
        super().stop(timeout)
