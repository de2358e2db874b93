"""Issue 28, item 7: bulk and small-row reads over a link with 0, 1, 5 and 20 ms of round trip.

This machine's kernel has no ``tc netem``, so the round trip is added by the test
suite's user-space TCP proxy (:class:`tensorflow_ignite.testing.tcp_proxy.TcpProxy`,
``set_link(rtt=...)``: every chunk delivered half the round trip later in each
direction, later chunks flowing meanwhile).  Each contender reads the same cache
through a proxy of its own, with partition awareness off (otherwise the client
would learn the node's own address and go around the proxy); without it the
dataset scans partition by partition (one scan query each) instead of once per
node, so these figures are not those of scenarios 1 and 2a.  The reference is
the proxy at 0 ms, so the ratios are the cost of latency alone; the direct read
(no proxy, the same client settings) shows what the proxy itself costs -- it
forwards in Python, in this process, sharing its cores and the GIL with the reader.

The point of the curve: the dataset asks for the next page while the current
one is decoded (pipelining), so throughput should fall far less than a
stop-and-wait reader's would (one page per round trip).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .contenders import drain
from .harness import Contender, Run, Scenario
from .scenarios import MNIST_ROW_BYTES, Sizes, _random_bytes, _write, mnist_arrays

__all__ = ["RTTS_MS", "latency_scenarios"]

#: The round trips of the curve, milliseconds.
RTTS_MS: tuple[int, ...] = (0, 1, 5, 20)


def proxied_dataset(host: str, port: int, cache: str, *, rtt_ms: int | None, row_bytes: int, batch_size: int,
                    page_size: int) -> Contender:
    """Iterate ``IgniteDataset`` to the end through a :class:`TcpProxy` adding ``rtt_ms`` of round trip
    (None: straight to the node), partition awareness off either way.

    The proxy and the client are made on the first read (outside the clock) and kept
    for every repetition; ``close`` releases both.
    """
    held: dict[str, Any] = {}

    def dataset() -> Any:
        if not held:
            from tensorflow_ignite import IgniteDataset
            from tensorflow_ignite.client import IgniteClient
            from tensorflow_ignite.testing.tcp_proxy import TcpProxy

            address = (host, port)
            if rtt_ms is not None:
                proxy = TcpProxy((host, port))
                proxy.set_link(rtt=rtt_ms / 1000.0)
                held["proxy"] = proxy
                address = proxy.address
            client = IgniteClient(f"{address[0]}:{address[1]}", partition_awareness=False)
            held.update(client=client, ds=IgniteDataset(cache, address[0], address[1], batch_size=batch_size,
                                                        page_size=page_size, client=client))
        return held["ds"]

    def run() -> Run:
        return drain(dataset(), unit_bytes=row_bytes)

    def close() -> None:
        if held:
            held["client"].close()
            if "proxy" in held:
                held["proxy"].close()
            held.clear()

    key, label = (("direct", "IgniteDataset, direct (no proxy)") if rtt_ms is None
                  else (f"rtt{rtt_ms}", f"IgniteDataset, {rtt_ms} ms round trip (proxy)"))
    return Contender(key, label, run, warmup=run, close=close,
                     note=f"batch_size={batch_size}, page_size={page_size}, no partition awareness")


def _scenario(key: str, title: str, what: str, unit: str, host: str, port: int, cache: str, *,
              row_bytes: int, batch: int, page: int) -> Scenario:
    contenders = [proxied_dataset(host, port, cache, rtt_ms=rtt, row_bytes=row_bytes, batch_size=batch,
                                  page_size=page) for rtt in (*RTTS_MS, None)]
    return Scenario(
        key, title,
        f"{what}, one node, pages of {page} rows, read through a user-space TCP proxy adding "
        f"{', '.join(map(str, RTTS_MS))} ms of round trip (issue 28: no `tc netem` here), partition awareness off "
        "(one scan per partition). Ratios against the proxy at 0 ms: the cost of latency alone; the direct read "
        "(same client settings) shows the proxy's own cost.",
        unit, contenders, reference=f"rtt{RTTS_MS[0]}",
    )


def latency_scenarios(host: str, port: int, sizes: Sizes, log: Callable[[str], None] = print) -> list[Scenario]:
    """The bulk and small-row latency curves (their data written here, untimed)."""
    n, width = sizes.bulk_rows, sizes.bulk_row_bytes
    _write(host, port, "bench_latency_bulk", {"data": _random_bytes(n, width, 28)}, log=log)
    _write(host, port, "bench_latency_small", mnist_arrays(sizes.small_rows, 28), log=log)
    return [
        _scenario("latency_bulk", "7a. Latency: bulk rows over a slow link",
                  f"{n} rows of one {width // 1024} KiB byte array each ({n * width / 1e6:.0f} MB)", "MB/s",
                  host, port, "bench_latency_bulk", row_bytes=width, batch=sizes.bulk_batch,
                  page=sizes.bulk_page_rows),
        _scenario("latency_small", "7b. Latency: small rows over a slow link",
                  f"{sizes.small_rows:,} MNIST-shaped binary objects", "rows/s", host, port, "bench_latency_small",
                  row_bytes=MNIST_ROW_BYTES, batch=sizes.small_batch, page=sizes.small_page_rows),
    ]
