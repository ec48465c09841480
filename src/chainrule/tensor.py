"""The tensor engine: :class:`Tensor`, a numpy array that remembers how it was computed.

This is the scalar engine of :mod:`chainrule.value` with whole arrays in place of
numbers.  The one new idea is the *vector-Jacobian product* (VJP).  For ``C = f(A)``
the Jacobian dC/dA is a huge matrix (``C.size`` by ``A.size``), but backpropagation
never needs it: it needs only ``G`` = dL/dC, the gradient of the loss with respect to
the output, pushed through to dL/dA.  For every operation that push is a short
formula in ``G`` and the forward values, for example

    C = A @ B        dA = G Bᵀ,   dB = Aᵀ G
    C = tanh(A)      dA = G * (1 - C²)

Each operation is therefore two small functions -- a *forward* function on numpy
arrays and a *VJP rule* -- and all of them are listed in one table, :data:`RULES`,
together with what the rule needs kept from the forward pass and whether its results
are checked for nan/inf.

What a node keeps.  A Tensor made by an operation records ``op`` (the row of the
table), ``parents`` (its inputs, in order), ``args`` (constant arguments such as the
exponent of ``**`` or the axis of a sum) and ``saved``: the tensors its rule reads
values from -- its inputs or nothing, as the table says (a rule that reads the node's own
output, such as tanh's, reads the node itself, so that no node refers to itself).  ``saved``
is the memory that training costs on top of inference; the rules read forward values
only from ``saved`` (and shapes from ``parents``).  After ``backward()`` the saved
tensors are let go (``saved`` becomes None), unless ``retain_graph=True``.

Broadcasting.  ``A + B`` with A of shape (3, 4) and B of shape (4,) uses each number of
B three times, so dB is G summed over the first axis.  Rather than every rule doing
this, rules return gradients in the broadcast shape and the backward pass calls
:func:`unbroadcast` in exactly one place to sum them back down to each parent's shape.

Gradients of gradients.  The rules are written with Tensor operations.  Normally they
run under :class:`no_grad`, so they record nothing and cost only the numpy work.  With
``create_graph=True`` they run with recording on, so the gradients are Tensors with a
graph of their own, which can be differentiated again (see :func:`grad`).

Repeated calls, as in PyTorch.  Leaves with ``requires_grad=True`` *accumulate* into
``.grad`` (a numpy array); clear it with :meth:`Tensor.zero_grad` or :func:`zero_grad`.
Interior nodes keep no ``.grad`` unless :meth:`Tensor.retain_grad` was called.

Trading compute for memory.  :func:`checkpoint` runs a whole function as one op (a
row of the table like any other) that keeps only its inputs; its rule recomputes the
function's graph during backward instead of keeping it from the forward pass.
"""

import contextlib
from numbers import Real
from typing import Callable, NamedTuple

import numpy as np

from .graph import topological_order

__all__ = [
    "Tensor",
    "RULES",
    "Rule",
    "apply",
    "unbroadcast",
    "grad",
    "no_grad",
    "set_grad_enabled",
    "is_grad_enabled",
    "zero_grad",
    "checkpoint",
    "observe_ops",
    "in_backward",
]

# --------------------------------------------------------------------------- recording on or off

_grad_enabled = True

# Watching the engine work (public through :class:`observe_ops` and :func:`in_backward`).
# Each function in ``_op_observers`` is called by :func:`apply` as
# ``observer(op, inputs, args, output_array)`` after every op (``inputs`` are the Tensors).
# chainrule.cost counts flops this way, and :func:`checkpoint` notes which Tensors its
# function reads.  ``_in_backward`` is True while a backward pass runs, so an observer can
# tell forward work from backward work (the VJP rules run through apply too).
_op_observers = []
_in_backward = False


def is_grad_enabled():
    """True when operations record a graph (the default); False inside :class:`no_grad`."""
    return _grad_enabled


class set_grad_enabled:
    """``with set_grad_enabled(mode):`` turns graph recording on or off for a block."""

    def __init__(self, mode):
        self.mode = bool(mode)

    def __enter__(self):
        global _grad_enabled
        self.previous = _grad_enabled
        _grad_enabled = self.mode
        return self

    def __exit__(self, *exc_info):
        global _grad_enabled
        _grad_enabled = self.previous
        return False


class observe_ops:
    """``with observe_ops(callback):`` calls ``callback(op, inputs, args, output_array)`` after every op.

    ``inputs`` are the op's input Tensors and ``args`` its constant arguments (see
    :data:`RULES`).  Ops of the backward pass are reported too; :func:`in_backward` tells
    them apart.  :mod:`chainrule.cost` counts flops this way.  Blocks can be nested.
    """

    def __init__(self, callback):
        self.callback = callback

    def __enter__(self):
        _op_observers.append(self.callback)
        return self

    def __exit__(self, *exc_info):
        _op_observers.remove(self.callback)
        return False


def in_backward():
    """True while a backward pass runs (its VJP rules, and what :func:`checkpoint` recomputes)."""
    return _in_backward


class no_grad(set_grad_enabled):
    """``with no_grad():`` computes without recording a graph (inference, parameter updates)."""

    def __init__(self):
        super().__init__(False)


# --------------------------------------------------------------------------- making tensors

_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_new_object = object.__new__


def _float_array(data, where):
    """Return ``data`` as a float32 or float64 numpy array, or raise naming ``where``.

    A float32/float64 array is used as it is (no copy).  Python numbers and (nested)
    lists of them become float64.  Anything else -- integer, bool, complex or object
    arrays -- is refused rather than silently converted.
    """
    if isinstance(data, np.ndarray):
        array = data
    elif isinstance(data, Tensor):
        raise TypeError(f"{where}: got a Tensor; use tensor.detach() for a new leaf that shares its data")
    else:
        try:
            array = np.asarray(data)
        except ValueError as error:
            raise ValueError(f"{where}: data is not a rectangular array of numbers ({error})") from None
        if array.dtype.kind in "iu" and not isinstance(data, np.generic):  # Python ints
            array = array.astype(np.float64)
    if array.dtype not in _FLOAT_DTYPES:
        raise TypeError(
            f"{where}: data of dtype {array.dtype} is not supported; a Tensor holds float32 or float64 "
            "numbers. Convert it first, e.g. np.asarray(data).astype(np.float64)"
        )
    return array


