"""Numbers in the prose that the chapter's cells print, and that none of its cells types, were
computed: each must come from a cell through myst-nb's glue (``{glue:text}`key```), or the
prose drifts from the code the day the code changes. The outputs are those of the book build,
read as the student site reads them (``tools/student_book.executed_chapter``).
"""

from __future__ import annotations

import re

import jupytext
import nbformat
import pytest
from common import ROOT, pages_with_code

from tools.book import student_book

#: Numbers that look computed: 1,234 / 0.19 / 3.0e-06 (not 2, 16 or a year).
NUMBER = re.compile(r"(?<![\d.,])(\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+(?:e[-+]?\d+)?)(?![\w,]*\d)")
#: What in Markdown is not prose: math, code spans, roles with their targets, directive options, links,
#: and the version numbers of the pinned packages ("torch 2.13"), which no cell computes.
NOT_PROSE = re.compile(
    r"\$\$.*?\$\$|\$[^$\n]+\$|``.*?``|`[^`\n]*`|\{[\w:-]+\}`[^`]*`|^:\w[\w-]*:.*$|\]\([^)]*\)|^```.*$|^\(.*\)=$"
    r"|\b(?:torch|PyTorch|jax|JAX|numpy|Python) \d+(?:\.\d+)+",
    re.MULTILINE | re.DOTALL,
)


def prose_numbers(notebook) -> set[str]:
    """The computed-looking numbers in the Markdown cells, outside math, code and roles."""
    numbers = set()
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            numbers.update(NUMBER.findall(NOT_PROSE.sub(" ", cell.source)))
    return numbers


def printed_text(executed) -> str:
    """Everything the executed cells showed as text."""
    parts = []
    for cell in executed.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                parts.append(output.get("text", ""))
            elif "data" in output:
                parts.append(str(output["data"].get("text/plain", "")))
    return "\n".join(parts)


def typed_but_computed(source_notebook, executed) -> list[str]:
    printed = printed_text(executed)
    code = "\n".join(cell.source for cell in source_notebook.cells if cell.cell_type == "code")
    return sorted(
        number
        for number in prose_numbers(source_notebook)
        if re.search(rf"(?<![\d.,]){re.escape(number)}(?![\d,]|\.\d)", printed) and number not in code
    )


@pytest.mark.parametrize("page", pages_with_code())
def test_numbers_the_cells_print_are_glued_into_the_prose(page: str):
    try:  # the build's notebook with its outputs (a chapter taken from the cache has them there)
        executed = student_book.executed_chapter(page, ROOT, student_book.EXECUTED)
    except student_book.StaleBuild as error:
        pytest.fail(str(error), pytrace=False)
    found = typed_but_computed(jupytext.read(ROOT / f"{page}.md"), executed)
    assert not found, (
        f"{page}.md types numbers that its cells print: {found}. Glue each from the cell "
        "that computes it (chainrule_course.pages.glue.glue) and write {glue:text}`key:format`"
    )


def test_the_checks_can_fail():
    source = jupytext.reads(
        "The step takes 0.19 ms and 1,001,500 flops, in `0.25` and $2.5$, x0.64; lr 0.1.\n\n"
        "```{code-cell} ipython3\nlr = 0.1\n```\n",
        fmt="md:myst",
    )
    executed = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(
                "", outputs=[nbformat.v4.new_output("stream", text="0.19 ms, 1,001,500 flops, 0.25 2.5 0.64 0.1\n")]
            )
        ]
    )
    assert typed_but_computed(source, executed) == ["0.19", "0.64", "1,001,500"]
