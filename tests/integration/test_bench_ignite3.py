"""The Ignite 3 benchmark contenders (bench/ignite3.py) at a tiny size, so that they cannot rot.

On the session's two plain Ignite 3.1 nodes (plain: the Java client and pyignite-dbapi connect without the
secure node's TLS and credentials), the small-row table is written by the bench's own writer, then every
contender of the scenario -- ``ignite3.from_table`` and ``from_sql`` in TensorFlow, pyignite-dbapi
``fetchmany`` into ``from_generator``, Ignite 3's Java client by SQL and through the record view, the
raw pages -- reads it once and must deliver every row; the Java reads must also have touched every value's bytes.
Then both scenarios run once at the bench's quick sizes, through the harness, as ``bench.run``
runs them.  Timings are never asserted.
"""

from __future__ import annotations



import pytest

from bench.harness import TEARDOWN, run_scenario
from bench.ignite3 import (DBAPI_PIP, bulk_table, dbapi_generator, from_sql_dataset, from_table_dataset,
                           ignite3_scenarios, java_client, small_table)
from bench.report import targets_table
from bench.scenarios import Sizes
from tensorflow_ignite.ignite3 import from_sql, from_table
from tensorflow_ignite.local.ignite3 import Ignite3Cluster

pytestmark = [pytest.mark.slow]

_SHORT = "test_scenarios_run_every_contender_on_the_whole_table (every contender over both tables, in CI)"

ROWS = 1500
ROW_BYTES = 8 + 4 + 784


@pytest.fixture(scope="module")
def endpoints(ignite3_plain_nodes: Ignite3Cluster) -> list[str]:
    # The session's plain nodes (their heap holds the bulk table's rows of 1 MiB).
    return list(ignite3_plain_nodes.endpoints)


@pytest.fixture(scope="module")
def table(endpoints: list[str]) -> str:
    return small_table(endpoints, ROWS, log=lambda _msg: None, name="T_BENCH3_SMALL")


@pytest.mark.long_only(_SHORT)
@pytest.mark.parametrize("factory", [from_table_dataset, from_sql_dataset], ids=["from_table", "from_sql"])
def test_our_datasets_read_every_row(endpoints: list[str], table: str, factory) -> None:  # type: ignore[no-untyped-def]
    contender = factory(endpoints, table, row_bytes=ROW_BYTES, batch_size=256, page_size=512)
    run = contender.run()
    assert run.units == ROWS and run.nbytes == ROWS * ROW_BYTES


@pytest.mark.long_only(_SHORT)
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


@pytest.mark.long_only(_SHORT)
@pytest.mark.parametrize("mode", ["sql", "records"])
def test_java_client_reads_and_touches_every_row(endpoints: list[str], table: str, mode: str) -> None:
    run = java_client(endpoints, table, mode=mode, page_size=512, warmup=0).run()
    assert run.units == ROWS
    assert run.nbytes == ROWS * ROW_BYTES  # ID 8 + LABEL 4 + PIXELS 784 bytes, every row


@pytest.mark.long_only(_SHORT)
def test_bulk_rows_of_a_mebibyte_round_trip(endpoints: list[str]) -> None:
    """The bulk shape's VARBINARY rows of 1 MiB are written whole and read back whole."""
    name = bulk_table(endpoints, 3, 1 << 20, log=lambda _msg: None, name="T_BENCH3_BULK")
    host, port = endpoints[0].rsplit(":", 1)
    rows = list(from_table(name, host=host, port=int(port)).as_numpy_iterator())
    assert sorted(r["ID"] for r in rows) == [0, 1, 2]
    assert all(len(r["DATA"]) == 1 << 20 for r in rows)
    java = java_client(endpoints, name, mode="sql", page_size=2, warmup=0).run()
    assert java.units == 3 and java.nbytes == 3 * (8 + (1 << 20))


def test_scenarios_run_every_contender_on_the_whole_table(endpoints: list[str]) -> None:
    """``ignite3_scenarios`` at the quick sizes through the harness: no contender fails, each reads every row."""
    pytest.importorskip("pyignite_dbapi", reason=f"Ignite 3's Python driver is not installed: {DBAPI_PIP}")
    host, port = endpoints[0].rsplit(":", 1)
    sizes = Sizes.quick()
    results = []
    for scenario in ignite3_scenarios(endpoints, sizes, log=lambda _msg: None):
        result = run_scenario(scenario, sizes.reps, log=lambda _msg: None)
        table = {"ignite3_bulk": "BENCH3_BULK", "ignite3_small": "BENCH3_MNIST"}[scenario.key]
        (row,) = from_sql(f"SELECT COUNT(*) AS N FROM {table}", host=host, port=int(port)).as_numpy_iterator()
        count = int(row["N"])
        assert count > 0
        for key, res in result.results.items():
            assert res.error is None and res.ok, (key, res.error)
            assert [r.units for r in res.runs] == [count], key
        assert all(check.measured is not None for check in result.checks())
        # The node's raw pages bound the dbapi target; TF reads time their iterator's deletion apart.
        assert len(result.sections) == 1 and "ahead of pyignite-dbapi here" in result.sections[0]
        assert all(TEARDOWN in run.extra for key in ("dataset", "sql", "dbapi") for run in result.results[key].runs)
        assert TEARDOWN not in result.results["raw"].runs[0].extra
        results.append(result)
    assert {r.scenario.key for r in results} == {"ignite3_bulk", "ignite3_small"}
    assert "from_table >= 10x pyignite-dbapi" in targets_table(results)
