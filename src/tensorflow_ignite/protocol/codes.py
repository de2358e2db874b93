"""Numeric constants of the Ignite thin-client protocol and binary format.

Every value here was checked against Apache Ignite's Java sources (the server is
the authority, not the docs):

* ``Op`` -- ``ClientMessageParser`` (``internal/processors/platform/client``).
* ``TypeCode``, ``CollectionKind``, ``MapKind`` -- ``GridBinaryMarshaller``.
* ``ObjectFlag`` -- ``BinaryUtils.FLAG_*``.
* ``ClientStatus`` -- ``ClientStatus`` (generated table, see below).
* ``Feature`` -- ``ProtocolBitmaskFeature`` (Java thin client); the server-side
  twin is ``ClientBitmaskFeature`` with the same ids.
* ``ResponseFlag`` -- ``ClientFlag`` plus ``NOTIFICATION`` (4) read by
  ``TcpClientChannel``.
* cache/transaction/cluster enums -- ordinals of the Java enums, which is what
  the thin protocol sends.
"""

from __future__ import annotations

from enum import IntEnum, IntFlag
from typing import NamedTuple

__all__ = [
    "Op",
    "TypeCode",
    "ObjectFlag",
    "CollectionKind",
    "MapKind",
    "ClientStatus",
    "STATUS_NAMES",
    "Feature",
    "ResponseFlag",
    "CacheRequestFlag",
    "ProtocolVersion",
    "V1_0_0",
    "V1_1_0",
    "V1_2_0",
    "V1_3_0",
    "V1_4_0",
    "V1_5_0",
    "V1_6_0",
    "V1_7_0",
    "SUPPORTED_VERSIONS",
    "CacheMode",
    "AtomicityMode",
    "WriteSynchronizationMode",
    "RebalanceMode",
    "PartitionLossPolicy",
    "QueryIndexType",
    "PeekMode",
    "TxConcurrency",
    "TxIsolation",
    "ClusterState",
    "StatementType",
    "DataStreamerFlag",
    "ComputeTaskFlag",
    "ServiceInvokeFlag",
    "PlatformId",
    "HANDSHAKE_REQUEST_CODE",
    "THIN_CLIENT_CODE",
]


