"""The backward pass of the tensor engine: walk the recorded nodes in reverse topological order.

The graph the pass walks is the one :class:`~chainrule.node.Node` records. Its
*vertices* are the nodes, one per operation, and at its edges one
:class:`~chainrule.node.AccumulateGrad` per leaf Tensor that requires grad.  For each node, in reverse
topological order, it

1. takes the node's gradient G, complete because every consumer came before it;
2. runs the node's VJP rule (:mod:`chainrule.rules`) on G and the node's saved arrays;
3. sums each result down to its input's shape (:func:`unbroadcast`, the one place
   broadcasting is undone) and adds it to that input's gradient;
4. frees the node's saved arrays, unless ``retain_graph`` asks to keep them.

Leaves *accumulate* into ``.grad`` (a numpy array), as in PyTorch.  Interior Tensors
keep no ``.grad`` unless ``retain_grad()`` was called on them.

This module knows the vertices (a node carries its rule), never the rule table nor the
Tensor class: Tensor's ``backward()`` and :func:`chainrule.autograd.grad` call
:func:`backpropagate` with the seeds already made, and checkpoint's rule calls it to
push a gradient through the graph it recomputes.
"""

import math

import numpy as np

from .grad_mode import backward_phase, set_grad_enabled
from .graph import topological_order

__all__ = ["backpropagate", "unbroadcast", "vertex_parents"]


def unbroadcast(grad, shape):
    """Sum ``grad`` down to ``shape``, undoing numpy broadcasting.

    Broadcasting ``shape`` to ``grad.shape`` adds axes on the left and stretches
    size-1 axes; each stretched number was used once per copy, so its gradient is the
    sum over the copies.  Works on Tensors and on numpy arrays.
    """
    shape = tuple(shape)
    extra = grad.ndim - len(shape)
    same = extra >= 0 and grad.shape[extra:] == shape  # only axes added on the left (a bias): the usual case
    if not same and (extra < 0 or any(n != 1 and n != m for n, m in zip(shape, grad.shape[extra:], strict=True))):
        raise ValueError(f"unbroadcast: a gradient of shape {grad.shape} cannot come from broadcasting {shape}")
    if extra:  # axes added on the left: sum them away (one axis, a bias's, as an int: the quick path)
        grad = grad.sum(axis=0 if extra == 1 else tuple(range(extra)))
    if same:
        return grad
    stretched = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if stretched:  # size-1 axes that were stretched: sum them, keeping the axis
        grad = grad.sum(axis=stretched, keepdims=True)
    return grad


def vertex_parents(vertex):
    """What the search follows from a vertex of the graph: a node's parents; a leaf's AccumulateGrad has none."""
    return vertex.parents


def _saved_tensors(node, recording):
    """The Tensors the rule of ``node`` reads.

    A node that keeps its output keeps a plain Tensor around the output's array, not
    the output Tensor itself (that would be a reference cycle).  When the backward
    pass records (``create_graph``), the rule's result must depend on the output
    through this node, so a Tensor joined to the node is made for the pass, as
    PyTorch does when it unpacks a saved output.
    """
    saved = node.saved
    if recording and saved and saved[-1] is not None:
        output = saved[-1].detach()
        output.grad_fn, output.requires_grad = node, True
        return (*saved[:-1], output)
    return saved


def _finite(data) -> bool:
    """Whether every element of the array ``data`` is finite.

    The sum of squares is a cheap test (one pass, no temporary array): it is nan or inf
    whenever an element is.  It can also overflow when all elements are finite, so a
    positive answer is confirmed element by element.
    """
    return math.isfinite(np.vdot(data, data)) or np.isfinite(data).all()


def _check_finite(node, saved, i, made, summed):
    """Raise FloatingPointError if the gradient ``summed`` that ``node`` sends its input ``i`` has nan or inf.

    ``made`` is what its rule returned for input ``i``, and ``summed`` that summed down to the
    input's shape (``made`` itself when the input was not broadcast), so an overflow of the
    sum is named too.
    """
    if _finite(summed._data):
        return
    if not all(_finite(t.data) for t in saved if t is not None):
        hint = "the forward pass of this op already had nan/inf values (an overflow upstream?)"
    elif summed is not made and _finite(made.data):
        hint = f"summing the gradient over the broadcast axes, from shape {made.shape}, overflowed"
    else:
        hint = node.rule.nonfinite_hint
    raise FloatingPointError(
        f"backward of {node.rule.name} produced nan/inf: {hint} "
        f"(in the gradient for its input {i}, shape {node.input_shapes[i]})"
    )


def _added(total, g, node, i):
    """``total + g``: the gradients two consumers send one input, added; FloatingPointError if that overflows."""
    total = total + g
    if not _finite(total._data):
        raise FloatingPointError(
            f"backward of {node.rule.name} produced nan/inf: adding its gradient for its input {i} to what "
            f"another op sends the same input overflowed (shape {node.input_shapes[i]})"
        )
    return total


