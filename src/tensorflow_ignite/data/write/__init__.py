"""``tensorflow_ignite.write``: columns of tensors into an Ignite cache.

Every row becomes one entry: the key is the row index (a Java ``long``) or a
chosen key column, the value a binary object of ``type_name`` with one field
per column.  A per-row array is stored as the primitive array of its dtype,
flattened row-major; the tensor schema record
(:mod:`~tensorflow_ignite.data.tensor_schema`) keeps the original dtypes and
per-row shapes so a reader restores ``uint8 [28, 28]`` from a ``byte[784]``.

Two encoders produce the same bytes:

* :class:`FixedLayoutEncoder` -- when every field of every row has the same
  size (numbers, fixed-shape arrays, timestamps without NaT) the whole batch is
  built with NumPy: a template row (header, type codes, array lengths, footer)
  is broadcast, the column bytes are copied in, and the header hash (Java's
  ``Arrays.hashCode`` over the field bytes, as ``BinaryEncoder`` writes it) is
  one integer matrix-vector product;
* :class:`GenericRowEncoder` -- anything else (strings, nulls, ragged arrays,
  string keys) goes row by row through :class:`~.protocol.binary.BinaryEncoder`.

Rows go to the cluster in ``OP_CACHE_PUT_ALL`` requests of about ``batch_bytes``,
with the next batch encoded while the node stores the previous one.

One module per step: :mod:`.sources` (what is read), :mod:`.fields` (each
column's Ignite type), :mod:`.encode` (the encoders), :mod:`.plan` (a write's
plan and checks), :mod:`.cache` (the target cache), :mod:`.sender` (put-all
requests in flight, progress), :mod:`.api` (``write``).
"""

from ...errors import WriteError
from .api import WriteResult, write
from .cache import default_type_name, sql_table_name
from .encode import FixedLayoutEncoder, GenericRowEncoder
from .fields import FieldPlan, plan_column
from .sources import read_columns

__all__ = [
    "write",
    "WriteResult",
    "WriteError",
    "FieldPlan",
    "FixedLayoutEncoder",
    "GenericRowEncoder",
    "plan_column",
    "default_type_name",
    "sql_table_name",
    "read_columns",
]
