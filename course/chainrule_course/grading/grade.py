"""Grade a folder of submitted notebooks with an assignment's autograder: sandboxed, and scored outside the sandbox.

Usage: ``make grade ASSIGNMENT=<name> SUBMISSIONS=<dir> [JOBS=N] [TIMEOUT=S] [ROSTER=csv] [ONLY="id ..."]``,
or, from the book's folder, ``python -m chainrule_course.grading.grade <name> <dir> [--jobs N] [--timeout S]
[--call-timeout S] [--roster CSV] [--only ID ...] [--sandbox auto|bwrap|none]``.

Every notebook under ``<dir>`` is graded (any case of ``.ipynb``, in subfolders too, as an LMS
exports them); a ``.py`` or ``.zip`` gets a row that says it is not a notebook; every other
file is listed as skipped. A notebook is read as text, never run: ``--jobs`` at a time,

- **the inputs** are chosen here before any answer runs: every test of the autograder, public
  and hidden, runs in this process on the reference solution, the hidden ones with a secret
  drawn for this run (:func:`chainrule_course.grading.scoring.inputs`);
- **each answer's cell runs apart** (:func:`chainrule_course.grading.scoring.record_apart`): alone,
  in a process of its own, in a sandbox (bubblewrap, :mod:`chainrule_course.grading.sandbox`) as a user
  of its own on the host too, with no network and no capabilities, under limits on CPU time, memory and file
  size, seeing the system, the standard library and the modules its exercise allows, and
  nothing else: no venv, no grader's code, no answer key, no other notebook. It is sent the
  inputs only after its cell has run, one call at a time, each under ``--call-timeout``.
  Without bubblewrap, ``--sandbox auto`` says so loudly and grades without it; ``--sandbox
  bwrap`` refuses;
- **scored outside it**: this process runs the autograder's tests against what the calls
  returned (:mod:`chainrule_course.grading.scoring`). An error of the grader's on one notebook
  becomes that row's status: the run always writes every file below.

It writes, with :mod:`chainrule_course.grading.reports`, ``<dir>/grades.csv`` (one row per notebook: student id,
file, one column per question, ``total``, ``possible``, ``status``), ``<dir>/feedback/<id>-<hash>.txt`` (each test's
message, public and hidden) and ``<dir>/summary.html`` (per question: mean, histogram and
the commonest mistakes). ``--only`` regrades those students and keeps every other row.

A student id is the first folder under ``<dir>`` (an LMS export's per-student folder), or the
file name without its suffix; with ``--roster``, a CSV with an ``id`` column (and any others,
such as ``name``), a notebook belongs to the roster id that its path contains, and students
without a notebook get a row that says so.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import functools
import os
import re
import sys
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from .apart import TIME_LIMIT
from .reports import (
    Result,
    Submission,
    read_written,
    write_feedback,
    write_outputs,
    write_table,
    write_written,
)
from .review import REVIEW as REVIEW  # the reasons' words are review's; grade.REVIEW names them still
from .review import review_reasons
from .sandbox import (
    ANSWER_CPU_SECONDS,
    NOTEBOOK_SECONDS,
    SUBMISSION_TASKS,
    answer_command,
    answer_popen,
    group,
    sandbox_available,
    submission_uid,
)

#: Where ``make assignments`` writes them, from the book's folder (the working directory of ``make grade``).
ASSIGNMENTS = Path("_build") / "assignments"
SUBMISSION_TIMEOUT = ANSWER_CPU_SECONDS
OUTPUTS = ("grades.csv", "summary.html", "feedback", "written")
#: Work handed in that is not a notebook: it gets a row that says so, rather than none.
HANDED_IN = (".py", ".zip")
SKIPPED_FOLDERS = {".ipynb_checkpoints", "__MACOSX", "feedback"}


def autograder_zip(assignment: str, assignments: Path = ASSIGNMENTS) -> Path:
    """The assignment's autograder zip; SystemExit naming the known assignments when there is none."""
    path = assignments / assignment / "autograder" / f"{assignment}-autograder.zip"
    if not path.is_file():
        zips = assignments.glob("*/autograder/*-autograder.zip")
        known = ", ".join(sorted(p.parent.parent.name for p in zips)) or "none yet"
        raise SystemExit(
            f"make grade: no autograder for {assignment!r} at {path}; run `make assignments` (assignments: {known})"
        )
    return path


def read_tests(archive_path: Path) -> dict[str, str]:
    """The autograder's tests, file name -> source, read from the zip (the grader's own copy)."""
    with zipfile.ZipFile(archive_path) as archive:
        return {
            Path(name).name: archive.read(name).decode()
            for name in sorted(archive.namelist())
            if name.startswith("tests/") and name.endswith(".py")
        }


