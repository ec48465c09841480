"""The directive ``assignments-table``: the instructors' table of assignments, made from the chapters.

Its rows are the assignments as ``make assignments`` derives them from the chapters
(:func:`tools.book.questions.load_assignments`), in the book's order: each one's name, its
chapter, and its questions, each with the modules its answer may import besides the standard
library (:func:`tools.book.questions.allowed`, from its checks). Only what the student writes in
each is typed, in the directive's body, an entry per assignment that may run over several lines::

    ```{assignments-table}
    intro: three derivatives of a tanh neuron,
      by hand
    graph: ...
    ```

An assignment without an entry, or an entry that names no assignment, is a warning, which fails
the build: a chapter given exercises with checks shows up here, or the book does not build.

The chapters are read from the book's folder, or from ``assignments_root``: the student site is
built in a copy whose chapters are notebooks without their solutions and checks, and its table is
the book's.
"""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from tools.book.book_model import book_from_sources, outline
from tools.book.questions import Assignment, allowed, load_assignments

LOGGER = logging.getLogger(__name__)
ENTRY = re.compile(r"^(\w[\w-]*):\s*(.*)$")
HEADER = ["| Assignment | Chapter | Questions (and what their answers may import) | What the student writes |",
          "|---|---|---|---|"]  # fmt: skip


def entries(lines: list[str]) -> dict[str, str]:
    """``name: text`` entries, a line that does not start one continuing the one before."""
    said: dict[str, str] = {}
    name = None
    for line in lines:
        found = ENTRY.match(line)
        if found:
            name = found[1]
            said[name] = found[2].strip()
        elif line.strip() and name is not None:
            said[name] = f"{said[name]} {line.strip()}"
    return said


def imports(modules: list[str]) -> str:
    return "(" + ", ".join(f"`{module}`" for module in modules) + ")" if modules else "(standard library only)"


def table(assignments: list[Assignment], said: dict[str, str]) -> tuple[list[str], list[str]]:
    """The table's MyST lines, and what is wrong with ``said`` (empty when nothing is)."""
    names = [assignment.name for assignment in assignments]
    problems = [f"no entry says what the student writes in the assignment {name!r}: add '{name}: ...'"
                for name in names if not said.get(name)]  # fmt: skip
    problems += [f"{name!r} is not an assignment; the assignments are {names}" for name in said if name not in names]
    lines = list(HEADER)
    for assignment in assignments:
        questions = ", ".join(f"{{question}}`{q.label}` {imports(allowed(q))}" for q in assignment.questions)
        chapter = f"{{doc}}`/{assignment.chapter}`"
        lines.append(f"| `{assignment.name}` | {chapter} | {questions} | {said.get(assignment.name, '')} |")
    return lines, problems


class AssignmentsTable(SphinxDirective):
    has_content = True

    def run(self):
        root = Path(self.config.assignments_root or self.env.srcdir)
        chapters = outline(root)
        for path in [root / "_toc.yml", *(root / f"{chapter.chapter}.md" for chapter in chapters)]:
            self.env.note_dependency(str(path))  # the page is read again when a chapter changes
        lines, problems = table(load_assignments(book_from_sources(root, chapters)), entries(list(self.content)))
        for problem in problems:
            LOGGER.warning(f"assignments-table: {problem}", location=(self.env.docname, self.lineno))
        return self.parse_text_to_nodes("\n".join(lines))


def setup(app: Sphinx) -> dict:
    app.add_directive("assignments-table", AssignmentsTable)
    app.add_config_value("assignments_root", "", "env")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
