"""A folder of practice records, read: each ``.json`` file under it a student's record, or a row saying why not.

A student's name is the file's path under the folder without ``.json`` (``alice.json`` is
``alice``), or, for a file the Practice page named (``chainrule-progress.json``, or
``chainrule-progress (1).json`` after a second download), its folder's path: learning platforms
and Gradescope put each student's files in a folder of their own (``alice/chainrule-progress.json``
is ``alice``). Hidden files and folders and macOS's ``__MACOSX`` copies are not records; files of
other types are counted, not read. Nothing a file holds stops the reading of the others.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from tools.progress.checks import Drill, Exercise, Fields, Finding, plural, quoted
from tools.progress.edition import Edition

#: The Practice page's Export names its file so; a browser adds " (1)" to a second download.
RECORD_FILE = re.compile(r"chainrule-progress.*\.json", re.IGNORECASE)
#: A record is a few kilobytes; a file much larger is something else, and is not read.
MAX_BYTES = 1_000_000
SKIPPED_FOLDERS = {"__MACOSX"}
BOOK_NAME = "chainrule"
FORMATS = (1, 2)


@dataclass
class Record:
    """One file read: whose, what of this edition it holds, and what was found wrong with it."""

    student: str
    file: str  # its path under the folder
    findings: list[Finding] = field(default_factory=list)
    format: int | None = None
    drills: dict[str, Drill] = field(default_factory=dict)  # this edition's kinds only
    exercises: dict[str, Exercise] = field(default_factory=dict)  # this edition's exercises only
    unknown: list[str] = field(default_factory=list)  # kinds and exercises of another edition: listed, not counted
    fingerprint: str = ""  # of its drills and exercises, when it holds any answer: a copied record has the same

    @property
    def counted(self) -> bool:
        return all(finding.counted for finding in self.findings)

    @property
    def flagged(self) -> bool:
        return any(finding.flagged for finding in self.findings)

    @property
    def latest(self) -> datetime | None:
        entries: list[Drill | Exercise] = [*self.drills.values(), *self.exercises.values()]
        times = [entry.last for entry in entries if entry.last]
        return max(times, default=None)


@dataclass
class Folder:
    """The records under a folder, in the order of their paths, and how many other files it holds."""

    records: list[Record]
    other_files: int


def json_files(folder: Path, skip: Path | None = None) -> tuple[list[Path], int]:
    """The ``.json`` files under ``folder`` (any case), in order, and the number of other files there
    (``skip``, the report itself, is not one)."""
    found, others = [], 0
    for here, folders, files in os.walk(folder):
        folders[:] = sorted(name for name in folders if not name.startswith(".") and name not in SKIPPED_FOLDERS)
        for name in sorted(files):
            if name.startswith(".") or (skip is not None and Path(here, name).resolve() == skip.resolve()):
                continue
            if name.lower().endswith(".json"):
                found.append(Path(here) / name)
            else:
                others += 1
    return sorted(found, key=lambda path: path.relative_to(folder).as_posix()), others


def student_name(folder: Path, path: Path) -> str:
    """Whose record ``path`` is: its folder's path for a file the page named, else its own path without .json."""
    relative = path.relative_to(folder)
    if RECORD_FILE.fullmatch(relative.name) and len(relative.parts) > 1:
        return relative.parent.as_posix()
    return relative.as_posix()[: -len(".json")]


def load_json(path: Path) -> tuple[object, str]:
    """The file's JSON value and "", or None and why it is not JSON (JSON has no NaN or Infinity)."""
    size = path.stat().st_size
    if size > MAX_BYTES:
        return None, f"not a practice record: {size / 1e6:.1f} MB, where a record is a few kB"
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        return None, "not JSON: not UTF-8 text"

    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not a JSON number")

    try:
        return json.loads(text, parse_constant=refuse), ""
    except json.JSONDecodeError as error:
        return None, f"not JSON: {error.msg} (line {error.lineno}, column {error.colno})"
    except (ValueError, RecursionError) as error:
        return None, f"not JSON: {error}" if isinstance(error, ValueError) else "not JSON: nested too deep"


