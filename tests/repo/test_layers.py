"""The layering: the engine at the bottom, the course's rooms above it, the tools on top, no arrow pointing down-up.

import-linter checks it (``.importlinter`` at the repository's root, pinned in requirements.txt):

* The floors: ``chainrule`` (the engine), ``chainrule_course`` (the course built on it), ``tools.book``,
  then ``_ext``, ``tools.grader`` and ``tools.progress``, which import none of each other; nothing
  imports a floor above its own, and the engine and the course import no tool.
* No module of the engine or the course imports torch or jax (they are oracles, for tests and
  chapters only).
* There are no import cycles, between the modules or the subpackages of any package.

What each package's ``__init__.py`` says is its one list, and this file makes contracts of it (the
same lists are not written again in ``.importlinter``):

* ``chainrule/`` holds the engine, and its one room, ``chainrule.figures``; the course is another
  package, ``chainrule_course/``, of rooms (``explore``, ``exercises``, ``grading``, ...). Each room's
  ``__init__.py`` says what it is ``Built on:``, and a room imports only the rooms it names there.
* Each package's ``__init__.py`` lists its modules in order; a module imports only modules above it in
  its own package's list (a layers contract per package, the engine's room above all the engine's
  modules), and the package's ``__init__`` imports only its own modules.

Every import counts, a function's as much as one at the top. Beside the contracts, what
import-linter cannot say: every module is listed once; the rooms' ``Built on:`` lines make no cycle;
no module of the engine shadows a name the package exports; and ``from chainrule import Value``,
drawing, checking and exploring a Value graph, and its line charts and decision regions, work with
numpy, graphviz and matplotlib blocked: the scalar chapters run in the web page's Python.
"""

import graphlib
import importlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from common import ROOT

import chainrule
import chainrule_course

LINT_IMPORTS = Path(sys.prefix) / "bin" / "lint-imports"
CONFIG = ROOT / ".importlinter"
#: The two top-level packages and their folders: the engine, and the course built on it.
TOPS = {"chainrule": Path(chainrule.__file__).parent, "chainrule_course": Path(chainrule_course.__file__).parent}
ENGINE = "chainrule"
COURSE = "chainrule_course"
ROOMS = sorted(f"{top}.{path.parent.name}" for top, folder in TOPS.items() for path in folder.glob("*/__init__.py"))
#: Where import-linter's root packages are in the repository (the copy in test_the_contracts_can_fail).
SOURCES = {
    "chainrule": "src/chainrule",
    "chainrule_course": "course/chainrule_course",
    "tools": "tools",
    "_ext": "_ext",
}


def folder_of(package: str) -> Path:
    top, _, rest = package.partition(".")
    return TOPS[top].joinpath(*rest.split(".")) if rest else TOPS[top]


def package_doc(package: str) -> str:
    return importlib.import_module(package).__doc__ or ""


def listed_order(package: str) -> list[str]:
    """The modules of ``package`` (ENGINE or a room) as its ``__init__.py`` lists them, top first."""
    return re.findall(r"^\* ``(\w+)``", package_doc(package), re.MULTILINE)


def built_on(room: str) -> set[str]:
    """The rooms that ``room``'s ``__init__.py`` declares on its ``Built on:`` line."""
    line = re.search(r"^Built on: (.*)$", package_doc(room), re.MULTILINE)
    assert line and "the engine" in line[1], f"{room}'s docstring has no 'Built on: the engine' line"
    return set(re.findall(r"\b(chainrule(?:_course)?\.\w+)", line[1]))


def rooms_in(package: str) -> list[str]:
    """The rooms directly inside ``package`` (the engine's: ``chainrule.figures``)."""
    return [room for room in ROOMS if room.rpartition(".")[0] == package]


def contract(identifier: str, name: str, **options: str | list[str]) -> str:
    """One contract in import-linter's INI form; a list option is one value a line."""
    lines = [f"[importlinter:contract:{identifier}]", f"name = {name}"]
    for key, value in options.items():
        lines.append(f"{key} = {value}" if isinstance(value, str) else "\n    ".join([f"{key} =", *value]))
    return "\n".join(lines) + "\n"


def contracts_from_the_docstrings() -> str:
    """The contracts that the packages' ``__init__.py`` lists make, in import-linter's INI form."""
    packages = [ENGINE, *ROOMS]
    modules = {f"{package}.{module}" for package in packages for module in listed_order(package)}
    said = []
    for package in packages:
        # Higher first: the package's rooms (the engine's figures), then its modules, last listed first.
        layers = [" | ".join(room.rpartition(".")[2] for room in rooms_in(package))] if rooms_in(package) else []
        said.append(
            contract(
                f"order-{package}",
                f"{package}: each module imports only the modules above it in its __init__.py's list",
                type="layers",
                containers=package,
                layers=layers + listed_order(package)[::-1],
            )
        )
    for room in ROOMS:
        undeclared = sorted(set(ROOMS) - built_on(room) - {room})
        said.append(
            contract(
                f"built-on-{room}",
                f"{room} imports only the rooms its __init__.py says it is built on",
                type="forbidden",
                source_modules=room,
                forbidden_modules=undeclared,
                allow_indirect_imports="true",  # a room's room may be built on others
            )
        )
    for package in [ENGINE, COURSE, *ROOMS]:
        own = {module for module in modules if module.rpartition(".")[0] == package}
        others = sorted({*packages, COURSE, *modules} - {package} - own)
        said.append(
            contract(
                f"init-{package}",
                f"{package}'s __init__ imports only its own modules",
                type="forbidden",
                source_modules=package,
                forbidden_modules=others,
                as_packages="false",  # the __init__ alone, and each of ours as one module
                allow_indirect_imports="true",
            )
        )
    return "\n".join(said)


