"""The timing row that the value and tensor sections both report.

A row compares chainrule's step time with another implementation's: the ratio of the
best times, the goal it is held to (if any), and the best and median times of both.
"""

import statistics


def milliseconds(seconds):
    return f"{seconds * 1e3:.2f} ms"


def timing_row(section, name, times, other, goal=None, note=""):
    """A row for ``times["chainrule"]`` against ``times[other]`` (lists of seconds)."""
    best = {who: min(times[who]) for who in ("chainrule", other)}
    median = {who: statistics.median(times[who]) for who in ("chainrule", other)}
    ratio = best["chainrule"] / best[other]
    detail = (
        f"best {milliseconds(best['chainrule'])} vs {milliseconds(best[other])}; "
        f"median {milliseconds(median['chainrule'])} vs {milliseconds(median[other])}"
    )
    return {
        "section": section,
        "name": name,
        "ratio": ratio,
        "goal": "" if goal is None else f"<= {goal}",
        "met": None if goal is None else bool(ratio <= goal),
        "detail": detail + (f"; {note}" if note else ""),
    }
