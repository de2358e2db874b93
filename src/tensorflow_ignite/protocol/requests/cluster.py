"""Transactions, cluster state and nodes, compute tasks, services and the data streamer."""

from __future__ import annotations

import uuid as _uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..binary import BinaryEncoder
from ..buffer import ByteWriter
from ..codes import ClusterState, Feature, Op, TxConcurrency, TxIsolation
from ..framing import DEFAULT_FEATURES, finish_request, start_request
from .common import _enc


# ------------------------------------------------------------- transactions
def tx_start(
    request_id: int,
    concurrency: int = TxConcurrency.PESSIMISTIC,
    isolation: int = TxIsolation.REPEATABLE_READ,
    timeout_ms: int = 0,
    label: str | None = None,
) -> bytes:
    """OP_TX_START (4000): byte concurrency, byte isolation, long timeout, string label; answer: int tx id."""
    w = start_request(Op.TX_START, request_id)
    w.u8(int(concurrency))
    w.u8(int(isolation))
    w.i64(timeout_ms)
    w.typed_string(label)
    return finish_request(w)


def tx_end(request_id: int, tx_id: int, commit: bool) -> bytes:
    """OP_TX_END (4001): int tx id, bool commit."""
    w = start_request(Op.TX_END, request_id)
    w.i32(tx_id)
    w.bool(commit)
    return finish_request(w)


# ------------------------------------------------------------------ cluster
def cluster_get_state(request_id: int) -> bytes:
    """OP_CLUSTER_GET_STATE (5000): empty body; answer: byte state (``ClusterState``)."""
    return finish_request(start_request(Op.CLUSTER_GET_STATE, request_id))


def cluster_change_state(request_id: int, state: int = ClusterState.ACTIVE) -> bytes:
    """OP_CLUSTER_CHANGE_STATE (5001): byte state."""
    w = start_request(Op.CLUSTER_CHANGE_STATE, request_id)
    w.u8(int(state))
    return finish_request(w)


