"""``ignite-tf`` keeps TensorFlow's native start-up chatter out of its output (unless ``-v``)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tensorflow_ignite.native.quiet import is_chatter

# Lines as TensorFlow 2.21 prints them on import.
CHATTER = [
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "I0000 00:00:1795573175.438469    2745 cpu_feature_guard.cc:227] This TensorFlow binary is optimized to use "
    "available CPU instructions in performance-critical operations.",
    "To enable the following instructions: AVX2 AVX512F FMA, in other operations, rebuild TensorFlow with the "
    "appropriate compiler flags.",
    "I0000 00:00:1795573176.704923    2745 port.cc:153] oneDNN custom operations are on.",
    "W0000 00:00:1795573176.704923    2745 some_file.cc:12] a warning",
]
NOT_CHATTER = [
    "E0000 00:00:1795573176.704923    2745 port.cc:153] an error",
    "Traceback (most recent call last):",
    "ignite-tf: error: cache 'x' does not exist",
    "",
]


def test_chatter_lines_are_recognised() -> None:
    assert all(is_chatter(line) for line in CHATTER)
    assert not any(is_chatter(line) for line in NOT_CHATTER)


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300, check=False)


def test_tensorflow_import_is_quiet_and_other_output_is_kept() -> None:
    loud = _run("""
        import tensorflow as tf
        tf.constant(1)
    """)
    quiet = _run("""
        import os, sys
        from tensorflow_ignite.native.quiet import quiet_tensorflow_import
        quiet_tensorflow_import()
        import tensorflow as tf
        os.write(2, b"after import\\n")
        assert int(tf.constant(1) + 1) == 2
    """)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr.splitlines() == ["after import"]
    # The filter had something to remove: the same import without it is noisy here.
    assert any(is_chatter(line) for line in loud.stderr.splitlines()), loud.stderr


def test_errors_written_during_the_import_are_replayed() -> None:
    proc = _run("""
        import os, sys, types, importlib.machinery
        from tensorflow_ignite.native import quiet
        # A stand-in 'tensorflow' that writes one chatter line and one real error to fd 2.
        class Loader:
            def create_module(self, spec): return None
            def exec_module(self, module):
                os.write(2, b"I0000 00:00:1.5    1 port.cc:1] chatter\\nE: something real\\n")
        class Finder:
            def find_spec(self, name, path=None, target=None):
                if name == "tensorflow":
                    return importlib.machinery.ModuleSpec(name, Loader())
        sys.meta_path.append(Finder())
        importlib.machinery.PathFinder.find_spec = classmethod(lambda cls, name, *a: Finder().find_spec(name))
        quiet.quiet_tensorflow_import()
        import tensorflow
    """)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == ["E: something real"]
