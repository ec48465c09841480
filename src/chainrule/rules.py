"""The rule table: for every operation of the tensor engine, its forward function and its VJP rule.

For ``C = f(A)`` the Jacobian dC/dA is a huge matrix (``C.size`` by ``A.size``), but
backpropagation never needs it: it needs only ``G`` = dL/dC, the gradient of the loss
with respect to the output, pushed through to dL/dA.  For every operation that push is
a short formula in ``G`` and the forward values, for example

    C = A @ B        dA = G Bᵀ,   dB = Aᵀ G
    C = tanh(A)      dA = G * (1 - C²)

Each operation is therefore two small functions -- a *forward* function on numpy
arrays (numpy's own, or one of :mod:`chainrule.forwards`) and a *VJP rule*, here -- and
all of them are listed in one table, :data:`RULES`,
together with what each input's gradient reads from the forward pass (``reads``) and
whether the results are checked for nan/inf.

A rule is called as ``rule(g, node, saved)``: ``g`` is G as a Tensor, ``node`` the
:class:`~chainrule.node.Node` of the op (its ``args``, ``input_shapes`` and
``needs_input_grad``) and ``saved`` what the node kept: one slot per input, then one
for the output, each a Tensor or None.  A slot is filled only when a gradient that will
be computed reads it (see :class:`Rule`), so a rule reads a slot only for the inputs in
``needs_input_grad``.  It returns one gradient per input, None for an input that needs
none.  A result may still have the broadcast shape:
the backward pass sums it down with ``unbroadcast``, in one place, for every rule.

The rules are written with Tensor operations on the Tensors they are given, so this
module needs no Tensor class.  Normally they run with recording off and cost only the numpy work; with
``create_graph=True`` they record, and the gradients can be differentiated again.

One row is not an array function: ``checkpoint`` runs a whole function of Tensors as
one op, and its rule runs that function again and backpropagates through it. Both
halves live in :mod:`chainrule.checkpointing`; its row here names them like any other.
:mod:`chainrule.tensor` reads the table.
"""

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from . import flops as F
from .checkpointing import checkpoint_vjp, refuse_apply
from .forwards import (
    add_at_forward,
    cat_forward,
    clamp_forward,
    col2im_forward,
    div_forward,
    dropout_forward,
    embedding_forward,
    im2col_forward,
    index_forward,
    log_forward,
    log_softmax_forward,
    max_forward,
    max_pool2d_forward,
    mean_forward,
    nll_loss_forward,
    pad_with_minus_inf,
    pool_windows,
    pow_forward,
    relu_forward,
    scatter_add_forward,
    sigmoid_forward,
    stack_forward,
    sum_forward,
    transpose_forward,
    where_forward,
)
from .shape_errors import (
    axis_error,
    broadcast_to_error,
    cat_error,
    elementwise_error,
    matmul_error,
    max_error,
    reshape_error,
    transpose_error,
    where_error,
)

__all__ = ["RULES", "Rule"]

# --------------------------------------------------------------------------- VJP rules
#
# ``rule(g, node, saved)`` returns one gradient per input (see the module docstring).


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


_KEPT: dict = {}  # Rule.kept's answers, by (reads, needs_input_grad)


