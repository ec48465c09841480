"""The otter-grader plugin that makes ``otter run`` (and Gradescope) grade as ``make grade`` does.

The assignments' ``otter_config.json`` names it. otter would run the student's whole notebook
in a kernel, as root on Gradescope and in the submission's folder, and score what that kernel
reports. With the plugin, through otter's public plugin events only, nothing a student hands in
runs in the grader's process, in otter's kernel or as its user, and each answer runs apart
(:func:`chainrule_course.grading.scoring.record_apart`):

- when the plugin starts, before any student code runs, it reads the tests (``./tests``);
- ``before_grading``, before otter reads anything of the submission but its assignment's name,
  keeps the notebook's text here and leaves in the submission's folder only otter's copy of the
  tests, an empty ``__init__.py`` and a blank notebook in the student's one's place
  (:func:`keep_only_otters`). otter then starts its kernel there with ``python -m
  ipykernel_launcher``, which would import a module handed in beside the notebook under the name
  of one it imports (``ipykernel_launcher.py``, ``json.py``), and runs only its own cells and the tests
  on the blank. A ``.OTTER_LOG`` that came with the submission, which otter would unpickle in
  this process, goes with the rest. That order of otter's runner is what makes this safe: the plugin
  grades nothing under an otter-grader other than :data:`OTTER_READ`, the one it was read against;
- ``before_execution`` chooses the inputs (:func:`chainrule_course.grading.scoring.inputs`, the
  hidden tests' with a secret of this process) and takes the kept notebook's code cells as text;
  a notebook whose metadata names another assignment gets 0, saying so (``make grade``'s rule:
  otter does not check it, so that a notebook without the metadata is graded);
- ``after_grading`` runs each answer's cell in a process of its own, in a sandbox
  (:func:`answer_sandbox`), and puts in the scores that
  :func:`chainrule_course.grading.scoring.score` computes here, in place of what otter's kernel
  reported. Where no sandbox can be made and student code would run as root, every part gets 0
  with a status that says why;
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
import importlib.metadata
import os
import shutil
import time
from pathlib import Path

from otter.plugins import AbstractOtterPlugin

from . import apart, grade, permissions, sandbox, scoring
from .uploads import NOT_GRADED

OTTER_LOG = ".OTTER_LOG"  # otter.check.notebook.OTTER_LOG_FILENAME, which otter unpickles
#: The otter-grader whose runner this plugin was read against (its events' order: the tests copied, then
#: ``before_grading``, the log, the notebook read, ``before_execution``, the kernel, ``after_grading``).
#: tests/repo/test_lock.py holds it to the grading lock.
OTTER_READ = "7.0.0"
#: What otter's runner puts in the submission's folder before the plugin's first event: its copy of the
#: assignment's tests (the student's ``tests`` removed first), and ``__init__.py``, which it leaves empty.
OTTERS = ("tests",)
#: The notebook left in the student's one's place: no cell, and the kernel otter starts anyway.
BLANK_METADATA = {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}


def handed_in(path: Path):
    """The notebook otter found (a ``.py`` is refused before); raises what nbformat raises for a file that is
    not one."""
    import nbformat

    return nbformat.read(path, as_version=4)


def keep_only_otters(submission: Path) -> list[str]:
    """Leave in the submission's folder only what otter put there (:data:`OTTERS`), an empty ``__init__.py``
    and a blank notebook (or an empty ``.py``) at ``submission``'s path; the names removed. Links are removed,
    never followed."""
    import nbformat

    folder, removed = submission.parent, []
    for path in sorted(folder.iterdir()):
        if path.name in OTTERS and path.is_dir() and not path.is_symlink():
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
        removed.append(path.name)
    (folder / "__init__.py").write_text("")  # otter's, for relative imports: made again, empty
    if submission.suffix == ".py":
        submission.write_text("")
    else:
        nbformat.write(nbformat.v4.new_notebook(metadata=BLANK_METADATA), submission)
    return [name for name in removed if name not in (submission.name, "__init__.py")]


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
        self.handed_in = None  # the notebook, read before anything of the student's is removed
        self.unreadable = ""
        self.removed: list[str] = []  # what was handed in beside the notebook, deleted unread
        self.kernel_failed = ""  # why otter's own kernel gave no results, which makes otter score 0
        self.read_seconds = 0.0  # reading the notebook: counted in its time limit, as make grade counts it

    def before_grading(self, config):
        """Keep the notebook here, then leave otter nothing of the student's to run or unpickle (see the
        module): its kernel starts next, in the submission's folder."""
        config.grade_from_log = False  # the log is gone: grade from the notebook
        self.containerized = not getattr(config, "otter_run", True)  # Gradescope's container
        if not self.submission_path:
            return
        path, started = Path(self.submission_path), time.monotonic()
        installed = importlib.metadata.version("otter-grader")
        if installed != OTTER_READ:
            self.unreadable = (
                f"not graded: the course's plugin was read against otter-grader {OTTER_READ}, and this is "
                f"{installed}: nothing of the student's ran (pin otter-grader=={OTTER_READ})"
            )
        elif path.suffix.lower() != ".ipynb":  # make grade's rule, and Gradescope's (uploads)
            kind = path.suffix.lower()
            self.unreadable = f"not graded: a {kind} file, not a notebook (ask the student for the .ipynb)"
        else:
            try:
                self.handed_in = handed_in(path)
            except Exception as error:  # noqa: BLE001 - whatever makes it unreadable is the reason given
                self.unreadable = f"not graded: {path.name} is not a readable notebook ({type(error).__name__})"
        self.removed = keep_only_otters(path)
        self.read_seconds = time.monotonic() - started

    def before_execution(self, submission):
        """Choose the inputs and take the kept notebook's code cells; otter's kernel gets a notebook with none."""
        notebook = self.handed_in if self.handed_in is not None else submission
        self.unreadable = self.unreadable or str(notebook.get("metadata", {}).get(NOT_GRADED, ""))
        self.unreadable = self.unreadable or grade.another_assignment(notebook, self.assignment)
        self.secret = os.urandom(32)
        self.inputs = scoring.inputs(self.tests, self.secret)
        self.cells = [
            cell.get("source", "") if isinstance(cell.get("source"), str) else ""
            for cell in notebook.get("cells", [])
            if isinstance(cell, dict) and cell.get("cell_type") == "code"
        ]
        empty = copy.deepcopy(submission)
        empty.cells = []  # were the blank not blank, otter's kernel would still run nothing of the student's
        return empty

    def after_grading(self, results):
        data = None
        if self.unreadable:
            results.results = scoring.score(self.tests, None, self.unreadable, self.secret)
            return
        # The notebook's time limit counts its reading, not otter's kernel, which ran nothing of it.
        begun = time.monotonic() - self.read_seconds
        with answer_sandbox(self.submission_path, self.containerized) as (started, why_not, self.guarantee):
            if not why_not:
                data = scoring.record_apart(self.cells, self.inputs, started, sandbox.NOTEBOOK_SECONDS, begun)
        self.review = scoring.seen_doing(data)
        results.results = scoring.score(self.tests, data, why_not, self.secret)
        # otter scores 0 when its own kernel wrote no results, whatever the plugin put in: said in the report.
        self.kernel_failed = str(getattr(results, "catastrophic_error", None) or "")

    def generate_report(self):
        removed = f"\nchainrule: deleted unread, handed in beside the notebook: {', '.join(self.removed)}"
        removed = removed if self.removed else ""
        if self.unreadable:  # nothing ran
            return f"chainrule: {self.unreadable}{removed}"
        report = f"chainrule: the answers ran in {self.guarantee}" if self.guarantee else ""
        if self.kernel_failed:
            report += (
                f"\nchainrule: otter's own kernel failed ({self.kernel_failed[:200]}), so otter scores this "
                "submission 0, though nothing of the student's ran in it: grade it again, or with make grade"
            )
        review = "; ".join(getattr(self, "review", []))  # the same reasons as make grade's "review: ..."
        return report + removed + (f"\nFor review by the instructor: {review}." if review else "")
