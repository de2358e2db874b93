"""Apache Ignite 3's client protocol without a server: golden bytes for the handshake, headers,
errors, SQL requests and binary tuples; hostile input is a ProtocolError, never anything else.

The golden row below is what an Ignite 3.1.0 node sent for one row of a table with a column of
every supported type (captured once; its values are the INSERT's).
"""

from __future__ import annotations

import datetime as dt
import decimal
import uuid

import msgpack
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tensorflow_ignite.errors import (AuthenticationError, HandshakeError, Ignite3ServerError, ProtocolError,
                                      ReplicaUnavailableError, SqlError, TableNotFoundError)
from tensorflow_ignite.ignite3.protocol import binary_tuple, columns, framing, sql
from tensorflow_ignite.ignite3.protocol.codes import ClientOp, ColumnType, ErrorCode, ErrorGroup, error_name
from tensorflow_ignite.ignite3.protocol.msgpack_io import Reader, RowPage, pack_uuid
from tensorflow_ignite.ignite3.protocol.spans import ByteSpans, as_objects
from tensorflow_ignite.protocol.receive import FrameReader

T = ColumnType
NODE_ID = uuid.UUID("9e8e16bc-a727-4e47-826a-1ec57a6d55f6")
TRACE = uuid.UUID("0a016343-94e5-448a-af56-8669a73ae3f3")

# CREATE TABLE T1 (ID BIGINT PRIMARY KEY, I INT, F REAL, D DOUBLE, S VARCHAR, B BOOLEAN, DEC DECIMAL(10,3),
#   DT DATE, TM TIME(6), TS TIMESTAMP(6), DTT TIMESTAMP(6) WITH LOCAL TIME ZONE, U UUID, BYT VARBINARY,
#   T8 TINYINT, T16 SMALLINT)
# INSERT INTO T1 VALUES (1, 5, 1.5, 2.25, 'héllo', true, 12.345, DATE '2024-02-29', TIME '13:14:15.123456',
#   TIMESTAMP '2024-02-29 13:14:15.5', TIMESTAMP WITH LOCAL TIME ZONE '2024-02-29 13:14:15.5',
#   '6f1e3a1c-2f5d-4b8e-9a77-0f4b2d7c9e10'::UUID, x'0080ff', -5, 1000)
GOLDEN_ROW = (b"\x00\x01\x02\x06\n\x10\x11\x15\x18\x1c#/?BCE\x01\x05\x00\x00\xc0?\x00\x00\x10@h\xc3\xa9llo\x01"
              b"\x03\x0009]\xd0\x0f{<N\x03]\xd0\x0f\xf4=N\x03'\x83\xe0e\x00\x00\x00\x00\x00e\xcd\x1d\x8eK]/"
              b"\x1c:\x1eo\x10\x9e|-K\x0fw\x9a\x00\x80\xff\xfb\xe8\x03")
# INSERT INTO T1 (ID, S, BYT) VALUES (2^40, '', x''): the other columns NULL, empty string and bytes.
SPARSE_ROW = b"\x00\x08\x08\x08\x08\t\t\t\t\t\t\t\t\n\n\n\x00\x00\x00\x00\x00\x01\x00\x00\x80\x80"
COLUMNS = tuple(sql.ColumnMeta(n, t) for n, t in [
    ("ID", T.INT64), ("I", T.INT32), ("F", T.FLOAT), ("D", T.DOUBLE), ("S", T.STRING), ("B", T.BOOLEAN),
    ("DEC", T.DECIMAL), ("DT", T.DATE), ("TM", T.TIME), ("TS", T.DATETIME), ("DTT", T.TIMESTAMP),
    ("U", T.UUID), ("BYT", T.BYTE_ARRAY), ("T8", T.INT8), ("T16", T.INT16)])
TS_NS = 1709212455_500_000_000  # 2024-02-29T13:14:15.5 (UTC)


def pack(*values: object) -> bytes:
    return b"".join(msgpack.packb(v, use_bin_type=True) for v in values)


# ---------------------------------------------------------------- handshake
def test_handshake_request_golden() -> None:
    # IGNI, length 7, then version 3.0.0, client type 2, no features (empty bin), no extensions.
    assert framing.handshake_request() == b"IGNI" + b"\x00\x00\x00\x07" + b"\x03\x00\x00\x02\xc4\x00\x00"


