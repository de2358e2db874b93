"""The Ignite 3 scenarios (issue 30, item 6): reading Ignite 3.1 tables into ``tf.data``.

``--scenarios ignite3`` (in the default run) starts one embedded Ignite 3.1 node
(:class:`~tensorflow_ignite.local.ignite3.Ignite3Cluster`, stopped at the end), writes two
tables with our own writer (``tensorflow_ignite.ignite3.write``, the streamer; untimed) and
reads each with these contenders, alternating as the harness does:

* ``dataset`` -- ``ignite3.from_table`` iterated in TensorFlow (batches of ``batch_size``);
* ``sql`` -- ``ignite3.from_sql("SELECT * FROM T")``, for reference (one query, ``from_generator``);
* ``dbapi`` -- what a TensorFlow user on Ignite 3 has today: ``pyignite-dbapi`` 3.1.0 (Ignite 3's
  Python DB-API driver, SQL only), ``cursor.fetchmany(page)`` in a generator yielding one row at a
  time into ``tf.data.Dataset.from_generator(...).batch(batch_size)``, the same element as
  ``from_table``'s (``ID`` int64, the other columns as their dtypes, VARBINARY as ``tf.string``);
* ``java_sql`` / ``java_records`` -- Ignite 3's Java client (``ignite-client`` 3.1.0,
  ``bench/java/ignite3``'s ``Ignite3ReadBench``): ``client.sql().execute`` of the same SELECT, and
  the record view's ``query`` with no criteria; every value of every row touched.  Ignite 3.1's table
  API has no scan op: the client turns a record-view query into an SQL SELECT and runs it through
  the same SQL ops, so the record view is SQL on the wire plus the mapping to tuples;
* ``raw`` -- the node's ceiling: the same SELECT through our client's cursor, each page's rows
  located in the frame and counted, nothing decoded (one page requested ahead).  No client
  reading one cursor of this node can be faster; the section under each table says how far
  below it pyignite-dbapi is, which bounds the ">= 10x pyignite-dbapi" target.

Two shapes, mirroring the Ignite 2 scenarios at sizes scaled down to keep the Ignite 3 scenarios
near 4-5 minutes a run on a 2-core machine (the node's start, the writes and every read included):
``ignite3_bulk`` has ``bulk_rows / BULK_SCALE`` rows of one ``bulk_row_bytes`` VARBINARY each,
``ignite3_small`` has ``small_rows / SMALL_SCALE`` MNIST-shaped rows (INT label, 784-byte VARBINARY).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .contenders import GeneratorRead, _spec, drain
from .harness import Contender, Run, Scenario, ScenarioResult, Target
from .scenarios import SMALL_ROWS_REPS

if TYPE_CHECKING:
    from tensorflow_ignite.local.ignite3 import Ignite3Cluster

__all__ = ["BULK_SCALE", "SMALL_SCALE", "ignite3_node", "ignite3_scenarios", "bulk_table", "small_table",
           "from_table_dataset", "from_sql_dataset", "dbapi_generator", "java_client", "raw_pages", "DBAPI_PIP"]

#: The Ignite 2 bulk scenario's row count over this is the Ignite 3 one's (512 -> 64 rows of 1 MiB).
BULK_SCALE = 8
#: The Ignite 2 small-rows scenario's row count over this is the Ignite 3 one's (60,000 -> 20,000).
SMALL_SCALE = 3
#: Timed repetitions of each scenario's pyignite-dbapi read (each stopped after ``pyignite_read_seconds``).
DBAPI_REPS = 1
#: At least this many timed reads of the other contenders (``--quick``'s single one excepted): a read
#: takes 0.07-0.4 s, and medians of 3 single reads (the Java client a JVM each) moved the Java-client
#: ratios by 0.2-0.4 between runs of one command, as for the Ignite 2 small rows
#: (``bench.scenarios.SMALL_ROWS_REPS``).
READ_REPS = SMALL_ROWS_REPS
#: How to install the Python driver the ``dbapi`` contender uses (also in the ``test`` extra).
DBAPI_PIP = "pip install 'pyignite_dbapi==3.1.0'"

BULK_TABLE = "BENCH3_BULK"
SMALL_TABLE = "BENCH3_MNIST"


#: The bench node's metastorage idle sync interval (Ignite 3.1's default: 250 ms).  Every read-only
#: scan first waits until the cluster's safe time reaches "now", which an idle cluster advances
#: once per interval: with the default, each query of every contender waited 0-250 ms (a one-row
#: scan took ~250 ms back to back), as much as a whole small-row read, so the table's ratios were
#: mostly that wait.  At 25 ms the wait is at most 25 ms for all contenders alike.
NODE_CONFIG = "ignite { system { idleSafeTimeSyncIntervalMillis = 25 } }"


# ------------------------------------------------------------------ the node and the data
@contextlib.contextmanager
def ignite3_node(work_dir: Path, *, big: bool, log: Callable[[str], None] = print) -> Iterator["Ignite3Cluster"]:
    """One local Ignite 3.1 node (no TLS, no authentication), stopped when the block ends."""
    from tensorflow_ignite.local.ignite3 import Ignite3Cluster

    cluster = Ignite3Cluster(work_dir, nodes=1, name="bench3", heap_mb=1024 if big else 512,
                             storage_mb=1024 if big else 256, cluster_config=NODE_CONFIG)
    log(f"starting 1 Ignite 3 node in {work_dir} ...")
    try:
        cluster.start()
        log(f"  Ignite 3 node ready in {cluster.start_seconds:.1f} s")
        yield cluster
    finally:
        cluster.stop()


def _create_and_write(endpoints: Sequence[str], table: str, columns_sql: str, data: dict[str, Any],
                      log: Callable[[str], None]) -> None:
    """``DROP``/``CREATE TABLE table (columns_sql)``, then ``data`` written by our streamer (untimed)."""
    from tensorflow_ignite.ignite3 import Ignite3Client, write

    with Ignite3Client(_options(endpoints)) as client:
        client.execute(f"DROP TABLE IF EXISTS {table}")
        client.execute(f"CREATE TABLE {table} ({columns_sql})")
        t0 = time.perf_counter()
        rows = write(table, data, client=client, batch_rows=_batch_rows(data))
    log(f"  data: {rows:,} rows into {table} in {time.perf_counter() - t0:.1f} s (ignite3.write, streamer)")


def _batch_rows(data: dict[str, Any]) -> int:
    """Rows per streamer batch: 1000, or fewer so that a batch stays near 16 MiB of payload."""
    n = len(next(iter(data.values())))
    width = sum(len(v[0]) if isinstance(v[0], (bytes, bytearray)) else np.asarray(v).dtype.itemsize
                for v in data.values()) if n else 1
    return max(1, min(1000, (16 << 20) // max(1, width)))


def _bytes_column(rows: int, width: int, seed: int) -> np.ndarray:
    buf = np.random.default_rng(seed).bytes(rows * width)
    out = np.empty(rows, dtype=object)
    for i in range(rows):
        out[i] = buf[i * width:(i + 1) * width]
    return out


def bulk_table(endpoints: Sequence[str], rows: int, width: int, log: Callable[[str], None] = print, *,
               name: str = BULK_TABLE) -> str:
    """Table ``name`` (made anew): ``ID BIGINT`` key, ``DATA VARBINARY(width)`` of random bytes; its name."""
    _create_and_write(endpoints, name, f"ID BIGINT PRIMARY KEY, DATA VARBINARY({width})",
                      {"id": np.arange(rows, dtype=np.int64), "data": _bytes_column(rows, width, 1)}, log)
    return name


def small_table(endpoints: Sequence[str], rows: int, log: Callable[[str], None] = print, *,
                name: str = SMALL_TABLE) -> str:
    """Table ``name`` (made anew): ``ID BIGINT`` key, ``LABEL INT`` 0..9, ``PIXELS VARBINARY(784)``; its name."""
    rng = np.random.default_rng(10)
    _create_and_write(endpoints, name, "ID BIGINT PRIMARY KEY, LABEL INT, PIXELS VARBINARY(784)",
                      {"id": np.arange(rows, dtype=np.int64), "label": rng.integers(0, 10, rows).astype(np.int32),
                       "pixels": _bytes_column(rows, 784, 11)}, log)
    return name


def _options(endpoints: Sequence[str]) -> Any:
    """Connection options naming every node's ``host:port``."""
    from tensorflow_ignite.client.options import ConnectionOptions

    host, port = endpoints[0].rsplit(":", 1)
    return ConnectionOptions(host=host, port=int(port), fallbacks=tuple(endpoints[1:]))


