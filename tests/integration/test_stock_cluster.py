"""The launcher's, the dataset's and ``ignite://``'s promises on stock Apache Ignite nodes.

Users run ``ignite.sh config.xml``: ``CommandLineStartup``, a Spring XML file, a
distribution's ``libs/`` plus the module jar.  The ``stock_cluster`` fixture is
exactly that (three nodes; see :mod:`tensorflow_ignite.local.stock`), with the
module's XML fragment inserted verbatim, so every test here also proves the
documented configuration.  The promises are the ones our own nodes keep, and
where a test of ours states one, it is that same test body run on stock nodes.

By default the nodes run the newest Ignite that reads XML from Maven Central
(2.17); ``--ignite-versions all`` (``make compat``) runs this module on 2.16, 2.17
and 2.18 (2.18: configured in Java, see ``test_ignite_versions.py``).  The node
kills run last: each restarts its victim, so the cluster is whole again afterwards.
"""

from __future__ import annotations

import os
import signal
import threading
import uuid
from pathlib import Path

import pytest

from tensorflow_ignite import IgniteDataset
from tensorflow_ignite.cli.main import main as cli
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.data.dataset import close_shared_clients
from tensorflow_ignite.launcher.jobs import JobClient, JobNotFoundError
from tensorflow_ignite.local.stock import StockCluster

from . import test_dataset_follow as follow_on_our_node
from . import test_fs_tensorflow as on_our_node
from . import test_launcher_faults as faults_on_our_nodes
from . import test_launcher_jobs as on_our_nodes
from tensorflow_ignite.testing.waiting import wait_rebalanced

from .test_dataset_faults import SCAN_MODES, assert_exactly_once, fill_cache
from .test_launcher_jobs import addr, assert_checkpoints_in_ignite, children, job_processes, launch_digits_resnet


def test_nodes_are_stock_ignite_with_the_module(stock_cluster: StockCluster, ignite_version: str) -> None:
    """What runs is Ignite's own main class with our XML (or, for 2.18, our Java configuration)."""
    for m in stock_cluster.members:
        cmdline = Path(f"/proc/{m.pid}/cmdline").read_bytes().rstrip(b"\0").split(b"\0")
        classpath = cmdline[cmdline.index(b"-cp") + 1].decode()
        assert f"ignite-{ignite_version}/libs/*" in classpath and "tensorflow-ignite-node.jar" in classpath
        if stock_cluster.xml_config:
            assert cmdline[-2:] == [b"org.apache.ignite.startup.cmdline.CommandLineStartup",
                                    m.config_file.encode()]
            assert "org.tensorflow.ignite.launcher.TfJobService" in Path(m.config_file).read_text()
        else:
            assert b"--launcher-service-config" in cmdline
    with JobClient.connect(*stock_cluster.address()) as jobs:
        assert jobs.ping().startswith("tf-ignite-launcher")


def test_follow_delivers_rows_then_each_update_once(stock_cluster: StockCluster, cache_name: str) -> None:
    """IgniteDataset.follow's continuous query on stock nodes (events from primaries on other nodes too)."""
    with IgniteClient([stock_cluster.address()]) as client:
        follow_on_our_node.rows_then_each_update_once(*stock_cluster.address(), client, cache_name)


