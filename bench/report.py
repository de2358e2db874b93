"""Tables for the console and BENCHMARKS.md."""

from __future__ import annotations

from collections.abc import Sequence

from .harness import ContenderResult, ScenarioResult
from .machine import MachineInfo
from .memory import format_bytes

__all__ = ["scenario_table", "targets_table", "scale_section", "filesystem_section", "render_markdown"]


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
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _is_fs(key: str) -> bool:
    """The checkpoint scenarios (``bench/filesystem.py``), reported in section 5."""
    return key.startswith("fs_")


def _short_ref(label: str) -> str:
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
   (`src/tensorflow_ignite/data/dataset.py`: `_ScanReader.worker_batches`, `_assemble`). Before, the
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
3. **Bulk, remaining gap: fresh memory.** Page faults are expensive on this VM (see "Memory copy"
   above and the page-fault column): each page frame is received into a new `bytearray`
   (`Connection._read_exact`), and TensorFlow allocates again for each tensor (`from_generator`'s
   conversion, `rebatch`); the JVM reuses a pre-touched heap. One experiment: with glibc told to keep
   freed memory (`MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=2147483648
   MALLOC_TOP_PAD_=268435456`), the bulk read in TF went from ~210 to ~450 MB/s and the reader alone
   to ~650 MB/s. Next: receive pages into reused, 64-byte-aligned buffers (TF can then adopt NumPy
   memory without copying), a client change.
4. **Tried, no measurable effect:** waking waiters when the response lock is released in
   `Connection.receive`; more reader threads (1, 2 or 4 on 2 cores: the GIL and the node share them).
"""


def render_markdown(*, command: str, machine: MachineInfo, results: Sequence[ScenarioResult], duration: float,
                    sizes_text: str, profiles: dict[str, list[tuple[str, str]]], findings: Sequence[str],
                    scale: str) -> str:
    out: list[str] = []
    out.append("# Benchmarks")
    out.append("")
    out.append("Generated by `bench/run.py`; do not edit by hand (re-run instead). Issue 6 defines the scenarios "
               "and targets; every scenario runs all its contenders in the **same run, alternating** (the "
               "starting contender rotates each round), after one untimed warm-up each; figures are **medians**, "
               "ratios are medians divided by the reference's median.")
    out.append("")
    out.append(f"- Command: `{command}` (from the repository root; `make bench` runs `python -m bench.run`)")
    out.extend(machine.lines())
    out.append(f"- Sizes: {sizes_text}")
    out.append(f"- Wall time of the whole run: {duration / 60:.1f} min")
    out.append("")
    out.append("What is timed: every row read, from the first request to the last byte, with values "
               "materialized (NumPy arrays or tensors; the Java client touches every field). Connecting and "
               "building the dataset object are not timed (the Java program connects before its clock starts). "
               "MB/s counts value payload bytes as tensors hold them (the Java program's `bytes`). Peak memory: "
               "growth of this process's peak RSS during one read (Linux `VmHWM` after resetting it), the "
               "maximum over repetitions; for Java, the ScanBench JVM's own peak RSS (warm-up scans included). "
               "Page faults: minor page faults of this process during one read (median), i.e. freshly "
               "allocated 4 KiB pages touched.")
    out.append("")
    out.append("## Targets (issue 6)")
    out.append("")
    out.append(targets_table(results))
    out.append("")
    if findings:
        out.append("## Findings of this run")
        out.append("")
        out.extend(f"- {f}" for f in findings)
        out.append("")
    out.append("## What was tried, and where the time goes")
    out.append("")
    out.append("Each scenario that misses a target ends with py-spy profiles of IgniteDataset and of our reader "
               "alone (one read in a child process, CPU samples of every Python thread, grouped by area). "
               "Changes and experiments so far:")
    out.append("")
    out.append(WHAT_WAS_TRIED)
    for r in results:
        if _is_fs(r.scenario.key):
            continue  # section 5, below
        sc = r.scenario
        out.append(f"## {sc.title}")
        out.append("")
        out.append(sc.description)
        out.append("")
        out.append(scenario_table(r))
        out.append("")
        notes = [f"{res.contender.label}: {res.contender.note}" for res in r.results.values() if res.contender.note]
        notes += sc.notes
        if notes:
            out.extend(f"- {n}" for n in notes)
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
    out.append(filesystem_section([r for r in results if _is_fs(r.scenario.key)], profiles))
    return "\n".join(out)


def filesystem_section(results: Sequence[ScenarioResult], profiles: dict[str, list[tuple[str, str]]]) -> str:
    """Section 5: checkpoint write and restore through ``ignite://`` against local disk."""
    out = ["## 5. Filesystem", ""]
    if not results:
        out.append("Not run in this invocation (`python -m bench.run --scenarios fs` runs it).")
        out.append("")
        return "\n".join(out)
    out.append(results[0].scenario.description)
    out.append("")
    lines = ["| | ignite:// MB/s | local disk MB/s | ignite:// / local disk | target |", "|---|---|---|---|---|"]
    for r in results:
        ours, ref = r.results.get("ignite"), r.results.get("local")
        if ours is None or ref is None or not ours.ok or not ref.ok:
            continue
        check = next(iter(r.checks()), None)
        target = ""
        if check is not None:
            target = f">= {check.target.ratio:g}x: {'met' if check.met else '**missed**'}"
        lines.append(f"| {r.scenario.title.split(': ', 1)[-1]} | {_num(ours.mb_per_s)} | {_num(ref.mb_per_s)} | "
                     f"{ours.mb_per_s / ref.mb_per_s:.2f}x | {target} |")
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
How a checkpoint travels (`src/tensorflow_ignite/fs/store.py`): TensorFlow's bundle writer hands the
plugin 8 MiB appends; they are copied into 4 MiB block buffers, each stored with one put (FULL_SYNC)
from the store's I/O threads, three blocks in flight while the next fills; one transaction then
publishes the file. A restore reads each tensor with one `read` of its whole size: whole blocks are
fetched, the next one in the background while the current one is copied into TensorFlow's buffer.

