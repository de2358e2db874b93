"""``python -m bench.pump_ab``: the compiled scan pump against the Python read-ahead, paired, in one process.

Issue 48's scan pump (``client/pump.py``) changes only who fetches a node
scan's later pages.  On a loaded machine single reads of the small-rows
scenario vary by 2-5x from one repetition to the next, so the two fetchers
are compared in *rounds*: each round reads the same MNIST-shaped rows with
the pump, with the Python read-ahead and as raw scan pages (the node's own
rate, nothing decoded), back to back and in a rotating order -- and with the
pump sending its page requests through Python (``pysend``: the pump of an op
library without ``ScanPump.SendLock``, as before the pump sent them itself)
and with the pump computing no row ids (``noids``: the node scan's row ids
computed in Python from every page, as before the pump's thread computed them);
each read is reported against the raw pages of its own round, and the
medians over the rounds are printed.  ``--rows``/``--rounds`` size it; one node is started
(and stopped) for it.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from .contenders import drain
from .scenarios import MNIST_ROW_BYTES, _write, mnist_arrays

CACHE = "bench_pump_ab"


def _raw(client: Any, page_size: int) -> float:
    t0 = time.perf_counter()
    rows = sum(page.row_count for page in client.cache(CACHE).scan_pages(page_size=page_size))
    assert rows > 0
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.pump_ab", description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=60_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--page-size", type=int, default=1024)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument(
        "--fetch-only",
        action="store_true",
        help="compare the fetchers alone: Cache.scan_pages(read_ahead=...), pages counted, not decoded",
    )
    args = parser.parse_args(argv)

    from tensorflow_ignite import IgniteDataset
    from tensorflow_ignite.client import ConnectionOptions, pump
    from tensorflow_ignite.local.cluster import LocalCluster
    from tensorflow_ignite.native import data_source

    data_source.ensure_loaded()
    compiled = pump.installed_scan_pump()
    if compiled is None:
        print(f"the scan pump is not installed: {pump.scan_pump_reason()}")
        return 1
    with tempfile.TemporaryDirectory(prefix="pump_ab_") as work:
        cluster = LocalCluster(Path(work) / "one", nodes=1, region_mb=1024, heap_mb=1024, name="bench-pump-ab")
        cluster.start()
        try:
            host, port = cluster.address()
            _write(host, port, CACHE, mnist_arrays(args.rows, 10))
            ds = IgniteDataset(CACHE, host, port, page_size=args.page_size, batch_size=args.batch_size)
            client = ConnectionOptions(host=host, port=port).connect()
            readers = ("compiled", "noids", "pysend", "python")
            ratios: dict[str, list[float]] = {w: [] for w in readers}
            seconds: dict[str, list[float]] = {w: [] for w in (*readers, "raw")}

            def python_sends(*args: Any, **kwargs: Any) -> Any:  # no SendLock: requests through Python
                return compiled(*args)

            def no_row_ids(*args: Any, **kwargs: Any) -> Any:  # row ids computed in Python
                kwargs.pop("row_ids", None)
                return compiled(*args, **kwargs)

            def read(which: str) -> float:
                installed = {"compiled": compiled, "pysend": python_sends, "noids": no_row_ids}.get(which)
                pump.set_scan_pump(installed, "turned off by bench.pump_ab")  # type: ignore[arg-type]
                if args.fetch_only:
                    t0 = time.perf_counter()
                    pages = client.cache(CACHE).scan_pages(page_size=args.page_size, read_ahead=8 << 20)
                    assert sum(page.row_count for page in pages) == args.rows
                    return time.perf_counter() - t0
                return drain(ds, unit_bytes=MNIST_ROW_BYTES).seconds

            for which in readers:  # warm-up: layouts, schemas, TensorFlow's first-run costs
                read(which)
            _raw(client, args.page_size)
            cycle = (*readers, "raw")
            orders = [cycle[i:] + cycle[:i] for i in range(len(cycle))]
            for r in range(args.rounds):
                took = {}
                for which in orders[r % len(orders)]:
                    took[which] = _raw(client, args.page_size) if which == "raw" else read(which)
                for which, s in took.items():
                    seconds[which].append(s)
                for which in ratios:
                    ratios[which].append(took["raw"] / took[which])
                print(
                    f"round {r + 1}: "
                    + ", ".join(f"{w} {took[w]:.3f} s" for w in cycle)
                    + "; vs raw: "
                    + ", ".join(f"{w} {ratios[w][-1]:.2f}x" for w in readers),
                    flush=True,
                )
            pump.set_scan_pump(compiled)
            print(
                f"\n{args.rows:,} MNIST rows, page_size={args.page_size}, batch_size={args.batch_size}, "
                f"{args.rounds} rounds (medians):"
            )
            for which in cycle:
                med = statistics.median(seconds[which])
                line = f"  {which:8s} {med:.3f} s  {args.rows / med:>10,.0f} rows/s"
                if which in ratios:
                    line += f"  {statistics.median(ratios[which]):.2f}x the raw pages of its round"
                print(line)
            for slower in ("noids", "pysend", "python"):
                paired = [p / c for p, c in zip(seconds[slower], seconds["compiled"])]
                print(
                    f"  {slower}/compiled time per round: median {statistics.median(paired):.2f}x "
                    f"(min {min(paired):.2f}, max {max(paired):.2f})"
                )
            print(f"  fetch paths {ds.stats.fetch_paths}, row id paths {ds.stats.id_paths}")
            client.close()
        finally:
            cluster.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
