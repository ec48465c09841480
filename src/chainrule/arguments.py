"""The checks of an op's constant arguments: shapes, axes, row indices and windows.

Each returns the argument in the form the op's row of the rule table takes, or raises an
error that names the op and the shapes or values, instead of numpy's message from deep
inside the forward function.
"""

import numpy as np

from .shape_errors import axis_message

__all__ = ["axis_arg", "int_tuple", "row_indices", "shape_args", "window_args"]


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


def window_args(shape, kernel, stride, padding, op):
    """``kernel`` as (kh, kw) for windows of an (N, C, H, W) ``shape``, or an error naming what does not fit."""
    kernel = (kernel, kernel) if isinstance(kernel, int | np.integer) else tuple(kernel)
    if len(kernel) != 2:
        raise ValueError(f"{op}: the kernel must be an int or a pair (kh, kw), got {kernel!r}")
    kh, kw = kernel
    if len(shape) != 4:
        raise ValueError(f"{op}: expected an input of shape (N, C, H, W), got shape {shape}")
    for name, value, least in (("stride", stride, 1), ("padding", padding, 0), ("kernel", min(kh, kw), 1)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < least:
            raise ValueError(f"{op}: {name} must be an int >= {least}, got {value!r}")
    h, w = shape[2] + 2 * padding, shape[3] + 2 * padding
    if kh > h or kw > w:
        padded = f"padded input ({h}, {w}) (input {shape[2:]}, padding {padding})" if padding else f"input {shape[2:]}"
        raise ValueError(f"{op}: the kernel ({kh}, {kw}) is larger than the {padded}")
    return int(kh), int(kw)


def axis_arg(axis, shape, op):
    """``axis`` of a reduction as None, an int or a tuple of ints, each checked against ``shape``."""
    if axis is None:
        return None
    if type(axis) is int and -len(shape) <= axis < len(shape):  # one axis in range: the usual case
        return axis
    single = not isinstance(axis, (tuple, list))
    axes = int_tuple((axis,) if single else tuple(axis), op, "axis")
    ndim = len(shape)
    if not all(-ndim <= ax < ndim for ax in axes) or len({ax % ndim for ax in axes}) != len(axes):
        shown = axes[0] if single else axes
        raise ValueError(axis_message(op, shown, shape))
    return axes[0] if single else axes
