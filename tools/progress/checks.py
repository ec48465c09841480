"""The rules one practice record's fields are held to, and what breaking each means for the class's numbers.

A record is the student's own browser file: anyone can edit it. These rules find what the
page (``progress.js``) never writes, and what it writes only with a wrong clock, at a pace no
person answers, or where a person rarely goes. Only the first is left out: what the page can
write is counted, flagged, so that no honest record loses by a wrong clock:

* **Not counted** (left out of every number, listed with why): a field of the wrong type or
  out of range, counts that contradict each other (more right than answered, a run of right
  answers longer than the right answers, more named mistakes than wrong answers, a check
  passed that was never run, two kinds whose last answers have one number), a date that
  cannot be read. Any one of these makes the whole record untrustworthy: its other numbers
  may have been edited too.
* **Counted, flagged**: what the page writes only with a wrong clock, at a pace no person
  answers, or where a person rarely goes: a date more than a day ahead of the report, answers
  faster than a person gives them (:data:`FAST_RUN` answers or more in the time after the answer before them, under
  :data:`FASTEST_SECONDS` each on average, timed by the numbers and times of the kinds' last
  answers: a clock put back between two answers the record does not show looks so), more
  than :data:`MAX_ANSWERS_PER_KIND` answers to one kind, later answers timed before earlier
  ones. The instructor sees the flag and can ask. A run with an answer timed outside its
  first and last times is not judged for pace: where times go backwards, a run's ends do not
  time it.
* **Counted, with a note**: more answers in the kinds than the record's count of all
  answers, which an earlier edition of the page began at 0 in a record kept before it had
  that count.

Each finding says what was seen in the record, with its figures, not how it came to be:
a rule sees numbers, never the edit or the clock that wrote them.

The reader of a record (:class:`Fields`) collects the findings as it reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from itertools import combinations, pairwise

#: More answers than this to one drill kind are unusual: three hours of that kind alone at 20
#: seconds an answer. Possible, so counted, but flagged.
MAX_ANSWERS_PER_KIND = 500
#: Answers faster than this many seconds each, over at least FAST_RUN answers, no person gives:
#: each is a question read, a number worked out and typed, and Check pressed.
FASTEST_SECONDS = 0.5
FAST_RUN = 20
#: A date up to a day ahead of the report's is a clock a little wrong; further ahead, flagged.
FUTURE_SLACK = timedelta(days=1)
#: The longest text of a student's record that a message quotes.
QUOTE = 40


@dataclass(frozen=True)
class Finding:
    """Something a record's reader noticed: what (``why``), whether the record still counts, and whether it is
    flagged (counted, but unusual)."""

    why: str
    counted: bool
    flagged: bool = False


@dataclass
class Drill:
    """One drill kind's entry, as read: answers, right ones, the last answer's time and number, named mistakes."""

    attempts: int
    right: int
    last: datetime | None = None
    at: int | None = None
    mistakes: dict[str, int] = field(default_factory=dict)


@dataclass
class Exercise:
    """One exercise's entry: checks run in the page, whether the last passed, whether the student ticked it done."""

    attempts: int
    passed: bool
    done: bool
    last: datetime | None = None


def plural(count: int, word: str, many: str = "") -> str:
    """``count`` and ``word``, or its plural (``many``, else ``word`` + s) unless the count is 1."""
    return f"{count} {word if count == 1 else many or word + 's'}"


def quoted(value: object) -> str:
    """A value of the record as a message quotes it, cut to :data:`QUOTE` characters."""
    text = value if isinstance(value, str) else repr(value)
    return '"' + (text if len(text) <= QUOTE else text[: QUOTE - 1] + "\u2026") + '"'


def duration(seconds: float) -> str:
    """A span of time as a message gives it: seconds under a minute, then minutes and seconds, then hours."""
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        minutes, rest = divmod(round(seconds), 60)
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    return f"{seconds / 3600:.1f} h"


