"""Explorables: a recorded run of the engine that the reader steps through in the page.

An explorable is a view of what the engine really did, not a second engine written in
JavaScript. Python records the run; the page only shows the recorded steps one at a
time. Three kinds record the three processes of the scalar engine:

* :func:`toposort`: the depth-first search that puts a graph in topological order, the
  events of :func:`chainrule.graph.depth_first_events` through
  :func:`chainrule.graph.dfs_trace`;
* :func:`forward`: the values of a graph, node by node in that order, each with the
  operation and the inputs that gave it;
* :func:`backward`: the backward pass of :meth:`chainrule.Value.backward`, one edge per
  step, with the local gradient, the product and the parent's running sum; it runs
  ``backward()`` itself and checks that the sums it recorded are the ``.grad`` values
  the engine stored.

The result is an :class:`Explorable`. In a notebook (and in the book) it shows itself as
one self-contained piece of HTML:

* one SVG of the graph, drawn by :mod:`chainrule.draw` (DOT through Graphviz's ``dot``),
  whose nodes, edges and changing texts carry stable ids (``node-x``, ``edge-c-d``,
  ``text-grad-c``), prefixed per widget so that two widgets on a page never share one;
* the recorded steps as JSON, in a ``<script type="application/json">``;
* the script ``explorable.js`` and the styles ``explorable.css``, which ship in this
  package and are inlined, so that the widget needs no server and no network (the built
  site, JupyterLab, Colab's output frame). The script defines itself once per page, however
  many widgets the page holds.

Without JavaScript (or where scripts are stripped, as in GitHub's notebook viewer) the
widget is a still figure of the final state, with alt text; the script resets it to the
first step and shows the controls.

This module imports nothing but the standard library and chainrule's graph and drawing
modules, so that ``from chainrule import Value`` stays light.
"""

import hashlib
import html
import json
import math
import re
from pathlib import Path

from .draw import (
    GLOBAL_GRAD_COLOR,
    INK,
    LOCAL_GRAD_COLOR,
    MUTED,
    Figure,
    GraphTooLargeError,
    dfs_element_ids,
    draw_dfs_step,
    format_number,
    new_digraph,
    op_symbol,
)
from .graph import VISIT, dfs_trace, parents_function, topological_order, trace_names
from .svg import accessible_svg

__all__ = ["Explorable", "backward", "forward", "toposort"]

_ASSETS = Path(__file__).resolve().parent
SCRIPT_FILE = "explorable.js"  #: the widget's script, shipped in the package
STYLE_FILE = "explorable.css"  #: the widget's styles, shipped in the package

#: The legend of the toposort explorable: a CSS class of a node, and its meaning.
TOPOSORT_LEGEND = [
    ("cr-unvisited", "not visited yet"),
    ("cr-on-path", "on the search path"),
    ("cr-finished", "finished (in the order)"),
    ("cr-current", "node of this step"),
    ("cr-leaf", "leaf (no parents)"),
    ("cr-not-reached", "not reached from the root"),
]
FORWARD_LEGEND = [
    ("cr-pending", "not computed yet"),
    ("cr-computed", "computed"),
    ("cr-current", "computed in this step"),
]
BACKWARD_LEGEND = [
    ("cr-waiting", "no gradient yet"),
    ("cr-partial", "gradient still growing"),
    ("cr-complete", "gradient complete"),
    ("cr-current", "sends its gradient back"),
    ("cr-target", "receives it"),
]

_ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"]
# The ids of the elements a script changes: the graph's nodes and edges, and the texts in them.
_ELEMENT_ID = re.compile(r'id="((?:node|edge|text|part)(?:&#45;|-)[^"]*)"')


def asset(name):
    """The text of one of the widget's files shipped in the package (``explorable.js`` or ``.css``)."""
    return (_ASSETS / name).read_text(encoding="utf-8")


