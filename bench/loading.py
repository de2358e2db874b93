"""The loading scenario of issue 19: rows into a fresh cache, our writers against Ignite's own loaders.

Two shapes, each its own :class:`~bench.harness.Scenario` (``load_small``, ``load_bulk``; on several
nodes ``load3_small``, ``load3_bulk``):

* MNIST-shaped rows: ``label`` int64 + ``pixels`` uint8 28x28 (792 payload bytes per row);
* bulk rows: one byte array of ``bulk_row_bytes`` (1 MiB) per row.

Contenders, alternating by the harness's rules (one untimed warm-up each, rotating rounds):

* ``write`` -- :func:`tensorflow_ignite.write` of the in-memory arrays;
* ``load_npz`` / ``load_parquet`` -- ``ignite-tf load`` (its ``main``, in this process) of the same
  data from a ``.npz`` and a ``.parquet`` file: reading the file is part of the load;
* ``java`` -- Ignite's Java thin client, ``ClientCache.putAll`` of as many rows per call as one of
  our put-all requests holds (``write``'s 4 MiB batches, measured by a probe write);
* ``streamer`` -- **the reference**: a Java thick client (a client-mode node) with an
  ``IgniteDataStreamer`` -- how Ignite users bulk-load (``bench/java`` ``LoadBench``);
* ``pyignite`` -- pyignite ``put_all`` of the same batches (binary objects of the same fields).

Every timed run loads into a **fresh cache** that this module creates just before (untimed) with
:data:`LOAD_CACHE` -- the same configuration for every contender -- and destroys afterwards, once it
has checked that the cache holds every row loaded (a short count fails the run).  Keys are the row
numbers as Java ``long`` for all.  What is timed: the load call alone (for Java, the program's own
clock from the first row's object being built to the last put acknowledged or the streamer closed);
for ``ignite-tf load`` that includes reading the file, for ``write`` its checks, the capacity guard
and the tensor-schema record.

Repetitions (to keep a full ``bench.run`` near 10 minutes, issue 19): the contenders the targets
compare -- ``write``, ``java``, ``streamer``, ``pyignite`` on one node -- run every round.  The two
``ignite-tf load`` contenders, which no target names and whose bulk Parquet load alone took ~15 s a
run, time one load after their warm-up (:data:`FILE_LOADER_REPS`); on several nodes, where no
target applies and the point is where the bytes go (the last repetition's), every contender times
one load (:data:`MANY_NODE_REPS`).  Together that saved ~2 of the run's ~16 minutes.  The data files
are written once per directory and reused (:func:`make_data`), by the 3-node phase and later runs.

Bytes sent per node come from the kernel's counters of every TCP connection of the loading process
(``ss -tinp``: ``bytes_sent`` per socket, the peer's process found by its socket's address), so
they are measured the same way for our client, the Java thin client and the thick client's
communication connections.  With the primary node of every key (the cache's partition map and
Ignite's affinity of ``Long`` keys) they show whether a loader sends each entry to its primary.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import shutil
import subprocess
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .harness import Contender, Run, Scenario, ScenarioResult, Target

__all__ = ["LOAD_CACHE_OPTIONS", "NodeMap", "load_scenarios", "load_contenders", "bytes_sent_per_node",
           "primary_counts", "traffic_measurable", "traffic_section", "LoadCheckError", "write_batch_rows",
           "make_data", "Caches"]

#: ``tensorflow_ignite.write``'s put-all size (its default), which the other batched loaders copy.
BATCH_BYTES = 4 << 20
#: The DataStreamer's per-node buffer, in bytes: Ignite's default 512 entries, fewer for large rows --
#: about one of our put-alls (4 MiB).  512 x 1 MiB per node would not fit the heaps; with 16 MiB
#: buffers (16 entries) the 3 GiB client ran out of heap on 3 nodes (2026-11-25, 1 MiB rows).
STREAMER_BUFFER_BYTES = 4 << 20
#: Timed loads of each ``ignite-tf load`` contender (after its warm-up): no target rests on them.
FILE_LOADER_REPS = 1
#: Timed loads of every contender on several nodes: no target there; the bytes per node come from one load.
MANY_NODE_REPS = 1
#: Type names of the values our loaders write (Java writes its POJO class names).
TYPE_NAMES = {"small": "LoadMnistRow", "bulk": "LoadBulkRow"}


def _load_cache_config(name: str) -> Any:
    """The configuration of every loading run's fresh cache."""
    from tensorflow_ignite.protocol.cache_config import CacheConfiguration
    from tensorflow_ignite.protocol.codes import AtomicityMode, CacheMode, WriteSynchronizationMode

    return CacheConfiguration(name, cache_mode=CacheMode.PARTITIONED, atomicity_mode=AtomicityMode.ATOMIC,
                              backups=0, write_synchronization_mode=WriteSynchronizationMode.PRIMARY_SYNC)