class Rule(NamedTuple):
    """One row of :data:`RULES`: how to compute an op and how to push gradients through it.

    ``reads`` says, per input, which forward values that input's gradient reads: a tuple
    of the names ``"A"`` and ``"B"`` (the inputs) and ``"C"`` (the output: tanh's rule
    needs C, not A), empty for none.  Multiply's ``(("B",), ("A",))`` says that dA reads B
    and dB reads A.  :data:`EVERY_INPUT` says that every input's gradient reads every
    input (checkpoint's), :data:`NO_INPUT` that none reads anything, however many inputs
    the op has (cat's).  The node keeps only what the gradients that will be computed
    read (those of the inputs that need one), as PyTorch's saved tensors do: for
    ``Z * 0.5`` only dZ is computed, it reads the 0.5, and Z is not kept.
    The backward pass checks every gradient it passes on for nan/inf and names the op
    that made it. ``nonfinite_hint`` is the likely cause that the error then names, where
    the rule has one of its own (a quotient divides by a small B, a log by a small A).
    ``keeps_finite`` marks a rule whose gradients only copy, select, mask or negate G, so
    they are finite whenever G is (and G was tested when it was made): the pass does not
    test them again, unless they are summed down to a broadcast input's shape.

    ``name`` is what messages call the op (``"multiply"`` for ``*``). ``flops`` counts its
    floating-point operations (:mod:`chainrule.flops`; :func:`chainrule.cost.count_flops` reads
    it). ``shape_error``
    writes the message for a forward that numpy refused for its shapes:
    ``shape_error(name, input_shapes, args)``; None keeps numpy's own.

    One op's forward is not an array function: checkpoint's, which runs a function of
    Tensors. :func:`chainrule.checkpoint` runs it and records the op, and its row's
    forward only says so.
    """

    forward: Callable
    vjp: Callable
    reads: tuple
    name: str
    flops: Callable | None = None
    shape_error: Callable | None = None
    nonfinite_hint: str = "the incoming gradient times the local derivative overflowed"
    keeps_finite: bool = False

    def kept(self, needs_input_grad):
        """Which slots of the node are filled: one bool per input, then one for the output.

        A slot is filled when the gradient of an input that needs one reads it (worked out once, in _KEPT)."""
        key, n = (self.reads, needs_input_grad), len(needs_input_grad)
        if key not in _KEPT and self.reads == EVERY_INPUT:
            _KEPT[key] = (any(needs_input_grad),) * n + (False,)
        elif key not in _KEPT and self.reads == NO_INPUT:
            _KEPT[key] = (False,) * (n + 1)
        elif key not in _KEPT:
            read = {name for names, need in zip(self.reads, needs_input_grad, strict=True) if need for name in names}
            _KEPT[key] = tuple(name in read for name in ("A", "B")[:n]) + ("C" in read,)
        return _KEPT[key]


#: ``reads`` of a rule whose every input's gradient reads every input.
EVERY_INPUT = "every input"
#: ``reads`` of a rule, of any number of inputs, whose gradients read no forward value (cat's, stack's).
NO_INPUT = "no input"
#: The slots a rule can read: the inputs A and B, the output C.
SLOTS = ("A", "B", "C")


def _checked(rules):
    """``rules``, once every row's ``reads`` is well formed: one tuple of slot names per input, each name a
    slot the op has (a wrong entry would otherwise fail deep in a backward pass, as an unpacking error)."""
    for op, rule in rules.items():
        reads = rule.reads
        if reads in (EVERY_INPUT, NO_INPUT):
            continue
        if not isinstance(reads, tuple) or not reads or not all(isinstance(r, tuple) for r in reads):
            raise TypeError(f"RULES[{op!r}]: reads must hold one tuple of slot names per input, got {reads!r}")
        for i, names in enumerate(reads):
            slots = (*SLOTS[: len(reads)], "C")
            for name in names:
                if name not in slots:
                    raise ValueError(
                        f"RULES[{op!r}]: reads[{i}] names slot {name!r}, but a rule of {len(reads)} input(s) "
                        f"reads only {', '.join(slots)} (the inputs, then the output C)"
                    )
    return rules


