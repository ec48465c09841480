"""Calling a student's function safely: on copies, under a time limit, with every failure explained.

:func:`call` gives the function copies of its arguments and says so when it changed them,
stops it after :data:`TIME_LIMIT` seconds, and turns whatever it raises into an
:class:`~chainrule_course.exercises.answers.AnswerError` that names the line; :func:`returned`
unpacks what it returned. The grader's recording (:mod:`chainrule_course.grading.scoring`)
compares arguments with :func:`copied` and :func:`unchanged`, as :func:`call` does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import re
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

from ..grading import apart, review
from ..grading.apart import IN_PLACE, TIME_LIMIT, ChangedInPlace, Refused
from ..grading.apart import TimeUp as _TimeUp
from ..grading.contract import running_apart
from . import notebook, verdicts
from .answers import AnswerError, NotAnswered, require_answer, wrapped
from .notebook import cell_source as cell_source

_PACKAGE = Path(__file__).resolve().parents[1]  # chainrule: its frames are not the student's


def _is_array(value) -> bool:
    """Whether ``value`` is a numpy array. numpy is not imported here: where it is not loaded, no array exists."""
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.ndarray)


def _is_numpy_number(value) -> bool:
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.generic)


def call(name: str, function: Callable, *args, names: Sequence[str] = (), time_limit: float = TIME_LIMIT):
    """``function(*args)``, with whatever the student's function raises turned into :class:`AnswerError`.

    The function gets copies of the arrays (and lists of them) in ``args``, so the check's
    own inputs, from which it computes the expected answer, stay as they were; a function
    that changed a copy in place (``X /= 255``) fails with a message that names the
    argument (``names`` gives the arguments' names, in order).
    A ``NotImplementedError`` that says "not answered yet" (the answer cell as handed out)
    becomes :class:`NotAnswered`, shown as one line. A call that runs longer than
    ``time_limit`` seconds is stopped (an infinite loop, say), and a function that returns
    None is asked whether a ``return`` is missing, so that one answer cannot hang or crash
    a grader.
    """
    require_answer(name, function)
    if function is None:
        raise AnswerError(name, f"{name} is not defined: run the cell that defines it (or write it again).")
    if not callable(function):
        raise AnswerError(name, f"{name} should be a function, but it is a {type(function).__name__}.")
    function = _apart(name, function, time_limit)
    given = [copied(argument) for argument in args]
    try:
        with _time_limit(name, time_limit, alarm=not isinstance(function, _Apart)):
            result = function(*given)
    except AnswerError:
        raise
    except Refused as error:  # what the exercise does not allow, or a name from another cell
        raise AnswerError(name, str(error), error.mistake) from None
    except ChangedInPlace as error:  # the grader's replay of a call that did this in the kernel
        message = _in_place_message(name, error.positions, names, error.rounded)
        raise AnswerError(name, message, IN_PLACE) from None
    except NotImplementedError as error:
        if "not answered yet" in str(error):
            raise NotAnswered(name, str(error)) from None
        raise AnswerError(name, _raised(name, error)) from None
    except RecursionError as error:
        raise AnswerError(name, _recursion_message(name, error), apart.RECURSION) from None
    except Exception as error:  # the student's code raised: explain, do not crash the check
        raise AnswerError(name, _raised(name, error)) from None
    changed = [i for i, (argument, copy) in enumerate(zip(args, given, strict=True)) if not unchanged(argument, copy)]
    if changed:
        rounded = [i for i in changed if by_rounding(args[i], given[i])]
        raise AnswerError(name, _in_place_message(name, changed, names, rounded), IN_PLACE)
    if result is None:
        raise AnswerError(name, f"{name} returned None: is a `return` missing at its end?")
    return result


def other_cells(function) -> list[str]:
    """What of the notebook's other cells an answer may be carried with (``apart.carried``): the cells
    of the functions its globals hold now (not an older version of one) and of its classes, and the
    imports of every cell this kernel ran."""
    import types

    found = []
    for name, value in list(getattr(notebook.unwrapped(function), "__globals__", {}).items()):
        if isinstance(value, types.FunctionType) and value is not notebook.unwrapped(function):
            cell = cell_source(value)
        elif isinstance(value, type) and value.__module__ == "__main__":  # a class: the last cell defining it
            cell = notebook.graded_cell(notebook.notebook_cells(), name)
        else:
            continue
        if cell is not None and cell[1] not in found:
            found.append(cell[1])
    imports = [line for cell in notebook.notebook_cells() for line in _imports(cell)]
    return [*found, "\n".join(dict.fromkeys(imports))]


@functools.lru_cache(maxsize=4096)
def _imports(cell: str) -> tuple[str, ...]:
    """The import statements at the top level of a cell, once per cell's text (a check calls an answer
    many times, and a notebook has many cells)."""
    import ast

    try:
        tree = ast.parse(apart.as_python(cell))  # the cell as IPython reads it, as the grader does
    except SyntaxError:
        return ()
    return tuple(ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom)))


class _Apart:
    """Stands for a notebook's answer in a check: calls its cell, run apart, as the grader does."""

    def __init__(self, name: str, function, answer, called: str):
        self.__name__ = name
        self._answer = answer
        self._called = called
        defines = apart.top_level((cell_source(function) or ("", ""))[1])
        self._elsewhere = {
            other: _module_of(value)
            for other, value in getattr(notebook.unwrapped(function), "__globals__", {}).items()
            if other not in defines and not other.startswith("__")
        }

    def __call__(self, *args):
        entry = self._answer.call(self._called, apart.key(args, {}))
        if not getattr(self._answer, "cell_shown", False):
            self._answer.cell_shown = True
            show_printed(f"{self.__name__}'s cell", self._answer.told, self._answer)
        show_printed(self.__name__, entry, self._answer)
        show_review(self.__name__, entry, self._answer)
        return apart.result_of(self.__name__, entry, self._elsewhere)