class Op(IntEnum):
    """Operation codes (``ClientMessageParser.OP_*``)."""

    # General purpose.
    RESOURCE_CLOSE = 0
    HEARTBEAT = 1
    GET_IDLE_TIMEOUT = 2

    # Key-value.
    CACHE_GET = 1000
    CACHE_PUT = 1001
    CACHE_PUT_IF_ABSENT = 1002
    CACHE_GET_ALL = 1003
    CACHE_PUT_ALL = 1004
    CACHE_GET_AND_PUT = 1005
    CACHE_GET_AND_REPLACE = 1006
    CACHE_GET_AND_REMOVE = 1007
    CACHE_GET_AND_PUT_IF_ABSENT = 1008
    CACHE_REPLACE = 1009
    CACHE_REPLACE_IF_EQUALS = 1010
    CACHE_CONTAINS_KEY = 1011
    CACHE_CONTAINS_KEYS = 1012
    CACHE_CLEAR = 1013
    CACHE_CLEAR_KEY = 1014
    CACHE_CLEAR_KEYS = 1015
    CACHE_REMOVE_KEY = 1016
    CACHE_REMOVE_IF_EQUALS = 1017
    CACHE_REMOVE_KEYS = 1018
    CACHE_REMOVE_ALL = 1019
    CACHE_GET_SIZE = 1020
    CACHE_LOCAL_PEEK = 1021
    CACHE_PUT_ALL_CONFLICT = 1022
    CACHE_REMOVE_ALL_CONFLICT = 1023
    CACHE_INVOKE = 1024
    CACHE_INVOKE_ALL = 1025

    # Cache create / destroy / configuration.
    CACHE_GET_NAMES = 1050
    CACHE_CREATE_WITH_NAME = 1051
    CACHE_GET_OR_CREATE_WITH_NAME = 1052
    CACHE_CREATE_WITH_CONFIGURATION = 1053
    CACHE_GET_OR_CREATE_WITH_CONFIGURATION = 1054
    CACHE_GET_CONFIGURATION = 1055
    CACHE_DESTROY = 1056

    # Partition awareness.
    CACHE_NODE_PARTITIONS = 1100  # deprecated since protocol 1.3.0
    CACHE_PARTITIONS = 1101

    # Queries.
    QUERY_SCAN = 2000
    QUERY_SCAN_CURSOR_GET_PAGE = 2001
    QUERY_SQL = 2002
    QUERY_SQL_CURSOR_GET_PAGE = 2003
    QUERY_SQL_FIELDS = 2004
    QUERY_SQL_FIELDS_CURSOR_GET_PAGE = 2005
    QUERY_CONTINUOUS = 2006
    QUERY_CONTINUOUS_EVENT_NOTIFICATION = 2007
    QUERY_INDEX = 2008
    QUERY_INDEX_CURSOR_GET_PAGE = 2009

    # Binary metadata.
    BINARY_TYPE_NAME_GET = 3000
    BINARY_TYPE_NAME_PUT = 3001
    BINARY_TYPE_GET = 3002
    BINARY_TYPE_PUT = 3003
    BINARY_CONFIGURATION_GET = 3004

    # Transactions.
    TX_START = 4000
    TX_END = 4001

    # Cluster.
    CLUSTER_GET_STATE = 5000  # "is active" before the CLUSTER_STATES feature
    CLUSTER_CHANGE_STATE = 5001
    CLUSTER_CHANGE_WAL_STATE = 5002
    CLUSTER_GET_WAL_STATE = 5003
    CLUSTER_GROUP_GET_NODE_IDS = 5100
    CLUSTER_GROUP_GET_NODE_INFO = 5101
    CLUSTER_GROUP_GET_NODE_ENDPOINTS = 5102

    # Compute.
    COMPUTE_TASK_EXECUTE = 6000
    COMPUTE_TASK_FINISHED = 6001  # server -> client notification

    # Services.
    SERVICE_INVOKE = 7000
    SERVICE_GET_DESCRIPTORS = 7001
    SERVICE_GET_DESCRIPTOR = 7002
    SERVICE_GET_TOPOLOGY = 7003

    # Data streamer.
    DATA_STREAMER_START = 8000
    DATA_STREAMER_ADD_DATA = 8001


class TypeCode(IntEnum):
    """Binary type codes (``GridBinaryMarshaller``), the first byte of every value."""

    OPTIMIZED = -2  # OPTM_MARSH: int length + Java-serialized bytes
    BYTE = 1
    SHORT = 2
    INT = 3
    LONG = 4
    FLOAT = 5
    DOUBLE = 6
    CHAR = 7
    BOOL = 8
    STRING = 9
    UUID = 10
    DATE = 11
    BYTE_ARR = 12
    SHORT_ARR = 13
    INT_ARR = 14
    LONG_ARR = 15
    FLOAT_ARR = 16
    DOUBLE_ARR = 17
    CHAR_ARR = 18
    BOOL_ARR = 19
    STRING_ARR = 20
    UUID_ARR = 21
    DATE_ARR = 22
    OBJ_ARR = 23
    COLLECTION = 24
    MAP = 25
    BINARY_OBJ = 27  # "wrapped"/portable: int length + object bytes + int start offset
    ENUM = 28
    ENUM_ARR = 29
    DECIMAL = 30
    DECIMAL_ARR = 31
    CLASS = 32
    TIMESTAMP = 33
    TIMESTAMP_ARR = 34
    PROXY = 35
    TIME = 36
    TIME_ARR = 37
    BINARY_ENUM = 38
    OBJ_ARR_WRAPPER = 39
    NULL = 101
    HANDLE = 102
    OBJ = 103


