"""The jars local nodes run from: packaged under ``tensorflow_ignite/jars``, copied from ``java/``."""

from __future__ import annotations

import os

import pytest

from tensorflow_ignite.errors import NodeError
from tensorflow_ignite.local import java


def test_classpath_and_module_jar_come_from_the_package() -> None:
    jars = java.jars_dir()
    assert java.module_jar() == jars / "tensorflow-ignite-node.jar"
    assert java.launcher_classpath().split(os.pathsep) == [str(jars / "tensorflow-ignite-node.jar"),
                                                           str(jars / "lib" / "*")]
    assert java.launcher_classpath(sql=True, extra=("x.jar",)).split(os.pathsep)[1:] == [
        str(jars / "lib-sql" / "*"), "x.jar"]
    assert any((jars / "lib").glob("ignite-core-2.18.0.jar"))
    assert any((jars / "lib-sql").glob("ignite-indexing-2.17.0.jar"))


def test_stage_jars_copies_exactly_the_built_jars(tmp_path) -> None:
    dest = tmp_path / "jars"
    (dest / "lib").mkdir(parents=True)
    (dest / "lib" / "ignite-core-2.0.0.jar").write_bytes(b"stale")
    assert java.stage_jars(dest=dest) == dest
    target = java.java_module_dir() / "target"
    for name in ("lib", "lib-sql"):
        assert sorted(p.name for p in (dest / name).iterdir()) == sorted(p.name for p in (target / name).glob("*.jar"))
    assert (dest / "tensorflow-ignite-node.jar").read_bytes() == (target / "tensorflow-ignite-node.jar").read_bytes()
    assert not [p for p in dest.iterdir() if p.name.startswith(".")]  # no partial copies left


def test_an_installed_package_without_jars_says_how_to_fix_it(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TF_IGNITE_JAVA_DIR", str(tmp_path / "no-java-module"))  # no java/ module: installed
    monkeypatch.setattr(java, "jars_dir", lambda: tmp_path / "jars")
    with pytest.raises(NodeError, match=r"no tensorflow-ignite-node.jar under .*reinstall"):
        java.launcher_classpath()


def _fake_java(directory, version: str):  # type: ignore[no-untyped-def]
    directory.mkdir(parents=True)
    exe = directory / "java"
    exe.write_text(f'#!/bin/sh\necho \'openjdk version "{version}" 2024-01-01\' >&2\n')
    exe.chmod(0o755)
    return exe


def test_java_older_than_17_is_passed_over_and_named(tmp_path, monkeypatch) -> None:
    old = _fake_java(tmp_path / "old" / "bin", "11.0.2")
    new = _fake_java(tmp_path / "new" / "bin", "17.0.15")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "old"))
    monkeypatch.setenv("PATH", str(new.parent))
    assert java.java_runtime() == java.JavaRuntime(str(new), 17)  # JAVA_HOME's Java 11 skipped
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    with pytest.raises(NodeError, match=rf"need Java 17 or newer; found only {old} \(Java 11\)"):
        java.java_runtime()
    monkeypatch.delenv("JAVA_HOME")
    with pytest.raises(NodeError, match="Java was not found: local Ignite nodes need a Java 17 runtime"):
        java.java_runtime()
