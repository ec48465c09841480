"""The checks of an op's constant arguments: shapes, axes, indices and windows.

Each returns the argument in the form the op's row of the rule table takes, or raises an
error that names the op and the shapes or values, instead of numpy's message from deep
inside the forward function.
"""

import numpy as np

from .shape_errors import axis_message

__all__ = ["axis_arg", "index_key", "int_tuple", "join_axis", "row_indices", "shape_args", "window_args"]


def shape_args(shape):
    """``reshape(2, 3)`` and ``reshape((2, 3))`` both mean the shape (2, 3)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(shape)


def int_tuple(values, op, what):
    """``values`` as a tuple of Python ints (numpy integers accepted), or a TypeError naming ``op``."""
    if all([type(value) is int for value in values]):  # the usual case, checked in one pass
        return tuple(values)
    for position, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            hint = " (use // for integer division)" if isinstance(value, float) and what == "shape" else ""
            raise TypeError(
                f"Tensor.{op}: the {what} must be ints, got {tuple(values)!r}: "
                f"{type(value).__name__} {value!r} at position {position}{hint}"
            )
    return tuple(int(value) for value in values)


def row_indices(indices, shape, op):
    """``indices`` as an integer array of rows of a tensor of ``shape``, each in [0, shape[0]), or a clear error."""
    array = np.asarray(indices)
    if array.dtype.kind not in "iu":
        raise TypeError(f"{op}: indices must be integers, got dtype {array.dtype}")
    if not shape:
        raise ValueError(f"{op}: a 0-d tensor has no rows to index")
    rows = shape[0]
    bad = np.argwhere((array < 0) | (array >= rows))
    if bad.size:
        where = tuple(int(i) for i in bad[0])
        raise IndexError(
            f"{op}: index {array[where]} at position {where} of indices of shape {array.shape} "
            f"is out of range for {rows} rows: indices must be in [0, {rows})"
        )
    return array.astype(np.intp)


def window_args(shape, kernel, stride, padding, op, fits=True):
    """``kernel`` as (kh, kw) for windows of an (N, C, H, W) ``shape``, or an error naming what does not fit.

    ``fits=False`` checks the arguments' forms only, not that the kernel fits the input."""
    kernel = (kernel, kernel) if isinstance(kernel, int | np.integer) else kernel
    if not isinstance(kernel, tuple | list) or len(kernel) != 2:
        raise ValueError(f"{op}: the kernel must be an int or a pair (kh, kw), got {kernel!r}")
    kh, kw = kernel
    if len(shape) != 4:
        raise ValueError(f"{op}: expected an input of shape (N, C, H, W), got shape {shape}")
    for name, value, least in (("kernel", kh, 1), ("kernel", kw, 1), ("stride", stride, 1), ("padding", padding, 0)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < least:
            raise ValueError(f"{op}: {name} must be an int >= {least}, got {value!r}")
    h, w = shape[2] + 2 * padding, shape[3] + 2 * padding
    if fits and (kh > h or kw > w):
        padded = f"padded input ({h}, {w}) (input {shape[2:]}, padding {padding})" if padding else f"input {shape[2:]}"
        raise ValueError(f"{op}: the kernel ({kh}, {kw}) is larger than the {padded}")
    return int(kh), int(kw)


def axis_arg(axis, shape, op):
    """``axis`` of a reduction as None, an int or a tuple of ints, each checked against ``shape``.

    A 0-d tensor takes axis 0 or -1, as in torch, and the reduction is then over its one number."""
    if axis is None:
        return None
    if type(axis) is int and -len(shape) <= axis < len(shape):  # one axis in range: the usual case
        return axis
    single = not isinstance(axis, (tuple, list))
    axes = int_tuple((axis,) if single else tuple(axis), op, "axis")
    ndim = len(shape)
    if not ndim and set(axes) <= {0, -1}:  # a 0-d tensor's one implicit axis, as torch allows
        return None
    if not ndim:
        raise ValueError(f"{op}: axis {axis!r} is not valid for a 0-d tensor: use None, 0 or -1, as torch does")
    if not all(-ndim <= ax < ndim for ax in axes) or len({ax % ndim for ax in axes}) != len(axes):
        shown = axes[0] if single else axes
        raise ValueError(axis_message(op, shown, shape))
    return axes[0] if single else axes


_INDEX_FORMS = (
    "an int, a slice, None, ..., an integer list or numpy array, or a boolean numpy array (a mask such as x.data > 0)"
)


def index_key(key, op, shape):
    """An index of ``x[key]`` for a tensor of ``shape``, as a tuple numpy takes, its arrays copied,
    or an error naming ``op``.

    The copy matters: the gradient adds G back at the key, so a key array changed after the
    forward pass would otherwise send it to other entries. A key of ints and slices only
    ends with ``...``, so that numpy returns a view even when every axis gets an int, as
    torch does. numpy counts an int among the index arrays, torch applies the ints first,
    so a key with both can order the result's axes differently (``x[1, :, [0, 4]]`` is
    (2, 4) in numpy, (4, 2) in torch): such a key is refused where the two differ.
    """
    parts = [_key_part(part, op) for part in (key if isinstance(key, tuple) else (key,))]
    arrays = [part for part in parts if isinstance(part, np.ndarray)]
    if not arrays and Ellipsis not in parts:
        parts.append(Ellipsis)  # every axis an int: a 0-d view, not a copied number
    elif arrays and any(isinstance(part, int) for part in parts) and not _read_alike(parts, shape):
        raise IndexError(
            f"{op}: numpy and torch order the result of this key differently (an int and an index array "
            "are apart); index in two steps instead, e.g. x[1][:, [0, 4]] for x[1, :, [0, 4]]"
        )
    return tuple(parts)


def _read_alike(parts, shape):
    """Whether numpy's reading of the key (ints among the arrays) gives torch's (ints first), on a
    numbered array of ``shape``."""
    numbered = np.arange(int(np.prod(shape))).reshape(shape)
    try:
        numpy_reads = numbered[tuple(parts)]
    except IndexError:
        return True  # out of bounds: the forward pass says so
    first = []  # torch: the ints and slices first, each array's axes kept whole
    for part in parts:
        if isinstance(part, np.ndarray):
            first += [slice(None)] * (part.ndim if part.dtype == bool else 1)
        else:
            first.append(part)
    then = [part if isinstance(part, np.ndarray) or part is Ellipsis else slice(None) for part in parts]
    then = [part for part, was in zip(then, parts, strict=True) if not isinstance(was, int)]
    try:
        torch_reads = numbered[tuple(first)][tuple(then)]
    except IndexError:  # a key this reading cannot follow: refused, to be safe
        return False
    return numpy_reads.shape == torch_reads.shape and np.array_equal(numpy_reads, torch_reads)


def _key_part(part, op):
    if part is None or part is Ellipsis:
        return part
    if isinstance(part, slice):
        for end in (part.start, part.stop, part.step):
            if end is not None and (isinstance(end, bool) or not isinstance(end, int | np.integer)):
                raise TypeError(f"{op}: a slice's start, stop and step must be ints or None, got {part!r}")
        if part.step == 0:
            raise ValueError(f"{op}: a slice's step must not be 0, got {part!r}")
        return part
    if isinstance(part, int | np.integer) and not isinstance(part, bool | np.bool_):
        return int(part)
    if isinstance(part, list | np.ndarray):
        try:
            array = np.array(part)  # a copy
        except ValueError:
            raise ValueError(f"{op}: an index list must be rectangular, got {part!r}") from None
        if array.ndim == 0 and array.dtype.kind in "iu":
            return int(array)  # a 0-d integer array is an int, as in torch
        if array.dtype.kind == "b":
            return array
        if array.dtype.kind in "iu" or array.size == 0:
            return array.astype(np.intp)
        raise TypeError(f"{op}: an index array must hold ints or bools, got dtype {array.dtype}")
    if type(part).__module__.startswith("chainrule"):
        raise TypeError(f"{op}: a chainrule Tensor cannot be an index (it holds floats); use {_INDEX_FORMS}")
    kind = f"{type(part).__module__.split('.')[0]} {type(part).__name__}".removeprefix("builtins ")
    shown = f" {part!r}" if len(repr(part)) <= 40 else ""
    raise TypeError(f"{op}: cannot index with a {kind}{shown}; use {_INDEX_FORMS}")


def join_axis(axis, ndim, op):
    """The axis ``cat`` (ndim = the inputs') or ``stack`` (ndim = the result's) joins along, made >= 0."""
    if isinstance(axis, bool) or not isinstance(axis, int | np.integer) or not -ndim <= axis < ndim:
        raise ValueError(f"{op}: axis {axis!r} is not valid: for these tensors it must be an int in [-{ndim}, {ndim})")
    return int(axis) % ndim
