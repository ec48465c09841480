"""Graphs that several tiers' tests build: the seed's graph and the backward chapter's example."""

from chainrule import Value
from chainrule_course.exercises.scalar import EXAMPLE_GRAPH

# The graph of seed 001 (Chapter 2's, which exercise 2.2's check uses) and the lines its
# recursive search printed for root "f": "v [...]" after each visit, "t [...]" after each
# finish, in this order.
SEED_PARENTS = EXAMPLE_GRAPH
SEED_PRINTED = [
    ("v", ["f"]),
    ("v", ["f", "d"]),
    ("v", ["f", "d", "x"]),
    ("t", ["x"]),
    ("v", ["f", "d", "x", "c"]),
    ("v", ["f", "d", "x", "c", "a"]),
    ("t", ["x", "a"]),
    ("v", ["f", "d", "x", "c", "a", "b"]),
    ("t", ["x", "a", "b"]),
    ("t", ["x", "a", "b", "c"]),
    ("t", ["x", "a", "b", "c", "d"]),
    ("t", ["x", "a", "b", "c", "d", "f"]),
]


def seed_as_values():
    """The seed's dict graph built from Values, parents in the same order."""
    a, b, x = Value(1.0, "a"), Value(2.0, "b"), Value(3.0, "x")
    c = a * b
    c.label = "c"
    d = x + c
    d.label = "d"
    e = c.exp()  # uses c, but f does not depend on e
    e.label = "e"
    f = d.relu()
    f.label = "f"
    return f


def worked_example(fan_out=False):
    """The backward chapter's L = tanh(ab + c) at a = 2, b = -0.5, c = 0.5, with its labels;
    with ``fan_out``, its fan-out example L = tanh(ab + a)."""
    a, b, c = Value(2.0, label="a"), Value(-0.5, label="b"), Value(0.5, label="c")
    p = a * b
    p.label = "p"
    n = p + (a if fan_out else c)
    n.label = "n"
    L = n.tanh()
    L.label = "L"
    return L
