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
* The drills: the registry (``chainrule_course.drills.KINDS``, which the builders' ``@drill``
  declare) is the one list of which chapter teaches which kinds, and the pages list none. A chapter
  that teaches kinds has one ``<div class="cr-drill">`` (the build gives it its kinds), and one
  that teaches none has none; the Practice page has the region of every kind, then one
  ``data-drill-chapter`` region per chapter, in the registry's (the book's) order.

The checks run on the repository and, to show that they can fail, on a copy with something
planted: a chapter, a drill kind, a region left out or misplaced, an assignment not described.
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
from tools.book.book_model import (
    ChapterOutline,
    book_from_sources,
    numbered_chapters,
    outline,
    read_chapter,
    read_toc,
    toc_pages,
)
from tools.book.myst import ConversionError, directives
from tools.book.notebooks import expected_paths, numbering_source, tags
from tools.book.questions import Assignment, load_assignments


def committed_files(root: Path) -> set[str]:
    """The files git tracks (staged included), as paths relative to ``root``."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, text=True, check=True)
    return set(listed.stdout.split("\0")) - {""}


def missing_notebooks(root: Path, committed: set[str]) -> list[str]:
    """The notebooks of the numbered chapters that are not among ``committed``."""
    paths = [path.relative_to(root).as_posix() for path in expected_paths(root)]
    return [path for path in paths if path not in committed]


def exercise_cells(root: Path):
    """Each numbered chapter's code cells after an exercise: (chapter, the exercise's label, cell)."""
    for chapter in numbered_chapters(read_toc(root)):
        label = None
        for cell in read_chapter(root, chapter).cells:
            if cell.cell_type == "markdown" and "{exercise}" in cell.source:
                found = [exercise.options.get("label") for exercise in directives(cell.source, "exercise")]
                label = next((name for name in found if name), label)
            elif cell.cell_type == "code" and label:
                yield chapter, label, cell


def tagged(root: Path, tag: str) -> dict[str, list[str]]:
    """Per chapter, the labels of the exercises that have a cell tagged ``tag``, in order."""
    found: dict[str, list[str]] = {}
    for chapter, label, cell in exercise_cells(root):
        if tag in tags(cell) and label not in found.setdefault(chapter, []):
            found[chapter].append(label)
    return found


def unchecked_answer_cells(root: Path) -> list[str]:
    """The labels of the exercises that have an answer cell but no check cell after it."""
    stubbed, checked = tagged(root, "exercise-stub"), tagged(root, "check")
    return [
        f"{chapter}: {name}"
        for chapter, labels in stubbed.items()
        for name in sorted(set(labels) - set(checked.get(chapter, [])))
    ]


def pages_not_in_the_toc(root: Path) -> list[str]:
    """The pages in ``chapters/`` that ``_toc.yml`` does not list: the book builds them into no page."""
    listed = set(toc_pages(read_toc(root)))
    return [
        page for path in sorted((root / "chapters").glob("*.md")) if (page := f"chapters/{path.stem}") not in listed
    ]


def chapter_shape_faults(root: Path) -> list[str]:
    """What a numbered chapter lacks of the shape every chapter has: its numbering cell first, with the
    number its place in ``_toc.yml`` gives it; its ``(chapter-<name>)=`` label on its title; its
    learning objectives before its first section, and its reading time right under them; ``## Summary``
    then ``## Exercises`` last; and its line in the introduction's list of chapters, a link to it."""
    book, faults = book_from_sources(root), []
    intro = (root / "chapters" / "intro.md").read_text(encoding="utf-8")
    for chapter in book.chapters:
        name, cells = Path(chapter).name, read_chapter(root, chapter).cells
        text = "\n".join(cell.source for cell in cells if cell.cell_type == "markdown")
        expected = numbering_source(book, chapter)
        if not cells or "numbering" not in tags(cells[0]) or cells[0].source != expected:
            faults.append(f"{chapter}: its first cell is not its numbering cell, {expected!r} ({name} is chapter "
                          f"{book.chapter_number(chapter)} in _toc.yml): `make notebooks` writes it")  # fmt: skip
        if not re.search(rf"^\(chapter-{name}\)=\n# ", text, re.M):
            faults.append(f"{chapter}: no `(chapter-{name})=` label on the line before its `# ` title")
        sections = re.findall(r"^## (.*)$", text, re.M)
        objectives = text.find("{admonition} Learning objectives")
        if objectives < 0 or (sections and objectives > text.find("\n## ")):
            faults.append(f"{chapter}: no `{{admonition}} Learning objectives` before its first section")
        elif not re.match(r"[^\n]*\n(?:.*?\n)*?```\n\n```\{reading-time\}\n```\n", text[objectives:]):
            faults.append(f"{chapter}: no ```{{reading-time}}``` directive right under its learning objectives")
        if sections[-2:] != ["Summary", "Exercises"]:
            faults.append(f"{chapter}: its last sections are {sections[-2:]}, not ['Summary', 'Exercises']")
        if name != "intro" and not re.search(rf"<chapter-{name}>`|\{{ref\}}`chapter-{name}`|\{{doc\}}`{name}`", intro):
            faults.append(f"{chapter}: chapters/intro.md's list of chapters does not link it ({{ref}}`chapter-{name}`)")
    return faults