#: What the report says about :func:`_load_cache_config`.
LOAD_CACHE_OPTIONS = "PARTITIONED, ATOMIC, 0 backups, PRIMARY_SYNC, 1024 partitions (Ignite's default affinity)"


class LoadCheckError(RuntimeError):
    """A loader returned but the cache does not hold the rows it was given."""


# ------------------------------------------------------------------ nodes and bytes on the wire
@dataclass(frozen=True)
class NodeMap:
    """The server nodes of a local cluster: process id -> ``host:client_port`` (how the report names it)."""

    nodes: Mapping[int, str]

    @classmethod
    def of(cls, cluster: Any) -> "NodeMap":
        return cls({m.pid: f"{m.host}:{m.client_port}" for m in cluster.members})


_SS_LINE = re.compile(r"^\S+\s+\S+\s+(\S+)\s+(\S+)\s+users:\(\(\"[^\"]*\",pid=(\d+),")
_SS_SENT = re.compile(r"\bbytes_sent:(\d+)")


def traffic_measurable() -> bool:
    """Whether bytes per node can be counted here: Linux's ``ss`` (package iproute2) is installed."""
    return shutil.which("ss") is not None


def _sockets() -> list[tuple[str, str, int, int]]:
    """Every established TCP connection of this machine: (local, peer, pid, bytes sent)."""
    if not traffic_measurable():
        raise RuntimeError("counting the bytes sent to each node needs `ss` (Debian/Ubuntu package iproute2: "
                           "apt-get install iproute2)")
    out = subprocess.run(["ss", "-tinpHO", "state", "established"], capture_output=True, text=True,
                         check=True, timeout=30).stdout
    table = []
    for line in out.splitlines():
        m = _SS_LINE.match(line)
        if m is None:
            continue
        sent = _SS_SENT.search(line)
        table.append((m.group(1), m.group(2), int(m.group(3)), int(sent.group(1)) if sent else 0))
    return table


def _sent_by(pid: int, nodes: NodeMap) -> dict[tuple[str, str], tuple[int, int]]:
    """Per connection of ``pid`` to a node: (node pid, bytes sent so far)."""
    table = _sockets()
    owner = {local: p for local, _, p, _ in table}
    out = {}
    for local, peer, p, sent in table:
        dest = owner.get(peer)
        if p == pid and dest in nodes.nodes:
            out[(local, peer)] = (dest, sent)
    return out


def bytes_sent_per_node(pid: int, nodes: NodeMap, action: Callable[[], Any]) -> tuple[Any, dict[str, int]]:
    """Run ``action``; return its result and the bytes process ``pid`` sent to each node meanwhile
    (by node address; connections opened during ``action`` count from zero)."""
    before = _sent_by(pid, nodes)
    result = action()
    after = _sent_by(pid, nodes)
    per_node = {address: 0 for address in nodes.nodes.values()}
    for sock, (dest, sent) in after.items():
        per_node[nodes.nodes[dest]] += sent - before.get(sock, (dest, 0))[1]
    return result, per_node


