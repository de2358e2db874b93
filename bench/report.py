"""Tables for the console and BENCHMARKS.md."""

from __future__ import annotations

from collections.abc import Sequence

from .harness import TEARDOWN, ContenderResult, ScenarioResult
from .machine import MachineInfo
from .memory import format_bytes

__all__ = ["scenario_table", "targets_table", "target_rows", "targets_over_runs", "scale_section",
           "filesystem_section", "render_markdown", "teardown_note"]


def _num(x: float) -> str:
    if x >= 100:
        return f"{x:,.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def _memory(res: ContenderResult) -> str:
    peak = res.peak_bytes
    if peak is None:
        return "n/a"
    if res.contender.memory == "own":
        return f"{format_bytes(peak)} (JVM RSS)"
    return format_bytes(peak)


def scenario_table(result: ScenarioResult) -> str:
    sc = result.scenario
    reference = result.results.get(sc.reference) if sc.reference else None
    ref_name = reference.contender.label if reference else ""
    steps = sc.unit == "steps/s"
    head = ["Contender", "steps/s" if steps else ("checkpoints/s" if _is_fs(sc.key) else "rows/s")]
    if not steps:
        head.append("MB/s")
    head += [f"x {_short_ref(ref_name)}" if reference else "ratio", "median s", "runs (s)", "peak memory",
             "page faults"]
    node_cpu = any("node_cpu" in run.extra for res in result.results.values() for run in res.runs)
    if node_cpu:
        head.append("node CPU (cores)")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, res in result.results.items():
        c = res.contender
        label = f"**{c.label}**" if key == sc.reference else c.label
        if not res.ok:
            cells = [label, f"failed: {res.error or 'no runs'}"] + [""] * (len(head) - 2)
            lines.append("| " + " | ".join(cells) + " |")
            continue
        ratio = result.ratio(key)
        partial = [r.extra["partial"] for r in res.runs if "partial" in r.extra]
        if partial:
            label += f" (stopped early: {min(partial):,}-{max(partial):,} rows per run)"
        if res.error:
            label += f" (only {len(res.runs)} run(s), then failed: {res.error})"
        cells = [label, _num(res.rate)]
        if not steps:
            cells.append(_num(res.mb_per_s))
        cells += [
            f"{ratio:.2f}x" if ratio is not None else "",
            f"{res.seconds:.3f}",
            ", ".join(f"{r.seconds:.3f}" if r.seconds < 0.1 else f"{r.seconds:.2f}" for r in res.runs),
            _memory(res),
            f"{res.page_faults:,}" if res.page_faults is not None else "n/a",
        ]
        if node_cpu:
            share = result.node_cpu_share(key)
            cells.append(f"{share:.2f}" if share is not None else "n/a")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def teardown_note(result: ScenarioResult) -> str | None:
    """A note on the tf.data iterator deletions after the timed reads (not in the times), or None if none were timed.

    Each TensorFlow contender's median and longest deletion, and how many took
    over 20 ms (TensorFlow's autotuner sleeping to its next tick: see
    ``bench.contenders.drain``).
    """
    parts = []
    for res in result.results.values():
        times = sorted(r.extra[TEARDOWN] for r in res.runs if TEARDOWN in r.extra)
        if not times:
            continue
        slow = sum(1 for t in times if t > 0.020)
        parts.append(f"{res.contender.label} median {times[len(times) // 2] * 1000:.0f} ms, longest "
                     f"{times[-1] * 1000:.0f} ms ({slow} of {len(times)} over 20 ms)")
    if not parts:
        return None
    return ("Deleting the tf.data iterator after each read, timed apart and not in the times above "
            "(TensorFlow's autotuning thread can sleep to its next tick first, whatever the source): "
            + "; ".join(parts) + ".")


def _is_fs(key: str) -> bool:
    """The checkpoint scenarios (``bench/filesystem.py``), reported in section 5."""
    return key.startswith("fs_")


def _short_ref(label: str) -> str:
    if "datastreamer" in label.lower():
        return "streamer"
    if label.lower().startswith("local disk"):
        return "local disk"
    if label.lower().startswith("java"):
        return "Java"
    if label.lower().startswith("pyignite"):
        return "pyignite"
    if "from_tensor_slices" in label:
        return "arrays"
    return "ref"


def targets_table(results: Sequence[ScenarioResult]) -> str:
    lines = ["| Target | Measured | Met |", "|---|---|---|"]
    for r in results:
        for check in r.checks():
            measured = f"{check.measured:.2f}x" if check.measured is not None else "n/a"
            lines.append(f"| {check.target.text} | {measured} (need {check.target.ratio:g}x) | "
                         f"{'yes' if check.met else '**no**'} |")
    return "\n".join(lines)


def target_rows(runs: Sequence[Sequence[ScenarioResult]]
                ) -> list[tuple[str, str, float, list[float | None]]]:
    """Every target of any run, in the order first seen: (scenario key, text, ratio needed, the
    measured ratio of each run -- None where that run did not measure it)."""
    order: list[tuple[str, str]] = []
    need: dict[tuple[str, str], float] = {}
    measured: list[dict[tuple[str, str], float | None]] = []
    for results in runs:
        this: dict[tuple[str, str], float | None] = {}
        for r in results:
            for check in r.checks():
                key = (r.scenario.key, check.target.text)
                if key not in need:
                    order.append(key)
                    need[key] = check.target.ratio
                this[key] = check.measured
        measured.append(this)
    return [(key[0], key[1], need[key], [m.get(key) for m in measured]) for key in order]


