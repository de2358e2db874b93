"""Model inputs bound to source fields: inferred and explicit mappings, dtype and shape rules (no server)."""

from __future__ import annotations

import numpy as np
import pytest

from tensorflow_ignite.errors import ModelInputError
from tensorflow_ignite.scoring.model import TensorSpec
from tensorflow_ignite.scoring.signature import bind_inputs

FIELDS = {"PIXELS": TensorSpec("PIXELS", "uint8", (28, 28)), "AGE": TensorSpec("AGE", "int32", ()),
          "NAME": TensorSpec("NAME", "object", ())}


def test_names_match_case_insensitively_and_convert() -> None:
    (b,) = bind_inputs((TensorSpec("pixels", "float32", (784,)),), FIELDS, source="cache 'c'")
    assert b.field.name == "PIXELS"
    out = b.convert(np.ones((2, 28, 28), dtype=np.uint8))
    assert out.shape == (2, 784) and out.dtype == np.float32


def test_explicit_mapping_and_single_field() -> None:
    (b,) = bind_inputs((TensorSpec("x", "float64", (None,)),), {"V": TensorSpec("V", "float32", (3,))},
                       source="cache 'c'")
    assert b.field.name == "V"
    (b,) = bind_inputs((TensorSpec("years", "float32", ()),), FIELDS, source="cache 'c'", explicit={"years": "age"})
    assert b.field.name == "AGE"


@pytest.mark.parametrize(("spec", "words"), [
    (TensorSpec("AGE", "int32", (2,)), ["'AGE' is int32[]", "int32[2]"]),       # shape
    (TensorSpec("NAME", "float32", ()), ["'NAME' is object[]", "float32[]"]),   # strings into numbers
    (TensorSpec("missing", "float32", ()), ["'missing'", "inputs="]),            # no such field
])
def test_misfits_name_the_field_and_both_types(spec: TensorSpec, words: list[str]) -> None:
    with pytest.raises(ModelInputError) as err:
        bind_inputs((spec, TensorSpec("other", "float32", ())), FIELDS, source="cache 'c'",
                    explicit={"other": "AGE"})
    for w in words:
        assert w in str(err.value)
    assert len(err.value.problems) == 1


def test_floats_do_not_go_into_integer_inputs() -> None:
    with pytest.raises(ModelInputError):
        bind_inputs((TensorSpec("x", "int64", ()),), {"x": TensorSpec("x", "float64", ())}, source="q")


def test_a_sequential_model_from_a_keras_file_is_described_and_applied(tmp_path) -> None:  # type: ignore[no-untyped-def]
    # Loaded from a file, a Sequential model knows its input tensors but raises on `.input`
    # until it has been called: the loader must not need it.
    import keras

    from tensorflow_ignite.scoring.model import load_model

    model = keras.Sequential([keras.layers.Input((8, 8, 1), name="image"), keras.layers.Flatten(),
                              keras.layers.Dense(10, activation="softmax", name="digit")])
    model.save(tmp_path / "digits.keras")
    scoring = load_model(str(tmp_path / "digits.keras"))
    assert [(s.name, s.shape) for s in scoring.inputs] == [("image", (8, 8, 1))]
    x = np.random.default_rng(0).random((5, 8, 8, 1), dtype=np.float32)
    out = scoring.predict({"image": x})
    assert list(out) == [scoring.outputs[0].name]
    np.testing.assert_allclose(next(iter(out.values())), model.predict(x, verbose=0), rtol=1e-5)


def test_a_variable_length_array_feeds_a_fixed_input_only_when_asked() -> None:
    fields = {"pixels": TensorSpec("pixels", "float32", (None,))}
    model = (TensorSpec("pixels", "float32", (8, 8)),)
    with pytest.raises(ModelInputError, match=r"float32\[\?\] but model input 'pixels' takes float32\[8, 8\]"):
        bind_inputs(model, fields, source="cache 'c'")
    (b,) = bind_inputs(model, fields, source="cache 'c'", dense_arrays=True)
    assert b.dense and b.field == TensorSpec("pixels", "float32", (64,))  # the read asks for 64 per row
    assert b.convert(np.ones((3, 64), np.float32)).shape == (3, 8, 8)
    with pytest.raises(ModelInputError):  # no dense read for an input of unknown size, nor floats into ints
        bind_inputs((TensorSpec("pixels", "int32", (64,)),), fields, source="cache 'c'", dense_arrays=True)