def questions(tests: dict[str, str]) -> dict[str, float]:
    """Question name -> points."""
    from otter.test_files import ExceptionTestFile

    points = {}
    for name, source in tests.items():
        test_file = ExceptionTestFile.from_string(source, path=name)
        points[test_file.name] = sum(case.points for case in test_file.test_cases)
    return points


# --------------------------------------------------------------------------- finding the notebooks


def find(folder: Path, roster: Path | None = None) -> tuple[list[Submission], list[str]]:
    """The submissions under ``folder`` and the files skipped (relative paths, with why)."""
    notebooks, skipped = [], []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if path.is_dir() or relative.parts[0] in OUTPUTS:
            continue
        if any(part in SKIPPED_FOLDERS or part.startswith(".") for part in relative.parts[:-1]):
            if path.suffix.lower() == ".ipynb" and "feedback" not in relative.parts[:-1]:
                skipped.append(f"{relative} (skipped: a copy Jupyter or an archive keeps, not the work handed in)")
            continue
        if path.name.startswith("._"):  # a macOS resource fork beside the real file
            skipped.append(f"{relative} (not a notebook)")
        elif path.suffix.lower() in (".ipynb", *HANDED_IN):  # also .hidden.ipynb: the student's work all the same
            notebooks.append(relative)
        else:
            skipped.append(f"{relative} (not a notebook)")
    if roster is None:
        return [Submission(_student(relative), folder / relative, str(relative)) for relative in notebooks], skipped
    return _with_roster(folder, notebooks, _roster_ids(roster), skipped), skipped


def _student(relative: Path) -> str:
    return relative.parts[0] if len(relative.parts) > 1 else re.sub(r"\.(ipynb|py|zip)$", "", relative.name, flags=re.I)


def _roster_ids(roster: Path) -> list[str]:
    with roster.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        if "id" not in (reader.fieldnames or []):
            raise SystemExit(f"make grade: the roster {roster} has no `id` column (columns: {reader.fieldnames})")
        return [row["id"].strip() for row in reader if row["id"].strip()]


def _with_roster(folder: Path, notebooks: list[Path], ids: list[str], skipped: list[str]) -> list[Submission]:
    owners: dict[Path, list[str]] = {n: [i for i in ids if _names(n, i)] for n in notebooks}
    submissions = []
    for student in ids:
        mine = [n for n in notebooks if owners[n] == [student]]
        submissions += [Submission(student, folder / n, str(n)) for n in mine]
        if not mine:
            submissions.append(Submission(student, None))
    for notebook, found in owners.items():
        if len(found) != 1:
            submissions.append(Submission(_student(notebook), folder / notebook, str(notebook)))
            why = f"names several roster ids ({', '.join(found)})" if found else "names no roster id"
            skipped.append(f"{notebook} (graded under its own name: its path {why})")
    return submissions


def _names(notebook: Path, student: str) -> bool:
    """Whether ``notebook`` is ``student``'s: its first folder (or, at the top, its file name) is the id,
    or one of that name's parts between underscores is (an LMS's "Grace Hopper_0042" for 0042).

    Exact, not a substring: the roster id li does not own li.wei's notebook, and s1001 does not own
    s1002/s1001.ipynb, which is in s1002's folder.
    """
    name = _student(notebook)
    wanted = student.casefold()
    return name.casefold() == wanted or wanted in (part.strip() for part in name.casefold().split("_"))


# --------------------------------------------------------------------------- one submission (the grader's side)


#: The editions of a chapter a student may hand in besides the assignment's notebook, from the
#: book's folder: the full one (Colab's button on the site) and the student edition.
EDITIONS = ("chapters/{name}.ipynb", "student/chapters/{name}.ipynb")


def handed_out_lines(assignment: str, assignments: Path = ASSIGNMENTS) -> frozenset[str]:
    """The code lines of the notebooks handed out for ``assignment``: the assignment's student notebook and
    the chapter's editions (:data:`EDITIONS`), where they are (none when none is)."""
    import nbformat

    book = assignments.parent.parent
    paths = [assignments / assignment / "student" / f"{assignment}.ipynb"]
    paths += [book / edition.format(name=assignment) for edition in EDITIONS]
    lines = set()
    for path in paths:
        if path.is_file():
            cells = nbformat.read(path, as_version=4).cells
            lines |= {line.strip() for cell in cells if cell.cell_type == "code" for line in cell.source.splitlines()}
    return frozenset(lines)


