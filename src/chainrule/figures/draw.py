"""Figures of computational graphs, written as DOT text and drawn by Graphviz.

Three kinds of figure, each returned as a :class:`Figure`:

* :func:`draw_graph` -- the graph an expression built: one box per value (label, data
  and gradient) and one small ellipse per operation, with an edge from every input of
  the operation (``a * a`` has two edges from ``a``).
* :func:`draw_dfs_step` -- one step of the depth-first search that puts the graph in
  topological order (:func:`chainrule.graph.dfs_trace` gives all the steps as data).
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

import hashlib
import html
import math
import re
from pathlib import Path

from ..graph import dfs_trace, name_list, parents_function, topological_order, trace_names
from .dot import Digraph, GraphvizMissingError
from .svg import SVG_HEADER, accessible_svg, scrolling_figure

__all__ = [
    "Figure",
    "GraphTooLargeError",
    "GraphvizMissingError",
    "draw_graph",
    "draw_dfs_step",
    "dfs_element_ids",
    "draw_gradient_flow",
]

FONT = "Helvetica"  # SVG viewers fall back to any sans-serif; dot measures Liberation Sans

# Colours.  Each state also differs in lightness or line style, so that a greyscale
# print still tells them apart.
INK = "black"
MUTED = "grey45"
OP_FILL = "grey92"
GLOBAL_GRAD_COLOR = "#1f4e9c"  # blue
LOCAL_GRAD_COLOR = "#c0001a"  # red


class GraphTooLargeError(ValueError):
    """A graph has more nodes than a readable figure can show."""


# ---------------------------------------------------------------------------
# Figure
# ---------------------------------------------------------------------------


class Figure:
    """A drawn graph: a :class:`~chainrule.figures.dot.Digraph` plus one sentence of alt text.

    ``fig.dot`` is the Digraph, ``fig.source`` its DOT text, ``fig.alt`` the alt text.
    ``fig.svg()`` is SVG markup ready to put inside a web page; ``fig.save(path)``
    writes a standalone ``.svg`` file.  In a notebook the figure shows as inline SVG.
    """

    def __init__(self, digraph, alt):
        self._dot = digraph
        self._alt = alt
        # graphviz prefixes the ids of SVG elements with the graph's id; a prefix made
        # from the DOT text keeps ids unique when a page shows several figures.
        digest = hashlib.sha1(digraph.source.encode("utf-8")).hexdigest()[:10]
        digraph.attr(id=f"fig{digest}")

    @property
    def dot(self):
        """The :class:`~chainrule.figures.dot.Digraph` (add attributes to restyle the figure)."""
        return self._dot

    @property
    def source(self):
        """The DOT text of the figure."""
        return self._dot.source

    @property
    def alt(self):
        """One sentence that describes the figure, for readers who cannot see it."""
        return self._alt

    def svg(self):
        """Return the figure as an ``<svg>`` element for a web page.

        There is no XML header or doctype.  The ``<svg>`` tag gets ``role="img"``, an
        ``aria-label`` and a first ``<title>`` child with the alt text, and a style that
        scales it down (never up) to the width of the page.
        """
        svg = self._dot.pipe()  # GraphvizMissingError when dot is not installed
        return accessible_svg(svg, self._alt)

    def _repr_html_(self):
        """Jupyter shows the figure as inline SVG (not as an ``<img>`` file), scrolling sideways if it must."""
        return scrolling_figure(self.svg())

    def save(self, path):
        """Write the figure to ``path`` as a standalone SVG file and return the path."""
        path = Path(path)
        if path.suffix.lower() != ".svg":
            raise ValueError(f"Figure.save: can only write .svg files, got {str(path)!r}")
        path.write_text(SVG_HEADER + self.svg() + "\n", encoding="utf-8")
        return path

    def __repr__(self):
        return f"<Figure: {self._alt}>"


# ---------------------------------------------------------------------------
# Small helpers shared by the three kinds of figure
# ---------------------------------------------------------------------------


def new_digraph(rankdir, title=None):
    """Return an empty Digraph with the house style (white background, sans-serif)."""
    if rankdir not in ("LR", "RL", "TB", "BT"):
        raise ValueError(f"rankdir must be one of 'LR', 'RL', 'TB', 'BT', got {rankdir!r}")
    dot = Digraph("chainrule")
    dot.attr(rankdir=rankdir, bgcolor="white", pad="0.15", nodesep="0.3", ranksep="0.35")
    dot.attr(fontname=FONT, fontsize="14")
    if title:
        dot.attr(label=f"<{_html(title)}>", labelloc="t")
    dot.attr("node", fontname=FONT, fontsize="12")
    dot.attr("edge", fontname=FONT, fontsize="11", arrowsize="0.7")
    return dot


def _check_size(function_name, node_count, max_nodes):
    """Raise :class:`GraphTooLargeError` when a graph has more than ``max_nodes`` nodes."""
    if node_count > max_nodes:
        raise GraphTooLargeError(
            f"{function_name}: the graph has {node_count} nodes, more than max_nodes={max_nodes}. "
            "A figure that large is unreadable: draw a smaller sub-expression (pass an "
            f"intermediate node as the root), or raise the limit with max_nodes={node_count}."
        )


def _node_ids(nodes):
    """Map each node to its DOT id: ``n0, n1, ...`` in the order given."""
    return {node: f"n{index}" for index, node in enumerate(nodes)}


def format_number(x):
    """Show a number with 4 significant digits (``-0.0`` shows as ``0``)."""
    x = float(x)
    return "0" if x == 0.0 else f"{x:.4g}"


def _array_shape(x):
    """The shape of ``x`` when it is an array with at least one axis, else None."""
    shape = getattr(x, "shape", None)
    return tuple(shape) if shape is not None and len(shape) > 0 else None


def _describe_data(data):
    """``"2.5"`` for a number, ``"shape (2, 3)"`` for an array."""
    shape = _array_shape(data)
    return f"shape {shape}" if shape is not None else format_number(data)


def _describe_grad(grad):
    """``"0.5"`` for a number, ``"norm 1.2"`` for an array, ``"none"`` when unset."""
    if grad is None:
        return "none"
    if _array_shape(grad) is not None:
        return "norm " + format_number(math.sqrt(float((grad * grad).sum())))
    return format_number(grad)


_OP_SYMBOLS = {"*": "\u00d7", "-": "\u2212"}  # a times sign and a minus sign read better than * and -


def op_symbol(op):
    """The symbol a figure shows for an operation (``*`` as a times sign, ``-`` as a minus)."""
    return _OP_SYMBOLS.get(op, op or "?")


def _html(text):
    """Escape text for a graphviz HTML-like label."""
    return html.escape(str(text), quote=True)


def _root_name(root):
    """How the alt text and legends call the root: its label, or "the output"."""
    label = getattr(root, "label", "")
    return label if label else "the output"


def _count(number, noun):
    """``"1 value"``, ``"3 values"``."""
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _value_box(node, rows, show_op=False):
    """An HTML-like label: a box with the node's label on top and one row per entry.

    ``rows`` holds HTML snippets (already escaped).  With ``show_op`` the top row also
    names the operation that produced the node, in grey.  The box looks like a graphviz
    record, but an HTML table can colour and embolden single rows.
    """
    header = []
    if node.label:
        header.append(f"<B>{_html(node.label)}</B>")
    if show_op and node.op:
        header.append(f'<FONT COLOR="{MUTED}">({_html(op_symbol(node.op))})</FONT>')
    header = [" ".join(header)] if header else []
    body = "".join(f'<TR><TD ALIGN="LEFT">{row}</TD></TR>' for row in header + rows)
    return (
        '<<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="3" ROWS="*" '
        f'BGCOLOR="white" COLOR="{INK}">{body}</TABLE>>'
    )


def _data_row(node):
    if node.data is None:  # a Tensor the user dropped: only its shape is known
        return f"data {_html(f'shape {node.shape}')}"
    return f"data {_html(_describe_data(node.data))}"


def _grad_row(node, emphasise=False):
    text = f"grad {_html(_describe_grad(node.grad))}"
    if emphasise:
        return f'<FONT COLOR="{GLOBAL_GRAD_COLOR}"><B>{text}</B></FONT>'
    return text


# ---------------------------------------------------------------------------
# draw_graph
# ---------------------------------------------------------------------------


def _drawable(root, **options):
    """A Tensor as the boxes of its graph (:func:`chainrule.drawable.drawable_graph`); a Value as it is.

    The import is here, not at the top: a Tensor exists, so numpy is loaded, while a
    Value graph is drawn without numpy.
    """
    if not hasattr(root, "grad_fn"):
        return root
    from ..drawable import drawable_graph

    return drawable_graph(root, **options)


def draw_graph(root, rankdir="LR", show_grad=True, max_nodes=150, title=None, compact=False):
    """Draw the computational graph that ``root`` depends on.

    Each value is a box with its label (if any), data and, when ``show_grad`` is true,
    grad.  Each operation is a small grey ellipse with its symbol, between the value it
    produced and that value's parents; there is one edge per parent, in parent order,
    so ``a * a`` draws two edges from ``a``.  ``rankdir`` is graphviz's direction
    ("LR": inputs on the left).  ``title`` goes above the graph.

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
    _check_size("draw_graph", len(order), max_nodes)
    ids = _node_ids(order)
    dot = new_digraph(rankdir, title)
    if compact:
        return _draw_compact(dot, root, order, ids)
    for node in order:
        rows = [_data_row(node)] + ([_grad_row(node)] if show_grad else [])
        dot.node(ids[node], _value_box(node, rows), shape="plain")
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
            _html(text),
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
        f"Compact computational graph of {_root_name(root)}: {_count(len(order), 'value')} "
        f"({leaves} {'is a leaf' if leaves == 1 else 'are leaves'}), each a small box with its "
        "label or the operation that made it, with an arrow from each input to the result."
    )
    return Figure(dot, alt)


