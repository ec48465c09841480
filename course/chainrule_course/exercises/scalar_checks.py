"""The checks of exercises answered with a function of a few numbers or of a small graph.

``tanh_neuron_grads(x, w, b)`` (intro), ``cube_grads(x)`` (backward) and
``hypot_jvp(a, a_dot, b, b_dot)``, a forward-mode rule (forward mode); the graph chapter's
``dfs_order_with_stack(root, parents)`` is checked in :mod:`~chainrule_course.exercises.graph_checks`,
whose names this module also gives.
A function check calls the answer on every input it tries (the exercise's own and at least
one more) before it judges any: each reference answer is a derivation
(:class:`~.mistakes.Derivation`), and a mistake is named only when one variant of it gives the
answer on every input; else the message locates the wrong number. The grader's hidden tests
call it on inputs drawn from other seeds. A number or an order copied from a message is
therefore worth nothing, and a message may show the expected value.

The inputs are drawn with :mod:`random`, so these checks need no numpy of their own.
"""

from __future__ import annotations

import functools
import math
import random
from collections.abc import Callable, Mapping, Sequence

from chainrule.forward import Dual
from chainrule.value import Value

from ..grading.contract import allowed, seeded
from .answers import RTOL, AnswerError, Report, _as_number, _check_scalar, _shown, tolerances
from .calling import call, returned
from .graph_checks import CHAIN_LENGTH as CHAIN_LENGTH
from .graph_checks import DIAMOND as DIAMOND
from .graph_checks import EXAMPLE_GRAPH as EXAMPLE_GRAPH
from .graph_checks import check_dfs_order_function as check_dfs_order_function
from .graph_checks import check_topological_order as check_topological_order
from .graph_checks import dfs_graphs as dfs_graphs
from .mistakes import Derivation, Named, Slips

# --------------------------------------------------------------------------- numbers, compared in pure Python


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
    return a == b or abs(a - b) <= 1e-8 + RTOL * abs(b)


def same_numbers(answer, result) -> bool:
    """Whether ``answer`` (a number, or a sequence of them) equals ``result`` within a mistake's tolerance:
    what :meth:`~.mistakes.Derivation.name` matches a variant by."""
    if isinstance(result, (tuple, list)):
        return (
            isinstance(answer, (tuple, list))
            and len(answer) == len(result)
            and all(same_numbers(a, r) for a, r in zip(answer, result, strict=True))
        )
    number = one_number(answer)
    return number is not None and _close(number, float(result))


def _rounded_to(number: float, value: float) -> int | None:
    """The decimals (1 to 6) ``value`` was rounded to, to give ``number``; None when it was not."""
    return next((k for k in range(1, 7) if abs(round(value, k) - number) < 1e-12 * max(1, abs(value))), None)


def rounded_everywhere(received: Sequence[Sequence], expected: Sequence[Sequence[float]]) -> bool:
    """Whether each number of an answer, on every problem, is the right one or it rounded, and one is rounded.

    Only then does a message say "do not round it": a number hard-coded from one input is a
    rounding there by chance (-1.3 for -1.294), and the next input shows it is not.
    """
    rounded = False
    for numbers, values in zip(received, expected, strict=True):
        for given, value in zip(numbers, values, strict=True):
            number = one_number(given)
            if number is None:
                return False
            rtol, atol = tolerances(given)
            if abs(number - value) <= atol + rtol * abs(value):
                continue
            if _rounded_to(number, value) is None:
                return False
            rounded = True
    return rounded


