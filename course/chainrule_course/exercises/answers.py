"""Checking an answer: compare it with the right one, name what differs, never crash on it.

The per-chapter checks of :mod:`chainrule_course.exercises.feedback` are built from these. A wrong answer
raises :class:`AnswerError`, whose message names the quantity, the first entry that
differs, the expected and the received value, and the known mistake the answer matches.
``None``, a string, a wrong shape, nan, or a function that raises or never returns are
all explained (:func:`call` runs a student's function under a time limit), never crashed on.
"""

from __future__ import annotations

import contextlib
import functools
import numbers
import sys
import textwrap
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from chainrule.value import Value

from ..grading.contract import scored_quantity

# numpy is imported where an array is compared, not here: the scalar chapters' checks
# (chainrule_course.exercises.scalar_checks) run where there is no numpy, such as the page's Python.

#: A float32 answer may differ from the right one by this much, relative (of an entry or of the
#: largest entry), and an entry near 0 by ATOL: its own rounding.
RTOL = 1e-5
ATOL = 1e-9
#: A float64 answer (and Python's float) to a formula differs from the right one only by its
#: rounding, a few ulps times the problem's condition: 1e-12 of the largest entry allows a
#: factor of 4,500. A numerical approximation does not pass: central differences are off by
#: about 1e-10 of the largest entry at their best step.
RTOL64 = 1e-12
ATOL64 = 1e-15


#: The relative tolerance of each precision below float64's: float32 about a hundred times its machine
#: epsilon, float16 and bfloat16 (whose epsilons are 1e-3 and 8e-3) about twenty times.
LOWER = {"float32": RTOL, "float16": 2e-2, "bfloat16": 1.6e-1}


def tolerances(received) -> tuple[float, float]:
    """(rtol, atol) for ``received`` compared in its own precision: :data:`RTOL64` for float64 and Python's
    numbers, :data:`RTOL` for float32, and float16's and bfloat16's own (:data:`LOWER`)."""
    precision = _precision(received)
    return (LOWER[precision], ATOL) if precision else (RTOL64, ATOL64)


#: Width of the lines Jupyter and Colab show an :class:`AnswerError` in; wrapping here, at
#: spaces, keeps an output area from breaking a word in two. JupyterLab in a 900 px window
#: with the file browser open fits 58 characters of output on a line (it breaks anywhere).
WIDTH = 56
#: Sizes named in messages: the symbol and what it counts.
SIZE_WORDS = {"N": "the batch size", "d": "the input width", "h": "the hidden width", "q": "the number of classes"}


def wrapped(message: str, width: int = WIDTH) -> list[str]:
    """``message`` in lines of at most ``width`` characters, each of its lines wrapped at spaces."""
    lines = []
    for line in message.split("\n"):
        indent = line[: len(line) - len(line.lstrip())]
        lines += textwrap.wrap(
            line, width, subsequent_indent=indent + "  ", break_long_words=False, break_on_hyphens=False
        ) or [""]
    return lines


class AnswerError(AssertionError):
    """A wrong answer. ``quantity`` names what was checked; ``mistake`` is the known mistake it matches, or None."""

    def __init__(self, quantity: str, message: str, mistake: str | None = None):
        super().__init__(message)
        self.quantity = quantity
        self.mistake = mistake

    def _render_traceback_(self) -> list[str]:
        """What IPython (Jupyter, Colab) shows: the message alone, not the frames of the check."""
        return wrapped(f"{type(self).__name__}: {self}")


class NotAnswered(AnswerError):
    """The answer is still the placeholder of its answer cell.

    That is ``...``, or a function that raises NotImplementedError.
    """


def require_answer(name: str, received) -> None:
    if received is Ellipsis:
        raise NotAnswered(
            name, f"{name} is not answered yet: replace the ... with your answer, then run the cell again."
        )


@dataclass(frozen=True)
class Mistake:
    """A known mistake: what it is, in words, and the answer it gives."""

    description: str
    answer: object


def _tensor_data(received):
    """A chainrule Tensor's array, or ``received`` (the Tensor's module is loaded when one exists)."""
    tensor = sys.modules.get("chainrule.tensor")
    return received.data if tensor is not None and isinstance(received, tensor.Tensor) else received


