"""Figures of computational graphs, written as DOT text and drawn by Graphviz.

Two kinds of figure, each returned as a :class:`Figure`:

* :func:`draw_graph` -- the graph an expression built: one box per value (label, data
  and gradient) and one small ellipse per operation, with an edge from every input of
  the operation (``a * a`` has two edges from ``a``).
* :func:`draw_gradient_flow` -- after ``backward()``: the global gradient of every
  node and the local gradient on every edge.

A :class:`Figure` shows itself in a notebook (and in the book) as an inline ``<svg>``
with alt text, a white background and a width that never exceeds the page.  Node ids
in the DOT text are ``n0, n1, ...`` in topological order, so the same graph always
gives the same text.

Every figure works for any node with ``.data``, ``.grad``, ``.label``, ``.op`` and
``.parents`` (``local_grads`` too for the gradient flow).  When ``.data`` is an array
the box shows its shape instead of its numbers.  A :class:`~chainrule.tensor.Tensor`
is drawn from the boxes :func:`chainrule.drawable.drawable_graph` makes of its graph.

This module draws; it never changes a graph.  The search itself is
:func:`chainrule.graph.depth_first_events`, the same one the engine uses.
"""

from ..graph import numbered_ids, topological_order
from .figure import (
    GLOBAL_GRAD_COLOR,
    LOCAL_GRAD_COLOR,
    MUTED,
    OP_FILL,
    ORIENTATION,
    Figure,
    array_shape,
    check_size,
    counted,
    data_row,
    describe_data,
    describe_grad,
    dot_html,
    grad_row,
    new_digraph,
    op_symbol,
    root_name,
    value_box,
)

__all__ = ["draw_graph", "draw_gradient_flow"]


def _drawable(root, **options):
    """A Tensor as the boxes of its graph (:func:`chainrule.drawable.drawable_graph`); a Value as it is.

    The import is here, not at the top: a Tensor exists, so numpy is loaded, while a
    Value graph is drawn without numpy.
    """
    if not hasattr(root, "grad_fn"):
        return root
    from ..drawable import drawable_graph

    return drawable_graph(root, **options)


def draw_graph(root, rankdir=ORIENTATION, show_grad=True, max_nodes=150, title=None, compact=False):
    """Draw the computational graph that ``root`` depends on.

    Each value is a box with its label (if any), data and, when ``show_grad`` is true,
    grad.  Each operation is a small grey ellipse with its symbol, between the value it
    produced and that value's parents; there is one edge per parent, in parent order,
    so ``a * a`` draws two edges from ``a``.  ``rankdir`` is graphviz's direction
    (the default, :data:`~chainrule.figures.figure.ORIENTATION`, puts the inputs at
    the bottom and the root at the top, as every graph in the course is drawn).  ``title`` goes above the graph.

    ``root`` is a :class:`~chainrule.Value` or a :class:`~chainrule.Tensor` (drawn from
    the nodes its ``grad_fn`` recorded), or any node with the attributes listed at the
    top of this module.

    ``compact=True`` is for large graphs and narrow screens: each value is one small box
    with its label (its operation for an unlabelled result, "constant" for an unlabelled
    leaf) and nothing else, and the edges go straight from the inputs to the result,
    with no operation ellipses.

    Raises :class:`GraphTooLargeError` when there are more than ``max_nodes`` values.
    """
    root = _drawable(root)
    order = topological_order(root)
    check_size("draw_graph", len(order), max_nodes)
    ids = numbered_ids(order)
    dot = new_digraph(rankdir, title)
    if compact:
        return _draw_compact(dot, root, order, ids)
    for node in order:
        rows = [data_row(node)] + ([grad_row(node)] if show_grad else [])
        dot.node(ids[node], value_box(node, rows), shape="plain")
        if node.parents:
            _add_operation(dot, node, ids)
    return Figure(dot, _graph_alt(root, order, show_grad))


def _draw_compact(dot, root, order, ids):
    """The compact figure of :func:`draw_graph`: one small box per value, edges from inputs to results."""
    dot.attr(nodesep="0.15", ranksep="0.25")
    for node in order:
        text = node.label or (op_symbol(node.op) if node.parents else "constant")
        dot.node(
            ids[node],
            dot_html(text),
            shape="box",
            style="rounded",
            fontsize="10",
            width="0.2",
            height="0.2",
            margin="0.04,0.02",
        )
        for parent in node.parents:
            dot.edge(ids[parent], ids[node])
    leaves = sum(1 for node in order if not node.parents)
    alt = (
        f"Compact computational graph of {root_name(root)}: {counted(len(order), 'value')} "
        f"({leaves} {'is a leaf' if leaves == 1 else 'are leaves'}), each a small box with its "
        "label or the operation that made it, with an arrow from each input to the result."
    )
    return Figure(dot, alt)


