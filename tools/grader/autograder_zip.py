"""The autograder zip that ``otter assign`` writes, made to grade as ``make grade`` does.

:mod:`tools.grader.assignments` writes each assignment and hands its zip's files (name -> bytes) to the
edits here, in order (:func:`rewrite_zip`):

- :func:`pin_environment` -- the locked grading environment (``requirements.txt``, ``environment.yml``)
  and the engine's and the course's wheels, built from this checkout;
- :func:`with_grader_files` -- what only the grader reads: each question's parts, reference and allowed
  modules, the written work's points, the scripts with the grading Python where user nobody may run it
  and the upload made into one notebook before otter starts;
- :func:`check_autograder` -- the reference solution graded as an answer is: full marks, or the build stops.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import zipfile
from pathlib import Path

from tools import lock
from tools.book.questions import REFERENCE_PRELUDE, Assignment, AssignmentError, allowed, question_parts

#: Points of a question's written work (its derivation or reasoning), graded by hand.
WRITTEN_POINTS = 1


#: Where the autograder zip installs its Python on Gradescope: otter's setup.sh puts Miniforge in
#: /root/miniforge3, and /root is root's alone (0700), so user nobody could not run the answers there.
GRADING_PYTHON = "/opt/miniforge3"


def unprivileged_python(script: str) -> str:
    """otter's ``setup.sh`` or ``run_autograder`` with Miniforge in :data:`GRADING_PYTHON`, readable by every user."""
    if "/root/miniforge3" not in script:
        raise AssignmentError("otter's autograder scripts no longer install Miniforge in /root/miniforge3")
    script = script.replace("mamba_install.sh -b\n", f"mamba_install.sh -b -p {GRADING_PYTHON}\n")
    script = script.replace("/root/miniforge3", GRADING_PYTHON)
    if "mamba shell init" in script:
        script += (
            f"\n# the answers run as nobody: every user may run the grading Python\nchmod -R a+rX {GRADING_PYTHON}\n"
        )
    return script


def upload_prepared_first(script: str) -> str:
    """otter's ``run_otter.py`` with the upload made into the one notebook otter grades before otter starts:
    links removed, byte-order marks dropped, a notebook in a folder or without otter's metadata
    graded, several different notebooks or none refused with what to upload
    (:func:`chainrule_course.grading.uploads.prepared`)."""
    found = re.search(r'(?m)^(\s*)run_autograder\("([^"]+)"\)', script)
    if found is None:
        raise AssignmentError('otter\'s run_otter.py no longer calls run_autograder("<folder>")')
    indent, folder = found.groups()
    first = f"{indent}from chainrule_course.grading.uploads import prepared\n\n"
    first += f'{indent}prepared("{folder}/submission")\n'
    return script[: found.start()] + first + script[found.start() :]


def with_grader_files(files: dict[str, bytes], assignment: Assignment) -> None:
    """Add what only the grader reads to the autograder zip's ``files`` (name -> bytes; see :func:`rewrite_zip`).

    - in each question's test file, for ``chainrule_course.grading.scoring`` (otter ignores them; the
      student's copies of the public tests do not carry them): its parts and reference
      solution (:func:`question_parts`) and the modules its answer cells may import (:func:`allowed`);
    - ``written.json``, the questions with written work graded by hand, which ``make grade``
      exports (:mod:`chainrule_course.grading.grade`);
    - ``setup.sh`` and ``run_autograder`` with the grading Python where user nobody may run it
      (:func:`unprivileged_python`): on Gradescope the answers run as nobody;
    - ``otter_config.json`` without otter's ``assignment_name`` (the plugin's entry names it).
    """
    written = [
        {"name": q.written_name, "number": q.number, "points": WRITTEN_POINTS}
        for q in assignment.questions
        if q.solution_text
    ]
    files["written.json"] = json.dumps(written, indent=1).encode()
    for name in ("setup.sh", "run_autograder"):
        files[name] = unprivileged_python(files[name].decode()).encode()
    files["run_otter.py"] = upload_prepared_first(files["run_otter.py"].decode()).encode()
    # otter checks its assignment_name before any plugin runs, and stops at a notebook without the
    # metadata (the chapter's from Colab, a fresh one): the plugin and uploads check the name instead.
    config = json.loads(files["otter_config.json"])
    if config.pop("assignment_name", None) != assignment.name:
        raise AssignmentError(
            f"otter assign no longer writes assignment_name: {assignment.name} into otter_config.json"
        )
    files["otter_config.json"] = json.dumps(config, indent=2).encode()
    for question in assignment.questions:
        parts, reference = question_parts(question, assignment.chapter)
        lines = [
            "",
            "# Written by make assignments for chainrule_course.grading.scoring: the parts it gives points to",
            "# separately, the reference solution it finds the inputs with, and what an answer may not use.",
            f"chainrule_parts = {parts!r}",
            f"chainrule_reference = {reference!r}",
            f"chainrule_allowed = {allowed(question)!r}",
        ]
        name = f"tests/{question.name}.py"
        if name not in files:
            raise AssignmentError(f"the autograder zip of {assignment.name} has no {name}")
        files[name] = files[name].rstrip(b"\n") + "\n".join(lines).encode() + b"\n"