def check_numbers(
    received: Mapping[str, object],
    expected: Mapping[str, float],
    named: Named | None = None,
    at: int = 0,
    title: str = "",
    separate: bool = True,
    rounded: bool = True,
) -> None:
    """:func:`~.answers.check_scalars` for a function check's answer on its ``at``-th problem.

    ``named`` is the mistake the answer makes on every problem (its numbers on each, in the order
    of ``expected``), or None. ``rounded`` is false when the answer is not a rounding on every
    problem: a number that is a rounding here by chance is then located, not told to round less.
    """
    numbers: dict[str, float | tuple | AnswerError] = {}
    for name in expected:
        try:
            numbers[name] = _as_number(name, received[name])
        except AnswerError as error:  # reported as this name's verdict, so the others still get theirs
            numbers[name] = error
    wrong = dict(zip(expected, named.answers[at], strict=True)) if named else {}
    found = {
        name: list(named.descriptions) if named and name in wrong and not _close(wrong[name], value) else []
        for name, value in expected.items()
    }
    report = Report(title, separate)
    for name, value in expected.items():
        number = numbers[name]
        own = tolerances(received[name])
        if not (rounded or found[name]) and isinstance(number, float) and _rounded_to(number, value) is not None:
            rtol, atol = own
            if abs(number - value) > atol + rtol * abs(value):  # a rounding by chance: located as any wrong one
                message = f"{name} is wrong: expected {_shown(value)}, received {_shown(number)}."
                report.check(name, functools.partial(_raise, AnswerError(name, message)))
                continue
        report.check(name, functools.partial(_check_scalar, name, number, value, found[name], own))
    report.close()


def _raise(error: AnswerError) -> None:
    raise error


# --------------------------------------------------------------------------- intro: y = tanh(wx + b)

#: The point the intro's exercise names; the public check also tries a second one.
NEURON_POINT = (0.5, -2.0, 0.5)


def neuron_points(seed: int) -> list[tuple[float, float, float]]:
    """Two points (x, w, b): the exercise's own for seed 0, else one drawn; then one drawn from ``seed``.

    A drawn point keeps every named mistake apart from the right answer: x and w differ in
    size (swapped), and z = wx + b is neither near 0 (tanh' ≈ 1) nor large (tanh' ≈ 0).
    """
    rng = random.Random(f"neuron {seeded(seed)}")
    drawn: list[tuple[float, float, float]] = []
    while len(drawn) < 2:
        x, w, b = (round(rng.uniform(-2.0, 2.0), 2) for _ in range(3))
        z = w * x + b
        if min(abs(x), abs(w)) > 0.3 and abs(abs(x) - abs(w)) > 0.3 and 0.3 < abs(z) < 1.5:
            drawn.append((x, w, b))
    return [NEURON_POINT, drawn[1]] if seed == 0 else drawn


#: The derivatives of the intro's exercise, in the order ``tanh_neuron_grads`` returns them.
NEURON_GRADS = ("dy/dx", "dy/dw", "dy/db")
SWAPPED = "dy/dx and dy/dw are swapped: dy/dx carries w and dy/dw carries x"
#: The orders other than the right one, as the index of the derivative each place holds.
ORDERS = ((1, 0, 2), (2, 1, 0), (0, 2, 1), (1, 2, 0), (2, 0, 1))


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


def neuron_derivation(point: tuple[float, float, float], at: Slips) -> tuple[float, float, float]:
    """(dy/dx, dy/dw, dy/db) of y = tanh(wx + b), derived by hand, with the slips of each step."""
    x, w, b = point
    z = at.choose("z = wx + b", w * x + b, {"the bias b is left out of z = wx + b, where tanh' is taken": w * x})
    y = math.tanh(z)
    slope = at.choose(
        "tanh'(z)",
        1 - y**2,
        {
            "the factor tanh'(z) = 1 - tanh²(z) is missing": 1.0,
            "tanh'(z) is 1 - tanh²(z), not 1 - z²": 1 - z**2,
            "tanh(z) was used for tanh'(z), but the derivative of tanh is 1 - tanh²(z)": y,
            "the factor is 1 - tanh(z)², with z = wx + b, not 1 - tanh(x)²": lambda: 1 - math.tanh(x) ** 2,
            "tanh'(z) is 1 - tanh²(z), not 1 - tanh(z): the square is missing": 1 - y,
            "σ'(z) = σ(z)(1 - σ(z)), the sigmoid's derivative, was used for tanh'(z) = 1 - tanh²(z)": lambda: (
                1 / (1 + math.exp(-z)) * (1 - 1 / (1 + math.exp(-z)))
            ),
            "tanh' was taken at the output y = tanh(z), not at z: 1 - tanh²(y)": lambda: 1 - math.tanh(y) ** 2,
        },
    )
    dx = at.choose("dz/dx", slope * w, {"dy/dx is tanh'(z)·w (dz/dx = w), not tanh'(z)·x": slope * x})
    dw = at.choose("dz/dw", slope * x, {"dy/dw is tanh'(z)·x (dz/dw = x), not tanh'(z)·w": slope * w})
    grads = at.choose("sign", (dx, dw, slope), {"the sign is flipped": (-dx, -dw, -slope)})
    return at.choose("order", grads, {_order_words(o): tuple(grads[i] for i in o) for o in ORDERS})


