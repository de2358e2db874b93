"""The tensorflow-ignite module on a cluster: the jar and fragment users install, and the checks
that make `ignite-tf start` fail at once, naming the nodes, when it is missing or of another version."""

from __future__ import annotations

import re
import time
import tomllib
import xml.etree.ElementTree as ET
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import tensorflow_ignite
from tensorflow_ignite.cli.main import main as cli
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.errors import LauncherModuleError, LauncherNotDeployedError
from tensorflow_ignite.launcher.jobs import JobClient
from tensorflow_ignite.launcher.module import (
    MODULE_ATTRIBUTE,
    MODULE_VERSION,
    check_module,
    module_status,
    require_module,
    xml_fragment,
)
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.local.java import jars_dir, module_jar

ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / "examples" / "launcher_jobs" / "digits_resnet"


def _addr(cluster: LocalCluster) -> list[str]:
    host, port = cluster.address()
    return ["--host", host, "--port", str(port)]


# ------------------------------------------------------------ jar and fragment
def test_module_path_prints_the_packaged_jar_with_our_classes_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["module", "path"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1
    jar = Path(lines[0])
    assert jar.is_absolute() and jar == module_jar().resolve() and jar.parent == jars_dir().resolve()
    with zipfile.ZipFile(jar) as z:
        names = set(z.namelist())
        version = z.read("org/tensorflow/ignite/launcher/module.properties").decode()
    for cls in ("TfJobService", "TfLauncherModule", "WorkerAgent"):
        assert f"org/tensorflow/ignite/launcher/{cls}.class" in names
    assert not [n for n in names if n.startswith("org/apache/")], "Ignite is provided, not shaded in"
    assert re.search(rf"^version={re.escape(MODULE_VERSION)}$", version, re.MULTILINE), version


def test_versions_agree() -> None:
    """The jar's version (java/pom.xml) is the package's: the check compares them."""
    pom = ET.parse(ROOT / "java" / "pom.xml").getroot()
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert pom.findtext("m:version", namespaces=ns) == pyproject["project"]["version"] == tensorflow_ignite.__version__


def test_module_config_is_xml_for_the_configuration_bean(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["module", "config"]) == 0
    fragment = capsys.readouterr().out
    assert fragment == xml_fragment()
    beans = ET.fromstring(
        '<beans xmlns="http://www.springframework.org/schema/beans">'
        f'<bean class="org.apache.ignite.configuration.IgniteConfiguration">{fragment}</bean></beans>')
    props = {p.get("name"): p for p in beans.iter("{http://www.springframework.org/schema/beans}property")}
    assert {"userAttributes", "serviceConfiguration", "nodeFilter", "service", "name"} <= set(props)
    entry = next(beans.iter("{http://www.springframework.org/schema/beans}entry"))
    assert (entry.get("key"), entry.get("value")) == (MODULE_ATTRIBUTE, MODULE_VERSION)
    # Every class the fragment names exists: ours in the module jar, Ignite's in ignite-core.
    classes = {b.get("class") for b in beans.iter("{http://www.springframework.org/schema/beans}bean")}
    with zipfile.ZipFile(module_jar()) as ours, \
            zipfile.ZipFile(next((jars_dir() / "lib").glob("ignite-core-*.jar"))) as core:
        available = set(ours.namelist()) | set(core.namelist())
    for cls in classes:
        assert cls.replace(".", "/") + ".class" in available, cls


# ------------------------------------------------------------ clear failures
@pytest.fixture(scope="module")
def mixed_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """Two nodes: tf-ignite-0 without the module, tf-ignite-1 with it."""
    cluster = LocalCluster(tmp_path_factory.mktemp("mixed"), nodes=1, name="tfi-mixed", heap_mb=384, region_mb=128,
                           launcher_module=False)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def test_a_cluster_without_the_module_fails_at_once_naming_the_nodes(
        mixed_cluster: LocalCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if len(mixed_cluster.members) > 1:
        pytest.fail("runs before the mixed-cluster test adds a node")
    started = time.monotonic()
    code = cli(["start", *_addr(mixed_cluster), "SOME_CACHE", str(JOB), "--", "python", "train.py"])
    took = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 1, err
    assert took < 10, f"took {took:.1f}s: no waiting for a service that cannot come"
    assert "none of the cluster's 1 server node(s) has the tensorflow-ignite module" in err
    assert "tfi-mixed-0" in err and "ignite-tf module path" in err and "ignite-tf module config" in err
    with IgniteClient(mixed_cluster.addresses()) as client, pytest.raises(LauncherNotDeployedError):
        JobClient(client).ping()


def test_nodes_without_the_module_are_named(mixed_cluster: LocalCluster,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    if len(mixed_cluster.members) == 1:
        mixed_cluster.add_node(launcher_module=True)
    with IgniteClient(mixed_cluster.addresses()) as client:
        nodes = {n.name: n.version for n in module_status(client)}
        assert nodes == {"tfi-mixed-0": None, "tfi-mixed-1": MODULE_VERSION}
        with pytest.raises(LauncherModuleError, match=r"1 of 2 server nodes lack the tensorflow-ignite module: "
                                                      r"tfi-mixed-0 ") as info:
            JobClient(client).ping()
        assert info.value.nodes == {"tfi-mixed-0": None}
    assert cli(["module", "check", *_addr(mixed_cluster)]) == 1
    out = capsys.readouterr()
    table = {line.split()[0]: line.split()[-1] for line in out.out.splitlines()[1:]}
    assert table == {"tfi-mixed-0": "-", "tfi-mixed-1": MODULE_VERSION}
    assert "lack the tensorflow-ignite module: tfi-mixed-0" in out.err


def test_another_module_version_is_named(ignite_cluster: LocalCluster, capsys: pytest.CaptureFixture[str]) -> None:
    with IgniteClient(ignite_cluster.addresses()) as client:
        nodes = check_module(client)  # the project's own nodes carry this version
        assert len(nodes) == 3 and {n.version for n in nodes} == {MODULE_VERSION}
        with pytest.raises(LauncherModuleError, match=rf"another version .* than this client's 9\.9\.9: "
                                                      rf".* has {re.escape(MODULE_VERSION)}") as info:
            require_module(nodes, expected="9.9.9")
        assert set(info.value.nodes.values()) == {MODULE_VERSION} and len(info.value.nodes) == 3
    assert cli(["module", "check", "--json", *_addr(ignite_cluster)]) == 0
    assert capsys.readouterr().out.count(f'"module": "{MODULE_VERSION}"') == 3
    # The text form also says who may run jobs, as the launcher reports it: these loopback
    # nodes accept unauthenticated jobs, and it warns so.
    assert cli(["module", "check", *_addr(ignite_cluster)]) == 0
    assert "launcher: WARNING: authentication is off and allowUnauthenticated is set" in capsys.readouterr().err
