"""Generate the notebook editions of the chapters (`make notebooks`).

``chapters/<name>.md`` (MyST Markdown notebooks) are the one source people write. From
each numbered chapter of ``_toc.yml`` this writes

* ``chapters/<name>.ipynb``, the **Colab edition**: every cell of the chapter, no outputs,
  solutions folded (a collapsed "Solution" section in Colab, hidden code in JupyterLab);
* ``student/chapters/<name>.ipynb``, the **student edition**: the same without any
  solution cell, and an answer cell (text, and code when the solution had code) under
  each exercise. A code answer cell raises ``NotImplementedError("Exercise N.M is not answered yet: ...")``
  until the student replaces it.

Colab shows MyST as raw text, so the Markdown of both editions is plain: admonitions
become a bold title in a block quote, exercises become "Exercise N.M" headings,
``{eq}``/``{numref}`` become the numbers the book shows, ``{cite}`` becomes author-year
text with a reference list at the end, labels are dropped and figures become images.
A construct without a plain form is an error that names the chapter and line.

The set-up cell (the first code cell of every chapter, tagged ``setup``) is written from
``setup_cells/chapter.py``, the one place that defines how ``chainrule`` is installed. It
installs from the repository of ``_config.yml`` (``git+<repository.url>@<branch>``), or,
when ``_config.yml`` sets ``chainrule_release: "0.1.0"``, the release ``chainrule==0.1.0``
from PyPI (a wheel: faster than cloning). This tool also writes each chapter ``.md`` back
in the exact form jupytext writes (what JupyterLab writes on save), so opening and saving a
chapter changes nothing.

Figure, equation, exercise and chapter numbers are the ones Sphinx gave the book, read
from ``_build/numbers.json``, which every book build writes (``_ext/edition_numbers.py``).
So the editions are written after a book build: ``make notebooks`` and ``make book`` build
the book, then run this (``tools/book/build_book.py --editions``). A chapter whose labels
differ from that file's is an error that asks for the build, never an edition with old
numbers.

    python -m tools.book.notebooks            # write the editions and normalise the chapters
    python -m tools.book.notebooks --check    # write nothing; list what is out of date (exit 1)
    make notebooks                       # build the book, then the first line
"""

from __future__ import annotations

import argparse
import ast
import copy
import re
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import jupytext
import nbformat

from tools.book.book_model import ROOT, Book, edition_path, load_book, numbered_chapters, read_chapter, read_toc
from tools.book.myst import ConversionError, directives
from tools.book.plain_markdown import Context, convert_markdown, reference_list, same_but_glued
from tools.book.unglued import without_glue

#: The kernel JupyterLab records when it saves a chapter (ipykernel's python3 kernel).
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}

#: The set-up cells, as real Python files (linted; ``setup_cells/ruff.toml``) holding the course's own values.
SETUP_CELLS = Path(__file__).with_name("setup_cells")


def setup_cell(name: str, source_spec: str) -> str:
    """The set-up cell ``setup_cells/<name>.py`` whose ``SOURCE`` is ``source_spec`` (where pip
    installs chainrule from when it is missing)."""
    text = (SETUP_CELLS / f"{name}.py").read_text(encoding="utf-8").rstrip("\n")
    text, found = re.subn(r'^SOURCE = ".*"$', lambda _: f'SOURCE = "{source_spec}"', text, flags=re.M)
    if found != 1:
        raise ConversionError(f"{SETUP_CELLS / name}.py must set SOURCE once, on a line of its own")
    return text


# ---------------------------------------------------------------------------------------
# Notebooks
# ---------------------------------------------------------------------------------------