def _plain_tensor(data):
    """A Tensor around an array we know is fine, with no graph yet (a fast path around ``__init__``).

    It makes leaves (constants, detach) and, in :func:`apply`, every op's output before its
    graph fields are filled in.
    """
    out = _new_object(Tensor)
    out.data, out.grad, out.requires_grad, out.label = data, None, False, ""
    out.op, out.parents, out.saved, out.args, out.retains_grad = "", (), (), (), False
    return out


def _operand(other, like, operation):
    """Let a Python number or a float ndarray take part in an operation as a constant."""
    if isinstance(other, Tensor):
        return other
    if isinstance(other, Real) and not isinstance(other, bool):
        return _plain_tensor(np.asarray(other, dtype=like.data.dtype))  # keeps float32 float32
    if isinstance(other, np.ndarray):
        return _plain_tensor(_float_array(other, operation))
    raise TypeError(
        f"{operation}: cannot combine a Tensor with {type(other).__name__} {other!r}; "
        "use a Tensor, a float numpy array or a Python number"
    )


def _shape_args(shape):
    """``reshape(2, 3)`` and ``reshape((2, 3))`` both mean the shape (2, 3)."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        return tuple(shape[0])
    return tuple(shape)


# --------------------------------------------------------------------------- Tensor


class Tensor:
    """An array in a computational graph.

    ``Tensor(data, requires_grad=False, label="")`` makes a leaf.  ``data`` is a numpy
    array (float32 or float64 arrays are used without copying; Python numbers and
    lists become float64).  Set ``requires_grad=True`` on the leaves you want
    gradients for, such as weights.  ``grad`` is None until a backward pass reaches
    the leaf, then a numpy array of the leaf's shape and dtype.

    ``op``, ``parents``, ``args`` and ``saved`` are filled in by the operation that
    made the Tensor (see the module docstring); a leaf has ``op == ""``.
    """

    __slots__ = ("data", "grad", "requires_grad", "label", "op", "parents", "saved", "args", "retains_grad",
                 "__weakref__")

    # numpy would otherwise treat a Tensor as an opaque object in ``array + tensor``;
    # None makes it hand such expressions to Tensor.__radd__ and friends.
    __array_ufunc__ = None

    def __init__(self, data, requires_grad=False, label=""):
        self.data = _float_array(data, "Tensor()")
        self.grad = None
        self.requires_grad = bool(requires_grad)
        self.label = label
        self.op = ""
        self.parents = ()
        self.saved = ()
        self.args = ()
        self.retains_grad = False

    @property
    def shape(self):
        return self.data.shape

    @property
    def ndim(self):
        return self.data.ndim

    @property
    def size(self):
        return self.data.size

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def T(self):
        """All axes reversed, as numpy's ``.T`` (the matrix transpose for 2-D)."""
        return self.transpose()

    def item(self):
        """The single number in a one-element Tensor, as a Python float."""
        return self.data.item()

    def __repr__(self):
        body = np.array2string(self.data, precision=4, threshold=20, separator=", ", prefix="Tensor(")
        extras = ""
        if self.data.dtype != np.float64:
            extras += f", dtype={self.data.dtype}"
        if self.label:
            extras += f", label={self.label!r}"
        if self.op:
            extras += f", op={self.op!r}"
        elif self.requires_grad:
            extras += ", requires_grad=True"
        return f"Tensor({body}{extras})"

    # Arithmetic.  Python numbers and float arrays on either side become constants.

    def __add__(self, other):
        return apply("+", self, _operand(other, self, "add"))

    def __radd__(self, other):
        return apply("+", _operand(other, self, "add"), self)

    def __sub__(self, other):
        return apply("-", self, _operand(other, self, "subtract"))

    def __rsub__(self, other):
        return apply("-", _operand(other, self, "subtract"), self)

    def __mul__(self, other):
        return apply("*", self, _operand(other, self, "multiply"))

    def __rmul__(self, other):
        return apply("*", _operand(other, self, "multiply"), self)

    def __truediv__(self, other):
        return apply("/", self, _operand(other, self, "divide"))

    def __rtruediv__(self, other):
        return apply("/", _operand(other, self, "divide"), self)

    def __matmul__(self, other):
        return apply("@", self, _operand(other, self, "matmul"))

    def __rmatmul__(self, other):
        return apply("@", _operand(other, self, "matmul"), self)

    def __neg__(self):
        return apply("neg", self)

    def __pow__(self, exponent):
        """``a ** k`` for a constant int or float ``k``."""
        if isinstance(exponent, Tensor) or not isinstance(exponent, Real) or isinstance(exponent, bool):
            raise TypeError(
                f"power: the exponent must be a constant int or float, got {type(exponent).__name__}; "
                "for a Tensor exponent k write (k * a.log()).exp()"
            )
        return apply("**", self, args=(exponent,))

    def __rpow__(self, base):
        raise TypeError(
            f"power: the exponent must be a constant int or float, got a Tensor (in {base!r} ** tensor); "
            "for a Tensor exponent k write (k * math.log(base)).exp()"
        )

    # Reductions and shape changes.

    def sum(self, axis=None, keepdims=False):
        """Sum over ``axis`` (an int, a tuple of ints or None for all), as numpy's ``sum``."""
        return apply("sum", self, args=(_axis_arg(axis, self.data.shape, "sum"), bool(keepdims)))

    def mean(self, axis=None, keepdims=False):
        """Mean over ``axis`` (an int, a tuple of ints or None for all), as numpy's ``mean``."""
        return apply("mean", self, args=(_axis_arg(axis, self.data.shape, "mean"), bool(keepdims)))

    def reshape(self, *shape):
        """The same numbers in a new shape; ``reshape(2, 3)`` or ``reshape((2, 3))``, -1 allowed."""
        return apply("reshape", self, args=(_int_tuple(_shape_args(shape), "reshape", "shape"),))

    def transpose(self, *axes):
        """Permute the axes; no arguments reverses them (as numpy)."""
        axes = _int_tuple(_shape_args(axes), "transpose", "axes") or tuple(reversed(range(self.data.ndim)))
        return apply("transpose", self, args=(axes,))

    def broadcast_to(self, *shape):
        """The Tensor repeated along new or size-1 axes to ``shape`` (as numpy's ``broadcast_to``)."""
        return apply("broadcast_to", self, args=(_int_tuple(_shape_args(shape), "broadcast_to", "shape"),))

    # Elementwise functions.

    def relu(self):
        return apply("relu", self)

    def tanh(self):
        return apply("tanh", self)

    def sigmoid(self):
        return apply("sigmoid", self)

    def exp(self):
        return apply("exp", self)

    def log(self):
        return apply("log", self)

    # Graph and gradient bookkeeping.

    def detach(self):
        """A new leaf sharing this Tensor's data, outside any graph (requires_grad False)."""
        return _plain_tensor(self.data)

    def retain_grad(self):
        """Ask backward to keep (accumulate) ``.grad`` on this interior node too."""
        if self.parents:
            self.retains_grad = True

    def zero_grad(self):
        """Set ``.grad`` to None on this Tensor and every Tensor it was computed from (its whole graph).

        For just some Tensors (a model's parameters), use :func:`zero_grad` with a list.
        """
        for node in topological_order(self):
            node.grad = None

    def backward(self, gradient=None, retain_graph=None, create_graph=False):
        """Add d(self)/d(leaf) into ``.grad`` of every leaf with ``requires_grad=True``.

        A one-element output needs no ``gradient``.  For a larger output pass
        ``gradient`` (an array of the output's shape, the vector v in the product
        vᵀ J) or reduce it first, e.g. ``out.sum().backward()``.  The saved tensors
        are freed afterwards unless ``retain_graph=True``; ``create_graph=True``
        (which implies ``retain_graph``) records the backward pass itself, and then
        ``.grad`` is a Tensor with its own graph that can be differentiated again.
        """
        if not self.requires_grad:
            raise RuntimeError(
                "backward: this Tensor does not require grad, so there is no graph to go back through: "
                "none of the tensors it was computed from has requires_grad=True (or it was computed "
                "under no_grad())"
            )
        seed = _seed(self, gradient, "backward")
        if retain_graph is None:
            retain_graph = create_graph
        _backpropagate([self], [seed], retain_graph, create_graph)


