"""Ignite 3 tables read into tf.data on a real Apache Ignite 3.1 node (the ignite3_node fixture).

Rows go in through SQL (literals and ``?`` arguments encoded by this client) and come out through
``tensorflow_ignite.ignite3.from_table`` / ``from_sql``; every value is compared with what went in.
"""

from __future__ import annotations

import datetime as dt
import decimal
import itertools
import time
import uuid

import numpy as np
import pytest
import tensorflow as tf

from tensorflow_ignite.client.options import ConnectionOptions
from tensorflow_ignite.errors import (AuthenticationError, ConfigurationError, HandshakeError, IgniteConnectionError,
                                      SqlError, TableNotFoundError, TLSError, WriteError)
from tensorflow_ignite.ignite3 import Ignite3Client, from_sql, from_table, write
from tensorflow_ignite.local.ignite3 import MEMORY_PROFILE
from tensorflow_ignite.native import data_source
from tensorflow_ignite.ignite3.partitioned import TableReader
from tensorflow_ignite.ignite3.protocol.colocation import partitions_of
from tensorflow_ignite.ignite3.protocol.rows import encode_rows
from tensorflow_ignite.ignite3.routes import table_route
from tensorflow_ignite.local.tls import make_tls_material

_serial = itertools.count(1)


@pytest.fixture
def client(ignite3_node) -> Ignite3Client:  # type: ignore[no-untyped-def]
    c = Ignite3Client(ignite3_node.client_options())
    yield c
    c.close()


@pytest.fixture
def table(client: Ignite3Client) -> str:  # type: ignore[misc]
    name = f"T_{next(_serial)}_{uuid.uuid4().hex[:8]}".upper()
    yield name
    client.execute(f"DROP TABLE IF EXISTS {name}")


def test_node_is_ignite_3_1(ignite3_node, client: Ignite3Client) -> None:  # type: ignore[no-untyped-def]
    assert client.server_version == "3.1.0"
    assert ignite3_node.start_seconds > 0


ALL_TYPES = ("ID BIGINT PRIMARY KEY, I8 TINYINT, I16 SMALLINT, I32 INT, F REAL, D DOUBLE, DEC DECIMAL(12, 4), "
             "B BOOLEAN, S VARCHAR, BY VARBINARY, U UUID, DT DATE, TM TIME(3), DTM TIMESTAMP(6), "
             "TS TIMESTAMP(6) WITH LOCAL TIME ZONE")