def _store_grad(tensor, g, shared, create_graph):
    """Accumulate ``g`` into ``tensor.grad``: a Tensor with create_graph, else a numpy array of its dtype.

    With ``create_graph`` the gradient is the Tensor the backward pass computed, graph
    and all, so it can be differentiated again (as PyTorch's ``.grad`` with a ``grad_fn``).

    A gradient that is already there is added to in place, so a training loop that keeps
    its gradient arrays (``zero_grad(set_to_none=False)``) allocates none.

    A rule's result is a fresh array that nothing else holds, and the leaf may keep it
    as it is.  Other arrays are copied, so that ``.grad`` is the caller's to modify:
    views (from reshape, transpose, broadcast_to), the caller's own ``gradient``, and
    arrays already given to another tensor (add passes the same G to both inputs).
    ``shared`` holds the ids of the arrays in the last two groups.
    """
    if g.shape != tensor._data.shape:  # its .data was given another shape after the forward pass
        name = repr(tensor.label) if tensor.label else "a tensor"
        raise RuntimeError(
            f"backward: the gradient of {name} has the shape it had in the forward pass, {g.shape}, but its "
            f".data now has shape {tensor._data.shape}. Compute the graph again after giving it new data"
        )
    if create_graph or not isinstance(tensor.grad, (np.ndarray, type(None))):
        # A Tensor gradient (this pass records, or an earlier one did) stays a Tensor.
        tensor.grad = g if tensor.grad is None else g + tensor.grad
        return
    dtype = tensor._data.dtype
    array = g._data
    if tensor.grad is not None:
        grad = tensor.grad
        if grad.dtype == dtype and grad.shape == array.shape and grad.flags.writeable:
            np.add(grad, array, out=grad)  # in place, as PyTorch accumulates: no second array
        else:
            tensor.grad = (grad + array).astype(dtype, copy=False)
        return
    if array.dtype != dtype or array.base is not None or not array.flags.writeable or id(array) in shared:
        array = np.array(array, dtype=dtype)
    shared.add(id(array))
    tensor.grad = array


def _changed_error(node, slot, tensor):
    """The error for a tensor that ``node`` saved and that was then changed in place (PyTorch's guard)."""
    what = "output" if slot == len(node.saved) - 1 else f"input {slot}"
    label = node.input_labels[slot] if what != "output" and node.input_labels[slot] else ""
    version = tensor._version[0]
    return RuntimeError(
        f"backward through {node.rule.name} ({node.name!r}): the tensor it saved as its {what}"
        f"{f' ({label!r})' if label else ''} was changed in place after it was saved, itself or through a "
        f"Tensor sharing its memory as W and W.T do (its version is "
        f"{version}, it was {node.versions[slot]}), so the gradient would be that of other numbers. Compute "
        "the graph again after the change, or change a copy"
    )


def _second_pass_error(node):
    return RuntimeError(
        f"backward through {node.rule.name} ({node.name!r}) a second time: its saved "
        "tensors were freed by an earlier backward pass. Pass retain_graph=True to the earlier "
        "backward() if you need to go through the graph again"
    )


class _JointRoot:
    """A stand-in root whose parents are several outputs' vertices, so one search covers them all."""

    def __init__(self, vertices):
        self.parents = tuple(vertices)


def backpropagate(roots, seeds, retain_graph, create_graph, wanted=None, on_edge=None):
    """Push ``seeds`` (Tensors, dL/d root) back from ``roots`` through the recorded graph.

    ``roots`` are graph vertices (:func:`~chainrule.node.vertex_of`): an output's
    ``grad_fn``, or the AccumulateGrad of an output that is a leaf.  With ``wanted``
    None, leaves (and Tensors that retain grad) accumulate ``.grad`` and nothing is
    returned.  Otherwise ``wanted`` is a set of vertex ids, nothing is stored, and the
    gradients of those vertices are returned, keyed by id.  ``on_edge(node, i,
    gradient)``, when given, is called with every gradient a node sends to its input
    ``i`` (figures of the gradient flow show them).
    """
    root = roots[0] if len(roots) == 1 else _JointRoot(roots)
    order = topological_order(root)  # every vertex has .parents (vertex_parents reads it)
    if len(roots) > 1:
        order.pop()  # the stand-in root
    pending: dict = {}  # id(vertex) -> dL/d(vertex) so far, a Tensor
    for vertex, seed in zip(roots, seeds, strict=True):
        key = id(vertex)
        pending[key] = pending[key] + seed if key in pending else seed
    found = {}
    shared = {id(seed.data) for seed in seeds}  # see _store_grad
    with set_grad_enabled(create_graph), np.errstate(all="ignore"), backward_phase():
        for vertex in reversed(order):
            g = pending.pop(id(vertex), None)
            if g is None:
                continue
            if wanted is not None:
                if id(vertex) in wanted:
                    found[id(vertex)] = g
            elif (holder := vertex.grad_holder()) is not None:  # a leaf, or a node that retains grad
                _store_grad(holder, g, shared, create_graph)
            if not vertex.is_leaf:
                _push_through(vertex, g, pending, retain_graph, create_graph, on_edge)
    return found


def _push_through(node, g, pending, retain_graph, create_graph, on_edge):
    """Run the rule of ``node`` on its gradient ``g`` and add the results to its inputs' gradients."""
    if node.saved is None:
        raise _second_pass_error(node)
    for slot, tensor in enumerate(node.saved):
        if tensor is not None and tensor._version[0] != node.versions[slot]:
            raise _changed_error(node, slot, tensor)
    saved = _saved_tensors(node, create_graph) if create_graph else node.saved
    input_grads = node.rule.vjp(g, node, saved)
    for i, (edge, input_grad) in enumerate(zip(node.next_functions, input_grads, strict=True)):
        if edge is None or input_grad is None:
            continue
        shape = node.input_shapes[i]
        summed = unbroadcast(input_grad, shape) if input_grad.shape != shape else input_grad
        # G passed on as it is (add's rule) was tested when it was made, and so was the G
        # that a keeps_finite rule copied or masked
        tested = summed is g or (summed is input_grad and node.rule.keeps_finite)
        if not tested and not _finite(summed._data):
            _check_finite(node, saved, i, input_grad, summed)
        input_grad = summed
        if on_edge is not None:
            on_edge(node, i, input_grad)
        key = id(edge)
        pending[key] = _added(pending[key], input_grad, node, i) if key in pending else input_grad
    if not retain_graph and node.saved:
        node.saved = None
