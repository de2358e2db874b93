"""Decode whole query pages into numpy columns (the dataset hot path).

A page region (``ScanPage.rows`` / ``SqlPage.rows``) holds ``row_count`` rows
of one or more values each.  A :class:`PagePlan` says what each value is --
a scalar, an array or an object whose listed fields (possibly nested objects)
are wanted -- and :func:`decode_page` returns one :class:`Column` per leaf
path (``"key"``, ``"value.label"``, ``"value.address.city"``, SQL column
names...).

Speed comes from never building Python objects per row where numpy can do the
work.  Pages whose rows repeat one layout (every row as long as row 0 and
equal to it except in its value bytes and object hash codes; see
:class:`~.layout.Layout`) cost one comparison and one strided read per column; where
the op library is loaded, its compiled decoder (``decode_layout`` in
``native/tf_ignite_data_layout.cc``, installed with :func:`set_compiled_decoder`)
checks and gathers such a page in one pass without the GIL.
Otherwise rows are located with one cheap hop per value (object total
lengths) or, when every row has the same length, with no per-row Python at
all; object headers and footers are gathered for all rows at once; field
offsets come from the footer by position in the schema, resolved once per
(type, schema, flags) group, never via per-row dicts; values at evenly spaced
positions are read through strided views (:func:`take`), others with fancy
indexing.

Output per leaf type (``mask`` True = present; nulls hold a default):

* byte/short/int/long/float/double/bool/char -> int8/int16/int32/int64/
  float32/float64/bool/uint16 arrays;
* date -> int64 epoch ms; timestamp -> int64 epoch ns (one beyond 1677..2262
  raises :class:`FieldTypeError`, never wraps around); time -> int64 ms;
* UUID -> canonical string as ``bytes`` (object array); decimal -> float64;
  enum / binary enum -> int32 ordinal;
* string -> ``bytes`` (UTF-8) in an object array;
* primitive arrays -> dense ``[n, k]`` when ``fixed_length=k``, else ragged
  ``values`` + int64 ``row_splits``; ``as_bytes=True`` gives ``bytes`` per row.

Rows whose wire type differs from the plan's are converted where no value is
lost (:data:`WIDENING`: narrower integers and floats, a date in a timestamp
column, Java-serialized ``java.sql.Date``/``Time``/``Timestamp`` and ``java.time``
values that other clients and Ignite's SQL engine write); any other type raises
:class:`FieldTypeError` with the row and both types.

The package holds :mod:`.plan` (what to extract: plans, columns, widenings),
:mod:`.rows` (where rows and values begin), :mod:`.layout` (pages whose rows
repeat one layout, and the strided gather :func:`take`), :mod:`.compiled`
(which compiled decoder is installed, and why not) and :mod:`.decode` (the
page decoder).
"""

from tensorflow_ignite.protocol.columns.compiled import (
    COMPILED,
    PYTHON,
    compiled_decoder_reason,
    set_compiled_decoder,
)
from tensorflow_ignite.protocol.columns.decode import decode_page
from tensorflow_ignite.protocol.columns.layout import take
from tensorflow_ignite.protocol.columns.plan import (
    Column,
    FieldPlan,
    FieldTypeError,
    PagePlan,
    obj,
    scalar,
)
from tensorflow_ignite.protocol.columns.rows import value_end, value_offsets
from tensorflow_ignite.protocol.types import WIDENING

__all__ = [
    "FieldPlan",
    "PagePlan",
    "Column",
    "FieldTypeError",
    "WIDENING",
    "decode_page",
    "set_compiled_decoder",
    "compiled_decoder_reason",
    "COMPILED",
    "PYTHON",
    "scalar",
    "obj",
    "value_offsets",
    "value_end",
    "take",
]
