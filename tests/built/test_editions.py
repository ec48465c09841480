"""The notebook editions (tools/book/notebooks.py, `make notebooks`) and the student site.

* The committed notebooks are exactly what the generator writes from the chapters now.
* Opening and saving a chapter through jupytext's contents manager (what JupyterLab
  uses) gives back the same bytes.
* The editions' Markdown is plain: no MyST role, directive or label is left for Colab to
  show raw, and the numbers they print are the ones the built book shows.
* No line of solution code and no sentence of solution text reaches a student file,
  notebook or HTML.
* The converter rejects what it cannot convert, naming the chapter, instead of writing
  raw MyST; a solution cell that is not tagged is an error, not a leak.
"""

from __future__ import annotations

import functools
import html.parser
import json
import re
import subprocess
import sys
import textwrap
from collections import Counter
from dataclasses import replace
from html import unescape
from pathlib import Path
from urllib.parse import urlsplit

import jupytext
import nbformat
import pytest
from bs4 import BeautifulSoup
from common import MYST_HEADER, ROOT

from tools.book import book_model, myst, notebooks, plain_markdown, unglued

BOOK = book_model.load_book()
CHAPTERS = BOOK.chapters
STUDENT_HTML = ROOT / "_build" / "html-student"
#: MyST that Colab would show as raw text.
RAW_MYST = re.compile(r"\{[\w:-]+\}`|^\s*(`{3,}|:{3,})\{|^\(\S+\)=\s*$|^\+\+\+", re.MULTILINE)


def edition(chapter: str, student: bool):
    return nbformat.read(ROOT / book_model.edition_path(chapter, student), as_version=4)


@functools.cache
def chapter_cells(chapter: str) -> list:
    """The chapter's cells as jupytext reads them, read once: do not change them."""
    return jupytext.read(ROOT / f"{chapter}.md").cells


def solution_cells(chapter: str) -> list:
    return [cell for cell in chapter_cells(chapter) if "solution" in notebooks.tags(cell)]


def other_cells_text(chapter: str) -> str:
    return "\n".join(cell.source for cell in chapter_cells(chapter) if "solution" not in notebooks.tags(cell))


@functools.cache
def solution_code_lines(chapter: str) -> frozenset[str]:
    """Lines of solution code that say something (not blank, not only punctuation).

    Only lines that the rest of the chapter does not also contain.
    """
    elsewhere = {line.strip() for line in other_cells_text(chapter).split("\n")}
    lines = set()
    for cell in solution_cells(chapter):
        if cell.cell_type == "code":  # as the editions hold it, without the book's glue
            for line in unglued.without_glue(cell.source).split("\n"):
                line = line.strip()
                if len(line) >= 12 and line not in elsewhere:
                    lines.add(line)
    return frozenset(lines)


@functools.cache
def solution_phrases(chapter: str, words: int = 8) -> frozenset[str]:
    """Runs of ``words`` consecutive plain words from the solutions' text (math and markup removed)."""
    phrases = set()
    for cell in solution_cells(chapter):
        if cell.cell_type != "markdown":
            continue
        # Removed math, code and markup end a phrase, so that no phrase spans them.
        text = re.sub(
            r"\$\$.*?\$\$|\$[^$]*\$|\{[\w:-]+\}`[^`]*`|`[^`]*`|^`{3,}.*$|^:\w+:.*$",
            ". ",
            cell.source,
            flags=re.S | re.M,
        )
        for sentence in re.split(r"[.:;!?()\n]\s*", text.replace("\n", " ")):
            tokens = re.findall(r"[A-Za-z][A-Za-z'-]*", sentence)
            if len(tokens) >= words:
                phrases.add(" ".join(tokens[:words]))
    return frozenset(phrases)


def plain_words(text: str) -> str:
    return " ".join(re.findall(r"[A-Za-z][A-Za-z'-]*", text))


# ---------------------------------------------------------------------------------------
# Generated files
# ---------------------------------------------------------------------------------------


def test_committed_files_match_the_generator():
    stale = [path.relative_to(ROOT).as_posix() for path in notebooks.stale_files(BOOK)]
    assert not stale, f"out of date: {stale}. Run `make notebooks` and commit the result."


@pytest.mark.parametrize("numbered", CHAPTERS)
def test_jupyterlab_save_round_trip_is_byte_for_byte(numbered: str, tmp_path: Path):
    """jupytext's contents manager (JupyterLab's) reads and saves the chapter unchanged."""
    chapter = numbered
    from jupytext import TextFileContentsManager

    source = ROOT / f"{chapter}.md"
    copy = tmp_path / source.name
    copy.write_bytes(source.read_bytes())
    manager = TextFileContentsManager(root_dir=str(tmp_path))
    model = manager.get(copy.name, content=True)
    assert model["type"] == "notebook", f"{chapter}.md does not open as a notebook"
    manager.save(model, copy.name)
    assert copy.read_bytes() == source.read_bytes(), (
        f"saving {chapter}.md through jupytext changes it; run `make notebooks` to write it in jupytext's form"
    )


