"""pytest fixtures that start real Apache Ignite nodes (never mocks).

Enable with ``pytest_plugins = ["tensorflow_ignite.testing.pytest_plugin"]``.

Session-scoped clusters are started the first time a test asks for them and
stopped when the session ends -- also when tests fail, and on SIGTERM; every
node started in the test process stops by itself if that process is killed
(:func:`~tensorflow_ignite.local.cluster.stop_nodes_with_process`).  Ports
are picked free per run, so parallel runs on one machine do not collide, and
``cache_name`` gives every test a cache name of its own and destroys the
caches named after it when the test ends.

``stock_cluster`` is three nodes of stock Apache Ignite with the module
(:class:`~tensorflow_ignite.local.stock.StockCluster`), one cluster per Ignite
version the run selects: ``--ignite-versions all`` (or a comma list such as
``2.16.0,2.17.0``); by default a test runs on the versions of its
``ignite_versions`` marker, else on the newest release nodes read XML for.
Tests on one version run together, so one stock cluster runs at a time, and
the run ends with a table of every such test's outcome per version.

``three_hosts`` spreads three stock nodes over three network namespaces (one
address each, on a bridge) for network-fault tests (:mod:`.hosts`).

A session cluster stops after the last test that uses it, not at the session's
end: an idle node still costs CPU (an Ignite 3 node about a tenth of a core, an
Ignite 2 node a few percent), which the tests still running on a small machine
need.  To make those lifetimes short, the run orders test modules by the session
clusters they use (:data:`CLUSTER_FIXTURES`: modules using the rarest, costliest
first, modules using none last); the order of tests inside a module, and
pytest's grouping of tests by Ignite version, stay as they were.  A module uses a
cluster when one of its tests asks for the fixture, directly or through another
fixture, or when its source names the fixture (``request.getfixturevalue``).
"""

from __future__ import annotations

import atexit
import hashlib
import itertools
import os
import re
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from ..local.cluster import LocalCluster, stop_nodes_with_process
from ..local.ignite3 import Ignite3Cluster
from ..local.stock import IGNITE_VERSIONS, NEWEST_XML_VERSION, StockCluster
from .hosts import HostCluster, HostNetwork, netns_unavailable

_started: list[LocalCluster | Ignite3Cluster] = []
_lock = threading.Lock()

#: The session fixtures that start clusters, in the order their users run: modules using the
#: first run first (the rarest and costliest to keep idle), modules using none of them last.
CLUSTER_FIXTURES = (
    "ignite3_plain_nodes",
    "ignite3_node",
    "stock_cluster",
    "ignite_secure_node",
    "ignite_sql_node",
    "ignite_cluster",
    "ignite_node",
)

#: The cluster each of :data:`CLUSTER_FIXTURES` has started (while it runs).
_by_fixture: dict[str, LocalCluster | Ignite3Cluster] = {}
#: Test node id -> the cluster fixtures whose last user it is (set when collection ends).
_last_users: dict[str, list[str]] = {}
#: (fixture, the test after which its cluster stopped), for the run's summary.
_released: list[tuple[str, str]] = []


def _stop_all() -> None:
    with _lock:
        clusters = list(_started)
        _started.clear()
    for c in clusters:
        c.stop()


atexit.register(_stop_all)


def _on_sigterm(signum: int, frame: Any) -> None:  # pragma: no cover - signal path
    # SystemExit would only fail the running test (pytest reports it and goes on
    # with the next one); pytest.exit ends the session, running the teardowns.
    _stop_all()
    pytest.exit(f"terminated by signal {signum}; local Ignite nodes stopped", returncode=128 + signum)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--ignite-versions",
        default=None,
        metavar="LIST",
        help="Ignite versions for the stock_cluster tests: 'all' or a comma list "
        f"({', '.join(IGNITE_VERSIONS)}); default: each test's ignite_versions marker",
    )
    parser.addoption(
        "--long",
        action="store_true",
        default=False,
        help="the long forms of the fault tests (more kill trials, more rows; `make test-long`); "
        "by default each runs its short form, as CI does",
    )


@pytest.fixture(scope="session")
def long_form(request: pytest.FixtureRequest) -> bool:
    """True under ``--long``: a fault test runs its long form (see ``pytest --help``)."""
    return bool(request.config.getoption("long", False))


