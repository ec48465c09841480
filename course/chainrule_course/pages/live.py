"""Run a page's code cells in the browser: the Python half of the book's "Live code" mode.

The scalar chapters need nothing but Python and chainrule's ``Value``, so the web page can
run their cells itself, in Pyodide (CPython compiled to WebAssembly) in a Web Worker. The
worker (``live_worker.js``) loads Pyodide, unpacks the engine's and the course's wheels, and calls
:func:`run_cell` once per cell, in order, with one namespace for the whole page, as a
notebook kernel would. This module is that runner; it needs nothing but the standard
library, so it is tested in CPython too.

A cell's result is a dict the page shows under the cell:

* ``stdout``, ``stderr``: what the cell printed;
* ``html`` or ``text``: its last expression, as Jupyter displays it (``_repr_html_`` when
  the value has one, else ``repr``), unless it is None or the line ends with ``;``;
* ``error``: one line, ``ZeroDivisionError: division by zero (line 3: x = 1 / 0)``,
  naming the exception and the cell's line that raised it, not a wall of frames.

Freeing a deep graph. When the last reference to the root of a chain of n Values goes,
CPython frees the root, which frees its parent, and so on: n nested C calls. A native
process has the stack for it; a browser's Web Worker does not, and Pyodide dies of a
stack overflow for a chain of a few thousand Values (the chapters build chains of 5,000
and more). :class:`ShallowRelease` holds every Value an operation makes and lets go of
them newest first, only when nothing else holds them, so each one is freed while its
parents are still held: one level deep, however deep the graph.
"""

import ast
import contextlib
import io
import linecache
import sys
import time
import traceback

__all__ = ["ShallowRelease", "new_namespace", "run_cell", "run_solution_cell", "start_page", "stream_to"]


class ShallowRelease:
    """Hold every Value an operation makes; free the unused ones newest first, one level deep.

    ``install(value_class)`` wraps ``value_class.from_op``, the one place the scalar
    engine makes a Value with parents, and the seam it offers for this. :meth:`sweep` (after each cell, and during one
    every ``batch`` new Values, or as many as are held if that is more) walks the held
    Values from the newest to the oldest and drops those only it holds: a dropped Value
    frees its parents' references, and the parents, older, are still held, so no free
    recurses; if nothing else holds them they go later in the same walk. Values the cell's variables reach stay held.
    """

    def __init__(self, batch=20_000):
        self.batch = batch
        self.values = []
        self._next_sweep = batch

    def install(self, value_class):
        make = value_class.from_op

        def held(data, op, parents, local_grads):
            value = make(data, op, parents, local_grads)
            self.values.append(value)
            if len(self.values) >= self._next_sweep:
                self.sweep()
            return value

        value_class.from_op = staticmethod(held)
        return self

    def sweep(self):
        """Drop, newest first, every held Value nothing else holds; return how many are left."""
        values = self.values
        for index in range(len(values) - 1, -1, -1):
            if sys.getrefcount(values[index]) <= 2:  # the list's reference and the call's argument
                values[index] = None
        self.values = [value for value in values if value is not None]
        # The next sweep waits for ``batch`` new Values, or for as many as are held now if
        # that is more: each sweep walks every held Value, so sweeps spaced by the number
        # held cost O(1) per Value made, and building a graph of n Values stays O(n).
        self._next_sweep = len(self.values) + max(self.batch, len(self.values))
        return len(self.values)


def start_page(render_dot):
    """Python for a web page's cells, as its worker (``live_worker.js``) starts it.

    chainrule's figures are drawn by ``render_dot`` (Graphviz in WebAssembly, a function of
    the worker's), deep graphs are freed one level at a time (:class:`ShallowRelease`), and
    the page's cells share one namespace. Returns ``(namespace, solutions, release)``: the
    page's names, those of the solutions' cells (:func:`run_solution_cell`), and the release.
    """
    from chainrule.figures import dot
    from chainrule.value import Value

    dot.set_renderer(render_dot)
    return new_namespace(), {}, ShallowRelease().install(Value)


def new_namespace():
    """A fresh namespace for a page's cells, as a new kernel has: ``__name__`` is ``__main__``."""
    return {"__name__": "__main__", "__builtins__": __builtins__}


def run_cell(source, namespace, name="<cell>", release=None):
    """Run ``source`` in ``namespace`` as a notebook cell; return what it printed, showed or raised.

    ``release``, a :class:`ShallowRelease`, is swept when the cell ends.
    """
    try:
        return _run_cell(source, namespace, name)
    finally:
        if release is not None:
            release.sweep()