class Explorable:
    """A recorded run of the engine that a page shows as a widget to step through.

    ``kind`` names what was recorded (``"toposort"``, ``"forward"``, ``"backward"``);
    ``steps`` is a list of dicts, one per step, each with a ``"sentence"`` that says in
    words what the step does; ``figure`` is the :class:`~chainrule.draw.Figure` drawn in
    the final state. ``html()`` (or the notebook's display, ``_repr_html_``) gives the
    widget.

    ``frames`` (one per step) say what the picture shows: each node's CSS class, the
    highlighted edges, the texts to write into the SVG, the alt text. ``text_roles``
    names the texts of each node and edge group the script rewrites (see
    :func:`_tag_texts`). ``quiz=True`` adds the "Predict, then reveal" mode: steps with a
    ``"quiz"`` ask for a number before they show it.
    """

    def __init__(
        self,
        kind,
        title,
        figure,
        steps,
        frames,
        *,
        lists=(),
        legend=(),
        text_roles=None,
        quiz=False,
        note="",
        examples=None,
        rings=None,
        palette=None,
    ):
        self.kind = kind
        self.title = title
        self.figure = figure
        self.steps = steps
        self._frames = frames
        self._lists = list(lists)
        self._legend = list(legend)
        self._text_roles = text_roles or {}
        self._quiz = quiz
        self._examples, self._rings, self._palette = examples, rings, palette
        self._note = note or "The final state. With JavaScript on, the buttons step through it."
        digest = hashlib.sha1((kind + figure.source).encode("utf-8")).hexdigest()[:8]
        self.prefix = f"x{digest}_"  #: what the SVG's element ids start with, unique per widget

    def __len__(self):
        return len(self.steps)

    def __repr__(self):
        return f"<Explorable {self.kind}: {self.title}, {len(self.steps)} steps>"

    def data(self):
        """What the page's script reads: the kind and every step with its view of the picture."""
        steps = [dict(step, **frame) for step, frame in zip(self.steps, self._frames)]
        data = {"kind": self.kind, "prefix": self.prefix, "lists": [key for key, _ in self._lists], "steps": steps}
        if self._examples:
            data.update(examples=self._examples, rings=self._rings, palette=self._palette)
        return data

    def html(self):
        """The widget: figure, lists, status and controls, the steps as JSON, script and styles inline."""
        last = len(self.steps) - 1
        final = dict(self.steps[last], **self._frames[last])
        counter = _counter(last, len(self.steps))
        lists = "".join(
            f'<p class="cr-x-list"><span class="cr-x-list-name">{html.escape(label)}</span> '
            f'<span data-list="{key}">{html.escape(_joined(final[key]))}</span></p>'
            for key, label in self._lists
        )
        legend = "".join(
            f'<li><span class="cr-x-swatch {css_class}" aria-hidden="true"></span>{html.escape(text)}</li>'
            for css_class, text in self._legend
        )
        data = json.dumps(self.data(), ensure_ascii=False, separators=(",", ":"))
        data = data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        label = html.escape(f"{self.title}. Step through it with the arrow keys or the buttons.")
        formula = ""
        if "formula" in final:
            formula = f'<p class="cr-x-formula" data-role="formula">{html.escape(final["formula"])}</p>\n'
        quiz = ""
        if self._quiz:
            quiz = (
                '<div class="cr-x-quiz" data-role="quiz-controls" hidden>'
                '<label class="cr-x-predict"><input type="checkbox" data-role="predict"> '
                "Predict, then reveal</label>"
                '<form class="cr-x-guess" data-role="guess-form" hidden>'
                '<label>Your guess <input type="text" inputmode="decimal" autocomplete="off" '
                'size="8" data-role="guess"></label> '
                '<button type="submit" data-action="check">Check</button>'
                "</form></div>"
            )
        example = ""
        if self._examples:
            options = "".join(
                f'<option value="{i}">{html.escape(text)}</option>' for i, text in enumerate(self._examples)
            )
            example = f'<label class="cr-x-example">Example <select data-role="example">{options}</select></label>'
        controls = (
            '<div class="cr-x-controls" data-role="controls" hidden>'
            '<button type="button" data-action="reset">Reset</button>'
            '<button type="button" data-action="previous">Previous step</button>'
            '<button type="button" data-action="play">Play</button>'
            '<button type="button" data-action="next">Next step</button>' + example + '<label class="cr-x-slider">Step '
            f'<input type="range" min="0" max="{last}" step="1" value="{last}" '
            f'aria-valuetext="{html.escape(counter)}" data-role="slider"></label>'
            "</div>"
        )
        return (
            f'<div class="cr-explorable-output">\n<style>{asset(STYLE_FILE)}</style>\n'
            f'<div class="cr-explorable" data-explorable="{self.kind}" tabindex="0" role="group" '
            f'aria-label="{label}">\n'
            f'<div class="chainrule-figure cr-x-figure" style="overflow-x:auto">{self.svg()}</div>\n'
            '<p class="cr-x-note" data-role="scroll-hint" hidden>\u2194 Scroll the picture '
            "sideways to see all of it.</p>\n"
            f'<ul class="cr-x-legend">{legend}</ul>\n'
            + (f'<div class="cr-x-lists">{lists}</div>\n' if lists else "")
            + f"{controls}\n{quiz}"
            + formula
            + f'<p class="cr-x-status" aria-live="polite" data-role="status">'
            f"{html.escape(counter + '. ' + final['sentence'])}</p>\n"
            f'<noscript><p class="cr-x-note">{html.escape(self._note)}</p></noscript>\n'
            f'<script type="application/json" data-role="steps">{data}</script>\n'
            f"</div>\n<script>{asset(SCRIPT_FILE)}</script>\n</div>"
        )

    def svg(self):
        """The figure in its final state as an ``<svg>`` element, described by the final step's alt text.

        The texts named by ``text_roles`` get their ids, and every id a script uses gets
        this widget's :attr:`prefix`.
        """
        if isinstance(self.figure, _TextFigure):  # panels already drawn, texts tagged
            svg = self.figure.markup
        else:
            svg = _tag_texts(self.figure.dot.pipe(), self._text_roles)
            svg = accessible_svg(svg, self._frames[-1]["alt"])
        return _ELEMENT_ID.sub(lambda match: f'id="{self.prefix}{match.group(1)}"', svg)

    def _repr_html_(self):
        return self.html()

    def save(self, path):
        """Write the widget as a standalone HTML page (for a browser, without a notebook)."""
        path = Path(path)
        page = (
            '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(self.title)}</title></head>\n"
            f'<body style="font-family:sans-serif;max-width:48rem;margin:1rem auto;padding:0 1rem">\n'
            f"{self.html()}\n</body></html>\n"
        )
        path.write_text(page, encoding="utf-8")
        return path


_GROUP = re.compile(r'<g id="(node|edge)(?:&#45;|-)([^"]*)" class="[^"]*">(.*?)</g>', re.DOTALL)


def _tag_texts(svg, roles):
    """Give the last texts of each node and edge group of ``svg`` the ids a script writes to.

    ``roles`` maps ``"node"`` or ``"edge"`` to the names of the group's last texts, in
    order: ``{"node": ["value", "grad"]}`` gives the last two texts of the group
    ``node-p`` the ids ``text-value-p`` and ``text-grad-p``. Graphviz writes one
    ``<text>`` per row of a table label, in order, and an edge's label as its last text.
    """
    if not roles:
        return svg

    def tag(match):
        kind, name, body = match.groups()
        fields = roles.get(kind, [])
        starts = [found.start() for found in re.finditer(r"<text ", body)]
        if len(starts) < len(fields):
            return match.group(0)
        for field, start in reversed(list(zip(fields, starts[len(starts) - len(fields) :]))):
            body = f'{body[:start]}<text id="text-{field}-{name}" {body[start + 6 :]}'
        return match.group(0)[: match.start(3) - match.start(0)] + body + "</g>"

    return _GROUP.sub(tag, svg)


def toposort(root, parents=None, *, rankdir="BT", max_nodes=50):
    """Record the depth-first search from ``root`` that finds its topological order.

    ``root`` is a node with ``.parents`` (a :class:`~chainrule.value.Value`), or, when
    ``parents`` is a dict ``{name: [parent names]}``, a name in that dict. The steps are
    the events of :func:`chainrule.graph.depth_first_events`, the search
    :func:`chainrule.graph.topological_order` does, recorded by
    :func:`chainrule.graph.dfs_trace`. Each step is a dict::

        {"event": "visit", "node": "x", "visited": ["f", "d", "x"], "order": [],
         "sentence": "Visit x: d's first parent. Visited: f, d, x."}

    ``visited`` and ``order`` are the two lists after the step: every node reached so
    far, and the finished nodes (the topological order so far). The last step's
    ``order`` is the topological order.

    Returns an :class:`Explorable`; a notebook shows it as a widget to step through.
    Raises :class:`~chainrule.draw.GraphTooLargeError` when the graph has more than
    ``max_nodes`` nodes (the recorded lists grow with the square of the size).
    """
    parents_of = parents_function("explore.toposort", root, parents)
    order = topological_order(root, parents_of)
    reached = set(order)
    not_reached = [name for name in parents or () if name not in reached]
    if len(order) + len(not_reached) > max_nodes:
        raise GraphTooLargeError(
            f"explore.toposort: the graph has {len(order) + len(not_reached)} nodes, more than "
            f"max_nodes={max_nodes}; step through a smaller graph (a sub-expression), or raise "
            f"the limit with max_nodes={len(order) + len(not_reached)}."
        )
    trace = dfs_trace(root, parents)
    names = _unique_names(trace_names(trace))
    for name in not_reached:
        names[name] = str(name)
    node_ids, edge_ids = dfs_element_ids(root, parents, max_nodes=max_nodes)

    steps, frames = [], []
    path, reached_from = [], {}  # the search's stack; the child each node was reached from
    for number, step in enumerate(trace):
        if step.event == VISIT:
            child = path[-1] if path else None
            reached_from[step.node] = child
            sentence = _visit_sentence(step, child, parents_of, names, reached_from)
            path.append(step.node)
        else:
            path.pop()
            sentence = _finish_sentence(step, path, parents_of, names, not_reached, root)
        steps.append(
            {
                "event": step.event,
                "node": names[step.node],
                "visited": [names[node] for node in step.visited],
                "order": [names[node] for node in step.order],
                "sentence": sentence,
            }
        )
        frames.append(_frame(step, number, len(trace), path, names, node_ids, edge_ids, order, not_reached, root))

    figure = draw_dfs_step(root, len(trace) - 1, parents, rankdir, max_nodes, caption=False, element_ids=True)
    title = f"Depth-first search from {names[root]}, step by step"
    legend = [entry for entry in TOPOSORT_LEGEND if not_reached or entry[0] != "cr-not-reached"]
    lists = [("visited", "Visited"), ("order", "Order")]
    return Explorable(
        "toposort",
        title,
        figure,
        steps,
        frames,
        lists=lists,
        legend=legend,
        note="The final state of the search. With JavaScript on, the buttons step through it.",
    )


