"""The tensorflow-ignite module on an Ignite cluster: how it is configured and how clients check it.

The module is the project's jar (:func:`tensorflow_ignite.local.java.module_jar`) in
every server node's ``libs/`` plus two settings of the node's
``IgniteConfiguration``, which :func:`xml_fragment` prints for Spring XML and
``org.tensorflow.ignite.launcher.TfLauncherModule.configure(cfg)`` applies in Java:

* the user attribute ``tensorflow-ignite.module`` = the module's version, which
  a client reads from the thin client's node details (no service or compute
  call needed), so it can tell at once which server nodes lack the module or run
  another version of it;
* the launcher service ``tf-ignite-launcher`` (``TfJobService``, one instance in
  the cluster), restricted to nodes whose attribute names this version;
* optionally, the follow log of listed caches (``xml_fragment(follow_log=...)``;
  Java: ``FollowLog.configure(cfg, caches, retentionSeconds)``): the attribute
  ``tensorflow-ignite.follow-log`` and the service ``tf-ignite-follow-log``
  (``FollowLogService``, one instance on every module node).

:func:`check_module` is what ``ignite-tf start`` and the other job commands run
before they talk to the launcher; ``ignite-tf module check`` prints its table.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape, quoteattr

from .._version import __version__
from ..errors import LauncherModuleError, LauncherNotDeployedError

if TYPE_CHECKING:
    from ..client import IgniteClient

__all__ = [
    "MODULE_ATTRIBUTE",
    "MODULE_VERSION",
    "FOLLOW_LOG_ATTRIBUTE",
    "FOLLOW_LOG_RETENTION_S",
    "LauncherSecurity",
    "NodeModule",
    "xml_fragment",
    "follow_log_caches",
    "module_status",
    "check_module",
    "require_module",
]

#: The node attribute carrying the module's version (``TfLauncherModule.ATTRIBUTE``).
MODULE_ATTRIBUTE = "tensorflow-ignite.module"
#: The module version this installation ships (the jar's version is the package's).
MODULE_VERSION = __version__

_INSTALL = (
    "Install the module on every server node: copy the jar that `ignite-tf module path` prints into the "
    "node's libs/ (the Docker image: libs/user_libs), put what `ignite-tf module config` prints inside its "
    "IgniteConfiguration bean (Java configuration: TfLauncherModule.configure(cfg)), and restart the nodes "
    "one at a time -- README, 'Use your own Ignite cluster'. IgniteDataset and ignite:// work without it."
)


@dataclass(frozen=True)
class LauncherSecurity:
    """The launcher's security settings on a node (``TfJobService``'s bean properties; Java:
    ``LauncherPolicy``).  The defaults refuse every job: see README, "Security".

    * ``allow_unauthenticated``: accept jobs on a cluster *without* authentication -- anyone
      who reaches a thin-client port may then run any program on every server node. Only for
      a trusted, isolated network (``ignite-tf node start`` sets it for its loopback-only nodes).
    * ``submitters``: the Ignite users who may submit jobs (``*``: every authenticated user);
      ``admins``: may also stop, remove and read every job.
    * ``allowed_commands``: absolute paths of the only interpreters/programs a job may run.
    * ``max_job_bytes``: the largest job directory, zipped and unzipped (default 512 MiB).
    * ``work_root``: where nodes unpack job directories (default: the node's work directory).
    """

    allow_unauthenticated: bool = False
    submitters: tuple[str, ...] = ()
    admins: tuple[str, ...] = ()
    allowed_commands: tuple[str, ...] = ()
    max_job_bytes: int | None = None
    work_root: str | None = None

    def node_arguments(self) -> list[str]:
        """The flags of the project's own node launcher (``NodeLauncher --launcher-*``)."""
        out: list[str] = []
        if self.allow_unauthenticated:
            out.append("--launcher-allow-unauthenticated")
        if self.submitters:
            out += ["--launcher-submitters", ",".join(self.submitters)]
        if self.admins:
            out += ["--launcher-admins", ",".join(self.admins)]
        if self.allowed_commands:
            out += ["--launcher-allowed-commands", ",".join(self.allowed_commands)]
        if self.max_job_bytes is not None:
            out += ["--launcher-max-job-bytes", str(int(self.max_job_bytes))]
        if self.work_root:
            out += ["--launcher-work-root", self.work_root]
        return out

    def xml_properties(self, indent: str = "") -> str:
        """The settings as ``<property>`` elements of the ``TfJobService`` bean (only those set)."""

        def values(name: str, items: Sequence[str]) -> str:
            listed = "".join(f"<value>{escape(v)}</value>" for v in items)
            return f'<property name="{name}"><list>{listed}</list></property>'

        lines = []
        if self.allow_unauthenticated:
            lines.append('<property name="allowUnauthenticated" value="true"/>')
        if self.submitters:
            lines.append(values("submitters", self.submitters))
        if self.admins:
            lines.append(values("admins", self.admins))
        if self.allowed_commands:
            lines.append(values("allowedCommands", self.allowed_commands))
        if self.max_job_bytes is not None:
            lines.append(f'<property name="maxJobBytes" value="{int(self.max_job_bytes)}"/>')
        if self.work_root:
            lines.append(f'<property name="workRoot" value={quoteattr(self.work_root)}/>')
        return "".join(f"{indent}{line}\n" for line in lines)


#: What ``ignite-tf module config`` shows inside the service bean when no settings are given:
#: every setting, commented out, with what it does.
_SECURITY_TEMPLATE = """\
<!-- Who may run jobs. With Ignite authentication on (authenticationEnabled, which needs
     persistence), list the Ignite users who may submit; nobody may until you do:
<property name="submitters"><list><value>alice</value></list></property>
     Users who may also stop, remove and read every user's jobs:
<property name="admins"><list><value>ops</value></list></property>
     Optional limits: the only interpreters/programs a job may run (absolute paths), the
     largest job directory in bytes, and where nodes unpack job directories:
<property name="allowedCommands"><list><value>/opt/venv/bin/python</value></list></property>
<property name="maxJobBytes" value="536870912"/>
<property name="workRoot" value="/var/lib/tf-jobs"/>
     WARNING: without authentication the launcher refuses every job. The line below accepts jobs
     from ANYONE who can reach a thin-client port, who can then run any program as this node's
     OS user on every server node. Only on a trusted, isolated network:
<property name="allowUnauthenticated" value="true"/>
-->
"""


#: The node attribute listing the caches whose follow log a node keeps (``FollowLog.ATTRIBUTE``).
FOLLOW_LOG_ATTRIBUTE = "tensorflow-ignite.follow-log"
#: The follow log's default retention (``FollowLog.DEFAULT_RETENTION_SECONDS``).
FOLLOW_LOG_RETENTION_S = 3600


def xml_fragment(
    version: str = MODULE_VERSION,
    security: LauncherSecurity | None = None,
    follow_log: Sequence[str] = (),
    follow_log_retention_s: int | None = None,
) -> str:
    """What goes inside a node's ``<bean class="org.apache.ignite.configuration.IgniteConfiguration">``.

    Without ``security`` the launcher's settings are printed commented out (the defaults
    refuse every job); with it, the settings it holds.  ``follow_log``: the caches whose
    updates the nodes log for exactly-once followers (``IgniteDataset.follow``), kept
    ``follow_log_retention_s`` seconds (default one hour) -- the XML form of Java's
    ``FollowLog.configure(cfg, caches, retentionSeconds)``: its node attribute and its
    service (``FollowLogService``, one instance on every module node).
    """
    caches = follow_log_caches(follow_log)
    retention = FOLLOW_LOG_RETENTION_S if follow_log_retention_s is None else int(follow_log_retention_s)
    if caches and retention <= 0:
        raise ValueError(f"the follow log's retention must be a positive number of seconds, not {retention}")
    pad = " " * 10
    if security is None:
        settings = "".join(f"{pad}{line}\n" for line in _SECURITY_TEMPLATE.splitlines())
    else:
        settings = security.xml_properties(pad)
    follow_entry = follow_service = ""
    if caches:
        follow_entry = f"""
    <entry key="{FOLLOW_LOG_ATTRIBUTE}" value={quoteattr(",".join(caches))}/>"""
        listed = "".join(f"<value>{escape(c)}</value>" for c in caches)
        follow_service = f"""
    <!-- The follow log (IgniteDataset.follow's exactly-once resume): every update of the caches
         listed below, kept {retention} s; every server node needs the same list. -->""" + _service_bean(
            "tf-ignite-follow-log",
            0,
            version,
            "org.tensorflow.ignite.follow.FollowLogService",
            f"""          <property name="caches"><list>{listed}</list></property>
          <property name="retentionSeconds" value="{retention}"/>
""",
        )
    launcher = _service_bean(
        "tf-ignite-launcher", 1, version, "org.tensorflow.ignite.launcher.TfJobService", settings
    ).lstrip("\n")
    return f"""\
<!-- tensorflow-ignite module {version}: the jar of `ignite-tf module path` in libs/, and these two
     properties inside the IgniteConfiguration bean. If the bean already sets userAttributes or
     serviceConfiguration, add these <entry>s and <bean>s to its map and list instead. -->
<property name="userAttributes">
  <map>
    <entry key="{MODULE_ATTRIBUTE}" value="{version}"/>{follow_entry}
  </map>
</property>
<property name="serviceConfiguration">
  <list>
{launcher}{follow_service}
  </list>
</property>
"""


def _service_bean(name: str, total: int, version: str, service_class: str, properties: str) -> str:
    """A ``ServiceConfiguration`` bean (at most one instance per node, ``total`` in the cluster, 0 =
    one on every node) restricted to nodes carrying this version of the module; ``properties``: the
    service bean's ``<property>`` lines."""
    return f"""
    <bean class="org.apache.ignite.services.ServiceConfiguration">
      <property name="name" value="{name}"/>
      <property name="maxPerNodeCount" value="1"/>
      <property name="totalCount" value="{total}"/>
      <property name="nodeFilter">
        <bean class="org.apache.ignite.util.AttributeNodeFilter">
          <constructor-arg value="{MODULE_ATTRIBUTE}"/>
          <constructor-arg value="{version}"/>
        </bean>
      </property>
      <property name="service">
        <bean class="{service_class}">
{properties}        </bean>
      </property>
    </bean>"""


def follow_log_caches(caches: Sequence[str]) -> list[str]:
    """The listed cache names, each once, in order; ``a,b`` entries split (the node attribute is
    comma-separated, so a name cannot hold a comma)."""
    out: list[str] = []
    for item in caches:
        for name in str(item).split(","):
            name = name.strip()
            if name and name not in out:
                out.append(name)
    return out


@dataclass(frozen=True)
class NodeModule:
    """One server node and the module version it carries (None: no module)."""

    node_id: uuid.UUID | None
    name: str
    addresses: tuple[str, ...]
    ignite_version: str
    version: str | None

    def label(self) -> str:
        """``name (address, ...)`` for messages."""
        shown = [a for a in self.addresses if not a.startswith(("127.", "0:0:0:0:0:0:0:1"))] or list(self.addresses)
        return f"{self.name} ({', '.join(shown[:2])})" if shown else self.name


def module_status(client: IgniteClient) -> list[NodeModule]:
    """Every server node of ``client``'s cluster with the module version it carries."""
    out = []
    for node in client.server_nodes():
        version = node.attributes.get(MODULE_ATTRIBUTE)
        v = node.version
        out.append(
            NodeModule(
                node_id=node.node_id,
                name=str(node.consistent_id if node.consistent_id is not None else node.node_id),
                addresses=tuple(str(a) for a in (node.addresses or ())),
                ignite_version=f"{v.major}.{v.minor}.{v.maintenance}",
                version=None if version is None else str(version),
            )
        )
    return sorted(out, key=lambda n: n.name)


def check_module(client: IgniteClient, expected: str = MODULE_VERSION) -> list[NodeModule]:
    """Every server node of ``client``'s cluster, after :func:`require_module` passed on them."""
    nodes = module_status(client)
    require_module(nodes, expected)
    return nodes


def require_module(nodes: Sequence[NodeModule], expected: str = MODULE_VERSION) -> None:
    """Raise unless every node carries module ``expected``.

    :class:`LauncherNotDeployedError` when no node has the module,
    :class:`LauncherModuleError` (naming the nodes) when some lack it or run
    another version.
    """
    missing = [n for n in nodes if n.version is None]
    other = [n for n in nodes if n.version is not None and n.version != expected]
    if nodes and len(missing) == len(nodes):
        listed = ", ".join(n.label() for n in nodes[:5]) + (", ..." if len(nodes) > 5 else "")
        raise LauncherNotDeployedError(
            f"none of the cluster's {len(nodes)} server node(s) has the tensorflow-ignite module "
            f"({listed}), so there is no training launcher to run jobs. {_INSTALL}"
        )
    if missing:
        raise LauncherModuleError(
            f"{len(missing)} of {len(nodes)} server nodes lack the tensorflow-ignite module: "
            f"{', '.join(n.label() for n in missing)}. A job's workers run on every node holding "
            f"partitions, so these nodes cannot take part. {_INSTALL}",
            nodes={n.name: None for n in missing},
        )
    if other:
        versions = ", ".join(f"{n.label()} has {n.version}" for n in other)
        raise LauncherModuleError(
            f"server nodes run another version of the tensorflow-ignite module than this client's "
            f"{expected}: {versions}. Put the jar of this installation (`ignite-tf module path`) into "
            f"their libs/, set the version in their configuration (`ignite-tf module config`) and restart "
            f"them one at a time -- or install the matching client here (pip install "
            f"tensorflow-ignite=={other[0].version}).",
            nodes={n.name: n.version for n in other},
        )
