"""No chapter asserts a wall-clock timing: a reader's machine, and Colab's shared CPUs, are busier than
ours, and Run All must stop only at the first exercise. Timings are shown and glued as measured; what a
cell asserts is deterministic (counts, flops, bytes, exponents fitted on counts).

A value is a timing when it comes from a clock (``time.perf_counter()`` and the other clocks of
``time``, ``timeit``), from a function that returns one (``best_seconds``), or from an expression
over timings, until the name is given another value; an ``assert`` that reads one fails the test.
Unpacking a timing's tuple makes every target a timing: a cell keeps its counts apart from its
timings.
"""

from __future__ import annotations

import ast

import jupytext
import pytest
from common import ROOT, pages_with_code

from chainrule_course.grading.cells import as_python

CLOCKS = {"perf_counter", "perf_counter_ns", "time", "time_ns", "monotonic", "monotonic_ns", "process_time"}
CLOCKS |= {"timeit", "repeat", "default_timer", "thread_time"}


class Flow:
    """A chapter's code followed in order: which names hold a timing now, which functions return one
    (``parts``: which items of the tuple they return, where only some are), and the asserts that read one."""

    def __init__(self):
        self.timed: set[str] = set()
        self.parts: dict[str, tuple[bool, ...]] = {}
        self.found: list[str] = []

    def reads_clock(self, node: ast.AST) -> bool:
        """Whether ``node`` calls a clock or a function that returns a timing, or reads a timing
        (``cost(...)[0]`` reads the first item of what ``cost`` returns)."""
        if isinstance(node, ast.Name):
            return node.id in self.timed or node.id in self.parts
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp, ast.Lambda)):
            return self._scoped(node)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Call):
            name = getattr(node.value.func, "id", "")
            index = node.slice.value if isinstance(node.slice, ast.Constant) else None
            if (
                name in self.parts
                and isinstance(index, int)
                and -len(self.parts[name]) <= index < len(self.parts[name])
            ):
                arguments = [*node.value.args, *(k.value for k in node.value.keywords)]
                return self.parts[name][index] or any(self.reads_clock(a) for a in arguments)
        if isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)):
            function = node.func
            name = function.attr if isinstance(function, ast.Attribute) else function.id
            owner = getattr(function.value, "id", "") if isinstance(function, ast.Attribute) else ""
            if name in CLOCKS and owner in ("time", "timeit", ""):
                return True
        return any(self.reads_clock(child) for child in ast.iter_child_nodes(node))

    def _scoped(self, node) -> bool:
        """A comprehension or lambda: the names it binds are its own, whatever they hold outside."""
        if isinstance(node, ast.Lambda):
            own, reads = {a.arg for a in node.args.args}, [node.body]
        else:
            own = _bound([g.target for g in node.generators])
            parts = [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
            reads = [*parts, *(c for g in node.generators for c in g.ifs)]
            if any(self.reads_clock(g.iter) for g in node.generators):
                return True
        outer, self.timed = self.timed, self.timed - own
        try:
            return any(self.reads_clock(part) for part in reads)
        finally:
            self.timed = outer

    def visit(self, statements: list, returns: list | None = None) -> None:
        for node in statements:
            if isinstance(node, ast.Assert) and self.reads_clock(node.test):
                self.found.append(ast.unparse(node)[:100])
            if isinstance(node, ast.Return) and returns is not None and node.value is not None:
                items = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
                returns.append(tuple(self.reads_clock(item) for item in items))
            if isinstance(node, ast.FunctionDef):
                self.function(node)
                continue
            self.assigned(node)
            for field in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, field, None)
                if isinstance(inner, list):
                    self.visit(inner, returns)

    def function(self, node: ast.FunctionDef) -> None:
        """A function returns a timing where one of its returns does; of a tuple, the items that do."""
        returned: list = []
        outer = set(self.timed)
        self.timed.discard(node.name)
        self.parts.pop(node.name, None)
        self.visit(node.body, returned)
        self.timed = outer - {node.name}
        shapes = {len(items) for items in returned}
        items = tuple(any(column) for column in zip(*returned, strict=True)) if len(shapes) == 1 else ()
        if items and any(items) and not all(items) and len(items) > 1:
            self.parts[node.name] = items  # count, seconds = cost(...): only seconds is a timing
        elif any(any(items) for items in returned):
            self.timed.add(node.name)

    def assigned(self, node: ast.AST) -> None:
        """Names given a value by ``node``: a timing if the value reads one, else no longer one."""
        value, targets = None, []
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            value, targets = node.value, getattr(node, "targets", None) or [node.target]
        elif isinstance(node, ast.AugAssign) and self.reads_clock(node.value):
            value, targets = node.value, [node.target]
        elif isinstance(node, ast.For):
            value, targets = node.iter, [node.target]
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and self.reads_clock(node.value):
            function = node.value.func  # times.append(elapsed): the list holds a timing
            value, targets = (node.value, [function.value]) if isinstance(function, ast.Attribute) else (None, [])
        if value is None:
            return
        call = value.func.id if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) else ""
        if (
            len(targets) == 1
            and isinstance(targets[0], ast.Tuple)
            and len(targets[0].elts) == len(self.parts.get(call, ()))
        ):
            for target, timing in zip(targets[0].elts, self.parts[call], strict=True):
                self.given(_bound([target]), timing or self.reads_clock(ast.Tuple(value.args)))
            return
        self.given(_bound(targets), self.reads_clock(value))

    def given(self, names: set[str], timing: bool) -> None:
        self.timed = self.timed | names if timing else self.timed - names


