"""The ``ignite-tf`` launcher on the shared 3-node cluster: real jobs, real processes.

The supervisor service runs inside the nodes (deployed by NodeLauncher); the
jobs here are real worker processes, TensorFlow ones where the test is about
TensorFlow.  Nothing here kills a node (that is ``test_launcher_faults.py``,
on a cluster of its own).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tensorflow_ignite.cli.main import main as cli
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.data.env import parse_partition_list
from tensorflow_ignite.errors import ConfigurationError
from tensorflow_ignite.launcher import layout
from tensorflow_ignite.launcher.jobs import JobClient, LauncherError
from tensorflow_ignite.testing.waiting import wait_for
from tensorflow_ignite.local.cluster import LocalCluster

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))

import launch_digits_resnet  # noqa: E402
import launch_gradients  # noqa: E402
import launch_keras_fit  # noqa: E402



# ------------------------------------------------------------------ helpers
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
    assert cli(["ps", "--json", *addr(ignite_cluster)]) == 0
    listed = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    assert listed[job["id"]]["state"] == "SUCCEEDED" and listed[job["id"]]["exit_code"] == 0
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
        import os, socket
        print("hello from", os.environ["TF_IGNITE_WORKER_INDEX"], "of", os.environ["TF_IGNITE_NUM_WORKERS"])
        print("parts", os.environ["IGNITE_DATASET_PARTS"] != "", "port", os.environ["IGNITE_DATASET_PORT"])
        s = socket.socket()
        s.bind(("0.0.0.0", 0))  # what TensorFlow's servers do; the bind fence pins it to the worker's address
        print("wildcard bind on", s.getsockname()[0])
    """)
    (ok / "data.txt").write_text("shipped through Ignite\n")
    code = cli(["start", *addr(ignite_cluster), "--settle", "0.2", cache_name, str(ok), "--name",
                f"{cache_name}-ok", "--", "python", "job.py"])
    captured = capsys.readouterr()
    out = captured.out
    assert code == 0, captured.err
    lines = [line for line in out.splitlines() if "hello from" in line]
    assert len(lines) == 3
    # Every worker's listeners are fenced to the address it advertises (the nodes' 127.0.0.1).
    assert [line.rsplit(" ", 1)[1] for line in out.splitlines() if "wildcard bind on" in line] == ["127.0.0.1"] * 3
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
        with pytest.raises(ConfigurationError, match="strategy 'bogus' is not supported"):
            jobs.submit(cache_name, job_dir, ["python", "job.py"], strategy="bogus")
        with pytest.raises(LauncherError, match="strategy 'bogus' is not supported"):  # the service checks too
            jobs.invoke("submit", {"id": "x", "cache": cache_name, "command": ["python"], "python": sys.executable,
                                   "strategy": "bogus"})
        with pytest.raises(ConfigurationError, match="--num-ps is for the parameter_server strategy only"):
            jobs.submit(cache_name, job_dir, ["python", "job.py"], num_ps=2)
        # A secret in the job's environment never leaves this process (nor is echoed).
        with pytest.raises(ConfigurationError, match="IGNITE_DATASET_PASSWORD looks like a secret") as err:
            jobs.submit(cache_name, job_dir, ["python", "job.py"], env={"IGNITE_DATASET_PASSWORD": "s3cr3t-value"})
        assert "s3cr3t-value" not in str(err.value)
        with pytest.raises(LauncherError, match="API_TOKEN looks like a secret"):  # and the service refuses it
            jobs.invoke("submit", {"id": "x", "cache": cache_name, "command": ["python"], "python": sys.executable,
                                   "env": {"API_TOKEN": "s3cr3t-value"}})
        assert all(r["id"] != "x" for r in jobs.jobs())
    for command in (["describe"], ["logs"], ["attach"], ["stop"], ["rm"]):
        assert cli([*command, "no-such-job", *addr(ignite_cluster)]) == 1
        assert "no job named 'no-such-job'" in capsys.readouterr().err
    assert cli(["start", *addr(ignite_cluster), cache_name, str(tmp_path / "missing"), "--", "python", "x.py"]) == 1
    assert "does not exist or is not a directory" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli(["start", *addr(ignite_cluster), cache_name, str(empty), "--", "python", "x.py"]) == 1
    assert f"job directory '{empty}' is empty" in capsys.readouterr().err
    assert cli(["start", *addr(ignite_cluster), cache_name, str(job_dir)]) == 1
    assert "no command: put it after --" in capsys.readouterr().err
    assert cli(["start", *addr(ignite_cluster), "-e", "NOVALUE", cache_name, str(job_dir), "--", "python"]) == 1
    assert "--env 'NOVALUE': use KEY=VALUE" in capsys.readouterr().err
    assert cli(["rm", *addr(ignite_cluster)]) == 1
    assert "name the jobs to delete" in capsys.readouterr().err
    with pytest.raises(SystemExit) as bad:
        cli(["start", "--strategy", "horovod", cache_name, str(job_dir), "--", "python", "x.py"])
    assert bad.value.code == 2 and "invalid choice: 'horovod'" in capsys.readouterr().err
    for args, message in ((["--num-ps", "0"], "argument --num-ps: must be between 1 and 16"),
                          (["--port", "0"], "argument --port: must be between 1 and 65535"),
                          (["--settle", "-1"], "argument --settle: must be a positive number")):
        with pytest.raises(SystemExit) as bad:
            cli(["start", *args, cache_name, str(job_dir), "--", "python", "x.py"])
        assert bad.value.code == 2 and message in capsys.readouterr().err


