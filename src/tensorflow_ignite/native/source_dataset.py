"""``SourceDataset``: the ``tf.data.Dataset`` class of the datasets the features hand out.

``IgniteDataset``, ``IgniteDataset.follow``'s dataset and ``ignite3.from_table``'s dataset each
build a pipeline (on the native source op of :mod:`.data_source`, or ``from_generator``) and
return an object of their own class around it, for what the class adds (``stats``,
``partitions``...).  To tf.data such an object is that pipeline: its variant tensor and
element spec, and no inputs of its own (it is a source: tf.data's graph walks and the
tf.data service never look behind it).
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

__all__ = ["SourceDataset"]


class SourceDataset(tf.data.Dataset):
    """A dataset that is the pipeline ``dataset`` it was built around (kept as ``_dataset``)."""

    def __init__(self, dataset: tf.data.Dataset) -> None:
        self._dataset = dataset
        super().__init__(dataset._variant_tensor)

    def _inputs(self) -> list[tf.data.Dataset]:
        return []

    @property
    def element_spec(self) -> Any:
        return self._dataset.element_spec
