"""No module of the course replaces a third-party package's code.

A replaced function of another project's internals breaks silently when that project
releases; the book is built through public commands (``tools/book/build_book.py``:
``jupyter-book config sphinx``, then ``sphinx-build``). This reads every module of
``src``, ``course``, ``tools`` and ``_ext`` and finds each assignment to an attribute of
a name imported from a package that is neither the course's nor Python's standard library
(``module.function = ...`` or ``setattr(module, ...)``). There is none: otter-grader is used
through its plugin events (``chainrule_course.grading.otter_plugin``), jupyter-book through its
commands.
"""

import ast
import sys
from pathlib import Path

from common import ROOT

OURS = {"chainrule", "chainrule_course", "tools", "_ext"}
FOLDERS = ("src", "course", "tools", "_ext")
KNOWN: set[tuple[str, str]] = set()


def third_party_names(tree: ast.Module) -> set[str]:
    """The names a module binds by importing from a third-party package."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update({alias.asname or alias.name.split(".")[0]: alias.name for alias in node.names})
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.update({alias.asname or alias.name: node.module for alias in node.names})
    return {
        name
        for name, module in names.items()
        if module.split(".")[0] not in OURS and module.split(".")[0] not in sys.stdlib_module_names
    }


def root_name(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def replacements(source: str) -> list[str]:
    """Each ``name.attribute`` of a third-party import that the source assigns to."""
    tree = ast.parse(source)
    imported = third_party_names(tree)
    found = []
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        found += [ast.unparse(t) for t in targets if isinstance(t, ast.Attribute) and root_name(t) in imported]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
            if node.args and root_name(node.args[0]) in imported:
                found.append(ast.unparse(node))
    return found


def test_no_module_replaces_a_third_party_packages_code():
    found = {
        (path.relative_to(ROOT).as_posix(), target)
        for folder in FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        for target in replacements(path.read_text(encoding="utf-8"))
    }
    assert found == KNOWN, f"replaced: {sorted(found - KNOWN)}; no longer replaced: {sorted(KNOWN - found)}"


def test_the_scan_finds_a_replacement_and_leaves_the_standard_library_and_our_own_alone():
    source = """
import jupyter_book.sphinx
import sys
from otter.run import runner as r
from chainrule_course import page
jupyter_book.sphinx.build_sphinx = None
setattr(r, "grade", None)
sys.stdout = None
page.x = 1
"""
    assert replacements(source) == ["jupyter_book.sphinx.build_sphinx", "setattr(r, 'grade', None)"]


def test_the_build_calls_sphinx_build_with_jupyter_books_folders():
    from tools.book.build_book import sphinx_arguments

    book = Path("book")
    assert sphinx_arguments(2, [str(book), "-W", "-n", "--keep-going"]) == [
        "-b", "html", "-d", "book/_build/.doctrees", "-j", "2", "-W", "-n", "--keep-going", "book", "book/_build/html",
    ]  # fmt: skip
    assert sphinx_arguments(1, [str(book), "--builder", "singlehtml", "-W"])[-1] == "book/_build/singlehtml"
