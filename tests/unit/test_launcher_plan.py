"""Task planning of the launcher (Java ``TaskLayout``, run through its ``main``) and the
equal-steps input helper for both training styles (custom loop and Keras ``fit``)."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from tensorflow_ignite.local.java import java_module_dir, java_runtime, launcher_classpath


def plan(nodes: int, strategy: str, num_ps: int = 0) -> list[dict]:
    proc = subprocess.run(
        [java_runtime().executable, "-cp", launcher_classpath(), "org.tensorflow.ignite.launcher.TaskLayout",
         str(nodes), strategy, str(num_ps)],
        capture_output=True, text=True, check=False, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_mirrored_plan_is_one_worker_per_data_node() -> None:
    tasks = plan(3, "multi_worker_mirrored")
    assert [(t["type"], t["index"], t["node"], t["reads"]) for t in tasks] == [
        ("worker", 0, 0, True), ("worker", 1, 1, True), ("worker", 2, 2, True)]
    for i, t in enumerate(tasks):
        assert t["tf_config"] == {"cluster": {"worker": ["host-0:20000", "host-1:20001", "host-2:20002"]},
                                  "task": {"type": "worker", "index": i}}


@pytest.mark.parametrize(("nodes", "num_ps", "ps_nodes"), [(3, 1, [1]), (3, 2, [1, 2]), (2, 3, [1, 0, 1]), (1, 2, [0, 0])])
def test_parameter_server_plan(nodes: int, num_ps: int, ps_nodes: list[int]) -> None:
    tasks = plan(nodes, "ps", num_ps)
    assert [t["type"] for t in tasks] == ["chief"] + ["ps"] * num_ps + ["worker"] * nodes
    assert tasks[0]["node"] == 0 and not tasks[0]["reads"]
    assert [t["node"] for t in tasks if t["type"] == "ps"] == ps_nodes
    assert [t["node"] for t in tasks if t["type"] == "worker"] == list(range(nodes))
    assert [t["reads"] for t in tasks] == [t["type"] == "worker" for t in tasks]
    cluster = tasks[0]["tf_config"]["cluster"]
    assert {k: len(v) for k, v in cluster.items()} == {"chief": 1, "ps": num_ps, "worker": nodes}
    assert len({a for v in cluster.values() for a in v}) == len(tasks)
    for t in tasks:
        assert t["tf_config"]["cluster"] == cluster
        assert t["tf_config"]["task"] == {"type": t["type"], "index": t["index"]}
        # every task's own address is listed under its role, on its node
        assert cluster[t["type"]][t["index"]].startswith(f"host-{t['node']}:")


def test_unknown_plans_are_refused() -> None:
    for args in (["3", "horovod"], ["3", "ps", "0"], ["0", "mwms"]):
        proc = subprocess.run(
            [java_runtime().executable, "-cp", launcher_classpath(), "org.tensorflow.ignite.launcher.TaskLayout",
             *args], capture_output=True, text=True, check=False, timeout=60)
        assert proc.returncode != 0 and "IllegalArgumentException" in proc.stderr, args
    assert (java_module_dir() / "pom.xml").exists()


def test_equal_steps_pads_unequal_shares_to_one_step_count() -> None:
    import tensorflow as tf
    from tensorflow_ignite.launcher.worker import equal_steps

    shares = {"a": 70, "b": 45}  # two workers' row counts
    steps = max(-(-n // 32) for n in shares.values())
    for n in shares.values():
        xs = tf.data.Dataset.from_tensor_slices((np.arange(n, dtype=np.float32).reshape(n, 1), np.arange(n)))
        # custom-loop form: ((x, y), w)
        batches = list(equal_steps(xs, batch_size=32, local_rows=n, steps=steps,
                                   pad=(tf.zeros([1]), tf.constant(0, tf.int64))))
        assert len(batches) == steps == 3
        assert all(int(w.shape[0]) == 32 for (_, _), w in batches)
        w = np.concatenate([b[1].numpy() for b in batches])
        assert w.sum() == n and (w[:n] == 1).all() and (w[n:] == 0).all()
        ys = np.concatenate([b[0][1].numpy() for b in batches])[:n]
        assert sorted(ys.tolist()) == list(range(n))  # every row exactly once
        # Keras fit form: (x, y, w)
        fit = list(equal_steps(xs, batch_size=32, local_rows=n, steps=steps,
                               pad=(tf.zeros([1]), tf.constant(0, tf.int64)), sample_weight=True))
        assert len(fit) == steps and all(len(b) == 3 for b in fit)
        assert sum(float(tf.reduce_sum(b[2])) for b in fit) == n
    with pytest.raises(ValueError, match="cannot hold"):
        equal_steps(xs, batch_size=32, local_rows=n, steps=1, pad=(tf.zeros([1]), tf.constant(0, tf.int64)))
    single = tf.data.Dataset.from_tensor_slices(np.zeros((4, 2), np.float32))
    with pytest.raises(ValueError, match=r"needs \(x, y\) examples"):
        equal_steps(single, batch_size=2, local_rows=4, steps=2, pad=tf.zeros([2]), sample_weight=True)
