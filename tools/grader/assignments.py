"""Write the assignments: one otter-grader assignment per chapter whose exercises have checks.

Usage: ``make assignments`` (or ``python -m tools.grader.assignments [chapter ...]``). For each chapter
it writes ``_build/assignments/<name>/``:

- ``student/<name>.ipynb``: the questions with their answer cells and ``grader.check`` cells;
  its first cell installs ``chainrule``, ``chainrule-course`` and ``otter-grader`` when they are missing (wherever it
  runs: Colab, a JupyterHub, a laptop) and writes the public tests into ``./tests`` when that
  folder is missing;
- ``student/tests/*.py``: the same public tests, for Jupyter;
- ``student/chainrule-<version>-py3-none-any.whl`` and ``chainrule_course-<version>-…whl``: the
  engine's and the course's wheels, built from this checkout, which that first cell installs (the
  ones the autograder zip grades with);
- ``solution/<name>.ipynb``: the same notebook answered;
- ``autograder/<name>-autograder.zip``: every test, public and hidden, for ``make grade``
  (:mod:`chainrule_course.grading.grade`) or Gradescope, as :mod:`tools.grader.autograder_zip` makes it.

The source is the chapter, one source with the book. A question is an exercise that has
an answer cell (tag ``exercise-stub``) and a check cell (tag ``check``):

- the question's text is the exercise, in the plain Markdown of the notebook editions;
- the student's cell is the answer cell; the solution is what the exercise's solution cells
  define under the same names (a function or a few values), found with ``ast``;
- the public test is the check cell, and each ``hidden-check`` cell after it is a hidden test.
  Both must be self-contained: they may use only the answer's names, builtins and what they
  import or define themselves, because otter runs them apart from the chapter.

``otter assign`` then writes the student and autograder versions and runs every test against
the solution, so a check that fails on its own solution stops the build. Afterwards every
line of solution code is searched for in the student folder.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import copy
import io
import json
import multiprocessing
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import nbformat

from chainrule_course.grading import reports
from tools import lock
from tools.book import notebooks, package
from tools.book.book_model import ROOT, Book, load_book
from tools.book.myst import ConversionError
from tools.book.plain_markdown import Context, convert_markdown, reference_list
from tools.book.questions import (
    Assignment,
    AssignmentError,
    Question,
    load_assignments,
    solution_code,
    test_function,
)
from tools.grader.autograder_zip import (
    WRITTEN_POINTS,
    check_autograder,
    pin_environment,
    rewrite_zip,
    with_grader_files,
)

OUTPUT = ROOT / "_build" / "assignments"
#: The otter-grader that grades (tools/grader/requirements.lock), which the handout installs too.
OTTER_VERSION = lock.version(lock.entries(lock.GRADING)["otter-grader"])
POINTS_PER_QUESTION = 2
#: The prompt above a written answer cell, defined once in chainrule_course.grading.reports,
#: which finds the answer by it.
WRITTEN_PROMPT = reports.WRITTEN_PROMPT_TEXT
# Scores come from the grader's own process, never from the student's kernel (chainrule_course.grading.scoring).
PLUGIN = "chainrule_course.grading.otter_plugin.TrustedScores"


# The public tests ride in the set-up cell, not in otter's notebook metadata (`tests: files: false`),
# because otter 7.0.0 reads no metadata tests on Colab: in otter/check/notebook.py, Notebook.__init__
# raises "Tests directory ./tests does not exist" when the shell is Colab's (check/utils.py,
# IPythonInterpreter.COLAB) and Notebook.check refuses a metadata test there; otter assign refuses
# `runs_on: colab` with metadata tests (assign/notebook_transformer.py). Elsewhere Notebook finds the
# metadata only through a lone ./*.ipynb (Notebook._resolve_nb_path), and Colab's notebook is not a
# file in /content. Measured with a kernel whose shell is google.colab._shell.Shell, or with no .ipynb
# in the folder: metadata tests fail, these pass. tests/colab_sim.py cannot show it (its shell is not
# Colab's and the notebook lies in its folder).
def handout_setup(book) -> str:
    """The handout's set-up cell, the first thing a student runs (``setup_cells/handout.py``).

    It installs what is missing, wherever it runs (Colab, a JupyterHub, a laptop): chainrule
    from the wheel that make assignments puts beside the notebook (the version the
    autograder zip grades with), else from CHAINRULE_PIP_SPEC, else from the course's
    repository; otter-grader, pinned; Graphviz on Colab only. ``PUBLIC_TESTS: dict = {}`` is
    filled in per assignment (:func:`with_public_tests`). tests/built/test_handout.py runs it in a
    bare venv."""
    text = notebooks.setup_cell("handout", book.default_pip_spec)
    text, found = re.subn(r"otter-grader==[0-9.]+", f"otter-grader=={OTTER_VERSION}", text)
    if found != 1:
        raise ConversionError("setup_cells/handout.py must install otter-grader==<version> once")
    return text


# --------------------------------------------------------------------------------------- writing


def raw(source: str):
    return nbformat.v4.new_raw_cell(source)


def markdown(source: str):
    return nbformat.v4.new_markdown_cell(source)


def code(source: str, cell_tags: list[str] | None = None):
    return nbformat.v4.new_code_cell(source, metadata={"tags": cell_tags} if cell_tags else {})


def config_cell(assignment: Assignment, requirements: Path) -> str:
    config = {
        "name": assignment.name,
        "requirements": str(requirements),
        "overwrite_requirements": False,  # keep otter's own (otter-grader itself, nbconvert, ...)
        "init_cell": False,
        "check_all_cell": False,
        "export_cell": False,
        "run_tests": False,  # the grader's own run does it, with the reference (check_autograder)
        "solutions_pdf": False,
        "template_pdf": False,
        "tests": {"files": True, "ok_format": False},
        "generate": {
            "pdf": False,
            "show_stdout": True,
            "show_hidden": True,
            "plugins": [{PLUGIN: {"assignment": assignment.name}}],  # the plugin checks the name
        },
    }
    return "# ASSIGNMENT CONFIG\n" + "\n".join(f"{key}: {json.dumps(value)}" for key, value in config.items())


def introduction(book: Book, assignment: Assignment) -> str:
    names = ", ".join(q.number for q in assignment.questions)
    chapter_link = book.colab_url(assignment.chapter, student=True)
    return (
        f"# Assignment {assignment.number}: {assignment.title}\n\n"
        f"These questions are the checked exercises of Chapter {assignment.number} of *Backpropagation, "
        f"from the chain rule up* (Exercises {names}). Read the chapter first: "
        f"[open its student edition in Colab]({chapter_link}). Equation and figure numbers refer to it.\n\n"
        "1. Run the first code cell: it installs what the notebook needs when it is missing. If the "
        "notebook came in a folder with `chainrule` wheels (`.whl` files), keep them there: the cell "
        "installs those wheels, the version your work is graded with.\n"
        "2. Answer each question in the cell under it. A function in an answer cell raises "
        "`NotImplementedError` until you write it, and its check then says that it is not answered yet.\n"
        "3. Run the `grader.check(...)` cell after your answer. It gives each quantity's verdict and, for a "
        "wrong one, the entry, the value expected and the one received, the known mistake your answer "
        "matches, and the data it used.\n"
        "4. Save the notebook and hand in the `.ipynb` file. Your grade also counts hidden tests, which "
        "try your functions on other data."
    )


def solution_cell(question: Question, solution: str, chapter: str) -> str:
    """The master notebook's answer cell: the answer cell as otter's prompt, then the solution.

    otter keeps the prompt's string-literal lines in the autograder notebook, so the quotes
    around it must not occur in the answer cell.
    """
    quote = next((q for q in ("'''", '"""') if q not in question.stub), None)
    if quote is None:
        raise AssignmentError(
            f"{chapter}.md: the answer cell of Exercise {question.number} uses both kinds of "
            "triple quotes; otter cannot wrap it as a prompt"
        )
    return (
        f"{quote} # BEGIN PROMPT\n{question.stub}\n{quote} # END PROMPT\n"
        f"# BEGIN SOLUTION NO PROMPT\n{solution}\n# END SOLUTION"
    )


