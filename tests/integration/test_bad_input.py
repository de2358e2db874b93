"""Bad input gets a clear, typed error that says what to do -- never a hang or a traceback.

Wrong host/port, something that is not Ignite on the port (an HTTP server, a
server sending garbage or nothing, a frame header claiming a gigabyte), a real
node that stops answering in the middle of a page (a forwarding proxy in front
of it stops forwarding), a missing cache, mixed types in one cache, malformed
``ignite://`` URIs through ``tf.io.gfile`` and fsspec, and bad ``ignite-tf``
arguments.  The servers here are tiny sockets standing in for *wrong* peers;
every Ignite in these tests is a real node.
"""

from __future__ import annotations

import http.server
import os
import socket
import subprocess
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.errors import (
    CacheNotFoundError,
    ConfigurationError,
    ConnectionTimeoutError,
    HandshakeError,
    IgniteConnectionError,
    SchemaError,
)
from tensorflow_ignite.local.cluster import LocalCluster
from tensorflow_ignite.protocol.codes import TypeCode
from tensorflow_ignite.protocol.values import BinaryObject, Typed

from tensorflow_ignite.testing.tcp_proxy import TcpProxy

CLI = [sys.executable, "-m", "tensorflow_ignite.cli.main"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _FakePeer:
    """A listening socket whose connections are handled by ``serve(conn)`` (a wrong peer)."""

    def __init__(self, serve: Callable[[socket.socket], None]) -> None:
        self._server = socket.create_server(("127.0.0.1", 0))
        self._server.settimeout(0.2)
        self.port = self._server.getsockname()[1]
        self._serve = serve
        self._stop = threading.Event()
        self._conns: list[socket.socket] = []
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def close(self) -> None:
        self._stop.set()
        self._server.close()
        for c in self._conns:
            try:
                c.close()
            except OSError:
                pass
        self._thread.join(timeout=5)


@pytest.fixture
def fake_peer() -> Iterator[Callable[[Callable[[socket.socket], None]], _FakePeer]]:
    peers: list[_FakePeer] = []

    def make(serve: Callable[[socket.socket], None]) -> _FakePeer:
        peer = _FakePeer(serve)
        peers.append(peer)
        return peer

    yield make
    for p in peers:
        p.close()


def _hold_open(conn: socket.socket, first: bytes = b"") -> None:
    """Send ``first`` (maybe nothing), then keep the connection open until the client leaves."""
    try:
        if first:
            conn.sendall(first)
        conn.settimeout(30)
        while conn.recv(4096):
            pass
    except OSError:
        pass


# ------------------------------------------------------------------ wrong peers
def test_nothing_listening_names_the_address_and_says_what_to_do() -> None:
    port = _free_port()
    start = time.monotonic()
    with pytest.raises(IgniteConnectionError) as info:
        IgniteClient(f"127.0.0.1:{port}", connect_timeout=5)
    message = str(info.value)
    assert f"127.0.0.1:{port}" in message and "Is a node running there" in message
    assert info.value.address == f"127.0.0.1:{port}"
    assert not isinstance(info.value, HandshakeError)
    assert time.monotonic() - start < 5


def test_unknown_host_name_is_a_clear_connection_error() -> None:
    with pytest.raises(IgniteConnectionError) as info:
        IgniteClient("no-such-node.invalid:10800", connect_timeout=5)
    message = str(info.value)
    assert "cannot connect to Ignite at no-such-node.invalid:10800" in message
    assert "Is a node running there" in message and not isinstance(info.value, HandshakeError)


def test_http_server_on_the_port_is_not_ignite() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    server.timeout = 1
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    port = server.server_address[1]
    try:
        start = time.monotonic()
        with pytest.raises(HandshakeError) as info:
            IgniteClient(f"127.0.0.1:{port}", timeout=3, connect_timeout=3)
        message = str(info.value)
        assert f"127.0.0.1:{port}" in message
        assert "client connector" in message and "10800" in message
        assert time.monotonic() - start < 10
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_server_sending_a_text_banner_is_not_ignite(fake_peer) -> None:  # type: ignore[no-untyped-def]
    peer = fake_peer(lambda c: _hold_open(c, b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"))
    with pytest.raises(HandshakeError, match=r"does not speak the Ignite thin-client protocol") as info:
        IgniteClient(f"127.0.0.1:{peer.port}", timeout=5)
    # The bytes seen are shown, so a human recognises the protocol that answered.
    assert "b'HTTP'" in str(info.value) and f"127.0.0.1:{peer.port}" in str(info.value)


def test_server_sending_garbage_frame_is_not_ignite(fake_peer) -> None:  # type: ignore[no-untyped-def]
    peer = fake_peer(lambda c: _hold_open(c, b"\x05\x00\x00\x00\x01\x77\x77\x77\x77"))
    with pytest.raises(HandshakeError, match=r"does not speak the Ignite thin-client protocol"):
        IgniteClient(f"127.0.0.1:{peer.port}", timeout=5)


def test_silent_server_times_out_the_handshake(fake_peer) -> None:  # type: ignore[no-untyped-def]
    peer = fake_peer(_hold_open)
    start = time.monotonic()
    with pytest.raises(HandshakeError, match=r"did not answer the thin-client handshake within 1\.0s"):
        IgniteClient(f"127.0.0.1:{peer.port}", timeout=1.0)
    assert time.monotonic() - start < 8


def test_frame_header_claiming_a_gigabyte_allocates_only_what_arrives(fake_peer) -> None:  # type: ignore[no-untyped-def]
    # 1 GiB is within the frame limit, so the claim is believed -- but only as far
    # as bytes arrive: nothing close to a gigabyte may be allocated before the timeout.
    peer = fake_peer(lambda c: _hold_open(c, (1 << 30).to_bytes(4, "little") + b"\x01" * 1000))
    tracemalloc.start()
    try:
        with pytest.raises(HandshakeError, match="did not answer"):
            IgniteClient(f"127.0.0.1:{peer.port}", timeout=1.5)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, f"peak {peak >> 20} MiB for a frame that never arrived"


def test_frame_header_beyond_the_limit_is_refused_at_once(fake_peer) -> None:  # type: ignore[no-untyped-def]
    peer = fake_peer(lambda c: _hold_open(c, (0x7FFFFFFF).to_bytes(4, "little")))
    start = time.monotonic()
    with pytest.raises(HandshakeError, match=r"claiming 2147483647 bytes"):
        IgniteClient(f"127.0.0.1:{peer.port}", timeout=20)
    assert time.monotonic() - start < 5  # refused on the header, not after the timeout


# ------------------------------------------------------- a node that stops answering
@pytest.fixture(scope="module")
def filled_cache(ignite_node: LocalCluster) -> Iterator[str]:
    name = "bad_input_rows"
    with IgniteClient(ignite_node.addresses()) as client:
        cache = client.get_or_create_cache(name)
        cache.put_all({i: "x" * 200 for i in range(4000)})
    yield name
    with IgniteClient(ignite_node.addresses()) as client:
        client.destroy_cache(name)


def test_node_that_stops_answering_mid_page_times_out(ignite_node: LocalCluster, filled_cache: str) -> None:
    timeout = 2.0
    with TcpProxy(ignite_node.address()) as proxy:
        # Through the proxy only (no partition awareness: no direct connections to the node).
        client = IgniteClient(proxy.url, timeout=timeout, partition_awareness=False)
        try:
            rows = client.cache(filled_cache).scan(page_size=200)
            first = [next(rows) for _ in range(10)]
            assert len(first) == 10
            proxy.stall_after(3000)  # part of a later page, then nothing
            start = time.monotonic()
            with pytest.raises(ConnectionTimeoutError) as info:
                for _ in rows:
                    pass
            elapsed = time.monotonic() - start
            assert proxy.stalled.is_set()
            message = str(info.value)
            assert proxy.url in message and f"within {timeout}s" in message
            assert info.value.address == proxy.url
            assert elapsed < timeout + 10, f"took {elapsed:.1f}s"
            # The half-read connection is not reused: the next request opens a new one.
            proxy.release()
            assert client.cache(filled_cache).get(7) == "x" * 200
        finally:
            client.close()


def test_dataset_over_a_stalled_node_fails_in_bounded_time(ignite_node: LocalCluster, filled_cache: str) -> None:
    import tensorflow as tf

    from tensorflow_ignite.data.dataset import IgniteDataset

    timeout = 2.0
    with TcpProxy(ignite_node.address()) as proxy:
        client = IgniteClient(proxy.url, timeout=timeout, partition_awareness=False)
        try:
            ds = IgniteDataset(filled_cache, client=client, page_size=100, num_parallel_reads=1)
            it = iter(ds)
            next(it)
            proxy.stall_after(0)
            start = time.monotonic()
            with pytest.raises((tf.errors.OpError, IgniteConnectionError)) as info:
                for _ in it:
                    pass
            elapsed = time.monotonic() - start
            # Failover may retry within the client timeout; then the error names the node.
            assert proxy.url in str(info.value), str(info.value)[:500]
            print(f"stalled dataset failed after {elapsed:.1f}s")
            assert elapsed < 4 * timeout + 20, f"took {elapsed:.1f}s"
        finally:
            proxy.release()
            client.close()


# ---------------------------------------------------------------- missing cache
def test_missing_cache_is_named(ignite_node: LocalCluster) -> None:
    from tensorflow_ignite.data.dataset import IgniteDataset

    host, port = ignite_node.address()
    with IgniteClient(ignite_node.addresses()) as client:
        with pytest.raises(CacheNotFoundError, match=r"cache 'no_such_cache' does not exist.*create it first"):
            client.cache("no_such_cache").get(1)
        with pytest.raises(CacheNotFoundError, match="no_such_cache"):
            list(client.cache("no_such_cache").scan())
    with pytest.raises(CacheNotFoundError, match=r"cache 'no_such_cache' does not exist on the cluster at"):
        IgniteDataset("no_such_cache", host=host, port=port)


# ------------------------------------------------------------------ mixed types
def test_cache_mixing_object_types_is_a_schema_error(ignite_node: LocalCluster, cache_name: str) -> None:
    import tensorflow as tf

    from tensorflow_ignite.data.dataset import IgniteDataset

    with IgniteClient(ignite_node.addresses()) as client:
        cache = client.get_or_create_cache(cache_name)
        try:
            for i in range(50):
                value = (BinaryObject("MixA", {"x": Typed(i, TypeCode.INT)}) if i % 2 == 0
                         else BinaryObject("MixB", {"y": f"s{i}"}))
                cache.put(i, value)
            with pytest.raises((SchemaError, tf.errors.OpError)) as info:
                ds = IgniteDataset(cache_name, client=client, value_type="MixA")
                for _ in ds:
                    pass
            message = str(info.value)
            assert "mixes object types" in message and cache_name in message
        finally:
            client.destroy_cache(cache_name)


def test_field_with_two_types_is_a_schema_error(ignite_node: LocalCluster, cache_name: str) -> None:
    import tensorflow as tf

    from tensorflow_ignite.data.dataset import IgniteDataset

    with IgniteClient(ignite_node.addresses()) as client:
        cache = client.get_or_create_cache(cache_name)
        try:
            # Same binary type, field "v" written as an int in some rows and a string in others.
            for i in range(40):
                v = Typed(i, TypeCode.INT) if i % 3 else f"text{i}"
                cache.put(i, BinaryObject("TwoTypes", {"v": v}))
            with pytest.raises((SchemaError, tf.errors.OpError, ConfigurationError)) as info:
                ds = IgniteDataset(cache_name, client=client)
                for _ in ds:
                    pass
            message = str(info.value)
            # Names the cache, the column and the clash, and says what to do.
            assert cache_name in message and ".v'" in message, message[:500]
            assert "INT (3)" in message and "STRING (9)" in message, message[:500]
            assert "Fix the data" in message, message[:500]
        finally:
            client.destroy_cache(cache_name)


def test_unsupported_value_type_is_refused_when_the_dataset_is_built(ignite_node: LocalCluster,
                                                                     cache_name: str) -> None:
    from tensorflow_ignite.data.dataset import IgniteDataset
    from tensorflow_ignite.protocol.values import Map

    with IgniteClient(ignite_node.addresses()) as client:
        cache = client.get_or_create_cache(cache_name)
        try:
            for i in range(10):
                cache.put(i, Map({"a": i}))
            with pytest.raises(SchemaError) as info:
                IgniteDataset(cache_name, client=client)
            message = str(info.value)
            assert "MAP" in message and "'val'" in message and "scan()" in message, message
        finally:
            client.destroy_cache(cache_name)


def test_mixed_scalar_types_fail_with_the_row_and_column(ignite_node: LocalCluster, cache_name: str) -> None:
    import tensorflow as tf

    from tensorflow_ignite.data.dataset import IgniteDataset

    with IgniteClient(ignite_node.addresses()) as client:
        cache = client.get_or_create_cache(cache_name)
        try:
            for i in range(20):
                cache.put(i, i if i % 2 else f"s{i}")  # longs and strings in one cache
            with pytest.raises((SchemaError, tf.errors.OpError)) as info:
                for _ in IgniteDataset(cache_name, client=client):
                    pass
            message = str(info.value)
            assert cache_name in message and "column 'val'" in message and "holds type code" in message, message
        finally:
            client.destroy_cache(cache_name)


def test_max_frame_setting_refuses_larger_frames(ignite_node: LocalCluster) -> None:
    from tensorflow_ignite.client.connection import Connection, ConnectionSettings
    from tensorflow_ignite.client.options import ConnectionOptions

    host, port = ignite_node.address()
    with pytest.raises(HandshakeError, match=r"claiming \d+ bytes .*limit 8\)"):
        Connection(host, port, ConnectionSettings(ConnectionOptions(timeout=10), max_frame=8))
    with Connection(host, port, ConnectionSettings(ConnectionOptions(timeout=10), max_frame=1 << 20)) as conn:
        assert conn.handshake is not None and conn.handshake.success


# -------------------------------------------------------------- malformed URIs
_BAD_URIS = [
    ("ignite://user:S3cr3tUriPass@localhost:10800/x", "credentials in ignite:// URIs are not supported"),
    ("ignite://localhost:abc/x", "bad port 'abc'"),
    ("ignite://localhost:99999/x", "port 99999 out of range"),
    ("ignite://localhost:10800/x?password=S3cr3tUriPass", "query strings are not supported"),
    ("ignite://[::1/x", "malformed ignite:// host"),
    ("igfs://[::1]junk/x", "malformed ignite:// host"),
]


@pytest.mark.parametrize("uri,expected", _BAD_URIS)
def test_malformed_uri_through_gfile(uri: str, expected: str) -> None:
    import tensorflow as tf

    import tensorflow_ignite.fs  # noqa: F401  (registers ignite://)

    # (Not listdir: TensorFlow's own Python wrapper turns any error into "Could not
    # find directory <uri>", repeating the URI as given -- outside the plugin's reach.)
    for op in (lambda: tf.io.gfile.exists(uri), lambda: tf.io.gfile.GFile(uri, "w").write("x"),
               lambda: tf.io.gfile.stat(uri), lambda: tf.io.gfile.makedirs(uri)):
        with pytest.raises(tf.errors.InvalidArgumentError) as info:
            op()
        message = str(info.value)
        assert expected in message and "S3cr3tUriPass" not in message, message


@pytest.mark.parametrize("uri,expected", _BAD_URIS)
def test_malformed_uri_through_fsspec(uri: str, expected: str) -> None:
    import fsspec

    with pytest.raises(ConfigurationError) as info:
        with fsspec.open(uri, "rb") as f:
            f.read()
    message = str(info.value)
    assert expected in message and "S3cr3tUriPass" not in message, message


# ---------------------------------------------------------------- CLI arguments
def _cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize(
    "args,expected",
    [
        (["node", "start", "--nodes", "0"], "argument --nodes: must be between 1 and 10"),
        (["node", "start", "--nodes", "11"], "argument --nodes: must be between 1 and 10"),
        (["node", "start", "--nodes", "two"], "invalid int value: 'two'"),
        (["node", "start", "--client-port", "70000"], "argument --client-port: must be between 0 and 65535"),
        (["node", "start", "--heap-mb", "0"], "argument --heap-mb: must be 64 or more"),
        (["node", "start", "--region-mb", "-5"], "argument --region-mb: must be 16 or more"),
        (["node", "start", "--timeout", "0"], "argument --timeout: must be a positive number"),
        (["node", "stop"], "no nodes were started from"),
        (["node", "frobnicate"], "invalid choice: 'frobnicate'"),
        (["load"], "the following arguments are required: CACHE, PATH"),
        (["load", "c", "data.npz", "--port", "0"], "argument --port: must be between 1 and 65535"),
        (["load", "c", "data.npz", "--port", "http"], "invalid int value: 'http'"),
        (["load", "c", "data.npz", "--batch-bytes", "0"], "argument --batch-bytes: must be a positive size"),
        (["load", "c", "data.npz", "--backups", "-1"], "argument --backups: must be 0 or more"),
        (["load", "c", "data.npz", "--mode", "replace"], "invalid choice: 'replace'"),
        (["load", "c", "data.npz", "--keyfile", "k.pem"], "--keyfile needs --certfile"),
        (["load", "c", "no-such-file.npz", "--port", "{free}"], "no-such-file.npz"),
        (["load", "c", "data.txt", "--port", "{free}"], "expected a .npz, .csv or .parquet file"),
        (["load", "c", "data.npz", "--port", "{free}"], "cannot connect to Ignite at 127.0.0.1:{free}"),
        (["load", "c", "data.npz", "--username", "bob", "--port", "{free}"], "needs a password: set $IGNITE_PASSWORD"),
        (["tensorboard"], "the following arguments are required: --logdir"),
        (["tensorboard", "--logdir", ""], "argument --logdir: must not be empty"),
        (["tensorboard", "--logdir", "ignite://u:S3cr3tCliPass@h/runs"], "credentials in ignite:// URIs"),
        (["tensorboard", "--logdir", "ignite://h:port/runs"], "bad port 'port'"),
        (["tensorboard", "--logdir", "ignite://h/runs", "--http-port", "99999"], "argument --http-port: must be between 0 and 65535"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else None,
)
def test_bad_cli_arguments(args: list[str], expected: str, tmp_path: Path) -> None:
    free = str(_free_port())
    np.savez(tmp_path / "data.npz", a=np.arange(3))
    (tmp_path / "data.txt").write_text("a\n1\n")
    args = [a.replace("{free}", free) for a in args]
    if args[:2] == ["node", "stop"]:
        args += ["--work-dir", str(tmp_path / "nowhere")]
    if args[:2] == ["node", "start"]:
        args += ["--work-dir", str(tmp_path / "nodes")]
    proc = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env={k: v for k, v in os.environ.items() if k != "IGNITE_PASSWORD"},
                          stdin=subprocess.DEVNULL)
    assert proc.returncode != 0, proc.stdout
    assert expected.replace("{free}", free) in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    assert "S3cr3tCliPass" not in proc.stderr + proc.stdout
    # Nothing was started: a bad node command leaves no JVM behind.
    if args[:2] == ["node", "start"]:
        assert not (tmp_path / "nodes" / "cluster.json").exists() or LocalCluster.load_state(
            tmp_path / "nodes").java_pids() == []  # type: ignore[union-attr]
