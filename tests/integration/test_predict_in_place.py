"""The output follows its source: `mode="overwrite"` rewrites an output of the same layout in place, and a run
over a whole cache removes the predictions of keys the source no longer holds (real nodes, real Keras models)."""

from __future__ import annotations

import keras
import numpy as np

import tensorflow_ignite
from tensorflow_ignite.client import IgniteClient
from tensorflow_ignite.protocol.codes import TypeCode
from tensorflow_ignite.scoring import MODEL_HASH, ModelRecord, models_of

from .test_predict import features_data, read_output, tiny_model
from .test_writer import client  # noqa: F401  (the same fixture)

ROWS = 2000


def other_model(outputs: int = 3) -> keras.Model:
    """Another model over the same input: other weights (and, with ``outputs != 3``, another layout)."""
    keras.utils.set_random_seed(11)
    x = keras.Input(shape=(4,), name="features")
    return keras.Model(x, keras.layers.Dense(outputs, name="scores")(x))


def assert_mirrors(client: IgniteClient, output: str, keys: list[int], features: np.ndarray, model: keras.Model,
                   model_hash: int) -> None:
    """``output`` holds exactly ``keys``, each with ``model``'s prediction of its row of ``features``."""
    entries = read_output(client, output)
    assert sorted(entries) == keys
    got = np.stack([np.asarray(entries[k].fields["scores"], dtype=np.float32) for k in keys])
    np.testing.assert_allclose(got, model.predict(features[keys], verbose=0), rtol=1e-5, atol=1e-6)
    assert {entries[k].fields[MODEL_HASH] for k in keys} == {model_hash}


def test_overwrite_rewrites_an_output_of_the_same_layout_in_place(client: IgniteClient, cache_name: str) -> None:
    data = features_data(ROWS)
    tensorflow_ignite.write(cache_name, data, client=client)
    out = cache_name + "_p"
    first = tensorflow_ignite.predict(tiny_model(), cache_name, out, client=client, progress=False)
    assert first.output_action == "created"
    deleted = list(range(100, 250))
    client.cache(cache_name).remove_keys(deleted)
    kept = [k for k in range(ROWS) if k not in set(deleted)]

    model = other_model()
    again = tensorflow_ignite.predict(model, cache_name, out, client=client, mode="overwrite", progress=False)
    assert again.output_action == "replaced in place" and "in place" in again.summary()
    assert (again.rows, again.units_scored, again.units_skipped) == (len(kept), 1024, 0)
    assert again.stale_removed == len(deleted)
    assert_mirrors(client, out, kept, data["features"], model, again.model_hash)
    # Only the model whose predictions the output now holds is on record.
    assert models_of(client, out) == {again.model_hash: ModelRecord(again.model_uri, again.model_sha256)}

    # Another layout (4 scores, not 3) cannot be written over these entries: destroyed and created again.
    wider = other_model(outputs=4)
    replaced = tensorflow_ignite.predict(wider, cache_name, out, client=client, mode="overwrite", progress=False)
    assert replaced.output_action == "created" and replaced.stale_removed == 0
    entries = read_output(client, out)
    assert sorted(entries) == kept and {len(e.fields["scores"]) for e in entries.values()} == {4}


def test_a_run_over_the_whole_cache_removes_predictions_of_deleted_rows(client: IgniteClient,
                                                                       cache_name: str) -> None:
    data = features_data(ROWS)
    tensorflow_ignite.write(cache_name, data, client=client)
    out = cache_name + "_p"
    model = tiny_model()
    first = tensorflow_ignite.predict(model, cache_name, out, client=client, progress=False)
    client.cache(cache_name).remove_keys([3, 500, 1999])
    again = tensorflow_ignite.predict(model, cache_name, out, client=client, progress=False)
    # Every partition was complete: nothing scored, only the three predictions without a row removed.
    assert (again.rows, again.units_skipped, again.output_action, again.stale_removed) == (0, 1024, "kept", 3)
    assert_mirrors(client, out, [k for k in range(ROWS) if k not in (3, 500, 1999)], data["features"], model,
                   first.model_hash)


