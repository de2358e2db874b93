"""Where a page's rows and values begin: located without decoding them.

A page region holds ``row_count`` rows of ``values_per_row`` binary values
each, back to back.  :func:`skip_value` steps over one value by its type code
and length fields (bounds-checked); :func:`locate_values` finds the start of
every value of a page -- with no per-row Python at all when every row repeats
row 0's codes and lengths.  :func:`value_offsets` and :func:`value_end` are the
public forms the client uses (dropping rows already delivered, continuous-query
events).
"""

from __future__ import annotations

import struct

import numpy as np

from tensorflow_ignite.errors import ProtocolError
from tensorflow_ignite.protocol.binary import BinaryDecoder
from tensorflow_ignite.protocol.buffer import I32
from tensorflow_ignite.protocol.codes import TypeCode
from tensorflow_ignite.protocol.columns.layout import VALUE_SIZE
from tensorflow_ignite.protocol.types import ARRAY_DTYPES

__all__ = ["skip_value", "locate_values", "value_offsets", "value_end"]

_OBJ = int(TypeCode.OBJ)
_WRAPPED = int(TypeCode.BINARY_OBJ)
_STRING = int(TypeCode.STRING)
_OPT_BYTE = int(TypeCode.OPTIMIZED) & 0xFF  # as it appears in a page: optimized-marshaller bytes


def skip_value(buf: memoryview, pos: int, size: int) -> int:
    """Offset just past the value at ``pos`` of ``buf`` (its first ``size`` bytes; bounds-checked)."""
    if pos >= size:
        raise ProtocolError(f"page: value expected at offset {pos}, page is {size} bytes")
    code = buf[pos]
    fixed = VALUE_SIZE.get(code)
    if fixed is not None:
        end = pos + fixed
    elif code == _OBJ:
        if pos + 24 > size:
            raise ProtocolError(f"page: object header at {pos} truncated")
        length = I32.unpack_from(buf, pos + 12)[0]
        if length < 24:
            raise ProtocolError(f"page: object at {pos} has length {length}")
        end = pos + length
    elif code == _STRING or code in ARRAY_DTYPES or code == _WRAPPED or code == _OPT_BYTE:
        if pos + 5 > size:
            raise ProtocolError(f"page: length at {pos} truncated")
        length = I32.unpack_from(buf, pos + 1)[0]
        if length < 0:
            raise ProtocolError(f"page: negative length at {pos}")
        item = ARRAY_DTYPES[code].itemsize if code in ARRAY_DTYPES else 1
        end = pos + 5 + length * item + (4 if code == _WRAPPED else 0)
    else:
        # Anything else (collections, decimals, enums...): let the general decoder walk it.
        end = BinaryDecoder().decode_at(buf, pos, size)[1]
    if end > size:
        raise ProtocolError(f"page: value at {pos} ends at {end}, past the {size}-byte page")
    return end


def locate_values(buf: memoryview, page: np.ndarray, n: int, k: int) -> np.ndarray:
    """Start offset of every value of the ``n`` rows of ``k`` values in ``buf``: int64 ``[n, k]``.

    ``page`` is ``buf`` as a uint8 array.  Raises ``ProtocolError`` when the
    values do not fill the page exactly.
    """
    size = len(buf)
    if n == 0 or k == 0:
        if size:
            raise ProtocolError(f"page: {size} bytes for {n} rows")
        return np.zeros((n, k), dtype=np.int64)
    pos = 0
    first = []
    for _ in range(k):
        first.append(pos)
        pos = skip_value(buf, pos, size)
    row_len = pos
    if row_len * n == size and _uniform(page, n, first, row_len):
        base = np.arange(n, dtype=np.int64) * row_len
        return base[:, None] + np.asarray(first, dtype=np.int64)[None, :]
    starts = np.empty((n, k), dtype=np.int64)
    pos = 0
    for i in range(n):
        row = starts[i]
        for j in range(k):
            row[j] = pos
            pos = skip_value(buf, pos, size)
    if pos != size:
        raise ProtocolError(f"page: {size - pos} bytes left after {n} rows")
    return starts


def _uniform(page: np.ndarray, n: int, first: list[int], row_len: int) -> bool:
    """True if every row repeats row 0's layout (same codes and lengths)."""
    if n == 1:
        return True
    rows = page[: n * row_len].reshape(n, row_len)
    for start in first:
        code = int(rows[0, start])
        if not np.all(rows[:, start] == code):
            return False
        if code in VALUE_SIZE:
            continue
        if code == _OBJ:
            at = start + 12
        elif code == _STRING or code == _WRAPPED or code == _OPT_BYTE or code in ARRAY_DTYPES:
            at = start + 1
        else:
            return False
        lens = np.ndarray((n,), "<i4", buffer=page, offset=at, strides=(row_len,))
        if not np.all(lens == lens[0]):
            return False
    return True


def _byte_view(region: bytes | bytearray | memoryview) -> memoryview:
    view = region if isinstance(region, memoryview) else memoryview(region)
    return view.cast("B") if view.ndim != 1 or view.itemsize != 1 else view


def value_offsets(region: bytes | bytearray | memoryview, row_count: int, values_per_row: int) -> np.ndarray:
    """Start offset of every value of a page: int64 array ``[row_count, values_per_row]``.

    Scan pages hold two values per row (key, value).  The client uses this to
    find row boundaries without decoding (e.g. to drop rows already delivered
    when a scan is repeated on another node).  Bounds-checked like
    ``decode_page``.
    """
    view = _byte_view(region)
    if row_count < 0 or row_count * values_per_row > len(view):
        raise ProtocolError(f"page claims {row_count} rows of {values_per_row} values but holds only {len(view)} bytes")
    try:
        return locate_values(view, np.frombuffer(view, dtype=np.uint8), row_count, values_per_row)
    except (IndexError, ValueError, struct.error, OverflowError) as exc:
        raise ProtocolError(f"malformed page: {exc}") from exc


def value_end(region: bytes | bytearray | memoryview, pos: int) -> int:
    """Offset just past the one binary value starting at ``pos`` of ``region`` (bounds-checked).

    For layouts that interleave values with other fields (continuous-query
    event notifications: key, old value, value, event type byte), where
    :func:`value_offsets`' rows of values only do not apply.
    """
    view = _byte_view(region)
    try:
        return int(skip_value(view, pos, len(view)))
    except (IndexError, ValueError, struct.error, OverflowError) as exc:
        raise ProtocolError(f"malformed value at offset {pos}: {exc}") from exc
