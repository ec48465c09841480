"""The VJP rules of the rule table (:data:`chainrule.rules.RULES`, column ``vjp``): one per op.

A rule is called as ``rule(g, node, saved)``: ``g`` is G = dL/dC as a Tensor, ``node`` the
:class:`~chainrule.node.Node` of the op (its ``args``, ``input_shapes`` and ``needs_input_grad``)
and ``saved`` what the node kept: one slot per input, then one for the output, each a Tensor or
None. It returns one gradient per input, None for an input that needs none (see
:mod:`chainrule.rules`). Each rule's docstring states its math: ``C = A @ B.   dA = G Bᵀ, ...``.

The rules are written with Tensor operations on the Tensors they are given, so this module needs
no Tensor class. ``checkpoint``'s rule lives with its forward half, in :mod:`chainrule.checkpointing`.
"""

import numpy as np

from .forwards import pad_with_minus_inf, pool_windows


def add_vjp(g, node, saved):
    """C = A + B.   dA = G,   dB = G."""
    return g, g


def sub_vjp(g, node, saved):
    """C = A - B.   dA = G,   dB = -G."""
    return g, (-g if node.needs_input_grad[1] else None)


def mul_vjp(g, node, saved):
    """C = A * B (elementwise).   dA = G * B,   dB = G * A."""
    a, b, _ = saved
    need_a, need_b = node.needs_input_grad
    return (g * b if need_a else None), (g * a if need_b else None)


def div_vjp(g, node, saved):
    """C = A / B.   dA = G / B,   dB = -G * A / B² = -(G * (A / B)) / B.

    The last form never squares B: in float32, B² loses precision (subnormal) for |B| below
    about 1.1e-19 and is 0 below about 2.6e-23.
    """
    a, b, _ = saved
    need_a, need_b = node.needs_input_grad
    return (g / b if need_a else None), (-(g * (a / b)) / b if need_b else None)


def matmul_vjp(g, node, saved):
    """C = A @ B.   dA = G Bᵀ,   dB = Aᵀ G   (ᵀ swaps the last two axes).

    As in numpy, a 1-D A of shape (k,) acts as a row (1, k) and a 1-D B of shape (k,)
    as a column (k, 1), and the inserted axis is dropped from C.  So we put that axis
    back into G, use the 2-D formulas, and drop it from the gradient again.  Batch
    axes (all but the last two) broadcast like elementwise ops; unbroadcast sums them.
    dA reads only B and dB only A, so the node keeps A only when B needs a gradient.
    """
    a, b, _ = saved
    need_a, need_b = node.needs_input_grad
    a_ndim, b_ndim = (len(shape) for shape in node.input_shapes)
    if b_ndim == 1:
        g = g.reshape(g.shape + (1,))
    if a_ndim == 1:
        g = g.reshape(g.shape[:-1] + (1,) + g.shape[-1:])
    da = db = None
    if need_a:
        da = g @ _matrix_transpose(b.reshape(-1, 1) if b_ndim == 1 else b)
        if a_ndim == 1:
            da = da.reshape(da.shape[:-2] + da.shape[-1:])
    if need_b:
        db = _matrix_transpose(a.reshape(1, -1) if a_ndim == 1 else a) @ g
        if b_ndim == 1:
            db = db.reshape(db.shape[:-1])
    return da, db


def _matrix_transpose(t):
    if t.ndim == 2:
        return t.T
    return t.transpose(*range(t.ndim - 2), t.ndim - 1, t.ndim - 2)


def pow_vjp(g, node, saved):
    """C = A ** k for a constant k.   dA = G * k * A^(k-1)   (0 when k = 0)."""
    (a, _), (k,) = saved, node.args
    if k == 0:
        return (g * 0.0,)
    return (g * (k * a ** (k - 1)),)


def neg_vjp(g, node, saved):
    """C = -A.   dA = -G."""
    return (-g,)


