"""The checks of two exercises answered with counts: numbers of a model, worked out by hand.

The MLP chapter's ``memory_count(N, d, h, q)``, the numbers its network stores at the peak
of prediction and of training, and the cost chapter's ``longest_chain(c, runs)``, the longest
chain binomial checkpointing reverses. The answers are exact integers, and the checks need no
numpy, so that they run in the page's Python too.

Each reference is a derivation (:mod:`chainrule_course.exercises.mistakes`): a check calls the
answer on every size it tries, and names a mistake only when one variant of the derivation gives
the answer on all of them; otherwise it says which count is wrong, expected and received.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence

from ..grading.contract import allowed, seeded
from .answers import ATOL, RTOL, RTOL64, check_scalars
from .calling import call, returned
from .mistakes import Derivation, Named, Slips
from .scalar_checks import one_number


def _fits(received, number: int) -> bool:
    """Whether ``received`` is ``number``, as :func:`~chainrule_course.exercises.answers.check_scalars` compares."""
    value = one_number(received)
    return value is not None and abs(value - number) <= 1e-8 + RTOL * abs(number)


# --------------------------------------------------------------------------- the MLP chapter: memory at the peak

#: The counts a memory_count returns, in order.
COUNTS = ("prediction", "training")
_IN_FLIGHT = "the backward pass holds the gradient it receives and the one it computes"
_UNBATCHED = "the activations are counted for one example: they are stored for each of the N examples in the batch"
_PENALTY_FACTOR = (
    "training counts the arrays chainrule keeps (the chapter's listing: the penalty also keeps its factor, one "
    "number), but the exercise counts the model's saved values, X, H and the log-probabilities"
)


def memory_derivation(size: tuple[int, int, int, int], at: Slips) -> tuple[int, int]:
    """(prediction, training) of the d2l network (no bias) for ``size`` = (N, d, h, q), counted as the MLP
    chapter's exercise counts them, with the slips of each step.

    Both counts include the input X. Prediction keeps the weights and the arrays alive at once
    while the layers run one after another: X with Z, then Z with H (the ReLU is not in place),
    then H with O. Training with plain SGD keeps what ``chainrule.cost.memory_parts`` counts (the
    cost chapter's model) plus X: the weights, their gradients, the saved activations H and the
    log-probabilities, and two gradients in flight the size of the larger of H and O (X gets none).
    """
    N, d, h, q = size
    n = at.choose("the batch", N, {_UNBATCHED: 1})
    x = at.choose("the input X", d, {"the input X is not counted, but the exercise counts it in both": 0})
    weights = at.choose(
        "the weights",
        h * d + q * h,
        {"the weights are left out (and in training their gradients), but both counts include them": 0},
    )
    prediction = weights + n * at.choose("prediction's peak", max(x + h, 2 * h, h + q), _peak_slips(x, h, q))
    gradients = at.choose("the weight gradients", weights, {"training is counted without the weight gradients": 0})
    state = at.choose(
        "the optimizer state",
        0,
        {"training counts a momentum buffer, but the exercise's training is plain SGD, which keeps none": weights},
    )
    saved = x + h + at.choose("the log-probabilities", q, _saved_slips(q)["the log-probabilities"])
    saved += at.choose("Z", 0, _saved_slips(h)["Z"])
    flight = at.choose("the gradients in flight", 2 * max(h, q), _flight_slips(x, h, q))
    training = weights + gradients + state + n * (saved + flight) + at.choose("the penalty", 0, {_PENALTY_FACTOR: 1})
    counts = at.choose(
        "the order",
        (prediction, training),
        {"the counts are swapped: return (prediction, training), in that order": (training, prediction)},
    )
    unit = at.choose(
        "the unit", 1, {"the counts are in bytes (8 per float64 number), but the exercise counts numbers": 8}
    )
    return counts[0] * unit, counts[1] * unit


def _peak_slips(x: int, h: int, q: int) -> dict[str, int]:
    """The slips of prediction's peak per example, max(d + h, 2·h, h + q), each with what it counts instead."""
    return {
        "prediction is counted as keeping every layer's activations, but it can drop each input once the next "
        "layer exists": x + h + q,
        "prediction is counted as keeping every array at once, X, Z, H and O, but it can drop each one once the "
        "next exists": x + 2 * h + q,
        "prediction is counted with Z and H in one array, as an in-place ReLU would do, but the ReLU makes a new "
        "array H while Z still exists": max(x + h, h + q),
        "prediction counts only the first layer's pair, X with Z, but a later pair (Z with H, or H with O) can be "
        "larger": x + h,
        "prediction counts only the last pair, H with O, but an earlier pair (X with Z, or Z with H) can be larger": h
        + q,
    }


def _saved_slips(size: int) -> dict[str, dict[str, int]]:
    """The slips of the values training saves per example, by the array they concern (``size`` is its width)."""
    return {
        "the log-probabilities": {
            "training is counted without the log-probabilities: the cross-entropy saves them, N·q numbers, for "
            "its backward pass": 0
        },
        "Z": {
            "training saves Z as well as H, but H alone serves both the ReLU's mask (H > 0) and the product with "
            "W2": size
        },
    }


def _flight_slips(x: int, h: int, q: int) -> dict[str, int]:
    """The slips of the gradients in flight per example, 2·max(h, q), each with what it counts instead."""
    return {
        f"training is counted without the gradients in flight: {_IN_FLIGHT}, two arrays the size of the larger "
        "of H and O": 0,
        f"training counts one gradient in flight, but {_IN_FLIGHT}: two at once": max(h, q),
        "the gradients in flight are counted the size of H, 2·N·h, but O is the larger when q > h: they are two "
        "arrays the size of the larger of H and O, 2·N·max(h, q)": 2 * h,
        "the gradients in flight are counted the size of O, 2·N·q, but H is the larger when h > q: they are two "
        "arrays the size of the larger of H and O, 2·N·max(h, q)": 2 * q,
        "the gradients in flight are counted the size of X when it is the largest array, but X gets no "
        "gradient: they are two arrays the size of the larger of H and O": 2 * max(x, h, q),
    }


MEMORY = Derivation(memory_derivation)


def d2l_memory(N: int, d: int, h: int, q: int) -> dict[str, int]:
    """Numbers stored at the peak by the d2l network (no bias), as the MLP chapter's exercise counts them
    (:func:`memory_derivation`): {"prediction": ..., "training": ...}."""
    return dict(zip(COUNTS, MEMORY.right((N, d, h, q)), strict=True))


def memory_mistakes(N: int, d: int, h: int, q: int) -> list[tuple[str, dict[str, int]]]:
    """The single slips of the memory count, each with the counts it gives for this size, in the derivation's
    order (a check names one only when it fits every size it tried)."""
    size = (N, d, h, q)
    return [
        (said, dict(zip(COUNTS, MEMORY.derive(size, Slips({step: said})), strict=True)))
        for step, said in MEMORY.slips([size])
    ]


def same_counts(answer: Sequence, counts: tuple) -> bool:
    """Whether ``answer`` (what a memory_count returned, or one number) gives ``counts``, count by count."""
    if not isinstance(counts, tuple):
        return _exact(answer, counts)
    return len(answer) == len(counts) and all(_exact(a, c) for a, c in zip(answer, counts, strict=True))


def _exact(received, count: int) -> bool:
    """Whether ``received`` is ``count``, as :func:`check_memory_count` compares: exactly, but for float64's
    rounding (no count here comes near 10¹², so one number more or less is always a mistake)."""
    value = one_number(received)
    return value is not None and abs(value - count) <= ATOL + RTOL64 * abs(count)


def check_memory_count(
    prediction, training, N: int, d: int, h: int, q: int, named: tuple[Named | None, int] = (None, 0)
) -> None:
    """The two counts of the MLP chapter's exercise for one size, exactly (:func:`same_counts`).

    ``named`` is the mistake the answer makes on every size its check tried
    (:meth:`~chainrule_course.exercises.mistakes.Derivation.mistake`) and this size's index; without
    one, a wrong count is located (expected, received), never named from this size alone.
    """
    mistake, index = named
    found = [] if mistake is None else mistake.on(index)
    check_scalars(
        {"prediction": prediction, "training": training},
        d2l_memory(N, d, h, q),
        [(m.description, dict(zip(COUNTS, m.answer, strict=True))) for m in found],
        rtol=RTOL64,  # a count in floats passes; a number close to it but not equal is never "rounded"
        title=f"memory_count({N}, {d}, {h}, {q}), that is N = {N}, d = {d}, h = {h}, q = {q}",
    )


#: The sizes the memory count's public check tries, smallest first. Between them they take every branch
#: of the count: the peak pair H with O (q > h, q > d), then Z with H (h largest), then X with Z (d
#: largest); the gradients in flight the size of O (q > h) and of H (h > q); N = 1 and larger batches.
MEMORY_SIZES = ((1, 2, 8, 11), (7, 3, 5, 9), (64, 4, 8, 3), (1000, 784, 256, 10))


@allowed("math")
def check_memory_count_function(memory_count: Callable, sizes=MEMORY_SIZES, seed: int | None = None) -> None:
    """``memory_count(N, d, h, q)`` must return the (prediction, training) counts for each (N, d, h, q) in ``sizes``,
    or, with ``seed``, for three sizes drawn from it (:func:`memory_sizes`: every branch of the count)."""
    tried = list(sizes if seed is None else memory_sizes(seed))
    received = []
    for N, d, h, q in tried:
        result = call("memory_count", memory_count, N, d, h, q, names=("N", "d", "h", "q"))
        received.append(returned("memory_count", result, COUNTS))
    mistake = MEMORY.mistake(tried, received, same_counts)
    for index, ((N, d, h, q), (prediction, training)) in enumerate(zip(tried, received, strict=True)):
        check_memory_count(prediction, training, N, d, h, q, named=(mistake, index))


def memory_sizes(seed: int) -> list[tuple[int, int, int, int]]:
    """Three sizes (N, d, h, q) drawn from ``seed``, one for each branch of the count, whatever the seed.

    First q > h and q > d (the peak pair is H with O, the gradients in flight are O's size), then
    h > q and h > d (Z with H; H's size), then d > h and d > q with N = 1 (X with Z). So an answer
    right on one branch only, such as gradients in flight 2·N·h, fails every draw.
    """
    rng = random.Random(f"memory {seeded(seed)}")
    h = rng.randrange(2, 30)
    q = rng.randrange(h + 1, 40)
    first = (rng.randrange(2, 100), rng.randrange(2, q), h, q)  # small: one number off is not "close" there
    h = rng.randrange(40, 300)
    second = (rng.randrange(2, 600), rng.randrange(2, h), h, rng.randrange(2, 40))
    h, q = rng.randrange(2, 300), rng.randrange(2, 40)
    third = (1, rng.randrange(300, 800), h, q if q != h else q + 1)
    return [first, second, third]


# --------------------------------------------------------------------------- the cost chapter: binomial checkpointing

_SPLIT_TWICE = "the step where the chain splits is counted in both the tail and the head"
_LINEAR = (
    "the chain grows by runs steps per slot, c·runs + 1, as if the head up to the split had one slot; "
    "it has all c slots again: D(c, runs) = D(c - 1, runs) + D(c, runs - 1)"
)


def chain_derivation(pair: tuple[int, int], at: Slips) -> int:
    """D(c, runs), the longest chain c slots reverse with each step run at most ``runs`` times, derived by its
    recurrence D(c, runs) = D(c - 1, runs) + D(c, runs - 1) from D(1, runs) = runs + 1 and D(c, 0) = 1,
    with the slips of each step. It is C(c + runs, c)."""
    c = at.choose(
        "the slots",
        pair[0],
        {"the input's slot is counted as a free one: that is the chain for c + 1 slots": pair[0] + 1}
        | _fewer(
            pair[0] > 1,
            "the input's slot is taken off c, but c already counts it (one of the c slots holds the input): "
            "that is the chain for c - 1 slots",
            pair[0] - 1,
        ),
    )
    runs = at.choose(
        "the runs",
        pair[1],
        {"the first forward pass is not counted as a run: that is the chain for runs + 1": pair[1] + 1}
        | _fewer(
            pair[1] > 0,
            "the evaluation inside each step's own reversal is counted as a run, but the exercise does not count "
            "it: that is the chain for runs - 1",
            pair[1] - 1,
        ),
    )
    one = at.choose(
        "D(1, runs)",
        1,
        {"D(1, runs) is taken as runs, but one slot reverses runs + 1 steps: step 1 runs again for each later one": 0},
    )
    none = at.choose(
        "D(c, 0)", 1, {"D(c, 0) is taken as 0, but with no runs left a single step is still reversed: D(c, 0) = 1": 0}
    )
    head = at.choose("the head's slots", "c", {_LINEAR: "1"})
    overlap = at.choose("the split", 0, {_SPLIT_TWICE: 1})
    table = {(1, r): r + one for r in range(runs + 1)} | {(s, 0): none for s in range(2, c + 1)}
    for s in range(2, c + 1):
        for r in range(1, runs + 1):
            table[s, r] = table[s - 1, r] + table[s if head == "c" else 1, r - 1] - overlap
    longest = at.choose(
        "tail and head",
        table[c, runs],
        {
            "the tail and the head multiply, (runs + 1)^c, but the chain is the tail followed by the head: "
            "their lengths add": (runs + 1) ** c
        },
    )
    # One step more or fewer is a slip of its own: two slips that together add 1 on every pair (the
    # first pass not counted, and the split counted twice) must not be named for it.
    return at.choose(
        "one step",
        longest,
        {
            "the count is one step too many: C(c + runs, c) counts the steps, the input's slot among them": (
                longest + 1
            ),
            "the count is one step too few: C(c + runs, c) counts the steps, the input's slot among them": (
                longest - 1
            ),
        },
    )


def _fewer(possible: bool, said: str, value: int) -> dict[str, int]:
    """The slip of one slot or run fewer, where there is one to take off."""
    return {said: value} if possible else {}


CHAIN = Derivation(chain_derivation)


def chain_pairs(seed: int) -> list[tuple[int, int]]:
    """The pairs (c, runs) the check tries: fixed ones for seed 0 (the public check), else three drawn.

    The three have different c and different runs, and c differs from runs in one of them at least, so
    that no two mistakes give the same D at all three (c + 1 slots and runs + 1 do where c = runs); and
    they are never only the public pairs.
    """
    if seed == 0:
        return list(PUBLIC_PAIRS)
    rng = random.Random(f"longest chain {seeded(seed)}")
    while True:
        pairs = list(zip(rng.sample(range(2, 7), 3), rng.sample(range(2, 7), 3), strict=True))
        if any(c != runs for c, runs in pairs) and not set(pairs) <= set(PUBLIC_PAIRS):
            return pairs  # not the public pairs again in another order: a table of them must fail


#: The pairs the public check tries.
PUBLIC_PAIRS = ((2, 3), (4, 2), (3, 5))


@allowed("math")
def check_longest_chain(longest_chain: Callable, seed: int = 0) -> None:
    """``longest_chain(c, runs)`` must return C(c + runs, c): the chain c slots reverse, each step run <= runs times.

    The answer is called on every pair first; a mistake is named only when one variant of
    :func:`chain_derivation` gives its D at each pair (c·runs + 1 and the split counted twice both
    give 7 at (2, 3): the other pairs tell them apart).
    """
    pairs = chain_pairs(seed)
    received = [call("longest_chain", longest_chain, c, r, names=("c", "runs")) for c, r in pairs]
    mistake = CHAIN.mistake(pairs, received, _fits)
    for index, ((c, r), result) in enumerate(zip(pairs, received, strict=True)):
        found = [] if mistake is None else mistake.on(index)
        check_scalars(
            {"D": result},
            {"D": math.comb(c + r, c)},
            [(m.description, {"D": m.answer}) for m in found],
            title=f"longest_chain({c}, {r})",
        )