def _int_tuple(values, op, what):
    """``values`` as a tuple of Python ints (numpy integers accepted), or a TypeError naming ``op``."""
    for position, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            hint = " (use // for integer division)" if isinstance(value, float) and what == "shape" else ""
            raise TypeError(f"Tensor.{op}: the {what} must be ints, got {tuple(values)!r}: "
                            f"{type(value).__name__} {value!r} at position {position}{hint}")
    return tuple(int(value) for value in values)


def _axis_arg(axis, shape, op):
    """``axis`` of a reduction as None, an int or a tuple of ints, each checked against ``shape``."""
    if axis is None:
        return None
    single = not isinstance(axis, (tuple, list))
    axes = _int_tuple((axis,) if single else tuple(axis), op, "axis")
    ndim = len(shape)
    if not all(-ndim <= ax < ndim for ax in axes) or len({ax % ndim for ax in axes}) != len(axes):
        shown = axes[0] if single else axes
        raise ValueError(f"{op}: axis {shown} is not valid for a tensor of shape {shape}: axes must be distinct "
                         f"and in [-{ndim}, {ndim})")
    return axes[0] if single else axes


# --------------------------------------------------------------------------- forward functions
#
# Each takes numpy arrays (and the op's constant args) and returns an array.


def _div_forward(a, b):
    """A / B; an exact 0 in B is an error that names where (a gradient through it could only be inf)."""
    if not b.all():
        where = tuple(int(i) for i in np.argwhere(b == 0)[0]) if b.ndim else ()
        at = f" at entry {where[0] if len(where) == 1 else where}" if where else ""
        raise ZeroDivisionError(f"Tensor / (divide): the divisor (shape {b.shape}) is 0{at}")
    return np.divide(a, b)


def _sum_forward(a, axis, keepdims):
    return a.sum(axis=axis, keepdims=keepdims)


def _mean_forward(a, axis, keepdims):
    return a.mean(axis=axis, keepdims=keepdims)


def _relu_forward(a):
    return np.maximum(a, 0)


def _sigmoid_forward(a):
    # exp(-a) overflows for large negative a, so use e = exp(-|a|) <= 1 on both sides:
    # 1 / (1 + e) for a >= 0 and e / (1 + e) for a < 0.
    e = np.exp(-np.abs(a))
    return np.where(a >= 0, 1, e) / (1 + e)


def _log_forward(a):
    if a.size and a.min() <= 0:
        smallest = float(a.min())
        count = int(np.count_nonzero(a <= 0))
        raise ValueError(
            f"log: the input must be positive, but its min value is {smallest!r} "
            f"({count} of {a.size} values are <= 0)"
        )
    return np.log(a)


def _log_softmax_forward(a, axis):
    # Subtracting the largest entry first keeps exp from overflowing; the result is
    # the same because log_softmax(a - m) = log_softmax(a) for any constant m.
    shifted = a - a.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def _pow_forward(a, k):
    if not float(k).is_integer() and a.size and a.min() < 0:
        raise ValueError(
            f"power: a negative base to the non-integer power {k!r} is not a real number "
            f"(min value of the base {float(a.min())!r})"
        )
    return a**k