def _copy_along_reduced_axes(g, shape, axis, keepdims):
    """G of a reduction over ``axis``, copied back along the reduced axes to ``shape``.

    Without keepdims the reduced axes are first put back with size 1, so that G lines
    up with A.  (After a reduction over all axes G is 0-d, which broadcasts as it is.)
    """
    if not keepdims and axis is not None:
        reduced = {ax % len(shape) for ax in ((axis,) if isinstance(axis, int) else axis)}
        g = g.reshape(tuple(1 if i in reduced else n for i, n in enumerate(shape)))
    return g.broadcast_to(shape)


def sum_vjp(g, node, saved):
    """C = A summed over some axes.   dA = G copied along the summed axes
    (every element of A enters its sum with derivative 1)."""
    (shape,) = node.input_shapes
    axis, keepdims = node.args
    return (_copy_along_reduced_axes(g, shape, axis, keepdims),)


def mean_vjp(g, node, saved):
    """C = mean of A over some axes, n numbers per mean.   dA = G / n copied along those axes."""
    (shape,) = node.input_shapes
    axis, keepdims = node.args
    n = int(np.prod(shape)) // max(g.size, 1)
    return (_copy_along_reduced_axes(g / n, shape, axis, keepdims),)


def max_vjp(g, node, saved):
    """C = max of A over some axes.   dA = G copied along those axes, times M / n.

    M is 1 where A equals its max and 0 elsewhere, and n counts those equal entries: ties
    split the gradient evenly, as torch.amax does.  M is a constant (it changes only where
    A jumps past a tie), so the rule can be differentiated again."""
    (a, c), (shape,) = (saved[0], saved[-1]), node.input_shapes
    axis, keepdims = node.args
    top = c.data if keepdims or axis is None else np.expand_dims(c.data, axis)
    mask = (a.data == top).astype(a.data.dtype)
    share = mask / mask.sum(axis=axis, keepdims=True)
    return (_copy_along_reduced_axes(g, shape, axis, keepdims) * share,)


def embedding_vjp(g, node, saved):
    """C = A[indices], the rows of A that an integer array picks.   dA = G added into those rows.

    A scatter-add: a row picked twice gets the sum of both gradients, never only the last.
    """
    (indices,), (shape,) = node.args, node.input_shapes
    return (g.scatter_add_rows(indices, shape[0]),)


def scatter_add_vjp(g, node, saved):
    """C = zeros with each slice of A added into the row its index names.   dA = G[indices].

    The op is embedding's VJP, and its own VJP is a lookup again, so both differentiate twice.
    """
    indices, _ = node.args
    return (g.take_rows(indices),)


def im2col_vjp(g, node, saved):
    """C = the (kh, kw) windows of A (N, C, H, W), stride apart, one row each: (N, rows, cols, C·kh·kw).
    dA = G's rows added back into the windows they came from (col2im).

    Windows overlap where the stride is smaller than the kernel, so an entry of A read by
    several windows gets the sum of their gradients; the zeros padded around A get none.
    """
    kernel, stride, padding = node.args
    return (g.col2im(node.input_shapes[0], kernel, stride, padding),)


def col2im_vjp(g, node, saved):
    """C = each row of A added into the window of an (N, C, H, W) array it stands for (im2col's VJP).
    dA = the windows of G (im2col), as im2col and col2im are each other's transpose."""
    _, kernel, stride, padding = node.args
    return (g.im2col(kernel, stride, padding),)


