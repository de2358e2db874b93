"""Killing an Ignite node under a training job, on a 3-node cluster of this test's own.

The node killed is the one hosting the supervisor singleton, so one test covers
both halves of "Ignite keeps the launcher alive": Ignite redeploys the
supervisor on a survivor, the new instance notices the planned node is gone,
replans on the two survivors, and the job resumes from its last checkpoint.
The dead node's worker dies with it (parent-death signal), leaving no orphan.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.launcher.jobs import JobClient
from tensorflow_ignite.local.cluster import LocalCluster

from .test_launcher_jobs import children, job_processes, launch_digits_resnet, wait_for


@pytest.mark.slow
def test_killed_node_replans_on_survivors_and_resumes_from_checkpoint(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path / "nodes", nodes=3, name="tfi-fault", heap_mb=512, region_mb=256)
    jobs: JobClient | None = None
    try:
        cluster.start()
        host, port = cluster.address(0)
        train_rows, test_rows = launch_digits_resnet.load_digits_caches(
            host, port, "FAULT_DIGITS", "FAULT_DIGITS_TEST", backups=1)
        # Seeds on every node: the client keeps working whichever node dies.
        jobs = JobClient(IgniteClient([f"{h}:{p}" for h, p in cluster.addresses()]), owns_client=True)
        supervisor_node = jobs.ping().rsplit(" on ", 1)[1]
        victim = next(m for m in cluster.members if m.name == supervisor_node)

        rec = jobs.submit(
            "FAULT_DIGITS", launch_digits_resnet.JOB_DIR, ["python", "train.py"],
            env={"EPOCHS": "2", "EVAL_CACHE": "FAULT_DIGITS_TEST", "TRAIN_HOLD_AFTER_EPOCH": "1",
                 "TF_CPP_MIN_LOG_LEVEL": "2"},
            checkpoint_dir=str(tmp_path / "checkpoints"), settle_ms=2000, backoff_ms=200,
        )
        job = rec["id"]
        seen: list[Any] = []
        for line in jobs.output(job, follow=True):
            seen.append(line)
            if sum("holding after epoch 1" in line.text for line in seen) == 3:
                break
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
        survivors = {m.name for m in cluster.members if m.index != victim.index}
        assert {w["node"] for w in final["workers"]} == survivors  # replanned on the survivors

        results = jobs.results(job)
        assert len(results) == 2
        for r in results.values():
            assert r["start_epoch"] == 1  # resumed from the epoch-1 checkpoint, not epoch 0
            assert r["rows_per_epoch"] == [r["rows"]]
        assert sum(r["rows"] for r in results.values()) == train_rows  # backups=1: no row lost
        assert {r["eval_rows"] for r in results.values()} == {test_rows}
        assert results[0]["accuracy"] > 0.7  # the final model, evaluated on held-out digits

        assert jobs.ping().rsplit(" on ", 1)[1] in survivors  # Ignite moved the supervisor
        assert job_processes(job) == []
    finally:
        if jobs is not None:
            jobs.close()
        cluster.stop()


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