def _checkpoint_forward(*operands):
    """Run ``fn`` on new leaves holding the input arrays, recording nothing; return its array.

    The operands are the input arrays, then ``fn`` and ``reads`` (the args that
    :func:`checkpoint` passes).  When the caller is recording a graph, every Tensor that
    requires grad and that fn reads from outside (its parameters) is appended to
    ``reads``.  They are found by watching the ops fn runs: under no_grad everything fn
    computes is a plain leaf, so a Tensor that requires grad can only come from outside.
    """
    *arrays, fn, reads = operands
    seen = {}  # id -> Tensor, in the order fn first reads them

    def note_reads(op, inputs, args, data):
        for tensor in inputs:
            if tensor.requires_grad:
                seen.setdefault(id(tensor), tensor)

    with observe_ops(note_reads) if _grad_enabled else contextlib.nullcontext(), no_grad():
        out = fn(*[_plain_tensor(array) for array in arrays])
    if not isinstance(out, Tensor):
        raise TypeError(
            f"checkpoint: fn must return one Tensor, got {type(out).__name__}; "
            "for several results, checkpoint one function per result"
        )
    reads.extend(seen.values())
    return out.data


# --------------------------------------------------------------------------- VJP rules
#
# ``rule(g, node)`` gets G = dL/d(node) as a Tensor and returns one gradient per parent
# (None for a parent that does not require grad).  The result may still have the
# broadcast shape; the backward pass sums it down with ``unbroadcast``.


def add_vjp(g, node):
    """C = A + B.   dA = G,   dB = G."""
    return g, g


def sub_vjp(g, node):
    """C = A - B.   dA = G,   dB = -G."""
    return g, (-g if node.parents[1].requires_grad else None)


def mul_vjp(g, node):
    """C = A * B (elementwise).   dA = G * B,   dB = G * A."""
    a, b = node.saved
    return (g * b if a.requires_grad else None), (g * a if b.requires_grad else None)


def div_vjp(g, node):
    """C = A / B.   dA = G / B,   dB = -G * A / B² = -(G * (A / B)) / B.

    The last form never squares B, which underflows to 0 in float32 for |B| < 1e-19.
    """
    a, b = node.saved
    return (g / b if a.requires_grad else None), (-(g * (a / b)) / b if b.requires_grad else None)


def matmul_vjp(g, node):
    """C = A @ B.   dA = G Bᵀ,   dB = Aᵀ G   (ᵀ swaps the last two axes).

    As in numpy, a 1-D A of shape (k,) acts as a row (1, k) and a 1-D B of shape (k,)
    as a column (k, 1), and the inserted axis is dropped from C.  So we put that axis
    back into G, use the 2-D formulas, and drop it from the gradient again.  Batch
    axes (all but the last two) broadcast like elementwise ops; unbroadcast sums them.
    """
    a, b = node.saved
    a_matrix = a.reshape(1, -1) if a.ndim == 1 else a
    b_matrix = b.reshape(-1, 1) if b.ndim == 1 else b
    if b.ndim == 1:
        g = g.reshape(g.shape + (1,))
    if a.ndim == 1:
        g = g.reshape(g.shape[:-1] + (1,) + g.shape[-1:])
    da = db = None
    if a.requires_grad:
        da = g @ _matrix_transpose(b_matrix)
        if a.ndim == 1:
            da = da.reshape(da.shape[:-2] + da.shape[-1:])
    if b.requires_grad:
        db = _matrix_transpose(a_matrix) @ g
        if b.ndim == 1:
            db = db.reshape(db.shape[:-1])
    return da, db


def _matrix_transpose(t):
    if t.ndim == 2:
        return t.T
    return t.transpose(*range(t.ndim - 2), t.ndim - 1, t.ndim - 2)


def pow_vjp(g, node):
    """C = A ** k for a constant k.   dA = G * k * A^(k-1)   (0 when k = 0)."""
    (a,), (k,) = node.saved, node.args
    if k == 0:
        return (g * 0.0,)
    return (g * (k * a ** (k - 1)),)


def neg_vjp(g, node):
    """C = -A.   dA = -G."""
    return (-g,)


def _spread(g, shape, axis, keepdims):
    """G of a reduction over ``axis``, copied back along the reduced axes to ``shape``.

    Without keepdims the reduced axes are first put back with size 1, so that G lines
    up with A.  (After a reduction over all axes G is 0-d, which broadcasts as it is.)
    """
    if not keepdims and axis is not None:
        reduced = {ax % len(shape) for ax in ((axis,) if isinstance(axis, int) else axis)}
        g = g.reshape(tuple(1 if i in reduced else n for i, n in enumerate(shape)))
    return g.broadcast_to(shape)


def sum_vjp(g, node):
    """C = A summed over some axes.   dA = G copied along the summed axes
    (every element of A enters its sum with derivative 1)."""
    (a,) = node.parents
    axis, keepdims = node.args
    return (_spread(g, a.shape, axis, keepdims),)


def mean_vjp(g, node):
    """C = mean of A over some axes, n numbers per mean.   dA = G / n copied along those axes."""
    (a,) = node.parents
    axis, keepdims = node.args
    n = a.size // max(g.size, 1)
    return (_spread(g / n, a.shape, axis, keepdims),)


def reshape_vjp(g, node):
    """C = A in a new shape (the same numbers in the same order).   dA = G reshaped to A's shape."""
    return (g.reshape(node.parents[0].shape),)


def transpose_vjp(g, node):
    """C = A with axes permuted by p (C's axis i is A's axis p[i]).   dA = G permuted by p⁻¹."""
    (axes,) = node.args
    ndim = len(axes)
    inverse = [0] * ndim
    for position, axis in enumerate(axes):
        inverse[axis % ndim] = position
    return (g.transpose(*inverse),)


def broadcast_to_vjp(g, node):
    """C = A repeated along broadcast axes.   dA = G summed over those axes.

    That sum is exactly what the backward pass's unbroadcast does, so the rule passes G on."""
    return (g,)