STUB_RAISES = re.compile(r'raise NotImplementedError\(\s*"not answered yet: write \w+"\s*\)')


def answer_cell_faults(root: Path) -> list[str]:
    """What an exercise's answer cells and checks lack of the recipe's shape: the answer cell's first line
    says what the answer may use, and it raises ``NotImplementedError("not answered yet: write f")``
    (the editions turn that into "Exercise N.M is not answered yet"); a checked exercise has hidden tests."""
    faults = []
    for chapter, label, cell in exercise_cells(root):
        if "exercise-stub" in tags(cell):
            if not cell.source.startswith("# Checked and graded on its own"):
                faults.append(f"{chapter}: {label}'s answer cell does not start by saying what the answer may use")
            if not STUB_RAISES.search(cell.source):
                raises = 'NotImplementedError("not answered yet: write f")'
                faults.append(f"{chapter}: {label}'s answer cell does not raise {raises}")
    hidden = tagged(root, "hidden-check")
    for chapter, checked in tagged(root, "check").items():
        faults += [
            f"{chapter}: {name} has a check but no hidden-check cell"
            for name in checked
            if name not in hidden.get(chapter, [])
        ]
    return faults


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


DRILL_REGION = re.compile(r'<div class="cr-drill"([^>]*)>')


def drill_regions(root: Path, page: str) -> list[str]:
    """What each drill region of a page names: ``"all"`` (``data-drill-kinds="all"``), its
    ``data-drill-chapter``, ``""`` (the page's own chapter), or ``"kinds: ..."`` (a list of kinds
    written by hand, which the pages do not have)."""
    found = []
    for attributes in DRILL_REGION.findall((root / f"{page}.md").read_text(encoding="utf-8")):
        kinds = re.search(r'data-drill-kinds="([^"]*)"', attributes)
        chapter = re.search(r'data-drill-chapter="([^"]*)"', attributes)
        found.append(("all" if kinds[1] == "all" else f"kinds: {kinds[1]}") if kinds else chapter[1] if chapter else "")
    return found


def drills_unlike_the_registry(root: Path, kinds: dict) -> list[str]:
    """Where a chapter's drill regions or the Practice page's differ from what the registry ``kinds`` gives."""
    teaching = list(dict.fromkeys(kind.chapter for kind in kinds.values()))  # in the registry's order
    found = []
    for chapter in numbered_chapters(read_toc(root)):
        regions, name = drill_regions(root, chapter), Path(chapter).name
        expected = [""] if name in teaching else []
        if regions != expected:
            found.append(f"{chapter}.md has the drill regions {regions}; the registry's kinds give it {expected}")
    practice, expected = drill_regions(root, "chapters/practice"), ["all", *teaching]
    if practice != expected:
        found.append(f"chapters/practice.md has the drill regions {practice}: the registry's kinds give it {expected}")
    return found


