"""The thin client: connections, TLS, authentication, caches, scans, SQL, partition routing."""

from .cache import Cache
from .client import IgniteClient, PartitionMap, parse_addresses
from .connection import Connection, ConnectionSettings, probe
from .options import ConnectionKeywords, ConnectionOptions
from .pool import close_shared_clients, pooled_options, shared_client
from .sql import SqlCursor
from .stats import ClientStats, ConnectionStats
from .transactions import Transaction, TransactionConflictError

__all__ = [
    "Cache",
    "ClientStats",
    "Connection",
    "ConnectionKeywords",
    "ConnectionOptions",
    "ConnectionSettings",
    "ConnectionStats",
    "IgniteClient",
    "PartitionMap",
    "SqlCursor",
    "Transaction",
    "TransactionConflictError",
    "close_shared_clients",
    "parse_addresses",
    "pooled_options",
    "probe",
    "shared_client",
]
