"""Explorables: a recorded run of the engine that the reader steps through in the page.

An explorable is a view of what the engine really did, not a second engine written in
JavaScript. Python records the run; the page only shows the recorded steps one at a
time. :func:`toposort` records the depth-first search that puts a graph in topological
order: the events of :func:`chainrule.graph.depth_first_events`, through
:func:`chainrule.graph.dfs_trace`.

The result is an :class:`Explorable`. In a notebook (and in the book) it shows itself as
one self-contained piece of HTML:

* one SVG of the graph, drawn by :func:`chainrule.draw.draw_dfs_step` (DOT through
  Graphviz's ``dot``), whose nodes and edges carry stable ids (``node-x``,
  ``edge-c-d``) and a class naming their state;
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

import html
import json
from pathlib import Path

from .draw import GraphTooLargeError, dfs_element_ids, draw_dfs_step
from .svg import accessible_svg
from .graph import VISIT, dfs_trace, parents_function, topological_order, trace_names

__all__ = ["Explorable", "toposort"]

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

_ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth",
             "ninth", "tenth"]


def asset(name):
    """The text of one of the widget's files shipped in the package (``explorable.js`` or ``.css``)."""
    return (_ASSETS / name).read_text(encoding="utf-8")


class Explorable:
    """A recorded run of the engine that a page shows as a widget to step through.

    ``kind`` names what was recorded (``"toposort"``); ``steps`` is a list of dicts, one
    per step, each with a ``"sentence"`` that says in words what the step does;
    ``figure`` is the :class:`~chainrule.draw.Figure` drawn in the final state.
    ``html()`` (or the notebook's display, ``_repr_html_``) gives the widget.
    """

    def __init__(self, kind, title, figure, steps, frames, lists, legend, final_alt):
        self.kind = kind
        self.title = title
        self.figure = figure
        self.steps = steps
        self._frames = frames
        self._lists = lists
        self._legend = legend
        self._final_alt = final_alt

    def __len__(self):
        return len(self.steps)

    def __repr__(self):
        return f"<Explorable {self.kind}: {self.title}, {len(self.steps)} steps>"

    def data(self):
        """What the page's script reads: the kind and every step with its view of the picture."""
        steps = [dict(step, **frame) for step, frame in zip(self.steps, self._frames)]
        return {"kind": self.kind, "lists": [key for key, _ in self._lists], "steps": steps}

    def html(self):
        """The widget: figure, lists, status and controls, the steps as JSON, script and styles inline."""
        last = len(self.steps) - 1
        final = self.steps[last]
        counter = _counter(last, len(self.steps))
        lists = "".join(
            f'<p class="cr-x-list"><span class="cr-x-list-name">{html.escape(label)}</span> '
            f'<span data-list="{key}">{html.escape(_joined(final[key]))}</span></p>'
            for key, label in self._lists
        )
        legend = "".join(
            f'<li><span class="cr-x-swatch {css_class}" aria-hidden="true"></span>'
            f"{html.escape(text)}</li>"
            for css_class, text in self._legend
        )
        data = json.dumps(self.data(), ensure_ascii=False, separators=(",", ":"))
        data = data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
        label = html.escape(f"{self.title}. Step through it with the arrow keys or the buttons.")
        controls = (
            '<div class="cr-x-controls" data-role="controls" hidden>'
            '<button type="button" data-action="reset">Reset</button>'
            '<button type="button" data-action="previous">Previous step</button>'
            '<button type="button" data-action="play">Play</button>'
            '<button type="button" data-action="next">Next step</button>'
            '<label class="cr-x-slider">Step '
            f'<input type="range" min="0" max="{last}" step="1" value="{last}" '
            f'aria-valuetext="{html.escape(counter)}" data-role="slider"></label>'
            "</div>"
        )
        return (
            f'<div class="cr-explorable-output">\n<style>{asset(STYLE_FILE)}</style>\n'
            f'<div class="cr-explorable" data-explorable="{self.kind}" tabindex="0" role="group" '
            f'aria-label="{label}">\n'
            f'<div class="chainrule-figure cr-x-figure" style="overflow-x:auto">{self.svg()}</div>\n'
            f'<ul class="cr-x-legend">{legend}</ul>\n'
            f'<div class="cr-x-lists">{lists}</div>\n'
            f'<p class="cr-x-status" aria-live="polite" data-role="status">'
            f"{html.escape(counter + '. ' + final['sentence'])}</p>\n"
            f"{controls}\n"
            '<noscript><p class="cr-x-note">The final state of the search. With JavaScript on, '
            "the buttons step through it.</p></noscript>\n"
            f'<script type="application/json" data-role="steps">{data}</script>\n'
            f"</div>\n<script>{asset(SCRIPT_FILE)}</script>\n</div>"
        )

    def svg(self):
        """The figure in its final state as an ``<svg>`` element, described by the final step's alt text."""
        return accessible_svg(self.figure.dot.pipe(), self._final_alt)

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
        steps.append({
            "event": step.event,
            "node": names[step.node],
            "visited": [names[node] for node in step.visited],
            "order": [names[node] for node in step.order],
            "sentence": sentence,
        })
        frames.append(_frame(step, number, len(trace), path, names, node_ids, edge_ids,
                             order, not_reached, root))

    figure = draw_dfs_step(root, len(trace) - 1, parents, rankdir, max_nodes, caption=False,
                           element_ids=True)
    title = f"Depth-first search from {names[root]}, step by step"
    legend = [entry for entry in TOPOSORT_LEGEND if not_reached or entry[0] != "cr-not-reached"]
    lists = [("visited", "Visited"), ("order", "Order")]
    return Explorable("toposort", title, figure, steps, frames, lists, legend, frames[-1]["alt"])


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
        nodes[node_ids[node]] = ("cr-finished" if node in finished
                                 else "cr-on-path" if node in visited else "cr-unvisited")
    for node in not_reached:
        nodes[node_ids[node]] = "cr-not-reached"
    path_edges = [edge_ids[(parent, child)][0] for child, parent in zip(path, path[1:])]
    unvisited = [node for node in order if node not in visited]
    on_path = [node for node in step.visited if node not in finished]
    parts = [
        f"Depth-first search from {names[root]}, step {number + 1} of {count} "
        f"({step.event} {names[step.node]})",
        f"on the search path: {_joined(names[n] for n in on_path) or 'none'}",
        f"finished: {_joined(names[n] for n in step.order) or 'none yet'}",
        f"not visited yet: {_joined(names[n] for n in unvisited) or 'none'}",
    ]
    if not_reached:
        parts.append(f"not reached from {names[root]}: {_joined(names[n] for n in not_reached)}")
    return {"nodes": nodes, "current": node_ids[step.node], "path": path_edges,
            "alt": "; ".join(parts) + "."}


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
    skipped = list(dict.fromkeys(
        parent for parent in child_parents[:index] if reached_from.get(parent) is not child
    ))
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
        return sentence + (f" The search is complete; {_and(names[n] for n in not_reached)} "
                           f"{verb} not reached from {names[root]}.")
    return sentence + " The search is complete."


def _joined(names):
    return ", ".join(names)


def _and(names):
    """``a``, ``a and b``, ``a, b and c``."""
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _counter(index, count):
    return f"Step {index + 1} of {count}"