NEURON = Derivation(neuron_derivation)


def check_tanh_neuron_grads(
    dy_dx, dy_dw, dy_db, x: float, w: float, b: float, title: str = "", named: tuple | None = None
) -> None:
    """The three derivatives of y = tanh(wx + b), against chainrule's backward pass at (x, w, b).

    ``named`` is (the mistake the answer makes on every point its check tried, this point's index,
    whether the answer is a rounding on every point); called alone, the mistake is read from this
    point (a check of one input, as the tests make).
    """
    xv, wv, bv = Value(x), Value(w), Value(b)
    (wv * xv + bv).tanh().backward()
    received = (dy_dx, dy_dw, dy_db)
    if named is None:
        named = (Derivation(neuron_derivation, depth=1).mistake([(x, w, b)], [received], same_numbers), 0, True)
    mistake, index, rounded = named
    check_numbers(
        dict(zip(NEURON_GRADS, received, strict=True)),
        {"dy/dx": xv.grad, "dy/dw": wv.grad, "dy/db": bv.grad},
        mistake,
        index,
        title=title,
        rounded=rounded,
    )


@allowed("math")
def check_tanh_neuron_grads_function(tanh_neuron_grads: Callable, seed: int = 0) -> None:
    """``tanh_neuron_grads(x, w, b)`` must return (dy/dx, dy/dw, dy/db) of y = tanh(wx + b), at two points."""
    points = neuron_points(seed)
    received = []
    for x, w, b in points:
        result = call("tanh_neuron_grads", tanh_neuron_grads, x, w, b, names=("x", "w", "b"))
        received.append(returned("tanh_neuron_grads", result, ("dy_dx", "dy_dw", "dy_db")))
    mistake = NEURON.mistake(points, received, same_numbers)
    rounded = rounded_everywhere(received, [NEURON.right(p) for p in points])
    for index, ((x, w, b), answer) in enumerate(zip(points, received, strict=True)):
        title = f"tanh_neuron_grads({x}, {w}, {b})"
        dy_dx, dy_dw, dy_db = answer  # returned() gave one value per name
        check_tanh_neuron_grads(dy_dx, dy_dw, dy_db, x, w, b, title=title, named=(mistake, index, rounded))


# --------------------------------------------------------------------------- backward: y = (x·x)·x

CUBE_POINT = 1.3


def cube_points(seed: int) -> list[float]:
    """Two values of x: the exercise's own x = 1.3 for seed 0, else one drawn; then one drawn from ``seed``.

    A drawn x is at least 0.3 away from 0, 1 and -1, where x, x² and 3x² would coincide.
    """
    rng = random.Random(f"cube {seeded(seed)}")
    drawn: list[float] = []
    while len(drawn) < 2:
        x = round(rng.uniform(-2.5, 2.5), 2)
        if min(abs(x), abs(abs(x) - 1)) > 0.3:
            drawn.append(x)
    return [CUBE_POINT, drawn[1]] if seed == 0 else drawn


#: The two edges from x into s = x·x: losing one of them or both, and a loop that runs before s has its gradient.
CUBE_EDGES = {
    "a lost fan-out contribution: x feeds s twice (s = x·x), and each use adds x·dy/ds to dy/dx, but only one "
    "was counted (ds/dx = 2x, not x)": 1,
    "lost fan-out contributions: x feeds s twice (s = x·x), and each use adds x·dy/ds to dy/dx, "
    "but only the direct term s = x² was counted": 0,
    "a backward loop run in forward order: it passes s's gradient on to x before y has given s its "
    "gradient, so only the direct term s = x² reaches x": 0,
}


