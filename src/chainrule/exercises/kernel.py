"""What runs in the student's kernel while a notebook is graded: the answers, called on the grader's inputs.

The grader adds two cells to a notebook it grades (:func:`graded_notebook`):

- **first**, :data:`FIRST_CELL`: it imports this module, then refuses every module that
  holds an answer key (the checks of :mod:`chainrule.exercises.feedback`,
  :mod:`chainrule.exercises.scalar` and :mod:`chainrule.exercises.array_checks` compute the
  right answers) and PyTorch, JAX and
  TensorFlow, for the rest of the notebook;
- **last**, :func:`recording_cell`: it calls :func:`record` with the inputs the grader
  chose (:func:`chainrule.exercises.grading.inputs`) and nothing else: no test, no
  expected value, no reference solution, no seed.

:func:`record` calls each answer on each input, under a time limit, on copies, and writes
down what it returned or raised, as JSON. The grader compares that with the right
answers in its own process. While it calls an answer, what the exercise does not allow
(``Value.backward`` for a derivative worked out by hand) raises :class:`NotAllowed`.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import sys
from pathlib import Path

from . import calling
from .grading import BLOCKED_MESSAGE, BLOCKED_MODULES, Unreadable, decode, encode

#: The grader's modules that compute the right answers: a notebook cannot import them while it is
#: graded (nor the frameworks of BLOCKED_MODULES, which would do the work).
ANSWER_KEYS = (
    "chainrule.exercises.feedback",
    "chainrule.exercises.scalar",
    "chainrule.exercises.array_checks",
    "chainrule.exercises.otter_plugin",
)
KEY_MESSAGE = "the course's checks hold the answers, so a notebook cannot import them while it is graded"
#: The output the recording cell shows the record in: the grader reads it from there.
RECORD_TYPE = "text/x-chainrule-record"
ANSWER_LIMIT = 1_000_000  # numbers in one answer's result: a larger one fails that answer alone
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


class NotAllowed(RuntimeError):
    """Raised, while an answer is graded, by what its exercise does not allow it to use."""


FIRST_CELL = f"""\
# Added by the grader: {BLOCKED_MESSAGE.split(";")[0]}, nor with the course's checks.
import importlib.abc as _grader_abc
import sys as _grader_sys

from chainrule.exercises import kernel as _grader_kernel


