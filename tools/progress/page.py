"""The report as one HTML page: no script, no file beside it, light and dark, legible on a phone.

Every text that comes from a student's file (its path, a kind's or a mistake's name, a date)
is escaped where it is written into the page (:func:`esc`); the page's policy allows no script
and nothing fetched, so that even an unescaped one would run nothing. Each chart is followed by
a table of the same numbers. Nothing makes the page itself scroll sideways on a 390 px phone: each
table is in a box of its own that scrolls when the table is wider (the students' is, there), a box
the keyboard reaches and scrolls, and a name or a value from a file wraps anywhere, even one without
a space, a slash, an underscore or a hyphen.
"""

from __future__ import annotations

import html
from datetime import datetime
from pathlib import Path

from tools.progress.charts import Bar, bar_chart, count_ticks, percent_ticks
from tools.progress.checks import FAST_RUN, FASTEST_SECONDS, MAX_ANSWERS_PER_KIND, plural
from tools.progress.edition import Edition
from tools.progress.records import Folder, Record, read_folder
from tools.progress.tally import ChapterRow, Class, KindRow, tally

#: Nothing runs and nothing is fetched: the styles are the page's own, the icon none.
POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
STYLE = """
:root { color-scheme: light dark; --fg: #1a1a1a; --bg: #fff; --muted: #4d4d4d; --bar: #1f4e9c; --grid: #c8c8c8;
  --line: #c4c4c4; --box: #f3f5f9; --link: #0b57d0; --bad: #8a1c00; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e8e8e8; --bg: #121212; --muted: #bdbdbd; --bar: #8ab4f8; --grid: #4a4a4a; --line: #4a4a4a;
    --box: #1d2230; --link: #9cc0ff; --bad: #ffb4a2; }
}
body { font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg);
  max-width: 50rem; margin: 0 auto; padding: 1rem 0.75rem 3rem; }
h1 { font-size: 1.6rem; line-height: 1.25; margin: 0.5rem 0; }
h2 { font-size: 1.3rem; line-height: 1.3; margin: 2.5rem 0 0.5rem; border-top: 1px solid var(--line);
  padding-top: 1rem; }
a { color: var(--link); }
.meta, .note { color: var(--muted); }
.honest { background: var(--box); border-left: 4px solid var(--bar); padding: 0.25rem 1rem 0.5rem; margin: 1rem 0; }
.honest h2 { border: 0; margin-top: 0.5rem; padding-top: 0; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; font-size: 0.85rem; background: var(--bg); padding: 0.5rem;
  border: 1px solid var(--line); }
figure { margin: 1rem 0 0.5rem; }
figure svg { display: block; }
.chart text { fill: var(--fg); }
.chart .solid { fill: var(--bar); }
.chart .hatch, .chart .track { stroke: var(--bar); }
.chart .grid { stroke: var(--grid); }
table { border-collapse: collapse; width: 100%; margin: 0.5rem 0 1rem; font-size: 0.9rem; }
caption { text-align: left; font-weight: 600; padding: 0.25rem 0; }
th, td { text-align: left; vertical-align: top; padding: 0.3rem 0.4rem; border-bottom: 1px solid var(--line);
  overflow-wrap: break-word; }
/* What a file gave (a name, a path, a quoted value) wraps anywhere: it may have no space. */
.name, #findings ul, tr.sub td { overflow-wrap: anywhere; }
tbody th { font-weight: 400; }
thead th { border-bottom: 2px solid var(--fg); }
th.n, td.n { text-align: right; }
td.n { white-space: nowrap; }
tr.sub td { padding-left: 1.2rem; border-bottom: 1px solid var(--line); font-size: 0.95em; }
tr:has(+ tr.sub) > * { border-bottom: 0; }
.scroll { overflow-x: auto; }
.scroll:focus-visible { outline: 2px solid var(--link); outline-offset: 2px; }
#each-student { min-width: 34rem; }
ul.names { display: flex; flex-wrap: wrap; gap: 0.15rem 1rem; list-style: none; padding: 0; margin: 0.25rem 0 1rem; }
ul.tight { margin: 0; padding-left: 1.1rem; }
.bad { color: var(--bad); font-weight: 600; }
nav ol { columns: 2 16rem; column-gap: 3rem; padding-left: 1.5rem; }
@media (max-width: 30rem) {
  table { font-size: 0.85rem; }
  th, td { padding: 0.25rem 0.25rem; }
}
"""


