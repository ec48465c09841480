"""Write the student edition of the book's sources: the same book with every solution removed.

    python tools/student_book.py DIR     # then: jupyter-book build DIR (make book-student does both)

DIR receives a copy of the book (``_config.yml``, ``_toc.yml``, ``_ext``, ``img``,
``references.bib``, ``chapters``) in which every cell tagged ``solution`` is removed from
the numbered chapters, so neither the solution text nor its code reaches the HTML (and the
``check`` and ``hidden-check`` cells that test the solutions go with them). The
chapters still execute: no cell outside a solution depends on one (tools/notebooks.py
checks the tags). The rocket button's Colab link of each page points at the chapter's
student notebook, ``student/chapters/<name>.ipynb``, of the configured repository.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import jupytext
import yaml

from notebooks import ROOT, STUDENT_FOLDER, canonical_markdown, check_solution_marks, load_book, tags

COPIED = ["_toc.yml", "_ext", "img", "references.bib", "chapters"]


def write_student_book(out: Path, root: Path = ROOT) -> None:
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
    config["exclude_patterns"] = [*config.get("exclude_patterns", []), "_build"]
    (out / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    for chapter in book.chapters:
        notebook = jupytext.read(root / f"{chapter}.md")
        check_solution_marks(chapter, notebook)
        # Check cells test the solution (and answer cells are hidden): without solutions, both go.
        dropped = {"solution", "check", "hidden-check", "exercise-stub"}
        notebook.cells = [cell for cell in notebook.cells if not dropped & set(tags(cell))]
        (out / f"{chapter}.md").write_text(canonical_markdown(notebook), encoding="utf-8")
        # A same-named .ipynb beside the page makes the theme's Colab link end in .ipynb.
        shutil.copy2(root / STUDENT_FOLDER / f"{chapter}.ipynb", out / f"{chapter}.ipynb")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    write_student_book(Path(sys.argv[1]).resolve())
