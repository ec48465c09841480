"""The frame of the drills after the backward chapter: a question, its answer, and its named mistakes.

The graph and backward chapters' drills ask about a drawn graph (:mod:`.graph_kinds`). From the
engine chapter on, a question is about an instance a person can hold in their head: two
small matrices, three logits, a direction to move a graph's inputs in. A
:class:`Problem` holds it: the prompt, the instance in words (``lines``), the answer the
engine computed, hints, the worked steps, and the mistakes a reader is likely to make,
each with the number it gives and the message that names it.

:meth:`Problem.check` reads what the reader typed (a number, a list of numbers or of
names, read by :mod:`.reading`) and returns the verdict ``{"right", "message",
"mistake"}``: right within the drills' tolerance; else the first mistake whose numbers
the reader gave; else, for a list, which entry is the first wrong one.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from chainrule_course.exercises.mistakes import Derivation, describe

from .graphs import number_text
from .reading import ReadingError, close, exact, read_names, read_number, read_numbers

__all__ = [
    "Mistake",
    "Problem",
    "derived",
    "distinct",
    "grid",
    "list_text",
    "matrix_text",
    "softmax_of",
    "verdict",
    "weighted_sum",
]

LARGEST_ANSWER = 100  # twice a graph's largest gradient (drills.graphs.LARGEST)
SMALLEST = 0.02  # a nonzero answer at least twice the tolerance, so that 0 or the wrong sign is not right
TRIES = 50  # draws of an instance before one whose mistakes are told apart is given up on


def verdict(right, message, mistake=None):
    """A verdict as the page shows it. A wrong one's message says what is wrong or what to do, never a verdict
    word: the page puts "Not right." before it (drill.js)."""
    return {"right": right, "message": message, "mistake": mistake}


@dataclass
class Mistake:
    """A mistake a reader makes: the answer it gives (a number, or a list), what to say, and its name."""

    value: object
    message: str
    name: str


@dataclass
class Problem:
    """One question of a kind after the backward chapter.

    ``form`` is ``"number"``, ``"count"`` (a whole number, right only when exact), ``"numbers"``
    (``answer`` a list of numbers, ``entries`` their
    names for messages) or ``"names"`` (``answer`` a list of names, any order, from
    ``known``). ``graph`` is a :class:`~chainrule.value.Value` to draw, or None.
    """

    kind: str
    prompt: str
    lines: list
    # A number, or a list of numbers or of names, as ``form`` says: Any, since which one
    # depends on the value of ``form``, which mypy cannot follow.
    answer: Any
    hints: list
    steps: list
    mistakes: list = field(default_factory=list)
    form: str = "number"  # or "count": a whole number, right only when exact
    entries: list = field(default_factory=list)
    known: dict = field(default_factory=dict)
    words: str = "The numbers:"
    graph: object = None
    walk: object = None  # a Value whose backward pass "Show the steps" steps through, or None
    data: dict = field(default_factory=dict)  # the instance's numbers, by name, for tests to replay
    form_text: str = ""  # what to type, where the form's usual words do not fit
    # judge(problem, text) -> verdict, for a kind whose answer one name settles
    judge: Callable[["Problem", str], dict] | None = None

    def check(self, text):
        """The verdict on what the reader typed."""
        if self.judge is not None:
            return self.judge(self, text)
        try:
            if self.form == "names":
                return self._check_names(read_names(text, self.known))
            if self.form == "numbers":
                return self._check_numbers(read_numbers(text, len(self.answer)))
            return self._check_number(read_number(text))
        except ReadingError as error:
            return verdict(False, f"{error}.", "unreadable")

    def slip_answers(self):
        """The answers its named mistakes give (each a number or a list, as typed)."""
        return [m.value for m in self.mistakes]

    def _same(self, x, y):
        if self.form == "names":
            return set(x) == set(y)
        return _all_close(x, y) if self.form == "numbers" else self._matches(x, y)

    def _matches(self, guess, answer):
        """One number against another: exactly for a count, else within the drills' tolerance."""
        return exact(guess, answer) if self.form == "count" else close(guess, answer)

    def told_apart(self):
        """Whether the answer and each named mistake give different answers, so a verdict can name it."""
        values = [self.answer] + [m.value for m in self.mistakes]
        names = [None] + [m.name for m in self.mistakes]
        return not any(
            names[i] != names[j] and self._same(values[i], values[j]) for i in range(len(values)) for j in range(i)
        )

    def _named(self, guess, same):
        """The verdict that names the one mistake ``guess`` fits (each of its messages, where slips of that one
        mistake give the same number); None when none does, or mistakes of different names do (a coincidence
        of this instance names nothing)."""
        found = [m for m in self.mistakes if same(guess, m.value) and not same(self.answer, m.value)]
        if len({m.name for m in found}) != 1:
            return None
        return verdict(False, " Or: ".join(dict.fromkeys(m.message for m in found)), found[0].name)

    def _check_number(self, guess):
        if self._matches(guess, self.answer):
            return verdict(True, f"Right: {number_text(self.answer)}.")
        return self._named(guess, self._matches) or verdict(False, self.hints[0])

    def _check_numbers(self, guesses):
        if _all_close(guesses, self.answer):
            return verdict(True, f"Right: {', '.join(number_text(a) for a in self.answer)}.")
        found = self._named(guesses, _all_close)
        if found:
            return found
        wrong = [i for i, (g, a) in enumerate(zip(guesses, self.answer, strict=True)) if not close(g, a)]
        first = self.entries[wrong[0]] if self.entries else f"number {wrong[0] + 1}"
        are = "is" if len(wrong) == 1 else "are"
        return verdict(False, f"{len(wrong)} of {len(self.answer)} {are} wrong; the first is {first}.")

    def _check_names(self, names):
        chosen, wanted = set(names), set(self.answer)
        if chosen == wanted:
            return verdict(True, f"Right: {', '.join(sorted(wanted))}.")
        found = self._named(chosen, lambda guess, value: set(guess) == set(value))
        if found:
            return found
        missing, extra = sorted(wanted - chosen), sorted(chosen - wanted)
        if extra:
            return verdict(False, f"{extra[0]} should not be in the list. {self.hints[0]}", "one too many")
        return verdict(False, f"{missing[0]} is missing. {self.hints[0]}", "one missing")