def max_pool2d_vjp(g, node, saved):
    """C = the max of each kh×kw window of A, the windows s apart.   dA = G routed to each window's max.

    A is (N, C, H, W), and a max passes its gradient to the one input that won it: with
    w(i, j) the entry that won window (i, j), dA[e] = Σ G[i, j] over the windows that e
    won, 0 if none. Where several tie, the first in the window (row by row) wins, as in
    torch's max_pool2d, not a share each as :meth:`Tensor.max`. With s smaller than the
    kernel, windows overlap, and col2im adds each window back into place, so an entry that
    wins several gets their sum. The routing is a constant mask, so the rule differentiates
    again. Padding (-inf) is never routed to, even where A's own entries are -inf too: the
    winner is the first entry of A itself that equals the max (the last NaN, where the max
    is NaN, as torch's kernel routes it).
    """
    (a, _), (kernel, stride, padding) = saved, node.args
    size = kernel[0] * kernel[1]
    windows = pool_windows(pad_with_minus_inf(a.data, padding), kernel, stride)
    top = windows.max(axis=-1, keepdims=True)  # C again, rather than keep it
    wins = (windows == top) | (np.isnan(windows) & np.isnan(top))
    if padding:  # only A's own entries can win
        inside = np.pad(np.ones(a.shape[2:], dtype=bool), padding, constant_values=False)
        wins &= pool_windows(inside[None, None], kernel, stride)
    first = wins.argmax(axis=-1)
    last = size - 1 - wins[..., ::-1].argmax(axis=-1)  # torch's kernel takes each NaN it meets as the max
    winner = np.where(np.isnan(top[..., 0]), last, first)[..., None]
    route = (np.arange(size) == winner).astype(a.data.dtype)  # one-hot at each window's max
    n, ch, rows, cols, _ = windows.shape
    routed = (g.reshape(n, ch, rows, cols, 1) * route).transpose(0, 2, 3, 1, 4)
    return (routed.reshape(n, rows, cols, ch * size).col2im(a.shape, kernel, stride, padding),)


def dropout_vjp(g, node, saved):
    """C = A * M for dropout's constant mask M (0, or 1/(1-p) where an entry is kept).   dA = G * M."""
    (mask,) = node.args
    return (g * mask,)


def reshape_vjp(g, node, saved):
    """C = A in a new shape (the same numbers in the same order).   dA = G reshaped to A's shape."""
    return (g.reshape(node.input_shapes[0]),)


def transpose_vjp(g, node, saved):
    """C = A with axes permuted by p (C's axis i is A's axis p[i]).   dA = G permuted by p⁻¹."""
    (axes,) = node.args
    ndim = len(axes)
    inverse = [0] * ndim
    for position, axis in enumerate(axes):
        inverse[axis % ndim] = position
    return (g.transpose(*inverse),)


def broadcast_to_vjp(g, node, saved):
    """C = A repeated along broadcast axes.   dA = G summed over those axes.

    That sum is exactly what the backward pass's unbroadcast does, so the rule passes G on."""
    return (g,)


def relu_vjp(g, node, saved):
    """C = max(A, 0).   dA = G where A > 0, else 0 (we take 0 at the kink A = 0).
    A > 0 exactly where C > 0, so the rule keeps C rather than A.  As C >= 0, the mask
    is C != 0, which also lets G through a nan of C, as PyTorch's relu does."""
    c = saved[-1]
    return (g * (c.data != 0).astype(c.dtype),)


def tanh_vjp(g, node, saved):
    """C = tanh(A).   dA = G * (1 - C²)."""
    c = saved[-1]
    return (g * (1 - c * c),)


def sigmoid_vjp(g, node, saved):
    """C = 1 / (1 + exp(-A)).   dA = G * C * (1 - C)."""
    c = saved[-1]
    return (g * (c * (1 - c)),)


def exp_vjp(g, node, saved):
    """C = exp(A).   dA = G * C."""
    c = saved[-1]
    return (g * c,)


def log_vjp(g, node, saved):
    """C = log(A) (natural).   dA = G / A."""
    a, _ = saved
    return (g / a,)


def log_softmax_vjp(g, node, saved):
    """C = log_softmax(A) = A - log Σ exp(A), the sum along one axis.
    dA = G - softmax(A) * ΣG, where softmax(A) = exp(C) and ΣG sums G along that axis
    (each A_j moves every C_i through the log-sum, with derivative softmax(A)_j)."""
    c, (axis,) = saved[-1], node.args
    return (g - c.exp() * g.sum(axis=axis, keepdims=True),)


def nll_loss_vjp(g, node, saved):
    """C = -(1/n) Σ_r A[r, y_r], minus the mean over the n rows of the entry that each row's
    label y_r picks (A holds log-probabilities: the negative log-likelihood).
    dA = G * W, where W is -1/n at each (r, y_r) and 0 elsewhere: a constant, so the rule
    can be differentiated again."""
    (labels,), (shape,) = node.args, node.input_shapes
    weights = np.zeros(shape, dtype=node.dtype)
    weights[np.arange(shape[0]), labels] = -1.0 / shape[0]
    return (g * weights,)


