"""Grade a folder of submitted notebooks with an assignment's autograder: sandboxed, and scored outside the sandbox.

Usage: ``make grade ASSIGNMENT=<name> SUBMISSIONS=<dir> [JOBS=N] [TIMEOUT=S] [ROSTER=csv] [ONLY="id ..."]``,
or ``python tools/grade.py <name> <dir> [--jobs N] [--timeout S] [--cell-timeout S] [--roster CSV]
[--only ID ...] [--sandbox auto|bwrap|none]``.

Every notebook under ``<dir>`` is graded (any case of ``.ipynb``, in subfolders too, as an LMS
exports them); a ``.py`` or ``.zip`` gets a row that says it is not a notebook; every other
file is listed as skipped. Each notebook runs in its own process, ``--jobs`` at a time, with
nbclient, given only the inputs its answers are called on (the autograder zip that ``make
assignments`` wrote stays outside):

- **the inputs**, chosen here before any notebook runs: every test of the autograder, public
  and hidden, runs in this process on the reference solution, the hidden ones with a secret
  drawn for this run (:func:`chainrule.exercises.grading.inputs`);
- **in a sandbox** (bubblewrap, tools/sandbox.py): no network, user ``nobody`` in a user
  namespace of its own, no capabilities, limits on CPU time, memory and file size; it sees
  the system, its Python and the grader's code read-only and one folder of its own, and none
  of the grader's environment. Without bubblewrap, ``--sandbox auto`` says so loudly and
  grades without it; ``--sandbox bwrap`` refuses. The notebook cannot import the checks
  (:mod:`chainrule.exercises.kernel`); its last cell calls the answers on the inputs, and the
  record it shows is written out only after every process the notebook started is dead;
- **scored outside it**: this process runs the autograder's tests against that record
  (:mod:`chainrule.exercises.grading`), so nothing the notebook does to the checks, numpy,
  the tests or otter's files counts, and what an exercise does not allow fails it.

It writes, with tools/reports.py, ``<dir>/grades.csv`` (one row per notebook: student id, file, one column per
question, ``total``, ``possible``, ``status``), ``<dir>/feedback/<id>-<hash>.txt`` (each test's
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
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from reports import (  # tools/reports.py
    Result,
    Submission,
    read_written,
    write_feedback,
    write_outputs,
    write_table,
    write_written,
)
from sandbox import (  # tools/sandbox.py
    SCRATCH,
    group,
    limits,
    sandbox_available,
    sandbox_command,
    sandbox_environment,
)

ROOT = Path(__file__).resolve().parents[1]
RUNNER = Path(__file__).resolve().parent / "run_notebook.py"  # runs one notebook, in the sandbox
ASSIGNMENTS = ROOT / "_build" / "assignments"
CELL_TIMEOUT = 60
SUBMISSION_TIMEOUT = 600
OUTPUTS = ("grades.csv", "summary.html", "feedback", "written")
OUTPUT_TAIL = 64 * 1024  # characters of a sandbox's output kept in feedback/<name>.log
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


#: What an answer has no need of, and a cheat does: each pattern in a notebook's code puts its row up
#: for review (``review: ...`` in the status). Honest work never matches one (the planted solutions
#: are graded "graded"); a match changes no score.
REVIEW = {
    "the grader's own code (chainrule.exercises)": (
        r"chainrule\.exercises|\b(feedback|grading|answers)\.(check|score|record|_)"
    ),
    "stack frames or the garbage collector (sys._getframe, inspect, gc)": (
        r"_getframe|\binspect\b|\bf_back\b|\bf_locals\b|\bgc\."
    ),
    "processes of its own (os.fork, subprocess, multiprocessing)": (
        r"\bfork\b|subprocess|multiprocessing|os\.system|os\.popen|\bpty\b"
    ),
    "the grader's environment (MAKEFLAGS, os.environ)": r"MAKEFLAGS|CHAINRULE_|os\.environ|getenv",
    "files outside its answers (other notebooks, results, logs)": (
        r"\.ipynb\b|results\.json|record\.json|OTTER_LOG|\bglob\b|listdir|scandir|open\("
    ),
    "code built at run time (exec, eval, __import__, importlib)": r"\bexec\(|\beval\(|__import__|importlib",
    "raw memory (ctypes)": r"\bctypes\b|\bcffi\b",
}


def review_reasons(notebook, handed_out: frozenset[str] = frozenset()) -> list[str]:
    """What of :data:`REVIEW` the notebook's code uses, in lines that the handed-out notebook does not
    hold (its set-up cell installs packages and reads the environment), for a human to look at."""
    lines = [line for cell in notebook.cells if cell.cell_type == "code" for line in cell.source.splitlines()]
    code = "\n".join(line for line in lines if line.strip() not in handed_out)
    return [reason for reason, pattern in REVIEW.items() if re.search(pattern, code)]


def handed_out_lines(assignment: str, assignments: Path = ASSIGNMENTS) -> frozenset[str]:
    """The code lines of the notebook handed out for ``assignment`` (none when it is not there)."""
    import nbformat

    path = assignments / assignment / "student" / f"{assignment}.ipynb"
    if not path.is_file():
        return frozenset()
    cells = nbformat.read(path, as_version=4).cells
    return frozenset(line.strip() for cell in cells if cell.cell_type == "code" for line in cell.source.splitlines())


def prepare(
    submission: Submission, assignment: str, folder: Path, handed_out: frozenset[str] = frozenset(), inputs=None
) -> tuple[Path | None, str, list[str], list[str]]:
    """The notebook to run in the sandbox, written into ``folder`` with the grader's cells and ``inputs``
    (:func:`chainrule.exercises.kernel.graded_notebook`), or None and the status that says why not;
    what of its code a human should review (:func:`review_reasons`); and its code cells."""
    import nbformat

    from chainrule.exercises import kernel

    if submission.path.suffix.lower() in HANDED_IN:
        kind = submission.path.suffix.lower()
        return None, f"not graded: a {kind} file, not a notebook (ask the student for the .ipynb)", [], []
    if submission.path.resolve() != Path(os.path.abspath(submission.path)):
        # A link is not a student's work, and could lead to any file of the grader's (the solution).
        return None, "not graded: a symbolic link, not a notebook (hand in the file itself)", [], []
    try:
        notebook = nbformat.read(submission.path, as_version=4)
    except Exception as error:  # noqa: BLE001 - not JSON, not a notebook: this submission's fault
        return None, f"not a readable notebook ({type(error).__name__}: {_one_line(str(error))[:120]})", [], []
    named = notebook.metadata.get("otter", {}).get("assignment_name")
    if named and named != assignment:
        why = f"submitted the {named} notebook for the {assignment} assignment (its metadata names '{named}')"
        return None, why, [], []
    # A notebook whose cells were copied into a new one has lost otter's metadata: grade it as this one.
    notebook.metadata.setdefault("otter", {})["assignment_name"] = assignment
    copy = folder / "submission.ipynb"
    nbformat.write(kernel.graded_notebook(notebook, inputs or {}), copy)
    cells = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    return copy, "", review_reasons(notebook, handed_out), cells


def grade_one(
    inputs: dict, submission: Submission, assignment: str, options: argparse.Namespace
) -> tuple[Result, Path | None]:
    """Run one notebook in the sandbox, given only ``inputs``; returns the result without scores and its work folder."""
    start = time.monotonic()
    result = Result(submission.student, submission.file)
    if submission.path is None:
        result.status = "no submission"
        return result, None
    work = Path(tempfile.mkdtemp(prefix="grade-"))
    handed_out = options.handed_out.get(assignment, frozenset())
    copy, status, result.review, result.code = prepare(submission, assignment, work, handed_out, inputs)
    if copy is None:
        result.status = status
        return result, None
    # The sandbox sees no test, reference or assignment folder: only the notebook, with the inputs.
    # The record comes back by a pipe that only tools/run_notebook.py holds.
    reader, writer = os.pipe()
    home = SCRATCH if options.sandboxed else str(work)
    command = [sys.executable, str(RUNNER), str(copy), home, str(options.cell_timeout), str(writer)]
    if options.sandboxed:
        command = sandbox_command(work, command)
    caps = group(f"chainrule-grade-{os.getpid()}-{work.name}") if options.capped else None
    try:
        child = subprocess.Popen(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            cwd=work,
            env=sandbox_environment(home),
            start_new_session=True,
            preexec_fn=limits(options.timeout, caps),
            pass_fds=(writer,),
        )
    finally:
        os.close(writer)
    tail = _Tail(child.stdout)  # read as it comes: a kernel that prints 800 MB costs the grader 64 KB
    tail.start()
    record = _Record(reader)
    record.start()
    try:
        child.wait(timeout=options.timeout)
    except subprocess.TimeoutExpired:
        result.status = f"stopped after {options.timeout:g} s"
    finally:
        try:
            os.killpg(child.pid, signal.SIGKILL)  # a kernel left behind by the child
        except ProcessLookupError:
            pass
        child.wait()
        if caps is not None:
            caps.close()  # what is left of the submission, wherever it went
        tail.join(timeout=10)  # a daemon of the notebook's that left the group may still hold the pipe
        record.join(timeout=10)
    result.log = tail.kept()
    result.record = record.data
    result.seconds = time.monotonic() - start
    return result, work


class _Record(threading.Thread):
    """Reads the record from its pipe, at most :data:`chainrule.exercises.grading.RECORD_LIMIT` bytes
    of it (more is read and dropped, so that the writer is never stuck)."""

    def __init__(self, descriptor: int):
        super().__init__(daemon=True)
        self.descriptor, self.data = descriptor, b""

    def run(self) -> None:
        from chainrule.exercises.grading import RECORD_LIMIT

        with os.fdopen(self.descriptor, "rb") as pipe:
            for chunk in iter(lambda: pipe.read(2**20), b""):
                if len(self.data) <= RECORD_LIMIT:
                    self.data += chunk


class _Tail(threading.Thread):
    """Reads a child's output to its end, keeping only the last :data:`OUTPUT_TAIL` characters."""

    def __init__(self, stream):
        super().__init__(daemon=True)
        self.stream, self.text, self.dropped = stream, "", 0

    def run(self) -> None:
        for chunk in iter(lambda: self.stream.read(8192), ""):
            self.text += chunk
            if len(self.text) > 2 * OUTPUT_TAIL:
                self.dropped += len(self.text) - OUTPUT_TAIL
                self.text = self.text[-OUTPUT_TAIL:]

    def kept(self) -> str:
        text = self.text[-OUTPUT_TAIL:]
        dropped = self.dropped + len(self.text) - len(text)
        return (f"[the first {dropped:,} characters of the output are not kept]\n" if dropped else "") + text


