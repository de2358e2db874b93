"""The build backend of tensorflow-ignite: setuptools', plus the binaries a working install needs.

Every wheel built from a source tree -- ``pip install .``, ``pip install git+...``,
``pip wheel .``, ``python -m build`` (through the sdist) and ``make wheel``
(``scripts/build-wheel.sh``) -- carries what the package needs at run time and
cannot make there:

* the native libraries (the ``ignite://`` plugin and the ``IgniteDataset`` op),
  compiled by ``python -m tensorflow_ignite.native.build --wheel`` against the
  TensorFlow of the build environment: the one the package declares (its
  ``[tf-cpu]`` requirement, added to the build requirements of a wheel), with
  ``_build_info.json`` naming its series, relocatable as in a published wheel;
* the jars (node jar, Ignite classpaths) of ``python -m tensorflow_ignite.local.java``
  (``make java``: Maven in ``java/``), or the jars already in the package when
  the tree has no ``java/`` module (``scripts/build-wheel.sh`` stages them).

Both are added by :class:`BuildPy` (``setup.py``'s ``build_py``) to the build
directory, never into the source tree's package.  When a tool is missing the
build stops before anything is downloaded (:func:`get_requires_for_build_wheel`)
with :func:`missing_tools`' list and what to run instead; a failing compile or
Maven run stops it with the tool's output.  No wheel without its binaries.

Editable installs (``pip install -e .``, ``make setup``) and sdists are
setuptools' own: a checkout builds its native libraries itself at run time, and
the sdist is the source a wheel is built from (``MANIFEST.in``: the Java
module in, built binaries out).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import tomllib
from pathlib import Path
from typing import NoReturn

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (  # noqa: F401  (PEP 517/660 hooks used as setuptools has them)
    build_editable,
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)
from setuptools.command.build_py import build_py as _build_py

__all__ = [
    "BuildPy",
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "missing_tools",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
    "tensorflow_requirement",
]

#: The source tree: this file lives in its ``build_backend/``.
ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "tensorflow_ignite"
#: What a working installation's package holds besides Python (checked after the build).
NATIVE_MODULES = ("_tf_ignite_fs", "_tf_ignite_data")
BUILD_INFO = "_build_info.json"
JARS = ("tensorflow-ignite-node.jar", "lib", "lib-sql")

_WHAT_INSTEAD = (
    "Install the prebuilt wheel instead (`pip install \"tensorflow-ignite[tf]\"`), or, in a "
    "checkout, run `make wheel` (its `make setup` installs g++, a JDK and Maven on Debian/Ubuntu) "
    "and install the wheel it writes to dist/."
)


def _refuse(message: str) -> NoReturn:
    """Stop the build: the frontend (pip, build) shows ``message`` as the hook's error output."""
    raise SystemExit(f"error: tensorflow-ignite cannot be built from this source tree: {message}\n{_WHAT_INSTEAD}")


# ------------------------------------------------------------------ what a build needs
def tensorflow_requirement(root: Path = ROOT) -> str:
    """The TensorFlow a wheel is compiled against: the package's ``[tf-cpu]`` requirement.

    The CPU build has the headers and framework library of the full one (the
    published wheels are compiled against it too) at a third of the download.
    """
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    for requirement in project["optional-dependencies"]["tf-cpu"]:
        if requirement.replace("_", "-").startswith("tensorflow-cpu"):
            return requirement
    raise RuntimeError("pyproject.toml's [tf-cpu] extra names no tensorflow-cpu requirement")


def _on_path(command: str) -> bool:
    return shutil.which(command) is not None


def missing_tools(root: Path = ROOT) -> list[str]:
    """The tools a wheel build of ``root`` needs and this machine lacks, each with how to get it.

    A C++ compiler (``$CXX``, else ``g++``: the rule of ``tensorflow_ignite.native.build``) and
    Python's headers, always; Maven and a JDK when the tree has the ``java/`` module to build.
    """
    missing = []
    compiler = shlex.split(os.environ.get("CXX") or "g++")
    if not compiler or not _on_path(compiler[0]):
        missing.append(f"a C++17 compiler ({compiler[0] if compiler else '$CXX'!r} not found: "
                       "`apt-get install g++`, or set $CXX)")
    include = Path(sysconfig.get_paths()["include"])
    if not (include / "Python.h").is_file():
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        missing.append(f"Python's headers (no Python.h in {include}: `apt-get install python{version}-dev`)")
    if (root / "java" / "pom.xml").is_file():
        if not _on_path("mvn"):
            missing.append("Maven (`mvn` not found: `apt-get install maven`)")
        java_home = os.environ.get("JAVA_HOME")
        if not (java_home and os.access(Path(java_home) / "bin" / "javac", os.X_OK)) and not _on_path("javac"):
            missing.append("a JDK 17 (`javac` not found: `apt-get install openjdk-17-jdk-headless`)")
    return missing