def relu_vjp(g, node):
    """C = max(A, 0).   dA = G where A > 0, else 0 (we take 0 at the kink A = 0).
    A > 0 exactly where C > 0, so the rule keeps C rather than A."""
    c = node
    return (g * _plain_tensor(c.data > 0),)


def tanh_vjp(g, node):
    """C = tanh(A).   dA = G * (1 - C²)."""
    c = node
    return (g * (1 - c * c),)


def sigmoid_vjp(g, node):
    """C = 1 / (1 + exp(-A)).   dA = G * C * (1 - C)."""
    c = node
    return (g * (c * (1 - c)),)


def exp_vjp(g, node):
    """C = exp(A).   dA = G * C."""
    c = node
    return (g * c,)


def log_vjp(g, node):
    """C = log(A) (natural).   dA = G / A."""
    (a,) = node.saved
    return (g / a,)


def log_softmax_vjp(g, node):
    """C = log_softmax(A) = A - log Σ exp(A), the sum along one axis.
    dA = G - softmax(A) * ΣG, where softmax(A) = exp(C) and ΣG sums G along that axis
    (each A_j moves every C_i through the log-sum, with derivative softmax(A)_j)."""
    c, (axis,) = node, node.args
    return (g - c.exp() * g.sum(axis=axis, keepdims=True),)


def checkpoint_vjp(g, node):
    """C = f(A₁, …, Aₙ), a function f run as one op by checkpoint().   dA = Jᵀ G (J = dC/dA).

    dA = Jᵀ G for each input A, where J = dC/dA is f's Jacobian, and the same for each
    Tensor P that f reads from outside (its parameters, the extra parents of the node).

    That is exactly what backpropagation through f's own graph computes, but the graph
    was not kept.  So the rule rebuilds it: it runs f again, recording, on new leaves
    holding the inputs' values (each requiring grad as its input does), and pushes G
    back through the new graph to those leaves and to the P (which are leaves, so the
    inner pass stops there).  The outer pass then hands the results on to the parents
    as for any other op, so a P also used outside f gets the two contributions added.
    """
    if _grad_enabled:  # the backward pass is recording: create_graph=True
        raise NotImplementedError(
            "checkpoint: gradients of gradients (create_graph=True) through a checkpoint are not "
            "supported: the recomputed graph starts from new leaves, so it is not connected to the "
            "inputs. Compute the function without checkpoint() to differentiate twice"
        )
    fn, n_inputs = node.args
    inputs, reads = node.saved[:n_inputs], node.saved[n_inputs:]
    leaves = []
    for tensor in inputs:
        leaf = _plain_tensor(tensor.data)
        leaf.requires_grad = tensor.requires_grad
        leaves.append(leaf)
    with set_grad_enabled(True):
        out = fn(*leaves)
    if not isinstance(out, Tensor) or out.shape != node.shape or out.dtype != node.dtype:
        got = f"a Tensor of shape {out.shape}, dtype {out.dtype}" if isinstance(out, Tensor) else type(out).__name__
        raise RuntimeError(
            f"checkpoint: running fn again in backward gave {got}, but the forward pass gave shape "
            f"{node.shape}, dtype {node.dtype}; fn must compute the same thing every time it runs"
        )
    sources = (*leaves, *reads)
    if not out.requires_grad:  # f's result does not depend on anything that needs grad
        return (None,) * len(sources)
    wanted = [t for t in sources if t.requires_grad]
    found = _backpropagate([out], [g], retain_graph=False, create_graph=False, inputs=wanted)
    return tuple(found.get(id(t)) for t in sources)


# --------------------------------------------------------------------------- the table


class Rule(NamedTuple):
    """One row of :data:`RULES`: how to compute an op and how to push gradients through it.

    ``saves`` is what the VJP rule reads values from: ``"inputs"`` (the parents, kept
    in ``node.saved``), ``"output"`` (the node itself, which the rule reads as ``node``;
    ``saved`` stays empty so that the node does not refer to itself) or ``"nothing"``.
    ``checks_finite`` says whether the backward pass checks the rule's results for nan/inf.
    Rules whose results are bounded by G (add, sum, reshape, relu, tanh, ...) cannot
    turn a finite G into nan/inf and are not checked; the others (a product, a
    quotient, a power, exp, log) can overflow or divide by zero.
    """

    forward: Callable
    vjp: Callable
    saves: str
    checks_finite: bool


RULES = {
    # op                  forward             VJP rule            saves      checks_finite
    "+":            Rule(np.add,             add_vjp,            "nothing", False),
    "-":            Rule(np.subtract,        sub_vjp,            "nothing", False),
    "*":            Rule(np.multiply,        mul_vjp,            "inputs",  True),
    "/":            Rule(_div_forward,       div_vjp,            "inputs",  True),
    "@":            Rule(np.matmul,          matmul_vjp,         "inputs",  True),
    "**":           Rule(_pow_forward,       pow_vjp,            "inputs",  True),
    "neg":          Rule(np.negative,        neg_vjp,            "nothing", False),
    "sum":          Rule(_sum_forward,       sum_vjp,            "nothing", False),
    "mean":         Rule(_mean_forward,      mean_vjp,           "nothing", False),
    "reshape":      Rule(np.reshape,         reshape_vjp,        "nothing", False),
    "transpose":    Rule(np.transpose,       transpose_vjp,      "nothing", False),
    "broadcast_to": Rule(np.broadcast_to,    broadcast_to_vjp,   "nothing", False),
    "relu":         Rule(_relu_forward,      relu_vjp,           "output",  False),
    "tanh":         Rule(np.tanh,            tanh_vjp,           "output",  False),
    "sigmoid":      Rule(_sigmoid_forward,   sigmoid_vjp,        "output",  False),
    "exp":          Rule(np.exp,             exp_vjp,            "output",  True),
    "log":          Rule(_log_forward,       log_vjp,            "inputs",  True),
    "log_softmax":  Rule(_log_softmax_forward, log_softmax_vjp,  "output",  False),
    "checkpoint":   Rule(_checkpoint_forward, checkpoint_vjp,    "inputs",  False),
}  # fmt: skip


