"""The otter-grader assignments (tools/grader/assignments.py) and the grader (chainrule_course.grading.grade).

``make test`` runs ``make assignments`` first; these tests read ``_build/assignments`` and fail
(they do not skip) when it is missing.

* Layout: each assignment has its student notebook, public tests, solution and autograder zip.
* No line of solution code is in any student file; hidden tests are only in the zip.
* Grading: each solution scores full marks, each untouched student notebook 0; planted wrong
  submissions (a sign flip, no λW, a transposed gradient, ...) score 0 on the question they
  break and get the intended diagnosis, word for word; broken notebooks (one that raises, one
  that loops forever, one with deleted cells, one that returns None, a corrupt file) do not
  stop the grader, and the CSV has the right rows and totals.
* Colab: tests/colab/test_colab_handout.py runs a handout in the simulated Colab (make test-colab).
"""

from __future__ import annotations

import ast
import csv
import fcntl
import hashlib
import importlib.metadata
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import zipfile
from pathlib import Path
from types import SimpleNamespace

import nbformat
import offline
import pytest
from common import ROOT
from examples import GENERIC, NETWORK_ANSWER, RECURSIVE_ORDER, SOFTPLUS_RIGHT, UNLOCK, UNLOCKS
from handouts import (
    ASSIGNMENTS,
    OUTPUT,
    answer_cells,
    ex,
    folder,
    number,
    solutions,
    student_notebook,
    submission,
    written,
)

from chainrule_course.grading import grade, launch, reports, sandbox, scoring
from tools import lock
from tools.book import questions
from tools.grader import assignments

# --------------------------------------------------------------------------- what make assignments wrote


def test_there_are_at_least_six_assignments_with_the_required_topics():
    assert len(ASSIGNMENTS) >= 6, sorted(ASSIGNMENTS)
    answers = {name for a in ASSIGNMENTS.values() for q in a.questions for name in questions.defined_names(q.stub)}
    for required in (
        "tanh_neuron_grads",
        "cube_grads",
        "dfs_order_with_stack",
        "matmul_vjp",
        "ce_grad",
        "d2l_weight_grads",
        "hidden_bias_grad",
        "memory_count",
        "clip_by_norm",
        "numeric_grad",
        "normalised_grads",
        "softplus_vjp",
        "longest_chain",
        "layernorm_backward",
        "tanh_hvp",
    ):
        assert required in answers, required


def test_the_instructors_page_lists_every_assignment_and_question():
    """The built table (_ext/assignments_table.py) names every assignment, every question by the id
    the grader gives it, and what each question's answer may import, as the grader allows it."""
    built = (ROOT / "_build" / "html" / "chapters" / "instructors.html").read_text(encoding="utf-8")
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", built, re.S)
    by_name = {}
    for row in rows:
        first = re.search(r'<span class="pre">([\w-]+)</span>', row)
        if first and first[1] in ASSIGNMENTS:
            by_name[first[1]] = " ".join(re.sub(r"<[^>]+>", "", re.sub(r"</t[dh]>", " ", row)).split())
    assert set(by_name) == set(ASSIGNMENTS), sorted(by_name)
    for name, assignment in ASSIGNMENTS.items():
        for question in assignment.questions:
            modules = questions.allowed(question)
            said = f"({', '.join(modules)})" if modules else "(standard library only)"
            assert f"{question.name} {said}" in by_name[name], (name, question.name, said, by_name[name])
    questions_ = [q for a in ASSIGNMENTS.values() for q in a.questions]
    assert all(questions.allowed(q) in (["math"], [], ["numpy"], ["numpy", "chainrule"]) for q in questions_)
    # Its workflow is numbered, step by step, none left out.
    steps = re.findall(r"(?m)^## (\d+)\. ", (ROOT / "chapters" / "instructors.md").read_text())
    assert steps == [str(n) for n in range(1, len(steps) + 1)] and len(steps) >= 8, steps


@pytest.mark.parametrize("name", sorted(ASSIGNMENTS))
def test_layout(name):
    path = folder(name)
    questions = [q.name for q in ASSIGNMENTS[name].questions]
    assert sorted(p.stem for p in (path / "student" / "tests").glob("*.py")) == sorted(questions)
    assert (path / "solution" / f"{name}.ipynb").is_file()
    notebook = student_notebook(name)
    assert notebook.metadata["otter"]["assignment_name"] == name
    checks = [c.source for c in notebook.cells if c.cell_type == "code" and c.source.startswith("grader.check")]
    assert checks == [f'grader.check("{q}")' for q in questions]
    # Each answer cell is the chapter's answer cell, as the student edition has it.
    assert [c.source for c in answer_cells(notebook)] == [q.stub for q in ASSIGNMENTS[name].questions]
    setup = notebook.cells[next(i for i, c in enumerate(notebook.cells) if c.cell_type == "code")]
    assert "otter_ignore" in setup.metadata["tags"] and "otter-grader==7.0.0" in setup.source
    # Gradescope builds its image from environment.yml: the Python, numpy, chainrule and the course
    # that local grading uses (the wheels of this checkout, not a git branch), and no playwright.
    with zipfile.ZipFile(path / "autograder" / f"{name}-autograder.zip") as archive:
        environment = archive.read("environment.yml").decode()
        requirements = archive.read("requirements.txt").decode().splitlines()
        wheels = sorted(n for n in archive.namelist() if n.endswith(".whl"))
        wheel_hashes = {wheel: hashlib.sha256(archive.read(wheel)).hexdigest() for wheel in wheels}
        setup_script = archive.read("setup.sh").decode()
        run_script = archive.read("run_autograder").decode()
        config = json.loads(archive.read("otter_config.json"))
    python = f"python={sys.version_info.major}.{sys.version_info.minor}"
    numpy_pin = f"numpy=={importlib.metadata.version('numpy')}"
    assert [wheel.split("-")[0] for wheel in wheels] == ["chainrule", "chainrule_course"]
    assert python in environment and numpy_pin in environment
    assert all(f"/autograder/source/{wheel}" in environment for wheel in wheels)
    # The zip's requirements are the grading lock's whole tree, each with its hashes, then the wheels
    # with the sha256 of the files beside them; the book's versions of what grading shares with it.
    locked = lock.entries(lock.GRADING)
    assert requirements == [*locked.values(), *(f"./{wheel} --hash=sha256:{wheel_hashes[wheel]}" for wheel in wheels)]
    for package in ("otter-grader", "nbconvert", "nbclient", "numpy"):
        assert lock.version(locked[package]) == importlib.metadata.version(package), package
    assert "git+" not in environment and "playwright" not in setup_script
    # the plugin names the assignment; otter's own name would refuse a notebook from Colab before any plugin
    assert config["plugins"] == [{assignments.PLUGIN: {"assignment": name}}] and "assignment_name" not in config
    # The answers run as nobody on Gradescope: the grading Python is where every user may run it.
    assert (
        "mamba_install.sh -b -p /opt/miniforge3\n" in setup_script and "chmod -R a+rX /opt/miniforge3" in setup_script
    )
    assert "/root/miniforge3" not in setup_script + run_script and "/opt/miniforge3/bin" in run_script


@pytest.mark.parametrize("name", sorted(ASSIGNMENTS))
def test_no_solution_code_and_no_hidden_test_in_student_files(name):
    path = folder(name)
    texts = {p: p.read_text() for p in (path / "student").rglob("*") if p.is_file() and p.suffix != ".whl"}
    lines = assignments.solution_lines(ASSIGNMENTS[name])
    assert lines
    for line in lines:
        assert not [p for p, text in texts.items() if line in text], line
    with zipfile.ZipFile(path / "autograder" / f"{name}-autograder.zip") as archive:
        packed = "".join(archive.read(n).decode() for n in archive.namelist() if n.startswith("tests/"))
    for question in ASSIGNMENTS[name].questions:
        public = set(ast.unparse(ast.parse(question.check)).splitlines())
        for source in question.hidden:
            own = [line.strip() for line in ast.unparse(ast.parse(source)).splitlines() if line not in public]
            assert own and "hidden=True" in packed
            for line in own:
                assert line in packed, line
                assert not [p for p, text in texts.items() if line in text], line
    assert not [p for p, text in texts.items() if "hidden=True" in text]


def test_public_tests_in_the_setup_cell_equal_the_tests_folder():
    for name in ASSIGNMENTS:
        path = folder(name)
        namespace: dict = {}
        setup = next(c for c in student_notebook(name).cells if "PUBLIC_TESTS" in c.source)
        start = setup.source.index("PUBLIC_TESTS: dict = ")
        end = setup.source.index("\n}", start) + 2
        exec(setup.source[start:end], namespace)
        files = {p.name: p.read_text() for p in (path / "student" / "tests").glob("*.py")}
        assert namespace["PUBLIC_TESTS"] == files


def test_a_check_that_uses_chapter_state_is_refused():
    question = questions.Question(
        "ex-x",
        "9.1",
        "text",
        stub="def f(x):\n    raise NotImplementedError\n",
        check="feedback.check_array('f', f(X), 0)",
    )
    with pytest.raises(questions.AssignmentError, match=r"uses \['X', 'feedback'\]"):
        questions.test_function(question, question.check, "", "chapters/x")


