"""How long a chapter takes to read, counted from its source.

A reader reads about 200 words a minute and spends about half a minute on a code cell that the
page shows (reading it, then its output). What counts is what a reader meets reading straight
through, before the exercises:

* the words of the Markdown cells, with the MyST syntax taken out (a role counts as its text, a
  directive's fence and options as nothing) and a formula as the words it is written with;
* the code cells the page shows: not those it removes (``remove-cell``, ``remove-input``) or folds
  (``hide-input``, ``source_hidden``), nor those of a solution;
* not the solutions, nor anything from the ``## Exercises`` heading on.

The build writes the figure under each chapter's objectives (``{reading-time}``,
``_ext/reading_time.py``; the notebooks print the same sentence), and ``python -m
tools.book.reading_time`` prints the table of the whole book.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from tools.book.book_model import numbered_chapters, read_chapter, read_toc

WORDS_PER_MINUTE = 200
MINUTES_PER_CELL = 0.5

HIDDEN = {"remove-cell", "remove-input", "hide-input", "hide-cell", "solution"}
# MyST that is not read: labels "(name)=", cell breaks, directive fences and their ":option:" lines,
# and a role's name before its text.
SYNTAX = re.compile(r"^\s*\(\S+\)=\s*$|^\+\+\+.*$|^\s*[`:]{3,}.*$|^:\w[\w-]*:.*$", re.M)
ROLE = re.compile(r"\{[\w:-]+\}`([^`<]*)(?:<[^`]*>)?`")
WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
SOLUTION = re.compile(r"^(`{3,}|:{3,})\{solution\}.*?^\1\s*$", re.M | re.S)


@dataclass(frozen=True)
class Reading:
    words: int
    cells: int

    @property
    def minutes(self) -> float:
        return self.words / WORDS_PER_MINUTE + self.cells * MINUTES_PER_CELL

    def sentence(self) -> str:
        """What the page says under the objectives."""
        return (
            f"Reading time: about {round(self.minutes)} minutes straight through, before the exercises "
            f"({self.words:,} words and {self.cells} code cells)."
        )


def shown(cell) -> bool:
    """Whether the page shows the cell's code."""
    hidden = cell.metadata.get("jupyter", {}).get("source_hidden", False)
    return not (HIDDEN & set(cell.metadata.get("tags", [])) or hidden)


def words(markdown: str) -> int:
    """The words a reader reads in ``markdown`` (see the module)."""
    text = SOLUTION.sub("", markdown)
    text = ROLE.sub(r"\1", SYNTAX.sub("", text))
    return len(WORD.findall(text))


def reading(root: Path, chapter: str) -> Reading:
    """What a reader reads of ``chapter`` straight through, before its exercises."""
    total_words = cells = 0
    for cell in read_chapter(root, chapter).cells:
        if cell.cell_type == "markdown" and re.search(r"^## Exercises\s*$", cell.source, re.M):
            total_words += words(cell.source.split("## Exercises")[0])
            break
        if not shown(cell):
            continue
        if cell.cell_type == "markdown":
            total_words += words(cell.source)
        elif cell.cell_type == "code":
            cells += 1
    return Reading(total_words, cells)


def table(root: Path) -> str:
    """Each numbered chapter's words, code cells and minutes, and the book's total."""
    rows, total = [], Reading(0, 0)
    for chapter in numbered_chapters(read_toc(root)):
        found = reading(root, chapter)
        total = Reading(total.words + found.words, total.cells + found.cells)
        rows.append(f"{Path(chapter).name:<12} {found.words:>7,} {found.cells:>6} {found.minutes:>8.0f}")
    head = f"{'chapter':<12} {'words':>7} {'cells':>6} {'minutes':>8}"
    foot = f"{'book':<12} {total.words:>7,} {total.cells:>6} {total.minutes:>8.0f}"
    return "\n".join([head, *rows, foot])


if __name__ == "__main__":
    print(table(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".")))
