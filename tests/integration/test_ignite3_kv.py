"""Rows by key and transactions on a real Apache Ignite 3.1 node (the ignite3_node fixture: TLS + authentication).

``Ignite3Client.table(name).kv()`` puts, gets and removes rows; ``Ignite3Client.transaction()``
commits or rolls back; what went in is compared with what SQL sees, so the encoding is the node's.
"""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tensorflow_ignite.client.options import ConnectionOptions
from tensorflow_ignite.errors import (ConfigurationError, Ignite3ServerError, Ignite3TransactionConflictError,
                                      TableNotFoundError, TransactionConflictError)
from tensorflow_ignite.ignite3 import Ignite3Client, KeyValueView, TransactionClosedError
from tensorflow_ignite.local.ignite3 import Ignite3Cluster
from tensorflow_ignite.testing.waiting import wait_for

_serial = itertools.count(1)


@pytest.fixture
def client(ignite3_node) -> Iterator[Ignite3Client]:  # type: ignore[no-untyped-def]
    c = Ignite3Client(ignite3_node.client_options())
    yield c
    c.close()


@pytest.fixture
def table(client: Ignite3Client) -> Iterator[str]:
    name = f"KV_{next(_serial)}_{uuid.uuid4().hex[:8]}".upper()
    yield name
    client.execute(f"DROP TABLE IF EXISTS {name}")


def _count(client: Ignite3Client, query: str, args: tuple[Any, ...] = ()) -> int:
    with client.query(query, args) as cur:
        pages = list(cur.column_pages())
    return int(pages[0].values[0][0])


def _meta(client: Ignite3Client, table: str) -> KeyValueView:
    """The ignite:// meta table's shape: string keys, string values."""
    client.execute(f"CREATE TABLE {table} (KEY VARCHAR PRIMARY KEY, VAL VARCHAR)")
    return client.table(table).kv()


ALL_TYPES = ("ID BIGINT PRIMARY KEY, I8 TINYINT, I16 SMALLINT, I32 INT, I64 BIGINT, F REAL, D DOUBLE, "
             "DEC DECIMAL(12, 4), B BOOLEAN, S VARCHAR, BYT VARBINARY, U UUID, DT DATE, TM TIME(3), "
             "DTM TIMESTAMP(6), TS TIMESTAMP(6) WITH LOCAL TIME ZONE")
VALUES: dict[str, Any] = {
    "I8": -7, "I16": 30000, "I32": -2_000_000_000, "I64": 2**62 + 3, "F": 1.5, "D": -2.25,
    "DEC": decimal.Decimal("12345678.1234"), "B": True, "S": "héllo wörld", "BYT": b"\x80\x00\xff",
    "U": uuid.UUID("6f1e3a1c-2f5d-4b8e-9a77-0f4b2d7c9e10"), "DT": dt.date(1969, 12, 31),
    "TM": dt.time(23, 59, 58, 125000), "DTM": dt.datetime(2024, 2, 29, 12, 34, 56, 123456),
    "TS": dt.datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=dt.timezone.utc),
}


