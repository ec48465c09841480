"""Topological order of a computational graph, by iterative depth-first search.

Both engines (:class:`chainrule.Value` and :class:`chainrule.Tensor`) and the drawing
module use these functions, so a graph is always walked the same way.

A graph is given by its *root* (the node whose gradient we want, usually the loss) and
a function ``parents_of(node)`` that returns the node's inputs in order.  The walk
starts at the root and follows edges backwards, towards the leaves.  Nodes that the
root does not depend on are never reached, so they are not part of the order.

Nodes are remembered in a set, so they must be hashable, and two nodes are the same
node when they are equal.  ``Value`` and ``Tensor`` do not define ``==``, so for them
this means "the same object"; for a graph written as a dict of names, the same name.

The search keeps an explicit stack instead of recursing, so a chain of a million nodes
is as easy as a chain of three.  Each node is visited once and each edge is looked at
once: the cost is O(V + E).
"""

from dataclasses import dataclass
from operator import attrgetter

VISIT = "visit"
FINISH = "finish"

parents_attribute = attrgetter("parents")  #: the default parents_of: a node's ``.parents``


def depth_first_events(root, parents_of=parents_attribute):
    """Yield ``(event, node)`` pairs of a depth-first search from ``root``.

    ``event`` is ``"visit"`` when the search first reaches a node and ``"finish"`` when
    all of the node's parents are finished.  The order is exactly that of the textbook
    recursive search that loops over ``parents_of(node)`` in order; only the stack is
    explicit.  Each stack entry holds a node and an iterator over the parents it has
    not looked at yet.
    """
    visited = {root}
    yield VISIT, root
    stack = [(root, iter(parents_of(root)))]
    while stack:
        node, unexplored_parents = stack[-1]
        for parent in unexplored_parents:
            if parent not in visited:
                visited.add(parent)
                yield VISIT, parent
                stack.append((parent, iter(parents_of(parent))))
                break
        else:
            stack.pop()
            yield FINISH, node


def topological_order(root, parents_of=None):
    """Return the nodes that ``root`` depends on, every node after all of its parents.

    The list starts with leaves and ends with ``root``.  Reversed, it is the order in
    which the backward pass visits nodes: each node receives every gradient
    contribution before it passes its own on.

    This is :func:`depth_first_events` keeping only the "finish" events, written out
    as one loop because every backward pass calls it.  A leaf finishes as soon as it
    is visited, so it goes straight into the order without a stack entry of its own;
    the order is the same, and the many leaves of a network (weights, inputs,
    constants) cost only a set lookup.  ``parents_of`` left as None reads each node's
    ``.parents`` directly, about an eighth faster than calling a function for it.
    """
    order = []
    visited = {root}
    # The stack as two lists (cheaper than a list of pairs): the path of nodes being
    # explored, and for each an iterator over the parents it has not looked at yet.
    path = [root]
    unexplored = [iter(root.parents if parents_of is None else parents_of(root))]
    while path:
        for parent in unexplored[-1]:
            if parent not in visited:
                visited.add(parent)
                grandparents = parent.parents if parents_of is None else parents_of(parent)
                if not grandparents:  # a leaf: visited and finished at once
                    order.append(parent)
                    continue
                path.append(parent)
                unexplored.append(iter(grandparents))
                break
        else:
            unexplored.pop()
            order.append(path.pop())
    return order


# ---------------------------------------------------------------------------
# The search as data, step by step (for lessons and figures)
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DFSStep:
    """The state of the depth-first search right after one event.

    ``event`` is ``"visit"`` (the search reaches ``node`` for the first time) or
    ``"finish"`` (all of ``node``'s parents are finished, so ``node`` joins the order).
    ``visited`` lists every node reached so far, in the order reached; ``order`` is
    the topological order so far: the finished nodes, in the order they finished.
    """

    event: str
    node: object
    visited: tuple
    order: tuple


