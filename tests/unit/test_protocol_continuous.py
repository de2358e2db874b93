"""Continuous-query wire format: the registration request's bytes and the event notification's layout."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from tensorflow_ignite.errors import ProtocolError
from tensorflow_ignite.protocol.binary import BinaryEncoder
from tensorflow_ignite.protocol.codes import Op
from tensorflow_ignite.protocol.continuous import EventType, decode_continuous_events, query_continuous
from tensorflow_ignite.protocol.requests.common import CacheOptions
from tensorflow_ignite.protocol.values import BinaryObject


def test_request_layout() -> None:
    frame = query_continuous(7, -123, page_size=256, time_interval_ms=100, opts=CacheOptions(keep_binary=True))
    length, op, rid = struct.unpack_from("<ihq", frame, 0)
    assert (length, op, rid) == (len(frame) - 4, Op.QUERY_CONTINUOUS, 7)
    body = frame[14:]
    cache_id, flags, page, interval, expired, filt = struct.unpack("<ibiq?B", body)
    assert (cache_id, flags, page, interval, expired, filt) == (-123, 1, 256, 100, False, 101)


@pytest.mark.parametrize("kwargs", [{"page_size": 0}, {"time_interval_ms": -1}])
def test_request_refuses_bad_arguments(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        query_continuous(1, 1, **kwargs)


def _notification(events: list[tuple[object, object, object, int]]) -> bytes:
    enc = BinaryEncoder()
    out = bytearray(struct.pack("<i", len(events)))
    for key, old, new, kind in events:
        for v in (key, old, new):
            out += enc.encode(v) if v is not None else b"\x65"
        out.append(kind)
    return bytes(out)


def test_events_are_located_and_regrouped_as_scan_rows() -> None:
    enc = BinaryEncoder()
    a, b = BinaryObject("Ev", {"x": 1.5}), BinaryObject("Ev", {"x": 2.5})
    body = _notification([(1, None, a, EventType.CREATED), (2, a, b, EventType.UPDATED),
                          (3, b, None, EventType.REMOVED)])
    events = decode_continuous_events(body)
    assert len(events) == 3
    assert events.types.tolist() == [EventType.CREATED, EventType.UPDATED, EventType.REMOVED]
    assert bytes(events.key(2)) == enc.encode(3)
    keep = np.array([True, True, False])
    assert events.rows(keep) == enc.encode(1) + enc.encode(a) + enc.encode(2) + enc.encode(b)
    # A removed entry's row is its key and its old value.
    assert events.rows(np.array([False, False, True]), old=True) == enc.encode(3) + enc.encode(b)


@pytest.mark.parametrize("body", [
    b"\x01\x00",  # no count
    struct.pack("<i", -1),
    struct.pack("<i", 1000) + b"\x65" * 8,  # more events than bytes
    struct.pack("<i", 1) + b"\x65\x65\x65",  # no event type
    struct.pack("<i", 1) + b"\x65\x65\x65\x09",  # unknown event type
    struct.pack("<i", 1) + b"\x65\x65\x65\x00\x00",  # bytes left over
])
def test_malformed_notifications_are_refused(body: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode_continuous_events(body)