def esc(value: object) -> str:
    """Text for the page: escaped, control characters shown as U+FFFD (a file's name may hold any)."""
    words = "".join(c if c >= " " or c in "\t\n" else "\ufffd" for c in str(value))
    return html.escape(words, quote=True)


def breakable(value: object) -> str:
    """A name or a path for the page, escaped, that breaks after a slash, an underscore or a hyphen first, anywhere
    if it must (class ``name``)."""
    text = "".join(f"{esc(c)}<wbr>" if c in "/_-" else esc(c) for c in str(value))
    return f'<span class="name">{text}</span>'


def percent(share: float | None) -> str:
    return "\u2014" if share is None else f"{round(100 * share)}\u00a0%"


def when(moment: datetime | None, clock: bool = True) -> str:
    return "\u2014" if moment is None else moment.strftime("%Y-%m-%d %H:%M UTC" if clock else "%Y-%m-%d")


def flagged_note(count: int) -> str:
    """Under a count that flagged records are part of: how many such records."""
    return f'<br><span class="note">{count} flagged</span>' if count else ""


def table(
    ident: str,
    caption: str,
    headings: list[str],
    rows: list[tuple[str, list[str]]],
    numeric: set[int],
    notes: dict[str, str] | None = None,
) -> str:
    """A table; ``rows`` are (key, cells as HTML), the first cell the row's header; ``numeric`` the right-aligned
    columns. ``key`` (escaped) is the row's ``data-key``, which the tests read; ``notes[key]`` is a row of its own
    under it, across the table. The table is in a box that scrolls sideways when it is wider than the page: a
    region named by the caption, which the keyboard reaches (``tabindex``) and scrolls."""
    head = "".join(
        f'<th scope="col"{" class=n" if index in numeric else ""}>{esc(word)}</th>'
        for index, word in enumerate(headings)
    )
    body = []
    for key, cells in rows:
        first = f'<th scope="row">{cells[0]}</th>'
        rest = "".join(
            f"<td{' class=n' if index in numeric else ''}>{cell}</td>" for index, cell in enumerate(cells[1:], start=1)
        )
        body.append(f'<tr data-key="{esc(key)}">{first}{rest}</tr>')
        if notes and notes.get(key):
            body.append(
                f'<tr class="sub" data-key="{esc(key)} notes"><td colspan="{len(cells)}">{notes[key]}</td></tr>'
            )
    text = (
        f'<table id="{esc(ident)}"><caption>{esc(caption)}</caption><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
    )
    return f'<div class="scroll" role="region" aria-label="{esc(caption)}" tabindex="0">{text}</div>'


def names_list(ident: str, names: list[str]) -> str:
    return f'<ul class="names" id="{esc(ident)}">' + "".join(f"<li>{breakable(name)}</li>" for name in names) + "</ul>"


def short(chapter: str) -> str:
    """``chapters/graph`` as an id's part: ``graph``."""
    return chapter.rsplit("/", 1)[-1]


def capital(title: str) -> str:
    return title[:1].upper() + title[1:]


def chapter_link(row: ChapterRow) -> str:
    return f'<a href="#chapter-{esc(short(row.chapter.chapter))}">{row.chapter.number}. {esc(row.chapter.title)}</a>'