def apply(op, *inputs, args=()):
    """Compute ``op`` on the input Tensors and return the result as a new Tensor.

    The result records the op, its parents, its args and what its rule saves when
    recording is on and some input requires grad; otherwise it is a plain leaf.
    """
    rule = RULES[op]
    arrays = [t.data for t in inputs]
    try:
        data = rule.forward(*arrays, *args)
    except ValueError:  # numpy's shape errors, rewritten to name the op and the shapes
        message = _shape_error_message(op, arrays, args)
        if message is None:
            raise
        raise ValueError(message) from None
    if type(data) is not np.ndarray:  # numpy returns scalars for 0-d results
        data = np.asarray(data)
    if _op_observers:
        for observer in _op_observers:
            observer(op, inputs, args, data)
    out = _plain_tensor(data)
    if _grad_enabled and any(t.requires_grad for t in inputs):
        out.requires_grad = True
        out.op, out.parents, out.args = op, inputs, args
        if rule.saves == "inputs":
            out.saved = inputs
        elif rule.saves == "output":
            # The rule reads the node itself (``node`` is the output Tensor).  Keeping
            # ``(out,)`` here would be a reference cycle, and a dropped graph would wait for
            # Python's cyclic garbage collector instead of being freed at once.
            out.saved = ()
    return out


# --------------------------------------------------------------------------- error messages

_OP_NAMES = {"+": "add", "-": "subtract", "*": "multiply", "/": "divide", "@": "matmul", "**": "power",
             "neg": "negate"}  # fmt: skip


def _broadcast_mismatch(left, right):
    """Describe the first pair of sizes, from the right, that cannot be broadcast."""
    for i in range(1, max(len(left), len(right)) + 1):
        m = left[-i] if i <= len(left) else 1
        n = right[-i] if i <= len(right) else 1
        if m != n and m != 1 and n != 1:
            return (
                f"{m} (dim {len(left) - i} of the left) vs {n} (dim {len(right) - i} of the right); "
                "sizes are matched from the last dim and must be equal or 1"
            )
    return "the sizes are matched from the last dim and must be equal or 1"


def _matmul_message(left, right):
    if not left or not right:
        return (
            f"matmul: shapes {left} and {right}: both operands need at least one dim "
            "(use * to multiply by a scalar)"
        )
    i = len(left) - 1
    j = len(right) - 2 if len(right) >= 2 else 0
    if left[i] != right[j]:
        return (
            f"matmul: shapes {left} and {right} are not aligned: "
            f"{left[i]} (dim {i} of the left) != {right[j]} (dim {j} of the right)"
        )
    return (
        f"matmul: shapes {left} and {right}: the batch dims {left[:-2]} and {right[:-2]} cannot be "
        f"broadcast together: {_broadcast_mismatch(left[:-2], right[:-2])}"
    )


def _shape_error_message(op, arrays, args):
    """A clear message for a shape error numpy raised in ``op``'s forward, or None."""
    shapes = [a.shape for a in arrays]
    if op in ("+", "-", "*", "/"):
        left, right = shapes
        return (
            f"{_OP_NAMES[op]}: shapes {left} and {right} cannot be broadcast together: "
            f"{_broadcast_mismatch(left, right)}"
        )
    if op == "@":
        return _matmul_message(*shapes)
    if len(arrays) != 1:
        return None
    (shape,), (size,) = shapes, [a.size for a in arrays]
    if op == "reshape":
        (new_shape,) = args
        return f"reshape: cannot reshape a tensor of shape {shape} ({size} elements) into shape {new_shape}"
    if op == "broadcast_to":
        (target,) = args
        return f"broadcast_to: cannot broadcast shape {shape} to {target}: {_broadcast_mismatch(shape, target)}"
    if op in ("sum", "mean", "log_softmax"):
        axis = args[0]
        return (
            f"{op}: axis {axis} is not valid for a tensor of shape {shape}: axes must be distinct "
            f"and in [-{len(shape)}, {len(shape)})"
        )
    if op == "transpose":
        (axes,) = args
        return f"transpose: axes {axes} are not a permutation of the {len(shape)} dims of shape {shape}"
    return None


_NONFINITE_HINTS = {
    "log": "input has values <= 0 or too close to 0 (d log(a)/da = 1/a)",
    "/": "the divisor has values at or too close to 0",
    "**": "the base has values at or too close to 0 and the exponent is below 1",
}


def _check_finite(g, node, i):
    """Raise FloatingPointError if the gradient rule of ``node`` produced nan or inf."""
    data = g.data
    if data.size == 0:
        return
    # The sum of squares is a cheap test (one pass, no temporary array): it is nan or inf
    # whenever an element is.  It can also overflow when all elements are finite, so a
    # positive answer is confirmed element by element.
    flat = data.ravel()
    if np.isfinite(np.dot(flat, flat)) or np.isfinite(data).all():
        return
    forward_values = [node.data] + [p.data for p in node.parents]
    if not all(np.isfinite(v).all() for v in forward_values):
        hint = "the forward pass of this op already had nan/inf values (an overflow upstream?)"
    else:
        hint = _NONFINITE_HINTS.get(node.op, "the incoming gradient times the local derivative overflowed")
    raise FloatingPointError(
        f"backward of {_OP_NAMES.get(node.op, node.op)} produced nan/inf: {hint} "
        f"(in the gradient for its input {i}, shape {node.parents[i].shape})"
    )


# --------------------------------------------------------------------------- backward