def _unique_names(names):
    """``names`` with a name that two nodes share made unique (``a``, ``a_2``), so the steps can be read back."""
    unique, used = {}, set()
    for node in names:
        name, count = names[node], 1
        while name in used:
            count += 1
            name = f"{names[node]}_{count}"
        used.add(name)
        unique[node] = name
    return unique


def _frame(step, number, count, path, names, node_ids, edge_ids, order, not_reached, root):
    """What the picture shows after a step: each node's class, the edges of the search path, the alt text."""
    visited, finished = set(step.visited), set(step.order)
    nodes = {}
    for node in order:
        nodes[node_ids[node]] = (
            "cr-finished" if node in finished else "cr-on-path" if node in visited else "cr-unvisited"
        )
    for node in not_reached:
        nodes[node_ids[node]] = "cr-not-reached"
    path_edges = [edge_ids[(parent, child)][0] for child, parent in zip(path, path[1:])]
    unvisited = [node for node in order if node not in visited]
    on_path = [node for node in step.visited if node not in finished]
    parts = [
        f"Depth-first search from {names[root]}, step {number + 1} of {count} ({step.event} {names[step.node]})",
        f"on the search path: {_joined(names[n] for n in on_path) or 'none'}",
        f"finished: {_joined(names[n] for n in step.order) or 'none yet'}",
        f"not visited yet: {_joined(names[n] for n in unvisited) or 'none'}",
    ]
    if not_reached:
        parts.append(f"not reached from {names[root]}: {_joined(names[n] for n in not_reached)}")
    return {"nodes": nodes, "current": node_ids[step.node], "edges": path_edges, "alt": "; ".join(parts) + "."}


def _visit_sentence(step, child, parents_of, names, reached_from):
    """``Visit x: d's first parent. Visited: f, d, x.``"""
    node = step.node
    visited = _joined(names[n] for n in step.visited)
    if child is None:
        return f"Visit {names[node]}: the root, where the search starts. Visited: {visited}."
    child_parents = list(parents_of(child))
    index = child_parents.index(node)
    if len(child_parents) == 1:
        which = f"{names[child]}'s only parent"
    elif index < len(_ORDINALS):
        which = f"{names[child]}'s {_ORDINALS[index]} parent"
    else:
        which = f"{names[child]}'s parent number {index + 1}"
    skipped = list(dict.fromkeys(parent for parent in child_parents[:index] if reached_from.get(parent) is not child))
    if skipped:
        verb = "was" if len(skipped) == 1 else "were"
        which += f" ({_and(names[n] for n in skipped)} {verb} visited already)"
    return f"Visit {names[node]}: {which}. Visited: {visited}."


def _finish_sentence(step, path, parents_of, names, not_reached, root):
    """``Finish x: it has no parents, so it joins the order: x.`` and where the search goes next."""
    node = step.node
    order = _joined(names[n] for n in step.order)
    node_parents = list(dict.fromkeys(parents_of(node)))
    if not node_parents:
        reason = "it has no parents"
    elif len(node_parents) == 1:
        reason = f"its parent {names[node_parents[0]]} is finished"
    else:
        reason = f"its parents {_and(names[n] for n in node_parents)} are finished"
    sentence = f"Finish {names[node]}: {reason}, so it joins the order: {order}."
    if path:
        return sentence + f" The search backs up to {names[path[-1]]}."
    if not_reached:
        verb = "is" if len(not_reached) == 1 else "are"
        return sentence + (
            f" The search is complete; {_and(names[n] for n in not_reached)} {verb} not reached from {names[root]}."
        )
    return sentence + " The search is complete."


def _joined(names):
    return ", ".join(names)


def _and(names):
    """``a``, ``a and b``, ``a, b and c``."""
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _counter(index, count):
    return f"Step {index + 1} of {count}"


# ---------------------------------------------------------------------------
# forward and backward: the values and the gradients of a Value graph
# ---------------------------------------------------------------------------

_OP_WORDS = {
    "+": "an addition",
    "-": "a subtraction",
    "*": "a multiplication",
    "/": "a division",
    "neg": "a negation",
    "tanh": "tanh",
    "sigmoid": "the sigmoid",
    "exp": "exp",
    "log": "log",
    "relu": "ReLU",
}
_BINARY = {"+": "+", "-": "\u2212", "*": "\u00d7", "/": "/"}


def forward(root, *, rankdir="BT", max_nodes=30):
    """Record the forward pass that computed ``root``: one node per step, in topological order.

    ``root`` is a :class:`~chainrule.value.Value`. The graph is walked in the order of
    :func:`chainrule.graph.topological_order`, the order in which the engine can compute
    it: every node comes after its inputs. Each step is a dict::

        {"node": "p", "op": "*", "inputs": ["a", "b"], "value": -1.0,
         "formula": "p = a × b = 2 × (−0.5) = −1", "sentence": "..."}

    where ``value`` is the number the engine computed (``node.data``); a leaf has
    ``op`` ``""`` and no inputs. Returns an :class:`Explorable`. Raises TypeError for
    anything but a Value, and :class:`~chainrule.draw.GraphTooLargeError` for a graph of
    more than ``max_nodes`` values.
    """
    order, names, node_ids, edge_ids = _value_graph("explore.forward", root, max_nodes)
    steps, frames, known = [], [], set()
    for number, node in enumerate(order):
        known.add(node)
        inputs = [names[parent] for parent in node.parents]
        formula = _forward_formula(node, names)
        if node.parents:
            which = _and(dict.fromkeys(inputs))
            both = "both known by now" if len(set(inputs)) == 2 else "known by now"
            sentence = f"{names[node]} is {_OP_WORDS.get(node.op, node.op)} of {which}, {both}: {formula}."
        else:
            kind = "a leaf: an input" if node.label else "a leaf: a constant"
            sentence = f"{names[node]} is {kind}, with the value {_number(node.data)}."
        if number == len(order) - 1:
            sentence += " The forward pass is complete."
        steps.append(
            {
                "node": names[node],
                "op": node.op,
                "inputs": inputs,
                "value": node.data,
                "formula": formula,
                "sentence": sentence,
            }
        )
        frames.append(_forward_frame(order, node, known, names, node_ids, edge_ids, root, number))
    texts = {node: [_value_text(node.data), "data ?"] for node in order}
    final_classes = frames[-1]["nodes"]
    figure = _value_figure(order, names, node_ids, edge_ids, texts, final_classes, rankdir, with_grad=False)
    title = f"The forward pass of {names[root]}, step by step"
    return Explorable(
        "forward",
        title,
        figure,
        steps,
        frames,
        legend=FORWARD_LEGEND,
        text_roles={"node": ["value"]},
        note="The final state of the forward pass. With JavaScript on, the buttons step through it.",
    )


