"""TensorFlow on Apache Ignite.

* :class:`IgniteDataset` -- a ``tf.data`` source over Ignite caches and SQL tables.
* ``ignite://`` (alias ``igfs://``) -- a TensorFlow filesystem stored in Ignite.
* :func:`predict` -- a model's predictions for every row of a cache or query, written back to a cache.
* ``ignite-tf`` -- local nodes, data loading and distributed training.

The package imports lazily: ``import tensorflow_ignite`` does not import
TensorFlow until something that needs it is used, so the command line stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _lazy
from ._version import __version__ as __version__
from .errors import *  # noqa: F403 - the error hierarchy is public API, listed in errors.__all__
from .errors import __all__ as _error_names

if TYPE_CHECKING:
    # What _EXPORTS imports on first use, for type checkers and editors (test_public_api checks
    # that the two agree); at run time these stay lazy.
    # (`X as X`: an explicit re-export.)
    from .client.options import ConnectionKeywords as ConnectionKeywords
    from .client.options import ConnectionOptions as ConnectionOptions
    from .data.dataset import IgniteDataset as IgniteDataset
    from .data.write import WriteResult as WriteResult
    from .data.write import write as write
    from .either import IgniteClient as IgniteClient
    from .local.cluster import LocalCluster as LocalCluster
    from .scoring import PredictResult as PredictResult
    from .scoring import predict as predict

# ignite:// and igfs:// for TensorFlow: registered now if TensorFlow is already
# imported, else as soon as it is (an import hook; no TensorFlow import here).
from .fs import registration as _fs_registration

_fs_registration.install()


def _dataset_op() -> None:
    """Register the IgniteDataset op and its rebuilder, so this process runs serialized datasets
    (tf.data service dispatchers and workers, restoring a checkpoint); a warning on failure."""
    import os

    if os.environ.get("TF_IGNITE_DATASET_SOURCE", "native").strip().lower() == "generator":
        return
    from .native.build import BuildInProgressError

    try:
        from .data import portable
        from .native import data_source

        data_source.set_rebuilder(portable.rebuild)
        data_source.ensure_loaded()
    except BuildInProgressError:
        # TensorFlow imported by this process's own build of the native libraries (for its
        # compiler flags): the op loads when first used, after the build -- nothing to warn about.
        return
    except Exception as exc:  # noqa: BLE001 - never break the user's import of TensorFlow
        import warnings

        warnings.warn(
            f"tensorflow-ignite could not load its tf.data op ({exc}); IgniteDataset falls back to "
            "from_generator and serialized datasets will not run in this process",
            RuntimeWarning,
            stacklevel=2,
        )


_fs_registration.on_tensorflow(_dataset_op)


def _after_import(name: str) -> None:
    if name == "IgniteDataset":  # TF-facing: TensorFlow is imported now, so is ignite://
        _fs_registration.ensure()


#: The package's public names imported on first use: name -> the module that defines it.
_EXPORTS = {
    "IgniteDataset": ".data.dataset",
    "IgniteClient": ".either",
    "ConnectionOptions": ".client.options",
    "ConnectionKeywords": ".client.options",
    "LocalCluster": ".local.cluster",
    "write": ".data.write",
    "WriteResult": ".data.write",
    "predict": ".scoring",
    "PredictResult": ".scoring",
}
__getattr__ = _lazy.lazy_getattr(__name__, _EXPORTS, on_load=_after_import)

#: Every public name: the lazy exports and the error hierarchy (the API reference lists each).
__all__ = [*_EXPORTS, *_error_names]