@pytest.mark.parametrize("student", [False, True], ids=["colab", "student"])
@pytest.mark.parametrize("numbered", CHAPTERS)
def test_editions_are_plain_markdown_without_outputs(numbered: str, student: bool):
    chapter = numbered
    notebook = edition(chapter, student)
    nbformat.validate(notebook)
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "markdown":
            raw = RAW_MYST.search(cell.source)
            assert raw is None, f"cell {index} shows raw MyST {raw[0]!r}: {cell.source[:200]!r}"
        else:
            assert cell.outputs == [] and cell.execution_count is None, f"cell {index} has stored output"
            assert "glue" not in cell.source, f"cell {index} keeps the book's glue: {cell.source[:200]!r}"
    first_code = next(cell for cell in notebook.cells if cell.cell_type == "code")
    assert first_code.source == notebooks.setup_source(BOOK), "the first code cell must be the set-up cell"
    assert "CHAINRULE_PIP_SPEC" in first_code.source and BOOK.default_pip_spec in first_code.source


@pytest.mark.parametrize("numbered", CHAPTERS)
def test_exercises_are_numbered_by_chapter(numbered: str):
    chapter = numbered
    number = BOOK.chapter_number(chapter)
    headings = [
        line
        for cell in edition(chapter, student=True).cells
        if cell.cell_type == "markdown"
        for line in cell.source.split("\n")
        if line.startswith("### Exercise")
    ]
    expected = [f"### Exercise {number}.{index}" for index in range(1, len(headings) + 1)]
    assert [heading.split(" (")[0] for heading in headings] == expected
    assert headings, f"{chapter} has no exercises"


@pytest.mark.parametrize("numbered", CHAPTERS)
def test_colab_edition_folds_every_solution(numbered: str):
    chapter = numbered
    notebook = edition(chapter, student=False)
    headings = [cell for cell in notebook.cells if cell.source.startswith("#### Solution to Exercise")]
    assert headings and sorted(notebook.metadata["colab"]["collapsed_sections"]) == sorted(c.id for c in headings)
    for cell in headings:
        assert cell.metadata["id"] == cell.id
        assert cell.metadata.get("jp-MarkdownHeadingCollapsed") is True, "JupyterLab would show the solution"
    for cell in notebook.cells:
        if cell.cell_type == "code" and "solution" in cell.metadata.get("tags", []):
            assert cell.metadata.get("jupyter", {}).get("source_hidden") is True, cell.source[:80]


@pytest.mark.parametrize("numbered", CHAPTERS)
def test_student_edition_has_no_solution(numbered: str):
    chapter = numbered
    notebook = edition(chapter, student=True)
    text = "\n".join(cell.source for cell in notebook.cells)
    leaked = sorted(line for line in solution_code_lines(chapter) if line in text)
    assert not leaked, f"solution code in student/{chapter}.ipynb: {leaked[:5]}"
    words = plain_words(text)
    leaked = sorted(phrase for phrase in solution_phrases(chapter) if phrase in words)
    assert not leaked, f"solution text in student/{chapter}.ipynb: {leaked[:5]}"
    assert not [cell for cell in notebook.cells if "solution" in cell.metadata.get("tags", [])]


def test_leak_checks_can_fail():
    """The phrases and lines the leak test looks for exist, and are found in the Colab edition."""
    for chapter in CHAPTERS:
        colab = "\n".join(cell.source for cell in edition(chapter, student=False).cells)
        lines, phrases = solution_code_lines(chapter), solution_phrases(chapter)
        assert lines or phrases, f"{chapter}: no solution content found to check"
        assert all(line in colab for line in lines), chapter
        words = plain_words(colab)
        assert all(phrase in words for phrase in phrases), chapter


@pytest.mark.parametrize("numbered", CHAPTERS)
def test_student_edition_has_answer_cells_under_each_exercise(numbered: str):
    """Every exercise gets answer cells; each code answer cell names its own exercise's number."""
    chapter = numbered
    cells = edition(chapter, student=True).cells
    checked = {number: True for number, _ in checks_of(cells)}
    current, answered = None, {}
    for cell in cells:
        heading = re.match(r"### Exercise (\d+\.\d+)", cell.source)
        if cell.cell_type == "markdown" and heading:
            current = heading[1]
            answered[current] = 0
        elif "exercise-stub" in cell.metadata.get("tags", []):
            assert current, f"an answer cell before any exercise: {cell.source[:80]!r}"
            answered[current] += 1
            if cell.cell_type == "code":
                numbers = re.findall(r"Exercise (\d+\.\d+)", cell.source)
                assert all(number == current for number in numbers), (
                    f"the answer cell under Exercise {current} names Exercise {numbers}: {cell.source[:120]!r}"
                )
                assert numbers or "= ..." in cell.source, f"an answer cell that names no exercise: {cell.source!r}"
                if "raise" in cell.source:
                    assert checked.get(current), f"Exercise {current} has no check, yet its answer cell raises"
    assert answered and all(answered.values()), f"exercises without an answer cell: {answered}"