def test_each_question_names_its_parts_in_the_autograder_only():
    """Points per quantity: the zip's tests name the parts that grading scores; the student's tests do not."""
    found = {}
    for name in ASSIGNMENTS:
        with zipfile.ZipFile(folder(name) / "autograder" / f"{name}-autograder.zip") as archive:
            for member in archive.namelist():
                if member.startswith("tests/") and member.endswith(".py"):
                    parts = scoring.Part.of(archive.read(member).decode())
                    found[Path(member).stem] = [(p.answer, p.quantity, bool(p.reference)) for p in parts]
        student_tests = [p.read_text() for p in (folder(name) / "student" / "tests").glob("*.py")]
        assert student_tests and not [t for t in student_tests if scoring.PARTS in t or scoring.REFERENCE in t]
    # Every test carries the reference solution the grader finds the inputs with.
    weights = [("d2l_weight_grads", "dJ/dW1", True), ("d2l_weight_grads", "dJ/dW2", True)]
    assert found[ex("mlp-weight-grads")] == weights
    assert found[ex("mlp-memory")] == [("memory_count", "prediction", True), ("memory_count", "training", True)]
    assert found[ex("tensors-vjp-rules")] == [("matmul_vjp", None, True), ("ce_grad", None, True)]
    assert found[ex("intro-derive")] == [("tanh_neuron_grads", q, True) for q in ("dy/dx", "dy/dw", "dy/db")]
    assert found[ex("backward-cube")] == [("cube_grads", "dy/ds", True), ("cube_grads", "dy/dx", True)]
    whole = [(None, None, False)]
    assert found[ex("mlp-bias")] == found[ex("depth-clip-norm")] == whole  # one quantity; arrays scaled together
    for label in ("tensors-numeric-grad", "cost-longest-chain", "frameworks-detached-norm", "frameworks-softplus-vjp"):
        assert found[ex(label)] == whole, label
    assert found[ex("forward-tanh-hvp")] == found[ex("depth-layernorm")] == whole


def test_a_solution_that_defines_nothing_is_refused():
    question = questions.Question(
        "ex-x", "9.1", "text", stub="answer = ...\n", solution_cells=["print(42)"], check="print(answer)"
    )
    with pytest.raises(questions.AssignmentError, match=r"does not define \['answer'\]"):
        questions.solution_code(question, "chapters/x")


# --------------------------------------------------------------------------- grading

MLP_RIGHT = dict(enumerate(solutions("mlp")))
BIAS, MEMORY, WEIGHTS = 0, 1, 2  # the answer cells of mlp
BIAS_ID, MEMORY_ID, WEIGHTS_ID = ex("mlp-bias"), ex("mlp-memory"), ex("mlp-weight-grads")  # its questions


def replace(code: str, old: str, new: str) -> str:
    assert old in code, (old, code)
    return code.replace(old, new)


def delete_cells(containing: str):
    def edit(notebook):
        notebook.cells = [c for c in notebook.cells if containing not in c.source]

    return edit


def raising_cell(notebook):
    notebook.cells.insert(4, nbformat.v4.new_code_cell("raise RuntimeError('a cell that fails')"))


# name -> (assignment, notebook or None for a corrupt file, {question: points}, {question: [phrases]})
PLANTED = {
    "solution": ("mlp", lambda: submission("mlp", MLP_RIGHT), {BIAS_ID: 2, MEMORY_ID: 2, WEIGHTS_ID: 2}, {}),
    "untouched": (
        "mlp",
        lambda: submission("mlp"),
        {BIAS_ID: 0, MEMORY_ID: 0, WEIGHTS_ID: 0},
        {BIAS_ID: [f"NotAnswered: Exercise {number('mlp-bias')} is not answered yet"]},
    ),
    "no-weight-decay": (
        "mlp",
        lambda: submission(
            "mlp", {**MLP_RIGHT, WEIGHTS: replace(replace(MLP_RIGHT[WEIGHTS], " + lam * W1", ""), " + lam * W2", "")}
        ),
        {WEIGHTS_ID: 0, BIAS_ID: 2},
        {
            WEIGHTS_ID: [
                "It matches a known mistake: the weight-decay term λ·W1 is missing, and the weight-decay term λ·W2 "
                "is missing"
            ]
        },
    ),
    "transposed": (
        "mlp",
        lambda: submission(
            "mlp",
            {
                **MLP_RIGHT,
                WEIGHTS: replace(MLP_RIGHT[WEIGHTS], "return dZ.T @ X + lam * W1,", "return (dZ.T @ X + lam * W1).T,"),
            },
        ),
        {WEIGHTS_ID: 1},
        {
            WEIGHTS_ID: [
                "It matches a known mistake: dJ/dW1 is transposed (rows and columns swapped)",
                "(dJ/dW2): passed",
            ]
        },
    ),
    "bias-not-summed": (
        "mlp",
        lambda: submission(
            "mlp",
            {**MLP_RIGHT, BIAS: replace(MLP_RIGHT[BIAS], "((dO @ W2) * (Z > 0)).sum(axis=0)", "(dO @ W2) * (Z > 0)")},
        ),
        {BIAS_ID: 0, WEIGHTS_ID: 2},
        {BIAS_ID: ["It matches a known mistake: the bias gradient is not summed over the batch"]},
    ),
    "memory-without-batch": (
        "mlp",
        lambda: submission(
            "mlp",
            {
                **MLP_RIGHT,
                MEMORY: replace(
                    MLP_RIGHT[MEMORY], "def memory_count(N, d, h, q):", "def memory_count(N, d, h, q):\n    N = 1"
                ),
            },
        ),
        {MEMORY_ID: 0, BIAS_ID: 2},
        {MEMORY_ID: ["It matches a known mistake: the activations are counted for one example"]},
    ),
    "returns-none": (
        "mlp",
        lambda: submission("mlp", {**MLP_RIGHT, WEIGHTS: "def d2l_weight_grads(X, y, W1, W2, lam):\n    return None"}),
        {WEIGHTS_ID: 0, MEMORY_ID: 2},
        {WEIGHTS_ID: ["d2l_weight_grads returned None: is a `return` missing at its end?"]},
    ),
    "wrong-shape": (
        "mlp",
        lambda: submission(
            "mlp", {**MLP_RIGHT, BIAS: replace(MLP_RIGHT[BIAS], ".sum(axis=0)", ".sum(axis=0, keepdims=True)")}
        ),
        {BIAS_ID: 0},
        {BIAS_ID: ["dJ/db1 has shape (1, "]},
    ),
    "raises": (
        "mlp",
        lambda: submission(
            "mlp",
            {
                **MLP_RIGHT,
                BIAS: replace(MLP_RIGHT[BIAS], "    Z = X @ W1.T + b1\n", "    Z = X @ W1.T + b1\n    Z = Z[len(Z)]\n"),
            },
            edit=raising_cell,
        ),
        {BIAS_ID: 0, MEMORY_ID: 2, WEIGHTS_ID: 2},
        {BIAS_ID: ["hidden_bias_grad raised IndexError", "in line 3 of hidden_bias_grad (`Z = Z[len(Z)]`)"]},
    ),
    "loops-forever": (
        "mlp",
        lambda: submission(
            "mlp",
            {
                **MLP_RIGHT,
                BIAS: "def hidden_bias_grad(X, y, W1, b1, W2, lam):\n    while True:\n        pass",
                MEMORY: "while True:\n    pass",
            },
        ),
        {BIAS_ID: 0, MEMORY_ID: 0, WEIGHTS_ID: 2},
        {BIAS_ID: ["hidden_bias_grad did not return within 10 s"], MEMORY_ID: ["memory_count is not defined"]},
    ),
    "deleted-cells": (
        "mlp",
        lambda: submission("mlp", MLP_RIGHT, edit=delete_cells("d2l_weight_grads")),
        {WEIGHTS_ID: 0, BIAS_ID: 2, MEMORY_ID: 2},
        {WEIGHTS_ID: ["d2l_weight_grads is not defined"]},
    ),
    "lost-metadata": (
        "mlp",
        lambda: submission("mlp", MLP_RIGHT, edit=lambda nb: nb.metadata.pop("otter")),
        {BIAS_ID: 2, MEMORY_ID: 2, WEIGHTS_ID: 2},
        {},
    ),
    "other-assignment": ("mlp", lambda: submission("intro"), {BIAS_ID: 0, MEMORY_ID: 0, WEIGHTS_ID: 0}, {}),
    "corrupt": ("mlp", None, {BIAS_ID: 0, MEMORY_ID: 0, WEIGHTS_ID: 0}, {}),
    "sign-flip": (
        "intro",
        lambda: submission(
            "intro",
            {
                0: "def tanh_neuron_grads(x, w, b):\n"
                "    s = 1 - math.tanh(w * x + b) ** 2\n"
                "    return -s * w, -s * x, -s"
            },
        ),
        {ex("intro-derive"): 0},
        {ex("intro-derive"): ["It matches a known mistake: the sign is flipped"]},
    ),
    # The numbers the public message prints, pasted: the second public point and the hidden ones fail.
    "pasted-neuron": (
        "intro",
        lambda: submission("intro", {0: "def tanh_neuron_grads(x, w, b):\n    return -1.5729, 0.3932, 0.7864"}),
        {ex("intro-derive"): 0},
        {ex("intro-derive"): ["tanh_neuron_grads(0.5, -2.0, 0.5)"]},
    ),
    "no-fan-out": (
        "backward",
        lambda: submission("backward", {0: "def cube_grads(x):\n    return x, 2 * x**2"}),
        {ex("backward-cube"): 1},
        {ex("backward-cube"): ["a lost fan-out contribution: x also feeds y directly"]},
    ),
    "pasted-cube": (
        "backward",
        lambda: submission("backward", {0: "def cube_grads(x):\n    return 1.3, 5.07"}),
        {ex("backward-cube"): 0},
        {ex("backward-cube"): ["cube_grads("]},
    ),
    "order-reversed": (
        "graph",
        lambda: submission("graph", {0: replace(solutions("graph")[0], "    return order", "    return order[::-1]")}),
        {ex("graph-dfs-by-hand"): 0},
        {ex("graph-dfs-by-hand"): ["the order is reversed"]},
    ),
    "recursive-order": (
        "graph",
        lambda: submission("graph", {0: RECURSIVE_ORDER}),
        {ex("graph-dfs-by-hand"): 0},
        {ex("graph-dfs-by-hand"): ["RecursionError"]},
    ),
    **{
        f"recursion-unlocked-{route}": (
            "graph",
            lambda reach=reach: submission(
                "graph",
                {
                    0: UNLOCK.replace("{route}", reach)
                    + RECURSIVE_ORDER.replace("    order, seen", "    unlock()\n    order, seen")
                },
            ),
            {ex("graph-dfs-by-hand"): 0},
            {ex("graph-dfs-by-hand"): ["RecursionError"]},
        )
        for route, reach in UNLOCKS.items()
    },
    "pasted-orders": (
        "graph",
        lambda: submission(
            "graph",
            {
                0: "def dfs_order_with_stack(root, parents):\n"
                "    return {'e': list('abce'), 'f': list('abcxdf'), 'd': list('abcd'),\n"
                "            'n4999': [f'n{i}' for i in range(5000)]}[root]"
            },
        ),
        {ex("graph-dfs-by-hand"): 0},  # the public test's fresh graph, as the hidden ones, is one it has not seen
        {ex("graph-dfs-by-hand"): ["KeyError"]},
    ),
    "mean-without-1/N": (
        "tensors",
        lambda: submission("tensors", {0: replace(solutions("tensors")[0], "/ len(labels)", "")}),
        {ex("tensors-vjp-rules"): 1},
        {
            ex("tensors-vjp-rules"): [
                "It matches a known mistake: the 1/N of the mean is missing",
                "(matmul_vjp): passed",
            ]
        },
    ),
    # A one-sided difference: no points for ex-tensors-numeric-grad, named as an instructor would;
    # ex-tensors-vjp-rules right.
    "forward-difference": (
        "tensors",
        lambda: submission(
            "tensors",
            {
                0: solutions("tensors")[0],
                1: replace(
                    replace(solutions("tensors")[1], "behind[index] -= step", "behind = x"),
                    "/ (2 * step)",
                    "/ step",
                ),
            },
        ),
        {ex("tensors-vjp-rules"): 2, ex("tensors-numeric-grad"): 0},
        {ex("tensors-numeric-grad"): ["It matches a known mistake: it is a forward difference"]},
    ),
    # Points per part: a right matmul_vjp earns its half while ce_grad is not answered.
    "matmul-only": (
        "tensors",
        lambda: submission(
            "tensors",
            {
                0: solutions("tensors")[0].split("\n\n\ndef ce_grad")[0]
                + "\n\n\n"
                + ASSIGNMENTS["tensors"].questions[0].stub.split("\n\n\ndef ce_grad")[0].replace("matmul_vjp", "unused")
            },
        ),
        {ex("tensors-vjp-rules"): 1},
        {ex("tensors-vjp-rules"): ["(matmul_vjp): passed"]},
    ),
    "half-memory": (
        "mlp",
        lambda: submission(
            "mlp",
            {**MLP_RIGHT, MEMORY: replace(MLP_RIGHT[MEMORY], "return predict, 2 * weights", "return predict, weights")},
        ),
        {MEMORY_ID: 1, BIAS_ID: 2},
        {MEMORY_ID: ["training is counted without the weight gradients", "(prediction): passed"]},
    ),
    "clips-every-gradient": (
        "depth",
        lambda: submission(
            "depth", {1: replace(solutions("depth")[1], "min(1.0, max_norm / norm)", "max_norm / norm")}
        ),
        {ex("depth-clip-norm"): 0},
        {
            ex("depth-clip-norm"): [
                "It matches a known mistake: it scales every gradient, also when the norm is already under"
            ]
        },
    ),
}
for other in ("intro", "backward", "graph", "tensors", "forward", "depth", "cost", "frameworks"):
    PLANTED[f"{other}-solution"] = (
        other,
        lambda other=other: submission(other, dict(enumerate(solutions(other)))),
        {q.name: 2 for q in ASSIGNMENTS[other].questions},
        {},
    )
    PLANTED[f"{other}-untouched"] = (
        other,
        lambda other=other: submission(other),
        {q.name: 0 for q in ASSIGNMENTS[other].questions},
        {q.name: ["is not answered yet"] for q in ASSIGNMENTS[other].questions},
    )


