"""The tensor engine: :class:`Tensor`, a numpy array that remembers how it was computed.

This is the scalar engine of :mod:`chainrule.value` with whole arrays in place of
numbers, in four parts, read in this order:

* this module: the Tensor class and :func:`apply`, which runs an op and records it;
* :mod:`chainrule.node`: what an op records, its ``grad_fn``;
* :mod:`chainrule.rules`: the table of ops, each a forward function and a VJP rule;
  :func:`~chainrule.autograd.checkpoint` (recomputation, trading compute for memory) is one of them;
* :mod:`chainrule.backward`: the backward pass, which walks the record in reverse.

What is recorded.  A ``Value`` is its own graph node and keeps its parents, so every
intermediate number lives as long as the result.  A Tensor does not: an op made while
recording gets a ``grad_fn``, a :class:`~chainrule.node.Node` that keeps the rule, the
edges to its inputs' nodes and *only the arrays its gradients read*: for ``Z * 0.5``
only Z needs a gradient, dZ = 0.5 G reads the 0.5, and Z is not kept.  An intermediate array
that no node kept is freed as soon as the user drops its Tensor, and after
``backward()`` (without ``retain_graph``) the saved arrays are freed too.  Nothing
refers back to a Tensor from its node, so a dropped graph is freed at once by
reference counting.  This is how PyTorch keeps memory; :mod:`chainrule.node` says more.

Repeated calls, as in PyTorch.  Leaves with ``requires_grad=True`` *accumulate* into ``.grad`` (a
numpy array); clear it with :func:`chainrule.autograd.clear_grads` (or an optimizer's ``zero_grad``).
Interior Tensors keep no ``.grad`` unless :meth:`Tensor.retain_grad` was called. With
``create_graph=True`` the backward pass is recorded too: its gradients can be differentiated again.
"""

import weakref
from numbers import Real

import numpy as np

from .arguments import axis_arg, index_key, int_tuple, row_indices, shape_args, window_args
from .backward import backpropagate, unbroadcast, vertex_parents
from .grad_mode import in_backward, is_grad_enabled, no_grad, observe_ops, set_grad_enabled, thread_modes
from .graph import topological_order
from .in_place import in_place
from .node import AccumulateGrad, Node, vertex_of
from .rules import RULES, Rule

__all__ = [
    "Tensor",
    "RULES",
    "Rule",
    "Node",
    "AccumulateGrad",
    "apply",
    "recorded_graph",
    "unbroadcast",
    "no_grad",
    "set_grad_enabled",
    "is_grad_enabled",
    "observe_ops",
    "in_backward",
]

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


def _plain_tensor(data, version=None, base=None):
    """A Tensor around an array we know is fine, with no graph yet (a fast path around ``__init__``).

    It makes leaves (constants, detach) and, in :func:`apply`, every op's output before its
    graph fields are filled in. ``version``: a version counter to share (a detached Tensor
    shares its source's, as a saved output shares its Tensor's), else a new one.
    """
    out = _new_object(Tensor)
    out._data, out.grad, out.requires_grad, out.label, out.grad_fn = data, None, False, "", None
    out.retains_grad, out.accumulator, out._base = False, None, base
    out._version = [0] if version is None else version
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


def _array_of(x):
    """The array of a Tensor, or ``x`` itself (a list or an array)."""
    return x.data if isinstance(x, Tensor) else x


def apply(op, *inputs, args=()):
    """Compute ``op`` on the input Tensors and return the result as a new Tensor.

    When recording is on and some input requires grad, the result gets a ``grad_fn``
    (see :func:`record`); otherwise it is a plain leaf.
    """
    rule = RULES[op]
    arrays = [t._data for t in inputs]  # _data: the property's array, without the property's call
    try:
        data = rule.forward(*arrays, *args)
    except ValueError:  # numpy's shape errors, rewritten to name the op and the shapes
        if rule.shape_error is None:
            raise
        raise ValueError(rule.shape_error(rule.name, [a.shape for a in arrays], args)) from None
    return finish_op(op, inputs, args, data)


def finish_op(op, inputs, args, data):
    """What follows an op's forward: the observers see it, and a node records it when recording."""
    if type(data) is not np.ndarray:  # numpy returns scalars for 0-d results
        data = np.asarray(data)
    modes = thread_modes()  # grad mode and observers, read once
    for observer in modes.observers:
        observer(op, inputs, args, data)
    base = _view_base(inputs, data)
    out = _plain_tensor(data, None, None) if base is None else _plain_tensor(data, base._version, weakref.ref(base))
    if modes.grad_enabled:
        needs = tuple([t.requires_grad for t in inputs])  # a list made a tuple: faster than a generator here
        if True in needs:
            record(out, op, inputs, args, needs)
    return out


