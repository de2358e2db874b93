"""Row boundaries of scan pages and the by-key filter used when a partition scan is repeated."""

from __future__ import annotations

import numpy as np
import pytest

from tensorflow_ignite.client.cache import row_keys, without_keys
from tensorflow_ignite.errors import ProtocolError
from tensorflow_ignite.protocol.binary import BinaryDecoder, BinaryEncoder
from tensorflow_ignite.protocol.columns import value_offsets
from tensorflow_ignite.protocol.responses import ScanPage, decode_scan_rows
from tensorflow_ignite.protocol.values import BinaryObject, Int32


def _page(rows: list[tuple[object, object]], *, has_more: bool = False) -> ScanPage:
    enc = BinaryEncoder()
    region = b"".join(enc.encode(k) + enc.encode(v) for k, v in rows)
    return ScanPage(None, len(rows), memoryview(region), has_more)


ROWS: list[tuple[object, object]] = [
    (1, BinaryObject("R", {"a": Int32(1), "s": "x"})),
    ("two", b"\x00" * 300),
    (3, None),
    (Int32(4), "a longer string value"),
    (5, [1.0, 2.0]),
]


def test_value_offsets_find_every_key_and_value() -> None:
    page = _page(ROWS)
    starts = value_offsets(page.rows, page.row_count, 2)
    assert starts.shape == (5, 2)
    enc = BinaryEncoder()
    pos = 0
    for i, (k, v) in enumerate(ROWS):
        assert starts[i, 0] == pos
        pos += len(enc.encode(k))
        assert starts[i, 1] == pos
        pos += len(enc.encode(v))
    assert pos == len(page.rows)


def test_value_offsets_reject_truncated_pages() -> None:
    page = _page(ROWS)
    with pytest.raises(ProtocolError):
        value_offsets(page.rows[:-3], page.row_count, 2)
    with pytest.raises(ProtocolError):
        value_offsets(page.rows, page.row_count + 1, 2)


def test_row_keys_are_the_serialized_keys() -> None:
    enc = BinaryEncoder()
    assert row_keys(_page(ROWS)) == [enc.encode(k) for k, _ in ROWS]


def test_without_keys_drops_exactly_the_seen_rows() -> None:
    page = _page(ROWS, has_more=True)
    seen = set(row_keys(_page([ROWS[0], ROWS[3]])))
    kept = without_keys(page, seen)
    assert kept.row_count == 3 and kept.has_more
    dec = BinaryDecoder()
    assert [k for k, _ in decode_scan_rows(kept, dec)] == ["two", 3, 5]
    assert bytes(decode_scan_rows(kept, dec)[0][1]) == b"\x00" * 300
    # Nothing seen: the very same page object (no copy on the happy path).
    assert without_keys(page, set()) is page
    # Everything seen: an empty page that still says whether more pages follow.
    empty = without_keys(page, set(row_keys(page)))
    assert empty.row_count == 0 and len(empty.rows) == 0 and empty.has_more


def test_without_keys_on_uniform_rows() -> None:
    # Rows of one layout take the vectorized path of value_offsets.
    rows = [(i, np.arange(4, dtype=np.int32) + i) for i in range(50)]
    page = _page(rows)
    seen = set(row_keys(_page(rows[::2])))
    kept = without_keys(page, seen)
    assert [k for k, _ in decode_scan_rows(kept, BinaryDecoder())] == list(range(1, 50, 2))
