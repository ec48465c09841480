"""The recorded graph of a Tensor as the figures draw it: one box per value, and the gradients that flowed.

:mod:`chainrule.figures.draw` draws Values and Tensors with the same code. A Value is its
own box; a Tensor's graph keeps nodes, not Tensors, so :func:`drawable_graph` makes the
boxes from what the nodes and the leaves' vertices kept, and, for a figure of the
gradient flow, runs a backward pass that stores nothing and keeps the graph.
"""

from .backward import backpropagate
from .node import vertex_of
from .tensor import recorded_graph, seed_gradient

__all__ = ["GraphBox", "drawable_graph"]


class GraphBox:
    """One value of a recorded graph, as :mod:`chainrule.figures.draw` draws it.

    A Tensor's graph keeps nodes, not Tensors (see :mod:`chainrule.node`), so a figure
    gets one box per value, with the attributes a :class:`~chainrule.value.Value` has:
    ``label``, ``data``, ``grad``, ``op`` and ``parents``.  ``data`` is None when the
    user dropped the Tensor and no node kept its array; ``shape`` still says what it
    was.  For the gradient flow, ``sent`` holds, per parent, the gradient that this
    value's op sent back to it (None where the parent needs none).
    """

    __slots__ = ("label", "data", "shape", "grad", "op", "parents", "sent")

    def __init__(self, label, data, shape, grad, op):
        self.label, self.data, self.shape, self.grad, self.op = label, data, tuple(shape), grad, op
        self.parents, self.sent = [], []


def drawable_graph(output, flow=False, gradient=None, where="draw_graph"):
    """The graph that ``output``'s ``grad_fn`` recorded, as :class:`GraphBox` objects; returns the root's box.

    Each node becomes a box for the Tensor it produced: that Tensor's label, data and
    grad while the user still holds it, else its shape alone.  Leaves that require grad
    are boxes of their own.  An input that needs no gradient (a constant) is drawn from
    what the node kept: the Tensor itself when the rule saved it, else its label and
    shape.

    With ``flow`` a backward pass from ``output`` runs on the graph, keeps it, and stores
    nothing (:func:`_gradient_flow`): each box's ``grad`` is then its gradient from that
    pass, and ``sent`` the gradients along its edges.  ``where`` names the caller in
    error messages.
    """
    grads, sent = _gradient_flow(output, gradient, where) if flow else ({}, {})
    boxes = {}  # id(vertex, or constant Tensor) -> its box

    def constant_box(tensor):
        if id(tensor) not in boxes:
            boxes[id(tensor)] = GraphBox(tensor.label, tensor.data, tensor.shape, tensor.grad, "")
        return boxes[id(tensor)]

    def box_of(vertex):  # a Node, or a leaf's AccumulateGrad
        if id(vertex) not in boxes:
            tensor = vertex.tensor()  # None once the user dropped a node's output
            grad = grads.get(id(vertex)) if flow else getattr(tensor, "grad", None)
            label, data = ("", None) if tensor is None else (tensor.label, tensor.data)
            boxes[id(vertex)] = GraphBox(label, data, vertex.shape, grad, vertex.name)
            pending.append(vertex)
        return boxes[id(vertex)]

    pending: list = []
    root = box_of(vertex_of(output))
    while pending:  # a worklist, not recursion: graphs may be deep
        node = pending.pop()
        box, saved = boxes[id(node)], node.saved or ()
        for i, edge in enumerate(node.next_functions):
            if edge is not None:
                parent = box_of(edge)
            elif i < len(saved) - 1 and saved[i] is not None:  # a constant input the node kept
                parent = constant_box(saved[i])
            else:
                parent = GraphBox(node.input_labels[i], None, node.input_shapes[i], None, "")
            box.parents.append(parent)
            box.sent.append(sent.get((id(node), i)))
    return root


def _gradient_flow(output, gradient, where):
    """Run a backward pass from ``output`` that keeps the graph and stores nothing.

    Returns the gradient of every vertex, keyed by id, and every gradient a node sent to
    an input, keyed by (id(node), input index), all as arrays.  It needs what the nodes
    saved, so it runs before ``backward()`` frees them (or after ``retain_graph=True``).
    """
    if not output.requires_grad:
        raise RuntimeError(
            f"{where}: the output does not require grad, so no gradient flows through it: none of the "
            "tensors it was computed from has requires_grad=True (or it was computed under no_grad())"
        )
    vertices = recorded_graph(output)
    for vertex in vertices:
        if vertex.saved is None:
            raise RuntimeError(
                f"{where}: backward() already freed what the graph kept (the saved arrays of "
                f"{vertex.rule.name!r}), so its gradients cannot be computed again. "
                "Draw the gradient flow before calling backward(), or call backward(retain_graph=True)"
            )
    seed = seed_gradient(output, gradient, where)
    sent = {}

    def note_edge(node, i, g):
        sent[(id(node), i)] = g.data

    found = backpropagate(
        [vertex_of(output)],
        [seed],
        retain_graph=True,
        create_graph=False,
        wanted={id(vertex) for vertex in vertices},
        on_edge=note_edge,
    )
    return {key: g.data for key, g in found.items()}, sent
