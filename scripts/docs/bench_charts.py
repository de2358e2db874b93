"""MkDocs hook: the Benchmarks page's charts, drawn from BENCHMARKS.md when the site is built.

The last run's targets table ("Targets ... in the last run") gives each target's measured ratio and
the ratio it needs; the targets are grouped by what they are measured against -- the Java clients,
pyignite, the S3 server, the node's ceiling (raw scan pages, the loopback socket) and the rest --
and each group becomes one SVG bar chart (matplotlib, no display needed) added to the site as
``benchmarks/<group>.svg``.  ``<!-- bench-charts -->`` in the page becomes the images.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MARKER = "<!-- bench-charts -->"
_ROW = re.compile(r"^\|\s*(?P<target>[^|]+?)\s*\|\s*(?P<measured>[\d,.]+)x \(need (?P<need>[\d,.]+)x\)\s*\|\s*(?P<met>[^|]+?)\s*\|$")
#: Group file name -> (title, does a target belong to it).
GROUPS: dict[str, tuple[str, Any]] = {
    "java": ("Against Apache Ignite's Java clients", lambda t: "Java" in t or "thick client" in t),
    "pyignite": ("Against pyignite and pyignite-dbapi", lambda t: "pyignite" in t),
    "s3": ("Against an S3 server (SeaweedFS)", lambda t: "S3" in t),
    "ceiling": ("Against the node's ceiling and the wire", lambda t: "raw" in t or "rows/s" in t),
    "other": ("Against local disk, in-memory arrays and our own paths", lambda t: True),
}
_tmp: tempfile.TemporaryDirectory[str] | None = None


@dataclass(frozen=True)
class Target:
    name: str
    measured: float
    need: float
    met: bool


def last_run_targets(text: str) -> list[Target]:
    """The rows of BENCHMARKS.md's last-run targets table."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith("## Targets") and "last run" in l), None)
    if start is None:
        raise ValueError("BENCHMARKS.md has no '## Targets ... in the last run' table to chart")
    out = []
    for line in lines[start + 1:]:
        if line.startswith("## "):
            break
        m = _ROW.match(line.strip())
        if m:
            out.append(Target(m.group("target"), float(m.group("measured").replace(",", "")),
                              float(m.group("need").replace(",", "")), m.group("met").strip("* ") == "yes"))
    if not out:
        raise ValueError("BENCHMARKS.md's last-run targets table has no rows")
    return out


def grouped(targets: list[Target]) -> dict[str, list[Target]]:
    groups: dict[str, list[Target]] = {k: [] for k in GROUPS}
    for t in targets:
        key = next(k for k, (_, belongs) in GROUPS.items() if belongs(t.name))
        groups[key].append(t)
    return {k: v for k, v in groups.items() if v}


def draw(title: str, targets: list[Target], path: Path) -> None:
    """A horizontal bar per target: the measured ratio (green met, red missed), its need marked."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: smaller files, drawn in a fraction of the time
    import matplotlib.pyplot as plt

    height = 0.9 + 0.42 * len(targets)
    fig, ax = plt.subplots(figsize=(9.5, height), layout="constrained")
    names = [t.name if len(t.name) <= 70 else t.name[:67] + "..." for t in targets][::-1]
    values = [t.measured for t in targets][::-1]
    colors = ["#2e7d32" if t.met else "#c62828" for t in targets][::-1]
    ys = range(len(targets))
    ax.barh(ys, values, color=colors, height=0.6)
    ax.scatter([t.need for t in targets][::-1], ys, marker="|", s=300, color="black", zorder=3, label="needed")
    for y, v in zip(ys, values):
        ax.text(v, y, f" {v:g}x", va="center", fontsize=8)
    ax.set_yticks(list(ys), names, fontsize=8)
    if max(values) / max(min(values), 1e-9) > 20:
        ax.set_xscale("log")
    ax.set_xlabel("ratio (median / reference median); green: target met, red: missed")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)


def on_files(files: Any, config: Any) -> Any:
    """Draw the charts into a temporary folder and add them to the site's files."""
    from mkdocs.structure.files import File

    global _tmp
    _tmp = tempfile.TemporaryDirectory(prefix="tfi-bench-charts-")
    out = Path(_tmp.name) / "benchmarks"
    out.mkdir()
    groups = grouped(last_run_targets((ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")))
    for key, targets in groups.items():
        draw(GROUPS[key][0], targets, out / f"{key}.svg")
        files.append(File(f"benchmarks/{key}.svg", _tmp.name, config["site_dir"], config["use_directory_urls"]))
    config["extra"]["bench_charts"] = list(groups)
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if MARKER not in markdown:
        return markdown
    images = [f"![{GROUPS[k][0]}](benchmarks/{k}.svg)" for k in config["extra"]["bench_charts"]]
    return markdown.replace(MARKER, "\n\n".join(images))


def on_post_build(config: Any) -> None:
    global _tmp
    if _tmp is not None:
        _tmp.cleanup()
        _tmp = None
