"""Every public method of every service the module deploys is a checked call, or refuses once deployed.

A thin client can invoke any public method of a deployed Ignite service by name, and
open-source Ignite 2 has no authorization.  So the module's service surface is read from
the compiled classes (``javap``: each class implementing Ignite's ``Service``, its own
public methods and the interface's default lifecycle methods) and compared with
:data:`SURFACE` below: a method added later and not classified here fails the first test.
The second invokes every method of both services as an authenticated user who is neither
submitter nor admin, on one node with authentication, the launcher and a follow log, and
checks what each kind of method must do:

* ``SETTING`` -- refused (the settings are the node configuration's);
* ``LIFECYCLE`` -- refused, or without effect: the supervisor still runs a job afterwards
  and the follow log still records updates;
* ``CHECKED`` -- refused for this caller (the job is alice's; mallory may not submit);
* ``READ`` -- answers (or refuses), and changes nothing.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.data.follow_log import log_cache_name
from tensorflow_ignite.errors import ServerError
from tensorflow_ignite.launcher import layout
from tensorflow_ignite.launcher.jobs import JobClient, plain
from tensorflow_ignite.launcher.module import LauncherSecurity
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.local.java import module_jar
from tensorflow_ignite.protocol import requests, responses
from tensorflow_ignite.protocol.codes import Op
from tensorflow_ignite.testing.service_surface import ServiceMethod, public_methods, service_classes
from tensorflow_ignite.testing.waiting import wait_for

SETTING, LIFECYCLE, CHECKED, READ = "setting", "lifecycle", "checked", "read"

LAUNCHER = "org.tensorflow.ignite.launcher.TfJobService"
FOLLOW_LOG = "org.tensorflow.ignite.follow.FollowLogService"

#: Every public method of every service of the module, and what it must do for an unprivileged caller.
SURFACE: dict[str, dict[str, str]] = {
    LAUNCHER: {
        "setAllowUnauthenticated": SETTING, "setSubmitters": SETTING, "setAdmins": SETTING,
        "setAllowedCommands": SETTING, "setMaxJobBytes": SETTING, "setWorkRoot": SETTING, "setPolicy": SETTING,
        "init": LIFECYCLE, "execute": LIFECYCLE, "cancel": LIFECYCLE,
        "submit": CHECKED, "stop": CHECKED, "remove": CHECKED, "output": CHECKED,
        "getPolicy": READ, "ping": READ, "securitySummary": READ, "regions": READ,
    },
    FOLLOW_LOG: {
        "setCaches": SETTING, "setRetentionSeconds": SETTING,
        "init": LIFECYCLE, "execute": LIFECYCLE, "cancel": LIFECYCLE,
        "getCaches": READ, "getRetentionSeconds": READ, "retention": READ, "head": READ, "verify": READ,
    },
}

SERVICE_NAMES = {LAUNCHER: layout.SERVICE_NAME, FOLLOW_LOG: "tf-ignite-follow-log"}

FOLLOWED = "surface_events"


def _jars() -> tuple[Path, Path]:
    jar = module_jar()
    return jar, next((jar.parent / "lib").glob("ignite-core-*.jar"))


def test_every_public_method_of_every_module_service_is_classified() -> None:
    jar, core = _jars()
    classes = service_classes(jar, core)
    assert classes == sorted(SURFACE), f"services in the module jar: {classes}; classify the new one in SURFACE"
    for cls in classes:
        found = {m.name for m in public_methods(jar, core, cls)}
        unknown, gone = found - set(SURFACE[cls]), set(SURFACE[cls]) - found
        assert not unknown, (f"{cls}: public methods {sorted(unknown)} are invocable by any thin client; make each "
                             "a checked call or refuse once deployed, then classify it in SURFACE")
        assert not gone, f"{cls}: {sorted(gone)} are no longer public; drop them from SURFACE"


# ------------------------------------------------------------------ on a node
@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    cluster = LocalCluster(work_dir=tmp_path_factory.mktemp("surface"), name="tfi-surface", nodes=1, auth=True,
                           sql=True, heap_mb=384, region_mb=128, follow_log=(FOLLOWED,),
                           launcher_security=LauncherSecurity(submitters=("alice",), admins=("ops",)))
    try:
        cluster.start()
        passwords = {u: "pw-" + secrets.token_hex(8) for u in ("alice", "mallory")}
        with IgniteClient(cluster.addresses(), **cluster.client_settings()) as admin:
            for user, password in passwords.items():
                admin.sql(f"CREATE USER \"{user}\" WITH PASSWORD '{password}'").fetchall()
            admin.get_or_create_cache("surface_rows").put_all({i: i for i in range(10)})
            admin.get_or_create_cache(FOLLOWED).put(0, 0)
        host, port = cluster.address()
        yield {"cluster": cluster, "host": host, "port": port, "passwords": passwords}
    finally:
        cluster.stop()


def _as(env: dict[str, Any], user: str) -> JobClient:
    return JobClient.connect(env["host"], env["port"], username=user, password=env["passwords"][user])


def _call(client: IgniteClient, service: str, method: str, args: list[Any]) -> Any:
    features = client.default_connection.features
    body = client.request(lambda rid: requests.service_invoke(rid, service, method, args, features=features),
                          Op.SERVICE_INVOKE, retry=False)
    return plain(responses.decode_object(body, client.decoder()))


def _args(method: ServiceMethod, job_id: str) -> list[Any]:
    """Arguments of the right types: real names where a name matters (the job, the followed cache)."""
    values = {"boolean": False, "long": 1, "java.lang.String": job_id, "java.util.List": [job_id + "/1/0/0"],
              "java.util.Collection": ["another"], "byte[]": b"", "java.util.Map": {"id": "mallory-job",
              "cache": "surface_rows", "command": ["python", "job.py"], "python": sys.executable}}
    out = [values.get(p) for p in method.params]
    if method.name in ("head", "verify"):
        out[0] = FOLLOWED
    return out


def test_an_unprivileged_caller_gets_each_method_refused_or_harmless(node: dict[str, Any], tmp_path: Path) -> None:
    jar, core = _jars()
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    (job_dir / "job.py").write_text("print('alice ran')\n")
    with _as(node, "alice") as alice, _as(node, "mallory") as mallory:
        job = alice.submit("surface_rows", job_dir, ["python", "job.py"], name="alice-surface", settle_ms=0)
        outcomes: dict[str, str] = {}
        for cls, kinds in SURFACE.items():
            for method in sorted(public_methods(jar, core, cls), key=str):
                kind = kinds[method.name]
                try:
                    _call(mallory.client, SERVICE_NAMES[cls], method.name, _args(method, job["id"]))
                    outcome = "answered"
                except ServerError as exc:
                    outcome = "refused" if "permission denied" in str(exc) else f"error: {str(exc)[:160]}"
                outcomes[f"{cls.rsplit('.', 1)[1]}.{method}"] = outcome
                if kind in (SETTING, CHECKED):
                    assert outcome == "refused", (method, outcome)
                elif kind == LIFECYCLE:
                    assert outcome in ("refused", "answered"), (method, outcome)
                # READ: whatever it answers (some refuse too); that it changed nothing is checked below.
        print("\n".join(f"{k}: {v}" for k, v in sorted(outcomes.items())))

        # Nothing changed: the settings are as configured, the supervisor still runs alice's jobs ...
        assert "submitters: alice; admins: ops" in str(alice.invoke("securitySummary"))
        again = alice.submit("surface_rows", job_dir, ["python", "job.py"], name="alice-surface-2", settle_ms=0)
        assert alice.wait(again["id"], timeout=120)["state"] == "SUCCEEDED"
        assert "alice ran" in "\n".join(line.text for line in alice.output(again["id"]))
        # ... and the follow log still records every update of its cache.
        log = mallory.client.cache(log_cache_name(FOLLOWED))
        before = sum(1 for _ in log.scan())
        mallory.client.cache(FOLLOWED).put_all({i: i for i in range(1, 6)})
        wait_for(lambda: sum(1 for _ in log.scan()) >= before + 5, timeout=30,
                 what="the follow log to record the updates after the lifecycle calls")
        assert _call(alice.client, SERVICE_NAMES[FOLLOW_LOG], "getCaches", []) == [FOLLOWED]
