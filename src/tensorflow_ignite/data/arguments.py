"""IgniteDataset arguments given as scalar tensors (as tensorflow-io's op took them).

tensorflow-io's ``IgniteDataset`` was a graph op whose ``host``, ``port``,
``local``, ``part`` and ``page_size`` were tensors, so pipelines build one
dataset per element of another::

    partitions = tf.data.Dataset.range(1024)
    rows = partitions.interleave(lambda p: IgniteDataset("cache", part=p))

Here each of those arguments is a Python value or a scalar tensor.
:func:`split` sorts them: a tensor whose value is known now (eager, or a
constant) becomes that Python value; the others -- symbolic, inside
``interleave``/``flat_map``/``map`` or a ``tf.function`` -- stay tensors and
become inputs of the dataset's op (:mod:`tensorflow_ignite.native.data_source`).
When an iterator starts, the op hands their values to the process's
rebuilder with the dataset's description (:mod:`.portable`), which reads
what they name: one dataset per element, in this process or any other.

``cache_name`` may be a tensor too, but its value must be known when the
dataset is built: the cache's schema decides the element structure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import ConfigurationError

__all__ = ["TENSOR_ARGUMENTS", "split", "static_string", "apply"]

#: The arguments that may be tensors known only when the dataset runs, and their kind.
TENSOR_ARGUMENTS: dict[str, str] = {"host": "string", "port": "int", "local": "bool", "part": "int", "page_size": "int"}


def _is_tensor(value: Any) -> bool:
    import tensorflow as tf

    return isinstance(value, (tf.Tensor, tf.Variable)) or tf.is_tensor(value)


def _checked(name: str, kind: str, tensor: Any) -> Any:
    """``tensor`` as a scalar of the op's dtype for ``kind``; a typed error naming ``name`` otherwise."""
    import tensorflow as tf

    dtype = tf.as_dtype(tensor.dtype)
    ok = {"string": dtype == tf.string, "bool": dtype == tf.bool, "int": dtype.is_integer}[kind]
    if not ok:
        want = {"string": "tf.string", "bool": "tf.bool", "int": "an integer dtype"}[kind]
        raise TypeError(f"IgniteDataset argument {name!r}: a tensor of {want} expected, got {dtype.name}")
    shape = tensor.shape
    if shape.rank is not None and shape.rank != 0:
        raise ConfigurationError(
            f"IgniteDataset argument {name!r} must be a scalar, got a tensor of shape "
            f"{shape}; build one dataset per value (e.g. with Dataset.interleave)"
        )
    return tf.cast(tensor, tf.int64) if kind == "int" and dtype != tf.int64 else tensor


def _python(kind: str, value: Any) -> Any:
    if kind == "string":
        return value.decode() if isinstance(value, bytes) else str(value)
    return bool(value) if kind == "bool" else int(value)


def split(params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``params`` with every tensor argument whose value is known now as a Python value, and the others.

    Returns ``(values, tensors)``: ``values`` holds every argument (a symbolic
    one as ``None``); ``tensors`` maps the names of the symbolic ones
    (:data:`TENSOR_ARGUMENTS`, in that order) to scalar tensors of the op's dtype
    (``tf.string``, ``tf.int64``, ``tf.bool``).  Raises ``TypeError`` for a
    tensor of the wrong dtype and :class:`ConfigurationError` for one that is
    not a scalar.
    """
    import tensorflow as tf

    values = dict(params)
    tensors: dict[str, Any] = {}
    for name, kind in TENSOR_ARGUMENTS.items():
        value = params.get(name)
        if not _is_tensor(value):
            continue
        tensor = _checked(name, kind, value)
        known = tf.get_static_value(tensor)
        if known is not None:
            values[name] = _python(kind, known)
        else:
            values[name] = None
            tensors[name] = tensor
    return values, tensors


def static_string(name: str, value: Any) -> Any:
    """``value``, or the Python string of a scalar string tensor whose value is known now."""
    if not _is_tensor(value):
        return value
    import tensorflow as tf

    tensor = _checked(name, "string", value)
    known = tf.get_static_value(tensor)
    if known is None:
        raise ConfigurationError(
            f"IgniteDataset argument {name!r} is a tensor whose value is known only when the dataset runs; "
            "the cache's schema, which decides the dataset's element structure, is read when the dataset is "
            "built: pass the cache name as a Python string or a constant"
        )
    return _python("string", known)


def apply(description: Mapping[str, Any], values: tuple[Any, ...]) -> dict[str, Any]:
    """A cache description with the values of its argument tensors put in (what :mod:`.portable` rebuilds).

    ``values`` are the op's inputs in the order the description's
    ``arguments.names`` lists them: the endpoint dialled first, the page size and
    the partition plan become what they name.  Raises
    :class:`ConfigurationError` for values that name nothing readable.
    """
    from ..client.client import parse_addresses
    from .plan import PartitionPlan

    d = dict(description)
    spec = d.pop("arguments", None) or {"names": []}
    names = list(spec["names"])
    cache = d.get("cache")
    if len(values) != len(names):
        raise ConfigurationError(
            f"IgniteDataset over cache {cache!r} was described with the arguments {names}, "
            f"but its op gave {len(values)} values"
        )
    given = {n: _python(TENSOR_ARGUMENTS[n], v) for n, v in zip(names, values)}
    if "host" in given or "port" in given:
        port = int(given.get("port", spec["port"]))
        if "host" in given:
            host, port = parse_addresses(given["host"], default_port=port)[0]
        else:
            host = spec["host"]
        if not host or not 0 < port < 65536:
            raise ConfigurationError(
                f"IgniteDataset over cache {cache!r}: no node at {host!r} port {port} "
                "(the host and port given as tensors)"
            )
        first = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        connection = dict(d["connection"])
        connection["endpoints"] = [first, *(e for e in connection["endpoints"] if e != first)]
        d["connection"] = connection
    if "page_size" in given:
        if given["page_size"] <= 0:
            raise ConfigurationError(
                f"IgniteDataset over cache {cache!r}: page_size must be positive, got "
                f"{given['page_size']} (the tensor's value)"
            )
        d["page_size"] = given["page_size"]
    part, local = int(given.get("part", spec.get("part", -1))), bool(given.get("local", spec.get("local", False)))
    if ("part" in given or "local" in given) and (part >= 0 or local):
        plan = dict(d["plan"])
        described = plan["partitions"]
        parts = None
        if spec.get("parts"):
            from .env import parse_partition_list

            parts = described if isinstance(described, list) else parse_partition_list(described, name="plan")
        tasks = PartitionPlan.build(
            partitions=int(plan["count"]) or 1024, part=part, parts=parts, local=local, cache_name=str(cache)
        ).tasks
        plan.update(partitions=[t.partition for t in tasks], local=local, node_scans=False)
        d["plan"] = plan
    return d
