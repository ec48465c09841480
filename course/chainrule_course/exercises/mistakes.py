"""Mistakes generated from a reference derivation, and named only when the answer shows one on every input.

A check writes its right answer as a derivation, ``derive(problem, at)``, and wherever a person
deriving it can slip, asks ``at`` for the step, giving the right result and what each slip
would give instead::

    def derive(p, at):
        dO = at.factor("the mean's 1/N", (P - onehot), 1 / N, {"÷q": 1 / q, "nothing": 1.0})
        dW2 = at.term("the weight-decay term λ·W2", dO.T @ H, lam * W2)
        return at.swap("(dJ/dW1, dJ/dW2)", dW1, dW2)

The operators (:meth:`Slips.choose` and its shorthands) name each slip in words. A *variant* is
the derivation with one or two slips planted (at different steps); :class:`Derivation` runs every
variant on every problem a check tried. A wrong answer is **named** only when the variants that
match it on every problem are one mistake (or several whose answers are equal on every problem);
the simplest explanation wins, so a pair of slips is tried only when no single one matches. Else
the check only **locates** the wrong entry. A name never rests on one input: a mistake that
coincides with another on the public input (λ/N with N = 2 and λ/2) is told apart by the next.

Pure Python, and it imports nothing of the course: the drills (:mod:`chainrule_course.drills`) draw
their named mistakes from the same generator, in the page's Python (no numpy).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: How deep variants are composed: one slip, or two at different steps.
DEPTH = 2
#: Most mistakes a message lists as "one of these" (equal answers on every problem tried).
LISTED = 3


class Slips:
    """What one run of a derivation does at each step: the right result, or the planted slip.

    ``planted`` maps a step's name to the slip (its description) made there; every other step is
    right. The steps met, with their slips, are kept in :attr:`steps` for :class:`Derivation`.
    """

    def __init__(self, planted: Mapping[str, str] | None = None):
        self.planted = dict(planted or {})
        self.steps: dict[str, list[str]] = {}

    def choose(self, step: str, right, slips: Mapping[str, object]):
        """``right``, unless the slip planted at ``step`` is one of ``slips`` (description -> its result,
        or a function of no arguments that computes it)."""
        known = self.steps.setdefault(step, [])
        known += [description for description in slips if description not in known]
        planted = self.planted.get(step)
        if planted is None or planted not in slips:
            return right
        result = slips[planted]
        return result() if callable(result) else result

    # The operators: each is choose() with the slips of one kind, described in words.

    def term(self, name: str, rest, term, words: Mapping[str, str] | None = None, scaled: Mapping[str, float] = {}):
        """``rest + term``; slips: the term left out, its sign flipped, doubled, halved, and each of ``scaled``
        (description -> the factor the term is wrongly multiplied by). ``words`` may replace the description
        of a slip (keys "missing", "sign", "double", "half")."""
        said = {
            "missing": f"{name} is missing",
            "sign": f"{name} has the wrong sign",
            "double": f"{name} is counted twice",
            "half": f"{name} is halved",
        } | dict(words or {})
        factors = {said["missing"]: 0.0, said["sign"]: -1.0, said["double"]: 2.0, said["half"]: 0.5} | dict(scaled)
        return self.choose(name, rest + term, {words: (lambda f=f: rest + f * term) for words, f in factors.items()})

    def factor(self, name: str, value, factor, others: Mapping[str, object]):
        """``value * factor``; each slip of ``others`` (description -> the factor used instead) multiplies by
        its own factor."""
        return self.choose(name, value * factor, {said: (lambda f=other: value * f) for said, other in others.items()})

    def sign(self, name: str, value, why: str = ""):
        """``value``; the slip: its sign flipped (``why`` says how, in brackets)."""
        said = f"the sign of {name} is flipped" + (f" ({why})" if why else "")
        return self.choose(f"sign of {name}", value, {said: lambda: -value})

    def transpose(self, name: str, value):
        """``value``, a matrix; the slip: its transpose (rows and columns swapped)."""
        said = f"{name} is transposed (rows and columns swapped)"
        return self.choose(f"transpose of {name}", value, {said: lambda: value.T})

    def swap(self, names: str, first, second):
        """``(first, second)``; the slip: the two returned in the other order."""
        return self.choose(
            f"order of {names}",
            (first, second),
            {f"the two results are swapped: return {names}, in that order": lambda: (second, first)},
        )


@dataclass(frozen=True)
class Named:
    """A mistake the answer makes on every problem tried: its words (several when they give equal answers),
    and what it gives on each problem."""

    descriptions: tuple[str, ...]
    answers: tuple

    def on(self, problem: int, part: int | None = None) -> list:
        """The mistake as :func:`~.answers.check_array` takes it, on the ``problem``-th problem (its ``part``-th
        result, for an answer of several)."""
        from .answers import Mistake  # here, not above: the drills import this module where no check exists

        answer = self.answers[problem] if part is None else self.answers[problem][part]
        return [Mistake(words, answer) for words in self.descriptions]


class Derivation:
    """A check's reference derivation and the variants of it: :meth:`right`, and :meth:`name` for a wrong answer."""

    # derive(problem, slips) returns what the check's answer is (a number, a tuple, arrays): Any, so that a
    # caller can use it as such.
    def __init__(self, derive: Callable[[Any, Slips], Any], depth: int = DEPTH):
        self.derive, self.depth = derive, depth

    def right(self, problem):
        return self.derive(problem, Slips())

    def slips(self, problems: Sequence) -> list[tuple[str, str]]:
        """Every (step, slip) the derivation offers on ``problems``, in the order met."""
        found: dict[tuple[str, str], None] = {}
        for problem in problems:
            run = Slips()
            self.derive(problem, run)
            found |= {(step, said): None for step, slips in run.steps.items() for said in slips}
        return list(found)

    def variants(self, problems: Sequence):
        """Each variant, simplest first, as (its slips, its answer on each problem); slips that cannot go
        together are left out."""
        for chosen in self._choices(problems):
            answers = self._answers(chosen, problems)
            if answers is not None:
                yield chosen, answers

    def _choices(self, problems: Sequence):
        """Each set of slips, one per step, simplest first."""
        slips = self.slips(problems)
        for depth in range(1, self.depth + 1):
            for chosen in itertools.combinations(slips, depth):
                if len({step for step, _ in chosen}) == depth:
                    yield chosen

    def _answers(self, chosen, problems: Sequence, received: Sequence | None = None, same=None) -> tuple | None:
        """The variant's answer on each problem; None if its slips cannot go together (shapes that no
        longer fit), or, given ``received``, as soon as one answer differs from it (the rest not computed)."""
        answers = []
        for index, problem in enumerate(problems):
            try:
                answer = self.derive(problem, Slips(dict(chosen)))
            except (ArithmeticError, LookupError, TypeError, ValueError):
                return None  # slips that cannot go together: no one's answer
            if received is not None and not same(received[index], answer):
                return None
            answers.append(answer)
        return tuple(answers)

    def mistake(self, problems: Sequence, received: Sequence, same: Callable[[Any, Any], bool]) -> Named | None:
        """:meth:`name` for an answer that is wrong on one of ``problems`` at least; None for a right one."""
        if all(same(answer, self.right(p)) for p, answer in zip(problems, received, strict=True)):
            return None
        return self.name(problems, received, same)

    def name(self, problems: Sequence, received: Sequence, same: Callable[[Any, Any], bool]) -> Named | None:
        """The mistake ``received`` (the answer's result on each problem) makes, or None.

        ``same(answer, result)`` says whether the answer equals a result (within the check's tolerance).
        A variant matches when it equals the answer on every problem and differs from the right answer on
        one; the matches of the fewest slips are kept, and named when at most :data:`LISTED` (several only
        when they give equal answers everywhere: one mistake, said in several ways).
        """
        rights = [self.right(problem) for problem in problems]
        matches: list[tuple[tuple, tuple]] = []
        for chosen in self._choices(problems):
            if matches and len(chosen) > len(matches[0][0]):
                break
            answers = self._answers(chosen, problems, received, same)  # None at the first problem it misses
            if answers is None or all(same(a, b) for a, b in zip(answers, rights, strict=True)):
                continue  # not the answer's, or a slip that changes nothing on these problems
            matches.append((chosen, answers))
        if not matches or len(matches) > LISTED:
            return None
        first = matches[0][1]
        if any(not all(same(a, b) for a, b in zip(answers, first, strict=True)) for _, answers in matches[1:]):
            return None  # told apart by the problems, yet each matches: an answer no variant explains alone
        return Named(tuple(describe(chosen) for chosen, _ in matches), first)


def named_slip(
    answer, guess, slips: Mapping[str, object], name: Callable[[str], str], same: Callable[[Any, Any], bool]
) -> tuple[str, str] | None:
    """The words and the name of the one mistake of ``slips`` (its words -> what it gives; ``name(words)`` its
    name) that ``guess`` fits, a question with one right ``answer``: None when none fits, or slips of
    different names give its number (a coincidence of this instance names nothing); the words of slips of
    one name that give the same number are all said, joined by "Or:". The drills of a graph and the
    backward widget's "Predict, then reveal" mode name a slip by it."""
    derivation = Derivation(lambda _, at: at.choose("the answer", answer, slips), depth=1)
    named = derivation.mistake([None], [guess], same)
    if named is None or len({name(words) for words in named.descriptions}) != 1:
        return None
    return " Or: ".join(named.descriptions), name(named.descriptions[0])


def describe(chosen: Sequence[tuple[str, str]]) -> str:
    """The words of a variant's slips: "a", or "a, and b"."""
    return ", and ".join(said for _, said in chosen)
