"""``ignite-tf --version``: this package, TensorFlow, the thin-client protocol, the bundled Ignite."""

from __future__ import annotations

import subprocess
import sys

import pytest

import tensorflow_ignite
from tensorflow_ignite.cli.main import main


def test_version_names_package_tensorflow_protocol_and_bundled_ignite(capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        f"tensorflow-ignite {tensorflow_ignite.__version__}",
        "TensorFlow 2.21.0 (native libraries built from this source checkout)",
        "thin-client protocol 1.7.0 (accepts down to 1.0.0)",
        "local nodes: Apache Ignite 2.18.0 (SQL nodes: 2.17.0 with H2)",
    ]


def test_version_does_not_import_tensorflow() -> None:
    code = ("import sys; from tensorflow_ignite.cli.main import main\n"
            "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
            "assert 'tensorflow.python' not in sys.modules, 'TensorFlow was imported'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("tensorflow-ignite ")
