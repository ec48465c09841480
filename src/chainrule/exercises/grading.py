"""Scores that student code cannot reach: the answers are called in the student's kernel, judged outside it.

Grading runs in two places that do not trust each other:

1. **In the grader's own process**, before the notebook runs, :func:`inputs` runs every
   test of the assignment, public and hidden, with each answer replaced by the reference
   solution, and writes down the inputs each answer is called on. A hidden test draws its
   inputs from the seeds in its source mixed with a secret of this process
   (:func:`chainrule.exercises.answers.hidden_inputs`), so its inputs are known nowhere else.
2. **In the student's kernel**, after the student's cells, :func:`chainrule.exercises.kernel.record`
   calls each answer on those inputs and writes down what it returned (:func:`encode`:
   numbers, strings, lists, tuples, dicts and numpy arrays, as JSON). The kernel is given
   inputs only: no test, expected value, reference or seed, and it cannot import the checks.
3. **Back in the grader's process**, :func:`score` runs the same tests again. Each answer is
   now a stand-in that gives back what was recorded for the same inputs; expected values,
   comparisons and points are all computed here.

So a notebook that rewrites the checks, patches numpy, reads the checker's stack frames or
prints fake results changes nothing that is scored, and a notebook that stops its kernel
(``os._exit``) leaves no record and earns nothing, with the reason. A part whose hidden
cases fail earns nothing for its public cases either: an answer must be right on inputs it
has not seen, not only on those printed in its notebook. What an exercise does not allow
(``chainrule_not_allowed``: the engine's ``Value.backward`` for a derivative worked out by
hand) fails every case of its test when the answer's code uses it (:mod:`.answer_code`),
and raises in the kernel when it is called.

**Points per quantity.** A test file of the autograder may name its parts
(``chainrule_parts``, written by ``make assignments``): the quantities of one answer (its
∂J/∂W1 and ∂J/∂W2), or the answers of a question (``matmul_vjp`` and ``ce_grad``). Each test
case then runs once per part and earns that part's share of its points. A quantity is
scored with :func:`chainrule.exercises.answers.scoring_part`; an answer is scored with the other
answers replaced by the reference solution (``chainrule_reference``), so that a missing
``ce_grad`` costs only ``ce_grad``'s points.

The otter-grader plugin :class:`chainrule.exercises.otter_plugin.TrustedScores` runs this inside
``otter run`` (Gradescope); ``make grade`` (``tools/grade.py``) runs the kernel in a sandbox
and scores outside it. Both call :func:`inputs` and :func:`score`, so they give the same points.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import json
import math
from pathlib import Path

from .answer_code import not_allowed_used
from .calling import joined

RECORD_LIMIT = 64 * 2**20  # bytes: a larger record is refused, not read
MAX_DEPTH = 20
BLOCKED_MODULES = ("torch", "jax", "tensorflow")
BLOCKED_MESSAGE = (
    "this assignment is graded without PyTorch, JAX and TensorFlow (they are not installed "
    "where it is graded); write your answer with numpy"
)


class Unreadable(ValueError):
    """A record that is not what :func:`record` writes, or an answer of a type the grader cannot carry."""


# --------------------------------------------------------------------------- values as JSON


def encode(value, depth: int = 0):
    """``value`` as JSON data that :func:`decode` turns back into an equal value.

    Arrays keep their dtype and shape; a value of any other type becomes a marker naming
    its type, so that a check still says "it is a Value" rather than crash.
    """
    if depth > MAX_DEPTH:
        raise Unreadable(f"a value nested more than {MAX_DEPTH} deep")
    if value is None or isinstance(value, (bool, str)):
        return value
    if type(value) is int or type(value) is float:
        return value
    if value is Ellipsis:
        return {"t": "ellipsis"}
    if isinstance(value, (list, tuple)):
        return {"t": "tuple" if isinstance(value, tuple) else "list", "v": [encode(item, depth + 1) for item in value]}
    if isinstance(value, dict):
        return {"t": "dict", "v": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]}
    import numpy as np

    if hasattr(value, "data") and type(value).__name__ == "Tensor" and isinstance(value.data, np.ndarray):
        value = value.data  # a chainrule Tensor: its array
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
        return {"t": "array", "dtype": value.dtype.str, "shape": list(value.shape), "v": value.ravel().tolist()}
    if isinstance(value, np.generic) and value.dtype.kind in "biuf":
        return {"t": "scalar", "dtype": value.dtype.str, "v": value.item()}
    if isinstance(value, (int, float)):  # a subclass, such as a bool-like or a float subclass
        return float(value) if isinstance(value, float) else int(value)
    return {"t": "other", "type": type(value).__name__[:60]}


def decode(data, depth: int = 0):
    """The value that :func:`encode` wrote; :class:`Unreadable` for anything else."""
    if depth > MAX_DEPTH:
        raise Unreadable(f"a value nested more than {MAX_DEPTH} deep")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if not isinstance(data, dict) or not isinstance(data.get("t"), str):
        raise Unreadable(f"an encoded value of type {type(data).__name__}")
    kind = data["t"]
    if kind == "ellipsis":
        return Ellipsis
    if kind in ("list", "tuple"):
        items = [decode(item, depth + 1) for item in _list(data.get("v"))]
        return items if kind == "list" else tuple(items)
    if kind == "dict":
        pairs = [_list(pair) for pair in _list(data.get("v"))]
        if any(len(pair) != 2 for pair in pairs):
            raise Unreadable("a dict entry that is not a pair")
        return {_hashable(decode(k, depth + 1)): decode(v, depth + 1) for k, v in pairs}
    if kind in ("array", "scalar"):
        return _number(data, kind)
    if kind == "other":
        name = str(data.get("type", "object"))
        return type(name if name.isidentifier() else "object", (), {"__repr__": lambda self: f"<{name}>"})()
    raise Unreadable(f"an encoded value of kind {kind!r}")


def _list(data) -> list:
    if not isinstance(data, list):
        raise Unreadable(f"expected a list, found {type(data).__name__}")
    return data


def _hashable(key):
    try:
        hash(key)
    except TypeError:
        raise Unreadable("a dict key that is not hashable") from None
    return key


def _number(data: dict, kind: str):
    import numpy as np

    try:
        dtype = np.dtype(data["dtype"])
    except (KeyError, TypeError):
        raise Unreadable("an array without a valid dtype") from None
    if dtype.kind not in "biuf":
        raise Unreadable(f"an array of dtype {dtype}")
    if kind == "scalar":
        return dtype.type(data.get("v"))
    shape = tuple(_list(data.get("shape")))
    values = _list(data.get("v"))
    if not all(type(n) is int and n >= 0 for n in shape) or math.prod(shape) != len(values):
        raise Unreadable(f"an array whose shape {shape} does not hold its {len(values)} entries")
    return np.array(values, dtype=dtype).reshape(shape)


def key(args: tuple, kwargs: dict) -> str:
    """The inputs of one call, as the text both sides compare."""
    return json.dumps([encode(list(args)), encode(kwargs)], sort_keys=True)


def _parameters(source: str) -> list[str]:
    return [arg.arg for node in ast.parse(source).body if isinstance(node, ast.FunctionDef) for arg in node.args.args]


# --------------------------------------------------------------------------- parts


PARTS = "chainrule_parts"
REFERENCE = "chainrule_reference"
NOT_ALLOWED = "chainrule_not_allowed"


def settings(source: str) -> dict:
    """What ``make assignments`` wrote into a test file for the grader: ``chainrule_parts``,
    ``chainrule_reference`` and ``chainrule_not_allowed``, by name (otter ignores them)."""
    found: dict[str, object] = {}
    for node in ast.parse(source).body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id in (PARTS, REFERENCE, NOT_ALLOWED)
        ):
            found[node.targets[0].id] = ast.literal_eval(node.value)
    return found


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
        """Run the test case ``case`` for this part: only this part's verdict can fail it."""
        from . import answers

        if self.reference and self.answer is not None:
            solved = _reference(self.reference)
            environment = {
                **environment,
                **{name: value for name, value in solved.items() if name != self.answer and not name.startswith("_")},
            }
        with answers.scoring_part(self.quantity):
            case.body.call_func(environment)


