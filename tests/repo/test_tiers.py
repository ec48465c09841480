"""The tiers are folders (tests/conftest.py): the fast ones, engine/, course/ and repo/, need nothing built;
make test runs them and the full ones, built/ and browser/; make test-colab runs colab/, and CI runs both.

* Only the full folders' conftest.py import the fixtures of the builds (tests/builds.py).
* No fast file reads _build, the wheelhouse or the book's numbers when it is imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

from common import ROOT

FAST = ("engine", "course", "repo")
FULL = ("built", "browser")
#: Outside make test's CPU budget, run by .ci/run after it (make test-colab): every chapter runs there again.
COLAB = ("colab",)
BUILT = ("_build", "wheelhouse", "load_book(", "numbers.json", "builds")


def read_at_import(source: str) -> list[str]:
    """What of :data:`BUILT` a module's top level (not its functions and classes) names."""
    module_level = [
        node
        for node in ast.parse(source).body
        if not isinstance(node, (ast.FunctionDef, ast.ClassDef))
        and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
    ]
    text = "\n".join(ast.unparse(node) for node in module_level)
    return [built for built in BUILT if built in text]


def test_only_the_full_folders_import_the_builds_fixtures():
    importers = {
        path.parent.name for path in (ROOT / "tests").rglob("conftest.py") if "from builds import" in path.read_text()
    }
    assert importers == set(FULL + COLAB)


def test_the_fast_tier_reads_no_build_at_import():
    files = [path for folder in FAST for path in sorted((ROOT / "tests" / folder).glob("*.py"))]
    files.remove(Path(__file__).resolve())  # this file names them, as data
    assert len(files) >= 25, files
    found = {path.relative_to(ROOT).as_posix(): read_at_import(path.read_text()) for path in files}
    assert {name: built for name, built in found.items() if built} == {}


def test_the_check_can_fail():
    assert read_at_import('"""doc."""\nPAGES = (ROOT / "_build" / "html").glob("*")\n') == ["_build"]
    assert read_at_import("def f():\n    return load_book(ROOT)\n") == []


def pytest_folders(makefile: str, target: str) -> list[str]:
    """The test folders a Makefile target's pytest command names."""
    recipe = makefile.split(f"\n{target}:", 1)[1].split("\n\n", 1)[0].split("\n", 2)[1]
    return [word.removeprefix("tests/") for word in recipe.split() if word.startswith("tests/")]


def test_make_test_runs_every_folder_once_and_make_check_the_fast_ones():
    folders = sorted(path.name for path in (ROOT / "tests").iterdir() if path.is_dir() and path.name != "__pycache__")
    assert sorted(FAST + FULL + COLAB) == folders
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert pytest_folders(makefile, "test-fast") == list(FAST) == pytest_folders(makefile, "check")
    assert sorted(pytest_folders(makefile, "test-full")) == sorted(FULL)
    assert pytest_folders(makefile, "test-colab") == list(COLAB)
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").split()
    assert ci[-4:] == ["make", "test", "make", "test-colab"], "CI runs make test, then make test-colab"
