"""The thin client: connections, TLS, authentication, caches, scans, SQL, partition routing."""

from .cache import Cache
from .client import IgniteClient, PartitionMap, parse_addresses
from .connection import Connection, ConnectionSettings, probe
from .sql import SqlCursor
from .tls import TLSConfig
from .transactions import Transaction, TransactionConflictError

__all__ = [
    "Cache",
    "Connection",
    "ConnectionSettings",
    "IgniteClient",
    "PartitionMap",
    "SqlCursor",
    "TLSConfig",
    "Transaction",
    "TransactionConflictError",
    "parse_addresses",
    "probe",
]
