"""Grade a folder of submitted notebooks with an assignment's autograder: sandboxed, and scored outside the sandbox.

Usage: ``make grade ASSIGNMENT=<name> SUBMISSIONS=<dir> [JOBS=N] [TIMEOUT=S] [ROSTER=csv] [ONLY="id ..."]``,
or ``python tools/grade.py <name> <dir> [--jobs N] [--timeout S] [--cell-timeout S] [--roster CSV]
[--only ID ...] [--sandbox auto|bwrap|none]``.

Every notebook under ``<dir>`` is graded (any case of ``.ipynb``, in subfolders too, as an LMS
exports them); every other file is listed as skipped. Each notebook runs in its own process,
``--jobs`` at a time, with otter-grader's ``otter run`` machinery and the autograder zip that
``make assignments`` wrote:

- **in a sandbox** (bubblewrap): no network, user ``nobody`` in a user namespace of its own,
  no capabilities, the whole file system read-only except a temporary folder of its own,
  and limits on CPU time, memory and file size. Without bubblewrap, ``--sandbox auto`` says
  so loudly and grades without it; ``--sandbox bwrap`` refuses.
- **scored outside it**: the sandbox hands back only a record of what the answers returned
  (:mod:`chainrule.grading`); this process runs the autograder's tests against that record,
  so nothing the notebook does to the checks, numpy, the tests or otter's files counts.

It writes ``<dir>/grades.csv`` (one row per notebook: student id, file, one column per
question, ``total``, ``possible``, ``status``), ``<dir>/feedback/<id>.txt`` (each test's
message, public and hidden) and ``<dir>/summary.html`` (per question: mean, histogram and
the commonest mistakes). ``--only`` regrades those students and keeps every other row.

A student id is the first folder under ``<dir>`` (an LMS export's per-student folder), or the
file name without its suffix; with ``--roster``, a CSV with an ``id`` column (and any others,
such as ``name``), a notebook belongs to the roster id that its path contains, and students
without a notebook get a row that says so.
"""

from __future__ import annotations

import argparse
import collections
import concurrent.futures
import csv
import html
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = ROOT / "_build" / "assignments"
CELL_TIMEOUT = 60
SUBMISSION_TIMEOUT = 600
MEMORY_LIMIT = 8 * 2**30  # bytes of address space per process in the sandbox
FILE_LIMIT = 256 * 2**20  # bytes per file written in the sandbox
OUTPUTS = ("grades.csv", "summary.html", "feedback")
SKIPPED_FOLDERS = {".ipynb_checkpoints", "__MACOSX", "feedback"}


@dataclass
class Submission:
    student: str
    path: Path | None  # None: a roster student without a notebook
    file: str = ""


@dataclass
class Result:
    student: str
    file: str
    scores: dict[str, float] = field(default_factory=dict)
    messages: dict[str, list[str]] = field(default_factory=dict)
    mistakes: dict[str, list[str]] = field(default_factory=dict)  # question -> the known mistakes its checks named
    status: str = "graded"
    seconds: float = 0.0


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
        if path.suffix.lower() == ".ipynb" and not path.name.startswith("."):
            notebooks.append(relative)
        else:
            skipped.append(f"{relative} (not a notebook)")
    if roster is None:
        return [Submission(_student(relative), folder / relative, str(relative)) for relative in notebooks], skipped
    return _with_roster(folder, notebooks, _roster_ids(roster), skipped), skipped


def _student(relative: Path) -> str:
    return relative.parts[0] if len(relative.parts) > 1 else re.sub(r"\.ipynb$", "", relative.name, flags=re.I)


def _roster_ids(roster: Path) -> list[str]:
    with roster.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        if "id" not in (reader.fieldnames or []):
            raise SystemExit(f"make grade: the roster {roster} has no `id` column (columns: {reader.fieldnames})")
        return [row["id"].strip() for row in reader if row["id"].strip()]


def _with_roster(folder: Path, notebooks: list[Path], ids: list[str], skipped: list[str]) -> list[Submission]:
    submissions, claimed = [], set()
    for student in ids:
        pattern = re.compile(rf"(?<![0-9A-Za-z]){re.escape(student)}(?![0-9A-Za-z])", re.I)
        mine = [n for n in notebooks if pattern.search(str(n))]
        submissions += [Submission(student, folder / n, str(n)) for n in mine]
        claimed.update(mine)
        if not mine:
            submissions.append(Submission(student, None))
    for notebook in notebooks:
        if notebook not in claimed:
            submissions.append(Submission(_student(notebook), folder / notebook, str(notebook)))
            skipped.append(f"{notebook} (graded, but its path names no roster id)")
    return submissions


