"""The forward chapter's drills: a node's tangent in a direction, and one operation on dual numbers.

Both take their answers from the chapter's :class:`chainrule.forward.Dual`:

* ``tangent``: the tangent of a node of a graph of :mod:`.graphs` when the inputs move in
  a given direction (a JVP), found by running the graph's evaluation trace
  (:func:`chainrule.forward.evaluation_trace`) on Duals. Named mistakes: the node's value,
  its reverse-mode gradient ∂L/∂node, and the part of one input only.
* ``dual``: the tangent of one operation on two dual numbers. Named mistakes: the product
  of the tangents, one term of the product rule, the quotient rule without its square, the
  local derivative without the input's tangent.
"""

import operator
import random

from chainrule.forward import Dual, evaluation_trace, run_trace

from .graphs import factor_text, make_graph, number_text
from .problems import Mistake, Problem, distinct

__all__ = ["dual", "tangent"]

DIRECTIONS = (-1.0, 0.5, 1.0, 2.0)
DOT = "\u0307"  # a combining dot above: "a" + DOT reads ȧ


def _tangents(graph, direction):
    """Every node's tangent, by name, for the leaves moving at ``direction`` (a dict by name)."""
    leaves = graph.leaves()
    steps = evaluation_trace(graph.root, leaves)
    values = run_trace(steps, [Dual(leaf.data, direction[leaf.label]) for leaf in leaves])
    results = [step.name for step in steps if step.op != "input"]
    found = {leaf.label: direction[leaf.label] for leaf in leaves}
    for node, name in zip(graph.results(), results, strict=True):
        found[node.label] = values[name].tangent
    return found


def tangent(level, seed):
    """The tangent of one node, the inputs moving along a direction (one input at levels 1 and 2)."""
    graph = make_graph(seed, level)
    rng = random.Random(f"chainrule-drill-tangent:{level}:{seed}")
    return distinct(lambda: _tangent(graph, rng, level))


def _tangent(graph, rng, level):
    leaves = sorted(leaf.label for leaf in graph.leaves())
    if level <= 2:
        moving = rng.choice(leaves)
        direction = {name: 1.0 if name == moving else 0.0 for name in leaves}
    else:
        direction = {name: rng.choice(DIRECTIONS) for name in leaves}
    moved = _tangents(graph, direction)
    moving_nodes = [n for n in graph.results() if moved[n.label] != 0]  # a node the direction moves
    node = rng.choice(moving_nodes or graph.results())
    name = node.label
    answer = moved[name]
    graph.root.zero_grad()
    graph.root.backward()
    mistakes = [Mistake(node.data, f"That is the value of {name}; its tangent is how fast it moves.", "the value")]
    if node is not graph.root:  # at L, reverse mode's gradient is 1, not a mistake worth a name
        message = (
            f"That is \u2202L/\u2202{name}, what reverse mode gives: how L moves with {name}. "
            f"The tangent is how {name} moves with the inputs."
        )
        mistakes.append(Mistake(node.grad, message, "the reverse-mode gradient"))
    moving = [leaf for leaf in leaves if direction[leaf] != 0]
    if len(moving) > 1:
        first = moving[0]
        alone = {leaf: direction[leaf] if leaf == first else 0.0 for leaf in leaves}
        mistakes.append(
            Mistake(
                _tangents(graph, alone)[name],
                f"That is the part that comes from {first} alone: every input that moves adds its part.",
                "one input only",
            )
        )
    shown = ", ".join(f"{leaf}{DOT} = {number_text(direction[leaf])}" for leaf in leaves)
    moved = _tangents(graph, direction)
    return Problem(
        "tangent",
        f"The inputs move in the direction {shown}. What is the tangent {name}{DOT} of {name}?",
        graph.description(),
        answer,
        [
            f"{graph.formula(node)}. Carry a tangent through every node from the inputs to {name}.",
            "Each operation's tangent is its local gradients times its inputs' tangents, added up.",
        ],
        [f"{n.label}{DOT} = {number_text(moved[n.label])}  ({graph.formula(n)})" for n in graph.results()],
        mistakes,
        words="The graph in words:",
        graph=graph.root,
        data={"direction": direction, "node": name},
    )


