"""Op codes, type codes, statuses and feature bits, pinned to Ignite's Java sources."""

from __future__ import annotations

from tensorflow_ignite.protocol.codes import (
    SUPPORTED_VERSIONS,
    CacheRequestFlag,
    ClientStatus,
    CollectionKind,
    Feature,
    MapKind,
    ObjectFlag,
    Op,
    ResponseFlag,
    TypeCode,
)


def test_op_codes_match_client_message_parser() -> None:
    expected = {
        "RESOURCE_CLOSE": 0, "HEARTBEAT": 1, "GET_IDLE_TIMEOUT": 2,
        "CACHE_GET": 1000, "CACHE_PUT": 1001, "CACHE_PUT_IF_ABSENT": 1002, "CACHE_GET_ALL": 1003,
        "CACHE_PUT_ALL": 1004, "CACHE_GET_AND_PUT": 1005, "CACHE_GET_AND_REPLACE": 1006,
        "CACHE_GET_AND_REMOVE": 1007, "CACHE_GET_AND_PUT_IF_ABSENT": 1008, "CACHE_REPLACE": 1009,
        "CACHE_REPLACE_IF_EQUALS": 1010, "CACHE_CONTAINS_KEY": 1011, "CACHE_CONTAINS_KEYS": 1012,
        "CACHE_CLEAR": 1013, "CACHE_CLEAR_KEY": 1014, "CACHE_CLEAR_KEYS": 1015, "CACHE_REMOVE_KEY": 1016,
        "CACHE_REMOVE_IF_EQUALS": 1017, "CACHE_REMOVE_KEYS": 1018, "CACHE_REMOVE_ALL": 1019,
        "CACHE_GET_SIZE": 1020, "CACHE_LOCAL_PEEK": 1021, "CACHE_PUT_ALL_CONFLICT": 1022,
        "CACHE_REMOVE_ALL_CONFLICT": 1023, "CACHE_INVOKE": 1024, "CACHE_INVOKE_ALL": 1025,
        "CACHE_GET_NAMES": 1050, "CACHE_CREATE_WITH_NAME": 1051, "CACHE_GET_OR_CREATE_WITH_NAME": 1052,
        "CACHE_CREATE_WITH_CONFIGURATION": 1053, "CACHE_GET_OR_CREATE_WITH_CONFIGURATION": 1054,
        "CACHE_GET_CONFIGURATION": 1055, "CACHE_DESTROY": 1056, "CACHE_NODE_PARTITIONS": 1100,
        "CACHE_PARTITIONS": 1101, "QUERY_SCAN": 2000, "QUERY_SCAN_CURSOR_GET_PAGE": 2001, "QUERY_SQL": 2002,
        "QUERY_SQL_CURSOR_GET_PAGE": 2003, "QUERY_SQL_FIELDS": 2004, "QUERY_SQL_FIELDS_CURSOR_GET_PAGE": 2005,
        "QUERY_CONTINUOUS": 2006, "QUERY_CONTINUOUS_EVENT_NOTIFICATION": 2007, "QUERY_INDEX": 2008,
        "QUERY_INDEX_CURSOR_GET_PAGE": 2009, "BINARY_TYPE_NAME_GET": 3000, "BINARY_TYPE_NAME_PUT": 3001,
        "BINARY_TYPE_GET": 3002, "BINARY_TYPE_PUT": 3003, "BINARY_CONFIGURATION_GET": 3004,
        "TX_START": 4000, "TX_END": 4001, "CLUSTER_GET_STATE": 5000, "CLUSTER_CHANGE_STATE": 5001,
        "CLUSTER_CHANGE_WAL_STATE": 5002, "CLUSTER_GET_WAL_STATE": 5003, "CLUSTER_GROUP_GET_NODE_IDS": 5100,
        "CLUSTER_GROUP_GET_NODE_INFO": 5101, "CLUSTER_GROUP_GET_NODE_ENDPOINTS": 5102,
        "COMPUTE_TASK_EXECUTE": 6000, "COMPUTE_TASK_FINISHED": 6001, "SERVICE_INVOKE": 7000,
        "SERVICE_GET_DESCRIPTORS": 7001, "SERVICE_GET_DESCRIPTOR": 7002, "SERVICE_GET_TOPOLOGY": 7003,
        "DATA_STREAMER_START": 8000, "DATA_STREAMER_ADD_DATA": 8001,
    }
    assert {op.name: op.value for op in Op} == expected


