"""The main job: data into Ignite, a Keras model trained on it through IgniteDataset.

``ignite-tf demo`` (and ``make demo``) runs it end to end:

1. start a local Ignite node, unless ``--host`` points at a running cluster;
2. load scikit-learn's bundled handwritten digits (1,797 8x8 images; nothing is
   downloaded) into two caches, ``DIGITS_TRAIN`` and ``DIGITS_TEST``;
3. train a small Keras network reading the training cache with ``IgniteDataset``;
4. evaluate on the held-out cache and print the accuracy;
5. save a PNG of the training curves; stop the node it started.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .local.cluster import LocalCluster

__all__ = ["DemoResult", "run_demo", "register"]


@dataclass(frozen=True)
class DemoResult:
    """What the demo achieved."""

    train_rows: int
    test_rows: int
    epochs: int
    accuracy: float
    curves_png: Path
    seconds: float


def _load_digits(seed: int = 0) -> tuple[dict[str, Any], dict[str, Any]]:
    import numpy as np
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)  # [n, 8, 8] in [0, 1]
    labels = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(labels))
    cut = int(len(order) * 0.8)
    train, test = order[:cut], order[cut:]
    return ({"image": images[train], "label": labels[train]},
            {"image": images[test], "label": labels[test]})


def run_demo(
    host: str | None = None,
    port: int = 10800,
    *,
    epochs: int = 20,
    batch_size: int = 64,
    out_dir: str | os.PathLike[str] = ".",
    work_dir: str | os.PathLike[str] | None = None,
    progress: bool = True,
    client_settings: dict[str, Any] | None = None,
) -> DemoResult:
    """Run the demo; starts (and stops) a local node when ``host`` is None."""
    started = time.monotonic()
    cluster: LocalCluster | None = None
    tmp: tempfile.TemporaryDirectory[str] | None = None
    settings = dict(client_settings or {})
    try:
        if host is None:
            if work_dir is None:
                tmp = tempfile.TemporaryDirectory(prefix="tf-ignite-demo-")
                work_dir = tmp.name
            print("Starting a local Apache Ignite node ...", flush=True)
            cluster = LocalCluster(Path(work_dir), nodes=1, name="tf-ignite-demo").start()
            host, port = cluster.address()
            print(f"Ignite node ready at {host}:{port}", flush=True)
        return _train(host, port, epochs=epochs, batch_size=batch_size, out_dir=Path(out_dir),
                      progress=progress, settings=settings, started=started)
    finally:
        if cluster is not None:
            cluster.stop()
            print("Ignite node stopped", flush=True)
        if tmp is not None:
            tmp.cleanup()


def _train(host: str, port: int, *, epochs: int, batch_size: int, out_dir: Path, progress: bool,
           settings: dict[str, Any], started: float) -> DemoResult:
    import tensorflow as tf

    import tensorflow_ignite as ti

    train, test = _load_digits()
    for name, data in (("DIGITS_TRAIN", train), ("DIGITS_TEST", test)):
        result = ti.write(name, data, host=host, port=port, mode="overwrite", progress=progress, **settings)
        print(f"loaded {result.rows} rows into cache {name}", flush=True)

    def as_xy(batch: dict[str, Any]) -> tuple[tf.Tensor, tf.Tensor]:
        return batch["val"]["image"][..., tf.newaxis], batch["val"]["label"]

    def dataset(name: str) -> tf.data.Dataset:
        ds = ti.IgniteDataset(name, host, port, batch_size=batch_size,
                              username=settings.get("username"), password=settings.get("password"),
                              cafile=settings.get("cafile"), certfile=settings.get("certfile"),
                              keyfile=settings.get("keyfile"), cert_password=settings.get("cert_password"))
        return ds.map(as_xy).prefetch(tf.data.AUTOTUNE)

    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential([
        tf.keras.layers.Input((8, 8, 1)),
        tf.keras.layers.Conv2D(16, 3, activation="relu", padding="same"),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10, activation="softmax"),
    ])
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-2), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    train_ds = dataset("DIGITS_TRAIN").shuffle(32).cache()
    history = model.fit(train_ds, validation_data=dataset("DIGITS_TEST"), epochs=epochs,
                        verbose=1 if progress else 2)
    _, accuracy = model.evaluate(dataset("DIGITS_TEST"), verbose=0)
    out_dir.mkdir(parents=True, exist_ok=True)
    png = out_dir / "training_curves.png"
    _plot(history.history, png)
    seconds = time.monotonic() - started
    print(f"\nHeld-out accuracy: {accuracy:.3f} ({len(test['label'])} digits never seen in training)")
    print(f"Training curves: {png}")
    return DemoResult(len(train["label"]), len(test["label"]), epochs, float(accuracy), png, seconds)


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
    p.add_argument("--host", default=None,
                   help="use a running cluster at HOST instead of starting a local node")
    p.add_argument("--port", type=int, default=10800, help="thin-client port of --host (default 10800)")
    p.add_argument("--epochs", type=int, default=20, help="training epochs (default 20)")
    p.add_argument("--out-dir", default=".", help="where to save training_curves.png (default .)")
    p.add_argument("--username", default=None, help="user for clusters with authentication "
                   "(password from IGNITE_PASSWORD)")
    p.add_argument("--cafile", default=None, help="CA certificate of a TLS cluster")
    p.add_argument("--certfile", default=None, help="client certificate for TLS")
    p.add_argument("--keyfile", default=None, help="client key for TLS (password from IGNITE_CERT_PASSWORD)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(handler=_cli)


def _cli(args: argparse.Namespace) -> int:
    settings: dict[str, Any] = {}
    if args.username:
        settings.update(username=args.username, password=os.environ.get("IGNITE_PASSWORD", ""))
    for key in ("cafile", "certfile", "keyfile"):
        if getattr(args, key):
            settings[key] = getattr(args, key)
    if args.keyfile and os.environ.get("IGNITE_CERT_PASSWORD"):
        settings["cert_password"] = os.environ["IGNITE_CERT_PASSWORD"]
    result = run_demo(args.host, args.port, epochs=args.epochs, out_dir=args.out_dir,
                      progress=not args.no_progress, client_settings=settings)
    print(f"Done in {result.seconds:.0f}s.")
    return 0
