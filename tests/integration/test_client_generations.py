"""``tensorflow_ignite.IgniteClient`` on both Ignite generations (issue 45): the same code -- SQL, a table used as a cache,
``cache_names``, ``destroy_cache``, transactions -- against the session's Ignite 2 node with SQL and its
Ignite 3 node (TLS, client certificates, authentication: the keywords reach the Ignite 3 handshake), with
the same results; the Ignite-2-only methods are a clear ``UnsupportedOperationError`` on Ignite 3."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import tensorflow_ignite as ti
from tensorflow_ignite import IgniteClient
from tensorflow_ignite.client import IgniteClient as Ignite2Client
from tensorflow_ignite.client.options import ConnectionOptions
from tensorflow_ignite.errors import HandshakeError, IgniteConnectionError, UnsupportedOperationError


@pytest.fixture(params=[2, 3], ids=["ignite2", "ignite3"])
def where(request: pytest.FixtureRequest) -> tuple[int, str, dict[str, Any]]:
    """(generation, address, the IgniteClient keywords) of the session's Ignite 2 SQL node or Ignite 3 node."""
    if request.param == 2:
        host, port = request.getfixturevalue("ignite_sql_node").address()
        return 2, f"{host}:{port}", {}
    options = request.getfixturevalue("ignite3_node").client_options()
    return 3, f"{options.host}:{options.port}", ConnectionOptions.settings_in(vars(options))


def _table_ddl(generation: int, table: str) -> str:
    """A table of a BIGINT key and a VARCHAR value; on Ignite 2 its cache is named as the table, holds the
    bare values (no wrapper object) and takes transactions -- what an Ignite 3 table is anyway."""
    ddl = f"CREATE TABLE {table} (ID BIGINT PRIMARY KEY, NAME VARCHAR)"
    if generation == 2:
        ddl += f' WITH "CACHE_NAME={table},WRAP_VALUE=false,ATOMICITY=TRANSACTIONAL"'
    return ddl


def test_sql(where: tuple[int, str, dict[str, Any]], cache_name: str) -> None:
    generation, address, keywords = where
    with IgniteClient(address, **keywords) as client:
        assert isinstance(client, IgniteClient) and isinstance(client, Ignite2Client)
        assert client.generation == generation
        client.sql(f"CREATE TABLE {cache_name} (ID BIGINT PRIMARY KEY, NAME VARCHAR, W DOUBLE)").execute()
        try:
            for i, (name, w) in enumerate([("a", 1.5), ("b", 2.5), ("c", 3.5)]):
                assert client.sql(f"INSERT INTO {cache_name} (ID, NAME, W) VALUES (?, ?, ?)", [i, name, w]).execute() == 1
            cursor = client.sql(f"SELECT ID, NAME, W FROM {cache_name} WHERE W > ? ORDER BY ID", [2.0])
            assert [list(r) for r in cursor] == [[1, "b", 2.5], [2, "c", 3.5]]
            assert cursor.column_names == ("ID", "NAME", "W")
            assert client.sql(f"SELECT COUNT(*) FROM {cache_name}").fetchall() == [[3]]
            assert client.sql(f"SELECT NAME FROM {cache_name} ORDER BY ID", page_size=1).fetchall() == [["a"], ["b"], ["c"]]
            assert client.sql(f"UPDATE {cache_name} SET W = W + 1 WHERE ID > ?", [0]).execute() == 2
        finally:
            client.sql(f"DROP TABLE {cache_name}").execute()
    assert client.closed


