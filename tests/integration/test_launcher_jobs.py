"""The ``ignite-tf`` launcher on the shared 3-node cluster: real jobs, real processes.

The supervisor service runs inside the nodes (deployed by NodeLauncher); the
jobs here are real worker processes, TensorFlow ones where the test is about
TensorFlow.  Nothing here kills a node (that is ``test_launcher_faults.py``,
on a cluster of its own).
"""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pytest

from tensorflow_ignite.cli.main import main as cli
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.launcher.jobs import JobClient, LauncherError
from tensorflow_ignite.local.cluster import LocalCluster

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))

import launch_digits_resnet  # noqa: E402
import launch_gradients  # noqa: E402

T = TypeVar("T")


# ------------------------------------------------------------------ helpers
def wait_for(predicate: Callable[[], T], *, timeout: float, what: str) -> T:
    """Poll ``predicate`` (backing off 50 ms -> 500 ms) until it returns something truthy."""
    deadline = time.monotonic() + timeout
    delay = 0.05
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(delay)
        delay = min(delay * 1.5, 0.5)


def job_processes(job_id: str) -> list[int]:
    """Live processes of ``job_id`` on this machine (every node of the test cluster):
    worker shims (``--job JOB`` on the command line) and everything started with
    the job's environment, however deep."""
    marker = f"TF_IGNITE_JOB_ID={job_id}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                continue
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            environ = (entry / "environ").read_bytes().split(b"\0")
        except (OSError, IndexError):
            continue
        shim = b"--job" in cmdline and cmdline[cmdline.index(b"--job") + 1:][:1] == [job_id.encode()]
        if shim or marker in environ:
            found.append(int(entry.name))
    return found


def children(pid: int) -> list[int]:
    """Direct children of ``pid``."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            out += [int(c) for c in Path(f"/proc/{pid}/task/{tid}/children").read_text().split()]
        except OSError:
            pass
    return out


def write_job(tmp_path: Path, name: str, source: str) -> Path:
    job_dir = tmp_path / name
    job_dir.mkdir()
    (job_dir / "job.py").write_text(textwrap.dedent(source))
    return job_dir


def small_cache(cluster: LocalCluster, name: str, rows: int = 30) -> None:
    host, port = cluster.address()
    with IgniteClient(f"{host}:{port}") as client:
        client.get_or_create_cache(name).put_all({i: i * 10 for i in range(rows)})


def addr(cluster: LocalCluster) -> list[str]:
    host, port = cluster.address()
    return ["--host", host, "--port", str(port)]


# -------------------------------------------------------------------- tests
def test_gradients_job_reads_each_row_exactly_once(ignite_cluster: LocalCluster, cache_name: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The seed's per-partition gradients as a MultiWorkerMirroredStrategy job: one
    worker per node, each reading only its node's primary partitions, together
    every row exactly once -- asserted from the workers' own reports."""
    host, port = ignite_cluster.address()
    out = launch_gradients.main(host, port, cache_name=cache_name, rows=600)
    job = out["job"]
    assert (job["state"], job["exit_code"]) == ("SUCCEEDED", 0), job["message"]
    results = out["results"]
    assert sorted(results) == [0, 1, 2]

    with IgniteClient(f"{host}:{port}") as client:
        pmap = client.partition_map(cache_name)
        rows_in = {p: sum(1 for _ in client.cache(cache_name).scan(partition=p)) for p in range(pmap.partitions)}
    planned = {w["index"]: w for w in job["workers"]}
    all_keys: list[int] = []
    for idx, r in results.items():
        node_id = planned[idx]["node_id"]
        # The worker read exactly its node's primary partitions ...
        assert tuple(r["partitions"]) == pmap.partitions_of(uuid.UUID(node_id))
        assert r["node"] == planned[idx]["node"]
        # ... and every row in them.
        assert r["rows"] == sum(rows_in[p] for p in r["partitions"]) == len(r["keys"])
        all_keys += r["keys"]
    assert sorted(all_keys) == list(range(600))  # every row once: no gaps, no duplicates
    assert {r["global_rows"] for r in results.values()} == {600}
    for r in results.values():  # the all-reduced gradient is the whole cache's
        np.testing.assert_allclose(r["global_gradient"], out["whole"], rtol=1e-4)
    assert len({r["node"] for r in results.values()}) == 3

    # ps / describe / logs show the finished job.
    capsys.readouterr()
    assert cli(["ps", *addr(ignite_cluster)]) == 0
    listing = capsys.readouterr().out
    assert job["id"] in listing and "SUCCEEDED" in listing
    assert cli(["describe", job["id"], *addr(ignite_cluster)]) == 0
    text = capsys.readouterr().out
    assert "SUCCEEDED (exit code 0)" in text and "Restarts: none" in text
    for w in job["workers"]:
        assert w["node"] in text
    assert cli(["logs", job["id"], *addr(ignite_cluster)]) == 0
    logs = capsys.readouterr().out
    for idx in range(3):
        assert f"[w{idx} {planned[idx]['node']}] worker {idx}: summed gradient over 600 rows" in logs
    assert "[launcher] attempt 1: started 3 workers" in logs