def master_notebook(book: Book, assignment: Assignment, requirements: Path):
    context = Context(book=book, chapter=assignment.chapter, student=True)
    cells = [
        raw(config_cell(assignment, requirements)),
        markdown(introduction(book, assignment)),
        code(
            handout_setup(book),
            ["otter_ignore"],
        ),
        code("import otter\n\ngrader = otter.Notebook()"),
        code("import math\n\nimport numpy as np"),
    ]
    for question in assignment.questions:
        solution = solution_code(question, assignment.chapter)
        cells += [
            raw(f"# BEGIN QUESTION\nname: {question.name}\npoints: {POINTS_PER_QUESTION}"),
            markdown(convert_markdown(question.text, context)),
            raw("# BEGIN SOLUTION"),
            code(solution_cell(question, solution, assignment.chapter)),
            raw("# END SOLUTION"),
            raw("# BEGIN TESTS"),
            code(test_function(question, question.check, "", assignment.chapter)),
            *[
                code(
                    '""" # BEGIN TEST CONFIG\nhidden: true\n""" # END TEST CONFIG\n'
                    + test_function(question, source, f"_hidden_{index}", assignment.chapter)
                )
                for index, source in enumerate(question.hidden, start=1)
            ],
            raw("# END TESTS"),
            raw("# END QUESTION"),
            *written_cells(question, context),
        ]
    closing = (
        "## Hand in\n\nSave the notebook (File → Save, or File → Download on Colab) and hand in the `.ipynb` file."
    )
    if context.cited:
        closing += "\n\n" + reference_list(book, context.cited)
    cells.append(markdown(closing))
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    notebook.metadata["language_info"] = {"name": "python"}
    return notebook


