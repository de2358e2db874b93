"""The launcher is secure by default: who may run what, on a cluster that is not trusted.

* Stock Ignite 2.17 nodes started from Spring XML with the module's default settings, and
  no authentication: every job request is refused and nothing runs on any node.
* Nodes with authentication (users made with SQL ``CREATE USER``): a listed submitter's job
  runs; an unlisted user's is refused; another user can neither stop, remove nor read it; an
  admin can. The identity is the one the node authenticated, not a name the client sends.
* What runs is what the launcher accepted: a job record written into the launcher's cache
  directly never runs; hostile archives (``..``, absolute paths, symbolic links, too large,
  zip bombs) are refused and write nothing outside the job directory; a job cannot override
  the variables the module sets; ``allowedCommands`` bounds the interpreter and program.
* Every decision is an audit line in the node's log; the record names the submitter; the
  output in the logs cache is encrypted.
"""

from __future__ import annotations

import hashlib
import io
import secrets
import stat
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tensorflow_ignite.cli.main import main as cli
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.errors import LauncherError, LauncherPermissionError
from tensorflow_ignite.launcher import layout
from tensorflow_ignite.launcher.jobs import JobClient, plain
from tensorflow_ignite.launcher.module import LauncherSecurity
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.local.stock import StockCluster

from .test_launcher_jobs import job_processes, write_job

MARKER_JOB = """
    import pathlib, sys
    pathlib.Path(sys.argv[1]).write_text("ran")
    print("job ran")
"""

MAX_JOB_BYTES = 4 << 20