_REFERENCES: dict[str, dict] = {}


def reference_names(code: str) -> dict:
    """The names the reference solution ``code`` defines, functions and values."""
    return dict(_reference(code))


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
    """What the student's kernel is given: for each answer, the inputs the tests call it on.

    Every test (hidden ones with ``secret``: :func:`chainrule.exercises.answers.hidden_inputs`)
    runs here with the reference solution standing in for the answers, so the inputs are those
    a right answer is called on; a wrong one is judged at its first wrong result. The result,
    as JSON data: ``calls`` (answer -> keys, :func:`key`), ``values`` (answers that are not
    functions) and ``not_allowed`` (answer -> what it may not use).
    """
    from otter.test_files import ExceptionTestFile

    calls: dict[str, dict[str, None]] = {}
    values: set[str] = set()
    not_allowed: dict[str, list[str]] = {}
    for name, source in sorted(tests.items()):
        found = settings(source)
        reference = _reference(str(found.get(REFERENCE, "")))
        environment = {}
        for answer in dict.fromkeys(_parameters(source)):
            if answer not in reference:
                raise Unreadable(f"tests/{name} has no reference solution for {answer}: run make assignments again")
            if callable(reference[answer]):
                environment[answer] = _Collector(answer, reference[answer], calls.setdefault(answer, {}))
                paths = not_allowed.setdefault(answer, [])
                paths += [str(path) for path in found.get(NOT_ALLOWED, []) if str(path) not in paths]
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
    return {"calls": {n: list(keys) for n, keys in calls.items()}, "values": sorted(values), "not_allowed": not_allowed}


