"""What chainrule_course.grading.grade writes for the instructor, from the results it computed: the reports.

- ``grades.csv`` (one row per notebook), ``feedback/<id>.txt`` (each test's message) and
  ``feedback/<id>.json`` (the known mistakes its checks named, as data);
- ``summary.html``: per question the mean, a histogram and the commonest mistakes;
- ``written/``: each student's written work, with the maths set by an offline MathJax, to grade
  by hand, and the prompt above each written answer cell (tools/grader/assignments.py writes it).

The standard library only, until a report is written.
"""

from __future__ import annotations

import collections
import csv
import hashlib
import html
import json
import re
import shutil
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

# --------------------------------------------------------------------------- what a grading run gives


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
    status: str = "graded"  # graded, "review: <why>", or why it could not be graded
    seconds: float = 0.0
    review: list[str] = field(default_factory=list)  # what of the notebook a human should look at
    code: list[str] = field(default_factory=list, repr=False)  # the notebook's code cells, for the grader's reading
    record: dict = field(default_factory=dict, repr=False)  # what the answers returned, written by the grader


# --------------------------------------------------------------------------- grades, feedback, summary


def _points(value: float) -> str:
    """Points as the CSV shows them: 2, 1.5, 0.67 (a part of a question can be a third of its points)."""
    return f"{round(value, 2):g}"


def write_outputs(folder: Path, points: dict[str, float], results: list[Result], keep: bool = False) -> Path:
    """grades.csv, feedback/ and summary.html; with ``keep``, rows of students not in ``results`` stay."""
    table, rows = write_table(folder, points, results, keep)
    for result in results:
        write_feedback(folder, points, result)
    write_summary(folder, points, rows)
    return table


def write_table(
    folder: Path, points: dict[str, float], results: list[Result], keep: bool = False
) -> tuple[Path, list[dict]]:
    """grades.csv with a row per result (and, with ``keep``, the other students' rows); and its rows.

    The grader writes it again after each notebook, so a run that stops half-way keeps what it
    graded; the file is replaced whole, never left half-written.
    """
    table = folder / "grades.csv"
    header = ["student", "file", *points, "total", "possible", "status"]
    rows = {}
    if keep and table.is_file():
        with table.open(newline="") as handle:
            for row in csv.DictReader(handle):
                row = {key: from_cell(value or "") for key, value in row.items()}
                rows[row["student"], row["file"]] = row
    regraded = {result.student for result in results}
    rows = {k: row for k, row in rows.items() if row["student"] not in regraded}
    possible = sum(points.values())
    for result in results:
        scores = [result.scores.get(name, 0.0) for name in points]
        values = [result.student, result.file, *map(_points, scores), _points(sum(scores)), _points(possible)]
        rows[(result.student, result.file)] = dict(zip(header, [*values, result.status], strict=True))
    partial = table.with_name(".grades.csv.partial")
    with partial.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, header, extrasaction="ignore", restval="")
        writer.writeheader()
        writer.writerows({k: as_cell(v) for k, v in row.items()} for _, row in sorted(rows.items()))
    partial.replace(table)
    return table, list(rows.values())


def write_feedback(folder: Path, points: dict[str, float], result: Result) -> None:
    """feedback/<name>.txt (each test's message), and .json (the mistakes named)."""
    feedback = folder / "feedback"
    feedback.mkdir(exist_ok=True)
    possible = sum(points.values())
    lines = [
        f"{result.student} ({result.file or 'no notebook'}): {_points(sum(result.scores.values()))} of "
        f"{_points(possible)} points ({result.status})",
        "",
    ]
    for name, most in points.items():
        lines.append(f"{name}: {_points(result.scores.get(name, 0.0))} of {_points(most)}")
        lines += ["    " + line for message in result.messages.get(name, []) for line in message.splitlines()]
        lines.append("")
    name = file_name(result.student, result.file)
    (feedback / f"{name}.txt").write_text("\n".join(lines))
    (feedback / f"{name}.json").write_text(json.dumps({"mistakes": result.mistakes}))


def file_name(student: str, file: str = "") -> str:
    """The name of a row's feedback and written-work files: readable, and never the same for two rows.

    Two notebooks of one student, ids that differ only in case, and ids of other scripts
    (李雷, 王芳) all get names of their own: the readable part is followed by a hash of the row.
    """
    readable = re.sub(r"[^0-9A-Za-z._-]+", "_", student).strip("._")[:60] or "student"
    return f"{readable}-{hashlib.sha256(f'{student}/{file}'.encode()).hexdigest()[:10]}"