def cluster_group_get_node_ids(
    request_id: int,
    topology_version: int = -1,
    *,
    attributes: Mapping[str, Any] | None = None,
    server_nodes: bool | None = None,
    encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_CLUSTER_GROUP_GET_NODE_IDS (5100): long known topology version, projection.

    Projection: int item count, then per item ``short 1, string name, object
    value`` (attribute filter) or ``short 2, bool`` (true = servers only).
    """
    enc = _enc(encoder)
    items = dict(attributes or {})
    w = start_request(Op.CLUSTER_GROUP_GET_NODE_IDS, request_id)
    w.i64(topology_version)
    w.i32(len(items) + (0 if server_nodes is None else 1))
    for name, value in items.items():
        w.i16(1)
        w.typed_string(name)
        enc.write(w, value)
    if server_nodes is not None:
        w.i16(2)
        w.bool(server_nodes)
    return finish_request(w)


def _raw_uuids(w: ByteWriter, node_ids: Sequence[_uuid.UUID]) -> None:
    w.i32(len(node_ids))
    for n in node_ids:
        w.raw_uuid(n)


def cluster_group_get_node_info(request_id: int, node_ids: Sequence[_uuid.UUID]) -> bytes:
    """OP_CLUSTER_GROUP_GET_NODE_INFO (5101): int count, raw UUIDs (two longs each)."""
    w = start_request(Op.CLUSTER_GROUP_GET_NODE_INFO, request_id)
    _raw_uuids(w, list(node_ids))
    return finish_request(w)


# ------------------------------------------------------- compute and services
def compute_task_execute(
    request_id: int,
    task_name: str,
    arg: Any = None,
    *,
    node_ids: Sequence[_uuid.UUID] = (),
    flags: int = 0,
    timeout_ms: int = 0,
    encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_COMPUTE_TASK_EXECUTE (6000): node ids, byte flags, long timeout, string task, object arg.

    The answer is a long task id; the result arrives later as a notification
    (op 6001) carrying that id.
    """
    w = start_request(Op.COMPUTE_TASK_EXECUTE, request_id)
    _raw_uuids(w, list(node_ids))
    w.u8(flags)
    w.i64(timeout_ms)
    w.typed_string(task_name)
    _enc(encoder).write(w, arg)
    return finish_request(w)


def service_invoke(
    request_id: int,
    service_name: str,
    method: str,
    args: Sequence[Any] = (),
    *,
    flags: int = 0,
    timeout_ms: int = 0,
    node_ids: Sequence[_uuid.UUID] = (),
    param_type_ids: Sequence[int] | None = None,
    call_attributes: Mapping[str, Any] | None = None,
    features: Iterable[int] = DEFAULT_FEATURES,
    encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_SERVICE_INVOKE (7000) (``ClientServiceInvokeRequest``).

    Body: string name, byte flags, long timeout, node ids, string method, int
    arg count, per arg [int param type id when flag 0x02] + object, and with
    SERVICE_INVOKE_CALLCTX a caller-attributes map (or null).
    """
    enc = _enc(encoder)
    if param_type_ids is not None:
        if len(param_type_ids) != len(args):
            raise ValueError("param_type_ids must match args one to one")
        flags |= 0x02
    w = start_request(Op.SERVICE_INVOKE, request_id)
    w.typed_string(service_name)
    w.u8(flags)
    w.i64(timeout_ms)
    _raw_uuids(w, list(node_ids))
    w.typed_string(method)
    w.i32(len(args))
    for i, a in enumerate(args):
        if param_type_ids is not None:
            w.i32(param_type_ids[i])
        enc.write(w, a)
    if Feature.SERVICE_INVOKE_CALLCTX in frozenset(int(f) for f in features):
        enc.write(w, None if call_attributes is None else dict(call_attributes))
    elif call_attributes is not None:
        raise ValueError("service call attributes need the SERVICE_INVOKE_CALLCTX feature")
    return finish_request(w)


# ------------------------------------------------------------- data streamer
def _entries(
    w: ByteWriter, entries: Iterable[tuple[Any, Any]], enc: BinaryEncoder, key_type: int | None, value_type: int | None
) -> None:
    pairs = list(entries.items()) if isinstance(entries, Mapping) else list(entries)
    w.i32(len(pairs))
    for k, v in pairs:
        enc.write(w, k, key_type)
        enc.write(w, v, value_type)


def data_streamer_start(
    request_id: int,
    cache_id: int,
    entries: Iterable[tuple[Any, Any]] = (),
    *,
    flags: int = 0,
    per_node_buffer_size: int = -1,
    per_thread_buffer_size: int = -1,
    receiver: Any = None,
    receiver_platform: int = 1,
    key_type: int | None = None,
    value_type: int | None = None,
    encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_DATA_STREAMER_START (8000): int cache id, byte flags, int per-node and
    per-thread buffer sizes (-1 default), receiver object (null) [+ byte platform],
    int entry count, (key, value) entries; answer: long streamer id (0 if closed).

    A null value removes the key.
    """
    enc = _enc(encoder)
    w = start_request(Op.DATA_STREAMER_START, request_id)
    w.i32(cache_id)
    w.u8(flags)
    w.i32(per_node_buffer_size)
    w.i32(per_thread_buffer_size)
    if receiver is None:
        w.u8(101)
    else:
        enc.write(w, receiver)
        w.u8(receiver_platform)
    _entries(w, entries, enc, key_type, value_type)
    return finish_request(w)


def data_streamer_add_data(
    request_id: int,
    streamer_id: int,
    entries: Iterable[tuple[Any, Any]] = (),
    *,
    flags: int = 0,
    key_type: int | None = None,
    value_type: int | None = None,
    encoder: BinaryEncoder | None = None,
) -> bytes:
    """OP_DATA_STREAMER_ADD_DATA (8001): long streamer id, byte flags, int count, entries."""
    w = start_request(Op.DATA_STREAMER_ADD_DATA, request_id)
    w.i64(streamer_id)
    w.u8(flags)
    _entries(w, entries, _enc(encoder), key_type, value_type)
    return finish_request(w)