def test_every_job_command_explains_itself(capsys: pytest.CaptureFixture[str]) -> None:
    expected = {
        "start": "Ship JOB_DIR through Ignite", "ps": "List the cluster's jobs", "describe": "every restart with its reason",
        "logs": "labelled [wINDEX NODE]", "attach": "exit with the job's exit code", "stop": "SIGKILL after the grace",
        "rm": "Checkpoints are kept",
    }
    for command, phrase in expected.items():
        with pytest.raises(SystemExit) as done:
            cli([command, "--help"])
        assert done.value.code == 0
        text = " ".join(capsys.readouterr().out.split())
        assert phrase in text, command
        assert "--password-env VAR" in text and "--cafile" in text, command  # secured clusters everywhere


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
            settle_ms=300, backoff_ms=200,  # default checkpoint dir: ignite:///tf-jobs/JOB
        )
        job = rec["id"]
        assert rec["checkpoint_dir"] == f"ignite:///tf-jobs/{job}"
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
    assert f"resuming from ignite:///tf-jobs/{job}/ckpt-1 after epoch 1" in logs
    assert_checkpoints_in_ignite(host, port, job, epochs=2)


def assert_checkpoints_in_ignite(host: str, port: int, job: str, *, epochs: int) -> None:
    """The job's checkpoints are files in Ignite, visible through tf.io.gfile from here;
    the non-chief workers' scratch copies are gone."""
    import tensorflow as tf

    import tensorflow_ignite.fs

    tensorflow_ignite.fs.register()
    root = f"ignite://{host}:{port}/tf-jobs/{job}"
    names = set(tf.io.gfile.listdir(root))
    assert "checkpoint" in names and f"ckpt-{epochs}.index" in names, names
    assert not any(n.startswith("worker-tmp") for n in names), names
    assert tf.train.latest_checkpoint(root) == f"{root}/ckpt-{epochs}"
    reader = tf.train.load_checkpoint(f"{root}/ckpt-{epochs}")
    assert int(reader.get_tensor("epochs_done/.ATTRIBUTES/VARIABLE_VALUE")) == epochs