def _add_operation(dot, node, ids):
    """Draw the operation that produced ``node``, with an edge from each parent."""
    op_id = ids[node] + "_op"
    dot.node(
        op_id,
        f"<{_html(op_symbol(node.op))}>",
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
        f"Computational graph of {_root_name(root)}: {_count(len(order), 'value')} "
        f"({leaves} {'is a leaf' if leaves == 1 else 'are leaves'}) joined by "
        f"{_count(operations, 'operation')}; "
        f"each box shows a value's {shown}."
    )


# ---------------------------------------------------------------------------
# draw_dfs_step
# ---------------------------------------------------------------------------

# How each state of a node looks.  Fill lightness (white / light / dark) and outline
# (thin / bold / dashed grey) both differ, so the states read in greyscale too.
_DFS_STATES = {
    "unvisited": dict(style="filled", fillcolor="white", color=INK, fontcolor=INK, penwidth="1"),
    "on_path": dict(style="filled", fillcolor="#f6b3a8", color="#9e1b12", fontcolor=INK, penwidth="2.2"),
    "finished": dict(style="filled", fillcolor="#2f5f98", color="#16324f", fontcolor="white", penwidth="1"),
    "not_reached": dict(style="dashed", fillcolor="white", color="grey55", fontcolor="grey45", penwidth="1"),
}
_CURRENT_COLOR = "#e08a00"  # orange, and a thick outline
_CURRENT_PENWIDTH = "4"