def _read_notebook(path: Path):
    """The notebook at ``path``, read as text; one saved with a byte-order mark too."""
    import nbformat

    text = path.read_bytes().decode("utf-8-sig")
    return nbformat.reads(text, as_version=4)


def _linked(path: Path, file: str) -> bool:
    """Whether a link inside the submissions folder leads to a submission's ``path`` (its ``file`` in that
    folder); a link above the folder may."""
    root = path
    for _ in Path(file).parts:
        root = root.parent
    return path.resolve() != root.resolve() / file


def another_assignment(notebook, assignment: str | None) -> str:
    """Why ``notebook`` (a dict) is not graded for ``assignment``, when otter's metadata in it names another
    assignment; else "" (a notebook without the metadata, as Colab's, is graded)."""
    metadata = notebook.get("metadata") if isinstance(notebook, dict) else None
    otter = metadata.get("otter") if isinstance(metadata, dict) else None
    named = otter.get("assignment_name") if isinstance(otter, dict) else None
    if assignment and isinstance(named, str) and named and named != assignment:
        return f"submitted the {named} notebook for the {assignment} assignment (its metadata names it)"
    return ""


def read_submission(
    submission: Submission, assignment: str, handed_out: frozenset[str] = frozenset()
) -> tuple[list[str] | None, str, list[str]]:
    """The code cells of ``submission``'s notebook, read as text, and what of them a human should review;
    or None and the status that says why it cannot be graded. Nothing of the notebook runs here."""
    path = submission.path
    if path is None:  # a roster student without a notebook: grade_one says "no submission" before reading
        raise ValueError(f"{submission.student} handed in no notebook: there is none to read")
    if path.suffix.lower() in HANDED_IN:
        kind = path.suffix.lower()
        return None, f"not graded: a {kind} file, not a notebook (ask the student for the .ipynb)", []
    if _linked(path, submission.file):
        # A link is not a student's work, and could lead to any file of the grader's (the solution).
        return None, "not graded: a symbolic link, not a notebook (hand in the file itself)", []
    try:
        notebook = _read_notebook(path)
    except Exception as error:  # noqa: BLE001 - not JSON, not a notebook: this submission's fault
        return None, f"not a readable notebook ({type(error).__name__}: {_one_line(str(error))[:120]})", []
    another = another_assignment(notebook, assignment)
    if another:
        return None, another, []
    cells = [
        cell["source"] if isinstance(cell.get("source"), str) else ""
        for cell in notebook.get("cells", [])
        if isinstance(cell, dict) and cell.get("cell_type") == "code"
    ]
    return cells, "", review_reasons(cells, handed_out)


def grade_one(
    inputs: dict, submission: Submission, assignment: str, options: argparse.Namespace
) -> tuple[Result, bool]:
    """Run each answer of one notebook apart, sandboxed, on ``inputs``; the result without scores, and whether
    there is a record to score."""
    from . import apart, scoring

    start = time.monotonic()
    result = Result(submission.student, submission.file)
    if submission.path is None:
        result.status = "no submission"
        return result, False
    cells, status, result.review = read_submission(
        submission, assignment, options.handed_out.get(assignment, frozenset())
    )
    if cells is None:
        result.status = status
        return result, False
    result.code = cells
    caps = group(f"chainrule-grade-{os.getpid()}-{threading.get_ident()}") if options.capped else None
    popen = answer_popen(options.timeout, caps)
    sandbox = functools.partial(answer_command, uid=submission_uid()) if options.sandboxed else None

    def started(source, rule, values):
        return apart.Answer(source, rule, values, sandbox=sandbox, popen=popen, limit=options.call_timeout)

    try:
        result.record = scoring.record_apart(cells, inputs, started, NOTEBOOK_SECONDS, begun=start)
        result.review += [reason for reason in scoring.seen_doing(result.record) if reason not in result.review]
    finally:
        if caps is not None:
            caps.close()  # what is left of the submission's processes, wherever they went
    result.seconds = time.monotonic() - start
    return result, True


def add_scores(result: Result, recorded: bool, tests: dict[str, str], secret: bytes = b"") -> Result:
    """Scores and messages for ``result``, computed in this process from the record the grader wrote."""
    from . import scoring

    data = result.record if recorded else None
    for name, test_file in scoring.score(tests, data, result.status, secret).items():
        result.scores[name] = float(test_file.score)
        result.messages[name] = [
            f"{'hidden' if r.test_case.hidden else 'public'} test {r.test_case.name}: "
            + ("passed" if r.passed else (r.message or "failed").replace("❌ Test case failed\n", "failed\n"))
            for r in test_file.test_case_results
        ]
        result.mistakes[name] = list(test_file.mistakes)
    if result.status == "graded" and result.review:
        result.status = "review: " + "; ".join(result.review)
    result.record, result.code = {}, []  # scored: a class's answers are not all held until the run ends
    return result