def lint_imports(config: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """import-linter's verdict on the code under ``cwd``: the contracts of ``.importlinter`` and of the docstrings."""
    if not LINT_IMPORTS.is_file():
        pytest.fail(f"{LINT_IMPORTS} is missing: run `make setup` (requirements.txt pins import-linter)", pytrace=False)
    config.write_text(CONFIG.read_text(encoding="utf-8") + "\n" + contracts_from_the_docstrings(), encoding="utf-8")
    command = [str(LINT_IMPORTS), "--no-cache", "--no-logo", str(config)]
    wide = {**os.environ, "COLUMNS": "1000"}  # a contract's name on one line of the report
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=wide, timeout=120)


def broken(run: subprocess.CompletedProcess) -> set[str]:
    """The names of the contracts that a run of lint-imports reports broken."""
    return set(re.findall(r"^(.+) BROKEN$", run.stdout, re.MULTILINE))


def test_the_imports_keep_the_contracts(tmp_path: Path):
    assert set(ROOMS) == {
        "chainrule.figures",
        *(f"chainrule_course.{room}" for room in ("grading", "charts", "exercises", "explore", "drills", "pages")),
    }
    run = lint_imports(tmp_path / "layering.ini")
    assert run.returncode == 0, f"lint-imports found imports that break the layering:\n{run.stdout[-6000:]}{run.stderr}"
    assert not re.search(r"\b0 kept", run.stdout), run.stdout


def test_the_contracts_can_fail(tmp_path: Path):
    """A copy of the code, with an import planted against each kind of contract, breaks each."""
    for package, folder in SOURCES.items():
        shutil.copytree(ROOT / folder, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__", ".*"))
    plants = {
        "chainrule/value.py": "import chainrule_course",  # the engine on the course
        "tools/book/myst.py": "import tools.grader",  # a floor on one above it
        "chainrule_course/pages/glue.py": "import torch",  # an oracle
        "chainrule/rules.py": "from . import tensor",  # tensor imports rules: listed below it, and a cycle
        "chainrule_course/charts/svgchart.py": "from ..exercises import answers",  # a room it is not built on
        "chainrule_course/drills/__init__.py": "from ..explore import widget",  # a package file, not its own
    }
    for path, line in plants.items():
        with (tmp_path / path).open("a", encoding="utf-8") as file:
            file.write(f"\n{line}\n")
    run = lint_imports(tmp_path / "layering.ini", cwd=tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert broken(run) == {
        "The floors: the engine, the course, the book's tools, then the extensions, the grader's and progress's tools",
        "No module of the engine or the course imports torch or jax (oracles, for tests and chapters only)",
        "No import cycles between the modules or the subpackages of any package",
        "chainrule: each module imports only the modules above it in its __init__.py's list",
        "chainrule_course.charts imports only the rooms its __init__.py says it is built on",
        "chainrule_course.drills's __init__ imports only its own modules",
    }, run.stdout


def test_every_module_is_listed_once_in_its_package():
    for package in [ENGINE, COURSE, *ROOMS]:
        listed = listed_order(package)
        found = {path.stem for path in folder_of(package).glob("*.py")} - {"__init__"}
        assert len(listed) == len(set(listed)), f"{package} lists a module twice"
        assert found == set(listed), listing_message(package, found - set(listed), set(listed) - found)


def listing_message(package: str, new: set[str], gone: set[str]) -> str:
    """What to edit when a package's modules and its list differ: the file, and the line's form."""
    init = (folder_of(package) / "__init__.py").relative_to(ROOT).as_posix()
    said = [f"{init} lists {package}'s modules in order, each importing only those above it."]
    said += [f"Add the line `* ``{name}`` -- what it holds` where {name} belongs." for name in sorted(new)]
    said += [f"Remove the line of {name}, which has no module." for name in sorted(gone)]
    return " ".join(said)


def test_a_missing_listing_says_which_file_and_line():
    said = listing_message("chainrule_course.drills", {"extra"}, set())
    assert said.startswith("course/chainrule_course/drills/__init__.py lists chainrule_course.drills's modules")
    assert "Add the line `* ``extra`` -- what it holds`" in said


def built_on_cycle(rooms: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the rooms' ``Built on:`` lines (the rooms, in order), or None."""
    try:
        tuple(graphlib.TopologicalSorter(rooms).static_order())
    except graphlib.CycleError as error:
        return error.args[1]
    return None


def test_the_rooms_are_built_on_no_cycle():
    """The contracts hold the imports to the Built on lines; the lines themselves must not go round."""
    rooms = {room: built_on(room) for room in ROOMS}
    assert built_on_cycle(rooms) is None, f"the rooms' Built on lines make a cycle: {built_on_cycle(rooms)}"
    round_trip = {**rooms, "chainrule.figures": rooms["chainrule.figures"] | {"chainrule_course.explore"}}
    assert built_on_cycle(round_trip)  # the check can fail: explore is built on figures


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