def overview(result: Class) -> str:
    """The chart of who practised each chapter, and the table of every chapter's numbers."""
    count = len(result.students)
    bars = [
        Bar(
            f"{row.chapter.number}. {row.chapter.title}", len(row.practised) / count, f"{len(row.practised)} of {count}"
        )
        for row in result.chapters
    ]
    said = "; ".join(f"chapter {row.chapter.number}, {len(row.practised)}" for row in result.chapters)
    alt = (
        f"Bar chart: how many of the {plural(count, 'student')} practised each chapter: {said}. "
        "The table below has the numbers."
    )
    chart = bar_chart(
        bars, ident="chapters", alt=alt, ticks=count_ticks(count), names=("practised", "not yet"), unit="students"
    )
    rows = [
        (
            short(row.chapter.chapter),
            [
                chapter_link(row),
                str(len(row.practised)),
                str(row.answers) + flagged_note(row.flagged),
                percent(row.share),
                f"{row.finished:.1f} of {len(row.chapter.exercises)}",
            ],
        )
        for row in result.chapters
    ]
    headings = ["Chapter", f"Students practised (of {count})", "Drill answers", "Right", "Exercises finished (mean)"]
    caption = "Each chapter: the students who practised it, their drill answers and exercises"
    return (
        '<section aria-labelledby="glance"><h2 id="glance">The class at a glance</h2>'
        f"<figure>{chart}</figure>" + table("chapters", caption, headings, rows, {1, 2, 3, 4}) + "</section>"
    )


def mistakes_note(row: KindRow) -> str:
    """The row under a kind's: its mistakes named most often, how often and by how many students."""
    if not row.mistakes:
        return "No mistake named." if row.answers else ""
    items = "; ".join(
        f"{esc(m.name)} ({plural(m.times, 'time')}, {plural(m.students, 'student')})" for m in row.mistakes
    )
    return f"Mistakes named most often: {items}."


def kinds_part(row: ChapterRow) -> str:
    """A chapter's drill kinds: the chart of their shares right, then their table with the mistakes."""
    if not row.kinds:
        return ""
    name = short(row.chapter.chapter)
    bars = [
        Bar(
            f"{capital(k.kind.title)} ({plural(k.answers, 'answer')})",
            k.share,
            percent(k.share) if k.answers else "no answers",
        )
        for k in row.kinds
    ]
    said = "; ".join(f"{k.kind.title}, {percent(k.share) if k.answers else 'no answers'}" for k in row.kinds)
    alt = f"Bar chart: the share of answers right, per drill of chapter {row.chapter.number}: {said}."
    chart = bar_chart(bars, ident=f"kinds-{name}", alt=alt + " The table below has the numbers.", ticks=percent_ticks(),
                      names=("right", "wrong"), unit="% right")  # fmt: skip
    rows = [
        (
            k.kind.name,
            [
                f"{esc(capital(k.kind.title))} <span class=note>({esc(k.kind.name)})</span>",
                str(k.students),
                str(k.answers) + flagged_note(k.flagged),
                percent(k.share),
            ],
        )
        for k in row.kinds
    ]
    notes = {k.kind.name: mistakes_note(k) for k in row.kinds}
    caption = f"Drills of chapter {row.chapter.number}, and the mistakes named most often"
    headings = ["Drill", "Students", "Answers", "Right"]
    return f"<figure>{chart}</figure>" + table(f"kinds-{name}", caption, headings, rows, {1, 2, 3}, notes)


def exercises_part(row: ChapterRow) -> str:
    if not row.exercises:
        return ""
    rows = [
        (
            e.label,
            [
                f"Exercise {e.number} <span class=note>({breakable(e.label)})</span>",
                str(e.checked),
                str(e.passed),
                str(e.done),
            ],
        )
        for e in row.exercises
    ]
    headings = ["Exercise", "Checked in the page", "Last check passed", "Marked done"]
    caption = f"Exercises of chapter {row.chapter.number}: how many students"
    return table(f"exercises-{short(row.chapter.chapter)}", caption, headings, rows, {1, 2, 3})


