"""Class-data-sharing archives for local nodes: one recording node per classpath, archives moved in whole."""

from __future__ import annotations

from pathlib import Path

import pytest

from tensorflow_ignite.local.cds import CDS_DIR_VARIABLE, cds_flags


@pytest.fixture
def jar(tmp_path: Path) -> Path:
    path = tmp_path / "lib" / "node.jar"
    path.parent.mkdir()
    path.write_bytes(b"jar")
    return path


def _value(flags: list[str], prefix: str) -> str:
    found = [f.split("=", 1)[1] for f in flags if f.startswith(prefix + "=")]
    assert len(found) == 1, flags
    return found[0]


def test_unset_means_no_flags(jar: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CDS_DIR_VARIABLE, raising=False)
    assert cds_flags("java", str(jar), "Main") == []


def test_one_node_records_the_others_start_without_until_the_archive_is_whole(
    jar: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CDS_DIR_VARIABLE, str(tmp_path / "cds"))
    first = cds_flags("java", str(jar), "Main")
    assert "-XX:+RecordDynamicDumpInfo" in first
    archive = Path(_value(first, "-Dtensorflow_ignite.cds.archive"))
    assert archive.parent == tmp_path / "cds" and not archive.exists()
    assert cds_flags("java", str(jar), "Main") == []  # one recorder per classpath
    archive.write_bytes(b"archive")  # what dump_recorded moves into place whole
    later = cds_flags("java", str(jar), "Main")
    assert _value(later, "-XX:SharedArchiveFile") == str(archive)
    assert "-XX:+RecordDynamicDumpInfo" not in later


def test_another_main_class_or_a_rebuilt_jar_is_another_archive(
    jar: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CDS_DIR_VARIABLE, str(tmp_path / "cds"))
    names = set()
    for main, content in [("Main", b"jar"), ("Other", b"jar"), ("Main", b"rebuilt jar")]:
        jar.write_bytes(content)
        # "lib/*" (how launcher classpaths name a directory of jars) counts each jar in it.
        flags = cds_flags("java", f"{jar.parent}/*", main)
        names.add(_value(flags, "-Dtensorflow_ignite.cds.archive"))
    assert len(names) == 3
