"""IgniteDataset across hosts when the network fails (issue 28): a host cut off, a node frozen.

Three stock Ignite nodes, each on a "host" of its own (a network namespace on a
bridge: the ``three_hosts`` fixture), the client on the machine's side of the
bridge, the options' default timeouts.  A host whose link goes down mid-epoch
(the node alive, its packets dropped, no reset) and a node stopped with
``SIGSTOP`` are the faults ``kill -9`` does not show: nothing ever tells the
client the connection is dead.  The cluster drops such a node after its
``failureDetectionTimeout`` (10 s); the epoch must go on within that plus 5 s
(printed), with every row exactly once (one backup), and once the node is back
in the cluster the same client uses it again -- never a connection to the node
that left.  The same holds for a tf.data service job and per-worker readers
(separate processes).  Under ``ignite://``, a checkpoint save in flight at the cut completes or
fails clearly, and a file read in flight goes on with the exact bytes: nothing torn, nothing hung.
Latency and loss (no ``tc netem`` on this kernel) go through the
user-space proxy (``tensorflow_ignite.testing.tcp_proxy.TcpProxy.set_link``).
"""

from __future__ import annotations

import logging
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tensorflow_ignite import IgniteDataset
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.launcher.jobs import JobClient
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.data.dataset import close_shared_clients
from tensorflow_ignite.testing.hosts import FAILURE_DETECTION_TIMEOUT, HostCluster
from tensorflow_ignite.testing.waiting import wait_for, wait_rebalanced

from tensorflow_ignite.testing.tcp_proxy import TcpProxy
from .test_dataset_faults import assert_exactly_once, fill_cache  # backups=1, FULL_SYNC, READ_WRITE_SAFE
from .test_dataset_service import service  # noqa: F401 (a dispatcher here, two worker processes)
from .test_fs_faults import _Saver, backend  # noqa: F401 (backend: the ignite:// backend fixture)
from .test_launcher_faults import _assert_resumed_and_evaluated, _hold_after_epoch_1
from .test_cli_signals import finish, ignite_tf, read_until
from .test_launcher_jobs import job_processes, launch_digits_resnet

tf = pytest.importorskip("tensorflow")
from tensorflow_ignite import fs as ignite_fs  # noqa: E402
from tensorflow_ignite.fs.backend import IgniteBackend  # noqa: E402
from tensorflow_ignite.fs.layout import FileEntry  # noqa: E402
from tensorflow_ignite.fs.store import IgniteFileStore  # noqa: E402

log = logging.getLogger(__name__)

ROWS = 12_000
PAGE_ROWS = 8
BATCH = 200
#: Seconds the epoch may stand still after the fault: failureDetectionTimeout + 5.
STALL_LIMIT = FAILURE_DETECTION_TIMEOUT + 5.0
#: ignite:// blocks: the test's 16 MiB checkpoints are 16 blocks.
FS_BLOCK_SIZE = "1m"
#: Each batch is "trained on" this long (the consumer's pace, not a wait for anything): the epoch
#: lasts a few seconds, so the fault lands while the victim still has rows to send.
STEP_SECONDS = 0.05


def timed_epoch(ds: IgniteDataset, fault: Callable[[], None] | None = None, at_rows: int = 0,
                step: float = 0.0) -> tuple[list[int], float | None, list[float]]:
    """One epoch's keys, the time ``fault()`` ran (in another thread, once ``at_rows`` rows were
    received) and when each batch arrived; each batch takes ``step`` seconds to consume."""
    start = ds.stats.rows
    done = threading.Event()
    fault_at: list[float] = []
    failure: list[BaseException] = []

    def trigger() -> None:
        try:
            wait_for(lambda: done.is_set() or ds.stats.rows - start >= at_rows, 120,
                     f"the reader to receive {at_rows} rows")
            if not done.is_set() and fault is not None:
                fault_at.append(time.monotonic())
                log.info("fault injected")
                fault()
        except BaseException as exc:  # reported by the test thread
            failure.append(exc)

    thread = threading.Thread(target=trigger, daemon=True)
    if fault is not None:
        thread.start()
    keys: list[int] = []
    arrivals: list[float] = []
    try:
        for batch in ds:
            arrivals.append(time.monotonic())
            keys.extend(int(k) for k in batch["key"].numpy())
            assert (batch["val"]["id"].numpy() == batch["key"].numpy()).all()  # rows whole
            if step:
                time.sleep(step)  # a training step's worth of work
    finally:
        done.set()
        if fault is not None:
            thread.join(timeout=60)
    if failure:
        raise failure[0]
    return keys, (fault_at[0] if fault_at else None), arrivals