_DFS_LEGEND = [
    ("unvisited", "not visited yet"),
    ("on_path", "on the search path"),
    ("finished", "finished (in the order)"),
    ("current", "node of this step"),
    ("leaf", "leaf (no parents)"),
    ("not_reached", "not reached from the root"),
]


def draw_dfs_step(root, step, parents=None, rankdir="BT", max_nodes=150, *, caption=True, element_ids=False):
    """Draw the graph as the depth-first search leaves it after step number ``step``.

    ``step`` is a 0-based index into :func:`dfs_trace` ``(root, parents)``.  Nodes not
    yet visited are white; nodes on the search path (visited, not finished) are light
    red with a bold outline, and the edges of that path are bold; finished nodes are
    dark blue.  The node of this step has a thick orange outline, leaves a double
    outline.  Nodes of a ``parents`` dict that the root does not depend on are grey
    and dashed.  A caption under the graph gives the step, the topological order so far
    and a legend (``caption=False`` leaves it out).  With ``rankdir="BT"`` leaves are at
    the bottom, the root on top.

    ``element_ids=True`` gives every node and edge of the SVG the id of
    :func:`dfs_element_ids` and a class naming its state (``cr-unvisited``,
    ``cr-on-path``, ``cr-finished``, ``cr-not-reached``, plus ``cr-current`` for the
    node of this step and ``cr-path`` for an edge of the search path), so that a
    script can restyle the figure step by step (:mod:`chainrule.explore` does).
    """
    parents_of, reached, not_reached = _dfs_nodes(root, parents, max_nodes)
    nodes = reached + not_reached
    trace = dfs_trace(root, parents)
    _check_step(step, len(trace), root)
    names = trace_names(trace)
    for name in not_reached:
        names[name] = str(name)
    ids = _node_ids(nodes)
    current = trace[step]
    states = _dfs_states(current, reached, not_reached)
    path_edges = _search_path_edges(current)
    shape = "circle" if max(len(name) for name in names.values()) <= 3 else "ellipse"
    node_ids, edge_ids = _element_ids(nodes, names, parents_of) if element_ids else ({}, {})

    dot = new_digraph(rankdir)
    if caption:
        dot.attr(label=_dfs_caption(trace, step, names, bool(not_reached)), labelloc="b", labeljust="c")
    for node in nodes:
        attributes = dict(_DFS_STATES[states[node]], shape=shape)
        if not parents_of(node):
            attributes["peripheries"] = "2"
        is_current = ids[node] == ids[current.node]
        if is_current:
            attributes.update(color=_CURRENT_COLOR, penwidth=_CURRENT_PENWIDTH)
        if element_ids:
            state_class = "cr-" + states[node].replace("_", "-")
            attributes.update(id=node_ids[node], **{"class": state_class + (" cr-current" if is_current else "")})
        dot.node(ids[node], _dfs_node_label(node, names), **attributes)
    for node in nodes:
        _add_dfs_edges(dot, node, parents_of(node), ids, states, path_edges, edge_ids)
    return Figure(dot, _dfs_alt(trace, step, names, not_reached))


