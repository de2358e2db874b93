"""The main job: data into Ignite, a Keras model trained on it through IgniteDataset.

``ignite-tf demo`` (and ``make demo``) runs it end to end:

1. start a local Ignite node with native persistence (data, checkpoints and
   logs survive it), unless ``--host`` points at a running cluster;
2. load scikit-learn's bundled handwritten digits (1,797 8x8 images; nothing is
   downloaded) into two caches, ``DIGITS_TRAIN`` and ``DIGITS_TEST``;
3. train a small Keras network reading the training cache with ``IgniteDataset``,
   writing a checkpoint after every epoch and TensorBoard logs to
   ``ignite://HOST:PORT/demo/run-<time>/``;
4. evaluate on the held-out cache and print the accuracy;
5. score the held-out cache in place (``tensorflow_ignite.predict``: the model saved to
   ``ignite://``, one prediction per digit written to ``DIGITS_TEST_SCORES``) and read
   the accuracy back from the stored predictions;
6. save a PNG of the training curves, print how to open TensorBoard on the
   logs, and stop the node it started (``--keep-node`` leaves it running).

``--distributed`` starts a local 3-node cluster instead (or uses ``--host``)
and runs the training through the launcher -- ``ignite-tf start``, one
MultiWorkerMirroredStrategy worker per node reading that node's partitions --
with checkpoints and the chief's TensorBoard scalars in the same ``ignite://``
run directory, then prints the job's result and the held-out accuracy.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .cli import validate
from .cli.credentials import add_connection_arguments
from .cli.grammar import add_deprecated_alias, add_listen_port_argument, add_progress_argument
from .errors import ConfigurationError, DemoError, NodeError
from .local.cluster import LocalCluster, _port_free
from .local.state import state_dir
from .protocol.endpoint import DEFAULT_PORT

if TYPE_CHECKING:
    import keras
    import tensorflow as tf

__all__ = [
    "DemoResult",
    "DemoError",
    "run_demo",
    "build_model",
    "demo_work_dir",
    "register",
    "TRAIN_CACHE",
    "TEST_CACHE",
    "SCORES_CACHE",
    "demo_dataset",
]

TRAIN_CACHE = "DIGITS_TRAIN"
TEST_CACHE = "DIGITS_TEST"
#: Where the demo's model writes its predictions of ``TEST_CACHE``, one per digit.
SCORES_CACHE = "DIGITS_TEST_SCORES"
#: The launcher job the distributed demo runs: package data, so an installed wheel has it
#: (the repository's ``examples/launcher_jobs/digits_resnet`` links to it).
DISTRIBUTED_JOB_DIR = Path(__file__).resolve().parent / "demo_jobs" / "digits_resnet"


@dataclass(frozen=True)
class DemoResult:
    """What the demo achieved and where it left its output.

    ``checkpoint_dir`` and ``log_dir`` are ``ignite://host:port/...`` URIs on
    the cluster the demo used; ``node_work_dir`` is set when the demo started
    its own nodes (their persistent data lives there).
    """

    train_rows: int
    test_rows: int
    epochs: int
    accuracy: float
    seconds: float
    checkpoint_dir: str
    log_dir: str | None
    curves_png: Path | None
    tensorboard_command: str | None
    node_work_dir: Path | None = None
    node_running: bool = False
    job_id: str | None = None
    job_results: dict[int, Any] = field(default_factory=dict)
    #: The held-out accuracy read back from the predictions stored in :data:`SCORES_CACHE`.
    scored_accuracy: float | None = None
    model_uri: str | None = None


def demo_work_dir(distributed: bool = False) -> Path:
    """Where the demo's own nodes keep their persistent data.

    ``$IGNITE_TF_HOME/demo`` (``demo-distributed``), else
    ``~/.local/state/tensorflow-ignite/demo``: next to ``ignite-tf node``'s
    default, so ``ignite-tf node start --work-dir`` on it brings the data back.
    """
    return state_dir() / ("demo-distributed" if distributed else "demo")


def demo_output_dir(run: str) -> Path:
    """Where a run's local output (the training-curve PNG) goes by default: ``demo-output/<run>``
    in the state directory, never the current directory."""
    return state_dir() / "demo-output" / run


def _require(module: str) -> None:
    """Fail early, with the fix, when one of the demo's extra dependencies is missing."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise ConfigurationError(
            f"the demo needs {module!r}, which is not installed: pip install 'tensorflow-ignite[demo]' "
            "(or run `make demo`, which installs it)"
        )