def test_tf_keras_fit_job_takes_equal_steps(ignite_cluster: LocalCluster, cache_name: str) -> None:
    """tf_keras ``fit`` under MultiWorkerMirroredStrategy (``TF_USE_LEGACY_KERAS=1`` in the
    job's environment only): workers holding different numbers of rows run the same
    number of steps (no hang at epoch end), each trains on exactly its rows per epoch."""
    assert os.environ.get("TF_USE_LEGACY_KERAS") != "1"  # the job sets it for its workers, not globally
    host, port = ignite_cluster.address()
    out = launch_keras_fit.main(host, port, train_cache=f"{cache_name}_train", test_cache=f"{cache_name}_test",
                                epochs=3, quiet=True)
    job = out["job"]
    assert (job["state"], job["exit_code"]) == ("SUCCEEDED", 0), "\n".join(str(l) for l in out["lines"][-30:])
    assert job["env"]["TF_USE_LEGACY_KERAS"] == "1"
    results = out["results"]
    assert sorted(results) == [0, 1, 2]
    rows = [results[i]["rows"] for i in range(3)]
    assert sum(rows) == out["train_rows"]
    assert len(set(rows)) > 1  # the point: unequal shares of the data ...
    steps = {r["steps_per_epoch"] for r in results.values()}
    assert steps == {-(-max(rows) // 32)}  # ... and equal step counts, enough for the largest share
    for r in results.values():
        assert r["keras"].startswith("2.")  # tf_keras, not Keras 3
        # fit's metrics are summed over the workers: the real (weight 1) rows of all of them,
        # i.e. every row of the cache once per epoch and no padding counted
        assert r["rows_per_epoch"] == [out["train_rows"]] * 3
        assert len(r["loss"]) == 3 and r["loss"][-1] < r["loss"][0]
    parts = [p for r in results.values() for p in r["partitions"]]
    assert sorted(parts) == list(range(1024))  # disjoint shares covering the cache
    assert {r["eval_rows"] for r in results.values()} == {out["test_rows"]}
    assert results[0]["accuracy"] > 0.7
    assert job_processes(job["id"]) == []


PS_PROBE = """
    import json, os, threading, time
    from tensorflow_ignite.client import IgniteClient
    from tensorflow_ignite.launcher import layout
    from tensorflow_ignite.launcher.worker import WorkerContext, report

    ctx = WorkerContext.from_env()
    print("role", ctx.task_type, ctx.task_index, "chief" if ctx.is_chief else "", flush=True)
    report({"tf_config": json.loads(os.environ["TF_CONFIG"]), "task_type": ctx.task_type,
            "task_index": ctx.task_index, "parts": os.environ.get("IGNITE_DATASET_PARTS"), "node": ctx.node,
            "is_chief": ctx.is_chief, "num_workers": ctx.num_workers})
    if ctx.task_type != "chief":
        threading.Event().wait()  # ps and workers serve until stopped, like server.join()
    tasks = int(os.environ["EXPECTED_TASKS"])
    keys = [layout.worker_key(ctx.job_id, ctx.attempt, i) for i in range(tasks)]
    with IgniteClient(f"{ctx.host}:{ctx.port}") as client:
        deadline = time.monotonic() + 120
        def reported():
            return sum(v is not None for v in client.cache(layout.RESULTS).get_all(keys).values())

        while reported() < tasks and time.monotonic() < deadline:
            time.sleep(0.2)  # polling for every task's report, bounded by the deadline
    print("chief: every task reported; done", flush=True)
"""


def test_parameter_server_job_plans_chief_ps_and_workers(
    ignite_cluster: LocalCluster, cache_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """``--strategy ps --num-ps 2``: a chief, two ps tasks and one worker per data node, each
    with a TF_CONFIG naming the same cluster and its own role; workers get their node's
    primaries; the job succeeds when the chief exits, and the serving tasks are stopped."""
    small_cache(ignite_cluster, cache_name, rows=200)
    job_dir = write_job(tmp_path, "ps", PS_PROBE)
    name = f"{cache_name}-ps"
    code = cli(["start", *addr(ignite_cluster), "--strategy", "ps", "--num-ps", "2", "--settle", "0.2",
                "--grace", "2", "-e", "EXPECTED_TASKS=6", "--name", name, cache_name, str(job_dir),
                "--", "python", "job.py"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "chief: every task reported; done" in out and "[chief:0 " in out and "[ps:1 " in out
    with JobClient.connect(*ignite_cluster.address()) as jobs:
        rec = jobs.job(name)
        results = jobs.results(name)
    assert (rec["state"], rec["strategy"], rec["num_ps"]) == ("SUCCEEDED", "parameter_server", 2)
    assert "the chief exited with code 0; the other 5 task(s) were stopped" == rec["message"]
    roles = [(r["task_type"], r["task_index"]) for _, r in sorted(results.items())]
    assert roles == [("chief", 0), ("ps", 0), ("ps", 1), ("worker", 0), ("worker", 1), ("worker", 2)]
    cluster = results[0]["tf_config"]["cluster"]
    assert {k: len(v) for k, v in cluster.items()} == {"chief": 1, "ps": 2, "worker": 3}
    addresses = [a for v in cluster.values() for a in v]
    assert len(set(addresses)) == 6  # a port of its own for every task
    ephemeral_high = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[1])
    if 65535 - ephemeral_high >= 100:  # above the kernel's ephemeral range: no outgoing connection takes one
        assert all(ephemeral_high < int(a.rsplit(":", 1)[1]) <= 65535 for a in addresses), addresses
    for idx, r in results.items():
        assert r["tf_config"]["cluster"] == cluster
        assert r["tf_config"]["task"] == {"type": r["task_type"], "index": r["task_index"]}
        assert r["is_chief"] == (r["task_type"] == "chief") and r["num_workers"] == 3
        planned = rec["workers"][idx]
        assert (planned["task_type"], planned["node"]) == (r["task_type"], r["node"])
    workers = [r for r in results.values() if r["task_type"] == "worker"]
    assert len({r["node"] for r in workers}) == 3  # one worker per data node ...
    parts = sorted(p for r in workers for p in parse_partition_list(r["parts"]))
    assert parts == list(range(1024))  # ... with its node's primaries
    assert all(r["parts"] is None for r in results.values() if r["task_type"] != "worker")
    ps_nodes = [r["node"] for r in results.values() if r["task_type"] == "ps"]
    assert results[0]["node"] not in ps_nodes  # with 3 nodes the coordinator does not share a node with a ps
    assert job_processes(name) == []
    assert cli(["describe", name, *addr(ignite_cluster)]) == 0
    text = capsys.readouterr().out
    assert "parameter_server (2 ps)" in text and "chief 0" in text and "ps 1" in text


def test_rm_deletes_jobs_and_everything_they_left(
    ignite_cluster: LocalCluster, cache_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    small_cache(ignite_cluster, cache_name)
    quick = write_job(tmp_path, "quick", """
        from tensorflow_ignite.launcher.worker import report
        print("quick job done")
        report({"ok": True})
    """)
    forever = write_job(tmp_path, "forever", """
        import threading
        print("running", flush=True)
        threading.Event().wait()
    """)
    done, running = f"{cache_name}-done", f"{cache_name}-running"
    assert cli(["start", *addr(ignite_cluster), "--settle", "0.2", "--name", done, cache_name, str(quick),
                "--", "python", "job.py"]) == 0
    assert cli(["start", "-d", *addr(ignite_cluster), "--settle", "0.2", "--grace", "1", "--name", running,
                cache_name, str(forever), "--", "python", "job.py"]) == 0
    host, port = ignite_cluster.address()
    with JobClient.connect(host, port) as jobs:
        wait_for(lambda: len([l for l in jobs.output(running) if l.text == "running"]) == 3, timeout=120,
                 what="3 workers running")
        for job in (done, running):
            assert job_entries(jobs, job), job  # what rm must delete is there
        node_dirs = [m for m in ignite_cluster.members if (job_dir_on(ignite_cluster, m.index, done)).exists()]
        assert len(node_dirs) == 3  # each node unpacked the job files

        capsys.readouterr()
        assert cli(["rm", running, *addr(ignite_cluster)]) == 1  # running: refused ...
        assert f"job '{running}' is RUNNING; stop it first" in capsys.readouterr().err
        assert jobs.job(running)["state"] == "RUNNING" and job_processes(running)
        assert cli(["rm", "--force", running, *addr(ignite_cluster)]) == 0  # ... unless forced
        assert f"removed job {running} (RUNNING" in capsys.readouterr().out
        assert job_processes(running) == []
        with pytest.raises(LauncherError, match="no job named"):
            jobs.job(running)
        assert job_entries(jobs, running) == []

        assert cli(["rm", "--finished", *addr(ignite_cluster)]) == 0
        assert done in capsys.readouterr().out
        assert all(r["state"] not in layout.TERMINAL_STATES for r in jobs.jobs())
        for job in (done, running):
            assert job_entries(jobs, job) == []
            assert not any(job_dir_on(ignite_cluster, m.index, job).exists() for m in ignite_cluster.members)


def job_entries(jobs: JobClient, job: str) -> list[tuple[str, Any]]:
    """Every entry of the launcher's caches that belongs to ``job``."""
    found = []
    names = set(jobs.client.cache_names())
    for cache in (layout.JOBS, layout.WORKERS, layout.LOGS, layout.FILES, layout.RESULTS):
        if cache in names:
            found += [(cache, k) for k, _ in jobs.client.cache(cache).scan() if k == job or str(k).startswith(job + "/")]
    return found


def job_dir_on(cluster: LocalCluster, index: int, job: str) -> Path:
    """Where node ``index`` unpacks a job's files (WorkerAgent.jobDir)."""
    return cluster.work_dir / f"node-{index}" / "ignite" / "tf-jobs" / job
