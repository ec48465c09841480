"""The layering: the engine at the bottom, the course's rooms above it, no arrow pointing down-up.

* ``chainrule/`` holds the engine, and its one room, ``chainrule.figures``; the course built
  on it is another package, ``chainrule_course/``, of rooms (``explore``, ``exercises``,
  ``grading``, ...). Each room's ``__init__.py`` says what it is ``Built on:``.
* Each package's ``__init__.py`` lists its modules in order; a module imports only modules
  above it in its own package's list, the engine and the rooms its package declares. The
  engine imports no room, and nothing of ``chainrule`` imports the course. Imports are read
  from the source with ``ast``, so a function-level import counts as much as one at the top.
* There are no import cycles, between modules or between rooms (graphlib finds them).
* No module imports torch or jax (they are oracles, for tests and chapters only).
* Above the packages, the tools: ``tools.book``, then ``_ext``, ``tools.grader`` and ``tools.progress``; nothing
  below imports what is above it.
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

from common import ROOT

import chainrule
import chainrule_course

#: The two top-level packages and their folders: the engine, and the course built on it.
TOPS = {"chainrule": Path(chainrule.__file__).parent, "chainrule_course": Path(chainrule_course.__file__).parent}
ORACLES = {"torch", "jax", "jaxlib"}
ENGINE = "chainrule"
COURSE = "chainrule_course"
ROOMS = sorted(f"{top}.{path.parent.name}" for top, folder in TOPS.items() for path in folder.glob("*/__init__.py"))


def top_of(name: str) -> str:
    return name.split(".")[0]


def folder_of(package: str) -> Path:
    top, _, rest = package.partition(".")
    return TOPS[top].joinpath(*rest.split(".")) if rest else TOPS[top]


def package_doc(package: str) -> str:
    return importlib.import_module(package).__doc__


def listed_order(package: str) -> list[str]:
    """The modules of ``package`` (ENGINE or a room) as its ``__init__.py`` lists them, top first."""
    return re.findall(r"^\* ``(\w+)``", package_doc(package), re.MULTILINE)


def built_on(room: str) -> set[str]:
    """The rooms that ``room``'s ``__init__.py`` declares on its ``Built on:`` line."""
    line = re.search(r"^Built on: (.*)$", package_doc(room), re.MULTILINE)
    assert line and "the engine" in line[1], f"{room}'s docstring has no 'Built on: the engine' line"
    return set(re.findall(r"\b(chainrule(?:_course)?\.\w+)", line[1]))


def package_of(name: str) -> str:
    return name.rpartition(".")[0]


MODULES = {f"{package}.{module}" for package in [ENGINE, *ROOMS] for module in listed_order(package)}
RANK = {
    f"{package}.{module}": rank for package in [ENGINE, *ROOMS] for rank, module in enumerate(listed_order(package))
}


def source_of(name: str) -> Path:
    return folder_of(package_of(name)) / f"{name.rpartition('.')[2]}.py"


def resolve(package: str, level: int, dotted: str) -> str:
    """The full name (``"chainrule.value"``) of a relative import in ``package``."""
    base = package.split(".")
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, *dotted.split(".")]) if dotted else ".".join(base)


