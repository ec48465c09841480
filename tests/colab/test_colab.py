"""The generated notebooks must run in Google Colab: checked offline in a simulated Colab.

The simulation (tests/colab_sim.py) is a venv outside the repo with what Colab preinstalls
(tests/colab_requirements.txt, no chainrule), a fake ``google.colab`` module loaded at kernel
start, and pip limited to the engine's and the course's wheels built from this checkout. Each notebook runs in a
fresh folder outside the repo, after chainrule has been uninstalled, so its set-up cell must
really install chainrule.

* Colab edition ``chapters/<page>.ipynb``: runs top to bottom (cells tagged ``raises-exception``
  may raise) and the kernel imports chainrule from its wheel; its explorables are in the outputs.
  A page with checked exercises runs in its student edition instead, which holds every cell but
  the solutions, its explorables' among them.
* Student edition ``student/chapters/<page>.ipynb``: as handed out, stops at its first check
  cell with one line, ``NotAnswered: Exercise ... is not answered yet``, and nothing fails
  before; answered with the solutions, runs to its last cell, the "check everything" summary.
* The set-up cell fails loudly when the install fails.

Each test session builds the venv with uv from the tests' wheelhouse, in seconds (colab_sim.build_venv).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import colab_sim
import nbformat
import pytest
import student_answers
from common import ROOT, pages_with_code

PAGES = pages_with_code()


def colab_notebook(page: str) -> Path:
    return ROOT / f"{page}.ipynb"


def student_notebook(page: str) -> Path:
    return ROOT / "student" / f"{page}.ipynb"


def require(path: Path, edition: str) -> Path:
    if not path.is_file():
        pytest.fail(
            f"{path.relative_to(ROOT)} is missing: _toc.yml lists {path.relative_to(ROOT).with_suffix('')} "
            f"with code cells, so the {edition} edition needs this notebook.",
            pytrace=False,
        )
    return path


def clip(text: str, limit: int = 6000) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n... [{len(text) - limit} more characters]"


def run(colab, notebook, **kwargs) -> colab_sim.RunResult:
    venv, wheels, ipython_dir = colab
    return colab_sim.run_notebook(notebook, venv, wheels, ipython_dir, **kwargs)


# --------------------------------------------------------------------------- the simulation itself


def test_simulated_colab_is_in_place(colab):
    """A cell sees google.colab (and jax imports with it), runs the sim venv's python outside the
    repo, and cannot import chainrule before a set-up cell installs it."""
    venv, _, _ = colab
    probe = nbformat.v4.new_notebook()
    probe.cells = [
        nbformat.v4.new_code_cell(
            "import sys\n"
            "assert 'google.colab' in sys.modules, sorted(m for m in sys.modules if m.startswith('google'))\n"
            "import google.colab, google.colab.output\n"
            "assert google.colab.SIMULATED"
        ),
        nbformat.v4.new_code_cell(
            "import importlib.util, os, sys\n"
            f"venv, repo = {str(venv)!r}, {str(ROOT)!r}\n"
            "assert sys.prefix == venv, (sys.prefix, venv)\n"
            "assert not os.getcwd().startswith(repo), os.getcwd()\n"
            "assert not [p for p in sys.path if p.startswith(repo)], sys.path\n"
            "assert importlib.util.find_spec('chainrule') is None, importlib.util.find_spec('chainrule')"
        ),
        nbformat.v4.new_code_cell(
            "import jax, jax.numpy as jnp\n"
            "from jax._src.debugger import colab_lib\n"
            "assert colab_lib.IS_COLAB_ENABLED\n"
            "print(float(jax.grad(lambda x: x * x)(3.0)))"
        ),
    ]
    result = run(colab, probe)
    assert result.stopped_at is None and not result.errors, clip(result.describe())
    assert result.cell_text(2).strip() == "6.0"


@pytest.mark.parametrize("which, folder", [(0, ROOT / "src"), (1, ROOT / "course")], ids=["engine", "course"])
def test_wheels_are_built_outside_the_repo(colab, which, folder):
    wheel = colab[1][which]
    package = ("chainrule", "chainrule_course")[which]
    assert wheel.name.startswith(f"{package}-") and wheel.suffix == ".whl"
    with pytest.raises(ValueError):
        wheel.resolve().relative_to(ROOT)
    # (build_wheels itself fails if it leaves build/, dist/ or *.egg-info in the repo.)
    with zipfile.ZipFile(wheel) as archive:
        packaged = set(archive.namelist())
    modules = {
        path.relative_to(folder).as_posix() for path in (folder / package).rglob("*") if path.suffix in (".py", ".js")
    }
    assert modules and modules <= packaged, f"the wheel lacks {sorted(modules - packaged)}"


# --------------------------------------------------------------------------- Colab edition


#: The explorables each chapter shows (chainrule_course.explore).
EXPLORABLES = {
    "chapters/graph": ["toposort"],
    "chapters/backward": ["forward", "backward"],
    "chapters/engine": ["training"],
}


CHECKED = [page for page in PAGES if student_answers.checked_questions(page)]


#: The pages whose Colab edition runs whole. A page with checked exercises runs in its student
#: edition, answered, which holds every cell of the Colab edition but the solutions (the book's build
#: runs those, and test_the_answered_student_run_holds_the_colab_editions_cells checks the rest),
#: its explorables' cells among them.
WHOLE = [page for page in PAGES if page not in CHECKED]


def explorables_not_shown(notebook: nbformat.NotebookNode, page: str) -> list[str]:
    """The explorables of ``page`` missing from an executed notebook's outputs, or shown without
    their script and steps: in Colab's output frame, the output must carry them."""
    shown = [
        output["data"]["text/html"]
        for cell in notebook.cells
        for output in cell.get("outputs", [])
        if "text/html" in output.get("data", {})
    ]
    missing = []
    for kind in EXPLORABLES.get(page, []):
        widgets = [html for html in shown if f'data-explorable="{kind}"' in html]
        whole = all("window.chainruleExplorable" in html and 'data-role="steps"' in html for html in widgets)
        if not widgets or not whole:
            missing.append(kind)
    return missing


