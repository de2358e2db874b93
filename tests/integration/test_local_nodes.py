"""Real Ignite nodes started and stopped by the project's own tooling."""

from __future__ import annotations

import os
import socket
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tensorflow_ignite.client.connection import probe
from tensorflow_ignite.errors import (
    AuthenticationError,
    HandshakeError,
    IgniteConnectionError,
    NodeError,
    TLSError,
)
from tensorflow_ignite.local.cluster import LocalCluster


def test_single_node_answers_handshake(ignite_node: LocalCluster) -> None:
    host, port = ignite_node.address()
    result = probe(host, port)
    assert result.success
    # The handshake names the node we reached: the one in its status file.
    assert ignite_node.members[0].status()["servers"] == [str(result.node_id)]


def test_three_node_cluster_sees_three_servers(ignite_cluster: LocalCluster) -> None:
    assert len(ignite_cluster.members) == 3
    node_ids = set()
    for m in ignite_cluster.members:
        st = m.status()
        assert len(st["servers"]) == 3, st
        node_ids.add(st["node_id"])
        assert probe(m.host, m.client_port).success
    assert node_ids == set(ignite_cluster.members[0].status()["servers"])


def test_taken_client_port_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        cluster = LocalCluster(tmp_path, nodes=1, client_port=port)
        with pytest.raises(NodeError, match=rf"client port {port} .* already in use"):
            cluster.start()
    assert cluster.java_pids() == []


def test_node_that_fails_to_start_shows_its_log(tmp_path: Path) -> None:
    # An impossible heap makes the JVM exit at once; the error carries the log tail.
    cluster = LocalCluster(tmp_path, nodes=1, jvm_options=("-Xmx1m", "-Xms1m"))
    cluster.heap_mb = 1
    with pytest.raises(NodeError, match=r"exited during start-up.*node\.log"):
        cluster.start(timeout=60)
    assert cluster.java_pids() == []


def test_fixture_nodes_are_tied_to_the_test_process(ignite_node: LocalCluster) -> None:
    # A run killed by a timeout leaves no node behind (stop_nodes_with_process).
    assert ignite_node.owner_pid == os.getpid()
    cmdline = Path(f"/proc/{ignite_node.members[0].pid}/cmdline").read_bytes().split(b"\0")
    assert cmdline[cmdline.index(b"--exit-with") + 1] == str(os.getpid()).encode()


def test_nodes_stop_when_their_owner_process_is_killed(tmp_path: Path) -> None:
    # The owner runs until this test kills it (signal.pause: no timer involved).
    owner = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])
    cluster = LocalCluster(tmp_path, nodes=2, region_mb=128, heap_mb=384, owner_pid=owner.pid)
    try:
        cluster.start(timeout=120)
        assert len(cluster.java_pids()) == 2
        owner.kill()  # SIGKILL: no clean-up code of the owner runs
        owner.wait()
        deadline = time.monotonic() + 60
        while cluster.java_pids() and time.monotonic() < deadline:
            time.sleep(0.1)  # polling for the exits, not a fixed wait
        assert cluster.java_pids() == []
        for m in cluster.members:
            assert f"owner process {owner.pid} ended" in Path(m.log).read_text(errors="replace")
    finally:
        owner.kill()
        cluster.stop()


def test_an_owner_that_is_not_running_is_a_start_up_error(tmp_path: Path) -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    cluster = LocalCluster(tmp_path, nodes=1, owner_pid=gone.pid)
    with pytest.raises(NodeError, match=rf"exited during start-up(.|\n)*owner process {gone.pid} is not running"):
        cluster.start(timeout=60)
    assert cluster.java_pids() == []


def test_node_added_after_a_kill_joins_the_survivors(tmp_path: Path) -> None:
    # A killed member is no longer expected in the topology: adding a node must
    # wait for the survivors plus the newcomer, not for the dead one.
    with LocalCluster(tmp_path, nodes=2, region_mb=128, heap_mb=384) as cluster:
        cluster.kill_node(1)
        added = cluster.add_node(timeout=120)
        servers = added.status()["servers"]
        assert len(servers) == 2, servers
        assert cluster.members[0].status()["node_id"] in servers
        assert len(cluster.java_pids()) == 2
    assert cluster.java_pids() == []