class ObjectFlag(IntFlag):
    """Flags of a complex object header (``BinaryUtils.FLAG_*``)."""

    USER_TYPE = 0x0001
    HAS_SCHEMA = 0x0002
    HAS_RAW = 0x0004
    OFFSET_ONE_BYTE = 0x0008
    OFFSET_TWO_BYTES = 0x0010
    COMPACT_FOOTER = 0x0020
    EMPTY_HASH_CODE = 0x0040


class CollectionKind(IntEnum):
    """Collection type byte written after the size of a ``COLLECTION`` (24)."""

    USER_SET = -1
    USER_COL = 0
    ARRAY_LIST = 1
    LINKED_LIST = 2
    HASH_SET = 3
    LINKED_HASH_SET = 4
    SINGLETON_LIST = 5


class MapKind(IntEnum):
    """Map type byte written after the size of a ``MAP`` (25)."""

    USER_MAP = 0
    HASH_MAP = 1
    LINKED_HASH_MAP = 2


# ---------------------------------------------------------------- generated table
# GENERATED from org.apache.ignite.internal.processors.platform.client.ClientStatus
# (Apache Ignite master, 2.18 line). Do not edit by hand: re-derive from the Java
# source when Ignite adds a status.
class ClientStatus(IntEnum):
    """Response status codes (``ClientStatus``)."""

    SUCCESS = 0
    FAILED = 1
    INVALID_OP_CODE = 2
    FUNCTIONALITY_DISABLED = 100
    CACHE_DOES_NOT_EXIST = 1000
    CACHE_EXISTS = 1001
    TOO_MANY_CURSORS = 1010
    RESOURCE_DOES_NOT_EXIST = 1011
    SECURITY_VIOLATION = 1012
    TX_LIMIT_EXCEEDED = 1020
    TX_NOT_FOUND = 1021
    TOO_MANY_COMPUTE_TASKS = 1030
    AUTH_FAILED = 2000


STATUS_NAMES: dict[int, str] = {s.value: s.name for s in ClientStatus}
# ------------------------------------------------------------ end generated table


class Feature(IntEnum):
    """Bit numbers of the 1.7.0 handshake feature mask (``ProtocolBitmaskFeature``)."""

    USER_ATTRIBUTES = 0
    EXECUTE_TASK_BY_NAME = 1
    CLUSTER_STATES = 2
    CLUSTER_GROUP_GET_NODES_ENDPOINTS = 3
    CLUSTER_GROUPS = 4
    SERVICE_INVOKE = 5
    DEFAULT_QRY_TIMEOUT = 6
    QRY_PARTITIONS_BATCH_SIZE = 7
    BINARY_CONFIGURATION = 8
    GET_SERVICE_DESCRIPTORS = 9
    SERVICE_INVOKE_CALLCTX = 10
    HEARTBEAT = 11
    DATA_REPLICATION_OPERATIONS = 12
    ALL_AFFINITY_MAPPINGS = 13
    INDEX_QUERY = 14
    INDEX_QUERY_LIMIT = 15
    SERVICE_TOPOLOGY = 16
    CACHE_INVOKE = 17
    TX_AWARE_QUERIES = 18


class ResponseFlag(IntFlag):
    """Flags of a response header, protocol 1.4+ (``ClientFlag``)."""

    ERROR = 1
    AFFINITY_TOPOLOGY_CHANGED = 2
    NOTIFICATION = 4


class CacheRequestFlag(IntFlag):
    """The flags byte after the cache id of cache requests (``ClientCacheRequest``)."""

    KEEP_BINARY = 0x01
    TRANSACTIONAL = 0x02  # followed by int tx id (data requests only)
    WITH_EXPIRY_POLICY = 0x04  # followed by three longs: create, update, access


class ProtocolVersion(NamedTuple):
    """A thin-client protocol version (major, minor, patch)."""

    major: int
    minor: int
    patch: int

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"


V1_0_0 = ProtocolVersion(1, 0, 0)
V1_1_0 = ProtocolVersion(1, 1, 0)  # authentication
V1_2_0 = ProtocolVersion(1, 2, 0)  # query entity precision and scale
V1_3_0 = ProtocolVersion(1, 3, 0)
V1_4_0 = ProtocolVersion(1, 4, 0)  # partition awareness: response flags, node id
V1_5_0 = ProtocolVersion(1, 5, 0)  # transactions
V1_6_0 = ProtocolVersion(1, 6, 0)  # expiry policy in cache configuration
V1_7_0 = ProtocolVersion(1, 7, 0)  # feature bitmask in the handshake