def score(result: Result, work: Path | None, tests: dict[str, str], secret: bytes = b"") -> Result:
    """Scores and messages for ``result``, computed in this process from the sandbox's record."""
    from chainrule.exercises import grading

    if work is None:
        data, problem = None, result.status
    else:
        data, problem = grading.parse_record(result.record)
        shutil.rmtree(work, ignore_errors=True)
        if data is None and result.status == "graded":
            result.status = problem
        for cell in (data or {}).get("skipped", [])[:3]:
            result.review.append(f"a cell stopped the kernel and was left out ({str(cell)[:80]})")
    for name, test_file in grading.score(tests, data, problem, secret, result.code).items():
        result.scores[name] = float(test_file.score)
        result.messages[name] = [
            f"{'hidden' if r.test_case.hidden else 'public'} test {r.test_case.name}: "
            + ("passed" if r.passed else (r.message or "failed").replace("❌ Test case failed\n", "failed\n"))
            for r in test_file.test_case_results
        ]
        result.mistakes[name] = list(test_file.mistakes)
    if data is not None and data.get("used"):
        result.status = f"refused: the notebook imported {', '.join(map(str, data['used']))}"
    if result.status == "graded" and result.review:
        result.status = "review: " + "; ".join(result.review)
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
    folder: Path
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


