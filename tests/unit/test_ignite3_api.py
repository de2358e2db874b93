"""The Ignite 3 entry points' checks that need no server: table statements from data, element dtypes,
argument errors named before anything connects."""

from __future__ import annotations

import numpy as np
import pytest

from tensorflow_ignite.errors import ConfigurationError, SchemaError
from tensorflow_ignite.ignite3 import element_dtypes, from_sql, write
from tensorflow_ignite.ignite3.protocol.codes import ColumnType as T
from tensorflow_ignite.ignite3.protocol.sql import ColumnMeta
from tensorflow_ignite.ignite3.write import create_table_statement


def test_create_table_statement_from_dtypes() -> None:
    data = {"ID": np.arange(3), "x": np.zeros(3, np.float32), "Label": np.zeros(3, np.int8),
            "ok": np.zeros(3, bool), "name": np.array(["a", "b", "c"]), "raw": np.array([b"a", b"", b"c"], object),
            "odd name": np.zeros(3), "when": np.zeros(3, "datetime64[us]"), "day": np.zeros(3, "datetime64[D]")}
    # Plain names quoted as SQL upper-cases them (so a keyword such as WHEN is a column name too).
    assert create_table_statement("PUBLIC.T", data, "ID") == (
        'CREATE TABLE IF NOT EXISTS "PUBLIC"."T" ("ID" BIGINT PRIMARY KEY, "X" REAL, "LABEL" TINYINT, '
        '"OK" BOOLEAN, "NAME" VARCHAR, "RAW" VARBINARY, "odd name" DOUBLE, "WHEN" TIMESTAMP(9), "DAY" DATE)')


def test_write_refuses_bad_data_before_connecting() -> None:
    # Port 1: nothing listens there, so each of these must fail on the data, not the connection.
    with pytest.raises(ConfigurationError, match="different lengths"):
        write("T", {"A": [1, 2], "B": [1]}, port=1)
    with pytest.raises(ConfigurationError, match="shape"):
        write("T", {"A": np.zeros((2, 2))}, port=1)
    with pytest.raises(ConfigurationError, match="method='bulk'.*streamer, sql"):
        write("T", {"A": [1]}, method="bulk", port=1)
    with pytest.raises(ConfigurationError, match="parallel=0"):
        write("T", {"A": [1]}, parallel=0, port=1)
    with pytest.raises(ConfigurationError, match="key='Z'"):
        create_table_statement("T", {"A": [1]}, "Z")
    with pytest.raises(ConfigurationError, match="complex128"):
        create_table_statement("T", {"A": np.zeros(2, complex)}, "A")


def test_element_dtypes() -> None:
    cols = [ColumnMeta("ID", T.INT64, nullable=False), ColumnMeta("D", T.DECIMAL), ColumnMeta("TS", T.TIMESTAMP)]
    assert element_dtypes(cols) == {"ID": "int64", "D": "float64", "TS": "int64"}
    assert element_dtypes(cols, decimal_as="string", null_masks=True) == {
        "ID": "int64", "D": "string", "D_present": "bool", "TS": "int64", "TS_present": "bool"}
    with pytest.raises(SchemaError, match="PERIOD"):
        element_dtypes([ColumnMeta("P", T.PERIOD)])
    with pytest.raises(SchemaError, match="same name"):
        element_dtypes([ColumnMeta("A", T.INT32), ColumnMeta("A", T.INT64)])


@pytest.mark.parametrize(("kwargs", "match"), [({"decimal_as": "int"}, "decimal_as"), ({"page_size": 0}, "page_size"),
                                               ({"batch_size": 0}, "batch_size")])
def test_from_sql_checks_its_arguments_first(kwargs: dict, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        from_sql("SELECT 1", port=1, **kwargs)
