"""atheris harness: every protocol decoder, fed coverage-guided mutations.

Run a bounded session (the unit test ``tests/unit/test_fuzz_atheris.py`` does)::

    python fuzz/fuzz_protocol.py -runs=50000 -max_total_time=60 [CORPUS_DIR]

Any exception other than ``ProtocolError``/``SchemaError`` is a crash: atheris
prints the input and the traceback and exits non-zero.  The data segment is
capped (``$FUZZ_MEMORY_MB`` above the start-up size, default 512), so an
allocation sized by a hostile length is a crash too (``MemoryError``), and
libFuzzer's ``-timeout`` (10 s per input unless given) turns a hang into one.
"""

from __future__ import annotations

import importlib
import os
import resource
import sys

import atheris

#: The module with ``run_target``, ``ALLOWED_ERRORS`` and ``SEEDS`` (the tests point
#: this at a deliberately broken decoder to prove that the harness catches bugs).
TARGETS_MODULE = os.environ.get("FUZZ_TARGETS", "tensorflow_ignite.protocol.fuzz_targets")

with atheris.instrument_imports(include=["tensorflow_ignite.protocol", TARGETS_MODULE]):
    _targets = importlib.import_module(TARGETS_MODULE)
ALLOWED_ERRORS = _targets.ALLOWED_ERRORS
SEEDS = _targets.SEEDS
run_target = _targets.run_target


def test_one_input(data: bytes) -> None:
    try:
        run_target(data)
    except ALLOWED_ERRORS:
        pass


def _limit_memory(extra_mb: int) -> None:
    """Cap the data segment at what is mapped now plus ``extra_mb``.

    A decoder that allocates what a hostile length claims then fails with
    ``MemoryError``, which is not an allowed error, so atheris reports it.  This
    replaces libFuzzer's ``-rss_limit_mb``: that one reads the *peak* RSS, which
    Linux carries over ``exec`` from the parent (a pytest process that loaded
    TensorFlow starts the harness "over the limit").
    """
    with open("/proc/self/status") as f:
        data_kb = next(int(line.split()[1]) for line in f if line.startswith("VmData:"))
    limit = (data_kb << 10) + (extra_mb << 20)
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))


def main(argv: list[str]) -> None:
    args = list(argv)
    _limit_memory(int(os.environ.get("FUZZ_MEMORY_MB", "512")))
    # Memory is bounded above; a slow input (a hang) fails after -timeout seconds.
    if not any(a.startswith("-rss_limit_mb=") for a in args):
        args.append("-rss_limit_mb=0")
    if not any(a.startswith("-timeout=") for a in args):
        args.append("-timeout=10")
    corpus = [a for a in args[1:] if not a.startswith("-")]
    for directory in corpus:
        # Seed an empty corpus directory with valid messages of every kind.
        import pathlib

        path = pathlib.Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        if not any(path.iterdir()):
            for i, seed in enumerate(SEEDS):
                (path / f"seed-{i:03d}").write_bytes(seed)
    atheris.Setup(args, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