def dfs_element_ids(root, parents=None, max_nodes=150):
    """The SVG ids that :func:`draw_dfs_step` gives nodes and edges with ``element_ids=True``.

    Returns ``(node_ids, edge_ids)``: ``node_ids`` maps every node (the ones the root
    reaches in topological order, then those of a ``parents`` dict it does not reach) to
    ``"node-<name>"``; ``edge_ids`` maps each ``(parent, child)`` pair to a list of
    ``"edge-<parent>-<child>"`` ids, one per edge (``a * a`` has two: the second ends in
    ``-2``).  A name keeps its letters, digits and underscores, and any other character
    becomes ``_``; a name that two nodes share gets ``_2``, ``_3``, ... on the second
    and later ones, so every id is unique.
    """
    parents_of, reached, not_reached = _dfs_nodes(root, parents, max_nodes)
    nodes = reached + not_reached
    names = trace_names(dfs_trace(root, parents))
    for name in not_reached:
        names[name] = str(name)
    return _element_ids(nodes, names, parents_of)


def _element_ids(nodes, names, parents_of):
    """``(node_ids, edge_ids)`` of :func:`dfs_element_ids`, for nodes already named."""
    node_ids, slugs, edge_ids = {}, {}, {}
    for node in nodes:
        slug = re.sub(r"[^A-Za-z0-9_]", "_", names[node]) or "_"
        unique, count = slug, 1
        while unique in slugs.values():
            count += 1
            unique = f"{slug}_{count}"
        slugs[node] = unique
        node_ids[node] = f"node-{unique}"
    for node in nodes:
        for parent in parents_of(node):
            edges = edge_ids.setdefault((parent, node), [])
            suffix = f"-{len(edges) + 1}" if edges else ""
            edges.append(f"edge-{slugs[parent]}-{slugs[node]}{suffix}")
    return node_ids, edge_ids


