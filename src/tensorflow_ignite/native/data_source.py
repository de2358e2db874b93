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

How an iterator finds its Python code: every source is registered under a
key unique to this process (``<process token>:<n>``); the op keeps the key and
the source's *description* as attributes (so tf.data's graph rewrites recreate
the same dataset) and, when TensorFlow creates an iterator, calls this module's
dispatcher with both.  The registered :class:`Source` starts the read (the
fast path); in a process that does not know the key -- a tf.data service
worker, a process restoring a checkpoint -- and for a dataset with
*arguments* (scalar tensors, the op's inputs, whose values are known only when
the graph runs: :mod:`tensorflow_ignite.data.arguments`) the description and
those values are handed to the rebuilder installed with :func:`set_rebuilder`
(:func:`tensorflow_ignite.data.portable.rebuild`, installed when
``tensorflow_ignite`` sees TensorFlow imported), which builds an equivalent
source.  A source with no description (a Python-only generator) cannot leave
its process: starting it elsewhere raises
:class:`~tensorflow_ignite.errors.UnsupportedOperationError` saying so.

Whether datasets use this op at all is :func:`use_native` (``$TF_IGNITE_DATASET_SOURCE``,
:data:`SOURCE_ENV`); :func:`source_of` finds the source a dataset reads.

A *resumable* source's factory is called as ``factory(state, next_split)``
and returns a run: an iterable of batches with ``emitted(rows)`` (told how
many rows each element handed to TensorFlow holds), ``save() -> bytes`` (the
state as of those rows, which the op writes into an iterator checkpoint) and
``close()``; a restored iterator starts a run from that state.
``next_split`` is ``None``, or, on a tf.data service worker under dynamic
sharding, a callable returning the next plan index to read (``None`` when
there are no more).  A plain factory is called with no arguments and its
iterators cannot be saved.

An adopted array stays referenced by its tensor; when TensorFlow frees the
tensor the reference is queued and dropped by the next thread that holds the
GIL anyway (the next element's ``GetNext`` or :func:`release_pending`): taking
the GIL in TensorFlow's threads just to drop a reference would stall them.

The factory's generator must not change an array after yielding it (the
tensors may be that memory; IgniteDataset's reader reuses a buffer only once
nothing refers to it -- :class:`tensorflow_ignite.protocol.pool.BufferPool`).

