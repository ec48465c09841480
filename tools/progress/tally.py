"""The class's numbers, from the counted records: per chapter, drill kind, exercise and student.

A share right is the mean of the students' own shares (each student's right answers over
their answers), not the class's right answers over its answers: each student counts once,
so that one who answered a kind a hundred times, or a record flagged as unusual, does not
stand for the class. A student *practised* a chapter when they answered one of its drills
or checked or ticked one of its exercises.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from tools.book.book_model import ChapterOutline
from tools.progress.edition import Edition, KindInfo
from tools.progress.records import Record

#: How many of a kind's named mistakes the report lists, the most frequent first.
MISTAKES_SHOWN = 3


@dataclass
class MistakeRow:
    name: str
    times: int  # how often it was made, in all
    students: int  # by how many students


@dataclass
class KindRow:
    kind: KindInfo
    students: int  # who answered it
    answers: int
    right: int
    share: float | None  # the mean of the students' shares right; None when nobody answered
    flagged: int  # of its students, how many have a flagged record
    mistakes: list[MistakeRow]


@dataclass
class ExerciseRow:
    label: str
    number: str  # the book's, "6.2"
    checked: int  # students who ran its check in the page
    passed: int  # whose last check passed
    done: int  # who ticked it done
    finished: int  # done, or the last check passed


@dataclass
class ChapterRow:
    chapter: ChapterOutline
    kinds: list[KindRow]
    exercises: list[ExerciseRow]
    practised: list[str]
    not_yet: list[str]
    answers: int
    share: float | None  # the mean over students who answered its drills of their share right in them
    finished: float  # exercises finished per student, on average
    flagged: int  # of the students who answered its drills, how many have a flagged record


@dataclass
class StudentRow:
    name: str
    chapters: int  # chapters practised
    answers: int
    right: int
    finished: int  # exercises done or passed
    latest: datetime | None
    flagged: bool


@dataclass
class Class:
    students: list[str]
    chapters: list[ChapterRow]
    people: list[StudentRow] = field(default_factory=list)


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def kind_row(kind: KindInfo, records: list[Record]) -> KindRow:
    """One drill kind over the class: who answered it, how often, how often right, its commonest mistakes."""
    answered = [(record, record.drills[kind.name]) for record in records if kind.name in record.drills]
    answered = [(record, drill) for record, drill in answered if drill.attempts]
    times: Counter = Counter()
    students: Counter = Counter()
    for _, drill in answered:
        for name, count in drill.mistakes.items():
            times[name] += count
            students[name] += count > 0
    named = sorted((name for name in times if times[name]), key=lambda name: (-times[name], -students[name], name))
    return KindRow(
        kind,
        students=len(answered),
        answers=sum(drill.attempts for _, drill in answered),
        right=sum(drill.right for _, drill in answered),
        share=mean([drill.right / drill.attempts for _, drill in answered]),
        flagged=sum(record.flagged for record, _ in answered),
        mistakes=[MistakeRow(name, times[name], students[name]) for name in named[:MISTAKES_SHOWN]],
    )


def exercise_row(label: str, number: str, records: list[Record]) -> ExerciseRow:
    entries = [record.exercises[label] for record in records if label in record.exercises]
    return ExerciseRow(
        label,
        number,
        checked=sum(entry.attempts > 0 for entry in entries),
        passed=sum(entry.passed for entry in entries),
        done=sum(entry.done for entry in entries),
        finished=sum(entry.done or entry.passed for entry in entries),
    )


def practised(record: Record, kinds: list[KindInfo], labels: list[str]) -> bool:
    """Whether the student answered one of the chapter's drills, or checked or ticked one of its exercises."""
    if any(record.drills[kind.name].attempts for kind in kinds if kind.name in record.drills):
        return True
    return any(
        record.exercises[label].attempts or record.exercises[label].done
        for label in labels
        if label in record.exercises
    )


def chapter_share(record: Record, kinds: list[KindInfo]) -> float | None:
    """The student's right answers over their answers in the chapter's drills; None without an answer."""
    drills = [record.drills[kind.name] for kind in kinds if kind.name in record.drills]
    answers = sum(drill.attempts for drill in drills)
    return sum(drill.right for drill in drills) / answers if answers else None


def chapter_row(chapter: ChapterOutline, edition: Edition, records: list[Record]) -> ChapterRow:
    kinds = edition.kinds_of(chapter.chapter)
    rows = [kind_row(kind, records) for kind in kinds]
    exercises = [exercise_row(label, edition.exercise_number[label], records) for label in chapter.exercises]
    answered = [record for record in records if chapter_share(record, kinds) is not None]
    shares = [share for record in answered if (share := chapter_share(record, kinds)) is not None]
    finished = [
        sum(
            record.exercises[label].done or record.exercises[label].passed
            for label in chapter.exercises
            if label in record.exercises
        )
        for record in records
    ]
    return ChapterRow(
        chapter,
        rows,
        exercises,
        practised=[record.student for record in records if practised(record, kinds, chapter.exercises)],
        not_yet=[record.student for record in records if not practised(record, kinds, chapter.exercises)],
        answers=sum(row.answers for row in rows),
        share=mean(shares),
        finished=mean(finished) or 0.0,
        flagged=sum(record.flagged for record in answered),
    )


def student_row(record: Record, edition: Edition) -> StudentRow:
    chapters = sum(
        practised(record, edition.kinds_of(chapter.chapter), chapter.exercises) for chapter in edition.chapters
    )
    return StudentRow(
        record.student,
        chapters,
        answers=sum(drill.attempts for drill in record.drills.values()),
        right=sum(drill.right for drill in record.drills.values()),
        finished=sum(entry.done or entry.passed for entry in record.exercises.values()),
        latest=record.latest,
        flagged=record.flagged,
    )


def tally(records: list[Record], edition: Edition) -> Class:
    """The class's numbers from the records that are counted, students in the order of their names."""
    counted = sorted((record for record in records if record.counted), key=lambda r: (r.student.casefold(), r.student))
    return Class(
        students=[record.student for record in counted],
        chapters=[chapter_row(chapter, edition, counted) for chapter in edition.chapters],
        people=[student_row(record, edition) for record in counted],
    )