def assert_installed_from_the_wheel(result: colab_sim.RunResult, venv: Path, wheels) -> None:
    """The probe of a run: the kernel ran in the sim venv, in Colab, and imported chainrule from its wheel."""
    probe = result.probe
    assert probe, f"the probe cell did not report: {result.report}"
    assert probe["colab"], "google.colab was not in sys.modules in the kernel"
    assert probe["prefix"] == str(venv), probe
    installed = Path(probe["file"])
    assert installed.is_relative_to(venv / "lib"), f"chainrule came from {installed}, not the sim venv"
    assert not installed.resolve().is_relative_to(ROOT), f"chainrule came from the repo: {installed}"
    assert probe["direct_url"] and wheels[0].as_uri() in probe["direct_url"], (
        f"chainrule was not installed from the wheel {wheels[0]}: direct_url.json = {probe['direct_url']}"
    )


# Only a page with code and no checked exercise runs whole: this book has none, a fork may add one
# (its tests then appear; pytest would otherwise report an empty parameter set as a skip).
if WHOLE:

    @pytest.mark.parametrize("page", WHOLE)
    def test_colab_notebook_runs(colab, page: str):
        venv, wheels, _ = colab
        notebook = require(colab_notebook(page), "Colab")
        result = run(colab, notebook, probe=True)
        unexpected = result.unexpected_errors
        assert result.stopped_at is None and not unexpected, (
            f"{notebook.relative_to(ROOT)} failed in the simulated Colab:\n" + clip(result.describe())
        )
        assert_installed_from_the_wheel(result, venv, wheels)
        missing = explorables_not_shown(result.notebook, page)
        assert not missing, f"{page}: these explorables are not among the outputs in the simulated Colab: {missing}"


# --------------------------------------------------------------------------- student edition


