"""The values sent between the grader and an answer's process, as JSON: :func:`encode` and :func:`decode`.

Both sides of grading use it. The answer's process (:mod:`chainrule_course.grading.runner`) decodes
the inputs of each call and encodes what the answer returned; the grader
(:mod:`chainrule_course.grading.apart`) encodes the inputs and decodes the results. What crosses is
data, never an object of the answer's: numbers, strings, lists, tuples, dicts, numpy arrays (their
dtype and shape kept), chainrule Tensors and namespaces; anything else arrives as a marker naming
its type. A value nested more than :data:`MAX_DEPTH` deep, or of more than :data:`ANSWER_LIMIT`
numbers, is :class:`Unreadable`.

Like the runner, it imports nothing but the standard library at its top (numpy and chainrule
only in the functions that read an array or a Tensor, where an exercise allows them): it runs
in the answer's process, started as ``python -I -S runner.py``, and there the runner loads this
file by its path, from beside its own, with their folder kept off ``sys.path``. So the grader
ships and shows the two files together (:data:`chainrule_course.grading.apart.RUNNER_FILES`).
"""

from __future__ import annotations

import math
import sys

MAX_DEPTH = 20
ANSWER_LIMIT = 1_000_000  # numbers in one result: a larger one fails that call alone


class Unreadable(ValueError):
    """A value that :func:`decode` cannot read, or an answer of a type that cannot be carried."""


def encode(value, depth: int = 0, count: list | None = None):
    """``value`` as JSON data that :func:`decode` turns back into an equal value.

    Numbers, strings, lists, tuples, dicts and numpy arrays keep their kind (arrays their dtype
    and shape), and so do a chainrule Tensor (its array) and a ``types.SimpleNamespace`` (its
    fields): what a rule of the tensor engine is called with. What a check reads as a sequence
    becomes a list: a deque, a dict's keys or values, a range, a generator. A Fraction or a
    Decimal becomes a float, a subclass of int or float its plain value, read without calling
    the subclass's methods. Anything else becomes a marker naming its type, so that a check
    says "it returned a Value" rather than crash. Only the answer's process runs the answer's
    objects: what leaves it is data.
    """
    count = [0] if count is None else count
    if depth > MAX_DEPTH:
        raise Unreadable(f"a value nested more than {MAX_DEPTH} deep")
    count[0] += 1
    if count[0] > ANSWER_LIMIT:
        raise Unreadable(f"more than {ANSWER_LIMIT:,} numbers")
    if value is None or type(value) in (bool, str, int, float):
        return value
    if value is Ellipsis:
        return {"t": "ellipsis"}
    if type(value).__name__ == "SimpleNamespace" and type(value).__module__ == "types":
        return {"t": "namespace", "v": encode(dict(vars(value)), depth + 1, count)}
    if isinstance(value, bool):
        return bool.__bool__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, (list, tuple)):
        kind = "tuple" if isinstance(value, tuple) else "list"
        return {"t": kind, "v": [encode(item, depth + 1, count) for item in list.__iter__(list(value))]}
    if isinstance(value, dict):
        items = dict.items(value)
        return {"t": "dict", "v": [[encode(k, depth + 1, count), encode(v, depth + 1, count)] for k, v in items]}
    numbers = _numbers(value, count)
    if numbers is not None:
        return numbers
    if _sequence(value):
        encoded = []
        for item in value:
            encoded.append(encode(item, depth + 1, count))
        return {"t": "list", "v": encoded}
    return {"t": "other", "type": type(value).__name__[:60]}


def _numbers(value, count: list):
    """``value`` encoded when it is a number of the standard library's or numpy's, else None."""
    import decimal
    import fractions

    if type(value) in (fractions.Fraction, decimal.Decimal):
        return float(value)
    numpy = sys.modules.get("numpy")
    if numpy is None:
        return None
    if type(value).__name__ == "Tensor" and isinstance(getattr(value, "data", None), numpy.ndarray):
        array = _numbers(value.data, count)  # a chainrule Tensor: its array, read back as a Tensor
        return None if array is None else {"t": "tensor", "v": array}
    if type(value) is numpy.ndarray and value.dtype.kind in "biuf":
        count[0] += value.size
        if count[0] > ANSWER_LIMIT:
            raise Unreadable(f"more than {ANSWER_LIMIT:,} numbers")
        return {"t": "array", "dtype": value.dtype.str, "shape": list(value.shape), "v": value.ravel().tolist()}
    if isinstance(value, numpy.generic) and value.dtype.kind in "biuf":
        return {"t": "scalar", "dtype": value.dtype.str, "v": value.item()}
    return None


