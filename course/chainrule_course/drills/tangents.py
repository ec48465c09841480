"""The forward chapter's drills: a node's tangent in a direction, and one operation on dual numbers.

Both take their answers from the chapter's :class:`chainrule.forward.Dual`:

* ``tangent``: the tangent of a node of a graph of :mod:`.graphs` when the inputs move in
  a given direction (a JVP), found by running the graph's evaluation trace
  (:func:`chainrule.forward.evaluation_trace`) on Duals. Named mistakes: the node's value,
  its reverse-mode gradient ∂L/∂node, the part of one input only, and a slip in one node's
  rule on the way: the subtracted tangent added, the tangents multiplied, one term of the
  product rule, the quotient rule without its square or with its numerator reversed, the
  local derivative of tanh, exp or log left out, tanh′ at the input, log′ as x.
* ``dual``: the tangent of one operation on two dual numbers. Named mistakes: the primal,
  the tangent's sign for + and −, the product of the tangents, the δ² term kept, one term of
  the product rule, the 2 of x² left out, the quotient rule without its square, the tangents
  divided, the numerator reversed, the local derivative without the input's tangent, tanh′ at
  the input or with the sign of tanh² flipped, log′ as x.

Each answer is also written by hand as a derivation whose steps offer these slips (:func:`_carry`,
:func:`_dual_tangent`): the mistakes are generated from it (:func:`.problems.derived`), and a wrong
answer is named only when one slip alone gives it.
"""

import math
import operator
import random

from chainrule.forward import Dual, evaluation_trace, run_trace

from .graphs import LEVELS, factor_text, make_graph, number_text
from .problems import Mistake, Problem, derived, distinct
from .reading import close
from .registry import drill

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


@drill("tangent", "forward", "a node's tangent (a JVP)", LEVELS, "number")
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
    instance = tangent_instance(graph, direction, name)
    said = [(short, words) for step in _tangent_words(instance).values() for short, words in step.items()]
    mistakes = _merged(derived(_carry, instance, {words: SAME_NAME.get(short, short) for short, words in said}))
    shown = ", ".join(f"{leaf}{DOT} = {number_text(direction[leaf])}" for leaf in leaves)
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


#: Slips named as another: either term of the product rule left out is one mistake.
SAME_NAME = {"the other term of the product rule": "one term of the product rule"}


def _merged(mistakes):
    """``mistakes`` with those of one name and one answer made one: a slip of the same kind at two nodes that gives
    the same tangent is said at both nodes, since the answer cannot tell which was made."""
    kept: list[Mistake] = []
    for mistake in mistakes:
        same = next((m for m in kept if m.name == mistake.name and close(m.value, mistake.value)), None)
        if same is None:
            kept.append(Mistake(mistake.value, mistake.message, mistake.name))
        else:
            same.message += f" Or: {mistake.message}"
    return kept


def tangent_instance(graph, direction, name):
    """What :func:`_carry` reads: the graph, the direction by input, the node asked about, every node's
    value and (for the reverse-mode slip) its gradient ∂L/∂node, by name."""
    graph.root.zero_grad()
    graph.root.backward()
    grads = {node.label: node.grad for node in graph.order}
    graph.root.zero_grad()
    return {"graph": graph, "direction": direction, "node": name, "grads": grads}


def x_twice(node):
    """Whether ``node`` uses one value twice, as in ``a * a``."""
    return len(node.parents) == 2 and node.parents[0] is node.parents[1]


def _rule_words(node):
    """The words of the slips of one node's tangent rule, by the mistake's name (none for a sum)."""
    at = f"At {node.label} = "
    parts = [p.label for p in node.parents]
    dots = [f"{p}{DOT}" for p in parts]
    if node.op == "+":
        return {}
    if node.op == "-":
        a, b = dots
        return {
            "the subtracted tangent added": f"{at}{parts[0]} \u2212 {parts[1]}, that adds {b}: {parts[1]} is "
            f"subtracted, so its tangent is too: {a} \u2212 {b}."
        }
    if node.op == "*" and x_twice(node):
        a, x = dots[0], parts[0]
        return {
            "the tangents multiplied": f"{at}{x} \u00b7 {x}, that multiplies the tangents. Its tangent is "
            f"2{x}\u00b7{a}.",
            "one term of the product rule": f"{at}{x} \u00b7 {x}, that is {x}\u00b7{a} once: {x} is used twice, "
            f"so the product rule adds {x}\u00b7{a} twice, 2{x}\u00b7{a}.",
        }
    if node.op == "*":
        (a, b), (x, y) = dots, parts
        return {
            "the tangents multiplied": f"{at}{x} \u00b7 {y}, that multiplies the tangents. A product's tangent is "
            f"{a}\u00b7{y} + {x}\u00b7{b}.",
            "one term of the product rule": f"{at}{x} \u00b7 {y}, that is {a}\u00b7{y} alone: add {x}\u00b7{b}, "
            f"the part from {y} moving.",
            "the other term of the product rule": f"{at}{x} \u00b7 {y}, that is {x}\u00b7{b} alone: add "
            f"{a}\u00b7{y}, the part from {x} moving.",
        }
    if node.op == "/":
        (a, b), (x, y) = dots, parts
        rule = f"({a}\u00b7{y} \u2212 {x}\u00b7{b})/{y}\u00b2"
        return {
            "the divisor, not its square": f"{at}{x} / {y}, the quotient rule divides by {y}\u00b2, not {y}: {rule}.",
            "the numerator reversed": f"{at}{x} / {y}, the numerator's terms are the other way round: {rule}.",
        }
    a, x = dots[0], parts[0]
    local = {"tanh": f"1 \u2212 {node.label}\u00b2", "exp": node.label, "log": f"1/{x}"}[node.op]
    words = {
        "the local derivative left out": f"{at}{node.op}({x}), that passes {a} on alone: multiply it by the "
        f"local derivative {local}."
    }
    if node.op == "tanh":
        words["tanh\u2032 at the input"] = (
            f"{at}tanh({x}), that is (1 \u2212 {x}\u00b2)\u00b7{a}: tanh\u2032 is 1 \u2212 tanh\u00b2, of the "
            f"output, so the tangent is (1 \u2212 {node.label}\u00b2)\u00b7{a}."
        )
    if node.op == "log":
        words["log\u2032 as x, not 1/x"] = (
            f"{at}log({x}), that multiplies {a} by {x}: log\u2032 is 1/{x}, so the tangent is {a}/{x}."
        )
    return words