def test_cli_start_status_stop_three_nodes(tmp_path: Path) -> None:
    work = tmp_path / "cli"
    cli = [sys.executable, "-m", "tensorflow_ignite.cli.main"]
    start = subprocess.run(
        [*cli, "node", "start", "--nodes", "3", "--client-port", "0", "--work-dir", str(work),
         "--heap-mb", "384", "--region-mb", "256"],
        capture_output=True, text=True, timeout=300,
    )
    try:
        assert start.returncode == 0, start.stderr + start.stdout
        # Loopback-only nodes accept unauthenticated jobs, and say so (README, "Security").
        assert ("Launcher (ignite-tf start): accepts jobs without authentication, since the nodes listen on "
                "127.0.0.1 only") in start.stdout
        status = subprocess.run([*cli, "node", "status", "--work-dir", str(work)],
                                capture_output=True, text=True, timeout=60)
        assert status.returncode == 0, status.stdout + status.stderr
        assert "topology: 3 server node(s); 3/3 recorded node(s) running" in status.stdout
        as_json = subprocess.run([*cli, "node", "status", "--json", "--work-dir", str(work)],
                                 capture_output=True, text=True, timeout=60)
        assert as_json.returncode == 0, as_json.stderr
        nodes = json.loads(as_json.stdout)["nodes"]
        assert [n["state"] for n in nodes] == ["running"] * 3
        assert [n["servers"] for n in nodes] == [3, 3, 3]
        assert len({n["client_port"] for n in nodes}) == 3
        cluster = LocalCluster.load_state(work)
        assert cluster is not None and len(cluster.java_pids()) == 3
    finally:
        stop = subprocess.run([*cli, "node", "stop", "--work-dir", str(work)],
                              capture_output=True, text=True, timeout=120)
    assert stop.returncode == 0, stop.stderr
    assert "stopped 3 node(s)" in stop.stdout
    assert LocalCluster.load_state(work).java_pids() == []  # type: ignore[union-attr]
    after = subprocess.run([*cli, "node", "status", "--work-dir", str(work)],
                           capture_output=True, text=True, timeout=60)
    assert after.returncode == 1
    after_json = subprocess.run([*cli, "node", "status", "--json", "--work-dir", str(work)],
                                capture_output=True, text=True, timeout=60)
    assert after_json.returncode == 1
    assert [n["state"] for n in json.loads(after_json.stdout)["nodes"]] == ["stopped"] * 3


def test_secure_node_accepts_right_settings(ignite_secure_node: LocalCluster) -> None:
    host, port = ignite_secure_node.address()
    result = probe(host, port, **ignite_secure_node.client_settings())
    assert result.success


def test_secure_node_rejects_wrong_password(ignite_secure_node: LocalCluster) -> None:
    host, port = ignite_secure_node.address()
    settings = {**ignite_secure_node.client_settings(), "password": "not-the-password"}
    with pytest.raises(AuthenticationError, match="rejected the credentials of user 'ignite'"):
        probe(host, port, **settings)


def test_secure_node_rejects_plaintext(ignite_secure_node: LocalCluster) -> None:
    host, port = ignite_secure_node.address()
    with pytest.raises((HandshakeError, IgniteConnectionError)):
        probe(host, port, username="ignite", password="ignite", timeout=5)


def test_secure_node_rejects_unknown_ca(ignite_secure_node: LocalCluster, tmp_path: Path) -> None:
    from tensorflow_ignite.local.tls import make_tls_material

    other = make_tls_material(tmp_path / "other-ca")
    host, port = ignite_secure_node.address()
    settings = {**ignite_secure_node.client_settings(), "cafile": str(other.ca_cert)}
    with pytest.raises(TLSError, match="certificate"):
        probe(host, port, **settings)


def test_cache_names_stay_unique_when_test_names_only_differ_past_the_cut() -> None:
    from tensorflow_ignite.testing.pytest_plugin import cache_name_for

    long = "test_" + "x" * 80
    names = {cache_name_for(f"tests/t.py::{long}[{p}]", f"{long}[{p}]") for p in ("native", "generator")}
    # The same test id twice (a rerun in one session) also gets a fresh name.
    names.add(cache_name_for(f"tests/t.py::{long}[native]", f"{long}[native]"))
    assert len(names) == 3
    assert all(n.replace("_", "").isalnum() and len(n) < 70 for n in names), names


def test_caches_named_after_a_test_are_destroyed_afterwards(ignite_node: LocalCluster, cache_name: str) -> None:
    from tensorflow_ignite.client import IgniteClient
    from tensorflow_ignite.testing.pytest_plugin import destroy_caches_named

    host, port = ignite_node.address()
    with IgniteClient(f"{host}:{port}") as client:
        mine = [cache_name, f"{cache_name}_files", f"SQL_PUBLIC_{cache_name.upper()}"]
        other = f"{cache_name[:-1]}_other"
        for name in [*mine, other]:
            client.get_or_create_cache(name).put(1, 1)
        destroy_caches_named(cache_name)
        left = set(client.cache_names())
        assert other in left and not left & set(mine), left
        client.destroy_cache(other)
