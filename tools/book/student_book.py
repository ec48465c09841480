"""Write the student edition of the book's sources: the same book with every solution removed.

    python -m tools.book.student_book DIR   # after the book build; then: jupyter-book build DIR

DIR receives a copy of the book (``_config.yml``, ``_toc.yml``, ``_ext``, ``_static``, ``img``,
``references.bib``, the unnumbered pages) in which each numbered chapter is its executed
notebook from the book build with every cell tagged ``solution`` removed, so neither the
solution text nor its code reaches
the HTML (and the ``check``, ``hidden-check`` and ``exercise-stub`` cells go with them).

The chapters are not executed again: every kept cell is a cell of the book with the
outputs the book build gave it. Those come from the build's execution cache
(``_build/.jupyter_cache``): myst-nb 1.4.0 writes ``_build/jupyter_execute/<name>.ipynb``
without outputs when it took the chapter from the cache (it writes the notebook it read,
not the one the cache gave it), so that file serves only to find the cache's record, so
the student site needs the book built first
(``make book-student`` does that), and refuses an executed notebook whose cells differ
from its chapter's. Those outputs are the student's only when no kept cell reads a
name that only a removed cell defines; that is checked here, statically.

The rocket button's Colab link of each page points at the chapter's student notebook,
``student/chapters/<name>.ipynb``, of the configured repository: the theme builds it from
the page's own path, ``chapters/<name>.ipynb``, under ``path_to_book: student``.
"""

from __future__ import annotations

import argparse
import builtins
import shutil
import sys
from pathlib import Path

import jupytext
import nbformat
import yaml
from jupyter_cache import get_cache

from tools.book.book_model import ROOT, STUDENT_FOLDER, load_book
from tools.book.myst import ConversionError
from tools.book.notebooks import bound_and_read, check_solution_marks, tags

COPIED = ["_toc.yml", "_static", "img", "references.bib", "chapters"]
EXECUTED = ROOT / "_build" / "jupyter_execute"
CACHE = ROOT / "_build" / ".jupyter_cache"
#: Cells that test or stand in for a solution: without solutions, they go too.
DROPPED = {"solution", "check", "hidden-check", "exercise-stub"}


class StaleBuild(RuntimeError):
    """The book build's executed notebooks are missing or older than the chapters."""


def check_independent(chapter: str, cells: list) -> None:
    """No kept code cell reads a name that only removed cells bind."""
    kept_names, removed_names = set(dir(builtins)), set()
    for number, cell in enumerate(cells, start=1):
        if cell.cell_type != "code":
            continue
        bound, read = bound_and_read(cell.source)
        if DROPPED & set(tags(cell)):
            removed_names |= bound
            continue
        needed = sorted((read & removed_names) - kept_names - bound)
        if needed:
            raise ConversionError(
                f"{chapter}.md, cell {number} reads {needed}, which only a solution or check "
                "defines: the student edition could not run it"
            )
        kept_names |= bound


def executed_chapter(chapter: str, root: Path, executed: Path, cache: Path = CACHE):
    """The book build's executed notebook of ``chapter``, with the outputs from its cache; refuses one
    whose cells are not the chapter's."""
    path = executed / f"{chapter}.ipynb"
    if not path.is_file():
        raise StaleBuild(f"{path} is missing: build the book first (`make book`)")
    notebook = nbformat.read(path, as_version=4)
    source = jupytext.read(root / f"{chapter}.md")
    if [(c.cell_type, c.source) for c in notebook.cells] != [(c.cell_type, c.source) for c in source.cells]:
        raise StaleBuild(f"{path} is older than {chapter}.md: build the book again (`make book`)")
    check_solution_marks(chapter, source)
    try:
        _, notebook = get_cache(str(cache)).merge_match_into_notebook(notebook)
    except KeyError:
        raise StaleBuild(f"{cache} holds no run of {chapter}.md as it is now: build the book again (`make book`)")
    notebook.metadata.pop("source_map", None)  # lines of the .md, which this page no longer has
    return notebook


def write_student_book(out: Path, root: Path = ROOT, executed: Path = EXECUTED) -> None:
    book = load_book(root)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name in COPIED:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, out / name, ignore=shutil.ignore_patterns("*.ipynb", "__pycache__"))
        else:
            shutil.copy2(source, out / name)
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    config["title"] = f"{config['title']} (student edition)"
    # The theme builds the Colab link as <repository>/blob/<branch>/<path_to_book>/<page>.ipynb.
    config["repository"]["path_to_book"] = STUDENT_FOLDER
    config["sphinx"].setdefault("config", {})["notebook_links_root"] = str(root)
    config["sphinx"]["config"]["live_code_root"] = str(root)  # node_modules and src/ are there
    config["sphinx"]["config"]["assignments_root"] = str(root)  # the instructors' table: the book's chapters
    config["execute"]["execute_notebooks"] = "off"  # the cells keep the book build's outputs
    config["sphinx"]["extra_extensions"].remove("_ext.edition_numbers")  # the editions take the book's numbers
    # The chapters are .ipynb pages here; no .md of theirs is copied.
    config["exclude_patterns"] = [p for p in config.get("exclude_patterns", []) if p != "**.ipynb"] + ["_build"]
    (out / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    for chapter in book.chapters:
        notebook = executed_chapter(chapter, root, executed)
        check_independent(chapter, notebook.cells)
        notebook.cells = [cell for cell in notebook.cells if not DROPPED & set(tags(cell))]
        (out / f"{chapter}.md").unlink()
        nbformat.write(notebook, out / f"{chapter}.ipynb")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the folder to write the student book to")
    try:
        write_student_book(parser.parse_args().out.resolve())
    except (ConversionError, StaleBuild) as error:
        sys.exit(f"make book-student: {error}")
