"""The otter-grader plugin that makes ``otter run`` (and Gradescope) score with :mod:`chainrule.exercises.grading`.

The assignments' ``otter_config.json`` names it. otter runs the student's notebook in a
kernel and the plugin's events in its own process:

- when the plugin starts, before any student code runs, it reads the tests (``./tests``);
- ``before_execution`` chooses the inputs (:func:`chainrule.exercises.grading.inputs`, the
  hidden tests' with a secret of this process), which imports all that scoring needs before
  the kernel starts; where otter runs as root (Gradescope), it makes the kernel run as
  nobody, without the autograder's files (:mod:`chainrule.exercises.unprivileged`); and it
  adds the grader's first cell (PyTorch,
  JAX, TensorFlow and the checks refused) and last cell
  (:func:`chainrule.exercises.kernel.record`, given only the inputs);
- ``after_grading`` kills every process the notebook left behind, throws away what the
  kernel reported and puts in the scores that :func:`chainrule.exercises.grading.score`
  computes here from the record.

Three more guards for this process, set before the student's kernel starts:

- ``before_grading`` removes a ``.OTTER_LOG`` that came with the submission, which otter
  would otherwise unpickle in this process;
- otter reads two things from the kernel with ``pickle``: its results file and the records
  of its logging socket. Unpickling runs code, so a notebook that forges either (a thread
  that rewrites the results file after otter's last cell, say) could run code here, in the
  process that scores. The plugin makes otter unpickle neither: it never uses the results,
  and the log records are only logs.
- a notebook that kills its kernel (``os._exit``) would stop ``otter run`` with nbclient's
  ``DeadKernelError`` and no score at all; the plugin lets the run go on instead, so that
  the notebook gets 0 points and the reason, as with ``make grade``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from otter.plugins import AbstractOtterPlugin

from ..compat import patches
from . import grading, kernel, processes, unprivileged

OTTER_LOG = ".OTTER_LOG"  # otter.check.notebook.OTTER_LOG_FILENAME


class TrustedScores(AbstractOtterPlugin):
    def __init__(self, submission_path, submission_metadata, plugin_config):
        super().__init__(submission_path, submission_metadata, plugin_config)
        # otter also makes its plugins while it writes the autograder zip, with no submission.
        folder = Path(submission_path).parent / "tests" if submission_path else None
        self.tests = {path.name: path.read_text() for path in sorted(folder.glob("*.py"))} if folder else {}
        self.record_path: Path | None = None

    def before_grading(self, config):
        """Remove a ``.OTTER_LOG`` beside the submission: otter unpickles that file next, in this process.

        A student who uploads one (Gradescope takes every file of a submission) would run code
        here, where the scores are computed. The plugin's event comes before otter reads it.
        """
        log = Path(OTTER_LOG)
        if log.is_symlink() or log.is_file():
            log.unlink()
        elif log.exists():
            shutil.rmtree(log)
        config.grade_from_log = False

    def before_execution(self, submission):
        self.record_path = Path(tempfile.mkdtemp(prefix="chainrule-record-")) / "record.json"
        self.secret = os.urandom(32)
        # Everything scoring needs is imported now, before the kernel runs (inputs runs the checks), so
        # a notebook that rewrites the installed checks on disk changes nothing that scores.
        inputs = grading.inputs(self.tests, self.secret)
        # As root (Gradescope), the kernel runs as nobody, without the autograder's files.
        why_not = unprivileged.prepare(Path(self.submission_path)) if self.submission_path else "no submission"
        if why_not:
            print(f"chainrule: {why_not}", flush=True)
        else:
            unprivileged.give(self.record_path.parent)
        self.cells = [cell.source for cell in submission.cells if cell.cell_type == "code"]
        patches.outlive_the_kernel()
        patches.read_nothing_from_the_kernel()
        processes.adopt_orphans()  # what the kernel leaves behind is this process's to stop
        return kernel.graded_notebook(submission, inputs, str(self.record_path))

    def after_grading(self, results):
        processes.stop_descendants()  # before the record is read: nothing of the notebook's can change it
        data, problem = grading.read_record(self.record_path)
        results.results = grading.score(self.tests, data, problem, self.secret, self.cells)
        patches.forget_the_kernel_error(results)
        shutil.rmtree(self.record_path.parent, ignore_errors=True)
