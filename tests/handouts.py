"""The assignments as ``make assignments`` writes them (``_build/assignments``), for the tests that grade
or run them: each exercise named by its label, its solutions, and its handout answered.

Imported only by the full tiers' tests: it loads the book's numbering (given at build time) when imported.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from common import ROOT

from tools.book import questions
from tools.grader import assignments

OUTPUT = ROOT / "_build" / "assignments"
BOOK = assignments.load_book()
ASSIGNMENTS = {a.name: a for a in questions.load_assignments(BOOK)}
# An exercise's number, and so its question id, is the book's, given at build time: a fork that inserts a
# chapter renumbers them. The tests name each exercise by its label and read the id and number here.
EXERCISES = {q.label: q for a in ASSIGNMENTS.values() for q in a.questions}


def ex(label: str) -> str:
    """The question id (the grader's column, test and check name) of the exercise labelled ``ex-<label>``."""
    return EXERCISES[f"ex-{label}"].name


def number(label: str) -> str:
    """The book's number of the exercise labelled ``ex-<label>``."""
    return EXERCISES[f"ex-{label}"].number


def folder(name: str) -> Path:
    path = OUTPUT / name
    if not (path / "autograder" / f"{name}-autograder.zip").is_file():
        pytest.fail(f"{path.relative_to(ROOT)} is incomplete: run `make assignments`", pytrace=False)
    return path


def student_notebook(name: str) -> nbformat.NotebookNode:
    return nbformat.read(folder(name) / "student" / f"{name}.ipynb", as_version=4)


def answer_cells(notebook, kind: str = "code") -> list:
    """The answer cells: code (the graded answers), or markdown (the written work, graded by hand)."""
    return [
        cell
        for cell in notebook.cells
        if "otter_answer_cell" in cell.metadata.get("tags", []) and cell.cell_type == kind
    ]


def solutions(name: str) -> list[str]:
    return [questions.solution_code(q, ASSIGNMENTS[name].chapter) for q in ASSIGNMENTS[name].questions]


def written(texts: dict[int, str]):
    """An edit that writes ``texts[i]`` into the i-th written answer cell."""

    def edit(notebook):
        for index, cell in enumerate(answer_cells(notebook, "markdown")):
            cell.source = texts.get(index, cell.source)

    return edit


def submission(name: str, answers: dict[int, str] | None = None, edit=None) -> nbformat.NotebookNode:
    """The student notebook with answer cell ``i`` replaced by ``answers[i]`` (the others left as handed out)."""
    notebook = student_notebook(name)
    for index, cell in enumerate(answer_cells(notebook)):
        if answers and index in answers:
            cell.source = answers[index]
    if edit:
        edit(notebook)
    return notebook