def test_every_column_type_round_trips(client: Ignite3Client, table: str) -> None:
    client.execute(f"CREATE TABLE {table} ({ALL_TYPES})")
    view = client.table(table.lower()).kv()  # an unquoted name is found as SQL finds it
    view.put({"ID": 1, **VALUES})
    view.put({"id": 2})  # every other column NULL (no defaults); a plain lower-case name is its column
    view.put({"ID": 3, "S": "", "BYT": b""})  # empty, not NULL
    assert view.get(1) == {"ID": 1, **VALUES}
    assert view.get({"ID": 2}) == {"ID": 2, **{k: None for k in VALUES}}
    third = view.get(3)
    assert third is not None and third["S"] == "" and third["BYT"] == b"" and third["I8"] is None
    # The node holds the values themselves: SQL compares them with literals of each type.
    assert _count(client, f"SELECT COUNT(*) FROM {table} WHERE ID = 1 AND I8 = -7 AND I16 = 30000 "
                          "AND I32 = -2000000000 AND I64 = 4611686018427387907 AND F = CAST(1.5 AS REAL) "
                          "AND D = -2.25 AND DEC = CAST('12345678.1234' AS DECIMAL(12, 4)) AND B "
                          "AND S = 'héllo wörld' AND BYT = x'8000ff' "
                          "AND U = CAST('6f1e3a1c-2f5d-4b8e-9a77-0f4b2d7c9e10' AS UUID) "
                          "AND DT = DATE '1969-12-31' AND TM = TIME '23:59:58.125' "
                          "AND DTM = TIMESTAMP '2024-02-29 12:34:56.123456' AND TS = ?", (VALUES["TS"],)) == 1
    assert _count(client, f"SELECT COUNT(*) FROM {table} WHERE ID = 2 AND I8 IS NULL AND S IS NULL "
                          "AND U IS NULL AND TS IS NULL") == 1
    # And a row SQL wrote reads back through the view the same.
    client.execute(f"INSERT INTO {table} (ID, S, DEC, DT, TS) VALUES (4, 'sql', CAST('-0.5' AS DECIMAL(12, 4)), "
                   "DATE '2000-01-01', ?)", [VALUES["TS"]])
    fourth = view.get(4)
    assert fourth is not None
    assert (fourth["S"], fourth["DEC"], fourth["DT"], fourth["TS"]) == (
        "sql", decimal.Decimal("-0.5"), dt.date(2000, 1, 1), VALUES["TS"])


def test_get_all_with_missing_keys_and_removes(client: Ignite3Client, table: str) -> None:
    view = _meta(client, table)
    view.put_all([{"KEY": f"k{i}", "VAL": f"v{i}"} for i in range(5)])
    rows = view.get_all(["k3", "nope", {"KEY": "k0"}, "k4", "also-missing"])
    assert rows == [{"KEY": "k3", "VAL": "v3"}, None, {"KEY": "k0", "VAL": "v0"}, {"KEY": "k4", "VAL": "v4"}, None]
    assert view.get_all([]) == []
    assert view.contains("k1") and not view.contains("nope")
    assert view.remove("k1") is True
    assert view.remove("k1") is False
    assert view.get("k1") is None
    assert view.remove_all(["k0", "gone", "k2"]) == [{"KEY": "gone"}]
    assert _count(client, f"SELECT COUNT(*) FROM {table}") == 2  # k3, k4
    view.put({"KEY": "k3", "VAL": "replaced"})
    assert view.get("k3") == {"KEY": "k3", "VAL": "replaced"}


def test_errors_name_the_table_and_what_to_do(client: Ignite3Client, table: str) -> None:
    with pytest.raises(TableNotFoundError, match="NO_SUCH_KV_TABLE"):
        client.table("NO_SUCH_KV_TABLE")
    view = _meta(client, table)
    with pytest.raises(ConfigurationError, match="key columns"):
        view.get({"KEY": "a", "VAL": "b"})
    with pytest.raises(ConfigurationError, match="NOPE"):
        view.put({"KEY": "a", "NOPE": 1})
    with pytest.raises(ConfigurationError, match="KEY"):
        view.put({"VAL": "no key"})


def test_transaction_commits(client: Ignite3Client, table: str) -> None:
    view = _meta(client, table)
    view.put({"KEY": "counter", "VAL": "1"})
    with client.transaction() as tx:
        row = view.get("counter", tx=tx)
        assert row is not None
        view.put({"KEY": "counter", "VAL": str(int(row["VAL"]) + 1)}, tx=tx)
        view.put_all([{"KEY": "a", "VAL": "x"}, {"KEY": "b", "VAL": "y"}], tx=tx)
        view.remove("a", tx=tx)
        assert view.get("b", tx=tx) == {"KEY": "b", "VAL": "y"}  # the transaction sees its own writes
    assert tx.state == "committed"
    assert view.get_all(["counter", "a", "b"]) == [{"KEY": "counter", "VAL": "2"}, None, {"KEY": "b", "VAL": "y"}]
    with pytest.raises(TransactionClosedError):
        view.get("b", tx=tx)
    # A read-only transaction reads the committed rows.
    with client.transaction(read_only=True, timeout=30) as ro:
        assert view.get("counter", tx=ro) == {"KEY": "counter", "VAL": "2"}


