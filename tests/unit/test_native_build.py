"""Building the plugin: stamp-based rebuilds, exported symbols, clear errors."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tensorflow_ignite
from tensorflow_ignite.native import bind_fence, build, loader

# TensorFlow is a requirement of the test environment (not imported here: builds import it).
assert importlib.util.find_spec("tensorflow") is not None, "TensorFlow is not installed"

SRC_ROOT = Path(tensorflow_ignite.__file__).resolve().parents[1]
TF_STATUS_SYMBOLS = {"TF_SetStatus", "TF_GetCode", "TF_Message", "TF_NewStatus", "TF_DeleteStatus"}


def python_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC_ROOT), env.get("PYTHONPATH")]))
    return env


def dynamic_symbols(library: Path, *flags: str) -> set[str]:
    assert shutil.which("nm") is not None, "nm (binutils, installed with g++) is missing"
    out = subprocess.run(
        ["nm", "-D", *flags, str(library)], capture_output=True, text=True, check=True
    ).stdout
    return {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}


@pytest.fixture(scope="module")
def library() -> Path:
    return build.build()  # the package-directory library the other tests load


def test_up_to_date_check_is_fast_and_does_not_import_tensorflow(library) -> None:
    script = (
        "import sys, time\n"
        "from tensorflow_ignite.native import build\n"
        "t = time.monotonic(); path = build.build(); elapsed = time.monotonic() - t\n"
        "print(path, elapsed, 'tensorflow' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], env=python_env(), capture_output=True, text=True, check=True
    ).stdout.split()
    assert Path(out[0]) == library
    assert float(out[1]) < 0.5 and out[2] == "False"

    cli = subprocess.run(
        [sys.executable, "-m", "tensorflow_ignite.native.build"],
        env=python_env(), capture_output=True, text=True, check=True,
    )
    data_library = build.library_path(None, build.DATA_OPS)
    fence_library = bind_fence.fence_path()
    assert cli.stdout.strip().splitlines() == [f"{library} (up to date)", f"{data_library} (up to date)",
                                               f"{fence_library} (up to date)"]
    assert "RuntimeWarning" not in cli.stderr


def test_exports_only_the_two_entry_points(library) -> None:
    assert dynamic_symbols(library, "--defined-only") == {"TF_InitPlugin", "PyInit__tf_ignite_fs"}


def test_bind_fence_exports_bind_alone_and_links_libc_only() -> None:
    path = bind_fence.build()
    assert dynamic_symbols(path, "--defined-only") == {"bind"}
    needed = subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=True).stdout
    libraries = set(re.findall(r"Shared library: \[([^\]]+)\]", needed))
    assert libraries and all(re.match(r"lib(c|dl|pthread|stdc\+\+|gcc_s|m)\.so", lib) for lib in libraries), libraries
    assert "tensorflow" not in needed and "python" not in needed


def test_dataset_op_library_exports_only_its_module_entry_point() -> None:
    path = build.build(library=build.DATA_OPS)
    assert path.name.startswith("_tf_ignite_data")
    assert dynamic_symbols(path, "--defined-only") == {"PyInit__tf_ignite_data"}
    stamp = json.loads((path.parent / build.STAMP_DIR / "_tf_ignite_data.json").read_text())
    assert stamp["inputs"]["source_sha256"] == build.DATA_OPS.source_digest()
    assert "tensorflow/core/framework/dataset.h" in stamp["inputs"]["tensorflow_headers"]


def test_uses_only_tf_status_symbols_that_tensorflow_provides(library) -> None:
    needed = {s for s in dynamic_symbols(library, "--undefined-only") if s.startswith("TF_")}
    assert needed <= TF_STATUS_SYMBOLS  # no TF_VLog or other C API
    framework = build.tensorflow_dir() / "libtensorflow_framework.so.2"
    assert needed <= dynamic_symbols(framework, "--defined-only")


def test_installed_package_builds_only_on_opt_in_and_only_into_the_user_cache(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TF_IGNITE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(build.BUILD_ENV, raising=False)
    package = tmp_path / "installed-package"
    package.mkdir()
    monkeypatch.setattr(build, "package_dir", lambda: package)
    monkeypatch.setattr(build, "source_checkout", lambda: False)
    with pytest.raises(build.NativeBuildError, match=r"no prebuilt .*TF_IGNITE_BUILD_NATIVE=1"):
        loader.locate_library()
    assert not build.user_cache_dir().exists()

    monkeypatch.setenv(build.BUILD_ENV, "1")
    path = loader.locate_library()
    cache_dir = build.user_cache_dir()
    assert path == cache_dir / build.library_filename() and path.is_file()
    assert str(cache_dir).startswith(str(tmp_path / "cache"))
    assert build.is_up_to_date(cache_dir)
    assert list(package.iterdir()) == []  # nothing written into the installation

    started = time.monotonic()
    monkeypatch.delenv(build.BUILD_ENV)
    assert loader.locate_library() == path  # built before: found without the opt-in, stamp check only
    assert time.monotonic() - started < 0.5

    stamp_file = cache_dir / build.STAMP_DIR / "_tf_ignite_fs.json"
    stamp = json.loads(stamp_file.read_text())
    assert stamp["inputs"]["source_sha256"] == build.FS_PLUGIN.source_digest()
    assert "-fvisibility=hidden" in stamp["command"]
    stamp["inputs"]["tensorflow_framework"] = [0, 0]  # as if TensorFlow was upgraded
    stamp_file.write_text(json.dumps(stamp))
    assert not build.is_up_to_date(cache_dir)


def test_missing_compiler_is_a_clear_error(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CXX", "/nonexistent/g++")
    with pytest.raises(build.NativeBuildError, match=r"compiler '/nonexistent/g\+\+' not found"):
        build.build(tmp_path)
    assert build.main(["--output-dir", str(tmp_path)]) == 1


def test_prebuilt_library_is_used_only_for_its_tensorflow_series(library, tmp_path, monkeypatch) -> None:
    package = tmp_path / "wheel-package"
    package.mkdir()
    shutil.copy(library, package / library.name)  # shipped without a stamp
    build.write_build_info(package)
    monkeypatch.setattr(build, "package_dir", lambda: package)
    monkeypatch.setattr(build, "source_checkout", lambda: False)
    monkeypatch.setenv("TF_IGNITE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(build.BUILD_ENV, raising=False)
    monkeypatch.setenv("CXX", "/nonexistent/g++")
    assert build.read_build_info(package)["tensorflow_series"] == build.tensorflow_series() == "2.21"
    assert loader.locate_library() == package / library.name

    info = build.read_build_info(package)
    (package / build.BUILD_INFO).write_text(json.dumps({**info, "tensorflow_series": "2.99"}))
    with pytest.raises(build.NativeBuildError,
                       match=r"compiled against TensorFlow 2\.99\.x but TensorFlow 2\.21 is installed\. "
                             r"Install TensorFlow 2\.99\.x .*TF_IGNITE_BUILD_NATIVE=1"):
        loader.locate_library()
    assert sorted(p.name for p in package.iterdir()) == sorted([library.name, build.BUILD_INFO])


def test_checkout_libraries_find_tensorflow_next_to_the_package(library) -> None:
    rpath = subprocess.run(["readelf", "-d", str(library)], capture_output=True, text=True, check=True).stdout
    assert "$ORIGIN/../../tensorflow" in rpath


def test_compiler_errors_are_reported(tmp_path, monkeypatch) -> None:
    broken = tmp_path / "broken.cc"
    broken.write_text("this is not C++;\n")
    library = dataclasses.replace(build.FS_PLUGIN, source=broken)
    with pytest.raises(build.NativeBuildError, match=r"(?s)compiling broken.cc failed.*error"):
        build.build(tmp_path / "out", library=library)
    assert not list((tmp_path / "out").glob("*.so"))


def test_nested_build_in_one_process_fails_instead_of_deadlocking(tmp_path) -> None:
    # Importing TensorFlow inside a build can trigger filesystem registration,
    # which asks for a build: that must not wait on the lock this process holds.
    from tensorflow_ignite.native import build as native_build

    with native_build.build_lock(tmp_path):
        with pytest.raises(native_build.NativeBuildError, match="being built by this process"):
            with native_build.build_lock(tmp_path):
                pass
    with native_build.build_lock(tmp_path):  # released: usable again
        pass
    # Nor may it build elsewhere: building a wheel's libraries into another directory (against a
    # build environment's TensorFlow), the TensorFlow import must not rebuild the package's own.
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with native_build.build_lock(tmp_path / "a"):
        with pytest.raises(native_build.BuildInProgressError, match="being built by this process"):
            with native_build.build_lock(tmp_path / "b"):
                pass


def test_reading_tensorflow_flags_does_not_register_filesystems() -> None:
    import os
    import subprocess
    import sys

    code = (
        "import tensorflow_ignite.native.build as b, tensorflow_ignite.fs.registration as r;"
        "b.tensorflow_flags(); import os; print(os.environ.get(r.AUTOREGISTER_ENV))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "TF_IGNITE_FS_AUTOREGISTER"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "None"  # the override is undone afterwards


def test_a_fresh_build_warns_of_nothing_and_leaves_the_dataset_op_loadable() -> None:
    # `make demo` on a fresh clone builds the libraries first; the build imports TensorFlow
    # (for its flags) with the package's import hook installed, which must neither warn that
    # the op "is being built by this process" nor leave the op unavailable afterwards.
    code = ("import tensorflow_ignite.native.build as b; b.main(['--force']);"
            "from tensorflow_ignite.native import data_source; print('op available:', data_source.available())")
    proc = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", code], capture_output=True,
                          text=True, timeout=600, env=python_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "could not load" not in proc.stderr and "falls back" not in proc.stderr, proc.stderr[-3000:]
    assert proc.stdout.strip().splitlines()[-1] == "op available: True"


def test_the_build_and_the_registration_name_the_same_switch() -> None:
    # native/ does not import fs/, so the variable's name is held by both.
    from tensorflow_ignite.fs import registration
    from tensorflow_ignite.native import build

    assert build.AUTOREGISTER_ENV == registration.AUTOREGISTER_ENV
