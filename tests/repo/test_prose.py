"""The chapters' sources read well on the page: every line of a code cell is at most
``CODE_WIDTH`` characters, so that no code block scrolls sideways in the book's column
(tests/browser/test_browser.py measures the page too). That the numbers of the prose are glued
from the cells is checked on the build's outputs, in tests/built/test_glued_numbers.py.
"""

from __future__ import annotations

import jupytext
import pytest
from common import ROOT, pages_with_code

CODE_WIDTH = 72


def long_code_lines(notebook) -> list[str]:
    found = []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        for line in cell.source.splitlines():
            if len(line) > CODE_WIDTH:
                found.append(f"cell {index}: {len(line)} chars: {line}")
    return found


@pytest.mark.parametrize("page", pages_with_code())
def test_code_lines_fit_the_column(page: str):
    found = long_code_lines(jupytext.read(ROOT / f"{page}.md"))
    assert not found, f"{page}.md: {len(found)} code lines are longer than {CODE_WIDTH} characters:\n" + "\n".join(
        found[:20]
    )


def test_the_checks_can_fail():
    source = jupytext.reads("```{code-cell} ipython3\nlr = 0.1\nprint(" + "'x' + " * 20 + "'x')\n```\n", fmt="md:myst")
    assert len(long_code_lines(source)) == 1