def test_handshake_request_with_basic_authentication() -> None:
    data = framing.handshake_request("ignite", "s3cret")
    r = Reader(data[8:])
    assert [r.value() for _ in range(6)] == [3, 0, 0, 2, b"", 3]
    assert [r.value() for _ in range(6)] == ["authn-type", "basic", "authn-identity", "ignite", "authn-secret",
                                             "s3cret"]
    assert r.at_end()


def _handshake_answer(error: bytes | None = None) -> bytes:
    head = pack(3, 0, 0)
    if error is not None:
        return head + error
    return head + pack(None, 0, pack_uuid(NODE_ID), "n0", 1, pack_uuid(TRACE), "c1", 117683602768396288,
                       3, 1, 0, None, None, b"*\n", 0)


def test_parse_handshake() -> None:
    hs = framing.parse_handshake(_handshake_answer())
    assert hs.version == (3, 0, 0)
    assert hs.node_id == NODE_ID and hs.node_name == "n0"
    assert hs.cluster_ids == (TRACE,) and hs.cluster_name == "c1"
    assert hs.server_version == "3.1.0"
    assert hs.features == b"*\n"


def _error(code: int, cls: str, message: str) -> bytes:
    return pack(pack_uuid(TRACE), code, cls, message, None, None)


def test_handshake_rejected_credentials_is_an_authentication_error() -> None:
    err = _error(ErrorCode.INVALID_CREDENTIALS, "org.apache.ignite.security.AuthenticationException",
                 "Authentication failed")
    with pytest.raises(AuthenticationError, match="127.0.0.1:10800.*Authentication failed.*IGN-AUTHENTICATION-2"):
        framing.parse_handshake(_handshake_answer(err), address="127.0.0.1:10800")


def test_handshake_other_error_is_a_handshake_error() -> None:
    err = _error(ErrorCode.PROTOCOL, "x.Y", "unsupported version")
    with pytest.raises(HandshakeError) as info:
        framing.parse_handshake(_handshake_answer(err))
    assert not isinstance(info.value, AuthenticationError)


# ---------------------------------------------------------------- requests, responses, errors
def test_request_frame_golden() -> None:
    body = sql.cursor_request(7)
    assert framing.request(ClientOp.SQL_CURSOR_NEXT_PAGE, 300, body) == \
        b"\x00\x00\x00\x05" + b"\x33" + b"\xcd\x01\x2c" + b"\x07"


def test_sql_exec_request_golden() -> None:
    body = sql.exec_request("SELECT ?", [5], page_size=512, observable_timestamp=9)
    r = Reader(body)
    # tx, schema, page size, timeout, session timeout, time zone, property count and tuple, query,
    # argument count and tuple, observable timestamp
    assert [r.value() for _ in range(12)] == [None, None, 512, 0, None, "UTC", 0, b"\x00", "SELECT ?", 1,
                                              b"\x00\x01\x02\x03\x05\x00\x05", 9]
    assert r.at_end()


def test_encode_arguments_golden() -> None:
    # Per argument: type id, scale, value; None is three NULL elements.
    assert binary_tuple.encode_arguments([5, "a", None]) == \
        bytes([0, 1, 2, 3, 4, 5, 6, 6, 6, 6]) + b"\x05\x00\x05\x0f\x00a"


def test_parse_response_with_error_maps_to_typed_errors() -> None:
    body = pack(4, 4, 77) + _error(ErrorCode.STMT_VALIDATION, "org.apache.ignite.sql.SqlException",
                                   "Failed to validate query. Object 'NOPE' not found")
    header, _ = framing.parse_response(body)
    assert header.request_id == 4 and header.error is not None and header.observable_timestamp == 77
    exc = framing.server_error(header.error, int(ClientOp.SQL_EXEC), "SELECT")
    assert isinstance(exc, TableNotFoundError) and exc.status == ErrorCode.STMT_VALIDATION
    assert exc.code_name == "IGN-SQL-4" and exc.trace_id == TRACE and "NOPE" in str(exc)
    parse = framing.ServerErrorInfo(ErrorCode.STMT_PARSE, "x", "Failed to parse query", TRACE)
    assert type(framing.server_error(parse, 50, "q")) is SqlError
    other = framing.ServerErrorInfo(ErrorCode.INTERNAL, "x", None, TRACE)
    assert type(framing.server_error(other, 50, "q")) is Ignite3ServerError
    # IGN-REP-1 and the placement driver's group: a replica that cannot serve yet, UNAVAILABLE through TensorFlow.
    for group in (ErrorGroup.REP, ErrorGroup.PLACEMENTDRIVER):
        moving = framing.ServerErrorInfo((int(group) << 16) | 1, "x", "Failed to process replica request", TRACE)
        exc = framing.server_error(moving, 12, "put")
        assert type(exc) is ReplicaUnavailableError and exc.tf_error_code == 14


