"""Hostile users: cache contents are views, never inputs (RELIABILITY.md "Hostile users").

Open-source Ignite 2 lets every authenticated user read and write every cache, the launcher's
too. Each test here is an attack by ``mallory`` -- authenticated, neither submitter nor admin --
on the project's own nodes and on stock 2.17 nodes from Spring XML, both with authentication:
records forged in the launcher's caches, ids that are paths, a finished job flipped back to
PENDING, limits rewritten in the record, archives swapped between upload and submit or left on
a node's disk, the service's own lifecycle and setters called by a client, environments that
hook programs' start-up and a shipped package that would shadow the module's shim. Each shows
the attack refused (or without effect) and the node's files, alice's job and the service intact.
"""

from __future__ import annotations

import hashlib
import io
import os
import secrets
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.errors import ConfigurationError, LauncherError, LauncherPermissionError
from tensorflow_ignite.launcher import layout
from tensorflow_ignite.launcher.jobs import SECRET_ENV_NAME, JobClient
from tensorflow_ignite.launcher.module import LauncherSecurity
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.local.java import module_jar
from tensorflow_ignite.local.stock import StockCluster
from tensorflow_ignite.testing.service_surface import public_methods

from ..unit import test_service_surface as surface

from .test_launcher_jobs import write_job
from .test_launcher_security import _jobs_as, _node_logs, _wait_state, _with_users

#: Appends one line per run to the file named by its argument (so runs can be counted).
APPEND_JOB = """
    import sys, time
    with open(sys.argv[1], "a") as f:
        f.write("run\\n")
    print("appended")
    time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 0)
    sys.exit(int(sys.argv[3]) if len(sys.argv) > 3 else 0)
"""

FINAL = {"SUCCEEDED", "FAILED", "STOPPED"}


