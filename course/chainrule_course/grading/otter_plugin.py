"""The otter-grader plugin that makes ``otter run`` (and Gradescope) grade as ``make grade`` does.

The assignments' ``otter_config.json`` names it. otter would run the student's whole notebook
in a kernel and score what that kernel reports; the plugin runs none of the student's code
there and scores each answer run apart instead (:func:`chainrule_course.grading.scoring.record_apart`):

- when the plugin starts, before any student code runs, it reads the tests (``./tests``);
- ``before_grading`` removes a ``.OTTER_LOG`` that came with the submission, which otter
  would otherwise unpickle in this process;
- ``before_execution`` chooses the inputs (:func:`chainrule_course.grading.scoring.inputs`, the
  hidden tests' with a secret of this process), keeps the notebook's code cells as text and
  hands otter a notebook without them: otter's kernel runs nothing of the student's;
- ``after_grading`` runs each answer's cell in a process of its own, with only what its
  exercise allows, as user nobody where otter runs as root (Gradescope does), and puts in the
  scores that :func:`chainrule_course.grading.scoring.score` computes here; the tests, the reference
  solution and otter's results are then readable by root alone. Where student code
  would have to run as root (nobody cannot run this Python), every part gets 0 with a status
  that says why, so that the instructor sees it at once.

otter reads two things from its kernel with ``pickle``; the plugin makes it unpickle neither
(:mod:`chainrule_course.compat.patches`).
"""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import sys
from pathlib import Path

from otter.plugins import AbstractOtterPlugin

from ..compat import patches
from . import apart, scoring

OTTER_LOG = ".OTTER_LOG"  # otter.check.notebook.OTTER_LOG_FILENAME
NOBODY = 65534


def unprivileged() -> tuple[dict, str]:
    """How to start an answer's process so that it is not root: Popen's arguments, and "" or why it cannot be."""
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return {}, ""
    as_nobody = {"user": NOBODY, "group": NOBODY, "extra_groups": [], "cwd": "/", "env": {"HOME": "/tmp"}}
    try:
        probe = subprocess.run([*apart.python_command()[:3], "-c", "pass"], capture_output=True, **as_nobody)
        code = probe.returncode
    except OSError as error:
        code = str(error)
    if code != 0:
        return {}, (
            f"not graded: student code would run as root here, because user nobody cannot run {sys.executable} "
            f"({code}); install the grading Python where every user may enter (not under /root)"
        )
    return as_nobody, ""


class TrustedScores(AbstractOtterPlugin):
    def __init__(self, submission_path, submission_metadata, plugin_config):
        super().__init__(submission_path, submission_metadata, plugin_config)
        # otter also makes its plugins while it writes the autograder zip, with no submission.
        folder = Path(submission_path).parent / "tests" if submission_path else None
        self.tests = {path.name: path.read_text() for path in sorted(folder.glob("*.py"))} if folder else {}
        self.cells: list[str] = []

    def before_grading(self, config):
        """Remove a ``.OTTER_LOG`` beside the submission: otter unpickles that file next, in this process."""
        log = Path(OTTER_LOG)
        if log.is_symlink() or log.is_file():
            log.unlink()
        elif log.exists():
            shutil.rmtree(log)
        config.grade_from_log = False

    def before_execution(self, submission):
        self.secret = os.urandom(32)
        self.inputs = scoring.inputs(self.tests, self.secret)
        self.cells = [
            cell.get("source", "") if isinstance(cell.get("source"), str) else ""
            for cell in submission.get("cells", [])
            if isinstance(cell, dict) and cell.get("cell_type") == "code"
        ]
        patches.outlive_the_kernel()
        patches.read_nothing_from_the_kernel()
        empty = copy.deepcopy(submission)
        empty.cells = []  # otter's kernel runs none of the student's code
        # ... in the course's kernel, whatever the student's machine called theirs (conda's "myenv")
        empty.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
        return empty

    def after_grading(self, results):
        popen, why_not = unprivileged()
        if popen and self.submission_path:  # as root: the tests and the reference are root's alone
            folder = Path(self.submission_path).resolve().parent
            for kept in (folder / "tests", folder.parent / "source", folder.parent / "results"):
                if kept.is_dir():
                    os.chmod(kept, 0o700)
        data = None
        if not why_not:

            def started(source, rule, values):
                return apart.Answer(source, rule, values, popen=dict(popen))

            data = scoring.record_apart(self.cells, self.inputs, started)
        results.results = scoring.score(self.tests, data, why_not, self.secret)
        patches.forget_the_kernel_error(results)