# ------------------------------------------------------------------ contenders
def _built_once(build: Callable[[], Any], row_bytes: int) -> Callable[[], Run]:
    """A run of a dataset built on first use (outside the clock) and iterated eagerly to the end."""
    made: list[Any] = []

    def run() -> Run:
        if not made:
            made.append(build())
        return drain(made[0], unit_bytes=row_bytes)

    return run


@_spec
def from_table_dataset(endpoints: list[str], table: str, *, row_bytes: int, batch_size: int, page_size: int,
                       label: str = "ignite3.from_table in TF", key: str = "dataset") -> Contender:
    """``ignite3.from_table(table, batch_size=...)`` built once (outside the clock), iterated eagerly to the end."""
    def build() -> Any:
        from tensorflow_ignite.ignite3 import from_table

        return from_table(table, options=_options(endpoints), batch_size=batch_size, page_size=page_size)

    run = _built_once(build, row_bytes)
    return Contender(key, label, run, warmup=run, note=f"batch_size={batch_size}, page_size={page_size}")


@_spec
def from_sql_dataset(endpoints: list[str], table: str, *, row_bytes: int, batch_size: int, page_size: int,
                     label: str = "ignite3.from_sql in TF", key: str = "sql") -> Contender:
    """``ignite3.from_sql("SELECT * FROM table", batch_size=...)``, iterated eagerly to the end."""
    def build() -> Any:
        from tensorflow_ignite.ignite3 import from_sql

        return from_sql(f"SELECT * FROM {table}", options=_options(endpoints), batch_size=batch_size,
                        page_size=page_size)

    run = _built_once(build, row_bytes)
    return Contender(key, label, run, warmup=run,
                     note=f"one SELECT *, batch_size={batch_size}, page_size={page_size}")