def _wait_state(jobs: JobClient, job_id: str, states: set[str], timeout: float = 120.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        rec = jobs.job(job_id)
        if rec.get("state") in states:
            return rec
        assert time.monotonic() < deadline, f"job {job_id} stayed {rec.get('state')}: {rec.get('message')}"
        time.sleep(0.2)  # polling the job record (bounded by the deadline)


def _node_logs(cluster: LocalCluster) -> str:
    return "".join(Path(m.log).read_text(errors="replace") for m in cluster.members)


# ====================================================== stock nodes, no authentication
@pytest.fixture(scope="module", params=["2.17.0", "2.18.0"])
def open_stock_cluster(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
                       ) -> Iterator[StockCluster]:
    """Two stock nodes, the module with its default settings, no authentication: 2.17 from Spring XML
    (the fragment of ``ignite-tf module config``), 2.18 configured in Java (``TfLauncherModule.configure``)."""
    version = request.param
    cluster = StockCluster(tmp_path_factory.mktemp(f"stock-default-{version}"), nodes=2,
                           name=f"tfi-secdef{version.replace('.', '')}", heap_mb=384, region_mb=128,
                           ignite_version=version, launcher_security=LauncherSecurity())
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def test_without_authentication_every_job_request_is_refused_and_nothing_runs(
        open_stock_cluster: StockCluster, cache_name: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    cluster = open_stock_cluster
    assert cluster.xml_config == (cluster.ignite_version == "2.17.0")
    host, port = cluster.address()
    with IgniteClient(cluster.addresses()) as client:
        client.get_or_create_cache(cache_name).put_all({i: i for i in range(20)})
    marker = tmp_path / "ran.txt"
    job_dir = write_job(tmp_path, "marker", MARKER_JOB)
    name = f"{cache_name}-open"
    code = cli(["start", "--host", host, "--port", str(port), "--name", name, cache_name, str(job_dir), "--",
                "python", "job.py", str(marker)])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "runs without authentication" in err and "allowUnauthenticated" in err and "submitters" in err
    with JobClient.connect(host, port) as jobs:
        with pytest.raises(LauncherPermissionError, match="without authentication"):
            jobs.submit(cache_name, job_dir, ["python", "job.py", str(marker)], name=name + "-api")
        assert [j["id"] for j in jobs.jobs()] == []
        # The settings are the node's: a thin client can invoke any public method of a service by
        # name, and the launcher's setters refuse once it is deployed.
        for method, args in (("setAllowUnauthenticated", (True,)), ("setWorkRoot", ("/",))):
            with pytest.raises(LauncherPermissionError, match="belong to the node configuration"):
                jobs.invoke(method, *args)
        with pytest.raises(LauncherPermissionError, match="without authentication"):
            jobs.submit(cache_name, job_dir, ["python", "job.py", str(marker)], name=name + "-after")
        # A record written straight into the launcher's cache is not a way around it.
        forged = {"id": name + "-forged", "cache": cache_name, "command": ["python", "job.py", str(marker)],
                  "python": sys.executable, "env": {}, "strategy": "multi_worker_mirrored", "num_ps": 0,
                  "file_chunks": 0, "state": "PENDING", "attempt": 0, "restarts": 0, "max_restarts": 3,
                  "settle_ms": 0, "backoff_ms": 100, "grace_ms": 1000, "workers": [], "events": [],
                  "failures": [], "stop_requested": False, "created_ms": 0, "next_start_ms": 0}
        jobs.client.get_or_create_cache(layout.cache_config(layout.JOBS)).put(forged["id"], forged)
        rec = _wait_state(jobs, forged["id"], {"FAILED", "SUCCEEDED", "STOPPED"})
        assert rec["state"] == "FAILED" and "not accepted by the launcher" in rec["message"]
        for command in (["stop", forged["id"]], ["rm", forged["id"]]):
            assert cli([*command, "--host", host, "--port", str(port)]) == 1
            assert "without authentication" in capsys.readouterr().err
    assert not marker.exists(), "a refused job ran"
    assert job_processes(name) == [] and job_processes(forged["id"]) == []
    logs = _node_logs(cluster)
    assert f"tf-ignite audit: action=submit job={name} user=(unauthenticated)" in logs
    assert "decision=refused: permission denied: this cluster runs without authentication" in logs
    assert f"action=start job={forged['id']} user=(none) from=(unknown) decision=refused" in logs
    assert "every job request is refused" in logs  # the supervisor says so when it starts


# ====================================================== authentication on
@pytest.fixture(scope="module")
def auth_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Two nodes with authentication and SQL; users alice (submitter), ops (admin), mallory (neither).

    Two, so that calls reach the supervisor both on the node they were sent to and through
    another node (the caller's identity travels with the service call)."""
    work = tmp_path_factory.mktemp("ignite-launcher-auth")
    security = LauncherSecurity(submitters=("alice",), admins=("ops",), max_job_bytes=MAX_JOB_BYTES)
    cluster = LocalCluster(work_dir=work, name="tfi-secauth", nodes=2, auth=True, sql=True, heap_mb=512,
                           region_mb=256, launcher_security=security)
    try:
        cluster.start()
        yield _with_users(cluster, ("alice", "ops", "mallory"))
    finally:
        cluster.stop()


def _with_users(cluster: LocalCluster, users: tuple[str, ...]) -> dict[str, Any]:
    """Make ``users`` (SQL ``CREATE USER``, random passwords) on ``cluster``; what the tests need of it."""
    passwords = {u: "pw-" + secrets.token_hex(8) for u in users}
    with IgniteClient(cluster.addresses(), **cluster.client_settings()) as admin:
        for user, password in passwords.items():
            admin.sql(f"CREATE USER \"{user}\" WITH PASSWORD '{password}'").fetchall()
    host, port = cluster.address()
    return {"cluster": cluster, "host": host, "port": port, "passwords": passwords}


def _jobs_as(env: dict[str, Any], user: str, node: int = 0) -> JobClient:
    host, port = env["cluster"].address(node)
    return JobClient.connect(host, port, username=user, password=env["passwords"][user])


def _cli_as(env: dict[str, Any], user: str, monkeypatch: pytest.MonkeyPatch, node: int = 0) -> list[str]:
    monkeypatch.setenv("SEC_TEST_PW", env["passwords"][user])
    host, port = env["cluster"].address(node)
    return ["--host", host, "--port", str(port), "--username", user, "--password-env", "SEC_TEST_PW"]


def _fill(env: dict[str, Any], cache: str, rows: int = 20) -> None:
    with IgniteClient(env["cluster"].addresses(), **env["cluster"].client_settings()) as client:
        client.get_or_create_cache(cache).put_all({i: i for i in range(rows)})


def test_only_listed_users_submit_and_only_the_submitter_or_an_admin_controls_a_job(
        auth_cluster: dict[str, Any], cache_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    _fill(auth_cluster, cache_name)
    marker = tmp_path / "alice.txt"
    job_dir = write_job(tmp_path, "marker", MARKER_JOB)

    # mallory is authenticated but not listed: refused, nothing runs.
    refused_marker = tmp_path / "mallory.txt"
    code = cli(["start", *_cli_as(auth_cluster, "mallory", monkeypatch), "--name", f"{cache_name}-m", cache_name,
                str(job_dir), "--", "python", "job.py", str(refused_marker)])
    err = capsys.readouterr().err
    assert code == 1 and "Ignite user 'mallory' may not submit jobs" in err and "submitters" in err, err

    # alice is listed: her job runs; the record names her, as the node authenticated her.
    name = f"{cache_name}-a"
    code = cli(["start", *_cli_as(auth_cluster, "alice", monkeypatch), "--settle", "0.2", "--name", name,
                cache_name, str(job_dir), "--", "python", "job.py", str(marker)])
    out = capsys.readouterr()
    assert code == 0, out.out + out.err
    assert marker.read_text() == "ran"
    with _jobs_as(auth_cluster, "alice") as alice, _jobs_as(auth_cluster, "mallory", node=1) as mallory:
        rec = alice.job(name)
        # Ignite's built-in authentication does not tell the server the client's address.
        assert rec["submitted_by"] == "alice"
        assert [a["decision"] for a in rec["audit"]] == ["accepted"] and rec["audit"][0]["user"] == "alice"
        assert "job ran" in "\n".join(line.text for line in alice.output(name))

        # mallory can read the record (Ignite has no per-cache authorization) but not the output,
        # and cannot stop or remove the job.
        with pytest.raises(LauncherPermissionError, match=r"user 'mallory'( from \S+)? may not read the output of job"):
            list(mallory.output(name))
        with pytest.raises(LauncherPermissionError, match=r"may not stop job .* only its submitter \('alice'\)"):
            mallory.stop(name, wait=False)
        with pytest.raises(LauncherPermissionError, match=r"may not remove job"):
            mallory.remove(name)
        # The output in the logs cache itself is cipher text.
        raw = [plain(v) for _, v in mallory.client.cache(layout.LOGS).scan()]
        assert raw and all(set(chunk) == {"t", "sealed"} for chunk in raw)
        assert not any(b"job ran" in bytes(memoryview(chunk["sealed"]).cast("B")) for chunk in raw)
        assert [a["decision"].split(":")[0] for a in alice.job(name)["audit"]] == ["accepted", "refused",
                                                                                  "refused"]
    for node, command in enumerate((["logs", name], ["stop", name], ["rm", name])):
        assert cli([*command, *_cli_as(auth_cluster, "mallory", monkeypatch, node % 2)]) == 1
        assert "mallory" in capsys.readouterr().err

    # ops is an admin: may read and remove alice's job.
    assert cli(["describe", name, *_cli_as(auth_cluster, "ops", monkeypatch)]) == 0
    assert "Submitted by: alice" in capsys.readouterr().out
    assert cli(["logs", name, *_cli_as(auth_cluster, "ops", monkeypatch, node=1)]) == 0
    assert "job ran" in capsys.readouterr().out
    assert cli(["rm", name, *_cli_as(auth_cluster, "ops", monkeypatch)]) == 0
    capsys.readouterr()
    assert not refused_marker.exists()
    logs = _node_logs(auth_cluster["cluster"])
    for line in (f"action=submit job={cache_name}-m user=mallory from=",
                 f"action=submit job={name} user=alice from=",
                 f"action=output job={name} user=mallory", f"action=stop job={name} user=mallory",
                 f"action=remove job={name} user=ops"):
        assert f"tf-ignite audit: {line}" in logs, line
    for password in auth_cluster["passwords"].values():
        assert password not in logs


@pytest.fixture(scope="module")
def stock_auth_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A stock 2.17 node from Spring XML with authentication and the SQL module; alice may submit."""
    cluster = StockCluster(tmp_path_factory.mktemp("stock-auth"), nodes=1, name="tfi-secxml", heap_mb=512,
                           region_mb=256, ignite_version="2.17.0", auth=True, sql=True,
                           launcher_security=LauncherSecurity(submitters=("alice",)))
    try:
        cluster.start()
        yield _with_users(cluster, ("alice", "bob"))
    finally:
        cluster.stop()


def test_on_stock_xml_nodes_with_authentication_the_listed_user_runs_and_others_cannot(
        stock_auth_node: dict[str, Any], cache_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    env = stock_auth_node
    assert env["cluster"].xml_config and "<property name=\"authenticationEnabled\" value=\"true\"/>" in \
        Path(env["cluster"].members[0].config_file).read_text()
    _fill(env, cache_name)
    job_dir = write_job(tmp_path, "marker", MARKER_JOB)
    bob_marker, alice_marker = tmp_path / "bob.txt", tmp_path / "alice.txt"
    with _jobs_as(env, "bob") as bob, _jobs_as(env, "alice") as alice:
        with pytest.raises(LauncherPermissionError, match="Ignite user 'bob' may not submit jobs"):
            bob.submit(cache_name, job_dir, ["python", "job.py", str(bob_marker)], name=f"{cache_name}-b")
        # The default user is a superuser of Ignite, not of the launcher: not listed, refused.
        with JobClient.connect(env["host"], env["port"], **env["cluster"].client_settings()) as ignite_user:
            with pytest.raises(LauncherPermissionError, match="Ignite user 'ignite' may not submit jobs"):
                ignite_user.submit(cache_name, job_dir, ["python", "job.py", str(bob_marker)],
                                   name=f"{cache_name}-i")
        rec = alice.submit(cache_name, job_dir, ["python", "job.py", str(alice_marker)], name=f"{cache_name}-a",
                           settle_ms=0)
        assert rec["submitted_by"] == "alice"
        assert _wait_state(alice, rec["id"], {"SUCCEEDED", "FAILED"})["state"] == "SUCCEEDED"
        assert alice_marker.read_text() == "ran"
        with pytest.raises(LauncherPermissionError, match="may not read the output of job"):
            list(bob.output(rec["id"]))
        with pytest.raises(LauncherPermissionError, match="may not stop job"):
            bob.stop(rec["id"], wait=False)
        assert "job ran" in "\n".join(line.text for line in alice.output(rec["id"]))
        alice.remove(rec["id"])
    assert not bob_marker.exists()
    logs = _node_logs(env["cluster"])
    assert f"action=submit job={cache_name}-b user=bob" in logs and f"action=remove job={cache_name}-a user=alice" in logs


def test_follow_on_stock_xml_nodes_with_authentication(stock_auth_node: dict[str, Any], cache_name: str) -> None:
    """IgniteDataset.follow on the stock node from Spring XML with authentication: the rows, then each
    update once, through the dataset's user name and password (a wrong password is refused by name)."""
    from tensorflow_ignite import IgniteDataset
    from tensorflow_ignite.errors import AuthenticationError

    from .test_dataset_follow import rows_then_each_update_once

    settings = stock_auth_node["cluster"].client_settings()
    host, port = stock_auth_node["host"], stock_auth_node["port"]
    with pytest.raises(AuthenticationError):
        IgniteDataset.follow(cache_name, host, port, username=settings["username"], password="wrong")
    with IgniteClient(f"{host}:{port}", **settings) as client:
        rows_then_each_update_once(host, port, client, cache_name, **settings)


def _submit_archive(jobs: JobClient, job_id: str, cache: str, archive: bytes, **spec: Any) -> dict[str, Any]:
    """Ship ``archive`` as a job directory and submit it (the client's packing bypassed)."""
    files = jobs.client.get_or_create_cache(layout.cache_config(layout.FILES))
    files.put(layout.file_key(job_id, 0), archive)
    body = {"id": job_id, "cache": cache, "command": ["python", "job.py"], "python": sys.executable, "env": {},
            "strategy": "multi_worker_mirrored", "file_chunks": 1, "settle_ms": 0, "max_restarts": 0,
            "files_sha256": hashlib.sha256(archive).hexdigest(), **spec}
    return jobs.invoke("submit", body)


def _zip(entries: list[tuple[zipfile.ZipInfo | str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, data in entries:
            zf.writestr(info, data)
    return buf.getvalue()


def _symlink(name: str, target: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


def test_hostile_archives_are_refused_and_write_nothing_outside(
        auth_cluster: dict[str, Any], cache_name: str, tmp_path: Path) -> None:
    _fill(auth_cluster, cache_name)
    outside = tmp_path / "outside"
    outside.mkdir()
    job_py = b"print('ok')\n"
    hostile = {
        "climbs out": _zip([("job.py", job_py), (f"../../../../../../..{outside}/dotdot.txt", b"x")]),
        "absolute": _zip([("job.py", job_py), (f"{outside}/absolute.txt", b"x")]),
        "too large": _zip([("job.py", job_py), ("big.bin", secrets.token_bytes(MAX_JOB_BYTES + 1024))]),
        "zip bomb": _zip([("job.py", job_py), ("zeros.bin", bytes(64 * MAX_JOB_BYTES))]),
        "duplicate": _zip([("job.py", job_py), ("sub/x.py", b""), ("sub/../job.py", b"print('other')\n")]),
        "not a zip": b"PK\x03\x04 this is not an archive" * 10,
    }
    assert len(hostile["zip bomb"]) < MAX_JOB_BYTES // 4  # small on the wire, 64x the limit unpacked
    with _jobs_as(auth_cluster, "alice") as alice:
        for label, archive in hostile.items():
            job_id = f"{cache_name}-{label.replace(' ', '-')}"
            with pytest.raises(LauncherError, match="the job directory is refused") as info:
                _submit_archive(alice, job_id, cache_name, archive)
            assert not isinstance(info.value, LauncherPermissionError), label
            with pytest.raises(LauncherError):
                alice.job(job_id)
        # A symbolic link in the archive becomes a plain file holding the target's name.
        job_id = f"{cache_name}-symlink"
        link_job = ("import os, pathlib\n"
                    "p = pathlib.Path('link')\n"
                    "print('is-link', p.is_symlink(), 'text', p.read_text())\n")
        _submit_archive(alice, job_id, cache_name,
                        _zip([("job.py", link_job.encode()), (_symlink("link", f"{outside}/target"), str(outside / "target").encode())]))
        rec = _wait_state(alice, job_id, {"SUCCEEDED", "FAILED"})
        assert rec["state"] == "SUCCEEDED", rec["message"]
        text = "\n".join(line.text for line in alice.output(job_id, launcher=False))
        assert f"is-link False text {outside / 'target'}" in text
    assert list(outside.iterdir()) == [], "an archive wrote outside its job directory"


def test_jobs_cannot_override_the_module_variables_or_run_unlisted_programs(
        auth_cluster: dict[str, Any], cache_name: str, tmp_path: Path) -> None:
    _fill(auth_cluster, cache_name)
    job_dir = write_job(tmp_path, "env", MARKER_JOB)
    with _jobs_as(auth_cluster, "alice") as alice:
        for key in ("TF_CONFIG", "IGNITE_DATASET_HOST", "TF_IGNITE_JOB_ID", "LD_PRELOAD", "PYTHONPATH"):
            with pytest.raises(LauncherError, match=rf"environment variable {key} is set by the launcher"):
                alice.submit(cache_name, job_dir, ["python", "job.py", "x"], name=f"{cache_name}-env",
                             env={key: "x"})
        assert [j["id"] for j in alice.jobs() if j["id"].startswith(cache_name)] == []
        # The files of a refused job do not stay in the files cache.
        files = alice.client.cache(layout.FILES)
        assert [k for k, _ in files.scan() if str(k).startswith(f"{cache_name}-env/")] == []


@pytest.fixture(scope="module")
def restricted_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """One open loopback node whose launcher allows only this interpreter."""
    security = LauncherSecurity(allow_unauthenticated=True, allowed_commands=(sys.executable,))
    cluster = LocalCluster(tmp_path_factory.mktemp("ignite-restricted"), name="tfi-secrestr", nodes=1,
                           heap_mb=384, region_mb=128, launcher_security=security)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def test_allowed_commands_bound_the_interpreter_and_the_program(
        restricted_cluster: LocalCluster, cache_name: str, tmp_path: Path) -> None:
    host, port = restricted_cluster.address()
    with IgniteClient(restricted_cluster.addresses()) as client:
        client.get_or_create_cache(cache_name).put_all({i: i for i in range(10)})
    marker = tmp_path / "ran.txt"
    job_dir = write_job(tmp_path, "cmd", MARKER_JOB)
    with JobClient.connect(host, port) as jobs:
        with pytest.raises(LauncherPermissionError, match="command /bin/sh is not among the launcher's allowedCommands"):
            jobs.submit(cache_name, job_dir, ["/bin/sh", "-c", f"touch {marker}"], name=f"{cache_name}-sh")
        with pytest.raises(LauncherPermissionError, match="interpreter /usr/bin/python3 is not among"):
            jobs.submit(cache_name, job_dir, ["python", "job.py", str(marker)], name=f"{cache_name}-py",
                        python="/usr/bin/python3")
        assert not marker.exists()
        # The service's lifecycle methods are public too: a client's call is refused and changes
        # nothing (the supervisor still runs the next job).
        for method in ("cancel", "init", "execute"):
            with pytest.raises(LauncherPermissionError, match="belongs to Ignite's deployment"):
                jobs.invoke(method)
        rec = jobs.submit(cache_name, job_dir, ["python", "job.py", str(marker)], name=f"{cache_name}-ok",
                          settle_ms=0)
        assert rec["submitted_by"] is None  # no authentication: nobody to name
        assert _wait_state(jobs, rec["id"], {"SUCCEEDED", "FAILED"})["state"] == "SUCCEEDED"
    assert marker.read_text() == "ran"