def _view_base(inputs, data):
    """The input whose memory ``data`` is a view of, or None.

    A transpose, a reshape, a broadcast or a slice returns a numpy view, and every linear layer
    saves ``W.T``. The view shares W's version counter, as PyTorch's views share their base's,
    so that a change to ``W.data`` (an optimizer's step) is seen by a graph that saved the view,
    and a change through the view by a graph that saved W; and it keeps a weak reference to W
    (``_base``), so that ``+=`` can tell a view of a live Tensor (:mod:`chainrule.in_place`).
    """
    for t in inputs:  # the input's own array (checkpoint's fn returned its input), or a view of it
        if data is t._data or (data.base is not None and np.may_share_memory(data, t._data)):
            return t
    return None


def record(out, op, inputs, args, needs):
    """Give ``out`` a node for ``op``: the rule, the edges to ``inputs`` and what its gradients read.

    ``saved`` has a slot per input and one for the output, filled only when a gradient
    that will be computed reads it (:meth:`Rule.kept`), or is ``()`` when none reads
    anything.  The output's slot holds a plain Tensor around the output's array, never
    ``out`` itself: ``out`` holds the node, so the node holding ``out`` would be a
    reference cycle, and a dropped graph would wait for Python's cyclic garbage
    collector instead of being freed at once.
    """
    rule = RULES[op]
    kept = rule.kept(needs)
    saved: tuple = ()
    if any(kept):
        *inputs_kept, output_kept = kept
        saved = (
            *[t if keep else None for t, keep in zip(inputs, inputs_kept, strict=True)],
            _plain_tensor(out._data, out._version) if output_kept else None,
        )
    out.requires_grad = True
    out.grad_fn = Node(op, rule, args, inputs, saved, out)


# --------------------------------------------------------------------------- Tensor