def _given(name: str, received, wanted: str) -> None:
    """Raise for an answer that is not given: not answered yet, None, or a Value instead of its number."""
    require_answer(name, received)
    if received is None:
        raise AnswerError(name, f"{name} is None: assign your answer to it ({wanted}).")
    if isinstance(received, Value):
        raise AnswerError(
            name, f"{name} is a Value ({received!r:.60}): give its number, .data (or .grad for a gradient)."
        )


def _as_array(name: str, received, expected):
    import numpy as np

    _given(name, received, "a number" if expected.shape == () else f"an array of shape {expected.shape}")
    received = _tensor_data(received)
    if hasattr(received, "detach"):  # a torch tensor, which numpy reads only once detached
        received = received.detach()
    if _holds_text(received):  # numpy would read "5.07" as the number: a pasted string is not an answer
        try:
            np.asarray(received, dtype=float)
            hint = "remove the quotes"
        except ValueError:
            shape = "one number" if expected.shape == () else f"an array of shape {expected.shape}"
            hint = f"compute it in Python ({shape})"
        raise AnswerError(name, f"{name} is text ({received!r:.60}), not a number: {hint}.")
    try:
        array = np.asarray(received, dtype=float)
    except (TypeError, ValueError, RuntimeError):
        raise AnswerError(
            name, f"{name} should be numbers (shape {expected.shape}), but it is a {type(received).__name__}."
        ) from None
    return array


def _holds_text(value) -> bool:
    if isinstance(value, (str, bytes)):  # numpy's str_ and bytes_ are these too
        return True
    if getattr(getattr(value, "dtype", None), "kind", None) in ("S", "U"):
        return True
    return isinstance(value, (list, tuple)) and any(_holds_text(item) for item in value)


def _precision(received) -> str | None:
    """ "float32" when the answer holds numbers of less than double precision, else None."""
    dtype = getattr(_tensor_data(received), "dtype", None)
    name = str(dtype).removeprefix("torch.") if dtype is not None else ""
    return name if name in ("float32", "float16", "bfloat16") else None


def _tolerance(expected, rtol: float, atol: float) -> float:
    """The absolute tolerance: ``atol``, and ``rtol`` of the largest expected entry.

    Scaling by the largest entry lets a float32 answer pass: its rounding error is about
    1e-7 of the largest numbers it adds up, which can be far more than 1e-7 of a small entry.
    """
    import numpy as np

    finite = np.abs(expected)[np.isfinite(expected)]  # a mistake's answer may hold inf (an overflow)
    return max(atol, rtol * float(np.max(finite, initial=0.0)))


def _matches(array, answer, rtol: float, atol: float) -> bool:
    import numpy as np

    answer = np.asarray(answer, dtype=float)
    return array.shape == answer.shape and np.allclose(array, answer, rtol=rtol, atol=_tolerance(answer, rtol, atol))


def _precision_note(received, array, expected, rtol: float) -> str:
    """What the check allowed for, when the answer is close but not within it."""
    import numpy as np

    precision = _precision(received)
    if precision:
        return (
            f" Your answer is {precision}; the check allows for its rounding (a relative error of {rtol:g}), "
            "and this difference is larger."
        )
    if rtol >= RTOL:
        return ""
    scale = float(np.max(np.abs(expected), initial=0.0))
    if scale and float(np.max(np.abs(array - expected))) <= RTOL * scale:
        return _CLOSE.format(rtol=rtol)
    return ""


def _entry(index: tuple) -> str:
    return "" if not index else str(index[0]) if len(index) == 1 else str(tuple(int(i) for i in index))


def known_mistakes(found: Sequence[str]) -> str:
    """ " It matches a known mistake: ..." or, when several give the same answer, all of them: the check
    cannot tell which, and says so."""
    if not found:
        return ""
    if len(found) == 1:
        return f" It matches a known mistake: {found[0]}."
    listed = "; or ".join(f"({number}) {text}" for number, text in enumerate(found, start=1))
    return (
        f" It matches {len(found)} known mistakes that give the same numbers, and the check cannot tell which: "
        f"{listed}."
    )


def _symbols(shape: tuple, sizes: Mapping[str, int]) -> str | None:
    """ "(N, h)" for shape (11, 7) when N = 11 and h = 7 are the only sizes of those values."""
    names = []
    for length in shape:
        matching = [symbol for symbol, size in sizes.items() if size == length]
        if len(matching) != 1:
            return None
        names.append(matching[0])
    return "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"


