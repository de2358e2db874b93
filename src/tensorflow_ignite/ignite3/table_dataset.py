"""``Ignite3TableDataset``: what ``ignite3.from_table`` returns -- a ``tf.data.Dataset`` with its read's stats."""

from __future__ import annotations

import tensorflow as tf

from ..native.source_dataset import SourceDataset
from .partitioned import TableReader, TableReadStats

__all__ = ["Ignite3TableDataset"]


class Ignite3TableDataset(SourceDataset):
    """A dataset over an Ignite 3 table (see :func:`~.dataset.from_table`); :meth:`stats` tells what its
    reads did."""

    def __init__(self, dataset: tf.data.Dataset, reader: TableReader) -> None:
        self._reader = reader
        super().__init__(dataset)

    @property
    def partitions(self) -> tuple[int, ...]:
        """The partitions this dataset reads."""
        return self._reader.partitions

    @property
    def table(self) -> str:
        """The table read."""
        return self._reader.table

    def stats(self) -> TableReadStats:
        """What the reads of this dataset have done in this process: rows, queries, failovers, rows skipped."""
        return self._reader.stats()
