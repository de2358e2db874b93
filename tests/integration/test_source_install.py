"""Installing from source: a standard PEP 517 build gives a working install, or none.

``pip install <checkout>`` into a fresh virtualenv outside the checkout builds the
wheel through the project's build backend (``build_backend/``) in pip's isolated
build environment -- the native libraries compiled against the TensorFlow the
package declares, the jars of ``java/`` -- and the installed package then starts a
node with its own jars (``ignite-tf node start``), reads the node's cache through
the native ``IgniteDataset`` op (not ``from_generator``) and uses ``ignite://``
through ``tf.io.gfile`` and a checkpoint (``scripts/wheel_smoke.py``), compiling
nothing at run time.  Without a compiler the same command fails before it
downloads anything, naming what is missing and ``make wheel``.  The sdist holds
what such a build needs (the backend, the native and Java sources) and no binary.

TensorFlow is downloaded once, into pip's build environment; the fresh
virtualenv sees this environment's packages (TensorFlow among them, not this
environment's tensorflow-ignite) through a ``.pth`` file rather than
downloading TensorFlow a second time.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tensorflow_ignite.local.cluster import find_free_port_block

ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"


def _clean_env(tmp: Path, **extra: str) -> dict[str, str]:
    """This process's environment without what points into the checkout or this virtualenv."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "TF_IGNITE_JAVA_DIR", "PYTHONHOME")}
    env.update(TF_IGNITE_CACHE_DIR=str(tmp / "user-cache"), IGNITE_TF_HOME=str(tmp / "home"),
               TF_CPP_MIN_LOG_LEVEL="2", **extra)
    return env


def _run(args: list[str], tmp: Path, timeout: float, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=tmp, env=_clean_env(tmp, **extra), capture_output=True, text=True,
                          timeout=timeout, check=False)


def _fresh_venv(tmp: Path) -> Path:
    """A virtualenv outside the checkout; returns its python."""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    return venv / "bin" / "python"


def _site_packages(python: Path) -> Path:
    return Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())


def _share_this_environments_packages(python: Path, tmp: Path) -> None:
    """Make this environment's packages (TensorFlow...) visible to ``python``'s virtualenv, minus ours.

    A directory of links to every entry of this site-packages except tensorflow-ignite,
    the editable-install hooks, pip and setuptools, named by a ``.pth`` file.
    """
    view = tmp / "shared-site-packages"
    view.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if entry.suffix == ".pth" or entry.name.startswith(
                ("tensorflow_ignite", "__editable__", "_distutils_hack", "pip", "setuptools")):
            continue
        (view / entry.name).symlink_to(entry)
    (_site_packages(python) / "shared-site-packages.pth").write_text(f"{view}\n")


def _pip(python: Path, *args: str) -> list[str]:
    """This environment's pip acting on ``python``'s virtualenv (it never caches a directory's wheel)."""
    return [sys.executable, "-m", "pip", "--python", str(python), *args]


@pytest.fixture
def installed(tmp_path: Path) -> Iterator[Path]:
    """``pip install <checkout>[tf-cpu]`` into a fresh virtualenv outside the checkout; its bin/."""
    python = _fresh_venv(tmp_path)
    _share_this_environments_packages(python, tmp_path)
    pip = _run(_pip(python, "install", "--disable-pip-version-check", f"{ROOT}[tf-cpu]"), tmp_path, timeout=1500)
    output = pip.stdout + pip.stderr
    assert pip.returncode == 0, output[-6000:]
    assert "Building wheel for tensorflow-ignite" in output, output[-3000:]
    yield python.parent