def derived(derive, instance, names, count=False):
    """The named mistakes of a question whose answer is written as a derivation, ``derive(instance, at)``
    (:mod:`chainrule_course.exercises.mistakes`, the generator the exercises' checks use): one per slip
    its steps offer that changes the answer, whose words are the message and ``names[words]`` the
    mistake's name. For a ``count`` (a whole number, right only when exact), a slip one off is a mistake."""
    derivation = Derivation(derive, depth=1)
    right = derivation.right(instance)
    same = _all_close if isinstance(right, list) else exact if count else close
    return [
        Mistake(answers[0], describe(chosen), names[describe(chosen)])
        for chosen, answers in derivation.variants([instance])
        if not same(answers[0], right)
    ]


def distinct(draw, largest=LARGEST_ANSWER):
    """``draw()`` again (it draws from its own random generator) until its mistakes are told apart
    and its answer is a number a person works out by hand (at most ``largest`` in size).

    Where no draw of :data:`TRIES` tells them apart, the last is kept: its verdicts still
    name the mistakes that differ from the answer.
    """
    for _ in range(TRIES):
        problem = draw()
        numbers = _numbers(problem.answer)
        sized = all(abs(x) <= largest for x in numbers) and all(x == 0 or abs(x) >= SMALLEST for x in numbers)
        if problem.told_apart() and sized:
            break
    return problem


def _numbers(answer):
    if isinstance(answer, list):
        return [x for x in answer if not isinstance(x, str)]
    return [answer]


def _all_close(guesses, answer):
    return isinstance(answer, list) and len(guesses) == len(answer) and all(map(close, guesses, answer))


def matrix_text(name, rows):
    """A small matrix in words, one row per part: ``A = [1, −2; 3, 0.5]``."""
    return f"{name} = [" + "; ".join(", ".join(number_text(x) for x in row) for row in rows) + "]"


def list_text(values):
    """A list of numbers in words: ``[1, −0.5, 2]``."""
    return "[" + ", ".join(number_text(v) for v in values) + "]"


def grid(rng, rows, cols, values):
    """A ``rows`` × ``cols`` list of lists of numbers drawn from ``values``."""
    return [[rng.choice(values) for _ in range(cols)] for _ in range(rows)]


def weighted_sum(upstream, made):
    """``L = Σ upstream ⊙ made`` over two lists of lists, as a Value: then ∂L/∂made = upstream."""
    return sum(u * m for urow, mrow in zip(upstream, made, strict=True) for u, m in zip(urow, mrow, strict=True))


def softmax_of(row):
    """softmax of a list of floats, for the messages and hints (the answers come from the engine)."""
    exps = [math.exp(v) for v in row]
    return [e / sum(exps) for e in exps]
