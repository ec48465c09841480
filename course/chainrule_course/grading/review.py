"""What puts a graded notebook up for review, in the words both the grader and the notebook's check say.

The grader (:mod:`chainrule_course.grading.grade`, and otter's report) adds these reasons to a row's
status; the notebook's check (:func:`chainrule_course.exercises.calling.call`) shows the same words
when it checks the answer, so that a student learns at the check, not from the grade, that an answer
will be looked at. Two kinds:

- **in the code** (:data:`REVIEW`): what an answer has no need of and a cheat does, and the generic
  ways to differentiate that can be spelled out;
- **seen doing** (:data:`DID`): what the answer's process saw it do while it was called
  (:mod:`chainrule_course.grading.observing`), however it is spelled.

Neither costs points. Standard library only: the check in the page's Python reads it too.
"""

from __future__ import annotations

import re

#: What an answer has no need of, and a cheat does: each pattern in a notebook's code puts its row up
#: for review (``review: ...`` in the status). Honest work never matches one (the planted solutions
#: are graded "graded"); a match changes no score.
#:
#: float32 is not among them: the exercises invite it (a float32 answer is compared within float32's
#: rounding, 1e-5, and a float64 one within its own, 1e-12), so the pattern flagged every honest float32
#: answer and told the reader nothing. What it was meant to catch, a float64 approximation rounded to
#: float32, is still seen where it is a generic differentiator (extrapolated differences, the complex
#: step, dual numbers: :data:`DID`, whatever the answer's precision); plain central differences returned
#: as float32 rest on the review of the code and the written derivation, as the instructors' chapter says.
REVIEW = {
    "the grader's own code (chainrule_course.exercises, chainrule_course.grading)": (
        r"chainrule_course\.(exercises|grading)|\b(feedback|scoring|answers)\.(check|score|record|_)"
    ),
    "stack frames or the garbage collector (sys._getframe, inspect, gc)": (
        r"_getframe|\binspect\b|\bf_back\b|\bf_locals\b|\bgc\."
    ),
    "processes of its own (os.fork, subprocess, multiprocessing)": (
        r"\bfork\b|subprocess|multiprocessing|os\.system|os\.popen|\bpty\b"
    ),
    "the grader's environment (MAKEFLAGS, os.environ)": r"MAKEFLAGS|CHAINRULE_|os\.environ|getenv",
    "files outside its answers (other notebooks, results, logs)": (
        r"\.ipynb\b|results\.json|record\.json|OTTER_LOG|\bglob\b|listdir|scandir|open\("
    ),
    "code built at run time (exec, eval, __import__, importlib)": r"\bexec\(|\beval\(|__import__|importlib",
    "raw memory (ctypes)": r"\bctypes\b|\bcffi\b",
    "the runner's own objects (sys.modules, __defaults__, __closure__, the trace function)": (
        r"sys\.modules|__defaults__|__kwdefaults__|__closure__|cell_contents|settrace|setprofile|gettrace"
    ),
    # Generic ways to differentiate that no check can tell from a derivation: a hint for the reader.
    "complex numbers (the complex step differentiates without a derivation)": (
        r"\b\d+(\.\d*)?j\b|\bcomplex\(|\bcmath\b|\.imag\b"
    ),
    "a differentiator of its own (ast, a backward pass of an engine)": r"\bast\.|\bdef backward\(|\._backward\b",
}


def review_reasons(cells: list[str], handed_out: frozenset[str] = frozenset()) -> list[str]:
    """What of :data:`REVIEW` the notebook's code uses, in lines that the handed-out notebook does not
    hold (its set-up cell installs packages and reads the environment), for a human to look at. A hint
    only: it costs no points."""
    lines = [line for source in cells for line in source.splitlines()]
    code = "\n".join(line for line in lines if line.strip() not in handed_out)
    return [reason for reason, pattern in REVIEW.items() if re.search(pattern, code)]


#: What an answer's process saw it do (``did``: :mod:`chainrule_course.grading.observing`), as a reason for
#: review: each is a way to differentiate without the derivation the exercise asks for.
DID = {
    "nearby": "a function evaluated at points c ± h about one point (a numerical derivative, extrapolated)",
    "complex": "complex numbers passed to the answer's functions (the complex step)",
    "numbers": "arithmetic of a class of the answer's own (dual numbers, or an engine pasted in the cell)",
}


def seen_in(entry) -> set[str]:
    """The words of :data:`DID` that one call's entry says the answer did. Only these words are read of
    what the answer's process said: it is the answer's."""
    did = entry.get("did") if isinstance(entry, dict) else None
    return {word for word in did if isinstance(word, str) and word in DID} if isinstance(did, list) else set()


def seen_doing(data: dict | None) -> list[str]:
    """The reasons of :data:`DID` that the record of the answers' calls holds, in its order."""
    said: set[str] = set()
    for entries in ((data or {}).get("calls") or {}).values():
        for entry in entries if isinstance(entries, list) else []:
            said |= seen_in(entry)
    return [reason for word, reason in DID.items() if word in said]