def unbroadcast(grad, shape):
    """Sum ``grad`` down to ``shape``, undoing numpy broadcasting.

    Broadcasting ``shape`` to ``grad.shape`` adds axes on the left and stretches
    size-1 axes; each stretched number was used once per copy, so its gradient is the
    sum over the copies.  Works on Tensors and on numpy arrays.
    """
    shape = tuple(shape)
    extra = grad.ndim - len(shape)
    if extra < 0 or any(n != 1 and n != m for n, m in zip(shape, grad.shape[extra:])):
        raise ValueError(f"unbroadcast: a gradient of shape {grad.shape} cannot come from broadcasting {shape}")
    if extra:  # axes added on the left: sum them away
        grad = grad.sum(axis=tuple(range(extra)))
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if stretched:  # size-1 axes that were stretched: sum them, keeping the axis
        grad = grad.sum(axis=stretched, keepdims=True)
    return grad


def _seed(output, gradient, where, argument="gradient"):
    """The gradient dL/d(output) that starts a backward pass, as a Tensor.

    ``where`` and ``argument`` name the function and its parameter in error messages.
    """
    if gradient is None:
        if output.data.size != 1:
            raise RuntimeError(
                f"{where}: the output has shape {output.shape}, not a single number, so pass "
                f"{argument}= (an array of the same shape {output.shape}: dL/d output), or reduce "
                "the output to a scalar first, e.g. out.sum().backward()"
            )
        return _plain_tensor(np.ones_like(output.data))
    if isinstance(gradient, Tensor):
        seed = gradient
    else:
        seed = _plain_tensor(_float_array(gradient, f"{where}: {argument}").astype(output.dtype, copy=False))
    if seed.shape != output.shape:
        raise ValueError(
            f"{where}: {argument} has shape {seed.shape} but the output has shape {output.shape}; "
            "they must be the same"
        )
    if not np.isfinite(seed.data).all():
        raise ValueError(f"{where}: {argument} contains nan or inf")
    return seed


class _Outputs:
    """A stand-in root whose parents are several outputs, so one search covers them all."""

    def __init__(self, outputs):
        self.parents = tuple(outputs)


def _store_grad(node, g, shared, create_graph):
    """Accumulate ``g`` into ``node.grad``: a Tensor with create_graph, else a numpy array of the node's dtype.

    With ``create_graph`` the gradient is the Tensor the backward pass computed, graph
    and all, so it can be differentiated again (as PyTorch's ``.grad`` with a ``grad_fn``).

    A rule's result is a fresh array that nothing else holds, and the leaf may keep it
    as it is.  Other arrays are copied, so that ``.grad`` is the caller's to modify:
    views (from reshape, transpose, broadcast_to), the caller's own ``gradient``, and
    arrays already given to another node (add passes the same G to both parents).
    ``shared`` holds the ids of the arrays in the last two groups.
    """
    if create_graph:
        node.grad = g if node.grad is None else _as_tensor(node.grad) + g
        return
    if isinstance(node.grad, Tensor):  # a Tensor from an earlier create_graph pass stays a Tensor
        node.grad = Tensor(node.grad.data + g.data)
        return
    dtype = node.data.dtype
    array = g.data
    if node.grad is not None:
        node.grad = (node.grad + array).astype(dtype, copy=False)
        return
    if array.dtype != dtype or array.base is not None or not array.flags.writeable or id(array) in shared:
        array = np.array(array, dtype=dtype)
    shared.add(id(array))
    node.grad = array


def _as_tensor(grad):
    return grad if isinstance(grad, Tensor) else Tensor(grad)


class _backward_phase:
    """``with _backward_phase():`` marks the ops run inside as backward work (see ``_in_backward``).

    It restores the previous value on exit, so a backward pass started inside another
    one (by :func:`checkpoint_vjp`) leaves the outer pass still marked.
    """

    def __enter__(self):
        global _in_backward
        self.previous, _in_backward = _in_backward, True

    def __exit__(self, *exc_info):
        global _in_backward
        _in_backward = self.previous
        return False


def _backpropagate(outputs, seeds, retain_graph, create_graph, inputs=None):
    """The backward pass shared by :meth:`Tensor.backward` and :func:`grad`.

    Visits the graph in reverse topological order, so a node's gradient is complete
    (every consumer has added its share) before its rule passes it on.  With ``inputs``
    None, leaves (and nodes that retain grad) accumulate ``.grad``; otherwise nothing
    is stored and the gradients of ``inputs`` are returned, keyed by ``id``.
    """
    root = outputs[0] if len(outputs) == 1 else _Outputs(outputs)
    order = topological_order(root)
    pending = {}  # id(node) -> dL/d(node) so far, a Tensor
    for output, seed in zip(outputs, seeds):
        key = id(output)
        pending[key] = pending[key] + seed if key in pending else seed
    wanted = None if inputs is None else {id(t) for t in inputs}
    found = {}
    shared = {id(seed.data) for seed in seeds}  # see _store_grad
    with set_grad_enabled(create_graph), np.errstate(all="ignore"), _backward_phase():
        for node in reversed(order):
            g = pending.pop(id(node), None)
            if g is None:
                continue
            if wanted is None:
                if node.retains_grad or not node.parents:
                    _store_grad(node, g, shared, create_graph)
            elif id(node) in wanted:
                found[id(node)] = g
            if not node.parents:
                continue
            if node.saved is None:
                raise RuntimeError(
                    f"backward through {_OP_NAMES.get(node.op, node.op)} ({node.op!r}) a second time: its "
                    "saved tensors were freed by an earlier backward pass. Pass retain_graph=True to the "
                    "earlier backward() if you need to go through the graph again"
                )
            rule = RULES[node.op]
            parent_grads = rule.vjp(g, node)
            for i, (parent, parent_grad) in enumerate(zip(node.parents, parent_grads)):
                if parent_grad is None or not parent.requires_grad:
                    continue
                if rule.checks_finite:
                    _check_finite(parent_grad, node, i)
                if parent_grad.shape != parent.shape:
                    parent_grad = unbroadcast(parent_grad, parent.shape)
                key = id(parent)
                pending[key] = pending[key] + parent_grad if key in pending else parent_grad
            if not retain_graph and (node.saved or rule.saves == "output"):
                node.saved = None
    return found