@pytest.mark.parametrize("source", ["native", "generator"])
def test_every_column_type_reads_as_inserted(client: Ignite3Client, ignite3_node, table: str, source: str,  # type: ignore[no-untyped-def]
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # The native op copies strings straight from the page's buffer; from_generator takes them as bytes.
    monkeypatch.setenv(data_source.SOURCE_ENV, source)
    client.execute(f"CREATE TABLE {table} ({ALL_TYPES.replace(' BY ', ' BYT ')})")
    u = uuid.UUID("6f1e3a1c-2f5d-4b8e-9a77-0f4b2d7c9e10")
    row = (1, -7, 30000, -2_000_000_000, 1.5, -2.25, 12345678.1234, True, "héllo wörld", b"\x00\x80\xff", u,
           dt.date(1969, 12, 31), dt.time(23, 59, 58, 125000), dt.datetime(2262, 4, 11, 0, 0, 1, 250000),
           dt.datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=dt.timezone.utc))
    # Typed arguments as the SQL engine expects them: DECIMAL and REAL from literals.
    client.execute(f"INSERT INTO {table} VALUES (?, CAST(? AS TINYINT), CAST(? AS SMALLINT), CAST(? AS INT), "
                   "CAST(1.5 AS REAL), ?, CAST('12345678.1234' AS DECIMAL(12, 4)), ?, ?, ?, ?, ?, ?, ?, ?)",
                   row[:4] + row[5:6] + row[7:])
    client.execute(f"INSERT INTO {table} (ID, S, BYT) VALUES (2, '', x'')")
    options = ignite3_node.client_options()
    ds = from_table(table, options=options, null_masks=True)
    assert (data_source.source_of(ds) is not None) == (source == "native")
    rows = sorted(ds.as_numpy_iterator(), key=lambda r: r["ID"])
    assert len(rows) == 2
    first, second = rows
    assert first["I8"] == -7 and first["I8"].dtype == np.int8
    assert first["I16"] == 30000 and first["I16"].dtype == np.int16
    assert first["I32"] == -2_000_000_000 and first["I32"].dtype == np.int32
    assert first["F"] == np.float32(1.5) and first["F"].dtype == np.float32
    assert first["D"] == -2.25
    assert first["DEC"] == pytest.approx(12345678.1234)
    assert first["B"] is np.True_ or first["B"] == True  # noqa: E712
    assert first["S"] == "héllo wörld".encode() and first["BYT"] == b"\x00\x80\xff"
    assert first["U"] == str(u).encode()
    assert first["DT"] == -86_400_000  # 1969-12-31 in ms since the epoch
    assert first["TM"] == ((23 * 60 + 59) * 60 + 58) * 10**9 + 125_000_000
    assert first["DTM"] == ((dt.datetime(2262, 4, 11, 0, 0, 1) - dt.datetime(1970, 1, 1)).days * 86400 + 1) \
        * 10**9 + 250_000_000
    assert first["TS"] == 1_000_000
    assert all(first[k] for k in first if k.endswith("_present"))
    # The second row: NULLs read as zero/empty with their masks False; empty string and bytes are not NULL.
    assert second["I32"] == 0 and not second["I32_present"]
    assert second["DEC"] == 0.0 and not second["DEC_present"]
    assert second["U"] == b"" and not second["U_present"]
    assert second["S"] == b"" and second["S_present"] and second["BYT"] == b"" and second["BYT_present"]
    assert "ID_present" not in second  # the key is NOT NULL: no mask
    text = from_table(table, ["ID", "DEC"], options=options, decimal_as="string", where="ID = ?", args=[1])
    assert [r["DEC"] for r in text.as_numpy_iterator()] == [b"12345678.1234"]


def test_many_pages_every_row_once_and_batches(client: Ignite3Client, table: str) -> None:
    n = 20_000
    client.execute(f"CREATE TABLE {table} (ID BIGINT PRIMARY KEY, X DOUBLE, LABEL INT)")
    client.execute(f"INSERT INTO {table} SELECT x, x * 0.5, CAST(MOD(x, 10) AS INT) FROM TABLE(SYSTEM_RANGE(1, ?))",
                   [n])
    # The dataset reads through the writing client: Ignite 3 orders a client's reads after its own
    # writes (its observable timestamp), another client's only once their time has passed.
    ds = from_table(table, client=client, batch_size=1000, page_size=777)
    assert ds.element_spec["X"].dtype == tf.float64 and ds.element_spec["LABEL"].dtype == tf.int32
    ids = []
    sizes = []
    for batch in ds:
        ids.append(batch["ID"].numpy())
        sizes.append(len(batch["ID"]))
        np.testing.assert_array_equal(batch["X"].numpy(), batch["ID"].numpy() * 0.5)
    all_ids = np.concatenate(ids)
    assert len(all_ids) == n and len(np.unique(all_ids)) == n and all_ids.sum() == n * (n + 1) // 2
    assert max(sizes) == 1000
    # A second epoch runs the query again and sees rows added since.
    client.execute(f"INSERT INTO {table} VALUES (?, ?, ?)", [n + 1, 0.0, 1])
    assert sum(len(b["ID"]) for b in ds) == n + 1


def test_query_with_arguments_and_early_stop(client: Ignite3Client, ignite3_node, table: str) -> None:  # type: ignore[no-untyped-def]
    client.execute(f"CREATE TABLE {table} (ID INT PRIMARY KEY, NAME VARCHAR)")
    client.execute(f"INSERT INTO {table} SELECT CAST(x AS INT), 'n' || CAST(x AS VARCHAR) "
                   f"FROM TABLE(SYSTEM_RANGE(1, 3000))")
    host, port = ignite3_node.address()
    ds = from_sql(f"SELECT NAME, ID * 2 AS TWICE FROM {table} WHERE ID <= ? ORDER BY ID", [2500], host=host,
                  port=port, username=ignite3_node.username, password=ignite3_node.password,
                  cafile=str(ignite3_node.tls_material.ca_cert), certfile=str(ignite3_node.tls_material.client_cert),
                  keyfile=str(ignite3_node.tls_material.client_key),
                  cert_password=ignite3_node.tls_material.client_key_password, page_size=100)
    head = [r for r in ds.take(3).as_numpy_iterator()]
    assert [r["NAME"] for r in head] == [b"n1", b"n2", b"n3"] and [int(r["TWICE"]) for r in head] == [2, 4, 6]
    # Stopping early closed the cursor; reading to the end still works.
    assert sum(1 for _ in ds) == 2500


