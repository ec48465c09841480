"""Checking an answer: compare it with the right one, name what differs, never crash on it.

The per-chapter checks of :mod:`chainrule.feedback` are built from these. A wrong answer
raises :class:`AnswerError`, whose message names the quantity, the first entry that
differs, the expected and the received value, and the known mistake the answer matches.
``None``, a string, a wrong shape, nan, or a function that raises or never returns are
all explained (:func:`call` runs a student's function under a time limit), never crashed on.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence

import numpy as np

from .tensor import Tensor

_PACKAGE = Path(__file__).resolve().parent
RTOL = 1e-6
ATOL = 1e-9
#: Seconds a student's function may run in one call before the check gives up on it.
TIME_LIMIT = 10.0


class AnswerError(AssertionError):
    """A wrong answer. ``quantity`` names what was checked; ``mistake`` is the known mistake it matches, or None."""

    def __init__(self, quantity: str, message: str, mistake: str | None = None):
        super().__init__(message)
        self.quantity = quantity
        self.mistake = mistake

    def _render_traceback_(self) -> list[str]:
        """What IPython (Jupyter, Colab) shows: the message alone, not the frames of the check."""
        return [f"{type(self).__name__}: {self}"]


class NotAnswered(AnswerError):
    """The answer is still the placeholder ``...`` of the exercise's answer cell."""


def require_answer(name: str, received) -> None:
    if received is Ellipsis:
        raise NotAnswered(name, f"{name} is not answered yet: replace the ... with your answer, then run the cell again.")


@dataclass(frozen=True)
class Mistake:
    """A known mistake: what it is, in words, and the answer it gives."""

    description: str
    answer: object


def _as_array(name: str, received, expected: np.ndarray) -> np.ndarray:
    require_answer(name, received)
    if received is None:
        raise AnswerError(name, f"{name} is None: assign your answer to it (an array of shape {expected.shape}).")
    if isinstance(received, Tensor):
        received = received.data
    try:
        array = np.asarray(received, dtype=float)
    except (TypeError, ValueError):
        raise AnswerError(
            name, f"{name} should be numbers (shape {expected.shape}), but it is a {type(received).__name__}."
        ) from None
    return array


def _matches(array: np.ndarray, answer, rtol: float, atol: float) -> bool:
    answer = np.asarray(answer, dtype=float)
    return array.shape == answer.shape and np.allclose(array, answer, rtol=rtol, atol=atol)


def _entry(index: tuple) -> str:
    return "" if not index else str(index[0]) if len(index) == 1 else str(tuple(int(i) for i in index))


def check_array(name: str, received, expected, mistakes: Sequence[Mistake] = (), rtol: float = RTOL,
                atol: float = ATOL) -> None:
    """Raise :class:`AnswerError` unless ``received`` equals ``expected`` (to ``rtol``/``atol``).

    ``mistakes`` are tried in order; the first whose answer matches ``received`` is named.
    A 2-D answer that equals the transpose of the expected one is named as transposed.
    """
    expected = np.asarray(expected, dtype=float)
    array = _as_array(name, received, expected)
    known = next((m for m in mistakes if _matches(array, m.answer, rtol, atol)), None)
    if known is None and expected.ndim == 2 and _matches(array, expected.T, rtol, atol):
        known = Mistake("the gradient is transposed (rows and columns swapped)", expected.T)
    suffix = f" It matches a known mistake: {known.description}." if known else ""
    if array.shape != expected.shape:
        raise AnswerError(name, f"{name} has shape {array.shape}, expected {expected.shape}.{suffix}",
                          known and known.description)
    bad = ~np.isfinite(array)
    if bad.any():
        index = tuple(np.argwhere(bad)[0])
        raise AnswerError(name, f"{name} has {array[index]} at entry {_entry(index)}; expected "
                                f"{expected[index]:.6g}.{suffix}", known and known.description)
    wrong = ~np.isclose(array, expected, rtol=rtol, atol=atol)
    if not wrong.any():
        return
    error = np.abs(array - expected) / (atol + rtol * np.abs(expected))
    index = tuple(np.unravel_index(np.argmax(np.where(wrong, error, -1.0)), array.shape)) if array.ndim else ()
    where = f" at entry {_entry(index)}" if array.ndim else ""
    count = f" ({int(wrong.sum())} of {wrong.size} entries differ)" if array.size > 1 else ""
    raise AnswerError(name, f"{name} is wrong{where}: expected {expected[index]:.6g}, received "
                            f"{array[index]:.6g}{count}.{suffix}", known and known.description)


