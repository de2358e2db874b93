"""Topology changes under a training job, on a cluster of this module's own.

* A node joins: primaries move to it, the job is replanned on one more worker,
  restarts with the reason recorded and resumes from its checkpoint.
* A node is killed -- the one hosting the supervisor singleton, so one test
  covers both halves of "Ignite keeps the launcher alive": Ignite redeploys the
  supervisor on a survivor, the new instance notices the planned node is gone,
  replans on the survivors, and the job resumes from its last checkpoint in
  ``ignite://``.  The dead node's worker dies with it (parent-death signal).

Both tests share one cluster (3 nodes; the first test adds one, the second
kills one); each works from whatever nodes are alive when it starts.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.launcher.jobs import JobClient
from tensorflow_ignite.local.cluster import LocalCluster

from .test_launcher_jobs import (
    assert_checkpoints_in_ignite,
    children,
    job_processes,
    launch_digits_resnet,
    wait_for,
)


@pytest.fixture(scope="module")
def fault_cluster(tmp_path_factory: pytest.TempPathFactory, long_form: bool) -> Iterator[LocalCluster]:
    # The short form (CI) runs only the join trial: two nodes and a third joining show the replan as
    # well as three and a fourth, with one training worker less on two cores.  The kill trial (--long)
    # needs three, so that two survive.
    cluster = LocalCluster(tmp_path_factory.mktemp("launcher-faults"), nodes=3 if long_form else 2,
                           name="tfi-fault", heap_mb=512, region_mb=256)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def _jobs(cluster: LocalCluster) -> JobClient:
    # Seeds on every live node: the client keeps working whichever node dies.
    return JobClient(IgniteClient([f"{h}:{p}" for h, p in cluster.addresses()]), owns_client=True)


def _hold_after_epoch_1(jobs: JobClient, job: str, workers: int) -> None:
    seen: list[Any] = []
    for line in jobs.output(job, follow=True):
        seen.append(line)
        if sum("holding after epoch 1" in line.text for line in seen) == workers:
            return
    raise AssertionError(f"job {job} finished before its workers held: {jobs.job(job)['message']}")


def _assert_resumed_and_evaluated(results: dict[int, Any], train_rows: int, test_rows: int) -> None:
    for r in results.values():
        assert r["start_epoch"] == 1  # resumed from the epoch-1 checkpoint, not epoch 0
        assert r["rows_per_epoch"] == [r["rows"]]  # each of its rows once in the epoch it ran
    assert sum(r["rows"] for r in results.values()) == train_rows  # backups=1: no row lost
    parts = sorted(p for r in results.values() for p in r["partitions"])
    assert parts == list(range(1024))  # disjoint shares covering the cache: every row exactly once
    assert {r["eval_rows"] for r in results.values()} == {test_rows}
    assert results[0]["accuracy"] > 0.7  # the final model, evaluated on held-out digits


@pytest.mark.slow
def test_joining_node_replans_and_resumes_from_checkpoint(fault_cluster: LocalCluster) -> None:
    cluster = fault_cluster
    host, port = cluster.addresses()[0]
    train_rows, test_rows = launch_digits_resnet.load_digits_caches(
        host, port, "JOIN_DIGITS", "JOIN_DIGITS_TEST", backups=1)
    with _jobs(cluster) as jobs:
        before = {m.name for m in cluster.members if cluster.is_alive(m)}
        rec = jobs.submit(
            "JOIN_DIGITS", launch_digits_resnet.JOB_DIR, ["python", "train.py"],
            env={"EPOCHS": "2", "EVAL_CACHE": "JOIN_DIGITS_TEST", "TRAIN_HOLD_AFTER_EPOCH": "1",
                 "TF_CPP_MIN_LOG_LEVEL": "2"},
            settle_ms=2000, backoff_ms=200, max_restarts=5,
        )
        job = rec["id"]
        _hold_after_epoch_1(jobs, job, len(before))
        plan_before = jobs.job(job)["plan"]

        joined = cluster.add_node()
        final = jobs.wait(job, timeout=480)
        history = "\n".join(e["message"] for e in final["events"])
        assert (final["state"], final["exit_code"]) == ("SUCCEEDED", 0), history
        # Rebalancing moves primaries in steps: one restart or a few, each with its reason.
        assert final["failures"] and {f["kind"] for f in final["failures"]} == {"partitions_moved"}, history
        assert final["failures"][0]["attempt"] == 1
        assert any(f"joined: {joined.name}" in f["reason"] for f in final["failures"]), history
        assert final["plan"] != plan_before
        assert {w["node"] for w in final["workers"]} == before | {joined.name}  # one more worker

        results = jobs.results(job)
        assert len(results) == len(before) + 1
        joined_result = next(r for r in results.values() if r["node"] == joined.name)
        assert joined_result["rows"] > 0  # the new node's share is trained on
        _assert_resumed_and_evaluated(results, train_rows, test_rows)
        assert job_processes(job) == []


@pytest.mark.slow
@pytest.mark.long_only("test_stock_cluster.py::test_node_kill_moves_the_launcher_and_the_job_resumes runs this "
                       "test on stock nodes")
def test_killed_node_replans_on_survivors_and_resumes_from_checkpoint(fault_cluster: LocalCluster) -> None:
    cluster = fault_cluster
    host, port = cluster.addresses()[0]
    train_rows, test_rows = launch_digits_resnet.load_digits_caches(
        host, port, "FAULT_DIGITS", "FAULT_DIGITS_TEST", backups=1)
    with _jobs(cluster) as jobs:
        supervisor_node = jobs.ping().rsplit(" on ", 1)[1]
        victim = next(m for m in cluster.members if m.name == supervisor_node)
        live = len(cluster.addresses())

        rec = jobs.submit(
            "FAULT_DIGITS", launch_digits_resnet.JOB_DIR, ["python", "train.py"],
            env={"EPOCHS": "2", "EVAL_CACHE": "FAULT_DIGITS_TEST", "TRAIN_HOLD_AFTER_EPOCH": "1",
                 "TF_CPP_MIN_LOG_LEVEL": "2"},
            settle_ms=2000, backoff_ms=200,  # checkpoints in ignite:///tf-jobs/JOB (backups=1)
        )
        job = rec["id"]
        _hold_after_epoch_1(jobs, job, live)
        victim_worker = next(w for w in jobs.workers(job) if w["node"] == victim.name)
        victim_procs = [int(victim_worker["pid"]), *children(int(victim_worker["pid"]))]

        cluster.kill_node(victim.index, signal.SIGKILL)
        # The dead node's worker goes with it: the shim gets its parent-death signal.
        wait_for(lambda: not any(Path(f"/proc/{p}").exists() and not _zombie(p) for p in victim_procs),
                 timeout=30, what="the dead node's worker processes to exit")

        final = jobs.wait(job, timeout=480)
        history = "\n".join(e["message"] for e in final["events"])
        assert (final["state"], final["exit_code"]) == ("SUCCEEDED", 0), history
        first = final["failures"][0]
        assert first["kind"] == "node_left" and first["attempt"] == 1
        assert first["reason"] == f"node {victim.name} (worker {victim_worker['index']}) left the cluster"
        # Rebalancing may move primaries once more after the loss; that is a recorded restart too.
        assert {f["kind"] for f in final["failures"][1:]} <= {"partitions_moved"}
        survivors = {m.name for m in cluster.members if m.index != victim.index and cluster.is_alive(m)}
        assert {w["node"] for w in final["workers"]} == survivors  # replanned on the survivors

        results = jobs.results(job)
        assert len(results) == live - 1
        _assert_resumed_and_evaluated(results, train_rows, test_rows)
        assert jobs.ping().rsplit(" on ", 1)[1] in survivors  # Ignite moved the supervisor
        assert job_processes(job) == []
    # The checkpoint written before the kill (one backup) was read back by the survivors.
    host, port = cluster.addresses()[0]
    assert_checkpoints_in_ignite(host, port, job, epochs=2)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