#: Lines of what an answer prints that a check shows, over all the calls it makes of it.
PRINT_LINES = 12


def show_printed(name: str, entry: dict, answer) -> None:
    """Print what the answer printed in this call (``entry["printed"]``), within the answer's share of
    :data:`PRINT_LINES`; once that is spent, say once that the rest is not shown."""
    text, cut = entry.get("printed"), entry.get("cut", 0)
    if not isinstance(text, str) or getattr(answer, "print_room", PRINT_LINES) < 0:
        return
    room = getattr(answer, "print_room", PRINT_LINES)
    lines = text.splitlines() or [""]
    shown = [line if len(line) <= 160 else line[:160] + " ..." for line in lines[:room]]
    answer.print_room = room - len(shown)
    if shown:
        print(f"{name} printed:" + "".join("\n  " + line for line in shown))
    if len(lines) > len(shown) or cut:
        answer.print_room = -1
        print(f"  ... and more, not shown: the check calls {name} many times. Print less, or in a cell of its own.")


def show_review(name: str, entry: dict, answer) -> None:
    """Say what the grader will put the answer up for review for, each reason once per check, in the grader's
    words (:mod:`chainrule_course.grading.review`): what of :data:`~chainrule_course.grading.review.REVIEW`
    the code that runs for it uses, and what of :data:`~chainrule_course.grading.review.DID` this call
    (``entry``) was seen doing. In the "check everything" cell, the summary says it under the verdict."""
    said = getattr(answer, "reviewed", None)
    reasons = review.review_reasons([answer.source]) if said is None else []  # its code: at its first call
    if said is None:
        said = answer.reviewed = []
    seen = review.seen_in(entry)
    reasons += [why for word, why in review.DID.items() if word in seen]
    new = [reason for reason in reasons if reason not in said]
    if not new:
        return
    said += new
    summarised = verdicts.summarising()
    if summarised is not None:
        summarised.up_for_review(name, new)
    else:
        print("\n".join(wrapped(verdicts.review_note(name, new))))


