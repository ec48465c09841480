"""An assignment's handout, as a student on a JupyterHub or a laptop runs it (tools/grader/assignments.py).

The handout is the student folder: the notebook, its public tests and the wheels of chainrule and chainrule-course. Its
set-up cell must install chainrule and otter-grader wherever they are missing. Here the intro
assignment is written into a temporary folder and its notebook runs in a bare venv
(``python -m venv``, with pip) that has only a kernel (ipykernel, installed by uv), offline: the
set-up cell's pip sees only the wheelhouse that ``make test`` downloads (tests/offline.py), and an
empty one when the install must fail.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import types
import zipfile
from pathlib import Path

import nbformat
import offline
import pytest
from common import ROOT

from tools.book import questions
from tools.grader import assignments

BOOK = assignments.load_book()
# The intro assignment's question, by its label: its id and its number are the book's, given at build time.
[DERIVE] = [q for a in questions.load_assignments(BOOK, ["intro"]) for q in a.questions if q.label == "ex-intro-derive"]
CELL_TIMEOUT = 600  # the set-up cell installs otter-grader and its dependencies (about 40 s)


@pytest.fixture(scope="module")
def handout(tmp_path_factory) -> Path:
    """The intro assignment's student folder, as make assignments writes it (into a temporary folder)."""
    output = tmp_path_factory.mktemp("assignments")
    offline.run([sys.executable, "-m", "tools.grader.assignments", "intro", "--output", output], env=None, cwd=ROOT)
    return output / "intro" / "student"


def setup_cell(notebook) -> str:
    return next(cell.source for cell in notebook.cells if cell.cell_type == "code")


def run_notebook(notebook, folder: Path, python: Path, env: dict[str, str]):
    """Execute ``notebook`` in ``folder`` with a kernel of ``python``'s venv; the executed copy."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    kernels = folder.parent / "kernels"
    (kernels / "bare-venv").mkdir(parents=True)
    spec = {
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "bare venv",
        "language": "python",
    }
    (kernels / "bare-venv" / "kernel.json").write_text(json.dumps(spec))
    specs = KernelSpecManager(kernel_dirs=[str(kernels)])
    manager = KernelManager(kernel_name="bare-venv", kernel_spec_manager=specs)
    client = NotebookClient(
        notebook, km=manager, timeout=CELL_TIMEOUT, allow_errors=True, resources={"metadata": {"path": str(folder)}}
    )
    client.execute(env=env)
    return notebook


@pytest.fixture(scope="module")
def bare(handout, tmp_path_factory) -> types.SimpleNamespace:
    """The handout run in a bare venv: its set-up cell with an empty wheelhouse, then the whole notebook.

    The first run must fail and leave nothing installed; the second, with a kernel installed
    (as any Jupyter has one), installs chainrule and the course from the handout's wheels, and otter-grader.
    """
    wheelhouse = offline.wheelhouse()
    work = tmp_path_factory.mktemp("bare")
    python = offline.create_venv(work / "venv")
    notebook = nbformat.read(handout / "intro.ipynb", as_version=4)
    (work / "empty").mkdir()
    shutil.copytree(handout, work / "failing")
    (work / "setup_cell.py").write_text(setup_cell(notebook))
    no_wheels = offline.environment(work / "empty", work / "venv", byte_compile=False)
    failed = subprocess.run(
        [str(python), str(work / "setup_cell.py")],
        capture_output=True,
        text=True,
        cwd=work / "failing",
        env=no_wheels,
        timeout=CELL_TIMEOUT,
    )
    probe = "import importlib.util as u\nprint(u.find_spec('chainrule'), u.find_spec('numpy'))"
    left = in_venv(python, probe)
    offline.uv_install(python, "ipykernel", byte_compile=True)  # its kernel starts twice
    shutil.copytree(handout, work / "student")
    executed = run_notebook(
        notebook, work / "student", python, offline.environment(wheelhouse, work / "venv", byte_compile=False)
    )
    yield types.SimpleNamespace(python=python, failed=failed, left=left, executed=executed, folder=work / "student")
    shutil.rmtree(work / "venv")  # 0.5 GB


def in_venv(python: Path, code: str) -> str:
    return offline.run([python, "-c", code], offline.environment(offline.WHEELHOUSE), cwd=python.parents[2])


def outputs(cell) -> str:
    return "\n".join(
        output.get("text", "")
        or output.get("data", {}).get("text/plain", "")
        or f"{output.get('ename')}: {output.get('evalue')}"
        for output in cell.outputs
    )


def test_the_handout_carries_the_wheels_the_autograder_grades_with(handout):
    wheels = sorted(handout.glob("*.whl"))
    assert [wheel.name.split("-")[0] for wheel in wheels] == ["chainrule", "chainrule_course"], wheels
    with zipfile.ZipFile(handout.parent / "autograder" / "intro-autograder.zip") as archive:
        for wheel in wheels:
            assert archive.read(wheel.name) == wheel.read_bytes()
            assert f"./{wheel.name}" in archive.read("requirements.txt").decode().split()


def test_setup_cell_installs_chainrule_from_the_handout_and_otter(bare):
    """Every cell runs (import otter among them), and chainrule and the course come from the handout's wheels."""
    for cell in bare.executed.cells:
        errors = [output for output in cell.get("outputs", []) if output.output_type == "error"]
        assert not errors, (cell.source, outputs(cell))
    probe = (
        "import chainrule, importlib.metadata as m, json\n"
        "print(json.dumps([chainrule.__file__, m.version('otter-grader'),"
        " [m.distribution(d).read_text('direct_url.json') for d in ('chainrule', 'chainrule-course')]]))"
    )
    module, otter_version, direct_urls = json.loads(in_venv(bare.python, probe))
    assert Path(module).is_relative_to(bare.python.parents[1]), module
    wheels = sorted(bare.folder.glob("*.whl"))
    assert [json.loads(url)["url"] for url in direct_urls] == [w.resolve().as_uri() for w in wheels], direct_urls
    assert otter_version == assignments.OTTER_VERSION


