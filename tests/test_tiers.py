"""The two tiers of the suite (tests/conftest.py): ``make check`` runs the fast one, ``-m "not full"``.

* A test that uses a fixture of what ``make test`` builds, and is not marked ``full``, is refused.
* In the fast tier, a file marked ``full`` as a whole is not imported at all.
* The fast tier needs nothing built: its files read no ``_build`` and no wheelhouse.
"""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import conftest
import pytest
from conftest import ROOT


class FakeItem:
    """What the guard reads of a collected test: its id, its fixtures and its markers."""

    def __init__(self, nodeid: str, fixtures: list[str], marked: bool):
        self.nodeid, self.fixturenames, self.marked = nodeid, fixtures, marked

    def get_closest_marker(self, name: str):
        return object() if self.marked and name == "full" else None


def test_an_unmarked_test_of_the_build_is_refused():
    items = [
        FakeItem("a", ["book_html"], marked=True),
        FakeItem("b", ["tmp_path"], marked=False),
        FakeItem("c", ["tmp_path", "colab"], marked=False),
        FakeItem("d", ["chapter_page"], marked=False),
    ]
    assert conftest.unmarked_users_of_builds(items) == ["c", "d"]
    with pytest.raises(pytest.UsageError, match=r"not marked `full`.*\['c', 'd'\]"):
        conftest.pytest_collection_modifyitems(SimpleNamespace(), items)


@pytest.mark.parametrize("markexpr, ignored", [("not full", {"whole.py"}), ("", set()), ("full", set())])
def test_the_fast_tier_does_not_import_files_marked_full(tmp_path: Path, markexpr: str, ignored: set[str]):
    (tmp_path / "whole.py").write_text("import pytest\n\npytestmark = pytest.mark.full  # why\n")
    (tmp_path / "part.py").write_text("import pytest\n\n\n@pytest.mark.full\ndef test_x():\n    pass\n")
    config = SimpleNamespace(option=SimpleNamespace(markexpr=markexpr))
    found = {path.name for path in tmp_path.iterdir() if conftest.pytest_ignore_collect(path, config)}
    assert found == ignored


def fast_files() -> list[Path]:
    config = SimpleNamespace(option=SimpleNamespace(markexpr="not full"))
    return [
        path for path in sorted((ROOT / "tests").glob("test_*.py")) if not conftest.pytest_ignore_collect(path, config)
    ]


def test_the_fast_tier_reads_no_build_at_import():
    """No fast file reads _build, the wheelhouse or the book's numbers at its module level."""
    assert len(fast_files()) >= 15, fast_files()
    for path in fast_files():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module_level = [
            node
            for node in tree.body
            if not isinstance(node, (ast.FunctionDef, ast.ClassDef))
            and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
        ]
        text = "\n".join(ast.unparse(node) for node in module_level)
        for built in ("_build", "wheelhouse", "load_book(", "numbers.json"):
            assert built not in text, f"{path.name} reads {built} when it is imported, but make check builds nothing"