# --------------------------------------------------------------------------- the sandbox


def sandbox_command(work: Path, command: list[str]) -> list[str]:
    """``command`` under bubblewrap, with ``work`` (same path inside) as its only writable folder.

    /tmp stays read-only rather than a new tmpfs, because the venv may itself live under /tmp.
    """
    (work / "tmp").mkdir(exist_ok=True)
    return [
        "bwrap",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--bind",
        str(work),
        str(work),
        "--unshare-all",
        "--uid",
        "65534",
        "--gid",
        "65534",
        "--cap-drop",
        "ALL",
        "--die-with-parent",
        "--new-session",
        "--chdir",
        str(work),
        "--setenv",
        "HOME",
        str(work),
        "--setenv",
        "TMPDIR",
        str(work / "tmp"),
        "--setenv",
        "MPLBACKEND",
        "Agg",
        "--",
        *command,
    ]


def sandbox_available() -> str:
    """ "" when bubblewrap can make the sandbox here, or why not."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed (Debian: apt-get install bubblewrap)"
    with tempfile.TemporaryDirectory() as work:
        run = subprocess.run(sandbox_command(Path(work), ["true"]), capture_output=True, text=True)
    return "" if run.returncode == 0 else f"bwrap cannot make a sandbox here: {run.stderr.strip()[:300]}"


def _limits(cpu_seconds: float):
    def apply():
        resource.setrlimit(resource.RLIMIT_CPU, (int(cpu_seconds), int(cpu_seconds) + 5))
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


# --------------------------------------------------------------------------- one submission (in the sandbox)


def execute(archive_path: Path, submission: Path, cell_timeout: int) -> None:
    """Run one notebook with otter and the autograder's plugin, which writes the record ($CHAINRULE_GRADING_RECORD)."""
    import nbconvert.preprocessors
    from traitlets import Bool, Integer

    class TimedExecutePreprocessor(nbconvert.preprocessors.ExecutePreprocessor):
        timeout = Integer(cell_timeout, allow_none=True).tag(config=True)
        interrupt_on_timeout = Bool(True).tag(config=True)

    # otter.execute imports ExecutePreprocessor when it runs, so it gets this one: a cell
    # that runs too long is interrupted, and the notebook goes on to the next cell.
    nbconvert.preprocessors.ExecutePreprocessor = TimedExecutePreprocessor
    import otter.api

    otter.api.grade_submission(str(submission), str(archive_path), quiet=True)


# --------------------------------------------------------------------------- one submission (the grader's side)


def prepare(submission: Submission, assignment: str, folder: Path) -> tuple[Path | None, str]:
    """The notebook copied into ``folder`` for the sandbox, or None and the status that says why not."""
    import nbformat

    try:
        notebook = nbformat.read(submission.path, as_version=4)
    except Exception as error:  # noqa: BLE001 - not JSON, not a notebook: this submission's fault
        return None, f"not a readable notebook ({type(error).__name__}: {_one_line(str(error))[:120]})"
    named = notebook.metadata.get("otter", {}).get("assignment_name")
    if named and named != assignment:
        return None, (
            f"submitted the {named} notebook for the {assignment} assignment (its metadata names assignment '{named}')"
        )
    # A notebook whose cells were copied into a new one has lost otter's metadata: grade it as this one.
    notebook.metadata.setdefault("otter", {})["assignment_name"] = assignment
    copy = folder / "submission.ipynb"
    nbformat.write(notebook, copy)
    return copy, ""