def test_parse_response_assignment_flag() -> None:
    header, r = framing.parse_response(pack(9, 1, 123, 456, "payload"))
    assert header.assignment_changed and header.assignment_time == 123 and header.observable_timestamp == 456
    assert r.value() == "payload"


def test_error_name() -> None:
    assert error_name(ErrorCode.TABLE_NOT_FOUND) == "IGN-TBL-2"


def test_parse_exec_with_rows() -> None:
    cols = pack(2, 6, "ID", False, int(T.INT64), 0, 19, False,
                9, "S", True, int(T.STRING), 0, 100, True, None, "PUBLIC", "T1")
    body = pack(11, True, True, False, -1) + cols + pack(2, b"\x00\x01\x05", b"\x00\x01a")
    res = sql.parse_exec(Reader(body))
    assert res.cursor_id == 11 and res.has_more and res.has_row_set
    assert [c.name for c in res.columns] == ["ID", "S"]
    assert res.columns[1].schema == "PUBLIC" and res.columns[1].table == "T1" and res.columns[1].origin == "S"
    assert list(res.rows) == [b"\x00\x01\x05", b"\x00\x01a"]
    rows, more = sql.parse_next_page(Reader(pack(1, b"\x00\x01\x07", False)))
    assert list(rows) == [b"\x00\x01\x07"] and more is False


def test_a_page_of_rows_stays_in_its_frame_and_reading_goes_on_after_it() -> None:
    rows = [b"\x00\x01\x05", b"r" * 300, b"s" * 70_000, b""]  # bin 8, bin 16, bin 32, empty
    big = "x" * 200_000  # a value of many feed slices before the rows
    body = pack(big, len(rows), *rows, "after", 7)
    r = Reader(bytearray(body))
    assert r.str() == big
    page = r.binaries(r.int())
    assert isinstance(page, RowPage) and list(page) == rows and page[1] == rows[1] and page[-1] == b""
    assert page.nbytes == sum(map(len, rows))
    assert r.str() == "after" and r.int() == 7 and r.at_end()
    # spans of the frame: the second row starts 3 bytes after its header
    assert bytes(page.data[page.starts[1]:page.starts[1] + 3]) == b"rrr"


def test_rows_that_are_not_binary_or_run_past_the_frame_are_protocol_errors() -> None:
    with pytest.raises(ProtocolError, match="row 1 is not a binary value"):
        Reader(pack(b"ab", "str")).binaries(2)
    with pytest.raises(ProtocolError, match="ends .* after the body"):
        Reader(pack(b"abcdef")[:-2]).binaries(1)
    with pytest.raises(ProtocolError, match="header"):
        Reader(b"\xc5\x01").binaries(1)
    with pytest.raises(ProtocolError, match="2 rows claimed, 3 bytes left"):  # a row is at least 2 bytes
        Reader(b"\xc4\x00\xc4").binaries(2)


# ---------------------------------------------------------------- binary tuples
def test_golden_row_decodes_to_the_inserted_values() -> None:
    page = columns.decode_page([GOLDEN_ROW, SPARSE_ROW], COLUMNS)
    got = {c.name: v for c, v in zip(page.columns, page.values)}
    present = {c.name: p for c, p in zip(page.columns, page.present)}
    assert got["ID"].tolist() == [1, 2**40]
    assert got["I"].tolist() == [5, 0] and present["I"].tolist() == [True, False]
    assert got["F"].dtype == np.float32 and got["F"][0] == 1.5
    assert got["D"][0] == 2.25
    assert got["S"].tolist() == ["héllo".encode(), b""] and present["S"].tolist() == [True, True]
    assert got["B"].tolist() == [True, False]
    assert got["DEC"][0] == pytest.approx(12.345)
    assert got["DT"][0] == 19782 * 86_400_000  # 2024-02-29, in ms since the epoch
    # Ignite 3.1 keeps TIME to the millisecond: the node sent 13:14:15.123 (a 4-byte TIME).
    assert got["TM"][0] == (13 * 3600 + 14 * 60 + 15) * 10**9 + 123_000_000
    assert got["TS"][0] == TS_NS and got["DTT"][0] == TS_NS
    assert got["U"][0] == b"6f1e3a1c-2f5d-4b8e-9a77-0f4b2d7c9e10"
    assert got["BYT"].tolist() == [b"\x00\x80\xff", b""]
    assert got["T8"][0] == -5 and got["T16"][0] == 1000