def added_cell(source: str):
    def edit(notebook):
        notebook.cells.append(nbformat.v4.new_code_cell(source))

    return edit


# Cheats planted in an unanswered (or wrong) notebook: each must earn nothing. The sandbox
# escape is planted in a right one, which must keep its marks and reach nothing.
PATCH_FEEDBACK = (
    "import chainrule_course.exercises.feedback as fb\n"
    '[setattr(fb, n, lambda *a, **k: None) for n in dir(fb) if n.startswith("check_")]'
)
PATCH_NUMPY = (
    "import numpy as np\nnp.allclose = np.isclose = np.array_equal = lambda *a, **k: True\n"
    "np.testing.assert_allclose = lambda *a, **k: None"
)
EDIT_TESTS = (
    "import pathlib\nfor test in pathlib.Path('tests').glob('*.py'):\n"
    "    test.write_text(f'name = {test.stem!r}\\npoints = 2\\n')"
)
FAKE_RESULTS = (
    "import otter.test_files as t\nfrom otter.test_files.abstract_test import TestCaseResult\n"
    "t.ExceptionTestFile.run = lambda self, env: setattr(self, 'test_case_results', [\n"
    "    TestCaseResult(test_case=c, message='ok', passed=True) for c in self.test_cases])\n"
    f"print('{BIAS_ID} results: All test cases passed!')"
)
ESCAPE_MARK = "escaped-by-a-submission"


def escape_cell() -> str:
    """A cell that tries to write into the checkout and the submissions, and to reach a local server."""
    targets = [str(ROOT / ESCAPE_MARK), str(ESCAPE["folder"] / ESCAPE_MARK)]
    return (
        f"import socket\nfor target in {targets!r}:\n    try:\n        open(target, 'w').write('x')\n"
        "    except OSError:\n        pass\ntry:\n"
        f"    socket.create_connection(('127.0.0.1', {ESCAPE['port']}), timeout=2).sendall(b'x')\n"
        "except OSError:\n    pass"
    )


ESCAPE: dict = {}
# otter reads its results file and its log socket's records with pickle, in the process that
# scores under otter run. This cell forges both: a pickle that, once loaded, makes a folder.
FORGED_MARK = Path(tempfile.gettempdir()) / "chainrule-forged-pickle-ran"
FORGE_PICKLES = f"""\
import glob, os, pickle, socket, struct, tempfile, threading, time
class Forged:
    def __reduce__(self):
        return (os.mkdir, ({str(FORGED_MARK)!r},))
payload = pickle.dumps(Forged())
def forge():  # rewrite otter's results file once its last cell has written it
    for _ in range(1200):
        for path in glob.glob(os.path.join(tempfile.gettempdir(), "*.pkl")):
            try:
                open(path, "wb").write(payload)
            except OSError:
                pass
        time.sleep(0.02)
threading.Thread(target=forge, daemon=True).start()
for line in open("/proc/net/tcp").read().splitlines()[1:]:  # every server on 127.0.0.1
    local, state = line.split()[1], line.split()[3]
    if state == "0A" and local.startswith("0100007F"):
        try:
            with socket.create_connection(("127.0.0.1", int(local.split(":")[1], 16)), 1) as s:
                s.sendall(struct.pack(">L", len(payload)) + payload)
        except OSError:
            pass
"""
PLANTED.update(
    {
        "forges-pickles": (
            "mlp",
            lambda: submission("mlp", edit=added_cell(FORGE_PICKLES)),
            {BIAS_ID: 0, MEMORY_ID: 0, WEIGHTS_ID: 0},
            {},
        ),
        "patches-feedback": (
            "mlp",
            lambda: submission("mlp", edit=added_cell(PATCH_FEEDBACK)),
            {BIAS_ID: 0, MEMORY_ID: 0, WEIGHTS_ID: 0},
            {BIAS_ID: ["is not answered yet"]},
        ),
        # The wrong ex-mlp-weight-grads still fails: the checks run in the grader's process, with its own numpy.
        "patches-numpy": (
            "mlp",
            lambda: submission(
                "mlp",
                {**MLP_RIGHT, WEIGHTS: replace(MLP_RIGHT[WEIGHTS], " + lam * W1", "")},
                edit=added_cell(PATCH_NUMPY),
            ),
            {WEIGHTS_ID: 1, BIAS_ID: 2},  # its right dJ/dW2 counts: the patch changed nothing of the grader's
            {WEIGHTS_ID: ["It matches a known mistake: the weight-decay term λ·W1 is missing"]},
        ),
        "edits-tests": (
            "mlp",
            lambda: submission("mlp", edit=added_cell(EDIT_TESTS)),
            {BIAS_ID: 0, MEMORY_ID: 0, WEIGHTS_ID: 0},
            {},
        ),
        "fakes-results": (
            "mlp",
            lambda: submission("mlp", edit=added_cell(FAKE_RESULTS)),
            {BIAS_ID: 0, MEMORY_ID: 0, WEIGHTS_ID: 0},
            {},
        ),
        # The cell that would stop a kernel never runs: only answer cells do, each apart.
        "exits": (
            "mlp",
            lambda: submission("mlp", edit=added_cell("import os\nos._exit(0)")),
            {BIAS_ID: 0, MEMORY_ID: 0, WEIGHTS_ID: 0},
            {BIAS_ID: ["is not answered yet"]},
        ),
        "sys-exit": (
            "mlp",
            lambda: submission("mlp", edit=added_cell("import sys\nsys.exit(0)")),
            {BIAS_ID: 0, MEMORY_ID: 0, WEIGHTS_ID: 0},
            {},
        ),
        "uses-torch": (
            "mlp",
            lambda: submission(
                "mlp", {**MLP_RIGHT, MEMORY: "def memory_count(N, d, h, q):\n    import torch\n    return 0"}
            ),
            {MEMORY_ID: 0, BIAS_ID: 2},
            {MEMORY_ID: ["Your answer uses torch, which this exercise does not allow"]},
        ),
        "escapes": (
            "mlp",
            lambda: submission("mlp", MLP_RIGHT, edit=added_cell(escape_cell())),
            {BIAS_ID: 2, MEMORY_ID: 2, WEIGHTS_ID: 2},
            {},
        ),
    }
)
# The answer key out of the kernel's reach: each of these earned full marks once, and earns nothing now.
# The reference answer of the checks (chainrule_course.exercises.feedback), called from the answers:
CALLS_THE_KEY = """def d2l_weight_grads(X, y, W1, W2, lam):
    from chainrule_course.exercises import feedback
    g = feedback.d2l_gradients(X, y, W1, W2, lam)
    return g["W1"], g["W2"]"""