def test_every_page_is_in_the_toc():
    missing = pages_not_in_the_toc(ROOT)
    assert missing == [], (
        f"{missing} are pages of no book: add `- file: <page>` to _toc.yml (a numbered part for a chapter)"
    )


def test_every_chapter_has_the_shape_of_a_chapter():
    faults = chapter_shape_faults(ROOT)
    assert not faults, f"{len(faults)} faults:\n" + "\n".join(faults)


def test_each_chapter_s_drills_are_the_kinds_the_registry_gives_it():
    assert drills_unlike_the_registry(ROOT, KINDS) == []


def test_every_chapter_has_its_two_notebooks_committed():
    assert missing_notebooks(ROOT, committed_files(ROOT)) == [], "run `make notebooks` and commit what it writes"


def test_every_answer_cell_has_a_check_cell():
    assert unchecked_answer_cells(ROOT) == []


def test_every_answer_cell_and_check_has_the_recipe_s_shape():
    assert answer_cell_faults(ROOT) == []


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


def statements_pointing_above(assignments: list[Assignment]) -> list[str]:
    """The handed-out exercises whose statement points at something "above": a handout holds the
    exercise, its answer cell and its check, not the chapter's cells that came before it."""
    return [
        f"{question.label}: {match[0].strip()!r}"
        for assignment in assignments
        for question in assignment.questions
        for match in re.finditer(r"[^.]*\babove\b[^.]*", question.text)
    ]


def test_a_handed_out_exercise_reads_true_without_the_chapter_s_cells():
    _, assignments = assignments_of(ROOT)
    assert statements_pointing_above(assignments) == [], "name what to compare with: the handout has no cell above"
    question = assignments[0].questions[0]
    statement = question.text.rstrip().removesuffix("````")
    planted = replace(question, text=statement + "Compare with the numbers printed above.\n````")
    found = statements_pointing_above([replace(assignments[0], questions=[planted])])
    assert found == [f"{question.label}: 'Compare with the numbers printed above'"]


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
    assert answer_cell_faults(tmp_path) == [
        "chapters/planted: ex-planted-square's answer cell does not start by saying what the answer may use"
    ]
    planted = tmp_path / "chapters" / "planted.md"  # a check with no hidden tests; a stub that raises "todo"
    original = planted.read_text(encoding="utf-8")
    planted.write_text(
        planted.read_text(encoding="utf-8").replace('"not answered yet: write square"', '"todo"')
        + "\n```{code-cell} ipython3\n:tags: [remove-cell, check]\n\nfeedback.check_square(square)\n```\n",
        encoding="utf-8",
    )
    assert answer_cell_faults(tmp_path)[1:] == [
        "chapters/planted: ex-planted-square's answer cell does not raise "
        'NotImplementedError("not answered yet: write f")',
        "chapters/planted: ex-planted-square has a check but no hidden-check cell",
    ]
    planted.write_text(original, encoding="utf-8")
    assert chapters_without_assignment(tmp_path) == ["chapters/planted"]
    planted, book = "chapters/planted", book_from_sources(tmp_path)
    assert chapter_shape_faults(tmp_path) == [
        f"{planted}: its first cell is not its numbering cell, {numbering_source(book, planted)!r} "
        "(planted is chapter 2 in _toc.yml): `make notebooks` writes it",
        f"{planted}: no `{{admonition}} Learning objectives` before its first section",
        f"{planted}: its last sections are ['Exercises'], not ['Summary', 'Exercises']",
        f"{planted}: chapters/intro.md's list of chapters does not link it ({{ref}}`chapter-planted`)",
    ]
    numbered["chapters"] = [{"file": "chapters/planted"}, {"file": "chapters/intro"}]  # intro is now chapter 2
    (tmp_path / "_toc.yml").write_text(yaml.safe_dump(toc), encoding="utf-8")
    intro = tmp_path / "chapters" / "intro.md"  # and its title has lost its label, its objectives their time
    text = intro.read_text(encoding="utf-8").replace("(chapter-intro)=\n", "")
    intro.write_text(text.replace("```{reading-time}\n```\n", ""), encoding="utf-8")
    assert [fault for fault in chapter_shape_faults(tmp_path) if fault.startswith("chapters/intro")] == [
        "chapters/intro: its first cell is not its numbering cell, "
        f"{numbering_source(book_from_sources(tmp_path), 'chapters/intro')!r} "
        "(intro is chapter 2 in _toc.yml): `make notebooks` writes it",
        "chapters/intro: no `(chapter-intro)=` label on the line before its `# ` title",
        "chapters/intro: no ```{reading-time}``` directive right under its learning objectives",
    ]
    shutil.copy(ROOT / "_toc.yml", tmp_path / "_toc.yml")  # the book's, without the planted chapter
    assert pages_not_in_the_toc(tmp_path) == ["chapters/planted"]