def test_a_table_as_a_cache(where: tuple[int, str, dict[str, Any]], cache_name: str) -> None:
    generation, address, keywords = where
    with IgniteClient(address, **keywords) as client:
        client.sql(_table_ddl(generation, cache_name)).execute()
        cache = client.cache(cache_name)
        cache.put(1, "a")
        cache.put_all({2: "b", 3: "c"})
        assert cache.get(1) == "a" and cache.get(9) is None
        assert cache.get_all([1, 2, 9]) == {1: "a", 2: "b"}
        assert cache.contains_key(2) and not cache.contains_key(9)
        assert cache.size() == 3
        assert cache.remove_key(2) and not cache.remove_key(2)
        assert cache.put_if_absent(4, "d") and not cache.put_if_absent(4, "x")
        assert cache.replace_if_equals(4, "d", "dd") and not cache.replace_if_equals(4, "d", "x")
        assert sorted(cache.scan()) == [(1, "a"), (3, "c"), (4, "dd")]
        assert client.sql(f"SELECT ID, NAME FROM {cache_name} ORDER BY ID").fetchall() == [[1, "a"], [3, "c"], [4, "dd"]]
        assert cache_name.upper() in {n.upper() for n in client.cache_names()}

        with client.transaction() as tx:
            assert tx.get(cache, 1) == "a"
            tx.put(cache, 5, "e")
            tx.remove_key(cache, 1)
        assert cache.get(5) == "e" and cache.get(1) is None
        tx = client.transaction()
        tx.put_all(cache, {6: "f", 7: "g"})
        tx.rollback()
        assert cache.get_all([6, 7]) == {}
        with pytest.raises(RuntimeError, match="rolled back on purpose"), client.transaction() as tx:
            tx.put(cache, 8, "h")
            raise RuntimeError("rolled back on purpose")
        assert not cache.contains_key(8)

        cache.remove_keys([3, 4])
        assert cache.size() == 1
        cache.clear()
        assert cache.size() == 0
        client.destroy_cache(cache_name)
        assert cache_name.upper() not in {n.upper() for n in client.cache_names()}


def test_ignite2_only_methods_say_so_on_ignite3(ignite3_node, cache_name: str) -> None:  # type: ignore[no-untyped-def]
    options = ignite3_node.client_options()
    address, keywords = f"{options.host}:{options.port}", ConnectionOptions.settings_in(vars(options))
    with IgniteClient(address, generation="3", **keywords) as client:
        assert isinstance(client, IgniteClient) and client.generation == 3
        for call, says in [
            (lambda: client.binary_type("Foo"), r"IgniteClient\.binary_type on an Ignite 3 cluster: Ignite 3 has no "
                                                r"binary types"),
            (lambda: client.partition_map(cache_name), r"partition_map .*assignment\(\)"),
            (lambda: client.create_cache(cache_name), r"create_cache .*CREATE TABLE"),
            (lambda: client.stats(), r"stats .*Ignite 2 connections only"),
            (lambda: client.sql("SELECT 1", local=True), r"sql\(local=...\)"),
            (lambda: client.transaction(concurrency=0), r"pessimistic and serializable"),
        ]:
            with pytest.raises(UnsupportedOperationError, match=says):
                call()
        # The features take it as client= and use the Ignite 3 client it works through (write: no TensorFlow).
        result = ti.write(cache_name, {"v": np.array([1.5, 2.5])}, client=client)
        assert result.rows == 2
        assert client.sql(f"SELECT V FROM {cache_name} ORDER BY V").fetchall() == [[1.5], [2.5]]
        client.destroy_cache(cache_name)
    with pytest.raises(IgniteConnectionError):  # the Ignite 2 handshake, refused (over TLS: the TLS connection closed)
        IgniteClient(address, generation="2", **keywords)
    # The Ignite 2 client alone says where to go (the node drops a handshake it cannot read).
    with pytest.raises(HandshakeError, match="tensorflow_ignite.IgniteClient takes either generation"):
        Ignite2Client(address, timeout=10)


def test_a_table_of_several_key_and_value_columns_on_ignite3(ignite3_node, cache_name: str) -> None:  # type: ignore[no-untyped-def]
    """Keys of several columns are tuples (in key order) or dicts; values of several columns are dicts."""
    options = ignite3_node.client_options()
    with IgniteClient(f"{options.host}:{options.port}", **ConnectionOptions.settings_in(vars(options))) as client:
        client.sql(f"CREATE TABLE {cache_name} (A INT, B VARCHAR, W DOUBLE, NOTE VARCHAR, PRIMARY KEY (A, B))").execute()
        try:
            cache = client.cache(cache_name)
            cache.put((1, "x"), {"W": 1.5, "NOTE": "one"})
            cache.put({"A": 2, "B": "y"}, {"W": 2.5, "NOTE": None})
            assert cache.get((1, "x")) == {"W": 1.5, "NOTE": "one"}
            assert cache.get_all([(1, "x"), (2, "y"), (3, "z")]) == {(1, "x"): {"W": 1.5, "NOTE": "one"},
                                                                    (2, "y"): {"W": 2.5, "NOTE": None}}
            assert sorted(k for k, _ in cache.scan()) == [(1, "x"), (2, "y")]
            with pytest.raises(ti.ConfigurationError, match=r"key of 2 columns \(A, B\)"):
                cache.get(1)
            with pytest.raises(ti.ConfigurationError, match=r"2 value columns \(W, NOTE\)"):
                cache.put((3, "z"), 3.5)
        finally:
            client.destroy_cache(cache_name)
