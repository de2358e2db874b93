"""The main job (``ignite-tf demo``) end to end, with small settings.

* on an existing node: accuracy, the PNG, a checkpoint that restores into a
  fresh model with the same held-out accuracy, event files readable through
  ``ignite://``;
* on a TLS + client-certificate + password node: the same settings reach the
  writer, the dataset and the filesystem;
* as the command with its own persistent node: the node is stopped, and the
  commands the demo prints bring the logs back into ``ignite-tf tensorboard``;
* ``--distributed``: a 3-node cluster, the training through ``ignite-tf start``.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.demo import SCORES_CACHE, TEST_CACHE, build_model, demo_dataset, run_demo
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.native.quiet import is_chatter

BIN = Path(sys.executable).parent
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _scalars(tf: Any, logdir: str) -> dict[str, list[tuple[int, float]]]:
    """tag -> [(step, value)] from the event files under ``logdir`` (read through tf.io.gfile)."""
    out: dict[str, list[tuple[int, float]]] = {}
    for name in sorted(tf.io.gfile.glob(f"{logdir}/events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(name):
            for value in event.summary.value:
                out.setdefault(value.tag, []).append((event.step, float(tf.make_ndarray(value.tensor))))
    return out


def _run_name() -> str:
    return f"test-{uuid.uuid4().hex[:8]}"


def test_demo_on_existing_node(ignite_node: LocalCluster, tmp_path: Path) -> None:
    import tensorflow as tf

    host, port = ignite_node.address()
    result = run_demo(host, port, epochs=6, out_dir=tmp_path, progress=False, run_name=_run_name())
    assert result.train_rows + result.test_rows == 1797
    assert result.accuracy >= 0.9, result
    data = result.curves_png.read_bytes() if result.curves_png else b""
    assert data[:8] == PNG_MAGIC and len(data) > 10_000
    assert result.node_work_dir is None and not result.node_running
    assert result.checkpoint_dir.startswith(f"ignite://{host}:{port}/demo/test-")

    # The last checkpoint restores into a fresh model that scores exactly as the trained one.
    latest = tf.train.latest_checkpoint(result.checkpoint_dir)
    assert latest == f"{result.checkpoint_dir}/ckpt-6"
    model = build_model()
    epoch = tf.Variable(0, dtype=tf.int64)
    tf.train.Checkpoint(model=model, epoch=epoch).restore(latest).expect_partial()
    assert int(epoch.numpy()) == 6
    model.compile(loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    _, restored = model.evaluate(demo_dataset(TEST_CACHE, host, port), verbose=0)
    assert restored == pytest.approx(result.accuracy, abs=1e-6)

    # TensorBoard's event files, parsed from ignite://: one point per epoch.
    assert result.log_dir and result.tensorboard_command == f"ignite-tf tensorboard --logdir {result.log_dir}"
    train = _scalars(tf, f"{result.log_dir}/train")
    validation = _scalars(tf, f"{result.log_dir}/validation")
    assert [step for step, _ in train["epoch_loss"]] == list(range(6))
    assert train["epoch_loss"][-1][1] < train["epoch_loss"][0][1]
    assert validation["epoch_accuracy"][-1][1] == pytest.approx(result.accuracy, abs=1e-6)

    # Scored in place: one stored prediction per held-out digit, the same accuracy read back from them.
    assert result.scored_accuracy == pytest.approx(result.accuracy, abs=1e-6)
    assert result.model_uri == result.checkpoint_dir.rsplit("/", 1)[0] + "/model.keras"
    with IgniteClient(ignite_node.addresses()) as client:
        assert client.cache(SCORES_CACHE).size() == result.test_rows


def test_demo_with_tls_client_certificates_and_password(ignite_secure_node: LocalCluster, tmp_path: Path) -> None:
    import tensorflow as tf

    from tensorflow_ignite.fs import config as fs_config

    host, port = ignite_secure_node.address()
    before = fs_config.overrides()
    result = run_demo(host, port, epochs=2, out_dir=tmp_path, progress=False, run_name=_run_name(),
                      client_settings=ignite_secure_node.client_settings())
    assert result.accuracy >= 0.8, result
    assert result.scored_accuracy == pytest.approx(result.accuracy, abs=1e-6)
    assert fs_config.overrides() == before, "the demo gives the caller's ignite:// settings back"
    from tensorflow_ignite import fs

    fs.configure(**ignite_secure_node.client_settings())
    try:
        assert tf.train.latest_checkpoint(result.checkpoint_dir).endswith("/ckpt-2")
        assert tf.io.gfile.glob(f"{result.log_dir}/train/events.out.tfevents.*")
    finally:
        fs.configure(**{k: before.get(k) for k in ignite_secure_node.client_settings()})
        fs.close_stores()


def test_demo_refuses_contradictory_options_before_starting_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tensorflow_ignite.cli.main import main as cli
    from tensorflow_ignite.errors import ConfigurationError

    monkeypatch.setenv("IGNITE_TF_HOME", str(tmp_path))
    assert cli(["demo", "--username", "ignite"]) == 1  # credentials are for --host clusters
    assert "--username: for an existing cluster; add --host" in capsys.readouterr().err
    with pytest.raises(ConfigurationError, match="plain clusters only"):
        run_demo("127.0.0.1", 1, distributed=True, client_settings={"cafile": "ca.pem"})
    assert not (tmp_path / "demo").exists() and not (tmp_path / "demo-distributed").exists()


# ------------------------------------------------------------ the command itself
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _command(line: str) -> list[str]:
    """A command the demo printed (``ignite-tf ...``), runnable with this environment's script."""
    argv = shlex.split(line.strip())
    assert argv[0] == "ignite-tf", line
    return [str(BIN / "ignite-tf"), *argv[1:]]


