"""The rule table: for every operation of the tensor engine, its forward function and its VJP rule.

For ``C = f(A)`` the Jacobian dC/dA is a huge matrix (``C.size`` by ``A.size``), but
backpropagation never needs it: it needs only ``G`` = dL/dC, the gradient of the loss
with respect to the output, pushed through to dL/dA.  For every operation that push is
a short formula in ``G`` and the forward values, for example

    C = A @ B        dA = G Bᵀ,   dB = Aᵀ G
    C = tanh(A)      dA = G * (1 - C²)

Each operation is therefore two small functions -- a *forward* function on numpy
arrays (numpy's own, or one of :mod:`chainrule.forwards`) and a *VJP rule* (one of
:mod:`chainrule.vjp_rules`) -- and
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
from .vjp_rules import (
    abs_vjp,
    add_at_vjp,
    add_vjp,
    broadcast_to_vjp,
    cat_vjp,
    clamp_vjp,
    col2im_vjp,
    div_vjp,
    dropout_vjp,
    embedding_vjp,
    exp_vjp,
    im2col_vjp,
    index_vjp,
    log_softmax_vjp,
    log_vjp,
    matmul_vjp,
    max_pool2d_vjp,
    max_vjp,
    maximum_vjp,
    mean_vjp,
    minimum_vjp,
    mul_vjp,
    neg_vjp,
    nll_loss_vjp,
    pow_vjp,
    relu_vjp,
    reshape_vjp,
    scatter_add_vjp,
    sigmoid_vjp,
    stack_vjp,
    sub_vjp,
    sum_vjp,
    tanh_vjp,
    transpose_vjp,
    where_vjp,
)

__all__ = ["RULES", "Rule"]

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
    reads: tuple | str  # a tuple per input, or EVERY_INPUT or NO_INPUT
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