@pytest.mark.parametrize("numbered", CHAPTERS)
def test_authored_answer_and_check_cells(numbered: str):
    """Answer cells written in a chapter reach only the student edition; check cells reach both, not the site."""
    chapter = numbered
    source = jupytext.read(ROOT / f"{chapter}.md").cells
    colab = "\n".join(cell.source for cell in edition(chapter, student=False).cells)
    student = "\n".join(cell.source for cell in edition(chapter, student=True).cells)
    for cell in source:
        cell_tags = notebooks.tags(cell)
        if "exercise-stub" in cell_tags or "check" in cell_tags:
            assert "remove-cell" in cell_tags, f"{cell.source[:60]!r} must be tagged remove-cell (not on the site)"
        if "exercise-stub" in cell_tags:
            # The chapter's message names no number; the edition's names the book's (a fork may renumber).
            pattern = re.escape(cell.source).replace(
                '"not\\ answered\\ yet:', '"Exercise\\ \\d+\\.\\d+\\ is\\ not\\ answered\\ yet:'
            )
            assert re.search(pattern, student), (
                f"the answer cell {cell.source[:60]!r}, numbered, is not in the student edition"
            )
            assert not re.search(r"Exercise \d", cell.source), "the chapter types the exercise's number"
            assert not re.search(pattern, colab), "an answer cell would shadow nothing in the full edition"
        if "check" in cell_tags:
            body = textwrap.indent(notebooks.check_body(chapter, cell.source), "    ")
            assert body in colab and body in student, "the check runs in both editions"
        if "hidden-check" in cell_tags:  # hidden tests go only into the autograder (tools/grader/assignments.py)
            assert "remove-cell" in cell_tags, f"{cell.source[:60]!r} must be tagged remove-cell (not on the site)"
            assert cell.source not in colab and cell.source not in student, cell.source[:80]


@pytest.mark.parametrize("numbered", CHAPTERS)
def test_edition_code_fits_the_page_column(numbered: str):
    """What the editions add to the chapter's code (answer, check and summary cells) keeps to 72 columns too."""
    for student in (False, True):
        long = [
            line
            for cell in edition(numbered, student=student).cells
            if cell.cell_type == "code"
            for line in cell.source.splitlines()
            if len(line) > 72
        ]
        assert not long, f"{numbered}: code lines over 72 characters: {long}"


def checks_of(cells) -> list[tuple[str, str]]:
    """(exercise number, check cell source) of an edition's check cells."""
    found = []
    for cell in cells:
        match = re.search(r'with feedback\.exercise\("([\d.]+)"\):', cell.source)
        if "check" in cell.metadata.get("tags", []) and match:
            found.append((match[1], cell.source))
    return found


@pytest.mark.parametrize("numbered", CHAPTERS)
def test_checks_run_inside_their_exercise_and_the_student_edition_ends_checking_all(numbered: str):
    """Each check cell runs inside ``feedback.exercise("<its number>")``, so that a missing answer is one line;
    the student edition's last cell runs every check again, one verdict per exercise."""
    chapter = numbered
    source_checks = [cell for cell in jupytext.read(ROOT / f"{chapter}.md").cells if "check" in notebooks.tags(cell)]
    for student in (False, True):
        cells = edition(chapter, student=student).cells
        checks = checks_of(cells)
        assert len(checks) == len(source_checks), f"{chapter}: a check cell is not inside feedback.exercise"
        last = cells[-1]
        if student and checks:
            assert "check-all" in last.metadata.get("tags", []), f"{chapter}: the last cell does not check all"
            for number, _ in checks:
                assert f'with summary.exercise("{number}"):' in last.source
            assert last.source.rstrip().endswith("summary.show()")
        else:
            assert "check-all" not in last.metadata.get("tags", [])


def solution_of(chapter: str, label: str) -> list:
    cells, inside = [], False
    for cell in jupytext.read(ROOT / f"{chapter}.md").cells:
        inside = inside or (notebooks.solution_label(cell) == label)
        if inside:
            cells.append(cell)
            if "{solution-end}" in cell.source:
                break
    return cells


# ---------------------------------------------------------------------------------------
# The set-up cell
# ---------------------------------------------------------------------------------------


