"""The ``toposort`` explorable: the depth-first search that puts a graph of Values in topological order."""

from itertools import pairwise

from chainrule.figures.figure import ORIENTATION, GraphTooLargeError
from chainrule.graph import VISIT, dfs_trace, parents_function, topological_order, trace_names, unique_names

from .dfs_figures import dfs_element_ids, draw_dfs_step
from .widget import Explorable, and_list, joined

#: The legend of the toposort explorable: a CSS class of a node, and its meaning.
TOPOSORT_LEGEND = [
    ("cr-unvisited", "not visited yet"),
    ("cr-on-path", "on the search path"),
    ("cr-finished", "finished (in the order)"),
    ("cr-current", "node of this step"),
    ("cr-leaf", "leaf (no parents)"),
    ("cr-not-reached", "not reached from the root"),
]


_ORDINALS = ["first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth"]


def toposort(root, parents=None, *, rankdir=ORIENTATION, max_nodes=50):
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
    Raises :class:`~chainrule.figures.GraphTooLargeError` when the graph has more than
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
    names = unique_names(trace_names(trace))
    for name in not_reached:
        names[name] = str(name)
    ids = dfs_element_ids(root, parents, max_nodes=max_nodes)
    steps, frames = _record_search(trace, root, parents_of, names, ids, order, not_reached)
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


def _record_search(trace, root, parents_of, names, ids, order, not_reached):
    """The steps (what the widget says) and frames (what it shows) of the search in ``trace``."""
    node_ids, edge_ids = ids
    steps, frames = [], []
    path: list = []  # the search's stack
    reached_from = {}  # the child each node was reached from
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
    return steps, frames


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
    path_edges = [edge_ids[(parent, child)][0] for child, parent in pairwise(path)]
    unvisited = [node for node in order if node not in visited]
    on_path = [node for node in step.visited if node not in finished]
    parts = [
        f"Depth-first search from {names[root]}, step {number + 1} of {count} ({step.event} {names[step.node]})",
        f"on the search path: {joined(names[n] for n in on_path) or 'none'}",
        f"finished: {joined(names[n] for n in step.order) or 'none yet'}",
        f"not visited yet: {joined(names[n] for n in unvisited) or 'none'}",
    ]
    if not_reached:
        parts.append(f"not reached from {names[root]}: {joined(names[n] for n in not_reached)}")
    return {"nodes": nodes, "current": node_ids[step.node], "edges": path_edges, "alt": "; ".join(parts) + "."}


def _visit_sentence(step, child, parents_of, names, reached_from):
    """``Visit x: d's first parent. Visited: f, d, x.``"""
    node = step.node
    visited = joined(names[n] for n in step.visited)
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
        which += f" ({and_list(names[n] for n in skipped)} {verb} visited already)"
    return f"Visit {names[node]}: {which}. Visited: {visited}."


def _finish_sentence(step, path, parents_of, names, not_reached, root):
    """``Finish x: it has no parents, so it joins the order: x.`` and where the search goes next."""
    node = step.node
    order = joined(names[n] for n in step.order)
    node_parents = list(dict.fromkeys(parents_of(node)))
    if not node_parents:
        reason = "it has no parents"
    elif len(node_parents) == 1:
        reason = f"its parent {names[node_parents[0]]} is finished"
    else:
        reason = f"its parents {and_list(names[n] for n in node_parents)} are finished"
    sentence = f"Finish {names[node]}: {reason}, so it joins the order: {order}."
    if path:
        return sentence + f" The search backs up to {names[path[-1]]}."
    if not_reached:
        verb = "is" if len(not_reached) == 1 else "are"
        return sentence + (
            f" The search is complete; {and_list(names[n] for n in not_reached)} {verb} not reached from {names[root]}."
        )
    return sentence + " The search is complete."