def backward(root, *, rankdir="BT", max_nodes=30):
    """Run ``root.backward()`` and record it: one edge of the graph per step.

    ``root`` is a :class:`~chainrule.value.Value`. Its graph's gradients are set to zero
    (:meth:`~chainrule.value.Value.zero_grad`), then ``root.backward()`` runs, and the
    pass is recorded as :meth:`~chainrule.value.Value.backward` makes it: the nodes in
    reverse topological order, and for each node every edge to a parent, where the
    parent's running sum grows by ``child gradient × local gradient``. The first step
    seeds the root's gradient with 1. Each later step is a dict::

        {"child": "n", "parent": "p", "local": 1.0, "child_grad": 0.786, "product": 0.786,
         "before": 0.0, "after": 0.786, "gradients": {"L": 1.0, "n": 0.786, ...},
         "formula": "∂L/∂p += ∂L/∂n · ∂n/∂p = 0.7864 × 1 = 0.7864", "sentence": "..."}

    ``gradients`` holds every node's running sum after the step, so the last step's are
    the gradients; they are checked against the ``.grad`` that ``backward()`` stored, and
    a difference raises AssertionError. A step with a ``"quiz"`` can be guessed before it
    is shown, in the widget's "Predict, then reveal" mode.

    Returns an :class:`Explorable`. Raises TypeError for anything but a Value, and
    :class:`~chainrule.draw.GraphTooLargeError` for more than ``max_nodes`` values.
    """
    order, names, node_ids, edge_ids = _value_graph("explore.backward", root, max_nodes)
    root.zero_grad()
    root.backward()
    top = names[root]
    children = {node: 0 for node in order}  # how many edges leave each node towards a child
    for node in order:
        for parent in node.parents:
            children[parent] += 1
    running = {node: 0.0 for node in order}
    running[root] += 1.0  # as backward() seeds it
    heard = {node: 0 for node in order}
    edge_order = []  # (child, index of the parent) in the order backward() uses the edges
    for node in reversed(order):
        edge_order += [(node, index) for index in range(len(node.parents))]
    edge_text = {}  # (child, index) -> the id of the text on that edge
    for node in order:
        seen = {}
        for index, parent in enumerate(node.parents):
            number = seen[parent] = seen.get(parent, -1) + 1
            edge_text[(node, index)] = edge_ids[(parent, node)][number]

    steps = [
        {
            "event": "seed",
            "node": top,
            "gradients": _gradients(running, names),
            "formula": f"\u2202{top}/\u2202{top} = 1",
            "sentence": f"Start at the root: \u2202{top}/\u2202{top} = 1. Every other gradient starts at 0.",
        }
    ]
    frames = [_backward_frame(order, running, heard, children, names, node_ids, root, None, edge_text, edge_order, 0)]
    for number, (node, index) in enumerate(edge_order, start=1):
        parent, local = node.parents[index], node.local_grads[index]
        before, grad = running[parent], running[node]
        product = grad * local
        running[parent] = before + product  # parent.grad += grad * local, as backward() does
        heard[parent] += 1
        step = _edge_step(
            node, index, names, top, local, grad, product, before, running[parent], heard[parent] == children[parent]
        )
        step["gradients"] = _gradients(running, names)
        if number == len(edge_order):
            step["sentence"] += " The backward pass is complete: every gradient is final."
        steps.append(step)
        frames.append(
            _backward_frame(
                order, running, heard, children, names, node_ids, root, (node, index), edge_text, edge_order, number
            )
        )
    for node in order:
        if running[node] != node.grad:
            raise AssertionError(
                f"explore.backward: the recorded gradient of {names[node]} is {running[node]!r}, "
                f"but backward() stored {node.grad!r}; the recording no longer follows "
                "Value.backward"
            )
    texts = {node: [_value_text(node.data), _grad_text(node.grad)] for node in order}
    for frame in frames:  # the widest text of a box's gradient row, over all the steps
        for node in order:
            texts[node].append(frame["texts"][f"text-grad-{node_ids[node][5:]}"])
    figure = _value_figure(order, names, node_ids, edge_ids, texts, frames[-1]["nodes"], rankdir, with_grad=True)
    title = f"The backward pass of {top}, one edge at a time"
    shown = {state for frame in frames for state in frame["nodes"].values()} | {"cr-current", "cr-target"}
    legend = [entry for entry in BACKWARD_LEGEND if entry[0] in shown]
    legend.append(("cr-local", "local gradient \u2202child/\u2202parent, on the edge"))
    return Explorable(
        "backward",
        title,
        figure,
        steps,
        frames,
        legend=legend,
        text_roles={"node": ["value", "grad"], "edge": ["local"]},
        quiz=True,
        note="The final state of the backward pass: every box shows its "
        "gradient. With JavaScript on, the buttons step through it.",
    )


def _value_graph(where, root, max_nodes):
    """The graph of a Value ``root``: order, names and the SVG ids of nodes and edges."""
    if not (hasattr(root, "local_grads") and hasattr(root, "data")) or hasattr(root, "grad_fn"):
        raise TypeError(
            f"{where}: expected a chainrule Value (a scalar graph), got {type(root).__name__}; "
            "the explorables step through scalar graphs only"
        )
    order = topological_order(root)
    if len(order) > max_nodes:
        raise GraphTooLargeError(
            f"{where}: the graph has {len(order)} values, more than max_nodes={max_nodes}; "
            f"step through a smaller graph (a sub-expression), or raise the limit with "
            f"max_nodes={len(order)}."
        )
    names = _unique_names(trace_names(dfs_trace(root)))
    node_ids, edge_ids = dfs_element_ids(root, max_nodes=max_nodes)
    return order, names, node_ids, edge_ids


