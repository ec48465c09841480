"""The package's one layering: the modules in the order of ``chainrule/__init__.py``'s list.

* Every module is in that list, and each imports only modules above it, read from the
  source with ``ast``, so a function-level import counts as much as one at the top.
  The list is the one statement of the order; this test reads it from the docstring.
* There are no import cycles (graphlib finds them).
* No module imports torch or jax (they are oracles, for tests and chapters only).
* ``from chainrule import Value`` and drawing, checking and exploring a Value graph, and its
  line charts and decision regions, work with numpy, graphviz and matplotlib blocked: the
  scalar chapters run in the web page's Python.
"""

import ast
import graphlib
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import chainrule

SRC = Path(chainrule.__file__).parent
ORACLES = {"torch", "jax", "jaxlib"}


def listed_order() -> list[str]:
    """The modules as ``chainrule/__init__.py``'s docstring lists them, top first."""
    return re.findall(r"^\* ``(\w+)``", chainrule.__doc__, re.MULTILINE)


RANK = {module: rank for rank, module in enumerate(listed_order())}


def imports_of(module):
    """The chainrule modules and the top-level packages that ``module`` imports, anywhere in it."""
    tree = ast.parse((SRC / f"{module}.py").read_text())
    ours, theirs = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                ours.add(node.module.split(".")[0])
            else:
                ours.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            theirs.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            theirs.update(alias.name.split(".")[0] for alias in node.names)
    return ours, theirs


def test_every_module_is_listed_once():
    modules = {path.stem for path in SRC.glob("*.py")} - {"__init__"}
    assert len(listed_order()) == len(RANK), "a module is listed twice"
    assert modules == set(RANK), f"list these in __init__.py: {modules - set(RANK)}; gone: {set(RANK) - modules}"


def test_modules_import_only_modules_above_them_and_never_torch_or_jax():
    for module, rank in RANK.items():
        ours, theirs = imports_of(module)
        below = sorted(name for name in ours if RANK[name] >= rank)
        assert not below, f"{module} imports {below}, listed at or below it in __init__.py"
        assert not theirs & ORACLES, f"{module} imports {theirs & ORACLES}"


def import_cycle(graph):
    """A cycle of the import graph (a list of modules), or None."""
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as error:
        return error.args[1]
    return None


def test_there_are_no_import_cycles():
    assert import_cycle({module: imports_of(module)[0] for module in RANK}) is None


def test_the_checks_can_fail():
    graph = {module: imports_of(module)[0] for module in RANK}
    graph["rules"] = graph["rules"] | {"tensor"}  # tensor imports rules
    assert set(import_cycle(graph)) >= {"rules", "tensor"}
    assert RANK["tensor"] > RANK["rules"]  # the same import also goes down the list


BLOCKED = ("numpy", "graphviz", "matplotlib")
SCALAR_ONLY = """
import sys


class Blocker:  # any import of these fails, as where they are not installed
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ImportError(f"{{name}} is blocked")


sys.meta_path.insert(0, Blocker())
from chainrule import Value, assert_gradients_close, draw_graph, is_grad_enabled, no_grad

with no_grad():
    assert not is_grad_enabled()
assert is_grad_enabled()

a, b = Value(2.0, label="a"), Value(-3.0, label="b")
c = a * b + a.tanh()
c.label = "c"
c.backward()
assert abs(a.grad - (b.data + 1 - a.tanh().data ** 2)) < 1e-12 and b.grad == 2.0
figure = draw_graph(c)
assert figure.source.startswith("digraph chainrule {{") and "<svg" in figure.svg()
assert_gradients_close(lambda x, y: x * y + x.tanh(), [Value(2.0), Value(-3.0)])
from chainrule import explore

widget = explore.toposort(c)
assert widget.steps[-1]["order"][-1] == "c" and 'data-explorable="toposort"' in widget.html()
from chainrule.plots import decision_regions, line_chart

assert "<polyline" in line_chart({{"loss": [1.0, 0.5]}}, xlabel="step", ylabel="loss", alt="A line.").svg()
halves = decision_regions(lambda grid: [int(x > 0) for x, _ in grid], [(-1.0, 0.0), (1.0, 0.0)], [0, 1],
                          names=["left", "right"], xlabel="x", ylabel="y", alt="Two halves.")
assert 'stroke="#000" stroke-width="1.4"' in halves.svg()
try:
    from chainrule import Tensor
except ImportError as error:
    assert "numpy is blocked" in str(error)
else:
    raise AssertionError("Tensor imported with numpy blocked: the blocker does not work")
print(sorted(name for name in sys.modules if name.split(".")[0] in {blocked!r}))
"""


def test_values_are_computed_drawn_and_checked_without_numpy_graphviz_or_matplotlib():
    code = textwrap.dedent(SCALAR_ONLY.format(blocked=set(BLOCKED)))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip() == "[]"