def test_transaction_rolls_back(client: Ignite3Client, table: str) -> None:
    view = _meta(client, table)
    view.put({"KEY": "kept", "VAL": "before"})
    with pytest.raises(RuntimeError, match="stop"):
        with client.transaction() as tx:
            view.put({"KEY": "kept", "VAL": "after"}, tx=tx)
            view.put({"KEY": "new", "VAL": "x"}, tx=tx)
            raise RuntimeError("stop")
    assert tx.state == "rolled back"
    tx2 = client.transaction()
    view.remove("kept", tx=tx2)
    tx2.rollback()
    assert view.get_all(["kept", "new"]) == [{"KEY": "kept", "VAL": "before"}, None]
    assert _count(client, f"SELECT COUNT(*) FROM {table}") == 1


def test_a_read_only_transaction_reads_a_snapshot(client: Ignite3Client, table: str) -> None:
    view = _meta(client, table)
    view.put({"KEY": "a", "VAL": "1"})
    with client.transaction(read_only=True) as ro:
        assert view.get("a", tx=ro) == {"KEY": "a", "VAL": "1"}
        view.put_all([{"KEY": "a", "VAL": "2"}, {"KEY": "b", "VAL": "2"}])  # committed meanwhile
        assert view.get_all(["a", "b"], tx=ro) == [{"KEY": "a", "VAL": "1"}, None]
        with pytest.raises(Ignite3ServerError):
            view.put({"KEY": "c", "VAL": "3"}, tx=ro)  # a read-only transaction writes nothing
    assert view.get_all(["a", "b", "c"]) == [{"KEY": "a", "VAL": "2"}, {"KEY": "b", "VAL": "2"}, None]


def test_a_put_all_with_one_bad_row_writes_none(client: Ignite3Client, table: str) -> None:
    client.execute(f"CREATE TABLE {table} (KEY VARCHAR PRIMARY KEY, VAL VARCHAR(4))")
    view = client.table(table).kv()
    with pytest.raises(Ignite3ServerError, match="VAL"):
        view.put_all([{"KEY": "a", "VAL": "ok"}, {"KEY": "b", "VAL": "too long"}])
    assert view.get_all(["a", "b"]) == [None, None]


def test_conflicting_transactions(client: Ignite3Client, ignite3_node, table: str) -> None:  # type: ignore[no-untyped-def]
    view = _meta(client, table)
    view.put({"KEY": "k", "VAL": "0"})
    other = Ignite3Client(ignite3_node.client_options())
    try:
        other_view = other.table(table).kv()
        first = client.transaction()
        second = other.transaction()  # younger: it loses the race for the row's lock
        view.put({"KEY": "k", "VAL": "first"}, tx=first)
        with pytest.raises(Ignite3TransactionConflictError) as info:
            other_view.put({"KEY": "k", "VAL": "second"}, tx=second)
        assert TransactionConflictError.retryable(info.value)
        try:
            second.rollback()
        except Exception:  # noqa: BLE001 - the node may have rolled it back already
            pass
        first.commit()
        assert view.get("k") == {"KEY": "k", "VAL": "first"}

        def attempt() -> None:
            with other.transaction() as tx:
                row = other_view.get("k", tx=tx)
                assert row is not None
                other_view.put({"KEY": "k", "VAL": row["VAL"] + "+second"}, tx=tx)

        attempt()  # the retry: nobody holds the lock now
        assert view.get("k") == {"KEY": "k", "VAL": "first+second"}
    finally:
        other.close()


