"""The one pool of things lent one borrower at a time (``client.lease.LeasePool``) and the one dialler of
an Ignite 3 cluster's nodes (``ignite3.nodes.dial_nodes``), without a server."""

from __future__ import annotations

import threading
import time

import pytest

from tensorflow_ignite.client.lease import LeasePool
from tensorflow_ignite.errors import AuthenticationError, IgniteConnectionError


def test_items_are_lent_by_key_and_made_on_demand_up_to_the_limit() -> None:
    made: list[str] = []

    def make(key: str) -> str:
        made.append(key)
        return f"{key}{len(made)}"

    pool: LeasePool[str, str] = LeasePool(make, limit=2)
    pool.add("n1", "first")
    assert pool.take("n1") == "first"
    second = pool.take("n1")  # none free, room for one more
    assert made == ["n1"] and len(pool) == 2 and pool.free("n1") == 0
    got: list[str] = []
    waiter = threading.Thread(target=lambda: got.append(pool.take("n1")))
    waiter.start()
    time.sleep(0.2)
    assert not got, "the limit is reached: a third borrower waits"
    pool.give(second)
    waiter.join(5)
    assert got == [second] and made == ["n1"]
    pool.give("first")
    with pool.lent("n1") as item:
        assert item == "first"
    assert pool.free("n1") == 1


def test_a_key_without_items_or_maker_is_an_error_and_drained_items_are_forgotten() -> None:
    pool: LeasePool[str, object] = LeasePool()
    a = object()
    pool.add("n1", a)
    with pytest.raises(KeyError):
        pool.take("n2")
    assert pool.take("n1") is a
    assert pool.drain() == [a] and len(pool) == 0
    pool.give(a)  # lent before the drain: not taken back
    assert pool.keys() == []


def test_a_failed_make_frees_its_place() -> None:
    calls = []

    def make(key: None) -> object:
        calls.append(key)
        if len(calls) == 1:
            raise IgniteConnectionError("node down")
        return object()

    pool: LeasePool[None, object] = LeasePool(make, limit=1)
    with pytest.raises(IgniteConnectionError):
        pool.take(None)
    assert pool.take(None) is not None and len(calls) == 2


class _Conn:
    def __init__(self, name: str) -> None:
        self.name, self.closed = name, False

    def close(self) -> None:
        self.closed = True


def test_dial_nodes_keeps_one_per_node_and_reports_who_did_not_answer() -> None:
    pytest.importorskip("msgpack")
    from tensorflow_ignite.ignite3.nodes import dial_nodes

    names = {1: "a", 2: "b", 3: "a", 4: "held"}
    opened: list[_Conn] = []

    def open_one(host: str, port: int) -> _Conn:
        if port == 5:
            raise AuthenticationError("bad password")
        if port == 6:
            raise IgniteConnectionError("refused")
        opened.append(_Conn(names[port]))
        return opened[-1]

    nodes, errors = dial_nodes([("h", p) for p in (1, 2, 3, 4, 5, 6)], open_one, lambda c: c.name, held=("held",))
    assert sorted(nodes) == ["a", "b"] and nodes["a"] is opened[0]
    assert [c.closed for c in opened] == [False, False, True, True]  # the second "a" and the held node closed
    assert [type(e) for e in errors] == [AuthenticationError, IgniteConnectionError]