def test_int_keys_written_by_another_client_are_checked_as_ints(client: IgniteClient, cache_name: str) -> None:
    """A source keyed by Java ``Integer`` (as other clients write) while the output's keys are ``long``:
    the check against the source asks for ``Integer`` keys, so no prediction is taken for stale."""
    values = np.random.default_rng(5).normal(size=300).astype(np.float32)
    source = client.create_cache(cache_name)
    source.put_all({k: float(values[k]) for k in range(300)}, key_type=TypeCode.INT, value_type=TypeCode.FLOAT)
    out = cache_name + "_p"
    x = keras.Input(shape=(), name="val", dtype="float32")
    model = keras.Model(x, keras.layers.Dense(2, name="scores")(keras.layers.Reshape((1,))(x)))
    first = tensorflow_ignite.predict(model, cache_name, out, client=client, progress=False)
    assert first.rows == 300
    source.remove_keys([7, 8], key_type=TypeCode.INT)
    assert source.size() == 298
    again = tensorflow_ignite.predict(model, cache_name, out, client=client, mode="overwrite", progress=False)
    assert (again.output_action, again.rows, again.stale_removed) == ("replaced in place", 298, 2)
    kept = [k for k in range(300) if k not in (7, 8)]
    entries = read_output(client, out)
    assert sorted(entries) == kept
    got = np.stack([np.asarray(entries[k].fields["scores"], dtype=np.float32) for k in kept])
    np.testing.assert_allclose(got, model.predict(values[kept], verbose=0), rtol=1e-5, atol=1e-6)


def test_one_model_whole_another_partly_then_the_first_again(client: IgniteClient, cache_name: str) -> None:
    # A run over the whole cache records it in one entry; a later run of another model over some
    # partitions rewrites their entries, so the first model's next skip-existing run must score them
    # again -- and the reverse order (partial first, whole second) must not leave stale unit records.
    from tensorflow_ignite.scoring import recorded_units

    rng = np.random.default_rng(11)
    tensorflow_ignite.write(cache_name, {"features": rng.normal(size=(600, 4)).astype(np.float32)}, client=client)
    a, b = tiny_model(), other_model()
    out = cache_name + "_mix"

    def hashes() -> set[int]:
        return {int(v.fields[MODEL_HASH]) for _k, v in client.cache(out).scan(page_size=4096)}

    first = tensorflow_ignite.predict(a, cache_name, out, client=client, progress=False)
    assert first.units_scored == 1024 and hashes() == {first.model_hash}
    other = tensorflow_ignite.predict(b, cache_name, out, client=client, progress=False, parts=range(0, 1024, 2))
    assert other.units_scored == 512 and hashes() == {first.model_hash, other.model_hash}
    again = tensorflow_ignite.predict(a, cache_name, out, client=client, progress=False)
    assert again.units_scored > 0 and hashes() == {first.model_hash}  # b's predictions all replaced
    assert sum(len(u) for u in recorded_units(client, out).values()) == 1024

    # Reverse: b over some partitions (unit records), then b over everything, then a: a scores it all.
    out2 = cache_name + "_mix2"
    tensorflow_ignite.predict(b, cache_name, out2, client=client, progress=False, parts=range(0, 1024, 3))
    tensorflow_ignite.predict(a, cache_name, out2, client=client, progress=False)
    last = tensorflow_ignite.predict(b, cache_name, out2, client=client, progress=False)
    assert last.units_scored == 1024  # a rewrote every entry: b's old unit records say nothing
    assert {int(v.fields[MODEL_HASH]) for _k, v in client.cache(out2).scan(page_size=4096)} == {last.model_hash}
    assert sum(len(u) for u in recorded_units(client, out2).values()) == 1024
