"""The model a scoring run applies: loaded once, its inputs and outputs described, its identity hashed.

:class:`ScoringModel` hides the two shapes a trained model comes in:

* a Keras model (an object, or a ``.keras``/``.h5`` file loaded with
  ``keras.saving.load_model``; a file on ``ignite://`` is copied to a local
  temporary file first, since Keras opens archives by local path);
* a SavedModel directory (``tf.saved_model.load``, its ``serving_default``
  signature), local or on ``ignite://`` (TensorFlow reads it through the
  registered filesystem).

Its identity is a URI (the path given, or ``keras:<model name>`` for an
object) and a SHA-256 of its content: the file's bytes, every file of a
SavedModel directory (relative path and bytes, in sorted order), or an
object's architecture (JSON config) and weights.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from ..errors import ModelLoadError

__all__ = ["TensorSpec", "ScoringModel", "load_model", "on_thread"]

T = TypeVar("T")


@dataclass(frozen=True)
class TensorSpec:
    """One model input or output: its name, NumPy dtype name and per-row shape (``None`` = any size)."""

    name: str
    dtype: str
    shape: tuple[int | None, ...]

    def describe(self) -> str:
        dims = ", ".join("?" if d is None else str(d) for d in self.shape)
        return f"{self.dtype}[{dims}]"


@dataclass(eq=False, repr=False)
class ScoringModel:
    """A loaded model: :attr:`inputs`, :attr:`outputs`, :meth:`predict`, :attr:`uri`, :attr:`sha256`.

    ``digest`` may be given as a future: a Keras object's weights are hashed on a thread while
    the run opens its source and output (tens of megabytes take tens of milliseconds);
    :attr:`sha256` waits for it.  ``function`` maps a batch of inputs to the model's outputs.
    """

    uri: str
    digest: "str | Future[str]"
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    function: Callable[[Mapping[str, np.ndarray]], dict[str, np.ndarray]]

    @property
    def sha256(self) -> str:
        """The model's SHA-256 (hex): of its file(s), or of an object's architecture and weights."""
        if isinstance(self.digest, Future):
            self.digest = self.digest.result()
        return self.digest

    @property
    def hash64(self) -> int:
        """The first 64 bits of :attr:`sha256` as a signed integer: the ``model_hash`` field of every entry."""
        return int.from_bytes(bytes.fromhex(self.sha256[:16]), "big", signed=True)

    def predict(self, features: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The model's outputs (name -> array, first axis = rows) for a batch of inputs (name -> array)."""
        return self.function(features)

    def __repr__(self) -> str:
        ins = ", ".join(f"{s.name}: {s.describe()}" for s in self.inputs)
        outs = ", ".join(f"{s.name}: {s.describe()}" for s in self.outputs)
        return f"ScoringModel({self.uri!r}, sha256={self.sha256[:12]}..., inputs=({ins}), outputs=({outs}))"


def load_model(model: Any) -> ScoringModel:
    """A :class:`ScoringModel` from a Keras model object, a Keras file or a SavedModel directory."""
    if isinstance(model, ScoringModel):
        return model
    if isinstance(model, (str, os.PathLike)):
        return _from_path(os.fspath(model))
    if _is_keras_model(model):
        return _from_keras(model, f"keras:{model.name}", _object_digest_later(model))
    raise ModelLoadError(
        f"cannot score with a {type(model).__name__}: pass a Keras model, a .keras file or a SavedModel "
        "directory (local or ignite://)",
        path=repr(model)[:80],
    )


def _is_keras_model(obj: Any) -> bool:
    try:
        import keras
    except ImportError:  # pragma: no cover - Keras comes with TensorFlow
        return False
    return isinstance(obj, keras.Model)


def _from_path(path: str) -> ScoringModel:
    import tensorflow as tf

    try:
        exists = tf.io.gfile.exists(path)
        is_dir = exists and tf.io.gfile.isdir(path)
    except Exception as exc:  # any filesystem failure is "cannot load", with its reason
        raise ModelLoadError(f"cannot load the model at {path!r}: {exc}", path=path) from exc
    if not exists:
        raise ModelLoadError(f"cannot load the model at {path!r}: no such file or directory", path=path)
    try:
        if is_dir:
            return _from_saved_model(path)
        return _from_keras_file(path)
    except ModelLoadError:
        raise
    except Exception as exc:  # Keras and TF raise many types for a bad file
        reason = " ".join(str(exc).split())[:500]
        raise ModelLoadError(f"cannot load the model at {path!r}: {type(exc).__name__}: {reason}", path=path) from exc


def _from_keras_file(path: str) -> ScoringModel:
    import keras
    import tensorflow as tf

    digest = hashlib.sha256()
    suffix = os.path.splitext(path)[1] or ".keras"
    with tempfile.TemporaryDirectory(prefix="tfi-model-") as tmp:
        local = os.path.join(tmp, "model" + suffix)
        with tf.io.gfile.GFile(path, "rb") as src, open(local, "wb") as dst:
            while chunk := src.read(1 << 20):
                digest.update(chunk)
                dst.write(chunk)
        model = keras.saving.load_model(local, compile=False)
    return _from_keras(model, path, digest.hexdigest())