def _tensor_list(tensors, name):
    """``grad``'s outputs or inputs as a list of Tensors, or a TypeError that says what was passed."""
    if isinstance(tensors, Tensor):
        return [tensors]
    if isinstance(tensors, (list, tuple)) and all(isinstance(t, Tensor) for t in tensors) and tensors:
        return list(tensors)
    found = type(tensors).__name__ if not isinstance(tensors, (list, tuple)) else (
        "an empty sequence" if not tensors else
        f"a sequence holding {type(next(t for t in tensors if not isinstance(t, Tensor))).__name__}")
    hint = " (pass the Tensor itself, not its .data)" if isinstance(tensors, np.ndarray) else ""
    raise TypeError(f"grad: {name} must be a Tensor or a list of Tensors, got {found}{hint}")


def grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """Return the gradients of ``outputs`` with respect to ``inputs``, as Tensors.

    Like ``torch.autograd.grad``: nothing is stored in ``.grad``.  ``outputs`` and
    ``inputs`` are Tensors or sequences of Tensors; ``grad_outputs`` gives dL/d output
    for each output (needed unless it has one element).  With ``create_graph=True`` the
    returned Tensors carry a graph, so they can be differentiated again; that is how a
    Hessian-vector product is computed::

        (g,) = grad((x**3).sum(), x, create_graph=True)   # g = 3 x²
        (hv,) = grad((g * v).sum(), x)                    # H v = 6 x * v

    Returns a tuple with one Tensor per input.
    """
    outputs = _tensor_list(outputs, "outputs")
    inputs = _tensor_list(inputs, "inputs")
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif isinstance(grad_outputs, (Tensor, np.ndarray)):
        grad_outputs = [grad_outputs]
    grad_outputs = list(grad_outputs)
    if len(grad_outputs) != len(outputs):
        raise ValueError(f"grad: got {len(grad_outputs)} grad_outputs for {len(outputs)} outputs")
    for i, output in enumerate(outputs):
        if not output.requires_grad:
            raise RuntimeError(f"grad: outputs[{i}] does not require grad, so there is no graph to go back through")
    for i, tensor in enumerate(inputs):
        if not tensor.requires_grad:
            raise RuntimeError(f"grad: inputs[{i}] does not require grad (set requires_grad=True on it)")
    seeds = [_seed(output, g, "grad", "grad_outputs") for output, g in zip(outputs, grad_outputs)]
    if retain_graph is None:
        retain_graph = create_graph
    found = _backpropagate(outputs, seeds, retain_graph, create_graph, inputs=inputs)
    for i, tensor in enumerate(inputs):
        if id(tensor) not in found:
            raise ValueError(f"grad: inputs[{i}] (shape {tensor.shape}) was not used to compute the outputs")
    return tuple(found[id(tensor)] for tensor in inputs)


def checkpoint(fn, *inputs):
    """Return ``fn(*inputs)`` without keeping the activations inside ``fn`` for backward.

    Training keeps, for every op, what its VJP rule will read, so memory grows with
    depth.  ``checkpoint`` trades compute for that memory (*recomputation*, also called
    *rematerialization*): fn runs under no_grad, so nothing inside it is kept, and its
    result is one node, op ``"checkpoint"``, that keeps only its inputs.  When the
    backward pass reaches the node, fn runs once more with recording on and G is pushed
    through that new graph (:func:`checkpoint_vjp`).  The gradients are the same; the
    price is one more forward pass of fn during backward.

    ``fn`` takes the input Tensors and returns one Tensor.  As in torch.utils.checkpoint
    it may use parameters from its closure, such as the weights of the layers it runs:
    the Tensors that require grad and that fn reads are found while it runs and become
    parents of the node too, so their gradients arrive as along any other edge (and add
    up with those from uses outside fn).  Rules for fn:

    * it must compute the same thing each time it is called (it is called twice);
    * a Tensor that requires grad and was *computed* outside fn (not a leaf) must be
      passed as an input, not read from the closure;
    * gradients of gradients (``create_graph=True``) through it are not supported.

    Checkpoints may be nested; each level adds one more recomputation of the inner part.
    """
    if not callable(fn):
        raise TypeError(f"checkpoint: fn must be callable, got {type(fn).__name__}; call checkpoint(fn, *inputs)")
    for i, tensor in enumerate(inputs):
        if not isinstance(tensor, Tensor):
            raise TypeError(
                f"checkpoint: inputs[{i}] is a {type(tensor).__name__}, not a Tensor; "
                "pass Tensors (wrap arrays with Tensor(...), or put constants inside fn)"
            )
    reads = []  # filled by the forward (see _checkpoint_forward)
    out = apply("checkpoint", *inputs, args=(fn, reads))
    for tensor in reads:
        if tensor.parents:
            raise ValueError(
                f"checkpoint: fn reads a Tensor of shape {tensor.shape} that was computed outside it "
                f"(by {_OP_NAMES.get(tensor.op, tensor.op)!r}) and requires grad; pass it as an input "
                "instead, e.g. checkpoint(fn, x, h) with fn taking (x, h)"
            )
    if out.requires_grad or reads:
        # apply recorded the inputs as the parents (or nothing, if none needs grad); the
        # parameters fn read, known only now that it has run, are parents as well.  The
        # rule finds the inputs as the first n_inputs parents.
        parents = inputs + tuple(reads)
        out.requires_grad = True
        out.op, out.parents, out.saved, out.args = "checkpoint", parents, parents, (fn, len(inputs))
    return out


def zero_grad(tensors):
    """Set ``.grad`` to None on each Tensor in ``tensors`` (e.g. a model's parameters), and on no other.

    A single Tensor is the same as a list holding it.  To clear every Tensor a result was
    computed from, as :meth:`Value.zero_grad` does for scalars, call ``result.zero_grad()``.
    """
    for tensor in [tensors] if isinstance(tensors, Tensor) else tensors:
        if not isinstance(tensor, Tensor):
            raise TypeError(f"zero_grad: expected Tensors, got {type(tensor).__name__}")
        tensor.grad = None
