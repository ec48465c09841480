"""The names the chapters call on ``feedback``: each is found, and in one place only.

Which check an exercise runs is written once, in the chapter: the check cell after its solution calls
``feedback.<check>``, and tools/book/questions.py (the assignments), tools/book/notebooks.py (the
editions), _ext/live_code.py (the exercises answered in the page) and tests/repo/test_content.py read
it there. What the name is looked up in is :mod:`chainrule_course.exercises.feedback`: the checks that
need no numpy it imports itself, by name (the page's Python has no numpy); the array chapters' it
looks up in :func:`~chainrule_course.exercises.feedback.array_modules` when asked for. A check written
in a module without numpy and not imported by feedback is found nowhere; a name that two array modules
hold as different things is found in whichever comes first. Both fail here, before a book build would
run the chapter.
"""

from __future__ import annotations

import re
import types
from pathlib import Path

from common import ROOT

from chainrule_course.exercises import feedback

CALLED = re.compile(r"\bfeedback\.(\w+)")


def called_names(root: Path) -> set[str]:
    """Every ``feedback.<name>`` the chapters' sources call or read."""
    return {name for path in (root / "chapters").glob("*.md") for name in CALLED.findall(path.read_text("utf-8"))}


def not_found_once(names: set[str], modules: tuple) -> list[str]:
    """The names feedback holds neither itself nor as one thing among ``modules`` (its array modules)."""
    problems = []
    for name in sorted(names):
        if name in vars(feedback):  # found before feedback's __getattr__ is asked
            continue
        held = {id(vars(module)[name]): module.__name__ for module in modules if name in vars(module)}
        if not held:
            problems.append(f"feedback.{name} is in no module feedback looks in")
        elif len(held) > 1:
            problems.append(f"feedback.{name} is a different thing in {', '.join(sorted(held.values()))}")
    return problems


def test_every_name_the_chapters_call_is_found_once():
    names = called_names(ROOT)
    assert {"fresh", "check_matmul_vjp", "check_cube_grads_function"} <= names, sorted(names)  # both kinds read
    assert not_found_once(names, feedback.array_modules()) == []


def test_the_check_fails_on_a_check_found_nowhere_or_twice():
    # A check written in a module without numpy, which feedback does not import: found nowhere.
    names = called_names(ROOT) | {"check_planted_function"}
    assert not_found_once(names, feedback.array_modules()) == [
        "feedback.check_planted_function is in no module feedback looks in"
    ]
    # A second check_matmul_vjp in a new array module: which one runs would depend on the order.
    planted = types.ModuleType("chainrule_course.exercises.planted_checks")
    planted.check_matmul_vjp = lambda matmul_vjp, seed=0: None
    assert not_found_once(called_names(ROOT), (*feedback.array_modules(), planted)) == [
        "feedback.check_matmul_vjp is a different thing in chainrule_course.exercises.array_checks, "
        "chainrule_course.exercises.planted_checks"
    ]
