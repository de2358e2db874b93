"""Finding Java and the node launcher's classpath, building it with Maven when needed.

The launcher lives in the project's ``java/`` Maven module.  Two runtime classpaths
are produced there:

* ``java/target/lib``      -- Apache Ignite 2.18.0 (``ignite-core``), the default;
* ``java/target/lib-sql``  -- Apache Ignite 2.17.0 with the H2 SQL engine, used for
  nodes started with ``sql=True``, because no SQL engine of 2.18.0 is published on
  Maven Central (see ARCHITECTURE.md).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from ..errors import NodeError

__all__ = ["JavaRuntime", "java_runtime", "launcher_classpath", "module_jar", "JVM_OPENS"]

LAUNCHER_CLASS = "org.tensorflow.ignite.NodeLauncher"

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


def java_runtime() -> JavaRuntime:
    """Locate ``java`` (``$JAVA_HOME/bin/java`` first, then ``PATH``); require Java 11+."""
    candidates = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(str(Path(os.environ["JAVA_HOME"]) / "bin" / "java"))
    found = shutil.which("java")
    if found:
        candidates.append(found)
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
        if major < 11:
            raise NodeError(
                f"{exe} is Java {major}; Apache Ignite 2.18 needs Java 11 or newer "
                "(17 recommended). Install a newer JDK or set JAVA_HOME."
            )
        return JavaRuntime(exe, major)
    raise NodeError(
        "Java was not found: install a JDK 17 (e.g. `apt-get install openjdk-17-jdk-headless`) "
        "or set JAVA_HOME. `make setup` checks this for you."
    )


def java_module_dir() -> Path:
    """The ``java/`` Maven module of this source tree (``TF_IGNITE_JAVA_DIR`` overrides)."""
    override = os.environ.get("TF_IGNITE_JAVA_DIR")
    if override:
        return Path(override)
    # src/tensorflow_ignite/local/java.py -> repository root is parents[3]
    return Path(__file__).resolve().parents[3] / "java"


def _newest_source_mtime(module: Path) -> float:
    newest = 0.0
    for path in [module / "pom.xml", module / "sql-runtime" / "pom.xml", *module.glob("src/**/*")]:
        if path.is_file():
            newest = max(newest, path.stat().st_mtime)
    return newest


def _needs_build(module: Path) -> bool:
    jar = module / "target" / "tensorflow-ignite-node.jar"
    libs = [module / "target" / "lib", module / "target" / "lib-sql"]
    if not jar.exists() or not all(d.is_dir() and any(d.glob("ignite-core-*.jar")) for d in libs):
        return True
    return jar.stat().st_mtime < _newest_source_mtime(module)


def build_java(module: Path | None = None, *, quiet: bool = True) -> None:
    """Build the launcher jar and both runtime classpaths with Maven (idempotent)."""
    module = module or java_module_dir()
    with _build_lock:
        if not _needs_build(module):
            return
        mvn = shutil.which("mvn")
        if mvn is None:
            raise NodeError(
                "Maven (`mvn`) was not found but the node launcher in "
                f"{module.name}/ is not built yet. Install Maven (`apt-get install maven`) "
                "or run `make setup`."
            )
        flags = ["-B", "-q"] if quiet else ["-B"]
        for sub in (module, module / "sql-runtime"):
            proc = subprocess.run(
                [mvn, *flags, "package", "-DskipTests"],
                cwd=sub, capture_output=True, text=True, check=False,
            )
            if proc.returncode != 0:
                tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-25:])
                raise NodeError(f"building the node launcher with Maven failed in {sub}:\n{tail}")
        # Maven keeps an unchanged jar's mtime; touch it so the check above is stable.
        (module / "target" / "tensorflow-ignite-node.jar").touch()


def launcher_classpath(*, sql: bool = False, extra: tuple[str, ...] = ()) -> str:
    """Classpath for the node launcher; builds the Java module first when needed."""
    module = java_module_dir()
    if not (module / "pom.xml").exists():
        raise NodeError(
            f"the Java node launcher sources were not found at {module}; set "
            "TF_IGNITE_JAVA_DIR to the project's java/ directory"
        )
    build_java(module)
    target = module / "target"
    lib = target / ("lib-sql" if sql else "lib")
    parts = [str(target / "tensorflow-ignite-node.jar"), str(lib / "*"), *extra]
    return os.pathsep.join(parts)


def module_jar() -> Path:
    """The tensorflow-ignite module jar (launcher service and agents) for a node's classpath; built when needed."""
    module = java_module_dir()
    build_java(module)
    return module / "target" / "tensorflow-ignite-node.jar"
