"""What the tensor engine records: a :class:`Node` per operation.

The scalar engine of :mod:`chainrule.value` has one kind of object: a ``Value`` is both
a number and a node of the graph, and it keeps its parents, so everything computed
stays alive as long as the result does.  That is simple, and for scalars it costs
little.  For arrays it would cost the memory of every intermediate array.

So the tensor engine splits the two, as PyTorch does.  A :class:`~chainrule.tensor.Tensor`
holds an array and, if an operation made it while recording was on, a ``grad_fn``: the
:class:`Node` that records that operation.  The node holds only what the backward pass
needs:

* ``rule``, ``op`` and ``args``: which row of the rule table to run, and its constant
  arguments (the exponent of ``**``, the axis of a sum);
* ``next_functions``: one entry per input of the operation, the input's own node, the
  :class:`AccumulateGrad` vertex of a leaf that requires grad, or None when no gradient
  flows to it;
* ``saved``: the arrays the rule reads values from (see :data:`~chainrule.rules.RULES`),
  and nothing else;
* shapes and labels, a few bytes each, for unbroadcasting, messages and drawings.

A node never holds the Tensor it produced (that would be a reference cycle: the Tensor
holds its node), only a weak reference to it.  So when the user drops an intermediate
Tensor whose array no rule saved, reference counting frees the array at once, and a
dropped graph is freed as a whole.
"""

import weakref

__all__ = ["Node", "AccumulateGrad", "vertex_of"]


# --------------------------------------------------------------------------- the node


class Node:
    """The record of one operation, kept for the backward pass (a Tensor's ``grad_fn``).

    ``op``, ``rule`` and ``args``
        the row of the rule table and the op's constant arguments.
    ``next_functions``
        per input, in order: the input's vertex (:func:`vertex_of`: its ``grad_fn``, or
        the :class:`AccumulateGrad` of a leaf that requires grad), or None when it needs
        no gradient.
    ``parents``
        the same without the Nones: the edges the backward pass follows.
    ``saved``
        what the gradients that will be computed read: one slot per input, then one for
        the output (a plain Tensor around its array), each None when no such gradient
        reads it (:meth:`~chainrule.rules.Rule.kept`); ``()`` when none reads anything.
        None once a backward pass has freed it.
    ``input_shapes``, ``input_labels``, ``shape``, ``dtype``
        metadata of the inputs and the output, kept after their arrays are freed.
    ``output``
        a weak reference to the Tensor the op produced: alive while the user holds it.
    """

    __slots__ = (
        "op",
        "rule",
        "args",
        "next_functions",
        "parents",
        "saved",
        "versions",
        "input_shapes",
        "input_labels",
        "shape",
        "dtype",
        "output",
        "__weakref__",
    )

    def __init__(self, op, rule, args, inputs, saved, output):
        self.op, self.rule, self.args = op, rule, args
        # (lists made into tuples: a list comprehension is faster than a generator on this hot path)
        self.next_functions = tuple([vertex_of(t) if t.requires_grad else None for t in inputs])
        self.parents = tuple([edge for edge in self.next_functions if edge is not None])
        self.saved = saved
        self.versions = tuple([None if t is None else t._version[0] for t in saved]) if saved else ()
        self.input_shapes = tuple([t._data.shape for t in inputs])
        self.input_labels = tuple([t.label for t in inputs])
        self.shape, self.dtype = output._data.shape, output._data.dtype
        self.output = weakref.ref(output)

    is_leaf = False

    def tensor(self):
        """The Tensor this node made, while the user holds it, else None."""
        return self.output()

    def grad_holder(self):
        """Where the backward pass stores this node's gradient: its output, when it retains grad."""
        output = self.output()
        return output if output is not None and output.retains_grad else None

    @property
    def name(self):
        """How figures and messages call the op: ``"**2"`` for a square (as :class:`Value`), else ``op``."""
        if self.op == "**":
            return f"**{self.args[0]:g}"
        return self.op

    @property
    def needs_input_grad(self):
        """One bool per input: does a gradient flow to it?"""
        return tuple(edge is not None for edge in self.next_functions)

    def __repr__(self):
        return f"<Node {self.name} {self.shape}>"


# --------------------------------------------------------------------------- the leaves


class AccumulateGrad:
    """The vertex of a leaf Tensor that requires grad: the backward pass adds its gradient to ``.grad``.

    A leaf is not made by an op, but the graph needs a vertex for it all the same, so that
    every edge ends at a vertex that knows what to do with the gradient it receives. A
    node runs its rule and sends gradients on; an AccumulateGrad sends nothing on (it has
    no parents) and accumulates into its leaf's ``.grad``, as PyTorch's ``AccumulateGrad``
    does. It holds its leaf (``variable``); the leaf holds it only weakly, so a graph and
    its vertices are freed once the graph is dropped.
    """

    __slots__ = ("variable", "__weakref__")
    is_leaf = True
    parents = next_functions = saved = ()
    name = ""

    def __init__(self, variable):
        self.variable = variable

    @property
    def shape(self):
        return self.variable.data.shape

    def tensor(self):
        """The leaf."""
        return self.variable

    def grad_holder(self):
        """Where the backward pass stores the gradient: the leaf."""
        return self.variable

    def __repr__(self):
        return f"<AccumulateGrad {self.variable.label or self.shape}>"


def vertex_of(tensor):
    """Where ``tensor`` sits in the recorded graph: the node that made it, or its leaf's AccumulateGrad.

    This is the one place that tells a leaf from a computed Tensor. A leaf's AccumulateGrad
    is made on first use and found again through a weak reference while a graph holds it,
    so every node that reads the leaf points to the same vertex.
    """
    if tensor.grad_fn is not None:
        return tensor.grad_fn
    vertex = tensor.accumulator() if tensor.accumulator is not None else None
    if vertex is None:
        vertex = AccumulateGrad(tensor)
        tensor.accumulator = weakref.ref(vertex)
    return vertex