def cube_derivation(x: float, at: Slips) -> tuple[float, float]:
    """(dy/ds, dy/dx) for s = x·x, y = s·x, derived edge by edge, with the slips of each step."""
    s = x * x
    dy_ds = at.choose("dy/ds", x, {"dy/ds is the gradient s.grad = x, not the value s = x·x": s})
    through_s = at.choose("the edges x → s", 2 * x * x, {said: uses * x * x for said, uses in CUBE_EDGES.items()})
    dy_dx = through_s + at.choose(
        "the direct edge x → y",
        s,
        {"a lost fan-out contribution: x also feeds y directly (y = s·x), which adds s = x² to dy/dx": 0.0},
    )
    grads = at.choose("sign", (dy_ds, dy_dx), {"the sign is flipped": (-dy_ds, -dy_dx)})
    grads = at.choose(
        "backward() runs",
        grads,
        {
            "every gradient is doubled: backward() ran twice without zero_grad() in between, and "
            "gradients accumulate": (2 * grads[0], 2 * grads[1])
        },
    )
    swapped = "dy/ds and dy/dx are swapped: return them in that order, (dy/ds, dy/dx)"
    return at.choose("(dy/ds, dy/dx)", grads, {swapped: grads[::-1]})


CUBE = Derivation(cube_derivation)


def check_cube_grads(dy_ds, dy_dx, x: float, title: str = "", named: tuple | None = None) -> None:
    """dy/ds and dy/dx for s = x·x, y = s·x, against chainrule's backward pass at x (``named`` as in
    :func:`check_tanh_neuron_grads`)."""
    xv = Value(x)
    s = xv * xv
    (s * xv).backward()
    if named is None:
        named = (Derivation(cube_derivation, depth=1).mistake([x], [(dy_ds, dy_dx)], same_numbers), 0, True)
    mistake, index, rounded = named
    check_numbers(
        {"dy/ds": dy_ds, "dy/dx": dy_dx},
        {"dy/ds": s.grad, "dy/dx": xv.grad},
        mistake,
        index,
        title=title or f"at x = {x}",
        rounded=rounded,
    )


@allowed("math")
def check_cube_grads_function(cube_grads: Callable, seed: int = 0) -> None:
    """``cube_grads(x)`` must return (dy/ds, dy/dx) for s = x·x and y = s·x, at two values of x."""
    points = cube_points(seed)
    received = [
        returned("cube_grads", call("cube_grads", cube_grads, x, names=("x",)), ("dy_ds", "dy_dx")) for x in points
    ]
    mistake = CUBE.mistake(points, received, same_numbers)
    rounded = rounded_everywhere(received, [CUBE.right(x) for x in points])
    for index, (x, (dy_ds, dy_dx)) in enumerate(zip(points, received, strict=True)):
        check_cube_grads(dy_ds, dy_dx, x, title=f"cube_grads({x})", named=(mistake, index, rounded))


# --------------------------------------------------------------------------- forward mode: a rule for a Dual

#: The points the forward chapter's check tries first; a third is drawn from the seed.
HYPOT_POINTS = [(3.0, 0.5, 4.0, -2.0), (-1.5, 2.0, 0.8, 1.0)]


def hypot_points(seed: int) -> list[tuple[float, float, float, float]]:
    """Three points (a, a_dot, b, b_dot): for seed 0 the two of :data:`HYPOT_POINTS` and one drawn, else three drawn.

    A drawn point keeps the named mistakes apart: c is not near 1 (where c = c²), and neither
    a ȧ, b ḃ nor the tangent is near 0.
    """
    rng = random.Random(f"hypot {seeded(seed)}")
    drawn: list[tuple[float, float, float, float]] = []
    while len(drawn) < 3:
        a, a_dot, b, b_dot = (round(rng.uniform(-3, 3), 2) for _ in range(4))
        c = math.hypot(a, b)
        if abs(c - 1) > 0.3 and min(abs(a * a_dot), abs(b * b_dot), abs(a * a_dot + b * b_dot)) > 0.2:
            drawn.append((a, a_dot, b, b_dot))
    return HYPOT_POINTS + drawn[:1] if seed == 0 else drawn


