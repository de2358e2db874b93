"""Request encoders: one function per operation, each returning a complete frame.

By subject: :mod:`.common` (header flags, requests about no cache),
:mod:`.cache` (key-value, cache management), :mod:`.query` (scan and SQL
queries), :mod:`.metadata` (binary types), :mod:`.cluster` (transactions,
cluster, compute, services, data streamer).

Every function takes the request id first and returns ``bytes`` ready for the
socket (length prefix included).  Keys, values and arguments are written with
a :class:`~.binary.BinaryEncoder`; pass your own ``encoder`` to learn which
binary types the request contains (``encoder.types``) and register them
before sending.

Layouts follow the server's request classes (``ClientCache*Request`` and
friends).  Cache requests start with ``int cache id, byte flags``; the flags
add ``long create, long update, long access`` (expiry policy, 0x04) and then
``int tx id`` (transactional, 0x02, data requests only).
"""

from __future__ import annotations

from .cache import (
    cache_clear,
    cache_clear_key,
    cache_clear_keys,
    cache_contains_key,
    cache_contains_keys,
    cache_create_with_configuration,
    cache_create_with_name,
    cache_destroy,
    cache_get,
    cache_get_all,
    cache_get_and_put,
    cache_get_and_put_if_absent,
    cache_get_and_remove,
    cache_get_and_replace,
    cache_get_configuration,
    cache_get_names,
    cache_get_or_create_with_configuration,
    cache_get_or_create_with_name,
    cache_get_size,
    cache_local_peek,
    cache_partitions,
    cache_put,
    cache_put_all,
    cache_put_all_encoded,
    cache_put_bytes_head_into,
    cache_put_if_absent,
    cache_remove_all,
    cache_remove_if_equals,
    cache_remove_key,
    cache_remove_keys,
    cache_replace,
    cache_replace_if_equals,
)
from .cluster import (
    cluster_change_state,
    cluster_get_state,
    cluster_group_get_node_ids,
    cluster_group_get_node_info,
    compute_task_execute,
    data_streamer_add_data,
    data_streamer_start,
    service_invoke,
    tx_end,
    tx_start,
)
from .common import (
    CacheOptions,
    get_idle_timeout,
    heartbeat,
    resource_close,
)
from .metadata import (
    binary_type_get,
    binary_type_name_get,
    binary_type_name_put,
    binary_type_put,
    write_binary_type,
)
from .query import (
    query_scan,
    query_scan_cursor_get_page,
    query_sql_fields,
    query_sql_fields_cursor_get_page,
)

__all__ = [
    "CacheOptions",
    "get_idle_timeout",
    "heartbeat",
    "resource_close",
    "cache_clear",
    "cache_clear_key",
    "cache_clear_keys",
    "cache_contains_key",
    "cache_contains_keys",
    "cache_create_with_configuration",
    "cache_create_with_name",
    "cache_destroy",
    "cache_get",
    "cache_get_all",
    "cache_get_and_put",
    "cache_get_and_put_if_absent",
    "cache_get_and_remove",
    "cache_get_and_replace",
    "cache_get_configuration",
    "cache_get_names",
    "cache_get_or_create_with_configuration",
    "cache_get_or_create_with_name",
    "cache_get_size",
    "cache_local_peek",
    "cache_partitions",
    "cache_put",
    "cache_put_all",
    "cache_put_all_encoded",
    "cache_put_bytes_head_into",
    "cache_put_if_absent",
    "cache_remove_all",
    "cache_remove_if_equals",
    "cache_remove_key",
    "cache_remove_keys",
    "cache_replace",
    "cache_replace_if_equals",
    "query_scan",
    "query_scan_cursor_get_page",
    "query_sql_fields",
    "query_sql_fields_cursor_get_page",
    "binary_type_get",
    "binary_type_name_get",
    "binary_type_name_put",
    "binary_type_put",
    "write_binary_type",
    "cluster_change_state",
    "cluster_get_state",
    "cluster_group_get_node_ids",
    "cluster_group_get_node_info",
    "compute_task_execute",
    "data_streamer_add_data",
    "data_streamer_start",
    "service_invoke",
    "tx_end",
    "tx_start",
]