def test_errors_name_what_failed(client: Ignite3Client, ignite3_node) -> None:  # type: ignore[no-untyped-def]
    host, port = ignite3_node.address()
    with pytest.raises(TableNotFoundError, match="NO_SUCH_TABLE"):
        from_table("NO_SUCH_TABLE", options=ignite3_node.client_options())
    with pytest.raises(SqlError, match="IGN-SQL"):
        client.execute("SELEC 1")
    with pytest.raises(IgniteConnectionError, match=f"{host}:1"):
        Ignite3Client(ConnectionOptions(host=host, port=1, timeout=5)).connection()


def test_tls(ignite3_node) -> None:  # type: ignore[no-untyped-def]
    # The fixture's node only speaks TLS and requires a client certificate signed by its CA: every
    # other test went through it with the CA file and the client certificate.
    plain = {"cafile": None, "certfile": None, "keyfile": None, "cert_password": None}
    with pytest.raises(HandshakeError, match="expects TLS"):
        Ignite3Client(ignite3_node.client_options(**plain)).connection()
    # TLS without a client certificate: refused by the node, and the error says what to pass.
    with pytest.raises(TLSError, match="certfile=") as refused:
        with Ignite3Client(ignite3_node.client_options(certfile=None, keyfile=None, cert_password=None)) as c:
            c.execute("SELECT 1")
    assert ignite3_node.endpoints[0] in str(refused.value)
    # The node's close races its TLS alert (a raw ssl.SSLEOFError leaked in ~1 of 10 attempts): every
    # attempt must end in the same typed error.
    for _ in range(40):
        with pytest.raises(TLSError, match="certfile="):
            with Ignite3Client(ignite3_node.client_options(certfile=None, keyfile=None, cert_password=None)) as c:
                c.execute("SELECT 1")
    # A certificate the node's CA did not sign is refused too.
    other = make_tls_material(ignite3_node.work_dir / "other-ca")
    with pytest.raises(TLSError, match="certfile="):
        with Ignite3Client(ignite3_node.client_options(certfile=str(other.client_cert), keyfile=str(other.client_key),
                                                       cert_password=other.client_key_password)) as c:
            c.execute("SELECT 1")
    # A CA that did not sign the node's certificate is refused by the chain check.
    with pytest.raises(TLSError):
        Ignite3Client(ignite3_node.client_options(cafile=system_ca_bundle())).connection()
    with Ignite3Client(ignite3_node.client_options()) as c:
        assert c.server_version == "3.1.0"


def system_ca_bundle() -> str:
    """The system's CA bundle: public CAs, none of which signed the test node's certificate."""
    import ssl

    path = ssl.get_default_verify_paths().cafile or ssl.get_default_verify_paths().openssl_cafile
    assert path, "no system CA bundle"
    return path


def test_authentication(ignite3_node) -> None:  # type: ignore[no-untyped-def]
    password = ignite3_node.password
    with pytest.raises(AuthenticationError) as info:
        Ignite3Client(ignite3_node.client_options(password="wrong")).connection()
    assert "wrong" not in str(info.value) and password not in str(info.value)
    with pytest.raises(AuthenticationError):
        Ignite3Client(ignite3_node.client_options(username=None, password=None)).connection()
    options = ignite3_node.client_options()
    assert password not in repr(options)
    with Ignite3Client(options) as c:
        assert [r["X"] for r in from_sql("SELECT 41 + 1 AS X", client=c).as_numpy_iterator()] == [42]


def test_an_ignite_2_node_is_refused_with_the_entry_point_to_use(ignite_node) -> None:  # type: ignore[no-untyped-def]
    host, port = ignite_node.address()
    with pytest.raises(HandshakeError, match="IgniteDataset"):
        Ignite3Client(ConnectionOptions(host=host, port=port, timeout=10)).connection()