@_spec
def dbapi_generator(endpoints: list[str], table: str, *, row_bytes: int, batch_size: int, page_size: int,
                    max_seconds: float | None = None, max_reps: int | None = None,
                    label: str = "pyignite-dbapi + from_generator", key: str = "dbapi") -> Contender:
    """``pyignite_dbapi`` ``cursor.fetchmany(page_size)`` rows yielded one by one into
    ``from_generator(...).batch(batch_size)``, the element spec of ``from_table``'s dataset.

    ``max_seconds`` stops a slow read early (the rate is then that of the rows read; the run's
    ``extra["partial"]`` says how many); ``max_reps`` caps its timed repetitions.  Raises
    ``ImportError`` naming :data:`DBAPI_PIP` when the driver is not installed.
    """
    try:
        import pyignite_dbapi
    except ImportError as exc:
        raise ImportError(f"the pyignite-dbapi contender needs Ignite 3's Python driver: {DBAPI_PIP} "
                          "(it is in the project's `test` extra)") from exc
    from tensorflow_ignite.ignite3 import from_table

    # The same element spec as from_table's (its columns, dtypes and order), without reading a row.
    spec = from_table(table, options=_options(endpoints)).element_spec
    names = list(spec)
    conn = pyignite_dbapi.connect(address=list(endpoints), page_size=page_size)
    def rows(read: GeneratorRead) -> Iterator[tuple[Any, ...]]:
        with conn.cursor() as cursor:
            cursor.execute(f"SELECT {', '.join(names)} FROM {table}")
            while True:
                page = cursor.fetchmany(page_size)
                if not page:
                    return
                for row in page:
                    yield tuple(row)
                if read.late():
                    return

    read = GeneratorRead(rows, tuple(spec[n] for n in names), batch_size=batch_size, row_bytes=row_bytes,
                         max_seconds=max_seconds)
    return Contender(key, label, read.run, warmup=read.warm, close=conn.close, max_reps=max_reps,
                     note=f"fetchmany({page_size}), page_size={page_size}, batch({batch_size})"
                          f"{read.limits(max_reps)}")


