"""The checks of the exercises on a tape, an engine's record written as a list.

A tape is the record of a computation on ``k`` inputs: entry ``i`` says how value ``k + i``
was made, as a pair ``(parents, local_grads)``, the indices of its parents and the local
gradient on each edge. Two exercises are answered with a function of a tape: the engine
chapter's ``tape_grads(tape, k)``, the backward pass itself, and the profiling chapter's
``first_bad_entry(tape, k)``, where that pass first makes a number that is not finite, as
``chainrule`` and PyTorch's anomaly mode report it.

Each check calls the answer on every tape it tries before it judges any: the reference is a
derivation (:class:`~.mistakes.Derivation`), and a mistake is named only when one variant of it
gives the answer on every tape, never from one value or one tape alone.
The tapes are drawn with :mod:`random` from a seed, so these checks need no numpy, and a
message may show the expected answer: the grader's hidden tests draw other tapes.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from chainrule.value import Value

from ..grading.contract import allowed, seeded
from .answers import AnswerError
from .calling import call
from .mistakes import Derivation, Slips
from .scalar_checks import check_numbers, same_numbers

# --------------------------------------------------------------------------- the backward pass of a tape


def _tape(rng: random.Random) -> tuple[list, int, list]:
    """A random tape: (entries (parents, local_grads), number of inputs, every value as a chainrule Value).

    Four operations on three inputs, so that every tape has seven values and the grader's parts
    (one per value) are the same on every tape; one operation uses a value twice, and each
    other reads the latest result, so that fan-out and a repeated parent both occur.
    """
    k = 3
    values = [Value(round(rng.uniform(-1.5, 1.5), 2) or 0.5) for _ in range(k)]
    tape = []
    for step in range(4):
        if step == 1:
            a = b = rng.randrange(len(values))  # a value used twice, as in a * a
        else:
            a, b = rng.randrange(len(values)), len(values) - 1
        op = rng.choice(("+", "*", "-")) if step != 2 else "tanh"
        made = (
            values[a].tanh()
            if op == "tanh"
            else {"+": values[a] + values[b], "*": values[a] * values[b], "-": values[a] - values[b]}[op]
        )
        parents = (a,) if op == "tanh" else (a, b)
        tape.append((parents, tuple(made.local_grads)))
        values.append(made)
    values[-1].backward()
    return tape, k, values


def tape_cases(seed: int) -> list[tuple[list, int, list]]:
    """Two tapes drawn from ``seed``."""
    rng = random.Random(f"tape {seeded(seed)}")
    return [_tape(rng) for _ in range(2)]


OVERWRITE = (
    "a contribution written over another: a value used twice, or by two entries, adds each "
    "contribution (+=), it does not replace the last"
)
RUN_FORWARDS = (
    "the tape run forwards: a value passes its gradient on before the entries after it have "
    "given it theirs; go from the last entry back to the first"
)


def tape_derivation(case: tuple[list, int], at: Slips) -> list[float]:
    """Every value's gradient on a tape (tape, k), swept by hand, with the slips of each step."""
    tape, k = case
    grads = [0.0] * (k + len(tape))
    grads[-1] = at.choose("the seed", 1.0, {"the last value's own gradient is 1, where the pass starts": 0.0})
    forwards = at.choose("the direction", False, {RUN_FORWARDS: True})
    overwrite = at.choose("+=", False, {OVERWRITE: True})
    shift = at.choose(
        "the entry's value",
        k,
        {"entry i's value is value k + i (the k inputs come first), not value i": 0},
    )
    use = at.choose(
        "the local gradient",
        "times",
        {
            "the local gradient is left out: each parent gets the entry's gradient times its local gradient": "none",
            "the entry's gradient is divided by the local gradient: the chain rule multiplies them": "over",
        },
    )
    entries = at.choose(
        "the entries",
        len(tape),
        {"the tape's last entry is skipped: the pass starts at entry len(tape) - 1, the last": len(tape) - 1},
    )
    for i in range(entries) if forwards else reversed(range(entries)):
        parents, local_grads = tape[i]
        for parent, local in zip(parents, local_grads, strict=True):
            made = grads[shift + i] * (local if use == "times" else 1.0)
            if use == "over":
                made = grads[shift + i] / local  # a local gradient of 0 makes this slip no one's answer
            grads[parent] = made if overwrite else grads[parent] + made
    return grads


TAPE = Derivation(tape_derivation)