def run_setup_cell(tmp_path: Path, env_extra: dict[str, str]) -> subprocess.CompletedProcess:
    """Run the set-up cell with an isolated interpreter that cannot import the repo's chainrule."""
    import os
    import subprocess

    script = tmp_path / "setup_cell.py"
    script.write_text(notebooks.setup_source(BOOK), encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "CHAINRULE_PIP_SPEC")}
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", **env_extra)
    # -I: isolated (no user site, no PYTHONPATH); -S: no site-packages, so no chainrule.
    return subprocess.run(
        [sys.executable, "-I", "-S", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )


def test_setup_cell_outside_colab_says_how_to_install(tmp_path: Path):
    result = run_setup_cell(tmp_path, {})
    assert result.returncode != 0
    assert "ModuleNotFoundError: chainrule is not installed" in result.stderr
    assert "make setup" in result.stderr and "pip install -e ." in result.stderr


def test_setup_cell_fails_loudly_when_the_install_fails(tmp_path: Path):
    missing = tmp_path / "no-such-chainrule-0.0-py3-none-any.whl"
    result = run_setup_cell(tmp_path, {"CHAINRULE_PIP_SPEC": str(missing)})
    assert result.returncode != 0
    assert f"Installing chainrule with `pip install {missing}` failed" in result.stderr
    assert "CHAINRULE_PIP_SPEC" in result.stderr


def test_setup_cell_does_nothing_when_chainrule_imports():
    calls = []
    namespace = {}
    import subprocess

    original = subprocess.run
    subprocess.run = lambda *args, **kwargs: calls.append(args)
    try:
        exec(compile(notebooks.setup_source(BOOK), "setup-cell", "exec"), namespace)
    finally:
        subprocess.run = original
    assert calls == [], "the set-up cell ran a command although chainrule imports"


@pytest.mark.parametrize("numbered", CHAPTERS)
def test_setup_cell_is_hidden_on_the_site_and_defined_once(numbered: str):
    chapter = numbered
    cells = [cell for cell in jupytext.read(ROOT / f"{chapter}.md").cells if "setup" in notebooks.tags(cell)]
    assert len(cells) == 1
    assert "remove-cell" in notebooks.tags(cells[0]), "the set-up cell must carry remove-cell (not on the website)"
    assert cells[0].source == notebooks.setup_source(BOOK)


# ---------------------------------------------------------------------------------------
# The converter on small books
# ---------------------------------------------------------------------------------------

HEADER = MYST_HEADER
SETUP = """```{code-cell} ipython3
:tags: [remove-cell, setup]

pass
```
"""


def write_numbers(root: Path, numbered: dict[str, tuple[str, str]]) -> None:
    """A stand-in for what the book build writes (_ext/edition_numbers.py): chapter two's elements, by label."""
    elements = {
        f"id-{label}": {"kind": kind, "number": number, "label": label} for label, (kind, number) in numbered.items()
    }
    numbers = {
        "chapters": {"chapters/one": "1", "chapters/two": "2"},
        "numbered": {"chapters/two": elements} if elements else {},
        "glue": {"chapters/two": {"two-ratio": "0.73125", "two-name": "'float32'"}},
    }
    (root / book_model.NUMBERS).parent.mkdir(exist_ok=True)
    (root / book_model.NUMBERS).write_text(json.dumps(numbers), encoding="utf-8")


def small_book(tmp_path: Path, body: str, numbered: dict[str, tuple[str, str]] | None = None):
    """A two-chapter book whose second chapter is ``body``; ``numbered`` is what the build numbered in it."""
    (tmp_path / "chapters").mkdir()
    (tmp_path / "_config.yml").write_text(
        "repository:\n  url: https://github.com/someone/course\n  branch: trunk\nbibtex_bibfiles: [refs.bib]\n"
    )
    (tmp_path / "refs.bib").write_text("@book{knuth1968art, author={Knuth, Donald E.}, title={The Art}, year={1968}}\n")
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: chapters/index\nparts:\n  - numbered: 1\n    chapters:\n"
        "      - file: chapters/one\n      - file: chapters/two\n"
    )
    (tmp_path / "chapters" / "index.md").write_text("# The course\n")
    (tmp_path / "chapters" / "one.md").write_text(HEADER + "(chapter-one)=\n# One\n\n" + SETUP + "\nText.\n")
    (tmp_path / "chapters" / "two.md").write_text(HEADER + "# Two\n\n" + SETUP + "\n" + body)
    write_numbers(tmp_path, numbered or {})
    book = book_model.load_book(tmp_path)
    return book, jupytext.read(tmp_path / "chapters" / "two.md")


def markdown_of(notebook) -> str:
    return "\n\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")


def test_the_editions_leave_the_glue_out_and_keep_the_rest():
    """The book's glue is noise in a notebook whose text holds the numbers already: its import, its calls,
    a loop that only glues go; what a call gave back stays; a block left empty keeps a pass."""
    cell = (
        "from chainrule_course.pages.glue import glue\nimport math\n\n\ndef f(v):\n    return glue('r', v + 1)\n"
        "\n\nx = glue('x', f(2))\nglue('y',\n     x * 2)\nfor k in range(2):\n    glue(f'k{k}', k)\n"
        "for k in range(2):\n    print(k)\n    glue(f'k{k}', k)\nif x:\n    glue('z', 1)\nelse:\n    print(0)\n"
        "print(f'{glue(\"é\", x):.1f}')\n"
    )
    assert unglued.without_glue(cell) == (
        "import math\n\n\ndef f(v):\n    return v + 1\n\n\nx = f(2)\nfor k in range(2):\n    print(k)\n"
        "if x:\n    pass\nelse:\n    print(0)\nprint(f'{x:.1f}')\n"
    )
    assert unglued.without_glue("%timeit f()\nglue('a', 1)\n") == "%timeit f()\nglue('a', 1)\n"  # not Python


def test_glossary_terms_and_glued_numbers_become_plain_text(tmp_path: Path):
    body = (
        "A {term}`leaf` and two {term}`leaves <Leaf>`; ratio {glue:text}`two-ratio:.2f`,\n"
        "dtype {glue:text}`two-name`, raw {glue}`two-ratio`.\n"
    )
    book, notebook = small_book(tmp_path, body)
    text = markdown_of(notebooks.edition(book, "chapters/two", notebook, student=False))
    assert "A leaf and two leaves; ratio 0.73,\ndtype float32, raw 0.73125." in text


