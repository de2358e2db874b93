"""A ``tf.data`` source that pulls elements from a Python iterator, natively.

:func:`python_source` is what ``tf.data.Dataset.from_generator`` does for
IgniteDataset, with less TensorFlow machinery around each epoch and element:

* ``from_generator`` builds its iterator from three ``py_func`` functions in a
  ``flat_map``; TensorFlow instantiates (and runs graph passes over) them again
  for every iterator, i.e. every epoch: 20-75 ms on a 2-core machine before the
  first element.  The ``IgnitePyDataset`` op (``tf_ignite_data.cc``) calls the
  Python iterator directly: ~1 ms.
* each element of ``from_generator`` travels through ``EagerPyFunc`` (NumPy ->
  EagerTensor -> Tensor); the op wraps the NumPy arrays of an element as tensors
  without copying them when their data is 64-byte aligned (which the dataset's
  decoder arranges) and copies them otherwise.

How an iterator finds its Python code: every source gets an id; the op keeps
the id (an attribute, so tf.data's graph rewrites recreate the same dataset)
and, when TensorFlow creates an iterator, calls this module's dispatcher with
it, which starts the factory's generator.  The registry entry lives as long as
the Python dataset object.

An adopted array stays referenced by its tensor; when TensorFlow frees the
tensor the reference is queued and dropped by the next thread that holds the
GIL anyway (the next element's ``GetNext`` or :func:`release_pending`): taking
the GIL in TensorFlow's threads just to drop a reference would stall them.

The factory's generator must not change an array after yielding it (the
tensors may be that memory; IgniteDataset's reader reuses a buffer only once
nothing refers to it -- :class:`tensorflow_ignite.protocol.pool.BufferPool`).

Only dense ``tf.TensorSpec`` elements (numbers, booleans, strings) are
supported; :func:`supports` says whether a signature qualifies.  Errors from
the Python iterator reach TensorFlow as the ``tf.errors`` class the ignite://
plugin uses for them (:func:`tensorflow_ignite.native.status.code_for_exception`:
``IgniteConnectionError`` -> ``UnavailableError``, ``CacheNotFoundError`` ->
``NotFoundError``, ``ValueError`` -> ``InvalidArgumentError``, other errors
``InternalError``), the message naming the exception
type and text, followed by the Python traceback.  Iterators cannot be saved in
a ``tf.train`` checkpoint (neither can ``from_generator``'s).
"""

from __future__ import annotations

import atexit
import importlib.util
import itertools
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from types import ModuleType
from typing import Any

import numpy as np

from tensorflow_ignite.native import build

__all__ = [
    "python_source",
    "supports",
    "available",
    "unavailable_reason",
    "release_pending",
    "uses_python_source",
    "Allocator",
    "NativeBuildError",
]

NativeBuildError = build.NativeBuildError

_EXTENSION_NAME = "tensorflow_ignite.native._tf_ignite_data"

_lock = threading.Lock()
_loaded: tuple[Any, ModuleType] | None = None  # (TF op module, extension module)
_load_error: Exception | None = None
#: source id -> (generator factory, flattener turning its elements into the op's tuples)
_sources: dict[int, tuple[Callable[[], Iterable[Any]], Callable[[Iterable[Any]], Iterator[tuple[Any, ...]]]]] = {}
_ids = itertools.count(1)


def _load() -> tuple[Any, ModuleType]:
    """Build if needed, load the op library into TensorFlow and import it as a module."""
    global _loaded, _load_error
    with _lock:
        if _loaded is not None:
            return _loaded
        if _load_error is not None:
            raise _load_error
        try:
            import tensorflow as tf

            from tensorflow_ignite.native.loader import _locate_library

            path = _locate_library(build.DATA_OPS)
            ops = tf.load_op_library(str(path))
            module = sys.modules.get(_EXTENSION_NAME)
            if module is None:
                spec = importlib.util.spec_from_file_location(_EXTENSION_NAME, path)
                assert spec is not None and spec.loader is not None
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                sys.modules[_EXTENSION_NAME] = module
            from tensorflow_ignite.native.status import code_for_exception

            module.set_dispatcher(_dispatch)
            module.set_error_code(lambda exc: int(code_for_exception(exc)))
            atexit.register(module.shutdown)
        except Exception as err:  # noqa: BLE001 - remembered and re-raised to every caller
            _load_error = err
            raise
        _loaded = (ops, module)
        return _loaded


def unavailable_reason() -> str | None:
    """``None`` if the op library is (or can be) built and loaded in this process, else why not."""
    try:
        _load()
    except Exception as err:  # noqa: BLE001 - any failure means "not available"
        return f"{type(err).__name__}: {err}"
    return None


def available() -> bool:
    """True if the op library is (or can be) built and loaded in this process."""
    return unavailable_reason() is None


def supports(element_spec: Any) -> bool:
    """True if every leaf of ``element_spec`` is a dense ``tf.TensorSpec`` of numbers, booleans or strings."""
    import tensorflow as tf

    leaves = tf.nest.flatten(element_spec)
    return bool(leaves) and all(
        type(s) is tf.TensorSpec and (s.dtype.is_numeric or s.dtype in (tf.bool, tf.string))
        for s in leaves
    )


def release_pending() -> int:
    """Drop the references of adopted arrays whose tensors TensorFlow has freed; returns how many."""
    if _loaded is None:
        return 0
    return int(_loaded[1].release_pending())


def uses_python_source(dataset: Any) -> bool:
    """True if ``dataset`` or a dataset it is built on is a :func:`python_source`."""
    seen = 0
    while dataset is not None and seen < 64:
        if getattr(dataset, "_source_id", None) in _sources:
            return True
        dataset, seen = getattr(dataset, "_input_dataset", None), seen + 1
    return False