def _hidden(case, secret: bytes):
    """A hidden case draws its inputs with the grader's ``secret``; a public one as the notebook did."""
    from . import answers

    return answers.hidden_inputs(secret) if case.hidden else contextlib.nullcontext()


# --------------------------------------------------------------------------- in the grader's process


class _Replay:
    """Stands for one answer function in the grader: gives back what the kernel recorded."""

    def __init__(self, name: str, calls: list, stopped: bool = False):
        self.__name__ = name
        self._stopped = stopped
        self._calls = {}
        for entry in calls:
            if isinstance(entry, dict) and isinstance(entry.get("key"), str):
                self._calls.setdefault(entry["key"], entry)

    def __call__(self, *args, **kwargs):
        entry = self._calls.get(key(args, kwargs))
        if entry is None and self._stopped:
            raise Unreadable(
                f"the kernel stopped while the grader called {self.__name__} (a crash, or it ran out of memory)"
            )
        if entry is None:
            raise Unreadable(
                f"{self.__name__} was not called with these inputs while the notebook ran: the "
                "notebook stopped early, or changed the grader's code"
            )
        if "error" in entry:
            raise _exception(entry["error"])
        if "result" not in entry:
            raise Unreadable(f"{self.__name__} did not return while the notebook ran (the kernel stopped)")
        changed = entry.get("changed")
        if isinstance(changed, list) and changed and all(type(i) is int and 0 <= i < len(args) for i in changed):
            from .calling import ChangedInPlace

            rounded = entry.get("rounded")
            rounded = [i for i in rounded if type(i) is int and i in changed] if isinstance(rounded, list) else []
            raise ChangedInPlace(changed, rounded)
        return decode(entry["result"])


def _exception(error) -> BaseException:
    """The student's exception, rebuilt as an ``Exception`` with the same name and message, and where it was."""
    if not isinstance(error, dict):
        return Unreadable("an error record that is not a dict")
    rebuilt = _rebuilt(str(error.get("type", "Exception")), str(error.get("message", "")))
    rebuilt.where = str(error.get("where", ""))  # what calling.where() reports
    return rebuilt


def _rebuilt(name: str, message: str) -> BaseException:
    from . import calling

    if name == "_TimeUp":
        return calling._TimeUp()
    kind = getattr(builtins, name, None)
    if isinstance(kind, type) and issubclass(kind, Exception) and name not in ("KeyboardInterrupt",):
        try:
            return kind(message)
        except Exception:  # noqa: BLE001 - an exception type that wants other arguments
            pass
    if isinstance(kind, type) and issubclass(kind, BaseException) and not issubclass(kind, Exception):
        message = f"stopped the kernel's check ({name}){message and ': ' + message}"
    safe = name if name.isidentifier() else "Error"
    return type(safe, (Exception,), {"__module__": "student"})(message)


NO_RECORD = (
    "the notebook did not reach the grader's last cell (a cell stopped the kernel, for example with "
    "os._exit or sys.exit, or it ran out of time or memory)"
)


def read_record(path: Path) -> tuple[dict | None, str]:
    """The record in the file at ``path`` and "", or None and why it cannot be used."""
    path = Path(path)
    if not path.is_file():
        return None, NO_RECORD
    if path.stat().st_size > RECORD_LIMIT:
        return None, _too_large()
    return parse_record(path.read_bytes())


def parse_record(text: bytes | str | None) -> tuple[dict | None, str]:
    """The record ``text`` (as :func:`chainrule.exercises.kernel.record` writes it) and "", or None and why not."""
    if text is None or not text:
        return None, NO_RECORD
    if len(text) > RECORD_LIMIT:
        return None, _too_large()
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError):
        return None, "the notebook's answers could not be read (the record was changed)"
    if not (isinstance(data, dict) and isinstance(data.get("values"), dict) and isinstance(data.get("calls"), dict)):
        return None, "the notebook's answers could not be read (the record was changed)"
    return data, ""


def _too_large() -> str:
    return f"the notebook's answers are too large to grade (over {RECORD_LIMIT // 2**20} MB)"