def primary_counts(client: Any, cache: str, rows: int, nodes: NodeMap) -> dict[str, int]:
    """How many of the keys ``0..rows-1`` (Java ``long``) have each node as primary.

    Ignite's rendezvous affinity places a key in partition ``(h ^ h >>> 16) & (parts - 1)`` of its
    ``hashCode`` ``h`` (``Long``: ``(int) (v ^ v >>> 32)``) for a power-of-two partition count.
    """
    pmap = client.partition_map(cache, refresh=True)
    parts = pmap.partitions
    if parts & (parts - 1):
        raise ValueError(f"cache {cache!r} has {parts} partitions; expected a power of two")
    v = np.arange(rows, dtype=np.uint64)
    h = ((v ^ (v >> np.uint64(32))) & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    part = (h ^ (h >> np.uint32(16))) & np.uint32(parts - 1)
    per_partition = np.bincount(part.astype(np.int64), minlength=parts)
    port_to_name = {int(a.rsplit(":", 1)[1]): a for a in nodes.nodes.values()}
    node_name = {}
    for node_id, endpoints in client.node_endpoints(refresh=True).items():
        for _, port in endpoints:
            if port in port_to_name:
                node_name[node_id] = port_to_name[port]
    out = {a: 0 for a in nodes.nodes.values()}
    for p, count in enumerate(per_partition):
        name = node_name.get(pmap.primary(p))
        if name is None:
            raise ValueError(f"partition {p} of cache {cache!r}: primary node {pmap.primary(p)} is not one of "
                             f"{sorted(nodes.nodes.values())}")
        out[name] += int(count)
    return out


# ------------------------------------------------------------------ data
@dataclass
class LoadData:
    """One shape's rows, in memory and in the files the file-based loaders read."""

    shape: str  # "small" or "bulk"
    arrays: dict[str, np.ndarray]
    rows: int
    row_bytes: int  # payload per row (label + pixels, or the byte array)
    npz: Path
    parquet: Path
    raw: Path  # for LoadBench: int64 labels (when present), then the rows' bytes
    labels: bool

    @property
    def nbytes(self) -> int:
        return self.rows * self.row_bytes


def make_data(shape: str, rows: int, row_bytes: int, directory: Path, seed: int = 19) -> LoadData:
    """Random rows of ``shape`` and their ``.npz``, ``.parquet`` and raw files in ``directory``.

    The rows depend only on the arguments (``seed``), so files that an earlier call wrote for the same
    arguments (recorded in ``<shape>.json``, written last) are reused: the 3-node phase and later runs
    of ``--runs N`` do not write the 1 MiB rows' 1.6 GB of files again."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    if shape == "small":
        arrays = {"label": rng.integers(0, 10, rows).astype(np.int64),
                  "pixels": np.frombuffer(rng.bytes(rows * 784), np.uint8).reshape(rows, 28, 28)}
        payload, labels = 8 + 784, True
    else:
        arrays = {"data": np.frombuffer(rng.bytes(rows * row_bytes), np.uint8).reshape(rows, row_bytes)}
        payload, labels = row_bytes, False
    npz, parquet, raw = directory / f"{shape}.npz", directory / f"{shape}.parquet", directory / f"{shape}.bin"
    meta = directory / f"{shape}.json"
    stamp = {"shape": shape, "rows": rows, "row_bytes": row_bytes, "seed": seed}
    try:
        made = json.loads(meta.read_text())
    except (OSError, ValueError):
        made = None
    if made != {**stamp, "sizes": _sizes(npz, parquet, raw)}:
        meta.unlink(missing_ok=True)
        _write_files(arrays, npz, parquet, raw)
        meta.write_text(json.dumps({**stamp, "sizes": _sizes(npz, parquet, raw)}))
    return LoadData(shape, arrays, rows, payload, npz, parquet, raw, labels)


def _sizes(*paths: Path) -> list[int | None]:
    return [p.stat().st_size if p.exists() else None for p in paths]


def _write_files(arrays: dict[str, np.ndarray], npz: Path, parquet: Path, raw: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    if "pixels" in arrays:
        flat = pa.FixedSizeListArray.from_arrays(pa.array(arrays["pixels"].reshape(-1)), 28)
        table = pa.table({"label": arrays["label"], "pixels": pa.FixedSizeListArray.from_arrays(flat, 28)})
    else:
        data = arrays["data"]
        table = pa.table({"data": pa.FixedSizeListArray.from_arrays(pa.array(data.reshape(-1)), data.shape[1])})
    np.savez(npz, **arrays)
    pq.write_table(table, parquet, compression="none")
    with open(raw, "wb") as f:
        for name in ("label", "pixels", "data"):
            if name in arrays:
                f.write(np.ascontiguousarray(arrays[name], dtype="<i8" if name == "label" else np.uint8).tobytes())


# ------------------------------------------------------------------ fresh caches
class Caches:
    """Creates each run's fresh cache and checks and drops it afterwards (our client, untimed)."""

    def __init__(self, host: str, port: int, nodes: NodeMap | None) -> None:
        from tensorflow_ignite.client import ConnectionOptions

        self.client = ConnectionOptions(host=host, port=port).connect()
        self.nodes = nodes
        #: rows -> keys ``0..rows-1`` per node as primary (several nodes only; the first cache checked
        #: with that many rows: every cache has the same configuration, hence the same affinity).
        self.primaries: dict[int, dict[str, int]] = {}

    def fresh(self, name: str) -> None:
        if name in self.client.cache_names():
            self.client.destroy_cache(name)
        self.client.create_cache(_load_cache_config(name))

    def finish(self, name: str, rows: int) -> None:
        from tensorflow_ignite.data.tensor_schema import delete_schema

        try:
            size = self.client.cache(name).size()
            if size != rows:
                raise LoadCheckError(f"cache {name!r} holds {size:,} entries after loading {rows:,} rows")
            if self.nodes is not None and len(self.nodes.nodes) > 1 and rows not in self.primaries:
                self.primaries[rows] = primary_counts(self.client, name, rows, self.nodes)
        finally:
            self.client.destroy_cache(name)
            delete_schema(self.client, name)


def write_batch_rows(host: str, port: int, data: LoadData, caches: Caches) -> tuple[int, int]:
    """Rows per put-all request of ``write`` for this data, and its wire bytes per row (a probe write
    of a few rows: the other batched loaders get the same number of rows per request)."""
    from tensorflow_ignite import write

    name = f"load_probe_{data.shape}"
    sample = {k: v[:min(data.rows, 64)] for k, v in data.arrays.items()}
    caches.fresh(name)
    result = write(name, sample, host=host, port=port, mode="create", sql=False, progress=False,
                   type_name=TYPE_NAMES[data.shape])
    caches.finish(name, result.rows)
    row_wire = result.bytes_sent // result.rows
    return max(1, BATCH_BYTES // row_wire), row_wire


def write_fixed_seconds(host: str, port: int, data: LoadData, caches: Caches, repeats: int = 3) -> float:
    """Median seconds of a one-row ``write`` into a fresh cache: what every call costs besides its rows
    (cache and capacity checks, type registration, one put-all, the tensor-schema record)."""
    from tensorflow_ignite import write

    name = f"load_probe_{data.shape}"
    one = {k: v[:1] for k, v in data.arrays.items()}
    times = []
    for _ in range(repeats):
        caches.fresh(name)
        t0 = time.perf_counter()
        write(name, one, host=host, port=port, mode="create", sql=False, progress=False,
              type_name=TYPE_NAMES[data.shape])
        times.append(time.perf_counter() - t0)
        caches.finish(name, 1)
    return sorted(times)[len(times) // 2]


def _put_all_requests(client: Any) -> int:
    from tensorflow_ignite.protocol.codes import Op

    return sum(c.op_counts[Op.CACHE_PUT_ALL] for c in client.connections())


# ------------------------------------------------------------------ contenders
@dataclass
class _Loader:
    """A load into a fresh cache: ``load(cache) -> (rows, seconds or None, extra)`` (None: timed here)."""

    caches: Caches
    prefix: str
    pid: Callable[[], int] = os.getpid

    def run(self, load: Callable[[str], tuple[int, float | None, dict[str, Any]]], row_bytes: int) -> Run:
        name = self.prefix
        self.caches.fresh(name)
        nodes = self.caches.nodes

        def timed() -> tuple[int, float, dict[str, Any]]:
            t0 = time.perf_counter()
            rows, seconds, extra = load(name)
            return rows, seconds if seconds is not None else time.perf_counter() - t0, extra

        if nodes is not None and traffic_measurable():
            (rows, seconds, extra), sent = bytes_sent_per_node(self.pid(), nodes, timed)
            extra["sent"] = sent
        else:
            rows, seconds, extra = timed()
        self.caches.finish(name, rows)
        return Run(seconds, rows, rows * row_bytes, extra=extra)


def load_contenders(host: str, port: int, data: LoadData, caches: Caches, *, batch_rows: int,
                    batch_bytes: int = BATCH_BYTES, key_prefix: str, java_thin: Callable[[], Any] | None,
                    java_thick: Callable[[], Any] | None, pyignite: bool = True, files: bool = True,
                    pyignite_max_seconds: float = 25.0, write_fixed: float | None = None,
                    file_reps: int | None = None, max_reps: int | None = None) -> list[Contender]:
    """The contenders of one shape.  ``batch_bytes``: the put-all size of ``write`` and ``ignite-tf
    load``; ``batch_rows``: rows per ``putAll`` of the Java thin client and pyignite (the rows one of
    our put-alls holds: :func:`write_batch_rows`).  ``java_thin`` / ``java_thick`` start the Java
    loaders (called at warm-up or first use, untimed; None leaves that contender out).
    ``write_fixed``: seconds of a one-row ``write`` (:func:`write_fixed_seconds`), for the notes.
    ``file_reps`` caps the timed loads of the ``ignite-tf load`` contenders, ``max_reps`` those of
    every contender (:attr:`~bench.harness.Contender.max_reps`; None: every round)."""
    out: list[Contender] = []
    type_name = TYPE_NAMES[data.shape]

    def loader(key: str) -> _Loader:
        return _Loader(caches, f"{key_prefix}_{key}")

    # -------------------------------------------------------------- write
    ours = loader("write")

    def write_load(name: str) -> tuple[int, float | None, dict[str, Any]]:
        from tensorflow_ignite import write

        requests = _put_all_requests(caches.client)
        t0 = time.perf_counter()
        result = write(name, data.arrays, host=host, port=port, mode="create", sql=False, progress=False,
                       type_name=type_name, batch_bytes=batch_bytes)
        dt = time.perf_counter() - t0
        return result.rows, dt, {"requests": _put_all_requests(caches.client) - requests,
                                 "wire_bytes": result.bytes_sent}

    def write_run() -> Run:
        return ours.run(write_load, data.row_bytes)

    out.append(Contender("write", "tensorflow_ignite.write", write_run, warmup=write_run,
                         note=f"in-memory arrays, put-all requests of {batch_bytes / (1 << 20):g} MiB "
                              f"({batch_rows:,} rows), one in flight while the next is encoded"
                              + (f"; a one-row write into a fresh cache takes {write_fixed * 1e3:.0f} ms (median "
                                 "of 3: checks, capacity guard, type registration, the tensor-schema record)"
                                 if write_fixed is not None else "")))

    # -------------------------------------------------------------- ignite-tf load
    if files:
        for key, path in (("load_npz", data.npz), ("load_parquet", data.parquet)):
            out.append(_cli_load(loader(key), key, path, host, port, data, type_name, batch_bytes, reps=file_reps))

    # -------------------------------------------------------------- Java
    if java_thin is not None:
        out.append(_java(loader("java"), "java", "Java thin client putAll", java_thin, data, batch=batch_rows,
                         note=f"ClientCache.putAll of {batch_rows:,} rows per call (as many as one of our "
                              "put-all requests), POJO values (long label, byte[] pixels / byte[] data)"))
    if java_thick is not None:
        buffer = max(1, min(512, STREAMER_BUFFER_BYTES // data.row_bytes))
        out.append(_java(loader("streamer"), "streamer", "Java thick client IgniteDataStreamer (reference)",
                         java_thick, data, buffer=buffer,
                         note=f"a client-mode node; addData per row, close() flushes; perNodeBufferSize "
                              f"{buffer}{' (Ignite default)' if buffer == 512 else ''}, other settings Ignite's "
                              "defaults"))

    # -------------------------------------------------------------- pyignite
    if pyignite:
        out.append(_pyignite(loader("pyignite"), host, port, data, batch_rows, pyignite_max_seconds))
    if max_reps is not None:
        for c in out:
            c.max_reps = max_reps if c.max_reps is None else min(c.max_reps, max_reps)
    return out


def _cli_load(ld: _Loader, key: str, path: Path, host: str, port: int, data: LoadData,
              type_name: str, batch_bytes: int, reps: int | None = None) -> Contender:
    """``ignite-tf load CACHE PATH`` through the console script's ``main`` in this process (so the
    interpreter's start-up and imports are not timed; the file is read inside the timed call)."""

    def load(name: str) -> tuple[int, float | None, dict[str, Any]]:
        from tensorflow_ignite.cli.main import main as cli

        root = logging.getLogger()
        if not root.handlers:  # the CLI's logging.basicConfig(INFO) would then print every load's summary
            root.addHandler(logging.StreamHandler())
        argv = ["load", name, str(path), "--host", host, "--port", str(port), "--mode", "create", "--no-sql",
                "--no-progress", "--type-name", type_name, "--batch-bytes", str(batch_bytes)]
        stdout, stderr = io.StringIO(), io.StringIO()
        requests = _put_all_requests(ld.caches.client)  # the command's client is the process's shared one
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = cli(argv)
        dt = time.perf_counter() - t0
        if code != 0:
            raise RuntimeError(f"ignite-tf {' '.join(argv)} exited {code}: {stderr.getvalue().strip()}")
        return data.rows, dt, {"requests": _put_all_requests(ld.caches.client) - requests}

    def run() -> Run:
        return ld.run(load, data.row_bytes)

    fmt = "npz" if path.suffix == ".npz" else "Parquet"
    return Contender(key, f"ignite-tf load (.{path.suffix.lstrip('.')})", run, warmup=run, max_reps=reps,
                     note=f"{fmt} file of {path.stat().st_size / 1e6:.0f} MB (page cache warm), read inside the "
                          "timed call; the command's main() in this process"
                          + (f"; {reps} timed load(s) after the warm-up (no target rests on it)"
                             if reps is not None else ""))


def _java(ld: _Loader, key: str, label: str, start: Callable[[], Any], data: LoadData, *, batch: int = 0,
          buffer: int = 0, note: str) -> Contender:
    made: list[Any] = []

    def jvm() -> Any:
        if not made:
            made.append(start())
            ld.pid = lambda: made[0].pid
        return made[0]

    def load(name: str) -> tuple[int, float | None, dict[str, Any]]:
        rec = jvm().load(name, data.raw, rows=data.rows, row_bytes=data.row_bytes - (8 if data.labels else 0),
                         labels=data.labels, batch=batch, buffer=buffer)
        if int(rec["bytes"]) != data.nbytes:
            raise LoadCheckError(f"LoadBench counted {rec['bytes']} payload bytes, expected {data.nbytes}")
        return int(rec["rows"]), float(rec["seconds"]), {"requests": int(rec["requests"])}

    def run() -> Run:
        jvm()  # started (connected, or joined) before the run: its sockets are the ones counted
        return ld.run(load, data.row_bytes)

    def close() -> None:
        if made:
            made[0].close()

    return Contender(key, label, run, warmup=run, memory="none",
                     note=note + "; one JVM for every repetition (JIT warmed by the warm-up load), the "
                                 "program's own clock", close=close)


def _pyignite(ld: _Loader, host: str, port: int, data: LoadData, batch_rows: int,
              max_seconds: float) -> Contender:
    """pyignite ``put_all`` of ``batch_rows`` rows per call, values of a ``GenericObjectMeta`` class."""
    from pyignite import Client, GenericObjectMeta
    from pyignite.datatypes import ByteArrayObject, LongObject

    client = Client(timeout=120.0)
    client.connect(host, port)
    if data.labels:
        schema = OrderedDict([("label", LongObject), ("pixels", ByteArrayObject)])
    else:
        schema = OrderedDict([("data", ByteArrayObject)])
    row_class = GenericObjectMeta(f"{TYPE_NAMES[data.shape]}Py", (), {},
                                  type_name=f"{TYPE_NAMES[data.shape]}Pyignite", schema=schema)
    limit = [float("inf"), data.rows]

    def load(name: str) -> tuple[int, float | None, dict[str, Any]]:
        cache = client.get_cache(name)
        t0 = time.perf_counter()
        deadline = t0 + limit[0]
        rows = 0
        labels = data.arrays.get("label")
        values = data.arrays["pixels" if data.labels else "data"]
        total = limit[1]
        while rows < total and time.perf_counter() < deadline:
            end = min(total, rows + batch_rows)
            if labels is not None:
                batch = {k: row_class(label=int(labels[k]), pixels=values[k].tobytes()) for k in range(rows, end)}
            else:
                batch = {k: row_class(data=values[k].tobytes()) for k in range(rows, end)}
            cache.put_all(batch)
            rows = end
        dt = time.perf_counter() - t0
        return rows, dt, {"partial": rows} if rows < data.rows else {}

    def run() -> Run:
        limit[:] = [max_seconds, data.rows]
        return ld.run(load, data.row_bytes)

    def warm() -> None:  # pyignite's per-class machinery and the type's registration: one batch
        limit[:] = [float("inf"), min(data.rows, batch_rows)]
        ld.run(load, data.row_bytes)

    return Contender("pyignite", "pyignite put_all", run, warmup=warm, close=client.close,
                     note=f"put_all of {batch_rows:,} rows per call, GenericObjectMeta values "
                          f"(LongObject, ByteArrayObject); stops after {max_seconds:g} s (rate of the rows loaded)")


# ------------------------------------------------------------------ scenarios
def load_scenarios(host: str, port: int, sizes: Any, directory: Path, *, nodes: NodeMap | None = None,
                   discovery: Sequence[str] | None = None, ignite_classpath: str | None = None,
                   addresses: Sequence[tuple[str, int]] | None = None, thick_work_dir: Path | None = None,
                   earlier: Callable[[str], ScenarioResult | None] = lambda key: None,
                   log: Callable[[str], None] = print) -> list[Scenario]:
    """The loading scenarios on a running cluster (``host:port`` one of its nodes).

    ``nodes`` (``NodeMap.of(cluster)``) adds the bytes each loader sent to each node; with more than
    one node, each node's share of primary keys too, and only ``write`` and the two Java loaders
    run (the point there is where the bytes go).  ``addresses``: every node's client address, for
    the Java thin client (partition awareness needs them all).  ``earlier(key)``: a scenario's
    result from this run, if any (the several-node report compares with the one-node figures).
    ``discovery`` and ``ignite_classpath`` (``LocalCluster.discovery_addresses()`` and
    ``ignite_classpath()``) are where the thick client joins and what it runs on.
    """
    from .javaclient import JavaLoader

    many = nodes is not None and len(nodes.nodes) > 1
    prefix = f"load{len(nodes.nodes) if many else ''}"
    caches = Caches(host, port, nodes)
    out = []
    shapes = (("small", sizes.small_rows, 8 + 784), ("bulk", sizes.bulk_rows, sizes.bulk_row_bytes))
    for shape, rows, row_bytes in shapes:
        data = make_data(shape, rows, row_bytes, directory)
        batch_rows, row_wire = write_batch_rows(host, port, data, caches)
        fixed = write_fixed_seconds(host, port, data, caches)
        log(f"  data: {rows:,} {shape} rows of {data.row_bytes:,} payload bytes ({row_wire:,} on the wire); "
            f"put-all batches of {batch_rows:,} rows; a one-row write takes {fixed * 1e3:.0f} ms")
        thin = lambda: JavaLoader.thin(host, port, addresses=addresses)  # noqa: E731
        thick = None
        if discovery is not None and ignite_classpath is not None:
            work = (thick_work_dir or directory / "thick") / shape
            thick = (lambda w=work: JavaLoader.thick(discovery, ignite_classpath, work_dir=w))
        contenders = load_contenders(host, port, data, caches, batch_rows=batch_rows,
                                     key_prefix=f"{prefix}_{shape}", java_thin=thin, java_thick=thick,
                                     pyignite=not many, files=not many, pyignite_max_seconds=sizes.pyignite_max_seconds,
                                     write_fixed=fixed, file_reps=FILE_LOADER_REPS,
                                     max_reps=MANY_NODE_REPS if many else None)
        n_nodes = len(nodes.nodes) if nodes is not None else 1
        what = (f"{rows:,} MNIST-shaped rows (`label` int64 + `pixels` uint8 28x28, {data.row_bytes} payload bytes "
                f"per row)" if shape == "small" else
                f"{rows} rows of one {row_bytes // 1024} KiB byte array ({data.nbytes / 1e6:.0f} MB)")
        title = (f"6{'abcd'[(2 if many else 0) + (shape == 'bulk')]}. Loading: "
                 f"{'MNIST-shaped rows' if shape == 'small' else 'large byte-array rows'}, "
                 f"{n_nodes} node{'s' if n_nodes > 1 else ''}")
        shape_text = ("MNIST rows" if shape == "small" else
                      "1 MiB rows" if row_bytes == 1 << 20 else f"{row_bytes // 1024} KiB rows")
        targets = [] if many else [
            Target("write", "java", 1.0, f"write >= 1.0x the Java thin client's putAll ({shape_text})"),
            Target("write", "streamer", 0.5, f"write >= 0.5x the thick client's IgniteDataStreamer ({shape_text})"),
            Target("write", "pyignite", 5.0, f"write >= 5x pyignite put_all ({shape_text})"),
        ]
        out.append(Scenario(
            f"{prefix}_{shape}", title,
            f"{what} into a fresh cache per run ({LOAD_CACHE_OPTIONS}; created before the clock starts, "
            f"checked and destroyed after), {n_nodes} node{'s' if n_nodes > 1 else ''}; keys 0..{rows - 1:,} "
            "as Java long.",
            "rows/s", contenders, reference="streamer" if thick is not None else "java", targets=targets,
            notes=[f"{MANY_NODE_REPS} timed load(s) per contender after its warm-up: no target applies on "
                   "several nodes; the point is where the bytes go."] if many else [],
            report=lambda res, c=caches, n=rows, k=f"load_{shape}": traffic_section(
                res, c.primaries.get(n, {}), earlier(k) if many else None),
        ))
    return out


def traffic_section(result: ScenarioResult, primaries: Mapping[str, int],
                    one_node: ScenarioResult | None = None) -> str:
    """Bytes each contender sent to each node (last repetition) next to each node's share of the
    primary keys; with ``one_node`` (the same shape on one node), the rates side by side first."""
    text = []
    if one_node is not None:
        n = len(primaries) or "N"
        rows = [f"| Contender | rows/s, 1 node | rows/s, {n} nodes | {n} nodes / 1 node |", "|---|---|---|---|"]
        for key, res in result.results.items():
            one = one_node.results.get(key)
            if one is not None and one.ok and res.ok and one.rate:
                rows.append(f"| {res.contender.label} | {one.rate:,.0f} | {res.rate:,.0f} | "
                            f"{res.rate / one.rate:.2f}x |")
        text += ["\n".join(rows), ""]
    runs = {key: res.runs[-1].extra["sent"] for key, res in result.results.items()
            if res.ok and "sent" in res.runs[-1].extra}
    if not runs:
        if not traffic_measurable():
            text.append("Bytes sent per node: not measured (`ss`, package iproute2, is not installed).")
        return "\n".join(text)
    nodes = sorted(next(iter(runs.values())))
    total_keys = sum(primaries.values()) or 0
    head = ["Node (client port)"] + (["primary keys"] if total_keys else [])
    head += [f"{result.results[k].contender.label}: MB (share)" for k in runs]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for node in nodes:
        cells = [node]
        if total_keys:
            cells.append(f"{primaries.get(node, 0):,} ({100 * primaries.get(node, 0) / total_keys:.0f}%)")
        for sent in runs.values():
            total = sum(sent.values()) or 1
            cells.append(f"{sent[node] / 1e6:.1f} ({100 * sent[node] / total:.0f}%)")
        lines.append("| " + " | ".join(cells) + " |")
    totals = ["total"] + ([f"{total_keys:,}"] if total_keys else [])
    totals += [f"{sum(s.values()) / 1e6:.1f} (payload {result.results[k].runs[-1].nbytes / 1e6:.1f})"
               for k, s in runs.items()]
    lines.append("| " + " | ".join(totals) + " |")
    text += ["Bytes sent to each node (last repetition; the kernel's `bytes_sent` of every TCP connection from "
            "the loading process to a node process, `ss -tinp`; for the thick client its communication "
            "connections). A loader that sends each entry to its primary sends each node about its share of "
            "the primary keys:", "", "\n".join(lines)]
    if total_keys:
        text += ["", _routing_finding(result, runs, primaries)]
    return "\n".join(text)


def _routing_finding(result: ScenarioResult, runs: Mapping[str, Mapping[str, int]],
                     primaries: Mapping[str, int]) -> str:
    total_keys = sum(primaries.values())
    out = []
    for key, sent in runs.items():
        total = sum(sent.values()) or 1
        # Share of the bytes that went to a node other than the key's primary, at best (by share).
        off = sum(max(0.0, sent[n] / total - primaries.get(n, 0) / total_keys) for n in sent)
        label = result.results[key].contender.label
        verdict = ("each entry to its primary" if off < 0.05 else
                   f"about {100 * off:.0f}% of its bytes to a node that is not the entry's primary (the node "
                   "forwards them)")
        out.append(f"{label} sends {verdict}")
    return "; ".join(out) + "."