def _tangent_words(d):
    """The words of each slip of :func:`_carry` on the instance ``d``: by step, each by the mistake's name."""
    graph, name = d["graph"], d["node"]
    words = {node.label: _rule_words(node) for node in graph.results()}
    first = next(leaf for leaf in sorted(d["direction"]) if d["direction"][leaf] != 0)
    words["the direction"] = {
        "one input only": f"That is the part that comes from {first} alone: every input that moves adds its part."
    }
    words["the tangent"] = {
        "the value": f"That is the value of {name}; its tangent is how fast it moves.",
        "the reverse-mode gradient": f"That is \u2202L/\u2202{name}, what reverse mode gives: how L moves with "
        f"{name}. The tangent is how {name} moves with the inputs.",
    }
    return words


def _rule(node, tangents, said, at):
    """The tangent of one node from its inputs' (ċ = ȧ + ḃ, ȧb + aḃ, ...), with the slips of its rule."""
    xs = [p.data for p in node.parents]
    ts = [tangents[p.label] for p in node.parents]
    c, op = node.data, node.op
    slips = {}
    if op == "+":
        right = ts[0] + ts[1]
    elif op == "-":
        right, slips = ts[0] - ts[1], {"the subtracted tangent added": ts[0] + ts[1]}
    elif op == "*":
        right = ts[0] * xs[1] + xs[0] * ts[1]
        slips = {
            "the tangents multiplied": ts[0] * ts[1],
            "one term of the product rule": ts[0] * xs[1],
        }
        if not x_twice(node):  # for x·x, either term left out is the same slip
            slips["the other term of the product rule"] = xs[0] * ts[1]
    elif op == "/":
        right = (ts[0] - c * ts[1]) / xs[1]
        slips = {"the divisor, not its square": ts[0] - c * ts[1], "the numerator reversed": -right}
    else:
        right = ts[0] / xs[0] if op == "log" else (1.0 - c * c if op == "tanh" else c) * ts[0]
        slips = {"the local derivative left out": ts[0]}
        slips |= {"tanh\u2032 at the input": (1.0 - xs[0] ** 2) * ts[0]} if op == "tanh" else {}
        slips |= {"log\u2032 as x, not 1/x": xs[0] * ts[0]} if op == "log" else {}
    return at.choose(node.label, right, {said[short]: value for short, value in slips.items()})


def _carry(d, at):
    """A node's tangent, carried by hand from the inputs through every node in the forward order, with the
    slips of each node's rule, of the direction (one input only) and of what is asked (its value, ∂L/∂node)."""
    words, direction = _tangent_words(d), d["direction"]
    first = next(leaf for leaf in sorted(direction) if direction[leaf] != 0)
    alone = {leaf: v if leaf == first else 0.0 for leaf, v in direction.items()}
    if alone != direction:
        direction = at.choose("the direction", direction, {words["the direction"]["one input only"]: alone})
    tangents = dict(direction)
    for node in d["graph"].results():
        tangents[node.label] = _rule(node, tangents, words[node.label], at)
    node = d["graph"].nodes[d["node"]]
    slips = {words["the tangent"]["the value"]: node.data}
    if node is not d["graph"].root:  # at L, reverse mode's gradient is 1, not a mistake worth a name
        slips[words["the tangent"]["the reverse-mode gradient"]] = d["grads"][d["node"]]
    return at.choose("the tangent", tangents[d["node"]], slips)


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


@drill(
    "dual",
    "forward",
    "one operation on dual numbers",
    {1: "sums and products", 2: "products, quotients, squares", 3: "tanh, exp, log"},
    "number",
)
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
    instance = {"op": op, "x": (x0, dx), "y": (y0, dy)}
    said = _dual_words(op, x0, dx)
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
        derived(_dual_tangent, instance, {words: SAME_NAME.get(short, short) for short, words in said.items()}),
        data=instance,
    )