def _sequence(value) -> bool:
    """Whether a check reads ``value`` as the sequence of its items."""
    import collections
    import types

    views: tuple[type, ...] = (type({}.keys()), type({}.values()), type({}.items()))
    return isinstance(value, (collections.deque, range, types.GeneratorType, *views)) or type(value).__name__ in (
        "map",
        "filter",
        "zip",
        "reversed",
        "list_reverseiterator",
        "list_iterator",
        "tuple_iterator",
        "enumerate",
    )


def decode(data, depth: int = 0):
    """The value that :func:`encode` wrote; :class:`Unreadable` for anything else."""
    if depth > MAX_DEPTH:
        raise Unreadable(f"a value nested more than {MAX_DEPTH} deep")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if not isinstance(data, dict) or not isinstance(data.get("t"), str):
        raise Unreadable(f"an encoded value of type {type(data).__name__}")
    kind = data["t"]
    if kind == "ellipsis":
        return Ellipsis
    if kind in ("list", "tuple"):
        items = [decode(item, depth + 1) for item in _list(data.get("v"))]
        return items if kind == "list" else tuple(items)
    if kind == "dict":
        pairs = [_list(pair) for pair in _list(data.get("v"))]
        if any(len(pair) != 2 for pair in pairs):
            raise Unreadable("a dict entry that is not a pair")
        return {_hashable(decode(k, depth + 1)): decode(v, depth + 1) for k, v in pairs}
    if kind in ("array", "scalar"):
        return _array(data, kind)
    if kind == "tensor":
        return _tensor(data.get("v"))
    if kind == "namespace":
        import types

        fields = decode(data.get("v"), depth + 1)
        if not isinstance(fields, dict) or not all(isinstance(k, str) for k in fields):
            raise Unreadable("a namespace whose fields are not named")
        return types.SimpleNamespace(**fields)
    if kind == "other":
        name = str(data.get("type", "object"))
        return type(name if name.isidentifier() else "object", (), {"__repr__": lambda self: f"<{name}>"})()
    raise Unreadable(f"an encoded value of kind {kind!r}")


def _list(data) -> list:
    if not isinstance(data, list):
        raise Unreadable(f"expected a list, found {type(data).__name__}")
    return data


def _hashable(key):
    try:
        hash(key)
    except TypeError:
        raise Unreadable("a dict key that is not hashable") from None
    return key


def _tensor(data):
    """A chainrule Tensor around the array ``data``, where chainrule is loaded; elsewhere the array.

    A check hands a rule of the tensor engine its Tensors (an exercise that allows chainrule),
    and the rule's gradients come back as Tensors."""
    if not isinstance(data, dict) or data.get("t") != "array":
        raise Unreadable("a tensor without an array")
    array = _array(data, "array")
    if "chainrule" not in sys.modules:
        return array
    import importlib

    return importlib.import_module("chainrule.tensor").Tensor(array)


def _array(data: dict, kind: str):
    import numpy as np

    try:
        dtype = np.dtype(data["dtype"])
    except (KeyError, TypeError):
        raise Unreadable("an array without a valid dtype") from None
    if dtype.kind not in "biuf":
        raise Unreadable(f"an array of dtype {dtype}")
    if kind == "scalar":
        return dtype.type(data.get("v"))
    shape = tuple(_list(data.get("shape")))
    values = _list(data.get("v"))
    if not all(type(n) is int and n >= 0 for n in shape) or math.prod(shape) != len(values):
        raise Unreadable(f"an array whose shape {shape} does not hold its {len(values)} entries")
    return np.array(values, dtype=dtype).reshape(shape)