def test_untouched_handout_check_says_not_answered(bare):
    checks = [cell for cell in bare.executed.cells if cell.source.startswith("grader.check(")]
    assert [cell.source for cell in checks] == [f'grader.check("{DERIVE.name}")']
    said = f"NotAnswered: Exercise {DERIVE.number} is not answered yet: write tanh_neuron_grads"
    assert said in outputs(checks[0]), outputs(checks[0])


def test_setup_cell_fails_clearly_when_pip_cannot_install(bare):
    wheels = " ".join(wheel.name for wheel in sorted(bare.folder.glob("*.whl")))
    assert bare.failed.returncode != 0
    error = bare.failed.stderr.strip().splitlines()
    first = f"RuntimeError: Installing chainrule and chainrule_course with `pip install {wheels}` failed:"
    assert first in error, bare.failed.stderr
    assert "Check the network, then run this cell again." in error[-1], bare.failed.stderr
    assert "No matching distribution found for numpy" in bare.failed.stderr, bare.failed.stderr  # pip's words
    assert bare.left.split() == ["None", "None"], bare.left  # nothing installed


ENGINE_WHEEL, COURSE_WHEEL = "chainrule-0.1.0-py3-none-any.whl", "chainrule_course-0.1.0-py3-none-any.whl"
BOTH = ["chainrule", "chainrule_course"]
SERVED = "/srv/chainrule.whl /srv/chainrule_course.whl"


@pytest.mark.parametrize(
    "wheel, variable, missing, installed",
    [
        (True, SERVED, [*BOTH, "otter"], [ENGINE_WHEEL, COURSE_WHEEL]),
        (False, SERVED, [*BOTH, "otter"], SERVED.split()),
        (
            False,
            None,
            ["chainrule_course", "otter"],
            [BOOK.default_pip_spec, BOOK.default_pip_spec + "#subdirectory=course"],
        ),
        (True, None, ["otter"], [f"otter-grader=={assignments.OTTER_VERSION}"]),
    ],
)
def test_where_the_setup_cell_installs_from(tmp_path, monkeypatch, wheel, variable, missing, installed):
    """The wheels beside the notebook first, then CHAINRULE_PIP_SPEC, then the course's repository."""
    if wheel:
        (tmp_path / ENGINE_WHEEL).write_bytes(b"")
        (tmp_path / COURSE_WHEEL).write_bytes(b"")
    if variable:
        monkeypatch.setenv("CHAINRULE_PIP_SPEC", variable)
    else:
        monkeypatch.delenv("CHAINRULE_PIP_SPEC", raising=False)
    monkeypatch.chdir(tmp_path)
    commands = []
    pip = types.SimpleNamespace(stderr="pip said this\nERROR: and this")
    monkeypatch.setattr(subprocess, "run", lambda command, **_: commands.append(command) or pip)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *_: None if name in missing else object())
    source = assignments.handout_setup(BOOK)
    with pytest.raises(RuntimeError) as raised:
        exec(compile(source, "set-up cell", "exec"), {})
    assert commands == [[sys.executable, "-m", "pip", "install", "-q", "--no-color", *installed]]
    modules = "otter" if installed[0].startswith("otter") else "chainrule and chainrule_course"
    assert str(raised.value) == (
        f"Installing {modules} with `pip install {' '.join(installed)}` failed:\n"
        "pip said this\nERROR: and this\n"
        "Check the network, then run this cell again."
    )
