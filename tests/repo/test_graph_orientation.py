"""Every graph the course draws has one orientation: inputs at the bottom, the root at the top.

The figures in the chapters, the explorables' steps and the drills' graphs all come from
``chainrule.figures`` and the course's drawing code, whose direction defaults to
``chainrule.figures.figure.ORIENTATION``. A reader who met the root on the right in one
chapter and at the top in the next would have to turn every graph in their head, so no chapter
cell, course module or engine module may ask graphviz for another direction.
"""

from __future__ import annotations

import re

import pytest
from common import ROOT

from chainrule.figures.figure import ORIENTATION

#: ``rankdir="LR"`` in a call or ``dot.attr(rankdir='TB')``: a direction given as a literal.
RANKDIR = re.compile(r"""rankdir\s*=\s*["'](\w+)["']""")
SOURCES = sorted(
    [*ROOT.glob("chapters/*.md"), *ROOT.glob("course/chainrule_course/**/*.py"), *ROOT.glob("src/chainrule/**/*.py")]
)


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: str(path.relative_to(ROOT)))
def test_graphs_drawn_root_up(path):
    text = path.read_text(encoding="utf-8")
    other = [
        f"line {text.count(chr(10), 0, match.start()) + 1}: rankdir={match.group(1)!r}"
        for match in RANKDIR.finditer(text)
        if match.group(1) != ORIENTATION
    ]
    assert not other, f"{path.relative_to(ROOT)} draws a graph in another direction than {ORIENTATION!r}: {other}"


def test_the_sources_are_found():
    """The glob finds the chapters and the drawing code, so the test above checks something."""
    names = {path.name for path in SOURCES}
    assert {"intro.md", "draw.py", "dfs_figures.py", "page.py"} <= names
