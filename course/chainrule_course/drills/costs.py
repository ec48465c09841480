"""The cost chapter's drills: the flops of a linear layer, and the forward steps of binomial checkpointing.

* ``flops``: the flops of a linear layer Z = XWᵀ, X of shape (n, d) and W of shape (d_h, d),
  forward (level 1) or backward (level 2), counted by the engine's own formula for a
  matrix product (:func:`chainrule.flops.matmul`, 2k flops per output entry). Named
  mistakes: the multiplications alone, k − 1 additions per entry, the forward count for the
  backward, forward and backward together.
* ``revolve``: F(D, c), the fewest forward steps that reverse a chain of D steps with c
  slots, by the chapter's recursion F(D, c) = min_j (j + F(D − j, c − 1) + F(j, c)),
  F(1, c) = 0, F(D, 1) = D(D − 1)/2. Named mistakes: one slot's count, D − 1, and the
  √D schedule's one extra forward pass, either base case shifted (F(1, c) = 1, F(D, 1) = D(D + 1)/2).

Each answer is also worked by hand as a derivation whose steps offer these slips
(:func:`_flops_count`, :func:`_revolve_count`): the mistakes are generated from it
(:func:`~.problems.derived`), and a wrong answer is named only when one slip alone gives it.
"""

import math
import random
from functools import cache

from chainrule import flops as flop_formulas

from .graphs import number_text
from .problems import Problem, derived, distinct
from .registry import drill

__all__ = ["flops", "revolve"]

SIZES = (2, 3, 4, 5)
LARGEST_COUNT = 1000  # 4 · 5 · 5 · 5 = 500 at most: products of small whole numbers
# The chains revolve asks about, by number of slots: wide enough for 40 different questions in 100 seeds.
# One slot's count, D(D − 1)/2, is at most 60 · 59/2 = 1770; with more slots the closed form gives it.
CHAINS = {1: range(3, 61), 2: range(5, 71), 3: range(3, 71)}
LARGEST_STEPS = 2000


class _Shape:
    """What a flop formula reads of an array: its shape and size."""

    def __init__(self, *shape):
        self.shape = shape
        self.size = 1
        for n in shape:
            self.size *= n


def _matmul_flops(left, right):
    """The engine's count for a product of a (left) and b (right) shaped arrays."""
    return flop_formulas.matmul([_Shape(*left), _Shape(*right)], (), _Shape(left[0], right[1]))


@drill("flops", "cost", "the flops of a linear layer", {1: "forward", 2: "backward"}, "count")
def flops(level, seed):
    """The flops of a linear layer's forward (level 1) or backward (level 2) pass."""
    rng = random.Random(f"chainrule-drill-flops:{level}:{seed}")
    return distinct(lambda: _flops(rng, level), largest=LARGEST_COUNT)


def _flops_words():
    """The words of each slip of :func:`_flops_count`, by the mistake's name."""
    return {
        "multiplications only": "That counts the multiplications only: each is paired with an addition, 2 flops "
        "per product term.",
        "k \u2212 1 additions": "That counts k \u2212 1 additions per output entry, (2k \u2212 1)mr for a "
        "product; the engine counts 2k per entry, 2mkr.",
        "the forward count": "That is the forward pass: the backward pass computes two products of the same size, "
        "W\u0304 = Z\u0304\u1d40X and X\u0304 = Z\u0304W.",
        "forward and backward": "That adds the forward pass; the question asks for the backward pass alone.",
    }


def _flops_count(d, at):
    """The flops of Z = XWᵀ's forward or backward pass, counted by hand as 2mkr per product, with the slips of each
    step."""
    said = _flops_words()

    def product(m, k, r):
        # At level 2 the multiplications alone are the forward count, named as that: the slip is level 1's.
        slips = {said["k \u2212 1 additions"]: (2 * k - 1) * m * r}
        if not d["backward"]:
            slips[said["multiplications only"]] = m * k * r
        return at.choose("flops per product term", 2 * m * k * r, slips)

    n, width, d_h = d["n"], d["d"], d["d_h"]
    forward = product(n, width, d_h)
    if not d["backward"]:
        return forward
    backward = product(d_h, n, width) + product(n, d_h, width)  # W̄ = Z̄ᵀX, then X̄ = Z̄W
    passes = {said["the forward count"]: forward, said["forward and backward"]: forward + backward}
    return at.choose("the passes counted", backward, passes)


def _flops(rng, level):
    n, d, d_h = rng.choice(SIZES), rng.choice(SIZES), rng.choice(SIZES)
    forward = _matmul_flops((n, d), (d, d_h))
    backward = _matmul_flops((d_h, n), (n, d)) + _matmul_flops((n, d_h), (d_h, d))  # W-bar, then X-bar
    answer = forward if level == 1 else backward
    instance = {"n": n, "d": d, "d_h": d_h, "backward": level == 2}
    mistakes = derived(_flops_count, instance, {words: name for name, words in _flops_words().items()}, count=True)
    which = "forward pass" if level == 1 else "backward pass (both W\u0304 and X\u0304)"
    return Problem(
        "flops",
        f"A linear layer Z = XW\u1d40 with X of shape ({n}, {d}) and W of shape ({d_h}, {d}). How many flops "
        f"does its {which} take, counting a product (m, k)\u00b7(k, r) as 2mkr?",
        [f"n = {n}, d = {d}, d\u2095 = {d_h}"],
        answer,
        [
            "A product (m, k)\u00b7(k, r) costs 2mkr: k multiplications and k additions per output entry.",
            "Forward: 2\u00b7n\u00b7d\u00b7d\u2095. Backward: W\u0304 = Z\u0304\u1d40X and X\u0304 = Z\u0304W, "
            "each as large.",
        ],
        [f"Forward: 2 \u00b7 {n} \u00b7 {d} \u00b7 {d_h} = {forward}."]
        + ([f"Backward: two products of the same size, 2 \u00d7 {forward} = {backward}."] if level == 2 else []),
        mistakes,
        form="count",
        data={"n": n, "d": d, "d_h": d_h, "backward": level == 2},
    )