def _dispatch(source_id: int) -> Iterator[tuple[Any, ...]]:
    entry = _sources.get(source_id)
    if entry is None:
        raise RuntimeError(
            f"the dataset with native source id {source_id} has been garbage-collected; keep a "
            "reference to the IgniteDataset while TensorFlow iterates over it"
        )
    factory, flatten = entry
    return flatten(factory())


#: ``allocate(shape, dtype)`` -> a new C-contiguous array (for batches joined from two inputs).
Allocator = Callable[[tuple[int, ...], Any], np.ndarray]


def _flattener(element_spec: Any, batch_size: int | None = None, drop_remainder: bool = False,
               allocate: Allocator | None = None) -> Callable[[Iterable[Any]], Iterator[tuple[Any, ...]]]:
    """A generator wrapper turning structured elements into the op's flat tuples.

    With ``batch_size`` the elements are batches (every leaf has the rows on
    axis 0) re-cut to ``batch_size`` rows: slices of one batch are views (no
    copy; the op adopts them when they are aligned), only a batch that spans two
    input batches is joined, into memory from ``allocate`` when given.
    """
    import tensorflow as tf

    specs = tf.nest.flatten(element_spec)
    kinds = [(s.dtype == tf.string, s.dtype.as_numpy_dtype if s.dtype != tf.string else None) for s in specs]
    flatten = tf.nest.flatten
    contiguous = np.ascontiguousarray

    def strings(value: Any) -> tuple[tuple[int, ...], list[bytes]]:
        array = np.asarray(value)
        flat = array.ravel().tolist()
        if not all(type(v) is bytes for v in flat):
            flat = [v if isinstance(v, bytes) else str(v).encode() for v in flat]
        return array.shape, flat

    def arrays(element: Any) -> list[np.ndarray]:
        return [np.asarray(value) if is_string else contiguous(value, dtype)
                for value, (is_string, dtype) in zip(flatten(element), kinds)]

    def out(parts: list[np.ndarray]) -> tuple[Any, ...]:
        return tuple(strings(a) if is_string else a for a, (is_string, _) in zip(parts, kinds))

    def join(first: np.ndarray, second: np.ndarray) -> np.ndarray:
        if allocate is None or first.dtype == object:
            return np.concatenate((first, second))
        out = allocate((len(first) + len(second), *first.shape[1:]), first.dtype)
        out[:len(first)] = first
        out[len(first):] = second
        return out

    def cut(elements: Iterator[Any], size: int) -> Iterator[list[np.ndarray]]:
        carry: list[np.ndarray] | None = None
        for element in elements:
            parts = arrays(element)
            n = len(parts[0])
            start = 0
            if carry is not None and n:
                take = min(size - len(carry[0]), n)
                carry = [join(c, a[:take]) for c, a in zip(carry, parts)]
                start = take
                if len(carry[0]) < size:
                    continue
                yield carry
                carry = None
            while n - start >= size:
                yield [a[start:start + size] for a in parts]
                start += size
            if start < n:
                carry = [a[start:] for a in parts]
        if carry is not None and not drop_remainder:
            yield carry

    def run(elements: Iterable[Any]) -> Iterator[tuple[Any, ...]]:
        release_pending()  # tensors of the previous epoch freed since: their arrays can be reused
        iterator = iter(elements)
        try:
            if batch_size is None:
                for element in iterator:
                    yield out(arrays(element))
            else:
                for parts in cut(iterator, batch_size):
                    yield out(parts)
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()

    return run


def python_source(factory: Callable[[], Iterable[Any]], element_spec: Any, *, batch_size: int | None = None,
                  drop_remainder: bool = False, allocate: Allocator | None = None) -> Any:
    """A ``tf.data.Dataset`` whose every iterator runs ``factory()`` and yields its elements.

    ``element_spec``: the nested structure of dense ``tf.TensorSpec`` the
    elements follow (see :func:`supports`).  With ``batch_size``, the elements
    are batches of any length (rows on axis 0 of every leaf) and the dataset
    yields them re-cut to ``batch_size`` rows, like ``Dataset.rebatch`` (the
    last one shorter unless ``drop_remainder``) -- in Python, where slicing
    costs less than TensorFlow's rebatch step per batch; ``allocate(shape,
    dtype)`` provides the memory of batches joined from two inputs (64-byte
    aligned memory is adopted by the op, reused memory avoids page faults;
    default ``np.concatenate``).  Raises
    :class:`NativeBuildError` when the op library cannot be built or loaded,
    ``ValueError`` for an unsupported spec or batch size.
    """
    import tensorflow as tf
    from tensorflow.python.data.ops import dataset_ops

    if not supports(element_spec):
        raise ValueError(f"the native source supports dense numeric, bool and string TensorSpecs only: {element_spec}")
    if batch_size is not None and batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    ops, _ = _load()
    flattener = _flattener(element_spec, batch_size, drop_remainder, allocate)
    if batch_size is not None:
        element_spec = tf.nest.map_structure(
            lambda s: tf.TensorSpec([batch_size if drop_remainder else None, *s.shape[1:]], s.dtype), element_spec)
    specs = tf.nest.flatten(element_spec)

    class _PythonSource(dataset_ops.DatasetSource):
        def __init__(self) -> None:
            self._spec = element_spec
            self._source_id = next(_ids)
            _sources[self._source_id] = (factory, flattener)
            weakref.finalize(self, _sources.pop, self._source_id, None)
            variant = ops.ignite_py_dataset(
                source_id=self._source_id,
                output_types=[s.dtype for s in specs],
                output_shapes=[s.shape for s in specs],
            )
            super().__init__(variant)

        @property
        def element_spec(self) -> Any:
            return self._spec

    return _PythonSource()