def targets_over_runs(runs: Sequence[Sequence[ScenarioResult]],
                      run_facts: Sequence[tuple[float, tuple[float, float]]] = ()) -> str:
    """Issue 19's verdict: each target's ratio in every run, the minimum (every target is a ratio
    that must reach a threshold, so the minimum is the worst run), the spread, and whether every
    run met it.  ``run_facts``: (seconds, (min, max) 1-min load) of each run, listed below the table."""
    n = len(runs)
    head = ["Target", "need"] + [f"run {i}" for i in range(1, n + 1)] + [
        "minimum (worst run)", "spread: max - min (max / min)", "met in every run"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for _key, text, need, values in target_rows(runs):
        cells = [text, f">= {need:g}x"]
        cells += [f"{v:.2f}x" if v is not None else "n/a" for v in values]
        got = [v for v in values if v is not None]
        met = sum(1 for v in got if v >= need)
        if got:
            low, high = min(got), max(got)
            cells.append(f"{low:.2f}x" if len(got) == n else f"{low:.2f}x (of {len(got)} runs)")
            cells.append(f"{high - low:.2f} ({high / low:.2f}x)" if low > 0 else f"{high - low:.2f}")
        else:
            cells += ["n/a", "n/a"]
        cells.append("yes" if met == n else f"**no** (met in {met} of {n})")
        lines.append("| " + " | ".join(cells) + " |")
    out = [f"A target counts as met only when it holds in each of the {n} full runs below (issue 19); each run "
           "started its own nodes, ran every scenario asked for and stopped them, all in one command. The measured value is "
           "the ratio of medians of that run; the minimum is the worst run.", "", "\n".join(lines)]
    if run_facts:
        out += ["", "Runs: " + "; ".join(
            f"{i}: {sec / 60:.1f} min, 1-min load {lo:.2f}-{hi:.2f}"
            for i, (sec, (lo, hi)) in enumerate(run_facts, 1)) + "."]
    return "\n".join(out)


def scale_section(one: ScenarioResult | None, many: ScenarioResult | None) -> str:
    """Throughput on 1 vs N nodes, and what each node sent to our readers."""
    if one is None or many is None:
        return ""
    nodes = many.scenario.key.removeprefix("scale")
    lines = [f"| Contender | MB/s, 1 node | MB/s, {nodes} nodes | {nodes} nodes / 1 node |", "|---|---|---|---|"]
    for key, res1 in one.results.items():
        resn = many.results.get(key)
        if resn is None or not res1.ok or not resn.ok:
            continue
        lines.append(f"| {res1.contender.label} | {_num(res1.mb_per_s)} | {_num(resn.mb_per_s)} | "
                     f"{resn.mb_per_s / res1.mb_per_s:.2f}x |")
    out = ["\n".join(lines), ""]
    for key in ("dataset", "reader"):
        res = many.results.get(key)
        if res is None or not res.ok or "traffic" not in res.runs[-1].extra:
            continue
        traffic = res.runs[-1].extra["traffic"]
        total = sum(b for b, _, _ in traffic.values()) or 1
        out.append(f"Bytes received per node by *{res.contender.label}* (last repetition, from "
                   "`Connection.bytes_received` / `op_counts` of the dataset's client):")
        out.append("")
        out.append("| Node (client port) | MB received | share | scan queries | extra pages |")
        out.append("|---|---|---|---|---|")
        for addr, (nbytes, scans, pages) in sorted(traffic.items()):
            out.append(f"| {addr} | {nbytes / 1e6:.1f} | {100 * nbytes / total:.0f}% | {scans} | {pages} |")
        out.append("")
    out.append("The Java thin client's whole-cache ScanQuery goes to one server, which gathers the other "
               "nodes' partitions (bench/java/README.md); its per-node traffic is not observable from the client.")
    return "\n".join(out)


#: Hand-maintained: what was changed or tried because of these benchmarks, with the evidence.
#: Update it together with the code it describes; the numbers in it were measured once
#: (2026-11, this machine) while developing, and are not re-measured by each run.
WHAT_WAS_TRIED = """\
1. **One `from_generator` per reader, not per partition; small pages decoded together**
   (`src/tensorflow_ignite/data/reader.py`: `ScanReader.worker_batches`; `data/dataset.py`: `_assemble`). Before, the
   dataset interleaved one generator per partition (1024) and decoded every page on its own. Creating
   and finishing a generator costs ~0.85 ms (1024 empty generators through `interleave`: 0.84 s; at
   each generator's end TF formats a StopIteration traceback, `ast.parse` of source lines included),
   and `decode_page` has a ~1 ms fixed cost per call, while a partition of the MNIST cache holds ~59
   rows. Small rows, same conditions: IgniteDataset in TF 11.6k -> 46k-121k rows/s, reader alone
   28k-52k -> 95k-195k rows/s; bulk unchanged within noise.
2. **Small rows: pipelined partition scans** (`client/cache.py`: `Cache.scan_partitions`). Before,
   ~70% of the reader's time was the 1024 scan requests each waiting for its first page (0.29-0.41 s
   of 0.42-0.64 s per 60k rows); Java's whole-cache scan pays one round trip. Now each reader keeps
   up to 16 partition scans (about 16 MiB of first pages) on the wire, refilled half a window at a
   time in one write per node (`Connection.send_many`: each write costs a system call and a wake-up
   of the node's I/O thread, 39% of the reader's samples when requests went one by one), and answers
   without flags skip the general header decoder. The partition-by-partition structure is kept, so
   routing stays partition-aware and a failed partition can be re-read elsewhere (RELIABILITY.md).
   Measured in one process, alternating, load 11-12: reader alone 1.50 -> 0.95 s (window 1 vs 16),
   then 0.97 -> 0.61 s with batched writes. `bench.run --scenarios small,bulk --bulk-rows 256`
   before/after (different load): IgniteDataset in TF 1.334 -> 0.626 s (45k -> 96k rows/s), reader
   alone 0.951 -> 0.391 s (63k -> 154k rows/s); Java 0.460 / 0.249 s in those runs, so still
   0.40x / 0.64x. Remaining reader profile: decoding ~30%, receiving ~33% (two `recv` calls per
   frame), request writes ~18%. Default readers 4 -> 2 (1/2/4 readers: 0.64/0.68/0.81 s in TF).
   Not tried yet: one scan per node when the plan covers all of its partitions (fewer, larger
   pages; the partition of each row would then come from the key's affinity for failover).
3. **Fresh memory (page faults) and copies.** Page faults are expensive on this VM (see "Memory copy"
   above): with glibc told to keep freed memory (`MALLOC_MMAP_THRESHOLD_=33554432` ...) the bulk read
   in TF went from ~210 to ~450 MB/s. Part of the reason: TensorFlow's generator dataset op itself
   sets glibc's `M_TRIM_THRESHOLD` to 128 KiB when it starts (its log: "Memory patch applied"), so
   freed memory goes back to the kernel at once and every new buffer faults again. Changed in our
   own code instead of the process's allocator: (a) `Connection` reads through
   a 1 MiB receive buffer (frames that arrive together cost one `recv`) and receives frames above
   256 KiB in place into buffers of a `BufferPool` (`protocol/pool.py`), reused once nothing refers
   to them -- the pool checks the `bytearray`'s reference count, which every view, NumPy array and
   adopting tensor holds; (b) coalesced pages are joined into pooled memory instead of `b"".join`;
   (c) array columns are decoded into 64-byte-aligned pooled memory. Alignment matters beyond page
   faults: `from_generator` adopts an aligned NumPy array without copying (checked: writing into the
   array changes the tensor) and copies a 16-byte-aligned one, and `rebatch` then slices instead of
   copying (only batches that span two pages are copied). Bulk, 384 x 1 MiB, one node: minor page
   faults of the reader alone per read 147,746 -> 0-3; IgniteDataset in TF 150k-160k -> 100-18k;
   reader alone 276-505 -> 440-551 MB/s (noisy machine, same process, alternating).
4. **TensorFlow's fixed cost per epoch.** Creating the iterator of a `from_generator` costs 20-75 ms
   on this machine (an empty one: `for _ in ds`), most of it TensorFlow instantiating the generator's
   three functions (graph passes incl. oneDNN's layout rewrite, which scans the kernel registry:
   5.7% of all `perf` samples of a small-rows read); an `interleave` of two generators costs
   100-180 ms before the first batch (60k pre-decoded rows through `_assemble`: 1 reader 0.09-0.14 s
   in all, 2 readers 0.18-0.25 s). One reader is now the default (it already keeps 16 partition
   scans on the wire), and a reader's first batches are cut small (512 rows, doubling) so that a
   consumer starts at once. The source op of item 7 removed the rest.
5. **Small rows: one scan per node.** With the reader alone, a `local` scan (one scan per node,
   1024-row pages) read the 60k MNIST rows in 0.13-0.27 s (0.10 s of our CPU) against 0.29-0.41 s
   (0.19 s CPU) for 1024 pipelined partition scans: the difference was mostly the node setting up
   and finishing a scan per partition (our process mostly waited; `sendall` to the node showed as
   37% of samples because the node runs on the same 2 cores). So a reader covering the whole cache
   now scans it with one scan per node (`Cache.scan_nodes`), keeping exactly-once through failures
   by computing each row's partition from its key and keeping the keys yielded (8 bytes per row):
   partitions of a failed node, and all partitions when the topology changed, are scanned again one
   by one without the rows already yielded (tested with kills, joins and leaves like partition
   scans). Launcher workers (`IGNITE_DATASET_PARTS`) and other key types still use partition scans.
6. **Training overhead.** Measured apart from the bench harness (same node, alternating, load 3-5),
   Keras `fit` used the same CPU time per epoch on IgniteDataset and on in-memory arrays (1.17-1.71
   vs 1.09-1.72 s CPU per epoch), and with a callback that only times epochs the wall times were
   equal too; a `.cache()`d IgniteDataset (epochs 2-3 from memory) was no faster than the live one.
   So the gap is not decoding work. The harness counts steps in `on_train_batch_end`, which Keras
   then calls after every step (as its progress bar does); our reader thread runs its Python while a
   step computes and may hold the GIL when the step ends (CPython hands it over after up to 5 ms).
   That is the likely cause, not a confirmed one: `sys.setswitchinterval(0.0005)` during `fit` was
   within the (large) noise of this machine. With the source op of item 7 (an epoch's iterator
   starts in ~1 ms instead of 20-75 ms) the harness measured 0.95x and 1.02x in two runs.
   Runs since range from 0.75x to 0.96x, bimodal per repetition (2.40-2.47 s or 3.06-3.76 s for
   epochs 2-5 against 2.16-2.42 s on arrays). Timing every step: the slow repetitions have one or two
   epochs whose first step takes 400-670 ms instead of 20-70 ms. gdb at that moment: Keras's main
   thread is deleting the previous epoch's iterator, blocked in tf.data's `RootDataset::Iterator`
   destructor until that iterator's autotuning model thread (`Model::OptimizeLoop`, waiting out its
   optimization period, which doubles up to 640 ms by the end of an epoch) returns; no Python code of
   ours runs meanwhile. With `Options.autotune.enabled = False` the stalls vanish (5 alternating
   rounds: 2.33-2.39 s vs 2.21-2.24 s on arrays, 0.95x). Why the thread is late: TensorFlow's
   `CancellationManager::StartCancel` runs the cancellation callbacks first and marks itself
   cancelled only afterwards; the model thread's callback wakes it, it re-checks `IsCancelled()`,
   still sees false, and sleeps out the rest of its period -- a race inside TensorFlow that any
   autotuned pipeline can lose. Reproduced without Keras (a new iterator, then the exhausted one
   deleted, 30 epochs each; on a loaded machine): from_tensor_slices + map + prefetch stalled 6
   times (585-643 ms), from_generator 2, our source 7-11 (140-350 ms); on a quiet machine our source
   + map 5-7 times and the other two never, so how often it hits depends on timing, not on what
   the pipeline reads. Not the cause: `inject_prefetch` or `map_parallelization` off, zero-copy
   adoption, the op's model node kind or its external-state answer (each tried). Users who see
   these stalls can turn autotuning off (`tf.data.Options().autotune.enabled = False`) and size
   their `prefetch` themselves.
7. **A tf.data source op of our own** (`src/tensorflow_ignite/native/tf_ignite_data.cc`,
   `native/data_source.py`). `IgnitePyDataset`'s iterator calls the reader's Python generator
   directly (GIL taken in TensorFlow's thread) and adopts the 64-byte-aligned NumPy arrays it yields
   as tensors; the op keeps only an integer id, so tf.data's graph rewrites recreate it. It
   replaces `from_generator`, which re-instantiates three `py_func` functions for every epoch and
   moves each element through `EagerPyFunc`. Batches are re-cut to `batch_size` on the Python side
   (views of the decoded page) instead of `Dataset.rebatch`. Measured (60k MNIST rows, batch 256,
   same process, alternating): pre-decoded pages through the TF path 72 -> 26 ms per epoch, iterator
   start plus first element 24 -> 0.8 ms; IgniteDataset against a node: CPU per epoch 0.227 ->
   0.158 s (reader alone 0.116 s), first batch 58 -> 9 ms; `rebatch` vs Python slices 0.176 vs
   0.154 s CPU. Harness runs before the full run: small rows in TF 0.74x -> 0.98x and 1.17x Java.
   What is left of TensorFlow's share is mostly its eager iterator (~0.1-0.2 ms per batch handed to
   Python, as for any tf.data pipeline).
8. **Tried, no measurable effect:** waking waiters when the response lock is released in
   `Connection.receive`; more reader threads (1, 2 or 4 on 2 cores: the GIL and the node share them);
   `sys.setswitchinterval(0.0005)` during `fit` (within noise); coalescing at most 1, 2 or 3 scan
   pages instead of up to `page_bytes` (0.195/0.199/0.194 vs 0.190 s, 13 alternating rounds; an
   earlier 11-round run had shown 0.196 vs 0.228 s -- noise of that size is why one run proves
   little here); `.prefetch(1)`/`(2)` after the dataset (0.236/0.240 vs 0.230 s: the reader and the
   consumer contend for the GIL).
9. **Pages whose rows repeat one layout decode through strided reads**
   (`src/tensorflow_ignite/protocol/columns/decode.py`: `_Layout`, `take`). After item 7 the decoder was
   the reader's largest cost: ~700 small NumPy calls per page (per-row index arrays for fancy
   indexing, per-field masks), 0.5 ms fixed per page. Now, when every row of a page is as long as
   row 0 and repeats row 0's bytes except in its value bytes and object hash codes (one comparison
   of the ~35 structural bytes of every row), each column is one strided read of the page; the
   layout comes from decoding row 0 with the general decoder, which records where each value sits,
   and is kept per plan and row length, checked on every page (rows with nulls, other schemas or
   differing unwanted fields fall back to the general path, tested). Elsewhere, evenly spaced
   positions are read through strided views instead of fancy indexing. Measured on the 60k MNIST
   rows (CPU, same process): decoding the 15 coalesced pages 66 -> 13 ms, keys' partition ids for
   exactly-once 15.9 -> 5.5 ms; against a node, alternating with the layout path switched off (12
   rounds): IgniteDataset in TF 0.196 -> 0.165 s (CPU 0.135 -> 0.106 s), reader alone 0.145 ->
   0.130 s (CPU 0.089 -> 0.068 s).
10. **No prefetch injected behind the source op** (`data/dataset.py`: `_shard_options`). Reads of
   small rows had become slower than on 2026-11-24 (486-507k against 615k rows/s). A same-run
   comparison of revisions (`python -m bench.revisions`, one node, alternating child processes,
   CPU seconds per read) placed the step at the commit that set the auto-shard policy with
   `with_options`: TensorFlow's `inject_prefetch` rewrite treats that options step as a
   transformation and puts a prefetch behind the op, which it does not do for the bare op
   (in-process, 12 rounds: bare op 62.6 ms CPU per read, with any options 77-80 ms, with the
   options and `inject_prefetch = False` 62.8 ms). The dataset's options now turn it off. Same
   run, 5 rounds: 60k small rows 565k -> 625k rows/s (CPU 0.073 -> 0.059 s per read; the
   revision before the op, b8809f9: 627k, 0.057 s), bulk unchanged (1,077 -> 1,088 MB/s; b8809f9
   1,085). `BENCHMARKS-revisions.md` (`make bench-revisions`) keeps that comparison.
   Also tried: keeping the policy in the op's own options (an attribute, `set_options` in the
   dataset): TensorFlow then ran its graph rewrite on every iterator (9 ms per `iter()`) and the
   read took 0.101 s CPU; not kept.
11. **The node's ceiling is measured, not assumed** (issue 19). The raw scan pages contender runs
   the readers' scan exchange on one cursor through our client and only counts the pages; the
   node CPU column is the nodes' own `/proc` CPU time per read. In the 3-run table of 2026-11-26
   (last run): raw pages 1,183 MB/s on bulk with the node at 1.02 cores, 800k rows/s on small rows
   at 0.94 cores -- one cursor keeps about one core of the node busy, and our reader the other core
   of this 2-core machine. The raised read targets ask for more than the node serves: bulk >= 2x
   Java needs ~1,420 MB/s and >= 0.5x the loopback socket ~1,620 MB/s (1.20x and 1.37x the
   raw-page rate); small rows >= 1,000,000 rows/s is 1.25x it. IgniteDataset in TF reaches 89 %
   of the raw-page rate on bulk; on small rows 66 % (our reader alone 84 %: TensorFlow's share is
   where the client could still gain, but not past 800k). More cursors per node or more nodes need
   more cores than this machine has: 3 nodes on the same 2 cores read more slowly than 1 (section
   4). The findings of each run say which missed target lies above the node's ceiling.
12. **Loading 1 MiB rows: the node's put path is the common bound** (issue 19's write >= 5x
   pyignite). In the 3-run table of 2026-11-26 (last run, section 6b) every client stack lands at
   347-369 MB/s -- Ignite's own DataStreamer (thick client), the Java thin client's putAll and
   pyignite's put_all -- and write at 483 MB/s (1.39x the streamer, 1.31x pyignite). 5x pyignite
   would be ~1,850 MB/s: 5.3x the rate of Ignite's own bulk loader on the same node and cache, and
   half the speed of a plain memory copy into fresh memory on this machine (~3,600 MB/s, the
   header). pyignite is slow on small rows (per-row Python work: 6.1-6.5x there), not on 1 MiB
   rows, whose time is the node storing 537 MB into fresh page memory; the node's CPU stays at
   0.5-0.7 cores for every contender, so it is not one busy thread but the node's per-entry put
   and page writes that set the pace.
13. **Small rows in TF against the node's rate: where the gap is** (issue 31, not closed). Per
   batch handed to Python, an eager `for batch in ds` costs ~73 us, most of it TensorFlow's own
   iterator (`OwnedIterator.__next__`: the `IteratorGetNext` call, then
   `from_compatible_tensor_list` and `pack_sequence_as` rebuilding the element's structure) --
   about 17 ms of the 60k-row read's 235 batches of 256. Measured with pre-decoded pages and no node (same process, medians of 15
   epochs): our source op 17.2 ms per epoch, of which our Python (cutting batches, the op's
   call into the reader) is ~7 % of the py-spy samples; TensorFlow's own
   `from_tensors(...).repeat(235)` of the same element costs 22.8 ms. So fewer or larger
   crossings from the op into Python cannot win much; what is left is overlapping the reader
   with the node. The reader collects up to `page_bytes` (4 MiB, ~5 pages of 1024 MNIST rows)
   before decoding, and the scan keeps one page request ahead, so the node serves one page while
   five are decoded and handed out, then waits. Tried: decoding each page of >= 512 KiB as soon
   as it arrives (`data/reader.py`, `_read`). Same process, alternating with the old rule, on a
   machine at load 4.7-13 (other engineers' tests): in TF 226/162, 304/306, 169/214 ms (new/old,
   medians of 11-15 rounds), paired ratios to the raw-page contender 0.35 vs 0.31 over 31
   rounds -- within the noise, so not kept; it needs a measurement on a quiet machine. Not done:
   a second page request in flight per cursor (Ignite's thin-client cursor fills a page by
   walking one unsynchronized iterator, and requests of one connection are handled by a pool of
   threads, so two page requests of one cursor could interleave). Done since: a receive thread
   (item 14). Where the time of a read in TF goes (py-spy, 30 reads, the
   same loaded machine; inclusive shares of the samples): TensorFlow's iterator around our op
   ~25 %; receiving pages 18 % and sending the get-page requests 14 % (mostly the `recv`/`send`
   system calls, the node running on the same two cores); decoding pages 17 %; each row's
   partition and key for exactly-once 13 %; cutting batches and the op's call into Python < 2 %.
14. **Node scans read ahead by a thread** (issue 31; `client/cursor.py`: `stream_pages(ahead_bytes=)`,
   `data/reader.py`: `_READ_AHEAD_BATCHES`). A thread keeps one page request in flight while the
   decoder and TensorFlow work, holding up to two coalesced batches (8 MiB) of answers. Same
   process, one node, 60k MNIST rows, alternating with and without, paired ratios to the raw-page
   contender (medians of 21-25 rounds, three runs): IgniteDataset in TF 0.55-0.56x -> 0.65-0.68x,
   our reader alone unchanged (0.85-0.87x: it already kept up); `bench.run --scenarios small,bulk`
   (one run, 9 reads): 0.72x. Bulk rows lost 5-7 % (0.88 -> 0.84x, 0.78 -> 0.73x over 9 and 15
   rounds: with 21 MB pages the thread can hold only the next page, and each hand-over waits
   for the GIL), so pages larger than half the budget are not read ahead. Budgets of 4 and 16
   MiB measured alike. What bounds it now is CPU:
   per 60k-row read in TF the client uses 85-92 ms of CPU (the reader alone 47-52 ms, raw pages
   14 ms) and the node ~75 ms, on two cores: 0.9x the raw-page rate (~86 ms) would need both
   cores busy 93 % of the time. The per-read costs, measured in-process on the 59 received pages:
   joining pages into one region 6-7 ms and the strided column copies 5 ms (both plain memory
   copies of the 50 MB, ~4-8 GB/s on this machine), row partitions and keys 5-9 ms. Tried and
   not kept: decoding the pages of a batch without joining them first (strided copies straight
   from each page): 12.7-14.9 ms against 10.6-11.7 ms for join + decode, alternating, 3 rounds
   -- the copy from the cold pages costs what the join saved.
15. **Small rows in TF: the CPU budget on two cores** (issue 31, measured, nothing kept). One node,
   60k MNIST rows, paired in one process (16-20 rounds): raw pages 76-79 ms (client CPU 14 ms, node
   70-75), our reader alone 88-94 ms (client 51-54), IgniteDataset in TF 119-136 ms (client 88-97,
   node 80-90). TensorFlow's own per-element cost is the floor under the TF path whatever the
   source: our op over pre-decoded pages costs 25 ms per 236 batches of 256 (`Dataset.reduce`
   inside the graph: 22 ms, so it is not the eager Python loop), and `from_tensors(...).repeat(236)`
   of the same element 18 ms. So the TF read needs ~180 ms of CPU against 2 x 68 ms of wall time
   at 0.9x: out of reach unless the client's share is cut by about half (receive, decode and
   hand-over without the GIL, i.e. compiled), and then only with near-perfect overlap. Tried and
   not kept: (a) sending the next page request as soon as the first bytes of the current answer
   arrive (safe: the node writes a page only after its cursor walk has finished it; the request
   after the last page is answered with an error that is discarded): TF 136 -> 128 ms, paired
   ratio to the raw pages 0.614 -> 0.636 (16 rounds), within the run-to-run spread, for an extra
   failed request per scan; (b) receiving the rest of a page with one `MSG_WAITALL` call: pages
   already arrive in one `recv` each (59 calls per read), no gain.
16. **The allocator state between scenarios** (issue 31; `bench/allocator.py`). The one-file
   `ignite://` read missed its target in every full run (0.45-0.74x of the restore) but met it in
   runs of the filesystem scenarios alone (1.11x). The difference was page faults: 263,460 per
   256 MiB read after the bulk and small-row scenarios, 0 alone -- for the local-disk reference
   too (0.036 s alone, 0.611 s after them). TensorFlow's `from_generator` op, which the pyignite
   reference contenders use, sets glibc's `M_TRIM_THRESHOLD` to 128 KiB the first time it runs,
   which also freezes the mmap threshold: every buffer `tf.io.gfile` makes per read is then
   mapped afresh. Checkpoint restores (into the variables' memory) and our readers (reused
   buffers) do not change. The harness now sets both thresholds before every warm-up and timed
   run to what glibc's dynamic rule reaches in a fresh process (mmap 32 MiB, trim 64 MiB).
   `bench.run --scenarios bulk,small,fs`, one run each, before/after: one file 0.742 -> 0.258 s
   (0.39x -> 1.08x of the restore), local disk one file 0.611 -> 0.036 s, checkpoint write
   0.50x -> 0.59x local disk, pyignite's bulk read 3.81 -> 1.38 s (it allocates per row);
   IgniteDataset and the restore unchanged. README Troubleshooting tells users how to undo it.
17. **TFRecordDataset over `ignite://` and the two cores** (issue 31, measured; its >= 1x target
   dropped). One node, a 256 MiB file of 100 KiB records, 5 reads each in one process (allocator
   reset): over `ignite://` 577 ms (client CPU 633 ms, node 280), over local disk 228 ms (client
   386), the checkpoint restore of the same size 341 ms (client 206, node 310). Per thread
   (`/proc/.../schedstat`, 6 reads): the thread running TensorFlow's record loop is on a CPU
   339 ms per read and waits 198 ms in the run queue; the read-ahead's threads 124 ms on a CPU,
   263 ms runnable. Our read path in that loop (`read_into`, blocks copied into TensorFlow's
   buffer) is 75-100 ms per read, of which 5-30 ms waiting for a block: the read-ahead keeps up.
   Without read-ahead (`IGNITE_FS_READ_AHEAD=0`) 683-741 ms, with it 625-712: the fetch and the
   record loop barely overlap because no core is idle to overlap them on. ~850-900 ms of CPU per
   read on two cores is >= 430 ms of wall, <= 0.8x the restore, however the work is scheduled.
   Also tried: `TFRecordDataset(buffer_size=1/4/16 MiB)` (16-1024x fewer calls into Python):
   649/644/600 ms against 741 (within the spread); `sys.setswitchinterval(0.0002)`: no change.
   `perf` of the client: memory copies 13 %, CRC32C 10 % (TensorFlow's record checks), Python
   24 %, kernel 23 % (socket copies, futex). The row stays in the table, without a target.
18. **Small rows in TF with the node on its own core** (issue 31, measured). The node's JVM
   pinned to one core and the client to the other (`taskset`), 12 paired rounds: TF 142 ms
   (client CPU 111 ms), our reader alone 97 (61), raw pages 86 (17); unpinned in the same script
   146 / 109 / 87. 0.61x of the raw pages either way: the TF read is bound by its own client CPU
   (111 ms against the raw pages' 86 ms of wall), not by sharing cores with the node. 0.9x needs
   the client's CPU per read below ~80 ms, about 30 ms less than now, with the reader's Python
   receive and decode (61 ms) and TensorFlow's per-element floor (25 ms, item 15) both in it --
   a compiled receive-and-decode path that hands batches to TensorFlow without the GIL.
"""


#: What section 9 (``bench/ignite3.py``) measures, for the report's preamble.
IGNITE3_TEXT = (
    "Ignite 3 (section 9, `bench/ignite3.py`, issue 30): one Apache Ignite 3.1 node started by the run (embedded "
    "`ignite-runner`, no TLS; its metastorage idle sync interval at 25 ms instead of 250: every read-only scan "
    "first waits for the cluster's safe time, which an idle cluster advances once per interval, and a 0-250 ms "
    "wait per query was as long as a whole small-row read, for every contender), two tables written with `ignite3.write` before the clock starts (the bulk and "
    "small-row shapes of sections 1 and 2a, with fewer rows: 1/8 and 1/3, to keep the section near 5 minutes), "
    "each read to the end by `ignite3.from_table` in TF (the target's contender), `ignite3.from_sql` (reference), "
    "pyignite-dbapi 3.1.0 (`cursor.fetchmany` rows yielded one by one into `from_generator().batch()`, the same "
    "element as `from_table`'s; one timed read, stopped after the pyignite time limit) and Ignite 3's Java client "
    "3.1.0 (`Ignite3ReadBench`: `client.sql().execute` of `SELECT *`, and the record view's `query` with no "
    "criteria, every value touched; one JVM per repetition after untimed warm-up reads). Ignite 3.1's table API "
    "has no scan op: the Java client runs a record-view query as that same SQL SELECT, so both Java rows are SQL "
    "on the wire. The ratio column divides by the Java client's SQL read; the raw-pages row reads the same SELECT "
    "through our client's cursor without decoding a value (the node's ceiling, which bounds how far ahead of "
    "pyignite-dbapi any client can be: the paragraph under each table). Each contender reads at least 9 times "
    "(pyignite-dbapi once). MB/s counts the key, label and VARBINARY bytes of each row.")


def render_markdown(*, command: str, machine: MachineInfo, results: Sequence[ScenarioResult], duration: float,
                    sizes_text: str, profiles: dict[str, list[tuple[str, str]]], findings: Sequence[str],
                    scale: str, runs: int = 1, over_runs: str = "") -> str:
    """The whole file.  With ``runs`` > 1, ``over_runs`` (:func:`targets_over_runs`) comes first and
    everything after it -- ``results``, ``profiles``, ``findings`` -- is the last run's, labelled so."""
    last = f"the last run ({runs} of {runs})" if runs > 1 else ""
    tag = f" (run {runs} of {runs})" if runs > 1 else ""
    out: list[str] = []
    out.append("# Benchmarks")
    out.append("")
    out.append("Generated by `bench/run.py`; do not edit by hand (re-run instead). Issue 6 defines the scenarios "
               "and targets; every scenario runs all its contenders in the **same run, alternating** (the "
               "starting contender rotates each round), after one untimed warm-up each (the filesystem "
               "scenarios: until the node is steady, see section 5); figures are **medians**, "
               "ratios are medians divided by the reference's median. Issue 19 counts a target as met only "
               "when it holds in each of 3 full runs: `make bench-3` (`python -m bench.run --runs 3`) makes them "
               "in one command and puts the \"Targets over 3 runs\" table (each run's ratio, the minimum, the "
               "spread) first; `make bench` is one run, whose ratios are not that verdict. Before every warm-up "
               "and timed run, glibc's allocator thresholds are set to one steady state (`bench/allocator.py`, "
               "what-was-tried 16), so no figure depends on which contenders ran before it. One full run takes "
               "about 18 minutes on 2 cores: the slow contenders that carry no close target run fewer "
               "repetitions (the module docstring of `bench/run.py` says which, and why).")
    out.append("")
    out.append(f"- Command: `{command}` (from the repository root; `make bench` runs `python -m bench.run`, "
               "`make bench-3` `python -m bench.run --runs 3`)")
    out.extend(machine.lines())
    out.append(f"- Sizes: {sizes_text}")
    out.append(f"- Wall time of the whole {'command' if runs > 1 else 'run'}: {duration / 60:.1f} min"
               + (f" ({runs} full runs)" if runs > 1 else ""))
    out.append("")
    out.append("What is timed: every row read, from the first request to the last byte, with values "
               "materialized (NumPy arrays or tensors; the Java client touches every field). Connecting and "
               "building the dataset object are not timed (the Java program connects before its clock starts). "
               "A read in TensorFlow ends with its last element; deleting its tf.data iterator is timed apart "
               "and noted under the table (TensorFlow's autotuning thread can sleep up to its next tick before "
               "the deletion returns -- 40 or 200 ms in some reads, whatever the source: `bench.contenders.drain`). "
               "MB/s counts value payload bytes as tensors hold them (the Java program's `bytes`). Peak memory: "
               "growth of this process's peak RSS during one read (Linux `VmHWM` after resetting it), the "
               "maximum over repetitions; for Java, the ScanBench JVM's own peak RSS (warm-up scans included). "
               "Page faults: minor page faults of this process during one read (median), i.e. freshly "
               "allocated 4 KiB pages touched. Node CPU (cores): the Ignite nodes' own user + system CPU "
               "seconds (`/proc/<pid>/stat`) over each repetition divided by its timed seconds (median); 1.00 is "
               "one core busy for the whole read, on a machine of 2. It covers the contender's whole call, so it "
               "overstates where a call does more than its timed part (the Java thin client's JVM runs its warm-up "
               "scans in it). The raw scan pages contender is the node's ceiling: the same scan exchange as our "
               "readers, pages received and counted, nothing decoded.")
    if any(r.scenario.key.startswith("load") for r in results):
        out.append("")
        out.append("Loading (section 6, `bench/loading.py`): every run loads the same rows into a fresh cache of "
                   "the same configuration, created before the clock starts and checked (it must hold every row) "
                   "and destroyed after it stops. What is timed: the load call alone -- for `ignite-tf load` "
                   "reading the file too; for Java the program's own clock, from building the first row's "
                   "object to the last put acknowledged or the streamer closed, in one JVM per contender "
                   "that serves every repetition. MB/s counts the rows' payload (label and pixels, or the byte "
                   "array). The ratio column divides by the DataStreamer, the reference for loading.")
    if any(r.scenario.key.startswith("ignite3") for r in results):
        out.append("")
        out.append(IGNITE3_TEXT)
    out.append("")
    if runs > 1:
        out.append(f"## Targets over {runs} runs")
        out.append("")
        out.append(over_runs)
        out.append("")
        out.append(f"**Everything below is {last}**: the targets table, findings, every scenario's table and the "
                   f"profiles of missed targets (profiled in the last run only). The earlier runs' tables are in "
                   f"the `--json` output (`runs`).")
        out.append("")
    out.append("## Targets (issue 6)" + (f" in {last}" if runs > 1 else ""))
    out.append("")
    out.append(targets_table(results))
    out.append("")
    if findings:
        out.append("## Findings of " + (last if runs > 1 else "this run"))
        out.append("")
        out.extend(f"- {f}" for f in findings)
        out.append("")
    out.append("## What was tried, and where the time goes")
    out.append("")
    out.append("Each scenario that misses a target ends with py-spy profiles of IgniteDataset and of our reader "
               "alone (one read in a child process, CPU samples of every Python thread, grouped by area); "
               "the contender of a missed target is also profiled on the node(s) during the same reads "
               "(async-profiler, loaded into the running JVMs only for those reads: `bench/nodeprofile.py`). "
               "Changes and experiments so far:")
    out.append("")
    out.append(WHAT_WAS_TRIED)
    for r in results:
        if _is_fs(r.scenario.key):
            continue  # section 5, below
        sc = r.scenario
        out.append(f"## {sc.title}{tag}")
        out.append("")
        out.append(sc.description)
        out.append("")
        out.append(scenario_table(r))
        out.append("")
        notes = [f"{res.contender.label}: {res.contender.note}" for res in r.results.values() if res.contender.note]
        notes += sc.notes
        notes += [n for n in [teardown_note(r)] if n]
        if notes:
            out.extend(f"- {n}" for n in notes)
            out.append("")
        for section in r.sections:
            out.append(section)
            out.append("")
        if sc.key.startswith("scale") and sc.key != "scale1" and scale:
            out.append("### 1 node vs several")
            out.append("")
            out.append(scale)
            out.append("")
        for label, text in profiles.get(sc.key, []):
            out.append(f"### Profile: {label}")
            out.append("")
            out.append("```")
            out.append(text)
            out.append("```")
            out.append("")
    out.append(filesystem_section([r for r in results if _is_fs(r.scenario.key)], profiles, tag=tag))
    return "\n".join(out)


def filesystem_section(results: Sequence[ScenarioResult], profiles: dict[str, list[tuple[str, str]]],
                       tag: str = "") -> str:
    """Section 5: checkpoints and one file through ``ignite://`` against local disk and, when the run had it,
    the S3 anchor (``bench/s3anchor.py``)."""
    out = [f"## 5. Filesystem{tag}", ""]
    if not results:
        out.append("Not run in this invocation (`python -m bench.run --scenarios fs` runs it).")
        out.append("")
        return "\n".join(out)
    out.append(results[0].scenario.description)
    out.append("")
    # The S3 anchor's columns (issue 31) when the run had it: its rate (or why it failed) and ignite:// / S3.
    anchor = any("s3" in r.results for r in results)
    head = ["", "ignite:// MB/s", "local disk MB/s"] + (["S3 server MB/s"] if anchor else []) + [
        "ignite:// / local disk"] + (["ignite:// / S3 server"] if anchor else []) + ["targets"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        ours, ref = r.results.get("ignite"), r.results.get("local")
        if ours is None or ref is None or not ours.ok or not ref.ok:
            continue
        targets = []
        for check in r.checks():
            if check.target.contender != "ignite":
                continue
            text = f">= {check.target.ratio:g}x: {'met' if check.met else '**missed**'}"
            if check.target.versus not in ("local", "s3") and check.measured is not None:  # e.g. the restore
                versus = r.results[check.target.versus].contender.label
                text = f"{check.measured:.2f}x {versus}, {text}"
            elif check.target.versus == "s3":
                text = f"vs S3 {text}"
            targets.append(text)
        cells = [r.scenario.title.split(": ", 1)[-1], _num(ours.mb_per_s), _num(ref.mb_per_s)]
        s3 = r.results.get("s3")
        if anchor:
            cells.append(_num(s3.mb_per_s) if s3 is not None and s3.ok else
                         "failed" if s3 is not None else "")
        cells.append(f"{ours.mb_per_s / ref.mb_per_s:.2f}x")
        if anchor:
            cells.append(f"{ours.mb_per_s / s3.mb_per_s:.2f}x" if s3 is not None and s3.ok and s3.mb_per_s > 0
                         else "n/a")
        cells.append("; ".join(targets))
        lines.append("| " + " | ".join(cells) + " |")
    out.append("\n".join(lines))
    out.append("")
    out.append(FILESYSTEM_NOTES)
    for r in results:
        sc = r.scenario
        out.append(f"### {sc.title}")
        out.append("")
        out.append(scenario_table(r))
        out.append("")
        notes = [f"{res.contender.label}: {res.contender.note}" for res in r.results.values() if res.contender.note]
        notes += sc.notes
        notes += [n for n in [teardown_note(r)] if n]
        if notes:
            out.extend(f"- {n}" for n in notes)
            out.append("")
        for label, text in profiles.get(sc.key, []):
            out.append(f"#### Profile: {label}")
            out.append("")
            out.append("```")
            out.append(text)
            out.append("```")
            out.append("")
    return "\n".join(out)


#: Hand-maintained, like WHAT_WAS_TRIED: what was changed in the ``ignite://`` data path and why.
FILESYSTEM_NOTES = """\
How a checkpoint travels (`src/tensorflow_ignite/fs/store/`): TensorFlow's bundle writer hands the
plugin 8 MiB appends; each whole 4 MiB block inside an append is sent straight from TensorFlow's
buffer (`FileWriter.write` -> `Connection.send_parts`: the put's header and the block in one
`sendmsg`, no copy) by the writing thread before `write` returns, and its acknowledgement is awaited
on the store's I/O threads; pieces smaller than a block are copied into a (reused) block buffer that
the I/O threads send. Every block is one put (FULL_SYNC), three puts in flight while the writer goes
on; one transaction then publishes the file. A restore reads each tensor with one `read` of its
whole size: every block wholly inside it is received from the socket straight into TensorFlow's
buffer (`Connection.expect_into` / `receive_into`: the buffer is registered before the get leaves,
so whichever thread reads the answer fills it), three gets in flight; partial blocks at either end
go through the block cache and its read-ahead.

Where the time goes. Save (269 MB, warm node, measured per save through /proc and getrusage): the
node uses 0.43-0.47 s of CPU (client-connector threads writing the blocks into 4 KiB memory pages,
its NIO thread reading the socket), our process 0.23 s -- as much as the same save into local disk
costs TensorFlow (0.24 s), since the copy into block buffers is gone. On 2 cores that shares the
machine with other jobs, the node's put path is what separates the two: a 4 MiB put is acknowledged
after ~23 ms (three in flight) while the node stores blocks one after another (an earlier JFR
profile put 30% of the node's samples in per-page bookkeeping, `SharedPageLockTracker` and
`IoStatisticsQueryHelper`; turning the tracker off did not change node CPU, below). A fresh node's JIT
makes its first saves 2-6x dearer in node CPU (2.8, 1.2, 0.8-1.1, 0.6-0.8, 0.5-0.6 s, steady from the
sixth save), hence the warm-up until steady. The node's thin-client listener reads sockets 8 KiB at a
time (Ignite's `ByteBufferNioClientWorker` allocates a fixed `8 << 10` read buffer; no setting changes
it): a 269 MB save is ~33,000 reads, each a pass through the selector loop of the node's NIO thread, time that
JFR's execution sampler does not see (it samples threads running Java code, not threads inside system
calls), so that JFR profile under-counts the NIO thread. File and directory operations: TensorFlow
makes 12 per save (makedirs, mkdir, three renames, two index files published, remove, rmdir, ...),
traced through the backend on a quiet machine at 58-97 ms per 269 MB save (13-20% of it) against 3-9
ms locally; each is one optimistic transaction, e.g. a rename (medians of 40): start 0.4 ms, two
rounds of reads 1.9 ms, put 0.6 ms, remove 0.5 ms, commit 2.5 ms -- the commit (prepare and commit
inside the node) is the largest part and the one that grows most under load (2-16 ms). Restore: after the
direct receive, 29% of samples are the socket receive into TensorFlow's buffer; a 64 MiB tensor
takes 43-100 ms (at best ~1.5 GB/s) and TensorFlow spends ~22 ms of its own between tensors. When
the machine is quiet, local disk writes 1.2-1.3 GB/s and restores 1.5-1.8 GB/s (page cache), so 0.5x
needs ~0.42 s per 269 MB save and 0.30-0.34 s per restore.

Changed, measured: whole blocks sent from TensorFlow's buffer (one process alternating the old and
the new `write`, 12 rounds after 8 warm-up saves, load 4.8-5.0): client CPU per save 0.33 -> 0.23 s,
node CPU 0.45 -> 0.43 s (unchanged), median save 0.80 -> 0.67 s; with the warm-up below, in
`bench.run --scenarios fs --reps 5` alternating the old and the new tree (old, new, new, old; load
1.9-2.4): median save 0.587/0.601 -> 0.467/0.417 s, 0.40x/0.30x -> 0.48x/0.46x of local disk (local
0.18-0.24 s), restore unchanged (0.379/0.371 vs 0.386/0.302 s). The price: a put whose connection
dies after the block was sent cannot be resent (the block was TensorFlow's memory), so that save
fails instead of completing on another node; a writer that lost a block publishes nothing. The
fs scenarios warm up until steady (at least 5 untimed saves or restores, then until two in a row
are within 10%) instead of one save that still timed the node's JIT. Earlier (alternating old/new
tree, `bench.run --scenarios fs`, load 2.3-4.9): receiving whole blocks into TensorFlow's buffer --
restore 0.56 -> 0.45 s (averages of medians over 4 pairs; ratio 0.27-0.42x -> 0.35-0.57x), Python CPU
per restore 0.25 -> 0.21 s (local disk ~0.15 s); block buffers reused once their put completed, three
puts in flight instead of two (no measurable change).

Tried, no gain (node CPU per 256 MiB): the page-lock tracker off (`-DIGNITE_PAGE_LOCK_TRACKER_TYPE=-1`,
which makes Ignite 2.18 hand out a no-op lock listener): two one-node clusters side by side, 11 and 15
alternating rounds after 8 warm-up saves, node CPU per save 0.44/0.47 s with the tracker vs
0.42/0.46 s without, per restore 0.30/0.30 vs 0.32/0.32 s -- within noise, so nodes keep it (it
is what dumps page locks when a node hangs); 16 KiB memory pages on the node (write 0.45-0.57 vs
0.35-0.44 s with 4 KiB pages; read 0.25-0.42 vs 0.27-0.36 s); two connections for concurrent writes
(the node stores blocks serially either way: 2x128 MiB 0.60-0.85 vs 0.44-1.08 s); six puts in flight
(median save 0.80/0.95 vs 0.68/0.56 s); 1/2/3/4 direct gets in flight (0.505/0.501/0.501/0.407 s:
noise, 3 kept); two blocks of read-ahead after a direct read; huge pages for fresh 64 MiB read
buffers; 256 KiB, 512 KiB, 1, 2 or 16 MiB blocks (within noise); pipelining block gets from the
reading thread without receiving into TensorFlow's buffer (slower: the thread then receives and
copies serially); `copy_on_read=false` on the data cache (two one-node clusters side by side, 8
alternating rounds after the warm-up, default vs off: restore 0.356 vs 0.397 s, node CPU 0.29 vs 0.31 s;
save 0.469 vs 0.498 s). The data cache with an on-heap tier (`onheap_cache_enabled`): restores 0.356 -> 0.313 s,
node CPU per restore 0.29 -> 0.23 s (gets served from the heap, not from 1,024 memory pages per
block), but a thin client cannot give the cache an eviction policy, so every stored checkpoint would
stay on the node's heap until it runs out: not adopted. Reading ahead 1, 3 or 6 blocks after each
tensor's direct read, to use the 30-50 ms TensorFlow spends between tensors (checksum, copy into the
variable): 0.336/0.348/0.340 s (14 alternating rounds; the node's CPU, ~0.29 s per 0.33 s restore,
is busy throughout). The write gap is the node's put path; the restore gap too.

Where the node's time goes on a save (issue 31; one process alternating the variants over one node,
269 MB checkpoints, 6 warm-up rounds; other jobs loaded the machine to load 12-37, so wall-clock
ratios were noise and node CPU per save, from /proc, is what counts): the put path costs the node
2.2-2.4 ms of CPU per MiB written (0.56-0.62 s per save). Async-profiler during four saves: the
B+tree update is 49% of it -- fresh 4 KiB memory pages, each zeroed before use
(`PageMemoryNoStoreImpl.allocatePage` -> `GridUnsafe.zeroMemory`, 23%), and the value copied into
them (`AbstractFreeList.writeSinglePage`); decoding the request's `byte[]` into a fresh array 7%,
copying that array once more because a thin client's `byte[]` is a user object
(`UserCacheObjectByteArrayImpl.prepareForCache`, 9%); the NIO thread reading the socket 8 KiB at a
time into a fresh, zeroed message array 14-22%; JIT 11%, GC 6%. Every one of these is per byte and
inside the node. Tried, no gain: the thin-client data streamer (OP_DATA_STREAMER_START with the
block as its one entry, FLUSH|CLOSE, allow-overwrite off, so the node's isolated updater writes the
entry without the atomic-update path): node CPU per save 0.65/0.66 s vs 0.56/0.57 s with puts (8
and 14 alternating rounds) -- the streamer's reader decodes the value twice
(`PlatformUtils.readCacheObject`: the deserialized array, then the raw bytes), which pays back the
copy it skips; identical restores either way. Deleting blocks with OP_CACHE_CLEAR_KEYS instead of
OP_CACHE_REMOVE_KEYS: 0.175 vs 0.200 s of node CPU per 256 MiB deleted (14 each): noise. A lead,
measured on the write side only (scratch prototype, not adopted): each block put as a binary object
with a raw section (24-byte object header, flags user type | raw data, then the block) instead of a
`byte[]` -- the node keeps the detached object as it is, without the user-object copy: node CPU per
save 0.51 vs 0.60 s, median save 1.19 vs 1.26 s (10 alternating rounds). A get returns it wrapped
(type 27: 29 bytes before the block, 4 after), so readers would strip those; it changes the stored
format (existing blocks are `byte[]`, and older readers could not read the new ones), so it is left
for a decision. Deletions
themselves: removing a 269 MB checkpoint's blocks costs the node 0.16-0.20 s (a third of what
storing them did), and the store deletes them `garbage_delay` (10 s) after the remove -- in the
bench, in the middle of later timed saves of either contender: the profile of the missed write target
in the last run (5a) charged ~30% of the node's samples to them (`GridNearAtomicUpdateFuture.map`, the removes,
filed under "other"). The scenario now deletes them in the untimed step after each save, where
local disk frees its files (`IgniteFileStore.drain`, in the contender's `after` step, outside the
measured call, so the node-CPU column does not count it), and the node profile names that area: node
CPU per timed ignite:// save 0.655/0.915 -> 0.580/0.655 s, per timed local save 0.065/0.145 ->
0.040/0.045 s (two pairs of runs); the ratio did not move beyond noise at that load (0.59/0.55x ->
0.55/0.53x). The write gap is the node's put path: a 269 MB save costs the node 0.43-0.62 s of CPU
(1.7-2.4 ms per MiB, quiet to loaded) and TensorFlow 0.23-0.3 s, so 0.5x of a quiet machine's local
disk (0.138 s per save, so 0.28 s) needs 0.66-0.92 s of CPU in 0.28 s -- more than this machine's two
cores -- whatever the client sends.

Where the node's time goes on a restore (async-profiler inside the node during five restores,
`bench/nodeprofile.py`; the profile of a missed target in this file shows the same split): the
cache get is 30-40% of the node's CPU (B+tree page reads, each 4 MiB value assembled from 1,024
4 KiB pages by `readFragment` copies, then `CacheObjectByteArrayImpl.value` copies it again and a
fresh array is zeroed first), the response is copied once more into Ignite's `BinaryHeapOutputStream`
(~8%), then from the heap into the connection's direct write buffer and the socket (12-24%); the
JIT takes 15-20% and GC 4-10%. Three to four copies of every byte inside the node, on a core the
reader shares with TensorFlow: the get path of Ignite's thin-client protocol, which no client can
change. The node's direct write buffer is as large as the accepted socket's send buffer (3.9 MB on
loopback here), so 4 MiB answers are not written in small pieces. Also tried: G1 regions of 32 MiB,
which make 4 MiB arrays ordinary instead of humongous allocations (`-XX:G1HeapRegionSize=32m`; two
one-node clusters side by side, 12 alternating rounds after the warm-up): restore 0.278 -> 0.271 s,
node CPU 0.250 -> 0.235 s per restore -- 3-6%, not enough to matter and bad for small heaps, so not
adopted. The reference moves with the machine's load: on a quiet machine (load 0.6-0.8, `bench.run
--scenarios fs`) local disk restores 269 MB in 0.109 s (2.45 GB/s) and saves in 0.138 s, ignite://
in 0.274 s and 0.337 s (0.40x and 0.41x); on a loaded one local disk slows more than the node does.
Reaching 0.5x would need a read path that skips the thin-client get -- a block service inside the
node with its own port, TLS and authentication -- which is a design change outside this issue.
"""