def run_solution_cell(source, namespace, solutions, name="<cell>", release=None):
    """Run a solution's cell so that it changes none of the page's names.

    It sees the page's names and those the solutions before it bound (``solutions``, one
    dict for the page); what it binds or rebinds goes into ``solutions`` only. A reader's
    answer in ``namespace`` (the exercise's function) is therefore never replaced by the
    solution's, whichever order the cells run in.
    """
    scope = {**namespace, **solutions}
    result = run_cell(source, scope, name, release)
    for key, value in scope.items():
        if namespace.get(key, scope) is not value:
            solutions[key] = value
    return result


def stream_to(post):
    """From now on, what a cell prints also goes to ``post(text)`` while the cell runs (None: no more).

    The worker passes it on to the page, so that a cell stopped with its worker (Stop where
    Python cannot be interrupted) keeps what it had printed. The whole output still comes with
    the cell's result.
    """
    global _Output
    _Output = io.StringIO if post is None else _streamed(post)


def _streamed(post):
    """An ``io.StringIO`` that also posts what is written: every write at once for the first 5,000 of a
    cell (a print is two writes or more), and 100 more after each pause of 20 ms; past them, while the
    writes come fast, what they hold every 50 ms, reading the clock once in up to 64 writes (a read costs
    as much as two prints). A cell that prints a table and then loops keeps all of it; one stopped while
    it prints fast may lose its last 50 ms, and a loop of print() takes about twice as long. Its state is
    in this closure: attributes of the instance made a print five times slower."""
    held: list = []
    left = stride = 1
    budget = 5000
    checked = posted = -1.0e9

    def begin():  # a cell begins: nothing of the one before is left to post
        nonlocal left, stride, budget, checked, posted
        held.clear()
        left = stride = 1
        budget = 5000
        checked = posted = -1.0e9

    def look():  # post what is held when it is time; the writes to let by before the next look
        nonlocal stride, budget, checked, posted
        now = time.monotonic()
        quick = now - checked < 0.02
        checked = now
        if not quick:
            budget = max(budget, 100)
        budget -= 1
        stride = min(64, stride * 2) if quick and budget < 0 else 1
        if budget >= 0 or now - posted >= 0.05:
            posted = now
            post("".join(held))
            held.clear()
        return stride

    class Streamed(io.StringIO):
        def __init__(self, *args):
            super().__init__(*args)
            begin()

        def write(self, text, _write=io.StringIO.write, _hold=held.append):
            nonlocal left
            written = _write(self, text)
            _hold(text)
            left -= 1
            if left <= 0:
                left = look()
            return written

    return Streamed


_Output = io.StringIO  # what a cell's output is captured in (stream_to)


def _run_cell(source, namespace, name):
    # Kept as IPython keeps a cell (no modification time): an exercise's check finds the answer's cell
    # by its code's file name, and runs that cell apart (chainrule_course.exercises.calling.cell_source).
    linecache.cache[name] = (len(source), None, source.splitlines(True), name)
    stdout, stderr = _Output(), _Output()
    result = {"stdout": "", "stderr": "", "text": None, "html": None, "error": None}
    try:
        tree = ast.parse(source, filename=name, mode="exec")
    except SyntaxError as error:
        line = (error.text or "").strip()
        result["error"] = f"SyntaxError: {error.msg} (line {error.lineno}: {line})"
        return result
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr) and not source.rstrip().endswith(";"):
        last = ast.Expression(tree.body.pop().value)
    lines = source.splitlines()
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            exec(compile(tree, name, "exec"), namespace)
            value = eval(compile(last, name, "eval"), namespace) if last is not None else None
    except (Exception, SystemExit, KeyboardInterrupt) as error:  # noqa: BLE001 -- the reader's to read (or Stop)
        result["error"] = _one_line(error, name, lines)
        value = None
    result["stdout"], result["stderr"] = stdout.getvalue(), stderr.getvalue()
    if value is not None:
        _display(value, result)
    return result


def _display(value, result):
    """Jupyter's rule: the value's ``_repr_html_`` when it has one and it gives text, else ``repr``."""
    show = getattr(value, "_repr_html_", None)
    if callable(show):
        try:
            markup = show()
        except Exception as error:  # noqa: BLE001
            result["error"] = f"{type(error).__name__}: {error} (while showing the result)"
            return
        if isinstance(markup, str):
            result["html"] = markup
            return
    result["text"] = repr(value)


def _one_line(error, name, lines):
    """``Type: message (line N: source)`` for the last frame of the cell in the traceback.

    An exception that says how IPython should show it (``_render_traceback_``, as an
    exercise check's verdict does) is shown that way, as in Jupyter.
    """
    render = getattr(error, "_render_traceback_", None)
    if callable(render):
        try:
            return "\n".join(render())
        except Exception:  # noqa: BLE001 -- then the plain line below
            pass
    where = ""
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        if frame.filename == name and frame.lineno and 0 < frame.lineno <= len(lines):
            where = f" (line {frame.lineno}: {lines[frame.lineno - 1].strip()})"
            break
    message = str(error)
    return f"{type(error).__name__}: {message}{where}" if message else f"{type(error).__name__}{where}"
