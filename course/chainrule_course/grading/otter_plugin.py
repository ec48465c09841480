"""The otter-grader plugin that makes ``otter run`` (and Gradescope) grade as ``make grade`` does.

The assignments' ``otter_config.json`` names it. otter would run the student's whole notebook
in a kernel, as root on Gradescope and in the submission's folder, and score what that kernel
reports. With the plugin otter starts no kernel at all
(:func:`chainrule_course.compat.patches.grade_without_a_kernel`): nothing a student hands in
runs in the grader's process or as its user, and each answer runs apart
(:func:`chainrule_course.grading.scoring.record_apart`):

- when the plugin starts, before any student code runs, it reads the tests (``./tests``);
- ``before_grading`` removes a ``.OTTER_LOG`` that came with the submission, which otter
  would otherwise unpickle in this process;
- ``before_execution`` chooses the inputs (:func:`chainrule_course.grading.scoring.inputs`, the
  hidden tests' with a secret of this process) and keeps the notebook's code cells as text; a
  notebook whose metadata names another assignment gets 0, saying so (``make grade``'s rule:
  otter does not check it, so that a notebook without the metadata is graded);
- ``after_grading`` runs each answer's cell in a process of its own, in a sandbox
  (:func:`answer_sandbox`), and puts in the scores that
  :func:`chainrule_course.grading.scoring.score` computes here. Where no sandbox can be made and
  student code would run as root, every part gets 0 with a status that says why;
- ``generate_report`` says which sandbox the answers had, and what of the answers' behaviour is
  up for review (:data:`chainrule_course.grading.scoring.DID`): otter prints it in its summary.

The sandbox, by where otter runs (``CHAINRULE_SANDBOX`` in the grader's environment chooses one:
``bwrap`` or ``permissions``; tests use it):

- where bubblewrap can make one: the sandbox of ``make grade``
  (:mod:`chainrule_course.grading.sandbox`), with the same limits and caps;
- in Gradescope's container as root, where Docker refuses bubblewrap's namespaces: a user of
  its own and the filesystem's permissions (:mod:`chainrule_course.grading.permissions`);
- as root elsewhere without bubblewrap: nothing runs (0, and why);
- as another user without bubblewrap: the answers run as that user, and the report says so.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import os
import shutil
import time
from pathlib import Path

from otter.plugins import AbstractOtterPlugin

from ..compat import patches
from . import apart, grade, permissions, sandbox, scoring
from .uploads import NOT_GRADED

OTTER_LOG = ".OTTER_LOG"  # otter.check.notebook.OTTER_LOG_FILENAME


@contextlib.contextmanager
def answer_sandbox(submission_path: str | None, containerized: bool):
    """The sandbox answers run in while grading one submission: yields (start, why not, what it guarantees).

    ``start(source, rule, values)`` gives an answer's :class:`chainrule_course.grading.apart.Answer`; "why
    not" is "" or the reason nothing runs (then every part scores 0 and says it)."""
    chosen = os.environ.get("CHAINRULE_SANDBOX", "auto")
    why_no_bwrap = "CHAINRULE_SANDBOX=permissions" if chosen == "permissions" else sandbox.sandbox_available()
    root = os.geteuid() == 0
    if not why_no_bwrap:
        caps = sandbox.group(f"chainrule-otter-{os.getpid()}")
        popen, uid = sandbox.answer_popen(sandbox.ANSWER_CPU_SECONDS, caps), sandbox.submission_uid()
        try:
            yield (
                lambda source, rule, values: apart.Answer(
                    source, rule, values, sandbox=functools.partial(sandbox.answer_command, uid=uid), popen=dict(popen)
                ),
                "",
                f"bubblewrap, as in make grade: user {uid}, no network, only the allowed modules, limits per "
                f"process{f', at most {sandbox.SUBMISSION_TASKS} processes' if root else ''}"
                f"{', a memory cap (cgroups)' if caps else ''}",
            )
        finally:
            if caps is not None:
                caps.close()
    elif root and (containerized or chosen == "permissions"):
        # the autograder's folder: its source, tests, submission and results (not through a student's link)
        folder = Path(os.path.abspath(submission_path)).parent if submission_path else Path.cwd()
        hidden = [folder.parent]
        with permissions.PermissionSandbox(hidden, sandbox.ANSWER_CPU_SECONDS) as jail:
            why_not, network = jail.probe()
            try:
                yield (
                    lambda source, rule, values: apart.Answer(
                        source, rule, values, popen=jail.popen(), copies=jail.copies
                    ),
                    why_not,
                    f"file permissions (bubblewrap cannot run here: {why_no_bwrap[:120]}): user {jail.uid}, "
                    f"only copies of the allowed modules readable, at most {permissions.TASKS} processes, "
                    "limits per process, "
                    f"network {'none (a namespace of its own)' if network else 'OPEN (no namespace allowed here)'}",
                )
            finally:
                jail.kill_all()
    elif root:
        yield (
            None,
            (
                f"not graded: student code would run as root here, and bubblewrap cannot make its sandbox "
                f"({why_no_bwrap}); grade with bubblewrap installed, or in Gradescope's container"
            ),
            "",
        )
    else:
        yield (
            lambda source, rule, values: apart.Answer(source, rule, values),
            "",
            f"WARNING: no sandbox ({why_no_bwrap}): the answers ran as this user, apart, with the import rule only",
        )