def test_start_streams_labelled_output_and_exits_with_job_code(
    ignite_cluster: LocalCluster, cache_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    small_cache(ignite_cluster, cache_name)
    ok = write_job(tmp_path, "ok", """
        import os
        print("hello from", os.environ["TF_IGNITE_WORKER_INDEX"], "of", os.environ["TF_IGNITE_NUM_WORKERS"])
        print("parts", os.environ["IGNITE_DATASET_PARTS"] != "", "port", os.environ["IGNITE_DATASET_PORT"])
    """)
    (ok / "data.txt").write_text("shipped through Ignite\n")
    code = cli(["start", *addr(ignite_cluster), "--settle", "0.2", cache_name, str(ok), "--name",
                f"{cache_name}-ok", "--", "python", "job.py"])
    captured = capsys.readouterr()
    out = captured.out
    assert code == 0, captured.err
    lines = [line for line in out.splitlines() if "hello from" in line]
    assert len(lines) == 3
    node_ports = {m.name: m.client_port for m in ignite_cluster.members}
    for line in out.splitlines():
        if "parts True port" in line:  # each worker's dataset endpoint is its own node
            label_node = line.split("]")[0].split()[1]
            assert line.endswith(f"port {node_ports[label_node]}")

    fails = write_job(tmp_path, "fails", """
        import os, sys
        print("worker", os.environ["TF_IGNITE_WORKER_INDEX"], "attempt", os.environ["TF_IGNITE_ATTEMPT"])
        sys.exit(3 if os.environ["TF_IGNITE_WORKER_INDEX"] == "1" else 0)
    """)
    name = f"{cache_name}-fails"
    code = cli(["start", *addr(ignite_cluster), "--settle", "0.2", "--backoff", "0.1", "--max-restarts", "1",
                "--name", name, cache_name, str(fails), "--", "python", "job.py"])
    out = capsys.readouterr().out
    assert code == 3  # the failing worker's exit code, after the one allowed restart
    assert "attempt 2" in out and "[w1 " in out
    with JobClient.connect(*ignite_cluster.address()) as jobs:
        rec = jobs.job(name)
    assert (rec["state"], rec["attempt"], rec["restarts"]) == ("FAILED", 2, 1)
    assert [f["kind"] for f in rec["failures"]] == ["worker_exit", "worker_exit"]
    assert "worker 1 on" in rec["failures"][0]["reason"] and "exited with code 3" in rec["failures"][0]["reason"]
    assert rec["failures"][0]["action"].startswith("restart 1 of 1")
    assert rec["failures"][1]["action"] == "gave up"
    assert cli(["describe", name, *addr(ignite_cluster)]) == 0
    text = capsys.readouterr().out
    assert "FAILED (exit code 3)" in text and "[worker_exit] worker 1 on" in text and "gave up" in text


def test_stop_leaves_no_orphan_processes(ignite_cluster: LocalCluster, cache_name: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Workers that start children of their own and ignore SIGTERM are all gone after `stop`."""
    small_cache(ignite_cluster, cache_name)
    job_dir = write_job(tmp_path, "forever", """
        import os, signal, subprocess, sys, threading
        signal.signal(signal.SIGTERM, signal.SIG_IGN)   # a stubborn worker: needs SIGKILL
        child = subprocess.Popen([sys.executable, "-c", "import threading; threading.Event().wait()"])
        print("ready", os.environ["TF_IGNITE_WORKER_INDEX"], "child", child.pid, flush=True)
        threading.Event().wait()
    """)
    name = f"{cache_name}-forever"
    assert cli(["start", "-d", *addr(ignite_cluster), "--settle", "0.2", "--grace", "1", "--name", name,
                cache_name, str(job_dir), "--", "python", "job.py"]) == 0
    assert capsys.readouterr().out.strip() == name
    with JobClient.connect(*ignite_cluster.address()) as jobs:
        def ready_lines() -> list[Any] | None:
            lines = [line for line in jobs.output(name) if line.text.startswith("ready")]
            return lines if len(lines) == 3 else None

        ready = wait_for(ready_lines, timeout=120, what="3 workers ready")
        assert sorted(l.worker for l in ready) == [0, 1, 2]
        running = job_processes(name)
        assert len(running) >= 9  # 3 x (shim, worker, worker's child)
        assert jobs.job(name)["state"] == "RUNNING"
        capsys.readouterr()
        assert cli(["ps", "--active", *addr(ignite_cluster)]) == 0
        assert name in capsys.readouterr().out

        assert cli(["stop", name, *addr(ignite_cluster)]) == 0
        assert "STOPPED" in capsys.readouterr().out
        rec = jobs.job(name)
        assert (rec["state"], rec["exit_code"]) == ("STOPPED", 143)
        assert job_processes(name) == []  # nothing left on any node
        assert all(not os.path.exists(f"/proc/{pid}") or _zombie(pid) for pid in running)
        assert {w["state"] for w in jobs.workers(name)} == {"EXITED"}
        assert cli(["attach", name, *addr(ignite_cluster)]) == 143  # attach reports the exit code


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_clear_errors(ignite_cluster: LocalCluster, cache_name: str, tmp_path: Path,
                      capsys: pytest.CaptureFixture[str]) -> None:
    job_dir = write_job(tmp_path, "j", "print('never runs')\n")
    with JobClient.connect(*ignite_cluster.address()) as jobs:
        assert jobs.ping().startswith("tf-ignite-launcher")
        with pytest.raises(LauncherError, match=f"cache '{cache_name}_missing' does not exist"):
            jobs.submit(f"{cache_name}_missing", job_dir, ["python", "job.py"])
        small_cache(ignite_cluster, cache_name)
        with pytest.raises(LauncherError, match="strategy 'parameter_server' is not supported"):
            jobs.submit(cache_name, job_dir, ["python", "job.py"], strategy="parameter_server")
    assert cli(["describe", "no-such-job", *addr(ignite_cluster)]) == 1
    assert "no job named 'no-such-job'" in capsys.readouterr().err
    assert cli(["start", *addr(ignite_cluster), cache_name, str(tmp_path / "missing"), "--", "python", "x.py"]) == 1
    assert "does not exist or is not a directory" in capsys.readouterr().err


def test_killed_worker_restarts_all_and_resumes_from_checkpoint(
    ignite_cluster: LocalCluster, cache_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """Keras 3 ResNet-style model, custom MWMS loop: kill one worker's process after the
    epoch-1 checkpoint; the launcher records why, restarts every worker, and attempt 2
    resumes at epoch 2 (not 0), reads each row once per epoch, and evaluates the model."""
    host, port = ignite_cluster.address()
    train, test = f"{cache_name}_train", f"{cache_name}_test"
    train_rows, test_rows = launch_digits_resnet.load_digits_caches(host, port, train, test)
    with JobClient.connect(host, port) as jobs:
        rec = jobs.submit(
            train, launch_digits_resnet.JOB_DIR, ["python", "train.py"],
            env={"EPOCHS": "2", "EVAL_CACHE": test, "TRAIN_HOLD_AFTER_EPOCH": "1", "TF_CPP_MIN_LOG_LEVEL": "2"},
            checkpoint_dir=str(tmp_path / "checkpoints"), settle_ms=300, backoff_ms=200,
        )
        job = rec["id"]
        seen: list[Any] = []
        for line in jobs.output(job, follow=True):  # `logs -f` while the job runs
            seen.append(line)
            if sum("holding after epoch 1" in l.text for l in seen) == 3:
                break
        assert {l.worker for l in seen if "epoch 1/2" in l.text} == {0, 1, 2}
        victim = next(w for w in jobs.workers(job) if w["index"] == 1)
        worker_pid = children(int(victim["pid"]))[0]  # the shim's child: the TF process itself
        os.kill(worker_pid, signal.SIGKILL)

        final = jobs.wait(job, timeout=480)
        assert (final["state"], final["exit_code"]) == ("SUCCEEDED", 0), final["message"]
        assert (final["attempt"], final["restarts"]) == (2, 1)
        failure = final["failures"][0]
        assert failure["kind"] == "worker_exit" and failure["attempt"] == 1
        assert f"worker 1 on {victim['node']} exited with code 137 (killed by signal 9)" == failure["reason"]
        results = jobs.results(job)
        assert sorted(results) == [0, 1, 2]
        for r in results.values():
            assert r["start_epoch"] == 1  # resumed from the epoch-1 checkpoint
            assert r["rows_per_epoch"] == [r["rows"]]  # each of its rows once in the epoch it ran
            assert len({x["steps_per_epoch"] for x in results.values()}) == 1  # equal steps
        assert sum(r["rows"] for r in results.values()) == train_rows
        assert {r["eval_rows"] for r in results.values()} == {test_rows}
        assert results[0]["accuracy"] > 0.7  # 10 classes: 0.1 is chance
        assert job_processes(job) == []

    capsys.readouterr()
    assert cli(["describe", job, *addr(ignite_cluster)]) == 0
    text = capsys.readouterr().out
    assert "Restarts (1 failure(s))" in text and "exited with code 137 (killed by signal 9)" in text
    assert cli(["logs", job, "--no-launcher", *addr(ignite_cluster)]) == 0
    logs = capsys.readouterr().out
    assert "resuming from" in logs and " #2] " in logs and "[launcher]" not in logs