@pytest.mark.slow
@pytest.mark.timeout(1800)
# Under --long only (~100 s: TensorFlow downloaded into pip's build environment); every CI run installs
# the built wheel into a fresh virtualenv outside the checkout and runs the same smoke script.
@pytest.mark.long_only("test_wheel.py::test_wheel_installs_and_runs_outside_the_checkout_without_a_compiler")
def test_pip_install_from_the_checkout_gives_a_working_install(installed: Path, tmp_path: Path) -> None:
    site = _site_packages(installed / "python")
    version = _run([str(installed / "ignite-tf"), "--version"], tmp_path, timeout=300)
    assert version.returncode == 0, version.stdout + version.stderr
    assert re.search(r"^TensorFlow 2\.21\..*built for TensorFlow 2\.21\.x", version.stdout, re.MULTILINE), version.stdout

    port = find_free_port_block(HOST, 1)
    work_dir = tmp_path / "nodes"
    ignite_tf = str(installed / "ignite-tf")
    started = _run([ignite_tf, "node", "start", "--work-dir", str(work_dir), "--client-port", str(port),
                    "--heap-mb", "512", "--region-mb", "256"], tmp_path, timeout=300)
    try:
        # The node runs on the installed package's own jars.
        assert started.returncode == 0, started.stdout + started.stderr
        smoke = _run([str(installed / "python"), str(ROOT / "scripts" / "wheel_smoke.py"), str(port)],
                     tmp_path, timeout=600)
        output = smoke.stdout + smoke.stderr
        assert smoke.returncode == 0, output[-6000:]
        assert f"IgniteDataset: 1000 rows through the prebuilt op {site}/tensorflow_ignite/native/_tf_ignite_data" \
            in smoke.stdout, output[-3000:]
        assert "tf.io.gfile: 256000 bytes written, listed and read back" in smoke.stdout, output[-3000:]
        assert re.search(rf"ignite:// checkpoint: .* through {re.escape(str(site))}/tensorflow_ignite/native/"
                         r"_tf_ignite_fs", smoke.stdout), output[-3000:]
    finally:
        stopped = _run([ignite_tf, "node", "stop", "--work-dir", str(work_dir)], tmp_path, timeout=300)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    # Built at install time, so nothing was compiled at run time.
    assert not (tmp_path / "user-cache").exists(), list((tmp_path / "user-cache").rglob("*"))[:5]


@pytest.mark.timeout(600)
def test_a_build_without_a_compiler_stops_before_downloading_and_says_what_to_run(tmp_path: Path) -> None:
    out = tmp_path / "wheels"
    built = _run([sys.executable, "-m", "pip", "wheel", "--disable-pip-version-check", "--no-deps",
                  "-w", str(out), str(ROOT)], tmp_path, timeout=600, CXX=str(tmp_path / "no-such-c++"))
    output = built.stdout + built.stderr
    assert built.returncode != 0, output[-3000:]
    assert "tensorflow-ignite cannot be built from this source tree" in output, output[-3000:]
    assert f"a C++17 compiler ('{tmp_path / 'no-such-c++'}' not found" in output, output[-3000:]
    assert "`make wheel`" in output and "pip install \"tensorflow-ignite[tf]\"" in output, output[-3000:]
    # Refused while getting the build requirements: TensorFlow was never fetched.
    assert "Getting requirements to build wheel did not run successfully" in output, output[-3000:]
    assert not out.exists() or not list(out.iterdir())


@pytest.mark.timeout(600)
def test_the_sdist_holds_the_sources_a_wheel_is_built_from_and_no_binary(tmp_path: Path) -> None:
    python = _fresh_venv(tmp_path)
    setup = _run(_pip(python, "install", "--disable-pip-version-check", "setuptools>=77", "wheel"),
                 tmp_path, timeout=600)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    out = tmp_path / "sdist"
    out.mkdir()
    # The PEP 517 hook as a frontend calls it: in the source tree, the backend's directory on sys.path.
    built = subprocess.run(
        [str(python), "-c", "import sys; sys.path.insert(0, 'build_backend'); import tensorflow_ignite_build as b; "
                            f"print(b.build_sdist({str(out)!r}))"],
        cwd=ROOT, env=_clean_env(tmp_path), capture_output=True, text=True, timeout=600, check=False)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    with tarfile.open(out / built.stdout.strip().splitlines()[-1]) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    for needed in ("pyproject.toml", "setup.py", "build_backend/tensorflow_ignite_build.py", "java/pom.xml",
                   "java/sql-runtime/pom.xml", "java/src/main/java/org/tensorflow/ignite/NodeLauncher.java",
                   "src/tensorflow_ignite/native/tf_ignite_data.cc", "src/tensorflow_ignite/native/tf_ignite_fs.cc",
                   "src/tensorflow_ignite/native/build.py"):
        assert needed in names, needed
    binaries = sorted(n for n in names if n.endswith((".so", ".jar", "_build_info.json")) or "/jars/" in n)
    assert binaries == [], binaries[:10]
