"""What ``write`` reads: dicts of arrays, ``.npz``/``.csv``/``.parquet`` files, ``tf.data`` datasets."""

from __future__ import annotations

import csv
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ConfigurationError


def _path_of(data: Any) -> Path | None:
    if isinstance(data, (str, os.PathLike)):
        return Path(data)
    return None


def _is_tf_dataset(data: Any) -> bool:
    mod = type(data).__module__ or ""
    return mod.startswith("tensorflow") and hasattr(data, "element_spec") and hasattr(data, "batch")


#: The file kinds ``write`` and ``ignite-tf load`` read, by suffix.
FILE_SUFFIXES = (".npz", ".csv", ".parquet", ".pq")


def readable_file(path: str | os.PathLike[str]) -> Path:
    """``path`` as a :class:`Path` once it exists and is of a kind :func:`read_columns` reads, else a
    :class:`ConfigurationError` saying which (checked before anything else, e.g. a connection)."""
    p = Path(path)
    if not p.exists():
        raise ConfigurationError(f"no such file: {p}")
    if p.suffix.lower() not in FILE_SUFFIXES:
        raise ConfigurationError(f"cannot read {p}: expected a .npz, .csv or .parquet file")
    return p


def read_columns(path: str | os.PathLike[str], columns: Sequence[str] | None = None) -> dict[str, np.ndarray]:
    """Read ``.npz``, ``.csv`` (header row) or ``.parquet`` into a dict of NumPy columns."""
    p = readable_file(path)
    suffix = p.suffix.lower()
    if suffix == ".npz":
        with np.load(p, allow_pickle=False) as npz:
            names = list(columns) if columns is not None else list(npz.files)
            missing = [c for c in names if c not in npz.files]
            if missing:
                raise ConfigurationError(f"{p} has no array(s) {missing}; it has {npz.files}")
            return {c: npz[c] for c in names}
    if suffix == ".csv":
        return _read_csv(p, columns)
    if suffix in (".parquet", ".pq"):
        return _read_parquet(p, columns)
    raise ConfigurationError(f"cannot read {p}: expected a .npz, .csv or .parquet file")