def _check_tools(root: Path = ROOT) -> None:
    missing = missing_tools(root)
    if missing:
        _refuse("a wheel of it compiles the ignite:// plugin and the IgniteDataset op against "
                "TensorFlow and builds the node jars with Maven, and this machine lacks "
                + "; ".join(missing) + ".")


# ------------------------------------------------------------------ PEP 517 hooks
def get_requires_for_build_wheel(config_settings: dict[str, str | list[str]] | None = None) -> list[str]:
    """setuptools' requirements plus the TensorFlow to compile against; refuses first if a tool is missing."""
    _check_tools()
    return [*_setuptools.get_requires_for_build_wheel(config_settings), tensorflow_requirement()]


def build_wheel(wheel_directory: str, config_settings: dict[str, str | list[str]] | None = None,
                metadata_directory: str | None = None) -> str:
    """setuptools' wheel, whose ``build_py`` (:class:`BuildPy`) adds the native libraries and jars."""
    _check_tools()
    return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)


# ------------------------------------------------------------------ the build step
def _run(what: str, args: list[str], cwd: Path, env: dict[str, str]) -> str:
    """Run one of the package's build commands in a child Python; its output, or refuse with it."""
    proc = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-40:])
        _refuse(f"{what} failed (`python {shlex.join(args)}`, exit {proc.returncode}):\n{tail}\n")
    return proc.stdout


class BuildPy(_build_py):
    """setuptools' ``build_py`` that also puts the native libraries and the jars into the build directory.

    Skipped in editable mode: a checkout builds (and rebuilds) its own native
    libraries next to their sources at run time, and ``make java`` stages its jars.
    """

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        package = Path(self.build_lib) / PACKAGE
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3",
               "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}
        self._native_libraries(package / "native", env)
        self._jars(package / "jars", env)

    def _native_libraries(self, native: Path, env: dict[str, str]) -> None:
        # Built aside (the builder keeps its stamps and lock there), then only the
        # libraries and _build_info.json are copied in, replacing whatever package
        # data brought along from the tree (a checkout's own, non-relocatable builds).
        for stale in [*native.glob("*.so"), native / BUILD_INFO]:
            stale.unlink(missing_ok=True)
        with tempfile.TemporaryDirectory(prefix="tf-ignite-native-") as out:
            _run("compiling the native libraries against the build environment's TensorFlow",
                 ["-m", "tensorflow_ignite.native.build", "--wheel", "--force", "--output-dir", out],
                 cwd=Path(out), env=env)
            built = Path(out)
            suffix = sysconfig.get_config_var("EXT_SUFFIX")
            for module in NATIVE_MODULES:
                shutil.copy2(built / f"{module}{suffix}", native / f"{module}{suffix}")
            shutil.copy2(built / BUILD_INFO, native / BUILD_INFO)
            # The launcher's bind fence (libc only, no ABI tag: tensorflow_ignite/native/bind_fence.py).
            shutil.copy2(built / "_tf_ignite_bind.so", native / "_tf_ignite_bind.so")
        self.announce(f"tensorflow-ignite: native libraries built into {native}", level=2)

    def _jars(self, jars: Path, env: dict[str, str]) -> None:
        module = ROOT / "java"
        if (module / "pom.xml").is_file():
            _run("building the node jars with Maven (`make java`)",
                 ["-m", "tensorflow_ignite.local.java", "--dest", str(jars)],
                 cwd=ROOT, env={**env, "TF_IGNITE_JAVA_DIR": str(module)})
        missing = [name for name in JARS if not (jars / name).exists()]
        if missing:
            _refuse(f"the package has no {missing[0]} in {PACKAGE}/jars and the tree no java/ module "
                    "to build it from (run `make java` in the checkout it came from).")
        self.announce(f"tensorflow-ignite: jars in {jars}", level=2)