def test_an_edition_that_differs_only_in_glued_numbers_is_current(tmp_path: Path):
    """A timing glued into the prose changes at every build; the committed edition stays current."""
    book, notebook = small_book(tmp_path, "Ratio {glue:text}`two-ratio:.2f` here.\n")
    written = nbformat.writes(notebooks.edition(book, "chapters/two", notebook, student=False))
    marked = nbformat.writes(notebooks.edition(replace(book, mark_glue=True), "chapters/two", notebook, False))
    assert "Ratio 0.73 here." in written and f"Ratio {plain_markdown.GLUE_MARK} here." in marked
    assert plain_markdown.same_but_glued(written, marked)
    assert plain_markdown.same_but_glued(written.replace("Ratio 0.73", "Ratio 12.5"), marked)
    assert not plain_markdown.same_but_glued(written.replace("0.73 here", "0.73 there"), marked)
    assert not plain_markdown.same_but_glued(written.replace("Ratio 0.73", "Ratio 0\n73"), marked)


def test_converter_resolves_numbers_citations_and_links(tmp_path: Path):
    body = """Intro {cite}`knuth1968art` and {cite:t}`knuth1968art`; see {ref}`chapter-one`,
{numref}`chapter %s <chapter-one>`.

$$
a = b
$$ (eq-a)

By {eq}`eq-a` and {numref}`ex-first`.

```{admonition} Careful
:class: warning

Body *text*.
```

+++

````{exercise}
:label: ex-first

Do it.
````

+++ {"tags": ["solution"]}

````{solution-start} ex-first
:class: dropdown
````

Secret words.

```{code-cell} ipython3
---
tags: [solution]
---
secret_answer = 42
```

+++ {"tags": ["solution"]}

````{solution-end}
````
"""
    # Numbers unlike the ones counting would give: the converter prints the build's.
    book, notebook = small_book(tmp_path, body, {"eq-a": ("equation", "2.7"), "ex-first": ("exercise", "2.3")})
    colab = notebooks.edition(book, "chapters/two", notebook, student=False)
    text = markdown_of(colab)
    assert text.startswith("# 2. Two")
    assert "[Knuth, 1968]" in text and "Knuth [1968]" in text and "## References" in text
    # A link to another chapter opens its notebook beside this one, or the same one in Colab.
    assert (
        "(one.ipynb) ([in Colab](https://colab.research.google.com/github/someone/course/blob/trunk/chapters/"
        "one.ipynb))" in text
    )
    assert "see [One](one.ipynb) ([in Colab]" in text and ",\n[chapter 1](one.ipynb) ([in Colab]" in text
    assert "$$\n\\begin{equation*}\na = b\n\\tag{2.7}\n\\end{equation*}\n$$" in text
    assert "By (2.7) and Exercise 2.3." in text
    assert "> **Careful**" in text and "> Body *text*." in text
    assert "### Exercise 2.3" in text and "#### Solution to Exercise 2.3" in text
    assert "secret_answer = 42" in "\n".join(cell.source for cell in colab.cells)
    student = notebooks.edition(book, "chapters/two", notebook, student=True)
    everything = "\n".join(cell.source for cell in student.cells)
    assert "Secret words" not in everything and "secret_answer" not in everything
    # Exercise 2.3 has no check: its answer cells do not raise, so Run All goes past it.
    assert "**Your answer to Exercise 2.3.**" in everything and "# Exercise 2.3: room for your code" in everything
    assert not [
        c
        for c in student.cells
        if c.cell_type == "code" and "raise" in c.source and "setup" not in c.metadata.get("tags", [])
    ]
    assert "student/chapters/one.ipynb" in everything  # links stay within the student edition


@pytest.mark.parametrize(
    "snippet, message",
    [
        ("```{note}\nHi\n```\n", "the directive {note} has no plain-Markdown form"),
        ("Text {abbr}`CPU (central processing unit)`.\n", "the role {abbr} has no plain-Markdown form"),
        ("Ratio {glue:text}`two-missing:.2f`.\n", "no cell of the last book build glued 'two-missing'"),
        ("Ratio {glue:text}`two-name:.2f`.\n", "format '.2f' does not fit the value"),
        ("See {numref}`fig-nowhere`.\n", "names an unknown label"),
        ("See {numref}`chapter-one`.\n", "needs a text with %s for the number"),
        ("See {cite}`nobody2020`.\n", "is not in references.bib"),
        # A bare $$ block would get a number in JupyterLab that the book does not show.
        ("$$\nx = 1\n$$\n", "an unlabelled $$ equation"),
    ],
)
def test_converter_rejects_what_it_cannot_convert(tmp_path: Path, snippet: str, message: str):
    book, notebook = small_book(tmp_path, snippet)
    with pytest.raises(myst.ConversionError, match=re.escape(message)) as error:
        notebooks.edition(book, "chapters/two", notebook, student=False)
    assert "chapters/two" in str(error.value)


FIGURE = "```{figure} ../refs.bib\n:name: fig-a\n\nA caption.\n```\n"


