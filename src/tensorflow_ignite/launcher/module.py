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
  the cluster), restricted to nodes whose attribute names this version.

:func:`check_module` is what ``ignite-tf start`` and the other job commands run
before they talk to the launcher; ``ignite-tf module check`` prints its table.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import __version__
from ..errors import LauncherModuleError, LauncherNotDeployedError

if TYPE_CHECKING:
    from ..client import IgniteClient

__all__ = ["MODULE_ATTRIBUTE", "MODULE_VERSION", "NodeModule", "xml_fragment", "module_status", "check_module",
           "require_module"]

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


def xml_fragment(version: str = MODULE_VERSION) -> str:
    """What goes inside a node's ``<bean class="org.apache.ignite.configuration.IgniteConfiguration">``."""
    return f"""\
<!-- tensorflow-ignite module {version}: the jar of `ignite-tf module path` in libs/, and these two
     properties inside the IgniteConfiguration bean. If the bean already sets userAttributes or
     serviceConfiguration, add this <entry> and this <bean> to its map and list instead. -->
<property name="userAttributes">
  <map>
    <entry key="{MODULE_ATTRIBUTE}" value="{version}"/>
  </map>
</property>
<property name="serviceConfiguration">
  <list>
    <bean class="org.apache.ignite.services.ServiceConfiguration">
      <property name="name" value="tf-ignite-launcher"/>
      <property name="maxPerNodeCount" value="1"/>
      <property name="totalCount" value="1"/>
      <property name="nodeFilter">
        <bean class="org.apache.ignite.util.AttributeNodeFilter">
          <constructor-arg value="{MODULE_ATTRIBUTE}"/>
          <constructor-arg value="{version}"/>
        </bean>
      </property>
      <property name="service">
        <bean class="org.tensorflow.ignite.launcher.TfJobService"/>
      </property>
    </bean>
  </list>
</property>
"""


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
        out.append(NodeModule(
            node_id=node.node_id,
            name=str(node.consistent_id if node.consistent_id is not None else node.node_id),
            addresses=tuple(str(a) for a in (node.addresses or ())),
            ignite_version=f"{v.major}.{v.minor}.{v.maintenance}",
            version=None if version is None else str(version),
        ))
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
            f"({listed}), so there is no training launcher to run jobs. {_INSTALL}")
    if missing:
        raise LauncherModuleError(
            f"{len(missing)} of {len(nodes)} server nodes lack the tensorflow-ignite module: "
            f"{', '.join(n.label() for n in missing)}. A job's workers run on every node holding "
            f"partitions, so these nodes cannot take part. {_INSTALL}",
            nodes={n.name: None for n in missing})
    if other:
        versions = ", ".join(f"{n.label()} has {n.version}" for n in other)
        raise LauncherModuleError(
            f"server nodes run another version of the tensorflow-ignite module than this client's "
            f"{expected}: {versions}. Put the jar of this installation (`ignite-tf module path`) into "
            f"their libs/, set the version in their configuration (`ignite-tf module config`) and restart "
            f"them one at a time -- or install the matching client here (pip install "
            f"tensorflow-ignite=={other[0].version}).",
            nodes={n.name: n.version for n in other})