Where the time goes (py-spy, 256 MiB save and restore, one node): in a save, about half of the main
thread's samples are TensorFlow's own `SaveV2` (serializing, CRC, its 8 MiB output buffer), a fifth
copying appends into block buffers, 7% allocating fresh 4 MiB buffers; the I/O threads mostly wait
for the node's answer (the node stores each 4 MiB value into 4 KiB pages, then acknowledges). A
restore mostly waits: 0.7 Python threads on CPU on average, a quarter of the samples the I/O
thread receiving each 4 MiB answer into a freshly allocated buffer (page faults, see "Memory copy"
above), 5% the copy into TensorFlow's buffer; the rest of the time the node is serving the block.
The store's reader is as fast as bare block gets: 256 MiB of 4 MiB gets with no file layer, one
node, warm JVM, load average 7: one at a time 771 MB/s, two or four threads 955-962 MB/s, the
`FileReader` 971 MB/s (with a cold JVM all four ~440-540 MB/s). So the restore gap is the node's get
path against a page-cache copy (local restores reach 1-2 GB/s when the machine is quiet).

Tried (measured while other suites ran on the 2 cores, load average 10-20, so only differences that
repeat are believed): block buffers are now reused once their put completed and three instead of two
puts are in flight -- no measurable change (alternating old and new store, 256 MiB: write 209-232 vs
193-242 MB/s); pipelining 2, 3 or 6 block requests from the reading thread instead of one background
read-ahead was *slower* (one node: 1 ahead 250-397, 3 ahead 178-270, 6 ahead 194-245 MB/s; the reading
thread then receives and copies serially, while a background receive overlaps the copy), so it was
reverted; 1 MiB, 512 KiB or 2 MiB blocks instead of 4 MiB showed no consistent difference. Next:
receive block answers straight into TensorFlow's buffer (a receive-into call in
`client/connection.py`: one copy and the page faults fewer), and a larger page size for the nodes'
data region (fewer pages per 4 MiB block).
"""
