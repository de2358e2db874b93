"""The generation dispatch of IgniteDataset / write (issue 45, item 1) without a server: the generation
remembered per address, the options without an Ignite 3 form, an Ignite 3 row given the cache read's
element structure, the stats in Ignite 2's type."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import tensorflow as tf

from tensorflow_ignite import generation
from tensorflow_ignite.client.options import ConnectionOptions
from tensorflow_ignite.data import on_ignite3
from tensorflow_ignite.data.reader import ReadStats
from tensorflow_ignite.data.tensor_schema import TensorField, TensorSchemaRecord
from tensorflow_ignite.data.write.ignite3 import _table_columns
from tensorflow_ignite.errors import HandshakeError, IgniteConnectionError, UnsupportedOperationError
from tensorflow_ignite.ignite3.partitioned import TableReadStats


@pytest.fixture(autouse=True)
def _forget() -> None:
    generation.forget_generations()
    yield
    generation.forget_generations()


def test_an_ignite3_address_found_once_is_answered_without_a_connection() -> None:
    options = ConnectionOptions(host="127.0.0.1", port=1, connect_timeout=0.5)  # nothing listens on port 1
    generation._FOUND[tuple(options.endpoints)] = 3
    assert generation.generation_at(options) == 3
    generation.forget_generations()
    with pytest.raises(IgniteConnectionError):  # forgotten: asked at a handshake again
        generation.generation_at(options)


def test_options_without_an_ignite3_form_are_refused_by_name() -> None:
    defaults = {"local": (False, "no local scans"), "seed": (None, "not yet")}
    on_ignite3.refuse("read", {"local": False, "seed": None}, defaults)  # defaults pass
    with pytest.raises(UnsupportedOperationError, match=r"local=True has no Ignite 3 form \(no local scans\)"):
        on_ignite3.refuse("read", {"local": True}, defaults)
    with pytest.raises(UnsupportedOperationError, match="seed=3"):
        on_ignite3.refuse("read", {"seed": 3}, defaults)


def test_sql_names() -> None:
    assert on_ignite3.sql_name("points") == "POINTS"
    assert on_ignite3.sql_name("t_x_1") == "T_X_1"
    assert on_ignite3.sql_name("Mixed Case") == "Mixed Case"


def test_a_written_table_row_comes_back_as_the_cache_read_element() -> None:
    record = TensorSchemaRecord(
        "Row",
        TensorField("key", "int64"),
        (TensorField("x", "float32", (2, 2)), TensorField("h", "float16"), TensorField("name", "<U3")),
    )
    x = np.arange(8, dtype=np.float32).reshape(2, 2, 2)
    cols = _table_columns({"x": x, "h": np.array([1.5, 2.5], np.float16), "name": np.array(["a", "b"])}, None, 10, 0)
    assert list(cols["key"]) == [10, 11] and cols["h"].dtype == np.float32 and cols["x"][0] == x[0].tobytes()
    row = {"KEY": tf.constant(cols["key"], tf.int32), "X": tf.constant(list(cols["x"])),
           "H": tf.constant(cols["h"]), "NAME": tf.constant(["a", "b"]), "NAME_present": tf.constant([True, True])}
    out = on_ignite3._structure(["KEY"], record, batched=True)(row)
    assert out["key"].dtype == tf.int64 and out["key"].numpy().tolist() == [10, 11]
    assert set(out["val"]) == {"x", "h", "name", "name_present"}
    np.testing.assert_array_equal(out["val"]["x"].numpy(), x)
    assert out["val"]["h"].dtype == tf.float16
    single = on_ignite3._structure(["KEY"], record, batched=False)({"KEY": tf.constant(1, tf.int64),
                                                                    "X": tf.constant(cols["x"][1])})
    np.testing.assert_array_equal(single["val"]["x"].numpy(), x[1])


def test_a_table_made_otherwise_keeps_its_column_names_and_a_composite_key() -> None:
    row = {"A": tf.constant(1), "B": tf.constant("k"), "V": tf.constant(2.0)}
    out = on_ignite3._structure(["A", "B"], None, batched=False)(row)
    assert set(out["key"]) == {"A", "B"} and set(out["val"]) == {"V"}


def test_stats_in_the_ignite2_type() -> None:
    table = SimpleNamespace(
        stats=lambda: TableReadStats(rows=5, failovers=(((1, 2), "lost"),), skipped=1, queries=3),
        _reader=SimpleNamespace(per_node=True),
    )
    stats = on_ignite3.read_stats(table, 4096)  # type: ignore[arg-type]
    assert isinstance(stats, ReadStats)
    assert (stats.rows, stats.scan_mode, stats.failovers, stats.resumed_skips) == (
        5, "nodes", ((1, "lost"), (2, "lost")), 1)


def test_a_remembered_generation_that_no_longer_answers_is_asked_again() -> None:
    """A cluster replaced on its port: the remembered generation's handshake fails, the address is forgotten
    and both handshakes are tried (here a peer that closes every connection answers neither)."""
    import socket
    import threading

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    stop = threading.Event()

    def refuse_all() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            conn.close()

    thread = threading.Thread(target=refuse_all, daemon=True)
    thread.start()
    try:
        options = ConnectionOptions(host="127.0.0.1", port=port, connect_timeout=2)
        generation._FOUND[tuple(options.endpoints)] = 3
        with pytest.raises(HandshakeError, match="neither the Ignite 2 thin-client handshake"):
            generation.connect_client(options)
        assert tuple(options.endpoints) not in generation._FOUND
    finally:
        stop.set()
        thread.join()
        server.close()