#: Versions an Ignite 2.18 server accepts, newest first (``ClientConnectionContext``).
SUPPORTED_VERSIONS: tuple[ProtocolVersion, ...] = (
    V1_7_0, V1_6_0, V1_5_0, V1_4_0, V1_3_0, V1_2_0, V1_1_0, V1_0_0,
)

#: First byte after the length of a handshake (``ClientListenerRequest.HANDSHAKE``).
HANDSHAKE_REQUEST_CODE = 1
#: Client type byte of a thin client (``ClientListenerNioListener.THIN_CLIENT``).
THIN_CLIENT_CODE = 2


class CacheMode(IntEnum):
    """``CacheMode`` as sent in cache configurations (LOCAL is gone in 2.18)."""

    LOCAL = 0
    REPLICATED = 1
    PARTITIONED = 2


class AtomicityMode(IntEnum):
    """``CacheAtomicityMode`` ordinals."""

    TRANSACTIONAL = 0
    ATOMIC = 1


class WriteSynchronizationMode(IntEnum):
    """``CacheWriteSynchronizationMode`` ordinals."""

    FULL_SYNC = 0
    FULL_ASYNC = 1
    PRIMARY_SYNC = 2


class RebalanceMode(IntEnum):
    """``CacheRebalanceMode`` ordinals."""

    SYNC = 0
    ASYNC = 1
    NONE = 2


class PartitionLossPolicy(IntEnum):
    """``PartitionLossPolicy`` ordinals."""

    READ_ONLY_SAFE = 0
    READ_ONLY_ALL = 1
    READ_WRITE_SAFE = 2
    READ_WRITE_ALL = 3
    IGNORE = 4


class QueryIndexType(IntEnum):
    """``QueryIndexType`` ordinals."""

    SORTED = 0
    FULLTEXT = 1
    GEOSPATIAL = 2


class PeekMode(IntEnum):
    """``CachePeekMode`` ordinals (cache size request)."""

    ALL = 0
    NEAR = 1
    PRIMARY = 2
    BACKUP = 3
    ONHEAP = 4
    OFFHEAP = 5


class TxConcurrency(IntEnum):
    """``TransactionConcurrency`` ordinals."""

    OPTIMISTIC = 0
    PESSIMISTIC = 1


class TxIsolation(IntEnum):
    """``TransactionIsolation`` ordinals."""

    READ_COMMITTED = 0
    REPEATABLE_READ = 1
    SERIALIZABLE = 2


class ClusterState(IntEnum):
    """``ClusterState`` ordinals (with the CLUSTER_STATES feature)."""

    INACTIVE = 0
    ACTIVE = 1
    ACTIVE_READ_ONLY = 2


class StatementType(IntEnum):
    """``JdbcStatementType`` ordinals of an SQL fields query."""

    ANY = 0
    SELECT = 1
    UPDATE = 2


class DataStreamerFlag(IntFlag):
    """``ClientDataStreamerFlags``."""

    ALLOW_OVERWRITE = 0x01
    SKIP_STORE = 0x02
    KEEP_BINARY = 0x04
    FLUSH = 0x08
    CLOSE = 0x10


class ComputeTaskFlag(IntFlag):
    """``ClientComputeTask`` flags."""

    NO_FAILOVER = 0x01
    NO_RESULT_CACHE = 0x02
    KEEP_BINARY = 0x04


class ServiceInvokeFlag(IntFlag):
    """``ClientServiceInvokeRequest`` flags."""

    KEEP_BINARY = 0x01
    PARAMETER_TYPES = 0x02


class PlatformId(IntEnum):
    """``MarshallerPlatformIds`` used by the binary type name get/put requests."""

    JAVA = 0
    DOTNET = 1
