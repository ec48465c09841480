"""Grades by construction: each answer's cell runs apart, and is judged in the grader's process.

Grading runs in two places that do not trust each other:

1. **In the grader's own process**, :func:`inputs` runs every test of the assignment, public
   and hidden, with each answer replaced by the reference solution, and writes down the inputs
   each answer is called on. A hidden test draws its inputs from the seeds in its source mixed
   with a secret of this process (:func:`chainrule_course.grading.contract.hidden_inputs`), so its
   inputs are known nowhere else.
2. **Apart, one process per answer** (:func:`record_apart`): the answer's cell, the last cell
   of the notebook that defines it, runs alone (its statements that define or fill the answer,
   after the imports and functions of other cells it uses: :func:`chainrule_course.grading.apart.carried`),
   where only what its exercise allows exists
   (:mod:`chainrule_course.grading.apart`, :mod:`chainrule_course.grading.runner`): nothing else
   of the notebook's other cells, no chainrule where it is not allowed, no torch or jax, no answer key.
   Only after the cell has run is it sent the inputs, one call at a time, each under its time
   limit; what it returns comes back as data. The grader writes the record; nothing the
   notebook's other cells do (hooks, stashes, patches, files) reaches it.
3. **Back in the grader's process**, :func:`score` runs the same tests again. Each answer is
   now a stand-in that gives back what was recorded for the same inputs; expected values,
   comparisons and points are all computed here.

A part whose hidden cases fail earns nothing for its public cases either: an answer must be
right on inputs it has not seen. The notebook's check runs the answer the same way
(:func:`chainrule_course.exercises.calling.call`), so a notebook "right" is a graded "right".

**Points per quantity.** A test file of the autograder may name its parts
(``chainrule_parts``, written by ``make assignments``): the quantities of one answer (its
∂J/∂W1 and ∂J/∂W2), or the answers of a question (``matmul_vjp`` and ``ce_grad``). Each test
case then runs once per part and earns that part's share of its points. A quantity is
scored with :func:`chainrule_course.grading.contract.scoring_part`; an answer is scored with the other
answers replaced by the reference solution (``chainrule_reference``), so that a missing
``ce_grad`` costs only ``ce_grad``'s points.

The otter-grader plugin :class:`chainrule_course.grading.otter_plugin.TrustedScores` runs this inside
``otter run`` (Gradescope); ``make grade`` (:mod:`chainrule_course.grading.grade`) runs each answer in a sandbox.
Both call :func:`inputs`, :func:`record_apart` and :func:`score`, so they give the same points.
"""

from __future__ import annotations

import ast
import contextlib
import io
import itertools
import math

from . import apart, contract, wire
from .review import DID as DID  # the words of what an answer was seen doing, for the grader and the check
from .review import seen_doing as seen_doing

Unreadable = wire.Unreadable
encode, decode, key = wire.encode, wire.decode, apart.key


def _parameters(source: str) -> list[str]:
    return [arg.arg for node in ast.parse(source).body if isinstance(node, ast.FunctionDef) for arg in node.args.args]


# --------------------------------------------------------------------------- parts


PARTS = "chainrule_parts"
REFERENCE = "chainrule_reference"
ALLOWED = "chainrule_allowed"


def settings(source: str) -> dict:
    """What ``make assignments`` wrote into a test file for the grader: ``chainrule_parts``,
    ``chainrule_reference`` and ``chainrule_allowed``, by name (otter ignores them)."""
    found: dict[str, object] = {}
    for node in ast.parse(source).body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in (PARTS, REFERENCE, ALLOWED)
        ):
            found[node.targets[0].id] = ast.literal_eval(node.value)
    return found


#: How many of a test's other answers a part is tried with, the student's own in the reference's place.
MIXED = 3