def test_a_table_in_the_in_memory_profile_writes_and_reads_back(client: Ignite3Client, table: str) -> None:
    """A table of a zone on the nodes' ``aimem`` (volatile page memory) profile: the streamer's writes
    and the partition-aware read are the same as on the default (persistent) profile."""
    zone = f"{table}_Z"
    client.execute(f"CREATE ZONE {zone} (PARTITIONS 8, REPLICAS 1) STORAGE PROFILES ['{MEMORY_PROFILE}']")
    try:
        n = 3000
        data = {"ID": np.arange(n, dtype=np.int64), "NAME": np.array([f"n{i}" for i in range(n)], object),
                "V": np.array([bytes([i % 251]) * (i % 50) for i in range(n)], object)}
        with pytest.raises(ConfigurationError, match=f"no distribution zone '{table}_NONE'.*CREATE ZONE"):
            write(table, data, key="ID", create=True, zone=f"{table}_NONE", client=client)
        with pytest.raises(ConfigurationError, match="pass create=True"):
            write(table, data, zone=zone, client=client)
        assert write(table, data, key="ID", create=True, zone=zone.lower(), client=client, batch_rows=400) == n
        with client.query("SELECT ZONE_NAME, STORAGE_PROFILE FROM SYSTEM.TABLES WHERE TABLE_NAME = ?",
                          (table,)) as cursor:
            placed = [(bytes(z).decode(), bytes(p).decode()) for page in cursor.column_pages()
                      for z, p in zip(*page.values)]
        assert placed == [(zone, MEMORY_PROFILE)]
        ds = from_table(table, client=client, batch_size=256)
        got = {int(i): (bytes(a), bytes(b)) for batch in ds.as_numpy_iterator()
               for i, a, b in zip(batch["ID"], batch["NAME"], batch["V"])}
        assert got == {i: (f"n{i}".encode(), bytes([i % 251]) * (i % 50)) for i in range(n)}
        assert ds.partitions == tuple(range(8))
    finally:
        client.execute(f"DROP TABLE IF EXISTS {table}")
        client.execute(f"DROP ZONE IF EXISTS {zone}")


def test_write_creates_the_table_and_reads_back(client: Ignite3Client, table: str) -> None:
    n = 2500
    rng = np.random.default_rng(7)
    data = {"ID": np.arange(n, dtype=np.int64), "X": rng.random(n).astype(np.float32),
            "Y": rng.random(n), "LABEL": rng.integers(0, 10, n).astype(np.int32),
            "FLAG": rng.random(n) > 0.5, "NAME": np.array([f"r{i}" for i in range(n)])}
    assert write(table, data, key="ID", create=True, client=client, batch_rows=700) == n
    got = sorted(from_table(table, client=client).as_numpy_iterator(), key=lambda r: r["ID"])
    assert [r["ID"] for r in got] == list(range(n))
    np.testing.assert_array_equal([r["X"] for r in got], data["X"])
    np.testing.assert_array_equal([r["Y"] for r in got], data["Y"])
    np.testing.assert_array_equal([r["LABEL"] for r in got], data["LABEL"])
    np.testing.assert_array_equal([r["FLAG"] for r in got], data["FLAG"])
    assert [r["NAME"] for r in got] == [s.encode() for s in data["NAME"]]
    cols = {c.name: c.type.name for c in client.columns(f"SELECT * FROM {table}")}
    assert cols == {"ID": "INT64", "X": "FLOAT", "Y": "DOUBLE", "LABEL": "INT32", "FLAG": "BOOLEAN",
                    "NAME": "STRING"}
    # The streamer upserts: a key written again replaces its row.
    assert write(table, {"ID": [0, n], "Y": [-1.0, -2.0], "NAME": ["again", "new"]}, client=client) == 2
    again = {int(r["ID"]): r for r in from_sql(f"SELECT ID, Y, NAME, LABEL FROM {table} WHERE ID IN (0, ?)",
                                                [n], client=client).as_numpy_iterator()}
    assert again[0]["Y"] == -1.0 and again[0]["NAME"] == b"again" and again[n]["NAME"] == b"new"
    # method="sql" inserts: a key written again fails, with the rows written before it counted.
    with pytest.raises(WriteError) as info:
        write(table, {"ID": [n + 1, n + 2, 0], "X": [0.0] * 3, "Y": [0.0] * 3, "LABEL": [1] * 3,
                      "FLAG": [True] * 3, "NAME": ["a"] * 3}, client=client, method="sql", batch_rows=2)
    assert info.value.rows_written == 2