def stall_after(fault_at: float, arrivals: list[float]) -> float:
    """The longest the epoch stood still after the fault: the widest gap between batches
    (counted from the fault for the first one after it)."""
    after = [t for t in arrivals if t > fault_at]
    marks = [fault_at, *after]
    return max((b - a for a, b in zip(marks, marks[1:])), default=0.0)


def node_id_of(client: IgniteClient, host: str) -> Any:
    return next(n for n, eps in client.node_endpoints(refresh=True).items() if any(h == host for h, _ in eps))


_SHORT = "test_epoch_goes_on_within_failure_detection_and_uses_the_node_again[host-cut-off] and [node-paused]"
#: (fault, victim): host 2 is not the one the dataset was given; host 0 is (its connection is the
#: client's default one, through which maps and endpoints are asked) -- the long form only.
FAULTS = [
    pytest.param("cut", 2, id="host-cut-off"),
    pytest.param("pause", 2, id="node-paused"),
    pytest.param("cut", 0, id="seed-host-cut-off", marks=pytest.mark.long_only(_SHORT)),
    pytest.param("pause", 0, id="seed-node-paused", marks=pytest.mark.long_only(_SHORT)),
]


@pytest.mark.slow
@pytest.mark.parametrize("fault,victim", FAULTS)
def test_epoch_goes_on_within_failure_detection_and_uses_the_node_again(
        three_hosts: HostCluster, cache_name: str, fault: str, victim: int) -> None:
    cluster = three_hosts
    fill_cache(cluster, cache_name, ROWS)
    wait_rebalanced(cluster, cache_name, ROWS)
    host, port = cluster.address(0)
    victim_host = cluster.member(victim).host
    try:
        ds = IgniteDataset(cache_name, host, port, batch_size=BATCH, page_size=PAGE_ROWS)
        keys, _, _ = timed_epoch(ds)
        assert_exactly_once(keys, ROWS, "epoch before the fault")
        old_id = node_id_of(ds.client, victim_host)

        inject = (lambda: cluster.cut(victim)) if fault == "cut" else (lambda: cluster.pause(victim))
        t0 = time.monotonic()
        keys, fault_at, arrivals = timed_epoch(ds, inject, at_rows=ROWS // 4, step=STEP_SECONDS)
        took = time.monotonic() - t0
        assert fault_at is not None, "the epoch ended before the fault was injected"
        assert_exactly_once(keys, ROWS, f"epoch with node {victim} {fault}")
        stall = stall_after(fault_at, arrivals)
        print(f"\n{fault}: epoch {took:.1f}s, longest stall after the fault {stall:.1f}s "
              f"(limit {STALL_LIMIT:.0f}s), {len(ds.stats.failovers)} partition scans failed over, "
              f"{sum(len(r) for r in ds.stats.rescans)} partitions rescanned")
        assert stall <= STALL_LIMIT, f"the epoch stood still {stall:.1f}s after the {fault}"

        # Heal: the node comes back (restarted on its host: a dropped node does not rejoin by
        # itself); the same client, in the same process, reads from it again.
        cluster.rejoin(victim)
        wait_rebalanced(cluster, cache_name, ROWS)
        keys, _, _ = timed_epoch(ds)
        assert_exactly_once(keys, ROWS, "epoch after the node came back")
        new_id = node_id_of(ds.client, victim_host)
        assert new_id != old_id
        live = {c.handshake.node_id: c for c in ds.client.connections() if c.handshake is not None}
        assert old_id not in live, "a connection to the node that left is still held"
        assert new_id in live and live[new_id].requests_sent > 0, "the node back is not read from"
        assert new_id in ds.client.partition_map(cache_name).nodes
    finally:
        close_shared_clients()


# A per-worker reader, as `ignite-tf start` runs one on each worker: its partitions come from its
# own IGNITE_DATASET_PARTS.  It builds the dataset, says so, reads once told to go, and prints each
# batch's arrival time (CLOCK_MONOTONIC: the test's clock too) and keys.
PER_WORKER = textwrap.dedent("""
    import sys, time
    from tensorflow_ignite import IgniteDataset

    cache, host, port, batch, page, step = sys.argv[1:7]
    ds = IgniteDataset(cache, host, int(port), batch_size=int(batch), page_size=int(page), per_worker=True)
    print("READY", flush=True)
    sys.stdin.readline()
    for b in ds:
        keys = b["key"].numpy()
        assert (b["val"]["id"].numpy() == keys).all()
        print("BATCH", time.monotonic(), " ".join(map(str, keys.tolist())), flush=True)
        time.sleep(float(step))
    print("DONE", flush=True)
""")


class _PerWorkerReader:
    """One per-worker reader process and what it printed (read on a thread of its own)."""

    def __init__(self, args: list[str], parts: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("IGNITE_DATASET_")}
        env.update(IGNITE_DATASET_PARTS=parts, TF_CPP_MIN_LOG_LEVEL="2")
        self.proc = subprocess.Popen([sys.executable, "-c", PER_WORKER, *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        self.ready = threading.Event()
        self.done = threading.Event()
        self.keys: list[int] = []
        self.arrivals: list[float] = []
        self.output: list[str] = []
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("BATCH "):
                _, at, *keys = line.split()
                self.arrivals.append(float(at))
                self.keys.extend(int(k) for k in keys)
            else:
                self.output.append(line)
                if line.startswith("READY"):
                    self.ready.set()
                elif line.startswith("DONE"):
                    self.done.set()
        self.ready.set()  # exited: whoever waits looks at the output

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def finish(self, timeout: float) -> None:
        try:
            self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            self._thread.join(timeout=10)
        assert self.done.is_set(), f"a per-worker reader failed (exit {self.proc.returncode}): " + \
            "".join(self.output)[-3000:]


@pytest.mark.slow
@pytest.mark.long_only("test_epoch_goes_on_within_failure_detection_and_uses_the_node_again[host-cut-off] (a reader "
                       "going on within failure detection when a host is cut off); test_dataset_service.py and "
                       "test_dataset_ps.py (tf.data service jobs and per-worker readers, exactly once)")
def test_service_job_and_per_worker_readers_go_on_when_a_host_is_cut_off(
        three_hosts: HostCluster, cache_name: str, service: Any) -> None:
    """A tf.data service job (``distributed_epoch``: two worker processes read the partitions handed
    out) and two per-worker readers (half of the partitions each) read the same cache when host 2 is
    cut off: each goes on within failureDetectionTimeout + 5 s, every row exactly once."""
    cluster = three_hosts
    fill_cache(cluster, cache_name, ROWS)
    wait_rebalanced(cluster, cache_name, ROWS)
    host, port = cluster.address(0)
    with IgniteClient(f"{host}:{port}") as client:
        partitions = client.partition_map(cache_name).partitions
    half = partitions // 2
    args = [cache_name, host, str(port), str(BATCH), str(PAGE_ROWS), str(2 * STEP_SECONDS)]
    readers = [_PerWorkerReader(args, share) for share in (f"0-{half - 1}", f"{half}-{partitions - 1}")]
    service_arrivals: list[float] = []
    service_keys: list[int] = []
    cut_at: list[float] = []
    failure: list[BaseException] = []
    ended = threading.Event()

    def cut_mid_epoch() -> None:
        try:  # both forms a quarter through their rows, then the host's link goes down
            wait_for(lambda: ended.is_set() or (len(service_keys) >= ROWS // 4
                                                and sum(len(r.keys) for r in readers) >= ROWS // 4),
                     180, "a quarter of the rows through the service and the per-worker readers")
            if not ended.is_set():
                cut_at.append(time.monotonic())
                log.info("host 2 cut off")
                cluster.cut(2)
        except BaseException as exc:  # reported by the test thread
            failure.append(exc)

    cutter = threading.Thread(target=cut_mid_epoch, daemon=True)
    try:
        for r in readers:
            assert r.ready.wait(180) and r.proc.poll() is None, "".join(r.output)[-3000:]
        t0 = time.monotonic()
        cutter.start()
        for r in readers:
            r.go()
        job = IgniteDataset(cache_name, host, port, batch_size=BATCH, page_size=PAGE_ROWS).apply(
            tf.data.experimental.service.distribute(processing_mode="distributed_epoch", service=service.target,
                                                    job_name=f"{cache_name}-cut"))
        for batch in job:
            service_arrivals.append(time.monotonic())
            service_keys.extend(int(k) for k in batch["key"].numpy())
            assert (batch["val"]["id"].numpy() == batch["key"].numpy()).all()
            time.sleep(STEP_SECONDS)
        service_took = time.monotonic() - t0
        for r in readers:
            r.finish(timeout=120)
        took = time.monotonic() - t0
    finally:
        ended.set()
        cutter.join(timeout=60)
        for r in readers:
            if r.proc.poll() is None:
                r.proc.kill()
                r.proc.wait()
    if failure:
        raise failure[0]
    assert cut_at, "the reads ended before the host was cut off"
    assert_exactly_once(service_keys, ROWS, "tf.data service job (distributed_epoch) with host 2 cut off")
    assert_exactly_once([k for r in readers for k in r.keys], ROWS, "per-worker readers with host 2 cut off")
    stalls = {"service": stall_after(cut_at[0], service_arrivals),
              **{f"per-worker {i}": stall_after(cut_at[0], r.arrivals) for i, r in enumerate(readers)}}
    print(f"\nhost cut off: service epoch {service_took:.1f}s, all {took:.1f}s; longest stall after the cut: "
          + ", ".join(f"{k} {v:.1f}s" for k, v in stalls.items()) + f" (limit {STALL_LIMIT:.0f}s)")
    late = {k: a[-1] <= cut_at[0] for k, a in
            (("service", service_arrivals), *((f"per-worker {i}", r.arrivals) for i, r in enumerate(readers)))}
    assert not any(late.values()), f"the cut came after these had read everything: {late}"
    assert all(v <= STALL_LIMIT for v in stalls.values()), f"a reader stood still too long after the cut: {stalls}"


@pytest.mark.slow
@pytest.mark.long_only("test_submitter_cut_off_the_job_runs_on_and_attach_follows_it_again runs a launcher job "
                       "across the hosts; test_stock_cluster.py::test_node_kill_moves_the_launcher_and_the_job_resumes "
                       "restarts one on the rest and resumes it from its checkpoint")
def test_launcher_job_across_hosts_restarts_on_the_rest_when_a_worker_host_is_cut_off(
        three_hosts: HostCluster) -> None:
    """A training job on the three hosts forms its TensorFlow cluster over the hosts' addresses;
    a worker's host (not the supervisor's) is cut off while the job holds after its epoch-1
    checkpoint: the cluster drops the node, the job restarts on the two others and resumes from
    the checkpoint, every row once."""
    cluster = three_hosts
    assert cluster.network is not None
    host_addresses = {cluster.network.address(i) for i in range(3)}
    host, port = cluster.address(0)
    train_rows, test_rows = launch_digits_resnet.load_digits_caches(
        host, port, "NET_DIGITS", "NET_DIGITS_TEST", backups=1)
    with JobClient(IgniteClient([f"{h}:{p}" for h, p in cluster.addresses()]), owns_client=True) as jobs:
        supervisor_node = jobs.ping().rsplit(" on ", 1)[1]
        rec = jobs.submit(
            "NET_DIGITS", launch_digits_resnet.JOB_DIR, ["python", "train.py"],
            env={"EPOCHS": "2", "EVAL_CACHE": "NET_DIGITS_TEST", "TRAIN_HOLD_AFTER_EPOCH": "1",
                 "TF_CPP_MIN_LOG_LEVEL": "2"},
            settle_ms=2000, backoff_ms=200,
        )
        job = rec["id"]
        _hold_after_epoch_1(jobs, job, 3)
        planned = jobs.job(job)["workers"]
        # The TensorFlow cluster of attempt 1 (it trained epoch 1 together): one task per host, each
        # at its host's address -- routable, not loopback -- and reading through its own node.
        assert {w["host"] for w in planned} == host_addresses, planned
        assert {w["dataset_host"] for w in planned} == host_addresses, planned
        victim = next(m for m in sorted(cluster.members, key=lambda m: -m.index) if m.name != supervisor_node)
        victim_worker = next(w for w in planned if w["node"] == victim.name)
        cut_at = time.monotonic()
        cluster.cut(victim.index)

        final = jobs.wait(job, timeout=480)
        took = time.monotonic() - cut_at
        history = "\n".join(e["message"] for e in final["events"])
        assert (final["state"], final["exit_code"]) == ("SUCCEEDED", 0), history
        first = final["failures"][0]
        assert first["kind"] == "node_left" and first["attempt"] == 1, history
        assert first["reason"] == f"node {victim.name} (worker {victim_worker['index']}) left the cluster"
        assert {f["kind"] for f in final["failures"][1:]} <= {"partitions_moved"}, history
        survivors = {m.name for m in cluster.members if m.index != victim.index}
        assert {w["node"] for w in final["workers"]} == survivors
        assert {w["host"] for w in final["workers"]} == host_addresses - {victim.host}
        results = jobs.results(job)
        assert len(results) == 2
        _assert_resumed_and_evaluated(results, train_rows, test_rows)
        print(f"\nworker host {victim.index} cut off: the job restarted on {sorted(survivors)} and succeeded "
              f"{took:.1f}s after the cut ({len(final['failures'])} restart(s): "
              f"{', '.join(f['kind'] for f in final['failures'])})")
    # The cut-off node went on as a cluster of its own; restarted on its host, nothing of the job is left.
    cluster.rejoin(victim.index)
    wait_for(lambda: job_processes(job) == [], 60, "the cut-off worker's processes to exit")


# A job that ticks until told to stop: each tick printed (the job's output) and counted in a file
# on this machine, so the test sees the job go on while it cannot reach the cluster.
TICKER = textwrap.dedent("""
    import os, time
    ticks, release = os.environ["TICKS_FILE"], os.environ["RELEASE_FILE"]
    n = 0
    while not os.path.exists(release):
        print(f"tick {n}", flush=True)
        n += 1
        with open(f"{ticks}.{os.getpid()}", "w") as f:  # one file per worker: the three share `ticks`
            f.write(str(n))
        os.replace(f"{ticks}.{os.getpid()}", ticks)
        time.sleep(0.2)
    print(f"done after {n} ticks", flush=True)
""")


@pytest.mark.slow
def test_submitter_cut_off_the_job_runs_on_and_attach_follows_it_again(
        three_hosts: HostCluster, cache_name: str, tmp_path: Path) -> None:
    """``ignite-tf start`` following a job when the submitter loses the network (every host
    unreachable from it, the hosts still reaching each other): the job runs on; once the network is
    back, ``ignite-tf attach`` shows its whole output and exits with its exit code."""
    cluster = three_hosts
    assert cluster.network is not None
    fill_cache(cluster, cache_name, 300)
    wait_rebalanced(cluster, cache_name, 300)  # primaries moving under the job would restart it
    host, port = cluster.address(0)
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    (job_dir / "job.py").write_text(TICKER)
    ticks, release = tmp_path / "ticks", tmp_path / "release"
    name = f"{cache_name}-cut"
    start = ignite_tf("start", "--host", host, "--port", str(port), "--settle", "0.2", "--name", name,
                      "-e", f"TICKS_FILE={ticks}", "-e", f"RELEASE_FILE={release}",
                      cache_name, str(job_dir), "--", "python", "job.py")
    try:
        read_until(start, "tick 1", 180)
        cluster.network.cut_submitter()
        try:
            def ticked() -> int:
                return int(ticks.read_text() or 0) if ticks.exists() else 0
            at_cut = ticked()
            # The workers are on the hosts, not here: they go on without the submitter.
            wait_for(lambda: ticked() >= at_cut + 25, 60, "the job to tick on while the submitter is cut off")
            followed = finish(start, 60)  # the submitter gives up following, clearly, in bounded time
            print(f"\nignite-tf start while cut off: exit {start.returncode}: {followed.strip().splitlines()[-1:]}")
        finally:
            cluster.network.heal_submitter()
        assert start.returncode != 0
        assert f"`ignite-tf attach {name}` follows it again" in followed, followed[-2000:]
        release.write_text("")
        attach = ignite_tf("attach", name, "--host", host, "--port", str(port))
        out = finish(attach, 120)
        assert attach.returncode == 0, out[-3000:]
        # Each worker's lines, labelled "[wI NODE] ...": every tick once, in order, then its end.
        by_worker: dict[str, list[str]] = {}
        for line in out.splitlines():
            if line.startswith("[w") and "] " in line:
                label, text = line.split("] ", 1)
                by_worker.setdefault(label, []).append(text)
        finished = {label: lines for label, lines in by_worker.items() if lines[-1].startswith("done after ")}
        assert len(finished) == 3, out[-3000:]  # the last attempt's three workers (attach shows every attempt)
        for label, lines in finished.items():
            total = int(lines[-1].split()[2])
            assert lines[:-1] == [f"tick {i}" for i in range(total)], f"{label}: not every tick once, in order"
            assert total >= at_cut + 25 // 3, (label, total)
    finally:
        if start.poll() is None:
            start.kill()
            start.wait()
        release.write_text("")
        with JobClient.connect(host, port) as jobs:
            wait_for(lambda: jobs.job(name)["state"] in ("SUCCEEDED", "FAILED", "STOPPED"), 120,
                     "the ticking job to end")
            restarts = [(f["kind"], f["reason"]) for f in jobs.job(name)["failures"]]
    assert not restarts, f"the job restarted: {restarts}"  # the submitter's cut is not the workers' business


def test_follow_across_hosts_delivers_rows_then_each_update_once(three_hosts: HostCluster, cache_name: str) -> None:
    """IgniteDataset.follow with its query on host 0 while the rows' primaries are on all three hosts:
    the rows, then each update and insert once (events cross the network from every host)."""
    from .test_dataset_follow import rows_then_each_update_once

    host, port = three_hosts.address(0)
    with IgniteClient([f"{h}:{p}" for h, p in three_hosts.addresses()], timeout=20) as client:
        rows_then_each_update_once(host, port, client, cache_name)
        owners = set(client.partition_map(cache_name).nodes) - {None}
    assert len(owners) == 3, f"the cache's primaries are on {len(owners)} hosts, not 3"


@pytest.mark.parametrize("rtt,loss", [pytest.param(0.02, 0.0, id="20ms"), pytest.param(0.02, 0.03, id="20ms-3pct-loss")])
def test_slow_lossy_link_reads_every_row_once_without_abandoning_the_node(
        ignite_node: LocalCluster, cache_name: str, rtt: float, loss: float) -> None:
    rows = 3000
    fill_cache(ignite_node, cache_name, rows)
    with TcpProxy(ignite_node.address()) as proxy:
        proxy.set_link(rtt=rtt, loss=loss, seed=28)
        # Through the proxy only: no direct connection to the node.
        client = IgniteClient(proxy.url, partition_awareness=False)
        try:
            conn = client.default_connection
            t0 = time.monotonic()
            assert client.cache(cache_name).get(7) is not None
            round_trip = time.monotonic() - t0
            assert round_trip >= rtt, f"a request took {round_trip * 1000:.1f} ms over a {rtt * 1000:.0f} ms link"
            ds = IgniteDataset(cache_name, proxy.address[0], proxy.address[1], batch_size=BATCH, page_size=64,
                               client=client)
            t0 = time.monotonic()
            keys, _, _ = timed_epoch(ds)
            took = time.monotonic() - t0
            assert_exactly_once(keys, rows, f"epoch over a {rtt * 1000:.0f} ms link with {loss:.0%} loss")
            # Slow is not silent: the connection was never given up on.
            assert not conn.closed and client.connections() == [conn]
            print(f"\nrtt {rtt * 1000:.0f} ms, loss {loss:.0%}: one get {round_trip * 1000:.0f} ms, "
                  f"epoch of {rows} rows {took:.2f}s")
        finally:
            client.close()


def test_an_address_answering_as_another_clusters_node_is_not_used(
        ignite_cluster: LocalCluster, ignite_node: LocalCluster, cache_name: str) -> None:
    # Two clusters with a cache of the same name: the client is given an address of each
    # (a stale seed list, or an island a network partition left behind).
    for cluster, value in ((ignite_cluster, "ours"), (ignite_node, "theirs")):
        with IgniteClient(cluster.addresses()) as setup:
            setup.get_or_create_cache(cache_name).put(1, value)
    other = "%s:%d" % ignite_node.address()
    with TcpProxy(ignite_cluster.address(0)) as proxy:
        client = IgniteClient([proxy.url, other])
        try:
            ours = set(client.node_endpoints(refresh=True))
            assert len(ours) == 3
            proxy.close()  # the address the client reached its cluster by is gone; the next seed is the other's
            # The default connection is dialled again: the other cluster's node answers first in the
            # seed list, but the client goes to a node it knows instead.
            assert set(client.node_endpoints(refresh=True)) == ours
            assert client.cache(cache_name).get(1) == "ours"
            assert client.default_connection.handshake is not None
            assert client.default_connection.handshake.node_id in ours
            assert all(c.handshake is not None and c.handshake.node_id in ours for c in client.connections())
        finally:
            client.close()


@pytest.mark.slow
def test_ignite_fs_write_in_flight_when_its_host_is_cut_off_completes_or_fails_never_torn(
        three_hosts: HostCluster, backend: None) -> None:
    """A checkpoint save streaming blocks when a host other than the URI's is cut off: the save
    completes (the blocks' backups) or fails with an error, in bounded time; nothing visible is torn,
    the previous checkpoint restores, and the next save goes through."""
    cluster = three_hosts
    host, port = cluster.address(0)
    ignite_fs.configure(cache_prefix="net_faults", block_size=FS_BLOCK_SIZE)
    saver = _Saver(f"ignite://{host}:{port}/netfaults/ckpt")
    store, _ = IgniteBackend.resolve(f"ignite://{host}:{port}/netfaults")
    assert isinstance(store, IgniteFileStore)
    saver.save(1)
    wait_rebalanced(cluster, [store.meta.name, store.data.name])

    start = store.stats["blocks_written"]
    cut_at: list[float] = []

    def cut() -> None:
        wait_for(lambda: store.stats["blocks_written"] - start >= 5, 120, "5 blocks of the save")
        cut_at.append(time.monotonic())
        cluster.cut(2)

    cutter = threading.Thread(target=cut, daemon=True)
    cutter.start()
    save_error: BaseException | None = None
    try:
        saver.save(2)
    except (tf.errors.OpError, OSError) as exc:  # allowed: the save in progress may fail, clearly
        save_error = exc
    done = time.monotonic()
    cutter.join(timeout=130)
    assert cut_at and cut_at[0] < done, "the host was not cut off during the save"
    took = done - cut_at[0]
    print(f"\nsave after the cut: {'failed: ' + str(save_error)[:200] if save_error else 'completed'} "
          f"{took:.1f}s after the cut")
    # Bounded: the cluster drops the node (10 s), the client abandons it (idle_timeout); then the
    # blocks' backups take over, or the save fails -- never a wait on the silent node.
    assert took <= 40.0, f"the save went on {took:.1f}s after the cut"
    saver.assert_restores(f"{saver.directory}/ckpt-1", 1)
    steps = saver.assert_everything_visible_is_whole()
    if save_error is None:
        assert 2 in steps
    saver.save(3)
    saver.assert_restores(f"{saver.directory}/ckpt-3", 3)


# ignite:// reads in flight when a host holding some of the file's blocks is cut off.  A 16 MiB file:
# with 128 KiB blocks each 512 KiB read of GFile's buffer takes four whole blocks straight into
# TensorFlow's buffer (the first fetched ahead on an I/O thread, three gets in flight to their
# primaries); with 1 MiB blocks the reads go through the reader's block cache and its read-ahead.
READ_FILE_BYTES = 16 << 20
#: The consumer's pace: a 64 KiB piece every 20 ms (the file in about 5 s without a fault), so the
#: cut after a quarter of the file lands with most blocks still to be fetched.
READ_CHUNK = 64 << 10
READ_STEP = 0.02
#: TFRecordDataset variant: records of this size (the same bytes per second).
RECORD_BYTES = 16 << 10
#: The test's bound on the whole read (about 5 s, plus the stall): past it the read is declared hung.
READ_BOUND = 90.0

_SHORT_READ = "test_ignite_fs_read_in_flight_when_a_host_is_cut_off_goes_on_with_the_exact_bytes[gfile-128k]"
#: (reader, block size, victim host): host 2 is not the URI's; host 0 is (its connection is the
#: store's default one) -- the long form only, with the block-cache path and a TensorFlow reader.
READS = [
    pytest.param("gfile", "128k", 2, id="gfile-128k"),
    pytest.param("gfile", "1m", 2, id="gfile-1m", marks=pytest.mark.long_only(_SHORT_READ)),
    pytest.param("tfrecord", "256k", 2, id="tfrecord-256k", marks=pytest.mark.long_only(_SHORT_READ)),
    pytest.param("gfile", "128k", 0, id="gfile-128k-uri-host", marks=pytest.mark.long_only(_SHORT_READ)),
]


def _write_for_reading(uri: str, kind: str, seed: int) -> list[bytes]:
    """Write the file a reader of ``kind`` reads; returns what it must read (its records, or the
    content as one piece)."""
    rng = random.Random(seed)
    if kind == "gfile":
        content = rng.randbytes(READ_FILE_BYTES)
        with tf.io.gfile.GFile(uri, "wb") as f:
            f.write(content)
        return [content]
    records = [i.to_bytes(4, "little") + rng.randbytes(RECORD_BYTES - 4)
               for i in range(READ_FILE_BYTES // RECORD_BYTES)]
    with tf.io.TFRecordWriter(uri) as writer:
        for record in records:
            writer.write(record)
    return records


def _pieces(uri: str, kind: str) -> Iterator[bytes]:
    """What a reader of ``kind`` hands its consumer, piece by piece."""
    if kind == "gfile":
        with tf.io.gfile.GFile(uri, "rb") as f:
            while piece := f.read(READ_CHUNK):
                yield piece
    else:
        for record in tf.data.TFRecordDataset(uri):
            yield record.numpy()


def _assert_same(got: list[bytes], want: list[bytes], kind: str, what: str) -> None:
    if kind == "gfile":
        got = [b"".join(got)]
    if got == want:
        return
    assert len(got) == len(want), f"{what}: {len(got)} pieces, not {len(want)}"
    i = next(i for i, (g, w) in enumerate(zip(got, want)) if g != w)
    if len(got[i]) != len(want[i]):
        raise AssertionError(f"{what}: piece {i} has {len(got[i])} bytes, not {len(want[i])}")
    offset = next(k for k, (a, b) in enumerate(zip(got[i], want[i])) if a != b)
    raise AssertionError(f"{what}: wrong bytes in piece {i} from byte {offset}")


@pytest.mark.slow
@pytest.mark.parametrize("kind,block_size,victim", READS)
def test_ignite_fs_read_in_flight_when_a_host_is_cut_off_goes_on_with_the_exact_bytes(
        three_hosts: HostCluster, backend: None, kind: str, block_size: str, victim: int) -> None:
    """A file being read in pieces, by ``tf.io.gfile.GFile`` or ``tf.data.TFRecordDataset``, when a host
    holding blocks not read yet is cut off (link down: the node alive, no reset): the read goes on and
    yields the exact bytes -- the blocks' backups serve them once the client has abandoned the silent
    node -- in bounded time, its longest stall within failureDetectionTimeout + 5 s; the connections to
    the other nodes stay open (only the silent node's is given up); a reader opening the file while the
    host is still cut off reads it whole."""
    cluster = three_hosts
    host, port = cluster.address(0)
    ignite_fs.configure(cache_prefix="net_faults", block_size=block_size)
    uri = f"ignite://{host}:{port}/netread/{kind}-{block_size}-{victim}.bin"
    store, path = IgniteBackend.resolve(uri)
    assert isinstance(store, IgniteFileStore)
    victim_id = node_id_of(store.client, cluster.member(victim).host)

    # The cut must find the victim holding blocks the reader has not fetched yet: the file is written
    # again (new content, new placement) until the victim is the primary of a block in its second half.
    for seed in range(28, 38):
        want = _write_for_reading(uri, kind, seed)
        wait_rebalanced(cluster, [store.meta.name, store.data.name])
        entry = store.stat(path)
        assert isinstance(entry, FileEntry)
        victim_blocks = [i for i in range(entry.blocks) if store.block_node(entry.key_of(i)) == victim_id]
        if victim_blocks and victim_blocks[-1] * entry.block_size >= entry.size // 2:
            break
    else:
        pytest.fail(f"node {victim} held no block in the second half of 10 files written")

    got: list[bytes] = []
    arrivals: list[float] = []
    cut: list[tuple[float, int]] = []  # (when, bytes read by then)
    healthy: list[Any] = []  # the connections to the other nodes at the cut
    error: list[BaseException] = []

    def read() -> None:
        received = 0
        try:
            for piece in _pieces(uri, kind):
                got.append(piece)
                received += len(piece)
                arrivals.append(time.monotonic())
                if not cut and received >= entry.size // 4:
                    healthy.extend(c for c in store.client.connections()
                                   if c.handshake is not None and c.handshake.node_id != victim_id)
                    cut.append((time.monotonic(), received))
                    log.info("host %d cut off", victim)
                    cluster.cut(victim)
                time.sleep(READ_STEP * len(piece) / READ_CHUNK)  # the consumer's work on the piece
        except BaseException as exc:  # reported by the test thread
            error.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    t0 = time.monotonic()
    reader.start()
    reader.join(timeout=READ_BOUND)
    took = time.monotonic() - t0
    assert cut, f"the read ended before the cut: {error[:1]}"
    cut_at, read_at_cut = cut[0]
    assert not reader.is_alive(), (f"the read hung: {sum(map(len, got))} of {entry.size} bytes "
                                   f"{time.monotonic() - cut_at:.0f}s after host {victim} was cut off")
    # The reader keeps TensorFlow's 512 KiB buffer and a block fetched ahead: the victim's later
    # blocks were still to be fetched when the link went down.
    ahead = [i for i in victim_blocks if i * entry.block_size >= read_at_cut + (512 << 10) + 2 * entry.block_size]
    assert ahead, f"the cut came after the reader had fetched node {victim}'s blocks {victim_blocks}"
    assert not error, (f"the read failed {time.monotonic() - cut_at:.1f}s after the cut although every block "
                       f"has a backup: {type(error[0]).__name__}: {error[0]}")
    _assert_same(got, want, kind, f"{kind} read across the cut of host {victim}")
    stall = stall_after(cut_at, arrivals)
    print(f"\nignite:// {kind} read, {block_size} blocks, host {victim} cut off after {read_at_cut >> 20} MiB "
          f"(it held {len(ahead)} blocks not fetched yet): completed with the exact bytes in {took:.1f}s, "
          f"longest stall after the cut {stall:.1f}s (limit {STALL_LIMIT:.0f}s)")
    assert stall <= STALL_LIMIT, f"the read stood still {stall:.1f}s after the cut"
    assert healthy, "no connection to another node at the cut"
    dropped = [c.address for c in healthy if c.closed]
    assert not dropped, f"connections to nodes that were not cut off were closed: {dropped}"

    # Opened while the host is still cut off: the file reads whole.
    again = list(_pieces(uri, kind))
    _assert_same(again, want, kind, f"{kind} read with host {victim} cut off")


def test_a_pause_shorter_than_the_idle_timeout_is_waited_out(ignite_node: LocalCluster, cache_name: str) -> None:
    # A node frozen for less than idle_timeout (a long GC pause) answers the heartbeat sent
    # meanwhile once it runs again: the read goes on, on the same connection.
    fill_cache(ignite_node, cache_name, 3000)
    client = IgniteClient(ignite_node.addresses(), idle_timeout=6.0)
    node = ignite_node.members[0]
    try:
        conn = client.default_connection
        pages = client.cache(cache_name).scan(page_size=100)
        assert next(pages) is not None
        os.kill(node.pid, signal.SIGSTOP)
        try:
            frozen = threading.Timer(3.0, os.kill, (node.pid, signal.SIGCONT))  # the pause's length
            frozen.start()
            t0 = time.monotonic()
            rows = 1 + sum(1 for _ in pages)
            waited = time.monotonic() - t0
        finally:
            frozen.join()
            os.kill(node.pid, signal.SIGCONT)
        assert rows == 3000
        assert waited >= 2.5, f"the scan did not wait for the paused node ({waited:.1f}s)"
        assert not conn.closed and client.connections() == [conn]
    finally:
        client.close()
