"""The command line on Apache Ignite 3: ``ignite-tf node start --ignite 3``, ``status``, ``stop``, and
``ignite-tf load --ignite 3`` into a table, read back with ``ignite3.from_table``.

The nodes are started the way a user starts them (the CLI, detached), in a
fresh work directory, and stopped by ``node stop`` even when a check fails.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("msgpack")

import tensorflow_ignite.ignite3 as ignite3  # noqa: E402
from tensorflow_ignite.client.options import ConnectionOptions  # noqa: E402
from tensorflow_ignite.local.ignite3 import Ignite3Cluster  # noqa: E402

CLI = [sys.executable, "-m", "tensorflow_ignite.cli.main"]


def run(*args: str, timeout: float = 120, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def read_table(host: str, port: int, table: str, **connection: object) -> dict[str, np.ndarray]:
    rows = list(ignite3.from_table(table, host=host, port=port, **connection).as_numpy_iterator())
    rows.sort(key=lambda r: int(r["ID"]))
    return {name: np.array([r[name] for r in rows]) for name in (rows[0] if rows else {})}


def test_node_start_load_and_stop_on_ignite3(tmp_path: Path) -> None:
    work = tmp_path / "nodes3"
    # Secure as a production cluster: TLS, client certificates required, authentication.
    start = run("node", "start", "--ignite", "3", "--client-port", "0", "--work-dir", str(work),
                "--heap-mb", "512", "--region-mb", "256", "--tls-client-auth", "--auth", timeout=400)
    try:
        assert start.returncode == 0, start.stderr + start.stdout
        assert "1/1 recorded node(s) running and ready" in start.stdout
        assert "Storage profiles: default (aipersist, on disk) and aimem (in memory" in start.stdout
        # What to pass is printed: the CA, the client certificate and key, the key's password file.
        ca = re.search(r"CA certificate (\S+)", start.stdout)
        cert = re.search(r"certfile=(\S+) keyfile=(\S+?),.* password in (\S+)", start.stdout)
        assert ca and cert, start.stdout
        tls = {"cafile": ca.group(1), "certfile": cert.group(1), "keyfile": cert.group(2),
               "cert_password": Path(cert.group(3)).read_text().strip()}
        conn = {**tls, "username": "ignite", "password": "ignite"}
        flags = ["--cafile", tls["cafile"], "--certfile", tls["certfile"], "--keyfile", tls["keyfile"],
                 "--username", "ignite"]
        env = {"IGNITE_PASSWORD": "ignite", "IGNITE_CERT_PASSWORD": tls["cert_password"]}
        status = run("node", "status", "--json", "--work-dir", str(work))
        assert status.returncode == 0, status.stdout + status.stderr
        doc = json.loads(status.stdout)
        assert doc["ignite"] == 3 and [n["ready"] for n in doc["nodes"]] == [True]
        host, port = doc["nodes"][0]["host"], doc["nodes"][0]["client_port"]

        csv = tmp_path / "rows.csv"
        csv.write_text("x,label,name\n" + "".join(f"{i / 4},{i % 3},n{i}\n" for i in range(500)))
        # Without the client certificate the node refuses the load, and the error says what to pass.
        refused = run("load", "--ignite", "3", "ROWS3", str(csv), "--host", host, "--port", str(port),
                      "--cafile", tls["cafile"], "--username", "ignite", env=env)
        assert refused.returncode != 0 and "certfile" in refused.stderr, refused.stderr
        load = run("load", "--ignite", "3", "ROWS3", str(csv), "--host", host, "--port", str(port), *flags, env=env)
        assert load.returncode == 0, load.stderr + load.stdout
        assert "500 rows" in load.stdout and "Ignite 3 table ROWS3 (primary key ID)" in load.stdout
        got = read_table(host, port, "ROWS3", **conn)
        np.testing.assert_array_equal(got["ID"], np.arange(500))
        np.testing.assert_allclose(got["X"], np.arange(500) / 4)
        np.testing.assert_array_equal(got["LABEL"], np.arange(500) % 3)
        assert got["NAME"][7] == b"n7"

        # create refuses a table holding rows, and says what to do; nothing changes.
        again = run("load", "--ignite", "3", "ROWS3", str(csv), "--host", host, "--port", str(port), *flags,
                    env=env)
        assert again.returncode == 1 and "already holds 500 rows" in again.stderr and "--mode" in again.stderr
        # Ignite 2 cache settings are refused by name, before anything is written.
        wrong = run("load", "--ignite", "3", "OTHER3", str(csv), "--backups", "1", "--host", host,
                    "--port", str(port), *flags, env=env)
        assert wrong.returncode == 1 and "--backups" in wrong.stderr and "--zone" in wrong.stderr
        # --zone: the table is created in that zone (here one on the in-memory profile).
        with ignite3.Ignite3Client(ConnectionOptions(host=host, port=int(port), **conn)) as c:
            c.execute("CREATE ZONE MEM3 (REPLICAS 1) STORAGE PROFILES ['aimem']")
            zoned = run("load", "--ignite", "3", "INMEM3", str(csv), "--zone", "MEM3", "--host", host,
                        "--port", str(port), *flags, env=env)
            assert zoned.returncode == 0, zoned.stderr + zoned.stdout
            with c.query("SELECT ZONE_NAME FROM SYSTEM.TABLES WHERE TABLE_NAME = 'INMEM3'") as cursor:
                assert [bytes(v) for page in cursor.column_pages() for v in page.values[0]] == [b"MEM3"]
        assert len(read_table(host, port, "INMEM3", **conn)["ID"]) == 500
        missing = run("load", "--ignite", "3", "NOZONE3", str(csv), "--zone", "NO_SUCH_ZONE", "--host", host,
                      "--port", str(port), *flags, env=env)
        assert missing.returncode == 1 and "no distribution zone 'NO_SUCH_ZONE'" in missing.stderr, missing.stderr
        # overwrite replaces the table: only the new rows remain.
        small = tmp_path / "small.csv"
        small.write_text("x,label,name\n" + "".join(f"{-i},{i},m{i}\n" for i in range(20)))
        over = run("load", "--ignite", "3", "ROWS3", str(small), "--mode", "overwrite", "--host", host,
                   "--port", str(port), *flags, env=env)
        assert over.returncode == 0, over.stderr + over.stdout
        got = read_table(host, port, "ROWS3", **conn)
        np.testing.assert_array_equal(got["ID"], np.arange(20))
        np.testing.assert_allclose(got["X"], -np.arange(20))
    finally:
        stop = run("node", "stop", "--work-dir", str(work))
    assert stop.returncode == 0, stop.stderr + stop.stdout
    assert "stopped 1 Ignite 3 node(s)" in stop.stdout
    cluster = Ignite3Cluster.load_state(work)
    assert cluster is not None and not any(cluster.is_alive(n) for n in cluster.members)
