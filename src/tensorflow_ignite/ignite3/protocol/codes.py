"""Codes of the Apache Ignite 3 client protocol (version 3.0.0, servers 3.0 and 3.1).

Facts of Ignite 3's ``modules/client-common`` (``ClientOp``, ``ResponseFlags``,
``ProtocolVersion``), ``modules/api`` (``ColumnType``, ``ErrorGroups``): the
numbers below are the wire's, checked against the 3.1.0 sources.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = [
    "MAGIC",
    "PROTOCOL_VERSION",
    "CLIENT_TYPE_GENERAL",
    "ClientOp",
    "ResponseFlag",
    "ColumnType",
    "ErrorGroup",
    "ErrorCode",
    "error_group",
    "error_name",
]

#: The four bytes each side sends first (``IGNI``).
MAGIC = b"IGNI"
#: The protocol version this client proposes.
PROTOCOL_VERSION = (3, 0, 0)
#: ``HandshakeUtils.CLIENT_TYPE_GENERAL``: an ordinary client (not a compute executor).
CLIENT_TYPE_GENERAL = 2


class ClientOp(IntEnum):
    """Request operation codes (the subset this client sends or plans to)."""

    HEARTBEAT = 1
    TABLES_GET = 3
    TABLE_GET = 4
    SCHEMAS_GET = 5
    TUPLE_UPSERT = 10
    TUPLE_GET = 12
    TUPLE_UPSERT_ALL = 13
    TUPLE_GET_ALL = 15
    TUPLE_DELETE = 28
    TUPLE_DELETE_ALL = 29
    TUPLE_CONTAINS_KEY = 33
    TX_BEGIN = 43
    TX_COMMIT = 44
    TX_ROLLBACK = 45
    CLUSTER_GET_NODES = 48
    SQL_EXEC = 50
    SQL_CURSOR_NEXT_PAGE = 51
    SQL_CURSOR_CLOSE = 52
    PARTITION_ASSIGNMENT_GET = 53
    SQL_EXEC_SCRIPT = 56
    SQL_QUERY_META = 57
    STREAMER_BATCH_SEND = 62
    SQL_EXEC_BATCH = 63
    PRIMARY_REPLICAS_GET = 65
    COMPUTE_EXECUTE_PARTITIONED = 69


class ResponseFlag(IntEnum):
    """Bits of a response's flags (``ResponseFlags``)."""

    PARTITION_ASSIGNMENT_CHANGED = 1
    NOTIFICATION = 2
    ERROR = 4
    SERVER_OP = 8


class ColumnType(IntEnum):
    """SQL column type ids (``org.apache.ignite.sql.ColumnType``)."""

    NULL = 0
    BOOLEAN = 1
    INT8 = 2
    INT16 = 3
    INT32 = 4
    INT64 = 5
    FLOAT = 6
    DOUBLE = 7
    DECIMAL = 8
    DATE = 9
    TIME = 10
    DATETIME = 11
    TIMESTAMP = 12
    UUID = 13
    STRING = 15
    BYTE_ARRAY = 16
    PERIOD = 17
    DURATION = 18


class ErrorGroup(IntEnum):
    """Error groups (``ErrorGroups``): an error code is ``group << 16 | number``."""

    CMN = 1
    TBL = 2
    CLIENT = 3
    SQL = 4
    META = 5
    IDX = 6
    TX = 7
    REP = 8
    STORAGE = 9
    DISTRZONES = 10
    NETWORK = 11
    NODECFG = 12
    CODEDEPLOY = 13
    GC = 14
    AUTHENTICATION = 15
    COMPUTE = 16
    CATALOG = 17
    PLACEMENTDRIVER = 18
    WORKERS = 19
    RECOVERY = 20
    EMBEDDED = 21
    MARSHALLING = 22


def _code(group: ErrorGroup, number: int) -> int:
    return (int(group) << 16) | number


class ErrorCode(IntEnum):
    """The error codes this client tells apart (full codes: group and number)."""

    ILLEGAL_ARGUMENT = _code(ErrorGroup.CMN, 3)
    INTERNAL = _code(ErrorGroup.CMN, 0xFFFF)
    TABLE_ALREADY_EXISTS = _code(ErrorGroup.TBL, 1)
    TABLE_NOT_FOUND = _code(ErrorGroup.TBL, 2)
    COLUMN_NOT_FOUND = _code(ErrorGroup.TBL, 4)
    SCHEMA_VERSION_MISMATCH = _code(ErrorGroup.TBL, 5)
    CONNECTION = _code(ErrorGroup.CLIENT, 1)
    PROTOCOL = _code(ErrorGroup.CLIENT, 2)
    HANDSHAKE_HEADER = _code(ErrorGroup.CLIENT, 8)
    QUERY_NO_RESULT_SET = _code(ErrorGroup.SQL, 1)
    SCHEMA_NOT_FOUND = _code(ErrorGroup.SQL, 2)
    STMT_PARSE = _code(ErrorGroup.SQL, 3)
    STMT_VALIDATION = _code(ErrorGroup.SQL, 4)
    CONSTRAINT_VIOLATION = _code(ErrorGroup.SQL, 5)
    EXECUTION_CANCELLED = _code(ErrorGroup.SQL, 6)
    RUNTIME = _code(ErrorGroup.SQL, 7)
    ACQUIRE_LOCK = _code(ErrorGroup.TX, 4)
    ACQUIRE_LOCK_TIMEOUT = _code(ErrorGroup.TX, 5)
    TX_ALREADY_FINISHED = _code(ErrorGroup.TX, 13)
    TX_ALREADY_FINISHED_WITH_TIMEOUT = _code(ErrorGroup.TX, 16)
    UNSUPPORTED_AUTHENTICATION_TYPE = _code(ErrorGroup.AUTHENTICATION, 1)
    INVALID_CREDENTIALS = _code(ErrorGroup.AUTHENTICATION, 2)
    BASIC_PROVIDER = _code(ErrorGroup.AUTHENTICATION, 3)


def error_group(code: int) -> int:
    """The group number of an error code."""
    return (code >> 16) & 0xFFFF


def error_name(code: int) -> str:
    """``IGN-<GROUP>-<number>``, as Ignite prints a code (``IGN-SQL-4``)."""
    group = error_group(code)
    try:
        prefix = ErrorGroup(group).name
    except ValueError:
        prefix = str(group)
    return f"IGN-{prefix}-{code & 0xFFFF}"
