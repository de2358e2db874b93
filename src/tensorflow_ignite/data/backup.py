"""Keras ``BackupAndRestore`` that also saves the input iterator: training resumes mid-epoch.

Keras 3's ``keras.callbacks.BackupAndRestore(save_freq=N)`` saves the model
every ``N`` batches, but on restart it begins the interrupted epoch again from
its first batch: Keras creates the dataset iterator itself and saves only the
epoch number.  :class:`BackupAndRestore` here is that callback plus the
iterator: pass the training dataset through :meth:`BackupAndRestore.dataset`
and give ``fit`` what it returns; every backup then also writes the iterator
(``tf.train.Checkpoint(iterator=...)``: an IgniteDataset's per-partition
progress plus whatever later stages -- ``prefetch``, ``shuffle`` buffers -- hold),
and a restarted ``fit`` continues the interrupted epoch with exactly the
batches the model had not trained on, in any process::

    backup = tensorflow_ignite.data.BackupAndRestore("ignite:///runs/job1/backup", save_freq=50)
    model.fit(backup.dataset(IgniteDataset("mnist", batch_size=64).map(to_xy)),
              epochs=5, callbacks=[backup])

Any dataset works; with an IgniteDataset at its source the resume is
exactly-once even when nodes died or partitions moved in between (see
``RELIABILITY.md``).  Keras's own files (``latest.weights.h5``,
``training_metadata.json``) and the iterator's (``iterator/``, with
``iterator.json`` naming the epoch and batch it belongs to) live in
``backup_dir``; an iterator is restored only into the epoch it was saved in.
"""

from __future__ import annotations

import json
from typing import Any

import keras
import tensorflow as tf

__all__ = ["BackupAndRestore"]


class _TrackedDataset(tf.data.Dataset):
    """``dataset`` whose iterators are handed to the callback (to save, or to restore into)."""

    def __init__(self, dataset: tf.data.Dataset, owner: "BackupAndRestore") -> None:
        self._dataset = dataset
        self._owner = owner
        super().__init__(dataset._variant_tensor)

    def _inputs(self) -> list[tf.data.Dataset]:
        return [self._dataset]

    @property
    def element_spec(self) -> Any:
        return self._dataset.element_spec

    def __iter__(self) -> Any:
        iterator = super().__iter__()
        self._owner._adopt(iterator)
        return iterator


class BackupAndRestore(keras.callbacks.BackupAndRestore):
    """``keras.callbacks.BackupAndRestore`` that saves and restores the training iterator too.

    Same arguments as Keras's callback; ``backup_dir`` may be an ``ignite://``
    path.  Train on :meth:`dataset`'s result.
    """

    def __init__(
        self,
        backup_dir: str,
        save_freq: str | int = "epoch",
        double_checkpoint: bool = False,
        delete_checkpoint: bool = True,
    ) -> None:
        super().__init__(
            backup_dir, save_freq=save_freq, double_checkpoint=double_checkpoint, delete_checkpoint=delete_checkpoint
        )
        self._iterator: Any = None
        self._restore_into_next = False
        self._iterator_dir = f"{str(backup_dir).rstrip('/')}/iterator"
        self._iterator_meta = f"{self._iterator_dir}/iterator.json"
        #: Times an iterator was restored from a backup (0 or 1 per ``fit``).
        self.restored = 0

    def dataset(self, dataset: tf.data.Dataset) -> tf.data.Dataset:
        """``dataset`` as the callback must see it: pass the result to ``fit``."""
        return _TrackedDataset(dataset, self)

    # ------------------------------------------------------------ Keras hooks
    def on_train_begin(self, logs: Any = None) -> None:
        super().on_train_begin(logs)
        self._restore_into_next = False
        keras_meta = _read_json(self._training_metadata_path)
        ours = _read_json(self._iterator_meta)
        # Keras's backup and ours are written together; restore only the iterator of the very
        # backup Keras restored (same epoch and batch), and only mid-epoch.
        if (
            keras_meta
            and ours
            and ours.get("epoch") == keras_meta.get("epoch")
            and ours.get("batch") == keras_meta.get("batch")
            and ours.get("mid_epoch")
        ):
            self._restore_into_next = True

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        self._iterator = None  # the next epoch has an iterator of its own
        super().on_epoch_end(epoch, logs)

    def _save_model(self) -> None:
        super()._save_model()
        mid_epoch = self._iterator is not None
        if mid_epoch:
            tf.train.Checkpoint(iterator=self._iterator).write(f"{self._iterator_dir}/ckpt")
        with tf.io.gfile.GFile(self._iterator_meta, "w") as f:
            f.write(json.dumps({"epoch": self._current_epoch, "batch": self._last_batch_seen, "mid_epoch": mid_epoch}))

    # ------------------------------------------------------------ iterators
    def _adopt(self, iterator: Any) -> None:
        if self._restore_into_next:
            self._restore_into_next = False
            tf.train.Checkpoint(iterator=iterator).read(f"{self._iterator_dir}/ckpt").assert_consumed()
            self.restored += 1
        self._iterator = iterator


def _read_json(path: str) -> dict[str, Any] | None:
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path, "r") as f:
        return json.loads(f.read())
