"""The notebook a check runs in, read as the grader will read it: which cell defines an answer, and where it is.

The grader runs, for each answer, the last code cell of the handed-in notebook that defines it
(:func:`chainrule_course.grading.scoring.answer_cells`), as the student typed it. A kernel knows
the cells it ran; where the front end says which notebook it runs (Jupyter, VS Code) or holds
it (Colab's editor), the notebook itself is read, its cells not run yet too. So a check can
say when the grader would run another cell than the one the student ran (:func:`no_later_draft`),
and the "check everything" cell checks the cell that will be graded and says which it is
(:func:`graded`).
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

from ..grading import apart
from .answers import AnswerError

#: Where the notebook a kernel runs is saved, as Jupyter (``JPY_SESSION_NAME``, ``__session__``) and VS Code tell it.
SESSION_NAMES = ("__session__", "__vsc_ipynb_file__")


def _history() -> tuple[list, list] | None:
    """IPython's cells by number, as typed and as it compiled them (None outside IPython, as on the page)."""
    module = sys.modules.get("IPython")  # never imported here: where it is not loaded, there is no kernel
    manager = getattr(module.get_ipython() if module else None, "history_manager", None)
    if manager is None:
        return None
    return manager.input_hist_raw, manager.input_hist_parsed


def typed(compiled: str) -> str:
    """The cell as the student typed it, given the code IPython compiled from it (and cached for its
    functions): a help line ``np.maximum?`` was compiled as a call of ``get_ipython``, which the grader,
    reading the notebook, never sees."""
    history = _history()
    if history is not None:
        raw, parsed = history
        for number in range(min(len(raw), len(parsed)) - 1, 0, -1):
            if parsed[number].rstrip() == compiled.rstrip():
                return raw[number]
    return compiled


def run_as(source: str) -> int | None:
    """The number IPython gave the last run of the cell ``source`` (as typed), or None: not run in this kernel."""
    history = _history()
    if history is not None:
        for number in range(len(history[0]) - 1, 0, -1):
            if history[0][number].strip() == source.strip():
                return number
    return None


def unwrapped(function):
    """The plain function behind ``function``: through ``__wrapped__``, a partial's ``func``, a method's
    ``__func__`` and a callable object's ``__call__``."""
    for _ in range(20):
        if hasattr(function, "__code__"):
            return function
        inner = getattr(function, "__wrapped__", None) or getattr(function, "func", None)
        inner = inner or getattr(function, "__func__", None)
        if inner is None and not isinstance(function, type):
            inner = getattr(type(function), "__call__", None)
            inner = inner if hasattr(inner, "__code__") else None
        if inner is None:
            return function
        function = inner
    return function


def cell_source(function) -> tuple[str, str] | None:
    """The notebook cell that defined ``function`` (its code's file name, and the cell as typed), or None for
    a module's function.

    IPython and the web page's Python keep each cell's code in :mod:`linecache` under the name it
    was compiled with, without a modification time; a module's file has one. A wrapped function
    (``functools.lru_cache``, ``functools.partial``, a decorator that sets ``__wrapped__``, a
    callable object) is found through the function it wraps.
    """
    import linecache

    filename = getattr(getattr(unwrapped(function), "__code__", None), "co_filename", None)
    if not isinstance(filename, str):
        return None
    # A cell's entry is (size, None, lines, name); a module's has its file's time, or is (loader,) until read.
    entry = linecache.cache.get(filename)
    if entry is None or len(entry) < 3 or entry[1] is not None:
        return None
    return filename, typed("".join(entry[2]))


def notebook_cells() -> list[str]:
    """The cells this kernel (or the web page's Python) has run, as typed, in the order it ran them (an
    edited cell's older versions too)."""
    import linecache

    return [
        typed("".join(entry[2]))
        for name, entry in list(linecache.cache.items())
        if len(entry) >= 3 and entry[1] is None and not str(name).startswith("<answer")
    ]


def notebook_file() -> Path | None:
    """The notebook file this kernel runs, where the front end says which it is (Colab does not)."""
    import os

    main = sys.modules.get("__main__")
    named = [getattr(main, attribute, None) for attribute in SESSION_NAMES] + [os.environ.get("JPY_SESSION_NAME")]
    for name in named:
        if isinstance(name, str) and name.endswith(".ipynb") and Path(name).is_file():
            return Path(name)
    return None


@functools.lru_cache(maxsize=8)
def _saved_cells(path: Path, modified: float) -> tuple[str, ...]:
    """The code cells of the notebook saved at ``path`` (as of ``modified``), as the grader reads them."""
    import json

    try:
        cells = json.loads(path.read_text(encoding="utf-8-sig")).get("cells", [])
    except (OSError, ValueError, AttributeError):
        return ()
    sources = [c.get("source", "") for c in cells if isinstance(c, dict) and c.get("cell_type") == "code"]
    return tuple("".join(s) if isinstance(s, list) else str(s) for s in sources)


