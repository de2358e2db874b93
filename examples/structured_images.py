"""The seed's structured-objects example: IMAGES with nested ``metadata`` and ``pixels``.

Writes three small images as binary objects (nested ``ImageMetadata`` object +
``byte[]`` pixels) with the thin client, then reads them back with
``IgniteDataset`` and maps each element to its pixels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tensorflow_ignite import IgniteDataset
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.protocol.values import BinaryObject, Int32


def main(host: str = "localhost", port: int = 10800, cache_name: str = "IMAGES") -> dict[str, Any]:
    rng = np.random.default_rng(7)
    images = {
        name: (label, rng.integers(0, 256, size=(12, 16, 3), dtype=np.uint8))
        for name, label in [("kitten.png", "little ball of fur"), ("puppy.png", "good boy"), ("fish.png", "nemo")]
    }
    with IgniteClient(f"{host}:{port}") as client:
        cache = client.get_or_create_cache(cache_name)
        for name, (label, pixels) in images.items():
            cache.put(name, BinaryObject("Image", {
                "metadata": BinaryObject("ImageMetadata", {
                    "file_name": name, "label": label,
                    "width": Int32(pixels.shape[1]), "height": Int32(pixels.shape[0]),
                }),
                "pixels": pixels.reshape(-1),
            }))

    dataset = IgniteDataset(cache_name=cache_name, host=host, port=port)
    first = next(iter(dataset.take(1).as_numpy_iterator()))
    print({"key": first["key"], "val": {"metadata": first["val"]["metadata"],
                                        "pixels": first["val"]["pixels"][:4].tolist() + ["..."]}})

    # Preprocessing belongs in the tf.data pipeline: pixels back to images.
    pixels = dataset.map(lambda obj: (obj["key"], obj["val"]["pixels"], obj["val"]["metadata"]))
    restored = {}
    for key, flat, meta in pixels.as_numpy_iterator():
        restored[key.decode()] = flat.reshape(meta["height"], meta["width"], 3)
    for name, (_, original) in images.items():
        assert np.array_equal(restored[name], original), name
    return {"first": first, "restored": restored}


if __name__ == "__main__":
    from _common import parse_address

    args = parse_address(__doc__ or "")
    main(args.host, args.port)