def pinned_requirements(wheels: tuple[Path, ...], where: str) -> list[str]:
    """The grading environment, as local grading has it: the whole tree of otter-grader[grading], nbconvert,
    nbclient and numpy at the versions of tools/grader/requirements.lock (``make lock``; the book's), each with
    its files' sha256, then the engine's and the course's wheels with theirs: built here, they have no
    published hash, so it is the sha256 of the file that goes into the zip beside them."""
    locked = lock.entries(lock.GRADING)
    return [
        *locked.values(),
        *(f"{where}{wheel.name} --hash=sha256:{hashlib.sha256(wheel.read_bytes()).hexdigest()}" for wheel in wheels),
    ]


def rewrite_zip(archive_path: Path, *edits) -> None:
    """Read the zip at ``archive_path`` into a dict (name -> bytes), let each edit change it, write it back once."""
    with zipfile.ZipFile(archive_path) as archive:
        files = {name: archive.read(name) for name in archive.namelist()}
    for edit in edits:
        edit(files)
    with zipfile.ZipFile(archive_path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)


def pin_environment(files: dict[str, bytes], wheels: tuple[Path, ...]) -> None:
    """Change the autograder zip's ``files`` so that Gradescope grades as ``make grade`` does.

    otter writes ``python=3.13``, an unpinned numpy and a playwright install (for PDFs,
    which are off). The zip gets this Python's minor version, the locked tree of
    :func:`pinned_requirements` (hashes checked by pip: any line with a hash makes pip check every one),
    and the wheels built from this checkout, not a git branch: ``requirements.txt``
    (paths relative to the unzipped folder) for a venv, ``environment.yml`` for Gradescope.
    """
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    pip = "\n".join(f"      - {line}" for line in pinned_requirements(wheels, "/autograder/source/"))
    environment = (
        f"name: otter-env\nchannels:\n  - conda-forge\ndependencies:\n  - python={python}\n  - pip\n"
        f"  - jupyter_server\n  - pip:\n{pip}\n"
    )
    setup = files["setup.sh"].decode()
    files["setup.sh"] = "\n".join(line for line in setup.splitlines() if "playwright" not in line).encode() + b"\n"
    files["environment.yml"] = environment.encode()
    files["requirements.txt"] = ("\n".join(pinned_requirements(wheels, "./")) + "\n").encode()
    files.update((wheel.name, wheel.read_bytes()) for wheel in wheels)


def check_autograder(files: dict[str, bytes], assignment: Assignment) -> None:
    """Grade the reference solution as a notebook's answers are graded; every test must give it full marks.

    It runs every test, public and hidden (with a fresh secret), on the reference
    (:func:`chainrule_course.grading.scoring.inputs`), runs the reference's cell apart as an answer cell
    runs, with only what its exercise allows (:func:`chainrule_course.grading.scoring.record_apart`), and
    scores it (:func:`chainrule_course.grading.scoring.score`), so a check that fails on its own solution,
    a solution that needs more than its exercise allows, or an input the grader cannot send to an
    answer stops the build.
    """
    from chainrule_course.grading import apart, scoring

    tests = {Path(name).name: data.decode() for name, data in files.items() if name.startswith("tests/")}
    secret = os.urandom(32)
    try:
        inputs = scoring.inputs(tests, secret)
    except scoring.Unreadable as error:
        raise AssignmentError(f"the autograder of {assignment.name} cannot be used: {error}") from None
    cells = [
        str(scoring.settings(source).get(scoring.REFERENCE, "")).removeprefix(REFERENCE_PRELUDE)
        for source in tests.values()
    ]
    record = scoring.record_apart(cells, inputs, lambda source, rule, values: apart.Answer(source, rule, values))
    for test_file in scoring.score(tests, record, "", secret).values():
        wrong = [result.message for result in test_file.test_case_results if not result.passed]
        if wrong:
            raise AssignmentError(f"{assignment.name}: the reference solution fails {test_file.name}: {wrong[0]}")