RULES = _checked({
    # op                 forward              VJP rule          reads: dA, dB          name            flops
    "+":           Rule(np.add,               add_vjp,          ((), ()),              "add",          F.elementwise,
                        shape_error=elementwise_error),
    "-":           Rule(np.subtract,          sub_vjp,          ((), ()),              "subtract",     F.elementwise,
                        shape_error=elementwise_error, keeps_finite=True),
    "*":           Rule(np.multiply,          mul_vjp,          (("B",), ("A",)),      "multiply",     F.elementwise,
                        shape_error=elementwise_error),
    "/":           Rule(div_forward,          div_vjp,          (("B",), ("A", "B")),  "divide",       F.elementwise,
                        shape_error=elementwise_error,
                        nonfinite_hint="the divisor has values at or too close to 0"),
    "@":           Rule(np.matmul,            matmul_vjp,       (("B",), ("A",)),      "matmul",       F.matmul,
                        shape_error=matmul_error),
    "**":          Rule(pow_forward,          pow_vjp,          (("A",),),             "power",        F.elementwise,
                        nonfinite_hint="the base has values at or too close to 0 and the exponent is below 1"),
    "neg":         Rule(np.negative,          neg_vjp,          ((),),                 "negate",       F.elementwise,
                        keeps_finite=True),
    "sum":         Rule(sum_forward,          sum_vjp,          ((),),                 "sum",          F.reduction,
                        shape_error=axis_error, keeps_finite=True),
    "mean":        Rule(mean_forward,         mean_vjp,         ((),),                 "mean",         F.reduction,
                        shape_error=axis_error),
    "max":         Rule(max_forward,          max_vjp,          (("A", "C"),),         "max",          F.reduction,
                        shape_error=max_error),
    "embedding":   Rule(embedding_forward,    embedding_vjp,    ((),),                 "embedding",    F.no_arithmetic),
    "scatter_add": Rule(scatter_add_forward,  scatter_add_vjp,  ((),),                 "scatter_add",  F.scatter_add),
    "dropout":     Rule(dropout_forward,      dropout_vjp,      ((),),                 "dropout",      F.elementwise),
    "im2col":      Rule(im2col_forward,       im2col_vjp,       ((),),                 "im2col",       F.no_arithmetic),
    "col2im":      Rule(col2im_forward,       col2im_vjp,       ((),),                 "col2im",       F.scatter_add),
    "max_pool2d":  Rule(max_pool2d_forward,   max_pool2d_vjp,   (("A",),),             "max_pool2d",   F.window_max),
    "reshape":     Rule(np.reshape,           reshape_vjp,      ((),),                 "reshape",      F.no_arithmetic,
                        shape_error=reshape_error, keeps_finite=True),
    "transpose":   Rule(transpose_forward,    transpose_vjp,    ((),),                 "transpose",    F.no_arithmetic,
                        shape_error=transpose_error, keeps_finite=True),
    "broadcast_to": Rule(np.broadcast_to,     broadcast_to_vjp, ((),),                 "broadcast_to", F.no_arithmetic,
                        shape_error=broadcast_to_error, keeps_finite=True),
    "relu":        Rule(relu_forward,         relu_vjp,         (("C",),),             "relu",         F.elementwise,
                        keeps_finite=True),
    "tanh":        Rule(np.tanh,              tanh_vjp,         (("C",),),             "tanh",         F.elementwise),
    "sigmoid":     Rule(sigmoid_forward,      sigmoid_vjp,      (("C",),),             "sigmoid",      F.elementwise),
    "exp":         Rule(np.exp,               exp_vjp,          (("C",),),             "exp",          F.elementwise),
    "log":         Rule(log_forward,          log_vjp,          (("A",),),             "log",          F.elementwise,
                        nonfinite_hint="input has values <= 0 or too close to 0 (d log(a)/da = 1/a)"),
    "log_softmax": Rule(log_softmax_forward,  log_softmax_vjp,  (("C",),),             "log_softmax",  F.log_softmax,
                        shape_error=axis_error,
                        nonfinite_hint="the incoming gradient's sum along the axis overflowed "
                                       "(dA = G - softmax(A) * ΣG)"),
    "nll_loss":    Rule(nll_loss_forward,     nll_loss_vjp,     ((),),                 "nll_loss",     F.picked_mean),
    "abs":         Rule(np.abs,               abs_vjp,          (("A",),),             "abs",          F.elementwise),
    "clamp":       Rule(clamp_forward,        clamp_vjp,        (("A",),),             "clamp",        F.elementwise,
                        keeps_finite=True),
    "maximum":     Rule(np.maximum,           maximum_vjp,      (("A", "B"), ("A", "B")), "maximum",   F.elementwise,
                        shape_error=elementwise_error, keeps_finite=True),
    "minimum":     Rule(np.minimum,           minimum_vjp,      (("A", "B"), ("A", "B")), "minimum",   F.elementwise,
                        shape_error=elementwise_error, keeps_finite=True),
    "where":       Rule(where_forward,        where_vjp,        ((), ()),              "where",        F.no_arithmetic,
                        shape_error=where_error, keeps_finite=True),
    "index":       Rule(index_forward,        index_vjp,        ((),),                 "index",        F.no_arithmetic),
    "add_at":      Rule(add_at_forward,       add_at_vjp,       ((),),                 "add_at",       F.scatter_add),
    "cat":         Rule(cat_forward,          cat_vjp,          NO_INPUT,              "cat",          F.no_arithmetic,
                        shape_error=cat_error, keeps_finite=True),
    "stack":       Rule(stack_forward,        stack_vjp,        NO_INPUT,              "stack",        F.no_arithmetic,
                        shape_error=cat_error, keeps_finite=True),
    "checkpoint":  Rule(refuse_apply,         checkpoint_vjp,   EVERY_INPUT,           "checkpoint",   F.no_arithmetic),
})  # fmt: skip