def _apart(name: str, function, time_limit: float):
    """``function`` run apart when a check with a rule is running and it comes from a notebook cell."""
    rule, opened = running_apart()
    if rule is None:
        return function
    called = name if name.isidentifier() else getattr(function, "__name__", name)
    found = cell_source(function)
    main = sys.modules.get("__main__")
    if found is None and getattr(main, called, None) is function:  # the notebook's name for a module's function
        found = notebook.graded_cell(notebook.notebook_cells(), called)
    if found is None:  # not a notebook's: a check called from a module, as the tests do
        return function
    summarised = verdicts.summarising()
    if summarised is not None:  # the "check everything" cell: the cell the grader will run
        found = (found[0], summarised.graded_cell(called, found[1]))
    code = apart.answer_code(found[1], [called])
    rule = dataclasses.replace(rule, carried=apart.carried(other_cells(function), found[1], [called], rule.allowed))
    if (code, rule) not in opened:
        if summarised is None:  # once per check and answer: Colab's answer is a round trip
            notebook.no_later_draft(name, called, found[1])
        if apart.can_start_processes():
            opened[code, rule] = apart.Answer(code, rule, limit=time_limit)
        else:  # the web page's Python
            opened[code, rule] = apart.InProcess(code, rule)
    return _Apart(name, function, opened[code, rule], called)


def _module_of(value) -> str | None:
    """The module a notebook's name comes from (None for the notebook's own, ``__main__``)."""
    import types

    module = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
    return None if not isinstance(module, str) or module == "__main__" else module


def returned(name: str, result, names: Sequence[str]) -> tuple:
    """The values a function returned, one per name: a tuple, a list (any collection) or a 1-D array of them."""
    wanted = f"{name} should return {len(names)} values, ({', '.join(names)})"
    if _is_array(result):
        if result.shape == (len(names),):
            return tuple(result)
        raise AnswerError(name, f"{wanted}, but it returned one array of shape {result.shape}.")
    one = isinstance(result, (str, bytes, Mapping)) or not isinstance(result, Collection)  # a dict has no order
    if not one and len(result) == len(names):
        return tuple(result)  # a tuple, a list, dict.values(), ...
    if not one:
        raise AnswerError(name, f"{wanted}, but it returned {len(result)}.")
    number = f" ({result:.6g})" if isinstance(result, (int, float)) or _is_numpy_number(result) else ""
    raise AnswerError(name, f"{wanted}, but it returned one {type(result).__name__}{number}.")


def copied(value):
    """``value`` with its arrays copied, also inside lists, tuples and dicts (numbers need no copy)."""
    if _is_array(value):
        return value.copy()
    if isinstance(value, (list, tuple)):
        return type(value)(copied(item) for item in value)
    if isinstance(value, dict):
        return {key: copied(item) for key, item in value.items()}
    return value


def unchanged(before, after) -> bool:
    """Whether ``after`` (a copy of ``before`` that a function was given) still holds what ``before`` does."""
    if _is_array(before):
        import numpy as np

        return (
            isinstance(after, np.ndarray)
            and before.shape == after.shape
            and before.dtype == after.dtype
            and bool(np.array_equal(before, after, equal_nan=before.dtype.kind in "fc"))
        )
    if isinstance(before, (list, tuple)):
        return (
            type(after) is type(before)
            and len(after) == len(before)
            and all(unchanged(b, a) for b, a in zip(before, after, strict=True))
        )
    if isinstance(before, dict):
        return (
            isinstance(after, dict)
            and after.keys() == before.keys()
            and all(unchanged(before[k], after[k]) for k in before)
        )
    if isinstance(before, (int, float, complex)) or _is_numpy_number(before):  # an entry of a list that was copied
        return type(after) is type(before) and (after == before or (after != after and before != before))
    return True  # an object that was not copied: the function had the caller's own