def _number(x):
    """A number as the figures show it (4 significant digits), with a true minus sign."""
    return format_number(x).replace("-", "\u2212")


def _operand(x):
    """A number inside a formula: a negative one in parentheses."""
    return f"({_number(x)})" if x < 0 else _number(x)


def _value_text(x):
    return f"data {_number(x)}"


def _grad_text(x):
    return f"grad {_number(x)}"


def _gradients(running, names):
    return {names[node]: grad for node, grad in running.items()}


def _forward_formula(node, names):
    """``p = a × b = 2 × (−0.5) = −1``, or ``a = 2`` for a leaf."""
    name, value = names[node], _number(node.data)
    if not node.parents:
        return f"{name} = {value}"
    inputs = [names[parent] for parent in node.parents]
    numbers = [_operand(parent.data) for parent in node.parents]
    if node.op in _BINARY and len(inputs) == 2:
        symbol = _BINARY[node.op]
        return f"{name} = {inputs[0]} {symbol} {inputs[1]} = {numbers[0]} {symbol} {numbers[1]} = {value}"
    if node.op.startswith("**"):
        power = node.op[2:]
        return f"{name} = {inputs[0]}^{power} = {numbers[0]}^{power} = {value}"
    if node.op == "neg":
        return f"{name} = \u2212{inputs[0]} = \u2212{numbers[0]} = {value}"
    return f"{name} = {node.op}({inputs[0]}) = {node.op}({_number(node.parents[0].data)}) = {value}"


def _local_rule(node, index, names):
    """The local gradient of an edge as a rule: ``∂p/∂a = b``; None when it is just a number."""
    child, parent = names[node], names[node.parents[index]]
    other = names[node.parents[1 - index]] if len(node.parents) == 2 else ""
    op = node.op
    if op == "*":
        return other
    if op == "/":
        return f"1/{other}" if index == 0 else f"\u2212{child}/{other}"
    if op == "tanh":
        return f"1 \u2212 {child}\u00b2"
    if op == "sigmoid":
        return f"{child}(1 \u2212 {child})"
    if op == "exp":
        return child
    if op == "log":
        return f"1/{parent}"
    if op == "relu":
        return f"1 if {parent} > 0, else 0"
    if op.startswith("**"):
        power = float(op[2:])
        return f"{op[2:]}\u00b7{parent}^{format_number(power - 1)}"
    return None


def _edge_step(node, index, names, top, local, grad, product, before, after, complete):
    """One step of the backward pass: ``node`` sends its gradient to its parent number ``index``."""
    child, parent = names[node], names[node.parents[index]]
    d_child, d_parent = f"\u2202{top}/\u2202{child}", f"\u2202{top}/\u2202{parent}"
    d_local = f"\u2202{child}/\u2202{parent}"
    rule = _local_rule(node, index, names)
    local_text = f"{d_local} = {rule} = {_number(local)}" if rule else f"{d_local} = {_number(local)}"
    formula = (
        f"{d_parent} += {d_child} \u00b7 {d_local} = {_operand(grad)} \u00d7 {_operand(local)} = {_number(product)}"
    )
    masked = f"{d_parent} += {d_child} \u00b7 {d_local} = {_operand(grad)} \u00d7 ? = ?"
    op_words = _OP_WORDS.get(node.op, node.op)
    total = (
        f"{d_parent} = {_number(product)}"
        if before == 0.0
        else f"{d_parent} = {_number(before)} + {_operand(product)} = {_number(after)}"
    )
    status = (
        f"{parent} has heard from every child: its gradient is complete."
        if complete
        else f"{parent} waits for its other children."
    )
    sentence = (
        f"{child} sends its gradient back to {parent} through {op_words}, whose local "
        f"gradient is {local_text}. {total}. {status}"
    )
    hidden = (
        f"{child} sends its gradient back to {parent} through {op_words}. Work out the "
        f"local gradient {d_local}, then guess the product {d_child} · {d_local}: "
        f"what {d_parent} gains."
    )
    return {
        "event": "edge",
        "child": child,
        "parent": parent,
        "local": local,
        "child_grad": grad,
        "product": product,
        "before": before,
        "after": after,
        "formula": formula,
        "sentence": sentence,
        "quiz": {"answer": product, "formula": masked, "sentence": hidden, "label": f"{d_child} \u00b7 {d_local}"},
    }


def _forward_frame(order, node, known, names, node_ids, edge_ids, root, number):
    """The picture after computing ``node``: computed and pending nodes, the edges into it."""
    classes, texts = {}, {}
    for other in order:
        key = node_ids[other]
        classes[key] = "cr-computed" if other in known else "cr-pending"
        texts[f"text-value-{key[5:]}"] = _value_text(other.data) if other in known else "data ?"
    edges = [edge for parent in dict.fromkeys(node.parents) for edge in edge_ids[(parent, node)]]
    pending = [names[other] for other in order if other not in known]
    alt = (
        f"The forward pass of {names[root]}, step {number + 1} of {len(order)}: "
        f"{_forward_formula(node, names)}; not computed yet: {_joined(pending) or 'none'}."
    )
    return {"nodes": classes, "current": node_ids[node], "edges": edges, "texts": texts, "alt": alt}


def _backward_frame(order, running, heard, children, names, node_ids, root, edge, edge_text, edge_order, number):
    """The picture after a step of the backward pass (``edge`` is (child, index), None at the start)."""
    classes, texts = {}, {}
    for node in order:
        key = node_ids[node]
        if node is root or (children[node] and heard[node] == children[node]):
            classes[key] = "cr-complete"
        elif heard[node]:
            classes[key] = "cr-partial"
        else:
            classes[key] = "cr-waiting"
        texts[f"text-grad-{key[5:]}"] = _grad_text(running[node]) if node is root or heard[node] else "grad 0"
    frame = {"nodes": classes, "texts": texts, "edges": []}
    later = [edge_text[pair] for pair in edge_order[number:]]
    frame["later"] = [f"text-local-{edge_id[5:]}" for edge_id in later]
    if edge is None:
        frame["current"] = node_ids[root]
        frame["alt"] = (
            f"The backward pass of {names[root]} at its start: the root's gradient is 1, every other gradient 0."
        )
        return frame
    node, index = edge
    parent = node.parents[index]
    frame.update(current=node_ids[node], target=node_ids[parent], edges=[edge_text[edge]])
    frame["alt"] = (
        f"The backward pass of {names[root]}, step {number + 1} of {len(edge_order) + 1}: "
        f"{names[node]} sends its gradient to {names[parent]}; gradients so far: "
        + ", ".join(f"{names[n]} {_number(running[n])}" for n in reversed(order))
        + "."
    )
    return frame