def _tensorboard_tags(argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run the printed `ignite-tf tensorboard` command; return the scalar tags once both runs show."""
    port = _free_port()
    proc = subprocess.Popen([*argv, "--http-port", str(port), "--", "--reload_interval", "1"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()
    url = f"http://127.0.0.1:{port}/"
    tags: Any = {}
    try:
        deadline = time.monotonic() + 180
        delay = 0.2
        while time.monotonic() < deadline:
            assert proc.poll() is None, f"ignite-tf tensorboard exited: {proc.stderr.read()[-3000:]}"
            if any(url in line for line in lines):
                try:
                    with urllib.request.urlopen(f"{url}data/plugin/scalars/tags", timeout=5) as resp:
                        tags = json.loads(resp.read())
                    if {"train", "validation"} <= set(tags):
                        return tags
                except (urllib.error.URLError, ConnectionError, OSError):
                    pass
            time.sleep(delay)  # polling readiness, bounded by the deadline
            delay = min(delay * 1.5, 1.0)
        raise AssertionError(f"TensorBoard never listed the demo's runs: {tags}, output {lines}")
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(timeout=10)


def _demo_jvms(marker: Path) -> list[str]:
    found = []
    for p in Path("/proc").iterdir():
        try:
            cmd = (p / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if "NodeLauncher" in cmd and str(marker) in cmd:
            found.append(p.name)
    return found


def test_demo_command_stops_its_node_and_the_printed_commands_bring_the_logs_back(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["IGNITE_TF_HOME"] = str(home)
    work = home / "demo"  # the default: demo/ next to `ignite-tf node`'s work directory
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    try:
        proc = subprocess.run(
            [str(BIN / "ignite-tf"), "demo", "--epochs", "2", "--no-progress", "--client-port", "0"],
            capture_output=True, text=True, timeout=900, env=env, cwd=cwd,
        )
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        out = proc.stdout
        assert "Held-out accuracy:" in out and "Ignite node(s) stopped" in out
        assert list(cwd.iterdir()) == [], "the demo leaves nothing in the current directory"
        [png] = (home / "demo-output").glob("run-*/training_curves.png")
        assert png.read_bytes()[:8] == PNG_MAGIC and f"Training curves:   {png}" in out
        # TensorFlow's native start-up lines are kept out of the command's output.
        assert not [line for line in proc.stderr.splitlines() if is_chatter(line)], proc.stderr[-3000:]
        assert _demo_jvms(work) == [], "the demo stopped the node it started"
        commands = [line.strip() for line in out.splitlines() if line.strip().startswith("ignite-tf ")]
        start, tensorboard, stop = commands[-3:]
        assert start.startswith(f"ignite-tf node start --persistence --work-dir {work}")
        assert tensorboard.startswith("ignite-tf tensorboard --logdir ignite://127.0.0.1:")
        assert stop == f"ignite-tf node stop --work-dir {work}"

        # What the demo tells the user to do: start the node again, open TensorBoard.
        started = subprocess.run(_command(start), capture_output=True, text=True, timeout=300, env=env)
        assert started.returncode == 0, started.stdout + started.stderr
        tags = _tensorboard_tags(_command(tensorboard), env)
        assert "epoch_loss" in tags["train"] and "epoch_accuracy" in tags["validation"]
        stopped = subprocess.run(_command(stop), capture_output=True, text=True, timeout=120, env=env)
        assert stopped.returncode == 0 and "stopped 1 node(s)" in stopped.stdout, stopped.stdout + stopped.stderr
        assert _demo_jvms(work) == []
    finally:
        cluster = LocalCluster.load_state(work)
        if cluster is not None:
            cluster.stop()


@pytest.mark.slow
@pytest.mark.long_only("test_wheel.py: the installed wheel's `ignite-tf demo --distributed`")
def test_demo_distributed_trains_through_the_launcher(tmp_path: Path) -> None:
    import tensorflow as tf

    from tensorflow_ignite import fs

    work = tmp_path / "nodes"
    cluster = None
    try:
        result = run_demo(epochs=2, work_dir=work, node_port=None, keep_node=True, distributed=True,
                          progress=False, run_name=_run_name())
        cluster = LocalCluster.load_state(work)
        assert cluster is not None and cluster.nodes == 3 and result.node_running
        assert result.job_id and sorted(result.job_results) == [0, 1, 2]
        assert sum(r["rows"] for r in result.job_results.values()) == result.train_rows == 1437
        assert {r["eval_rows"] for r in result.job_results.values()} == {result.test_rows}
        assert result.accuracy > 0.7, result  # 10 classes: chance is 0.1
        # The chief's checkpoint of the last epoch and its summaries are in ignite://.
        assert tf.train.latest_checkpoint(result.checkpoint_dir) == f"{result.checkpoint_dir}/ckpt-2"
        scalars = _scalars(tf, str(result.log_dir))
        assert [step for step, _ in scalars["chief_local_loss"]] == [1, 2]
        assert scalars["held_out_accuracy"] == [(2, pytest.approx(result.accuracy))]
        assert result.tensorboard_command == f"ignite-tf tensorboard --logdir {result.log_dir}"
    finally:
        fs.close_stores()
        cluster = cluster or LocalCluster.load_state(work)
        if cluster is not None:
            cluster.stop()
    assert _demo_jvms(work) == []