def check_scalars(received: Mapping[str, object], expected: Mapping[str, float],
                  mistakes: Sequence[tuple[str, Mapping[str, float]]] = (), rtol: float = RTOL) -> None:
    """Check named numbers (for example the ``.grad`` of each node of a small graph).

    ``mistakes`` pairs a description with the numbers that mistake gives; a mistake is named
    when every number it changes matches what was received.
    """
    if not isinstance(received, Mapping):
        raise AnswerError("answer", f"the answer should map names to numbers, got a {type(received).__name__}.")
    for name in expected:
        if name not in received:
            raise AnswerError(name, f"{name} is missing from the answer.")
    numbers = {name: _as_array(name, received[name], np.asarray(0.0)) for name in expected}
    for description, wrong in mistakes:
        changed = [name for name in wrong if not np.isclose(wrong[name], expected[name], rtol=rtol)]
        if changed and all(np.allclose(numbers[name], wrong[name], rtol=rtol) for name in changed):
            name = changed[0]
            raise AnswerError(name, f"{name} is wrong: expected {expected[name]:.6g}, received "
                                    f"{float(numbers[name]):.6g}. It matches a known mistake: {description}.",
                              description)
    for name, value in expected.items():
        check_array(name, numbers[name], value, rtol=rtol)


def call(name: str, function: Callable, *args, time_limit: float = TIME_LIMIT):
    """``function(*args)``, with whatever the student's function raises turned into :class:`AnswerError`.

    ``NotImplementedError`` passes through unchanged: it is the message of an answer cell
    that has not been filled in yet ("Exercise 6.2 is not answered yet ...").
    A call that runs longer than ``time_limit`` seconds is stopped (an infinite loop, say)
    and reported as an :class:`AnswerError`, so that one answer cannot hang a grader.
    """
    require_answer(name, function)
    if function is None:
        raise AnswerError(name, f"{name} is not defined: run the cell that defines it (or write it again).")
    if not callable(function):
        raise AnswerError(name, f"{name} should be a function, but it is a {type(function).__name__}.")
    try:
        with _time_limit(name, time_limit):
            return function(*args)
    except (NotImplementedError, AnswerError):
        raise
    except Exception as error:  # the student's code raised: explain, do not crash the check
        raise AnswerError(name, f"{name} raised {type(error).__name__}: {error}{_where(error)}") from None


class _TimeUp(Exception):
    pass


@contextlib.contextmanager
def _time_limit(name: str, seconds: float):
    """Stop the body after ``seconds`` with an :class:`AnswerError` (Unix main thread; elsewhere no limit)."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise _TimeUp

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    except _TimeUp:
        raise AnswerError(name, f"{name} did not return within {seconds:g} s and was stopped. Look for a loop "
                                "that never ends.") from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _where(error: Exception) -> str:
    """" (line 3 of clip_by_norm: return 1 / 0)" for the deepest frame outside numpy and chainrule."""
    frames = [frame for frame in traceback.extract_tb(error.__traceback__)
              if "site-packages" not in frame.filename and not frame.filename.startswith(str(_PACKAGE))]
    if not frames:
        return ""
    frame = frames[-1]
    return f" (line {frame.lineno} of {frame.name}: {frame.line})" if frame.line else f" (in {frame.name})"