def mistakes(folder: Path, student: str, file: str = "") -> dict[str, list[str]]:
    """The known mistakes that a row's checks named, per question (feedback/<name>.json; {} when none)."""
    path = folder / "feedback" / f"{file_name(student, file)}.json"
    try:
        return json.loads(path.read_text())["mistakes"]
    except (OSError, ValueError, KeyError):
        return {}


#: A CSV cell that starts with one of these is a formula to a spreadsheet (=HYPERLINK(...)).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def as_cell(text: str) -> str:
    """``text`` as a spreadsheet shows it, never run: a leading ' keeps a formula as text (OWASP's advice)."""
    return "'" + text if text.startswith(FORMULA_START) else text


def from_cell(text: str) -> str:
    return text[1:] if text.startswith("'") and text[1:].startswith(FORMULA_START) else text


def write_summary(folder: Path, points: dict[str, float], rows: list[dict]) -> Path:
    """summary.html: each question's mean, a histogram of its scores, and its commonest mistakes."""
    graded = [row for row in rows if row["file"]]
    named = [mistakes(folder, row["student"], row["file"]) for row in graded]
    parts = [f"<h1>{html.escape(folder.name)}: {len(graded)} notebooks graded</h1>", status_counts(rows)]
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


def status_kind(status: str) -> str:
    """graded, review, no submission or not graded: what an instructor does with the row."""
    if status in ("graded", "no submission"):
        return status
    return "review" if status.startswith("review") else "not graded"


def status_counts(rows: list[dict]) -> str:
    """The rows by status, as HTML: counts, then each row that needs a human, with why."""
    kinds = collections.Counter(status_kind(row["status"]) for row in rows)
    counts = ", ".join(f"{kinds[kind]} {kind}" for kind in ("graded", "review", "not graded", "no submission"))
    listed = "".join(
        f"<li>{html.escape(row['student'])} ({html.escape(row['file'] or 'no file')}): "
        f"{html.escape(row['status'])}</li>"
        for row in rows
        if status_kind(row["status"]) in ("review", "not graded")
    )
    return f"<p>By status: {counts}.</p>" + (f"<p>To look at:</p><ul>{listed}</ul>" if listed else "")


# --------------------------------------------------------------------------- written work

#: The prompt above a written answer cell (tools/grader/assignments.py writes it under each question).
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

    def image(renderer, tokens, index, options, env) -> str:  # shown as text: the page fetches nothing remote
        token = tokens[index]
        return f"[image: {html.escape(token.content)} ({html.escape(token.attrGet('src') or '')})]"

    parser = MarkdownIt("commonmark", {"html": False}).use(dollarmath_plugin, renderer=math)
    parser.add_render_rule("image", image)
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
        page = out / f"{file_name(submission.student, submission.file)}.html"
        page.write_text(_page(f"{submission.student}: written work", parts, script))
        done = ", ".join(q["number"] for q, given in zip(written, answered, strict=True) if given) or "none"
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
    # The -full build holds every TeX extension (\boldsymbol, \cancel, \color): offline, MathJax
    # could not load one on demand, and a student's TeX would stay raw.
    source = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5" / "tex-svg-full.js"
    if not source.is_file():
        return ""
    shutil.copyfile(source, out / "mathjax.js")
    return "<script defer src='mathjax.js'></script>"


#: What a written-work page may load: its own MathJax, nothing from elsewhere (a student's Markdown
#: could otherwise make the instructor's browser fetch an image from a server of theirs).
POLICY = "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src data:; font-src data:"


def _page(title: str, parts: list[str], script: str) -> str:
    return (
        f"<!doctype html><html lang='en'><meta charset='utf-8'><meta name='viewport' "
        f"content='width=device-width'><meta http-equiv='Content-Security-Policy' content=\"{POLICY}\">"
        f"<title>{html.escape(title)}</title>{script}"
        "<body style='font-family:sans-serif;max-width:44em;margin:auto;padding:1em;line-height:1.5'>"
        f"<h1>{html.escape(title)}</h1>{''.join(parts)}</body></html>"
    )
