"""Figures of the depth-first search that puts a graph in topological order, one step each.

:func:`draw_dfs_step` draws one step of :func:`chainrule.graph.dfs_trace`: which nodes are
not visited yet, on the search path, or finished, with a legend and alt text that say
what the step did. :func:`dfs_element_ids` gives the ids of the drawn nodes and edges, so
that a page can restyle one figure step by step, as the explorables do. The figures are
the engine's (:mod:`chainrule.figures.figure`); the search is the engine's too
(:func:`chainrule.graph.dfs_trace`); these steps are the course's.
"""

import re
from itertools import pairwise, zip_longest

from chainrule.figures.figure import INK, ORIENTATION, Figure, check_size, dot_html, new_digraph, op_symbol
from chainrule.graph import dfs_trace, name_list, numbered_ids, parents_function, topological_order, trace_names

# How each state of a node looks.  Fill lightness (white / light / dark) and outline
# (thin / bold / dashed grey) both differ, so the states read in greyscale too.
_DFS_STATES = {
    "unvisited": dict(style="filled", fillcolor="white", color=INK, fontcolor=INK, penwidth="1"),
    "on_path": dict(style="filled", fillcolor="#f6b3a8", color="#9e1b12", fontcolor=INK, penwidth="2.2"),
    "finished": dict(style="filled", fillcolor="#2f5f98", color="#16324f", fontcolor="white", penwidth="1"),
    "not_reached": dict(style="dashed", fillcolor="white", color="grey55", fontcolor="grey45", penwidth="1"),
}


_CURRENT_COLOR = "#c77700"  # orange (3.5:1 on white), and a thick outline


_CURRENT_PENWIDTH = "4"


_DFS_LEGEND = [
    ("unvisited", "not visited yet"),
    ("on_path", "on the search path"),
    ("finished", "finished (in the order)"),
    ("current", "node of this step"),
    ("leaf", "leaf (no parents)"),
    ("not_reached", "not reached from the root"),
]


def draw_dfs_step(root, step, parents=None, rankdir=ORIENTATION, max_nodes=150, *, caption=True, element_ids=False):
    """Draw the graph as the depth-first search leaves it after step number ``step``.

    ``step`` is a 0-based index into :func:`dfs_trace` ``(root, parents)``; the caption
    numbers steps from 1, as :func:`~chainrule.graph.format_dfs_trace` and the widgets
    do (index 0 is "Step 1 of n").  Nodes not
    yet visited are white; nodes on the search path (visited, not finished) are light
    red with a bold outline, and the edges of that path are bold; finished nodes are
    dark blue.  The node of this step has a thick orange outline, leaves a double
    outline.  Nodes of a ``parents`` dict that the root does not depend on are grey
    and dashed.  A caption under the graph gives the step, the topological order so far
    and a legend (``caption=False`` leaves it out).  With ``rankdir=ORIENTATION`` leaves are at
    the bottom, the root on top.

    ``element_ids=True`` gives every node and edge of the SVG the id of
    :func:`dfs_element_ids` and a class naming its state (``cr-unvisited``,
    ``cr-on-path``, ``cr-finished``, ``cr-not-reached``, plus ``cr-current`` for the
    node of this step and ``cr-path`` for an edge of the search path), so that a
    script can restyle the figure step by step (the course's explorables do).
    """
    parents_of, reached, not_reached = _dfs_nodes(root, parents, max_nodes)
    nodes = reached + not_reached
    trace = dfs_trace(root, parents)
    _check_step(step, len(trace), root)
    names = trace_names(trace)
    for name in not_reached:
        names[name] = str(name)
    ids = numbered_ids(nodes)
    current = trace[step]
    states = _dfs_states(current, reached, not_reached)
    path_edges = _search_path_edges(current)
    shape = "circle" if max(len(name) for name in names.values()) <= 3 else "ellipse"
    node_elements, edge_elements = _element_ids(nodes, names, parents_of) if element_ids else ({}, {})

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
            attributes.update(id=node_elements[node], **{"class": state_class + (" cr-current" if is_current else "")})
        dot.node(ids[node], _dfs_node_label(node, names), **attributes)
    for node in nodes:
        _add_dfs_edges(dot, node, parents_of(node), ids, states, path_edges, edge_elements)
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
    node_ids: dict = {}
    slugs: dict = {}
    edge_ids: dict = {}
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
    check_size("draw_dfs_step", len(reached) + len(not_reached), max_nodes)
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
    return {(parent, child) for child, parent in pairwise(path)}


def _add_dfs_edges(dot, node, node_parents, ids, states, path_edges, edge_ids=None):
    """Draw an edge from each parent to ``node``; bold on the search path, grey if unreached.

    With ``edge_ids`` (from :func:`_element_ids`) each edge gets its id, and the class
    ``cr-path`` when it is on the search path.
    """
    seen: dict = {}
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
        return f"<{dot_html(names[node])}>"
    return f'<{dot_html(names[node])}<BR/><FONT POINT-SIZE="10">{dot_html(op_symbol(op))}</FONT>>'


def _dfs_caption(trace, step, names, has_unreached):
    """An HTML-like graph label: the step, the order so far and a legend."""
    current = trace[step]
    rows = [
        f'<TR><TD COLSPAN="4">Step {step + 1} of {len(trace)}: '
        f"{current.event} {dot_html(names[current.node])}</TD></TR>",
        f'<TR><TD COLSPAN="4">topological order so far: {dot_html(name_list(current.order, names))}</TD></TR>',
    ]
    entries = [entry for entry in _DFS_LEGEND if has_unreached or entry[0] != "not_reached"]
    for first, second in zip_longest(entries[0::2], entries[1::2]):
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
    return f'{swatch}<TD ALIGN="LEFT"><FONT POINT-SIZE="11">{dot_html(text)}</FONT></TD>'


def _dfs_alt(trace, step, names, not_reached):
    current = trace[step]
    finished = ", ".join(names[node] for node in current.order) or "none yet"
    sentence = (
        f"Depth-first search from {names[trace[0].node]}, step {step + 1} of {len(trace)}, "
        f"{current.event} {names[current.node]}: visited "
        f"{', '.join(names[node] for node in current.visited)}; finished {finished}"
    )
    if not_reached:
        sentence += f"; not reached: {', '.join(str(name) for name in not_reached)}"
    return sentence + "."