def test_type_codes_match_grid_binary_marshaller() -> None:
    expected = {
        "OPTIMIZED": -2, "BYTE": 1, "SHORT": 2, "INT": 3, "LONG": 4, "FLOAT": 5, "DOUBLE": 6, "CHAR": 7,
        "BOOL": 8, "STRING": 9, "UUID": 10, "DATE": 11, "BYTE_ARR": 12, "SHORT_ARR": 13, "INT_ARR": 14,
        "LONG_ARR": 15, "FLOAT_ARR": 16, "DOUBLE_ARR": 17, "CHAR_ARR": 18, "BOOL_ARR": 19, "STRING_ARR": 20,
        "UUID_ARR": 21, "DATE_ARR": 22, "OBJ_ARR": 23, "COLLECTION": 24, "MAP": 25, "BINARY_OBJ": 27,
        "ENUM": 28, "ENUM_ARR": 29, "DECIMAL": 30, "DECIMAL_ARR": 31, "CLASS": 32, "TIMESTAMP": 33,
        "TIMESTAMP_ARR": 34, "PROXY": 35, "TIME": 36, "TIME_ARR": 37, "BINARY_ENUM": 38,
        "OBJ_ARR_WRAPPER": 39, "NULL": 101, "HANDLE": 102, "OBJ": 103,
    }
    assert {t.name: t.value for t in TypeCode} == expected


def test_flags_and_kinds() -> None:
    assert [int(f) for f in ObjectFlag] == [0x1, 0x2, 0x4, 0x8, 0x10, 0x20, 0x40]
    assert [int(f) for f in ResponseFlag] == [1, 2, 4]
    assert [int(f) for f in CacheRequestFlag] == [1, 2, 4]
    assert {k.name: k.value for k in CollectionKind} == {
        "USER_SET": -1, "USER_COL": 0, "ARRAY_LIST": 1, "LINKED_LIST": 2, "HASH_SET": 3,
        "LINKED_HASH_SET": 4, "SINGLETON_LIST": 5,
    }
    assert {k.name: k.value for k in MapKind} == {"USER_MAP": 0, "HASH_MAP": 1, "LINKED_HASH_MAP": 2}


def test_status_table_is_the_generated_one() -> None:
    assert {s.name: s.value for s in ClientStatus} == {
        "SUCCESS": 0, "FAILED": 1, "INVALID_OP_CODE": 2, "FUNCTIONALITY_DISABLED": 100,
        "CACHE_DOES_NOT_EXIST": 1000, "CACHE_EXISTS": 1001, "TOO_MANY_CURSORS": 1010,
        "RESOURCE_DOES_NOT_EXIST": 1011, "SECURITY_VIOLATION": 1012, "TX_LIMIT_EXCEEDED": 1020,
        "TX_NOT_FOUND": 1021, "TOO_MANY_COMPUTE_TASKS": 1030, "AUTH_FAILED": 2000,
    }


def test_feature_bits_match_protocol_bitmask_feature() -> None:
    assert [f.name for f in sorted(Feature)] == [
        "USER_ATTRIBUTES", "EXECUTE_TASK_BY_NAME", "CLUSTER_STATES", "CLUSTER_GROUP_GET_NODES_ENDPOINTS",
        "CLUSTER_GROUPS", "SERVICE_INVOKE", "DEFAULT_QRY_TIMEOUT", "QRY_PARTITIONS_BATCH_SIZE",
        "BINARY_CONFIGURATION", "GET_SERVICE_DESCRIPTORS", "SERVICE_INVOKE_CALLCTX", "HEARTBEAT",
        "DATA_REPLICATION_OPERATIONS", "ALL_AFFINITY_MAPPINGS", "INDEX_QUERY", "INDEX_QUERY_LIMIT",
        "SERVICE_TOPOLOGY", "CACHE_INVOKE", "TX_AWARE_QUERIES",
    ]
    assert [int(f) for f in sorted(Feature)] == list(range(19))


def test_supported_versions() -> None:
    assert [str(v) for v in SUPPORTED_VERSIONS] == [
        "1.7.0", "1.6.0", "1.5.0", "1.4.0", "1.3.0", "1.2.0", "1.1.0", "1.0.0",
    ]