def _selected_versions(config: pytest.Config, marker: pytest.Mark | None) -> list[str]:
    option = config.getoption("ignite_versions", None)
    if option is None:
        return list(marker.args) if marker is not None else [NEWEST_XML_VERSION]
    if option.strip() == "all":
        return list(IGNITE_VERSIONS)
    versions = [v.strip() for v in option.split(",") if v.strip()]
    unknown = [v for v in versions if v not in IGNITE_VERSIONS]
    if unknown or not versions:
        raise pytest.UsageError(f"--ignite-versions {option!r}: pick 'all' or some of {', '.join(IGNITE_VERSIONS)}")
    return versions


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # A session-scoped parameter: every test on one version shares that version's cluster.
    if "ignite_version" in metafunc.fixturenames:
        versions = _selected_versions(metafunc.config, metafunc.definition.get_closest_marker("ignite_versions"))
        metafunc.parametrize("ignite_version", versions, scope="session")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "ignite_versions(*versions): the Ignite versions a stock_cluster test runs on by default"
    )
    config.addinivalue_line(
        "markers",
        "long_only(short_form): runs under --long only; `short_form` names the test that covers "
        "the same promise in every run",
    )


def _order_by_clusters(items: list[pytest.Item]) -> None:
    """Order ``items`` by the session clusters their modules use (see the module's docstring)."""
    # A stable sort by module rank: each module's own order, and pytest's grouping of the tests
    # on one Ignite version (one stock cluster at a time), are kept.
    used_by_module: dict[str, frozenset[str]] = {}
    for item in items:
        key = str(item.path)
        used_by_module[key] = used_by_module.get(key, frozenset()) | _clusters_used(item)
    items.sort(key=lambda item: _module_rank(item, used_by_module))


@pytest.hookimpl(trylast=True)  # after pytest's own reordering (tests grouped by session parameters)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption("long", False):
        keep, dropped = [], []
        for item in items:
            (dropped if item.get_closest_marker("long_only") is not None else keep).append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = keep
    _order_by_clusters(items)
    # Every node a test starts (fixtures or LocalCluster in a test) stops with this
    # process, also when a timeout or CI kills it before any teardown runs.
    stop_nodes_with_process(os.getpid())
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)


_mentions: dict[str, frozenset[str]] = {}


def _clusters_used(item: pytest.Item) -> frozenset[str]:
    """The cluster fixtures ``item`` uses: asked for (directly or through other fixtures), or named
    in its module's source (a fixture fetched by name with ``request.getfixturevalue``)."""
    path = str(item.path)
    if path not in _mentions:
        try:
            text = item.path.read_text(errors="replace")
        except OSError:
            text = ""
        _mentions[path] = frozenset(f for f in CLUSTER_FIXTURES if re.search(rf"\b{f}\b", text))
    return _mentions[path] | frozenset(f for f in getattr(item, "fixturenames", ()) if f in CLUSTER_FIXTURES)


def _module_rank(item: pytest.Item, used_by_module: dict[str, frozenset[str]]) -> tuple[int, ...]:
    used = used_by_module[str(item.path)]
    return tuple(0 if f in used else 1 for f in CLUSTER_FIXTURES)


def pytest_collection_finish(session: pytest.Session) -> None:
    _last_users.clear()
    last: dict[str, str] = {}
    for item in session.items:
        for fixture in _clusters_used(item):
            last[fixture] = item.nodeid
    for fixture, nodeid in last.items():
        _last_users.setdefault(nodeid, []).append(fixture)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    # Runs after pytest's own teardown of the test: no later test uses these clusters.
    for fixture in _last_users.pop(item.nodeid, ()):
        cluster = _by_fixture.pop(fixture, None)
        if cluster is not None:
            _finish(cluster)
            _released.append((fixture, item.nodeid))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    _stop_all()


#: (test, version) -> outcome of the tests run on stock clusters, for the summary table.
_version_outcomes: dict[tuple[str, str], str] = {}