def grade_one_safely(
    inputs: dict, submission: Submission, assignment: str, options: argparse.Namespace
) -> tuple[Result, bool] | Exception:
    """:func:`grade_one`, or the error it raised: one notebook never stops the class."""
    try:
        return grade_one(inputs, submission, assignment, options)
    except Exception as error:  # noqa: BLE001 - the row says why, for review
        return error


def score_submission(
    graded: tuple[Result, bool] | Exception, submission: Submission, folder: _Folder, secret: bytes
) -> Result:
    """The scored result of one submission (``graded``: :func:`grade_one_safely`'s); any error of the
    grader's on it becomes its row's status."""
    try:
        if isinstance(graded, Exception):
            raise graded
        result, recorded = graded
        return add_scores(result, recorded, folder.tests, secret)
    except Exception as error:  # noqa: BLE001 - one notebook never stops the class
        result = Result(submission.student, submission.file)
        why = f"{type(error).__name__}: {_one_line(str(error))[:200]}"
        result.status = f"not graded (for review): the grader failed on {submission.file}: {why}"
        result.scores = {question: 0.0 for question in folder.points}
        result.messages = {question: [result.status] for question in folder.points}
        return result


def _one_line(text: str) -> str:
    return " ".join(text.split())


# --------------------------------------------------------------------------- the batch


def grade_folder(assignment: str, folder: Path, *args, **kwargs) -> list[Result]:
    """Grade every notebook in ``folder`` for ``assignment``; its results (and the files in ``folder``).

    The other arguments are :func:`grade_folders`'s, after ``batch``.
    """
    return grade_folders([(assignment, folder)], *args, **kwargs)[0]


@dataclass
class _Folder:
    """One folder of submissions to one assignment, as grade_folders grades it."""

    assignment: str
    path: Path
    archive_path: Path
    found: list[Submission]
    skipped: list[str]
    submissions: list[Submission]
    tests: dict[str, str]
    points: dict[str, float]
    results: list[Result] = field(default_factory=list)


def _read_folder(
    assignment: str, folder: Path, assignments: Path, roster: Path | None, only: list[str] | None
) -> _Folder:
    archive_path = autograder_zip(assignment, assignments)
    found, skipped = find(folder, roster)
    submissions = found
    if only:
        only = _only(only, {s.student for s in found})
        submissions = [s for s in submissions if s.student in only]
        unknown = sorted(set(only) - {s.student for s in submissions})
        if unknown:
            raise SystemExit(f"make grade: no notebook for {', '.join(unknown)} in {folder}")
    if not any(s.path for s in submissions):
        raise SystemExit(f"make grade: no .ipynb files in {folder}")
    tests = read_tests(archive_path)
    return _Folder(assignment, folder, archive_path, found, skipped, submissions, tests, questions(tests))


def _cgroups() -> bool:
    """Whether each submission gets caps of its own on memory and tasks (cgroups); says so when not."""
    found = group(f"chainrule-grade-{os.getpid()}-probe")
    if found is None:
        print(
            "note: no memory and task caps per submission (cgroups cannot be written here); each process "
            "still has its limits",
            file=sys.stderr,
            flush=True,
        )
        return False
    found.close()
    return True


def _inputs(folder: _Folder, secret: bytes) -> dict:
    """The inputs a notebook of ``folder``'s assignment is given (:func:`.scoring.inputs`)."""
    from . import scoring

    try:
        return scoring.inputs(folder.tests, secret)
    except scoring.Unreadable as error:
        raise SystemExit(f"make grade: the autograder of {folder.assignment} cannot be used: {error}") from None


def _only(given: list[str], known: set[str]) -> list[str]:
    """The ids ``--only`` names: separated by commas (or by spaces, when each word is an id)."""
    ids: list[str] = []
    for part in (piece.strip() for text in given for piece in re.split(r"[,\n]", text)):
        words = part.split()
        if part not in known and len(words) > 1 and set(words) <= known:
            ids += words  # ONLY="s1 s2", as before commas
        elif part:
            ids.append(part)  # ONLY="Ada Lovelace_4711,s1234"
    return ids


