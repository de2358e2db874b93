"""``IgniteDataset``'s ``drop_remainder``, ``known_cardinality`` and ``shuffle``/``seed`` on an Ignite 3
table, and ``IgniteDataset.from_sql``'s ``drop_remainder`` (issue 45, item 1): the same jobs as on Ignite 2
(tests/integration/test_dataset_tfdata.py), against the session's Ignite 3 node (the ignite3_node fixture)."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator

import numpy as np
import pytest
import tensorflow as tf

from tensorflow_ignite import IgniteDataset
from tensorflow_ignite.errors import ConfigurationError
from tensorflow_ignite.ignite3 import Ignite3Client, from_sql, write

ROWS = 600
_serial = itertools.count(1)


@pytest.fixture
def client(ignite3_node) -> Iterator[Ignite3Client]:  # type: ignore[no-untyped-def]
    c = Ignite3Client(ignite3_node.client_options())
    yield c
    c.close()


@pytest.fixture
def table(client: Ignite3Client) -> Iterator[str]:
    """A table of ``ROWS`` rows: ``ID`` 0..ROWS-1 (the key) and ``V`` = ID / 2, in a zone of 8 partitions
    (a shuffled read sends a query per partition, each waiting up to ~250 ms to be mapped on 3.1)."""
    name = f"T_OPTS_{next(_serial)}_{uuid.uuid4().hex[:8]}".upper()
    client.execute(f"CREATE ZONE {name}_Z (PARTITIONS 8, REPLICAS 1) STORAGE PROFILES ['default']")
    ids = np.arange(ROWS, dtype=np.int64)
    try:
        assert write(name, {"ID": ids, "V": ids / 2.0}, key="ID", create=True, zone=f"{name}_Z", client=client) == ROWS
        yield name
    finally:
        client.execute(f"DROP TABLE IF EXISTS {name}")
        client.execute(f"DROP ZONE IF EXISTS {name}_Z")


def _keys(it) -> list[int]:  # type: ignore[no-untyped-def]
    return [int(k) for b in it for k in b["key"].numpy()]


def test_drop_remainder_and_known_cardinality(client: Ignite3Client, table: str) -> None:
    exact = IgniteDataset(table, client=client, batch_size=64, drop_remainder=True)  # type: ignore[arg-type]
    assert exact.element_spec["key"].shape == [64]  # a static batch dimension, as on Ignite 2
    batches = [b["key"].numpy() for b in exact]
    assert [len(b) for b in batches] == [64] * (ROWS // 64)
    assert len(set(np.concatenate(batches).tolist())) == ROWS // 64 * 64

    def ds(**kw) -> IgniteDataset:  # type: ignore[no-untyped-def]
        return IgniteDataset(table, client=client, known_cardinality=True, **kw)  # type: ignore[arg-type]

    assert IgniteDataset(table, client=client).cardinality() == tf.data.UNKNOWN_CARDINALITY  # type: ignore[arg-type]
    rows = ds()
    assert rows.cardinality() == ROWS and len(list(rows)) == ROWS
    ceil = ds(batch_size=64)
    assert ceil.cardinality() == 10 and len(list(ceil)) == 10
    floor = ds(batch_size=64, drop_remainder=True)
    assert floor.cardinality() == 9 and len(list(floor)) == 9
    write(table, {"ID": [ROWS + 1], "V": [0.0]}, client=client)  # the table grew after the count
    with pytest.raises(tf.errors.FailedPreconditionError, match="expected to contain 600 elements"):
        list(rows)
    with pytest.raises(ConfigurationError, match="whole cache"):
        ds(parts=[0, 1])
    with pytest.raises(ConfigurationError, match="whole cache"):
        ds(part=0)
    with pytest.raises(ConfigurationError, match="give batch_size too"):
        IgniteDataset(table, client=client, drop_remainder=True)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="only with shuffle=True"):
        IgniteDataset(table, client=client, seed=3)  # type: ignore[arg-type]


def test_from_sql_drop_remainder(client: Ignite3Client, table: str) -> None:
    query = f"SELECT ID, V FROM {table} WHERE ID < 300"
    batches = [b["ID"] for b in IgniteDataset.from_sql(query, client=client, batch_size=64, drop_remainder=True)]  # type: ignore[arg-type]
    assert [len(b) for b in batches] == [64] * 4 and len(set(np.concatenate(batches).tolist())) == 256
    assert [len(b["ID"]) for b in from_sql(query, client=client, batch_size=64)][-1] == 300 - 256
    with pytest.raises(ConfigurationError, match="give batch_size too"):
        IgniteDataset.from_sql(query, client=client, drop_remainder=True)  # type: ignore[arg-type]


def test_seeded_shuffle_is_reproducible_and_resumes_its_order(client: Ignite3Client, table: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    with client.query(f'SELECT ID, "__part" AS P FROM {table}') as cursor:
        part_of = {int(i): int(p) for page in cursor.column_pages() for i, p in zip(page.values[0], page.values[1])}
    assert sorted(part_of) == list(range(ROWS))

    def shuffled(seed: int = 7) -> IgniteDataset:
        return IgniteDataset(table, client=client, batch_size=50, shuffle=True, seed=seed)  # type: ignore[arg-type]

    def order(keys: list[int]) -> list[int]:
        """The partitions in the order their rows came; each one's rows must come together."""
        runs = [p for p, _ in itertools.groupby(part_of[k] for k in keys)]
        assert len(runs) == len(set(runs)), f"partitions read interleaved: {runs}"
        return runs

    ds = shuffled()
    assert ds._table.partitions == tuple(range(8))
    epoch0, epoch1 = _keys(iter(ds)), _keys(iter(ds))
    assert sorted(epoch0) == sorted(epoch1) == list(range(ROWS))  # every row exactly once
    order0 = order(epoch0)
    assert sorted(order0) == sorted(set(part_of.values()))
    assert order0 != sorted(order0)  # partitions out of plan order
    assert order(epoch1) != order0  # each iterator is the next epoch
    assert order(_keys(iter(shuffled()))) == order0  # the same seed: the same order
    for seed in (8, 9):
        other = _keys(iter(shuffled(seed)))
        assert sorted(other) == list(range(ROWS)) and order(other) != order0, seed

    # Saved mid-epoch, restored into a new dataset's iterator: the rest of epoch 0, in epoch 0's order.
    it = iter(shuffled())
    seen = [int(k) for _ in range(5) for k in next(it)["key"].numpy()]
    path = tf.train.Checkpoint(iterator=it).write(str(tmp_path / "ckpt"))
    restored = shuffled()
    it2 = iter(restored)
    tf.train.Checkpoint(iterator=it2).read(path).assert_consumed()
    rest = _keys(it2)
    assert sorted(seen + rest) == list(range(ROWS))  # every row exactly once across the restore
    started = {part_of[k] for k in seen}
    assert [p for p in order(rest) if p not in started] == [p for p in order0 if p not in started]
    assert order(_keys(iter(restored))) == order(epoch1)  # the next iterator goes on with epoch 1
