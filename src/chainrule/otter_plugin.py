"""The otter-grader plugin that makes ``otter run`` (and Gradescope) score with :mod:`chainrule.grading`.

The assignments' ``otter_config.json`` names it. otter runs the student's notebook in a
kernel and the plugin's events in its own process:

- when the plugin starts, before any student code runs, it reads the tests (``./tests``);
- ``before_execution`` adds the grader's first cell (PyTorch, JAX and TensorFlow refused)
  and last cell (:func:`chainrule.grading.record`);
- ``after_grading`` throws away what the kernel reported and puts in the scores that
  :func:`chainrule.grading.score` computes here from the record.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from otter.plugins import AbstractOtterPlugin

from . import grading

RECORD_VARIABLE = "CHAINRULE_GRADING_RECORD"


class TrustedScores(AbstractOtterPlugin):
    def __init__(self, submission_path, submission_metadata, plugin_config):
        super().__init__(submission_path, submission_metadata, plugin_config)
        # otter also makes its plugins while it writes the autograder zip, with no submission.
        folder = Path(submission_path).parent / "tests" if submission_path else None
        self.tests = {path.name: path.read_text() for path in sorted(folder.glob("*.py"))} if folder else {}
        self.record_path: Path | None = None

    def before_execution(self, submission):
        chosen = os.environ.get(RECORD_VARIABLE)
        self.record_path = Path(chosen or tempfile.mkdtemp(prefix="chainrule-record-")) / "record.json"
        self.record_path.unlink(missing_ok=True)
        return grading.graded_notebook(submission, self.tests, str(self.record_path))

    def after_grading(self, results):
        data, problem = grading.read_record(self.record_path)
        results.results = grading.score(self.tests, data, problem)
        results._catastrophic_error = None
        if not os.environ.get(RECORD_VARIABLE):
            shutil.rmtree(self.record_path.parent, ignore_errors=True)