def read_record(folder: Path, path: Path, edition: Edition, now: datetime) -> Record:
    """The record in ``path``: what of ``edition`` it holds, and every finding, for the report's table."""
    record = Record(student_name(folder, path), path.relative_to(folder).as_posix())
    value, why = load_json(path)
    if why:
        record.findings.append(Finding(why, counted=False))
        return record
    if not isinstance(value, dict) or not ("drills" in value or "exercises" in value):
        what = "an object" if isinstance(value, dict) else f"a JSON {type(value).__name__}"
        record.findings.append(Finding(f"JSON, but not a practice record: {what} without drills or exercises", False))
        return record
    fields = Fields(now)
    same_edition = read_header(value, edition, record, fields)
    if record.format is not None:
        read_entries(value, edition, record, fields, same_edition)
    record.findings.extend(fields.done())
    return record


def read_header(value: dict, edition: Edition, record: Record, fields: Fields) -> bool:
    """The record's format and book; sets ``record.format`` when it can be read. Returns whether its
    edition is this book's (a format 1 record names none, and is taken to be)."""
    form = value.get("format", 1)
    if isinstance(form, bool) or form not in FORMATS:
        fields.bad(f"format {quoted(form)}, which this report does not read (it reads 1 and 2): update the checkout")
        return False
    record.format = form
    book = value.get("book")
    if form == 1 or book is None:
        return True
    if not isinstance(book, dict):
        fields.bad(f"its book is {quoted(book)}, not a name and a version")
        return False
    if book.get("name") != BOOK_NAME:
        fields.bad(f"another book's record: {quoted(book.get('name'))}, not {BOOK_NAME}")
        record.format = None
        return False
    if book.get("version") != edition.version:
        fields.note(
            f"another edition of the drills and exercises ({quoted(book.get('version'))}; this book's is "
            f"{edition.version}): what this edition has is counted"
        )
        return False
    return True


def read_entries(value: dict, edition: Edition, record: Record, fields: Fields, same_edition: bool) -> None:
    """The record's drill and exercise entries: this edition's are kept, the others listed."""
    drills, exercises = value.get("drills", {}), value.get("exercises", {})
    for name, group in (("drills", drills), ("exercises", exercises)):
        if not isinstance(group, dict):
            fields.bad(f"its {name} are {quoted(group)}, not entries by name")
    drills = drills if isinstance(drills, dict) else {}
    exercises = exercises if isinstance(exercises, dict) else {}
    every_drill = {}
    for kind, entry in drills.items():
        known = edition.kinds.get(kind)
        drill = fields.drill(kind, entry, known.levels if known and same_edition else None)
        if drill is None:
            continue
        every_drill[kind] = drill
        if known:
            record.drills[kind] = drill
        else:
            record.unknown.append(f"drill {quoted(kind)}")
    for label, entry in exercises.items():
        exercise = fields.exercise(label, entry)
        if exercise is not None and label in edition.exercise_chapter:
            record.exercises[label] = exercise
        elif exercise is not None:
            record.unknown.append(f"exercise {quoted(label)}")
    if record.format == 2:
        fields.answer_order(every_drill, fields.whole(value, "answered", "the record"))
    fields.plausible(every_drill)
    if record.unknown:
        shown = ", ".join(record.unknown[:8]) + (", \u2026" if len(record.unknown) > 8 else "")
        entries = plural(len(record.unknown), "entry", "entries")
        fields.note(f"{entries} this edition does not have, listed, not counted: {shown}")
    answers = sum(drill.attempts for drill in every_drill.values())
    if answers or any(exercise.attempts or exercise.done for exercise in record.exercises.values()):
        text = json.dumps([drills, exercises], sort_keys=True)
        record.fingerprint = hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_folder(folder: Path, edition: Edition, now: datetime, skip: Path | None = None) -> Folder:
    """Every ``.json`` file under ``folder`` read; of two counted records of one student, the older is not counted."""
    paths, others = json_files(folder, skip)
    records = [read_record(folder, path, edition, now) for path in paths]
    by_student: dict[str, list[Record]] = {}
    for record in records:
        if record.counted:
            by_student.setdefault(record.student, []).append(record)
    for same in by_student.values():
        newest = max(same, key=lambda r: (r.latest is not None, r.latest or now, r.file))
        for record in same:
            if record is not newest:
                why = f"an older record of {quoted(record.student)}: the newer one, {quoted(newest.file)}, is counted"
                record.findings.append(Finding(why, counted=False))
    by_print: dict[str, list[Record]] = {}
    for record in records:
        if record.counted and record.fingerprint:
            by_print.setdefault(record.fingerprint, []).append(record)
    for same in by_print.values():
        for record in same if len(same) > 1 else []:
            twins = ", ".join(quoted(other.student) for other in same if other is not record)
            record.findings.append(Finding(f"the very same record as {twins}'s: copied?", counted=True))
    return Folder(records, others)
