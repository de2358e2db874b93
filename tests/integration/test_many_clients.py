"""Many clients at once: 8 processes read one cache for 25 s while 2 write to it and 2 others
write the same ``ignite://`` file over and over (``--long``; every run: 4 readers for 15 s, the
writers alike -- on two cores each process's TensorFlow import is seconds of CPU).

Each reader process runs epochs of ``IgniteDataset`` and checks every one: each
row present when the test began exactly once, no row twice (rows written during
an epoch may or may not be in it: a scan reads what its partition holds when it
gets there).  Each writer appends rows of its own key range with
``tensorflow_ignite.write``.  The two file writers put whole files of one byte
value each (``A...`` or ``B...``) at the same path, and read the path back
between writes: a read must always be one whole file of one writer, never a
mix and never a part.  At the end the cache holds exactly the rows everybody
wrote and the path one complete file.  Every process exits 0.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

import tensorflow_ignite as ti
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.local.cluster import LocalCluster

CACHE = "MANY_CLIENTS"
FIRST_ROWS = 20_000
WRITER_BATCHES = 6
WRITER_ROWS = 1_000
FILE_BYTES = 3 << 20  # bigger than a block: a torn read would show

WORKER = textwrap.dedent('''
    import json, os, sys, time
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    role, index, host, port, seconds = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
    import numpy as np
    import tensorflow as tf
    import tensorflow_ignite as ti
    from tensorflow_ignite import fs
    out = {"role": role, "index": index}
    deadline = time.monotonic() + seconds
    if role == "reader":
        epochs = 0
        while True:
            keys = np.concatenate([b["key"].numpy() for b in
                                   ti.IgniteDataset("%(cache)s", host, port, batch_size=2000)])
            assert len(np.unique(keys)) == len(keys), f"epoch {epochs}: a row came twice"
            first = keys[keys < %(first)d]
            assert len(first) == %(first)d, f"epoch {epochs}: {%(first)d - len(first)} first rows missing"
            epochs += 1
            if time.monotonic() > deadline and epochs >= 2:
                break
        out["epochs"] = epochs
    elif role == "writer":
        base = 1_000_000 * (index + 1)
        for b in range(%(batches)d):
            ids = np.arange(base + b * %(rows)d, base + (b + 1) * %(rows)d, dtype=np.int64)
            ti.write("%(cache)s", {"id": ids, "x": ids.astype(np.float32)}, key="id", host=host, port=port,
                     mode="append", progress=False)
        out["rows"] = %(batches)d * %(rows)d
    else:  # file writer
        fs.configure(host=host, port=port)
        mine = bytes([65 + index]) * %(file_bytes)d
        path = "ignite:///many/shared.bin"
        writes = reads = 0
        while True:
            with tf.io.gfile.GFile(path, "wb") as f:
                f.write(mine)
            writes += 1
            for _ in range(2):
                data = tf.io.gfile.GFile(path, "rb").read()
                assert len(data) == %(file_bytes)d, f"a read saw {len(data)} bytes"
                assert data in (b"A" * %(file_bytes)d, b"B" * %(file_bytes)d), "a read saw a mix of two files"
                reads += 1
            if time.monotonic() > deadline and writes >= 3:
                break
        out.update(writes=writes, reads=reads)
    print("RESULT " + json.dumps(out), flush=True)
''') % {"cache": CACHE, "first": FIRST_ROWS, "batches": WRITER_BATCHES, "rows": WRITER_ROWS,
        "file_bytes": FILE_BYTES}


def test_readers_writers_and_file_writers_at_once(ignite_cluster: LocalCluster, tmp_path: Path,
                                                  long_form: bool) -> None:
    host, port = ignite_cluster.address()
    with IgniteClient(ignite_cluster.addresses()) as client:
        if CACHE in client.cache_names():
            client.destroy_cache(CACHE)
    ids = np.arange(FIRST_ROWS, dtype=np.int64)
    ti.write(CACHE, {"id": ids, "x": ids.astype(np.float32)}, key="id", host=host, port=port, backups=1,
             progress=False)
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    seconds, readers = (25, 8) if long_form else (15, 4)
    roles = [("reader", i) for i in range(readers)] + [("writer", i) for i in range(2)] + [("file", i) for i in range(2)]
    started = time.monotonic()
    procs = [subprocess.Popen([sys.executable, str(script), role, str(i), host, str(port), str(seconds)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for role, i in roles]
    results = []
    try:
        for (role, i), p in zip(roles, procs):
            out, err = p.communicate(timeout=600)
            assert p.returncode == 0, f"{role} {i} failed:\n{err[-3000:]}"
            line = next(x for x in out.splitlines() if x.startswith("RESULT "))
            results.append(json.loads(line[len("RESULT "):]))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    took = time.monotonic() - started
    epochs = sum(r["epochs"] for r in results if r["role"] == "reader")
    writes = sum(r["writes"] for r in results if r["role"] == "file")
    print(f"{len(roles)} processes, {took:.0f}s: {epochs} reader epochs, {writes} file writes")
    assert all(r["epochs"] >= 2 for r in results if r["role"] == "reader")

    with IgniteClient(ignite_cluster.addresses()) as client:
        assert client.cache(CACHE).size() == FIRST_ROWS + 2 * WRITER_BATCHES * WRITER_ROWS
        keys = np.concatenate([b["key"].numpy() for b in ti.IgniteDataset(CACHE, host, port, batch_size=4096)])
        want = np.concatenate([ids] + [np.arange(1_000_000 * (w + 1), 1_000_000 * (w + 1) + WRITER_BATCHES * WRITER_ROWS)
                                       for w in range(2)])
        assert np.array_equal(np.sort(keys), np.sort(want))
        client.destroy_cache(CACHE)
    from tensorflow_ignite import fs

    saved = fs.config.overrides()
    try:
        fs.configure(host=host, port=port)
        import tensorflow as tf

        data = tf.io.gfile.GFile("ignite:///many/shared.bin", "rb").read()
        assert data in (b"A" * FILE_BYTES, b"B" * FILE_BYTES)
        tf.io.gfile.rmtree("ignite:///many")
    finally:
        fs.config.reset()
        fs.configure(**saved)