def abs_vjp(g, node, saved):
    """C = |A|.   dA = G * sign(A), with sign(0) = 0 (the kink gets 0, as torch's abs)."""
    a, _ = saved
    return (g * np.sign(a.data),)


def clamp_vjp(g, node, saved):
    """C = A clipped to [low, high] (either bound may be None).   dA = G where low <= A <= high, else 0.

    The bounds count as inside, as torch's clamp: at A = low exactly, G passes. With
    low > high every entry is high, a constant, and no entry passes."""
    (a, _), (low, high) = saved, node.args
    inside = np.ones(a.shape, dtype=bool)
    if low is not None:
        inside &= a.data >= low
    if high is not None:
        inside &= a.data <= high
    return (g * inside.astype(a.dtype),)


def _tie_shares(a, b, a_loses, b_loses):
    """Each side's share of G: ½ each at a tie, 0 where it loses, else 1, as torch's maximum and
    minimum split it (a NaN on either side loses nowhere, so both get G there)."""
    tie = a == b
    share_a = np.where(tie, 0.5, np.where(a_loses, 0.0, 1.0)).astype(a.dtype)
    share_b = np.where(tie, 0.5, np.where(b_loses, 0.0, 1.0)).astype(b.dtype)
    return share_a, share_b


def maximum_vjp(g, node, saved):
    """C = max(A, B) entry by entry.   dA = G * S_A,   dB = G * S_B, with S_A = 1 where A > B, ½ where
    A = B and 0 where A < B, S_B the other way round: constants, so the rule differentiates again."""
    a, b, _ = saved
    share_a, share_b = _tie_shares(a.data, b.data, a.data < b.data, a.data > b.data)
    need_a, need_b = node.needs_input_grad
    return (g * share_a if need_a else None), (g * share_b if need_b else None)


def minimum_vjp(g, node, saved):
    """C = min(A, B) entry by entry.   dA = G * S_A,   dB = G * S_B, with S_A = 1 where A < B, ½ where
    A = B and 0 where A > B, S_B the other way round."""
    a, b, _ = saved
    share_a, share_b = _tie_shares(a.data, b.data, a.data > b.data, a.data < b.data)
    need_a, need_b = node.needs_input_grad
    return (g * share_a if need_a else None), (g * share_b if need_b else None)


def where_vjp(g, node, saved):
    """C = A where the constant condition M is true, else B.   dA = G * M,   dB = G * (1 - M)."""
    (condition,) = node.args
    mask = condition.astype(node.dtype)
    need_a, need_b = node.needs_input_grad
    return (g * mask if need_a else None), (g * (1 - mask) if need_b else None)


def index_vjp(g, node, saved):
    """C = A[key]: slices, ints, integer arrays, a boolean mask.   dA = zeros with G added at key.

    An entry that the key picks twice (an integer array with a repeat) gets both
    gradients (``np.add.at``), never only the last. The op's VJP is :meth:`Tensor.add_at`,
    whose own VJP is this indexing again, so both differentiate twice."""
    (key,), (shape,) = node.args, node.input_shapes
    return (g.add_at(key, shape),)


def add_at_vjp(g, node, saved):
    """C = zeros of a shape with A added at key (index's VJP).   dA = G[key]."""
    key, _ = node.args
    return (g[key],)


def cat_vjp(g, node, saved):
    """C = the inputs joined along an axis.   dA = the slice of G where A lies, for each input A."""
    (axis,), gradients, start = node.args, [], 0
    for shape, need in zip(node.input_shapes, node.needs_input_grad, strict=True):
        stop = start + shape[axis]
        gradients.append(g[(slice(None),) * axis + (slice(start, stop),)] if need else None)
        start = stop
    return tuple(gradients)


def stack_vjp(g, node, saved):
    """C = the inputs stacked along a new axis.   dA = G's entry i along that axis, for the i-th input A."""
    (axis,), needs = node.args, node.needs_input_grad
    before = (slice(None),) * axis  # the front door made the axis >= 0
    return tuple(g[(*before, i)] if need else None for i, need in enumerate(needs))
