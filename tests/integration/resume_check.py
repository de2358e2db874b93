"""One check shared by the tests of data other clients wrote: a dataset checkpointed mid-epoch and
restored into the same dataset built again yields the rest of the epoch, each key exactly once."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any


def assert_resumes_the_rest_once(make: Callable[[], Any], ckpt_dir: Path, keys: Iterable[Any]) -> None:
    """Three batches of ``make()``'s dataset, a checkpoint, then the rest from a fresh ``make()``:
    together exactly ``keys``."""
    import tensorflow as tf

    it = iter(make())
    first = [int(k) for _ in range(3) for k in next(it)["key"].numpy()]
    path = tf.train.Checkpoint(iterator=it).write(str(ckpt_dir / "ckpt"))
    resumed = iter(make())
    tf.train.Checkpoint(iterator=resumed).read(path).assert_consumed()
    rest = [int(k) for b in resumed for k in b["key"].numpy()]
    assert sorted(first + rest) == sorted(keys)