def _shape_message(name: str, shape: tuple, expected: tuple, sizes: Mapping[str, int]) -> str:
    message = f"{name} has shape {shape}, expected {expected}"
    if shape == ():  # "has shape ()" is a number to a student
        message = f"{name} is one number, but it should be an array of shape {expected}"
    received_symbols, expected_symbols = _symbols(shape, sizes), _symbols(expected, sizes)
    if not sizes or not expected_symbols:
        return message + "."
    if received_symbols and shape:
        message = f"{name} has shape {shape} = {received_symbols}, expected {expected} = {expected_symbols}"
    else:
        message += f" = {expected_symbols}"
    used = [symbol for symbol in sizes if symbol in (received_symbols or "") + expected_symbols]
    words = ", ".join(f"{symbol} = {sizes[symbol]} is {SIZE_WORDS.get(symbol, 'a size')}" for symbol in used)
    return f"{message}; here {words}."


def check_array(
    name: str,
    received,
    expected,
    mistakes: Sequence[Mistake] = (),
    rtol: float | None = None,
    atol: float | None = None,
    sizes: Mapping[str, int] | None = None,
    terms: float = 0.0,
    guess: bool = True,
) -> None:
    """Raise :class:`AnswerError` unless ``received`` equals ``expected``.

    Entries may differ by ``rtol`` of themselves or of the largest expected entry (or by
    ``atol``); by default both are the answer's own precision's (:func:`tolerances`), so
    float32 answers pass and a float64 answer must be a formula's, not an approximation's.
    ``mistakes`` are tried in order; every one whose answer matches ``received`` is named,
    most likely first. A 2-D answer that equals the transpose of the expected one is named
    as transposed, unless ``guess`` is false (a check that names mistakes from all its problems,
    :mod:`chainrule_course.exercises.mistakes`, never names one from this input alone).
    ``sizes`` (``{"N": 11, ...}``) let a shape message say which size each length is.
    ``terms`` is the largest sum of the absolute values of the terms an entry adds up, where they
    cancel (a normalisation's backward pass): the rounding is relative to it, not to the result.
    """
    import numpy as np

    own_rtol, own_atol = tolerances(received)
    rtol, atol = own_rtol if rtol is None else rtol, own_atol if atol is None else atol
    expected = np.asarray(expected, dtype=float)
    array = _as_array(name, received, expected)
    loose = max(rtol, RTOL), max(atol, ATOL)  # a mistake is named when the answer is near what it gives
    found = [
        m.description
        for m in mistakes
        if _matches(array, m.answer, *loose) and not _matches(expected, m.answer, *loose)
    ]
    if guess and not found and expected.ndim == 2 and _matches(array, expected.T, *loose):
        found = ["the gradient is transposed (rows and columns swapped)"]
    suffix, mistake = known_mistakes(found), found[0] if found else None
    if array.shape != expected.shape:
        raise AnswerError(name, _shape_message(name, array.shape, expected.shape, sizes or {}) + suffix, mistake)
    bad = ~np.isfinite(array)
    if bad.any():
        index = tuple(np.argwhere(bad)[0])
        raise AnswerError(
            name,
            f"{name} has {array[index]} at entry {_entry(index)}; expected {_expected(expected, index):.6g}.{suffix}",
            mistake,
        )
    tolerance = max(_tolerance(expected, rtol, atol), rtol * terms)
    wrong = ~np.isclose(array, expected, rtol=rtol, atol=tolerance)
    if not wrong.any():
        return
    error = np.abs(array - expected) / (tolerance + rtol * np.abs(expected))
    index = tuple(np.unravel_index(np.argmax(np.where(wrong, error, -1.0)), array.shape)) if array.ndim else ()
    where = f" at entry {_entry(index)}" if array.ndim else ""
    count = f" ({int(wrong.sum())} of {wrong.size} entries differ)" if array.size > 1 else ""
    note = "" if found else _precision_note(received, array, expected, rtol)
    digits = ".17g" if note.startswith(" It is close") else ".6g"
    raise AnswerError(
        name,
        f"{name} is wrong{where}: expected {_expected(expected, index):{digits}}, received {array[index]:{digits}}"
        f"{count}."
        f"{suffix}{note}",
        mistake,
    )


