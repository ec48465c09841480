"""The cost chapter's drills: the flops of a linear layer, and the forward steps of binomial checkpointing.

* ``flops``: the flops of a linear layer Z = XWᵀ, X of shape (n, d) and W of shape (d_h, d),
  forward (level 1) or backward (level 2), counted by the engine's own formula for a
  matrix product (:func:`chainrule.flops.matmul`, 2k flops per output entry). Named
  mistakes: the multiplications alone, the forward count for the backward, forward and
  backward together.
* ``revolve``: F(D, c), the fewest forward steps that reverse a chain of D steps with c
  slots, by the chapter's recursion F(D, c) = min_j (j + F(D − j, c − 1) + F(j, c)),
  F(1, c) = 0, F(D, 1) = D(D − 1)/2. Named mistakes: one slot's count, D − 1, and the
  √D schedule's one extra forward pass.
"""

import random
from functools import cache

from chainrule import flops as flop_formulas

from .graphs import number_text
from .problems import Mistake, Problem, distinct

__all__ = ["flops", "revolve"]

SIZES = (2, 3, 4, 5)
LARGEST_COUNT = 1000  # 4 · 5 · 5 · 5 = 500 at most: products of small whole numbers


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


def flops(level, seed):
    """The flops of a linear layer's forward (level 1) or backward (level 2) pass."""
    rng = random.Random(f"chainrule-drill-flops:{level}:{seed}")
    return distinct(lambda: _flops(rng, level), largest=LARGEST_COUNT)


def _flops(rng, level):
    n, d, d_h = rng.choice(SIZES), rng.choice(SIZES), rng.choice(SIZES)
    forward = _matmul_flops((n, d), (d, d_h))
    backward = _matmul_flops((d_h, n), (n, d)) + _matmul_flops((n, d_h), (d_h, d))  # W-bar, then X-bar
    answer = forward if level == 1 else backward
    mistakes = []
    if level == 1:  # at level 2, half the count is the forward count, named below
        message = "That counts the multiplications only: each is paired with an addition, 2 flops per product term."
        mistakes.append(Mistake(answer / 2, message, "multiplications only"))
    else:
        mistakes = [
            Mistake(
                forward,
                "That is the forward pass: the backward pass computes two products of the same size, "
                "W\u0304 = Z\u0304\u1d40X and X\u0304 = Z\u0304W.",
                "the forward count",
            ),
            Mistake(
                forward + backward,
                "That adds the forward pass; the question asks for the backward pass alone.",
                "forward and backward",
            ),
        ]
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


def revolve(level, seed):
    """F(D, c) for a chain of D steps and c slots: c = 1 (level 1), 2 (level 2) or 3 (level 3)."""
    rng = random.Random(f"chainrule-drill-revolve:{level}:{seed}")
    return distinct(lambda: _revolve(rng, level))


def _revolve(rng, level):
    slots = level
    steps = rng.randrange(3, 12 if level != 2 else 16)
    answer = fewest_forward_steps(steps, slots)
    mistakes = (
        []
        if slots == 1
        else [
            Mistake(
                steps * (steps - 1) // 2,
                "That is one slot's count, every step recomputed from the input; a second slot saves most of it.",
                "one slot's count",
            ),
        ]
    )
    mistakes += [
        Mistake(
            steps - 1,
            "That is one forward pass, with every activation kept; with fewer slots than steps some are recomputed.",
            "no recomputation",
        ),
        Mistake(
            2 * (steps - 1),
            "That is one extra forward pass, the \u221aD schedule's price; with these slots the count differs.",
            "one extra pass",
        ),
    ]
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
            "With one slot, F(D, 1) = D(D \u2212 1)/2: each step is recomputed from the input.",
        ],
        [
            "With one slot, reversing step i recomputes the i \u2212 1 steps before it from the input: "
            f"0 + 1 + \u2026 + {steps - 1}."
            if slots == 1
            else f"The best first move advances j = {best} step{'s' if best > 1 else ''}: "
            f"{best} + F({steps - best}, {slots - 1}) + "
            f"F({best}, {slots}) = {best} + {fewest_forward_steps(steps - best, slots - 1)} + "
            f"{fewest_forward_steps(best, slots)}.",
            f"F({steps}, {slots}) = {number_text(answer)}.",
        ],
        mistakes,
        data={"D": steps, "c": slots},
    )
