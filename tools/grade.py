"""Grade a folder of submitted notebooks with an assignment's otter autograder, without Docker.

Usage: ``make grade ASSIGNMENT=<name> SUBMISSIONS=<dir>``, or
``python tools/grade.py <name> <dir> [--jobs N] [--cell-timeout S] [--timeout S]``.

Every ``*.ipynb`` in ``<dir>`` is graded in its own process, ``--jobs`` at a time (default:
the machine's cores), with ``otter.api.grade_submission`` and the autograder zip that
``make assignments`` wrote. It writes:

- ``<dir>/grades.csv``: one row per submission: the file name, one column per question,
  ``total``, ``possible`` and ``status`` (``graded``, or why the notebook could not be graded);
- ``<dir>/feedback/<submission>.txt``: the score of each question and the message of every
  test, public and hidden.

A bad submission never stops the batch. A cell that runs longer than ``--cell-timeout`` is
interrupted and grading goes on; inside the tests, ``chainrule.feedback`` stops any call
to a student's function after ``feedback.TIME_LIMIT`` seconds, so each question has a time
limit; a submission that still runs after ``--timeout`` seconds is killed and scores 0; a file
that is not a notebook scores 0. The reason is printed and written to the CSV.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import json
import os
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


@dataclass
class Result:
    file: str
    scores: dict[str, float] = field(default_factory=dict)
    messages: dict[str, list[str]] = field(default_factory=dict)
    status: str = "graded"
    seconds: float = 0.0


def questions(autograder_zip: Path) -> dict[str, float]:
    """Question name -> points, read from the tests in the autograder zip."""
    from otter.test_files import ExceptionTestFile

    points = {}
    with zipfile.ZipFile(autograder_zip) as archive:
        for name in sorted(archive.namelist()):
            if name.startswith("tests/") and name.endswith(".py"):
                test_file = ExceptionTestFile.from_string(archive.read(name).decode(), path=name)
                points[test_file.name] = sum(case.points for case in test_file.test_cases)
    return points


# --------------------------------------------------------------------------- one submission (a child process)


def grade_one(autograder_zip: Path, submission: Path, cell_timeout: int) -> dict:
    """Grade one notebook in this process; returns scores and messages as plain data."""
    import nbconvert.preprocessors
    import nbformat
    from traitlets import Bool, Integer

    class TimedExecutePreprocessor(nbconvert.preprocessors.ExecutePreprocessor):
        timeout = Integer(cell_timeout, allow_none=True).tag(config=True)
        interrupt_on_timeout = Bool(True).tag(config=True)

    # otter.execute imports ExecutePreprocessor when it runs, so it gets this one: a cell
    # that runs too long is interrupted, and the notebook goes on to the next cell.
    nbconvert.preprocessors.ExecutePreprocessor = TimedExecutePreprocessor
    import otter.api

    try:
        notebook = nbformat.read(submission, as_version=4)
    except Exception as error:  # noqa: BLE001 - not JSON, not a notebook: this submission's fault
        return {"status": f"not a readable notebook ({type(error).__name__}: {str(error)[:120]})"}
    with zipfile.ZipFile(autograder_zip) as archive:
        assignment = json.loads(archive.read("otter_config.json"))["assignment_name"]
    # A notebook whose cells were copied into a new one has lost otter's metadata: grade it
    # as this assignment. One that names another assignment is refused by otter (status).
    notebook.metadata.setdefault("otter", {}).setdefault("assignment_name", assignment)
    with tempfile.TemporaryDirectory(prefix="grade-") as folder:
        copy = Path(folder) / submission.name
        nbformat.write(notebook, copy)
        results = otter.api.grade_submission(str(copy), str(autograder_zip), quiet=True)
    if results.has_catastrophic_failure():
        return {"status": f"could not be graded: {str(results.catastrophic_error)[:200]}"}
    scores, messages = {}, {}
    for name, test_file in results.results.items():
        scores[name] = float(test_file.score)
        messages[name] = [
            f"{'hidden' if r.test_case.hidden else 'public'} test {r.test_case.name}: "
            + ("passed" if r.passed else (r.message or "failed").replace("❌ Test case failed\n", "failed\n"))
            for r in test_file.test_case_results
        ]
    return {"scores": scores, "messages": messages}


# --------------------------------------------------------------------------- the batch


def grade_in_child(autograder_zip: Path, submission: Path, cell_timeout: int, timeout: float) -> Result:
    """Run :func:`grade_one` in a child process that is killed, with its kernel, after ``timeout`` seconds."""
    start = time.monotonic()
    command = [sys.executable, __file__, "--one", str(autograder_zip), str(submission),
               "--cell-timeout", str(cell_timeout)]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        return Result(submission.name, status=f"stopped after {timeout:g} s", seconds=time.monotonic() - start)
    finally:
        try:
            os.killpg(child.pid, signal.SIGKILL)  # a kernel left behind by the child
        except ProcessLookupError:
            pass
    seconds = time.monotonic() - start
    try:
        data = json.loads(out.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return Result(submission.name, status=f"the grader failed: {err.strip()[-300:]}", seconds=seconds)
    return Result(submission.name, data.get("scores", {}), data.get("messages", {}), data.get("status", "graded"),
                  seconds)


def write_outputs(folder: Path, points: dict[str, float], results: list[Result]) -> Path:
    table = folder / "grades.csv"
    possible = sum(points.values())
    with table.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["file", *points, "total", "possible", "status"])
        for result in sorted(results, key=lambda r: r.file):
            scores = [result.scores.get(name, 0.0) for name in points]
            writer.writerow([result.file, *(f"{s:g}" for s in scores), f"{sum(scores):g}", f"{possible:g}",
                             result.status])
    feedback = folder / "feedback"
    feedback.mkdir(exist_ok=True)
    for result in results:
        lines = [f"{result.file}: {sum(result.scores.values()):g} of {possible:g} points ({result.status})", ""]
        for name, most in points.items():
            lines.append(f"{name}: {result.scores.get(name, 0.0):g} of {most:g}")
            lines += ["    " + line for message in result.messages.get(name, []) for line in message.splitlines()]
            lines.append("")
        (feedback / f"{Path(result.file).stem}.txt").write_text("\n".join(lines))
    return table


def grade_folder(assignment: str, folder: Path, jobs: int, cell_timeout: int, timeout: float,
                 assignments: Path = ASSIGNMENTS) -> list[Result]:
    autograder_zip = assignments / assignment / "autograder" / f"{assignment}-autograder.zip"
    if not autograder_zip.is_file():
        raise SystemExit(f"make grade: no autograder for {assignment!r} at {autograder_zip}; run `make assignments` "
                         f"(assignments: {', '.join(sorted(p.name for p in assignments.glob('*'))) or 'none yet'})")
    submissions = sorted(p for p in folder.glob("*.ipynb") if p.is_file())
    if not submissions:
        raise SystemExit(f"make grade: no .ipynb files in {folder}")
    points = questions(autograder_zip)
    start = time.monotonic()
    results = []
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        futures = [pool.submit(grade_in_child, autograder_zip, path, cell_timeout, timeout) for path in submissions]
        for future in concurrent.futures.as_completed(futures):
            result = future.result()
            results.append(result)
            print(f"{result.file}: {sum(result.scores.values()):g}/{sum(points.values()):g} in "
                  f"{result.seconds:.1f} s" + ("" if result.status == "graded" else f"  ({result.status})"),
                  flush=True)
    table = write_outputs(folder, points, results)
    print(f"graded {len(results)} submissions in {time.monotonic() - start:.1f} s with {jobs} at a time; "
          f"wrote {table} and {folder / 'feedback'}/")
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("assignment", help="an assignment name (a folder of _build/assignments), or with --one a zip")
    parser.add_argument("submissions", type=Path, help="a folder of .ipynb files (with --one: one notebook)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--cell-timeout", type=int, default=CELL_TIMEOUT, help="seconds per cell")
    parser.add_argument("--timeout", type=float, default=SUBMISSION_TIMEOUT, help="seconds per submission")
    parser.add_argument("--assignments", type=Path, default=ASSIGNMENTS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(grade_one(Path(args.assignment), args.submissions, args.cell_timeout)))
        return 0
    grade_folder(args.assignment, args.submissions, max(1, args.jobs), args.cell_timeout, args.timeout,
                 args.assignments)
    return 0


if __name__ == "__main__":
    sys.exit(main())
