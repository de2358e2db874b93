"""TLS, client certificates, authentication and secrets, against real nodes with a CA made here.

``test_local_nodes.py`` covers the basics (right settings accepted, wrong
password, plaintext client, unknown CA).  This module adds host-name
verification (on by default; the node is reached through an address its
certificate does not list), the loudly named opt-outs, client certificates and
encrypted keys, authentication failures, and a hunt for secrets: a
distinctive user password and key password must not appear in any ``repr``,
exception, log record, process command line, TF graph, ``element_spec`` or
cache entry the project writes.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.client.connection import Connection, ConnectionSettings, probe
from tensorflow_ignite.client.options import ConnectionOptions
from tensorflow_ignite.errors import (
    AuthenticationError,
    ConfigurationError,
    IgniteConnectionError,
    IgniteError,
    TLSError,
)
from tensorflow_ignite.local.cluster import DEFAULT_PASSWORD, DEFAULT_USER, LocalCluster
from tensorflow_ignite.local.tls import make_tls_material
from tensorflow_ignite.testing.tcp_proxy import TcpProxy

CLI = [sys.executable, "-m", "tensorflow_ignite.cli.main"]
#: A loopback address the node's certificate (localhost, 127.0.0.1) does not list.
OTHER_LOOPBACK = "127.0.0.2"


def _tls(node: LocalCluster, **kw: Any) -> dict[str, Any]:
    """The TLS options (:class:`ConnectionOptions` fields) of a client of ``node``."""
    m = node.tls_material
    assert m is not None
    base: dict[str, Any] = dict(cafile=str(m.ca_cert), certfile=str(m.client_cert), keyfile=str(m.client_key),
                                cert_password=m.client_key_password)
    base.update(kw)
    return base


def _connect(host: str, port: int, tls: dict[str, Any] | None, **kw: Any) -> Connection:
    kw.setdefault("username", DEFAULT_USER)
    kw.setdefault("password", DEFAULT_PASSWORD)
    options = ConnectionOptions(host=host, port=port, timeout=10, **(tls or {}), **kw)
    return Connection(host, port, ConnectionSettings(options, connect_timeout=10))


@pytest.fixture(scope="module")
def other_address(ignite_secure_node: LocalCluster) -> Iterator[tuple[str, int]]:
    """The secure node, reached through 127.0.0.2 (a forwarder: the node listens on 127.0.0.1 only)."""
    with TcpProxy(ignite_secure_node.address(), listen_host=OTHER_LOOPBACK) as proxy:
        yield proxy.address


# ------------------------------------------------------------ host name checks
def test_hostname_is_verified_by_default(ignite_secure_node: LocalCluster, other_address: tuple[str, int]) -> None:
    host, port = other_address
    with pytest.raises(TLSError) as info:
        _connect(host, port, _tls(ignite_secure_node))
    message = str(info.value)
    assert f"not valid for the host name '{OTHER_LOOPBACK}'" in message
    assert f"{host}:{port}" in message and "server_hostname" in message
    assert info.value.address == f"{host}:{port}"


def test_names_in_the_certificate_are_accepted(ignite_secure_node: LocalCluster,
                                               other_address: tuple[str, int]) -> None:
    _, port = ignite_secure_node.address()
    for host in ("localhost", "127.0.0.1"):
        with _connect(host, port, _tls(ignite_secure_node)) as conn:
            assert conn.handshake is not None and conn.handshake.success
    # Reached through another address, checked against a name the certificate lists.
    with _connect(*other_address, _tls(ignite_secure_node, server_hostname="localhost")) as conn:
        assert conn.handshake is not None and conn.handshake.success


def test_skip_hostname_verification_is_explicit_and_loud(ignite_secure_node: LocalCluster,
                                                         other_address: tuple[str, int],
                                                         caplog: pytest.LogCaptureFixture,
                                                         tmp_path: Path) -> None:
    with caplog.at_level(logging.WARNING, logger="tensorflow_ignite.client.tls"):
        with _connect(*other_address, _tls(ignite_secure_node, insecure_skip_hostname_verification=True)) as conn:
            assert conn.handshake is not None and conn.handshake.success
    assert any("host name verification is DISABLED" in r.getMessage() and r.levelno == logging.WARNING
               for r in caplog.records)
    # The certificate chain is still verified: a CA we do not trust is refused.
    other_ca = make_tls_material(tmp_path / "other-ca")
    with pytest.raises(TLSError, match="was not accepted"):
        _connect(*other_address, _tls(ignite_secure_node, insecure_skip_hostname_verification=True,
                                      cafile=str(other_ca.ca_cert)))


def test_dataset_takes_the_host_name_options(ignite_secure_node: LocalCluster, other_address: tuple[str, int],
                                            cache_name: str) -> None:
    # The options the TLS error message recommends are IgniteDataset (and from_sql) arguments too.
    import tensorflow_ignite as ti
    from tensorflow_ignite.data.dataset import close_shared_clients

    settings = ignite_secure_node.client_settings()
    host, port = ignite_secure_node.address()
    with IgniteClient(f"{host}:{port}", **settings) as client:
        ti.write(cache_name, {"x": np.arange(40, dtype=np.int64)}, client=client, progress=False)
    proxy_host, proxy_port = other_address
    try:
        with pytest.raises(TLSError, match="server_hostname"):
            ti.IgniteDataset(cache_name, proxy_host, proxy_port, **settings)
        for option in ({"server_hostname": "localhost"}, {"insecure_skip_hostname_verification": True}):
            ds = ti.IgniteDataset(cache_name, proxy_host, proxy_port, batch_size=64, **settings, **option)
            rows = np.concatenate([b["val"]["x"].numpy() for b in ds])
            assert sorted(rows.tolist()) == list(range(40)), option
    finally:
        close_shared_clients()


def test_ignite_fs_takes_the_host_name_options_and_shares_the_datasets_client(
        ignite_secure_node: LocalCluster, other_address: tuple[str, int], cache_name: str) -> None:
    import tensorflow_ignite as ti
    from tensorflow_ignite import fs
    from tensorflow_ignite.client import close_shared_clients, pooled_options

    settings = ignite_secure_node.client_settings()
    proxy_host, proxy_port = other_address
    saved = fs.config.overrides()
    try:
        fs.configure(host=proxy_host, port=proxy_port, **settings)
        with pytest.raises(TLSError, match="server_hostname"):
            fs.config.store_for("")
        fs.configure(server_hostname="localhost")
        store = fs.config.store_for("")
        store.write_file("/tls/hello.txt", b"through the proxy")
        assert store.read_file("/tls/hello.txt") == b"through the proxy"
        # A dataset with the same options uses the store's client: one connection per node.
        ti.write(cache_name, {"x": np.arange(10, dtype=np.int64)}, client=store.client, progress=False)
        ds = ti.IgniteDataset(cache_name, proxy_host, proxy_port, server_hostname="localhost", **settings)
        assert ds.client is store.client
        assert len([o for o in pooled_options() if o.port == proxy_port]) == 1
    finally:
        fs.config.reset()
        fs.configure(**saved)
        fs.config.close_stores()
        close_shared_clients()


@pytest.mark.parametrize("opt_out", [{"SERVER_HOSTNAME": "localhost"},
                                     {"INSECURE_SKIP_HOSTNAME_VERIFICATION": "true"}],
                         ids=["server_hostname", "insecure_skip_hostname_verification"])
def test_connection_variables_mean_the_same_to_every_feature(
        ignite_secure_node: LocalCluster, other_address: tuple[str, int], cache_name: str,
        monkeypatch: pytest.MonkeyPatch, opt_out: dict[str, str]) -> None:
    """The IGNITE_DATASET_* connection variables alone -- endpoint, credentials, TLS files and the
    host-name options -- reach the cluster through an address its certificate does not list, the
    same way for IgniteDataset, write, ignite:// and a launcher worker: one shared client."""
    import tensorflow as tf

    import tensorflow_ignite as ti
    from tensorflow_ignite import fs
    from tensorflow_ignite.client import close_shared_clients, pooled_options
    from tensorflow_ignite.launcher.worker import WorkerContext, node_options, report

    proxy_host, proxy_port = other_address
    variables = {"HOST": proxy_host, "PORT": str(proxy_port),
                 **{k.upper(): str(v) for k, v in ignite_secure_node.client_settings().items()}}
    for name, value in variables.items():
        monkeypatch.setenv("IGNITE_DATASET_" + name, value)
    saved = fs.config.overrides()
    fs.config.reset()
    close_shared_clients()
    try:
        # Without a host-name option the certificate does not match the address: the variables matter.
        with pytest.raises(TLSError, match="server_hostname"):
            ti.write(cache_name, {"x": np.arange(5, dtype=np.int64)}, progress=False)
        for name, value in opt_out.items():
            monkeypatch.setenv("IGNITE_DATASET_" + name, value)
        expected = ConnectionOptions.from_env()
        assert expected.host == proxy_host and expected.port == proxy_port and expected.uses_tls

        result = ti.write(cache_name, {"x": np.arange(30, dtype=np.int64)}, progress=False)  # writer
        assert result.rows == 30
        ds = ti.IgniteDataset(cache_name, batch_size=64)  # dataset
        assert ds.connection == expected
        assert sorted(np.concatenate([b["val"]["x"].numpy() for b in ds]).tolist()) == list(range(30))
        with tf.io.gfile.GFile(f"ignite:///parity/{cache_name}.txt", "w") as f:  # ignite://
            f.write("same cluster")
        assert fs.config.settings().connection == expected
        assert tf.io.gfile.GFile(f"ignite:///parity/{cache_name}.txt").read() == "same cluster"
        monkeypatch.setenv("TF_IGNITE_JOB_ID", f"parity-{cache_name}")  # launcher worker
        context = WorkerContext.from_env()
        assert (context.host, context.port) == (proxy_host, proxy_port) and node_options() == expected
        report({"rows": 30}, context=context)

        assert pooled_options() == [expected]  # one client for all four
    finally:
        fs.config.reset()
        fs.configure(**saved)
        fs.config.close_stores()
        close_shared_clients()