def _value_figure(order, names, node_ids, edge_ids, texts, classes, rankdir, with_grad):
    """The graph as boxes of label, value (and gradient), with an id on every node and edge.

    ``texts[node]`` lists the node's value and gradient rows as the final state shows
    them, then any other text a step writes into them: each row is made wide enough for
    the longest, so the box never has to grow. With ``with_grad`` the edges point back to
    the parents and carry the local gradients, as in
    :func:`chainrule.draw.draw_gradient_flow`.
    """
    dot = new_digraph(rankdir)
    dot.attr(nodesep="0.25", ranksep="0.45")
    dot_ids = {node: f"n{index}" for index, node in enumerate(order)}
    widest = max(len(text) for node in order for text in texts[node])
    width = round(10 + 6.3 * widest)  # points: the widest row of any box, at 12 pt, plus the padding
    for node in order:
        header = f"<B>{_html(names[node])}</B>"
        if node.op:
            header += f' <FONT COLOR="{MUTED}">({_html(op_symbol(node.op))})</FONT>'
        rows = [header, _html(texts[node][0])]
        if with_grad:
            rows.append(f'<FONT COLOR="{GLOBAL_GRAD_COLOR}"><B>{_html(texts[node][1])}</B></FONT>')
        body = "".join(f'<TR><TD ALIGN="LEFT" WIDTH="{width}">{row}</TD></TR>' for row in rows)
        label = (
            f'<<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="3" '
            f'BGCOLOR="white" COLOR="{INK}">{body}</TABLE>>'
        )
        dot.node(dot_ids[node], label, shape="plain", id=node_ids[node], **{"class": classes[node_ids[node]]})
    for node in order:
        seen = {}
        for parent, local in zip(node.parents, node.local_grads):
            number = seen[parent] = seen.get(parent, -1) + 1
            attributes = {"id": edge_ids[(parent, node)][number]}
            if with_grad:
                attributes.update(
                    dir="back",
                    color=LOCAL_GRAD_COLOR,
                    fontcolor=LOCAL_GRAD_COLOR,
                    style="dashed",
                    label=f"<{_html(_number(local))}>",
                )
            dot.edge(dot_ids[parent], dot_ids[node], **attributes)
    return Figure(dot, "")


def _html(text):
    return html.escape(str(text), quote=True)


# ---------------------------------------------------------------------------
# training: a classifier of points in the plane, recorded step by step
# ---------------------------------------------------------------------------

#: Region fills (light) and point colours (dark) of up to four classes; each class also
#: has its own marker shape, so the classes read without colour.
_REGION_FILLS = ["#cfe0f3", "#fbd9b8", "#d3ecd0", "#e6d5ef"]
_POINT_COLOURS = ["#1f4e9c", "#b34d00", "#2e7d32", "#6a3d9a"]
_CLASS_NAMES = "ABCD"


class TrainingRecorder:
    """Record a classifier of 2-D points while it trains, for the ``training`` explorable.

    ``points`` are ``(x1, x2)`` pairs and ``labels`` their classes (0, 1, ..., at most
    4 classes). ``forward(point)`` runs the network on one point and returns its layers
    as lists of Values, inputs first and the class scores (logits) last; ``loss(scores,
    label)`` is one example's loss, a Value. ``weights`` holds, per layer, one list per
    unit of its Values (weights then bias): the network's parameters.

    Call :meth:`record` after a step's ``backward()`` and before its update; it stores
    the loss, the weights, the class the network gives every cell of a grid over the
    points (the decision regions), and, for each example offered to the reader, every
    unit's value and gradient: a backward pass of that example's loss alone, after which
    the parameters' gradients are put back as they were, so the update is not changed.
    :meth:`explorable` returns the widget.
    """

    def __init__(self, points, labels, *, forward, loss, weights, examples=None, grid=20):
        if len(points) != len(labels) or not points:
            raise ValueError(f"TrainingRecorder: {len(points)} points but {len(labels)} labels")
        classes = sorted(set(labels))
        if classes != list(range(len(classes))) or len(classes) > len(_REGION_FILLS):
            raise ValueError(
                f"TrainingRecorder: labels must be 0, 1, ... (at most {len(_REGION_FILLS)} classes), got {classes}"
            )
        self.points, self.labels, self.classes = list(points), list(labels), len(classes)
        self.forward, self.loss, self.weights = forward, loss, weights
        self.parameters = [p for layer in weights for unit in layer for p in unit]
        self.examples = list(examples) if examples is not None else [labels.index(label) for label in classes]
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        pad_x, pad_y = 0.15 * (max(xs) - min(xs)), 0.15 * (max(ys) - min(ys))
        self.extent = (min(xs) - pad_x, max(xs) + pad_x, min(ys) - pad_y, max(ys) + pad_y)
        self.grid = grid
        self.snapshots = []

    def _classify(self, point):
        scores = [value.data for value in self.forward(point)[-1]]
        return scores.index(max(scores))

    def record(self, step, loss):
        """Store the state of the network at training step ``step``, whose batch loss is ``loss``."""
        x0, x1, y0, y1 = self.extent
        n = self.grid
        cells = "".join(
            str(self._classify((x0 + (i + 0.5) * (x1 - x0) / n, y1 - (j + 0.5) * (y1 - y0) / n)))
            for j in range(n)
            for i in range(n)
        )
        correct = sum(self._classify(p) == label for p, label in zip(self.points, self.labels))
        saved = [p.grad for p in self.parameters]
        units = []
        for index in self.examples:
            layers = self.forward(self.points[index])
            example_loss = self.loss(layers[-1], self.labels[index])
            example_loss.zero_grad()
            example_loss.backward()
            units.append(
                ([[(v.data, v.grad) for v in layer] for layer in layers], (example_loss.data, example_loss.grad))
            )
        for p, grad in zip(self.parameters, saved):
            p.grad = grad
        self.snapshots.append(
            {
                "step": step,
                "loss": float(getattr(loss, "data", loss)),
                "correct": correct,
                "cells": cells,
                "weights": [p.data for p in self.parameters],
                "units": units,
            }
        )

    def explorable(self):
        """The ``training`` widget: regions, loss curve with a cursor, weights, one example's network."""
        if not self.snapshots:
            raise ValueError("TrainingRecorder.explorable: nothing recorded yet; call record() in the training loop")
        return _training_explorable(self)


def _unit_names(sizes):
    """``x1, x2`` for the inputs, ``h1, ...`` (``g1, ...`` for a second) for hidden layers, and
    ``oA, oB, ...`` for the outputs, the scores of classes A, B, ..."""
    hidden = "hgfe"
    names = []
    for depth, size in enumerate(sizes):
        if depth == len(sizes) - 1:
            names.append([f"o{_CLASS_NAMES[i]}" if i < len(_CLASS_NAMES) else f"o{i + 1}" for i in range(size)])
        else:
            letter = "x" if depth == 0 else hidden[depth - 1]
            names.append([f"{letter}{i + 1}" for i in range(size)])
    return names


