"""What write() accepts as input, checked without a server: files, mappings, errors, the CLI parser."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tensorflow_ignite.cli.main import build_parser
from tensorflow_ignite.data.write import plan_column, read_columns, write
from tensorflow_ignite.data.write.plan import check_unique_keys, make_plan
from tensorflow_ignite.data.write.sources import open_source
from tensorflow_ignite.errors import ConfigurationError
from tensorflow_ignite.protocol.codes import TypeCode


def test_csv_columns_are_inferred(tmp_path: Path) -> None:
    p = tmp_path / "d.csv"
    p.write_text('id,score,ok,name,sparse\n1,0.5,true,"Smith, J",\n2,,FALSE,é,3\n3,2e3,True,,4\n', encoding="utf-8")
    cols = read_columns(p)
    assert cols["id"].dtype == np.int64 and cols["id"].tolist() == [1, 2, 3]
    assert cols["score"].dtype == np.float64
    assert cols["score"][0] == 0.5 and np.isnan(cols["score"][1]) and cols["score"][2] == 2000.0
    assert cols["ok"].dtype == bool and cols["ok"].tolist() == [True, False, True]
    assert cols["name"].tolist() == ["Smith, J", "é", None]
    assert cols["sparse"].dtype == np.float64 and np.isnan(cols["sparse"][0])
    assert list(read_columns(p, ["name", "id"])) == ["name", "id"]


def test_csv_errors_name_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b\n1,2\n3\n")
    with pytest.raises(ConfigurationError, match="line 3 has 1 fields, the header has 2"):
        read_columns(bad)
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(ConfigurationError, match="needs a header row"):
        read_columns(empty)
    ok = tmp_path / "ok.csv"
    ok.write_text("a\n1\n")
    with pytest.raises(ConfigurationError, match=r"no column\(s\) \['zz'\]"):
        read_columns(ok, ["zz"])


def test_npz_and_missing_files(tmp_path: Path) -> None:
    p = tmp_path / "d.npz"
    np.savez(p, x=np.arange(4), img=np.zeros((4, 2, 2), np.uint8))
    cols = read_columns(p)
    assert cols["img"].shape == (4, 2, 2) and cols["img"].dtype == np.uint8
    with pytest.raises(ConfigurationError, match="no such file"):
        read_columns(tmp_path / "nope.npz")
    txt = tmp_path / "d.txt"
    txt.write_text("x")
    with pytest.raises(ConfigurationError, match="expected a .npz, .csv or .parquet"):
        read_columns(txt)


def test_parquet_columns(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    table = pa.table({
        "i": pa.array([1, 2, 3], pa.int32()),
        "n": pa.array([1, None, 3], pa.int64()),
        "f": pa.array([0.5, None, 1.5], pa.float32()),
        "s": pa.array(["a", None, "c"]),
        "img": pa.array([[1, 2, 3, 4]] * 3, pa.list_(pa.uint8())),
        "fixed": pa.array([[1.0, 2.0]] * 3, pa.list_(pa.float64(), 2)),
        "ragged": pa.array([[1], [2, 3], []], pa.list_(pa.int16())),
        "t": pa.array([0, 1_500_000, None], pa.timestamp("us")),
    })
    p = tmp_path / "d.parquet"
    pq.write_table(table, p)
    cols = read_columns(p)
    assert cols["i"].dtype == np.int32
    assert cols["n"].tolist() == [1, None, 3]
    assert np.isnan(cols["f"][1]) and cols["f"].dtype == np.float32
    assert cols["s"].tolist() == ["a", None, "c"]
    assert cols["img"].shape == (3, 4) and cols["img"].dtype == np.uint8
    assert cols["fixed"].shape == (3, 2)
    assert [r.tolist() for r in cols["ragged"]] == [[1], [2, 3], []]
    assert plan_column("ragged", cols["ragged"]).code == TypeCode.SHORT_ARR
    assert cols["t"].dtype.kind == "M" and np.isnat(cols["t"][2])


def test_mismatched_column_lengths_name_the_columns() -> None:
    with pytest.raises(ConfigurationError, match=r"different numbers of rows \(a=3, b=2\)"):
        write("never", {"a": np.arange(3), "b": np.arange(2)}, port=1)


@pytest.mark.parametrize("kwargs, match", [
    ({"columns": ["a", "zz"]}, r"no column\(s\) \['zz'\]"),
    ({"key": "zz"}, "key column 'zz' is not in data"),
    ({"mode": "replace"}, "mode must be one of"),
    ({"atomicity": "eventual"}, "atomicity must be one of"),
    ({"write_sync": "sometimes"}, "write_sync must be one of"),
])
def test_bad_arguments_fail_before_connecting(kwargs: dict, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        write("never", {"a": np.arange(3)}, port=1, **kwargs)


def test_unsupported_data_is_a_clear_error() -> None:
    with pytest.raises(ConfigurationError, match="cannot read a list"):
        write("never", [1, 2, 3], port=1)
    with pytest.raises(ConfigurationError, match="is a scalar"):
        write("never", {"a": np.int64(3)}, port=1)


def test_plan_rules() -> None:
    src = open_source({"key": np.arange(3), "x": np.arange(3)}, None, None)
    with pytest.raises(ConfigurationError, match="pass key='key'"):
        make_plan(src, None, "XRow")
    src = open_source({"Label": np.arange(3), "label": np.arange(3)}, None, None)
    with pytest.raises(ConfigurationError, match="same Ignite field"):
        make_plan(src, None, "XRow")
    src = open_source({"id": np.array(["a", "b"]), "x": np.zeros((2, 3), np.float32)}, None, "id")
    plan = make_plan(src, "id", "XRow")
    assert plan.key.code == TypeCode.STRING and plan.fixed is None  # string keys: generic path
    src = open_source({"id": np.array([5, 7], np.int32), "x": np.zeros((2, 3), np.float32)}, None, "id")
    plan = make_plan(src, "id", "XRow")
    assert (plan.key.code, plan.key.dtype) == (TypeCode.LONG, "int32") and plan.fixed is not None
    assert [f.name for f in plan.fields] == ["x"]
    src = open_source({"id": np.array([0.5, 1.5]), "x": np.arange(2)}, None, "id")
    with pytest.raises(ConfigurationError, match="keys must be integers or strings"):
        make_plan(src, "id", "XRow")
    with pytest.raises(ConfigurationError, match="duplicate"):
        check_unique_keys("id", np.array([1, 2, 1]))


def test_cli_has_load_and_no_password_flag() -> None:
    parser = build_parser()
    args = parser.parse_args(["load", "c", "f.npz", "--key", "id", "--mode", "append", "--no-sql",
                              "--username", "ignite"])
    assert (args.cache, args.path, args.key, args.mode, args.no_sql) == ("c", "f.npz", "id", "append", True)
    assert not hasattr(args, "password")
    with pytest.raises(SystemExit):
        parser.parse_args(["load", "c", "f.npz", "--password", "secret"])


def test_cli_load_refuses_a_zone_for_an_ignite_2_cache(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from tensorflow_ignite.cli.main import main

    csv = tmp_path / "rows.csv"
    csv.write_text("x\n1\n")
    # With --ignite 2, refused before any connection is tried (nothing listens on port 1); without
    # --ignite the generation is found at the handshake first (test_one_api: load on both).
    assert main(["load", "c", str(csv), "--zone", "MEM", "--ignite", "2", "--port", "1"]) == 1
    err = capsys.readouterr().err
    assert "--zone places an Ignite 3 table" in err and "--backups" in err