class TrustedScores(AbstractOtterPlugin):
    def __init__(self, submission_path, submission_metadata, plugin_config):
        super().__init__(submission_path, submission_metadata, plugin_config)
        # otter also makes its plugins while it writes the autograder zip, with no submission.
        folder = Path(submission_path).parent / "tests" if submission_path else None
        self.tests = {path.name: path.read_text() for path in sorted(folder.glob("*.py"))} if folder else {}
        self.cells: list[str] = []
        #: The assignment, from the plugin's entry in otter_config.json (make assignments writes it there, and
        #: not as otter's assignment_name, which otter checks before any plugin and stops at a notebook
        #: without it: the chapter's notebook from Colab, a fresh one).
        self.assignment = plugin_config.get("assignment") if isinstance(plugin_config, dict) else None
        self.containerized = False
        self.guarantee = ""
        if submission_path:
            patches.grade_without_a_kernel()

    def before_grading(self, config):
        """Remove a ``.OTTER_LOG`` beside the submission: otter unpickles that file next, in this process."""
        log = Path(OTTER_LOG)
        if log.is_symlink() or log.is_file():
            log.unlink()
        elif log.exists():
            shutil.rmtree(log)
        config.grade_from_log = False
        self.containerized = not getattr(config, "otter_run", True)  # Gradescope's container

    def before_execution(self, submission):
        self.begun = time.monotonic()  # the notebook's time limit counts its reading and parsing too
        self.unreadable = str(submission.get("metadata", {}).get(NOT_GRADED, ""))
        self.unreadable = self.unreadable or grade.another_assignment(submission, self.assignment)
        self.secret = os.urandom(32)
        self.inputs = scoring.inputs(self.tests, self.secret)
        self.cells = [
            cell.get("source", "") if isinstance(cell.get("source"), str) else ""
            for cell in submission.get("cells", [])
            if isinstance(cell, dict) and cell.get("cell_type") == "code"
        ]
        empty = copy.deepcopy(submission)
        empty.cells = []  # were a kernel started after all, it would run nothing of the student's
        return empty

    def after_grading(self, results):
        data = None
        if getattr(self, "unreadable", ""):
            results.results = scoring.score(self.tests, None, self.unreadable, self.secret)
            return
        with answer_sandbox(self.submission_path, self.containerized) as (started, why_not, self.guarantee):
            if not why_not:
                data = scoring.record_apart(self.cells, self.inputs, started, sandbox.NOTEBOOK_SECONDS, self.begun)
        self.review = scoring.seen_doing(data)
        results.results = scoring.score(self.tests, data, why_not, self.secret)

    def generate_report(self):
        if getattr(self, "unreadable", ""):  # nothing ran
            return f"chainrule: {self.unreadable}"
        report = f"chainrule: the answers ran in {self.guarantee}" if self.guarantee else ""
        review = "; ".join(getattr(self, "review", []))  # the same reasons as make grade's "review: ..."
        return report + (f"\nFor review by the instructor: {review}." if review else "")