def score(
    tests: dict[str, str], data: dict | None, problem: str = "", secret: bytes = b"", cells: list[str] | None = None
) -> dict:
    """Run each test in this process against the recorded answers: test name -> otter ``ExceptionTestFile``.

    The result has otter's scores and messages, as ``otter run`` gives them, so that the
    points are the same wherever they are computed. With no record (``data`` None), every
    test case fails with ``problem``. ``secret`` must be the one :func:`inputs` was given;
    ``cells``, the notebook's code, is read for what an exercise does not allow. Each test file
    also gets ``mistakes``: the known mistakes its failed cases named
    (:attr:`chainrule.exercises.answers.AnswerError.mistake`), as data, in the order found, each once.
    """
    from otter.test_files import ExceptionTestFile
    from otter.test_files.abstract_test import TestCaseResult

    from .answers import AnswerError

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
            for (case, part), scored in zip(runs, test_file.test_cases):
                message, passed = "✅ Test case passed", True
                try:
                    with _hidden(case, secret), contextlib.redirect_stdout(io.StringIO()):
                        part.run(case, environment)
                except Exception as error:  # noqa: BLE001 - any failure of a check is a failed case
                    message, passed = "❌ Test case failed\n" + _failure(test_file, error), False
                    named = error.mistake if isinstance(error, AnswerError) else None
                    if named and named not in test_file.mistakes:
                        test_file.mistakes.append(named)
                test_file.test_case_results.append(TestCaseResult(test_case=scored, message=message, passed=passed))
            _public_only(runs, test_file.test_case_results)
            if data.get("used"):
                _refuse(test_file, f"The notebook imported {', '.join(map(str, data['used']))}: {BLOCKED_MESSAGE}.")
            _not_allowed(runs, test_file.test_case_results, source, cells or [])
        files[test_file.name] = test_file
    return files


NOT_YOURS = "it asks for your own code."
PUBLIC_ONLY = (
    "Right on the public test's inputs, but wrong on the hidden test's, so neither earns points: an "
    "answer must be right on inputs it has not seen."
)


def _not_allowed(runs: list, results: list, source: str, cells: list[str]) -> None:
    """Fail the cases of each answer whose code uses what the test does not allow (``chainrule_not_allowed``).

    A part that scores one answer (``matmul_vjp``) fails for that answer's code only; a part of
    the whole test, or of a quantity, fails when any answer's does.
    """

    paths = settings(source).get(NOT_ALLOWED, [])
    used = {name: not_allowed_used(cells, [name], paths) for name in dict.fromkeys(_parameters(source))}
    for index, ((case, part), result) in enumerate(zip(runs, results)):
        offending = [name for name in ([part.answer] if part.answer in used else used) if used[name]]
        if offending:
            said = "; ".join(f"{name} uses {joined(used[name])}" for name in offending)
            results[index] = _failed(result, f"{said}, which this exercise does not allow: {NOT_YOURS}")


def _public_only(runs: list, results: list) -> None:
    """A part whose hidden cases failed earns nothing for its public cases either (:data:`PUBLIC_ONLY`)."""

    failed = {part.label for (case, part), result in zip(runs, results) if case.hidden and not result.passed}
    for index, ((case, part), result) in enumerate(zip(runs, results)):
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
    source = test_file.source.split("\n")
    where = (
        f"Error at line {lines[-1]} in test {test_file.name}:\n  {source[lines[-1] - 1]}\n"
        if lines and 0 < lines[-1] <= len(source)
        else ""
    )
    return f"{where}{type(error).__name__}: {str(error).strip(chr(39))}"


def _environment(data: dict, names: list[str]) -> dict:
    environment = {}
    for name in names:
        if name in data["calls"]:
            calls = data["calls"][name]
            environment[name] = _Replay(name, calls if isinstance(calls, list) else [])
        elif name in data.get("defined", []):  # the kernel stopped while it called this answer
            environment[name] = _Replay(name, [], stopped=True)
        elif name in data["values"]:
            try:
                environment[name] = decode(data["values"][name])
            except Unreadable as error:
                environment[name] = type("Unreadable", (), {"__repr__": lambda self, e=error: f"<{e}>"})()
    return environment


def _refuse(test_file, why: str) -> None:
    """Fail every case of ``test_file`` for ``why`` (a blocked framework imported, what the exercise does not allow)."""

    test_file.test_case_results = [_failed(result, why) for result in test_file.test_case_results]


def _failed(result, why: str):
    """The case of ``result`` failed, for ``why``, as otter words a failure."""
    from otter.test_files.abstract_test import TestCaseResult

    return TestCaseResult(test_case=result.test_case, passed=False, message=f"❌ Test case failed\n{why}")