def chapter_section(row: ChapterRow, count: int) -> str:
    name = short(row.chapter.chapter)
    if not row.not_yet:
        waiting = "<p>Every student has practised it.</p>"
    else:
        waiting = (
            f"<p><strong>Not practised yet</strong> ({len(row.not_yet)}): no drill answered, no exercise "
            f"checked or marked done.</p>{names_list(f'not-yet-{name}', row.not_yet)}"
        )
    return (
        f'<section id="chapter-{esc(name)}" aria-labelledby="title-{esc(name)}">'
        f'<h2 id="title-{esc(name)}">{row.chapter.number}. {esc(row.chapter.title)}</h2>'
        f"<p>Practised by {len(row.practised)} of {plural(count, 'student')}.</p>{waiting}"
        f"{kinds_part(row)}{exercises_part(row)}</section>"
    )


def verdict(record: Record) -> str:
    if not record.counted:
        return '<span class="bad">not counted</span>'
    return "counted, flagged" if record.flagged else "counted, with a note"


def findings_part(records: list[Record]) -> str:
    """The table of every record that is not counted, or is counted with a flag or a note, and why."""
    heading = '<section aria-labelledby="records"><h2 id="records">Records not counted, or counted with a warning</h2>'
    shown = sorted((record for record in records if record.findings), key=lambda r: (r.counted, not r.flagged, r.file))
    if not shown:
        return heading + "<p>None: every record was read and counted.</p></section>"
    rows = []
    for record in shown:
        findings = sorted(record.findings, key=lambda finding: (finding.counted, not finding.flagged))
        why = "".join(f"<li>{esc(finding.why)}</li>" for finding in findings)
        whose = f'{breakable(record.student)}<br><span class="note">{breakable(record.file)}</span>'
        rows.append((record.file, [whose, verdict(record), f'<ul class="tight">{why}</ul>']))
    left_out = sum(not record.counted for record in shown)
    caption = f"{plural(left_out, 'record')} not counted, {len(shown) - left_out} counted with a warning"
    return heading + table("findings", caption, ["Student and file", "Counted?", "Why"], rows, set()) + "</section>"


def students_part(result: Class, edition: Edition) -> str:
    rows = [
        (
            person.name,
            [
                breakable(person.name),
                f"{person.chapters} of {len(edition.chapters)}",
                str(person.answers),
                percent(person.right / person.answers if person.answers else None),
                str(person.finished),
                esc(when(person.latest, clock=False)) + flagged_note(int(person.flagged)),
            ],
        )
        for person in result.people
    ]
    headings = ["Student", "Chapters practised", "Drill answers", "Right", "Exercises finished", "Last practised"]
    return (
        '<section aria-labelledby="students"><h2 id="students">Each student</h2>'
        + table("each-student", "Each counted record", headings, rows, {1, 2, 3, 4})
        + "</section>"
    )


def honesty(folder: Folder) -> str:
    """What the numbers are worth: self-reported, what an edit looks like, what is checked."""
    left_out = sum(not record.counted for record in folder.records)
    flagged = sum(record.counted and record.flagged for record in folder.records)
    return f"""<section class="honest" aria-labelledby="honest"><h2 id="honest">These records are self-reported</h2>
<p>Each record is a file that a student's own browser wrote (the Practice page's <em>Export progress</em>) and
that the student handed in. Nothing signs it: anyone can open it in a text editor and change a number. Read these
numbers as what students say they practised, not as a test. A hand edit looks like this, first as the page
wrote a drill's entry, then edited:</p>
<pre><code>"adjoint": {{"attempts": 9, "right": 6, "last": "2026-11-20T10:02:11.512Z", "at": 41}}
"adjoint": {{"attempts": 1000, "right": 1000, "last": "2026-11-20T10:02:11.512Z", "at": 41}}</code></pre>
<p>Each record is held to what the page writes when a person answers with the clock right. A record the page
never writes (more right answers than answers, counts that contradict each other) is <strong>not counted</strong>.
One the page writes only with a wrong clock, at a pace no person answers, or where a person rarely goes (dates
more than a day after this report, {FAST_RUN} or more answers in under {FASTEST_SECONDS:g} s each on average,
more than {MAX_ANSWERS_PER_KIND} answers to one drill, later answers timed before earlier ones) is counted and
<strong>flagged</strong>, so that a wrong clock never costs a student their practice; a run of answers whose
times go backwards is not judged for its pace. Each is listed with what was seen in it. An edit that keeps
every rule cannot be told from practice. Here:
{plural(left_out, "record")} not counted, {plural(flagged, "record")} counted but flagged:
see <a href="#records">the records not counted, or counted with a warning</a>.</p></section>"""


