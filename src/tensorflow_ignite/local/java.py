"""Finding Java and the node launcher's classpath.

Every jar a local node runs ships inside the package, in ``tensorflow_ignite/jars/``
(:func:`jars_dir`), so an installed wheel starts nodes with only a Java runtime:

* ``tensorflow-ignite-node.jar`` (:func:`module_jar`) -- the project's own classes:
  the node launcher and the training launcher's service and agents, no Ignite
  classes.  It is also the Ignite module jar users put in their nodes' ``libs/``;
* ``lib/``      -- Apache Ignite 2.18.0 (``ignite-core``), the default classpath;
* ``lib-sql/``  -- Apache Ignite 2.17.0 with the H2 SQL engine, used for nodes
  started with ``sql=True``, because no SQL engine of 2.18.0 is published on
  Maven Central (see ARCHITECTURE.md).

The jars are built from the project's ``java/`` Maven module (``make java``, which
runs ``python -m tensorflow_ignite.local.java``) and copied there.  In a source
checkout the accessors rebuild and re-copy them first when a Java source is newer
(that needs Maven and a JDK); an installed package only reads them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import NodeError

__all__ = [
    "JavaRuntime",
    "java_runtime",
    "jars_dir",
    "module_jar",
    "launcher_classpath",
    "java_module_dir",
    "build_java",
    "find_maven",
    "run_maven",
    "stage_jars",
    "JVM_OPENS",
]

LAUNCHER_CLASS = "org.tensorflow.ignite.NodeLauncher"
MODULE_JAR = "tensorflow-ignite-node.jar"
#: Classpath directories under :func:`jars_dir`: Maven's output directory name -> packaged name.
_CLASSPATHS = ("lib", "lib-sql")

# The --add-opens list of Ignite's bin/include/jvmdefaults.sh for Java 17+.
JVM_OPENS: tuple[str, ...] = tuple(
    f"--add-opens={m}=ALL-UNNAMED"
    for m in (
        "java.base/jdk.internal.access",
        "java.base/jdk.internal.misc",
        "java.base/sun.nio.ch",
        "java.base/sun.util.calendar",
        "java.management/com.sun.jmx.mbeanserver",
        "jdk.internal.jvmstat/sun.jvmstat.monitor",
        "java.base/sun.reflect.generics.reflectiveObjects",
        "jdk.management/com.sun.management.internal",
        "java.base/java.io",
        "java.base/java.nio",
        "java.base/java.net",
        "java.base/java.util",
        "java.base/java.util.concurrent",
        "java.base/java.util.concurrent.locks",
        "java.base/java.util.concurrent.atomic",
        "java.base/java.lang",
        "java.base/java.lang.invoke",
        "java.base/java.math",
        "java.sql/java.sql",
        "java.base/java.lang.reflect",
        "java.base/java.time",
        "java.base/java.text",
        "java.management/sun.management",
    )
)

_build_lock = threading.Lock()


@dataclass(frozen=True)
class JavaRuntime:
    """A usable ``java`` executable and its major version."""

    executable: str
    major: int


#: The Java release the project's jars are compiled for (class files of Java 17).
REQUIRED_JAVA = 17


def java_runtime() -> JavaRuntime:
    """Locate a Java 17+ ``java``: ``$JAVA_HOME/bin/java`` first, then the one on ``PATH``.

    The project's jars are Java 17 class files, so an older ``java`` is passed
    over for the next candidate; when none is new enough the error names each
    one found and its version.
    """
    candidates = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(str(Path(os.environ["JAVA_HOME"]) / "bin" / "java"))
    found = shutil.which("java")
    if found and found not in candidates:
        candidates.append(found)
    too_old: list[str] = []
    for exe in candidates:
        if not os.access(exe, os.X_OK):
            continue
        proc = subprocess.run([exe, "-version"], capture_output=True, text=True, check=False)
        m = re.search(r'version "(\d+)(?:\.(\d+))?', proc.stderr + proc.stdout)
        if not m:
            continue
        major = int(m.group(1))
        if major == 1 and m.group(2):  # "1.8.0_x" style
            major = int(m.group(2))
        if major < REQUIRED_JAVA:
            too_old.append(f"{exe} (Java {major})")
            continue
        return JavaRuntime(exe, major)
    if too_old:
        raise NodeError(
            f"local Ignite nodes need Java {REQUIRED_JAVA} or newer; found only {', '.join(too_old)}. "
            f"Install a Java {REQUIRED_JAVA} runtime (e.g. `apt-get install openjdk-17-jre-headless`) and "
            "put it first on PATH or set JAVA_HOME to it."
        )
    raise NodeError(
        f"Java was not found: local Ignite nodes need a Java {REQUIRED_JAVA} runtime (e.g. `apt-get install "
        "openjdk-17-jre-headless`); put it on PATH or set JAVA_HOME. A cluster you already run needs no "
        "Java here."
    )


def jars_dir() -> Path:
    """``tensorflow_ignite/jars/``: the packaged node jar and Ignite classpaths."""
    return Path(__file__).resolve().parents[1] / "jars"


def java_module_dir() -> Path:
    """The ``java/`` Maven module of a source checkout (``TF_IGNITE_JAVA_DIR`` overrides).

    In an installed package this path does not exist (see :func:`_source_checkout`).
    """
    override = os.environ.get("TF_IGNITE_JAVA_DIR")
    if override:
        return Path(override)
    # src/tensorflow_ignite/local/java.py -> repository root is parents[3]
    return Path(__file__).resolve().parents[3] / "java"


def _source_checkout() -> Path | None:
    """The ``java/`` module when running from a source checkout, else ``None``."""
    module = java_module_dir()
    return module if (module / "pom.xml").is_file() else None


def _newest_source_mtime(module: Path) -> float:
    newest = 0.0
    for path in [module / "pom.xml", module / "sql-runtime" / "pom.xml", *module.glob("src/**/*")]:
        if path.is_file():
            newest = max(newest, path.stat().st_mtime)
    return newest


def _needs_build(module: Path) -> bool:
    jar = module / "target" / MODULE_JAR
    libs = [module / "target" / name for name in _CLASSPATHS]
    if not jar.exists() or not all(d.is_dir() and any(d.glob("ignite-core-*.jar")) for d in libs):
        return True
    return jar.stat().st_mtime < _newest_source_mtime(module)


def find_maven(needed_for: str) -> str:
    """The ``mvn`` executable; a :class:`NodeError` saying what it is ``needed_for`` when there is none."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise NodeError(
            f"Maven (`mvn`) is needed {needed_for} and was not found: install it (`apt-get install maven`) "
            "or run `make setup`"
        )
    return mvn