def _load_digits(seed: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    import numpy as np
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)  # [n, 8, 8] in [0, 1]
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    cut = int(len(order) * 0.8)
    train, test = order[:cut], order[cut:]
    return ({"image": images[train], "label": labels[train]}, {"image": images[test], "label": labels[test]})


def build_model() -> "keras.Model":
    """The demo's classifier: 8x8x1 digit images -> 10 class probabilities."""
    import keras

    # Named after the cache's field and what it predicts: `predict` binds the input to the
    # field `image` by name and stores the output as the field `digit`.
    return keras.Sequential(
        [
            keras.layers.Input((8, 8, 1), name="image"),
            keras.layers.Conv2D(16, 3, activation="relu", padding="same"),
            keras.layers.Flatten(),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(10, activation="softmax", name="digit"),
        ]
    )


def _shell(argv: Sequence[str]) -> str:
    return shlex.join(str(a) for a in argv)


def run_demo(
    host: str | None = None,
    port: int = DEFAULT_PORT,
    *,
    epochs: int = 20,
    batch_size: int = 64,
    out_dir: str | os.PathLike[str] | None = None,
    work_dir: str | os.PathLike[str] | None = None,
    node_port: int | None = DEFAULT_PORT,
    keep_node: bool = False,
    distributed: bool = False,
    progress: bool = True,
    client_settings: dict[str, Any] | None = None,
    run_name: str | None = None,
) -> DemoResult:
    """Run the demo on the cluster at ``host:port``, or on nodes it starts when ``host`` is None.

    Its own nodes (one; three with ``distributed``) use native persistence in
    ``work_dir`` (default :func:`demo_work_dir`) and client port ``node_port``
    when that is free (``None``: any free port); they are stopped at the end
    unless ``keep_node``.  ``client_settings`` (``username``, ``password``,
    ``cafile``, ``certfile``, ``keyfile``, ``cert_password``) reach an existing
    cluster, for the dataset and ``ignite://`` alike.  Output goes under
    ``ignite://host:port/demo/<run_name>/`` (default ``run-<UTC time>``).
    """
    started = time.monotonic()
    for module in ("sklearn", "matplotlib"):
        _require(module)
    settings = {k: v for k, v in (client_settings or {}).items() if v is not None}
    run = run_name or time.strftime("run-%Y%m%d-%H%M%S", time.gmtime())
    if distributed and settings:
        raise ConfigurationError(
            "ignite-tf demo --distributed runs on plain clusters only (it passes no TLS or credentials "
            "on to `ignite-tf start`); drop --username/--cafile/--certfile/--keyfile, or drop --host "
            "to train on a local 3-node cluster"
        )
    cluster: LocalCluster | None = None
    node_running = False
    try:  # (an interrupt -- Ctrl+C, SIGTERM, SIGHUP -- from here on stops the nodes started)
        if host is None:
            cluster = _start_own_nodes(
                Path(work_dir) if work_dir else demo_work_dir(distributed),
                nodes=3 if distributed else 1,
                node_port=node_port,
                keep=keep_node,
            )
            host, port = cluster.address()
            print(
                f"Ignite ready at {host}:{port}"
                + (f" (and {len(cluster.members) - 1} more nodes)" if len(cluster.members) > 1 else ""),
                flush=True,
            )
        if distributed:
            result = _train_distributed(host, port, epochs=epochs, run=run, progress=progress, started=started)
        else:
            result = _train(
                _LocalRun(
                    host,
                    port,
                    epochs=epochs,
                    batch_size=batch_size,
                    out_dir=Path(out_dir) if out_dir is not None else demo_output_dir(run),
                    progress=progress,
                    settings=settings,
                    run=run,
                    started=started,
                )
            )
        node_running = cluster is not None and keep_node
    finally:
        _close_filesystem()
        if cluster is not None and not node_running:
            cluster.stop()
            print(f"Ignite node(s) stopped; their data stays in {cluster.work_dir}", flush=True)
    result = dataclasses.replace(result, node_work_dir=cluster.work_dir if cluster else None, node_running=node_running)
    _print_summary(result, cluster, settings)
    return result