Only dense ``tf.TensorSpec`` elements (numbers, booleans, strings) are
supported (a string leaf may be an array of ``bytes`` or a *span column*: an
object with ``shape``, slicing, ``join(other)`` and ``spans() -> (buffers,
owner, starts, ends)``, value ``i`` being ``buffers[owner[i]][starts[i]:ends[i]]``,
which the op copies straight out of those buffers; such as
:class:`tensorflow_ignite.ignite3.protocol.spans.ByteSpans`); :func:`supports`
says whether a signature qualifies.  Errors from
the Python iterator reach TensorFlow as the ``tf.errors`` class the ignite://
plugin uses for them (:func:`tensorflow_ignite.native.status.code_for_exception`:
``IgniteConnectionError`` -> ``UnavailableError``, ``CacheNotFoundError`` ->
``NotFoundError``, ``ValueError`` -> ``InvalidArgumentError``,
``UnsupportedOperationError`` -> ``UnimplementedError``, other errors
``InternalError``), the message naming the exception
type and text, followed by the Python traceback.
"""

from __future__ import annotations

import atexit
import importlib.util
import itertools
import logging
import os
import secrets
import sys
import threading
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import KW_ONLY, InitVar, dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from tensorflow_ignite.native import build

__all__ = [
    "python_source",
    "Source",
    "set_rebuilder",
    "ensure_loaded",
    "supports",
    "available",
    "unavailable_reason",
    "release_pending",
    "source_of",
    "uses_python_source",
    "use_native",
    "SOURCE_ENV",
    "Allocator",
    "NativeBuildError",
]

NativeBuildError = build.NativeBuildError

log = logging.getLogger(__name__)

#: ``TF_IGNITE_DATASET_SOURCE=generator`` makes datasets use ``tf.data.Dataset.from_generator``
#: instead of the native source op (``native``, the default when it can be built).
SOURCE_ENV = "TF_IGNITE_DATASET_SOURCE"
#: ``TF_IGNITE_DECODER=python`` keeps pages out of the op library's compiled layout decoder and scans out of
#: its scan pump (``compiled``, the default, uses both once the library is loaded).
DECODER_ENV = "TF_IGNITE_DECODER"
#: ``TF_IGNITE_SCAN=python`` keeps scans out of the scan pump alone (the compiled decoder stays).
SCAN_ENV = "TF_IGNITE_SCAN"

_EXTENSION_NAME = "tensorflow_ignite.native._tf_ignite_data"

_lock = threading.Lock()
_loaded: tuple[Any, ModuleType] | None = None  # (TF op module, extension module)
_load_error: Exception | None = None
#: source key -> the source registered by a dataset of this process
_sources: dict[str, "Source"] = {}
_ids = itertools.count(1)
#: Makes source keys unique across processes (a worker must not take another process's key for its own).
_PROCESS = secrets.token_hex(8)
#: ``rebuilder(description[, arguments])`` -> the source of a description (with its argument values).
_rebuilder: "Callable[..., Source] | None" = None
#: The reasons :func:`use_native` has warned about (each once per process).
_warned: set[str] = set()


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

            from tensorflow_ignite.native.loader import locate_library

            path = locate_library(build.DATA_OPS)
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
            _install_decoder(module)
            atexit.register(module.shutdown)
        except build.BuildInProgressError:
            raise  # not remembered: this process's own build finishes, then the library loads
        except Exception as err:  # remembered and re-raised to every caller
            _load_error = err
            from tensorflow_ignite.protocol.columns import set_compiled_decoder
            from tensorflow_ignite.protocol.columns.compiled import set_scan_pump

            why = f"the op library did not load ({type(err).__name__}: {err})"
            set_compiled_decoder(None, why)
            set_scan_pump(None, why)
            raise
        _loaded = (ops, module)
        return _loaded


def _install_decoder(module: ModuleType) -> None:
    """Hand the page decoder the library's compiled layout decoder, and the scan read-ahead its scan pump
    (``client/pump.py``), unless ``$TF_IGNITE_DECODER`` says python."""
    from tensorflow_ignite.protocol.columns import set_compiled_decoder
    from tensorflow_ignite.protocol.columns.compiled import set_scan_pump

    choice = os.environ.get(DECODER_ENV, "compiled").strip().lower()
    if choice == "python":
        set_compiled_decoder(None, f"{DECODER_ENV}=python")
        set_scan_pump(None, f"{DECODER_ENV}=python")
    else:
        if choice != "compiled":
            log.warning("%s=%r is neither 'compiled' nor 'python'; using the compiled decoder", DECODER_ENV, choice)
        set_compiled_decoder(module.decode_layout)
        scan_pump = getattr(module, "ScanPump", None)
        if os.environ.get(SCAN_ENV, "compiled").strip().lower() == "python":
            set_scan_pump(None, f"{SCAN_ENV}=python")
        else:
            set_scan_pump(scan_pump, "the loaded op library has no ScanPump (built from older sources)")


def ensure_loaded() -> None:
    """Load the op library into TensorFlow now (raises :class:`NativeBuildError` when it cannot be).

    Every process that runs a serialized IgniteDataset graph -- tf.data service
    dispatchers and workers, processes restoring a checkpoint -- needs the op
    registered before the graph arrives; ``import tensorflow_ignite`` does this
    as soon as TensorFlow is imported.
    """
    _load()


def set_rebuilder(rebuilder: "Callable[..., Source] | None") -> "Callable[..., Source] | None":
    """Install ``rebuilder(description) -> Source``: how this process starts sources it did not build.

    A source with arguments is rebuilt by ``rebuilder(description, arguments)``:
    the values of the op's argument tensors (a tuple of bytes, int, bool).

    Returns the rebuilder installed before (to put it back).
    """
    global _rebuilder
    previous, _rebuilder = _rebuilder, rebuilder
    return previous


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
        type(s) is tf.TensorSpec and (s.dtype.is_numeric or s.dtype in (tf.bool, tf.string)) for s in leaves
    )


def release_pending() -> int:
    """Drop the references of adopted arrays whose tensors TensorFlow has freed; returns how many."""
    if _loaded is None:
        return 0
    return int(_loaded[1].release_pending())


def use_native(signature: Any) -> bool:
    """True if datasets of this element ``signature`` read through the native op (:func:`python_source`).

    Unless :data:`SOURCE_ENV` is ``generator`` (``ConfigurationError`` unless it is
    that or ``native``), the signature is not :func:`supports`-ed, or the op library
    is not available in this process: then they use ``from_generator``, and the
    reason the op is not available is logged as a warning (each reason once per process).
    """
    from tensorflow_ignite.errors import ConfigurationError

    choice = os.environ.get(SOURCE_ENV, "native").strip().lower()
    if choice not in ("native", "generator"):
        raise ConfigurationError(f"{SOURCE_ENV} is 'native' or 'generator', not {choice!r}")
    if choice == "generator" or not supports(signature):
        return False
    reason = unavailable_reason()
    if reason is None:
        return True
    if reason not in _warned:
        _warned.add(reason)
        log.warning(
            "IgniteDataset falls back to tf.data.Dataset.from_generator (a slower start of "
            "every epoch): the native source op is not available: %s",
            reason,
        )
    return False


def source_of(dataset: Any) -> "Source | None":
    """The :class:`Source` of this process that ``dataset`` reads, or ``None``.

    Found in the dataset's graph: the first ``IgnitePyDataset`` op whose source
    is registered here, in ``dataset`` or in any dataset it is built on
    (``map``, ``prefetch``, an ``IgniteDataset``'s pipeline, ...).
    """
    import tensorflow as tf

    # _as_serialized_graph is TensorFlow's (private) way to a dataset's graph; IGNORE:
    # a from_generator pipeline (external state) is serialized too, without a warning.
    serialized = dataset._as_serialized_graph(external_state_policy=tf.data.experimental.ExternalStatePolicy.IGNORE)
    graph = tf.compat.v1.GraphDef.FromString(serialized.numpy())
    nodes = [*graph.node, *(n for f in graph.library.function for n in f.node_def)]
    for node in nodes:
        if node.op == "IgnitePyDataset":
            source = _sources.get(node.attr["source"].s.decode())
            if source is not None:
                return source
    return None


def uses_python_source(dataset: Any) -> bool:
    """True if ``dataset`` or a dataset it is built on is a :func:`python_source` (see :func:`source_of`)."""
    return source_of(dataset) is not None


def _dispatch(
    key: str, description: str, state: bytes | None, next_split: Any, arguments: tuple[Any, ...] = ()
) -> "_Run":
    source = _sources.get(key) if key and not arguments else None
    if source is None:
        if not description:
            from tensorflow_ignite.errors import UnsupportedOperationError

            if key.startswith(_PROCESS + ":"):
                raise UnsupportedOperationError(
                    "the dataset behind this iterator has been garbage-collected; keep a reference to the "
                    "IgniteDataset while TensorFlow iterates over it"
                )
            raise UnsupportedOperationError(
                "this dataset reads a Python-only source (a generator of the process that built it), which "
                "cannot run in another process (a tf.data service worker, a process restoring a checkpoint); "
                "build it from an Ignite cache or query with IgniteDataset, which other processes rebuild"
            )
        if _rebuilder is None:
            raise RuntimeError(
                "IgniteDataset: this process cannot rebuild datasets from their description: "
                "import tensorflow_ignite in it before TensorFlow runs the dataset"
            )
        source = _rebuilder(description, tuple(arguments)) if arguments else _rebuilder(description)
    return source.run(state, next_split)


class _Run:
    """What the op iterates over: the flattened elements of one run, and its ``save``."""

    def __init__(self, elements: Any, flatten: Callable[[Any], Iterator[tuple[Any, ...]]]) -> None:
        self._elements = elements
        self._out = flatten(elements)

    def __iter__(self) -> "_Run":
        return self

    def __next__(self) -> tuple[Any, ...]:
        return next(self._out)

    def save(self) -> bytes:
        save = getattr(self._elements, "save", None)
        if save is None:
            from tensorflow_ignite.errors import UnsupportedOperationError

            raise UnsupportedOperationError(
                "this iterator reads a Python generator, whose position cannot be saved in a checkpoint; "
                "checkpoint iterators of an IgniteDataset, which resume from per-partition progress"
            )
        return bytes(save())

    def close(self) -> None:
        self._out.close()


@dataclass(eq=False)
class Source:
    """How this process starts reads of one dataset: the factory and the element layout.

    ``factory(state, next_split)`` (``resumable``) or ``factory()`` returns the
    batches of one iterator (see the module docstring); ``batch_size``,
    ``drop_remainder`` and ``allocate`` are those of :func:`python_source`.
    :attr:`flatten` turns a run's elements into the op's flat tuples.
    """

    factory: Callable[..., Iterable[Any]]
    element_spec: Any
    _: KW_ONLY
    batch_size: int | None = None
    drop_remainder: bool = False
    allocate: InitVar["Allocator | None"] = None
    resumable: bool = False
    #: ``flatten(elements)`` -> the flat tuples the op receives (one per element: a NumPy
    #: array per leaf of the spec, strings as ``(shape, list of bytes)``), converted to the
    #: spec's dtypes and re-cut to ``batch_size``.  Replaceable, for instance by a test
    #: that hands the op elements as they are, to reach the op's own checks.
    flatten: Callable[[Any], Any] = field(init=False, repr=False)

    def __post_init__(self, allocate: "Allocator | None") -> None:
        self.flatten = _flattener(self.element_spec, self.batch_size, self.drop_remainder, allocate)

    def run(self, state: bytes | None = None, next_split: Any = None) -> _Run:
        """The elements of one iterator: from the beginning, or from a saved ``state``."""
        if self.resumable:
            elements = self.factory(state, next_split)
        elif state is not None or next_split is not None:
            from tensorflow_ignite.errors import UnsupportedOperationError

            raise UnsupportedOperationError(
                "this iterator reads a Python generator: it cannot resume from a checkpoint or read splits "
                "handed out by the tf.data service"
            )
        else:
            elements = self.factory()
        return _Run(elements, self.flatten)


#: ``allocate(shape, dtype)`` -> a new C-contiguous array (for batches joined from two inputs).
Allocator = Callable[[tuple[int, ...], Any], np.ndarray]


def _flattener(
    element_spec: Any, batch_size: int | None = None, drop_remainder: bool = False, allocate: Allocator | None = None
) -> Callable[[Iterable[Any]], Iterator[tuple[Any, ...]]]:
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

    def strings(value: Any) -> tuple[Any, ...]:
        if hasattr(value, "spans"):  # a span column: the op copies the values out of its buffers
            return (tuple(value.shape), *value.spans())
        array = np.asarray(value)
        flat = array.ravel().tolist()
        if not all(type(v) is bytes for v in flat):
            flat = [v if isinstance(v, bytes) else str(v).encode() for v in flat]
        return array.shape, flat

    def arrays(element: Any) -> list[Any]:
        return [
            (value if hasattr(value, "spans") else np.asarray(value)) if is_string else contiguous(value, dtype)
            for value, (is_string, dtype) in zip(flatten(element), kinds)
        ]

    def out(parts: list[np.ndarray]) -> tuple[Any, ...]:
        return tuple(strings(a) if is_string else a for a, (is_string, _) in zip(parts, kinds))

    def join(first: Any, second: Any) -> Any:
        if hasattr(first, "spans"):
            return first.join(second)
        if allocate is None or first.dtype == object:
            return np.concatenate((first, second))
        out = allocate((len(first) + len(second), *first.shape[1:]), first.dtype)
        out[: len(first)] = first
        out[len(first) :] = second
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
                yield [a[start : start + size] for a in parts]
                start += size
            if start < n:
                carry = [a[start:] for a in parts]
        if carry is not None and not drop_remainder:
            yield carry

    def run(elements: Iterable[Any]) -> Iterator[tuple[Any, ...]]:
        release_pending()  # tensors of the previous epoch freed since: their arrays can be reused
        iterator = iter(elements)
        # A resumable run counts the rows handed out (every leaf has the rows on axis 0).
        emitted = getattr(elements, "emitted", None)
        try:
            if batch_size is None:
                for element in iterator:
                    parts = arrays(element)
                    if emitted is not None:
                        emitted(len(parts[0]))
                    yield out(parts)
            else:
                for parts in cut(iterator, batch_size):
                    if emitted is not None:
                        emitted(len(parts[0]))
                    yield out(parts)
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()

    return run


def python_source(
    factory: Callable[..., Iterable[Any]],
    element_spec: Any,
    *,
    batch_size: int | None = None,
    drop_remainder: bool = False,
    allocate: Allocator | None = None,
    resumable: bool = False,
    description: str = "",
    num_splits: int = 0,
    arguments: Sequence[Any] = (),
) -> Any:
    """A ``tf.data.Dataset`` whose every iterator runs ``factory()`` and yields its elements.

    ``element_spec``: the nested structure of dense ``tf.TensorSpec`` the
    elements follow (see :func:`supports`).  With ``batch_size``, the elements
    are batches of any length (rows on axis 0 of every leaf) and the dataset
    yields them re-cut to ``batch_size`` rows, like ``Dataset.rebatch`` (the
    last one shorter unless ``drop_remainder``) -- in Python, where slicing
    costs less than TensorFlow's rebatch step per batch; ``allocate(shape,
    dtype)`` provides the memory of batches joined from two inputs (64-byte
    aligned memory is adopted by the op, reused memory avoids page faults;
    default ``np.concatenate``).  ``resumable``: ``factory(state, next_split)``
    returns a run that can save its position (see the module docstring).
    ``description``: what other processes rebuild the source from (JSON, no
    secrets; empty: the dataset cannot leave this process); ``num_splits``:
    how many splits the tf.data service may hand out (0: none).
    ``arguments``: scalar ``tf.string``/``tf.int64``/``tf.bool`` tensors, the
    op's inputs, whose values every iterator hands to the rebuilder with the
    description (which must then be given).  Raises
    :class:`NativeBuildError` when the op library cannot be built or loaded,
    ``ValueError`` for an unsupported spec or batch size.
    """
    import tensorflow as tf
    from tensorflow.python.data.ops import dataset_ops

    if not supports(element_spec):
        raise ValueError(f"the native source supports dense numeric, bool and string TensorSpecs only: {element_spec}")
    if batch_size is not None and batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    if arguments and not description:
        raise ValueError("a source with arguments is started from its description: pass description=")
    ops, _ = _load()
    source = Source(
        factory,
        element_spec,
        batch_size=batch_size,
        drop_remainder=drop_remainder,
        allocate=allocate,
        resumable=resumable,
    )
    if batch_size is not None:
        element_spec = tf.nest.map_structure(
            lambda s: tf.TensorSpec([batch_size if drop_remainder else None, *s.shape[1:]], s.dtype), element_spec
        )
    specs = tf.nest.flatten(element_spec)

    class _PythonSource(dataset_ops.DatasetSource):
        def __init__(self) -> None:
            self._spec = element_spec
            self._source_key = f"{_PROCESS}:{next(_ids)}"
            _sources[self._source_key] = source
            weakref.finalize(self, _sources.pop, self._source_key, None)
            variant = ops.ignite_py_dataset(
                arguments=list(arguments),
                source=self._source_key,
                description=description,
                num_splits=int(num_splits),
                output_types=[s.dtype for s in specs],
                output_shapes=[s.shape for s in specs],
            )
            super().__init__(variant)

        @property
        def element_spec(self) -> Any:
            return self._spec

    return _PythonSource()
