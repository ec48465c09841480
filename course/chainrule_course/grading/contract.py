"""The checks' side of the contract: the context a check runs in, which the grader sets.

A check (:mod:`chainrule_course.exercises`) runs in a notebook and in the grader alike. What differs
is set here, per thread, by whoever runs it:

- **the rule** (:func:`allowed`): the modules an answer's cell may import; the check runs each
  answer it calls apart, with those only, as the grader does;
- **the quantity scored** (:func:`scoring_part`): the grader runs a check once per quantity,
  and a check's report then raises only that quantity's verdict;
- **the secret** (:func:`hidden_inputs`): the grader's hidden tests draw their inputs from the
  seeds in their source mixed with a secret of its own process (:func:`seeded`);
- **fresh inputs** (:func:`fresh`): a public check also draws inputs no one has seen, from a new
  seed at each run in a notebook, and from the secret in the grader (:func:`fresh_inputs`).

Outside the grader, a check runs with no quantity and no secret: its inputs are the ones its
source names, and it reports every quantity.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import threading
from collections.abc import Callable
from typing import Any, Protocol, cast

from . import apart


class _Context(threading.local):
    quantity: str | None = None  # the quantity being scored, or None for all of them
    rule: apart.AnswerRule | None = None  # the rule of the check that is running
    opened: dict = {}  # the answers it has started, by cell
    secret: bytes | None = None  # the grader's secret while it runs a hidden test
    fresh: int | None = None  # the seed of fresh inputs while the grader runs a public test


_context = _Context()


def scored_quantity() -> str | None:
    """The quantity being scored (inside :func:`scoring_part`), or None: every quantity counts."""
    return _context.quantity


@contextlib.contextmanager
def scoring_part(name: str | None):
    """Within the block, a check's report about ``name`` raises only ``name``'s verdict.

    A grader runs a check once per quantity this way, so that a right ∂J/∂W1 earns its
    points when ∂J/∂W2 is wrong. A report without ``name`` is not affected.
    """
    previous, _context.quantity = _context.quantity, name
    try:
        yield
    finally:
        _context.quantity = previous


@contextlib.contextmanager
def hidden_inputs(secret: bytes):
    """Within the block, every seed a check draws its inputs from is mixed with ``secret`` (:func:`seeded`).

    The grader runs its hidden tests so, with a secret that exists only in its own process:
    the seeds in a hidden test's source (which is public) no longer tell what the inputs are.
    """
    previous, _context.secret = _context.secret, secret
    try:
        yield
    finally:
        _context.secret = previous


def seeded(seed: int) -> int:
    """``seed``; inside :func:`hidden_inputs`, a 63-bit seed drawn from it and the grader's secret.

    A check calls it where it makes its random generator, and names the result in its
    messages, so that a student can rebuild the inputs of a failed hidden test.
    """
    if _context.secret is None:
        return seed
    digest = hashlib.sha256(_context.secret + b"/" + str(seed).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


@contextlib.contextmanager
def fresh_inputs(secret: bytes):
    """Within the block, :func:`fresh` gives a seed drawn from ``secret``: the grader runs a public test so, twice
    (with the reference, then with the answer's record), and both runs must draw the same inputs."""
    digest = hashlib.sha256(secret + b"/fresh").digest()
    previous, _context.fresh = _context.fresh, 1000 + int.from_bytes(digest[:4], "big") % 900_000
    try:
        yield
    finally:
        _context.fresh = previous


def fresh() -> int:
    """A seed for inputs that no answer was written for: a check cell draws its answer's last inputs from it.

    In a notebook it is new at each run (the check cell says which: ``feedback.fresh``); the
    grader's come from its secret (:func:`fresh_inputs`, :func:`hidden_inputs`). A table of the
    public inputs' answers therefore fails in the notebook as it fails in the grade.
    """
    if _context.secret is not None:
        return seeded(FRESH)
    if _context.fresh is not None:
        return _context.fresh
    import random

    return random.SystemRandom().randrange(1000, 901_000)


def grading() -> bool:
    """Whether the grader is running a test (public or hidden): its inputs are then its own."""
    return _context.secret is not None or _context.fresh is not None


#: The seed a hidden test's :func:`fresh` mixes with the grader's secret.
FRESH = 86


class Checked(Protocol):
    """A check that :func:`allowed` marked: called as the check is, and ``allowed``, the modules its answer
    cells may import (``make assignments`` reads them: tools/book/questions.py)."""

    allowed: tuple[str, ...]

    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...


def allowed(*modules: str) -> Callable[[Callable], Checked]:
    """Mark a check: the answer cells it checks run apart, with Python's standard library and ``modules`` only.

    While the check runs, :func:`chainrule_course.exercises.calling.call` runs a function defined in a
    notebook's cell as the grader does (:mod:`chainrule_course.grading.apart`): that cell alone, in a
    process of its own where nothing else exists, its results carried back as data. ``make
    assignments`` writes the modules into the question's test, for the grader.
    """
    rule = apart.AnswerRule(tuple(modules))

    def mark(check: Callable) -> Checked:
        @functools.wraps(check)
        def checked(*args, **kwargs):
            previous = (_context.rule, _context.opened)
            _context.rule, _context.opened = rule, {}
            try:
                return check(*args, **kwargs)
            finally:
                for answer in _context.opened.values():
                    answer.close()
                _context.rule, _context.opened = previous

        # A function takes any attribute: with its ``allowed`` set on the next line, ``checked`` is a Checked.
        marked = cast(Checked, checked)
        marked.allowed = tuple(modules)
        return marked

    return mark


def running_apart() -> tuple[apart.AnswerRule | None, dict]:
    """The rule of the check that is running (None outside one), and the answers it has started."""
    return _context.rule, _context.opened