def by_rounding(before, after) -> bool:
    """Whether the array ``after`` differs from ``before`` only by rounding (as ``x += h; x -= h`` leaves it)."""
    if not (_is_array(before) and _is_array(after)) or before.shape != after.shape or before.dtype.kind != "f":
        return False
    import numpy as np

    return bool(np.allclose(before, after, rtol=1e-12, atol=0.0))


def _in_place_message(name: str, positions: Sequence[int], names: Sequence[str], rounded: Sequence[int] = ()) -> str:
    said = [names[i] if i < len(names) else f"its argument {i + 1}" for i in positions]
    if rounded and set(rounded) == set(positions):
        return (
            f"{name} changed {joined(said)} in place, though only by rounding: `x[i] += h` followed by "
            "`x[i] -= h` does not always give back x[i] exactly. Save the old value and put it back "
            "(`old = x[i]`, then `x[i] = old`), or move a copy instead."
        )
    return (
        f"{name} changed {joined(said)} in place, but the caller's arrays must stay as they were. "
        "Compute new arrays instead: `a = a * 2`, not `a *= 2`, `a[...] = ...` or `out=a`."
    )


def joined(words: Sequence[str]) -> str:
    """ "a", "a and b", "a, b and c": words as a sentence lists them."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raise :class:`~chainrule_course.grading.apart.TimeUp` in the body after ``seconds`` (Unix main thread;
    elsewhere no limit, and an answer run apart keeps its own)."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, frame):
        raise _TimeUp

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def _time_limit(name: str, seconds: float, alarm: bool = True):
    """Stop the body after ``seconds`` with an :class:`AnswerError` that says so (``alarm``: this process's
    own alarm; an answer run apart is stopped by its process's limit, which raises the same)."""
    try:
        with time_limit(seconds) if alarm else contextlib.nullcontext():
            yield
    except _TimeUp:
        raise AnswerError(
            name,
            f"{name} did not return within {seconds:g} s and was stopped: it is too slow for these inputs, "
            "or a loop in it never ends.",
        ) from None


def _recursion_message(name: str, error: RecursionError) -> str:
    """What to say of a search that went deeper than the recursion limit (and perhaps tried to raise it)."""
    apart_run = isinstance(getattr(error, "where", None), str)  # rebuilt from the answer's process
    limit = apart.runner.RECURSION_LIMIT if apart_run else sys.getrecursionlimit()
    message = (
        f"{name} raised RecursionError{where(error)}: it calls itself once per level, and Python stops a "
        f"recursion {limit:,} calls deep."
    )
    asked = getattr(error, "asked_limit", None)
    if asked:
        message += (
            f" Its sys.setrecursionlimit({asked}) changed nothing: while an answer runs, the checks keep "
            f"the limit at {limit:,}, so that only a search without recursion passes."
        )
    return message + " Keep the path in a list instead."


def _raised(name: str, error: Exception) -> str:
    """ "f raised ValueError in line 3 of f (`return a @ b`): matmul: ..." with numpy's signature text cut."""
    message = re.sub(r",? with gufunc signature \S+", "", str(error))
    if len(message) > 200:
        message = message[:200].rsplit(" ", 1)[0] + " ..."
    return f"{name} raised {type(error).__name__}{where(error)}: {message}"


def where(error: BaseException) -> str:
    """ " in line 3 of clip_by_norm (`return 1 / 0`)": the deepest frame outside numpy and chainrule.

    A student's exception rebuilt by the grader's replay carries the place the kernel saw, as ``where``.
    """
    recorded = getattr(error, "where", None)
    if isinstance(recorded, str):
        return recorded
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if "site-packages" not in frame.filename and not frame.filename.startswith(str(_PACKAGE))
    ]
    if not frames:
        return ""
    frame = frames[-1]
    return f" in line {frame.lineno} of {frame.name} (`{frame.line}`)" if frame.line else f" in {frame.name}"