@pytest.mark.parametrize(
    "numbered, message",
    [
        ({}, "the figure 'fig-a' has no number in _build/numbers.json"),  # a figure added since the build
        ({"fig-a": ("exercise", "2.1")}, "the figure 'fig-a' has no number"),  # a label that changed kind
        (
            {"fig-a": ("figure", "2.1"), "fig-gone": ("figure", "2.2")},
            "numbers ['fig-gone'], which the chapter no longer",
        ),
        (None, "_build/numbers.json is missing"),
    ],
)
def test_converter_refuses_numbers_older_than_the_chapter(tmp_path: Path, numbered, message: str):
    if numbered is None:
        small_book(tmp_path, FIGURE, {"fig-a": ("figure", "2.1")})
        (tmp_path / book_model.NUMBERS).unlink()
        with pytest.raises(myst.ConversionError, match=re.escape(message)):
            book_model.load_book(tmp_path)
        return
    with pytest.raises(myst.ConversionError, match=re.escape(message)) as error:
        small_book(tmp_path, FIGURE, numbered)
    assert "chapters/two" in str(error.value) and "make notebooks" in str(error.value)


def test_converter_refuses_a_numbered_element_without_a_label(tmp_path: Path):
    book = small_book(tmp_path, "Text.\n")[0]
    path = book.root / book_model.NUMBERS
    numbers = json.loads(path.read_text(encoding="utf-8"))
    numbers["numbered"]["chapters/two"] = {"figure-0": {"kind": "figure", "number": "2.1"}}
    path.write_text(json.dumps(numbers), encoding="utf-8")
    with pytest.raises(myst.ConversionError, match=r"chapters/two.md: the book numbers figure 2.1, which has no"):
        book_model.load_book(book.root)


@pytest.mark.parametrize(
    "body, message",
    [
        # A solution code cell without the tag would reach the student edition.
        (
            '+++ {"tags": ["solution"]}\n\n````{solution-start} ex-a\n````\n\n'
            "```{code-cell} ipython3\nleak = 1\n```\n\n"
            '+++ {"tags": ["solution"]}\n\n````{solution-end}\n````\n',
            "lies inside a solution but not tagged",
        ),
        # A solution-start sharing its cell with the exercise.
        ("Text.\n\n````{solution-start} ex-a\n````\n", "must open its own Markdown cell"),
        ('+++ {"tags": ["solution"]}\n\n````{solution-start} ex-a\n````\n\nNo end.\n', "has no solution-end"),
    ],
)
def test_converter_rejects_badly_marked_solutions(tmp_path: Path, body: str, message: str):
    exercise = "+++\n\n````{exercise}\n:label: ex-a\n\nQ.\n````\n\n"
    book, notebook = small_book(tmp_path, exercise + body, {"ex-a": ("exercise", "2.1")})
    with pytest.raises(myst.ConversionError, match=message):
        notebooks.edition(book, "chapters/two", notebook, student=True)


# ---------------------------------------------------------------------------------------
# The built sites (make book, make book-student)
# ---------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def student_html() -> Path:
    if not (STUDENT_HTML / "index.html").is_file():
        pytest.fail(f"{STUDENT_HTML} is missing: run `make book-student` (make test builds it)", pytrace=False)
    return STUDENT_HTML


@functools.cache
def parsed(path: Path) -> BeautifulSoup:
    """A built page, parsed once for every test of this file that only reads it."""
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def page(html: Path, chapter: str) -> BeautifulSoup:
    """A chapter's built page, shared: read it only."""
    path = html / f"{chapter}.html"
    assert path.is_file(), f"{path} is missing"
    return parsed(path)


@functools.cache
def without_solutions(html: Path, chapter: str) -> BeautifulSoup:
    """A chapter's built page without its solution boxes, shared: read it only."""
    path = html / f"{chapter}.html"
    assert path.is_file(), f"{path} is missing"
    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    for solution in soup.select(".solution"):
        solution.decompose()
    return soup


def shown_numbers(soup: BeautifulSoup) -> dict[str, str]:
    """label -> the number the page shows, for figures, exercises and equations."""
    numbers = {}
    for caption in soup.select(".caption-number"):
        holder = caption.find_parent(["figure", "div"], id=True)
        match = re.search(r"(\d+(?:\.\d+)*)", caption.get_text())
        if holder is not None and match:
            numbers[holder["id"]] = match[1]
    for number in soup.select(".eqno"):
        holder = number.find_parent("div", id=True)
        numbers[holder["id"].removeprefix("equation-")] = number.get_text().strip("()# \n")
    return numbers


@pytest.mark.parametrize("numbered", CHAPTERS)
def test_edition_numbers_are_the_books(numbered: str, book_html: Path):
    chapter = numbered
    shown = shown_numbers(page(book_html, chapter))
    ours = {
        label: target.number
        for label, target in BOOK.targets.items()
        if target.chapter == chapter and target.kind in ("figure", "equation", "exercise")
    }
    assert ours, f"{chapter}: no numbered targets found"
    assert ours == {label: shown.get(label) for label in ours}, "numbers differ from the built page"
    assert set(shown) <= set(ours), f"numbered on the page but unknown to the editions: {set(shown) - set(ours)}"


#: A link to Colab as Sphinx writes it (double quotes, the URL HTML-escaped), found without parsing every page.
COLAB_LINK = re.compile(r'<a\s[^>]*?href="([^"]*colab\.research\.google\.com[^"]*)"')