def _diverging(value, scale):
    """A blue (negative) to white to red (positive) colour for a weight."""
    t = max(-1.0, min(1.0, value / scale)) if scale else 0.0
    blue, red = (31, 78, 156), (192, 0, 26)
    end = red if t > 0 else blue
    mix = [round(255 + (c - 255) * abs(t)) for c in end]
    return "#{:02x}{:02x}{:02x}".format(*mix)


def _training_explorable(recorder):
    snapshots = recorder.snapshots
    first_units = snapshots[0]["units"][0][0]
    sizes = [len(layer) for layer in first_units]
    names = _unit_names(sizes)
    scale = math.ceil(2 * max(abs(w) for snap in snapshots for w in snap["weights"])) / 2 or 1.0
    examples = recorder.examples
    total = len(recorder.points)

    steps, frames = [], []
    losses = [snap["loss"] for snap in snapshots]
    chart = _LossChart(losses, [snap["step"] for snap in snapshots])
    weight_ids = [
        f"part-w{layer}-{unit}-{k}"
        for layer, units in enumerate(recorder.weights)
        for unit, row in enumerate(units)
        for k in range(len(row))
    ]
    for number, snap in enumerate(snapshots):
        per_example = []
        for layers, (loss_value, loss_grad) in snap["units"]:
            texts = {}
            for layer_names, layer in zip(names, layers):
                for name, (data, grad) in zip(layer_names, layer):
                    texts[f"text-value-{name}"] = _value_text(data)
                    texts[f"text-grad-{name}"] = _grad_text(grad) if grad is not None else "grad \u2013"
            texts["text-value-loss"] = _value_text(loss_value)
            texts["text-grad-loss"] = _grad_text(loss_grad)
            per_example.append(texts)
        attrs = {weight_ids[i]: {"fill": _diverging(w, scale)} for i, w in enumerate(snap["weights"])}
        attrs.update(chart.cursor(number))
        sentence = (
            f"After {snap['step']} updates of the weights, the mean loss over the "
            f"{total} points is {_number(snap['loss'])}, and {snap['correct']} of them "
            "are in the region of their class."
        )
        steps.append({"step": snap["step"], "loss": snap["loss"], "correct": snap["correct"], "sentence": sentence})
        frames.append(
            {
                "nodes": {},
                "edges": [],
                "grid": snap["cells"],
                "attrs": attrs,
                "examples": per_example,
                "alt": f"Training step {snap['step']}: loss {_number(snap['loss'])}, "
                f"{snap['correct']} of {total} points in their class's region.",
            }
        )
    figure_html = _training_panels(recorder, names, weight_ids, chart, snapshots[-1], scale)
    title = "A classifier learning, step by step"
    legend = [(f"cr-class-{k}", f"class {_CLASS_NAMES[k]}") for k in range(recorder.classes)]
    choices = [f"point {index + 1} (class {_CLASS_NAMES[recorder.labels[index]]})" for index in examples]
    rings = [_ring_position(recorder, recorder.points[index]) for index in examples]
    return Explorable(
        "training",
        title,
        _TextFigure(figure_html),
        steps,
        frames,
        legend=legend,
        text_roles={"node": ["value", "grad"]},
        examples=choices,
        rings=rings,
        palette=_REGION_FILLS[: recorder.classes],
        note="The end of training. With JavaScript on, the buttons step through it.",
    )


class _TextFigure:
    """A figure already written as markup (the training widget's panels), with ``source`` for its id prefix."""

    def __init__(self, markup):
        self.markup = markup
        self.source = markup


class _LossChart:
    """The loss curve as a small SVG line chart, with a cursor the steps move."""

    WIDTH, HEIGHT, LEFT, BOTTOM, TOP, RIGHT = 260, 130, 40, 26, 10, 10

    def __init__(self, losses, steps):
        self.losses, self.steps = losses, steps
        self.top = max(losses) or 1.0

    def xy(self, number):
        span = max(len(self.losses) - 1, 1)
        x = self.LEFT + (self.WIDTH - self.LEFT - self.RIGHT) * number / span
        y = self.TOP + (self.HEIGHT - self.TOP - self.BOTTOM) * (1 - self.losses[number] / self.top)
        return round(x, 1), round(y, 1)

    def cursor(self, number):
        x, y = self.xy(number)
        return {"part-cursor": {"x1": x, "x2": x}, "part-cursor-dot": {"cx": x, "cy": y}}

    def svg(self, alt):
        w, h, left, bottom, top = self.WIDTH, self.HEIGHT, self.LEFT, self.BOTTOM, self.TOP
        line = " ".join(f"{x},{y}" for x, y in (self.xy(i) for i in range(len(self.losses))))
        x, y = self.xy(len(self.losses) - 1)
        base = h - bottom
        return (
            f'<svg viewBox="0 0 {w} {h}" width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg">'
            f'<rect width="{w}" height="{h}" fill="white"/>'
            f'<path d="M{left},{top} V{base} H{w - self.RIGHT}" fill="none" stroke="#000"/>'
            f'<text x="{left - 4}" y="{top + 4}" text-anchor="end" font-size="10">'
            f"{_html(_number(self.top))}</text>"
            f'<text x="{left - 4}" y="{base}" text-anchor="end" font-size="10">0</text>'
            f'<text x="12" y="{(top + base) / 2}" font-size="10" text-anchor="middle" '
            f'transform="rotate(-90 12 {(top + base) / 2})">mean loss</text>'
            f'<text x="{left}" y="{base + 12}" font-size="10" text-anchor="middle">{self.steps[0]}</text>'
            f'<text x="{w - self.RIGHT}" y="{base + 12}" font-size="10" text-anchor="middle">'
            f"{self.steps[-1]}</text>"
            f'<text x="{(left + w) / 2}" y="{h - 3}" font-size="10" text-anchor="middle">'
            "updates</text>"
            f'<polyline points="{line}" fill="none" stroke="{GLOBAL_GRAD_COLOR}" stroke-width="1.5"/>'
            f'<line id="part-cursor" x1="{x}" x2="{x}" y1="{top}" y2="{base}" stroke="#e08a00" '
            'stroke-width="1.5" stroke-dasharray="3,2"/>'
            f'<circle id="part-cursor-dot" cx="{x}" cy="{y}" r="3.5" fill="#e08a00"/>'
            "</svg>"
        )


def _marker(label, x, y):
    """A point of class ``label``: a circle, square, triangle or diamond, in the class's colour."""
    colour = _POINT_COLOURS[label]
    style = f'fill="{colour}" stroke="white" stroke-width="1"'
    if label == 0:
        return f'<circle cx="{x}" cy="{y}" r="4" {style}/>'
    if label == 1:
        return f'<rect x="{x - 3.5}" y="{y - 3.5}" width="7" height="7" {style}/>'
    if label == 2:
        return f'<polygon points="{x},{y - 4.5} {x + 4.5},{y + 3.5} {x - 4.5},{y + 3.5}" {style}/>'
    return f'<polygon points="{x},{y - 5} {x + 4.5},{y} {x},{y + 5} {x - 4.5},{y}" {style}/>'


