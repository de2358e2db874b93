"""Run at start-up by every Python process of a launcher job.

The worker shim puts this directory first on ``PYTHONPATH``, so the training
script, and any Python process it starts, imports ``tensorflow_ignite`` before
its own code runs.  That import does not import TensorFlow; it arms the hook that
registers the ``ignite://`` filesystem the moment TensorFlow is imported, so
``ignite:///tf-jobs/JOB`` checkpoints work even in a script that never imports
``tensorflow_ignite`` itself (a plain tf_keras ``BackupAndRestore``, say).

A ``sitecustomize`` that this one shadows (later on ``sys.path``) still runs.
"""

import importlib.util
import os
import sys

try:
    import tensorflow_ignite  # noqa: F401  (registration hook for ignite:// and igfs://)
except Exception as exc:  # noqa: BLE001 - a broken hook must not stop the worker; say why instead
    print(f"tf-ignite: ignite:// registration hook not installed: {exc}", file=sys.stderr)

_here = os.path.dirname(os.path.abspath(__file__))
for _entry in sys.path:
    _candidate = os.path.join(os.path.abspath(_entry or os.curdir), "sitecustomize.py")
    if os.path.dirname(_candidate) == _here or not os.path.isfile(_candidate):
        continue
    _spec = importlib.util.spec_from_file_location("_tf_ignite_chained_sitecustomize", _candidate)
    if _spec is not None and _spec.loader is not None:
        _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
    break