class _GraderBlock(_grader_abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {BLOCKED_MODULES!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}: {BLOCKED_MESSAGE}", name=name)
        if name.startswith({ANSWER_KEYS!r}):
            raise ModuleNotFoundError(f"No module named {{name!r}}: {KEY_MESSAGE}", name=name)


_grader_sys.meta_path.insert(0, _GraderBlock())"""


def recording_cell(inputs: dict, path: str = "") -> str:
    """The last cell of a graded notebook: it calls the answers on ``inputs`` and shows the record
    (and writes it to ``path``)."""
    return (
        "# Added by the grader: it calls your answers on its own inputs; the grade is computed elsewhere.\n"
        f"_grader_kernel.record(globals(), {json.dumps(inputs)!r}, {path!r})"
    )


def graded_notebook(notebook, inputs: dict, path: str = ""):
    """``notebook`` with the grader's first and last cells, without the cells otter ignores, in the course's kernel."""
    import copy

    import nbformat

    graded = copy.deepcopy(notebook)
    # The course's kernel, whatever the student's machine called theirs (conda's "myenv", a hub's):
    # a kernel name this machine lacks would fail honest work.
    graded.metadata["kernelspec"] = dict(KERNELSPEC)
    graded.cells = [cell for cell in graded.cells if "otter_ignore" not in cell.get("metadata", {}).get("tags", [])]
    graded.cells.insert(0, nbformat.v4.new_code_cell(FIRST_CELL))
    graded.cells.append(nbformat.v4.new_code_cell(recording_cell(inputs, path)))
    if graded.get("nbformat_minor", 0) < 5:  # cell ids came with nbformat 4.5
        for cell in (graded.cells[0], graded.cells[-1]):
            cell.pop("id", None)
    return graded


def record(namespace: dict, inputs: str | dict, path: str = "", show: bool = True) -> dict:
    """Call each answer in ``namespace`` on the grader's ``inputs``; show the record (and write it to ``path``).

    ``inputs`` (JSON): ``calls``, answer name -> the keys of its calls
    (:func:`chainrule.exercises.grading.key`); ``values``, the names of answers that are
    values; ``not_allowed``, answer name -> what it may not use (``chainrule.Value.backward``).
    The record is shown as the cell's outputs (``show``), where the grader reads it: one part
    as each answer is done, so that an answer that crashes the kernel costs only itself.
    """
    inputs = json.loads(inputs) if isinstance(inputs, str) else inputs
    used = sorted(module for module in BLOCKED_MODULES if module in sys.modules)
    values = {name: _encoded(namespace[name]) for name in inputs.get("values", []) if name in namespace}
    defined = [name for name in inputs.get("calls", {}) if name in namespace]
    data: dict = {"values": values, "calls": {}, "used": used, "defined": defined}
    _show(dict(data), show)
    for name, keys in inputs.get("calls", {}).items():
        if name in namespace:
            data["calls"][name] = _calls(namespace[name], keys, inputs.get("not_allowed", {}).get(name, []))
            _show({"calls": {name: data["calls"][name]}}, show)
    if path:
        Path(path).write_text(json.dumps(data))
    return data


def _show(part: dict, show: bool) -> None:
    if show:
        from IPython.display import display

        display({RECORD_TYPE: json.dumps(part)}, raw=True)


def shown_record(cell) -> str | None:
    """The record that the recording cell ``cell`` (run) showed, its parts joined, or None when it showed none."""
    parts = [
        output["data"][RECORD_TYPE]
        for output in cell.get("outputs", [])
        if output.get("output_type") == "display_data" and isinstance(output.get("data", {}).get(RECORD_TYPE), str)
    ]
    if not parts:
        return None
    data: dict = {"values": {}, "calls": {}, "used": [], "defined": []}
    for text in parts:
        try:
            part = json.loads(text)
        except ValueError:
            continue
        if isinstance(part, dict):
            data["values"].update(part.get("values") if isinstance(part.get("values"), dict) else {})
            data["calls"].update(part.get("calls") if isinstance(part.get("calls"), dict) else {})
            data["used"] = part.get("used", data["used"])
            data["defined"] = part.get("defined", data["defined"])
    return json.dumps(data)


def _calls(function, keys: list[str], not_allowed: list[str]) -> list[dict]:
    entries, timed_out = [], False
    for key in keys:
        entry = {"key": key}
        entries.append(entry)
        if timed_out:  # it ran out of time once: do not wait for it again
            entry["error"] = {"type": "_TimeUp", "message": "", "where": ""}
            continue
        try:
            args, kwargs = (decode(part) for part in json.loads(key))
            before = [calling.copied(argument) for argument in args]
        except (Unreadable, ValueError) as error:
            entry["error"] = {"type": "Unreadable", "message": str(error)[:300], "where": ""}
            continue
        try:
            with _refused(not_allowed), calling.time_limit(calling.TIME_LIMIT):
                result = function(*args, **kwargs)
        except BaseException as error:  # noqa: BLE001 - written down for the grader, which explains it
            timed_out = isinstance(error, calling._TimeUp)
            message = str(error)[:2000]
            entry["error"] = {"type": type(error).__name__, "message": message, "where": _where(error)}
            continue
        changed = [i for i, argument in enumerate(args) if not calling.unchanged(before[i], argument)]
        if changed:  # the grader's replay says so (calling.ChangedInPlace)
            entry["changed"] = changed
            entry["rounded"] = [i for i in changed if calling.by_rounding(before[i], args[i])]
        numbers = _numbers(result, ANSWER_LIMIT)
        if numbers > ANSWER_LIMIT:
            message = f"returned more than {ANSWER_LIMIT:,} numbers; the grader reads at most that many of one answer"
            entry["error"] = {"type": "AnswerTooLarge", "message": message, "where": ""}
        else:
            entry["result"] = _encoded(result)
    return entries


@contextlib.contextmanager
def _refused(paths: list[str]):
    """Within the block, each ``module.Class.attribute`` of ``paths`` raises :class:`NotAllowed` when called."""
    replaced = []
    try:
        for path in paths:
            owner, name = _owner(path)
            if owner is not None and hasattr(owner, name):
                replaced.append((owner, name, owner.__dict__.get(name, getattr(owner, name))))
                setattr(owner, name, _refusal(path))
        yield
    finally:
        for owner, name, original in reversed(replaced):
            setattr(owner, name, original)


def _owner(path: str):
    """The object that holds the last part of ``path`` (a module or a class), and that part's name."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:-1]:
            owner = getattr(owner, part, None)
        return owner, parts[-1]
    return None, parts[-1]


def _refusal(path: str):
    shown = path.removeprefix("chainrule.")

    def refused(*args, **kwargs):
        raise NotAllowed(f"{shown} is not allowed in this exercise: work it out in your own code")

    return refused


def _numbers(value, limit: int, depth: int = 0) -> int:
    """How many numbers (or other leaves) ``value`` holds, counted up to a little over ``limit``."""
    size = getattr(value, "size", None)
    if isinstance(size, int) and hasattr(value, "dtype"):  # an array, without looking at its entries
        return size
    if isinstance(value, dict):
        value = [*value.keys(), *value.values()]
    if not isinstance(value, (list, tuple)) or depth > 20:
        return len(value) // 8 if isinstance(value, (str, bytes)) else 1
    count = 0
    for item in value:
        count += _numbers(item, limit, depth + 1)
        if count > limit:
            break
    return count


def _where(error: BaseException) -> str:
    try:
        return calling.where(error)
    except Exception:  # noqa: BLE001 - a hint only
        return ""


def _encoded(value):
    try:
        return encode(value)
    except Unreadable:
        return {"t": "other", "type": type(value).__name__[:60]}
