"""The partition-aware Ignite 3 read's pure parts: its queries, row identities, which failures it retries,
and the saved state it accepts -- no server (the reads themselves: tests/integration/test_ignite3_reads.py)."""

from __future__ import annotations

import numpy as np
import pytest

from tensorflow_ignite.client.options import ConnectionOptions
from tensorflow_ignite.errors import (AuthenticationError, ConfigurationError, ConnectionTimeoutError,
                                      Ignite3ServerError, IgniteConnectionError, SqlError, TableNotFoundError,
                                      UnsupportedOperationError)
from tensorflow_ignite.ignite3.partitioned import TableReader, key_identities, retryable
from tensorflow_ignite.ignite3.protocol import colocation as co
from tensorflow_ignite.ignite3.protocol.codes import ColumnType as T
from tensorflow_ignite.ignite3.protocol.codes import ErrorCode
from tensorflow_ignite.ignite3.protocol.sql import ColumnMeta


def reader(**kw: object) -> TableReader:
    args = dict(where=None, args=())
    args.update(kw)
    return TableReader(ConnectionOptions(port=1), "PUBLIC.TRAIN", ["X", '"odd"'], (ColumnMeta("X", T.DOUBLE),),
                       [("ID", T.INT64), ("D", T.DECIMAL)], range(8), 8, colocation=[(0, 0, 0), (1, 2, 0)],
                       **args)  # type: ignore[arg-type]


def test_query_reads_its_partitions_with_the_keys_not_among_the_output() -> None:
    r = reader(where="X > ?", args=[1])
    q = r.query([3, 1])
    assert q == ("SELECT /*+ DISABLE_RULE('TableScanToKeyValueGetRule') */ "
                 'X, "odd", ID AS TFI__KEY0, CAST(D AS VARCHAR) AS TFI__KEY1 '
                 'FROM PUBLIC.TRAIN WHERE "__part" IN (3, 1) AND (X > ?)')
    assert r.key_columns == (1, 2) and r.extra_columns == 2
    # A key column among the output is read from there (no column selected twice), a DECIMAL one as text.
    out = (ColumnMeta("ID", T.INT64), ColumnMeta("D", T.DECIMAL), ColumnMeta("X", T.DOUBLE))
    both = TableReader(ConnectionOptions(port=1), "PUBLIC.TRAIN", ["*"], out, [("ID", T.INT64), ("D", T.DECIMAL)],
                       range(8), 8, colocation=[(0, 0, 0)])
    assert both.query(range(8)) == ("SELECT /*+ DISABLE_RULE('TableScanToKeyValueGetRule') */ "
                                    "*, CAST(D AS VARCHAR) AS TFI__KEY1 FROM PUBLIC.TRAIN")
    assert both.key_columns == (0, 3) and both.extra_columns == 1
    # Every partition of the table: no partition filter (the engine would evaluate it on every row).
    assert reader().query(range(8)).endswith("FROM PUBLIC.TRAIN")
    assert reader(where="X > 0").query(range(8)).endswith("FROM PUBLIC.TRAIN WHERE (X > 0)")


def test_identities_integer_key_is_the_value_others_a_digest() -> None:
    ids = np.array([5, -1, 2**40], np.int64)
    np.testing.assert_array_equal(key_identities([ids], [("ID", T.INT64)]), ids)
    small = key_identities([np.array([7, 8], np.int16)], [("K", T.INT16)])
    assert small.dtype == np.int64 and small.tolist() == [7, 8]
    a = key_identities([np.array([b"ab", b"a"], object), np.array([1, 1])], [("S", T.STRING), ("N", T.INT64)])
    b = key_identities([np.array([b"a", b"ab"], object), np.array([1, 1])], [("S", T.STRING), ("N", T.INT64)])
    assert a[0] == b[1] and a[1] == b[0] and a[0] != a[1]  # deterministic, and distinct keys differ
    # The values are length-prefixed: ("ab", "c") is not ("a", "bc").
    c = key_identities([np.array([b"ab", b"a"], object), np.array([b"c", b"bc"], object)],
                       [("A", T.STRING), ("B", T.STRING)])
    assert c[0] != c[1]


def test_which_failures_are_read_again() -> None:
    assert retryable(IgniteConnectionError("node gone", address="h:1"))
    assert retryable(ConnectionTimeoutError("slow", address="h:1"))
    assert retryable(Ignite3ServerError("no primary", status=(8 << 16) | 3))
    assert retryable(SqlError("execution cancelled", status=int(ErrorCode.EXECUTION_CANCELLED)))
    assert not retryable(SqlError("parse", status=int(ErrorCode.STMT_PARSE)))
    assert not retryable(SqlError("validation", status=int(ErrorCode.STMT_VALIDATION)))
    assert not retryable(TableNotFoundError("gone", status=int(ErrorCode.TABLE_NOT_FOUND)))
    assert not retryable(AuthenticationError("who", address="h:1"))
    assert not retryable(ValueError("bad"))


