"""What a chapter needs besides its source, checked without a build: a chapter added to ``_toc.yml``
by the CONTRIBUTING recipe fails here until its notebooks are committed and its code exercises
are checked.

* Every numbered chapter has its two committed notebooks, ``chapters/<name>.ipynb`` and
  ``student/chapters/<name>.ipynb`` (``make notebooks`` writes them; GitHub serves them to Colab).
* Every exercise with an answer cell (tag ``exercise-stub``) has a check cell (tag ``check``):
  without one, the student's code is checked nowhere and graded nowhere.
* Every chapter with exercises has an assignment: the assignments are derived from the chapters
  (``tools/book/questions.load_assignments``, one per chapter with a checked exercise), so a
  chapter whose exercises have no check would have none. The instructors' page lists those
  assignments and their questions in its table, in the book's order.
* Each chapter's drills (its ``<div class="cr-drill" data-drill-kinds="...">``), the Practice page's
  and ``drill_pages`` in ``_config.yml`` are the kinds the registry gives that chapter
  (``chainrule_course.drills.KINDS``, which the builders' ``@drill`` declare).

The checks run on the repository and, to show that they can fail, on a copy with something
planted: a chapter, a drill kind, a drill page left out, two rows swapped.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from common import MYST_HEADER, ROOT

from _ext import assignments_table
from chainrule_course.drills import KINDS
from tools.book.book_model import ChapterOutline, book_from_sources, numbered_chapters, outline, read_chapter, read_toc
from tools.book.myst import ConversionError, directives
from tools.book.notebooks import expected_paths, tags
from tools.book.questions import Assignment, load_assignments


def committed_files(root: Path) -> set[str]:
    """The files git tracks (staged included), as paths relative to ``root``."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, text=True, check=True)
    return set(listed.stdout.split("\0")) - {""}


def missing_notebooks(root: Path, committed: set[str]) -> list[str]:
    """The notebooks of the numbered chapters that are not among ``committed``."""
    paths = [path.relative_to(root).as_posix() for path in expected_paths(root)]
    return [path for path in paths if path not in committed]


def unchecked_answer_cells(root: Path) -> list[str]:
    """The labels of the exercises that have an answer cell but no check cell after it."""
    unchecked = []
    for chapter in numbered_chapters(read_toc(root)):
        label, stubbed, checked = None, set(), set()
        for cell in read_chapter(root, chapter).cells:
            if cell.cell_type == "markdown" and "{exercise}" in cell.source:
                found = [exercise.options.get("label") for exercise in directives(cell.source, "exercise")]
                label = next((name for name in found if name), label)
            elif "exercise-stub" in tags(cell) and label:
                stubbed.add(label)
            elif "check" in tags(cell) and label:
                checked.add(label)
        unchecked += [f"{chapter}: {name}" for name in sorted(stubbed - checked)]
    return unchecked


@functools.cache
def assignments_of(root: Path) -> tuple[list[ChapterOutline], list[Assignment]]:
    """The numbered chapters, read from the sources, and the assignments derived from them, as ``make
    assignments`` derives them."""
    chapters = outline(root)
    return chapters, load_assignments(book_from_sources(root, chapters))


def chapters_without_assignment(root: Path) -> list[str]:
    """The numbered chapters that have exercises but get no assignment."""
    chapters, assignments = assignments_of(root)
    assigned = {assignment.chapter for assignment in assignments}
    return [chapter.chapter for chapter in chapters if chapter.exercises and chapter.chapter not in assigned]


def instructors_entries(root: Path) -> dict[str, str]:
    """What the instructors' page says each assignment asks the student to write: its {assignments-table}'s body."""
    text = (root / "chapters" / "instructors.md").read_text(encoding="utf-8")
    return assignments_table.entries(re.search(r"```\{assignments-table\}\n(.*?)\n```", text, re.S)[1].splitlines())


DRILL_MARKUP = re.compile(r'<div class="cr-drill" data-drill-kinds="([^"]*)"')