def cell_tags(cell) -> list[str]:
    return cell.metadata.get("tags", [])


def first_check_index(notebook: nbformat.NotebookNode) -> int:
    return next(index for index, cell in enumerate(notebook.cells) if "check" in cell_tags(cell))


@pytest.fixture(scope="module")
def student_runs(colab):
    """page -> (the student edition as handed out, run; then answered with the solutions, run on).

    As a student works: Run All stops at the first check, and the answers run on in the same
    kernel. The cells before the first answer are the same in both (colab_sim.run_then compares
    them), so they run once; when the first run stops anywhere else, the answered one runs alone.
    chainrule is installed before each run, as in a Colab runtime where the set-up cell already
    ran: that cell is the same in every notebook (tests/built/test_editions.py), and
    test_setup_cell_installs_chainrule_from_its_wheels checks that it installs chainrule from its wheel.
    """
    runs = {}

    def run_page(page: str) -> tuple[colab_sim.RunResult, colab_sim.RunResult]:
        if page not in runs:
            venv, wheels, ipython_dir = colab
            handed_out = require(student_notebook(page), "student")
            stop = first_check_index(nbformat.read(handed_out, as_version=4))
            answered = student_answers.answered_student_notebook(page)
            runs[page] = colab_sim.run_then(handed_out, answered, stop, venv, wheels, ipython_dir, installed=True)
        return runs[page]

    return run_page


def test_run_then_goes_on_in_the_same_kernel_only_after_the_expected_stop(colab):
    """The answered run may reuse the kernel of the unanswered one only when that stopped where expected."""

    def notebook(*sources):
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell(source) for source in sources]
        return nb

    first = notebook("shared = 1", "marker = 'left by the first'\nraise ValueError('stop')", "never = 1")
    second = notebook("shared = 1", "print(globals().get('marker'), shared)")
    venv, wheels, ipython_dir = colab
    ran, then = colab_sim.run_then(first, second, 1, venv, wheels, ipython_dir)
    assert ran.stopped_at == 1 and then.stopped_at is None, (ran.describe(), then.describe())
    assert then.cell_text(1).strip() == "left by the first 1", then.cell_text(1)
    ran, fresh = colab_sim.run_then(first, second, 2, venv, wheels, ipython_dir)
    assert ran.stopped_at == 1 and fresh.cell_text(1).strip() == "None 1", fresh.cell_text(1)


@pytest.mark.parametrize("page", CHECKED)
def test_unanswered_student_notebook_stops_at_its_first_check_with_one_line(student_runs, page: str):
    """As handed out, the student edition runs up to its first check, which says "not answered yet" alone.

    The answer cells of exercises without a check do not raise, so nothing stops before it.
    """
    notebook = require(student_notebook(page), "student")
    first_check = first_check_index(nbformat.read(notebook, as_version=4))
    result, _ = student_runs(page)
    name = notebook.relative_to(ROOT)
    early = [error for error in result.unexpected_errors if error.index < first_check]
    assert not early, f"{name}: a cell before the first check (cell {first_check}) failed:\n" + clip(
        "\n\n".join(map(str, early))
    )
    assert result.stopped_at == first_check, (
        f"{name}: execution should stop at the first check cell ({first_check}), but "
        + ("ran to the end" if result.stopped_at is None else f"stopped at cell {result.stopped_at}")
        + ":\n"
        + clip(result.describe())
    )
    [error] = [error for error in result.errors if error.index == first_check]
    assert error.ename == "NotAnswered" and "not answered yet" in error.evalue, error
    shown = error.traceback.strip().splitlines()
    assert 1 <= len(shown) <= 2 and shown[0].startswith("NotAnswered: "), (
        f"{name}: an unanswered exercise should show one short message, not a traceback:\n{error.traceback}"
    )