def check_tape_grads(result, tape: list, k: int, values: list, title: str = "", named: tuple | None = None) -> None:
    """``result`` must be the list of d(last value)/d(value j), j = 0 ... as chainrule's backward pass gives.

    ``named`` is (the mistake the answer makes on every tape its check tried, this tape's index);
    called alone, the mistake is read from this tape.
    """
    names = [f"value {j}" for j in range(len(values))]
    received = list(result) if isinstance(result, (list, tuple)) else result
    if not isinstance(received, list) or len(received) != len(values):
        size = len(received) if isinstance(received, list) else type(result).__name__
        raise AnswerError("tape_grads", f"return a list of {len(values)} gradients, one per value; got {size}.")
    mistake, index = named if named is not None else (TAPE.mistake([(tape, k)], [received], same_numbers), 0)
    check_numbers(
        dict(zip(names, received, strict=True)),
        {name: v.grad for name, v in zip(names, values, strict=True)},
        mistake,
        index,
        title=title,
        separate=False,  # which values a mistake hits depends on the tape drawn: one quantity, scored whole
    )


@allowed("math")
def check_tape_grads_function(tape_grads: Callable, seed: int = 0) -> None:
    """``tape_grads(tape, k)`` must return every value's gradient, on two tapes drawn from ``seed``.

    Both tapes are run first, and a mistake is matched on every value of both at once.
    """
    cases = tape_cases(seed)
    received = [
        call("tape_grads", tape_grads, [tuple(entry) for entry in tape], k, names=("tape", "k")) for tape, k, _ in cases
    ]
    for (tape, k, values), result in zip(cases, received, strict=True):  # a list of the wrong length, at once
        if not isinstance(result, (list, tuple)) or len(result) != len(values):
            check_tape_grads(result, tape, k, values)
    mistake = TAPE.mistake([(tape, k) for tape, k, _ in cases], [list(r) for r in received], same_numbers)
    for index, ((tape, k, values), result) in enumerate(zip(cases, received, strict=True)):
        title = f"tape_grads on tape {index + 1} ({len(tape)} entries, k = {k})"
        check_tape_grads(result, tape, k, values, title=title, named=(mistake, index))


# --------------------------------------------------------------------------- where a tape's pass stops

#: What each tape of the anomaly check holds, in the words its messages use.
ANOMALIES = {
    "inf": "a square root at 0 whose gradient goes on",
    "nan": "a square root at 0 under a where: 0 times inf",
    "overflow": "finite local gradients whose product overflows",
}
NAN_ONLY = (
    "only nan was looked for: inf and -inf are not finite either, and the pass stops where the "
    "first of them is made (a nan comes later, from inf times 0 or inf minus inf)"
)
RECEIVER = (
    "this entry received a gradient that is not finite; the entry that made it, by multiplying, "
    "is the one before it in the pass"
)
VALUE_INDEX = "that is the index of the entry's value, k + i; return the entry's own index i in the tape"
EARLIEST = (
    "this is the earliest such entry on the tape, which the backward pass reaches last; "
    "return the first the pass reaches, going from the last entry back"
)
LOCALS_ONLY = (
    "only the local gradients were tested: a product of finite numbers can overflow "
    "(1e160 times 1e160 is inf), so test each contribution, gradient times local gradient"
)
FORWARDS = "the tape run forwards: a backward pass goes from the last entry back to the first"
INF_ONLY = (
    "only inf was looked for: nan is not finite either (0 times inf makes one), and the pass stops where the "
    "first number that is not finite is made; test with math.isfinite"
)
#: The tests of an entry's contributions that a mistake uses instead of "not finite".
TESTS = {
    NAN_ONLY: lambda g, locals_, made: any(map(math.isnan, made)),
    INF_ONLY: lambda g, locals_, made: any(map(math.isinf, made)),
    RECEIVER: lambda g, locals_, made: not math.isfinite(g),
    LOCALS_ONLY: lambda g, locals_, made: not all(map(math.isfinite, locals_)),
}


def _bad_entries(tape: list, k: int, forwards: bool = False, test=None) -> list[int]:
    """The entries whose contributions ``test`` finds bad, in the order the pass reaches them.

    ``test(gradient, local_grads, contributions)`` is True for a bad entry; by default an entry is
    bad when a contribution is not finite. ``forwards`` plants that mistake.
    """
    test = test or (lambda g, locals_, made: not all(map(math.isfinite, made)))
    grads = [0.0] * (k + len(tape))
    grads[-1] = 1.0
    bad = []
    for i in range(len(tape)) if forwards else reversed(range(len(tape))):
        parents, local_grads = tape[i]
        made = [grads[k + i] * local for local in local_grads]
        if test(grads[k + i], local_grads, made):
            bad.append(i)
        for parent, contribution in zip(parents, made, strict=True):
            grads[parent] += contribution
    return bad


