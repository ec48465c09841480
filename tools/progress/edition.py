"""What the report knows of the book: its numbered chapters, drill kinds and exercises, and its version.

The chapters' titles and exercise labels are read from the sources (``tools.book.book_model.outline``),
the drill kinds from the drills' one table (``chainrule_course.drills.catalog``): nothing needs a
book build, so an instructor can run the report on a fresh clone.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from chainrule_course.drills.catalog import catalog
from tools.book.book_model import ROOT, ChapterOutline, book_version, outline


@dataclass(frozen=True)
class KindInfo:
    """A drill kind as the report shows it: the chapter (``chapters/graph``) that teaches it, its title, levels."""

    name: str
    chapter: str
    title: str
    levels: frozenset[int]


@dataclass
class Edition:
    """The book's chapters in order, its drill kinds in order, and the version a record of it names."""

    version: str
    chapters: list[ChapterOutline]
    kinds: dict[str, KindInfo]

    def __post_init__(self) -> None:
        self.exercise_chapter = {label: c.chapter for c in self.chapters for label in c.exercises}
        self.exercise_number = {
            label: f"{c.number}.{index}" for c in self.chapters for index, label in enumerate(c.exercises, start=1)
        }

    def kinds_of(self, chapter: str) -> list[KindInfo]:
        """The drill kinds of ``chapter`` (``chapters/graph``), in the book's order."""
        return [kind for kind in self.kinds.values() if kind.chapter == chapter]


def load_edition(root: Path = ROOT) -> Edition:
    """The book of the checkout at ``root``: this is the edition every record is compared with."""
    chapters = outline(root)
    kinds = {
        name: KindInfo(name, f"chapters/{entry['chapter']}", entry["title"], frozenset(n for n, _ in entry["levels"]))
        for name, entry in catalog().items()
    }
    return Edition(book_version(root, chapters), chapters, kinds)