def grade_one(
    archive_path: Path, tests: dict[str, str], submission: Submission, assignment: str, options: argparse.Namespace
) -> tuple[Result, Path | None]:
    """Run one notebook in the sandbox; returns the result without scores and the record's path."""
    start = time.monotonic()
    result = Result(submission.student, submission.file)
    if submission.path is None:
        result.status = "no submission"
        return result, None
    work = Path(tempfile.mkdtemp(prefix="grade-"))
    copy, status = prepare(submission, assignment, work)
    if copy is None:
        result.status = status
        return result, None
    command = [
        sys.executable,
        __file__,
        "--execute",
        str(archive_path),
        str(copy),
        "--cell-timeout",
        str(options.cell_timeout),
    ]
    environment = dict(os.environ, CHAINRULE_GRADING_RECORD=str(work))
    if options.sandboxed:
        command = sandbox_command(work, command)
    child = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=work,
        env=environment,
        start_new_session=True,
        preexec_fn=_limits(options.timeout),
    )
    try:
        child.communicate(timeout=options.timeout)
    except subprocess.TimeoutExpired:
        result.status = f"stopped after {options.timeout:g} s"
    finally:
        try:
            os.killpg(child.pid, signal.SIGKILL)  # a kernel left behind by the child
        except ProcessLookupError:
            pass
        child.communicate()
    result.seconds = time.monotonic() - start
    return result, work


def score(result: Result, work: Path | None, tests: dict[str, str]) -> Result:
    """Scores and messages for ``result``, computed in this process from the sandbox's record."""
    from chainrule import grading

    if work is None:
        data, problem = None, result.status
    else:
        data, problem = grading.read_record(work / "record.json")
        shutil.rmtree(work, ignore_errors=True)
        if data is None and result.status == "graded":
            result.status = problem
    for name, test_file in grading.score(tests, data, problem).items():
        result.scores[name] = float(test_file.score)
        result.messages[name] = [
            f"{'hidden' if r.test_case.hidden else 'public'} test {r.test_case.name}: "
            + ("passed" if r.passed else (r.message or "failed").replace("❌ Test case failed\n", "failed\n"))
            for r in test_file.test_case_results
        ]
        result.mistakes[name] = list(test_file.mistakes)
    if data is not None and data.get("used"):
        result.status = f"refused: the notebook imported {', '.join(map(str, data['used']))}"
    elif data is not None and data.get("changed"):
        names = ", ".join(map(str, data["changed"]))[:300]
        result.status = f"graded; the notebook changed the grader's code ({names}), which counts for nothing"
    return result


def _one_line(text: str) -> str:
    return " ".join(text.split())


# --------------------------------------------------------------------------- the batch


def _points(value: float) -> str:
    """Points as the CSV shows them: 2, 1.5, 0.67 (a part of a question can be a third of its points)."""
    return f"{round(value, 2):g}"


def write_outputs(folder: Path, points: dict[str, float], results: list[Result], keep: bool = False) -> Path:
    """grades.csv, feedback/ and summary.html; with ``keep``, rows of students not in ``results`` stay."""
    table = folder / "grades.csv"
    header = ["student", "file", *points, "total", "possible", "status"]
    rows = {}
    if keep and table.is_file():
        with table.open(newline="") as handle:
            rows = {(row["student"], row["file"]): row for row in csv.DictReader(handle)}
    regraded = {result.student for result in results}
    rows = {k: row for k, row in rows.items() if row["student"] not in regraded}
    possible = sum(points.values())
    for result in results:
        scores = [result.scores.get(name, 0.0) for name in points]
        rows[(result.student, result.file)] = dict(
            zip(
                header,
                [
                    result.student,
                    result.file,
                    *map(_points, scores),
                    _points(sum(scores)),
                    _points(possible),
                    result.status,
                ],
            )
        )
    with table.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, header, extrasaction="ignore", restval="")
        writer.writeheader()
        writer.writerows(row for _, row in sorted(rows.items()))
    feedback = folder / "feedback"
    feedback.mkdir(exist_ok=True)
    for result in results:
        lines = [
            f"{result.student} ({result.file or 'no notebook'}): {_points(sum(result.scores.values()))} of "
            f"{_points(possible)} points ({result.status})",
            "",
        ]
        for name, most in points.items():
            lines.append(f"{name}: {_points(result.scores.get(name, 0.0))} of {_points(most)}")
            lines += ["    " + line for message in result.messages.get(name, []) for line in message.splitlines()]
            lines.append("")
        (feedback / f"{_file_name(result.student)}.txt").write_text("\n".join(lines))
        (feedback / f"{_file_name(result.student)}.json").write_text(json.dumps({"mistakes": result.mistakes}))
    write_summary(folder, points, list(rows.values()))
    return table


