"""``IgniteDataset.follow``: a ``tf.data`` source of a cache's rows, then of its updates as they happen.

The dataset is the follower of :mod:`.follow` behind the native source op
(:mod:`tensorflow_ignite.native.data_source`), so its iterators are saved
and restored with ``tf.train.Checkpoint(iterator=it)`` like a scan's.  Its
elements are micro-batches: up to ``batch_size`` rows, cut early when
``max_wait`` seconds passed since the first row waiting in it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import tensorflow as tf

from ..errors import ConfigurationError, UnsupportedOperationError
from ..native import data_source
from ..native.source_dataset import SourceDataset
from .dataset import _shard_options
from .follow import Follower, FollowOptions, FollowStats
from .follow_log import has_follow_log

__all__ = ["FollowDataset"]


class FollowDataset(SourceDataset):
    """What ``IgniteDataset.follow`` returns: see there.  ``stats`` tells what its runs did."""

    def __init__(self, base: Any, options: FollowOptions) -> None:
        # ``base`` is the IgniteDataset whose connection, schema, plan and scan reader are followed.
        plan = base.plan
        if any(t.local for t in plan.tasks):
            raise ConfigurationError(
                f"IgniteDataset.follow over cache {base.cache_name!r}: local=True reads what one node stores, "
                "which a continuous query cannot follow; pick partitions with parts=... or per_worker=True"
            )
        pmap = base.client.partition_map(base.cache_name)
        partitions = pmap.partitions or 0
        covered = {t.partition for t in plan.tasks}
        follow_all = -1 in covered or (partitions > 0 and covered == set(range(partitions)))
        if not follow_all and not pmap.maps_keys:
            raise UnsupportedOperationError(
                f"IgniteDataset.follow over cache {base.cache_name!r}: the cache's affinity function is not "
                "Ignite's default, so this client cannot tell which partition an event's key is in; follow the "
                "whole cache (no parts=... / per_worker)"
            )
        self._base = base
        self.follower = Follower(
            base.client, base.cache_name, base._reader, plan.tasks, partitions, options, follow_all=follow_all
        )
        # With the module's follow log of this cache on every server node: exactly once (follow_log.py).
        self.follower.log = has_follow_log(base.client, base.cache_name)
        signature = base.schema.element_spec(batched=True)
        if options.deletes == "flag":
            signature = {**signature, "deleted": tf.TensorSpec([None], tf.bool)}
        if not data_source.use_native(signature):
            raise UnsupportedOperationError(
                f"IgniteDataset.follow over cache {base.cache_name!r} runs through the native source op, which "
                f"this dataset cannot use ({data_source.unavailable_reason() or 'ragged or nested fields'}, or "
                f"{data_source.SOURCE_ENV}=generator); pick dense fields with fields=[...]"
            )
        # Every worker follows its own partitions (never sharded again), no prefetch injected: as a scan of a share.
        source = data_source.python_source(self.follower.run, signature, resumable=True)
        super().__init__(source.with_options(_shard_options(share=True)))

    @property
    def stats(self) -> FollowStats:
        """Live counters of this dataset's runs: the node holding the query, registrations, resyncs, rows."""
        return self.follower.stats

    @property
    def partitions(self) -> Sequence[int] | None:
        """The partitions whose rows and events this dataset delivers (None: the whole cache)."""
        parts = self.follower.partitions
        return None if parts is None else sorted(parts)