def _inputs(one: _Folder, secret: bytes) -> dict:
    """The inputs a notebook of ``one``'s assignment is given (:func:`chainrule.exercises.grading.inputs`)."""
    from chainrule.exercises import grading

    try:
        return grading.inputs(one.tests, secret)
    except grading.Unreadable as error:
        raise SystemExit(f"make grade: the autograder of {one.assignment} cannot be used: {error}") from None


def _only(given: list[str], known: set[str]) -> list[str]:
    """The ids ``--only`` names: separated by commas (or by spaces, when each word is an id)."""
    ids = []
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
    cell_timeout: int = CELL_TIMEOUT,
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
    if why_not or sandbox == "none":
        print(
            f"WARNING: grading WITHOUT a sandbox: {why_not or '--sandbox none'}. Student code runs with "
            "your permissions and your network.",
            file=sys.stderr,
            flush=True,
        )
    options = argparse.Namespace(
        cell_timeout=cell_timeout,
        timeout=timeout,
        sandboxed=not why_not and sandbox != "none",
        capped=_cgroups(),
        handed_out={one.assignment: handed_out_lines(one.assignment, assignments) for one in folders},
    )
    start = time.monotonic()
    # The hidden tests' inputs are drawn with a secret that exists only in this process, for this run.
    secret = os.urandom(32)
    inputs = {one.assignment: _inputs(one, secret) for one in folders}
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futures = {
            pool.submit(grade_one, inputs[one.assignment], s, one.assignment, options): one
            for one in folders
            for s in one.submissions
        }
        for future in concurrent.futures.as_completed(futures):
            one = futures[future]
            result = score(*future.result(), one.tests, secret)  # in this thread: the checks use signals
            one.results.append(result)
            write_table(one.folder, one.points, one.results, keep=bool(only))  # a stopped run keeps its rows
            write_feedback(one.folder, one.points, result)
            print(
                f"{result.student}: {sum(result.scores.values()):g}/{sum(one.points.values()):g} in "
                f"{result.seconds:.1f} s" + ("" if result.status == "graded" else f"  ({result.status})"),
                flush=True,
            )
    for one in folders:
        table = write_outputs(one.folder, one.points, one.results, keep=bool(only))
        written = write_written(one.folder, read_written(one.archive_path), one.found)  # every student's
        for line in one.skipped:
            print(f"skipped {line}")
        print(
            f"graded {sum(1 for r in one.results if r.file)} notebooks of {one.assignment} in "
            f"{time.monotonic() - start:.1f} s with {jobs} at a time"
            f"{' in the sandbox' if options.sandboxed else ''}"
            f"{', each capped as a whole (memory and tasks)' if options.capped else ''}; "
            f"skipped {len(one.skipped)} other files; wrote "
            f"{table}, {one.folder / 'summary.html'}, {one.folder / 'feedback'}/"
            + (f" and the written work to grade by hand, {written}" if written else "")
        )
    return [one.results for one in folders]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("assignment", help="an assignment name (a folder of _build/assignments)")
    parser.add_argument("submissions", type=Path, help="the folder of submitted notebooks")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--cell-timeout", type=int, default=CELL_TIMEOUT, help="seconds per cell")
    parser.add_argument("--timeout", type=float, default=SUBMISSION_TIMEOUT, help="seconds per submission")
    parser.add_argument("--roster", type=Path, help="a CSV with an `id` column")
    parser.add_argument("--only", nargs="+", help="regrade these student ids; other rows stay")
    parser.add_argument("--sandbox", choices=("auto", "bwrap", "none"), default="auto")
    parser.add_argument("--assignments", type=Path, default=ASSIGNMENTS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    grade_folder(
        args.assignment,
        args.submissions,
        max(1, args.jobs),
        args.cell_timeout,
        args.timeout,
        args.assignments,
        args.roster,
        args.only,
        args.sandbox,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