@_spec
def java_client(endpoints: list[str], table: str, *, mode: str, page_size: int, warmup: int = 2,
                label: str | None = None, key: str | None = None) -> Contender:
    """One ``Ignite3ReadBench`` JVM per repetition (Ignite 3's Java client): ``warmup`` untimed reads,
    then one timed read; ``mode`` ``"sql"`` or ``"records"`` (the record view's query)."""
    from .javaclient import build_java_tools, run_ignite3_read_bench

    build_java_tools()
    what = {"sql": "SQL (client.sql().execute)", "records": "record view (recordView().query)"}[mode]

    def run() -> Run:
        (rec,) = run_ignite3_read_bench(endpoints, table, mode=mode, page_size=page_size, repeat=1,
                                        warmup=warmup)
        return Run(float(rec["seconds"]), int(rec["rows"]), int(rec["bytes"]),
                   peak_bytes=int(rec.get("peak_rss_bytes") or 0) or None)

    return Contender(key or f"java_{mode}", label or f"Ignite 3 Java client, {what}", run, memory="own",
                     note=f"SELECT * FROM {table}" + (" (what the record view's query sends)" if mode == "records"
                                                      else "")
                          + f", page_size={page_size}, {warmup} warm-up read(s) per JVM, every value touched")


@_spec
def raw_pages(endpoints: list[str], table: str, *, row_bytes: int, page_size: int,
              label: str = "raw SQL pages, not decoded (node ceiling)", key: str = "raw") -> Contender:
    """The node's serving rate: ``SELECT *`` through our client's cursor, rows counted, not decoded."""
    from tensorflow_ignite.ignite3 import Ignite3Client

    made: list[Any] = []

    def run() -> Run:
        if not made:
            made.append(Ignite3Client(_options(endpoints)))  # closed with the contender
        t0 = time.perf_counter()
        with made[0].query(f"SELECT * FROM {table}", page_size=page_size) as cursor:
            rows = sum(len(page) for page in cursor.pages())
        return Run(time.perf_counter() - t0, rows, rows * row_bytes)

    def close() -> None:
        if made:
            made.pop().close()

    return Contender(key, label, run, warmup=run, close=close,
                     note=f"SqlCursor.pages(), page_size={page_size}: rows located in each page and counted")


def ceiling_section(result: ScenarioResult) -> str:
    """Markdown: pyignite-dbapi's and from_table's rates over the node's raw pages (the 10x target's bound)."""
    raw, ours, dbapi = (result.results.get(k) for k in ("raw", "dataset", "dbapi"))
    if not (raw and ours and dbapi and raw.ok and ours.ok and dbapi.ok) or dbapi.rate <= 0:
        return ""
    bound = raw.rate / dbapi.rate
    return (f"The node serves this table's raw pages at {raw.rate:,.0f} rows/s (median, rows counted, not "
            f"decoded): ignite3.from_table in TF reaches {ours.rate / raw.rate:.2f}x of that, pyignite-dbapi + "
            f"from_generator {dbapi.rate / raw.rate:.2f}x. No client reading this node's cursor can be more than "
            f"{bound:.1f}x ahead of pyignite-dbapi here" + (" -- the >= 10x target is beyond the node."
                                                             if bound < 10 else "."))


