"""The checks of exercises answered with a function of a few numbers or of a small graph.

``tanh_neuron_grads(x, w, b)`` (intro), ``dfs_order_with_stack(root, parents)`` (graph),
``cube_grads(x)`` (backward) and ``hypot_jvp(a, a_dot, b, b_dot)``, a forward-mode rule
(forward mode).
The public check calls it on the exercise's input and on one more; the grader's hidden
tests call it on inputs drawn from other seeds. A number or an order copied from a message
is therefore worth nothing, and a message may show the expected value.

The inputs are drawn with :mod:`random`, so these checks need no numpy of their own.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Callable, Collection, Mapping, Sequence

from chainrule.forward import Dual
from chainrule.graph import VISIT, depth_first_events, topological_order
from chainrule.value import Value

from ..grading.contract import allowed, seeded
from .answers import RTOL, AnswerError, check_scalars, require_answer
from .calling import call, returned

# --------------------------------------------------------------------------- intro: y = tanh(wx + b)

#: The point the intro's exercise names; the public check also tries a second one.
NEURON_POINT = (0.5, -2.0, 0.5)


def neuron_points(seed: int) -> list[tuple[float, float, float]]:
    """Two points (x, w, b): the exercise's own for seed 0, else one drawn; then one drawn from ``seed``.

    A drawn point keeps every named mistake apart from the right answer: x and w differ in
    size (swapped), and z = wx + b is neither near 0 (tanh' ≈ 1) nor large (tanh' ≈ 0).
    """
    rng = random.Random(f"neuron {seeded(seed)}")
    drawn = []
    while len(drawn) < 2:
        x, w, b = (round(rng.uniform(-2.0, 2.0), 2) for _ in range(3))
        z = w * x + b
        if min(abs(x), abs(w)) > 0.3 and abs(abs(x) - abs(w)) > 0.3 and 0.3 < abs(z) < 1.5:
            drawn.append((x, w, b))
    return [NEURON_POINT, drawn[1]] if seed == 0 else drawn


#: The derivatives of the intro's exercise, in the order ``tanh_neuron_grads`` returns them.
NEURON_GRADS = ("dy/dx", "dy/dw", "dy/db")
SWAPPED = "dy/dx and dy/dw are swapped: dy/dx carries w and dy/dw carries x"


def one_number(value) -> float | None:
    """``value`` as a float when it is one number (Python's, numpy's or torch's), else None. Needs no numpy."""
    if isinstance(value, (bool, str, bytes)) or getattr(value, "shape", ()) != ():
        return None
    try:
        return float(value)
    except (TypeError, ValueError, RuntimeError):
        return None


def _close(a: float, b: float) -> bool:
    """As :func:`~chainrule_course.exercises.answers.check_scalars` compares a number with a mistake's."""
    return abs(a - b) <= 1e-8 + RTOL * abs(b)


def _order_words(order: tuple[int, ...]) -> str:
    """The mistake of returning the derivatives in ``order`` (the index of the one each place holds), in words."""
    held = [NEURON_GRADS[i] for i in order]
    moved = [name for name, holds in zip(NEURON_GRADS, held, strict=True) if name != holds]
    if moved == ["dy/dx", "dy/dw"]:
        return SWAPPED
    wanted = f"return them in the order ({', '.join(NEURON_GRADS)})"
    if len(moved) == 2:
        return f"{moved[0]} and {moved[1]} are swapped: {wanted}"
    return f"the derivatives are returned rotated, as ({', '.join(held)}): {wanted}"


def _reordered(received: Sequence, expected: Sequence[float]) -> list[tuple[str, dict[str, float]]]:
    """The orders whose derivatives the answer's three numbers are, each as a named mistake (most often none).

    The whole answer is compared, so a rotation is not named as the swap its first number alone would match.
    """
    numbers = [one_number(value) for value in received]
    found = []
    for order in itertools.permutations(range(3)):
        moved = [expected[i] for i in order]
        if all(_close(m, e) for m, e in zip(moved, expected, strict=True)):
            continue  # the right order, or one that gives the same numbers
        if all(n is not None and _close(n, m) for n, m in zip(numbers, moved, strict=True)):
            found.append((_order_words(order), dict(zip(NEURON_GRADS, moved, strict=True))))
    return found


def check_tanh_neuron_grads(dy_dx, dy_dw, dy_db, x: float, w: float, b: float, title: str = "") -> None:
    """The three derivatives of y = tanh(wx + b), against chainrule's backward pass at (x, w, b).

    An answer that is the right three numbers in another order is named by that order; a dy/dx or a
    dy/dw alone that carries the other one's input is named as the two swapped.
    """
    xv, wv, bv = Value(x), Value(w), Value(b)
    (wv * xv + bv).tanh().backward()
    z = w * x + b
    slope = 1 - math.tanh(z) ** 2
    swapped = [(SWAPPED, {"dy/dx": slope * x, "dy/dw": slope * w})]
    check_scalars(
        {"dy/dx": dy_dx, "dy/dw": dy_dw, "dy/db": dy_db},
        {"dy/dx": xv.grad, "dy/dw": wv.grad, "dy/db": bv.grad},
        [
            ("the factor tanh'(z) = 1 - tanh²(z) is missing", {"dy/dx": w, "dy/dw": x, "dy/db": 1.0}),
            (
                "tanh'(z) is 1 - tanh²(z), not 1 - z²",
                {"dy/dx": (1 - z**2) * w, "dy/dw": (1 - z**2) * x, "dy/db": 1 - z**2},
            ),
            *(_reordered((dy_dx, dy_dw, dy_db), (xv.grad, wv.grad, bv.grad)) or swapped),
            ("the sign is flipped", {"dy/dx": -slope * w, "dy/dw": -slope * x, "dy/db": -slope}),
            (
                "tanh(z) was used for tanh'(z), but the derivative of tanh is 1 - tanh²(z)",
                {"dy/dx": math.tanh(z) * w, "dy/dw": math.tanh(z) * x, "dy/db": math.tanh(z)},
            ),
            (
                "the factor is 1 - tanh(z)², with z = wx + b, not 1 - tanh(x)²",
                {
                    "dy/dx": (1 - math.tanh(x) ** 2) * w,
                    "dy/dw": (1 - math.tanh(x) ** 2) * x,
                    "dy/db": 1 - math.tanh(x) ** 2,
                },
            ),
        ],
        title=title,
    )


@allowed("math")
def check_tanh_neuron_grads_function(tanh_neuron_grads: Callable, seed: int = 0) -> None:
    """``tanh_neuron_grads(x, w, b)`` must return (dy/dx, dy/dw, dy/db) of y = tanh(wx + b), at two points."""
    for x, w, b in neuron_points(seed):
        title = f"tanh_neuron_grads({x}, {w}, {b})"
        result = call("tanh_neuron_grads", tanh_neuron_grads, x, w, b, names=("x", "w", "b"))
        dy_dx, dy_dw, dy_db = returned("tanh_neuron_grads", result, ("dy_dx", "dy_dw", "dy_db"))
        check_tanh_neuron_grads(dy_dx, dy_dw, dy_db, x, w, b, title=title)


# --------------------------------------------------------------------------- backward: y = (x·x)·x

CUBE_POINT = 1.3


def cube_points(seed: int) -> list[float]:
    """Two values of x: the exercise's own x = 1.3 for seed 0, else one drawn; then one drawn from ``seed``.

    A drawn x is at least 0.3 away from 0, 1 and -1, where x, x² and 3x² would coincide.
    """
    rng = random.Random(f"cube {seeded(seed)}")
    drawn = []
    while len(drawn) < 2:
        x = round(rng.uniform(-2.5, 2.5), 2)
        if min(abs(x), abs(abs(x) - 1)) > 0.3:
            drawn.append(x)
    return [CUBE_POINT, drawn[1]] if seed == 0 else drawn


def check_cube_grads(dy_ds, dy_dx, x: float, title: str = "") -> None:
    """dy/ds and dy/dx for s = x·x, y = s·x, against chainrule's backward pass at x."""
    xv = Value(x)
    s = xv * xv
    (s * xv).backward()
    check_scalars(
        {"dy/ds": dy_ds, "dy/dx": dy_dx},
        {"dy/ds": s.grad, "dy/dx": xv.grad},
        [
            ("dy/ds is the gradient s.grad = x, not the value s = x·x", {"dy/ds": x**2}),
            (
                "a lost fan-out contribution: x also feeds y directly (y = s·x), which adds s = x² to dy/dx",
                {"dy/dx": 2 * x**2},
            ),
            (
                "lost fan-out contributions: x feeds s twice (s = x·x), and each use adds x·dy/ds to dy/dx, "
                "but only the direct term s = x² was counted",
                {"dy/dx": x**2},
            ),
            (
                "a backward loop run in forward order: it passes s's gradient on to x before y has given s its "
                "gradient, so only the direct term s = x² reaches x",
                {"dy/dx": x**2},
            ),
            ("the sign is flipped", {"dy/ds": -x, "dy/dx": -3 * x**2}),
            ("dy/ds and dy/dx are swapped: return them in that order, (dy/ds, dy/dx)", {"dy/ds": 3 * x**2, "dy/dx": x}),
            (
                "every gradient is doubled: backward() ran twice without zero_grad() in between, and "
                "gradients accumulate",
                {"dy/ds": 2 * x, "dy/dx": 6 * x**2},
            ),
        ],
        title=title or f"at x = {x}",
    )


@allowed("math")
def check_cube_grads_function(cube_grads: Callable, seed: int = 0) -> None:
    """``cube_grads(x)`` must return (dy/ds, dy/dx) for s = x·x and y = s·x, at two values of x."""
    for x in cube_points(seed):
        result = call("cube_grads", cube_grads, x, names=("x",))
        dy_ds, dy_dx = returned("cube_grads", result, ("dy_ds", "dy_dx"))
        check_cube_grads(dy_ds, dy_dx, x, title=f"cube_grads({x})")


# --------------------------------------------------------------------------- graph: the order of a DFS

#: The graph of Chapter 2: each node's parents (inputs), in the order the search visits them.
EXAMPLE_GRAPH = {"a": [], "b": [], "x": [], "c": ["a", "b"], "d": ["x", "c"], "e": ["c"], "f": ["d"]}
#: Two paths lead to a: a search must not list it twice.
DIAMOND = {"a": [], "b": ["a"], "c": ["a"], "d": ["b", "c"]}
#: Longer than Python's recursion limit (1,000 frames by default): a recursive search fails on it.
#: Fixed, not read from sys.getrecursionlimit(): the grader replays the calls by their inputs.
CHAIN_LENGTH = 5_000


def _brief(order: Sequence) -> str:
    """An order as a message shows it: all of it when short, else its ends."""
    order = list(order)
    if len(order) <= 12:
        return str(order)
    return f"[{', '.join(map(repr, order[:4]))}, ... {len(order) - 8} more ..., {', '.join(map(repr, order[-4:]))}]"


def _breadth_first(parents: Mapping[str, Sequence[str]], root: str) -> list:
    """The order in which a breadth-first search (a queue) first reaches the nodes, root first."""
    order, seen = [root], {root}
    for node in order:  # the list is the queue: it grows while the loop walks it
        for parent in parents[node]:
            if parent not in seen:
                seen.add(parent)
                order.append(parent)
    return order


REVERSED = "the order is reversed"


def _other_orders(parents: Mapping[str, Sequence[str]], root: str) -> list[tuple[list, str, str]]:
    """The orders that known mistakes give, each with its name and how to mend it, most likely first."""
    visits = [node for event, node in depth_first_events(root, lambda node: parents[node]) if event == VISIT]
    reversed_parents = topological_order(root, parents_of=lambda node: list(reversed(parents[node])))
    breadth_first = _breadth_first(parents, root)
    return [
        (
            topological_order(root, parents_of=lambda node: parents[node])[::-1],
            REVERSED,
            f"a topological order lists every node after its inputs, leaves first and {root} last; "
            "the backward pass walks it in reverse",
        ),
        (
            visits,
            "the order in which the search first visits the nodes (pre-order)",
            "a node joins the order when it finishes, after all of its parents, not when it is first reached",
        ),
        (
            reversed_parents,
            "a search that takes each node's parents last first",
            "pushing all of a node's parents on a stack and popping them takes the last one first; "
            "visit them in the order they are listed",
        ),
        (
            breadth_first[::-1],
            "a breadth-first search (a queue), reversed",
            "a queue takes the nodes level by level, and the reverse of that can put a node before an input that "
            "a longer path reaches; search depth-first instead, always going on from the last node of the path",
        ),
        (
            breadth_first,
            "the order in which a breadth-first search (a queue) first reaches the nodes",
            "search depth-first instead, always going on from the last node of the path, and add a node to the "
            "order when it finishes, after all of its parents",
        ),
    ]


def _as_order(answer) -> list | None:
    """An answer as the list of nodes it holds, or None when it is not a sequence of them."""
    if answer is None or isinstance(answer, (str, bytes)) or not isinstance(answer, Sequence):
        return None
    return list(answer)


def _mistakes_in(order: list, parents: Mapping[str, Sequence[str]], root: str) -> list[tuple[str, str]]:
    """The known mistakes (name, mend) that give ``order`` on this graph, most likely first."""
    expected = topological_order(root, parents_of=lambda node: parents[node])
    return [(mistake, mend) for other, mistake, mend in _other_orders(parents, root) if order == other != expected]


def check_topological_order(
    order, parents: Mapping[str, Sequence[str]], root: str, title: str = "", ruled_out: Collection[str] = ()
) -> None:
    """``order`` must be the depth-first topological order of the nodes ``root`` depends on (leaves first).

    ``parents`` maps each node to its inputs, in the order the search visits them. The known
    mistakes that give ``order`` are named, all of them when several do, except those in
    ``ruled_out`` (which the same answer's orders on other graphs do not fit).
    """
    expected = topological_order(root, parents_of=lambda node: parents[node])
    name = "order"
    require_answer(name, order)
    head = f"{title}: " if title else ""
    if _as_order(order) is None:
        example = f"a list of node names such as {expected[:2]}"
        raise AnswerError(name, f"{head}the order should be {example}, got {order!r:.80}.")
    order = list(order)
    if order == expected:
        return
    said = f"Expected {_brief(expected)}, received {_brief(order)}."
    found = [(mistake, mend) for mistake, mend in _mistakes_in(order, parents, root) if mistake not in ruled_out]
    if [mistake for mistake, _ in found] == [REVERSED]:  # what the order is, more than how it came about
        mend = found[0][1]
        raise AnswerError(name, f"{head}{REVERSED}: {_brief(order)}. {mend[0].upper()}{mend[1:]}.", REVERSED)
    if len(found) == 1:
        raise AnswerError(name, f"{head}this is {found[0][0]}: {found[0][1]}. {said}", found[0][0])
    if found:
        listed = "; or ".join(f"({number}) {mistake}: {mend}" for number, (mistake, mend) in enumerate(found, 1))
        raise AnswerError(
            name,
            f"{head}{len(found)} known mistakes give this order on this graph, most likely first: {listed}. {said}",
            found[0][0],
        )
    _check_nodes(name, head, order, expected, root, said)
    position = {node: index for index, node in enumerate(order)}
    for node in order:
        for parent in parents[node]:
            if position[parent] > position[node]:
                raise AnswerError(
                    name,
                    f"{head}{node} comes before its input {parent}: every node must come after its inputs. {said}",
                    "a node before its input",
                )
    first = next(i for i, (a, b) in enumerate(zip(order, expected, strict=True)) if a != b)
    raise AnswerError(
        name,
        f"{head}{_brief(order)} is a valid topological order, but not the one depth-first search from "
        f"{root} gives (inputs visited in the order listed): position {first} should be "
        f"{expected[first]}, not {order[first]}. {said}",
    )


def _check_nodes(name: str, head: str, order: list, expected: list, root: str, said: str) -> None:
    """Each node that ``root`` depends on once, and no other."""
    if order in (expected[1:], expected[:-1]) or expected in (order[1:], order[:-1]):
        if len(order) < len(expected):
            which = f"leaves out {expected[0] if order == expected[1:] else expected[-1]}"
        else:
            which = f"has one node too many ({order[0] if order[1:] == expected else order[-1]})"
        raise AnswerError(name, f"{head}the order is off by one: it {which}. {said}", "the order is off by one")
    wanted = set(expected)
    missing = [node for node in expected if node not in order]
    extra = [node for node in order if node not in wanted]
    seen: set = set()
    repeated = [node for node in order if node in seen or seen.add(node)]
    if repeated and not missing and not extra:
        raise AnswerError(
            name,
            f"{head}{_brief(sorted(set(repeated)))} appear more than once: a node that two paths reach joins the "
            f"order once. Keep a set of the nodes already seen. {said}",
            "a node twice",
        )
    if missing or extra or repeated:
        parts = [
            f"missing {_brief(missing)}" if missing else "",
            f"{_brief(extra)} do not lead to {root}" if extra else "",
            f"{_brief(sorted(set(repeated)))} appear more than once" if repeated else "",
        ]
        raise AnswerError(name, f"{head}the order has the wrong nodes: {'; '.join(p for p in parts if p)}. {said}")


def dfs_graphs(seed: int) -> list[tuple[str, dict[str, list[str]], str]]:
    """The graphs a check gives ``dfs_order_with_stack``: (what it is, parents, root).

    Seed 0 gives the exercise's two graphs, a diamond, then a chain too deep for a recursive search.
    Another seed gives two random graphs (their roots reach every node, some by two paths), and a
    deep chain with side inputs.
    """
    chain = {f"n{i}": [f"n{i - 1}"] if i else [] for i in range(CHAIN_LENGTH)}
    if seed == 0:
        return [
            ("the example graph from e", EXAMPLE_GRAPH, "e"),
            ("the example graph from f, with d's parents ['c', 'x']", dict(EXAMPLE_GRAPH, d=["c", "x"]), "f"),
            ("a diamond: d's parents b and c share the input a", DIAMOND, "d"),
            (f"a chain of {CHAIN_LENGTH:,} nodes, n0 to n{CHAIN_LENGTH - 1}", chain, f"n{CHAIN_LENGTH - 1}"),
        ]
    rng = random.Random(f"dfs {seeded(seed)}")
    graphs = []
    for size in (9, 14):
        names = [f"v{i}" for i in rng.sample(range(100), size)]
        parents = {names[0]: []}
        for i, node in enumerate(names[1:], start=1):  # one parent is the node before: the root reaches all
            parents[node] = rng.sample(names[: i - 1], min(i - 1, rng.randint(0, 2))) + [names[i - 1]]
            rng.shuffle(parents[node])
        graphs.append((f"a graph of {size} nodes drawn from seed {seeded(seed)}", parents, names[-1]))
    for i in range(1, CHAIN_LENGTH, 7):
        chain[f"side{i}"] = []
        chain[f"n{i}"] = [f"side{i}", f"n{i - 1}"] if i % 2 else [f"n{i - 1}", f"side{i}"]
    graphs.append((f"a chain of {CHAIN_LENGTH:,} nodes with side inputs", chain, f"n{CHAIN_LENGTH - 1}"))
    return graphs


def _ruled_out(dfs_order_with_stack: Callable, order, graphs: list, index: int) -> set[str]:
    """The known mistakes that give ``order`` on graph ``index`` but not the function's order on another graph.

    Two mistakes can give the same order on a small graph (a reversed breadth-first search and parents
    taken last first do, from e); the other graphs tell them apart, so that a message never names a
    mistake the answer does not make. The function is called on them only when a mistake fits.
    """
    _, parents, root = graphs[index]
    order = _as_order(order)
    fitting = {mistake for mistake, _ in _mistakes_in(order, parents, root)} if order is not None else set()
    ruled_out: set[str] = set()
    for other, (_, parents, root) in enumerate(graphs):
        if other == index or not fitting - ruled_out:
            continue
        try:
            answer = call("dfs_order_with_stack", dfs_order_with_stack, root, parents, names=("root", "parents"))
        except AnswerError:
            continue  # reported when the check comes to that graph
        given = _as_order(answer)
        orders = {mistake: wrong for wrong, mistake, _ in _other_orders(parents, root) if mistake in fitting}
        ruled_out |= {mistake for mistake, wrong in orders.items() if given != wrong}
    return ruled_out


@allowed()
def check_dfs_order_function(dfs_order_with_stack: Callable, seed: int = 0) -> None:
    """``dfs_order_with_stack(root, parents)`` must return the order of the chapter's recursive search."""
    graphs = dfs_graphs(seed)
    for index, (what, parents, root) in enumerate(graphs):
        result = call("dfs_order_with_stack", dfs_order_with_stack, root, parents, names=("root", "parents"))
        ruled_out = _ruled_out(dfs_order_with_stack, result, graphs, index)
        check_topological_order(result, parents, root, title=f"dfs_order_with_stack on {what}", ruled_out=ruled_out)


# --------------------------------------------------------------------------- forward mode: a rule for a Dual


@allowed("math")
def check_hypot_jvp(hypot_jvp: Callable, seed: int = 0) -> None:
    """``hypot_jvp(a, a_dot, b, b_dot)`` must return (c, c_dot) for c = sqrt(a² + b²), whose tangent is
    c_dot = (a ȧ + b ḃ) / c, at two points, one with a negative coordinate. The expected numbers come
    from chainrule's Dual arithmetic on the same formula."""
    name = "hypot_jvp"
    rng = random.Random(f"hypot {seeded(seed)}")
    if seed == 0:
        points = [(3.0, 0.5, 4.0, -2.0), (-1.5, 2.0, 0.8, 1.0)]
    else:
        points = [tuple(round(rng.uniform(-3, 3), 2) for _ in range(4)) for _ in range(2)]
    for a, a_dot, b, b_dot in points:
        x, y = Dual(a, a_dot), Dual(b, b_dot)
        c = (x * x + y * y) ** 0.5
        result = call(name, hypot_jvp, a, a_dot, b, b_dot, names=("a", "a_dot", "b", "b_dot"))
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            got = f"{len(result)} values" if isinstance(result, (tuple, list)) else f"one {type(result).__name__}"
            raise AnswerError(name, f"{name} should return two numbers (c, c_dot), not {got}.")
        r, moved = c.primal, a * a_dot + b * b_dot
        check_scalars(
            {"c": result[0], "c_dot": result[1]},
            {"c": c.primal, "c_dot": c.tangent},
            [
                ("c is a² + b², without the square root", {"c": a * a + b * b}),
                ("b's tangent is left out: b moves too, which adds b * b_dot / c", {"c_dot": a * a_dot / r}),
                ("it is not divided by c", {"c_dot": moved}),
                (
                    "it is half the tangent: the 2 of d(a²) = 2a ȧ cancels the 1/2 of the square root",
                    {"c_dot": moved / (2 * r)},
                ),
                ("the tangents are left out: multiply a / c by a_dot and b / c by b_dot", {"c_dot": (a + b) / r}),
                ("the sign of the tangent is flipped", {"c_dot": -c.tangent}),
                ("c and c_dot are swapped: return them in that order, (c, c_dot)", {"c": c.tangent, "c_dot": r}),
            ],
            title=f"{name}({a:g}, {a_dot:g}, {b:g}, {b_dot:g})",
        )
