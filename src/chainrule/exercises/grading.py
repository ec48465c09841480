"""Scores that student code cannot reach: record in the student's kernel, compare outside it.

Grading runs in two places that do not trust each other:

1. **In the student's kernel**, after the student's cells, :func:`record` calls every test
   of the assignment once, with each answer wrapped so that what it was given and what it
   returned are written down (:func:`encode`: numbers, strings, lists, tuples, dicts and
   numpy arrays, as JSON). Nothing it computes there counts.
2. **In the grader's own process**, which never runs student code, :func:`score` runs the
   same tests again from the grader's copy. Each answer is now a stand-in that gives back
   what was recorded for the same inputs. Expected values, comparisons and points are all
   computed here, by a fresh import of :mod:`chainrule.exercises.feedback` and numpy.

So a notebook that rewrites ``chainrule.exercises.feedback``, patches numpy, edits the tests folder,
prints fake results or overwrites otter's results file changes nothing that is scored: at
most it changes the recorded answers, and those are compared here. A notebook that stops
its kernel (``os._exit``) leaves no record and earns nothing, with the reason.

**Points per quantity.** A test file of the autograder may name its parts
(``chainrule_parts``, written by ``make assignments``): the quantities of one answer (its
∂J/∂W1 and ∂J/∂W2), or the answers of a question (``matmul_vjp`` and ``ce_grad``). Each test
case then runs once per part and earns that part's share of its points. A quantity is
scored with :func:`chainrule.exercises.answers.scoring_part`; an answer is scored with the other
answers replaced by the reference solution (``chainrule_reference``), so that a missing
``ce_grad`` costs only ``ce_grad``'s points.

The otter-grader plugin :class:`chainrule.exercises.otter_plugin.TrustedScores` runs this inside
``otter run`` (Gradescope); ``make grade`` (``tools/grade.py``) runs the kernel in a sandbox
and scores outside it. Both call :func:`score`, so they give the same points.
"""

from __future__ import annotations

import builtins
import json
import math
from pathlib import Path

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


# --------------------------------------------------------------------------- in the student's kernel


class _Recorder:
    """Stands for one answer function in the kernel: calls it, and writes down each call."""

    def __init__(self, name: str, function, calls: list):
        self.__name__ = name
        self._function = function
        self._calls = calls
        self._timed_out = False

    def __call__(self, *args, **kwargs):
        from . import calling

        entry = {"key": key(args, kwargs)}
        before = [calling.copied(argument) for argument in args]  # what call() compares, the same way
        self._calls.append(entry)
        if self._timed_out:  # it ran out of time once: do not wait for it again
            entry["error"] = {"type": "_TimeUp", "message": "", "where": ""}
            raise calling._TimeUp
        try:
            result = self._function(*args, **kwargs)
        except BaseException as error:
            self._timed_out = isinstance(error, calling._TimeUp)
            entry["error"] = {"type": type(error).__name__, "message": str(error)[:2000], "where": _where(error)}
            raise
        changed = [i for i, argument in enumerate(args) if not calling.unchanged(before[i], argument)]
        if changed:  # the check says so in the kernel; the replay says the same (calling.ChangedInPlace)
            entry["changed"] = changed
        entry["result"] = _encoded_or_marker(result)
        return result


def _where(error: BaseException) -> str:
    from . import calling

    try:
        return calling.where(error)
    except Exception:  # noqa: BLE001 - a hint only
        return ""


def _encoded_or_marker(value):
    try:
        return encode(value)
    except Unreadable:
        return {"t": "other", "type": type(value).__name__[:60]}


def record(namespace: dict, tests: dict[str, str], path: str) -> None:
    """Run each test once against ``namespace`` (the kernel's globals) and write what the answers gave.

    ``tests`` maps a test file's name to its source (the grader's copy, not the folder's).
    """
    from otter.test_files import ExceptionTestFile

    names = sorted({name for source in tests.values() for name in _parameters(source)})
    values, calls = {}, {}
    environment = {}
    for name in names:
        if name not in namespace:
            continue
        value = namespace[name]
        if callable(value):
            calls[name] = []
            environment[name] = _Recorder(name, value, calls[name])
        else:
            values[name] = _encoded_or_marker(value)
            environment[name] = value
    for name, source in tests.items():
        test_file = ExceptionTestFile.from_string(source, path=name)
        for case in test_file.test_cases:
            for part in Part.of(source):
                try:
                    part.run(case, environment)
                except BaseException:  # noqa: BLE001 - only the record counts, and it is compared elsewhere
                    pass
    used = sorted(module for module in BLOCKED_MODULES if module in __import__("sys").modules)
    Path(path).write_text(json.dumps({"values": values, "calls": calls, "used": used, "changed": changed(tests)}))


def changed(tests: dict[str, str]) -> list[str]:
    """What of the grader's code the notebook changed, for the instructor (it changes no score)."""
    import numpy as np

    from . import answers, calling, feedback, scalar

    modules = (feedback, scalar, answers, calling)
    ours = {module.__name__ for module in modules}
    found = [
        f"{module.__name__}.{name}"
        for module in modules
        for name in dir(module)
        if (name.startswith("check") or name == "call")
        and callable(getattr(module, name))
        and getattr(getattr(module, name), "__module__", "") not in ours
    ]
    found += [
        f"numpy.{name}"
        for name in ("allclose", "isclose", "array_equal", "max", "abs", "asarray")
        if not (getattr(getattr(np, name), "__module__", "") or "").startswith("numpy")
    ]
    found += [
        f"tests/{name}"
        for name, source in tests.items()
        if not Path("tests", name).is_file() or Path("tests", name).read_text() != source
    ]
    return found