class Tensor:
    """An array in a computational graph.

    ``Tensor(data, requires_grad=False, label="")`` makes a leaf.  ``data`` is a numpy
    array (float32 or float64 arrays are used without copying; Python numbers and
    lists become float64).  Set ``requires_grad=True`` on the leaves you want
    gradients for, such as weights.  ``grad`` is None until a backward pass reaches
    the leaf, then a numpy array of the leaf's shape and dtype.

    ``grad_fn`` is the :class:`~chainrule.node.Node` that recorded the op which made
    this Tensor, or None for a leaf (see the module docstring). A leaf that requires
    grad has an :class:`~chainrule.node.AccumulateGrad` vertex in the graphs that read
    it, held by them (``accumulator`` is a weak reference to it).
    """

    __slots__ = (
        "_data",
        "_version",
        "_base",
        "grad",
        "requires_grad",
        "label",
        "grad_fn",
        "retains_grad",
        "accumulator",
        "__weakref__",
    )

    # numpy would otherwise treat a Tensor as an opaque object in ``array + tensor``;
    # None makes it hand such expressions to Tensor.__radd__ and friends.
    __array_ufunc__ = None

    def __init__(self, data, requires_grad=False, label=""):
        self._data = _float_array(data, "Tensor()")
        self._version, self._base = [0], None
        self.grad = None
        self.requires_grad = bool(requires_grad)
        self.label = label
        self.grad_fn = None
        self.retains_grad = False
        self.accumulator = None  # a weak reference to its AccumulateGrad, once a graph reads it

    @property
    def data(self):
        """The numpy array. Assigning it, ``x.data = a``, or changing it with ``x.data += a`` (which
        assigns it too) counts as a change in place: a graph that saved ``x`` before then refuses
        to go backward, as PyTorch's version counter does. Writes into its entries, ``x.data[0] = 1``,
        are not seen, as PyTorch does not see writes through ``.numpy()``."""
        return self._data

    @data.setter
    def data(self, array):
        if np.may_share_memory(array, self._data):  # changed in place: every view of it sees the change
            self._version[0] += 1
        else:  # new memory: the views of the old array keep their numbers, and their counter
            self._version, self._base = [self._version[0] + 1], None
        self._data = array

    @property
    def version(self):
        """How many times ``data`` was assigned or changed in place: a counter shared with detached
        copies and with the views ops make of it (a transpose, a reshape, a broadcast), as PyTorch's
        views share theirs. Assigning an array in new memory gives this Tensor a counter of its own."""
        return self._version[0]

    @property
    def is_leaf(self):
        """True for a Tensor that no recorded op made: a weight, an input, a constant."""
        return self.grad_fn is None

    @property
    def shape(self):
        return self._data.shape

    @property
    def ndim(self):
        return self._data.ndim

    @property
    def size(self):
        return self._data.size

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def T(self):
        """All axes reversed, as numpy's ``.T`` (the matrix transpose for 2-D)."""
        return apply("transpose", self, args=(tuple(range(self._data.ndim - 1, -1, -1)),))

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
        if self.grad_fn is not None:
            extras += f", grad_fn={self.grad_fn.name!r}"
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

    # In place, ``x -= y``: see :mod:`chainrule.in_place`.

    def __iadd__(self, other):
        return in_place(self, other, Tensor.__add__, "+=")

    def __isub__(self, other):
        return in_place(self, other, Tensor.__sub__, "-=")

    def __imul__(self, other):
        return in_place(self, other, Tensor.__mul__, "*=")

    def __itruediv__(self, other):
        return in_place(self, other, Tensor.__truediv__, "/=")

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
        return apply("sum", self, args=(axis_arg(axis, self.data.shape, "sum"), bool(keepdims)))

    def mean(self, axis=None, keepdims=False):
        """Mean over ``axis`` (an int, a tuple of ints or None for all), as numpy's ``mean``."""
        return apply("mean", self, args=(axis_arg(axis, self.data.shape, "mean"), bool(keepdims)))

    def max(self, axis=None, keepdims=False):
        """Largest entry over ``axis`` (an int, a tuple of ints or None for all), as numpy's ``max``.

        Where several entries tie for the largest, they share its gradient evenly (as
        ``torch.amax``; ``torch.max`` along a dim gives it all to one of them)."""
        return apply("max", self, args=(axis_arg(axis, self.data.shape, "max"), bool(keepdims)))

    def take_rows(self, indices, op="take_rows"):
        """The rows (slices along axis 0) that the integer array ``indices`` names, repeats allowed:
        ``self[indices]``, of shape ``indices.shape + self.shape[1:]``. Row ``"embedding"`` of
        the rule table; :func:`chainrule.functional.embedding` is this on a (rows, features) table
        (``op`` is the name its errors give)."""
        return apply("embedding", self, args=(row_indices(_array_of(indices), self.shape, op),))

    def scatter_add_rows(self, indices, rows):
        """Zeros of shape ``(rows,) + self.shape[indices.ndim:]``, with each slice of ``self`` added
        into the row its index names (a row named twice gets both): the VJP of :meth:`take_rows`,
        row ``"scatter_add"``."""
        indices = row_indices(_array_of(indices), (rows,), "scatter_add")
        if self.shape[: indices.ndim] != indices.shape:
            raise ValueError(
                f"scatter_add: indices of shape {indices.shape} do not match the leading dims of "
                f"the tensor of shape {self.shape}"
            )
        return apply("scatter_add", self, args=(indices, rows))

    # Indexing.

    def __getitem__(self, key):
        """``x[key]``, as numpy and torch index: ints, slices, None, ``...``, integer lists or arrays,
        a boolean mask (row ``"index"``). A key of ints and slices gives a view of x, which shares
        x's version counter, as in PyTorch; ``x[0] = 1`` is refused, and so is a key whose ints and
        arrays are apart, which numpy and torch read differently (:func:`~chainrule.arguments.index_key`)."""
        return apply("index", self, args=(index_key(key, "index", self.shape),))

    def __setitem__(self, key, value):
        raise TypeError(
            "Tensor: its entries are not assigned (a recorded graph could not follow the change). "
            "Build the result with chainrule.functional.where or cat, or change the array itself "
            "under no_grad: `with no_grad(): x.data[key] = value`"
        )

    def __iter__(self):
        if not self.ndim:
            raise TypeError("iteration over a 0-d Tensor: it has no rows; use .item() for its number")
        return (self[i] for i in range(self.shape[0]))

    def add_at(self, key, shape):
        """Zeros of ``shape`` with this Tensor added at ``key``, an entry picked twice getting both
        (numpy's ``np.add.at``): the VJP of indexing, row ``"add_at"``."""
        shape = int_tuple(shape_args((shape,)), "add_at", "shape")
        if any(size < 0 for size in shape):
            raise ValueError(f"add_at: the shape must have sizes >= 0, got {shape}")
        key = index_key(key, "add_at", shape)
        try:
            picked = np.empty(shape, dtype=bool)[key].shape
        except IndexError as error:
            raise IndexError(f"add_at: {error} (the shape is {shape})") from None
        if picked != self.shape:
            raise ValueError(f"add_at: the key picks shape {picked} of {shape}, but the Tensor has shape {self.shape}")
        return apply("add_at", self, args=(key, shape))

    def im2col(self, kernel, stride=1, padding=0):
        """The (kh, kw) windows of an (N, C, H, W) Tensor, ``stride`` apart after ``padding`` zeros
        around H and W, each flattened to a row of C·kh·kw entries: shape (N, rows, cols, C·kh·kw).
        A convolution is then one matmul (:func:`chainrule.functional.conv2d`). Row ``"im2col"``."""
        kernel = window_args(self.shape, kernel, stride, padding, "im2col")
        return apply("im2col", self, args=(kernel, stride, padding))

    def col2im(self, shape, kernel, stride=1, padding=0):
        """Each row of an (N, rows, cols, C·kh·kw) Tensor added into the window of an array of
        ``shape`` (N, C, H, W) it stands for: the VJP of :meth:`im2col`. Row ``"col2im"``."""
        kernel = window_args(tuple(shape), kernel, stride, padding, "col2im")
        return apply("col2im", self, args=(tuple(shape), kernel, stride, padding))

    def reshape(self, *shape):
        """The same numbers in a new shape; ``reshape(2, 3)`` or ``reshape((2, 3))``, -1 allowed."""
        return apply("reshape", self, args=(int_tuple(shape_args(shape), "reshape", "shape"),))

    def transpose(self, *axes):
        """Permute the axes; no arguments reverses them (as numpy)."""
        axes = int_tuple(shape_args(axes), "transpose", "axes") or tuple(reversed(range(self.data.ndim)))
        return apply("transpose", self, args=(axes,))

    def broadcast_to(self, *shape):
        """The Tensor repeated along new or size-1 axes to ``shape`` (as numpy's ``broadcast_to``)."""
        return apply("broadcast_to", self, args=(int_tuple(shape_args(shape), "broadcast_to", "shape"),))

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

    def abs(self):
        return apply("abs", self)

    def clamp(self, min=None, max=None):
        """Each entry clipped to [min, max], as torch's ``clamp``; either bound may be None, not both."""
        if min is None and max is None:
            raise ValueError("clamp: give min, max or both (both are None)")
        for name, bound in (("min", min), ("max", max)):
            number = isinstance(bound, Real | np.floating | np.integer) and not isinstance(bound, bool)
            if bound is not None and (not number or bound != bound):
                if number:
                    raise ValueError(f"clamp: {name} is nan; give a number or None")
                shown = f"a {type(bound).__name__} of shape {bound.shape}" if np.ndim(bound) else repr(bound)
                raise TypeError(
                    f"clamp: {name} must be a number or None, got {shown}; for bounds that vary by entry "
                    "use chainrule.functional.maximum and minimum"
                )
        return apply("clamp", self, args=(min, max))

    # Graph and gradient bookkeeping.

    def detach(self):
        """A new leaf sharing this Tensor's data, outside any graph (requires_grad False)."""
        return _plain_tensor(self._data, self._version)

    def retain_grad(self):
        """Ask backward to keep (accumulate) ``.grad`` on this interior node too."""
        if self.grad_fn is not None:
            self.retains_grad = True

    def backward(self, gradient=None, retain_graph=None, create_graph=False):
        """Add d(self)/d(leaf) into ``.grad`` of every leaf with ``requires_grad=True``.

        A one-element output needs no ``gradient``.  For a larger output pass
        ``gradient`` (an array of the output's shape, the vector v in the product
        Jᵀ v) or reduce it first, e.g. ``out.sum().backward()``.  The saved tensors
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
        seed = seed_gradient(self, gradient, "backward")
        if retain_graph is None:
            retain_graph = create_graph
        backpropagate([vertex_of(self)], [seed], retain_graph, create_graph)


# --------------------------------------------------------------------------- backward and grad


def recorded_graph(output):
    """What the backward pass of ``output`` walks, in topological order (leaves first, ``output``'s node last).

    The vertices are :class:`~chainrule.node.Node` objects (one per recorded op, each
    ``grad_fn`` of some Tensor) and the :class:`~chainrule.node.AccumulateGrad` of each
    leaf that requires grad.  Constants and inputs
    without ``requires_grad`` are not part of it, as in PyTorch.
    """
    return topological_order(vertex_of(output), vertex_parents)


def seed_gradient(output, gradient, where, argument="gradient"):
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
        return _plain_tensor(np.ones(output._data.shape, output._data.dtype))
    if isinstance(gradient, Tensor):
        seed = gradient
    else:
        seed = _plain_tensor(_float_array(gradient, f"{where}: {argument}").astype(output.dtype, copy=False))
    if seed.shape != output.shape:
        raise ValueError(
            f"{where}: {argument} has shape {seed.shape} but the output has shape {output.shape}; they must be the same"
        )
    if not np.isfinite(seed.data).all():
        raise ValueError(f"{where}: {argument} contains nan or inf")
    return seed
