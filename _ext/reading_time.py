"""``{reading-time}``: the chapter's reading time, under its objectives, counted from its source.

The sentence is ``tools.book.reading_time.Reading.sentence`` of the chapter the directive is in,
so the figure follows the chapter as it changes; the notebooks print the same sentence
(``tools/book/plain_markdown.py``), and the student site, built from notebooks, reads the book's
chapters for it.

Registered in ``_config.yml`` under ``sphinx: extra_extensions``.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from tools.book.reading_time import reading


class ReadingTime(SphinxDirective):
    """The reading time of the chapter that holds the directive, as a paragraph."""

    def run(self) -> list[nodes.Node]:
        # The student site is built from notebooks: it reads the book's chapters, as the instructors'
        # table does (``assignments_root``, which _ext/assignments_table.py declares).
        root = Path(self.config.assignments_root or self.env.srcdir)
        sentence = reading(root, self.env.docname).sentence()
        return [nodes.paragraph(sentence, sentence, classes=["cr-reading-time"])]


def setup(app: Sphinx) -> dict:
    app.add_directive("reading-time", ReadingTime)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