class Part:
    """One part of a test file's points: an answer (``answer``), or a quantity that a check reports (``quantity``).

    ``Part()``, neither, is the whole test, for a file that names no parts.
    """

    def __init__(self, answer: str | None = None, quantity: str | None = None, reference: str = ""):
        self.answer, self.quantity, self.reference = answer, quantity, reference

    @property
    def label(self) -> str:
        return self.quantity or self.answer or ""

    @staticmethod
    def of(source: str) -> list[Part]:
        """The parts a test file's source names (``chainrule_parts = [[answer, quantity], ...]``)."""
        found = settings(source)
        reference = str(found.get(REFERENCE, ""))
        parts = [
            Part(str(answer), None if quantity is None else str(quantity), reference)
            for answer, quantity in found.get(PARTS, [])
        ]
        return parts or [Part()]

    def run(self, case, environment: dict) -> None:
        """Run the test case ``case`` for this part: only this part's verdict can fail it.

        A part that is one answer of several is judged with the reference's other answers, so that
        a wrong forward does not cost the rule's points; when it fails so, with some of the
        student's own in their place, fewest first, so that answers that must agree (a rule and the
        slots its row keeps) are judged together, as the notebook's check judges them. The first
        failure is the one reported.
        """
        if not (self.reference and self.answer is not None):
            with contract.scoring_part(self.quantity):
                case.body.call_func(environment)
            return
        solved = {n: v for n, v in _reference(self.reference).items() if n != self.answer and not n.startswith("_")}
        own = [name for name in solved if name in environment][:MIXED]
        first: Exception | None = None
        for count in range(len(own) + 1):
            for kept in itertools.combinations(own, count):
                trial = {**environment, **{n: v for n, v in solved.items() if n not in kept}}
                try:
                    with contract.scoring_part(self.quantity):
                        case.body.call_func(trial)
                    return
                except Exception as error:  # noqa: BLE001 - tried with other answers next
                    first = first or error
        if first is None:  # never: count 0 makes one trial, and each trial returns or sets first
            raise RuntimeError(f"no trial of part {self.label!r} ran")
        raise first


_REFERENCES: dict[str, dict] = {}


def _reference(code: str) -> dict:
    """The names the reference solution ``code`` defines (run once; it is the grader's own code)."""
    if code not in _REFERENCES:
        namespace: dict = {"__name__": "chainrule_reference"}
        exec(compile(code, "<reference solution>", "exec"), namespace)  # noqa: S102 - the autograder's file
        _REFERENCES[code] = {
            name: value
            for name, value in namespace.items()
            if not name.startswith("__") and not isinstance(value, type(math))
        }
    return _REFERENCES[code]


# --------------------------------------------------------------------------- the inputs (before the notebook runs)


class _Collector:
    """Stands for one answer while :func:`inputs` runs the tests: writes down its inputs, answers as the reference."""

    def __init__(self, name: str, function, keys: dict):
        self.__name__ = name
        self._function, self._keys = function, keys

    def __call__(self, *args, **kwargs):
        found = key(args, kwargs)
        if '"t": "other"' in found:
            raise Unreadable(
                f"a check gives {self.__name__} a value the grader cannot send to a notebook: {found[:200]}"
            )
        self._keys.setdefault(found, None)
        return self._function(*args, **kwargs)


def inputs(tests: dict[str, str], secret: bytes) -> dict:
    """What the answers are called on: for each answer, the inputs the tests give it.

    Every test (hidden ones with ``secret``: :func:`chainrule_course.grading.contract.hidden_inputs`)
    runs here with the reference solution standing in for the answers, so the inputs are those
    a right answer is called on; a wrong one is judged at its first wrong result. The result,
    as JSON data: ``calls`` (answer -> keys, :func:`key`), ``values`` (answers that are not
    functions) and ``allowed`` (answer -> the modules its cell may import besides the standard library).
    """
    from otter.test_files import ExceptionTestFile

    calls: dict[str, dict[str, None]] = {}
    values: set[str] = set()
    allowed: dict[str, list[str]] = {}
    for name, source in sorted(tests.items()):
        found = settings(source)
        reference = _reference(str(found.get(REFERENCE, "")))
        environment = {}
        for answer in dict.fromkeys(_parameters(source)):
            if answer not in reference:
                raise Unreadable(f"tests/{name} has no reference solution for {answer}: run make assignments again")
            modules = allowed.setdefault(answer, [])
            modules += [str(module) for module in found.get(ALLOWED, []) if str(module) not in modules]
            if callable(reference[answer]):
                environment[answer] = _Collector(answer, reference[answer], calls.setdefault(answer, {}))
            else:
                values.add(answer)
                environment[answer] = reference[answer]
        for case in ExceptionTestFile.from_string(source, path=name).test_cases:
            for part in Part.of(source):
                try:
                    with _hidden(case, secret), contextlib.redirect_stdout(io.StringIO()):
                        part.run(case, environment)
                except Exception as error:
                    raise Unreadable(f"the reference solution fails {case.name} ({part.label}): {error}") from error
    return {"calls": {n: list(keys) for n, keys in calls.items()}, "values": sorted(values), "allowed": allowed}