@cache
def fewest_forward_steps(steps, slots):
    """F(D, c) by the cost chapter's recursion (eq-revolve)."""
    if steps == 1:
        return 0
    if slots == 1:
        return steps * (steps - 1) // 2
    return min(j + fewest_forward_steps(steps - j, slots - 1) + fewest_forward_steps(j, slots) for j in range(1, steps))


@drill(
    "revolve",
    "cost",
    "binomial checkpointing's forward steps",
    {1: "one slot", 2: "two slots", 3: "three slots"},
    "count",
)
def revolve(level, seed):
    """F(D, c) for a chain of D steps and c slots: c = 1 (level 1), 2 (level 2) or 3 (level 3)."""
    rng = random.Random(f"chainrule-drill-revolve:{level}:{seed}")
    return distinct(lambda: _revolve(rng, level), largest=LARGEST_STEPS)


def _revolve_words():
    """The words of each slip of :func:`_revolve_count`, by the mistake's name."""
    return {
        "one slot's count": "That is one slot's count, every step recomputed from the input; a second slot saves "
        "most of it.",
        "no recomputation": "That is one forward pass, with every activation kept; with fewer slots than steps some "
        "are recomputed.",
        "one extra pass": "That is one extra forward pass, the \u221aD schedule's price; with these slots the count "
        "differs.",
        "F(D, 1) shifted": "With one slot, reversing step i recomputes the i \u2212 1 steps before it: "
        "F(D, 1) = 0 + 1 + \u2026 + (D \u2212 1) = D(D \u2212 1)/2, not 1 + \u2026 + D.",
        "F(1, c) shifted": "A chain of one step is reversed with no recomputation: the base case is F(1, c) = 0, "
        "not 1.",
    }


def _revolve_count(d, at):
    """F(D, c) by the cost chapter's recursion, worked by hand from its two base cases, with the slips of each
    step."""
    said = _revolve_words()
    one = at.choose("F(1, c)", 0, {said["F(1, c) shifted"]: 1})
    shift = at.choose("F(D, 1)", -1, {said["F(D, 1) shifted"]: 1})  # D(D − 1)/2, or D(D + 1)/2

    @cache
    def count(steps, slots):
        if steps == 1:
            return one
        if slots == 1:
            return steps * (steps + shift) // 2
        return min(j + count(steps - j, slots - 1) + count(j, slots) for j in range(1, steps))

    steps, slots = d["D"], d["c"]
    others = {said["no recomputation"]: steps - 1, said["one extra pass"]: 2 * (steps - 1)}
    if slots > 1:
        others[said["one slot's count"]] = steps * (steps - 1) // 2
    return at.choose("the count", count(steps, slots), others)


def _closed_form_hint(steps, slots):
    """The chapter's closed form for F(D, c), with this chain's τ: on a long chain, quicker than the recursion."""
    tau = next(t for t in range(1, steps) if math.comb(slots + t, slots) >= steps)
    return (
        f"Or the chapter's closed form, with the binomial coefficients C(n, k): here \u03c4 = {tau}, since "
        f"C({slots + tau - 1}, {slots}) = {math.comb(slots + tau - 1, slots)} < D \u2264 "
        f"C({slots + tau}, {slots}) = {math.comb(slots + tau, slots)}, and F(D, c) = \u03c4D \u2212 "
        f"C(c + \u03c4, c + 1)."
    )


def _revolve(rng, level):
    slots = level
    steps = rng.choice(CHAINS[slots])
    answer = fewest_forward_steps(steps, slots)
    mistakes = derived(
        _revolve_count, {"D": steps, "c": slots}, {w: name for name, w in _revolve_words().items()}, count=True
    )
    best = (
        min(
            range(1, steps),
            key=lambda j: j + fewest_forward_steps(steps - j, slots - 1) + fewest_forward_steps(j, slots),
        )
        if slots > 1
        else None
    )
    return Problem(
        "revolve",
        f"A chain of D = {steps} steps is reversed with c = {slots} "
        + ("slot, which holds the input" if slots == 1 else "slots, one of them holding the input")
        + ". What is F(D, c), the fewest forward steps the reversal runs (counting the first "
        "forward pass, not each step's own evaluation)?",
        [f"D = {steps}, c = {slots}", "F(1, c) = 0 and F(D, 1) = D(D \u2212 1)/2"],
        answer,
        [
            "F(D, c) = min over j of j + F(D \u2212 j, c \u2212 1) + F(j, c): advance j steps, keep that "
            "activation, reverse the rest with one slot fewer.",
            "With one slot, F(D, 1) = D(D \u2212 1)/2: each step is recomputed from the input."
            if slots == 1
            else _closed_form_hint(steps, slots),
        ],
        [
            "With one slot, reversing step i recomputes the i \u2212 1 steps before it from the input: "
            f"0 + 1 + \u2026 + {steps - 1}."
            if best is None  # one slot: no first move to choose
            else f"The best first move advances j = {best} step{'s' if best > 1 else ''}: "
            f"{best} + F({steps - best}, {slots - 1}) + "
            f"F({best}, {slots}) = {best} + {fewest_forward_steps(steps - best, slots - 1)} + "
            f"{fewest_forward_steps(best, slots)}.",
            f"F({steps}, {slots}) = {number_text(answer)}.",
        ],
        mistakes,
        form="count",
        data={"D": steps, "c": slots},
    )