def _read_csv(path: Path, columns: Sequence[str] | None) -> dict[str, np.ndarray]:
    """CSV with a header row; each column becomes int64, float64 (empty -> NaN), bool or str (empty -> null)."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            try:
                header = next(reader)
            except StopIteration:
                raise ConfigurationError(f"{path} is empty: a CSV needs a header row") from None
            rows = []
            for line_no, row in enumerate(reader, start=2):
                if not row:
                    continue
                if len(row) != len(header):
                    raise ConfigurationError(
                        f"{path} line {line_no} has {len(row)} fields, the header has {len(header)}"
                    )
                rows.append(row)
    except UnicodeDecodeError as exc:
        raise ConfigurationError(f"{path} is not UTF-8 text: {exc}") from None
    header = [h.strip() for h in header]
    if len(set(header)) != len(header):
        raise ConfigurationError(f"{path} has duplicate column names in its header: {header}")
    wanted = list(columns) if columns is not None else header
    missing = [c for c in wanted if c not in header]
    if missing:
        raise ConfigurationError(f"{path} has no column(s) {missing}; its header is {header}")
    out: dict[str, np.ndarray] = {}
    for name in wanted:
        j = header.index(name)
        out[name] = _infer_text_column([r[j] for r in rows])
    return out


def _infer_text_column(texts: list[str]) -> np.ndarray:
    arr = np.array([t.strip() for t in texts], dtype=str) if texts else np.array([], dtype=str)
    empty = arr == ""
    if len(arr) and not empty.any():
        try:
            return arr.astype(np.int64)
        except (ValueError, OverflowError):
            pass
        lowered = np.char.lower(arr)
        if np.isin(lowered, ("true", "false")).all():
            return lowered == "true"
    if len(arr) and not empty.all():
        try:
            return np.where(empty, "nan", arr).astype(np.float64)
        except ValueError:
            pass
    out = np.empty(len(texts), dtype=object)
    for i, (t, e) in enumerate(zip(arr.tolist(), empty.tolist())):
        out[i] = None if e else t
    return out


def _read_parquet(path: Path, columns: Sequence[str] | None) -> dict[str, np.ndarray]:
    try:
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow is a test dependency
        raise ConfigurationError("reading .parquet needs pyarrow: pip install 'tensorflow-ignite[load]'") from None
    try:
        table = pq.read_table(path, columns=list(columns) if columns is not None else None)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises ArrowInvalid, KeyError, OSError...: all "cannot read"
        raise ConfigurationError(f"cannot read {path}: {exc}") from None
    return {name: _arrow_to_numpy(name, table.column(name)) for name in table.column_names}


def _arrow_to_numpy(name: str, column: Any) -> np.ndarray:
    import pyarrow as pa

    col = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    t = col.type
    n = len(col)
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        if col.null_count == 0:
            return col.to_numpy(zero_copy_only=False)
        return _object_array(col.to_pylist())
    if pa.types.is_floating(t):
        return col.to_numpy(zero_copy_only=False)  # nulls -> NaN
    if (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        return _object_array(col.to_pylist())
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        out = col.to_numpy(zero_copy_only=False)
        return out if out.dtype.kind == "M" else out.astype("datetime64[ms]")
    if _is_arrow_list(t):
        import pyarrow.compute as pc

        lengths = pc.fill_null(pc.list_value_length(col), 0).to_numpy(zero_copy_only=False).astype(np.int64)
        flat = col.flatten()  # the values of the non-null lists, in order
        inner = _arrow_to_numpy(name, flat)
        if n and col.null_count == 0 and (lengths == lengths[0]).all() and inner.dtype != object:
            return inner.reshape((n, int(lengths[0])) + inner.shape[1:])
        pieces = np.split(inner, np.cumsum(lengths)[:-1]) if n else []
        nulls = col.is_null().to_numpy(zero_copy_only=False)
        return _object_array([None if null else piece for piece, null in zip(pieces, nulls)])
    raise ConfigurationError(f"column {name!r} has Arrow type {t}, which write() does not support")


def _is_arrow_list(t: Any) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t))


def _object_array(items: Sequence[Any]) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    for i, v in enumerate(items):
        out[i] = v
    return out


@dataclass
class Source:
    """Columns in chunks of rows: ``first`` is used for planning, then every chunk is yielded."""

    names: list[str]
    total_rows: int | None
    chunks: Callable[[int], Iterator[dict[str, np.ndarray]]]
    first: dict[str, np.ndarray]
    in_memory: bool
    #: per-row shapes declared by the source (-1 = varies); they win over shapes seen in ``first``
    declared_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)


def _select(names: list[str], columns: Sequence[str] | None, key: str | None, origin: str) -> list[str]:
    if columns is None:
        chosen = list(names)
    else:
        chosen = list(columns)
        missing = [c for c in chosen if c not in names]
        if missing:
            raise ConfigurationError(f"{origin} has no column(s) {missing}; it has {names}")
        if len(set(chosen)) != len(chosen):
            raise ConfigurationError(f"columns= names a column twice: {chosen}")
    if key is not None and key not in names:
        raise ConfigurationError(f"key column {key!r} is not in {origin}; it has {names}")
    if key is not None and key not in chosen:
        chosen.append(key)
    return chosen


def _memory_source(arrays: Mapping[str, Any], columns: Sequence[str] | None, key: str | None, origin: str) -> Source:
    names = list(arrays.keys())
    bad = [n for n in names if not isinstance(n, str) or not n]
    if bad:
        raise ConfigurationError(f"column names must be non-empty strings, got {bad!r}")
    chosen = _select(names, columns, key, origin)
    cols: dict[str, np.ndarray] = {}
    for n in chosen:
        a = arrays[n]
        if not isinstance(a, np.ndarray):
            a = np.asarray(a)
        if a.ndim == 0:
            raise ConfigurationError(f"column {n!r} is a scalar; every column needs one value per row")
        cols[n] = a
    lengths = {n: len(a) for n, a in cols.items()}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{n}={m}" for n, m in lengths.items())
        raise ConfigurationError(
            f"columns have different numbers of rows ({detail}); every column needs one value per row"
        )
    total = next(iter(lengths.values()), 0)

    def chunks(rows: int) -> Iterator[dict[str, np.ndarray]]:
        for s in range(0, total, rows):
            yield {n: a[s : s + rows] for n, a in cols.items()}

    return Source(chosen, total, chunks, cols, True)


def _tf_source(ds: Any, columns: Sequence[str] | None, key: str | None) -> Source:
    import tensorflow as tf

    spec = ds.element_spec
    if not isinstance(spec, Mapping):
        raise ConfigurationError(
            "a tf.data.Dataset given to write() must have dict elements (column name -> tensor), unbatched; "
            f"this one has elements {spec}"
        )
    for n, s in spec.items():
        if not isinstance(s, tf.TensorSpec):
            raise ConfigurationError(
                f"column {n!r} of the dataset is a {type(s).__name__}; only dense tensors are supported"
            )
    chosen = _select(list(spec.keys()), columns, key, "the dataset")
    if columns is not None or key is not None:
        ds = ds.map(lambda el: {n: el[n] for n in chosen})
    card = int(ds.cardinality())
    total = card if card >= 0 else None
    fixed = {n for n in chosen if spec[n].shape.is_fully_defined()}

    def chunks(rows: int) -> Iterator[dict[str, np.ndarray]]:
        if len(fixed) == len(chosen):
            for batch in ds.batch(rows).as_numpy_iterator():
                yield {n: batch[n] for n in chosen}
            return
        buf: dict[str, list[Any]] = {n: [] for n in chosen}
        count = 0
        for el in ds.as_numpy_iterator():
            for n in chosen:
                buf[n].append(el[n])
            count += 1
            if count == rows:
                yield _stack(buf, fixed)
                buf = {n: [] for n in chosen}
                count = 0
        if count:
            yield _stack(buf, fixed)

    first_iter = chunks(1024)
    first = next(first_iter, None)
    if first is None:
        first = {
            n: np.zeros(
                (0,) + tuple(spec[n].shape.as_list()) if n in fixed else (0,),
                dtype=object if spec[n].dtype == tf.string or n not in fixed else spec[n].dtype.as_numpy_dtype,
            )
            for n in chosen
        }
    declared = {
        n: tuple(-1 if d is None else int(d) for d in spec[n].shape.as_list()) for n in chosen if n not in fixed
    }
    return Source(chosen, total, chunks, first, False, declared)


def _stack(buf: Mapping[str, list[Any]], fixed: set[str]) -> dict[str, np.ndarray]:
    return {n: (np.stack(v) if n in fixed else _object_array(v)) for n, v in buf.items()}


def open_source(data: Any, columns: Sequence[str] | None, key: str | None) -> Source:
    path = _path_of(data)
    if path is not None:
        wanted = None if columns is None else list(dict.fromkeys([*columns, *([key] if key else [])]))
        return _memory_source(read_columns(path, wanted), columns, key, str(path))
    if _is_tf_dataset(data):
        return _tf_source(data, columns, key)
    if isinstance(data, Mapping) or (hasattr(data, "keys") and hasattr(data, "__getitem__")):
        return _memory_source({k: data[k] for k in data.keys()}, columns, key, "data")
    raise ConfigurationError(
        f"write() cannot read a {type(data).__name__}: pass a dict of column name -> array, a path to "
        "a .npz/.csv/.parquet file, or a tf.data.Dataset of dicts"
    )