def written_cells(question: Question, context: Context) -> list:
    """A manual otter question for the written work of a question whose solution explains itself in prose.

    The student gets otter's Markdown response cell; the solution notebook gets the book's
    explanation. ``make grade`` exports the answers for grading by hand (:mod:`chainrule_course.grading.grade`).
    """
    if not question.solution_text:
        return []
    return [
        raw(f"# BEGIN QUESTION\nname: {question.written_name}\nmanual: true\npoints: {WRITTEN_POINTS}"),
        markdown(WRITTEN_PROMPT.format(number=question.number)),
        raw("# BEGIN SOLUTION"),
        markdown(model_answer(question, context)),
        raw("# END SOLUTION"),
        raw("# END QUESTION"),
    ]


def model_answer(question: Question, context: Context) -> str:
    """The written work the solution notebook shows: the book's explanation, in plain Markdown."""
    return "\n\n".join(convert_markdown(text, context) for text in question.solution_text)


def requirements_text(book: Book) -> str:
    """What otter assign puts in the zip for its own run, at the lock's version (the zip's environment is
    rewritten by :func:`pin_environment`)."""
    return f"numpy=={lock.version(lock.entries(lock.GRADING)['numpy'])}\n"


def assign(book: Book, assignment: Assignment, output: Path, wheels: tuple[Path, ...]) -> Path:
    """Run ``otter assign`` for one assignment and lay its files out under ``output/<name>``."""
    folder = output / assignment.name
    shutil.rmtree(folder, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix=f"assign-{assignment.name}-") as temporary:
        work = Path(temporary)
        requirements = work / "requirements.txt"
        requirements.write_text(requirements_text(book))
        master = work / f"{assignment.name}.ipynb"
        nbformat.write(master_notebook(book, assignment, requirements), master)
        otter_assign(master, work / "dist", assignment.name)
        dist = work / "dist"
        (folder / "autograder").mkdir(parents=True)
        zips = list((dist / "autograder").glob("*-autograder_*.zip"))
        shutil.copy(zips[0], folder / "autograder" / f"{assignment.name}-autograder.zip")
        rewrite_zip(
            folder / "autograder" / f"{assignment.name}-autograder.zip",
            lambda files: pin_environment(files, wheels),
            lambda files: with_grader_files(files, assignment),
            lambda files: check_autograder(files, assignment),
        )
        shutil.copytree(dist / "student", folder / "student")
        for wheel in wheels:  # the set-up cell installs them
            shutil.copy(wheel, folder / "student" / wheel.name)
        public_tests = {path.name: path.read_text() for path in sorted((folder / "student" / "tests").glob("*.py"))}
        student_path = folder / "student" / f"{assignment.name}.ipynb"
        student = with_public_tests(nbformat.read(student_path, as_version=4), public_tests)
        nbformat.write(student, student_path)
        (folder / "solution").mkdir()
        solutions = [solution_code(q, assignment.chapter) for q in assignment.questions]
        context = Context(book=book, chapter=assignment.chapter, student=True)
        written = [model_answer(q, context) for q in assignment.questions if q.solution_text]
        nbformat.write(answered(student, solutions, written), folder / "solution" / f"{assignment.name}.ipynb")
    check_no_solution(assignment, folder / "student")
    return folder


def otter_assign(master: Path, result: Path, name: str) -> None:
    """``otter assign MASTER RESULT``, in this process (a worker of :func:`main`'s pool, which imported
    otter once before it forked; otter changes the working folder while it writes)."""
    from otter.assign import main as assign_main

    said = io.StringIO()
    try:
        with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
            assign_main(str(master), str(result))
    except Exception as error:  # otter's own errors have no common class
        raise AssignmentError(f"otter assign failed for {name}: {error!r}\n{said.getvalue()[-3000:]}") from None