def hypot_derivation(point: tuple[float, float, float, float], at: Slips) -> tuple[float, float]:
    """(c, c_dot) of c = sqrt(a² + b²), derived by hand, with the slips of each step."""
    a, a_dot, b, b_dot = point
    r = math.sqrt(a * a + b * b)
    c = at.choose("the square root", r, {"c is a² + b², without the square root": a * a + b * b})
    from_a = at.choose("a's term", a * a_dot, {"a's tangent is left out: a moves too, which adds a * a_dot / c": 0.0})
    from_b = at.choose(
        "b's term",
        b * b_dot,
        {
            "b's tangent is left out: b moves too, which adds b * b_dot / c": 0.0,
            "b's term has the wrong sign: b moves too, which adds b * b_dot / c": -b * b_dot,
        },
    )
    moved = at.choose(
        "the tangents",
        from_a + from_b,
        {
            "the tangents are left out: multiply a / c by a_dot and b / c by b_dot": a + b,
            "a and b are left out: a_dot's term is a * a_dot / c, b_dot's is b * b_dot / c": a_dot + b_dot,
            "the tangents are crossed: a pairs with its own tangent, a * a_dot, and b with b_dot": a * b_dot
            + b * a_dot,
        },
    )
    c_dot = at.factor(
        "the division by c",
        moved,
        1 / r,
        {
            "it is not divided by c": 1.0,
            "it is half the tangent: the 2 of d(a²) = 2a ȧ cancels the 1/2 of the square root": 1 / (2 * r),
            "it is twice the tangent: the 1/2 of the square root's derivative cancels the 2 of d(a²) = 2a ȧ": 2 / r,
            "it is divided by c² = a² + b², but d sqrt(u) = du / (2 sqrt(u)) divides by c": 1 / (r * r),
        },
    )
    c_dot = at.choose("the tangent's sign", c_dot, {"the sign of the tangent is flipped": -c_dot})
    return at.choose(
        "(c, c_dot)", (c, c_dot), {"c and c_dot are swapped: return them in that order, (c, c_dot)": (c_dot, c)}
    )


HYPOT = Derivation(hypot_derivation)


@allowed("math")
def check_hypot_jvp(hypot_jvp: Callable, seed: int = 0) -> None:
    """``hypot_jvp(a, a_dot, b, b_dot)`` must return (c, c_dot) for c = sqrt(a² + b²), whose tangent is
    c_dot = (a ȧ + b ḃ) / c, at three points, one with a negative coordinate. The expected numbers come
    from chainrule's Dual arithmetic on the same formula."""
    name = "hypot_jvp"
    points = hypot_points(seed)
    received = []
    for point in points:
        result = call(name, hypot_jvp, *point, names=("a", "a_dot", "b", "b_dot"))
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            got = f"{len(result)} values" if isinstance(result, (tuple, list)) else f"one {type(result).__name__}"
            raise AnswerError(name, f"{name} should return two numbers (c, c_dot), not {got}.")
        received.append(tuple(result))
    mistake = HYPOT.mistake(points, received, same_numbers)
    rounded = rounded_everywhere(received, [HYPOT.right(point) for point in points])
    for index, ((a, a_dot, b, b_dot), (c_given, c_dot_given)) in enumerate(zip(points, received, strict=True)):
        x, y = Dual(a, a_dot), Dual(b, b_dot)
        c = (x * x + y * y) ** 0.5
        check_numbers(
            {"c": c_given, "c_dot": c_dot_given},
            {"c": c.primal, "c_dot": c.tangent},
            mistake,
            index,
            title=f"{name}({a:g}, {a_dot:g}, {b:g}, {b_dot:g})",
            rounded=rounded,
        )