def _hidden(case, secret: bytes):
    """A hidden case draws its inputs with the grader's ``secret``; a public one as the notebook did, its fresh
    inputs (:func:`~chainrule_course.grading.contract.fresh`) from the secret too."""
    return contract.hidden_inputs(secret) if case.hidden else contract.fresh_inputs(secret)


# --------------------------------------------------------------------------- the answers, run apart


def answer_cells(cells: list[str], names) -> dict[str, str]:
    """For each answer name, the last code cell whose top level defines it: the cell that is run for it."""
    found = {}
    for source in cells:
        defined = apart.top_level(source)
        for name in names:
            if name in defined:
                found[name] = source
    return found


def elsewhere(cells: list[str], answer_cell: str) -> dict[str, str | None]:
    """What the notebook's other cells define: a name an answer cell misses is said to come from there."""
    names: dict[str, str | None] = {}
    for source in cells:
        if source is not answer_cell:
            names.update(apart.top_level(source))
    for name in apart.top_level(answer_cell):
        names.pop(name, None)
    return names


def record_apart(
    cells: list[str], given: dict, start, seconds: float | None = None, begun: float | None = None
) -> dict:
    """Run each answer's cell apart and call it on the grader's inputs: the record that :func:`score` reads.

    ``cells`` are the notebook's code cells, read as text; ``given`` is what :func:`inputs` chose;
    ``start(source, rule, values)`` gives an :class:`chainrule_course.grading.apart.Answer` (the grader's
    sandbox around it). Each answer gets a process of its own, and each call its time limit; the
    calls not made within ``seconds`` of wall time in all fail, saying so. The time counts from
    ``begun`` (:func:`time.monotonic` when the notebook's grading began: its reading and parsing
    count too), or from this call.
    """
    import time

    deadline = None if seconds is None else (time.monotonic() if begun is None else begun) + seconds

    def late() -> dict:
        message = f"the notebook's {seconds:g} s of grading ran out before this call"
        return {"error": {"type": "Stopped", "message": message, "where": ""}}

    names = [*given.get("calls", {}), *given.get("values", [])]
    sources = answer_cells(cells, names)
    data: dict = {"values": {}, "calls": {}, "elsewhere": {}, "allowed": given.get("allowed", {})}
    for name in dict.fromkeys(names):
        if name not in sources:
            continue
        if deadline and time.monotonic() > deadline:  # no process is started for it
            data["calls"][name] = [{**late(), "key": k} for k in given.get("calls", {}).get(name, [])]
            continue
        allowed = tuple(given.get("allowed", {}).get(name, ()))
        rule = apart.AnswerRule(allowed, apart.carried(cells, sources[name], [name], allowed))
        wanted = [name] if name in given.get("values", []) else []
        answer = start(apart.answer_code(sources[name], [name]), rule, wanted)
        try:
            told = answer.start()
            data["elsewhere"][name] = elsewhere(cells, sources[name])
            if name in wanted:
                data["values"].update(told.get("values", {}) if told.get("ready") else {})
                continue
            data["calls"][name] = [
                {**(late() if deadline and time.monotonic() > deadline else answer.call(name, k)), "key": k}
                for k in given["calls"][name]
            ]
        finally:
            answer.close()
    return data


# --------------------------------------------------------------------------- in the grader's process


class _Replay:
    """Stands for one answer function in the grader: gives back what its calls, run apart, returned."""

    def __init__(self, name: str, calls: list, elsewhere: dict | None = None):
        self.__name__ = name
        self._elsewhere = elsewhere or {}
        self._calls: dict[str, dict] = {}  # each call's entry, by its key (apart.key)
        for entry in calls:
            if isinstance(entry, dict) and isinstance(entry.get("key"), str):
                self._calls.setdefault(entry["key"], entry)

    def __call__(self, *args, **kwargs):
        entry = self._calls.get(key(args, kwargs))
        if entry is None:
            raise Unreadable(f"{self.__name__} was not called with these inputs")
        return apart.result_of(self.__name__, entry, self._elsewhere)