PRIMALS = (-2.0, -1.5, -1.0, -0.5, 0.5, 1.0, 1.5, 2.0, 3.0)
OPERATIONS = {1: ("+", "-", "*"), 2: ("*", "/", "**2"), 3: ("tanh", "exp", "log")}
APPLY = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "**2": lambda x, y: x**2,
    "tanh": lambda x, y: x.tanh(),
    "exp": lambda x, y: x.exp(),
    "log": lambda x, y: x.log(),
}
SHOWN = {"+": "x + y", "-": "x \u2212 y", "*": "x \u00b7 y", "/": "x / y", "**2": "x\u00b2"}
RULES = {
    "+": "\u1e8b + \u1e8f",
    "-": "\u1e8b \u2212 \u1e8f",
    "*": "\u1e8by + x\u1e8f",
    "/": "(\u1e8by \u2212 x\u1e8f)/y\u00b2",
    "**2": "2x\u00b7\u1e8b",
    "tanh": "(1 \u2212 tanh\u00b2x)\u00b7\u1e8b",
    "exp": "exp(x)\u00b7\u1e8b",
    "log": "\u1e8b/x",
}


def dual(level, seed):
    """The tangent of ``x op y`` (levels 1 and 2) or ``f(x)`` (level 3) on dual numbers."""
    rng = random.Random(f"chainrule-drill-dual:{level}:{seed}")
    return distinct(lambda: _dual(rng, level))


def _dual(rng, level):
    op = rng.choice(OPERATIONS[level])
    x0, y0 = rng.choice(PRIMALS), rng.choice(PRIMALS)
    if op == "log":
        x0 = abs(x0)
    dx, dy = rng.choice(DIRECTIONS), rng.choice(DIRECTIONS)
    made = APPLY[op](Dual(x0, dx), Dual(y0, dy))
    answer = made.tangent
    shown = SHOWN.get(op, f"{op}(x)")
    lines = [f"x = {_dual_text(x0, dx)}"]
    if op in "+-*/":
        lines.append(f"y = {_dual_text(y0, dy)}")
    return Problem(
        "dual",
        f"With the dual numbers below (\u03b4\u00b2 = 0), what is the tangent (the \u03b4 part) of {shown}?",
        lines,
        answer,
        [
            "Multiply out, dropping every \u03b4\u00b2 term."
            if op in SHOWN
            else "f(x + \u1e8b\u03b4) = f(x) + f\u2032(x)\u00b7\u1e8b\u03b4: the tangent is f\u2032(x)\u00b7\u1e8b.",
            f"{RULES[op]} is the tangent.",
        ],
        [
            f"{shown} = {number_text(made.primal)} + {factor_text(answer)}\u03b4, "
            f"so its tangent is {number_text(answer)}."
        ],
        _dual_mistakes(op, (x0, dx), (y0, dy), made),
        data={"op": op, "x": (x0, dx), "y": (y0, dy)},
    )


def _dual_mistakes(op, x, y, made):
    """The mistakes of one operation on dual numbers ``x`` and ``y``, each a (primal, tangent) pair."""
    (x0, dx), (y0, dy) = x, y
    mistakes = []
    if op == "*":
        mistakes += [
            Mistake(
                dx * dy,
                f"That multiplies the tangents. A product's tangent is {RULES['*']}.",
                "the tangents multiplied",
            ),
            Mistake(
                dx * y0, "That is \u1e8by alone: add x\u1e8f, the part from y moving.", "one term of the product rule"
            ),
            Mistake(
                x0 * dy, "That is x\u1e8f alone: add \u1e8by, the part from x moving.", "one term of the product rule"
            ),
        ]
    if op == "/":
        mistakes += [
            Mistake((dx * y0 - x0 * dy) / y0, "The quotient rule divides by y\u00b2, not y.", "y, not y\u00b2"),
            Mistake(dx / dy, f"That divides the tangents. The tangent of x/y is {RULES['/']}.", "the tangents divided"),
            Mistake(
                (x0 * dy - dx * y0) / y0**2,
                f"The numerator's terms are the other way round: {RULES['/']}.",
                "the numerator reversed",
            ),
        ]
    if op == "-":
        mistakes.append(
            Mistake(dx + dy, "y is subtracted, so its tangent is too: \u1e8b \u2212 \u1e8f.", "\u1e8f added")
        )
    if op not in "+-*/":
        local = made.tangent / dx
        message = f"That is the local derivative alone; multiply it by \u1e8b = {number_text(dx)}."
        mistakes.append(Mistake(local, message, "\u1e8b left out"))
    shown = SHOWN.get(op, f"{op}(x)")
    message = f"That is the primal, the value of {shown}; the tangent is the \u03b4 part."
    mistakes.append(Mistake(made.primal, message, "the primal"))
    return mistakes


def _dual_text(primal, tangent):
    """``3 − δ``, ``0.5 + 2δ``: a dual number as a person writes it."""
    sign = "\u2212" if tangent < 0 else "+"
    size = abs(tangent)
    return f"{number_text(primal)} {sign} {'' if size == 1 else number_text(size)}\u03b4"
