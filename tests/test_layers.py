"""The package's layering: the engine at the bottom, the rooms that serve the course above it.

* ``chainrule/`` holds the engine; each subpackage (``chainrule.figures``, ``explore``,
  ``exercises``, ``book``) is a room whose ``__init__.py`` says what it is ``Built on:``.
* Each package's ``__init__.py`` lists its modules in order; a module imports only modules
  above it in its own package's list, the engine (rooms only) and the rooms its package
  declares. The engine imports no room. Imports are read from the source with ``ast``, so a
  function-level import counts as much as one at the top.
* There are no import cycles, between modules or between rooms (graphlib finds them).
* No module imports torch or jax (they are oracles, for tests and chapters only).
* ``from chainrule import Value`` and drawing, checking and exploring a Value graph, and its
  line charts and decision regions, work with numpy, graphviz and matplotlib blocked: the
  scalar chapters run in the web page's Python.
"""

import ast
import graphlib
import importlib
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import chainrule

SRC = Path(chainrule.__file__).parent
ORACLES = {"torch", "jax", "jaxlib"}
ENGINE = ""  # the engine's package, as a prefix of module names: "value", "figures.draw"
ROOMS = sorted(path.parent.name for path in SRC.glob("*/__init__.py"))


def package_doc(package: str) -> str:
    return importlib.import_module(f"chainrule.{package}" if package else "chainrule").__doc__


def listed_order(package: str) -> list[str]:
    """The modules of ``package`` (ENGINE or a room) as its ``__init__.py`` lists them, top first."""
    return re.findall(r"^\* ``(\w+)``", package_doc(package), re.MULTILINE)


def built_on(room: str) -> set[str]:
    """The rooms that ``room``'s ``__init__.py`` declares on its ``Built on:`` line."""
    line = re.search(r"^Built on: (.*)$", package_doc(room), re.MULTILINE)
    assert line and "the engine" in line[1], f"chainrule.{room}'s docstring has no 'Built on: the engine' line"
    return set(re.findall(r"chainrule\.(\w+)", line[1]))


def module_name(package: str, module: str) -> str:
    return f"{package}.{module}" if package else module


def package_of(name: str) -> str:
    return name.rpartition(".")[0] if "." in name else ENGINE


MODULES = {module_name(package, module) for package in [ENGINE, *ROOMS] for module in listed_order(package)}
RANK = {
    module_name(package, module): rank
    for package in [ENGINE, *ROOMS]
    for rank, module in enumerate(listed_order(package))
}


def source_of(name: str) -> Path:
    return SRC.joinpath(*name.split(".")).with_suffix(".py")


def resolve(package: str, level: int, dotted: str) -> str:
    """The module name (``"value"``, ``"figures.draw"``) of a relative import in ``package``."""
    base = package.split(".") if package else []
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, *dotted.split(".")]) if dotted else ".".join(base)