def test_the_drill_check_fails_on_a_region_missing_misplaced_or_listing_kinds(tmp_path: Path):
    for name in ("_toc.yml", "_config.yml"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "chapters", tmp_path / "chapters", ignore=shutil.ignore_patterns("*.ipynb"))
    teaching = list(dict.fromkeys(kind.chapter for kind in KINDS.values()))
    # a kind of a chapter that teaches none yet: the Practice page lacks its region
    kinds = {**KINDS, "planted": replace(KINDS["neuron"], chapter="planted", title="a planted kind")}
    assert drills_unlike_the_registry(ROOT, kinds) == [
        f"chapters/practice.md has the drill regions {['all', *teaching]}: the registry's kinds give it "
        f"{['all', *teaching, 'planted']}"
    ]
    kinds = {**KINDS, "planted": replace(KINDS["neuron"], chapter="frameworks")}
    assert drills_unlike_the_registry(tmp_path, kinds) == []  # one more kind of a chapter with drills: no edit
    practice = tmp_path / "chapters" / "practice.md"  # the graph chapter's region after the backward's
    text = practice.read_text(encoding="utf-8")
    graph, backward = 'data-drill-chapter="graph"', 'data-drill-chapter="backward"'
    practice.write_text(text.replace(graph, "<>").replace(backward, graph).replace("<>", backward), encoding="utf-8")
    swapped = ["all", *teaching]
    swapped[2:4] = [swapped[3], swapped[2]]
    intro = tmp_path / "chapters" / "intro.md"  # a list of kinds typed into a chapter's region
    intro.write_text(intro.read_text(encoding="utf-8").replace(
        '<div class="cr-drill" ', '<div class="cr-drill" data-drill-kinds="neuron" '), encoding="utf-8")  # fmt: skip
    assert drills_unlike_the_registry(tmp_path, KINDS) == [
        "chapters/intro.md has the drill regions ['kinds: neuron']; the registry's kinds give it ['']",
        f"chapters/practice.md has the drill regions {swapped}: the registry's kinds give it {['all', *teaching]}",
    ]


def test_the_drill_check_fails_on_a_chapter_that_teaches_kinds_without_its_region(tmp_path: Path):
    for name in ("_toc.yml", "_config.yml"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "chapters", tmp_path / "chapters", ignore=shutil.ignore_patterns("*.ipynb"))
    capstone = tmp_path / "chapters" / "capstone.md"
    capstone.write_text(capstone.read_text(encoding="utf-8").replace('<div class="cr-drill"', "<div"), encoding="utf-8")
    assert drills_unlike_the_registry(tmp_path, KINDS) == [
        "chapters/capstone.md has the drill regions []; the registry's kinds give it ['']"
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