# A table of the public inputs' answers (the public check's sizes are in the notebook):
TABLE_OF_ANSWERS = (
    "TABLE = {sizes: tuple(counts.values()) for sizes, counts in %r.items()}\n\n\n"
    "def memory_count(N, d, h, q):\n    return TABLE[N, d, h, q]"
)
# The expected answer read from the checker's stack frame, as it was when the kernel ran the checks:
READS_THE_CHECKER = """import sys


def hidden_bias_grad(X, y, W1, b1, W2, lam):
    frame = sys._getframe(1)
    while frame is not None and "expected" not in frame.f_locals:
        frame = frame.f_back
    return frame.f_locals["expected"]"""
# A process that outlives the kernel and rewrites the record after the grader's last cell:
REWRITES_THE_RECORD = """import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for _ in range(600):
            for name in ("record.json", "submission.ipynb"):
                try:
                    open(name, "w").write('{"values": {}, "calls": {}}')
                except OSError:
                    pass
            time.sleep(0.05)
    os._exit(0)"""
# The engine's backward pass, which ex-backward-cube asks the student to do by hand:
ENGINE_BACKWARD = """from chainrule import Value


def cube_grads(x):
    xv = Value(x)
    s = xv * xv
    y = s * xv
    y.backward()
    return s.grad, xv.grad"""


# The engine's backward pass for a VJP of ex-tensors-vjp-rules, with the right ce_grad:
TENSOR_BACKWARD = """from chainrule import Tensor


def matmul_vjp(A, B, G):
    At, Bt = Tensor(A, requires_grad=True), Tensor(B, requires_grad=True)
    (At @ Bt).backward(G)
    return At.grad, Bt.grad"""
# PyTorch, once the grader's import blocker is taken out of sys.meta_path and torch out of sys.modules:
TORCH_UNBLOCKED = """import sys
sys.meta_path.pop(0)
import torch


def d2l_weight_grads(X, y, W1, W2, lam):
    W1t = torch.tensor(W1, requires_grad=True)
    W2t = torch.tensor(W2, requires_grad=True)
    H = torch.relu(torch.tensor(X) @ W1t.T)
    loss = torch.nn.functional.cross_entropy(H @ W2t.T, torch.tensor(y))
    (loss + lam / 2 * ((W1t**2).sum() + (W2t**2).sum())).backward()
    return W1t.grad.numpy(), W2t.grad.numpy()


del sys.modules["torch"]"""


def memory_table() -> dict:
    from chainrule_course.exercises import feedback

    return {sizes: feedback.d2l_memory(*sizes) for sizes in feedback.MEMORY_SIZES}


PLANTED.update(
    {
        "calls-the-key": (
            "mlp",
            lambda: submission("mlp", {**MLP_RIGHT, WEIGHTS: CALLS_THE_KEY}),
            {WEIGHTS_ID: 0, BIAS_ID: 2},
            {WEIGHTS_ID: ["Your answer uses chainrule_course.exercises.feedback, which this exercise does not allow"]},
        ),
        "table-of-answers": (
            "mlp",
            lambda: submission("mlp", {**MLP_RIGHT, MEMORY: TABLE_OF_ANSWERS % memory_table()}),
            {MEMORY_ID: 0, BIAS_ID: 2},
            {MEMORY_ID: ["KeyError"]},  # the public test's fresh sizes fail it, as the hidden ones do
        ),
        "reads-the-checker": (
            "mlp",
            lambda: submission("mlp", {**MLP_RIGHT, BIAS: READS_THE_CHECKER}),
            {BIAS_ID: 0, WEIGHTS_ID: 2},
            {},
        ),
        "rewrites-the-record": (
            "mlp",
            lambda: submission("mlp", MLP_RIGHT, edit=added_cell(REWRITES_THE_RECORD)),
            {BIAS_ID: 2, MEMORY_ID: 2, WEIGHTS_ID: 2},
            {},
        ),
        "tensor-backward": (
            "tensors",
            lambda: submission(
                "tensors",
                {0: TENSOR_BACKWARD + "\n\n\n" + "def ce_grad" + solutions("tensors")[0].split("def ce_grad")[1]},
            ),
            {ex("tensors-vjp-rules"): 1},
            {
                ex("tensors-vjp-rules"): [
                    "Your answer uses chainrule.Tensor, which this exercise does not allow",
                    "(ce_grad): passed",
                ]
            },
        ),
        "torch-unblocked": (
            "mlp",
            lambda: submission("mlp", {**MLP_RIGHT, WEIGHTS: TORCH_UNBLOCKED}),
            {WEIGHTS_ID: 0, BIAS_ID: 2},
            {WEIGHTS_ID: ["Your answer uses torch, which this exercise does not allow"]},
        ),
        "engine-backward": (
            "backward",
            lambda: submission("backward", {0: ENGINE_BACKWARD}),
            {ex("backward-cube"): 0},
            {ex("backward-cube"): ["Your answer uses chainrule.Value, which this exercise does not allow"]},
        ),
    }
)
# An LMS export: a folder per student, a notebook whose suffix is in capitals.
PATHS = {"Ada Lovelace_4711": "Ada Lovelace_4711/MLP.IPYNB"}
# Written work, with maths and an attempt at running script in the instructor's browser.
BY_HAND = "Summed over the rows: $\\bar{b} = \\sum_i \\bar{Z}_{i,:}$.\n\n<script>alert(1)</script>\n\n$$J = 1$$"
PLANTED["writes-by-hand"] = (
    "mlp",
    lambda: submission("mlp", MLP_RIGHT, edit=written({0: BY_HAND})),
    {BIAS_ID: 2, MEMORY_ID: 2, WEIGHTS_ID: 2},
    {},
)
# Right answers that also look at the checker's stack frames: the points stand, the row is up for review.
PLANTED["reads-frames"] = (
    "mlp",
    lambda: submission("mlp", {**MLP_RIGHT, BIAS: "import sys\n_peek = sys._getframe(0).f_back\n" + MLP_RIGHT[BIAS]}),
    {BIAS_ID: 2, MEMORY_ID: 2, WEIGHTS_ID: 2},
    {},
)
# Honest work saved from a kernel that only the student's machine has (conda's "myenv"): full marks.
PLANTED["kernel-myenv"] = (
    "mlp",
    lambda: submission(
        "mlp",
        MLP_RIGHT,
        edit=lambda nb: nb.metadata.update(kernelspec={"name": "myenv", "display_name": "myenv", "language": "python"}),
    ),
    {BIAS_ID: 2, MEMORY_ID: 2, WEIGHTS_ID: 2},
    {},
)
# The answers that run apart with chainrule's Tensors (ex-layers-softplus-row) and that earn points per
# gradient (ex-capstone-network-backward): a row that keeps C while its rule reads A loses the row's third
# of the points; a backward pass without batch normalisation's variance path loses the two gradients it
# spoils, of seven.
ROW_KEEPS_C = SOFTPLUS_RIGHT.replace('(("A",),)', '(("C",),)')
NO_VARIANCE_PATH = NETWORK_ANSWER.replace(" - Z_hat * (g * Z_hat).mean(0)", "")
PLANTED["row-keeps-C"] = (
    "layers",
    lambda: submission("layers", {2: ROW_KEEPS_C}),
    {ex("layers-conv-backward"): 0, ex("layers-embedding-grad"): 0, ex("layers-softplus-row"): 1.33},
    {ex("layers-softplus-row"): ["softplus_vjp reads what the row does not keep", "(softplus_forward): passed"]},
)
PLANTED["no-variance-path"] = (
    "capstone",
    lambda: submission("capstone", {0: NO_VARIANCE_PATH}),
    {ex("capstone-network-backward"): 1.43},
    {ex("capstone-network-backward"): ["W1_bar is wrong", "path through the variance is missing", "(b2_bar): passed"]},
)
# Honest work written unusually, which lost every point when only the cell's definitions ran: the
# answer defined under an ``if``, a table it reads filled by a loop, a helper in a cell of its own, an
# import only in the notebook's first cell. Full marks, status "graded".
ODD_BUT_HONEST_HELPER = (
    "from collections import deque\n\n\ndef finished_order(root, parents):\n"
    "    order, seen = [], {root}\n    path, unexplored = deque([root]), deque([iter(parents[root])])\n"
    "    while path:\n        for parent in unexplored[-1]:\n            if parent not in seen:\n"
    "                seen.add(parent)\n                path.append(parent)\n"
    "                unexplored.append(iter(parents[parent]))\n                break\n"
    "        else:\n            unexplored.pop()\n            order.append(path.pop())\n    return order\n"
)
ODD_BUT_HONEST = (
    "import sys\n\nSTEPS = {}\nfor name in ('walk',):\n    STEPS[name] = finished_order\n\n"
    "if sys.version_info >= (3, 8):\n\n    def dfs_order_with_stack(root, parents):\n"
    "        return STEPS['walk'](root, parents)\n\nprint(dfs_order_with_stack('a', {'a': []}))\n"
)
PLANTED["odd-but-honest"] = (
    "graph",
    lambda: submission("graph", {0: ODD_BUT_HONEST}, edit=added_cell(ODD_BUT_HONEST_HELPER)),
    {ex("graph-dfs-by-hand"): 2},
    {},
)
# Honest cells in IPython's own syntax: a help line left in one answer cell, and in another a continuation
# line that starts with ``!=`` above a test print of another cell's names (each lost the question).
PLANTED["ipython-syntax"] = (
    "mlp",
    lambda: submission(
        "mlp",
        {
            **MLP_RIGHT,
            BIAS: "np.maximum?\n" + MLP_RIGHT[BIAS],
            WEIGHTS: replace(MLP_RIGHT[WEIGHTS], "* (Z > 0)", "* ((Z > 0)\n          != 0)")
            + "\nprint(d2l_weight_grads(X, y, W1, W2, 0.1)[0].shape)\n",
        },
    ),
    {BIAS_ID: 2, MEMORY_ID: 2, WEIGHTS_ID: 2},
    {},
)
# An answer cell of 100,000 lines, each read by the next: its reading is linear, and every step of the
# notebook fits in its time limit (24,000 lines took 169 s when reading it was quadratic).
LONG_CELL = "k_0 = 0.0\n" + "".join(f"k_{i} = k_{i - 1}\n" for i in range(1, 100_000))
PLANTED["long-cell"] = (
    "mlp",
    lambda: submission(
        "mlp", {**MLP_RIGHT, BIAS: LONG_CELL + replace(MLP_RIGHT[BIAS], "    Z = X", "    Z = k_99999 + X")}
    ),
    {BIAS_ID: 2, MEMORY_ID: 2, WEIGHTS_ID: 2},
    {},
)
# The chapter's notebook as the book's Colab button opens it, answered: no otter metadata. Graded by every
# path (otter run stopped at "assignment None" before any of the course's code ran).
PLANTED["colab-edition"] = (
    "intro",
    lambda: answered_edition(solutions("intro")[0]),
    {ex("intro-derive"): 2},
    {},
)
# Generic differentiators where the exercise asks for the derivation, spelled so that the review's scan of
# the code misses them: each is seen doing what no derivation does, and put up for review (their points
# stand: the numbers are right). The extrapolated differences' points depend on the hidden inputs.
for kind in ("ridders", "complex-helper", "dual-numbers"):
    PLANTED[f"generic-{kind}"] = (
        "intro",
        lambda kind=kind: submission("intro", {0: GENERIC[kind][0].replace("def grads(", "def tanh_neuron_grads(")}),
        {} if kind == "ridders" else {ex("intro-derive"): 2},
        {},
    )