def test_row_by_row_decoder_agrees_with_the_page_decoder() -> None:
    bounds = binary_tuple.element_bounds(GOLDEN_ROW, len(COLUMNS))
    values = [binary_tuple.decode_value(c.type, GOLDEN_ROW, b, e) for c, (b, e) in zip(COLUMNS, bounds)]
    assert values[4] == "héllo"
    assert values[6] == decimal.Decimal("12.345")
    assert values[7] == dt.date(2024, 2, 29)
    assert values[8] == dt.time(13, 14, 15, 123000)
    assert values[9] == dt.datetime(2024, 2, 29, 13, 14, 15, 500000)
    assert values[10] == dt.datetime(2024, 2, 29, 13, 14, 15, 500000, tzinfo=dt.timezone.utc)
    assert values[11] == uuid.UUID("6f1e3a1c-2f5d-4b8e-9a77-0f4b2d7c9e10")


def test_decimal_as_string_keeps_every_digit() -> None:
    page = columns.decode_page([GOLDEN_ROW], COLUMNS, decimal_as="string", select=[6])
    assert page.values[0].tolist() == [b"12.345"]


@pytest.mark.parametrize("value", [0, -1, 127, 128, -32769, 2**31, -2**63, "", "x", b"", b"\x80", 1.5, 0.1,
                                   True, dt.date(1, 1, 1), dt.date(9999, 12, 31), dt.time(23, 59, 59, 999999),
                                   dt.datetime(2000, 1, 2, 3, 4, 5, 6), decimal.Decimal("-123.4500"),
                                   uuid.UUID(int=2**128 - 1)])
def test_argument_encoding_round_trips(value: object) -> None:
    data = binary_tuple.encode_arguments([value])
    (tb, te), (sb, se), (vb, ve) = binary_tuple.element_bounds(data, 3)
    col_type = binary_tuple.decode_value(T.INT32, data, tb, te)
    got = binary_tuple.decode_value(col_type, data, vb, ve)
    assert got == value


def test_wide_rows_use_two_byte_offsets() -> None:
    row = binary_tuple.build([b"a" * 300, b"\x05"])
    assert row[0] & 0b11 == 1
    page = columns.decode_page([row], [sql.ColumnMeta("S", T.STRING), sql.ColumnMeta("N", T.INT64)])
    assert page.values[0][0] == b"a" * 300 and page.values[1][0] == 5


def test_strings_and_bytes_escaped_empty_null_short_and_long() -> None:
    # A value that begins with the marker byte 0x80 is escaped by one (as is the empty value); NULL is
    # no bytes. Short values are sliced from one copy of the frame, long ones copied one by one.
    values = [b"\x80\x01", b"", None, b"plain", b"\x80", "é".encode()]
    for pad in (0, 5000):
        vals = [v + b"x" * pad if v is not None else None for v in values]
        rows = [binary_tuple.build([binary_tuple._varlen(v) if v is not None else None, b"\x07"]) for v in vals]
        page = columns.decode_page(rows, [sql.ColumnMeta("B", T.BYTE_ARRAY), sql.ColumnMeta("N", T.INT8)])
        assert page.values[0].tolist() == [v if v is not None else b"" for v in vals]
        assert all(type(v) is bytes for v in page.values[0])
        assert page.present[0].tolist() == [v is not None for v in vals]
        assert page.values[1].tolist() == [7] * len(vals)
        spans = columns.decode_page(rows, [sql.ColumnMeta("B", T.BYTE_ARRAY), sql.ColumnMeta("N", T.INT8)],
                                    strings="spans")
        assert isinstance(spans.values[0], ByteSpans)
        assert spans.values[0].objects().tolist() == page.values[0].tolist()
        assert spans.present[0].tolist() == page.present[0].tolist()
        assert spans.values[0].nbytes == sum(len(v) for v in page.values[0])