# Under --long only (~50 s): every CI run kills a stock node under a launcher job (below) and a worker
# under a job on our nodes (test_launcher_jobs.py); the worker-crash restart path is the same.
@pytest.mark.long_only("test_launcher_jobs.py::test_killed_worker_restarts_all_and_resumes_from_checkpoint")
def test_start_restarts_after_a_worker_crash_and_reads_every_row_once(
    stock_cluster: StockCluster, cache_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """``ignite-tf start`` on stock nodes: one worker per node on that node's primary partitions;
    a worker killed after the epoch-1 checkpoint makes the launcher restart every worker, the
    job resumes from its checkpoint in ``ignite://`` and reads each row once per epoch; the
    chief's TensorBoard logs are in ``ignite://`` too."""
    host, port = stock_cluster.address()
    train, test = f"{cache_name}_train", f"{cache_name}_test"
    train_rows, test_rows = launch_digits_resnet.load_digits_caches(host, port, train, test)
    job = f"{cache_name}-crash"
    tb_dir = f"ignite:///runs/{job}"
    codes: list[int] = []
    start = threading.Thread(target=lambda: codes.append(cli([
        "start", *addr(stock_cluster), "--name", job, "--settle", "0.3", "--backoff", "0.2",
        "-e", "EPOCHS=2", "-e", f"EVAL_CACHE={test}", "-e", "TRAIN_HOLD_AFTER_EPOCH=1",
        "-e", f"TENSORBOARD_DIR={tb_dir}", "-e", "TF_CPP_MIN_LOG_LEVEL=2",
        train, str(launch_digits_resnet.JOB_DIR), "--", "python", "train.py",
    ])), daemon=True)
    start.start()
    with JobClient.connect(host, port) as jobs:
        def all_holding() -> bool:
            if codes:  # `ignite-tf start` returned early: say why instead of waiting
                raise AssertionError(f"ignite-tf start exited with {codes[0]}: {capsys.readouterr()}")
            try:
                return sum("holding after epoch 1" in line.text for line in jobs.output(job)) == 3
            except JobNotFoundError:
                return False  # not submitted yet

        on_our_nodes.wait_for(all_holding, timeout=300, what="3 workers holding after epoch 1")
        victim = next(w for w in jobs.workers(job) if w["index"] == 1)
        os.kill(children(int(victim["pid"]))[0], signal.SIGKILL)  # the TF process under the shim
        start.join(timeout=480)
        assert codes == [0], capsys.readouterr().out[-3000:]

        final = jobs.job(job)
        assert (final["state"], final["attempt"], final["restarts"]) == ("SUCCEEDED", 2, 1)
        failure = final["failures"][0]
        assert failure["kind"] == "worker_exit"
        assert failure["reason"] == f"worker 1 on {victim['node']} exited with code 137 (killed by signal 9)"
        results = jobs.results(job)
        with IgniteClient(f"{host}:{port}") as client:
            pmap = client.partition_map(train)
        planned = {w["index"]: w for w in final["workers"]}
        assert sorted(results) == [0, 1, 2]
        assert len({r["node"] for r in results.values()}) == 3  # a worker on every node ...
        for idx, r in results.items():  # ... reading exactly that node's primaries
            assert tuple(r["partitions"]) == pmap.partitions_of(uuid.UUID(planned[idx]["node_id"]))
            assert r["start_epoch"] == 1  # resumed from the epoch-1 checkpoint
            assert r["rows_per_epoch"] == [r["rows"]]  # each of its rows once in the epoch it ran
        assert sorted(p for r in results.values() for p in r["partitions"]) == list(range(1024))
        assert sum(r["rows"] for r in results.values()) == train_rows
        assert {r["eval_rows"] for r in results.values()} == {test_rows}
        assert job_processes(job) == []

    out = capsys.readouterr().out
    assert f"resuming from ignite:///tf-jobs/{job}/ckpt-1 after epoch 1" in out
    assert_checkpoints_in_ignite(host, port, job, epochs=2)
    scalars = on_our_node.event_scalars(f"ignite://{host}:{port}/runs/{job}")
    assert [step for step, _ in scalars["chief_local_loss"]] == [1, 2]  # epoch 1 (attempt 1), epoch 2 (attempt 2)
    assert [step for step, _ in scalars["held_out_accuracy"]] == [2]


def test_tensorboard_serves_logs_from_stock_nodes(stock_cluster: StockCluster, cache_name: str) -> None:
    """``ignite-tf tensorboard`` reads event files from stock nodes (our test of it, run here)."""
    host, port = stock_cluster.address()
    base = f"ignite://{host}:{port}/{cache_name}"
    try:
        on_our_node.test_tensorboard_serves_scalars_from_ignite(base)
    finally:
        on_our_node.gfile.rmtree(base)


def test_parameter_server_roles(stock_cluster: StockCluster, cache_name: str, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    """``--strategy ps``: chief, ps tasks and one worker per data node, as on our nodes."""
    on_our_nodes.test_parameter_server_job_plans_chief_ps_and_workers(stock_cluster, cache_name, tmp_path, capsys)


def test_node_kill_moves_the_launcher_and_the_job_resumes(stock_cluster: StockCluster) -> None:
    """The node running the launcher (a service from the XML fragment, not deployed by us) is
    SIGKILLed mid-job: Ignite redeploys it on a survivor, which replans the job on the
    survivors; it resumes from its checkpoint with every row once (our test of it, run here)."""
    try:
        faults_on_our_nodes.test_killed_node_replans_on_survivors_and_resumes_from_checkpoint(stock_cluster)
    finally:
        down = [m.index for m in stock_cluster.members if not stock_cluster.is_alive(m)]
        if down:
            stock_cluster.restart_nodes(down)


#: Node scans' kill trials run here in every run (on our own nodes, under --long); partition scans' under --long.
KILL_MODES = [SCAN_MODES[0], pytest.param(2, "partitions", id="partition-scans", marks=pytest.mark.long_only(
    "test_dataset_faults.py::test_node_join_and_leave_during_epoch_yield_every_row_once[partition-scans]"))]


@pytest.mark.parametrize("readers,mode", KILL_MODES)
def test_node_kill_mid_epoch_loses_and_repeats_nothing(stock_cluster: StockCluster, cache_name: str,
                                                       readers: int, mode: str) -> None:
    """backups=1: a stock node SIGKILLed mid-epoch costs no row and repeats none."""
    cluster = stock_cluster
    rows = 6_000
    fill_cache(cluster, cache_name, rows)
    wait_rebalanced(cluster, cache_name, rows)
    host, port = cluster.address(0)
    victim = cluster.members[-1]  # not the node the dataset was given
    try:
        ds = IgniteDataset(cache_name, host, port, batch_size=500, page_size=4, num_parallel_reads=readers,
                           timeout=20)
        keys: list[int] = []
        received = rows
        for batch in ds:  # the consumer stops to kill: the reader stalls on full buffers meanwhile
            keys.extend(int(k) for k in batch["key"].numpy())
            if received == rows and len(keys) >= rows // 3:
                received = ds.stats.rows
                cluster.kill_node(victim.index, signal.SIGKILL)
        assert_exactly_once(keys, rows, f"node {victim.name} killed after {received} rows")
        assert received < rows, "the kill landed mid-epoch"
        assert ds.stats.scan_mode == mode
        if mode == "nodes":  # the node scans' later pages came through the compiled scan pump
            assert ds.stats.fetch_paths.get("compiled", 0) > 0, ds.stats.fetch_paths
            assert ds.stats.id_paths.get("pump", 0) > 0, ds.stats.id_paths  # rows' keys from the pump's thread
    finally:
        close_shared_clients()
        if not cluster.is_alive(victim):
            cluster.restart_nodes([victim.index])
    wait_rebalanced(cluster, cache_name, rows)
    with JobClient.connect(*cluster.address()) as jobs:  # the launcher is still (or again) deployed
        assert jobs.ping().startswith("tf-ignite-launcher")
