"""A bounded atheris session over every protocol decoder (``fuzz/fuzz_protocol.py``).

Coverage-guided mutation finds what hand-written cases miss (it found that a
partition map naming partition 2**29 made the client allocate a 4 GiB table).
The run is capped in executions and seconds; the harness caps the data segment
(an allocation sized by a hostile length fails with ``MemoryError``, which is a
crash) and libFuzzer's per-input timeout turns a hang into one.  Two runs over
deliberately broken decoders prove the harness reports both kinds of bug.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HARNESS = Path(__file__).resolve().parents[2] / "fuzz" / "fuzz_protocol.py"
RUNS = 100_000


def _fuzz(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, Path]:
    corpus = tmp_path / "corpus"
    proc = subprocess.run(
        [sys.executable, str(HARNESS), "-timeout=10", "-max_len=4096", f"-artifact_prefix={tmp_path}/",
         *args, str(corpus)],
        capture_output=True, text=True, timeout=240, env={**os.environ, **(env or {})},
    )
    return proc.returncode, proc.stdout + proc.stderr, corpus


@pytest.mark.timeout(300)
def test_atheris_session_finds_no_crash(tmp_path: Path) -> None:
    rc, out, corpus = _fuzz(tmp_path, f"-runs={RUNS}", "-max_total_time=60")
    assert rc == 0, f"atheris found a failing input:\n{out[-4000:]}"
    # Either all executions ran or the time cap ended the session; both print DONE.
    assert "DONE" in out and "Done " in out, out[-2000:]
    assert not list(tmp_path.glob("crash-*")) and not list(tmp_path.glob("oom-*"))
    # It started from the seed corpus (valid messages of every decoder family).
    assert len(list(corpus.iterdir())) >= 10


_BROKEN = '''
from tensorflow_ignite.errors import ProtocolError

ALLOWED_ERRORS = (ProtocolError,)
SEEDS = (b"fine", {seed!r})


def run_target(data: bytes) -> None:
    if data.startswith(b"idx"):
        raise IndexError("a decoder let IndexError escape")
    if data.startswith(b"big"):
        # Trusts a length from the input: 2 GiB claimed, 2 GiB allocated.
        bytearray(int.from_bytes(data[3:7], "little"))
    raise ProtocolError("malformed")
'''


@pytest.mark.parametrize("seed,expected", [
    (b"idx", "IndexError: a decoder let IndexError escape"),
    (b"big\xff\xff\xff\x7f", "MemoryError"),
])
def test_harness_reports_escaping_errors_and_huge_allocations(tmp_path: Path, seed: bytes, expected: str) -> None:
    module = tmp_path / "broken_targets.py"
    module.write_text(textwrap.dedent(_BROKEN.format(seed=seed)))
    env = {"FUZZ_TARGETS": "broken_targets", "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    rc, out, _ = _fuzz(tmp_path, "-runs=1000", "-max_total_time=30", env=env)
    assert rc != 0, out[-2000:]
    assert expected in out, out[-3000:]