def marked_drills(root: Path, page: str) -> list[frozenset[str]]:
    """The kinds of each drill region of a page, as its source writes them."""
    text = (root / f"{page}.md").read_text(encoding="utf-8")
    return [frozenset(found.split()) for found in DRILL_MARKUP.findall(text)]


def drills_unlike_the_registry(root: Path, kinds: dict) -> list[str]:
    """Where a chapter's drill regions, the Practice page's or ``drill_pages`` differ from the registry ``kinds``."""
    registered: dict[str, set[str]] = {}
    for name, kind in kinds.items():
        registered.setdefault(f"chapters/{kind.chapter}", set()).add(name)
    found = []
    for chapter in numbered_chapters(read_toc(root)):
        marked = set().union(*marked_drills(root, chapter))
        if marked != registered.get(chapter, set()):
            found.append(
                f"{chapter}.md asks {sorted(marked)}; the registry gives it {sorted(registered.get(chapter, []))}"
            )
    practice = marked_drills(root, "chapters/practice")
    if practice != [{"all"}, *registered.values()]:
        expected = [{"all"}, *registered.values()]
        first = next(
            (i for i, (a, b) in enumerate(zip(practice, expected, strict=False)) if a != b),
            min(len(practice), len(expected)),
        )
        found.append(
            f"chapters/practice.md has the regions {practice}: one for all, then each chapter's, in order"
            f" (region {first + 1} should ask {sorted(expected[first]) if first < len(expected) else 'nothing'})"
        )
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    pages, expected = set(config["sphinx"]["config"]["drill_pages"]), {*registered, "chapters/practice"}
    if pages != expected:
        found.append(f"_config.yml drill_pages differs from the chapters with drills by {sorted(pages ^ expected)}")
    return found


def test_each_chapter_s_drills_are_the_kinds_the_registry_gives_it():
    assert drills_unlike_the_registry(ROOT, KINDS) == []


def test_every_chapter_has_its_two_notebooks_committed():
    assert missing_notebooks(ROOT, committed_files(ROOT)) == [], "run `make notebooks` and commit what it writes"


def test_every_answer_cell_has_a_check_cell():
    assert unchecked_answer_cells(ROOT) == []


def test_every_chapter_with_exercises_has_an_assignment():
    without = chapters_without_assignment(ROOT)
    assert without == [], f"{without} have exercises but none with an answer cell and a check (CONTRIBUTING.md)"


def test_the_instructors_table_has_each_assignment_in_the_book_s_order_with_what_its_answers_import():
    """The build makes the table (_ext/assignments_table.py) from the assignments ``make assignments``
    derives; the page says only what each asks the student to write, and says it of each."""
    _, assignments = assignments_of(ROOT)
    lines, problems = assignments_table.table(assignments, instructors_entries(ROOT))
    assert problems == []
    rows = [re.match(r"\| `([\w-]+)` \|", line)[1] for line in lines[2:]]
    assert rows == [assignment.name for assignment in assignments] and len(rows) >= 10, rows
    graph, layers = (next(line for line in lines if line.startswith(f"| `{name}`")) for name in ("graph", "layers"))
    assert "{question}`ex-graph-dfs-by-hand` (standard library only)" in graph
    assert "{question}`ex-layers-softplus-row` (`numpy`, `chainrule`)" in layers


def test_the_instructors_table_fails_on_an_assignment_not_described_and_a_description_of_none():
    _, assignments = assignments_of(ROOT)
    said = instructors_entries(ROOT)
    said["graphs"] = said.pop("graph")  # planted: an assignment renamed on the page only
    _, problems = assignments_table.table(assignments, said)
    assert problems == [
        "no entry says what the student writes in the assignment 'graph': add 'graph: ...'",
        f"'graphs' is not an assignment; the assignments are {[a.name for a in assignments]}",
    ]
    assert assignments_table.entries(["a: one", "  two", "b: three"]) == {"a": "one two", "b": "three"}


PLANTED = (
    MYST_HEADER
    + """
(chapter-planted)=
# A planted chapter

## Exercises

```{exercise}
:label: ex-planted-square

Write `square(x)`.
```

```{code-cell} ipython3
:tags: [remove-cell, exercise-stub]

def square(x):
    raise NotImplementedError("not answered yet: write square")
```
"""
)


