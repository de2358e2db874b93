"""Class data sharing for local nodes: a node's classes loaded once, mapped by every later start.

A JVM spends much of an Ignite node's start loading, parsing and verifying the
same ten thousand classes.  With ``$TF_IGNITE_CDS_DIR`` set (:data:`CDS_DIR_VARIABLE`;
the test suite sets it), local Ignite 2 nodes share a *dynamic class-data-sharing
archive* per classpath (HotSpot, Java 17):

* the first node started with a classpath records what it loads
  (``-XX:+RecordDynamicDumpInfo``, :func:`cds_flags`); once it is ready, the
  cluster asks it to write the archive (``jcmd PID VM.cds dynamic_dump``,
  :func:`dump_recorded`), which is moved into place whole;
* every later node with that classpath maps the archive
  (``-XX:SharedArchiveFile``) instead of loading those classes: measured on a
  loaded 2-core machine, an Ignite 2.18 node was ready on 2.9 s of CPU instead of 3.5-4.3 s.

An archive is named after what it is valid for -- the ``java`` executable, the
main class and each classpath entry with its size and modification time -- so a
rebuilt jar or another JDK gets a new one, never a mismatched one.  One node per
archive records (a claim file); a node that died before writing leaves the others
starting without.  Unset, nodes start as before: this is for processes that start
many nodes, not a node's configuration.  (Ignite 3 nodes are left out: their
classes are written by the node's own exit, which then outlasted its stop.)
"""

from __future__ import annotations

import glob
import hashlib
import os
import subprocess
from pathlib import Path

__all__ = ["CDS_DIR_VARIABLE", "cds_flags", "dump_recorded"]

#: A directory for the archives; unset or empty: no class data sharing.
CDS_DIR_VARIABLE = "TF_IGNITE_CDS_DIR"

#: Names the archive a recording node is to write (read back by :func:`dump_recorded`).
_ARCHIVE_PROPERTY = "-Dtensorflow_ignite.cds.archive"

# The archive is the JVM's own business: a warning about one it cannot use must not
# reach a node's output (tests read it), and the JVM then simply loads classes itself.
_QUIET = "-Xlog:cds*=off,class+path=off"


def _key(java: str, classpath: str, main_class: str) -> str:
    parts = [java, main_class]
    entries: list[str] = []
    for entry in classpath.split(os.pathsep):  # "dir/*" stands for the jars in dir
        entries += sorted(glob.glob(entry[:-1] + "*.jar")) if entry.endswith("*") else [entry]
    for entry in entries:
        try:
            st = os.stat(entry)
        except OSError:
            parts.append(f"{entry}:missing")
            continue
        parts.append(f"{entry}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:24]


def cds_flags(java: str, classpath: str, main_class: str) -> list[str]:
    """JVM flags sharing ``classpath``'s classes between local node starts (empty without :data:`CDS_DIR_VARIABLE`)."""
    directory = os.environ.get(CDS_DIR_VARIABLE, "").strip()
    if not directory:
        return []
    root = Path(directory)
    key = _key(java, classpath, main_class)
    archive = root / f"{key}.jsa"
    if archive.exists():
        return [f"-XX:SharedArchiveFile={archive}", _QUIET]
    try:
        root.mkdir(parents=True, exist_ok=True)
        os.close(os.open(root / f"{key}.claim", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except OSError:  # another node records this classpath (or the directory is not writable)
        return []
    return ["-XX:+RecordDynamicDumpInfo", f"{_ARCHIVE_PROPERTY}={archive}", _QUIET]


def dump_recorded(pid: int, jcmd: str | None) -> Path | None:
    """Have node ``pid`` write the archive it records (started with :func:`cds_flags`' recording
    flags); the archive's path, or None when it records none or could not write it."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return None
    target = next((a.split("=", 1)[1] for a in args if a.startswith(f"{_ARCHIVE_PROPERTY}=")), None)
    if target is None or jcmd is None:
        return None
    archive = Path(target)
    if archive.exists():  # written already (by this node at an earlier readiness)
        return archive
    partial = archive.with_name(f"{archive.stem}.{pid}.writing")
    try:
        done = subprocess.run(
            [jcmd, str(pid), "VM.cds", "dynamic_dump", str(partial)],
            capture_output=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0 or not partial.exists():
            return None
        os.replace(partial, archive)
    except (OSError, subprocess.TimeoutExpired):
        return None
    finally:
        partial.unlink(missing_ok=True)
    return archive
