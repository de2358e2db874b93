"""The bind fence: a job's listeners on the worker's own address, never on every interface.

The library is real (built by ``make native``), loaded with LD_PRELOAD into real
processes: plain sockets and a real TensorFlow gRPC server, which on its own
listens on every interface.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tensorflow_ignite.launcher import fence
from tensorflow_ignite.native import bind_fence

PROBE = textwrap.dedent("""
    import json, socket, sys
    out = {}
    s4 = socket.socket(socket.AF_INET); s4.bind(("0.0.0.0", 0)); out["v4_any"] = s4.getsockname()[0]
    s6 = socket.socket(socket.AF_INET6); s6.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s6.bind(("::", 0)); out["v6_any"] = s6.getsockname()[0]
    lo = socket.socket(socket.AF_INET); lo.bind(("127.0.0.1", 0)); out["v4_loopback"] = lo.getsockname()[0]
    print(json.dumps(out))
""")

TF_SERVER = textwrap.dedent("""
    import json, os, socket
    import tensorflow as tf
    port = json.loads(os.environ["TF_CONFIG"])["cluster"]["worker"][0].rsplit(":", 1)[1]
    tf.distribute.Server(tf.train.ClusterSpec({"worker": [f"127.0.0.1:{port}"]}), job_name="worker",
                         task_index=0, start=True)
    listening = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in open(table).read().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == int(port):
                listening.append(local.rsplit(":", 1)[0])
    print(json.dumps(listening))
""")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _tf_config(host: str, port: int = 2222) -> str:
    return json.dumps({"cluster": {"worker": [f"{host}:{port}", "10.255.0.9:2222"]},
                       "task": {"type": "worker", "index": 0}})


def _run(code: str, env: dict[str, str]) -> str:
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def library() -> Path:
    path = bind_fence.build()  # up to date after `make setup`; compiles in ~0.2 s otherwise
    assert Path(fence.fence_library()) == path
    return path


def test_the_shim_and_the_builder_name_the_same_library_and_variable() -> None:
    assert fence.FILENAME == bind_fence.FILENAME and fence.ADDRESS_ENV == bind_fence.ADDRESS_ENV


def test_the_fence_address_is_the_workers_own_tf_config_entry_unless_the_operator_says() -> None:
    assert fence.fence_address({"TF_CONFIG": _tf_config("127.0.0.1")}) == "127.0.0.1"
    assert fence.fence_address({"TF_CONFIG": _tf_config("[::1]")}) == "::1"
    assert fence.fence_address({"TF_CONFIG": _tf_config("localhost")}) in ("127.0.0.1", "::1")
    # The operator's setting (the node's environment) wins; `*` means every interface.
    assert fence.fence_address({"TF_CONFIG": _tf_config("127.0.0.1"), fence.BIND_HOST_ENV: "127.0.0.2"}) \
        == "127.0.0.2"
    assert fence.fence_address({"TF_CONFIG": _tf_config("127.0.0.1"), fence.BIND_HOST_ENV: "*"}) is None
    assert fence.fence_address({"TF_CONFIG": _tf_config("0.0.0.0")}) is None
    assert fence.fence_address({}) is None and fence.fence_address({"TF_CONFIG": "not json"}) is None
    with pytest.raises(fence.FenceUnavailable, match="does not resolve"):
        fence.fence_address({fence.BIND_HOST_ENV: "no-such-host.invalid"})


def test_wildcard_binds_land_on_the_fence_address_and_others_pass(library: Path) -> None:
    base = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", fence.ADDRESS_ENV)}
    open_ = json.loads(_run(PROBE, base))
    assert open_ == {"v4_any": "0.0.0.0", "v6_any": "::", "v4_loopback": "127.0.0.1"}  # the control
    env = fence.fenced_environment({**base, "TF_CONFIG": _tf_config("127.0.0.1")})
    assert env["LD_PRELOAD"].split(":")[0] == str(library) and env[fence.ADDRESS_ENV] == "127.0.0.1"
    fenced = json.loads(_run(PROBE, env))
    assert fenced == {"v4_any": "127.0.0.1", "v6_any": "::ffff:127.0.0.1", "v4_loopback": "127.0.0.1"}
    # An IPv6 fence cannot hold an IPv4 wildcard: the bind fails rather than widening.
    env6 = fence.fenced_environment({**base, "TF_CONFIG": _tf_config("[::1]")})
    code = "import socket\ntry:\n    socket.socket().bind(('0.0.0.0', 0)); print('bound')\nexcept OSError as e:\n    print(e.errno)"
    assert _run(code, env6) == "99"  # EADDRNOTAVAIL


def test_a_tensorflow_server_listens_on_the_fence_address_only(library: Path) -> None:
    base = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", fence.ADDRESS_ENV)}
    base["TF_CPP_MIN_LOG_LEVEL"] = "3"
    # Alone, TensorFlow listens on every interface ([::], 0000...0000 in /proc/net/tcp6; checked by hand,
    # not here: a TensorFlow import costs seconds, and the plain-socket control above shows the same).
    port = _free_port()
    config = json.dumps({"cluster": {"worker": [f"127.0.0.1:{port}"]}, "task": {"type": "worker", "index": 0}})
    fenced = json.loads(_run(TF_SERVER, fence.fenced_environment({**base, "TF_CONFIG": config})))
    # 127.0.0.1 in /proc/net/tcp is 0100007F; as ::ffff:127.0.0.1 in tcp6, 0000000000000000FFFF00000100007F.
    assert fenced and all(a in ("0100007F", "0000000000000000FFFF00000100007F") for a in fenced), fenced


def test_a_missing_library_stops_the_worker_instead_of_listening_everywhere(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(fence, "fence_library", lambda: str(tmp_path / fence.FILENAME))
    with pytest.raises(fence.FenceUnavailable, match=r"would listen on every interface.*TF_IGNITE_WORKER_BIND_HOST=\*"):
        fence.fenced_environment({"TF_CONFIG": _tf_config("127.0.0.1")})
    # Nothing to fence: no library needed.
    assert fence.ADDRESS_ENV not in fence.fenced_environment({fence.BIND_HOST_ENV: "*"})