def _split_version(nodeid: str) -> tuple[str, str] | None:
    """``("file::test[other-params]", version)`` for a test parametrized by ``ignite_version``."""
    m = re.fullmatch(r"(.*)\[(.*)\]", nodeid)
    if m is None:
        return None
    parts = m.group(2).split("-")
    version = next((p for p in parts if p in IGNITE_VERSIONS), None)
    if version is None:
        return None
    parts.remove(version)
    test = m.group(1).rsplit("/", 1)[-1] + (f"[{'-'.join(parts)}]" if parts else "")
    return test, version


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    found = _split_version(report.nodeid)
    if found is None:
        return
    if report.when == "call":
        outcome = "passed" if report.passed else "FAILED" if report.failed else "skipped"
        _version_outcomes[found] = f"{outcome} {report.duration:.0f}s"
    elif report.failed:  # a fixture (the cluster) failed: the test did not run
        _version_outcomes[found] = "ERROR"
    elif report.skipped:
        _version_outcomes[found] = "skipped"


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if _released:
        terminalreporter.section("session clusters, stopped after their last test")
        for fixture, nodeid in _released:
            terminalreporter.write_line(f"{fixture:<20}  after {nodeid}")
    if not _version_outcomes:
        return
    versions = [v for v in IGNITE_VERSIONS if any(v == k[1] for k in _version_outcomes)]
    tests = sorted({t for t, _ in _version_outcomes})
    width = max(len(t) for t in tests)
    terminalreporter.section("tests on stock Apache Ignite, by version")
    terminalreporter.write_line(f"{'test':<{width}}  " + "  ".join(f"{v:<12}" for v in versions))
    for t in tests:
        cells = [_version_outcomes.get((t, v), "-") for v in versions]
        terminalreporter.write_line(f"{t:<{width}}  " + "  ".join(f"{c:<12}" for c in cells))


def _start(
    tmp_path_factory: pytest.TempPathFactory,
    label: str,
    *,
    kind: type[LocalCluster] = LocalCluster,
    fixture: str | None = None,
    **kwargs: Any,
) -> LocalCluster:
    work = tmp_path_factory.mktemp(f"ignite-{label}")
    cluster = kind(work_dir=Path(work), name=f"tfi-{label}", heap_mb=512, region_mb=512, **kwargs)
    return _launch(cluster) if fixture is None else _session_cluster(fixture, cluster)


_Cluster = TypeVar("_Cluster", LocalCluster, Ignite3Cluster)


def _launch(cluster: _Cluster) -> _Cluster:
    """Start ``cluster``, recorded first so that it is stopped with the others at exit and on SIGTERM."""
    with _lock:
        _started.append(cluster)
    cluster.start()
    return cluster


def _session_cluster(fixture: str, cluster: _Cluster) -> _Cluster:
    """Start ``cluster`` for session fixture ``fixture``; it stops after the fixture's last user."""
    _by_fixture[fixture] = cluster
    return _launch(cluster)


def _finish(cluster: LocalCluster | Ignite3Cluster) -> None:
    """Stop ``cluster`` once: after its last user, or when its fixture ends, whichever is first."""
    with _lock:
        if cluster not in _started:
            return
        _started.remove(cluster)
    cluster.stop()


@pytest.fixture(scope="session")
def ignite_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """One Ignite 2.18 server node (in-memory)."""
    cluster = _start(tmp_path_factory, "single", fixture="ignite_node", nodes=1)
    yield cluster
    _finish(cluster)


@pytest.fixture(scope="session")
def ignite_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """Three Ignite 2.18 server nodes on loopback forming one cluster."""
    cluster = _start(tmp_path_factory, "three", fixture="ignite_cluster", nodes=3)
    yield cluster
    _finish(cluster)


@pytest.fixture(scope="session")
def ignite_sql_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """One node with the H2 SQL engine (Ignite 2.17.0; see ARCHITECTURE.md)."""
    cluster = _start(tmp_path_factory, "sql", fixture="ignite_sql_node", nodes=1, sql=True)
    yield cluster
    _finish(cluster)


@pytest.fixture(scope="session")
def ignite_secure_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """One node with TLS (private CA made here), client certificates and authentication."""
    cluster = _start(
        tmp_path_factory, "secure", fixture="ignite_secure_node", nodes=1, tls=True, tls_client_auth=True, auth=True
    )
    yield cluster
    _finish(cluster)


@pytest.fixture(scope="session")
def stock_cluster(tmp_path_factory: pytest.TempPathFactory, ignite_version: str) -> Iterator[StockCluster]:
    """Three stock Apache Ignite ``ignite_version`` server nodes with the tensorflow-ignite module:
    ``CommandLineStartup`` and Spring XML (2.16, 2.17) or configured in Java (2.18)."""
    cluster = _start(
        tmp_path_factory,
        f"stock-{ignite_version}",
        kind=StockCluster,
        fixture="stock_cluster",
        nodes=3,
        ignite_version=ignite_version,
    )
    assert isinstance(cluster, StockCluster)
    yield cluster
    _finish(cluster)