def _dfs_nodes(root, parents, max_nodes):
    """Return ``parents_of``, the nodes the root reaches (in topological order) and the others.

    The size is checked before the search is traced, because a trace of a large graph
    takes memory quadratic in its size.  Only a ``parents`` dict can hold nodes the root
    does not reach; they are listed in the dict's order.
    """
    parents_of = parents_function("draw_dfs_step", root, parents)
    reached = topological_order(root, parents_of)
    reached_set = set(reached)
    not_reached = [name for name in parents or () if name not in reached_set]
    _check_size("draw_dfs_step", len(reached) + len(not_reached), max_nodes)
    return parents_of, reached, not_reached


def _check_step(step, step_count, root):
    if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step < step_count:
        raise IndexError(
            f"draw_dfs_step: step must be an int from 0 to {step_count - 1} (the search from "
            f"{root!r} has {step_count} steps), got {step!r}"
        )


def _dfs_states(current, reached, not_reached):
    """Map every node to "unvisited", "on_path", "finished" or "not_reached"."""
    states = {node: "unvisited" for node in reached}
    states.update((node, "on_path") for node in current.visited)
    states.update((node, "finished") for node in current.order)
    states.update((node, "not_reached") for node in not_reached)
    return states


def _search_path_edges(current):
    """The (parent, child) edges of the search path: the visited, unfinished nodes.

    Those nodes, in the order visited, are the search's stack, and each one was reached
    from the one before it.
    """
    finished = set(current.order)
    path = [node for node in current.visited if node not in finished]
    return {(parent, child) for child, parent in zip(path, path[1:])}


def _add_dfs_edges(dot, node, node_parents, ids, states, path_edges, edge_ids=None):
    """Draw an edge from each parent to ``node``; bold on the search path, grey if unreached.

    With ``edge_ids`` (from :func:`_element_ids`) each edge gets its id, and the class
    ``cr-path`` when it is on the search path.
    """
    seen = {}
    for parent in node_parents:
        attributes = {}
        on_path = False
        if states[node] == "not_reached":
            attributes = dict(color="grey55", style="dashed")
        elif (parent, node) in path_edges:
            attributes = dict(color=_DFS_STATES["on_path"]["color"], penwidth="2.5")
            path_edges = path_edges - {(parent, node)}  # a*a: only one of the two edges
            on_path = True
        if edge_ids:
            number = seen[parent] = seen.get(parent, -1) + 1
            attributes["id"] = edge_ids[(parent, node)][number]
            if on_path:
                attributes["class"] = "cr-path"
        dot.edge(ids[parent], ids[node], **attributes)


def _dfs_node_label(node, names):
    """The node's name; a Value's operation goes on a second, smaller line."""
    op = getattr(node, "op", "")
    if not op:
        return f"<{_html(names[node])}>"
    return f'<{_html(names[node])}<BR/><FONT POINT-SIZE="10">{_html(op_symbol(op))}</FONT>>'


def _dfs_caption(trace, step, names, has_unreached):
    """An HTML-like graph label: the step, the order so far and a legend."""
    current = trace[step]
    rows = [
        f'<TR><TD COLSPAN="4">Step {step} (of 0\u2013{len(trace) - 1}): '
        f"{current.event} {_html(names[current.node])}</TD></TR>",
        f'<TR><TD COLSPAN="4">topological order so far: {_html(name_list(current.order, names))}</TD></TR>',
    ]
    entries = [entry for entry in _DFS_LEGEND if has_unreached or entry[0] != "not_reached"]
    for first, second in zip(entries[0::2], entries[1::2] + [None]):
        cells = _legend_cells(*first) + (_legend_cells(*second) if second else "<TD></TD><TD></TD>")
        rows.append(f"<TR>{cells}</TR>")
    return '<<TABLE BORDER="0" CELLSPACING="3" CELLPADDING="1">' + "".join(rows) + "</TABLE>>"