#: The line of the set-up cell (tools/book/setup_cells/handout.py) that the public tests are written into.
PUBLIC_TESTS_LINE = "PUBLIC_TESTS: dict = {}"


def with_public_tests(notebook, public_tests: dict):
    """The notebook with the public tests written into its set-up cell (folded), validated."""
    cells = [c for c in notebook.cells if c.cell_type == "code" and PUBLIC_TESTS_LINE in c.source]
    if not cells:
        raise ConversionError(f"no set-up cell has the line {PUBLIC_TESTS_LINE!r} to write the public tests into")
    for cell in cells:
        cell.source = cell.source.replace(PUBLIC_TESTS_LINE, "PUBLIC_TESTS: dict = " + python_dict(public_tests))
        cell.metadata.setdefault("jupyter", {})["source_hidden"] = True
    nbformat.validate(notebook)
    return notebook


def answered(student, solutions: Sequence[str], written: Sequence[str] = ()):
    """The solution notebook: the student notebook (same cells, ids and checks) with each answer cell answered.

    ``solutions`` fill the code answer cells, ``written`` the Markdown ones (the written work), in order.
    """
    notebook = copy.deepcopy(student)
    answers = {"code": iter(solutions), "markdown": iter(written)}
    for cell in notebook.cells:
        if "otter_answer_cell" in cell.metadata.get("tags", []):
            cell.source = next(answers[cell.cell_type])
    nbformat.validate(notebook)
    return notebook


def python_dict(files: dict[str, str]) -> str:
    """A dict literal of file names and texts, one triple-quoted text per entry."""
    entries = []
    for name, text in files.items():
        if "'''" in text or "\\" in text:
            entries.append(f"    {name!r}: {text!r},")
        else:
            entries.append(f"    {name!r}: '''\\\n{text}''',")
    return "{\n" + "\n".join(entries) + "\n}"


def solution_lines(assignment: Assignment) -> list[str]:
    """Every line of solution code that is not also a line of the answer cell (a def line, say) nor an import,
    and every long line of the solution's prose (the model written work)."""
    lines = []
    for question in assignment.questions:
        stub_lines = {line.strip() for line in question.stub.splitlines()}
        for line in solution_code(question, assignment.chapter).splitlines():
            if line.strip() and line.strip() not in stub_lines and not line.startswith(("import ", "from ")):
                lines.append(line.strip())
        lines += [
            line.strip() for text in question.solution_text for line in text.splitlines() if len(line.strip()) >= 40
        ]
    return lines


def check_no_solution(assignment: Assignment, student_folder: Path) -> None:
    # Every file but the wheels (binary, and the course publishes them anyway).
    texts = {path: path.read_text() for path in student_folder.rglob("*") if path.is_file() and path.suffix != ".whl"}
    for line in solution_lines(assignment):
        for path, text in texts.items():
            if line in text:
                raise AssignmentError(f"solution code reached a student file: {line!r} in {path}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", help="chapter names (default: every chapter with checked exercises)")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args(argv)
    try:
        book = load_book()
        assignments = load_assignments(book, args.chapters)
    except (ConversionError, AssignmentError) as error:
        print(f"make assignments: {error}", file=sys.stderr)
        return 2
    args.output.mkdir(parents=True, exist_ok=True)
    wheel_folder = tempfile.TemporaryDirectory(prefix="chainrule-wheel-")
    wheels = package.build_wheels(Path(wheel_folder.name))
    failed = False
    import otter.assign  # noqa: F401  (once, here: the forked workers inherit it, 1 CPU-s each time saved)

    workers = concurrent.futures.ProcessPoolExecutor(max(1, args.jobs), mp_context=multiprocessing.get_context("fork"))
    with wheel_folder, workers as pool:
        futures = {pool.submit(assign, book, a, args.output, wheels): a for a in assignments}
        for future in concurrent.futures.as_completed(futures):
            assignment = futures[future]
            try:
                folder = future.result()
            except (ConversionError, AssignmentError) as error:
                print(f"make assignments: {error}", file=sys.stderr)
                failed = True
                continue
            names = ", ".join(q.name for q in assignment.questions)
            print(f"wrote {folder.relative_to(ROOT) if folder.is_relative_to(ROOT) else folder} ({names})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