def imports_of(name: str) -> tuple[set[str], set[str]]:
    """The chainrule modules and the top-level outside packages that module ``name`` imports.

    ``name`` is a listed module (``"value"``, ``"figures.draw"``) or a package's ``__init__``
    (``"__init__"``, ``"figures.__init__"``).
    """
    package = package_of(name)
    ours, theirs = set(), set()
    for node in ast.walk(ast.parse(source_of(name).read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            target = resolve(package, node.level, node.module or "")
            if node.module:
                ours.add(target)
            else:  # from . import a, b: modules of that package
                ours.update(module_name(target, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith("chainrule."):
                ours.add(node.module.removeprefix("chainrule."))
            theirs.add(node.module.split(".")[0])
        elif isinstance(node, ast.Import):
            theirs.update(alias.name.split(".")[0] for alias in node.names)
    return {target if target in MODULES else target.split(".")[0] for target in ours}, theirs - {"chainrule"}


def violations(graph: dict[str, set[str]], rooms: dict[str, set[str]]) -> list[str]:
    """What breaks the layering in ``graph`` (module -> chainrule modules it imports)."""
    found = []
    for module, targets in sorted(graph.items()):
        home = package_of(module)
        for target in sorted(targets):
            where = package_of(target) if target in MODULES else target
            if where == home and target in RANK and RANK[target] >= RANK[module]:
                found.append(f"{module} imports {target}, listed at or below it")
            elif where != home and home == ENGINE:
                found.append(f"the engine's {module} imports {target}, from the room chainrule.{where}")
            elif where not in (home, ENGINE) and where not in rooms[home]:
                found.append(f"{module} imports {target}, but chainrule.{home} is not built on chainrule.{where}")
    cycle = import_cycle(graph) or import_cycle(rooms)
    if cycle:
        found.append(f"an import cycle: {' -> '.join(cycle)}")
    return found


def import_cycle(graph):
    """A cycle of an import graph (a list of its keys), or None."""
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as error:
        return error.args[1]
    return None


def actual_graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    graph = {module: imports_of(module)[0] for module in MODULES}
    return graph, {room: built_on(room) for room in ROOMS}


def test_every_module_is_listed_once_in_its_package():
    for package in [ENGINE, *ROOMS]:
        listed = listed_order(package)
        found = {path.stem for path in (SRC / package).glob("*.py")} - {"__init__"}
        assert len(listed) == len(set(listed)), f"chainrule.{package} lists a module twice"
        assert found == set(listed), (
            f"chainrule.{package or ''}: list {found - set(listed)}; gone: {set(listed) - found}"
        )


def test_the_engine_imports_no_room_and_each_room_only_what_it_is_built_on():
    graph, rooms = actual_graph()
    assert set(ROOMS) >= {"figures", "explore", "exercises", "book"}
    assert violations(graph, rooms) == []


def test_package_files_import_only_their_own_modules():
    for package in [ENGINE, *ROOMS]:
        ours, _ = imports_of(module_name(package, "__init__"))
        assert {package_of(name) for name in ours} <= {package}, f"chainrule.{package}'s __init__ imports {ours}"


def test_no_module_shadows_a_name_that_the_package_exports():
    """A module chainrule/x.py replaces a lazily exported function chainrule.x once something imports it."""
    code = (
        "import importlib, inspect, json, chainrule\n"
        f"for module in {listed_order(ENGINE)!r}: importlib.import_module('chainrule.' + module)\n"
        "print(json.dumps(sorted(name for name in chainrule.__all__ if inspect.ismodule(getattr(chainrule, name)))))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    assert json.loads(run.stdout) == sorted(chainrule._LAZY_MODULES)  # cost, functional, nn: modules by design


def test_no_module_imports_torch_or_jax():
    for module in MODULES:
        assert not imports_of(module)[1] & ORACLES, f"{module} imports {imports_of(module)[1] & ORACLES}"


def test_the_checks_can_fail():
    graph, rooms = actual_graph()
    upward = {**graph, "value": graph["value"] | {"figures.draw"}}
    assert violations(upward, rooms) == ["the engine's value imports figures.draw, from the room chainrule.figures"]
    undeclared = {**graph, "book.glue": graph["book.glue"] | {"exercises.answers"}}
    assert "chainrule.book is not built on chainrule.exercises" in violations(undeclared, rooms)[0]
    cycle = {**graph, "rules": graph["rules"] | {"tensor"}}  # tensor imports rules
    assert any("import cycle" in message for message in violations(cycle, rooms))
    assert any("listed at or below it" in message for message in violations(cycle, rooms))
    room_cycle = {**rooms, "figures": rooms["figures"] | {"explore"}}
    assert any("import cycle" in message for message in violations(graph, room_cycle))


BLOCKED = ("numpy", "graphviz", "matplotlib")
SCALAR_ONLY = """
import sys


class Blocker:  # any import of these fails, as where they are not installed
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            raise ImportError(f"{{name}} is blocked")


sys.meta_path.insert(0, Blocker())
from chainrule import Value, assert_gradients_close, is_grad_enabled, no_grad
from chainrule.figures import draw_graph

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
from chainrule.figures.plots import decision_regions, line_chart

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