def first_bad_entry_of(tape: list, k: int) -> int:
    """The entry of the tape whose contributions are first not finite, in the backward pass's order."""
    return _bad_entries(tape, k)[0]


def _anomaly_mistakes(tape: list, k: int) -> dict[str, int | None]:
    """What each known mistake answers on ``tape`` (None where it finds no entry)."""

    def first(found: list[int]) -> int | None:
        return found[0] if found else None

    bad = _bad_entries(tape, k)
    return {
        NAN_ONLY: first(_bad_entries(tape, k, test=lambda g, ls, made: any(map(math.isnan, made)))),
        RECEIVER: first(_bad_entries(tape, k, test=lambda g, ls, made: not math.isfinite(g))),
        VALUE_INDEX: k + bad[0],
        EARLIEST: min(bad),
        LOCALS_ONLY: first(_bad_entries(tape, k, test=lambda g, ls, made: not all(map(math.isfinite, ls)))),
        FORWARDS: first(_bad_entries(tape, k, forwards=True)),
    }


def _local(rng: random.Random) -> float:
    """A local gradient such as a small graph has: not 0, not near it, with either sign."""
    return rng.choice((-1, 1)) * round(rng.uniform(0.3, 1.8), 2)


def _plain_tape(rng: random.Random, k: int, length: int) -> list[list]:
    """Entries that each read the latest value (so that the last value uses every entry), and some a second value."""
    tape = []
    for i in range(length):
        parents = [k + i - 1 if i else rng.randrange(k)]
        if rng.random() < 0.6:
            parents.append(rng.randrange(k + i))
        tape.append([parents, [_local(rng) for _ in parents]])
    return tape


def _plant(rng: random.Random, tape: list, k: int, kind: str) -> None:
    """Make entry j's pass not finite, the ``kind`` way (see :data:`ANOMALIES`)."""
    sign = rng.choice((-1, 1))
    if kind == "inf":  # inf goes down to j - 1, and turns to nan (inf times 0) at j - 2
        j = rng.randrange(2, len(tape) - 1)
        tape[j][1][0] = sign * math.inf
        tape[j - 2][1][0] = 0.0
    elif kind == "nan":  # the value of j reaches the last one only through a local gradient of 0
        j = rng.randrange(1, len(tape) - 1)
        tape[j][1][0] = sign * math.inf
        tape[j + 1][1][0] = 0.0
    else:
        j = rng.randrange(0, len(tape) - 1)
        tape[j][1][0] = sign * 1e160
        tape[j + 1][1][0] = rng.choice((-1, 1)) * 1e160


def _anomaly_tape(rng: random.Random, kind: str) -> tuple[list, int]:
    """A tape of three inputs and six entries whose backward pass first fails the ``kind`` way.

    Drawn again until each known mistake gives another entry than the right one, or, for the
    mistakes this kind cannot tell apart, until the tape is what the kind says.
    """
    k = 3
    while True:
        drawn = _plain_tape(rng, k, 6)
        _plant(rng, drawn, k, kind)
        tape = [(tuple(parents), tuple(local_grads)) for parents, local_grads in drawn]
        bad = _bad_entries(tape, k)
        if not bad or _accumulated_overflow(tape, k):
            continue
        right, answers = bad[0], _anomaly_mistakes(tape, k)
        told_apart = {EARLIEST, VALUE_INDEX} | {"inf": {NAN_ONLY, RECEIVER}, "nan": {RECEIVER}}.get(kind, {LOCALS_ONLY})
        made_nan = right == answers[NAN_ONLY]  # the first bad entry makes a nan (else only infinities)
        if (
            all(answers[mistake] != right for mistake in told_apart)
            and answers[NAN_ONLY] not in (answers[RECEIVER], answers[EARLIEST])
            and made_nan == (kind == "nan")
        ):
            return tape, k


def _accumulated_overflow(tape: list, k: int) -> bool:
    """Whether a sum of finite contributions overflows: which entry is first then depends on the engine."""
    grads = [0.0] * (k + len(tape))
    grads[-1] = 1.0
    for i in reversed(range(len(tape))):
        parents, local_grads = tape[i]
        made = [grads[k + i] * local for local in local_grads]
        if not all(map(math.isfinite, made)):
            return False
        for parent, contribution in zip(parents, made, strict=True):
            grads[parent] += contribution
            if not math.isfinite(grads[parent]):
                return True
    return False


def anomaly_cases(seed: int) -> list[tuple[str, list, int]]:
    """One tape of each kind in :data:`ANOMALIES`, drawn from ``seed``: (kind, tape, k)."""
    rng = random.Random(f"anomaly {seeded(seed)}")
    return [(kind, *_anomaly_tape(rng, kind)) for kind in ANOMALIES]


