"""Which source field feeds which model input, and whether its dtype and shape fit.

The mapping is explicit (``inputs={"model_input": "FIELD"}``) or inferred:
each input takes the field of the same name (case-insensitive, since SQL
columns come back upper-case); a model with one input and a source with one
field need no names.  A field fits an input when its dtype converts without
changing kind badly (equal, a narrower or wider float, an integer or bool into
a float or wider integer; never a float into an integer, never strings into
numbers) and its per-row shape equals the input's (``None`` matches any size),
or has the same number of elements (a ``[28, 28]`` image into a ``[784]``
input, reshaped row-major).  A variable-length array field of a cache
(``float32[?]``: a ``float[]`` as pyignite or a Java client writes it, Ignite
records no length) fits an input of a fixed shape (``(64,)``, ``(8, 8)``)
when ``dense_arrays``: the binding then asks the read for that many elements
per row (``dense``), and a row whose array has another length fails its
batch before anything of it is written
(:class:`~tensorflow_ignite.errors.ArrayLengthError`, naming the key).  Every
misfit is reported at once, naming the field, the input and both types.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..errors import ModelInputError
from .model import TensorSpec

__all__ = ["InputBinding", "bind_inputs"]


@dataclass(frozen=True)
class InputBinding:
    """One model input fed from one source field: converted to ``dtype`` and reshaped to ``shape`` if needed."""

    input: TensorSpec
    field: TensorSpec
    #: The field is a variable-length array read as ``field.shape`` elements per row (checked per row).
    dense: bool = False

    def convert(self, column: np.ndarray) -> np.ndarray:
        if self.input.dtype != "object" and column.dtype != np.dtype(self.input.dtype):
            column = column.astype(self.input.dtype)
        want = self.input.shape
        if tuple(column.shape[1:]) != want and None not in want:
            column = column.reshape((len(column), *want))
        return column


def _dtype_fits(field: str, model: str) -> bool:
    if field == model:
        return True
    if "object" in (field, model):
        return False
    src, dst = np.dtype(field), np.dtype(model)
    if src.kind == "f" and dst.kind in "iub":
        return False
    return bool(np.can_cast(src, dst, "same_kind"))


def _shape_fits(field: tuple[int | None, ...], model: tuple[int | None, ...]) -> bool:
    if len(field) == len(model) and all(m is None or m == f for f, m in zip(field, model)):
        return True
    if None in field or None in model:
        return False
    return math.prod(field) == math.prod(model)


def _dense_fits(field: tuple[int | None, ...], model: tuple[int | None, ...]) -> bool:
    """A variable-length array (``[?]``) into an input of a fixed shape, when rows have that many elements."""
    return field == (None,) and bool(model) and None not in model


def bind_inputs(
    model_inputs: tuple[TensorSpec, ...],
    fields: Mapping[str, TensorSpec],
    *,
    source: str,
    explicit: Mapping[str, str] | None = None,
    dense_arrays: bool = False,
) -> tuple[InputBinding, ...]:
    """One :class:`InputBinding` per model input, or a :class:`ModelInputError` listing every misfit.

    ``dense_arrays``: variable-length array fields bind to inputs of a fixed shape (see the module).
    """
    by_upper = {n.upper(): n for n in fields}
    explicit = dict(explicit or {})
    unknown = [n for n in explicit if n not in {s.name for s in model_inputs}]
    problems: list[str] = []
    if unknown:
        problems.append(
            f"inputs= names {unknown}, which the model does not have (its inputs: {[s.name for s in model_inputs]})"
        )
    bindings: list[InputBinding] = []
    for spec in model_inputs:
        if spec.name in explicit:
            name = by_upper.get(explicit[spec.name].upper())
            if name is None:
                problems.append(
                    f"input {spec.name!r} is mapped to field {explicit[spec.name]!r}, which {source} does not have"
                )
                continue
        else:
            name = by_upper.get(spec.name.upper())
            if name is None and len(model_inputs) == 1 and len(fields) == 1:
                name = next(iter(fields))
            if name is None:
                problems.append(
                    f"input {spec.name!r} ({spec.describe()}) has no field of that name in {source}; "
                    f"map it with inputs={{{spec.name!r}: FIELD}}"
                )
                continue
        field = fields[name]
        if dense_arrays and _dtype_fits(field.dtype, spec.dtype) and _dense_fits(field.shape, spec.shape):
            elements = math.prod(spec.shape)
            bindings.append(InputBinding(spec, TensorSpec(field.name, field.dtype, (elements,)), dense=True))
            continue
        if not _dtype_fits(field.dtype, spec.dtype) or not _shape_fits(field.shape, spec.shape):
            problems.append(
                f"field {name!r} is {field.describe()} but model input {spec.name!r} takes {spec.describe()}"
            )
            continue
        bindings.append(InputBinding(spec, field))
    if problems:
        raise ModelInputError(
            f"the model's inputs do not match {source} (fields: "
            + ", ".join(f"{n}: {s.describe()}" for n, s in fields.items())
            + "): "
            + "; ".join(problems),
            problems=tuple(problems),
        )
    return tuple(bindings)