def test_the_checks_fail_on_a_planted_chapter(tmp_path: Path):
    """A chapter added to _toc.yml with an exercise whose answer cell has no check, and no notebooks."""
    shutil.copytree(ROOT / "chapters", tmp_path / "chapters", ignore=shutil.ignore_patterns("*.ipynb"))
    (tmp_path / "chapters" / "planted.md").write_text(PLANTED, encoding="utf-8")
    toc = read_toc(ROOT)
    numbered = next(part for part in toc["parts"] if part.get("numbered"))
    numbered["chapters"] = [{"file": "chapters/intro"}, {"file": "chapters/planted"}]
    (tmp_path / "_toc.yml").write_text(yaml.safe_dump(toc), encoding="utf-8")
    intro_notebooks = {"chapters/intro.ipynb", "student/chapters/intro.ipynb"}
    assert missing_notebooks(tmp_path, intro_notebooks) == ["chapters/planted.ipynb", "student/chapters/planted.ipynb"]
    assert unchecked_answer_cells(tmp_path) == ["chapters/planted: ex-planted-square"]
    assert chapters_without_assignment(tmp_path) == ["chapters/planted"]


def test_the_drill_check_fails_on_a_kind_the_chapters_do_not_ask(tmp_path: Path):
    for name in ("_toc.yml", "_config.yml"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "chapters", tmp_path / "chapters", ignore=shutil.ignore_patterns("*.ipynb"))
    kinds = {**KINDS, "planted": replace(KINDS["neuron"], title="a planted kind")}
    practice = marked_drills(ROOT, "chapters/practice")
    assert drills_unlike_the_registry(tmp_path, kinds) == [
        "chapters/intro.md asks ['neuron']; the registry gives it ['neuron', 'planted']",
        f"chapters/practice.md has the regions {practice}: one for all, then each chapter's, in order"
        " (region 2 should ask ['neuron', 'planted'])",
    ]
    practice_page = tmp_path / "chapters" / "practice.md"  # the graph chapter's drills after the backward's
    graph, backward = 'data-drill-kinds="finish topological reach"', 'data-drill-kinds="adjoint local value adjoints"'
    text = practice_page.read_text(encoding="utf-8")
    practice_page.write_text(
        text.replace(graph, "<>").replace(backward, graph).replace("<>", backward), encoding="utf-8"
    )
    swapped = marked_drills(tmp_path, "chapters/practice")
    assert swapped != practice and drills_unlike_the_registry(tmp_path, KINDS) == [
        f"chapters/practice.md has the regions {swapped}: one for all, then each chapter's, in order"
        " (region 3 should ask ['finish', 'reach', 'topological'])",
    ]


def test_the_drill_check_fails_on_a_drill_page_left_out(tmp_path: Path):
    for name in ("_toc.yml", "_config.yml"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "chapters", tmp_path / "chapters", ignore=shutil.ignore_patterns("*.ipynb"))
    config = tmp_path / "_config.yml"
    config.write_text(config.read_text(encoding="utf-8").replace("      - chapters/capstone\n", ""), encoding="utf-8")
    assert drills_unlike_the_registry(tmp_path, KINDS) == [
        "_config.yml drill_pages differs from the chapters with drills by ['chapters/capstone']"
    ]


def test_the_tools_read_every_page_of_the_toc_and_refuse_a_page_they_would_miss():
    """Every page of _toc.yml is in book_model.toc_pages, once; a page nested under a chapter is refused,
    not skipped by every test that goes page by page."""
    from tools.book import book_model

    toc = book_model.read_toc(ROOT)
    pages = book_model.toc_pages(toc)
    assert (
        len(pages)
        == len(set(pages))
        == len(re.findall(r"^\s*(?:root:|- file:)", (ROOT / "_toc.yml").read_text(), re.M))
    )
    toc["parts"][0]["chapters"][0]["sections"] = [{"file": "chapters/nested"}]
    with pytest.raises(ConversionError, match="without sections"):
        book_model.toc_pages(toc)
