"""The Ignite 3 benchmark contenders (bench/ignite3.py) at a tiny size, so that they cannot rot.

On one real Ignite 3.1 node (plain: the Java client and pyignite-dbapi connect without the session
node's TLS and credentials), the small-row table is written by the bench's own writer, then every
contender of the scenario -- ``ignite3.from_table`` and ``from_sql`` in TensorFlow, pyignite-dbapi
``fetchmany`` into ``from_generator``, Ignite 3's Java client by SQL and through the record view --
reads it once and must deliver every row; the Java reads must also have touched every value's bytes.
Timings are never asserted.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.ignite3 import (DBAPI_PIP, bulk_table, dbapi_generator, from_sql_dataset, from_table_dataset,
                           java_client, small_table)
from tensorflow_ignite.ignite3 import from_table
from tensorflow_ignite.local.ignite3 import Ignite3Cluster

pytestmark = [pytest.mark.slow]

ROWS = 1500
ROW_BYTES = 8 + 4 + 784


@pytest.fixture(scope="module")
def endpoints(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[str]]:
    with Ignite3Cluster(Path(tmp_path_factory.mktemp("bench3")), nodes=1, name="tfi3b", heap_mb=512) as cluster:
        yield cluster.endpoints


@pytest.fixture(scope="module")
def table(endpoints: list[str]) -> str:
    return small_table(endpoints, ROWS, log=lambda _msg: None)


@pytest.mark.parametrize("factory", [from_table_dataset, from_sql_dataset], ids=["from_table", "from_sql"])
def test_our_datasets_read_every_row(endpoints: list[str], table: str, factory) -> None:  # type: ignore[no-untyped-def]
    contender = factory(endpoints, table, row_bytes=ROW_BYTES, batch_size=256, page_size=512)
    run = contender.run()
    assert run.units == ROWS and run.nbytes == ROWS * ROW_BYTES


def test_dbapi_from_generator_reads_every_row(endpoints: list[str], table: str) -> None:
    pytest.importorskip("pyignite_dbapi", reason=f"Ignite 3's Python driver is not installed: {DBAPI_PIP}")
    contender = dbapi_generator(endpoints, table, row_bytes=ROW_BYTES, batch_size=256, page_size=512)
    try:
        assert contender.warmup is not None
        contender.warmup()
        run = contender.run()
    finally:
        assert contender.close is not None
        contender.close()
    assert run.units == ROWS and "partial" not in run.extra


@pytest.mark.parametrize("mode", ["sql", "records"])
def test_java_client_reads_and_touches_every_row(endpoints: list[str], table: str, mode: str) -> None:
    run = java_client(endpoints, table, mode=mode, page_size=512, warmup=0).run()
    assert run.units == ROWS
    assert run.nbytes == ROWS * ROW_BYTES  # ID 8 + LABEL 4 + PIXELS 784 bytes, every row


def test_bulk_rows_of_a_mebibyte_round_trip(endpoints: list[str]) -> None:
    """The bulk shape's VARBINARY rows of 1 MiB are written whole and read back whole."""
    name = bulk_table(endpoints, 3, 1 << 20, log=lambda _msg: None)
    host, port = endpoints[0].rsplit(":", 1)
    rows = list(from_table(name, host=host, port=int(port)).as_numpy_iterator())
    assert sorted(r["ID"] for r in rows) == [0, 1, 2]
    assert all(len(r["DATA"]) == 1 << 20 for r in rows)
    java = java_client(endpoints, name, mode="sql", page_size=2, warmup=0).run()
    assert java.units == 3 and java.nbytes == 3 * (8 + (1 << 20))