def timing_asserts(cells: list[str]) -> list[str]:
    """The asserts of ``cells`` (a chapter's code, run in order) that read a timing."""
    flow = Flow()
    for source in cells:
        try:
            flow.visit(ast.parse(as_python(source)).body)
        except SyntaxError:
            continue
    return flow.found


def _bound(targets) -> set[str]:
    """The names an assignment gives a value to: ``times[i] = ...`` gives one to ``times``, not ``i``."""
    names = set()
    for target in targets:
        if isinstance(target, (ast.Tuple, ast.List)):
            names |= _bound(target.elts)
        elif isinstance(target, ast.Starred):
            names |= _bound([target.value])
        elif isinstance(target, (ast.Subscript, ast.Attribute)):
            names |= _bound([target.value])
        elif isinstance(target, ast.Name):
            names.add(target.id)
    return names


@pytest.mark.parametrize("page", pages_with_code())
def test_no_chapter_asserts_a_timing(page: str):
    notebook = jupytext.read(ROOT / f"{page}.md")
    found = timing_asserts([cell.source for cell in notebook.cells if cell.cell_type == "code"])
    assert not found, f"{page}.md asserts timings (show and glue them instead):\n" + "\n".join(found)


def test_the_check_can_fail():
    cells = [
        "import time\ndef best(run):\n    start = time.perf_counter()\n    run()\n"
        "    return time.perf_counter() - start\n",
        "a = best(print)\nn = 3\nratio = a / 2\nassert n == 3\n",
        "assert ratio < 2\nassert 4 > 3\nratio = 1.0\nassert ratio < 2\n",
        "import time\ntimes, counts = [], [0]\nfor i in range(3):\n    start = time.perf_counter()\n"
        "    times.append(time.perf_counter() - start)\n    counts[i] = i\nassert min(times) > 0\nassert i == 2\n",
        "def cost(run):\n    start = time.perf_counter()\n    return 7, time.perf_counter() - start\n"
        "count, seconds = cost(print)\nassert count == 7\nassert seconds > 0\n",
    ]
    assert timing_asserts(cells) == ["assert ratio < 2", "assert min(times) > 0", "assert seconds > 0"]