def test_skip_verify_is_explicit_and_loud(ignite_secure_node: LocalCluster, other_address: tuple[str, int],
                                          caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    other_ca = make_tls_material(tmp_path / "other-ca")
    with caplog.at_level(logging.WARNING, logger="tensorflow_ignite.client.tls"):
        tls = _tls(ignite_secure_node, cafile=str(other_ca.ca_cert), insecure_skip_verify=True)
        with _connect(*other_address, tls) as conn:
            assert conn.handshake is not None and conn.handshake.success
    assert any("certificate verification is DISABLED" in r.getMessage() for r in caplog.records)
    # Through the public client API too.
    host, port = other_address
    m = ignite_secure_node.tls_material
    assert m is not None
    with IgniteClient(f"{host}:{port}", username=DEFAULT_USER, password=DEFAULT_PASSWORD,
                      certfile=str(m.client_cert), keyfile=str(m.client_key),
                      cert_password=m.client_key_password, insecure_skip_verify=True,
                      partition_awareness=False) as client:
        assert isinstance(client.cache_names(), list)


# --------------------------------------------------------- client certificates
def test_node_requiring_client_certificates_refuses_a_client_without_one(
        ignite_secure_node: LocalCluster) -> None:
    host, port = ignite_secure_node.address()
    m = ignite_secure_node.tls_material
    assert m is not None
    with pytest.raises(TLSError) as info:
        _connect(host, port, {"cafile": str(m.ca_cert)})
    assert f"{host}:{port}" in str(info.value)
    assert "client certificate" in str(info.value)


def test_client_certificate_from_another_ca_is_refused(ignite_secure_node: LocalCluster, tmp_path: Path) -> None:
    host, port = ignite_secure_node.address()
    other = make_tls_material(tmp_path / "other-ca")
    tls = _tls(ignite_secure_node, certfile=str(other.client_cert), keyfile=str(other.client_key),
               cert_password=other.client_key_password)
    with pytest.raises(TLSError, match=f"{host}:{port}"):
        _connect(host, port, tls)


def test_encrypted_key_needs_its_password(ignite_secure_node: LocalCluster) -> None:
    host, port = ignite_secure_node.address()
    wrong = "Wr0ng-" + secrets.token_hex(8)
    with pytest.raises(ConfigurationError, match=r"wrong key password\?") as info:
        _connect(host, port, _tls(ignite_secure_node, cert_password=wrong))
    assert wrong not in str(info.value)
    # No password at all: a clear message, and never a prompt on the terminal.
    with pytest.raises(ConfigurationError, match=r"is encrypted: pass its password as cert_password"):
        _connect(host, port, _tls(ignite_secure_node, cert_password=None))


# ------------------------------------------------------------- authentication
def test_authentication_failures(ignite_secure_node: LocalCluster) -> None:
    host, port = ignite_secure_node.address()
    tls = _tls(ignite_secure_node)
    with pytest.raises(AuthenticationError, match=r"requires authentication: pass username=\.\.\. and password"):
        _connect(host, port, tls, username=None, password=None)
    with pytest.raises(AuthenticationError, match="rejected the credentials of user 'nobody'"):
        _connect(host, port, tls, username="nobody", password="whatever")
    with _connect(host, port, tls) as conn:
        assert conn.handshake is not None and conn.handshake.success


# ===================================================================== secrets
@pytest.fixture(scope="module")
def vault(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A node with TLS (client certificates), persistence, authentication and SQL, and a user
    whose password is distinctive (created with SQL ``CREATE USER``)."""
    work = tmp_path_factory.mktemp("ignite-vault")
    cluster = LocalCluster(work_dir=work, name="tfi-vault", nodes=1, tls=True, tls_client_auth=True, auth=True,
                           sql=True, heap_mb=512, region_mb=256)
    try:
        cluster.start()
        user = "tfsecuser"
        password = "UsrPw-" + secrets.token_hex(12)
        with IgniteClient(cluster.addresses(), **cluster.client_settings()) as admin:
            admin.sql(f"CREATE USER \"{user}\" WITH PASSWORD '{password}'").fetchall()
        m = cluster.tls_material
        assert m is not None
        host, port = cluster.address()
        yield {
            "cluster": cluster, "host": host, "port": port, "user": user, "password": password,
            "cafile": str(m.ca_cert), "certfile": str(m.client_cert), "keyfile": str(m.client_key),
            "cert_password": m.client_key_password, "keystore_password": m.keystore_password,
        }
    finally:
        cluster.stop()


def _secrets(v: dict[str, Any]) -> dict[str, str]:
    return {"user password": v["password"], "key password": v["cert_password"],
            "keystore password": v["keystore_password"]}


def _assert_clean(where: str, text: str | bytes, v: dict[str, Any]) -> None:
    data = text if isinstance(text, bytes) else text.encode("utf-8", "replace")
    for name, secret in _secrets(v).items():
        assert secret.encode() not in data, f"the {name} appears in {where}"


def _client_kwargs(v: dict[str, Any]) -> dict[str, Any]:
    return {k: v[k] for k in ("cafile", "certfile", "keyfile", "cert_password")} | {
        "username": v["user"], "password": v["password"]}


def test_the_distinctive_user_can_connect(vault: dict[str, Any]) -> None:
    with IgniteClient(f"{vault['host']}:{vault['port']}", **_client_kwargs(vault)) as client:
        assert isinstance(client.cache_names(), list)


def test_secrets_never_leak(vault: dict[str, Any], caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    import tensorflow as tf

    import tensorflow_ignite
    from tensorflow_ignite.data.dataset import IgniteDataset
    from tensorflow_ignite.fs import config as fs_config
    from tensorflow_ignite.fs.fsspec_fs import IgniteFileSystem

    host, port = vault["host"], vault["port"]
    kwargs = _client_kwargs(vault)
    caplog.set_level(logging.DEBUG)
    seen: list[tuple[str, str]] = []

    def check(where: str, obj: Any) -> None:
        seen.append((where, type(obj).__name__))
        _assert_clean(f"repr({where})", repr(obj), vault)
        _assert_clean(f"str({where})", str(obj), vault)

    # -- objects holding credentials: repr / str
    check("LocalCluster", vault["cluster"])
    check("TLSMaterial", vault["cluster"].tls_material)
    client = IgniteClient(f"{host}:{port}", **kwargs)
    try:
        check("IgniteClient", client)
        check("ConnectionSettings", client.settings)
        check("ConnectionOptions", client.options)
        for conn in client.connections():
            check("Connection", conn)
        result = tensorflow_ignite.write("secret_rows", {"x": np.arange(100, dtype=np.int64),
                                                         "img": np.zeros((100, 2, 2), np.uint8)},
                                         client=client, mode="overwrite")
        assert result.rows == 100

        ds = IgniteDataset("secret_rows", host=host, port=port, batch_size=10, **kwargs)
        check("IgniteDataset", ds)
        check("ConnectionOptions", ds.connection)
        # -- element_spec and the TF graph
        _assert_clean("element_spec", repr(ds.element_spec), vault)
        graph_bytes = ds._as_serialized_graph().numpy()  # TensorFlow's (private) dataset serialization
        _assert_clean("dataset graph", graph_bytes, vault)
        # The op's description names no key or certificate file either: other processes bring their own.
        for what in ("keyfile", "certfile"):
            assert vault[what].encode() not in graph_bytes, f"the {what} path appears in the dataset graph"

        @tf.function
        def total(d: tf.data.Dataset) -> tf.Tensor:
            return d.reduce(tf.constant(0, tf.int64), lambda acc, b: acc + tf.reduce_sum(b["val"]["x"]))

        assert int(total(ds)) == sum(range(100))
        graph = total.get_concrete_function(ds).graph.as_graph_def()
        _assert_clean("tf.function graph", str(graph), vault)
        _assert_clean("tf.function graph (bytes)", graph.SerializeToString(), vault)

        # -- the filesystem: settings, stores, fsspec, TF
        fs_config.configure(**{k: v for k, v in kwargs.items()})
        try:
            check("FsSettings", fs_config.settings())
            tf.io.gfile.makedirs(f"ignite://{host}:{port}/secret-test")
            with tf.io.gfile.GFile(f"ignite://{host}:{port}/secret-test/a.txt", "w") as f:
                f.write("payload")
            assert tf.io.gfile.exists(f"ignite://{host}:{port}/secret-test/a.txt")
            store = fs_config.store_for(f"{host}:{port}")
            check("IgniteFileStore", store)
            fs = IgniteFileSystem(host=host, port=port, **kwargs)
            check("IgniteFileSystem", fs)
            assert fs.cat(f"ignite://{host}:{port}/secret-test/a.txt") == b"payload"
        finally:
            fs_config.reset()

        # -- every cache entry on the cluster (schema records, file store, anything else)
        names = client.cache_names()
        assert "__tensorflow_ignite_schemas" in names
        scanned = 0
        for name in names:
            for page in client.cache(name).scan_pages(page_size=500):
                _assert_clean(f"cache {name!r}", bytes(page.rows), vault)
                scanned += page.row_count
        assert scanned >= 100
    finally:
        client.close()

    # -- a failed authentication: the exception (and its chain) names no password
    wrong = "BadPw-" + secrets.token_hex(8)
    with pytest.raises(AuthenticationError) as info:
        IgniteClient(f"{host}:{port}", **(kwargs | {"password": wrong}))
    exc: BaseException | None = info.value
    while exc is not None:
        _assert_clean("authentication error", f"{exc!r} {exc} {exc.args}", vault)
        assert wrong not in str(exc)
        exc = exc.__cause__ or exc.__context__
    # A bad key password never echoes it either.
    with pytest.raises(ConfigurationError) as cinfo:
        IgniteClient(f"{host}:{port}", **(kwargs | {"cert_password": wrong}))
    assert wrong not in str(cinfo.value)

    # -- logs at DEBUG of everything above
    text = "\n".join(f"{r.name} {r.getMessage()} {r.args!r}" for r in caplog.records)
    assert caplog.records, "nothing was logged at DEBUG: the check would be empty"
    _assert_clean("log records", text, vault)
    assert wrong not in text
    assert len(seen) >= 10


def _cmdlines() -> dict[int, bytes]:
    out = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                out[int(entry.name)] = (entry / "cmdline").read_bytes()
            except OSError:
                pass
    return out


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            kids += [int(k) for k in (task / "children").read_text().split()]
    except OSError:
        pass
    return kids


# A process that did not build the dataset runs its serialized graph (as a tf.data service worker
# would): first without credentials in its environment, then with them.
REBUILD_ELSEWHERE = """
import os, pickle, sys
import tensorflow_ignite  # noqa: F401 -- registers the op and its rebuilder
import tensorflow as tf
from tensorflow.python.data.ops import dataset_ops
from tensorflow.python.ops import gen_experimental_dataset_ops

graph, spec = pickle.loads(open(sys.argv[1], "rb").read())
def rows():
    ds = dataset_ops._VariantDataset(gen_experimental_dataset_ops.dataset_from_graph(graph), spec)
    return sum(int(b["key"].shape[0]) for b in ds)
try:
    rows()
    print("UNEXPECTED: read without credentials")
except tf.errors.InvalidArgumentError as exc:
    print("WITHOUT:", exc.message.splitlines()[0])
os.environ.update(dict(a.split("=", 1) for a in sys.argv[2:]))
print("ROWS:", rows())
"""


def test_a_dataset_rebuilt_elsewhere_takes_credentials_from_that_process(vault: dict[str, Any],
                                                                        tmp_path: Path) -> None:
    import pickle

    import tensorflow_ignite
    from tensorflow_ignite import IgniteDataset

    host, port = vault["host"], vault["port"]
    kwargs = _client_kwargs(vault)
    with IgniteClient(f"{host}:{port}", **kwargs) as client:
        tensorflow_ignite.write("rebuilt_rows", {"x": np.arange(70, dtype=np.int64)}, client=client,
                                mode="overwrite", progress=False)
    ds = IgniteDataset("rebuilt_rows", host=host, port=port, batch_size=16, **kwargs)
    graph = tmp_path / "graph.pickle"
    # _as_serialized_graph: TensorFlow's (private) serialization, what the tf.data service ships.
    graph.write_bytes(pickle.dumps((ds._as_serialized_graph().numpy(), ds.element_spec)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("IGNITE_DATASET_")}
    given = [f"IGNITE_DATASET_USERNAME={vault['user']}", f"IGNITE_DATASET_PASSWORD={vault['password']}",
             f"IGNITE_DATASET_CERTFILE={vault['certfile']}", f"IGNITE_DATASET_KEYFILE={vault['keyfile']}",
             f"IGNITE_DATASET_CERT_PASSWORD={vault['cert_password']}"]
    proc = subprocess.run([sys.executable, "-c", REBUILD_ELSEWHERE, str(graph), *given], capture_output=True,
                          text=True, timeout=240, env={**env, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = dict(line.split(": ", 1) for line in proc.stdout.splitlines() if ": " in line)
    without = lines.get("WITHOUT", "")
    for variable in ("IGNITE_DATASET_PASSWORD", "IGNITE_DATASET_CERTFILE and IGNITE_DATASET_KEYFILE",
                     "IGNITE_DATASET_CERT_PASSWORD"):
        assert variable in without, f"the error names {variable}: {without!r}"
    _assert_clean("the rebuild error", without, vault)
    assert lines.get("ROWS") == "70", proc.stdout


def test_secrets_not_on_command_lines(vault: dict[str, Any], tmp_path: Path) -> None:
    cluster: LocalCluster = vault["cluster"]
    # The node JVMs get the keystore password through their environment, never argv.
    for m in cluster.members:
        cmdline = Path(f"/proc/{m.pid}/cmdline").read_bytes()
        assert b"NodeLauncher" in cmdline
        _assert_clean(f"the command line of node {m.name}", cmdline, vault)

    env = {**os.environ, "IGNITE_PASSWORD": vault["password"], "IGNITE_CERT_PASSWORD": vault["cert_password"],
           "IGNITE_FS_USERNAME": vault["user"], "IGNITE_FS_PASSWORD": vault["password"],
           "IGNITE_FS_CAFILE": vault["cafile"], "IGNITE_FS_CERTFILE": vault["certfile"],
           "IGNITE_FS_KEYFILE": vault["keyfile"], "IGNITE_FS_CERT_PASSWORD": vault["cert_password"]}
    np.savez(tmp_path / "rows.npz", a=np.arange(20_000, dtype=np.int64))
    load = subprocess.Popen(
        [*CLI, "load", "secret_cli_rows", str(tmp_path / "rows.npz"), "--host", vault["host"],
         "--port", str(vault["port"]), "--username", vault["user"], "--cafile", vault["cafile"],
         "--certfile", vault["certfile"], "--keyfile", vault["keyfile"], "--mode", "overwrite", "--no-progress"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    board = None
    try:
        # Every process on the machine while ours run (the CLI, TensorBoard's child, the JVMs).
        board = subprocess.Popen(
            [*CLI, "tensorboard", "--logdir", f"ignite://{vault['host']}:{vault['port']}/secret-runs",
             "--http-port", "0", "--timeout", "120"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        board_child_seen = False
        snapshots = 0
        while time.monotonic() < deadline:
            for pid, cmdline in _cmdlines().items():
                _assert_clean(f"/proc/{pid}/cmdline", cmdline, vault)
            snapshots += 1
            kids = _children(board.pid)
            board_child_seen |= any(b"tensorflow_ignite.cli.tensorboard" in Path(f"/proc/{k}/cmdline").read_bytes()
                                    for k in kids if Path(f"/proc/{k}/cmdline").exists())
            if board_child_seen and load.poll() is not None:
                break
            time.sleep(0.2)  # polling process lists, bounded by the deadline
        out, err = load.communicate(timeout=120)
        assert load.returncode == 0, err.decode()
        _assert_clean("ignite-tf load output", out + err, vault)
        assert board_child_seen, "the TensorBoard child never appeared"
        assert snapshots >= 2
        ps = subprocess.run(["ps", "-eo", "pid,args", "ww"], capture_output=True, timeout=30).stdout
        _assert_clean("ps output", ps, vault)
    finally:
        # The wrapper's children, known before it ends: one left running would hold its pipes open.
        board_kids = _children(board.pid) if board is not None else []
        for proc in (board, load):
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
        for kid in board_kids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(kid, signal.SIGKILL)
        if board is not None:
            out, err = board.communicate(timeout=30)
            _assert_clean("ignite-tf tensorboard output", out + err, vault)


def test_failed_authentication_error_in_the_cli_names_no_password(vault: dict[str, Any], tmp_path: Path) -> None:
    wrong = "CliBadPw-" + secrets.token_hex(8)
    np.savez(tmp_path / "rows.npz", a=np.arange(5))
    proc = subprocess.run(
        [*CLI, "load", "secret_cli_fail", str(tmp_path / "rows.npz"), "--host", vault["host"],
         "--port", str(vault["port"]), "--username", vault["user"], "--cafile", vault["cafile"],
         "--certfile", vault["certfile"], "--keyfile", vault["keyfile"], "--no-progress"],
        env={**os.environ, "IGNITE_PASSWORD": wrong, "IGNITE_CERT_PASSWORD": vault["cert_password"]},
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1
    assert f"rejected the credentials of user '{vault['user']}'" in proc.stderr
    assert wrong not in proc.stderr + proc.stdout and "Traceback" not in proc.stderr
    _assert_clean("ignite-tf load error", proc.stderr + proc.stdout, vault)


def test_errors_are_typed(vault: dict[str, Any]) -> None:
    # Wrong port on a TLS cluster: still a connection error, not a TLS one.
    with pytest.raises(IgniteConnectionError) as info:
        probe(vault["host"], 1, **{k: vault[k] for k in ("cafile", "certfile", "keyfile", "cert_password")})
    assert isinstance(info.value, IgniteError) and not isinstance(info.value, TLSError)
