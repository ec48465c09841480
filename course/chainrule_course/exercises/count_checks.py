"""The checks of two exercises answered with counts: numbers of a model, worked out by hand.

The MLP chapter's ``memory_count(N, d, h, q)``, the numbers its network stores at the peak
of prediction and of training, and the cost chapter's ``longest_chain(c, runs)``, the longest
chain binomial checkpointing reverses. The answers are exact integers, and the checks need no
numpy, so that they run in the page's Python too.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from ..grading.contract import allowed, seeded
from .answers import RTOL, AnswerError, check_scalars
from .calling import call, returned
from .scalar_checks import one_number

# --------------------------------------------------------------------------- the MLP chapter: memory at the peak


def d2l_memory(N: int, d: int, h: int, q: int) -> dict[str, int]:
    """Numbers stored at the peak by the d2l network (no bias), as the MLP chapter's exercise counts them.

    Both counts include the input X.  Prediction keeps the weights and the arrays alive
    at once while the layers run one after another: X with Z, then Z with H (the ReLU
    is not in place), then H with O.  Training with plain SGD keeps what
    ``chainrule.cost.memory_parts`` counts (the cost chapter's model) plus X: the
    weights, their gradients, the saved activations H and the log-probabilities, and
    two gradients in flight the size of the larger of H and O (X gets no gradient).
    """
    weights = h * d + q * h
    return {
        "prediction": weights + N * max(d + h, 2 * h, h + q),
        "training": 2 * weights + N * (d + h + q) + 2 * N * max(h, q),
    }


def check_memory_count(prediction, training, N: int, d: int, h: int, q: int) -> None:
    """The two counts of the MLP chapter's exercise for one size, exactly, each with its known mistakes."""
    check_scalars(
        {"prediction": prediction, "training": training},
        d2l_memory(N, d, h, q),
        memory_mistakes(N, d, h, q),
        rtol=0,
        title=f"memory_count({N}, {d}, {h}, {q}), that is N = {N}, d = {d}, h = {h}, q = {q}",
    )


def memory_mistakes(N: int, d: int, h: int, q: int) -> list[tuple[str, dict[str, int]]]:
    """The known mistakes of the MLP chapter's memory count, each with the counts it gives, most likely first."""
    expected = d2l_memory(N, d, h, q)
    unbatched = d2l_memory(1, d, h, q)
    weights = h * d + q * h
    right_prediction, right_training = expected["prediction"], expected["training"]
    return [
        (
            "the activations are counted for one example: they are stored for each of the N examples in the batch",
            unbatched,
        ),
        (
            "the input X is not counted, but the exercise counts it in both",
            {"prediction": weights + N * max(h, 2 * h, h + q), "training": right_training - N * d},
        ),
        ("training is counted without the weight gradients", {"training": right_training - weights}),
        (
            "training is counted without the gradients in flight: the backward pass holds the gradient it "
            "receives and the one it computes, two arrays the size of the larger of H and O",
            {"training": right_training - 2 * N * max(h, q)},
        ),
        (
            "training counts one gradient in flight, but the backward pass holds two at once: the one it "
            "receives and the one it computes",
            {"training": right_training - N * max(h, q)},
        ),
        (
            "training counts the arrays chainrule keeps (the chapter's listing: the penalty also keeps its "
            "factor, one number), but the exercise counts the model's saved values, X, H and the "
            "log-probabilities",
            {"training": right_training + 1},
        ),
        (
            "prediction is counted as keeping every layer's activations, but it can drop each input once the next "
            "layer exists",
            {"prediction": weights + N * (d + h + q)},
        ),
        (
            "prediction is counted as keeping every array at once, X, Z, H and O, but it can drop each one "
            "once the next exists",
            {"prediction": weights + N * (d + 2 * h + q)},
        ),
        (
            "prediction is counted with Z and H in one array, as an in-place ReLU would do, but the ReLU makes a "
            "new array H while Z still exists",
            {"prediction": weights + N * max(d + h, h + q)},
        ),
        (
            "prediction counts only the first layer's pair, X with Z, but a later pair (Z with H, or H with O) "
            "can be larger",
            {"prediction": weights + N * (d + h)},
        ),
        (
            "the counts are swapped: return (prediction, training), in that order",
            {"prediction": right_training, "training": right_prediction},
        ),
        (
            "the counts are in bytes (8 per float64 number), but the exercise counts numbers",
            {"prediction": 8 * right_prediction, "training": 8 * right_training},
        ),
        (
            "the weights are left out (and in training their gradients), but both counts include them",
            {"prediction": right_prediction - weights, "training": right_training - 2 * weights},
        ),
        (
            "training counts a momentum buffer, but the exercise's training is plain SGD, which keeps none",
            {"training": right_training + weights},
        ),
    ]


#: The sizes the memory count's public check tries, smallest first: N = 1, then d < q, then d > q.
MEMORY_SIZES = ((1, 2, 8, 11), (7, 3, 5, 9), (64, 4, 8, 3), (1000, 784, 256, 10))


@allowed("math")
def check_memory_count_function(memory_count: Callable, sizes=MEMORY_SIZES, seed: int | None = None) -> None:
    """``memory_count(N, d, h, q)`` must return the (prediction, training) counts for each (N, d, h, q) in ``sizes``,
    or, with ``seed``, for three sizes drawn from it (one with d < q, one with d > q, one with N = 1)."""
    for N, d, h, q in sizes if seed is None else memory_sizes(seed):
        result = call("memory_count", memory_count, N, d, h, q, names=("N", "d", "h", "q"))
        prediction, training = returned("memory_count", result, ("prediction", "training"))
        check_memory_count(prediction, training, N, d, h, q)


def memory_sizes(seed: int) -> list[tuple[int, int, int, int]]:
    """Three sizes (N, d, h, q) drawn from ``seed``: d < q, then d > q, then N = 1 (every known mistake shows)."""
    rng = random.Random(f"memory {seeded(seed)}")
    sizes = []
    while len(sizes) < 3:
        N, d, h, q = (rng.randrange(2, high) for high in (600, 800, 300, 40))
        wanted = (d < q, d > q, True)[len(sizes)]
        if wanted and len({d, h, q}) == 3 and h != 2 * d:
            sizes.append((1 if len(sizes) == 2 else N, d, h, q))
    return sizes


# --------------------------------------------------------------------------- the cost chapter: binomial checkpointing


def _split_twice(c: int, r: int) -> int:
    """D(c, r) when the step at the split is counted in both the tail and the head."""
    table = {(1, runs): runs + 1 for runs in range(r + 1)} | {(slots, 0): 1 for slots in range(1, c + 1)}
    for slots in range(2, c + 1):
        for runs in range(1, r + 1):
            table[slots, runs] = table[slots - 1, runs] + table[slots, runs - 1] - 1
    return table[c, r]


def _chain_mistakes(c: int, r: int) -> list[tuple[str, dict[str, int]]]:
    """The known mistakes of the longest chain, each with the D it gives for c slots and r runs, most likely first."""
    return [
        (
            "the input's slot is counted as a free one: that is the chain for c + 1 slots",
            {"D": math.comb(c + 1 + r, c + 1)},
        ),
        (
            "the first forward pass is not counted as a run: that is the chain for runs + 1",
            {"D": math.comb(c + r + 1, c)},
        ),
        (
            "the tail and the head multiply, (runs + 1)^c, but the chain is the tail followed by the head: "
            "their lengths add",
            {"D": (r + 1) ** c},
        ),
        ("the step where the chain splits is counted in both the tail and the head", {"D": _split_twice(c, r)}),
        (
            "the chain grows by runs steps per slot, c·runs + 1, as if the head up to the split had one slot; "
            "it has all c slots again: D(c, runs) = D(c - 1, runs) + D(c, runs - 1)",
            {"D": c * r + 1},
        ),
    ]


def _fits(received, number: int) -> bool:
    """Whether ``received`` is ``number``, as :func:`~chainrule_course.exercises.answers.check_scalars` compares."""
    value = one_number(received)
    return value is not None and abs(value - number) <= 1e-8 + RTOL * abs(number)


def _made(longest_chain: Callable, result, pair: tuple[int, int], pairs: list) -> list[tuple[str, dict[str, int]]]:
    """The known mistakes that give ``result`` at ``pair`` and the answer's D at each other pair of the check.

    Two mistakes can give the same D at one pair (c·runs + 1 and the split counted twice both give 7
    at (2, 3)); the other pairs tell them apart, so that a message never names a mistake the answer
    does not make. Those that no pair tells apart are all named. The function is called on the other
    pairs only when a mistake fits.
    """
    made = [(mistake, wrong) for mistake, wrong in _chain_mistakes(*pair) if _fits(result, wrong["D"])]
    for other in pairs:
        if not made or other == pair:
            continue
        try:
            answer = call("longest_chain", longest_chain, *other, names=("c", "runs"))
        except AnswerError:
            continue  # reported when the check comes to that pair
        there = dict(_chain_mistakes(*other))
        made = [(mistake, wrong) for mistake, wrong in made if _fits(answer, there[mistake]["D"])]
    return made


@allowed("math")
def check_longest_chain(longest_chain: Callable, seed: int = 0) -> None:
    """``longest_chain(c, runs)`` must return C(c + runs, c): the chain c slots reverse, each step run <= runs times."""
    rng = random.Random(f"longest chain {seeded(seed)}")
    pairs = [(2, 3), (4, 2), (3, 5)] if seed == 0 else [(rng.randint(2, 6), rng.randint(2, 6)) for _ in "abc"]
    for c, r in pairs:
        result = call("longest_chain", longest_chain, c, r, names=("c", "runs"))
        check_scalars(
            {"D": result},
            {"D": math.comb(c + r, c)},
            _made(longest_chain, result, (c, r), pairs),
            title=f"longest_chain({c}, {r})",
        )
