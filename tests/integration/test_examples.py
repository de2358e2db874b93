"""Every example in examples/ runs against real nodes and does what it says."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import numpy as np
import pytest

from tensorflow_ignite.local.cluster import LocalCluster

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

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
