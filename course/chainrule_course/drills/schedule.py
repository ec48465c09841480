"""Next for you: which drill a reader practises next, at what level, on which instance.

The page keeps each reader's record in their browser (``progress.js``): per kind of
drill, the answers checked and how many were right, the run of right (``streak``) or
wrong (``misses``) answers at the level last answered, that level, the mistake the last
wrong answer made when the check named one, and ``at``, the number of the reader's last
answer of that kind among all their drill answers (``answered``).

:func:`plan` reads that record and chooses, from the kinds a drill offers:

1. a kind answered wrong last time, once one other question has come between (it comes
   back two questions later), the one the reader gets wrong most first;
2. a kind not yet answered right three times in a row, the one got wrong most first;
3. a kind never tried, in the book's order (the catalog's, whatever order the drill lists them in);
4. a kind answered right three times in a row comes back spaced out: 4 questions after
   that answer, then 8 after a fourth, then 16...;

and when nothing is due, the one due soonest. The level goes up one after three right in
a row, down one after two misses in a row, and a new kind starts at its first level.

Where the kind's last answer made a named mistake, :func:`showing` draws the instance from
the seeds after the one given so that this mistake gives a different answer from the
right one, and the check names it: an instance where the mistake shows.

Pure Python on the record's numbers: the page's Python runs it, and the tests call it
directly.
"""

from .catalog import KINDS, question

__all__ = ["plan", "showing", "wrong_again"]

STREAK = 3  # right answers in a row that move a kind on, and raise its level
MISSES = 2  # wrong answers in a row that lower its level
COMEBACK = 2  # a wrong kind comes back this many questions after its answer
REVIEW = 4  # questions before the first spaced review; each more right answer doubles it
TRIES = 40  # seeds tried for an instance that shows the mistake


def plan(drills, answered, kinds, seed):
    """``{kind, level, seed, reason}``: the next question for the reader of ``drills`` (the record's drills,
    by kind) who has checked ``answered`` drill answers, among ``kinds`` (in the book's order)."""
    kinds = [kind for kind in kinds if kind in KINDS]
    if not kinds:
        raise ValueError(f"drills.plan: no known kind among {kinds!r}")
    drills = {kind: _clean(drills.get(kind) if isinstance(drills, dict) else None) for kind in kinds}
    question_number = (answered if isinstance(answered, int) and answered > 0 else 0) + 1
    book = list(KINDS)
    ranked = sorted(kinds, key=lambda kind: _rank(drills[kind], question_number, book.index(kind)))
    kind = ranked[0]
    entry = drills[kind]
    level, changed = _level(kind, entry)
    why = [_why(entry, question_number)] + ([changed] if changed else [])
    if _attempts(entry) and _due(entry) > question_number:
        why.append(f"early, since no other kind here is due (it would have waited until question {_due(entry)})")
    mistake = entry.get("mistake") if entry.get("misses") else None
    if mistake:
        found = showing(kind, level, seed, mistake)
        if found is not None:
            seed = found
            why.append(f"drawn so that the mistake of your last answer ({mistake}) gives a different answer")
    return {"kind": kind, "level": level, "seed": seed, "reason": "; ".join(why) + "."}


def _clean(entry):
    """A kind's entry with only the numbers the plan reads, each a whole number of at least 0 (a record is
    the reader's own file: anything else counts as not there), and its last mistake's name."""
    entry = entry if isinstance(entry, dict) else {}
    clean = {
        name: entry[name]
        for name in ("attempts", "right", "streak", "misses", "level", "at")
        if isinstance(entry.get(name), int) and not isinstance(entry.get(name), bool) and entry[name] >= 0
    }
    if isinstance(entry.get("mistake"), str):
        clean["mistake"] = entry["mistake"]
    return clean


def _attempts(entry):
    return entry.get("attempts") or 0


def _wrong_share(entry):
    return 1 - (entry.get("right") or 0) / _attempts(entry) if _attempts(entry) else 0.0


def _due(entry):
    """The number of the question from which the kind is due again."""
    at = entry.get("at") or 0
    if entry.get("misses"):
        return at + COMEBACK
    streak = entry.get("streak") or 0
    if streak >= STREAK:
        return at + REVIEW * 2 ** (streak - STREAK)
    return at + 1


def _group(entry):
    """1 missed last time, 2 under way, 3 never tried, 4 a spaced review."""
    if not _attempts(entry):
        return 3
    if entry.get("misses"):
        return 1
    return 4 if (entry.get("streak") or 0) >= STREAK else 2


def _rank(entry, question_number, order):
    """Due kinds first, by group, then the most often wrong, then the book's order; then the soonest due."""
    due = _due(entry) if _attempts(entry) else 0
    if due <= question_number:
        return (0, _group(entry), -_wrong_share(entry), order)
    return (1, due, -_wrong_share(entry), order)


def _level(kind, entry):
    """The level to ask at, and what changed it (or "")."""
    levels = sorted(KINDS[kind].levels)
    level = entry.get("level") if entry.get("level") in levels else levels[0]
    at = levels.index(level)
    if (entry.get("streak") or 0) >= STREAK and at + 1 < len(levels):
        return levels[at + 1], "its level goes up one"  # the reason's first part says the run, the page the level
    if (entry.get("misses") or 0) >= MISSES and at > 0:
        return levels[at - 1], "two misses in a row: its level goes down one"
    return level, ""


def _why(entry, question_number):
    if not _attempts(entry):
        return "new to you"
    if entry.get("misses"):
        return f"you missed it at answer {entry.get('at') or 0}: it comes back"
    streak = entry.get("streak") or 0
    if streak >= STREAK:
        return f"a spaced review: {streak} right in a row, the last at answer {entry.get('at') or 0}"
    return f"{streak} right in a row so far"  # the drill's note says what three in a row do


def showing(kind, level, seed, mistake):
    """The first seed from ``seed`` whose question names ``mistake`` for one of the answers its slips give
    (a different answer from the right one), or None when none of :data:`TRIES` seeds does."""
    for tried in range(seed, seed + TRIES):
        if wrong_again(question(kind, level, tried), mistake) is not None:
            return tried
    return None


def wrong_again(q, mistake):
    """What a reader types on ``q`` to make ``mistake`` again, where its check names it; else None."""
    for value in q.slip_answers():
        typed = _typed(value)
        if q.check(typed).get("mistake") == mistake:
            return typed
    return None


def _typed(value):
    """An answer as a reader types it: a number, or a list separated by semicolons."""
    if isinstance(value, (list, tuple)):
        return "; ".join(item if isinstance(item, str) else repr(float(item)) for item in value)
    return repr(float(value))