@pytest.mark.parametrize("page", CHECKED)
def test_student_notebook_answered_with_the_solutions_runs_to_the_end(student_runs, page: str):
    """Answered, the notebook runs on to the last cell, whose summary says every checked exercise passes."""
    questions = student_answers.checked_questions(page)
    notebook = student_answers.answered_student_notebook(page)
    _, result = student_runs(page)
    assert result.stopped_at is None and not result.unexpected_errors, (
        f"{page}: the student edition answered with the solutions failed:\n" + clip(result.describe())
    )
    last = len(notebook.cells) - 1
    assert "check-all" in cell_tags(notebook.cells[last])
    number = student_answers.book().chapter_number(page)
    summary = result.cell_text(last)
    assert f"Chapter {number}: {len(questions)} of {len(questions)} checked exercises pass." in summary, summary
    missing = explorables_not_shown(result.notebook, page)
    assert not missing, f"{page}: these explorables are not among the outputs in the simulated Colab: {missing}"


def test_a_missing_or_scriptless_explorable_is_found():
    html = '<div data-explorable="forward"><ol data-role="steps"></ol></div>'
    cell = nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output("display_data", {"text/html": html})])
    notebook = nbformat.v4.new_notebook(cells=[cell])
    assert explorables_not_shown(notebook, "chapters/backward") == ["forward", "backward"]
    cell.outputs[0]["data"]["text/html"] += "<script>window.chainruleExplorable.setupAll()</script>"
    assert explorables_not_shown(notebook, "chapters/backward") == ["backward"]
    assert explorables_not_shown(notebook, "chapters/intro") == []


@pytest.mark.parametrize("page", [page for page in CHECKED if page not in WHOLE])
def test_the_answered_student_run_holds_the_colab_editions_cells(page: str):
    """The Colab edition of a page that does not run whole is its student edition's cells, in the same
    order, plus solutions: so the answered student run, in the simulated Colab, ran every other cell."""
    colab = nbformat.read(require(colab_notebook(page), "Colab"), as_version=4)
    student = nbformat.read(require(student_notebook(page), "student"), as_version=4)
    theirs = [cell.source for cell in colab.cells if cell.cell_type == "code" and "solution" not in cell_tags(cell)]
    ours = iter(cell.source for cell in student.cells if cell.cell_type == "code")
    missing = [source[:80] for source in theirs if source not in ours]  # in order: `in` consumes the iterator
    assert not missing, f"{page}: cells of the Colab edition that the student edition does not run: {missing}"


if WHOLE:

    @pytest.mark.parametrize("page", WHOLE)
    def test_a_student_notebook_without_checks_raises_nowhere(page: str):
        """Without checked exercises, no cell of the student edition raises: Run All reaches the end.

        Its code is the Colab edition's, which test_colab_notebook_runs runs, plus answer cells.
        """
        notebook = nbformat.read(require(student_notebook(page), "student"), as_version=4)
        stubs = [cell.source for cell in notebook.cells if "exercise-stub" in cell_tags(cell)]
        assert stubs, f"{page}: no answer cells at all"
        assert not [source for source in stubs if "raise" in source], stubs


# --------------------------------------------------------------------------- the set-up cell


def setup_cells() -> dict[str, list[str]]:
    """Each distinct set-up cell (first code cell) of the Colab notebooks -> the pages that use it."""
    cells: dict[str, list[str]] = {}
    for page in PAGES:
        path = colab_notebook(page)
        if path.is_file():
            nb = nbformat.read(path, as_version=4)
            cells.setdefault(nb.cells[colab_sim.first_code_cell(nb)].source, []).append(page)
    return cells


SETUP_CELLS = setup_cells()


SETUP_CASES = dict(
    argvalues=list(SETUP_CELLS.values()) or [[]], ids=[pages[0] for pages in SETUP_CELLS.values()] or ["none"]
)