def _from_keras(model: Any, uri: str, sha256: "str | Future[str]") -> ScoringModel:
    try:
        tensors = list(model.inputs)
    except (AttributeError, ValueError) as exc:
        raise ModelLoadError(
            f"the Keras model {uri!r} has no input signature ({exc}); build it with keras.Input(...) so its "
            "input names, dtypes and shapes are known",
            path=uri,
        ) from None
    try:
        structure = model.input
    except (AttributeError, ValueError):
        # A Sequential model loaded from a file knows its input tensors but not its `input`
        # structure until it has been called: a single tensor (or a list of them).
        structure = tensors[0] if len(tensors) == 1 else tensors
    inputs = tuple(TensorSpec(str(t.name), str(t.dtype), tuple(t.shape[1:])) for t in tensors)
    names = list(getattr(model, "output_names", None) or [])
    outs = list(model.outputs)
    if len(names) != len(outs):
        names = [model.layers[-1].name] if len(outs) == 1 else [f"output_{i}" for i in range(len(outs))]
    outputs = tuple(TensorSpec(n, str(t.dtype), tuple(t.shape[1:])) for n, t in zip(names, outs))
    order = [s.name for s in inputs]

    def call(features: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        if isinstance(structure, dict):
            x: Any = {n: features[n] for n in order}
        elif isinstance(structure, (list, tuple)):
            x = [features[n] for n in order]
        else:
            x = features[order[0]]
        y = model.predict_on_batch(x)
        if isinstance(y, dict):
            return {n: np.asarray(y[n]) for n in names}
        if isinstance(y, (list, tuple)):
            return {n: np.asarray(v) for n, v in zip(names, y)}
        return {names[0]: np.asarray(y)}

    return ScoringModel(uri, sha256, inputs, outputs, call)


def _from_saved_model(path: str) -> ScoringModel:
    import tensorflow as tf

    digest = hashlib.sha256()
    files = []
    for root, _dirs, names in tf.io.gfile.walk(path):
        for name in names:
            full = tf.io.gfile.join(root, name)
            files.append((os.path.relpath(full, path) if "://" not in path else full[len(path) :].lstrip("/"), full))
    for rel, full in sorted(files):
        digest.update(rel.encode() + b"\0")
        with tf.io.gfile.GFile(full, "rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
    loaded = tf.saved_model.load(path)
    signature = getattr(loaded, "signatures", {}).get("serving_default")
    if signature is None:
        raise ModelLoadError(
            f"cannot load the model at {path!r}: the SavedModel has no 'serving_default' "
            "signature (export it with model.export(path) or tf.saved_model.save with "
            "signatures=...)",
            path=path,
        )
    in_specs = signature.structured_input_signature[1]
    out_specs = signature.structured_outputs

    def spec(name: str, s: Any) -> TensorSpec:
        return TensorSpec(
            name, s.dtype.as_numpy_dtype.__name__ if s.dtype != tf.string else "object", tuple(s.shape[1:])
        )

    inputs = tuple(spec(n, s) for n, s in sorted(in_specs.items()))
    outputs = tuple(spec(n, s) for n, s in sorted(out_specs.items()))

    def call(features: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        y = signature(**{s.name: tf.constant(features[s.name], dtype=in_specs[s.name].dtype) for s in inputs})
        return {n: y[n].numpy() for n in out_specs}

    return ScoringModel(path, digest.hexdigest(), inputs, outputs, call)


def _object_digest_later(model: Any) -> "Future[str]":
    """:func:`_object_digest` on a daemon thread (hashlib releases the GIL over large buffers)."""
    return on_thread(lambda: _object_digest(model), "predict-model-hash")


def on_thread(fn: Callable[[], T], name: str) -> "Future[T]":
    """``fn()`` on a daemon thread of its own; the future holds its end (result or exception)."""
    f: Future[T] = Future()

    def run() -> None:
        try:
            f.set_result(fn())
        except BaseException as exc:  # noqa: BLE001 - raised to whoever waits on the future
            f.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return f


def _object_digest(model: Any) -> str:
    digest = hashlib.sha256()
    try:
        config = json.dumps(model.get_config(), sort_keys=True, default=str)
    except Exception:  # noqa: BLE001 - subclassed models may not serialize their config
        config = type(model).__qualname__
    digest.update(config.encode())
    for w in model.get_weights():
        a = np.ascontiguousarray(w)
        digest.update(f"{a.dtype.str}{a.shape}".encode())
        digest.update(memoryview(a).cast("B"))  # the same bytes as a.tobytes(), without copying them
    return digest.hexdigest()