def score(tests: dict[str, str], data: dict | None, problem: str = "", secret: bytes = b"") -> dict:
    """Run each test in this process against the recorded answers: test name -> otter ``ExceptionTestFile``.

    The result has otter's scores and messages, as ``otter run`` gives them, so that the
    points are the same wherever they are computed. With no record (``data`` None), every
    test case fails with ``problem``. ``secret`` must be the one :func:`inputs` was given. Each test file
    also gets ``mistakes``: the known mistakes its failed cases named
    (the ``mistake`` of :class:`chainrule_course.exercises.answers.AnswerError`), as data, in the
    order found, each once.
    """
    from otter.test_files import ExceptionTestFile
    from otter.test_files.abstract_test import TestCaseResult

    files = {}
    for name, source in sorted(tests.items()):
        test_file = ExceptionTestFile.from_string(source, path=name)
        parts = Part.of(source)
        runs = [(case, part) for case in test_file.test_cases for part in parts]
        test_file.test_cases = [_share(case, part, len(parts)) for case, part in runs]
        test_file.mistakes = []
        if data is None:
            test_file.test_case_results = [
                TestCaseResult(test_case=case, message="❌ Test case failed\n" + problem, passed=False)
                for case in test_file.test_cases
            ]
        else:
            environment = _environment(data, _parameters(source))
            test_file.test_case_results = []
            for (case, part), scored in zip(runs, test_file.test_cases, strict=True):
                message, passed = "✅ Test case passed", True
                try:
                    with _hidden(case, secret), contextlib.redirect_stdout(io.StringIO()):
                        part.run(case, environment)
                except Exception as error:  # noqa: BLE001 - any failure of a check is a failed case
                    message, passed = "❌ Test case failed\n" + _failure(test_file, error), False
                    named = getattr(error, "mistake", None)
                    if named and named not in test_file.mistakes:
                        test_file.mistakes.append(named)
                test_file.test_case_results.append(TestCaseResult(test_case=scored, message=message, passed=passed))
            _public_only(runs, test_file.test_case_results)
        files[test_file.name] = test_file
    return files


PUBLIC_ONLY = (
    "Right on the public test's inputs, but wrong on the hidden test's, so neither earns points: an "
    "answer must be right on inputs it has not seen."
)


def _public_only(runs: list, results: list) -> None:
    """A part whose hidden cases failed earns nothing for its public cases either (:data:`PUBLIC_ONLY`)."""

    failed = {
        part.label for (case, part), result in zip(runs, results, strict=True) if case.hidden and not result.passed
    }
    for index, ((case, part), result) in enumerate(zip(runs, results, strict=True)):
        if not case.hidden and result.passed and part.label in failed:
            results[index] = _failed(result, PUBLIC_ONLY)


def _share(case, part: Part, count: int):
    """The test case ``case`` as scored for ``part``: its name says which part, and it has its share of the points."""
    import dataclasses

    name = f"{case.name} ({part.label})" if part.label else case.name
    return dataclasses.replace(case, name=name, points=None if case.points is None else case.points / count)


def _failure(test_file, error: Exception) -> str:
    """What otter says of a failed case: the test's line that raised, and the error."""
    import traceback

    lines = [frame.lineno for frame in traceback.extract_tb(error.__traceback__) if frame.filename == test_file.path]
    line = lines[-1] if lines else None  # the deepest; None too for a frame Python knows no line of
    source = test_file.source.split("\n")
    where = (
        f"Error at line {line} in test {test_file.name}:\n  {source[line - 1]}\n"
        if line is not None and 0 < line <= len(source)
        else ""
    )
    return f"{where}{type(error).__name__}: {str(error).strip(chr(39))}"


def _environment(data: dict, names: list[str]) -> dict:
    environment: dict[str, object] = {}  # replays, decoded values, and None for what no cell defines
    for name in names:
        if name in data["calls"]:
            calls = data["calls"][name]
            environment[name] = _Replay(name, calls, data.get("elsewhere", {}).get(name))
        elif name in data["values"]:
            try:
                environment[name] = decode(data["values"][name])
            except Unreadable as error:
                environment[name] = type("Unreadable", (), {"__repr__": lambda self, e=error: f"<{e}>"})()
        else:  # no cell of the notebook defines it: the check says so
            environment[name] = None
    return environment


def _failed(result, why: str):
    """The case of ``result`` failed, for ``why``, as otter words a failure."""
    from otter.test_files.abstract_test import TestCaseResult

    return TestCaseResult(test_case=result.test_case, passed=False, message=f"❌ Test case failed\n{why}")
