"""tf.data reads in the benchmark (bench/contenders.py ``drain``): the iterator's deletion is timed apart.

Without Ignite.  A slow deletion (what TensorFlow's autotuner does at random,
``drain``'s docstring says why) is stood for by an iterator whose clean-up
takes a while: ``drain`` deletes its iterator itself, so any iterable shows it.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from bench.contenders import drain
from bench.harness import TEARDOWN, Contender, Run, Scenario, run_scenario
from bench.report import teardown_note

tf = pytest.importorskip("tensorflow")

#: How long the stand-in iterator's clean-up holds its deletion.
CLOSE_SECONDS = 0.15


class _SlowToDelete:
    """Yields ``n`` batches of 4 rows; deleting its iterator takes ``CLOSE_SECONDS``."""

    def __init__(self, n: int, deleted: list[float]) -> None:
        self.n, self.deleted = n, deleted

    def __iter__(self) -> Any:
        outer = self

        class It:
            i = 0

            def __iter__(self) -> Any:
                return self

            def __next__(self) -> Any:
                if self.i == outer.n:
                    raise StopIteration
                self.i += 1
                return tf.zeros([4, 2])

            def __del__(self) -> None:
                outer.deleted.append(time.perf_counter())
                threading.Event().wait(CLOSE_SECONDS)  # never set: the clean-up takes CLOSE_SECONDS

        return It()


def test_the_read_ends_with_the_data_and_the_deletion_is_timed_apart() -> None:
    deleted: list[float] = []
    t0 = time.perf_counter()
    run = drain(_SlowToDelete(3, deleted), lambda batch: int(batch.shape[0]))
    assert run.units == 12
    assert len(deleted) == 1
    assert deleted[0] >= t0 + run.seconds  # deleted after the timed read ended
    assert run.extra[TEARDOWN] >= CLOSE_SECONDS * 0.9
    assert run.seconds < CLOSE_SECONDS  # ... and not in it


def test_a_tf_data_read_counts_every_row() -> None:
    run = drain(tf.data.Dataset.range(10).batch(4), lambda batch: int(batch.shape[0]))
    assert run.units == 10 and run.seconds > 0 and run.extra[TEARDOWN] >= 0


def test_an_empty_dataset_is_a_read_of_nothing() -> None:
    run = drain(tf.data.Dataset.range(0).batch(4), lambda batch: int(batch.shape[0]))
    assert run.units == 0 and run.seconds >= 0 and run.extra[TEARDOWN] >= 0


def test_the_report_notes_each_tensorflow_contenders_deletions() -> None:
    teardowns = iter([0.001, 0.030, 0.002])

    def tf_read() -> Run:
        return Run(0.1, 10, 100, extra={TEARDOWN: next(teardowns)})

    sc = Scenario("t", "t", "", "rows/s", [Contender("tf", "IgniteDataset in TF", tf_read, memory="none"),
                                           Contender("raw", "raw pages", lambda: Run(0.1, 10, 100), memory="none")],
                  reference="raw")
    result = run_scenario(sc, reps=3, log=lambda _: None)
    note = teardown_note(result)
    assert note is not None
    assert "IgniteDataset in TF median 2 ms, longest 30 ms (1 of 3 over 20 ms)" in note
    assert "raw pages" not in note  # no tf.data iterator, nothing to note
    only_raw = Scenario("t", "t", "", "rows/s", [sc.contenders[1]], reference="raw")
    assert teardown_note(run_scenario(only_raw, reps=1, log=lambda _: None)) is None