def _legend_cells(kind, text):
    """Two table cells: a small swatch drawn like a node in that state, and its meaning."""
    swatch_size = 'WIDTH="18" HEIGHT="14" FIXEDSIZE="TRUE"'
    if kind == "current":
        swatch = f'<TD {swatch_size} BORDER="3" COLOR="{_CURRENT_COLOR}"></TD>'
    elif kind == "leaf":
        inner = (
            f'<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" COLOR="{INK}">'
            '<TR><TD WIDTH="10" HEIGHT="8" FIXEDSIZE="TRUE"></TD></TR></TABLE>'
        )
        swatch = f'<TD BORDER="1" CELLPADDING="1" COLOR="{INK}">{inner}</TD>'
    else:
        state = _DFS_STATES[kind]
        border = "2" if kind == "on_path" else "1"
        dashed = ' STYLE="dashed"' if kind == "not_reached" else ""
        swatch = (
            f'<TD {swatch_size} BORDER="{border}" COLOR="{state["color"]}" BGCOLOR="{state["fillcolor"]}"{dashed}></TD>'
        )
    return f'{swatch}<TD ALIGN="LEFT"><FONT POINT-SIZE="11">{_html(text)}</FONT></TD>'


def _dfs_alt(trace, step, names, not_reached):
    current = trace[step]
    finished = ", ".join(names[node] for node in current.order) or "none yet"
    sentence = (
        f"Depth-first search from {names[trace[0].node]}, step {step} of 0 to {len(trace) - 1}, "
        f"{current.event} {names[current.node]}: visited "
        f"{', '.join(names[node] for node in current.visited)}; finished {finished}"
    )
    if not_reached:
        sentence += f"; not reached: {', '.join(str(name) for name in not_reached)}"
    return sentence + "."


# ---------------------------------------------------------------------------
# draw_gradient_flow
# ---------------------------------------------------------------------------


def draw_gradient_flow(root, rankdir="LR", max_nodes=150, gradient=None):
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
    elif root.grad is None or (_array_shape(root.grad) is None and float(root.grad) == 0.0):
        raise ValueError(
            f"draw_gradient_flow: {_root_name(root)} has grad {root.grad!r}, so no gradient "
            "has flowed yet; call backward() on it before drawing"
        )
    order = topological_order(root)
    _check_size("draw_gradient_flow", len(order), max_nodes)
    ids = _node_ids(order)
    dot = new_digraph(rankdir)
    dot.attr(label=_gradient_legend(root.label or "root", is_tensor), labelloc="b", labeljust="c")
    for node in order:
        rows = [_data_row(node), _grad_row(node, emphasise=True)]
        dot.node(ids[node], _value_box(node, rows, show_op=True), shape="plain")
        for parent, carried in zip(node.parents, node.sent if is_tensor else node.local_grads):
            style = dict(color=LOCAL_GRAD_COLOR, style="dashed", fontcolor=LOCAL_GRAD_COLOR)
            if is_tensor and carried is None:
                style = dict(color=MUTED, style="solid", fontcolor=MUTED)
            text = _describe_grad(carried) if is_tensor else _describe_data(carried)
            dot.edge(ids[parent], ids[node], dir="back", label=f"<{_html(text)}>", **style)
    carried = "the gradient sent back along it" if is_tensor else "its local gradient"
    alt = (
        f"Gradient flow into {_root_name(root)} over {_count(len(order), 'value')} and "
        f"{_count(sum(len(node.parents) for node in order), 'edge')}: each value shows its global "
        f"gradient and each edge is labelled with {carried}."
    )
    return Figure(dot, alt)


def _gradient_legend(root_name, is_tensor=False):
    """An HTML-like graph label explaining the two styles of gradient."""
    output = _html(root_name)
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
        for sample, text in zip(samples, texts)
    )
    return f'<<TABLE BORDER="0" CELLSPACING="2" CELLPADDING="1">{rows}</TABLE>>'
