"""Topological order of a computational graph, by iterative depth-first search.

Both engines (:class:`chainrule.Value` and :class:`chainrule.Tensor`) and the drawing
module use these functions, so a graph is always walked the same way.

A graph is given by its *root* (the node whose gradient we want, usually the loss) and
a function ``parents_of(node)`` that returns the node's inputs in order.  The walk
starts at the root and follows edges backwards, towards the leaves.  Nodes that the
root does not depend on are never reached, so they are not part of the order.

The search keeps an explicit stack instead of recursing, so a chain of a million nodes
is as easy as a chain of three.  Each node is visited once and each edge is looked at
once: the cost is O(V + E).
"""

VISIT = "visit"
FINISH = "finish"


def _parents_attribute(node):
    return node.parents


def depth_first_events(root, parents_of=_parents_attribute, key=id):
    """Yield ``(event, node)`` pairs of a depth-first search from ``root``.

    ``event`` is ``"visit"`` when the search first reaches a node and ``"finish"`` when
    all of the node's parents are finished.  The order is exactly that of the textbook
    recursive search that loops over ``parents_of(node)`` in order; only the stack is
    explicit.  ``key(node)`` identifies a node; the default, ``id``, treats two distinct
    nodes with equal values as different nodes.
    """
    visited = {key(root)}
    yield VISIT, root
    stack = [(root, iter(parents_of(root)))]
    while stack:
        node, unexplored_parents = stack[-1]
        for parent in unexplored_parents:
            if key(parent) not in visited:
                visited.add(key(parent))
                yield VISIT, parent
                stack.append((parent, iter(parents_of(parent))))
                break
        else:
            stack.pop()
            yield FINISH, node


def topological_order(root, parents_of=_parents_attribute, key=id):
    """Return the nodes that ``root`` depends on, every node after all of its parents.

    The list starts with leaves and ends with ``root``.  Reversed, it is the order in
    which the backward pass visits nodes: each node receives every gradient
    contribution before it passes its own on.
    """
    return [node for event, node in depth_first_events(root, parents_of, key) if event == FINISH]