@pytest.fixture(scope="module")
def _three_hosts_of_module(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostCluster]:
    why = netns_unavailable()
    if why is not None:
        if os.environ.get("CI") == "true":  # CI runs as root: a skipped network test there proves nothing
            pytest.fail(f"the multi-host tests cannot run: {why}")
        pytest.skip(why)
    network = HostNetwork(3)
    try:
        network.create()
        cluster = _start(tmp_path_factory, "hosts", kind=HostCluster, nodes=3, network=network)
        assert isinstance(cluster, HostCluster)
        try:
            yield cluster
        finally:
            _finish(cluster)
    finally:
        network.destroy()


@pytest.fixture
def three_hosts(_three_hosts_of_module: HostCluster) -> HostCluster:
    """Three stock Ignite nodes (Spring XML, static IP finder), each on a "host" of its own: a network
    namespace on a bridge (:mod:`.hosts`; needs root, else the test is skipped).  For network faults:
    ``cut(i)``, ``pause(i)``/``resume(i)``, ``rejoin(i)``.  One cluster per test module: each test
    gets it whole (what an earlier test cut off, paused or killed is brought back first); the
    module's end tears everything down, also after failures."""
    _three_hosts_of_module.ensure_whole()
    return _three_hosts_of_module


@pytest.fixture(scope="session")
def ignite3_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ignite3Cluster]:
    """One Apache Ignite 3.1 server node (embedded ``IgniteServer``, cluster initialised) with TLS on
    its client connector, client certificates required, and basic authentication
    (``.client_options()`` carries the CA file, the client certificate and key, and the
    credentials), shared by the session; its start time is in ``.start_seconds``."""
    cluster = Ignite3Cluster(
        Path(tmp_path_factory.mktemp("ignite3")),
        nodes=1,
        name="tfi3",
        heap_mb=512,
        username="tf-tests",
        password=f"pw-{os.getpid()}-{os.urandom(6).hex()}",
        tls_client_auth=True,
    )
    yield _session_cluster("ignite3_node", cluster)
    _finish(cluster)


@pytest.fixture(scope="session")
def ignite3_plain_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ignite3Cluster]:
    """Two Apache Ignite 3.1 server nodes without TLS or authentication, shared by the session: for
    clients that cannot speak the secure node's TLS (Ignite 3's Java client and pyignite-dbapi in the
    benchmark's tests) and for what needs two nodes (routing to a key's primary)."""
    # heap_mb: the benchmark's bulk table (test_bench_ignite3) holds rows of 1 MiB.
    cluster = Ignite3Cluster(Path(tmp_path_factory.mktemp("ignite3plain")), nodes=2, name="tfi3p", heap_mb=512)
    yield _session_cluster("ignite3_plain_nodes", cluster)
    _finish(cluster)


_cache_serial = itertools.count(1)


def cache_name_for(nodeid: str, name: str) -> str:
    """``t_<test name>_<serial>_<hash of the node id>``: unique within the session.

    The test name is cut to keep the name short (parametrized ids differ at the
    end, so the hash of the full node id and a serial keep them apart), and only
    letters, digits and ``_`` remain, so the name is also a valid SQL table name.
    """
    base = re.sub(r"[^A-Za-z0-9_]", "_", name)[:48]
    digest = hashlib.blake2s(nodeid.encode(), digest_size=3).hexdigest()
    return f"t_{base}_{next(_cache_serial):x}_{digest}"


def destroy_caches_named(name: str) -> None:
    """Destroy, on every cluster this session started, the caches whose name contains ``name``.

    Best effort: a cluster a test has stopped or is restarting is skipped.  Keeps
    the shared nodes' memory flat over a session instead of growing with every test.
    """
    from ..client import IgniteClient
    from ..errors import IgniteError

    needle = name.lower()
    with _lock:
        clusters = list(_started)
    for cluster in clusters:
        if not isinstance(cluster, LocalCluster):  # an Ignite 3 node: no caches of this kind
            continue
        addresses = cluster.addresses()
        if not addresses:
            continue
        try:
            with IgniteClient(
                [f"{h}:{p}" for h, p in addresses], timeout=60.0, connect_timeout=5.0, **cluster.client_settings()
            ) as client:
                for cache in client.cache_names():
                    if needle in cache.lower():
                        client.destroy_cache(cache)
        except (IgniteError, OSError):
            continue


@pytest.fixture
def cache_name(request: pytest.FixtureRequest) -> Iterator[str]:
    """A cache name unique to this test; caches named after it are destroyed afterwards."""
    name = cache_name_for(request.node.nodeid, request.node.name)
    yield name
    destroy_caches_named(name)