def colab_links(html: Path) -> list[tuple[str, str]]:
    links = []
    for path in sorted(html.rglob("*.html")):
        for href in COLAB_LINK.findall(path.read_text(encoding="utf-8")):
            links.append((path.relative_to(html).as_posix(), unescape(href)))
    return links


@pytest.mark.parametrize("site", ["book", "student"])
def test_every_colab_link_opens_a_committed_notebook(site: str, book_html: Path, student_html: Path):
    html = book_html if site == "book" else student_html
    links = colab_links(html)
    prefix = f"https://colab.research.google.com/github/{BOOK.repo}/blob/{BOOK.branch}/"
    assert len(links) >= 2 * len(CHAPTERS), f"only {len(links)} Colab links in {html}"
    bad = [
        (where, href)
        for where, href in links
        if not href.startswith(prefix) or not href.endswith(".ipynb") or not (ROOT / href[len(prefix) :]).is_file()
    ]
    assert not bad, f"Colab links that do not open a notebook of {BOOK.repo}@{BOOK.branch}: {bad[:5]}"


@pytest.mark.parametrize("site", ["book", "student"])
def test_every_link_to_the_course_follows_the_one_repository_setting(site: str, book_html: Path, student_html: Path):
    """The rocket, repository and issues buttons, the table of notebooks and the text all link to
    the repository of _config.yml: a fork that sets its own ``repository.url`` moves every one of
    them (tests/built/test_fork.py changes the setting and compares). Only the bibliography cites other
    repositories."""
    html = book_html if site == "book" else student_html
    found, stray = Counter(), []
    for path in sorted(html.rglob("*.html")):
        if path.name == "bibliography.html":
            continue
        for anchor in parsed(path).select("a[href]"):
            parts = urlsplit(anchor["href"])
            if parts.hostname not in ("github.com", "colab.research.google.com"):
                continue
            segments = parts.path.strip("/").split("/")
            repo = "/".join(segments[1:3] if segments[0] == "github" else segments[:2])
            found[parts.hostname] += 1
            if repo != BOOK.repo:
                stray.append((path.relative_to(html).as_posix(), anchor["href"]))
    assert not stray, f"links to a repository other than {BOOK.repo}: {stray[:5]}"
    assert found["github.com"] >= len(CHAPTERS) and found["colab.research.google.com"] >= len(CHAPTERS), found


@pytest.mark.parametrize("site", ["book", "student"])
def test_launch_button_opens_the_pages_own_edition(site: str, book_html: Path, student_html: Path):
    html, student = (book_html, False) if site == "book" else (student_html, True)
    for chapter in CHAPTERS:
        hrefs = [a["href"] for a in page(html, chapter).select('a[href*="colab.research.google.com"]')]
        assert BOOK.colab_url(chapter, student) in hrefs, (
            f"{chapter}: the rocket button does not open {BOOK.colab_url(chapter, student)}"
        )
        assert len(set(hrefs)) == 1, f"{chapter}: several Colab links on one page: {hrefs}"


@pytest.mark.parametrize("numbered", CHAPTERS)
def test_student_site_has_no_solution(numbered: str, book_html: Path, student_html: Path):
    chapter = numbered
    student, full = page(student_html, chapter), page(book_html, chapter)
    assert not student.select(".solution"), "a solution box is on the student page"
    full_code = "\n".join(pre.get_text() for pre in full.select("pre"))
    lines = [line for line in solution_code_lines(chapter) if line in full_code]
    full_words = plain_words(full.get_text(" "))
    phrases = [phrase for phrase in solution_phrases(chapter) if phrase in full_words]
    # The checks find the solutions on the full page, so they can fail ...
    assert len(lines) >= 0.8 * len(solution_code_lines(chapter)), "the leak check misses solution code"
    assert len(phrases) >= 0.5 * len(solution_phrases(chapter)), "the leak check misses solution text"
    # ... but only what the full page shows inside its solutions counts (outputs may print code).
    full = without_solutions(book_html, chapter)
    outside_code = "\n".join(pre.get_text() for pre in full.select("pre"))
    outside_words = plain_words(full.get_text(" "))
    code = "\n".join(pre.get_text() for pre in student.select("pre"))
    words = plain_words(student.get_text(" "))
    leaked = [line for line in lines if line in code and line not in outside_code]
    leaked += [phrase for phrase in phrases if phrase in words and phrase not in outside_words]
    assert not leaked, f"solution content on the student page: {leaked[:5]}"
    exercises = [e.get_text() for e in student.select(".exercise .caption-number")]
    assert exercises == [e.get_text() for e in full.select(".exercise .caption-number")], "exercises differ"


class DrawnElements(html.parser.HTMLParser):
    """Every element of a page as drawn: its tag, classes and inline style, under its ancestors'."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self, text: str):
        super().__init__(convert_charrefs=False)
        self.open: list[tuple[str, str, str]] = []
        self.drawn: set[tuple] = set()
        self.feed(text)

    def handle_starttag(self, tag, attrs, closed=False):
        attributes = dict(attrs)
        element = (tag, " ".join(sorted((attributes.get("class") or "").split())), attributes.get("style") or "")
        self.drawn.add((*self.open, element))
        if not closed and tag not in self.VOID:
            self.open.append(element)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs, closed=True)

    def handle_endtag(self, tag):
        for depth in range(len(self.open) - 1, -1, -1):
            if self.open[depth][0] == tag:
                del self.open[depth:]
                return


def drawn_only_by(student: str, site: str) -> list[str]:
    """The elements the student page draws and the site's page does not, as their paths."""
    extra = DrawnElements(student).drawn - DrawnElements(site).drawn
    return sorted(" > ".join(f"{tag}.{classes}".rstrip(".") for tag, classes, _ in path[-3:]) for path in extra)


