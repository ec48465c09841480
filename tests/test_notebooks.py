"""Execute every chapter listed in _toc.yml, top to bottom, the way the book build does.

Chapters are MyST Markdown notebooks: read with jupytext, run with nbclient in a fresh
``python3`` kernel (this venv's interpreter) with ``chapters/`` as the working directory.
A failing cell fails the test with the cell's number, its source and the error. Cells
tagged ``raises-exception`` may raise, as in the book.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import jupytext
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from conftest import ROOT, book_config, chapter_source

KERNEL = "python3"
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def cell_timeout() -> int:
    return int(book_config().get("execute", {}).get("timeout", 300))


def first_unexpected_error(notebook) -> tuple[int, dict, dict] | None:
    """(code cell number counting from 1, cell, error output) of the first cell that raised without the tag."""
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for number, cell in enumerate(code_cells, start=1):
        if "raises-exception" in cell.metadata.get("tags", []):
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                return number, cell, output
    return None


def test_kernel_is_this_venvs_python():
    """The python3 kernel must run the interpreter running the tests (the venv's)."""
    spec = KernelSpecManager().get_kernel_spec(KERNEL)
    program = spec.argv[0]
    # jupyter_client replaces a bare "python"/"python3"/"python3.X" with sys.executable.
    bare_names = {"python", f"python{sys.version_info[0]}", "python{}.{}".format(*sys.version_info[:2])}
    assert program in bare_names or Path(program).resolve() == Path(sys.executable).resolve(), (
        f"kernel {KERNEL!r} ({spec.resource_dir}) runs {program}, not {sys.executable}: remove that "
        "kernelspec or run the tests with the venv's python"
    )


def test_chapter_executes(chapter: str):
    source = chapter_source(chapter)
    # As MyST (what the book uses): a page without jupytext front matter would otherwise be
    # read as plain Markdown, where a ```bash block becomes a code cell.
    notebook = jupytext.read(source, fmt="md:myst" if source.suffix == ".md" else None)
    client = NotebookClient(
        notebook,
        kernel_name=KERNEL,
        timeout=cell_timeout(),
        resources={"metadata": {"path": str(source.parent)}},
    )
    try:
        client.execute()
    except CellExecutionError as error:
        failure = describe_failure(source, notebook, error)
    else:
        return
    pytest.fail(failure, pytrace=False)  # outside the except block: no chained nbclient traceback


def describe_failure(source: Path, notebook, error: CellExecutionError) -> str:
    """The failing cell's number, source and error, without terminal colour codes."""
    found = first_unexpected_error(notebook)
    if found is None:
        return f"{source.relative_to(ROOT)} failed to execute:\n{ANSI_ESCAPE.sub('', str(error))}"
    number, cell, output = found
    traceback = ANSI_ESCAPE.sub("", "\n".join(output.get("traceback", [])))
    return (
        f"{source.relative_to(ROOT)}: code cell {number} raised {output['ename']}: {output['evalue']}\n"
        f"--- cell source ---\n{cell.source}\n--- traceback ---\n{traceback}"
    )
