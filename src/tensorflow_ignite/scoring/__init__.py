"""Scoring data where it lives: ``tensorflow_ignite.predict`` applies a model to a cache or SQL query and
writes one prediction per key into an output cache, exactly once and resumable.

One module per idea: :mod:`.model` (loading, inputs and outputs, identity),
:mod:`.source` (what is read, by partition), :mod:`.signature` (model inputs
from source fields, checked), :mod:`.output` (the output cache and its
batched, routed writes), :mod:`.ledger` (completion records),
:mod:`.api` (``predict``, ``PredictResult``), :mod:`.cluster` (the launcher form:
``submit_predict``) and :mod:`.worker` (its workers' entry point).  Importing it imports
TensorFlow.
"""

from .api import PredictResult, predict
from .cluster import submit_predict
from .ledger import LEDGER_CACHE, ModelRecord, models_of, recorded_units
from .output import KEY, MODEL_HASH

__all__ = [
    "predict",
    "submit_predict",
    "PredictResult",
    "models_of",
    "recorded_units",
    "ModelRecord",
    "LEDGER_CACHE",
    "KEY",
    "MODEL_HASH",
]
