"""`ignite-tf predict --on-cluster` / `submit_predict`: scoring as a launcher job, through a worker crash and
a node killed with SIGKILL, on a cluster of this module's own (3 nodes; the last test kills one).

The launcher runs with ``allowedCommands`` set to this interpreter alone: the job's command
(``python -m tensorflow_ignite.scoring.worker``) is what an operator's list holds.  Each test kills
mid-job -- as soon as the ledger records a first partition complete -- and then checks every source key
has exactly one prediction, equal to ``model.predict``, and that the restarted attempt skipped the
partitions recorded before the kill.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import keras
import numpy as np
import pytest

import tensorflow_ignite
from tensorflow_ignite.cli.main import main as cli
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.errors import ConfigurationError, ModelInputError, ModelLoadError
from tensorflow_ignite.launcher import layout
from tensorflow_ignite.launcher.jobs import JobClient
from tensorflow_ignite.launcher.module import LauncherSecurity
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.protocol.hashing import affinity_partitions, long_hash_codes
from tensorflow_ignite.protocol.cache_config import CacheConfiguration, CacheMode
from tensorflow_ignite.scoring import MODEL_HASH, recorded_units, submit_predict
from tensorflow_ignite.testing.waiting import wait_for

from .test_launcher_jobs import children, job_processes

ROWS = 16_000
FEATURES = 64


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    c = LocalCluster(tmp_path_factory.mktemp("predict-cluster"), nodes=3, name="tfi-predict", heap_mb=512,
                     region_mb=256,
                     launcher_security=LauncherSecurity(allow_unauthenticated=True,
                                                        allowed_commands=(sys.executable,)))
    try:
        c.start()
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[keras.Model, Path]:
    # Wide enough that scoring takes seconds, so the kill lands mid-job.
    keras.utils.set_random_seed(11)
    x = keras.Input(shape=(FEATURES,), name="features")
    h = keras.layers.Dense(2048, activation="relu")(x)
    h = keras.layers.Dense(2048, activation="relu")(h)
    model = keras.Model(x, keras.layers.Dense(10, activation="softmax", name="scores")(h))
    path = tmp_path_factory.mktemp("predict-model") / "wide.keras"
    model.save(path)
    return model, path


def _client(cluster: LocalCluster) -> IgniteClient:
    return IgniteClient([f"{h}:{p}" for h, p in cluster.addresses()])


def _load(client: IgniteClient, cache: str) -> np.ndarray:
    features = np.random.default_rng(5).normal(size=(ROWS, FEATURES)).astype(np.float32)
    tensorflow_ignite.write(cache, {"features": features}, client=client, backups=1)
    return features


def _recorded(client: IgniteClient, output: str) -> int:
    """Partitions the ledger records complete for ``output``."""
    return sum(len(units) for units in recorded_units(client, output).values())


def _wait_mid_job(jobs: JobClient, job: str, client: IgniteClient, output: str) -> None:
    """Until the ledger records a first partition complete; fails at once if the job ends first."""
    def started() -> bool:
        rec = jobs.job(job)
        if rec["state"] in layout.TERMINAL_STATES:
            logs = "\n".join(str(line) for line in jobs.output(job))
            raise AssertionError(f"job {job} ended before the fault: {rec['state']} {rec['message']}\n{logs}")
        return _recorded(client, output) > 0

    wait_for(started, timeout=180, what="a first partition recorded complete")


def _assert_exactly_once(client: IgniteClient, output: str, features: np.ndarray, model: keras.Model) -> None:
    entries = dict(client.cache(output).scan(page_size=4096))
    assert sorted(entries) == list(range(ROWS))  # one prediction per source key, none extra
    got = np.stack([np.asarray(entries[k].fields["scores"], dtype=np.float32) for k in range(ROWS)])
    np.testing.assert_allclose(got, model.predict(features, batch_size=4096, verbose=0), rtol=1e-4, atol=1e-6)
    assert len({entries[k].fields[MODEL_HASH] for k in range(ROWS)}) == 1


def _assert_restart_skipped(jobs: JobClient, job: str, final: dict[str, Any]) -> None:
    results = jobs.results(job)
    assert results and {r["state"] for r in results.values()} == {"done"}
    assert sum(r["partitions_scored"] + r["partitions_skipped"] for r in results.values()) == 1024
    assert sum(r["partitions_skipped"] for r in results.values()) > 0  # recorded before the kill: not rescored
    assert final["attempt"] > 1
    assert job_processes(job) == []


def test_bad_input_is_refused_before_a_job_exists(cluster: LocalCluster, cache_name: str, tmp_path: Path) -> None:
    host, port = cluster.address(0)
    with JobClient(IgniteClient(f"{host}:{port}"), owns_client=True) as jobs:
        tensorflow_ignite.write(cache_name, {"features": np.zeros((50, 3), np.float32)}, client=jobs.client)
        before = {r["id"] for r in jobs.jobs()}
        x = keras.Input(shape=(4,), name="features")
        path = tmp_path / "m.keras"
        keras.Model(x, keras.layers.Dense(2, name="scores")(x)).save(path)
        out = cache_name + "_out"
        with pytest.raises(ModelInputError, match="float32\\[3\\]"):
            submit_predict(jobs, str(path), cache_name, out)
        with pytest.raises(ModelLoadError):
            submit_predict(jobs, str(tmp_path / "missing.keras"), cache_name, out)
        with pytest.raises(ConfigurationError, match="SQL query"):
            submit_predict(jobs, str(path), f"SELECT _KEY, features FROM {cache_name}", out)
        # Launcher options without --on-cluster are refused, not ignored.
        assert cli(["predict", str(path), cache_name, "--out", out, "--name", "x", "--host", host,
                    "--port", str(port)]) == 1
        replicated = cache_name + "_all"
        jobs.client.get_or_create_cache(CacheConfiguration(replicated, cache_mode=CacheMode.REPLICATED))
        with pytest.raises(ConfigurationError, match="replicated"):
            submit_predict(jobs, str(path), replicated, out)
        assert out not in jobs.client.cache_names()
        assert {r["id"] for r in jobs.jobs()} == before


def test_parts_scores_only_those_partitions(cluster: LocalCluster, cache_name: str) -> None:
    """predict(parts=...), what each worker runs: only the rows of those partitions, nothing else written."""
    host, port = cluster.address(0)
    with IgniteClient(f"{host}:{port}") as client:
        features = np.random.default_rng(1).normal(size=(3000, 4)).astype(np.float32)
        tensorflow_ignite.write(cache_name, {"features": features}, client=client)
        x = keras.Input(shape=(4,), name="features")
        model = keras.Model(x, keras.layers.Dense(2, name="scores")(x))
        chosen = list(range(0, 1024, 3))
        out = cache_name + "_some"
        with pytest.raises(ConfigurationError, match="1024"):
            tensorflow_ignite.predict(model, cache_name, out, client=client, parts=[1024], progress=False)
        assert out not in client.cache_names()
        result = tensorflow_ignite.predict(model, cache_name, out, client=client, parts=chosen, progress=False)
        keys = np.arange(3000, dtype=np.int64)
        in_chosen = np.isin(affinity_partitions(long_hash_codes(keys), 1024), chosen)
        assert (result.units_scored, result.units_skipped) == (len(chosen), 0)
        assert sorted(k for k, _ in client.cache(out).scan(page_size=4096)) == keys[in_chosen].tolist()
        # The rest afterwards: the chosen partitions are recorded, so only the others are scored.
        rest = tensorflow_ignite.predict(model, cache_name, out, client=client, progress=False)
        assert (rest.rows, rest.units_skipped) == (int((~in_chosen).sum()), len(chosen))
        assert client.cache(out).size() == 3000


def test_worker_crash_restarts_and_scores_every_key_once(cluster: LocalCluster, model_file: Any,
                                                         cache_name: str, capsys: pytest.CaptureFixture[str]) -> None:
    model, path = model_file
    host, port = cluster.address(0)
    with _client(cluster) as client, JobClient(IgniteClient(f"{host}:{port}"), owns_client=True) as jobs:
        features = _load(client, cache_name)
        out = cache_name + "_scores"
        capsys.readouterr()
        assert cli(["predict", str(path), cache_name, "--out", out, "--on-cluster", "--backups", "1",
                    "--batch-size", "128", "--record-every", "1", "-d", "--host", host, "--port", str(port)]) == 0
        job = capsys.readouterr().out.strip()
        rec = jobs.job(job)
        assert rec["command"] == ["python", "-m", "tensorflow_ignite.scoring.worker", "predict.json"]
        assert rec["python"] == sys.executable  # the one program allowedCommands lists

        _wait_mid_job(jobs, job, client, out)
        worker = next(w for w in jobs.workers(job) if w.get("pid"))
        victims = children(int(worker["pid"]))  # the shim's child: the scoring process itself
        assert victims, "the worker had already exited: the job finished before the crash"
        recorded_at_crash = _recorded(client, out)
        assert recorded_at_crash < 1024
        for pid in victims:
            os.kill(pid, signal.SIGKILL)

        final = jobs.wait(job, timeout=300)
        history = "\n".join(e["message"] for e in final["events"])
        assert (final["state"], final["exit_code"]) == ("SUCCEEDED", 0), history
        first = final["failures"][0]
        assert (first["attempt"], first["kind"]) == (1, "worker_exit"), history
        assert "exited with code 137" in first["reason"], history  # SIGKILL
        _assert_restart_skipped(jobs, job, final)
        _assert_exactly_once(client, out, features, model)

        # describe shows each node's progress (the workers' reports); logs carries their lines.
        assert cli(["describe", job, "--host", host, "--port", str(port)]) == 0
        text = capsys.readouterr().out
        assert '"state": "done"' in text and '"partitions_skipped"' in text
        assert cli(["logs", job, "--host", host, "--port", str(port)]) == 0
        assert "scored " in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.long_only("test_worker_crash_restarts_and_scores_every_key_once (the job's restart and the ledger's "
                       "skips) and test_predict.py::test_node_killed_mid_run_ends_with_every_key_scored_once "
                       "(a node killed under the scoring client)")
def test_node_kill_restarts_on_survivors_and_scores_every_key_once(cluster: LocalCluster, model_file: Any,
                                                                   cache_name: str) -> None:
    model, path = model_file
    with _client(cluster) as client, JobClient(_client(cluster), owns_client=True) as jobs:
        features = _load(client, cache_name)
        out = cache_name + "_scores"
        rec = submit_predict(jobs, str(path), cache_name, out, backups=1, batch_size=128, record_every=1,
                             settle_ms=500, backoff_ms=200)
        job = rec["id"]
        _wait_mid_job(jobs, job, client, out)
        planned = {w["node"] for w in jobs.job(job)["workers"]}
        victim = next(m for m in cluster.members if m.index != 0 and m.name in planned and cluster.is_alive(m))
        cluster.kill_node(victim.index, signal.SIGKILL)

        final = jobs.wait(job, timeout=300)
        history = "\n".join(e["message"] for e in final["events"])
        assert (final["state"], final["exit_code"]) == ("SUCCEEDED", 0), history
        assert final["failures"][0]["kind"] in ("node_left", "worker_exit"), history
        assert victim.name not in {w["node"] for w in final["workers"]}  # replanned on the survivors
        _assert_restart_skipped(jobs, job, final)
        _assert_exactly_once(client, out, features, model)