def test_byte_spans_select_slice_and_join_like_object_arrays() -> None:
    buf = b"..alpha.beta..gamma"
    col = ByteSpans(buf, np.array([2, 8, 13, 14]), np.array([7, 12, 13, 19]))
    assert col.objects().tolist() == [b"alpha", b"beta", b"", b"gamma"]
    assert col[1] == b"beta" and len(col) == 4 and col.shape == (4,)
    assert col[1:3].objects().tolist() == [b"beta", b""]
    assert col[np.array([True, False, False, True])].objects().tolist() == [b"alpha", b"gamma"]
    assert col[np.array([3, 0])].objects().tolist() == [b"gamma", b"alpha"]
    joined = col[2:].join(col[:2])
    assert joined.objects().tolist() == [b"", b"gamma", b"alpha", b"beta"]
    assert len(joined.buffers) == 2 and all(b.obj is buf for b in joined.buffers)  # no value copied
    assert joined[1:3].objects().tolist() == [b"gamma", b"alpha"]
    assert joined[np.array([3, 0])].join(col[:1]).objects().tolist() == [b"beta", b"", b"alpha"]
    assert as_objects(col).tolist() == col.objects().tolist() and as_objects(np.zeros(2)).tolist() == [0, 0]
    for starts, ends in (([0], [20]), ([-1], [2]), ([3], [2]), ([0, 1], [1])):
        with pytest.raises(ValueError, match="ByteSpans"):
            ByteSpans(buf, np.array(starts), np.array(ends))


# ---------------------------------------------------------------- hostile input
@pytest.mark.parametrize("row", [b"", b"\x00", b"\x00\x09\x01", b"\x00\x02\x01\x00\x00", b"\x03" + b"\x00" * 20])
def test_corrupt_rows_are_protocol_errors(row: bytes) -> None:
    with pytest.raises(ProtocolError):
        columns.decode_page([row], [sql.ColumnMeta("A", T.INT64), sql.ColumnMeta("B", T.INT64)])


def _fill(view: memoryview, data: bytes) -> int:
    view[:len(data)] = data
    return len(data)


def test_frames_split_by_the_one_frame_reader_with_the_big_endian_prefix() -> None:
    stream = framing.frame(b"\x01\x02") + framing.frame(b"") + framing.frame(bytes(300_000))
    chunks = [stream[i:i + 7] for i in range(0, len(stream), 7)]
    reader = FrameReader(lambda view: _fill(view, chunks.pop(0)), prefix=framing.LENGTH)
    assert bytes(reader.read_frame()) == b"\x01\x02"
    assert bytes(reader.read_frame()) == b""
    assert bytes(reader.read_frame()) == bytes(300_000)  # a large frame: received in place
    assert reader.bytes_received == len(stream)


def test_truncated_and_oversized_frames_are_protocol_errors() -> None:
    with pytest.raises(ProtocolError):
        Reader(b"\xda\xff\xff").str()  # a string of 65535 bytes in a body of 3
    with pytest.raises(ProtocolError):
        Reader(pack(5)).binaries(1 << 30)
    with pytest.raises(ProtocolError):  # a 2 GiB frame announced: refused by the one frame reader
        FrameReader(lambda view: _fill(view, b"\x7f\xff\xff\xff"), max_frame=1 << 20,
                    prefix=framing.LENGTH).read_frame()
    with pytest.raises(ProtocolError):
        framing.parse_handshake(pack(3, 0, 0, None, 0))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_give_a_value_or_a_protocol_error(data: bytes) -> None:
    for parse in (lambda: framing.parse_response(data), lambda: framing.parse_handshake(data),
                  lambda: sql.parse_exec(Reader(data)),
                  lambda: columns.decode_page([data], COLUMNS)):
        try:
            parse()
        except ProtocolError:
            pass


def test_sql_batch_request_and_answer_golden() -> None:
    body = sql.batch_request("INSERT INTO T VALUES (?, ?)", [(1, "a"), (np.int32(2), "b")])
    r = Reader(body)
    assert [r.value() for _ in range(9)] == [None, None, 1024, 0, None, "UTC", 0, b"\x00",
                                             "INSERT INTO T VALUES (?, ?)"]
    # Row width, row count, the unused flag, one argument tuple per row (np.int32 stays INT32).
    assert [r.value() for _ in range(3)] == [2, 2, False]
    assert r.value() == bytes([0, 1, 2, 3, 4, 5, 6]) + b"\x05\x00\x01\x0f\x00a"
    assert r.value() == bytes([0, 1, 2, 3, 4, 5, 6]) + b"\x04\x00\x02\x0f\x00b"
    assert r.value() == 0 and r.at_end()
    assert sql.parse_batch(Reader(pack(None, False, False, False, 2, 1, 1))) == [1, 1]
    with pytest.raises(ProtocolError):
        sql.parse_batch(Reader(pack(None, False, False, False, 1000)))