def imports_of(name: str) -> tuple[set[str], set[str]]:
    """The modules (or packages) of ours and the top-level outside packages that module ``name`` imports.

    ``name`` is a listed module (``"chainrule.value"``) or a package's ``__init__``
    (``"chainrule.__init__"``, ``"chainrule_course.explore.__init__"``).
    """
    package = package_of(name)
    ours, theirs = set(), set()
    for node in ast.walk(ast.parse(source_of(name).read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            target = resolve(package, node.level, node.module or "")
            if node.module:
                ours.add(target)
            else:  # from . import a, b: modules of that package
                ours.update(f"{target}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            (ours if top_of(node.module) in TOPS else theirs).add(node.module)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                (ours if top_of(alias.name) in TOPS else theirs).add(alias.name)
    return {target if target in MODULES else package_or_self(target) for target in ours}, {
        top_of(name) for name in theirs
    }


def package_or_self(target: str) -> str:
    """An import of a package (``chainrule``, ``chainrule.figures``) stays itself; one of a module
    that no list names is counted as its package's."""
    return target if target in (ENGINE, COURSE, *ROOMS) else package_of(target)


def where(target: str) -> str:
    return package_of(target) if target in MODULES else target


def violations(graph: dict[str, set[str]], rooms: dict[str, set[str]]) -> list[str]:
    """What breaks the layering in ``graph`` (module -> our modules it imports)."""
    found = []
    for module, targets in sorted(graph.items()):
        home = package_of(module)
        for target in sorted(targets):
            there = where(target)
            if top_of(home) == ENGINE and top_of(there) == COURSE:
                found.append(f"{module}, of the engine's package, imports {target}, from the course")
            elif there == home and target in RANK and RANK[target] >= RANK[module]:
                found.append(f"{module} imports {target}, listed at or below it")
            elif there != home and home == ENGINE:
                found.append(f"the engine's {module} imports {target}, from the room {there}")
            elif there not in (home, ENGINE) and there not in rooms[home]:
                found.append(f"{module} imports {target}, but {home} is not built on {there}")
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


def listing_message(package: str, new: set[str], gone: set[str]) -> str:
    """What to edit when a package's modules and its list differ: the file, and the line's form."""
    init = (folder_of(package) / "__init__.py").relative_to(ROOT).as_posix()
    said = [f"{init} lists {package}'s modules in order, each importing only those above it."]
    said += [f"Add the line `* ``{name}`` -- what it holds` where {name} belongs." for name in sorted(new)]
    said += [f"Remove the line of {name}, which has no module." for name in sorted(gone)]
    return " ".join(said)


def test_every_module_is_listed_once_in_its_package():
    for package in [ENGINE, COURSE, *ROOMS]:
        listed = listed_order(package)
        found = {path.stem for path in folder_of(package).glob("*.py")} - {"__init__"}
        assert len(listed) == len(set(listed)), f"{package} lists a module twice"
        assert found == set(listed), listing_message(package, found - set(listed), set(listed) - found)


def test_a_missing_listing_says_which_file_and_line():
    said = listing_message("chainrule_course.drills", {"extra"}, set())
    assert said.startswith("course/chainrule_course/drills/__init__.py lists chainrule_course.drills's modules")
    assert "Add the line `* ``extra`` -- what it holds`" in said


def test_the_engine_imports_no_room_and_each_room_only_what_it_is_built_on():
    graph, rooms = actual_graph()
    assert set(ROOMS) == {
        "chainrule.figures",
        *(
            f"chainrule_course.{room}"
            for room in ("compat", "grading", "charts", "exercises", "explore", "drills", "pages")
        ),
    }
    assert violations(graph, rooms) == []


def test_package_files_import_only_their_own_modules():
    for package in [ENGINE, COURSE, *ROOMS]:
        ours, _ = imports_of(f"{package}.__init__")
        assert {package_of(name) for name in ours} <= {package}, f"{package}'s __init__ imports {ours}"


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
    upward = {**graph, "chainrule.value": graph["chainrule.value"] | {"chainrule.figures.draw"}}
    assert violations(upward, rooms) == [
        "the engine's chainrule.value imports chainrule.figures.draw, from the room chainrule.figures"
    ]
    # Even declared, the engine's room may not build on the course.
    patches = "chainrule_course.compat.patches"
    to_course = {**graph, "chainrule.figures.draw": graph["chainrule.figures.draw"] | {patches}}
    assert violations(to_course, {**rooms, "chainrule.figures": {"chainrule_course.compat"}}) == [
        f"chainrule.figures.draw, of the engine's package, imports {patches}, from the course"
    ]
    undeclared = {
        **graph,
        "chainrule_course.pages.glue": graph["chainrule_course.pages.glue"] | {"chainrule_course.exercises.answers"},
    }
    assert "chainrule_course.pages is not built on chainrule_course.exercises" in violations(undeclared, rooms)[0]
    cycle = {**graph, "chainrule.rules": graph["chainrule.rules"] | {"chainrule.tensor"}}  # tensor imports rules
    assert any("import cycle" in message for message in violations(cycle, rooms))
    assert any("listed at or below it" in message for message in violations(cycle, rooms))
    room_cycle = {**rooms, "chainrule.figures": rooms["chainrule.figures"] | {"chainrule_course.explore"}}
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
from chainrule_course import explore

widget = explore.toposort(c)
assert widget.steps[-1]["order"][-1] == "c" and 'data-explorable="toposort"' in widget.html()
from chainrule_course.charts.plots import decision_regions, line_chart

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


#: The repository's floors, as (folder, dotted name): each imports only what is on a floor below it.
FLOORS = [
    ("src/chainrule", "chainrule", 0),
    ("course/chainrule_course", "chainrule_course", 1),
    ("tools/book", "tools.book", 2),
    ("_ext", "_ext", 3),
    ("tools/grader", "tools.grader", 3),
    ("tools/progress", "tools.progress", 3),
]


def upward_imports(folder: str, own: str, floor: int) -> list[str]:
    """The absolute imports in ``folder`` of a floor at or above ``floor`` that is not ``own``."""
    found = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            for name in names:
                for _, other, there in FLOORS:
                    if other != own and there >= floor and (name == other or name.startswith(other + ".")):
                        found.append(f"{folder}/{path.relative_to(ROOT / folder)} imports {name}")
    return found


def test_the_tools_stand_on_the_packages_and_nothing_stands_on_the_tools():
    """The engine, the course, the book's tools, and on top the extensions and the grader's tools."""
    assert [found for folder, own, floor in FLOORS for found in upward_imports(folder, own, floor)] == []
    # The check can fail: the grader's tools, were they on the book's floor, would import above it.
    assert upward_imports("tools/grader", "tools.grader", 2)
