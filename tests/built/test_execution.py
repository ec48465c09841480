"""Every chapter was executed by the book build, on its current code, without an unexpected error.

The book build executes each chapter once (``execute_notebooks: cache``; see
``test_build.py``) and fails on a failing cell, printing the cell's source and traceback
(``show_tb``). These tests read what it left, instead of executing the chapters again:

* ``_build/jupyter_execute/<chapter>.ipynb``, the executed notebook myst-nb wrote, has the
  chapter's current cells, and no error output outside cells tagged ``raises-exception``;
* the execution cache holds a successful run of exactly that code (jupyter-cache keeps
  only those; it drops execution counts, so a notebook taken from it has none);
* the build left no ``reports/*.err.log`` (myst-nb's record of a failed execution).
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest
from common import ROOT, pages_with_code
from jupyter_client.kernelspec import KernelSpecManager

from tools.book import student_book

KERNEL = "python3"
EXECUTED = student_book.EXECUTED


def test_kernel_is_this_venvs_python():
    """The python3 kernel the build executes chapters with runs the venv's interpreter."""
    spec = KernelSpecManager().get_kernel_spec(KERNEL)
    program = spec.argv[0]
    # jupyter_client replaces a bare "python"/"python3"/"python3.X" with sys.executable.
    bare_names = {"python", f"python{sys.version_info[0]}", "python{}.{}".format(*sys.version_info[:2])}
    assert program in bare_names or Path(program).resolve() == Path(sys.executable).resolve(), (
        f"kernel {KERNEL!r} ({spec.resource_dir}) runs {program}, not {sys.executable}: remove that "
        "kernelspec or run the tests with the venv's python"
    )


def unexpected_errors(notebook) -> list[str]:
    """'code cell N: Error: message' for each error output of a cell not tagged raises-exception."""
    found = []
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for number, cell in enumerate(code_cells, start=1):
        if "raises-exception" in cell.metadata.get("tags", []):
            continue
        found += [
            f"code cell {number}: {output['ename']}: {output['evalue']}\n--- cell source ---\n{cell.source}"
            for output in cell.get("outputs", [])
            if output.get("output_type") == "error"
        ]
    return found


@pytest.mark.parametrize("page", pages_with_code())  # a page without code cells executes nothing
def test_chapter_was_executed_on_its_current_code(page: str, book_html: Path):
    # The student site reads the build's notebooks the same way: the executed notebook must
    # have the chapter's current cells, and the cache a successful run of them (myst-nb
    # writes a chapter it took from the cache without outputs; they are in the cache).
    try:
        notebook = student_book.executed_chapter(page, ROOT, EXECUTED)
    except student_book.StaleBuild as error:
        pytest.fail(str(error), pytrace=False)
    errors = unexpected_errors(notebook)
    assert not errors, f"{page} raised outside a raises-exception cell:\n" + "\n\n".join(errors)


def test_the_build_recorded_no_failed_execution(book_html: Path):
    reports = sorted((book_html / "reports").rglob("*.err.log")) if (book_html / "reports").is_dir() else []
    assert not reports, "the book build recorded failed executions:\n" + "\n\n".join(
        f"{path.relative_to(ROOT)}:\n{path.read_text(encoding='utf-8')[-3000:]}" for path in reports
    )


def test_unexpected_errors_are_found():
    """The error check can fail: an error output in an untagged cell is reported with its source."""
    notebook = nbformat.v4.new_notebook()
    allowed = nbformat.v4.new_code_cell("1 / 0", metadata={"tags": ["raises-exception"]})
    plain = nbformat.v4.new_code_cell("ratio = 1 / 0")
    for cell in (allowed, plain):
        cell.outputs = [nbformat.v4.new_output("error", ename="ZeroDivisionError", evalue="division by zero")]
    notebook.cells = [allowed, plain]
    [error] = unexpected_errors(notebook)
    assert error.startswith("code cell 2: ZeroDivisionError: division by zero") and "ratio = 1 / 0" in error