def run_maven(mvn: str, args: Sequence[str], cwd: Path, failed: str) -> None:
    """Run ``mvn args`` in ``cwd``; when it fails, a :class:`NodeError` ``failed`` with Maven's last 25 lines."""
    proc = subprocess.run([mvn, *args], cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-25:])
        raise NodeError(f"{failed}:\n{tail}")


def build_java(module: Path | None = None, *, quiet: bool = True) -> None:
    """Build the launcher jar and both runtime classpaths with Maven (idempotent)."""
    module = module or java_module_dir()
    with _build_lock:
        if not _needs_build(module):
            return
        mvn = find_maven(f"to build the node launcher in {module.name}/")
        flags = ["-B", "-q"] if quiet else ["-B"]
        for sub in (module, module / "sql-runtime"):
            run_maven(
                mvn, [*flags, "package", "-DskipTests"], sub, f"building the node launcher with Maven failed in {sub}"
            )
        # Maven keeps an unchanged jar's mtime; touch it so the check above is stable.
        (module / "target" / MODULE_JAR).touch()


def _staged(module: Path, dest: Path) -> bool:
    jar = dest / MODULE_JAR
    if not jar.is_file() or jar.stat().st_mtime < (module / "target" / MODULE_JAR).stat().st_mtime:
        return False
    for name in _CLASSPATHS:
        built = {p.name for p in (module / "target" / name).glob("*.jar")}
        if {p.name for p in (dest / name).glob("*.jar")} != built:
            return False
    return True