def _file_name(student: str) -> str:
    return re.sub(r"[^0-9A-Za-z._-]+", "_", student).strip("._") or "student"


def mistakes(folder: Path, student: str) -> dict[str, list[str]]:
    """The known mistakes that a student's checks named, per question (feedback/<id>.json; {} when none)."""
    path = folder / "feedback" / f"{_file_name(student)}.json"
    try:
        return json.loads(path.read_text())["mistakes"]
    except (OSError, ValueError, KeyError):
        return {}


def write_summary(folder: Path, points: dict[str, float], rows: list[dict]) -> Path:
    """summary.html: each question's mean, a histogram of its scores, and its commonest mistakes."""
    graded = [row for row in rows if row["file"]]
    named = [mistakes(folder, row["student"]) for row in graded]
    parts = [f"<h1>{html.escape(folder.name)}: {len(graded)} notebooks graded</h1>"]
    for name, most in points.items():
        scores = [float(row[name]) for row in graded if row.get(name, "") != ""]
        mean = sum(scores) / len(scores) if scores else 0.0
        counts = collections.Counter(scores)
        bars = "".join(
            f"<tr><td>{value:g}</td><td><span style='display:inline-block;height:1em;background:#4a6fa5;"
            f"width:{20 * counts[value]}px'></span> {counts[value]}</td></tr>"
            for value in sorted(set(counts) | {0.0, most})
        )
        common = collections.Counter(m for found in named for m in set(found.get(name, [])))
        listed = "".join(f"<li>{html.escape(text)} ({n})</li>" for text, n in common.most_common(5))
        parts.append(
            f"<h2>{html.escape(name)}: mean {mean:.2f} of {most:g}</h2><table>{bars}</table>"
            + (f"<p>Commonest mistakes in this run:</p><ul>{listed}</ul>" if listed else "")
        )
    path = folder / "summary.html"
    path.write_text(
        "<!doctype html><meta charset='utf-8'><title>Grades summary</title>"
        "<body style='font-family:sans-serif;max-width:40em'>" + "".join(parts) + "</body>"
    )
    return path


# --------------------------------------------------------------------------- written work

#: The prompt above a written answer cell (tools/assignments.py writes it under each question).
WRITTEN_PROMPT_TEXT = (
    "**Your working for Exercise {number}** (graded by hand). Write the derivation or the "
    "reasoning behind your answer in the cell below, step by step; a graph can be a list of "
    "its edges. Write maths between dollar signs, for example $\\partial L / \\partial x$."
)
#: Its first words, by which the grader finds the answer below it.
WRITTEN_PROMPT = re.compile(re.escape(WRITTEN_PROMPT_TEXT.split("{number}")[0]) + r"(\S+)\*\*")
PLACEHOLDER = "_Type your answer here, replacing this text._"  # otter's empty Markdown answer cell
END_OF_ANSWER = ("<!-- END QUESTION -->", "<!-- BEGIN QUESTION -->")


def read_written(archive_path: Path) -> list[dict]:
    """The questions with written work: [{"name", "number", "points"}], from the zip's ``written.json``."""
    with zipfile.ZipFile(archive_path) as archive:
        if "written.json" not in archive.namelist():
            return []
        return json.loads(archive.read("written.json"))


def written_work(notebook, number: str) -> list[tuple[str, str]] | None:
    """The cells a student wrote under Exercise ``number``'s written prompt, as (cell type, source).

    None when the prompt is not in the notebook; [] when the answer cell is still otter's
    placeholder or empty.
    """
    cells = notebook.get("cells", [])
    start = next(
        (
            i
            for i, cell in enumerate(cells)
            if cell.get("cell_type") == "markdown" and any(m[1] == number for m in WRITTEN_PROMPT.finditer(_text(cell)))
        ),
        None,
    )
    if start is None:
        return None
    work = []
    for cell in cells[start + 1 :]:
        text = _text(cell)
        if text.lstrip().startswith(END_OF_ANSWER) or WRITTEN_PROMPT.search(text):
            break
        if text.strip() and text.strip() != PLACEHOLDER:
            work.append((cell.get("cell_type", "markdown"), text))
    return work


