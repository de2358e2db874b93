"""The seed's MNIST example: a cache of 28x28 digits read and shown as a picture.

The digits are scikit-learn's bundled 8x8 set (no download), scaled to MNIST's
28x28 shape and written with ``tensorflow_ignite.write``; five of them are read
back through ``IgniteDataset`` and drawn into a PNG.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import tensorflow_ignite
from tensorflow_ignite import IgniteDataset


def mnist_shaped_digits(limit: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's digits as uint8 [n, 28, 28] images (nearest-neighbour upscale) and labels."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = digits.images[:limit] if limit else digits.images
    idx = np.minimum((np.arange(28) * 8) // 28, 7)
    big = images[:, idx][:, :, idx]
    return (big * (255.0 / 16.0)).round().astype(np.uint8), digits.target[: len(images)].astype(np.int64)


def main(host: str = "localhost", port: int = 10800, out: str = "mnist.png",
         cache_name: str = "MNIST_CACHE") -> Path:
    images, labels = mnist_shaped_digits(200)
    tensorflow_ignite.write(cache_name, {"label": labels, "pixels": images}, host=host, port=port,
                            mode="overwrite", progress=False)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dataset = IgniteDataset(cache_name, host, port)
    fig = plt.figure(figsize=(5, 2.4))
    for i, img in enumerate(dataset.take(5)):
        ax = fig.add_subplot(1, 5, i + 1)
        ax.imshow(img["val"]["pixels"].numpy().reshape([28, 28]), cmap="gray")
        ax.set_title(str(int(img["val"]["label"])))
        ax.axis("off")
    path = Path(out)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    print(f"saved {path}")
    return path


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="localhost")
    parser.add_argument("--port", type=int, default=10800)
    parser.add_argument("--out", default="mnist.png")
    a = parser.parse_args()
    main(a.host, a.port, a.out)