def stage_jars(module: Path | None = None, dest: Path | None = None) -> Path:
    """Build the Java module if needed and copy its jars into ``dest`` (default :func:`jars_dir`).

    Copies the node jar and the ``lib``/``lib-sql`` classpaths, replacing what was
    there (no stale Ignite jar is left behind).  Returns ``dest``.
    """
    module = module or java_module_dir()
    dest = dest or jars_dir()
    build_java(module)
    with _build_lock:
        if _staged(module, dest):
            return dest
        dest.mkdir(parents=True, exist_ok=True)
        for name in _CLASSPATHS:
            target = dest / name
            partial = dest / f".{name}.{os.getpid()}.tmp"
            shutil.rmtree(partial, ignore_errors=True)
            shutil.copytree(module / "target" / name, partial)
            shutil.rmtree(target, ignore_errors=True)
            os.replace(partial, target)
        partial_jar = dest / f".{MODULE_JAR}.{os.getpid()}.tmp"
        shutil.copy2(module / "target" / MODULE_JAR, partial_jar)
        os.replace(partial_jar, dest / MODULE_JAR)  # last: its mtime marks the copy complete
        (dest / MODULE_JAR).touch()
    return dest


def _packaged_jars() -> Path:
    """:func:`jars_dir`, refreshed from ``java/`` first in a source checkout."""
    module = _source_checkout()
    if module is not None:
        return stage_jars(module)
    dest = jars_dir()
    missing = [p for p in (dest / MODULE_JAR, dest / "lib", dest / "lib-sql") if not p.exists()]
    if missing:
        raise NodeError(
            f"this installation of tensorflow-ignite has no {missing[0].name} under {dest}: the "
            "package is incomplete (built without `make java`?). Reinstall it from a wheel "
            "(`pip install --force-reinstall tensorflow-ignite`) or, in a source checkout, run `make setup`"
        )
    return dest


def module_jar() -> Path:
    """The project's jar inside the package (in a source checkout built first if stale).

    Holds the node launcher and the training launcher's service and agents, no
    Ignite classes; put it in the ``libs/`` of stock Ignite nodes to run jobs on them.
    """
    return _packaged_jars() / MODULE_JAR


def launcher_classpath(*, sql: bool = False, extra: tuple[str, ...] = ()) -> str:
    """Classpath of a local node: the project jar, Ignite's jars (``sql``: 2.17 with H2), ``extra``."""
    jars = _packaged_jars()
    lib = jars / ("lib-sql" if sql else "lib")
    parts = [str(jars / MODULE_JAR), str(lib / "*"), *extra]
    return os.pathsep.join(parts)


def main(argv: list[str] | None = None) -> int:
    """``python -m tensorflow_ignite.local.java``: build ``java/`` and copy its jars into the package."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m tensorflow_ignite.local.java",
        description="Build the Java module with Maven when a source changed and copy the node jar "
        "and Ignite's jars into the package (tensorflow_ignite/jars/).",
    )
    parser.add_argument("--dest", type=Path, help=f"copy into this directory instead of {jars_dir()}")
    args = parser.parse_args(argv)
    module = _source_checkout()
    if module is None:
        print(f"error: no Java module at {java_module_dir()} (not a source checkout)", file=sys.stderr)
        return 1
    try:
        dest = stage_jars(module, args.dest)
    except NodeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    size = sum(p.stat().st_size for p in dest.rglob("*.jar"))
    print(f"{dest} ({size / 2**20:.1f} MiB of jars)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
