"""How long a chapter takes to read, counted from its source.

A reader reads about 200 words a minute and spends about half a minute on a code cell that the
page shows (reading it, then its output). What counts is what a reader meets reading straight
through, before the exercises:

* the words of the Markdown cells, with the MyST syntax taken out (a role counts as its text, a
  directive's fence and options as nothing), and their formulas apart: a formula is read like as
  many words as it has symbols (letters, numbers and Greek letters; LaTeX's other command names,
  such as ``\\mathbf``, are not read);
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
from dataclasses import astuple, dataclass
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
MARKER = re.compile(r"^(?:`{3,}|:{3,})\{optional-(?:start|end)\}.*$", re.M)
EXERCISES = re.compile(r"^## Exercises\s*$", re.M)
# A formula: display maths ($$...$$ or an environment) or inline ($...$); and LaTeX's command names.
MATH = re.compile(r"\$\$.*?\$\$|\\begin\{(\w+\*?)\}.*?\\end\{\1\}|\$[^$\n]+?\$", re.S)
COMMAND = re.compile(r"\\[A-Za-z]+")
GREEK = set("alpha beta gamma delta epsilon varepsilon eta theta lambda mu nu pi rho sigma tau phi psi omega".split())
SOLUTION = re.compile(r"^(`{3,}|:{3,})\{solution\}.*?^\1\s*$", re.M | re.S)


def in_minutes(minutes: float) -> str:
    """``minutes`` rounded to a whole number of them, at least one, in words."""
    whole = max(1, round(minutes))
    return f"{whole} minute" + ("s" if whole != 1 else "")


@dataclass(frozen=True)
class Count:
    """What a reader meets in a stretch of a chapter."""

    words: int = 0
    formulas: int = 0
    symbols: int = 0  # the formulas' letters and numbers, each read like a word
    cells: int = 0

    def __add__(self, other: Count) -> Count:
        return Count(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))

    @property
    def minutes(self) -> float:
        return (self.words + self.symbols) / WORDS_PER_MINUTE + self.cells * MINUTES_PER_CELL


@dataclass(frozen=True)
class Reading:
    core: Count  # what the chapter's objectives need
    optional: Count = Count()  # the optional blocks (_ext/optional_blocks.py)

    def __add__(self, other: Reading) -> Reading:
        return Reading(self.core + other.core, self.optional + other.optional)

    def sentence(self) -> str:
        """What the page says under the objectives."""
        core = self.core
        said = (
            f"Reading time: about {in_minutes(core.minutes)} straight through, before the exercises "
            f"({core.words:,} words, {core.formulas} formulas and {core.cells} code cells)"
        )
        if self.optional == Count():
            return said + "."
        return f"{said}; the optional parts, folded, about {in_minutes(self.optional.minutes)} more."


def shown(cell) -> bool:
    """Whether the page shows the cell's code."""
    hidden = cell.metadata.get("jupyter", {}).get("source_hidden", False)
    return not (HIDDEN & set(cell.metadata.get("tags", [])) or hidden)


def symbol(command: re.Match) -> str:
    """A LaTeX command as what a reader reads of it: a Greek letter is a symbol, ``\\mathbf`` nothing."""
    return " x " if command[0][1:].lower() in GREEK else " "


def counted(markdown: str) -> Count:
    """The words and formulas a reader reads in ``markdown`` (see the module)."""
    text = ROLE.sub(r"\1", SYNTAX.sub("", SOLUTION.sub("", markdown)))
    formulas = [match[0] for match in MATH.finditer(text)]
    symbols = sum(len(WORD.findall(COMMAND.sub(symbol, formula))) for formula in formulas)
    return Count(words=len(WORD.findall(MATH.sub(" ", text))), formulas=len(formulas), symbols=symbols)


def reading(root: Path, chapter: str) -> Reading:
    """What a reader reads of ``chapter`` straight through, before its exercises, the core and the
    optional blocks apart."""
    counts = {False: Count(), True: Count()}  # in an optional block or not
    optional = False
    for cell in read_chapter(root, chapter).cells:
        if not shown(cell):
            continue
        if cell.cell_type == "code":
            counts[optional] += Count(cells=1)
        elif cell.cell_type == "markdown":
            text = EXERCISES.split(cell.source, maxsplit=1)[0]
            for n, part in enumerate(MARKER.split(text)):
                optional = optional if n == 0 else not optional
                counts[optional] += counted(part)
            if text != cell.source:
                break
    return Reading(counts[False], counts[True])


def table(root: Path) -> str:
    """Each numbered chapter's words, formulas, code cells and minutes, the core's and the optional
    blocks', and the book's total."""

    def row(name: str, found: Reading) -> str:
        core, optional = found.core, found.optional
        return (
            f"{name:<12} {core.words:>7,} {core.formulas:>8} {core.cells:>6} {core.minutes:>8.0f} "
            f"{optional.words:>9,} {optional.cells:>9} {optional.minutes:>9.0f}"
        )

    found = [(Path(chapter).name, reading(root, chapter)) for chapter in numbered_chapters(read_toc(root))]
    total = sum((reading for _, reading in found), Reading(Count()))
    head = (
        f"{'chapter':<12} {'words':>7} {'formulas':>8} {'cells':>6} {'minutes':>8} "
        f"{'opt words':>9} {'opt cells':>9} {'opt min':>9}"
    )
    return "\n".join([head, *(row(name, reading) for name, reading in found), row("book", total)])


if __name__ == "__main__":
    print(table(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".")))