def _text(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def render_markdown(text: str) -> str:
    """A student's Markdown as HTML for the instructor: raw HTML escaped, maths left for MathJax."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    def math(content: str, options: dict) -> str:
        return (
            (r"\[" + html.escape(content) + r"\]")
            if options.get("display_mode")
            else (r"\(" + html.escape(content) + r"\)")
        )

    parser = MarkdownIt("commonmark", {"html": False}).use(dollarmath_plugin, renderer=math)
    return parser.render(text)


def write_written(folder: Path, written: list[dict], submissions: list[Submission]) -> Path | None:
    """``written/<id>.html`` per student and ``written/index.html``: the written work, to grade by hand.

    MathJax comes from the django-static-mathjax wheel when it is installed (offline); without
    it the maths stays as TeX.
    """
    import nbformat

    if not written:
        return None
    out = folder / "written"
    out.mkdir(exist_ok=True)
    script = _mathjax(out)
    rows = []
    for submission in sorted(submissions, key=lambda s: s.student):
        if submission.path is None:
            continue
        try:
            notebook = nbformat.read(submission.path, as_version=4)
        except Exception:  # noqa: BLE001 - an unreadable notebook is reported by the grades
            notebook = {}
        parts, answered = [], []
        for question in written:
            work = written_work(notebook, question["number"])
            answered.append(bool(work))
            body = (
                "<p><em>The prompt of this question is not in the notebook.</em></p>"
                if work is None
                else "<p><em>Not answered.</em></p>"
                if not work
                else "".join(
                    render_markdown(text) if kind == "markdown" else f"<pre>{html.escape(text)}</pre>"
                    for kind, text in work
                )
            )
            parts.append(
                f"<h2>Exercise {html.escape(question['number'])} ({question['points']:g} point, by hand)</h2>{body}"
            )
        page = out / f"{_file_name(submission.student)}.html"
        page.write_text(_page(f"{submission.student}: written work", parts, script))
        done = ", ".join(q["number"] for q, given in zip(written, answered) if given) or "none"
        rows.append(
            f"<li><a href='{html.escape(page.name)}'>{html.escape(submission.student)}</a>: "
            f"answered {html.escape(done)}</li>"
        )
    index = out / "index.html"
    index.write_text(_page(f"{folder.name}: written work", [f"<ul>{''.join(rows)}</ul>"], ""))
    return index


def _mathjax(out: Path) -> str:
    try:
        import mathjax
    except ImportError:
        return ""
    source = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5" / "tex-svg.js"
    if not source.is_file():
        return ""
    shutil.copyfile(source, out / "mathjax.js")
    return "<script defer src='mathjax.js'></script>"


def _page(title: str, parts: list[str], script: str) -> str:
    return (
        f"<!doctype html><html lang='en'><meta charset='utf-8'><meta name='viewport' "
        f"content='width=device-width'><title>{html.escape(title)}</title>{script}"
        "<body style='font-family:sans-serif;max-width:44em;margin:auto;padding:1em;line-height:1.5'>"
        f"<h1>{html.escape(title)}</h1>{''.join(parts)}</body></html>"
    )


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
        submissions = [s for s in submissions if s.student in only]
        unknown = sorted(set(only) - {s.student for s in submissions})
        if unknown:
            raise SystemExit(f"make grade: no notebook for {', '.join(unknown)} in {folder}")
    if not any(s.path for s in submissions):
        raise SystemExit(f"make grade: no .ipynb files in {folder}")
    tests = read_tests(archive_path)
    return _Folder(assignment, folder, archive_path, found, skipped, submissions, tests, questions(tests))


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
        cell_timeout=cell_timeout, timeout=timeout, sandboxed=not why_not and sandbox != "none"
    )
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futures = {
            pool.submit(grade_one, one.archive_path, one.tests, s, one.assignment, options): one
            for one in folders
            for s in one.submissions
        }
        for future in concurrent.futures.as_completed(futures):
            one = futures[future]
            result = score(*future.result(), one.tests)  # in this thread: the checks use signals
            one.results.append(result)
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
            f"{' in the sandbox' if options.sandboxed else ''}; skipped {len(one.skipped)} other files; wrote "
            f"{table}, {one.folder / 'summary.html'}, {one.folder / 'feedback'}/"
            + (f" and the written work to grade by hand, {written}" if written else "")
        )
    return [one.results for one in folders]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--execute", action="store_true", help=argparse.SUPPRESS)
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
    if args.execute:
        execute(Path(args.assignment), args.submissions, args.cell_timeout)
        return 0
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
