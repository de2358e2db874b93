"""The process's client pool (``client/pool.py``) against a real node: fork safety and dialling
outside its lock."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from tensorflow_ignite.client import ConnectionOptions, close_shared_clients, shared_client
from tensorflow_ignite.errors import IgniteConnectionError
from tensorflow_ignite.local.cluster import LocalCluster


def test_a_forked_child_connects_afresh_and_the_parent_keeps_its_client(ignite_node: LocalCluster,
                                                                        cache_name: str) -> None:
    host, port = ignite_node.address()
    options = ConnectionOptions(host=host, port=port)
    close_shared_clients()
    parent = shared_client(options)
    cache = parent.get_or_create_cache(cache_name)
    cache.put(1, "parent")
    parent_connections = parent.connections()
    sent = [c.requests_sent for c in parent_connections]
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what it saw through the pipe, never return into pytest
        code = 1
        try:
            child = shared_client(options)
            child.cache(cache_name).put(2, "child")
            read = child.cache(cache_name).get(1)
            fresh = child is not parent and not {id(c) for c in child.connections()} & {
                id(c) for c in parent_connections}
            untouched = [c.requests_sent for c in parent_connections] == sent
            code = 0 if fresh and untouched and read == "parent" else 2
        finally:
            os.write(write_end, bytes([code]))
            os._exit(code)
    os.close(write_end)
    try:
        answer = os.read(read_end, 1)
    finally:
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
    assert answer == b"\x00", "the child reused the parent's client or sockets, or could not use its own"
    assert os.waitstatus_to_exitcode(status) == 0
    # The parent's client still works on its own connections after the child used (and left) the pool.
    assert shared_client(options) is parent
    assert cache.get(2) == "child" and cache.get(1) == "parent"
    assert all(not c.closed for c in parent_connections)
    close_shared_clients()


def test_dialling_one_cluster_does_not_hold_up_the_others(ignite_node: LocalCluster) -> None:
    # A listener that accepts and never answers: a client dialling it waits out its timeout.
    silent = socket.create_server(("127.0.0.1", 0))
    silent.listen(8)
    stuck = ConnectionOptions(host="127.0.0.1", port=silent.getsockname()[1], timeout=6.0)
    host, port = ignite_node.address()
    close_shared_clients()
    failures: list[BaseException] = []
    started = threading.Event()

    def dial_stuck() -> None:
        started.set()
        try:
            shared_client(stuck)
        except IgniteConnectionError as exc:
            failures.append(exc)

    thread = threading.Thread(target=dial_stuck)
    thread.start()
    held: socket.socket | None = None
    try:
        assert started.wait(10)
        silent.settimeout(10)
        held, _ = silent.accept()  # the stuck client is now waiting for a handshake answer
        began = time.monotonic()
        client = shared_client(ConnectionOptions(host=host, port=port))  # another cluster, meanwhile
        assert client.cache_names() is not None
        waited = time.monotonic() - began
        assert waited < 4.0, f"a client for another cluster waited {waited:.1f}s behind a stuck dial"
        assert thread.is_alive(), "the stuck dial ended before the other client was asked for"
    finally:
        thread.join(30)
        if held is not None:
            held.close()
        silent.close()
        close_shared_clients()
    assert failures and isinstance(failures[0], IgniteConnectionError)


@pytest.fixture(autouse=True)
def _no_pooled_clients_left() -> Iterator[None]:
    yield
    close_shared_clients()
