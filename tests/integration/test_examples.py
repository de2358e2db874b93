"""Every example in examples/ runs against real nodes and does what it says."""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tensorflow as tf

from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.testing.waiting import wait_for

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))

import continual_digits  # noqa: E402
import gradients_per_partition  # noqa: E402
import kittens_sql  # noqa: E402
import mnist_picture  # noqa: E402
import structured_images  # noqa: E402


def test_kittens_sql(ignite_sql_node: LocalCluster) -> None:
    host, port = ignite_sql_node.address()
    elements = kittens_sql.main(host, port)
    assert elements == [
        {"key": 1, "val": {"NAME": b"WARM KITTY"}},
        {"key": 2, "val": {"NAME": b"SOFT KITTY"}},
        {"key": 3, "val": {"NAME": b"LITTLE BALL OF FUR"}},
    ]


def test_structured_images(ignite_node: LocalCluster, cache_name: str) -> None:
    host, port = ignite_node.address()
    out = structured_images.main(host, port, cache_name=cache_name)
    meta = out["first"]["val"]["metadata"]
    assert set(meta) == {"file_name", "label", "width", "height"}
    assert (meta["width"], meta["height"]) == (16, 12)
    assert sorted(out["restored"]) == ["fish.png", "kitten.png", "puppy.png"]


def test_mnist_picture(ignite_node: LocalCluster, cache_name: str, tmp_path: Path) -> None:
    host, port = ignite_node.address()
    png = mnist_picture.main(host, port, out=str(tmp_path / "mnist.png"), cache_name=cache_name)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (400, 192)


@pytest.mark.parametrize("fixture", ["ignite_node", "ignite_cluster"])
def test_gradients_per_partition(fixture: str, request: pytest.FixtureRequest, cache_name: str) -> None:
    cluster: LocalCluster = request.getfixturevalue(fixture)
    host, port = cluster.address()
    out = gradients_per_partition.main(host, port, cache_name=cache_name)
    np.testing.assert_allclose(out["summed"], out["whole"], rtol=1e-4)
    assert np.abs(out["whole"]).sum() > 0
    assert int(out["parts"]) >= 4 * (3 if fixture == "ignite_cluster" else 1)


def _json_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.startswith("{")] if path.exists() else []


def _start_trainer(host: str, port: int, cache: str, root: str, out: Path, *extra: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, str(EXAMPLES / "continual_digits.py"), "--host", host, "--port", str(port),
               "--cache", cache, "train", "--root", root, "--save-every", "3", "--batch-size", "64", "--log-steps",
               *extra]
    with out.open("wb") as stdout:
        return subprocess.Popen(command, env=env, stdout=stdout, stderr=subprocess.STDOUT)


def _wait_lines(proc: subprocess.Popen[bytes], out: Path, predicate: Callable[[list[dict[str, Any]]], bool],
                what: str, timeout: float = 180) -> None:
    def ready() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"the trainer exited ({proc.returncode}) before {what}: {out.read_text()[-3000:]}")
        return predicate(_json_lines(out))

    wait_for(ready, timeout, what)


def _seqs(lines: list[dict[str, Any]]) -> set[int]:
    return {s for line in lines for s in line.get("seq", [])}


def test_continual_digits_resumes_from_its_checkpoint(ignite_node: LocalCluster, cache_name: str,
                                                      tmp_path: Path) -> None:
    host, port = ignite_node.address()
    root = f"/continual-{cache_name}"
    nxt = continual_digits.write_digits(host, port, 0, 600, cache=cache_name, drift_rows=1200)
    first_out = tmp_path / "first.jsonl"
    first = _start_trainer(host, port, cache_name, root, first_out)
    try:
        # Idle once it has trained on every row: no checkpoint is being written when it is killed.
        _wait_lines(first, first_out, lambda lines: _seqs(lines) >= set(range(600)), "the first 600 rows trained")
        first.send_signal(signal.SIGKILL)
        first.wait(30)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait(30)
    first_lines = _json_lines(first_out)
    saved = [line["step"] for line in first_lines if line.get("saved")]
    assert saved, f"the first run saved no checkpoint: {first_lines[-3:]}"
    assert tf.train.latest_checkpoint(f"ignite://{host}:{port}{root}/ckpt").endswith(f"ckpt-{saved[-1]}")

    nxt = continual_digits.write_digits(host, port, nxt, 300, cache=cache_name, drift_rows=1200)  # while down
    second_out = tmp_path / "second.jsonl"
    second = _start_trainer(host, port, cache_name, root, second_out, "--stream-timeout", "10")
    try:
        _wait_lines(second, second_out, lambda lines: any("seq" in line for line in lines), "a step after restore")
        continual_digits.write_digits(host, port, nxt, 300, cache=cache_name, drift_rows=1200)  # while it trains
        assert second.wait(240) == 0, second_out.read_text()[-3000:]
    finally:
        if second.poll() is None:
            second.kill()
            second.wait(30)
    lines = _json_lines(second_out)
    assert lines[0] == {"restored_step": saved[-1]}
    steps = [line["step"] for line in lines if "seq" in line]
    assert steps == list(range(saved[-1] + 1, saved[-1] + 1 + len(steps))), "steps go on from the checkpoint"
    missing = set(range(600, 1200)) - _seqs(lines)
    assert not missing, f"rows written after the kill never trained on: {sorted(missing)[:10]}"
    trained = sum(len(line["seq"]) for line in lines if "seq" in line)
    assert lines[-1] == {"restored_step": saved[-1], "step": steps[-1], "rows": trained} and steps[-1] > saved[-1]
    events = tf.io.gfile.glob(f"ignite://{host}:{port}{root}/logs/events.out.tfevents.*")
    assert len(events) == 2, events  # one file per run
    tags = {v.tag for e in events for record in tf.compat.v1.train.summary_iterator(e) for v in record.summary.value}
    assert "accuracy/newest" in tags