# ------------------------------------------------------------------ scenarios
def _targets(shape: str) -> list[Target]:
    return [
        Target("dataset", "dbapi", 10.0, f"ignite3.from_table >= 10x pyignite-dbapi + from_generator ({shape}; "
                                         "issue 30)"),
        Target("dataset", "java_sql", 1.0, f"ignite3.from_table >= 1.0x the Ignite 3 Java client, SQL ({shape}; "
                                           "issue 30)"),
        Target("dataset", "java_records", 1.0, f"ignite3.from_table >= 1.0x the Ignite 3 Java client, record "
                                               f"view ({shape}; issue 30)"),
    ]


def _contenders(endpoints: list[str], table: str, *, row_bytes: int, batch_size: int, page_size: int,
                sizes: Any) -> list[Contender]:
    out = [
        from_table_dataset(endpoints, table, row_bytes=row_bytes, batch_size=batch_size, page_size=page_size),
        from_sql_dataset(endpoints, table, row_bytes=row_bytes, batch_size=batch_size, page_size=page_size),
        java_client(endpoints, table, mode="sql", page_size=page_size, warmup=sizes.java_warmup),
        java_client(endpoints, table, mode="records", page_size=page_size, warmup=sizes.java_warmup),
        raw_pages(endpoints, table, row_bytes=row_bytes, page_size=page_size),
    ]
    try:
        out.append(dbapi_generator(endpoints, table, row_bytes=row_bytes, batch_size=batch_size,
                                   page_size=page_size, max_seconds=sizes.pyignite_read_seconds,
                                   max_reps=DBAPI_REPS))
    except ImportError as exc:  # reported as a failed contender; the others go on
        message = str(exc)

        def missing() -> Run:
            raise ImportError(message)

        out.append(Contender("dbapi", "pyignite-dbapi + from_generator", missing, note=DBAPI_PIP))
    return out


def ignite3_scenarios(endpoints: list[str], sizes: Any, log: Callable[[str], None] = print) -> Iterator[Scenario]:
    """The bulk and small-row Ignite 3 scenarios, each table written just before it is yielded."""
    n, width, page = max(4, sizes.bulk_rows // BULK_SCALE), sizes.bulk_row_bytes, sizes.bulk_page_rows
    table = bulk_table(endpoints, n, width, log)
    row_bytes = 8 + width
    yield Scenario(
        "ignite3_bulk", "9a. Ignite 3: large byte-array rows",
        f"{n} rows of one {width // 1024} KiB VARBINARY each + BIGINT key ({n * row_bytes / 1e6:.0f} MB), one "
        f"Ignite 3.1 node, pages of {page} rows (~{page * width / 1e6:.0f} MB).",
        "MB/s", _contenders(endpoints, table, row_bytes=row_bytes, batch_size=sizes.bulk_batch, page_size=page,
                            sizes=sizes),
        reference="java_sql", targets=_targets("bulk"),
        notes=["The record view's query is SQL on the wire (Ignite 3.1's table API has no scan op)."],
        report=ceiling_section, min_reps=READ_REPS,
    )
    n, page = max(64, sizes.small_rows // SMALL_SCALE), sizes.small_page_rows
    table = small_table(endpoints, n, log)
    row_bytes = 8 + 4 + 784
    yield Scenario(
        "ignite3_small", "9b. Ignite 3: small MNIST-shaped rows",
        f"{n:,} rows (BIGINT key, INT label, 784-byte VARBINARY pixels; {row_bytes} payload bytes per row), one "
        f"Ignite 3.1 node, pages of {page} rows.",
        "rows/s", _contenders(endpoints, table, row_bytes=row_bytes, batch_size=sizes.small_batch, page_size=page,
                              sizes=sizes),
        reference="java_sql", targets=_targets("small rows"), report=ceiling_section, min_reps=READ_REPS,
    )