def parents_function(function_name, root, parents):
    """Return ``parents_of(node)`` for a graph of nodes or a dict of names.

    A dict is checked first, so that a missing name gives a clear error here instead
    of a KeyError in the middle of the search.
    """
    if parents is None:
        if not hasattr(root, "parents"):
            raise TypeError(
                f"{function_name}: the root {root!r} has no .parents; for a graph written as "
                "a dict of names pass parents={name: [parent names]} and a name as root"
            )
        return parents_attribute
    if root not in parents:
        raise ValueError(
            f"{function_name}: the root {root!r} is not a key of parents (keys: {', '.join(map(str, parents))})"
        )
    for name, names in parents.items():
        for parent in names:
            if parent not in parents:
                raise ValueError(
                    f"{function_name}: {parent!r} is a parent of {name!r} but has no entry in "
                    f"parents; add {parent!r}: [] if it is a leaf"
                )
    return parents.__getitem__


def dfs_trace(root, parents=None):
    """Run the depth-first search from ``root`` and return every step as a :class:`DFSStep`.

    ``root`` is a node with ``.parents``, or, when ``parents`` is a dict
    ``{name: [parent names]}``, a name in that dict.  The search is
    :func:`chainrule.graph.depth_first_events`, the one the engine uses, so the steps
    are those of the textbook recursive search.  The last step's ``order`` is the
    topological order (leaves first, root last).

    Every step stores the lists so far, so a trace takes memory quadratic in the
    number of nodes: it is meant for the small graphs of a lesson.
    """
    parents_of = parents_function("dfs_trace", root, parents)
    visited: list = []
    order: list = []
    steps = []
    for event, node in depth_first_events(root, parents_of):
        (visited if event == VISIT else order).append(node)
        steps.append(DFSStep(event, node, tuple(visited), tuple(order)))
    return steps


def numbered_ids(nodes):
    """Map each node to its id, ``n0, n1, ...`` in the order given: the figures' DOT ids, and
    the name of a node that has no label."""
    return {node: f"n{index}" for index, node in enumerate(nodes)}


def trace_names(trace):
    """Name every node of a trace: a name from a dict as itself, a node by its label.

    An unlabelled node is called by its :func:`numbered_ids` id over the topological order --
    the same as its DOT id in the figures.
    """
    nodes = dict.fromkeys(trace[-1].order if trace else ())  # a dict keeps insertion order
    for step in trace:  # a partial trace: add the unfinished nodes after the others
        nodes.setdefault(step.node)
    ids = numbered_ids(nodes)
    names = {}
    for node in nodes:
        if not hasattr(node, "parents"):  # a name from a parents dict
            names[node] = str(node)
        else:
            label = getattr(node, "label", "")
            names[node] = str(label) if label else ids[node]
    return names


def unique_names(names):
    """``names`` (node -> name) with a name that two nodes share made unique (``a``, ``a_2``),
    so that a name read back finds its node."""
    unique, used = {}, set()
    for node in names:
        name, count = names[node], 1
        while name in used:
            count += 1
            name = f"{names[node]}_{count}"
        used.add(name)
        unique[node] = name
    return unique


def format_dfs_trace(trace):
    """Return a trace as text, one line per step, numbered from 1 as the figures and widgets number them.

    A visit shows the visited list, a finish shows the order so far::

         1  visit  f   visited=[f]
         4  finish x   order=[x]
    """
    names = trace_names(trace)
    width = max([3] + [len(name) for name in names.values()]) + 1
    digits = len(str(len(trace)))
    lines = []
    for number, step in enumerate(trace, start=1):
        if step.event == VISIT:
            what = "visited=" + name_list(step.visited, names)
        else:
            what = "order=" + name_list(step.order, names)
        lines.append(f"{number:>{digits}}  {step.event:<7}{names[step.node]:<{width}}{what}")
    return "\n".join(lines)


def name_list(nodes, names):
    return "[" + ", ".join(names[node] for node in nodes) + "]"