@pytest.mark.parametrize("name", sorted(path.stem for path in (ROOT / "chapters").glob("*.md")))
def test_the_student_page_draws_only_what_the_site_page_draws(name: str, book_html: Path, student_html: Path):
    """Each element of a student page is on the site's page too, with the same tag, classes and style
    under the same ancestors: the colour contrast axe-core measures there, in both colour modes
    (tests/browser/test_browser.py), is the student page's (tests/browser/test_accessibility.py)."""
    student = (student_html / "chapters" / f"{name}.html").read_text(encoding="utf-8")
    site = (book_html / "chapters" / f"{name}.html").read_text(encoding="utf-8")
    assert not drawn_only_by(student, site), f"{name}: only the student page draws {drawn_only_by(student, site)[:5]}"


def test_a_student_page_element_the_site_lacks_is_found():
    site = '<body><div class="a"><p>text</p><br></div><svg><path d="M0"/></svg></body>'
    assert drawn_only_by(site.replace("<p>text</p>", ""), site) == []
    assert drawn_only_by(site.replace("<p>", '<p class="b">'), site) == ["body > div.a > p.b"]
    assert drawn_only_by(site.replace("<p>", '<p style="color: #999">'), site) == ["body > div.a > p"]
    assert drawn_only_by(site.replace('<div class="a">', '<div class="a"><span>'), site) == [
        "body > div.a > span",
        "div.a > span > br",
        "div.a > span > p",
    ]


@pytest.mark.parametrize("site", ["book", "student"])
def test_setup_cell_is_not_on_the_website(site: str, book_html: Path, student_html: Path):
    html = book_html if site == "book" else student_html
    showing = [
        path.relative_to(html).as_posix()
        for path in sorted(html.rglob("*.html"))
        if "# Set-up: makes" in path.read_text(encoding="utf-8")
    ]  # the set-up cell's first line
    assert not showing, f"the set-up cell shows on {showing}"


# --------------------------------------------------------------------------- the student site's sources


def code(source: str, *cell_tags: str):
    return nbformat.v4.new_code_cell(source, metadata={"tags": list(cell_tags)} if cell_tags else {})


def test_student_site_refuses_a_cell_that_needs_a_solution():
    from tools.book import student_book

    cells = [
        code("import numpy as np\nx = np.ones(3)"),
        code("answer = x.sum()", "solution"),
        code("print(answer * 2)"),
    ]
    with pytest.raises(myst.ConversionError, match=r"chapters/x.md, cell 3 reads \['answer'\]"):
        student_book.check_independent("chapters/x", cells)
    # A name the kept cells define themselves, or that a function binds, is not a solution's.
    student_book.check_independent(
        "chapters/x", [*cells[:2], code("answer = 3\nprint(answer, x)"), code("def f(answer):\n    return answer")]
    )


def test_student_site_refuses_stale_executed_notebooks(tmp_path: Path):
    from tools.book import student_book

    chapter = CHAPTERS[0]
    with pytest.raises(student_book.StaleBuild, match="is missing: build the book first"):
        student_book.executed_chapter(chapter, ROOT, tmp_path)
    executed = jupytext.read(ROOT / f"{chapter}.md")
    executed.cells[-1].source += "\n# edited after the build"
    (tmp_path / chapter).parent.mkdir(parents=True)
    nbformat.write(executed, tmp_path / f"{chapter}.ipynb")
    with pytest.raises(student_book.StaleBuild, match="is older than"):
        student_book.executed_chapter(chapter, ROOT, tmp_path)


@pytest.mark.parametrize("numbered", CHAPTERS)
def test_student_site_shows_the_books_outputs(numbered: str, book_html: Path, student_html: Path):
    """Every output the book shows outside its solutions is on the student page too, also for a chapter
    the build took from its cache (myst-nb then writes the executed notebook without outputs)."""
    full = without_solutions(book_html, numbered)
    expected = [output.get_text() for output in full.select(".cell_output")]
    assert expected, f"{numbered} shows no output in the book: the check would pass on anything"
    assert [output.get_text() for output in page(student_html, numbered).select(".cell_output")] == expected


def test_the_student_site_s_instructors_page_has_the_book_s_table(book_html: Path, student_html: Path):
    """The student site's chapters are notebooks without their checks; its instructors' table is still
    made from the book's chapters (``assignments_root``), row for row the site's."""

    def table(site: Path) -> str:
        page = (site / "chapters" / "instructors.html").read_text(encoding="utf-8")
        return re.sub(r'href="[^"]*"', "", page[page.index("<table") : page.index("</table>")])

    book, student = table(book_html), table(student_html)
    assert book == student and book.count("<tr") >= 11 and 'class="pre">ex2_2</span>' in book