def test_saved_state_resumes_only_its_own_plan() -> None:
    r = reader()
    state = r.run().save()  # nothing handed out yet; no connection is made before iterating
    r.run(state).close()
    for other in (reader(where="X > 0"), TableReader(ConnectionOptions(port=1), "PUBLIC.TRAIN", ["X"], (),
                                                     [("ID", T.INT64)], range(4), 8, colocation=[(0, 0, 0)])):
        with pytest.raises(ConfigurationError, match="another dataset"):
            other.run(state)
    with pytest.raises(ConfigurationError, match="cannot be read"):
        r.run(b"garbage")
    with pytest.raises(UnsupportedOperationError, match="distributed_epoch"):
        r.run(None, lambda: None)


def test_description_rebuilds_the_same_reader() -> None:
    import json

    r = TableReader(ConnectionOptions(host="h1", port=10800, fallbacks=("h2:10800",), username="u", password="pw"),
                    "PUBLIC.TRAIN", ["X"], (ColumnMeta("X", T.DECIMAL, True, 2, 10),), [("ID", T.INT64), ("T", T.TIME)],
                    [1, 2, 5], 8, colocation=[(1, 0, 3), (0, 0, 0)], where="X > ?", args=[1.5], null_masks=True,
                    decimal_as="string")
    text = r.description(batch_size=32, credentials=None)
    assert "pw" not in text
    d = json.loads(text)
    again = TableReader.rebuild(ConnectionOptions(host="h1", port=10800), d["read"])
    assert again.fingerprint == r.fingerprint and again.partitions == (1, 2, 5)
    assert again.query([1]) == r.query([1]) and again.output == r.output and again.colocation == r.colocation
    assert sorted(again.element_spec()) == ["X", "X_present"]
    state = r.run().save()
    again.run(state).close()  # the rebuilt reader takes the original's saved state
    with pytest.raises(UnsupportedOperationError, match="where-argument 0"):
        TableReader(ConnectionOptions(port=1), "T", ["X"], (), [("ID", T.INT64)], [0], 1, colocation=[(0, 0, 0)],
                    where="X = ?", args=[object()]).describe()
    del d["read"]["colocation"]
    with pytest.raises(ConfigurationError, match="older tensorflow-ignite"):
        TableReader.rebuild(ConnectionOptions(host="h1", port=10800), d["read"])


def test_a_shuffled_read_carries_its_seed_and_a_restored_run_its_epoch() -> None:
    import json

    def shuffled(seed: int | None) -> TableReader:
        return TableReader(ConnectionOptions(host="h1", port=10800), "T", ["X"], (), [("ID", T.INT64)], range(16), 16,
                           colocation=[(0, 0, 0)], shuffle_seed=seed)

    r = shuffled(7)
    d = json.loads(r.description(batch_size=8, drop_remainder=True, credentials=None))["read"]
    assert (d["shuffle_seed"], d["batch_size"], d["drop_remainder"]) == (7, 8, True)
    again = TableReader.rebuild(ConnectionOptions(host="h1", port=10800), d)
    first, second = r.run(), r.run()  # no connection before iterating
    assert sorted(first._todo) == sorted(second._todo) == list(range(16))
    assert first._todo != second._todo and (first.epoch, second.epoch) == (0, 1)  # each run the next epoch
    assert shuffled(7).run()._todo == first._todo and shuffled(8).run()._todo != first._todo
    resumed = again.run(second.save())  # the rebuilt reader, from epoch 1's state: epoch 1's order
    assert (resumed.epoch, resumed._todo) == (1, second._todo)
    assert again.run().epoch == 2
    assert shuffled(None).run().epoch is None and shuffled(None).describe()["shuffle_seed"] is None
    for run in (first, second, resumed):
        run.close()


def test_row_partitions_are_the_colocation_hash_of_the_key_columns() -> None:
    # Ignite 3.1.0's own SQL test (system_columns.test): BIGINT keys 101, 102, 103 of 25 partitions.
    r = TableReader(ConnectionOptions(port=1), "T", ["*"], (), [("ID", T.INT64)], range(25), 25,
                    colocation=[(0, 0, 0)])
    assert r.row_partitions([np.array([101, 102, 103], np.int64)]).tolist() == [19, 17, 11]
    # Colocation order, not key order: COLOCATE BY (B, A) hashes B first.
    two = TableReader(ConnectionOptions(port=1), "T", ["*"], (), [("A", T.INT32), ("B", T.STRING)], range(25), 25,
                      colocation=[(1, 0, 0), (0, 0, 0)])
    a, b = np.array([5, 6], np.int32), np.array([b"x", b"y"], object)
    want = [co.partition_of(co.row_hash([(T.STRING, s.decode(), 0, 0), (T.INT32, int(i), 0, 0)]), 25)
            for i, s in zip(a, b)]
    assert two.row_partitions([a, b]).tolist() == want
    with pytest.raises(ConfigurationError, match="colocation columns"):
        TableReader(ConnectionOptions(port=1), "T", ["*"], (), [("ID", T.INT64)], [0], 1, colocation=[(1, 0, 0)])