def _colab_cells() -> tuple[str, ...] | None:
    """The code cells of the notebook open in Colab, as its editor holds them (None outside Colab)."""
    if "google.colab" not in sys.modules:  # loaded in every Colab kernel; never imported here
        return None
    try:
        from google.colab import _message

        notebook = _message.blocking_request("get_ipynb", timeout_sec=5)["ipynb"]
        cells = [cell for cell in notebook["cells"] if cell.get("cell_type") == "code"]
        return tuple("".join(c["source"]) if isinstance(c["source"], list) else str(c["source"]) for c in cells)
    except Exception:  # noqa: BLE001 - not Colab's, or no answer from its editor: no check of drafts
        return None


def held_cells() -> tuple[tuple[str, ...], str, str] | None:
    """The notebook's code cells as the grader would read them now, what to call the notebook, and what
    to add to "delete the drafts" (", and save" where a file is read): Colab's editor, else the file
    Jupyter names; None where neither can be read."""
    cells = _colab_cells()
    if cells is not None:
        return cells, "this notebook", ""
    path = notebook_file()
    if path is None:
        return None
    return _saved_cells(path, path.stat().st_mtime), path.name, ", and save"


def graded_cell(cells, name: str) -> tuple[str, str] | None:
    """("<cell>", the cell of ``cells`` that the grader runs for ``name``), by the grader's own rule
    (:func:`chainrule_course.grading.scoring.answer_cells`: the last that defines it), or None."""
    from ..grading.scoring import answer_cells

    found = answer_cells(list(cells), [name]).get(name)
    return None if found is None else ("<cell>", found)


def _line(source: str, name: str) -> str:
    """The first line of ``source`` that names ``name``, to point at the cell: `def f(x):`."""
    first = next((line.strip() for line in source.splitlines() if name in line), name)
    return f"`{first[:50]}`"


def no_later_draft(name: str, called: str, source: str) -> None:
    """Fail when the notebook's last cell defining ``called``, the one the grader runs, is not ``source``, the
    cell the student ran: the notebook as Colab's editor holds it, or as saved where Jupyter names its file."""
    held = held_cells()
    if held is None:
        return
    cells, where, save = held
    defining = sum(called in apart.top_level(cell) for cell in cells)
    graded = graded_cell(cells, called)
    if defining < 2 or graded is None or graded[1].strip() == source.strip():
        return
    raise AnswerError(
        name,
        f"{defining} cells of {where} define {called}, and the grader runs the last of them, which is "
        f"not the one you ran: the cell with {_line(graded[1], called)} further down. Delete the drafts of "
        f"{called} (or run that cell){save}.",
        "a later draft of the answer",
    )


def graded(called: str, ran: str, held=None) -> tuple[str, str]:
    """The cell the grader will run for ``called``, and a line that says which it is.

    ``ran`` is the cell the kernel ran to define it; ``held()`` gives the notebook as the grader
    would read it now (:func:`held_cells`), or None: then the kernel's cell is the graded one, as
    when a notebook is run from top to bottom.
    """
    notebook = held() if held else None
    last = graded_cell(notebook[0], called) if notebook else None
    if notebook is None or last is None:  # last is None whenever notebook is
        number = run_as(ran)
        said = f"graded: {called} from {_line(ran, called)}" + (f", run as [{number}]." if number else ".")
        if notebook:  # a notebook file not saved since the answer was written
            said += f" Save {notebook[1]}: as saved, no cell of it defines {called}."
        return ran, said
    cells, where, save = notebook
    source = last[1]
    number = run_as(source)
    defining = sum(called in apart.top_level(cell) for cell in cells)
    many = f", the last of the {defining} cells of {where} that define it" if defining > 1 else f" in {where}"
    said = f"graded: {called} from {_line(source, called)}{many}" + (f", run as [{number}]" if number else "")
    if source.strip() == ran.strip():
        return source, said + "."
    if save and defining == 1 and all(cell.strip() != ran.strip() for cell in cells):  # not saved since it ran
        number = run_as(ran)
        ran_as = f", run as [{number}]" if number else ""
        return ran, f"graded: {called} from {_line(ran, called)}{ran_as}, once you save {where}: save it."
    ran_number = run_as(ran)
    ran_text = f"[{ran_number}]" if ran_number else _line(ran, called)
    if defining > 1:
        fix = f"Delete the drafts of {called}{' and save' if save else ''}, then run this cell again."
    else:  # the cell changed after it ran (and was saved so)
        fix = "Run that cell, then run this cell again."
    return source, f"{said}, not the cell you ran last ({ran_text}). {fix}"