def bound_and_read(source: str) -> tuple[set[str], set[str]]:
    """(names a code cell binds at any level, names it reads), IPython magics left out."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    bound: set[str] = set()
    read: set[str] = set()
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return bound, read


def tags(cell) -> list[str]:
    return list(cell.metadata.get("tags", []))


def setup_source(book: Book) -> str:
    return setup_cell("chapter", book.default_pip_spec)


def numbering_source(book: Book, chapter: str) -> str:
    """Front matter that makes jupyterlab-myst number as the book does (Exercise N.M, Fig. N.M).

    jupyterlab-myst reads front matter only from a notebook's first Markdown cell. The cell
    is tagged ``remove-cell``, which MyST-NB drops from the website, and ``numbering``,
    which the editions drop (Colab would show the YAML).
    """
    return f'---\nnumbering:\n  enumerator: "{book.chapter_number(chapter)}.%s"\n---'


def with_front_cells(book: Book, chapter: str, notebook):
    """The chapter with its numbering cell first and its set-up cell written from the template."""
    notebook = copy.deepcopy(notebook)
    cells = [cell for cell in notebook.cells if "numbering" not in tags(cell)]
    numbering = nbformat.v4.new_markdown_cell(
        numbering_source(book, chapter), metadata={"tags": ["remove-cell", "numbering"]}
    )
    notebook.cells = [numbering, *cells]
    for cell in notebook.cells:
        if "setup" in tags(cell):
            cell.source = setup_source(book)
    return notebook


def check_solution_marks(chapter: str, notebook) -> None:
    """Every cell from a solution-start to its solution-end is tagged ``solution``, and no other cell is."""
    inside = False
    for number, cell in enumerate(notebook.cells, start=1):
        source = cell.source.lstrip()
        starts = cell.cell_type == "markdown" and "{solution-start}" in cell.source
        if starts and not source.startswith("````{solution-start}"):
            raise ConversionError(
                f"{chapter}.md, cell {number}: a solution-start must open its own Markdown cell "
                '(put `+++ {"tags": ["solution"]}` before it)'
            )
        inside = inside or starts
        if inside != ("solution" in tags(cell)):
            state = "inside a solution but not" if inside else "outside any solution but"
            raise ConversionError(
                f"{chapter}.md, cell {number} ({cell.cell_type}) lies {state} tagged `solution`: {cell.source[:80]!r}"
            )
        if cell.cell_type == "markdown" and inside and directives(cell.source, "exercise"):
            raise ConversionError(f"{chapter}.md, cell {number}: an exercise inside a solution")
        if cell.cell_type == "markdown" and "{solution-end}" in cell.source:
            if not cell.source.rstrip().endswith("````{solution-end}\n````"):
                raise ConversionError(f"{chapter}.md, cell {number}: nothing may follow a solution-end in its cell")
            inside = False
    if inside:
        raise ConversionError(f"{chapter}.md: a solution-start has no solution-end")


def solution_label(cell) -> str | None:
    """The label of the exercise whose solution ``cell`` starts, or None."""
    return next((start.argument for start in directives(cell.source, "solution-start")), None)


def new_cell(kind: str, source: str, metadata: dict | None = None):
    make = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
    return make(source, metadata=metadata or {})


SOLUTION_MARKERS = re.compile(r"^`{3,}\{solution-(start|end)\}.*\n(:class:.*\n)?`{3,}$", re.MULTILINE)


def answer_cells(number: str, with_text: bool, with_code: bool) -> list:
    """The student edition's answer cells for one exercise: for its text, and for code it has no answer cell for.

    Neither raises: only a checked exercise's own answer cell (tag ``exercise-stub`` in the
    chapter) holds a function that raises, so Run All goes past the exercises graded by hand.
    """
    cells = []
    if with_text:
        cells.append(
            new_cell(
                "markdown",
                f"**Your answer to Exercise {number}.** Double-click here to write it.",
                {"tags": ["exercise-stub"]},
            )
        )
    if with_code:
        cells.append(
            new_cell(
                "code",
                f"# Exercise {number}: room for your code. It has no automatic "
                "check:\n# write your answer in the text cell above.",
                {"tags": ["exercise-stub"]},
            )
        )
    return cells


CHECK_IMPORT = "from chainrule_course.exercises import feedback\n"

#: The start of the message an answer cell raises until it is answered, as the chapter writes it:
#: without the exercise's number, which the book gives at build time (a fork may renumber).
NOT_ANSWERED = re.compile(r"""(?P<quote>["'])not answered yet: """)


def numbered_stub(source: str, number: str) -> str:
    """An answer cell whose message names its exercise: ``"not answered yet: write f"`` becomes
    ``"Exercise N.M is not answered yet: write f"``, so that the notebooks say which exercise."""
    return NOT_ANSWERED.sub(lambda m: f"{m['quote']}Exercise {number} is not answered yet: ", source)


def check_body(chapter: str, source: str) -> str:
    """A check cell's code after its first line, ``from chainrule_course.exercises import feedback``."""
    if not source.startswith(CHECK_IMPORT):
        raise ConversionError(f"{chapter}.md: a check cell must start with `{CHECK_IMPORT.strip()}`: {source[:80]!r}")
    return source[len(CHECK_IMPORT) :].strip("\n")


def checked_source(chapter: str, number: str, source: str) -> str:
    """A check cell inside ``with feedback.exercise(number)``: one line when the answer is missing or not run."""
    body = textwrap.indent(check_body(chapter, source), "    ")
    return f'{CHECK_IMPORT}\nwith feedback.exercise("{number}"):\n{body}'


def summary_source(chapter: str, number: str, checks: list[tuple[str, str]]) -> str:
    """The last cell of a student notebook: every check of the chapter again, one verdict per exercise."""
    lines = [
        "# Every checked exercise of this chapter, checked again: one line each.",
        CHECK_IMPORT,
        f'summary = feedback.Summary("Chapter {number}")',
    ]
    for exercise, source in checks:
        body = [line for line in check_body(chapter, source).splitlines() if not line.startswith("print(")]
        lines += [f'with summary.exercise("{exercise}"):', textwrap.indent("\n".join(body), "    ")]
    return "\n".join([*lines, "summary.show()"])


def solved(chapter: str, number: str | None, what: str) -> str:
    """The number of the exercise whose solution came last, which ``what`` belongs to."""
    if number is None:
        raise ConversionError(f"{chapter}.md: {what} comes before any {{solution-start}}: no exercise to belong to")
    return number


def edition(book: Book, chapter: str, notebook, student: bool):
    """The Colab (``student=False``) or student edition of one chapter, as an nbformat notebook."""
    check_solution_marks(chapter, notebook)
    context = Context(book=book, chapter=chapter, student=student)
    number = book.chapter_number(chapter)
    cells = []
    check_setup_cell(chapter, notebook)
    solution_number, solution_has_code, solution_has_text = None, False, False
    authored_stubs, checks, exercise_number = [], [], ""
    for cell, line in zip(notebook.cells, cell_lines(book.root / f"{chapter}.md", notebook.cells), strict=True):
        if "numbering" in tags(cell) or "hidden-check" in tags(cell):
            continue  # hidden checks go only into the autograder (tools/grader/assignments.py)
        if cell.cell_type == "markdown":
            labels = [e.options["label"] for e in directives(cell.source, "exercise") if "label" in e.options]
            exercise_number = book.targets[labels[-1]].number if labels else exercise_number
        if "exercise-stub" in tags(cell):
            # An answer cell written in the chapter: only the student edition has it, under the
            # exercise (after the text answer cell); the full edition has the solution instead.
            cell = copy.deepcopy(cell)
            cell.source = numbered_stub(cell.source, exercise_number)
            authored_stubs.extend(converted(cell, context, line, folded=False) if student else [])
            continue
        if "solution" in tags(cell):
            label = solution_label(cell)
            if label:
                solution_number = book.targets[label].number
                solution_has_code = solution_has_text = False
            solution_has_code |= cell.cell_type == "code"
            solution_has_text |= cell.cell_type == "markdown" and bool(SOLUTION_MARKERS.sub("", cell.source).strip())
            ends = cell.cell_type == "markdown" and "{solution-end}" in cell.source
            if not student:
                cells.extend(converted(cell, context, line, folded=True))
            elif ends:
                cells.extend(
                    answer_cells(
                        solved(chapter, solution_number, "the end of a solution"),
                        solution_has_text or not authored_stubs,
                        solution_has_code and not authored_stubs,
                    )
                )
                cells.extend(authored_stubs)
                authored_stubs = []
            continue
        if "check" in tags(cell):
            solution_number = solved(chapter, solution_number, "a check cell")
            cells.append(
                new_cell(
                    "markdown",
                    f"The next cell checks the answer to Exercise {solution_number}: "
                    "it names what is wrong, where, and the mistake it matches.",
                )
            )
            checks.append((solution_number, cell.source))
            cell = copy.deepcopy(cell)
            cell.source = checked_source(chapter, solution_number, cell.source)
        cells.extend(converted(cell, context, line, folded=False))
    if context.cited:
        cells.append(new_cell("markdown", reference_list(book, context.cited)))
    if student and checks:  # last, so that Run All ends with it
        cells += check_everything(chapter, number, checks)
    add_banner(cells[0], number, student)
    return finish(chapter, cells, student)


def check_setup_cell(chapter: str, notebook) -> None:
    setup_cells = [cell for cell in notebook.cells if "setup" in tags(cell)]
    code_cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    if len(setup_cells) != 1 or code_cells[0] is not setup_cells[0]:
        raise ConversionError(f"{chapter}.md: the first code cell, and only it, must be the set-up cell (tag `setup`)")


def check_everything(chapter: str, number: str, checks: list[tuple[str, str]]) -> list:
    """The student edition's last cells: every check again, one verdict per exercise."""
    return [
        new_cell(
            "markdown",
            "## Check everything\n\nThe next cell runs the checks of every "
            "exercise above again and gives one verdict per exercise. It checks "
            "the cell a grader runs for each answer, the last one that defines "
            "it, and names that cell: a draft left further down is graded.",
        ),
        new_cell("code", summary_source(chapter, number, checks), {"tags": ["check-all"]}),
    ]


def add_banner(title, number: str, student: bool) -> None:
    """The line under the chapter's title: which chapter, which edition, and to run the set-up cell first."""
    banner = (
        f"Chapter {number} of *Backpropagation, from the chain rule up*. Run the first code cell "
        "before the others: it installs `chainrule` when it is missing."
    )
    if student:
        banner += (
            " **Student edition:** the solutions are removed. Write each answer in the cells under its "
            "exercise. A checked exercise's function raises `NotImplementedError` until you write it, "
            "and its check then says, in one line, that it is not answered yet. Run All stops at the first "
            "such check; to go on, run the cells after it (Run → Run Selected Cell and All Below in "
            "JupyterLab, Runtime → Run after in Colab)."
        )
    title_lines = title.source.split("\n")
    title.source = "\n".join([title_lines[0], "", banner, *title_lines[1:]]).rstrip("\n")


def cell_lines(path: Path, cells) -> list[int]:
    """The line of the chapter file where each cell's text starts (0 where the file does not hold it)."""
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    lines, searched = [], 0
    for cell in cells:
        found = text.find(cell.source, searched) if cell.source else -1
        lines.append(text.count("\n", 0, found) + 1 if found >= 0 else 0)
        searched = found + len(cell.source) if found >= 0 else searched
    return lines


def converted(cell, context: Context, line: int, folded: bool) -> list:
    """One source cell, which starts on chapter line ``line``, as edition cells (a figure gains a caption cell)."""
    cell = copy.deepcopy(cell)
    metadata = {key: value for key, value in cell.metadata.items() if key != "mystnb"}
    if cell.cell_type == "markdown":
        text = convert_markdown(cell.source, context, line)
        if not text.strip():
            return []
        heading = re.match(r"^(#### Solution to Exercise [\d.]+)\n*", text)
        if heading and folded:
            rest = text[heading.end() :]
            # Colab folds it through notebook.metadata.colab.collapsed_sections, JupyterLab through this key.
            folded_heading = {"tags": ["solution"], "jp-MarkdownHeadingCollapsed": True}
            return [new_cell("markdown", heading[1], folded_heading)] + (
                [new_cell("markdown", rest, metadata)] if rest.strip() else []
            )
        return [new_cell("markdown", text, metadata)]
    source = without_glue(cell.source)  # the prose holds the glued numbers already
    if "setup" in tags(cell):
        source = setup_source(context.book)
        # Folded: JupyterLab hides the code (jupyter.source_hidden), Colab shows it as a form.
        metadata = {**metadata, "jupyter": {"source_hidden": True}, "cellView": "form"}
    result = [new_cell("code", source, metadata)] if source.strip() else []
    figure = cell.metadata.get("mystnb", {}).get("figure")
    if figure:
        number = context.book.targets[figure["name"]].number if figure.get("name") else ""
        caption = convert_markdown(str(figure.get("caption", "")), context, line)
        result.append(new_cell("markdown", f"**Fig. {number}** {caption}".strip(), {}))
    return result


def finish(chapter: str, cells: list, student: bool):
    notebook = nbformat.v4.new_notebook()
    stem = ("student-" if student else "") + Path(chapter).name
    collapsed = []
    for index, cell in enumerate(cells):
        cell.id = f"{stem}-{index:03d}"
        cell.metadata["id"] = cell.id  # Colab names cells (and collapsed sections) by metadata.id
        if cell.cell_type == "markdown" and cell.source.startswith("#### Solution to Exercise"):
            collapsed.append(cell.id)
    notebook.cells = cells
    notebook.metadata = {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
        "colab": {"provenance": [], "toc_visible": True, "collapsed_sections": collapsed},
    }
    nbformat.validate(notebook)
    return notebook


def canonical_markdown(notebook) -> str:
    """A chapter as jupytext (and so JupyterLab, on save) writes it."""
    notebook = copy.deepcopy(notebook)
    notebook.metadata["kernelspec"] = dict(KERNELSPEC)
    return jupytext.writes(notebook, fmt="md:myst")


def expected_files(book: Book) -> dict[Path, str]:
    """Every generated file (and every chapter .md, normalised) with the text it must have."""
    files = {}
    for chapter in book.chapters:
        notebook = with_front_cells(book, chapter, read_chapter(book.root, chapter))
        files[book.root / f"{chapter}.md"] = canonical_markdown(notebook)
        for student in (False, True):
            path = book.root / edition_path(chapter, student)
            files[path] = nbformat.writes(edition(book, chapter, notebook, student)) + "\n"
    return files


def stale_files(book: Book, files: dict[Path, str] | None = None) -> list[Path]:
    """The generated files (of ``expected_files``) that are missing or out of date, glued numbers aside."""
    files = expected_files(book) if files is None else files
    differ = [path for path in files if not path.is_file() or path.read_text(encoding="utf-8") != files[path]]
    if not differ:  # the usual case after a build that executed nothing: no need to mark the glue
        return []
    marked = expected_files(replace(book, mark_glue=True))
    return [
        path
        for path in differ
        if not path.is_file() or not same_but_glued(path.read_text(encoding="utf-8"), marked[path])
    ]


def expected_paths(root: Path = ROOT) -> list[Path]:
    """The two notebook files of every numbered chapter (what `make notebooks` writes besides the chapters)."""
    return [
        root / edition_path(chapter, student)
        for chapter in numbered_chapters(read_toc(root))
        for student in (False, True)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file is out of date")
    parser.add_argument("--root", type=Path, default=ROOT, help="the book's folder (default: this repository)")
    args = parser.parse_args(argv)
    try:
        book = load_book(args.root)
        files = expected_files(book)
        stale = stale_files(book, files)
    except ConversionError as error:
        print(f"make notebooks: {error}", file=sys.stderr)
        return 2
    if args.check:
        for path in stale:
            print(f"out of date: {path.relative_to(book.root)}")
        if stale:
            print("Run `make notebooks` and commit the result.", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(files[path], encoding="utf-8")
        print(f"wrote {path.relative_to(book.root)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