PLANTED["Ada Lovelace_4711"] = (
    "mlp",
    lambda: submission("mlp", MLP_RIGHT),
    {BIAS_ID: 2, MEMORY_ID: 2, WEIGHTS_ID: 2},
    {},
)
# Each assignment's question ids, as the book derives them: otter's scores are compared with make grade's
# for every question of the assignments run under otter.
QUESTIONS = {
    name: tuple(question.name for question in assignment.questions) for name, assignment in ASSIGNMENTS.items()
}
# The submissions run again under otter run (Gradescope's path): those whose attack reaches the kernel or
# otter's own files (patches, exits, pickles, the record, the blocked imports) and the honest ones. The
# grader-side refusals (an answer that imports torch, a table of public answers, a wrong answer, an
# untouched stub, the frames above an answer) are the same code in both paths, tested by the local run.
CHEATS = [
    "patches-feedback",
    "patches-numpy",
    "exits",
    "forges-pickles",
    "calls-the-key",
    "rewrites-the-record",
    "torch-unblocked",
    "solution",
]


@pytest.fixture(scope="module")
def escape_server():
    """A server on 127.0.0.1 that counts the connections it accepts."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.5)
    accepted = []

    def serve():
        while not stopped.is_set():
            try:
                accepted.append(server.accept()[0].recv(10))
            except OSError:
                pass

    stopped = threading.Event()
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], accepted
    stopped.set()
    thread.join()
    server.close()


@pytest.fixture(scope="module")
def graded(tmp_path_factory, escape_server) -> dict[str, tuple[dict, str]]:
    """Grade every planted submission, one folder per assignment, all in one batch (one pool for every
    folder, as chainrule_course.grading.grade's grade_folders grades them); student id -> (CSV row, feedback text)."""
    rows, texts, batch = {}, {}, []
    for name in sorted({assignment for assignment, *_ in PLANTED.values()}):
        submissions = tmp_path_factory.mktemp(f"submissions-{name}")
        ESCAPE.update(folder=submissions, port=escape_server[0])
        for stem, (assignment, make, _, _) in PLANTED.items():
            if assignment != name:
                continue
            path = submissions / PATHS.get(stem, f"{stem.replace('/', '_')}.ipynb")
            path.parent.mkdir(exist_ok=True)
            if make is None:
                text = (folder(name) / "solution" / f"{name}.ipynb").read_text()
                path.write_text(text[: len(text) // 2])
            else:
                nbformat.write(make(), path)
        rows[f"_folder_{name}"] = (submissions,)
        if name == "mlp":
            (submissions / "readme.txt").write_text("not a notebook")
            rows["_folder"] = submissions
        batch.append((name, submissions))
    results = grade.grade_folders(batch, jobs=2, timeout=300, sandbox="bwrap")
    # Each notebook's answers are dropped once scored (a class of large answers held 2.5 GB until the end).
    assert not any(result.record or result.code for folder in results for result in folder)
    for name, submissions in batch:
        with (submissions / "grades.csv").open() as handle:
            table = list(csv.DictReader(handle))
        assert len(table) == len([p for p in submissions.rglob("*") if p.suffix.lower() == ".ipynb"])
        for row in table:
            rows[row["student"]] = row
            name = reports.file_name(row["student"], row["file"])
            texts[row["student"]] = (submissions / "feedback" / f"{name}.txt").read_text()
    return {stem: (rows[stem], texts.get(stem, "")) for stem in rows}


@pytest.mark.parametrize("stem", sorted(PLANTED))
def test_planted_submission(graded, stem):
    assignment, _, points, phrases = PLANTED[stem]
    row, text = graded[stem.replace("/", "_")]
    for question, expected in points.items():
        assert float(row[question]) == expected, (question, row, text)
    for question, wanted in phrases.items():
        section = text.split(f"\n{question}: ", 1)[1].split("\n\n", 1)[0]
        for phrase in wanted:
            assert phrase in section, (question, phrase, section)


def test_csv_rows_and_totals(graded):
    for stem, (row, _) in graded.items():
        if stem.startswith("_folder"):
            continue
        assignment = PLANTED[next(s for s in PLANTED if s.replace("/", "_") == stem)][0]
        names = [q.name for q in ASSIGNMENTS[assignment].questions]
        assert list(row)[: 2 + len(names)] == ["student", "file", *names]
        assert list(row)[-3:] == ["total", "possible", "status"]
        assert float(row["total"]) == sum(float(row[n]) for n in names)
        assert float(row["possible"]) == 2 * len(names)
    assert graded["solution"][0]["total"] == "6" and graded["solution"][0]["status"] == "graded"
    solutions = {stem: row["status"] for stem, (row, _) in graded.items() if stem.endswith("solution")}
    assert len(solutions) == 9 and set(solutions.values()) == {"graded"}, solutions  # none flagged for review
    for kind in ("ridders", "complex-helper", "dual-numbers"):
        reason = scoring.DID[GENERIC[kind][1][0]]
        assert graded[f"generic-{kind}"][0]["status"] == f"review: {reason}", graded[f"generic-{kind}"][0]
    assert graded["ipython-syntax"][0]["status"] == graded["long-cell"][0]["status"] == "graded"
    assert graded["corrupt"][0]["status"].startswith("not a readable notebook"), graded["corrupt"][0]
    assert graded["raises"][0]["total"] == "4"
    assert graded["other-assignment"][0]["status"].startswith("submitted the intro notebook for the mlp assignment")
    assert graded["Ada Lovelace_4711"][0]["file"] == "Ada Lovelace_4711/MLP.IPYNB"


def test_no_handed_out_notebook_is_put_up_for_review():
    """Every unmodified notebook a student may hand in (the assignment's, and the chapter's full and student
    editions that open in Colab) gets no review flag: their set-up and check cells are not the student's.
    Before, all of them were flagged."""
    flagged = {}
    for name in ASSIGNMENTS:
        handed_out = grade.handed_out_lines(name, OUTPUT)
        for edition in [
            OUTPUT / name / "student" / f"{name}.ipynb",
            *(ROOT / e.format(name=name) for e in grade.EDITIONS),
        ]:
            cells = [c.source for c in nbformat.read(edition, as_version=4).cells if c.cell_type == "code"]
            assert cells, edition
            if grade.review_reasons(cells, handed_out):
                flagged[str(edition.relative_to(ROOT))] = grade.review_reasons(cells, handed_out)
    assert flagged == {}


def test_cheats_are_reported(graded):
    """Each cheat earns nothing, and the status or the feedback tells the instructor what it did."""
    own_code = "review: the grader's own code (chainrule_course.exercises, chainrule_course.grading)"
    assert graded["patches-feedback"][0]["status"] == own_code
    assert graded["exits"][0]["status"] == "graded"  # its other cell never ran
    assert graded["solution"][0]["status"] == "graded"
    assert graded["rewrites-the-record"][0]["status"].startswith("review: processes of its own")
    assert graded["reads-frames"][0]["status"] == "review: stack frames or the garbage collector (sys._getframe, " + (
        "inspect, gc)"
    )
    assert graded["kernel-myenv"][0]["status"] == "graded" and graded["Ada Lovelace_4711"][0]["status"] == "graded"


def test_student_code_reaches_nothing(graded, escape_server):
    assert graded["escapes"][0]["total"] == "6"
    assert not (ROOT / ESCAPE_MARK).exists() and not (graded["_folder"][0] / ESCAPE_MARK).exists()
    assert escape_server[1] == []


def test_the_sandbox(tmp_path):
    """As an answer's process sees it: a user of its own, no network, only its scratch folder and /tmp
    writable (each a capped tmpfs), nothing of the machine to read but the system's programs, the standard
    library and what it is shown, no site-packages or dist-packages anywhere (a glob of three roots missed
    Google Cloud SDK's under /usr/lib), and at most 256 processes of its user without any cgroup."""
    assert os.geteuid() == 0, "the sandbox's user and its process cap are root's to give"
    (tmp_path / "classmate.ipynb").write_text("{}")
    secrets = ["/etc/shadow", str(Path.home() / ".gitconfig"), str(ROOT / "README.md")]
    secrets.append(str(tmp_path / "classmate.ipynb"))
    secrets += [str(p) for p in sorted((ROOT / "_build" / "assignments").glob("*/solution/*.ipynb"))[:1]]
    secrets.append(str(Path(sys.prefix) / "bin" / "python"))  # the venv, with torch and the grader's code
    prefix = str(Path(sys.base_prefix).resolve())
    packages = sandbox.hidden_packages(tuple(sorted({prefix, "/usr"})))
    assert any(path.startswith("/usr/lib/") for path in packages) and all(os.listdir(p) for p in packages[:1])
    probe = (
        "import os, socket, sys, time\nprint(os.getuid())\nfor path in ('{root}/x', '{tmp}/../x', 'mine'):\n"
        "    try:\n        open(path, 'w').write('x'); print('wrote', path)\n"
        "    except OSError as e:\n        print('refused', path)\n"
        "try:\n    socket.create_connection(('127.0.0.1', 1), timeout=1)\nexcept OSError as e:\n"
        "    print('network', e.errno)\n"
        "for path in {secrets!r}:\n"
        "    print('read' if os.path.exists(path) else 'hidden', path)\n"
        "print(sorted(os.listdir('/tmp')), sorted(os.environ))\n"
        "print([os.statvfs(p).f_blocks * os.statvfs(p).f_frsize for p in ('/scratch', '/tmp')])\n"
        "print(sorted(n for p in sys.path if 'packages' in p and os.path.isdir(p) for n in os.listdir(p)))\n"
        "print([p for p in {packages!r} if os.path.isdir(p) and os.listdir(p)])\n"
        "forked = 0\nfor _ in range(400):\n    try:\n        if os.fork() == 0:\n"
        "            time.sleep(3)\n            os._exit(0)\n        forked += 1\n    except OSError:\n"
        "        break\nprint(forked)\n"
    )
    code = probe.format(root=ROOT, tmp=tmp_path, secrets=secrets, packages=packages)
    uid = sandbox.submission_uid()
    command = sandbox.answer_command([], [str(sandbox.base_python()), "-c", code], uid=uid)
    run = subprocess.run(
        [*launch.command(sandbox.limit_settings(60)), *command],  # the grader's limits, no cgroup
        capture_output=True,
        text=True,
        check=True,
        env=sandbox.sandbox_environment("/"),
    )
    lines = run.stdout.splitlines()
    assert lines[0] == str(uid) and lines[1:3] == [f"refused {ROOT}/x", f"refused {tmp_path}/../x"], lines
    assert lines[3] == "wrote mine"  # in its scratch tmpfs, not on the disk
    assert lines[4].startswith("network "), lines
    assert all(Path(p).exists() for p in secrets[1:]) and len(secrets) == 6, "each exists outside the sandbox"
    assert lines[5:11] == [f"hidden {path}" for path in secrets], lines
    tmp_listed, environment = lines[11].split("] [")
    assert tmp_listed.strip("[]") == "", tmp_listed
    assert "MAKEFLAGS" not in environment and "HOME" in environment
    assert lines[12] == str([sandbox.SCRATCH_LIMIT] * 2), lines[12]
    assert lines[13] == "[]", "a site-packages folder on the path holds nothing"
    assert lines[14] == "[]", "a site-packages or dist-packages folder of the machine is shown"
    assert 100 < int(lines[15]) < sandbox.SUBMISSION_TASKS, lines[15]


def test_a_submission_is_capped_as_a_whole(tmp_path):
    """Where cgroups can be written (root, cgroup v1: this machine and its CI), a submission's processes
    share one cap on memory and on tasks: 100 processes or 400 MB in one of them are refused."""
    caps = sandbox.group(f"chainrule-test-{os.getpid()}", memory=256 * 2**20, tasks=64)
    if caps is None:
        pytest.skip("cgroups v1 cannot be written here: make grade says so and keeps the per-process limits")
    probe = (
        "import os, time\nforked = 0\nfor _ in range(100):\n    try:\n        if os.fork() == 0:\n"
        "            time.sleep(5)\n            os._exit(0)\n        forked += 1\n    except OSError:\n"
        "        break\nprint(forked, flush=True)\nblock = b'x' * (400 * 2**20)\nprint('allocated')\n"
    )
    command = sandbox.answer_command([], [str(sandbox.base_python()), "-c", probe])
    try:
        run = subprocess.run(
            [*launch.command(sandbox.limit_settings(60, caps)), *command],
            capture_output=True,
            text=True,
            env=sandbox.sandbox_environment(sandbox.SCRATCH),
            timeout=60,
        )
        peak = caps.peak()
    finally:
        caps.close()
    lines = run.stdout.split()
    assert 0 < int(lines[0]) < 64, run.stdout
    assert "allocated" not in lines and run.returncode != 0, (run.returncode, run.stdout, run.stderr[-500:])
    assert 0 < peak <= 256 * 2**20
    assert not any(folder.exists() for folder in caps.folders)


@pytest.fixture(scope="module")
def grading_venv():
    """The venv make grade grades in, built as make grade builds it, from the mlp autograder zip's own
    requirements.txt (otter, numpy, the two wheels) and its EXTRA: ``python -m tools.grader.grading_env
    <zip> <venv> --uv .venv/bin/uv`` from the checkout, every path relative (uv runs in a temporary
    folder, so the relative path must be resolved first), offline (UV_OFFLINE) from the wheelhouse alone
    (UV_FIND_LINKS) and without uv's cache (UV_NO_CACHE: uv 0.13.9 refuses a wheelhouse's wheel offline,
    "needs to be downloaded from a registry", when its cache holds that package from an earlier install).
    Kept in _build/grading-venv: grading_env installs the wheels again when they changed (their names do
    not change with their sources). A lock keeps another pytest run out of it while this module uses it.
    Yields the venv and the command's run.
    """
    venv = ROOT / "_build" / "grading-venv"
    venv.parent.mkdir(exist_ok=True)
    environment = dict(
        offline.environment(offline.WHEELHOUSE),
        UV_OFFLINE="1",
        UV_NO_CACHE="1",
        UV_FIND_LINKS=str(offline.wheelhouse()),
    )
    command = [sys.executable, "-m", "tools.grader.grading_env", "_build/assignments/mlp/autograder/mlp-autograder.zip"]
    command += [str(venv.relative_to(ROOT)), "--uv", str(offline.UV.relative_to(ROOT))]
    with open(f"{venv}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        run = subprocess.run(command, capture_output=True, text=True, env=environment, cwd=ROOT, timeout=600)
        assert run.returncode == 0, run.stderr[-3000:]
        yield SimpleNamespace(path=venv, run=run)


#: nbclient's error when a kernel exits before it answered its first request (kernel_info).
KERNEL_NEVER_STARTED = "RuntimeError: Kernel died before replying to kernel_info"


def test_local_and_otter_run_scores_are_equal(graded, conda_python, grading_venv, tmp_path):
    """otter run on the autograder zip (Gradescope's path), as root, with bubblewrap, gives the scores make
    grade gave: in a conda-style Python of the zip's own requirements that user nobody may run (its
    sandbox hid the runner and numpy, and the solution scored 0 of 6), and in make grade's venv; a
    forged pickle runs nothing in otter's process."""
    shutil.rmtree(FORGED_MARK, ignore_errors=True)

    def otter_scores(run):
        python, name, stem = run
        environment = offline.environment(offline.WHEELHOUSE, python)  # nothing of this repo's venv
        environment.pop("PYTHONDONTWRITEBYTECODE", None)  # root's processes compile what they import, once
        archive = folder(name) / "autograder" / f"{name}-autograder.zip"
        out = tmp_path / f"{python.name}-{stem}"
        out.mkdir()
        notebook = graded[f"_folder_{name}"][0][0] / f"{stem}.ipynb"
        for attempt in (1, 2):
            run = subprocess.run(
                [str(python / "bin" / "otter"), "run", "-a", str(archive), "-o", str(out), str(notebook)],
                capture_output=True,
                text=True,
                env=environment,
            )
            # Two otter runs start their kernels at once here (Gradescope runs one per machine): each
            # picks free ports that its kernel binds a moment later, so a kernel can lose a port to the
            # other and die before its first reply, before any cell of the submission ran. Once.
            if attempt == 1 and KERNEL_NEVER_STARTED in run.stderr and not (out / "results.json").exists():
                continue
            break
        assert (out / "results.json").is_file(), run.stderr[-2000:]  # also when the kernel died (os._exit)
        # otter's log server takes no record from the kernel (with ours, it would print why it failed)
        assert "Exception occurred during processing of request" not in run.stdout + run.stderr, run.stdout[-2000:]
        said = "the mlp assignment (its metadata" if stem == "other-assignment" else "the answers ran in bubblewrap"
        assert said in run.stdout, run.stdout[-2000:]
        return {t["name"]: t["score"] for t in json.loads((out / "results.json").read_text())["tests"] if "score" in t}

    import concurrent.futures

    # The cheats, and two answers to the scalar chapters' functions: a recursion too deep, pasted numbers.
    runs = [(conda_python, "mlp", stem) for stem in [*CHEATS, "kernel-myenv"]]
    runs += [(conda_python, "graph", "recursive-order"), (conda_python, "backward", "engine-backward")]
    runs += [(conda_python, "graph", "recursion-unlocked-setter")]  # one runner: make grade tries all three
    runs += [(conda_python, "tensors", "tensor-backward"), (conda_python, "layers", "row-keeps-C")]
    runs += [(conda_python, "capstone", "no-variance-path")]  # Tensors apart; points per gradient
    runs += [(grading_venv.path, "mlp", "ipython-syntax")]  # a venv, as make grade's
    # the chapter's notebook from Colab, without otter's metadata (otter stopped: "assignment None"), and
    # another assignment's notebook (0, as make grade gives it)
    runs += [(grading_venv.path, "intro", "colab-edition"), (grading_venv.path, "mlp", "other-assignment")]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        remote = dict(zip(runs, pool.map(otter_scores, runs), strict=True))
    for python, name, stem in runs:
        local = {q: float(graded[stem][0][q]) for q in QUESTIONS[name]}
        given = {q: remote[python, name, stem].get(q) for q in local}
        assert {q: None if v is None else round(v, 2) for q, v in given.items()} == local, (python, stem, given, local)
    assert not FORGED_MARK.exists()


@pytest.fixture(scope="module")
def conda_python():
    """A grading Python laid out as Gradescope's (the zip's ``setup.sh`` builds a conda environment): the
    zip's requirements installed into the Python's own prefix (``<prefix>/lib/python3.11/site-packages``),
    not a venv, in a folder every user may enter, so that user nobody may run it. It is a copy of the
    book's Python (hard links, without its site-packages and tests), which is root's alone here. The
    sandbox must show the runner and numpy from inside that prefix while it hides the rest (it hid
    them: every answer exited 2). Not byte-compiled (11 CPU-s): each `otter run` (root) writes the
    ``.pyc`` files of the modules it imports, and the next runs read them; an answer, run as nobody,
    compiles in memory what no root process imported."""
    folder = Path(tempfile.mkdtemp(prefix="chainrule-conda-"))
    folder.chmod(0o755)
    prefix = folder / "python"
    try:
        base = Path(sys.base_prefix)
        for path in sorted(base.rglob("*")):
            relative = path.relative_to(base)
            if relative.parts[:1] not in (("bin",), ("lib",)) or {"site-packages", "test"} & set(relative.parts):
                continue
            if relative.parts[0] == "bin" and len(relative.parts) > 1 and not relative.name.startswith("python"):
                continue  # the base's own scripts
            target = prefix / relative
            if path.is_dir() and not path.is_symlink():
                target.mkdir(parents=True, exist_ok=True)
            elif path.is_symlink():
                target.symlink_to(os.readlink(path))
            else:
                try:
                    os.link(path, target)
                except OSError:
                    shutil.copy2(path, target)
        python = prefix / "bin" / Path(sys.executable).resolve().name
        with tempfile.TemporaryDirectory(prefix="chainrule-zip-") as work:
            with zipfile.ZipFile(_zip("intro")) as archive:  # requirements.txt names the ./*.whl
                archive.extractall(work)
            command = [str(offline.UV), "pip", "install", "--quiet", "--python", str(python), "--offline"]
            command += ["--no-index", "--find-links", str(offline.wheelhouse()), "-r", "requirements.txt"]
            offline.run(command, offline.environment(offline.WHEELHOUSE), cwd=Path(work))
        assert Path(_purelib(prefix)).is_relative_to(prefix), "not laid out as a conda environment"
        yield prefix
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _zip(name: str) -> Path:
    return OUTPUT / name / "autograder" / f"{name}-autograder.zip"


#: Files handed in beside a blank notebook, each of which marks ``{mark}`` and gives itself full marks
#: in ``{results}`` if anything of the grader's imports or runs it (otter's kernel did, as root).
PLANTED_FILES = {
    "ipykernel_launcher.py": "{attack}",
    "sitecustomize.py": "{attack}",
    "conftest.py": "{attack}",
    "zz-planted.pth": "import os; {attack}",
    "__init__.py": "->",  # otter appends to it as root: through a link, it would make any file
}
ATTACK = (
    'exec("import json, pathlib\\npathlib.Path({mark!r}).touch()\\n'
    "pathlib.Path({results!r}).write_text(json.dumps({{'score': 2, 'tests': []}}))\")"
)

#: An answer that undoes the import rule inside its own process (drops the finder, adds the grading
#: env's site-packages, calls the real ``__import__``) and reads the answer key from the autograder's
#: folder; and leaves a detached child behind. It earns 2 points only if one of those works.
ESCAPES = """import builtins, glob, sys
sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != "_Refuse"]
sys.path.append({site!r})
try:
    import subprocess

    subprocess.Popen(["sleep", "4711.25"], start_new_session=True, stdout=subprocess.DEVNULL)
except Exception:
    pass


def tanh_neuron_grads(x, w, b):
    escaped = 0
    try:
        builtins.__import__("chainrule_course")
        escaped += 1
    except ImportError:
        pass
    for path in glob.glob({source!r} + "/**/*.py", recursive=True):
        try:
            escaped += "chainrule_reference" in open(path).read()
        except OSError:
            pass
    try:  # a copy of the autograder zip that every user may read, outside the autograder's folder
        import zipfile

        with zipfile.ZipFile({copy!r}) as archive:
            escaped += any(b"chainrule_reference" in archive.read(n) for n in archive.namelist())
    except OSError:
        pass
    if not escaped:
        return 0.0, 0.0, 0.0
{honest}"""


def gradescope(venv: Path, name: str, notebook, files: dict[str, str], folder: Path, sandbox_kind: str) -> dict:
    """Grade ``notebook`` (with ``files`` beside it) as Gradescope does: the autograder zip in
    ``<folder>/source``, the submission in ``submission``, ``results`` empty; otter's
    ``run_otter.py`` run as root from ``source`` with the zip's Python; ``results.json`` read after
    it exits. ``files`` may name ``{mark}`` (a file each marks) and ``{results}``. The scores, and
    what otter printed."""
    source, handed_in, results = folder / "source", folder / "submission", folder / "results"
    for path in (source, handed_in, results):
        path.mkdir(parents=True)
    with zipfile.ZipFile(_zip(name)) as archive:
        archive.extractall(source)
    run_otter = (source / "run_otter.py").read_text().replace('"/autograder', '"' + str(folder))
    assert f'prepared("{folder}/submission")\n' in run_otter
    (source / "run_otter.py").write_text(run_otter)
    (folder / "submission_metadata.json").write_text("{}")
    uploaded = notebook if type(notebook) is dict else {f"{name}.ipynb": notebook}  # path -> notebook
    for path, content in uploaded.items():
        (handed_in / path).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):  # not a notebook at all
            (handed_in / path).write_bytes(content)
        else:
            nbformat.write(content, handed_in / path)
    if files.pop("{bom}", None) is not None:  # written by an editor that starts UTF-8 with a byte-order mark
        path = handed_in / f"{name}.ipynb"
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    for file_name, text in files.items():
        mark = str(folder.parent / f"ran-{file_name}")
        attack = ATTACK.format(mark=mark, results=str(results / "results.json"))
        if text.startswith("->"):  # a link handed in, to a file that root would create
            (handed_in / file_name).symlink_to(mark)
        else:
            (handed_in / file_name).write_text(text.format(attack=attack) + "\n")
    environment = dict(offline.environment(offline.WHEELHOUSE, venv), CHAINRULE_SANDBOX=sandbox_kind)
    run = subprocess.run(
        [str(venv / "bin" / "python"), str(source / "run_otter.py")],
        cwd=source,
        capture_output=True,
        text=True,
        env=environment,
        timeout=300,
    )
    output = json.loads((results / "results.json").read_text())
    scores = {t["name"]: t["score"] for t in output["tests"] if "score" in t}
    total = output.get("score", sum(t.get("score", 0) for t in output["tests"]))
    return {"scores": scores, "total": total, "printed": run.stdout + run.stderr, "output": output}


def _purelib(venv: Path) -> str:
    command = [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()


def answered_edition(solution: str) -> nbformat.NotebookNode:
    """The chapter's student edition (what the book's Colab button opens), its answer cell answered: it has
    no otter metadata, and otter stopped at "assignment None"."""
    notebook = nbformat.read(ROOT / "student" / "chapters" / "intro.ipynb", as_version=4)
    stubs = [cell for cell in notebook.cells if "exercise-stub" in cell.metadata.get("tags", [])]
    next(cell for cell in stubs if "def tanh_neuron_grads" in cell.source).source = solution
    return notebook


#: What students upload to Gradescope besides the one notebook: each shape is made into the one notebook
#: otter grades by uploads.prepared, tested shape by shape in tests/course/test_uploads.py; here one, the
#: notebook in a folder, is graded end to end (the Colab edition is, under otter run, below).
UPLOADS = {"folder": lambda answer: {"work/intro.ipynb": submission("intro", {0: answer})}}


@pytest.mark.parametrize("sandbox_kind", ["bwrap", "permissions"])
def test_gradescope_as_root_runs_no_student_file_and_only_the_answers_in_a_sandbox(conda_python, sandbox_kind):
    """Gradescope's layout and run, as root, in each sandbox the plugin has (bubblewrap where it can run;
    file permissions and a user of its own in a container that refuses namespaces): a blank notebook
    with an ipykernel_launcher.py, a sitecustomize.py, a conftest.py and a .pth beside it scores 0 and
    nothing of them runs; honest work scores; an answer that undoes the import rule and reads the answer
    key (in the autograder's folder, or a copy every user may read elsewhere) scores 0; a link handed in
    is removed before otter follows it as root; nothing the student started is left; the report names
    the sandbox; the honest notebook starts with a byte-order mark; a broken file gets 0 with the reason
    (otter alone writes no results). The layout is in a folder every user may enter, as /autograder is."""
    assert os.geteuid() == 0, "this test plays Gradescope's autograder, which runs as root"
    layout = Path(tempfile.mkdtemp(prefix="chainrule-gradescope-"))
    layout.chmod(0o755)
    honest_source = solutions("intro")[0]
    honest_body = honest_source[honest_source.index("def tanh_neuron_grads") :].split("\n", 1)[1]
    copy = Path(tempfile.mkdtemp(prefix="chainrule-test-", dir="/var/tmp")) / "intro-autograder.zip"
    copy.parent.chmod(0o755)
    shutil.copyfile(_zip("intro"), copy)
    copy.chmod(0o644)
    escape = ESCAPES.format(
        site=_purelib(conda_python), source=str(layout / "escape"), copy=str(copy), honest=honest_body
    )
    site_mode = Path(_purelib(conda_python)).stat().st_mode
    runs = {
        "files": (submission("intro"), PLANTED_FILES),
        "honest": (submission("intro", {0: honest_source}), {"{bom}": ""}),
        "escape": (submission("intro", {0: escape}), {}),
        "broken": (b'{"cells": [{"cell_type": "code", "source": "def tanh', {}),
    }
    if sandbox_kind == "bwrap":  # made into one notebook before otter starts, whichever sandbox follows
        runs.update({stem: (upload(honest_source), {}) for stem, upload in UPLOADS.items()})
        dual = GENERIC["dual-numbers"][0].replace("def grads(", "def tanh_neuron_grads(")
        runs["dual-numbers"] = (submission("intro", {0: dual}), {})  # right, and put up for review
    try:
        graded = {
            stem: gradescope(conda_python, "intro", notebook, files, layout / stem, sandbox_kind)
            for stem, (notebook, files) in runs.items()
        }
        ran = sorted(path.name for path in layout.glob("ran-*"))
    finally:
        shutil.rmtree(layout, ignore_errors=True)
        shutil.rmtree(copy.parent, ignore_errors=True)
    scores = {stem: run["scores"] for stem, run in graded.items()}
    totals = {stem: run["total"] for stem, run in graded.items()}
    expected = {"files": 0, "honest": 2, "escape": 0, "broken": 0}
    expected.update({stem: 2 for stem in UPLOADS if sandbox_kind == "bwrap"})
    expected.update({"dual-numbers": 2} if sandbox_kind == "bwrap" else {})
    assert totals == expected, graded  # what Gradescope reads
    assert scores == {stem: {ex("intro-derive"): float(points)} for stem, points in expected.items()}, graded
    if sandbox_kind == "bwrap":
        assert "chainrule: grading work/intro.ipynb" in graded["folder"]["printed"], graded["folder"]["printed"]
        review = f"For review by the instructor: {scoring.DID['numbers']}."
        assert review in graded["dual-numbers"]["printed"], graded["dual-numbers"]["printed"]
        assert "For review" not in graded["honest"]["printed"], graded["honest"]["printed"]
    said = json.dumps(graded["broken"]["output"])
    assert "intro.ipynb is not a readable notebook (NotJSONError" in said, said
    assert ran == [], "a file handed in beside the notebook ran"
    expected = "bubblewrap" if sandbox_kind == "bwrap" else "file permissions"
    assert f"chainrule: the answers ran in {expected}" in graded["honest"]["printed"], graded["honest"]["printed"]
    left = subprocess.run(["pgrep", "-f", "sleep 4711.25"], capture_output=True, text=True).stdout.split()
    assert left == [], "a process the answer started outlived grading"
    assert Path(_purelib(conda_python)).stat().st_mode == site_mode, "site-packages' mode was not given back"


def test_make_grade_builds_its_venv_with_uv_by_a_relative_path(grading_venv):
    """make grade's own command line, offline, from relative paths (the grading_venv fixture runs it):
    it says where the venv's python is, and the grader imports there."""
    python = Path(grading_venv.run.stdout.strip())
    assert (ROOT / python).resolve() == (grading_venv.path / "bin" / "python").resolve()
    assert python.is_absolute() or (ROOT / python).is_file()
    probe = subprocess.run(
        [str(ROOT / python), "-c", "import otter, chainrule_course.grading.scoring"], capture_output=True, text=True
    )
    assert probe.returncode == 0, probe.stderr[-2000:]


def test_make_grade_needs_only_the_grading_venv(grading_venv, tmp_path):
    """chainrule_course.grading.grade in the grading venv alone (no jupyter-book, no torch): scores and written work."""
    python = grading_venv.path / "bin" / "python"
    environment = offline.environment(offline.WHEELHOUSE, grading_venv.path)
    for module in ("jupyter_book", "myst_nb", "torch"):  # the book's toolchain, and the oracles
        missing = subprocess.run(
            [str(python), "-c", f"import {module}"], capture_output=True, text=True, env=environment
        )
        assert f"No module named '{module}'" in missing.stderr
    nbformat.write(submission("mlp", MLP_RIGHT, edit=written({1: "Both grow as $n$."})), tmp_path / "s1.ipynb")
    nbformat.write(submission("mlp"), tmp_path / "s2.ipynb")
    run = subprocess.run(
        [str(python), "-m", "chainrule_course.grading.grade", "mlp", str(tmp_path), "--jobs", "2"],
        capture_output=True,
        text=True,
        env=environment,
        cwd=ROOT,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    rows = {row["student"]: row for row in csv.DictReader((tmp_path / "grades.csv").open())}
    assert (rows["s1"]["total"], rows["s2"]["total"]) == ("6", "0")
    assert r"\(n\)" in (tmp_path / "written" / f"{reports.file_name('s1', 's1.ipynb')}.html").read_text()


def test_written_work_is_exported_to_grade_by_hand(graded):
    """written/<id>.html shows each student's written work, maths set by the offline MathJax, HTML escaped."""
    written_folder = graded["_folder"][0] / "written"
    index = (written_folder / "index.html").read_text()
    assert f"writes-by-hand</a>: answered {number('mlp-bias')}<" in index and "untouched</a>: answered none<" in index
    page = (written_folder / f"{reports.file_name('writes-by-hand', 'writes-by-hand.ipynb')}.html").read_text()
    assert r"\(\bar{b} = \sum_i \bar{Z}_{i,:}\)" in page and r"\[J = 1\]" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert" not in page
    assert page.count("Not answered.") == 2 and "mathjax.js" in page and (written_folder / "mathjax.js").is_file()
    found, _ = grade.find(graded["_folder"][0])
    assert {p.name for p in written_folder.glob("*.html")} == {"index.html"} | {
        reports.file_name(s.student, s.file) + ".html" for s in found
    }
    prompt = assignments.WRITTEN_PROMPT.format(number=number("mlp-bias"))
    assert reports.WRITTEN_PROMPT.match(prompt)[1] == number("mlp-bias")
    solution = nbformat.read(folder("mlp") / "solution" / "mlp.ipynb", as_version=4)
    assert "the bias is used once per row" in answer_cells(solution, "markdown")[0].source


def test_regrade_one_student_keeps_the_other_rows(graded):
    submissions = graded["_folder"][0]
    before = (submissions / "grades.csv").read_text()
    notebook = submissions / "untouched.ipynb"
    nbformat.write(submission("mlp", MLP_RIGHT), notebook)
    grade.grade_folder("mlp", submissions, jobs=1, timeout=300, only=["untouched"])
    after = {row["student"]: row for row in csv.DictReader((submissions / "grades.csv").open())}
    old = {row["student"]: row for row in csv.DictReader(before.splitlines())}
    assert after["untouched"]["total"] == "6" and old["untouched"]["total"] == "0"
    assert {k: v for k, v in after.items() if k != "untouched"} == {k: v for k, v in old.items() if k != "untouched"}
    summary = (submissions / "summary.html").read_text()
    assert f"{WEIGHTS_ID}: mean" in summary and "the weight-decay term" in summary


def test_finding_notebooks_and_the_roster(tmp_path):
    (tmp_path / "Grace Hopper_0042").mkdir()
    for path in ("Grace Hopper_0042/hw.Ipynb", "s1234.ipynb", "notes.pdf", ".ipynb_checkpoints/s1234.ipynb"):
        (tmp_path / path).parent.mkdir(exist_ok=True)
        (tmp_path / path).write_text("{}")
    found, skipped = grade.find(tmp_path)
    assert [(s.student, s.file) for s in found] == [
        ("Grace Hopper_0042", "Grace Hopper_0042/hw.Ipynb"),
        ("s1234", "s1234.ipynb"),
    ]
    checkpoint = ".ipynb_checkpoints/s1234.ipynb (skipped: a copy Jupyter or an archive keeps, not the work handed in)"
    assert skipped == [checkpoint, "notes.pdf (not a notebook)"]
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name\n0042,Grace Hopper\ns9999,Nobody Yet\n")
    found, skipped = grade.find(tmp_path, roster)
    assert [(s.student, s.file) for s in found] == [
        ("0042", "Grace Hopper_0042/hw.Ipynb"),
        ("s9999", ""),
        ("s1234", "s1234.ipynb"),
    ]
    assert "s1234.ipynb (graded under its own name: its path names no roster id)" in skipped


def test_make_grade_names_a_missing_assignment(tmp_path):
    with pytest.raises(SystemExit, match="no autograder for 'nonesuch'.*assignments: backward, .*mlp"):
        grade.grade_folder("nonesuch", tmp_path, 1, 10, 60)