def _dual_words(op, x0, dx):
    """The words of each slip of :func:`_dual_tangent` for ``op`` (x = x0 + dx·δ), by the mistake's name."""
    shown = SHOWN.get(op, f"{op}(x)")
    words = {"the primal": f"That is the primal, the value of {shown}; the tangent is the \u03b4 part."}
    if op == "+":
        words["\u1e8f subtracted"] = "y is added, so its tangent is too: \u1e8b + \u1e8f."
    if op == "-":
        words["\u1e8f added"] = "y is subtracted, so its tangent is too: \u1e8b \u2212 \u1e8f."
    if op in ("*", "**2"):
        words["the tangents multiplied"] = f"That multiplies the tangents. The tangent of {shown} is {RULES[op]}."
        words["the \u03b4\u00b2 term kept"] = (
            f"That keeps the \u03b4\u00b2 term of {shown}: \u03b4\u00b2 = 0, so the tangent is {RULES[op]}."
        )
    if op == "*":
        words["one term of the product rule"] = "That is \u1e8by alone: add x\u1e8f, the part from y moving."
        words["the other term of the product rule"] = "That is x\u1e8f alone: add \u1e8by, the part from x moving."
    if op == "**2":
        words["the 2 left out"] = (
            "That is x\u00b7\u1e8b: (x + \u1e8b\u03b4)\u00b2 has the cross term twice, 2x\u1e8b\u03b4."
        )
    if op == "/":
        words["y, not y\u00b2"] = "The quotient rule divides by y\u00b2, not y."
        words["the tangents divided"] = f"That divides the tangents. The tangent of x/y is {RULES['/']}."
        words["the numerator reversed"] = f"The numerator's terms are the other way round: {RULES['/']}."
    if op not in "+-*/":
        words["\u1e8b left out"] = f"That is the local derivative alone; multiply it by \u1e8b = {number_text(dx)}."
    if op == "tanh":
        words["tanh\u2032 at the input"] = (
            "That is (1 \u2212 x\u00b2)\u00b7\u1e8b: tanh\u2032 is 1 \u2212 tanh\u00b2x, so the tangent is "
            "(1 \u2212 tanh\u00b2x)\u00b7\u1e8b."
        )
        words["the sign of tanh\u00b2"] = "That is (1 + tanh\u00b2x)\u00b7\u1e8b: tanh\u2032 is 1 \u2212 tanh\u00b2x."
    if op == "log":
        words["x\u1e8b for \u1e8b/x"] = "That multiplies \u1e8b by x: log\u2032 is 1/x, so the tangent is \u1e8b/x."
    return words


def _dual_tangent(d, at):
    """The tangent of ``x op y`` or ``f(x)``, derived by hand from the rule of ``op``, with its slips."""
    op, (x0, dx), (y0, dy) = d["op"], d["x"], d["y"]
    said = _dual_words(op, x0, dx)
    primal = APPLY[op](x0, y0) if op in SHOWN else getattr(math, op)(x0)
    slips = {}
    if op in "+-":
        sign = 1.0 if op == "+" else -1.0
        right, slips = dx + sign * dy, {"\u1e8f subtracted" if op == "+" else "\u1e8f added": dx - sign * dy}
    elif op == "*":
        right = dx * y0 + x0 * dy
        slips = {
            "the tangents multiplied": dx * dy,
            "the \u03b4\u00b2 term kept": right + dx * dy,
            "one term of the product rule": dx * y0,
            "the other term of the product rule": x0 * dy,
        }
    elif op == "**2":
        right = 2 * x0 * dx
        slips = {"the tangents multiplied": dx * dx, "the \u03b4\u00b2 term kept": right + dx * dx}
        slips |= {"the 2 left out": x0 * dx}
    elif op == "/":
        right = (dx * y0 - x0 * dy) / y0**2
        slips = {"y, not y\u00b2": right * y0, "the tangents divided": dx / dy, "the numerator reversed": -right}
    else:
        local = 1 / x0 if op == "log" else 1 - primal**2 if op == "tanh" else primal  # x0 > 0 for log
        right, slips = local * dx, {"\u1e8b left out": local}
        if op == "tanh":
            slips |= {"tanh\u2032 at the input": (1 - x0**2) * dx, "the sign of tanh\u00b2": (1 + primal**2) * dx}
        if op == "log":
            slips["x\u1e8b for \u1e8b/x"] = x0 * dx
    right = at.choose(f"the rule of {op}", right, {said[short]: value for short, value in slips.items()})
    return at.choose("the \u03b4 part", right, {said["the primal"]: primal})


def _dual_text(primal, tangent):
    """``3 − δ``, ``0.5 + 2δ``: a dual number as a person writes it."""
    sign = "\u2212" if tangent < 0 else "+"
    size = abs(tangent)
    return f"{number_text(primal)} {sign} {'' if size == 1 else number_text(size)}\u03b4"