def _parameters(source: str) -> list[str]:
    import ast

    return [arg.arg for node in ast.parse(source).body if isinstance(node, ast.FunctionDef) for arg in node.args.args]


# --------------------------------------------------------------------------- parts


PARTS = "chainrule_parts"
REFERENCE = "chainrule_reference"


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
        import ast

        found: dict[str, object] = {}
        for node in ast.parse(source).body:
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id in (PARTS, REFERENCE)
            ):
                found[node.targets[0].id] = ast.literal_eval(node.value)
        reference = found.get(REFERENCE, "")
        parts = [
            Part(str(answer), None if quantity is None else str(quantity), str(reference))
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


BLOCKER_CELL = f"""\
# Added by the grader: {BLOCKED_MESSAGE.split(";")[0]}.
import importlib.abc as _grader_abc
import sys as _grader_sys


class _GraderBlock(_grader_abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {BLOCKED_MODULES!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}: {BLOCKED_MESSAGE}", name=name)


_grader_sys.meta_path.insert(0, _GraderBlock())"""


def recording_cell(tests: dict[str, str], path: str) -> str:
    """The last cell of a graded notebook: it records the answers into ``path``."""
    return (
        "# Added by the grader: it records what your answers give; the grade is computed elsewhere.\n"
        "from chainrule.exercises import grading as _grader_record\n"
        f"_grader_record.record(globals(), {tests!r}, {path!r})"
    )


KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def graded_notebook(notebook, tests: dict[str, str], path: str):
    """``notebook`` with the blocker cell first and the recording cell last, in the course's kernel (a new notebook)."""
    import copy

    import nbformat

    graded = copy.deepcopy(notebook)
    # The course's kernel, whatever the student's machine called theirs (conda's "myenv", a hub's):
    # otter runs the kernel a notebook names, and a name this machine lacks would fail honest work.
    graded.metadata["kernelspec"] = dict(KERNELSPEC)
    graded.cells.insert(0, nbformat.v4.new_code_cell(BLOCKER_CELL))
    graded.cells.append(nbformat.v4.new_code_cell(recording_cell(tests, path)))
    if graded.get("nbformat_minor", 0) < 5:  # cell ids came with nbformat 4.5
        for cell in (graded.cells[0], graded.cells[-1]):
            cell.pop("id", None)
    return graded


# --------------------------------------------------------------------------- in the grader's process


class _Replay:
    """Stands for one answer function in the grader: gives back what the kernel recorded."""

    def __init__(self, name: str, calls: list):
        self.__name__ = name
        self._calls = {}
        for entry in calls:
            if isinstance(entry, dict) and isinstance(entry.get("key"), str):
                self._calls.setdefault(entry["key"], entry)

    def __call__(self, *args, **kwargs):
        entry = self._calls.get(key(args, kwargs))
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

            raise ChangedInPlace(changed)
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


def read_record(path: Path) -> tuple[dict | None, str]:
    """The record at ``path`` and "", or None and why it cannot be used."""
    path = Path(path)
    if not path.is_file():
        return None, (
            "the notebook did not reach the grader's last cell (a cell stopped the kernel, for "
            "example with os._exit or sys.exit, or it ran out of time or memory)"
        )
    if path.stat().st_size > RECORD_LIMIT:
        return None, f"the notebook's answers are too large to grade (over {RECORD_LIMIT // 2**20} MB)"
    try:
        data = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError):
        return None, "the notebook's answers could not be read (the record was changed)"
    if not (isinstance(data, dict) and isinstance(data.get("values"), dict) and isinstance(data.get("calls"), dict)):
        return None, "the notebook's answers could not be read (the record was changed)"
    return data, ""


def score(tests: dict[str, str], data: dict | None, problem: str = "") -> dict:
    """Run each test in this process against the recorded answers: test name -> otter ``ExceptionTestFile``.

    The result has otter's scores and messages, as ``otter run`` gives them, so that the
    points are the same wherever they are computed. With no record (``data`` None), every
    test case fails with ``problem``. Each test file also gets ``mistakes``: the known
    mistakes its failed cases named (:attr:`chainrule.exercises.answers.AnswerError.mistake`), as data,
    in the order found, each once.
    """
    import contextlib
    import io

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
                    with contextlib.redirect_stdout(io.StringIO()):
                        part.run(case, environment)
                except Exception as error:  # noqa: BLE001 - any failure of a check is a failed case
                    message, passed = "❌ Test case failed\n" + _failure(test_file, error), False
                    named = error.mistake if isinstance(error, AnswerError) else None
                    if named and named not in test_file.mistakes:
                        test_file.mistakes.append(named)
                test_file.test_case_results.append(TestCaseResult(test_case=scored, message=message, passed=passed))
            if data.get("used"):
                _refuse(test_file, data["used"])
        files[test_file.name] = test_file
    return files


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
        elif name in data["values"]:
            try:
                environment[name] = decode(data["values"][name])
            except Unreadable as error:
                environment[name] = type("Unreadable", (), {"__repr__": lambda self, e=error: f"<{e}>"})()
    return environment


def _refuse(test_file, used: list) -> None:
    """Fail every case of a notebook that imported a blocked framework (it got round the blocker)."""
    from otter.test_files.abstract_test import TestCaseResult

    modules = ", ".join(str(module) for module in used)
    test_file.test_case_results = [
        TestCaseResult(
            test_case=result.test_case,
            passed=False,
            message=f"❌ Test case failed\nThe notebook imported {modules}: {BLOCKED_MESSAGE}.",
        )
        for result in test_file.test_case_results
    ]
