"""The launcher on a secured node (TLS with client certificates, authentication).

The CLI authenticates with ``--username`` (password from the environment) and
its TLS files; the workers reach their node with credentials the node itself
holds (``TF_IGNITE_WORKER_*`` in its environment, set by ``LocalCluster``), so
no secret is ever in the job record, the CLI's output or the job's logs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tensorflow_ignite.cli.main import main as cli
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.launcher import layout
from tensorflow_ignite.launcher.jobs import JobClient
from tensorflow_ignite.local.cluster import LocalCluster

from .test_launcher_jobs import job_processes, write_job

JOB = """
    import os
    from tensorflow_ignite.client import IgniteClient
    from tensorflow_ignite.fs import IgniteFileSystem
    from tensorflow_ignite.launcher.worker import WorkerContext, node_client_settings, report

    ctx = WorkerContext.from_env()
    settings = node_client_settings()
    with IgniteClient(f"{ctx.host}:{ctx.port}", **settings) as client:
        rows = sum(1 for _ in client.cache(ctx.cache).scan())
    fs = IgniteFileSystem()  # ignite:///...: this node, with the node's credentials
    fs.pipe_file(f"/tf-jobs/{ctx.job_id}/hello.txt", b"written by a worker")
    print(f"worker {ctx.index}: {rows} rows; credentials from the node: {sorted(settings)}")
    parent = open(f"/proc/{os.getppid()}/cmdline", "rb").read().decode()
    report({"rows": rows, "settings": sorted(settings), "cmdlines": [open("/proc/self/cmdline", "rb").read().decode(),
            parent]})
"""


def test_job_on_secured_node_keeps_secrets_out_of_records_output_and_logs(
    ignite_secure_node: LocalCluster, cache_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cluster = ignite_secure_node
    tls = cluster.tls_material
    assert tls is not None
    settings = cluster.client_settings()
    host, port = cluster.address()
    with IgniteClient(f"{host}:{port}", **settings) as client:
        client.get_or_create_cache(cache_name).put_all({i: i for i in range(50)})

    secrets = {tls.client_key_password, tls.keystore_password}
    monkeypatch.setenv("MY_IGNITE_PASSWORD", settings["password"])
    monkeypatch.setenv("IGNITE_CERT_PASSWORD", tls.client_key_password)
    conn = ["--host", host, "--port", str(port), "--username", settings["username"],
            "--password-env", "MY_IGNITE_PASSWORD", "--cafile", settings["cafile"],
            "--certfile", settings["certfile"], "--keyfile", settings["keyfile"]]
    job_dir = write_job(tmp_path, "secure", JOB)
    name = f"{cache_name}-secure"
    code = cli(["start", *conn, "--settle", "0.2", "--name", name, cache_name, str(job_dir), "--", "python", "job.py"])
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    assert "worker 0: 50 rows; credentials from the node: ['cafile', 'cert_password', 'certfile', " \
           "'keyfile', 'password', 'username']" in captured.out

    # The worker really authenticated: its file is in ignite://.
    with JobClient.connect(host, port, **settings) as jobs:
        results = jobs.results(name)
        assert results[0]["rows"] == 50
        outputs = [captured.out, captured.err]
        for command in (["describe", name], ["describe", "--json", name], ["ps"], ["logs", name]):
            assert cli([*command, *conn]) == 0
            outputs.append(capsys.readouterr().out)
        assert job_processes(name) == []

        # Nothing secret in the launcher's caches (job record, workers, logs, results, files) ...
        stored = []
        for cache in (layout.JOBS, layout.WORKERS, layout.LOGS, layout.RESULTS):
            stored += [repr(v) for k, v in jobs.client.cache(cache).scan() if str(k).startswith(name)]
        record = jobs.job(name)
    assert len(stored) >= 4
    assert not any("PASSWORD" in k for k in record["env"])
    # ... in what the CLI printed, in the workers' command lines and in the nodes' logs.
    cmdlines = " ".join(results[0]["cmdlines"])
    assert "tensorflow_ignite.launcher.shim" in cmdlines
    node_logs = [Path(m.log).read_text(errors="replace") for m in cluster.members]
    for secret in secrets:
        for text in (*stored, *outputs, cmdlines, *node_logs):
            assert secret not in text
    assert settings["password"] not in cmdlines.split("\0")  # (the default password is also a user name)

    from tensorflow_ignite.fs import IgniteFileSystem

    fs = IgniteFileSystem(host=host, port=port, **settings)
    assert fs.cat_file(f"/tf-jobs/{name}/hello.txt") == b"written by a worker"

    assert cli(["rm", name, *conn]) == 0
    assert "removed job" in capsys.readouterr().out
    assert os.environ.get("TF_IGNITE_WORKER_PASSWORD") is None  # node-local: never this process's