def _add_operation(dot, node, ids):
    """Draw the operation that produced ``node``, with an edge from each parent."""
    op_id = ids[node] + "_op"
    dot.node(
        op_id,
        f"<{dot_html(op_symbol(node.op))}>",
        shape="ellipse",
        style="filled",
        fillcolor=OP_FILL,
        color=MUTED,
        fontsize="12",
        width="0.3",
        height="0.3",
        margin="0.04",
    )
    for parent in node.parents:
        dot.edge(ids[parent], op_id)
    dot.edge(op_id, ids[node])


def _graph_alt(root, order, show_grad):
    leaves = sum(1 for node in order if not node.parents)
    operations = len(order) - leaves
    shown = "label, data and gradient" if show_grad else "label and data"
    return (
        f"Computational graph of {root_name(root)}: {counted(len(order), 'value')} "
        f"({leaves} {'is a leaf' if leaves == 1 else 'are leaves'}) joined by "
        f"{counted(operations, 'operation')}; "
        f"each box shows a value's {shown}."
    )


def draw_gradient_flow(root, rankdir=ORIENTATION, max_nodes=150, gradient=None):
    """Draw the gradients that ``root.backward()`` computes.

    Every value is a box with its label, operation, data and -- in bold blue -- its
    global gradient d(root)/d(node).  Every edge is a red dashed arrow from a node back
    to one of its parents.  A legend under the graph says what the arrows carry:

    * for a :class:`~chainrule.value.Value`, drawn after ``root.backward()``, the local
      gradient d(node)/d(parent): the factor the gradient is multiplied by on its way back;
    * for a :class:`~chainrule.tensor.Tensor` the local gradient is a Jacobian, too big to
      show, so the arrow carries the gradient the op sends back to that parent (G times
      the Jacobian, its VJP), shown by its norm, as the boxes' gradients are.  The figure
      runs that backward pass itself (``gradient`` seeds it, as in ``backward()``) and
      stores nothing in ``.grad``; draw it before ``backward()`` frees the graph.  An input
      that needs no gradient gets a grey arrow marked "none".

    Raises ValueError when a Value's ``grad`` is zero or unset (call ``backward()``
    first), RuntimeError when a Tensor's graph was freed, :class:`GraphTooLargeError`
    when there are more than ``max_nodes`` values.
    """
    is_tensor = hasattr(root, "grad_fn")
    if is_tensor:
        root = _drawable(root, flow=True, gradient=gradient, where="draw_gradient_flow")
    elif root.grad is None or (array_shape(root.grad) is None and float(root.grad) == 0.0):
        raise ValueError(
            f"draw_gradient_flow: {root_name(root)} has grad {root.grad!r}, so no gradient "
            "has flowed yet; call backward() on it before drawing"
        )
    order = topological_order(root)
    check_size("draw_gradient_flow", len(order), max_nodes)
    ids = numbered_ids(order)
    dot = new_digraph(rankdir)
    dot.attr(label=_gradient_legend(root.label or "root", is_tensor), labelloc="b", labeljust="c")
    for node in order:
        rows = [data_row(node), grad_row(node, emphasise=True)]
        dot.node(ids[node], value_box(node, rows, show_op=True), shape="plain")
        for parent, carried in zip(node.parents, node.sent if is_tensor else node.local_grads, strict=True):
            style = dict(color=LOCAL_GRAD_COLOR, style="dashed", fontcolor=LOCAL_GRAD_COLOR)
            if is_tensor and carried is None:
                style = dict(color=MUTED, style="solid", fontcolor=MUTED)
            text = describe_grad(carried) if is_tensor else describe_data(carried)
            dot.edge(ids[parent], ids[node], dir="back", label=f"<{dot_html(text)}>", **style)
    carried = "the gradient sent back along it" if is_tensor else "its local gradient"
    alt = (
        f"Gradient flow into {root_name(root)} over {counted(len(order), 'value')} and "
        f"{counted(sum(len(node.parents) for node in order), 'edge')}: each value shows its global "
        f"gradient and each edge is labelled with {carried}."
    )
    return Figure(dot, alt)


def _gradient_legend(root_name, is_tensor=False):
    """An HTML-like graph label explaining the two styles of gradient."""
    output = dot_html(root_name)
    samples = (
        f'<FONT COLOR="{GLOBAL_GRAD_COLOR}"><B>grad</B></FONT>',
        f'<FONT COLOR="{LOCAL_GRAD_COLOR}">&lt;- - 0.5 - -</FONT>',
    )
    if is_tensor:
        texts = (f"global gradient \u2202{output}/\u2202node (norm)", "gradient sent back to the parent (norm)")
    else:
        texts = (
            f"global gradient \u2202{output}/\u2202node, stored in node.grad",
            "local gradient \u2202child/\u2202parent, on the arrow back to the parent",
        )
    rows = "".join(
        f'<TR><TD ALIGN="RIGHT">{sample}</TD><TD ALIGN="LEFT"><FONT POINT-SIZE="11">{text}</FONT></TD></TR>'
        for sample, text in zip(samples, texts, strict=True)
    )
    return f'<<TABLE BORDER="0" CELLSPACING="2" CELLPADDING="1">{rows}</TABLE>>'
