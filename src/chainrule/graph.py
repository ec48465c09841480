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

from operator import attrgetter

VISIT = "visit"
FINISH = "finish"

_parents_attribute = attrgetter("parents")


def depth_first_events(root, parents_of=_parents_attribute):
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


def topological_order(root, parents_of=_parents_attribute):
    """Return the nodes that ``root`` depends on, every node after all of its parents.

    The list starts with leaves and ends with ``root``.  Reversed, it is the order in
    which the backward pass visits nodes: each node receives every gradient
    contribution before it passes its own on.

    This is :func:`depth_first_events` keeping only the "finish" events, written out
    as one loop because every backward pass calls it.  A leaf finishes as soon as it
    is visited, so it goes straight into the order without a stack entry of its own;
    the order is the same, and the many leaves of a network (weights, inputs,
    constants) cost only a set lookup.
    """
    order = []
    visited = {root}
    # The stack as two lists (cheaper than a list of pairs): the path of nodes being
    # explored, and for each an iterator over the parents it has not looked at yet.
    path = [root]
    unexplored = [iter(parents_of(root))]
    while path:
        for parent in unexplored[-1]:
            if parent not in visited:
                visited.add(parent)
                grandparents = parents_of(parent)
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