def test_write_creates_typed_columns_for_dates_decimals_and_uuids(client: Ignite3Client, table: str) -> None:
    """``create=True`` makes DATE, TIMESTAMP(9) (a DATETIME column), DECIMAL and UUID columns from such data, and the values read
    back (timestamps to the millisecond, what Ignite 3.1 keeps)."""
    n = 50
    stamps = np.datetime64("2026-11-27T01:02:03", "ns") + np.arange(n) * np.timedelta64(1_234_567_891, "ns")
    data = {
        "ID": np.arange(n, dtype=np.int64),
        "DAY": np.datetime64("2024-02-28", "D") + np.arange(n),
        "AT": stamps,
        "WHEN": np.array([dt.datetime(2020, 1, 1, 0, 0, i % 60, 123456) for i in range(n)], dtype=object),
        "PRICE": np.array([decimal.Decimal(f"{i}.{i:03d}") for i in range(n)], dtype=object),
        "TAG": np.array([uuid.UUID(int=i * 7919) for i in range(n)], dtype=object),
    }
    assert write(table, data, key="ID", create=True, client=client) == n
    cols = {c.name: c.type.name for c in client.columns(f"SELECT * FROM {table}")}
    assert cols == {"ID": "INT64", "DAY": "DATE", "AT": "DATETIME", "WHEN": "DATETIME", "PRICE": "DECIMAL",
                    "TAG": "UUID"}
    got = sorted(from_table(table, client=client, decimal_as="string").as_numpy_iterator(), key=lambda r: r["ID"])
    assert [r["ID"] for r in got] == list(range(n))
    np.testing.assert_array_equal([r["DAY"] for r in got], data["DAY"].astype("datetime64[ms]").astype(np.int64))
    # Ignite 3.1 keeps milliseconds of a TIMESTAMP(9) (SQL's own TIMESTAMP literals too, checked): the
    # column declares nanoseconds, so a release that keeps them reads them back without a change here.
    np.testing.assert_array_equal([r["AT"] for r in got],
                                  stamps.astype("datetime64[ms]").astype("datetime64[ns]").astype(np.int64))
    want_when = [int((w - dt.datetime(1970, 1, 1)) / dt.timedelta(milliseconds=1)) * 1_000_000 for w in data["WHEN"]]
    assert [int(r["WHEN"]) for r in got] == want_when
    assert [decimal.Decimal(r["PRICE"].decode()) for r in got] == list(data["PRICE"])
    assert [r["TAG"].decode() for r in got] == [str(u) for u in data["TAG"]]


