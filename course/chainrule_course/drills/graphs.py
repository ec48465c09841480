"""Random computational graphs from a seed, small enough to work through by hand.

:func:`make_graph` builds a :class:`~chainrule.value.Value` expression of three or four
leaves and three to five operations, and names every node: the leaves ``a, b, c, d``, the
results ``e, f, g, ...`` in the order they are computed, and the output ``L``. The level
sets what the graph may hold:

1. a tree: every value is used once;
2. fan-out: a leaf feeds two or three operations;
3. shared subexpressions: a computed value feeds two operations, or one operation uses
   a value twice (``a * a``);
4. ``tanh``, ``exp``, ``log`` or a division, on top of fan-out.

The same ``(seed, level)`` always gives the same graph (Python's :class:`random.Random`
seeded with a string is the same on every platform). Leaves take values a person can
multiply in their head, and a graph is drawn again until every value and gradient is
moderate, every logarithm's input at least 0.25 and every divisor at least 0.5 in size.
"""

import math
import operator
import random
from dataclasses import dataclass, field

from chainrule.graph import topological_order
from chainrule.value import Value

__all__ = ["LEVELS", "Graph", "make_graph"]

#: The levels, easiest first.
LEVELS = {1: "trees", 2: "fan-out", 3: "shared subexpressions", 4: "tanh, exp, log and division"}

LEAF_VALUES = (-2.0, -1.5, -1.0, -0.5, 0.5, 1.0, 1.5, 2.0, 3.0)
LEAF_NAMES = "abcd"
RESULT_NAMES = "efghkmnpqrst"  # no i, j, l or o: they read as indices or digits
BINARY = ("+", "-", "*")
SYMBOLS = {"+": "+", "-": "\u2212", "*": "\u00b7", "/": "/"}
OPERATIONS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}
LARGEST = 50.0  # no value or gradient larger than this in size


@dataclass
class Graph:
    """A drawn graph: its output ``root`` and every node by name, inputs first."""

    seed: int
    level: int
    root: Value
    order: list = field(default_factory=list)  # topological order, from topological_order(root)

    def __post_init__(self):
        self.order = topological_order(self.root)
        self.names = {node: node.label for node in self.order}
        self.nodes = {node.label: node for node in self.order}

    def leaves(self):
        return [node for node in self.order if not node.parents]

    def results(self):
        return [node for node in self.order if node.parents]

    def uses(self, node):
        """The edges out of ``node``: ``(child, index)`` for each time a child takes it as input."""
        return [(child, i) for child in self.order for i, parent in enumerate(child.parents) if parent is node]

    def formula(self, node, numbers=False):
        """``"e = a · b"``, or with the inputs' values, ``"e = 2 · (−1.5)"``."""

        def show(parent):
            return factor_text(parent.data) if numbers else parent.label

        parts = [show(parent) for parent in node.parents]
        if node.op in SYMBOLS:
            return f"{node.label} = {parts[0]} {SYMBOLS[node.op]} {parts[1]}"
        return f"{node.label} = {node.op}({parts[0]})"

    def description(self):
        """The graph in words, one line per node: what a screen reader reads for the figure."""
        leaves = sorted(self.leaves(), key=lambda leaf: leaf.label)
        lines = [f"{leaf.label} = {number_text(leaf.data)} (an input)" for leaf in leaves]
        lines += [self.formula(node) for node in self.results()]
        return lines


def factor_text(x):
    """A number as a factor in a product: negative numbers in brackets, ``(−1.5)``."""
    return f"({number_text(x)})" if x < 0 else number_text(x)


def number_text(x):
    """A number as a person writes it: ``2``, ``-1.5``, ``0.7616`` (with a true minus sign)."""
    text = f"{x:.4f}".rstrip("0").rstrip(".") if x != int(x) else str(int(x))
    return text.replace("-", "\u2212")


def make_graph(seed, level):
    """The graph of ``seed`` at ``level`` (1 to 4); ValueError names a bad level or seed."""
    if level not in LEVELS:
        raise ValueError(f"drills.make_graph: level must be one of {sorted(LEVELS)}, got {level!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"drills.make_graph: seed must be a whole number >= 0, got {seed!r}")
    rng = random.Random(f"chainrule-drill:{level}:{seed}")
    while True:
        root = _draw(rng, level)
        if root is not None:
            results = [node for node in topological_order(root) if node.parents]
            for node, name in zip(results[:-1], RESULT_NAMES, strict=False):  # more names than results
                node.label = name  # e, f, g, ... in the order a forward pass computes them
            return Graph(seed, level, root)


def _draw(rng, level):
    """One try at a graph of ``level``; None when it misses the level's shape or its limits."""
    leaves = [Value(rng.choice(LEAF_VALUES), name) for name in LEAF_NAMES[: rng.choice((3, 3, 4))]]
    unused = list(leaves)
    made: list = []
    steps = len(leaves) - 1 if level == 1 else rng.choice((3, 4))
    for step in range(steps):
        last = step == steps - 1
        node = _operation(rng, level, leaves + made, unused, last)
        if node is None:
            return None
        node.label = "L" if last else "?"  # named once the graph is kept
        made.append(node)
        unused = [n for n in unused if n not in node.parents] + [node]
    root = made[-1]
    if len(unused) != 1 or not _has_shape(level, root) or not _moderate(root):
        return None
    return root


def _operation(rng, level, pool, unused, last):
    """A new node taking its inputs from ``pool``, preferring the ``unused`` ones."""
    if last and len(unused) > 2:
        return None
    if level == 4 and not last and rng.random() < 0.35:
        return _unary(rng.choice(("tanh", "exp", "log")), rng.choice(unused))
    first = rng.choice(unused)
    others = [n for n in unused if n is not first]
    if level == 1 or (others and (last or rng.random() < 0.6)):
        if not others:
            return None
        second = rng.choice(others)
    elif level >= 3 and rng.random() < 0.3:
        second = first  # a value used twice, as in a * a
    else:
        second = rng.choice([n for n in pool if n is not first])
    op = "*" if second is first else rng.choice(BINARY + (("/",) if level == 4 else ()))
    a, b = (first, second) if rng.random() < 0.5 else (second, first)
    if op == "/" and abs(b.data) < 0.5:
        return None
    return OPERATIONS[op](a, b)


def _unary(op, x):
    if op == "log" and x.data < 0.25:
        return None
    if op == "exp" and x.data > 2:
        return None
    return getattr(x, op)()


def _has_shape(level, root):
    """Whether the graph shows what its level teaches."""
    order = topological_order(root)
    edges = [(parent, child) for child in order for parent in child.parents]
    fan = {node: sum(1 for parent, _ in edges if parent is node) for node in order}
    if level == 1:
        return all(count <= 1 for count in fan.values())
    if level == 2:
        return any(fan[n] >= 2 and not n.parents for n in order)
    if level == 3:
        twice = any(len(n.parents) == 2 and n.parents[0] is n.parents[1] for n in order)
        return twice or any(fan[n] >= 2 and n.parents for n in order)
    return any(n.op in ("tanh", "exp", "log", "/") for n in order) and max(fan.values()) >= 2


def _moderate(root):
    """Every value and gradient finite and at most LARGEST in size, and not vanishingly small."""
    order = topological_order(root)
    root.zero_grad()
    root.backward()
    numbers = [n.data for n in order] + [n.grad for n in order]
    ok = all(math.isfinite(x) and abs(x) <= LARGEST for x in numbers)
    ok = ok and all(abs(n.grad) >= 0.01 for n in order)
    root.zero_grad()
    return ok
