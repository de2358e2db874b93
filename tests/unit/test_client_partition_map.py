"""PartitionMap's key routing: keys grouped by the primary of their partition (no server needed)."""

from __future__ import annotations

import uuid

import numpy as np

from tensorflow_ignite.client import PartitionMap
from tensorflow_ignite.protocol.hashing import affinity_partitions, java_string_hash, long_hash_codes


def _map(parts: int, owners: list[uuid.UUID | None], **kwargs: object) -> PartitionMap:
    nodes = tuple(owners[p % len(owners)] for p in range(parts))
    return PartitionMap(1, parts, nodes, (3, 1), **kwargs)  # type: ignore[arg-type]


def test_split_by_primary_groups_every_key_under_its_partitions_primary() -> None:
    a, b, c = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    for parts in (1024, 1000):
        pmap = _map(parts, [a, b, None, c])
        hashes = long_hash_codes(np.arange(-5000, 5000))
        groups = pmap.split_by_primary(hashes)
        seen = np.concatenate([positions for _, positions in groups])
        assert sorted(seen.tolist()) == list(range(len(hashes)))  # every key once
        partition = affinity_partitions(hashes, parts)
        for node, positions in groups:
            assert all(pmap.nodes[p] == node for p in partition[positions].tolist())  # None: no primary known
            assert (np.diff(positions) > 0).all()  # rows keep their order
        assert {n for n, _ in groups} == {a, b, c, None}
        key = f"block:{parts}"
        assert pmap.primary_of_key(java_string_hash(key)) == pmap.nodes[
            int(affinity_partitions(np.array([java_string_hash(key) & 0xFFFFFFFF]), parts)[0])]


def test_maps_that_cannot_place_keys_send_everything_anywhere() -> None:
    a = uuid.uuid4()
    hashes = long_hash_codes(np.arange(10))
    for pmap in (_map(8, [a], default_affinity=False), PartitionMap(1, 0, (), (1, 0), applicable=False)):
        assert not pmap.maps_keys
        assert pmap.primary_of_key(5) is None
        [(node, positions)] = pmap.split_by_primary(hashes)
        assert node is None and positions.tolist() == list(range(10))