def test_four_mib_varbinary_block(client: Ignite3Client, table: str) -> None:
    # VARBINARY without a length holds 64 KiB (Ignite 3's default): a block column names its length.
    client.execute(f"CREATE TABLE {table} (KEY VARCHAR PRIMARY KEY, VAL VARBINARY(67108864))")
    view = client.table(table).kv()
    block = b"\x80" + os.urandom(4 * 1024 * 1024 - 2) + b"\x00"  # a leading 0x80 and a trailing zero byte kept
    view.put({"KEY": "content-1:0", "VAL": block})
    row = view.get("content-1:0")
    assert row is not None and row["VAL"] == block
    assert _count(client, f"SELECT OCTET_LENGTH(VAL) FROM {table} WHERE KEY = 'content-1:0'") == len(block)


def test_a_column_added_meanwhile(client: Ignite3Client, table: str) -> None:
    view = _meta(client, table)
    view.put({"KEY": "a", "VAL": "1"})  # the view has loaded schema version 1
    client.execute(f"ALTER TABLE {table} ADD COLUMN EXTRA INT DEFAULT 7")
    view.put({"KEY": "b", "VAL": "2"})  # written in the old version, or again in the one the node asks for
    view.put({"KEY": "c", "VAL": "3", "EXTRA": 9})  # a column the loaded schema lacks: the latest is loaded
    assert view.get_all(["a", "b", "c"]) == [{"KEY": "a", "VAL": "1", "EXTRA": 7},
                                             {"KEY": "b", "VAL": "2", "EXTRA": 7},
                                             {"KEY": "c", "VAL": "3", "EXTRA": 9}]


@pytest.fixture
def two_nodes(ignite3_plain_nodes: Ignite3Cluster) -> Ignite3Cluster:
    return ignite3_plain_nodes


def test_requests_without_a_transaction_go_to_the_keys_primary(two_nodes: Ignite3Cluster) -> None:
    host, port = two_nodes.address(0)
    options = ConnectionOptions(host=host, port=port, fallbacks=tuple(two_nodes.endpoints[1:]))
    with Ignite3Client(options) as client:
        client.execute("CREATE TABLE ROUTED (KEY VARCHAR PRIMARY KEY, VAL VARBINARY(1048576))")
        table = client.table("ROUTED")
        view = table.kv()
        keys = [f"{i:016x}:{b}" for i in range(20) for b in range(5)]  # block keys: "<content id>:<block>"
        for k in keys:
            view.put({"KEY": k, "VAL": k.encode()})
        # The node's own partition of each key (SQL's hidden column) has the node the client chose as primary.
        with client.query('SELECT KEY, "__part" FROM ROUTED') as cur:
            parts: dict[str, int] = {}
            for page in cur.column_pages():
                for k, p in zip(page.values[0].tolist(), page.values[1].tolist()):
                    parts[k.decode() if isinstance(k, bytes) else k] = int(p)
        assert sorted(parts) == sorted(keys)  # SQL through the first node sees writes routed to the second
        def routed_to_primaries() -> dict[str, str] | None:
            primaries = table.assignment().primaries
            routed = {k: view.node_of(k) for k in keys}
            # A primary lease moving meanwhile (a new table's leases settle, more slowly on a busy
            # machine) makes the client read the assignment again: compare within one assignment.
            if table.assignment().primaries != primaries:
                return None
            return routed if all(routed[k] == primaries[parts[k]] for k in keys) else None

        routed = wait_for(routed_to_primaries, timeout=60, what="every key routed to its partition's primary")
        assert set(routed.values()) == {m.name for m in two_nodes.members}  # both nodes serve keys
        assert [r["VAL"] if r else None for r in view.get_all(keys)] == [k.encode() for k in keys]
        assert all(view.get(k) == {"KEY": k, "VAL": k.encode()} for k in keys[:10])
        client.execute("DROP TABLE ROUTED")