class Report:
    """Checks several quantities, all of them, then raises one :class:`AnswerError` that lists each verdict.

    ``title`` says what was called and on which data; a check of one quantity raises its own
    error, with the title in front.

    Inside :func:`chainrule_course.grading.contract.scoring_part` a report about that quantity
    raises only its verdict, so a grader can give each quantity its own points; :func:`quantities` lists the names the
    reports of a check use.
    """

    def __init__(self, title: str = "", separate: bool = True):
        self.title, self.separate = title, separate  # separate: each name is worth points of its own
        self.verdicts: list[tuple[str, AnswerError | None]] = []

    def check(self, name: str, run: Callable[[], None]) -> None:
        try:
            run()
        except NotAnswered as error:
            if scored_quantity() in (None, name):
                raise
            self.verdicts.append((name, error))  # another quantity's: not this part's business
        except AnswerError as error:
            self.verdicts.append((name, error))
        else:
            self.verdicts.append((name, None))

    def close(self, after: str = "") -> None:
        for names in _seen.lists if self.separate else ():
            names += [name for name, _ in self.verdicts if name not in names]
        scored = scored_quantity()
        if scored is not None and any(name == scored for name, _ in self.verdicts):
            self.verdicts = [(name, error) for name, error in self.verdicts if name == scored]
        errors = [error for _, error in self.verdicts if error is not None]
        if not errors:
            return
        head = f"{self.title}: " if self.title else ""
        tail = f"\n{after}" if after else ""
        first = errors[0]
        if len(self.verdicts) == 1:
            raise AnswerError(first.quantity, f"{head}{first}{tail}", first.mistake)
        right = len(self.verdicts) - len(errors)
        shared = known_mistakes([first.mistake]) if first.mistake else ""
        if len(errors) == 1 or not shared or any(not str(e).endswith(shared) for e in errors):
            shared = ""  # each line keeps its own mistake; one said once when every wrong line has it
        lines = [
            f"  right: {name}" if error is None else f"  WRONG: {str(error).removesuffix(shared)}"
            for name, error in self.verdicts
        ]
        ending = f"\nIt matches a known mistake: {first.mistake} (all {len(errors)} wrong values)." if shared else ""
        raise AnswerError(
            first.quantity,
            f"{head}{right} of {len(self.verdicts)} right.\n" + "\n".join(lines) + ending + tail,
            first.mistake,
        )


class _Seen(threading.local):
    def __init__(self):
        self.lists: list[list[str]] = []  # the lists quantities() is filling


_seen = _Seen()


@contextlib.contextmanager
def quantities():
    """Within the block, collect the names the reports check, in order: ``with quantities() as names:``."""
    names: list[str] = []
    _seen.lists.append(names)
    try:
        yield names
    finally:
        _seen.lists.remove(names)


def check_scalars(
    received: Mapping[str, object],
    expected: Mapping[str, float],
    mistakes: Sequence[tuple[str, Mapping[str, float]]] = (),
    rtol: float | None = None,
    title: str = "",
    separate: bool = True,
) -> None:
    """Check named numbers (for example the ``.grad`` of each node of a small graph), each of them.

    With ``separate`` false the numbers are scored together, as one quantity: for an answer whose
    entries a mistake hits differently on different inputs (the values of a drawn tape), so that
    a mistake costs the same points whatever the grader's hidden inputs are.

    Each is compared in its own precision (:func:`tolerances`) unless ``rtol`` is given.
    ``mistakes`` pairs a description with the numbers that mistake gives, most likely first;
    a number that matches what a mistake gives for it is wrong by that mistake, and all the
    mistakes that match are named.
    """
    if not isinstance(received, Mapping):
        raise AnswerError("answer", f"the answer should map names to numbers, got a {type(received).__name__}.")
    for name in expected:
        if name not in received:
            raise AnswerError(name, f"{name} is missing from the answer.")
    numbers: dict[str, float | tuple | AnswerError] = {}
    for name in expected:
        try:
            numbers[name] = _as_number(name, received[name])
        except AnswerError as error:  # reported as this name's verdict, so the others still get theirs
            numbers[name] = error
    found: dict[str, list[str]] = {name: [] for name in expected}
    for description, wrong in mistakes:  # each number is matched alone: a grader scores each on its own
        for name in wrong:
            number = numbers[name]
            if (
                not _close(wrong[name], expected[name], RTOL, 1e-8)
                and isinstance(number, float)
                and _close(number, wrong[name], RTOL, 1e-8)
            ):
                found[name].append(description)
    report = Report(title, separate)
    for name, value in expected.items():
        own = tolerances(received[name]) if rtol is None else (rtol, ATOL)
        report.check(name, functools.partial(_check_scalar, name, numbers[name], value, found[name], own))
    report.close()