def grade_folders(
    batch: list[tuple[str, Path]],
    jobs: int = os.cpu_count() or 1,
    call_timeout: float = TIME_LIMIT,  # seconds per call: what the notebook's check gives
    timeout: float = SUBMISSION_TIMEOUT,
    assignments: Path = ASSIGNMENTS,
    roster: Path | None = None,
    only: list[str] | None = None,
    sandbox: str = "auto",
) -> list[list[Result]]:
    """Grade several (assignment, folder) pairs in one pool of ``jobs``: no folder waits for another's last
    notebook. Each folder gets its own grades.csv, feedback and summary; the results, folder by folder."""
    folders = [_read_folder(assignment, folder, assignments, roster, only) for assignment, folder in batch]
    why_not = "" if sandbox == "none" else sandbox_available()
    if why_not and sandbox == "bwrap":
        raise SystemExit(f"make grade: {why_not}")
    if (why_not or sandbox == "none") and os.geteuid() == 0:
        raise SystemExit(
            f"make grade: as root, answers run only in the sandbox, never as root ({why_not or '--sandbox none'})"
        )
    if why_not or sandbox == "none":
        print(
            f"WARNING: grading WITHOUT a sandbox: {why_not or '--sandbox none'}. Student code runs with "
            "your permissions and your network.",
            file=sys.stderr,
            flush=True,
        )
    options = argparse.Namespace(
        call_timeout=call_timeout,
        timeout=timeout,
        sandboxed=not why_not and sandbox != "none",
        capped=_cgroups(),
        handed_out={folder.assignment: handed_out_lines(folder.assignment, assignments) for folder in folders},
    )
    start = time.monotonic()
    # The hidden tests' inputs are drawn with a secret that exists only in this process, for this run.
    secret = os.urandom(32)
    inputs = {folder.assignment: _inputs(folder, secret) for folder in folders}
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futures = {
            pool.submit(grade_one_safely, inputs[folder.assignment], s, folder.assignment, options): (folder, s)
            for folder in folders
            for s in folder.submissions
        }
        for future in concurrent.futures.as_completed(futures):
            folder, submission = futures[future]
            # Scored in this thread, not the pool's: the checks use signals.
            result = score_submission(future.result(), submission, folder, secret)
            folder.results.append(result)
            write_table(folder.path, folder.points, folder.results, keep=bool(only))  # a stopped run keeps its rows
            write_feedback(folder.path, folder.points, result)
            print(
                f"{result.student}: {sum(result.scores.values()):g}/{sum(folder.points.values()):g} in "
                f"{result.seconds:.1f} s" + ("" if result.status == "graded" else f"  ({result.status})"),
                flush=True,
            )
    for folder in folders:
        table = write_outputs(folder.path, folder.points, folder.results, keep=bool(only))
        written = write_written(folder.path, read_written(folder.archive_path), folder.found)  # every student's
        for line in folder.skipped:
            print(f"skipped {line}")
        print(_summary(folder, time.monotonic() - start, jobs, options, table, written))
    return [folder.results for folder in folders]


def _summary(folder: _Folder, seconds: float, jobs: int, options, table, written) -> str:
    """The last line of a folder's grading: how many, how fast, under which limits, and what it wrote."""
    return (
        f"graded {sum(1 for r in folder.results if r.file)} notebooks of {folder.assignment} in "
        f"{seconds:.1f} s with {jobs} at a time"
        f"{' in the sandbox' if options.sandboxed else ''}"
        f"{f', at most {SUBMISSION_TASKS} processes each' if options.sandboxed and os.geteuid() == 0 else ''}"
        f"{', each capped as a whole (memory)' if options.capped else ''}"
        f", {options.call_timeout:g} s per call and {NOTEBOOK_SECONDS} s per notebook; "
        f"skipped {len(folder.skipped)} other files; wrote "
        f"{table}, {folder.path / 'summary.html'}, {folder.path / 'feedback'}/"
        + (f" and the written work to grade by hand, {written}" if written else "")
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("assignment", help="an assignment name (a folder of _build/assignments)")
    parser.add_argument("submissions", type=Path, help="the folder of submitted notebooks")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--call-timeout", type=float, default=TIME_LIMIT, help="seconds per call of an answer")
    parser.add_argument("--timeout", type=float, default=SUBMISSION_TIMEOUT, help="CPU seconds per answer's process")
    parser.add_argument("--roster", type=Path, help="a CSV with an `id` column")
    parser.add_argument("--only", nargs="+", help="regrade these student ids; other rows stay")
    parser.add_argument("--sandbox", choices=("auto", "bwrap", "none"), default="auto")
    parser.add_argument("--assignments", type=Path, default=ASSIGNMENTS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    grade_folder(
        args.assignment,
        args.submissions,
        max(1, args.jobs),
        args.call_timeout,
        args.timeout,
        args.assignments,
        args.roster,
        args.only,
        args.sandbox,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
