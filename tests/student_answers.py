"""Student notebooks answered with the book's solutions, for running them as a student would.

``answered_student_notebook("chapters/mlp")`` is ``student/chapters/mlp.ipynb`` with each
checked exercise's answer cell replaced by the code of its solution, the same code the
assignments' solution notebooks hold (``tools/grader/assignments.py``). Exercises without a
check keep their answer cells, which do not raise.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path

import nbformat
from common import ROOT

from tools.book import book_model, questions


def student_path(chapter: str) -> Path:
    return ROOT / book_model.edition_path(chapter, student=True)


@functools.cache
def book() -> book_model.Book:
    """The book as tools/book/book_model.py reads it (every chapter, about 1 s): once per test process."""
    return book_model.load_book()


@functools.cache
def _checked_questions(chapter: str) -> tuple:
    found = questions.load_assignments(book(), [Path(chapter).name])
    return tuple(found[0].questions) if found else ()


def checked_questions(chapter: str) -> list:
    """The exercises of ``chapter`` that have a check, in order (empty when it has none)."""
    return list(_checked_questions(chapter))


def answered_student_notebook(chapter: str) -> nbformat.NotebookNode:
    return copy.deepcopy(_answered_student_notebook(chapter))


@functools.cache
def _answered_student_notebook(chapter: str) -> nbformat.NotebookNode:
    notebook = nbformat.read(student_path(chapter), as_version=4)
    for question in checked_questions(chapter):
        [cell] = [cell for cell in notebook.cells if cell.cell_type == "code" and cell.source == question.stub]
        cell.source = questions.solution_code(question, chapter)
    return notebook