_REGION_SIZE = 220


def _to_panel(recorder, point):
    x0, x1, y0, y1 = recorder.extent
    return (round(_REGION_SIZE * (point[0] - x0) / (x1 - x0), 1), round(_REGION_SIZE * (y1 - point[1]) / (y1 - y0), 1))


def _ring_position(recorder, point):
    x, y = _to_panel(recorder, point)
    return {"part-ring": {"cx": x, "cy": y}}


def _regions_svg(recorder, final):
    n, size = recorder.grid, _REGION_SIZE
    cell = size / n
    cells = "".join(
        f'<rect data-cell="" x="{round(i * cell, 2)}" y="{round(j * cell, 2)}" '
        f'width="{round(cell + 0.3, 2)}" height="{round(cell + 0.3, 2)}" '
        f'fill="{_REGION_FILLS[int(final["cells"][j * n + i])]}"/>'
        for j in range(n)
        for i in range(n)
    )
    points = "".join(
        _marker(label, *_to_panel(recorder, point)) for point, label in zip(recorder.points, recorder.labels)
    )
    ring = _ring_position(recorder, recorder.points[recorder.examples[0]])["part-ring"]
    return (
        f'<svg viewBox="0 0 {size} {size}" width="{size}" height="{size}" '
        f'xmlns="http://www.w3.org/2000/svg"><g data-role="cells">{cells}</g>{points}'
        f'<circle id="part-ring" cx="{ring["cx"]}" cy="{ring["cy"]}" r="8" fill="none" '
        'stroke="#000" stroke-width="2"/></svg>'
    )


def _weights_svg(recorder, weight_ids, final, scale):
    size, gap, rows = 18, 24, []
    y, number, width = 14, 0, 0
    for depth, units in enumerate(recorder.weights):
        inputs = len(units[0]) - 1
        rows.append(
            f'<text x="0" y="{y - 3}" font-size="10">layer {depth + 1}: '
            f"{len(units)} units \u00d7 ({inputs} weights + bias)</text>"
        )
        for unit, row in enumerate(units):
            for k, _ in enumerate(row):
                x = k * size + (4 if k == inputs else 0)  # the bias a little apart
                rows.append(
                    f'<rect id="{weight_ids[number]}" x="{x}" y="{y + unit * size}" '
                    f'width="{size - 1}" height="{size - 1}" '
                    f'fill="{_diverging(final["weights"][number], scale)}" stroke="#999" '
                    'stroke-width="0.5"/>'
                )
                width = max(width, x + size)
                number += 1
        y += len(units) * size + gap
    width = max(width, 190)
    rows.append(
        f'<text x="0" y="{y - 8}" font-size="10">blue &lt; 0 &lt; red, '
        f"full colour at \u00b1{_html(_number(scale))}</text>"
    )
    return (
        f'<svg viewBox="0 0 {width} {y}" width="{width}" height="{y}" '
        f'xmlns="http://www.w3.org/2000/svg">{"".join(rows)}</svg>'
    )


def _units_svg(recorder, names, final_texts, widest):
    dot = new_digraph("LR")
    dot.attr(nodesep="0.12", ranksep="0.5", ordering="out")
    width = round(10 + 6.3 * widest)
    for layer in names + [["loss"]]:
        for name in layer:
            rows = [f"<B>{_html(name)}</B>", _html(final_texts.get(f"text-value-{name}", ""))]
            rows.append(f'<FONT COLOR="{GLOBAL_GRAD_COLOR}"><B>{_html(final_texts[f"text-grad-{name}"])}</B></FONT>')
            body = "".join(f'<TR><TD ALIGN="LEFT" WIDTH="{width}">{row}</TD></TR>' for row in rows)
            dot.node(
                name,
                f'<<TABLE BORDER="1" CELLBORDER="0" CELLSPACING="0" CELLPADDING="2" '
                f'BGCOLOR="white" COLOR="{INK}">{body}</TABLE>>',
                shape="plain",
                id=f"node-{name}",
                fontsize="11",
            )
    for before, after in zip(names, names[1:] + [["loss"]]):
        for tail in before:
            for head in after:
                dot.edge(tail, head, color="grey60", arrowsize="0.4")
    return _tag_texts(dot.pipe(), {"node": ["value", "grad"]})


def _training_panels(recorder, names, weight_ids, chart, final, scale):
    """The four panels of the training widget, each an SVG with alt text, in a wrapping row."""
    snapshots = recorder.snapshots
    texts = {}
    widest = 0
    for snap in snapshots:
        for layers, (loss_value, _) in snap["units"]:
            for layer in layers:
                for data, grad in layer:
                    widest = max(widest, len(_value_text(data)), len(_grad_text(grad or 0.0)))
    layers, (loss_value, loss_grad) = final["units"][0]
    texts["text-grad-loss"] = _grad_text(loss_grad)
    for layer_names, layer in zip(names, layers):
        for name, (data, grad) in zip(layer_names, layer):
            texts[f"text-value-{name}"] = _value_text(data)
            texts[f"text-grad-{name}"] = _grad_text(grad) if grad is not None else "grad \u2013"
    texts["text-value-loss"] = _value_text(loss_value)
    total = len(recorder.points)
    panels = [
        (
            "Decision regions",
            _regions_svg(recorder, final),
            f"Decision regions of the network after {final['step']} steps over {total} points of "
            f"{recorder.classes} classes; {final['correct']} of {total} points lie in their "
            "class's region. The ringed point is the example shown in the network.",
        ),
        (
            "Mean loss",
            chart.svg(""),
            f"The training loss over {len(snapshots)} recorded steps, from "
            f"{_number(snapshots[0]['loss'])} to {_number(snapshots[-1]['loss'])}, with a cursor "
            "at the current step.",
        ),
        (
            "Weights",
            _weights_svg(recorder, weight_ids, final, scale),
            "The weights of each layer as a grid of coloured cells, one row per unit: blue negative, red positive.",
        ),
        (
            "The network on the chosen example, with its own loss",
            _units_svg(recorder, names, texts, widest),
            "The network's units for the chosen example: the inputs x, the hidden units h and the "
            "scores oA, oB, oC of the classes; each box shows the unit's value and its gradient, "
            "the derivative of that example's loss with respect to it.",
        ),
    ]
    return (
        '<div class="cr-x-panels">'
        + "".join(
            f'<figure class="cr-x-panel"><figcaption>{_html(title)}</figcaption>{accessible_svg(svg, alt)}</figure>'
            for title, svg, alt in panels
        )
        + "</div>"
    )
