"""The forward functions of the rule table (:data:`chainrule.rules.RULES`, column ``forward``).

Each takes numpy arrays, then the op's constant args, and returns an array. Where numpy
would return nan or inf, or a wrong shape, for a value that is really an error (a divisor
of 0, the log of a negative number), the function raises and names the op and the values.
Ops whose forward is numpy's own (``np.add``, ``np.tanh``) name it in their row directly.
"""

import numpy as np


def div_forward(a, b):
    """A / B; an exact 0 in B is an error that names where (a gradient through it could only be inf)."""
    if not b.all():
        where = tuple(int(i) for i in np.argwhere(b == 0)[0]) if b.ndim else ()
        at = f" at entry {where[0] if len(where) == 1 else where}" if where else ""
        raise ZeroDivisionError(f"Tensor / (divide): the divisor (shape {b.shape}) is 0{at}")
    return np.divide(a, b)


# The reductions call the ufunc's reduce, which ndarray.sum and .max reach through a Python wrapper.
def sum_forward(a, axis, keepdims):
    return np.add.reduce(a, axis=axis, keepdims=keepdims)


def mean_forward(a, axis, keepdims):
    return a.mean(axis=axis, keepdims=keepdims)


def max_forward(a, axis, keepdims):
    return np.maximum.reduce(a, axis=axis, keepdims=keepdims)


def transpose_forward(a, axes):
    return a.transpose(axes)  # the method: np.transpose reaches it through two Python calls


def relu_forward(a):
    return np.maximum(a, 0)


def sigmoid_forward(a):
    # exp(-a) overflows for large negative a, so use e = exp(-|a|) <= 1 on both sides:
    # 1 / (1 + e) for a >= 0 and e / (1 + e) for a < 0.
    e = np.exp(-np.abs(a))
    return np.where(a >= 0, 1, e) / (1 + e)


def embedding_forward(table, indices):
    return table[indices]


def scatter_add_forward(g, indices, rows):
    return add_at_forward(g, indices, (rows, *g.shape[indices.ndim :]))


def dropout_forward(a, mask):
    return a * mask


def im2col_forward(a, kernel, stride, padding):
    windows = _windows(np.pad(a, ((0, 0), (0, 0), (padding, padding), (padding, padding))), kernel, stride)
    n, c, rows, cols, kh, kw = windows.shape
    return windows.transpose(0, 2, 3, 1, 4, 5).reshape(n, rows, cols, c * kh * kw)


def _windows(a, kernel, stride):
    """The (kh, kw) windows of an (N, C, H, W) array, ``stride`` apart: a view (N, C, rows, cols, kh, kw)."""
    view = np.lib.stride_tricks.sliding_window_view(a, kernel, axis=(2, 3))
    return view[:, :, ::stride, ::stride]


def pool_windows(a, kernel, stride):
    """The (kh, kw) windows of an (N, C, H, W) array, ``stride`` apart, as (N, C, rows, cols, kh·kw),
    rows = (H − kh) // stride + 1: what is past the last whole window is left out, as in torch."""
    windows = _windows(a, kernel, stride)
    return windows.reshape(*windows.shape[:4], kernel[0] * kernel[1])


def max_pool2d_forward(a, kernel, stride, padding):
    return pool_windows(pad_with_minus_inf(a, padding), kernel, stride).max(axis=-1)


def pad_with_minus_inf(a, padding):
    """An (N, C, H, W) array with ``padding`` rows and columns of -inf around H and W: no max picks them."""
    if not padding:
        return a
    return np.pad(a, ((0, 0), (0, 0), (padding, padding), (padding, padding)), constant_values=-np.inf)


def col2im_forward(g, shape, kernel, stride, padding):
    n, c, h, w = shape
    (kh, kw), rows, cols = kernel, g.shape[1], g.shape[2]
    # (kh, kw, N, C, rows, cols), contiguous: each window entry (i, j) is one block to add
    patches = np.ascontiguousarray(g.reshape(n, rows, cols, c, kh, kw).transpose(4, 5, 0, 3, 1, 2))
    out = np.zeros((n, c, h + 2 * padding, w + 2 * padding), dtype=g.dtype)
    for i in range(kh):  # every window adds its entry (i, j) into one strided slice
        for j in range(kw):
            out[:, :, i : i + stride * rows : stride, j : j + stride * cols : stride] += patches[i, j]
    return out[:, :, padding : padding + h, padding : padding + w]


def log_forward(a):
    if a.size and a.min() <= 0:
        smallest = float(a.min())
        count = int(np.count_nonzero(a <= 0))
        raise ValueError(
            f"log: the input must be positive, but its min value is {smallest!r} ({count} of {a.size} values are <= 0)"
        )
    return np.log(a)


def log_softmax_forward(a, axis):
    # Subtracting the largest entry first keeps exp from overflowing; the result is
    # the same because log_softmax(a - m) = log_softmax(a) for any constant m.
    if not a.size:  # no entries (an empty axis, or another): nothing to normalise, once the axis is checked
        return a.copy() + np.add.reduce(a, axis=axis, keepdims=True)
    shifted = a - np.maximum.reduce(a, axis=axis, keepdims=True)
    return shifted - np.log(np.add.reduce(np.exp(shifted), axis=axis, keepdims=True))


def nll_loss_forward(a, labels):
    # minus the mean over the rows of the entry each row's label picks
    return np.add.reduce(a[np.arange(len(labels)), labels]) / -len(labels)


def pow_forward(a, k):
    if not float(k).is_integer() and a.size and a.min() < 0:
        raise ValueError(
            f"power: a negative base to the non-integer power {k!r} is not a real number "
            f"(min value of the base {float(a.min())!r})"
        )
    return a**k


def index_forward(a, key):
    """``a[key]``: numpy's indexing, its IndexError reworded to name the op and the shape."""
    try:
        return a[key]
    except IndexError as error:
        raise IndexError(f"index: {error} (the Tensor has shape {a.shape})") from None


def add_at_forward(g, key, shape):
    out = np.zeros(shape, dtype=g.dtype)
    np.add.at(out, key, g)  # unbuffered: an entry the key picks twice gets both
    return out


def where_forward(a, b, condition):
    return np.where(condition, a, b)


def clamp_forward(a, low, high):
    return np.clip(a, low, high)


def cat_forward(*arrays_then_axis):
    *arrays, axis = arrays_then_axis
    return np.concatenate(arrays, axis=axis)


def stack_forward(*arrays_then_axis):
    *arrays, axis = arrays_then_axis
    return np.stack(arrays, axis=axis)
