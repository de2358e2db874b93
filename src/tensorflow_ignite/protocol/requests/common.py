"""Cache request header and flags (:class:`CacheOptions`), and requests about no cache."""

from __future__ import annotations

from ..binary import BinaryEncoder
from ..buffer import I64, ByteWriter
from ..cache_config import ExpiryPolicy
from ..codes import CacheRequestFlag, Op
from ..framing import encode_request


class CacheOptions:
    """Per-request cache flags: keep-binary, transaction id, expiry policy.

    Immutable and cheap; ``CacheOptions()`` (no flags) is the common case.
    """

    __slots__ = ("keep_binary", "tx_id", "expiry")

    def __init__(self, keep_binary: bool = False, tx_id: int | None = None, expiry: ExpiryPolicy | None = None) -> None:
        self.keep_binary = keep_binary
        self.tx_id = tx_id
        self.expiry = expiry

    def flags(self) -> int:
        f = 0
        if self.keep_binary:
            f |= CacheRequestFlag.KEEP_BINARY
        if self.tx_id is not None:
            f |= CacheRequestFlag.TRANSACTIONAL
        if self.expiry is not None:
            f |= CacheRequestFlag.WITH_EXPIRY_POLICY
        return f


_NO_OPTIONS = CacheOptions()


def cache_header(w: ByteWriter, cache_id: int, opts: CacheOptions | None, data_request: bool = True) -> None:
    """Write the header every cache request starts with: ``int cache id``, ``byte flags``, then
    the expiry policy's three ``long`` durations and the ``int`` transaction id when set.

    ``data_request=False`` (cache management, queries): such an operation cannot
    run inside a transaction, and ``opts.tx_id`` is a ``ValueError``.
    """
    opts = opts or _NO_OPTIONS
    if opts.tx_id is not None and not data_request:
        raise ValueError("this cache operation cannot run inside a transaction")
    w.i32(cache_id)
    w.u8(opts.flags())
    if opts.expiry is not None:
        w.i64(opts.expiry.create_ms)
        w.i64(opts.expiry.update_ms)
        w.i64(opts.expiry.access_ms)
    if opts.tx_id is not None:
        w.i32(opts.tx_id)


def _enc(encoder: BinaryEncoder | None) -> BinaryEncoder:
    return encoder if encoder is not None else BinaryEncoder()


# ------------------------------------------------------------------ general
def resource_close(request_id: int, resource_id: int) -> bytes:
    """Close a cursor, streamer or other server resource (op 0): ``long resource id``."""
    return encode_request(Op.RESOURCE_CLOSE, request_id, I64.pack(resource_id))


def heartbeat(request_id: int) -> bytes:
    """Keep the connection alive (op 1, HEARTBEAT feature); empty body."""
    return encode_request(Op.HEARTBEAT, request_id)


def get_idle_timeout(request_id: int) -> bytes:
    """Ask the server's idle timeout (op 2); the answer is a long (ms)."""
    return encode_request(Op.GET_IDLE_TIMEOUT, request_id)