@pytest.fixture(scope="module", params=["own-nodes", "stock-2.17-xml"])
def hostile(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """One node with authentication and SQL: the project's own (NodeLauncher), or stock 2.17 from
    Spring XML. Users alice (submitter), ops (admin), mallory (neither)."""
    security = LauncherSecurity(submitters=("alice",), admins=("ops",))
    work = tmp_path_factory.mktemp(f"hostile-{request.param}")
    if request.param == "own-nodes":
        cluster: LocalCluster = LocalCluster(work_dir=work, name="tfi-hostile", nodes=1, auth=True, sql=True,
                                             heap_mb=384, region_mb=128, launcher_security=security)
    else:
        cluster = StockCluster(work, nodes=1, name="tfi-hostilexml", heap_mb=384, region_mb=128,
                               ignite_version="2.17.0", auth=True, sql=True, launcher_security=security)
    try:
        cluster.start()
        env = _with_users(cluster, ("alice", "ops", "mallory"))
        env["node_dir"] = cluster.work_dir / "node-0" / "ignite"
        yield env
    finally:
        cluster.stop()


@pytest.fixture()
def users(hostile: dict[str, Any], cache_name: str) -> Iterator[tuple[JobClient, JobClient, JobClient]]:
    """(alice, mallory, ops) connected, and ``cache_name`` filled with a few rows."""
    with IgniteClient(hostile["cluster"].addresses(), **hostile["cluster"].client_settings()) as client:
        client.get_or_create_cache(cache_name).put_all({i: i for i in range(10)})
    with _jobs_as(hostile, "alice") as alice, _jobs_as(hostile, "mallory") as mallory, \
            _jobs_as(hostile, "ops") as ops:
        yield alice, mallory, ops


def _files(root: Path) -> set[str]:
    return {os.path.join(d, f) for d, _, names in os.walk(root) for f in names}


def _jobs_cache(client: JobClient) -> Any:
    return client.client.get_or_create_cache(layout.cache_config(layout.JOBS))


def _run(alice: JobClient, cache: str, tmp_path: Path, name: str, *args: str, **spec: Any) -> dict[str, Any]:
    """alice's job appending to ``<tmp>/<name>.runs``; returns its finished record."""
    job_dir = write_job(tmp_path, name, APPEND_JOB)
    rec = alice.submit(cache, job_dir, ["python", "job.py", str(tmp_path / f"{name}.runs"), *args],
                       name=f"{cache}-{name}", **{"settle_ms": 0, **spec})
    return _wait_state(alice, rec["id"], FINAL)


def _runs(tmp_path: Path, name: str) -> int:
    path = tmp_path / f"{name}.runs"
    return len(path.read_text().splitlines()) if path.exists() else 0


def _zip(files: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return buf.getvalue()


def _upload(client: JobClient, job_id: str, archive: bytes) -> None:
    client.client.get_or_create_cache(layout.cache_config(layout.FILES)).put(layout.file_key(job_id, 0), archive)


def _submit_uploaded(alice: JobClient, job_id: str, cache: str, digest: str, command: list[str],
                     **spec: Any) -> dict[str, Any]:
    body = {"id": job_id, "cache": cache, "command": command, "python": sys.executable, "env": {},
            "strategy": "multi_worker_mirrored", "file_chunks": 1, "settle_ms": 0, "max_restarts": 0,
            "files_sha256": digest, **spec}
    return alice.invoke("submit", body)


# ---------------------------------------------------------------------------------------- tests
def test_forged_records_and_path_ids_remove_nothing(hostile: dict[str, Any], users: tuple[JobClient, ...],
                                                   cache_name: str, tmp_path: Path) -> None:
    """The issue's attack: a forged record at key '..' and remove('..') deleted the node's work dir."""
    alice, mallory, ops = users
    done = _run(alice, cache_name, tmp_path, "before")
    assert done["state"] == "SUCCEEDED", done["message"]
    node_dir: Path = hostile["node_dir"]
    before = _files(node_dir)
    assert len(before) > 20 and any("/db/" in f or "/wal/" in f for f in before)  # persistence lives here
    jobs = _jobs_cache(mallory)
    for key in ("..", ".", "a/../..", "/etc", "../..", f"{cache_name}-nospec"):
        jobs.put(key, {"id": "nope", "submitted_by": "mallory", "state": "FAILED"})
    # No record at all: another key type, a value that is no map. The loop goes on past them.
    jobs.put(42, {"id": "..", "state": "PENDING"})
    jobs.put(f"{cache_name}-garbage", "not a record")
    jobs.put(f"{cache_name}-nostate", {"id": f"{cache_name}-nostate"})  # before the fix: stopped every job
    assert f"{cache_name}-garbage" not in [j.get("id") for j in alice.jobs()]  # `ignite-tf ps` skips them
    for bad in ("..", ".", "a/../..", "/etc", "../..", "..\\..", ""):
        for call, args in (("remove", (bad, False)), ("remove", (bad, True)), ("stop", (bad,)),
                           ("output", (bad, []))):
            with pytest.raises(LauncherError, match=r"job id '.*' is not valid") as err:
                mallory.invoke(call, *args)
            assert not isinstance(err.value, LauncherPermissionError)
        with pytest.raises(LauncherError, match="is not valid"):  # an admin cannot either
            ops.invoke("remove", bad, True)
    # A valid name the launcher never accepted is no job for anyone but an admin.
    for call, args in (("remove", (f"{cache_name}-nospec", True)), ("stop", (f"{cache_name}-nospec",)),
                       ("output", (f"{cache_name}-nospec", []))):
        with pytest.raises(LauncherError, match=f"no job named '{cache_name}-nospec'"):
            mallory.invoke(call, *args)
    removed = ops.invoke("remove", f"{cache_name}-nospec", False)  # leftovers: an admin's to clear
    assert removed["id"] == f"{cache_name}-nospec" and jobs.get(f"{cache_name}-nospec") is None
    time.sleep(1.0)  # two reconcile rounds over the forged keys
    after = _files(node_dir)
    assert not before - after, f"files deleted from the node's work dir: {sorted(before - after)[:5]}"
    # The node, its persistence and the supervisor still work: alice's next job runs.
    again = _run(alice, cache_name, tmp_path, "after")
    assert again["state"] == "SUCCEEDED" and _runs(tmp_path, "after") == 1
    assert "is not a valid job id (written by a client, not the launcher)" in _node_logs(hostile["cluster"])
    for key in ("..", ".", "a/../..", "/etc", "../..", 42, f"{cache_name}-garbage", f"{cache_name}-nostate"):
        jobs.remove_key(key)


def test_a_record_copying_alices_job_gives_no_control_over_it(
        hostile: dict[str, Any], users: tuple[JobClient, ...], cache_name: str, tmp_path: Path) -> None:
    alice, mallory, _ = users
    rec = _run(alice, cache_name, tmp_path, "owned")
    assert rec["state"] == "SUCCEEDED"
    job = rec["id"]
    keys = [layout.log_key(job, 1, 0, 0)]
    jobs = _jobs_cache(mallory)
    # A copy of alice's record under another key, naming mallory; and alice's own key rewritten.
    jobs.put(f"{cache_name}-copy", {**rec, "submitted_by": "mallory", "state": "FAILED"})
    for call, args in (("stop", (f"{cache_name}-copy",)), ("remove", (f"{cache_name}-copy", True)),
                       ("output", (f"{cache_name}-copy", [f"{cache_name}-copy/1/0/0"]))):
        with pytest.raises(LauncherError, match=f"no job named '{cache_name}-copy'"):
            mallory.invoke(call, *args)
    jobs.put(job, {**rec, "submitted_by": "mallory"})
    with pytest.raises(LauncherPermissionError, match=r"may not read the output of job .* \('alice'\)"):
        mallory.invoke("output", job, keys)
    with pytest.raises(LauncherPermissionError, match=r"may not stop job .* \('alice'\)"):
        mallory.invoke("stop", job)
    with pytest.raises(LauncherPermissionError, match=r"may not remove job .* \('alice'\)"):
        mallory.invoke("remove", job, True)
    # alice's job is unaffected: hers to read (the output opens) and remove.
    assert "appended" in "\n".join(line.text for line in alice.output(job, launcher=False))
    assert alice.job(job)["state"] == "SUCCEEDED"
    assert alice.remove(job)["id"] == job
    assert _runs(tmp_path, "owned") == 1
    # The forged copy never caused a write under alice's key (removed above, it stays absent).
    time.sleep(0.8)
    assert jobs.get(job) is None
    jobs.remove_key(f"{cache_name}-copy")


def test_a_finished_job_flipped_back_to_pending_does_not_run_again(
        hostile: dict[str, Any], users: tuple[JobClient, ...], cache_name: str, tmp_path: Path) -> None:
    alice, mallory, _ = users
    rec = _run(alice, cache_name, tmp_path, "once")
    assert rec["state"] == "SUCCEEDED" and _runs(tmp_path, "once") == 1
    jobs = _jobs_cache(mallory)
    for state in ("PENDING", "RESTARTING", "RUNNING"):
        jobs.put(rec["id"], {**rec, "state": state, "attempt": 0, "restarts": 0, "next_start_ms": 0,
                             "submitted_by": "mallory"})
        restored = _wait_state(alice, rec["id"], {"SUCCEEDED"}, timeout=30)
        assert restored["attempt"] == 1 and restored["submitted_by"] == "alice"
    time.sleep(1.5)  # long enough for a start (settle 0, poll 300 ms) had the flip been taken
    assert _runs(tmp_path, "once") == 1, "the sealed, finished job ran again"
    assert alice.job(rec["id"])["state"] == "SUCCEEDED"
    assert any("record restored" in e["message"] for e in alice.job(rec["id"])["events"])
    logs = _node_logs(hostile["cluster"])
    assert f"action=restore job={rec['id']} user=(none) from=(unknown) decision=refused" in logs
    assert "(the job is SUCCEEDED and stays so)" in logs
    alice.remove(rec["id"])


def test_limits_and_stop_requests_written_into_the_record_are_ignored(
        hostile: dict[str, Any], users: tuple[JobClient, ...], cache_name: str, tmp_path: Path) -> None:
    alice, mallory, _ = users
    jobs = _jobs_cache(mallory)
    # A job failing after 1.5 s, sealed with one restart: mallory raises max_restarts, asks it to stop.
    job_dir = write_job(tmp_path, "fails", APPEND_JOB)
    rec = alice.submit(cache_name, job_dir, ["python", "job.py", str(tmp_path / "fails.runs"), "1.5", "3"],
                       name=f"{cache_name}-fails", settle_ms=0, max_restarts=1, backoff_ms=100)
    _wait_state(alice, rec["id"], {"RUNNING"})
    cur = alice.job(rec["id"])
    jobs.put(rec["id"], {**cur, "max_restarts": 100, "backoff_ms": 0, "stop_requested": True,
                         "grace_ms": 10 ** 12})
    done = _wait_state(alice, rec["id"], FINAL)
    assert done["state"] == "FAILED" and done["restarts"] == 1 and done["max_restarts"] == 1, done["message"]
    assert "gave up after 1 restart(s)" in done["message"]
    assert _runs(tmp_path, "fails") == 2
    # A job that ignores SIGTERM, sealed with a 1 s grace: a grace of 10^12 ms written into its
    # record does not hold alice's stop (nor the supervisor) for longer.
    job_dir = write_job(tmp_path, "stubborn", """
        import signal, sys, threading
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        open(sys.argv[1], "a").write("run\\n")
        threading.Event().wait()  # until killed: the grace under test ends it
    """)
    rec = alice.submit(cache_name, job_dir, ["python", "job.py", str(tmp_path / "stubborn.runs")],
                       name=f"{cache_name}-stubborn", settle_ms=0, grace_ms=1000)
    _wait_state(alice, rec["id"], {"RUNNING"})
    jobs.put(rec["id"], {**alice.job(rec["id"]), "grace_ms": 10 ** 12, "stop_requested": True})
    time.sleep(1.0)
    assert alice.job(rec["id"])["state"] == "RUNNING"  # a client's stop_requested stops nothing
    started = time.monotonic()
    stopped = alice.stop(rec["id"], timeout=60)
    assert stopped["state"] == "STOPPED" and time.monotonic() - started < 30
    assert stopped["grace_ms"] == 1000
    for job in (f"{cache_name}-fails", f"{cache_name}-stubborn"):
        alice.remove(job)


def test_archives_are_bound_to_the_submission_and_checked_on_every_node(
        hostile: dict[str, Any], users: tuple[JobClient, ...], cache_name: str, tmp_path: Path) -> None:
    alice, mallory, _ = users
    marker = tmp_path / "who.txt"
    mine = _zip({"job.py": f"open({str(marker)!r}, 'a').write('alice\\n')\n"})
    evil = _zip({"job.py": f"open({str(marker)!r}, 'a').write('mallory\\n')\n"})
    command = ["python", "job.py"]
    # Overwritten between alice's upload and her submit: refused, nothing accepted.
    job = f"{cache_name}-swap"
    _upload(alice, job, mine)
    _upload(mallory, job, evil)
    with pytest.raises(LauncherError, match="changed between upload and submit"):
        _submit_uploaded(alice, job, cache_name, hashlib.sha256(mine).hexdigest(), command)
    with pytest.raises(LauncherError, match="no job named"):
        alice.job(job)
    # A submission that does not say what it uploaded is refused too.
    with pytest.raises(LauncherError, match="does not say which archive it uploaded"):
        _submit_uploaded(alice, job, cache_name, "", command)
    # Overwritten after the submit (before the node reads it): the node refuses, the job fails.
    job = f"{cache_name}-late"
    _upload(alice, job, mine)
    _submit_uploaded(alice, job, cache_name, hashlib.sha256(mine).hexdigest(), command, settle_ms=1500)
    _upload(mallory, job, evil)
    rec = _wait_state(alice, job, FINAL)
    assert rec["state"] == "FAILED" and "changed after submission" in rec["message"], rec["message"]
    # A directory left on the node by an earlier job of the same name (its marker naming another
    # archive, or none): unpacked again from the sealed archive, never run as it is.
    job = f"{cache_name}-leftover"
    left = hostile["node_dir"] / "tf-jobs" / job
    (left / "files").mkdir(parents=True)
    (left / "files" / "job.py").write_text(f"open({str(marker)!r}, 'a').write('leftover\\n')\n")
    (left / ".files-complete").write_text(hashlib.sha256(evil).hexdigest())
    _upload(alice, job, mine)
    _submit_uploaded(alice, job, cache_name, hashlib.sha256(mine).hexdigest(), command)
    assert _wait_state(alice, job, FINAL)["state"] == "SUCCEEDED"
    assert (left / ".files-complete").read_text() == hashlib.sha256(mine).hexdigest()
    assert marker.read_text().splitlines() == ["alice"]
    for job in (f"{cache_name}-late", f"{cache_name}-leftover"):
        alice.remove(job)
    assert not left.exists()


def _args(params: tuple[str, ...], job: str, cache: str) -> list[Any]:
    """Arguments of the right Java types for a client's call; anything else (a ServiceContext,
    a LauncherPolicy) is null -- what a client would send."""
    values = {"boolean": True, "long": 1, "java.lang.String": job, "java.util.List": [f"{job}/1/0/0"],
              "java.util.Collection": ["mallory"], "java.util.Map": {
                  "id": f"{cache}-mallory", "cache": cache, "command": ["python", "job.py"], "python": sys.executable}}
    return [values.get(p) for p in params]


def test_every_service_method_called_by_a_client_is_refused_or_harmless(
        hostile: dict[str, Any], users: tuple[JobClient, ...], cache_name: str, tmp_path: Path) -> None:
    """Each public method of TfJobService, from the enumeration ``tests/unit/test_service_surface.py``
    classifies (read from the jar), called by mallory: settings, lifecycle (``init(null)`` ...) and
    job calls refused; reads answer or refuse. Nothing changes: alice's job, the settings, the supervisor."""
    alice, mallory, _ = users
    owned = _run(alice, cache_name, tmp_path, "owned")
    jar = module_jar()
    kinds = surface.SURFACE[surface.LAUNCHER]
    methods = public_methods(jar, next((jar.parent / "lib").glob("ignite-core-*.jar")), surface.LAUNCHER)
    assert {m.name for m in methods} == set(kinds)  # the unit test's classification is this jar's surface
    called = []
    for method in sorted(methods, key=str):
        try:
            mallory.invoke(method.name, *_args(method.params, owned["id"], cache_name))
            outcome = "answered"
        except LauncherPermissionError:
            outcome = "refused"
        called.append((str(method), outcome))
        if kinds[method.name] == surface.READ and method.name != "getPolicy":
            assert outcome == "answered", method
        else:  # settings, lifecycle (for anyone but Ignite's deployment), job calls, the settings' getter
            assert outcome == "refused", method
    assert ("init(org.apache.ignite.services.ServiceContext)", "refused") in called
    # Nothing changed: alice's job, the settings, and the supervisor runs alice's next job.
    assert alice.job(owned["id"])["state"] == "SUCCEEDED" and _runs(tmp_path, "owned") == 1
    assert "submitters: alice; admins: ops" in str(alice.invoke("securitySummary"))
    with pytest.raises(LauncherPermissionError, match="Ignite user 'mallory' may not submit jobs"):
        mallory.submit(cache_name, write_job(tmp_path, "m", "print(1)\n"), ["python", "job.py"],
                       name=f"{cache_name}-m")
    rec = _run(alice, cache_name, tmp_path, "still")
    assert rec["state"] == "SUCCEEDED" and _runs(tmp_path, "still") == 1
    assert "action=init job=(service) decision=refused" in _node_logs(hostile["cluster"])
    for job in (owned["id"], rec["id"]):
        alice.remove(job)


def test_job_environment_shim_and_logs_keep_their_limits(
        hostile: dict[str, Any], users: tuple[JobClient, ...], cache_name: str, tmp_path: Path) -> None:
    alice, _, _ = users
    hooks = {"HOME": "/tmp", "BASH_ENV": "/tmp/x", "ENV": "/tmp/x", "JAVA_TOOL_OPTIONS": "-Dx=1",
             "_JAVA_OPTIONS": "-Dx", "JDK_JAVA_OPTIONS": "-Dx", "PYTHONSTARTUP": "x.py", "PYTHONUSERBASE": "/tmp",
             "PYTHONINSPECT": "1", "LD_AUDIT": "x.so"}
    secret = {"DB_PASS": "x", "WANDB_API_KEY": "x", "AWS_ACCESS_KEY_ID": "x", "MYSQL_PWD": "x",
              "SESSION_COOKIE": "x"}
    base = {"id": f"{cache_name}-env", "cache": cache_name, "command": ["python", "job.py"],
            "python": sys.executable}
    for key, value in hooks.items():
        with pytest.raises(LauncherError, match=f"environment variable {key} is set by the launcher or the node"):
            alice.invoke("submit", {**base, "env": {key: value}})
    for key in secret:
        with pytest.raises(ConfigurationError, match=f"{key} looks like a secret"):
            alice.submit(cache_name, tmp_path, ["python", "job.py"], env={key: "s3cr3t-value"})
        with pytest.raises(LauncherError, match=f"{key} looks like a secret") as err:
            alice.invoke("submit", {**base, "env": {key: "s3cr3t-value"}})
        assert "s3cr3t-value" not in str(err.value)
    # The client's list and the launcher's are one list (jobs.SECRET_ENV_NAME, TfJobService.SECRET_NAME).
    for key in ("GITHUB_TOKEN", "SSH_PRIVATE_KEY", "BASIC_AUTH", "OAUTH_CLIENT", "app_passphrase", "X_PW",
                "EPOCHS", "AUTHOR", "PASSTHROUGH", "KEYSPACE", "MONKEY", "TF_CPP_MIN_LOG_LEVEL", "HASH_KEYS"):
        with pytest.raises(LauncherError) as err:
            alice.invoke("submit", {**base, "env": {key: "x"}, "file_chunks": 1})
        assert ("looks like a secret" in str(err.value)) == bool(SECRET_ENV_NAME.fullmatch(key)), (key, err.value)
        assert "looks like a secret" in str(err.value) or "does not say which archive" in str(err.value)
    url = "postgresql://scott:tiger-pw@db.example:5432/ml"
    with pytest.raises(ConfigurationError, match="DATABASE_URL holds a URL with a user name and password"):
        alice.submit(cache_name, tmp_path, ["python", "job.py"], env={"DATABASE_URL": url})
    with pytest.raises(LauncherError, match="DATABASE_URL holds a URL with a user name and password") as err:
        alice.invoke("submit", {**base, "env": {"DATABASE_URL": url}})
    assert "tiger-pw" not in str(err.value)
    assert all(not j["id"].startswith(f"{cache_name}-env") for j in alice.jobs())
    # A tensorflow_ignite/ package shipped with the job (the worker's directory) does not stand in for
    # the module's shim; the job's own code is importable from its directory as always.
    shadow = tmp_path / "shadow.txt"
    job_dir = write_job(tmp_path, "shadowing", """
        import os, sys
        import helper
        print("helper", helper.VALUE, "shim parent", open(f"/proc/{os.getppid()}/cmdline").read().split("\\0")[:4])
    """)
    (job_dir / "helper.py").write_text("VALUE = 42\n")
    fake = job_dir / "tensorflow_ignite" / "launcher"
    fake.mkdir(parents=True)
    (job_dir / "tensorflow_ignite" / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    (fake / "shim.py").write_text(f"open({str(shadow)!r}, 'w').write('shadowed')\n")
    rec = alice.submit(cache_name, job_dir, ["python", "job.py"], name=f"{cache_name}-shadow", settle_ms=0)
    rec = _wait_state(alice, rec["id"], FINAL)
    assert rec["state"] == "SUCCEEDED", rec["message"]
    assert not shadow.exists(), "a shipped package replaced the module's shim"
    text = "\n".join(line.text for line in alice.output(rec["id"], launcher=False))
    assert "helper 42" in text and "'-I', '-m', 'tensorflow_ignite.launcher.shim'" in text, text
    # Worker logs on the node: the node's OS user only.
    job_dir_on_node = hostile["node_dir"] / "tf-jobs" / rec["id"]
    log_file = job_dir_on_node / "worker-1-0.log"
    assert log_file.stat().st_mode & 0o777 == 0o600
    assert job_dir_on_node.stat().st_mode & 0o777 == 0o700
    alice.remove(rec["id"])


def test_id_reuse_does_not_open_an_earlier_jobs_output(
        hostile: dict[str, Any], users: tuple[JobClient, ...], cache_name: str, tmp_path: Path) -> None:
    """The output's associated data holds a per-job nonce: chunks of an earlier job with the same
    name, put back into the logs cache after ``rm``, do not read as the new job's."""
    alice, mallory, _ = users
    job_dir = write_job(tmp_path, "reuse", "print('first job secret output')\n")
    name = f"{cache_name}-reuse"
    rec = alice.submit(cache_name, job_dir, ["python", "job.py"], name=name, settle_ms=0)
    assert _wait_state(alice, rec["id"], FINAL)["state"] == "SUCCEEDED"
    logs = mallory.client.cache(layout.LOGS)
    old = {k: v for k, v in logs.scan() if str(k).startswith(name + "/")}
    assert old
    alice.remove(name)
    (job_dir / "job.py").write_text("print('second')\n")
    rec = alice.submit(cache_name, job_dir, ["python", "job.py"], name=name, settle_ms=0)
    assert _wait_state(alice, rec["id"], FINAL)["state"] == "SUCCEEDED"
    for key, value in old.items():
        logs.put(key, value)  # the first job's cipher text over the second's
    text = "\n".join(line.text for line in alice.output(name, launcher=False))
    assert "first job secret output" not in text and "not shown" in text
    alice.remove(name)


def test_forged_worker_records_decide_nothing(
        hostile: dict[str, Any], users: tuple[JobClient, ...], cache_name: str, tmp_path: Path) -> None:
    """The supervisor acts only on the worker state its node sealed: a worker record a client writes
    (exited with 7, or with 0 while the worker still runs) neither restarts nor finishes the job."""
    alice, mallory, _ = users
    job_dir = write_job(tmp_path, "worker", APPEND_JOB)
    rec = alice.submit(cache_name, job_dir, ["python", "job.py", str(tmp_path / "worker.runs"), "3"],
                       name=f"{cache_name}-worker", settle_ms=0, max_restarts=3, backoff_ms=100)
    _wait_state(alice, rec["id"], {"RUNNING"})
    workers = mallory.client.get_or_create_cache(layout.cache_config(layout.WORKERS))
    key = layout.worker_key(rec["id"], 1, 0)
    real = workers.get(key)
    assert real is not None and "seal" in real
    for code in (7, 0):
        workers.put(key, {**real, "state": "EXITED", "exit_code": code, "seal": secrets.token_bytes(48)})
        time.sleep(0.8)
        assert alice.job(rec["id"])["state"] == "RUNNING"
    done = _wait_state(alice, rec["id"], FINAL)
    assert done["state"] == "SUCCEEDED" and done["restarts"] == 0 and _runs(tmp_path, "worker") == 1
    alice.remove(rec["id"])