def parse_time(text: str) -> datetime | None:
    """An ISO 8601 time (``2026-11-28T17:19:33.123Z``, as ``Date.toISOString`` writes it) in UTC, or None."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


class Fields:
    """Reads a record's fields against the rules, collecting :class:`Finding`s in ``findings``."""

    def __init__(self, now: datetime) -> None:
        self.now = now
        self.findings: list[Finding] = []
        self.future: list[tuple[datetime, str]] = []  # the dates too far ahead, as read: one finding says them all

    def bad(self, why: str) -> None:
        """A finding that leaves the record out of the class's numbers."""
        self.findings.append(Finding(why, counted=False))

    def flag(self, why: str) -> None:
        """A finding the record is counted with, flagged as unusual."""
        self.findings.append(Finding(why, counted=True, flagged=True))

    def note(self, why: str) -> None:
        self.findings.append(Finding(why, counted=True))

    def whole(self, entry: dict, name: str, where: str) -> int:
        """``entry[name]`` as a count (0 when absent); a non-integer or negative one is a finding."""
        value = entry.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int):
            self.bad(f"{where}: {name} is {quoted(value)}, not a whole number")
            return 0
        if value < 0:
            self.bad(f"{where}: {name} is {value}, below 0")
            return 0
        return value

    def flag_value(self, entry: dict, name: str, where: str) -> bool:
        value = entry.get(name, False)
        if not isinstance(value, bool):
            self.bad(f"{where}: {name} is {quoted(value)}, not true or false")
            return False
        return value

    def moment(self, entry: dict, where: str) -> datetime | None:
        """``entry["last"]`` as a time: unreadable is a finding (no time); more than a day ahead of the report is
        flagged, and kept as the time the record says (which of a student's records is newest goes by it)."""
        value = entry.get("last")
        if value is None:
            return None
        moment = parse_time(value) if isinstance(value, str) else None
        if moment is None:
            self.bad(f"{where}: last {quoted(value)} is not a date")
        elif moment > self.now + FUTURE_SLACK:
            self.future.append((moment, value))
        return moment

    def done(self) -> list[Finding]:
        """The findings, once every field is read."""
        if self.future:
            latest = max(self.future, key=lambda dated: dated[0])[1]
            count = len(self.future)
            dates = quoted(latest) if count == 1 else f"{count} dates, the latest {quoted(latest)}"
            self.flag(f"dated more than a day after this report ({self.now:%Y-%m-%d %H:%M UTC}): {dates}")
            self.future = []
        return self.findings

    def entry(self, value: object, where: str) -> dict | None:
        if not isinstance(value, dict):
            self.bad(f"{where} is {quoted(value)}, not an entry of counts")
            return None
        return value

    def drill(self, kind: str, value: object, levels: frozenset[int] | None) -> Drill | None:
        """One drill kind's entry; ``levels`` are the kind's levels in this edition (None: not checked)."""
        where = f"drill {quoted(kind)}"
        entry = self.entry(value, where)
        if entry is None:
            return None
        attempts, right = self.whole(entry, "attempts", where), self.whole(entry, "right", where)
        streak, misses = self.whole(entry, "streak", where), self.whole(entry, "misses", where)
        if right > attempts:
            self.bad(f"{where}: right {right} is more than attempts {attempts}")
        elif streak > right:
            self.bad(f"{where}: a run of {plural(streak, 'right answer')} (streak), but {right} right in all")
        elif misses > attempts - right:
            self.bad(
                f"{where}: a run of {plural(misses, 'wrong answer')} (misses), but {attempts - right} wrong in all"
            )
        elif streak and misses:
            self.bad(f"{where}: the last answer was both right (streak {streak}) and wrong (misses {misses})")
        level = entry.get("level")
        if level is not None and levels is not None and (not isinstance(level, int) or level not in levels):
            self.bad(
                f"{where}: level {quoted(level)} is not one of this kind's ({', '.join(map(str, sorted(levels)))})"
            )
        at = entry.get("at")
        if at is not None:
            at = self.whole(entry, "at", where) or None
        drill = Drill(attempts, right, self.moment(entry, where), at, self.mistakes(entry, where))
        if right <= attempts and sum(drill.mistakes.values()) > attempts - right:
            named, wrong = sum(drill.mistakes.values()), attempts - right
            self.bad(f"{where}: {plural(named, 'named mistake')}, more than its {plural(wrong, 'wrong answer')}")
        last_mistake = entry.get("mistake")
        if last_mistake is not None and (not isinstance(last_mistake, str) or last_mistake not in drill.mistakes):
            self.bad(f"{where}: its last mistake {quoted(last_mistake)} is not among the mistakes it counts")
        return drill

    def mistakes(self, entry: dict, where: str) -> dict[str, int]:
        """The named mistakes of a drill entry, each a count."""
        named = entry.get("mistakes", {})
        if not isinstance(named, dict):
            self.bad(f"{where}: mistakes is {quoted(named)}, not names with counts")
            return {}
        return {name: self.whole(named, name, f"{where}, mistake {quoted(name)}") for name in named}

    def exercise(self, label: str, value: object) -> Exercise | None:
        """One exercise's entry: checks run, and whether the last passed; a pass without a check is a finding."""
        where = f"exercise {quoted(label)}"
        entry = self.entry(value, where)
        if entry is None:
            return None
        attempts, right = self.whole(entry, "attempts", where), self.whole(entry, "right", where)
        passed, done = self.flag_value(entry, "passed", where), self.flag_value(entry, "done", where)
        if right > attempts:
            self.bad(f"{where}: {plural(right, 'check')} passed of {attempts} run")
        if passed and not right:
            self.bad(f"{where}: its last check passed, but none is counted as passed")
        return Exercise(attempts, passed, done, self.moment(entry, where))

    def answer_order(self, drills: dict[str, Drill], answered: int) -> None:
        """A format 2 record's count of answers against its kinds' last answers (numbers ``at``, times ``last``)."""
        numbered = sorted(((drill.at, kind) for kind, drill in drills.items() if drill.at), key=lambda pair: pair[0])
        for (first, one), (second, other) in pairwise(numbered):
            if first == second:
                self.bad(f"the last answers of {quoted(one)} and {quoted(other)} are both answer {first}")
        if numbered and numbered[-1][0] > answered:
            self.bad(f"a last answer is number {numbered[-1][0]}, but the record counts {plural(answered, 'answer')}")
        in_kinds = sum(drill.attempts for drill in drills.values())
        if in_kinds > answered:
            self.note(
                f"{plural(in_kinds, 'answer')} in its drills, but {answered} in its count of all answers, which an "
                "earlier edition of the page began at 0 in a record kept before it had that count"
            )
        self.timing([(at, last, kind) for at, kind in numbered if (last := drills[kind].last)])

    def timing(self, answers: list[tuple[int, datetime, str]]) -> None:
        """Answers numbered and timed, in the order of their numbers: later ones at earlier times, or many
        answers in too short a time. A run is judged for pace only if the answers seen within it are timed
        within it: where times go backwards, the time between a run's ends is not the time its answers took."""
        backwards = fastest = None
        for (i, (n1, t1, k1)), (j, (n2, t2, k2)) in combinations(enumerate(answers), 2):
            seconds = (t2 - t1).total_seconds()
            if seconds < 0 and backwards is None:
                earlier = duration(-seconds)
                backwards = f"answer {n2} ({quoted(k2)}) is timed {earlier} before answer {n1} ({quoted(k1)})"
            inside = all(t1 <= t <= t2 for _, t, _ in answers[i + 1 : j])
            if n2 - n1 >= FAST_RUN and 0 <= seconds < FASTEST_SECONDS * (n2 - n1) and inside:
                rate = seconds / (n2 - n1)
                if fastest is None or rate < fastest[0]:
                    fastest = (rate, n1, n2, seconds)
        if fastest:
            rate, n1, n2, seconds = fastest
            self.flag(
                f"{n2 - n1} answers ({n1 + 1} to {n2}) in the {seconds:.1f} s after answer {n1}, faster than a "
                f"person answers (under {FASTEST_SECONDS:g} s each on average)"
            )
        if backwards:
            self.flag(backwards)

    def plausible(self, drills: dict[str, Drill]) -> None:
        """Counts the page could write but a person rarely reaches."""
        for kind, drill in drills.items():
            if drill.attempts > MAX_ANSWERS_PER_KIND:
                hours = math.ceil(drill.attempts * 20 / 3600)
                self.flag(
                    f"{drill.attempts} answers to {quoted(kind)}, {drill.right} right: more than "
                    f"{MAX_ANSWERS_PER_KIND}, about {hours} hours of that kind alone at 20 s an answer"
                )