def test_streamer_puts_each_row_in_the_partition_its_key_hashes_to(client: Ignite3Client, table: str) -> None:
    # The node stores a streamed batch in the partition the client names, so the client's colocation
    # hash must be the node's. "__part" (the partition a row was read from) says where each row went;
    # the same rows inserted through SQL say where the node's own hash puts them; and a key lookup
    # (pruned to the key's partition by the node's hash) must find every row.
    client.execute(f"CREATE TABLE {table} (ID BIGINT, NAME VARCHAR, V DOUBLE, PRIMARY KEY (ID, NAME))")
    n = 3000
    ids = np.arange(-n // 2, n // 2, dtype=np.int64) * 7919
    names = np.array([f"k{i % 13}" for i in range(n)])
    assert write(table, {"ID": ids, "NAME": names, "V": ids * 0.5}, client=client, batch_rows=128) == n
    route = table_route(client.connection(), table)
    ours = partitions_of(encode_rows(route.schema, {"ID": ids, "NAME": names}, table).hashes,
                         route.assignment.partitions)
    on_node = {(int(r["ID"]), r["NAME"].decode()): int(r["P"]) for r in
               from_sql(f'SELECT "__part" AS P, ID, NAME FROM {table}', client=client).as_numpy_iterator()}
    assert len(on_node) == n
    assert [on_node[(int(i), str(s))] for i, s in zip(ids, names)] == ours.tolist()
    client.execute(f"CREATE TABLE {table}_SQL (ID BIGINT, NAME VARCHAR, V DOUBLE, PRIMARY KEY (ID, NAME))")
    try:
        assert write(f"{table}_SQL", {"ID": ids, "NAME": names, "V": ids * 0.5}, client=client, method="sql") == n
        by_sql = {(int(r["ID"]), r["NAME"].decode()): int(r["P"]) for r in
                  from_sql(f'SELECT "__part" AS P, ID, NAME FROM {table}_SQL', client=client).as_numpy_iterator()}
        assert by_sql == on_node
    finally:
        client.execute(f"DROP TABLE IF EXISTS {table}_SQL")
    assert len(set(ours.tolist())) == route.assignment.partitions  # every partition got rows
    for i in (0, 1, n // 2, n - 1):
        got = list(from_sql(f"SELECT V FROM {table} WHERE ID = ? AND NAME = ?", [int(ids[i]), str(names[i])],
                            client=client).as_numpy_iterator())
        assert [r["V"] for r in got] == [ids[i] * 0.5]


KEY_TYPES = {
    # Two tables, so every column type is a key column in one of them (hashed) and written in both.
    "a": ("ID BIGINT, I8 TINYINT, I16 SMALLINT, I32 INT, DEC DECIMAL(12, 4), S VARCHAR, U UUID, "
          "F REAL, D DOUBLE, B BOOLEAN, BYT VARBINARY, DT DATE, TM TIME(3), DTM TIMESTAMP(6), "
          "TS TIMESTAMP(6) WITH LOCAL TIME ZONE, PRIMARY KEY (ID, I8, I16, I32, DEC, S, U)"),
    "b": ("ID BIGINT, I8 TINYINT, I16 SMALLINT, I32 INT, DEC DECIMAL(12, 4), S VARCHAR, U UUID, "
          "F REAL, D DOUBLE, B BOOLEAN, BYT VARBINARY, DT DATE, TM TIME(3), DTM TIMESTAMP(6), "
          "TS TIMESTAMP(6) WITH LOCAL TIME ZONE, PRIMARY KEY (ID, B, DT, TM, DTM, TS)"),
}


def _key_type_rows(n: int) -> dict[str, object]:
    """``n`` rows of KEY_TYPES' columns."""
    rng = np.random.default_rng(11)
    base = np.datetime64("2024-03-01T12:00:00", "us")
    data = {
        "ID": np.arange(n, dtype=np.int64), "I8": rng.integers(-128, 128, n).astype(np.int8),
        "I16": rng.integers(-30000, 30000, n).astype(np.int16), "I32": rng.integers(-2**31, 2**31, n),
        "DEC": np.array([f"{x:.4f}" for x in rng.normal(0, 1e6, n)], object),
        "S": np.array([f"s{i}-é" for i in range(n)], object), "U": [str(uuid.UUID(int=i * 7919 + 1)) for i in range(n)],
        "F": rng.random(n).astype(np.float32), "D": rng.normal(0, 1e9, n), "B": np.arange(n) % 2 == 0,
        "BYT": [bytes([i % 256, 0x80]) for i in range(n)],
        "DT": (np.datetime64("1969-12-01") + np.arange(n)).astype("datetime64[D]"),
        "TM": (np.arange(n, dtype=np.int64) * 61_001 % 86_400_000) * 1_000_000,
        # Milliseconds: microseconds written into TIMESTAMP(6) read back truncated to ms here (not explained yet).
        "DTM": base + np.arange(n) * np.timedelta64(3_600_001, "ms"),
        "TS": base - np.arange(n) * np.timedelta64(86_400_007, "ms"),
    }
    return data


@pytest.mark.parametrize("keys", sorted(KEY_TYPES))
def test_streamer_round_trips_every_column_type(client: Ignite3Client, table: str, keys: str) -> None:
    client.execute(f"CREATE TABLE {table} ({KEY_TYPES[keys]})")
    n = 200
    data = _key_type_rows(n)
    assert write(table, data, client=client, batch_rows=50) == n
    got = sorted(from_table(table, client=client, decimal_as="string").as_numpy_iterator(), key=lambda r: r["ID"])
    assert [int(r["ID"]) for r in got] == list(range(n))
    col = {k: [r[k] for r in got] for k in got[0]}
    for k in ("I8", "I16", "I32", "F", "D", "B"):
        np.testing.assert_array_equal(np.asarray(col[k]), np.asarray(data[k]), err_msg=k)
    assert [decimal.Decimal(x.decode()) for x in col["DEC"]] == [decimal.Decimal(x) for x in data["DEC"]]
    assert col["S"] == [s.encode() for s in data["S"]] and col["BYT"] == data["BYT"]
    assert col["U"] == [u.encode() for u in data["U"]]
    assert col["DT"] == data["DT"].astype("datetime64[ms]").astype(np.int64).tolist()
    assert col["TM"] == data["TM"].tolist()
    assert col["DTM"] == data["DTM"].astype("datetime64[ns]").astype(np.int64).tolist()
    assert col["TS"] == data["TS"].astype("datetime64[ns]").astype(np.int64).tolist()
    # Each row is where the node's own hash puts it: a lookup by the whole key finds it.
    key_cols = KEY_TYPES[keys].split("PRIMARY KEY (")[1].rstrip(")").split(", ")
    for i in (0, n // 3, n - 1):
        where = " AND ".join(f"{c} = ?" for c in key_cols)
        args = [got[i][c] if c not in ("DEC", "S", "U") else got[i][c].decode() for c in key_cols]
        args = [_sql_arg(c, a, table) for c, a in zip(key_cols, args)]
        assert [int(r["ID"]) for r in from_sql(f"SELECT ID FROM {table} WHERE {where}", args,
                                               client=client).as_numpy_iterator()] == [i], (keys, i)


def _sql_arg(column: str, value: object, table: str) -> object:
    """A read value as the SQL argument of its column's type."""
    if column == "DEC":
        return decimal.Decimal(str(value))
    if column == "U":
        return uuid.UUID(str(value))
    if column == "DT":
        return dt.date(1970, 1, 1) + dt.timedelta(milliseconds=int(value))  # type: ignore[call-overload]
    if column == "TM":
        return (dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=int(value) // 1000)).time()  # type: ignore[call-overload]
    if column == "DTM":
        return dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=int(value) // 1000)  # type: ignore[call-overload]
    if column == "TS":
        return dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(microseconds=int(value) // 1000)  # type: ignore[call-overload]
    if column == "B":
        return bool(value)
    return int(value) if isinstance(value, np.integer) else value


def test_streamer_and_sql_batches_write_the_same_rows(client: Ignite3Client, table: str) -> None:
    # The same 20,000 rows through the streamer and through SQL batches end the same; the rates are
    # printed for the reader (a timing, not a target: targets live in bench/).
    n = 20_000
    rng = np.random.default_rng(5)
    data = {"ID": np.arange(n, dtype=np.int64), "X": rng.random(n), "LABEL": rng.integers(0, 10, n).astype(np.int32),
            "NAME": np.array([f"row{i}" for i in range(n)])}
    client.execute(f"CREATE TABLE {table} (ID BIGINT PRIMARY KEY, X DOUBLE, LABEL INT, NAME VARCHAR)")
    client.execute(f"CREATE TABLE {table}_SQL (ID BIGINT PRIMARY KEY, X DOUBLE, LABEL INT, NAME VARCHAR)")
    try:
        t0 = time.perf_counter()
        assert write(table, data, client=client) == n
        streamer = time.perf_counter() - t0
        t0 = time.perf_counter()
        assert write(f"{table}_SQL", data, client=client, method="sql") == n
        sql_batches = time.perf_counter() - t0
        print(f"\nIgnite 3 write of {n} rows: streamer {n / streamer:,.0f} rows/s, "
              f"SQL batches {n / sql_batches:,.0f} rows/s")
        for name in (table, f"{table}_SQL"):
            got = {k: np.concatenate([b[k] for b in from_table(name, client=client, batch_size=4096)])
                   for k in ("ID", "X", "LABEL")}
            order = np.argsort(got["ID"])
            np.testing.assert_array_equal(got["ID"][order], data["ID"])
            np.testing.assert_array_equal(got["X"][order], data["X"])
            np.testing.assert_array_equal(got["LABEL"][order], data["LABEL"])
    finally:
        client.execute(f"DROP TABLE IF EXISTS {table}_SQL")


def test_a_dataset_reads_rows_another_client_just_wrote(ignite3_node, client: Ignite3Client, table: str) -> None:  # type: ignore[no-untyped-def]
    options = ignite3_node.client_options()
    assert write(table, {"ID": np.arange(300), "V": np.ones(300)}, key="ID", create=True, options=options) == 300
    ds = from_table(table, options=options, batch_size=128)
    assert sum(len(b["ID"]) for b in ds) == 300
    # Written after the dataset was built, through another client: the next epoch has them.
    client.execute(f"INSERT INTO {table} SELECT x, 2.0 FROM TABLE(SYSTEM_RANGE(300, 399))")
    assert sum(len(b["ID"]) for b in ds) == 400


@pytest.mark.parametrize("keys", [*sorted(KEY_TYPES), "colocated"])
def test_from_table_computes_each_rows_partition_as_the_node_does(client: Ignite3Client, table: str,
                                                                   keys: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # from_table selects no "__part": a row's partition -- which its exactly-once ledger and the
    # failover's dropped rows go by -- is the colocation hash of the key columns it reads, computed on
    # the client. The rows go in through SQL, so the node alone chooses their partitions, and "__part"
    # says which they are. Every key type is a key column of a table here ("colocated": COLOCATE BY
    # names the columns in another order than the key, one of them not at all).
    ddl = KEY_TYPES.get(keys) or ("ID BIGINT, I32 INT, S VARCHAR, D DOUBLE, PRIMARY KEY (ID, I32, S)) "
                                  "COLOCATE BY (S, ID")
    client.execute(f"CREATE TABLE {table} ({ddl})")
    n = 400
    data = _key_type_rows(n)
    if keys == "colocated":
        data = {k: data[k] for k in ("ID", "I32", "S", "D")}
    else:  # as the SQL arguments of their columns
        data.update(
            DEC=[decimal.Decimal(x) for x in data["DEC"]], U=[uuid.UUID(x) for x in data["U"]],
            DT=data["DT"].astype(object).tolist(),
            TM=[(dt.datetime(2000, 1, 1) + dt.timedelta(microseconds=int(x) // 1000)).time() for x in data["TM"]],
            DTM=data["DTM"].astype(object).tolist(),
            TS=[x.replace(tzinfo=dt.timezone.utc) for x in data["TS"].astype(object).tolist()])
    assert write(table, data, client=client, method="sql") == n
    ds = from_table(table, client=client, decimal_as="string")
    r = ds._reader
    assert r.extra_columns == (1 if keys == "a" else 0)  # a DECIMAL key is selected again as text
    query = r.query(r.partitions).replace(" FROM ", ' , "__part" AS P FROM ', 1)
    ours, theirs = [], []
    with client.query(query, page_size=128) as cursor:
        for page in cursor.column_pages(decimal_as="string"):
            ours.append(r.row_partitions([page.values[i] for i in r.key_columns]))
            theirs.append(page.values[-1])
    ours_all, theirs_all = np.concatenate(ours), np.concatenate(theirs).astype(np.int64)
    assert len(ours_all) == n and len(set(theirs_all.tolist())) > 10
    np.testing.assert_array_equal(ours_all, theirs_all)
    # A read of some partitions only (the node filters on "__part"): exactly the rows "__part" puts there.
    some = list(range(0, r.partition_count, 3))
    got = np.sort(np.concatenate([b["ID"] for b in from_table(table, ["ID"], client=client, parts=some,
                                                               batch_size=64).as_numpy_iterator()]))
    want = np.sort(np.array([int(x["ID"]) for x in from_sql(
        f'SELECT ID FROM {table} WHERE "__part" IN ({", ".join(map(str, some))})', client=client).as_numpy_iterator()]))
    np.testing.assert_array_equal(got, want)
    if keys != "colocated":
        return
    # Were the client's partitions wrong, such a read would stop rather than mislay rows in the ledger.
    right = TableReader.row_partitions
    monkeypatch.setattr(TableReader, "row_partitions", lambda self, k: (right(self, k) + 1) % self.partition_count)
    with pytest.raises(tf.errors.OpError, match="colocation hash"):
        list(from_table(table, ["ID"], client=client, parts=some, batch_size=64))
