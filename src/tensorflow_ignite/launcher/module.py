"""The tensorflow-ignite module as Ignite configuration: what a stock node needs to run the launcher."""

from __future__ import annotations

__all__ = ["xml_fragment"]

#: The launcher service as a Spring bean property of ``IgniteConfiguration``.
_FRAGMENT = """\
<property name="serviceConfiguration">
  <list>
    <bean class="org.apache.ignite.services.ServiceConfiguration">
      <property name="name" value="tf-ignite-launcher"/>
      <property name="maxPerNodeCount" value="1"/>
      <property name="totalCount" value="1"/>
      <property name="service">
        <bean class="org.tensorflow.ignite.launcher.TfJobService"/>
      </property>
    </bean>
  </list>
</property>
"""


def xml_fragment() -> str:
    """The ``<property>`` to put inside a node's ``IgniteConfiguration`` bean (Spring XML)."""
    return _FRAGMENT