def anomaly_derivation(case: tuple[list, int], at: Slips) -> int | None:
    """The entry where a tape's pass first makes a number that is not finite (None where none is), found by
    hand, with the slips of each step: the test, the direction of the pass, which bad entry, its index."""
    tape, k = case
    test = at.choose("the test", None, {said: (lambda t=t: t) for said, t in TESTS.items()})
    forwards = at.choose("the direction", False, {FORWARDS: True})
    bad = _bad_entries(tape, k, forwards=forwards, test=test)
    if not bad:
        return None
    entry = at.choose("which bad entry", bad[0], {EARLIEST: min(bad)})
    return at.choose("the index", entry, {VALUE_INDEX: k + entry})


ANOMALY = Derivation(anomaly_derivation)


def _made_at(tape: list, k: int, entry: int) -> str:
    """What entry ``entry``'s contributions hold that is not finite, in words: "nan", "inf" or "-inf"."""
    grads = [0.0] * (k + len(tape))
    grads[-1] = 1.0
    for i in reversed(range(entry, len(tape))):
        parents, local_grads = tape[i]
        made = [grads[k + i] * local for local in local_grads]
        if i == entry:
            return next(repr(number) for number in made if not math.isfinite(number))
        for parent, contribution in zip(parents, made, strict=True):
            grads[parent] += contribution
    return "nan"


def _refuse_other_than_an_index(result, tape: list, head: str) -> None:
    """Raise for an answer that is neither an entry's index nor None."""
    if result is not None and (isinstance(result, bool) or not isinstance(result, int)):
        shown = repr(result)[:60]
        raise AnswerError(
            "first_bad_entry", f"{head}return the index of an entry, an int from 0 to {len(tape) - 1}; got {shown}."
        )


def check_first_bad_entry(result, tape: list, k: int, title: str = "", named: tuple | None = None) -> None:
    """``result`` must be the entry where the tape's backward pass first makes a number that is not finite.

    ``named`` is (the mistake the answer makes on every tape its check tried, or None, and whether it
    returned None on every tape); called alone, the mistake is read from this tape.
    """
    name, head = "first_bad_entry", f"{title}: " if title else ""
    expected = first_bad_entry_of(tape, k)
    _refuse_other_than_an_index(result, tape, head)
    if result == expected:
        return
    mistake, never = (
        named if named is not None else (ANOMALY.mistake([(tape, k)], [result], lambda a, b: a == b), False)
    )
    found = list(mistake.descriptions) if mistake else []
    known = f" It matches a known mistake: {'; or '.join(found)}." if found else ""
    made = _made_at(tape, k, expected)
    if result is None:
        missing = " It returned None on every tape: is a `return` missing at its end?" if never else ""
        raise AnswerError(
            name,
            f"{head}first_bad_entry returned None, where the expected answer is entry {expected}: the pass "
            f"first makes {made} there.{known}{missing}",
            found[0] if found else None,
        )
    said = f"{head}expected entry {expected}, received {result}."
    if found:
        raise AnswerError(name, f"{said}{known}", found[0])
    raise AnswerError(
        name,
        f"{said} Entry {expected} is the first the pass reaches (from the last entry back) whose gradient "
        f"times a local gradient is not a finite number ({made}).",
    )


@allowed("math")
def check_first_bad_entry_function(first_bad_entry: Callable, seed: int = 0) -> None:
    """``first_bad_entry(tape, k)`` must name where each tape's pass first fails, on three tapes drawn from ``seed``.

    Every tape is tried first; an answer of None (no entry found) is judged as any other answer.
    """
    cases = anomaly_cases(seed)
    received = []
    for number, (kind, tape, k) in enumerate(cases, start=1):
        try:
            result = call("first_bad_entry", first_bad_entry, list(tape), k, names=("tape", "k"))
        except AnswerError as error:
            if "returned None" not in str(error) or type(error) is not AnswerError:
                raise
            result = None
        _refuse_other_than_an_index(result, tape, f"first_bad_entry on tape {number} ({ANOMALIES[kind]}): ")
        received.append(result)
    problems = [(tape, k) for _, tape, k in cases]
    never = all(result is None for result in received)
    # An answer that finds nothing anywhere (a missing return, or a search that never matches) is asked
    # about its return; slips that give None on every tape would name a cause it shows nothing of.
    mistake = None if never else ANOMALY.mistake(problems, received, lambda answer, result: answer == result)
    for number, ((kind, tape, k), result) in enumerate(zip(cases, received, strict=True), start=1):
        title = f"first_bad_entry on tape {number} ({ANOMALIES[kind]})"
        check_first_bad_entry(result, tape, k, title=title, named=(mistake, never))