@pytest.mark.parametrize("pages", **SETUP_CASES)
def test_setup_cell_installs_chainrule_from_its_wheels(colab, pages: list[str]):
    """In a runtime without chainrule, the set-up cell alone installs it from its wheel (the student
    runs above start with it installed, as a runtime where that cell already ran)."""
    if not pages:
        pytest.fail("no Colab-edition notebook exists yet (chapters/*.ipynb)", pytrace=False)
    venv, wheels, _ = colab
    setup = colab_sim.setup_only(nbformat.read(colab_notebook(pages[0]), as_version=4))
    result = run(colab, setup, probe=True)
    assert result.stopped_at is None and not result.errors, clip(result.describe())
    assert_installed_from_the_wheel(result, venv, wheels)


@pytest.mark.parametrize("pages", **SETUP_CASES)
def test_setup_cell_fails_loudly(colab, tmp_path, pages: list[str]):
    """With CHAINRULE_PIP_SPEC pointing at a missing wheel, the set-up cell raises an error that
    says chainrule could not be installed and from what."""
    if not pages:
        pytest.fail("no Colab-edition notebook exists yet (chapters/*.ipynb)", pytrace=False)
    missing = tmp_path / "nowhere" / "chainrule-9.9.9-py3-none-any.whl"
    setup = colab_sim.setup_only(nbformat.read(colab_notebook(pages[0]), as_version=4))
    result = run(colab, setup, pip_spec=str(missing))
    where = f"the set-up cell of {', '.join(pages)}"
    assert result.stopped_at == 0 and result.errors, (
        f"{where} passed silently although chainrule could not be installed from {missing}:\n"
        + clip(result.cell_text(0) or result.describe())
    )
    error = result.errors[0]
    message = f"{error.ename}: {error.evalue}"
    assert "chainrule" in message, f"{where} raised, but its message does not name chainrule: {message}"
    assert str(missing) in message or missing.name in message, (
        f"{where} raised, but its message does not say what it tried to install ({missing}): {message}"
    )


# --------------------------------------------------------------------------- public checks


RIGHT_CLIP = """import numpy as np

def clip_by_norm(grads, max_norm):
    norm = np.sqrt(sum(float((g**2).sum()) for g in grads))
    return [g * min(1.0, max_norm / norm) for g in grads]
"""
WRONG_CLIP = """import numpy as np

def clip_by_norm(grads, max_norm):
    norm = np.sqrt(sum(float((g**2).sum()) for g in grads))
    return [g * max_norm / norm for g in grads]  # scales even below the threshold
"""


def answered(page: str, check_source_contains: str, answer: str) -> nbformat.NotebookNode:
    """The student notebook cut down to its set-up cell, one answer and that answer's check cell."""
    student = nbformat.read(require(student_notebook(page), "student"), as_version=4)
    setup = student.cells[colab_sim.first_code_cell(student)]
    [check] = [
        cell
        for cell in student.cells
        if "check" in cell.metadata.get("tags", []) and check_source_contains in cell.source
    ]
    notebook = nbformat.v4.new_notebook(metadata=student.metadata)
    notebook.cells = [setup, nbformat.v4.new_code_cell(answer), check]
    return notebook


def test_public_check_passes_a_right_answer_and_names_a_wrong_one(colab):
    right = run(colab, answered("chapters/depth", "check_clip_by_norm", RIGHT_CLIP))
    assert right.stopped_at is None and not right.errors, clip(right.describe())
    assert "clip_by_norm passes the checks." in right.cell_text(2)
    wrong = run(colab, answered("chapters/depth", "check_clip_by_norm", WRONG_CLIP))
    assert wrong.stopped_at == 2, clip(wrong.describe())
    [error] = wrong.errors
    assert error.ename == "AnswerError", error
    assert error.evalue.startswith("clip_by_norm on arrays of shapes") and (
        "It matches a known mistake: it scales every gradient, also when the norm is already under the threshold"
        in error.evalue
    ), error.evalue
    # Jupyter and Colab show the message alone, wrapped at spaces, not the frames of
    # chainrule_course.exercises.feedback.
    assert error.traceback.split() == f"AnswerError: {error.evalue}".split(), error.traceback
    assert max(map(len, error.traceback.splitlines())) <= 79, error.traceback