def method() -> str:
    return """<section aria-labelledby="method"><h2 id="method">How the numbers are counted</h2>
<ul><li>A student <em>practised</em> a chapter when they answered one of its drills, or checked one of its
exercises in the page or marked it done.</li>
<li><em>Right</em> is the mean of the students' own shares of right answers: each student counts once, however
many answers they gave. In a student's row, it is their right answers over their answers.</li>
<li>A drill names a mistake when one known slip gives the wrong answer; records made before the drills kept
mistakes (format 1) name none.</li>
<li>A record made with another edition of the book's drills and exercises is counted for what this edition has;
the rest is listed with the record.</li>
<li><em>1 flagged</em> under a count: it includes a flagged record, one the page writes only with a wrong clock,
at a pace no person answers, or where a person rarely goes (see the records not counted, or counted with a
warning).</li>
<li>Of two records of one student, the one with the later answer is counted. Times are in UTC.</li></ul></section>"""


def page(folder_path: Path, folder: Folder, edition: Edition, result: Class, now: datetime) -> str:
    """The whole report."""
    counted = len(result.students)
    meta = (
        f"{plural(len(folder.records), 'record file')} read from {breakable(folder_path)} on {esc(when(now))}: "
        f"{counted} counted, {sum(not r.counted for r in folder.records)} not counted"
        + (f"; {plural(folder.other_files, 'other file')} (not .json) not read" if folder.other_files else "")
        + f". This book's edition of its drills and exercises: {esc(edition.version)}."
    )
    if not folder.records:
        body = (
            f"<p>No practice records were found under {breakable(folder_path)}. Put each student's exported "
            "<code>chainrule-progress.json</code> in it, in a folder per student or named by the student "
            "(<code>alice.json</code>), and run the report again.</p>"
        )
    elif not counted:
        body = honesty(folder) + "<p>No record could be counted.</p>" + findings_part(folder.records)
    else:
        contents = "".join(
            f'<li><a href="#chapter-{esc(short(row.chapter.chapter))}">{esc(row.chapter.title)}</a></li>'
            for row in result.chapters
        )
        body = (
            honesty(folder)
            + f'<nav aria-label="Chapters"><ol>{contents}</ol></nav>'
            + overview(result)
            + "".join(chapter_section(row, counted) for row in result.chapters)
            + findings_part(folder.records)
            + students_part(result, edition)
            + method()
        )
    name = folder_path.name or folder_path
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{POLICY}"><meta name="color-scheme" content="light dark">'
        f'<link rel="icon" href="data:,"><title>Practice records: {esc(name)}</title><style>{STYLE}</style></head>'
        f'<body><main><h1>Practice records: {breakable(name)}</h1><p class="meta">{meta}</p>{body}</main>'
        "</body></html>\n"
    )


def report(records: Path, edition: Edition, now: datetime, out: Path | None = None) -> tuple[str, Folder, Class]:
    """The report of the folder ``records`` (``out``, where it is written, is not read as a record):
    the page, the records read and the class's numbers."""
    folder = read_folder(records, edition, now, skip=out)
    result = tally(folder.records, edition)
    return page(records, folder, edition, result, now), folder, result