def _start_own_nodes(work_dir: Path, *, nodes: int, node_port: int | None, keep: bool) -> LocalCluster:
    previous = LocalCluster.load_state(work_dir)
    if previous is not None and any(m.alive() for m in previous.members):
        raise NodeError(
            f"the demo's node(s) from an earlier run (--keep-node?) still run in {work_dir}; stop them "
            f"with `ignite-tf node stop --work-dir {work_dir}`, or pass --host/--port to use them"
        )
    port = node_port if node_port and all(_port_free("127.0.0.1", node_port + i) for i in range(nodes)) else None
    print(f"Starting {nodes} local Apache Ignite node(s) with persistence in {work_dir} ...", flush=True)
    # The default node name: `ignite-tf node start --persistence --work-dir DIR` later
    # finds the same consistent ids, hence the same stored data.
    # Unless kept, the nodes also stop when the demo is killed before it can stop them.
    return LocalCluster(
        work_dir, nodes=nodes, client_port=port, persistence=True, owner_pid=None if keep else os.getpid()
    ).start()


def _close_filesystem() -> None:
    """Close the ignite:// stores of this process (before their nodes may stop)."""
    if "tensorflow_ignite.fs.config" in sys.modules:
        from .fs import close_stores

        close_stores()


def _load(host: str, port: int, settings: dict[str, Any], progress: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    import tensorflow_ignite as ti

    train, test = _load_digits()
    for name, data in ((TRAIN_CACHE, train), (TEST_CACHE, test)):
        result = ti.write(name, data, host=host, port=port, mode="overwrite", progress=progress, **settings)
        print(f"loaded {result.rows} rows into cache {name}", flush=True)
    return train, test


def demo_dataset(
    name: str, host: str, port: int, *, batch_size: int = 64, client_settings: dict[str, Any] | None = None
) -> "tf.data.Dataset":
    """``(image [b, 8, 8, 1], label [b])`` batches of a digits cache, read through IgniteDataset."""
    import tensorflow as tf

    import tensorflow_ignite as ti

    def as_xy(batch: dict[str, Any]) -> tuple[tf.Tensor, tf.Tensor]:
        return batch["val"]["image"][..., tf.newaxis], batch["val"]["label"]

    ds = ti.IgniteDataset(name, host, port, batch_size=batch_size, **(client_settings or {}))
    return ds.map(as_xy).prefetch(tf.data.AUTOTUNE)


@dataclass(frozen=True)
class _LocalRun:
    """One in-process training run of the demo: the cluster, the training settings and where output goes."""

    host: str
    port: int
    epochs: int
    batch_size: int
    out_dir: Path
    progress: bool
    settings: dict[str, Any]
    run: str
    started: float


def _train(r: _LocalRun) -> DemoResult:
    from . import fs
    from .fs import config as fs_config

    logging.getLogger("absl").setLevel(logging.WARNING)  # TF's per-epoch INFO lines drown the progress bar
    train, test = _load(r.host, r.port, r.settings, r.progress)
    # ignite:// paths name the cluster; TLS and credentials come from configure(),
    # which is process-wide: the caller's own settings come back afterwards.
    previous = fs_config.overrides()  # the configure() values in force now
    fs.configure(**r.settings)
    try:
        return _fit(r, train, test)
    finally:
        _close_filesystem()
        fs.configure(**{k: previous.get(k) for k in r.settings})


def _fit(r: _LocalRun, train: dict[str, Any], test: dict[str, Any]) -> DemoResult:
    import keras
    import tensorflow as tf

    host, port, epochs, batch_size, progress, settings = r.host, r.port, r.epochs, r.batch_size, r.progress, r.settings
    base = f"ignite://{host}:{port}/demo/{r.run}"
    ckpt_dir, log_dir = f"{base}/checkpoints", f"{base}/logs"

    keras.utils.set_random_seed(0)
    model = build_model()
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    epoch = tf.Variable(0, dtype=tf.int64, trainable=False)
    manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(model=model, optimizer=model.optimizer, epoch=epoch), ckpt_dir, max_to_keep=3
    )
    callbacks = [
        # write_graph=False: the graph of a 4-layer model says nothing, and writing it
        # costs a trace; scalars per epoch are what the curves need.
        keras.callbacks.TensorBoard(log_dir=log_dir, write_graph=False, profile_batch=0),
        _checkpoint_every_epoch(manager, epoch),
    ]

    def batches(name: str, rows: int) -> tf.data.Dataset:
        # A generator-fed dataset has no known length; stating it gives Keras a
        # progress bar with a total from the first epoch on.
        ds = demo_dataset(name, host, port, batch_size=batch_size, client_settings=settings)
        return ds.apply(tf.data.experimental.assert_cardinality(-(-rows // batch_size)))

    # Shuffle batches (rows arrive grouped by partition), then keep them in memory.
    train_ds = batches(TRAIN_CACHE, len(train["label"])).shuffle(32).cache()
    print(f"Training for {epochs} epochs; checkpoints -> {ckpt_dir}, TensorBoard logs -> {log_dir}", flush=True)
    history = model.fit(
        train_ds,
        epochs=epochs,
        callbacks=callbacks,
        verbose=1 if progress else 2,
        shuffle=False,
        validation_data=batches(TEST_CACHE, len(test["label"])),
    )
    _, accuracy = model.evaluate(batches(TEST_CACHE, len(test["label"])), verbose=0)
    model_uri = f"{base}/model.keras"
    model.save(model_uri)
    scored = _score_in_place(model_uri, host, port, settings, progress)
    r.out_dir.mkdir(parents=True, exist_ok=True)
    png = (r.out_dir / "training_curves.png").resolve()
    _plot(history.history, png)
    return DemoResult(
        train_rows=len(train["label"]),
        test_rows=len(test["label"]),
        epochs=epochs,
        accuracy=float(accuracy),
        seconds=time.monotonic() - r.started,
        checkpoint_dir=ckpt_dir,
        log_dir=log_dir,
        curves_png=png,
        tensorboard_command=_shell(["ignite-tf", "tensorboard", "--logdir", log_dir]),
        scored_accuracy=scored,
        model_uri=model_uri,
    )


def _score_in_place(model_uri: str, host: str, port: int, settings: dict[str, Any], progress: bool) -> float:
    """Score the held-out cache with the saved model, where it lives, and read the accuracy back.

    The predictions go to :data:`SCORES_CACHE` (one entry per digit, same keys as the
    held-out cache); the accuracy compares each stored prediction with the label stored
    under the same key -- what an application reading both caches would compute.
    """
    import numpy as np

    import tensorflow_ignite as ti

    from .client import ConnectionOptions

    result = ti.predict(
        model_uri, TEST_CACHE, SCORES_CACHE, host=host, port=port, mode="overwrite", progress=progress, **settings
    )
    print(result.summary(), flush=True)
    with ConnectionOptions(host=host, port=port, **settings).open() as client:
        labels = {k: int(v.fields["label"]) for k, v in client.cache(TEST_CACHE).scan()}
        predicted = {k: int(np.argmax(np.asarray(v.fields["digit"]))) for k, v in client.cache(SCORES_CACHE).scan()}
    if predicted.keys() != labels.keys():
        raise DemoError(
            f"the predictions in {SCORES_CACHE} cover {len(predicted)} keys, the held-out cache "
            f"{len(labels)}: every digit should have exactly one prediction"
        )
    return sum(predicted[k] == labels[k] for k in labels) / len(labels)


def _checkpoint_every_epoch(manager: "tf.train.CheckpointManager", epoch: "tf.Variable") -> "keras.callbacks.Callback":
    """A Keras callback saving model, optimizer and epoch counter after every epoch."""
    import keras

    class CheckpointEveryEpoch(keras.callbacks.Callback):
        def on_epoch_end(self, index: int, logs: dict[str, float] | None = None) -> None:
            epoch.assign(index + 1)
            manager.save(checkpoint_number=index + 1)

    return CheckpointEveryEpoch()


def _train_distributed(host: str, port: int, *, epochs: int, run: str, progress: bool, started: float) -> DemoResult:
    from .launcher.jobs import JobClient

    if not (DISTRIBUTED_JOB_DIR / "train.py").is_file():
        raise ConfigurationError(
            f"--distributed runs the launcher job {DISTRIBUTED_JOB_DIR / 'train.py'}, which is missing: "
            "this installation of tensorflow-ignite is incomplete; reinstall it "
            "(`pip install --force-reinstall tensorflow-ignite`)"
        )
    train, test = _load(host, port, {}, progress)
    base = f"ignite://{host}:{port}/demo/{run}"
    ckpt_dir, log_dir = f"{base}/checkpoints", f"{base}/logs"
    job_id = f"demo-{run}"
    command = [
        "ignite-tf",
        "start",
        "--host",
        host,
        "--port",
        str(port),
        TRAIN_CACHE,
        str(DISTRIBUTED_JOB_DIR),
        "--name",
        job_id,
        "--checkpoint-dir",
        ckpt_dir,
        "-e",
        f"TENSORBOARD_DIR={log_dir}",
        "-e",
        f"EPOCHS={epochs}",
        "-e",
        f"EVAL_CACHE={TEST_CACHE}",
        "-e",
        "TF_CPP_MIN_LOG_LEVEL=2",
        "--settle",
        "0.5",
        "--",
        "python",
        "train.py",
    ]
    print(f"Training across the cluster through the launcher:\n  {_shell(command)}", flush=True)
    # The very command a user would type, run by this interpreter (its ignite-tf).
    proc = subprocess.run([sys.executable, "-m", "tensorflow_ignite.cli.main", *command[1:]], check=False)
    with JobClient.connect(host, port) as jobs:
        record = jobs.job(job_id)
        results = jobs.results(job_id)
    print(
        f"job {job_id}: {record.get('state')} (exit code {record.get('exit_code')}), "
        f"{len(results)} worker(s), {record.get('restarts')} restart(s)",
        flush=True,
    )
    if proc.returncode != 0 or record.get("state") != "SUCCEEDED" or 0 not in results:
        raise DemoError(
            f"the distributed training job {job_id} ended {record.get('state')} "
            f"({record.get('message')}); see `ignite-tf describe {job_id}` and `ignite-tf logs {job_id}`"
        )
    for index in sorted(results):
        r = results[index]
        print(
            f"  worker {index} on {r.get('node')}: {r.get('rows')} rows in {len(r.get('partitions') or ())} "
            f"partitions, final local loss {float(r.get('final_loss') or 'nan'):.4f}",
            flush=True,
        )
    return DemoResult(
        train_rows=len(train["label"]),
        test_rows=len(test["label"]),
        epochs=epochs,
        accuracy=float(results[0]["accuracy"]),
        seconds=time.monotonic() - started,
        checkpoint_dir=ckpt_dir,
        log_dir=log_dir,
        curves_png=None,
        job_id=job_id,
        job_results=results,
        tensorboard_command=_shell(["ignite-tf", "tensorboard", "--logdir", log_dir]),
    )


def _print_summary(result: DemoResult, cluster: LocalCluster | None, settings: dict[str, Any]) -> None:
    lines = [
        "",
        f"Held-out accuracy: {result.accuracy:.3f} ({result.test_rows} digits never seen in training)",
    ]
    if result.scored_accuracy is not None:
        lines.append(
            f"Scored in place:   {TEST_CACHE} -> {SCORES_CACHE}, one prediction per digit; accuracy read "
            f"back from them {result.scored_accuracy:.3f} (model {result.model_uri})"
        )
    if result.job_id:
        lines.append(
            f"Distributed job:   {result.job_id} ({len(result.job_results)} workers; "
            f"`ignite-tf describe {result.job_id}` while the cluster runs)"
        )
    if result.curves_png:
        lines.append(f"Training curves:   {result.curves_png}")
    lines.append(f"Checkpoints:       {result.checkpoint_dir}")
    if result.log_dir:
        lines.append(f"TensorBoard logs:  {result.log_dir}")
    if cluster is not None:
        host, port = cluster.address()
        start = [
            "ignite-tf",
            "node",
            "start",
            "--persistence",
            "--work-dir",
            str(cluster.work_dir),
            "--client-port",
            str(port),
        ] + (["--nodes", str(cluster.nodes)] if cluster.nodes > 1 else [])
        stop = _shell(["ignite-tf", "node", "stop", "--work-dir", str(cluster.work_dir)])
        if result.node_running:
            lines += ["", f"The demo's node(s) keep running at {host}:{port} (--keep-node)."]
            if result.tensorboard_command:
                lines += ["Open TensorBoard on the logs:", f"  {result.tensorboard_command}"]
            lines += ["Stop the node(s) when done:", f"  {stop}"]
        else:
            lines += [
                "",
                f"The demo stopped its node(s); their persistent store in {cluster.work_dir}",
                "keeps the digits, the checkpoints and the logs. To look at them again:",
                f"  {_shell(start)}",
            ]
            if result.tensorboard_command:
                lines.append(f"  {result.tensorboard_command}")
            lines.append(f"  {stop}")
    elif result.tensorboard_command:
        lines += ["", "Open TensorBoard on the logs:", f"  {result.tensorboard_command}"]
        if settings:
            lines.append("  (set IGNITE_FS_USERNAME/_PASSWORD/_CAFILE/_CERTFILE/_KEYFILE for that cluster first)")
    lines.append(f"Done in {result.seconds:.0f}s.")
    print("\n".join(lines), flush=True)


def _plot(history: dict[str, list[float]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.5))
    ax1.plot(history["loss"], label="train")
    ax1.plot(history["val_loss"], label="held-out")
    ax1.set_title("loss")
    ax1.set_xlabel("epoch")
    ax1.legend()
    ax2.plot(history["accuracy"], label="train")
    ax2.plot(history["val_accuracy"], label="held-out")
    ax2.set_title("accuracy")
    ax2.set_xlabel("epoch")
    ax2.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


# ----------------------------------------------------------------------- CLI
def register(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add ``ignite-tf demo``."""
    p = sub.add_parser(
        "demo",
        help="the main job: load digits into Ignite and train a Keras model on them",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--distributed",
        action="store_true",
        help="train across a local 3-node cluster (or --host) through `ignite-tf start`",
    )
    p.add_argument("--epochs", type=int, default=None, help="training epochs (default 20; 4 with --distributed)")
    p.add_argument(
        "--out-dir",
        default=None,
        help="where to save training_curves.png (default: demo-output/RUN in the state directory, "
        "$IGNITE_TF_HOME or ~/.local/state/tensorflow-ignite)",
    )
    p.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="where the demo's own nodes keep their data (default: demo/ next to "
        "`ignite-tf node`'s default work directory)",
    )
    add_listen_port_argument(
        p,
        "--client-port",
        DEFAULT_PORT,
        f"thin-client port of the demo's own node when free (default {DEFAULT_PORT}; 0 = any free "
        "port); node i of --distributed uses PORT+i",
    )
    add_deprecated_alias(p, "--node-port", "--client-port", "client_port", type=validate.listen_port, metavar="PORT")
    p.add_argument(
        "--keep-node",
        action="store_true",
        help="leave the demo's own node(s) running at the end (prints the stop command)",
    )
    add_progress_argument(p)
    add_connection_arguments(p, without_host="start nodes of its own: one, three with --distributed")
    p.set_defaults(handler=_cli)


def _cli(args: argparse.Namespace) -> int:
    from .cli.credentials import client_settings

    given = [
        f"--{k.replace('_', '-')}"
        for k in ("username", "cafile", "certfile", "keyfile", "server_hostname")
        if getattr(args, k)
    ]
    if given and args.host is None:
        raise ConfigurationError(
            f"{', '.join(given)}: for an existing cluster; add --host (the demo's own nodes use no credentials or TLS)"
        )
    # The one credentials helper: the password from --password-env's variable ($IGNITE_PASSWORD) or a prompt.
    settings: dict[str, Any] = client_settings(args)
    host, port = args.host, args.port
    if host is not None:
        from .client.client import parse_addresses

        endpoints = parse_addresses(host, default_port=port)
        (host, port) = endpoints[0]
        if len(endpoints) > 1:
            print(f"ignite-tf: the demo uses the first node of --host, {host}:{port}", file=sys.stderr)
    progress = args.progress if args.progress is not None else sys.stderr.isatty()
    epochs = args.epochs if args.epochs is not None else (4 if args.distributed else 20)
    run_demo(
        host,
        port,
        epochs=epochs,
        out_dir=args.out_dir,
        work_dir=args.work_dir,
        node_port=args.client_port or None,
        keep_node=args.keep_node,
        distributed=args.distributed,
        progress=progress,
        client_settings=settings,
    )
    return 0
