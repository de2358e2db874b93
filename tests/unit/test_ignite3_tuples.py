"""Ignite 3's key-value and transaction requests without a server: golden request bodies, answers parsed,
rows encoded and decoded back, the errors a transaction or a schema change gets."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid

import msgpack
import pytest

from tensorflow_ignite.errors import (ConfigurationError, Ignite3ServerError, Ignite3TransactionConflictError,
                                      ProtocolError, TransactionConflictError)
from tensorflow_ignite.ignite3.protocol import framing
from tensorflow_ignite.ignite3.protocol import tuples as tu
from tensorflow_ignite.ignite3.protocol import tx as txp
from tensorflow_ignite.ignite3.protocol.codes import ClientOp, ColumnType, ErrorCode
from tensorflow_ignite.ignite3.protocol.msgpack_io import Reader, pack_uuid
from tensorflow_ignite.ignite3.protocol.table import TableColumn, TableSchema

T = ColumnType
TRACE = uuid.UUID("0a016343-94e5-448a-af56-8669a73ae3f3")


def col(name: str, t: ColumnType, key: int = -1, coloc: int = -1, scale: int = 0, precision: int = 0) -> TableColumn:
    return TableColumn(name, t, key, key < 0, coloc, scale, precision)


META = TableSchema(1, (col("KEY", T.STRING, 0, 0), col("VAL", T.STRING)))


def pack(*values: object) -> bytes:
    return b"".join(msgpack.packb(v, use_bin_type=True) for v in values)


def test_upsert_request_golden() -> None:
    enc = tu.encode_records(META, [{"KEY": "a", "VAL": "x"}], "META")
    # table id, no transaction, schema version; an empty no-value set (ext 8); the tuple: header, 2 offsets, "ax".
    assert tu.tuples_request(7, None, 1, enc, single=True) == \
        b"\x07\xc0\x01" + b"\xc7\x00\x08" + b"\xc4\x05" + b"\x00\x01\x02ax"


def test_batch_request_in_a_transaction_golden() -> None:
    enc = tu.encode_keys(META, [{"KEY": "a"}, {"key": "bc"}], "META")  # a plain lower-case name is its column
    assert tu.tuples_request(7, 5, 2, enc) == \
        b"\x07\x05\x02\x02" + b"\xc7\x00\x08\xc4\x03\x00\x01a" + b"\xc7\x00\x08\xc4\x04\x00\x02bc"


def test_a_column_left_out_is_in_the_no_value_set() -> None:
    enc = tu.encode_records(META, [{"KEY": "a"}], "META")
    assert enc.masks == [b"\xd4\x08\x02"]  # fixext 1, type 8, bit 1 (VAL)
    assert enc.tuples == [b"\x00\x01\x01a"]  # VAL empty: NULL, or its default on the node


def test_rows_with_different_columns_keep_their_order() -> None:
    enc = tu.encode_records(META, [{"KEY": "a", "VAL": "1"}, {"KEY": "b"}, {"VAL": "3", "KEY": "c"}], "META")
    assert [tu.decode_row(META, t)["KEY"] for t in enc.tuples] == ["a", "b", "c"]
    assert enc.masks[1] != enc.masks[0] == enc.masks[2]


def test_key_tuples_follow_the_key_order_not_the_schema_order() -> None:
    # CREATE TABLE X (A INT, B VARCHAR, C BIGINT, PRIMARY KEY (C, A)): C is key column 0, A key column 1.
    schema = TableSchema(3, (col("A", T.INT32, 1, 1), col("B", T.STRING), col("C", T.INT64, 0, 0)))
    assert [c.name for c in tu.key_schema(schema).columns] == ["C", "A"]
    enc = tu.encode_keys(schema, [{"A": 1, "C": 2}], "X")
    assert tu.decode_key(schema, enc.tuples[0]) == {"C": 2, "A": 1}
    with pytest.raises(ConfigurationError, match="key columns"):
        tu.encode_keys(schema, [{"A": 1, "C": 2, "B": "x"}], "X")
    with pytest.raises(ConfigurationError, match="C"):
        tu.encode_keys(schema, [{"A": 1}], "X")


def test_every_type_encodes_and_decodes_back() -> None:
    schema = TableSchema(1, (
        col("ID", T.INT64, 0, 0), col("I8", T.INT8), col("I16", T.INT16), col("I32", T.INT32), col("F", T.FLOAT),
        col("D", T.DOUBLE), col("DEC", T.DECIMAL, scale=4, precision=12), col("B", T.BOOLEAN), col("S", T.STRING),
        col("BY", T.BYTE_ARRAY), col("U", T.UUID), col("DT", T.DATE), col("TM", T.TIME, precision=6),
        col("DTM", T.DATETIME, precision=6), col("TS", T.TIMESTAMP, precision=6)))
    row = {"ID": 2**40, "I8": -7, "I16": 300, "I32": -2**31, "F": 1.5, "D": 0.1, "DEC": decimal.Decimal("-12.5"),
           "B": False, "S": "é", "BY": b"\x80" + bytes(70_000), "U": uuid.uuid4(), "DT": dt.date(1, 1, 1),
           "TM": dt.time(0, 0, 0, 1), "DTM": dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
           "TS": dt.datetime(2038, 1, 19, 3, 14, 8, tzinfo=dt.timezone.utc)}
    enc = tu.encode_records(schema, [row, {"ID": 1}], "ALL")
    assert tu.decode_row(schema, enc.tuples[0]) == row
    assert tu.decode_row(schema, enc.tuples[1]) == {"ID": 1, **{k: None for k in row if k != "ID"}}


def test_answers_parse() -> None:
    assert tu.parse_get(Reader(pack(3, None))) == (3, None)
    assert tu.parse_get(Reader(pack(3, b"\x00\x01a"))) == (3, b"\x00\x01a")
    assert tu.parse_get_all(Reader(pack(4, 3, True, b"r1", False, True, b"r3"))) == (4, [b"r1", None, b"r3"])
    assert tu.parse_version(Reader(pack(5))) == 5
    assert tu.parse_flag(Reader(pack(5, False))) == (5, False)
    assert tu.parse_keys(Reader(pack(6, 2, b"k1", b"k2"))) == (6, [b"k1", b"k2"])
    with pytest.raises(ProtocolError):
        tu.parse_get_all(Reader(pack(4, 10**6, True, b"r1")))
    with pytest.raises(ProtocolError):
        tu.parse_keys(Reader(pack(6, 2, b"k1")))


def test_transaction_bodies_golden() -> None:
    assert txp.begin_request(False, 0, 123) == b"\xc2\x00\x7b"
    assert txp.begin_request(True, 30_000, 2**40) == b"\xc3\xcd\x75\x30" + b"\xcf" + (2**40).to_bytes(8, "big")
    assert txp.parse_begin(Reader(pack(9))) == 9
    assert txp.finish_request(9) == b"\x09"
    with pytest.raises(ValueError):
        txp.begin_request(False, -1, 0)


def _error(code: int, message: str, extensions: dict[str, object] | None = None) -> bytes:
    ext: list[object] = [None] if not extensions else [len(extensions), *[x for kv in extensions.items() for x in kv]]
    return msgpack.packb(pack_uuid(TRACE)) + pack(code, "org.apache.ignite.Ex", message, None, *ext)


def test_lock_conflicts_and_timed_out_transactions_are_retryable_conflicts() -> None:
    for code in (ErrorCode.ACQUIRE_LOCK, ErrorCode.ACQUIRE_LOCK_TIMEOUT, ErrorCode.TX_ALREADY_FINISHED_WITH_TIMEOUT):
        header, _ = framing.parse_response(pack(1, 4, 0) + _error(code, "Failed to acquire a lock"))
        assert header.error is not None
        exc = framing.server_error(header.error, int(ClientOp.TUPLE_UPSERT), "put")
        assert isinstance(exc, Ignite3TransactionConflictError) and TransactionConflictError.retryable(exc)
    header, _ = framing.parse_response(pack(1, 4, 0) + _error(ErrorCode.TX_ALREADY_FINISHED, "finished"))
    assert header.error is not None
    assert not isinstance(framing.server_error(header.error, 44, "commit"), TransactionConflictError)


def test_schema_mismatch_carries_the_expected_version() -> None:
    body = pack(2, 4, 0) + _error(ErrorCode.SCHEMA_VERSION_MISMATCH, "Schema version mismatch",
                                  {tu.EXPECTED_SCHEMA_VERSION: 3})
    header, _ = framing.parse_response(body)
    assert header.error is not None
    exc = framing.server_error(header.error, int(ClientOp.TUPLE_GET), "get")
    assert type(exc) is Ignite3ServerError and exc.code_name == "IGN-TBL-5"
    assert exc.extensions == {tu.EXPECTED_SCHEMA_VERSION: 3}


def test_a_few_rows_encode_as_many_rows_do() -> None:
    # Up to rows.SMALL_ROWS rows take a row-by-row path; bytes and colocation hashes must be the NumPy path's.
    schema = TableSchema(1, (col("ID", T.INT64, 0, 1), col("S", T.STRING, 1, 0), col("D", T.DOUBLE),
                             col("U", T.UUID), col("DEC", T.DECIMAL, scale=2, precision=10), col("BY", T.BYTE_ARRAY),
                             col("TS", T.TIMESTAMP, precision=6)))
    many = [{"ID": i * 7919 - 50_000, "S": f"key-{i}" * (i % 5), "D": i / 3 if i % 4 else None,
             "U": uuid.UUID(int=i * 2**100 + i), "DEC": decimal.Decimal(i) / 7 if i % 3 else None,
             "BY": bytes(range(i % 256)) * (i % 3), "TS": dt.datetime(2020, 1, 1, tzinfo=dt.timezone.utc)
             + dt.timedelta(microseconds=i * 123_457)} for i in range(40)]
    big = tu.encode_records(schema, many, "X")
    one_by_one = [tu.encode_records(schema, [r], "X") for r in many]
    assert big.tuples == [e.tuples[0] for e in one_by_one]
    assert big.hashes == [e.hashes[0] for e in one_by_one]
    threes = [tu.encode_records(schema, many[i:i + 3], "X") for i in range(0, 39, 3)]
    assert [t for e in threes for t in e.tuples] == big.tuples[:39]