def _expected(expected, index) -> float:
    """An expected entry as a message shows it: 0 where it is only the rounding of a zero (-5.55e-17 beside
    entries near 1), since the exact answer is 0 there."""
    import numpy as np

    value = float(expected[index])
    scale = float(np.max(np.abs(expected))) if expected.size else 0.0
    return 0.0 if abs(value) <= 1e-12 * scale else value


def _shown(value: float, close: bool = False) -> str:
    """A number as a message shows it: a count exactly (1,243,268), anything else to 6 digits (17 when ``close``)."""
    if float(value).is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return repr(float(value)) if close else f"{value:.6g}"


def _close(a: float, b: float, rtol: float, atol: float) -> bool:
    """numpy's ``isclose(a, b)`` for two numbers: |a - b| ≤ atol + rtol·|b|; equal infinities are close, nan is not."""
    return a == b or abs(a - b) <= atol + rtol * abs(b)


def _as_number(name: str, received) -> float | tuple:
    """``received`` as one float, or the shape it has when it is not one number (an array, a list)."""
    if type(received) in (int, float):  # the common answer, and all there is where numpy is not
        return float(received)
    numpy_type = type(received).__module__.partition(".")[0] == "numpy"
    if isinstance(received, numbers.Real) and not isinstance(received, bool) and not numpy_type:
        return float(received)  # a Fraction, say: a number, read without numpy (the page has none)
    if "numpy" not in sys.modules and _plain(received):
        return _plain_number(name, received)
    import numpy as np

    array = _as_array(name, received, np.asarray(0.0))
    return float(array) if array.shape == () else array.shape


def _plain(value) -> bool:
    """Whether ``value`` is made of Python's own numbers, strings, lists and tuples (no array in it)."""
    if isinstance(value, (list, tuple)):
        return all(_plain(item) for item in value)
    return value is None or isinstance(value, (bool, int, float, str, bytes, Value))


def _plain_number(name: str, received) -> float | tuple:
    """:func:`_as_number` of a value without numpy: what numpy would say of it, for these types."""
    _given(name, received, "a number")
    if _holds_text(received):
        try:
            float(received)
            hint = "remove the quotes"
        except (TypeError, ValueError):
            hint = "compute it in Python (one number)"
        raise AnswerError(name, f"{name} is text ({received!r:.60}), not a number: {hint}.")
    if isinstance(received, (list, tuple)):
        shape: list[int] = []
        items: object = received
        while isinstance(items, (list, tuple)):
            shape.append(len(items))
            items = items[0] if items else None
        return tuple(shape)
    return float(received)


def _check_scalar(name: str, number: float | tuple | AnswerError, value: float, found: list[str], own) -> None:
    """``number`` against ``value``, within ``own`` = (rtol, atol)."""
    rtol, atol = own
    if isinstance(number, AnswerError):
        raise number
    if isinstance(number, float) and _close(number, value, rtol, atol):
        return
    if not isinstance(number, float):
        raise AnswerError(name, f"{name} should be one number, but it has shape {number}.")
    rounded = next((k for k in range(1, 7) if abs(round(value, k) - float(number)) < 1e-12 * max(1, abs(value))), None)
    if rounded is not None and not found:
        raise AnswerError(
            name,
            f"{name} is {value:.6g} rounded to {rounded} decimals ({float(number):.{rounded}f}), but the check "
            f"accepts a relative error of {rtol:g}: do not round it (compute it in Python, not by hand).",
            "a rounded number",
        )
    close = not found and rtol < RTOL and _close(float(number), value, RTOL, ATOL)
    raise AnswerError(
        name,
        f"{name} is wrong: expected {_shown(value, close)}, received {_shown(float(number), close)}."
        + known_mistakes(found)
        + (_CLOSE.format(rtol=rtol) if close else ""),
        found[0] if found else None,
    )


_CLOSE = (
    " It is close, but a float64 answer to a formula differs from the right one only by rounding "
    "(a relative error of {rtol:g}): a numerical approximation, such as central differences, "
    "differs by more, so use the derivative's formula. (Computed in float32? Return float32 arrays: "
    "the check then allows float32's rounding.)"
)
