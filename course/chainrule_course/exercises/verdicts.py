"""The verdicts of a notebook's check cells: one per exercise, and the "check everything" cell's summary.

A check cell's body runs in ``with exercise("6.2"):``, which turns an answer not written or not
run yet into one line. The chapter's last cell runs every check again inside a
:class:`Summary`: there each check calls the cell the grader will run for its answer
(:func:`chainrule_course.exercises.notebook.graded`), and the summary says which cell that is,
so that its "passes" is the grader's.
"""

from __future__ import annotations

import contextlib
import io
import re
import threading

from ..grading import contract
from . import notebook
from .answers import AnswerError, NotAnswered, wrapped


class _Running(threading.local):
    summarised: exercise | None = None  # the summary's exercise being checked, or None
    cell: exercise | None = None  # the exercise whose check cell is running, or None


_running = _Running()


def review_note(name: str, reasons: list[str]) -> str:
    """What a check says of an answer that the grader will put up for review, for ``reasons`` (the grader's
    words, :mod:`chainrule_course.grading.review`)."""
    return (
        f"Note: the grader will put {name} up for review: {'; '.join(reasons)}. It costs no points: "
        "an instructor reads how it was found."
    )


def fresh() -> int:
    """``feedback.fresh()``: a seed for inputs no answer was written for, new at each run in a notebook
    (:func:`chainrule_course.grading.contract.fresh`). A check cell that passes says which seed it drew,
    after its own verdict; one that fails names it in the message's rebuild line."""
    seed = contract.fresh()
    if not contract.grading():
        if _running.cell is None:
            print(FRESH.format(seeds=seed))
        else:
            _running.cell.fresh.append(seed)
    return seed


#: What a check cell that passed says of its fresh inputs.
FRESH = "Also checked on fresh inputs, drawn from seed {seeds} (a new seed at each run)."


def summarising() -> exercise | None:
    """The exercise of a :class:`Summary` being checked (None in a check cell): its checks run the graded
    cells and record which they are (:meth:`exercise.graded_cell`)."""
    return _running.summarised


class exercise:
    """``with exercise("6.2"):`` around the body of an exercise's check cell.

    An answer cell that was not run (a ``NameError`` in the check) or not answered yet
    becomes one line, :class:`NotAnswered`. Inside :meth:`Summary.exercise` the verdict is
    recorded instead of raised, and what the check prints is kept out of the summary.
    """

    def __init__(self, number: str, summary: Summary | None = None):
        self.number, self.summary = number, summary
        self._quiet = contextlib.redirect_stdout(io.StringIO())
        self._outer: exercise | None = None
        self.fresh: list[int] = []  # the seeds of fresh inputs its check drew

    def __enter__(self) -> exercise:
        self._outer_cell, _running.cell = _running.cell, self
        if self.summary is not None:
            self._quiet.__enter__()
            self._outer, _running.summarised = _running.summarised, self
        return self

    def graded_cell(self, called: str, ran: str) -> str:
        """The cell the grader runs for ``called``, the kernel having run ``ran`` to define it; the summary
        keeps the line that says which cell it is."""
        summary = self._summary("graded_cell")
        source, said = notebook.graded(called, ran, summary.held)
        summary.cells.setdefault(self.number, {}).setdefault(called, said)
        return source

    def up_for_review(self, name: str, reasons: list[str]) -> None:
        """The grader will put ``name`` up for review for ``reasons``: the summary says so under the verdict."""
        kept = self._summary("up_for_review").reviews.setdefault(self.number, {}).setdefault(name, [])
        kept += [reason for reason in reasons if reason not in kept]

    def _summary(self, method: str) -> Summary:
        """The summary this exercise is checked in: a check calls ``method`` only under :func:`summarising`."""
        if self.summary is None:
            raise RuntimeError(f"exercise.{method}: exercise {self.number} is not checked inside a Summary")
        return self.summary

    def __exit__(self, kind, error, trace) -> bool:
        _running.cell = self._outer_cell
        if error is None and self.fresh and self.summary is None:
            print(FRESH.format(seeds=" and ".join(map(str, self.fresh))))
        if self.summary is not None:
            self._quiet.__exit__(None, None, None)
            _running.summarised = self._outer
        raised = error
        if isinstance(error, NameError):
            error = NotAnswered(
                error.name or "answer",
                f"Exercise {self.number}: {error.name} is not defined. Run your answer cell first; if it "
                "stopped with an error, fix that and run it again.",
            )
        elif isinstance(error, (NotImplementedError, NotAnswered)) and "not answered yet" in str(error):
            message = str(error)  # as a chapter's answer cell says it, without the number a fork may change:
            message = f"Exercise {self.number} is {message}" if message.startswith("not answered") else message
            error = NotAnswered(getattr(error, "quantity", "answer"), message)
        elif error is not None and not isinstance(error, AnswerError):
            return False  # not about the answer: a mistake in the check itself, shown in full
        if self.summary is not None:
            self.summary.verdicts[self.number] = error
            return True
        if error is not raised:
            raise error from None
        return False


class Summary:
    """Every checked exercise of a chapter in one block: ``with summary.exercise("6.2"): ...``, then :meth:`show`."""

    def __init__(self, title: str):
        self.title = title
        self.verdicts: dict[str, AnswerError | None] = {}
        #: For each exercise, for each answer its checks called, the line that says which cell is graded.
        self.cells: dict[str, dict[str, str]] = {}
        #: For each exercise, for each answer the grader will put up for review, why (:func:`review_note`).
        self.reviews: dict[str, dict[str, list[str]]] = {}
        self._notebook: tuple | None = None

    def held(self):
        """The notebook as the grader would read it now (:func:`notebook.held_cells`), read once: in Colab,
        each reading is a round trip to the editor."""
        if self._notebook is None:
            self._notebook = (notebook.held_cells(),)
        return self._notebook[0]

    def exercise(self, number: str) -> exercise:
        return exercise(number, summary=self)

    def show(self) -> None:
        passed = sum(error is None for error in self.verdicts.values())
        lines = [f"{self.title}: {passed} of {len(self.verdicts)} checked exercises pass."]
        for number, error in self.verdicts.items():
            verdict = (
                "passes"
                if error is None
                else "not answered yet"
                if isinstance(error, NotAnswered)
                else "WRONG: " + _first_wrong(error)
            )
            lines.append(f"  Exercise {number}: {verdict}")
            lines += [f"    {said}" for said in self.cells.get(number, {}).values()]
            lines += [f"    {review_note(name, why)}" for name, why in self.reviews.get(number, {}).items()]
        lines.append("A grader also runs hidden tests: the same checks on other data.")
        print("\n".join(line for text in lines for line in wrapped(text)))


def _first_wrong(error: AnswerError) -> str:
    """The line of a summary for a wrong answer: the known mistake (all of them, when several give the same
    numbers), else the first verdict that is wrong."""
    lines = str(error).split("\n")
    if error.mistake:
        several = re.search(
            r"It matches (\d+) known mistakes that give the same numbers, and the check cannot tell which: (.*)",
            str(error),
        )
        said = f"one of {several[1]} mistakes that give the same numbers: {several[2]}" if several else error.mistake
        return f"{lines[0].split(':')[0]}: {said}" if ":" in lines[0] else said
    return next((line.strip().removeprefix("WRONG: ") for line in lines if line.strip().startswith("WRONG:")), lines[0])
