"""What every tier's tests read of the repository: its paths, the book's pages, its configuration.

A plain module (tests/ is on the path through its conftest.py), so that any test imports it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from tools.book.book_model import read_toc, toc_pages

ROOT = Path(__file__).resolve().parents[1]
CONFIG_FILE = ROOT / "_config.yml"
BOOK_HTML = ROOT / "_build" / "html"
#: The front matter of a chapter written as a MyST Markdown notebook, as jupytext writes it: what a test
#: that plants a chapter starts it with.
MYST_HEADER = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""


def toc_chapters() -> list[str]:
    """Every page of the book as listed in _toc.yml, root first, as the tools read it."""
    return toc_pages(read_toc(ROOT))


def chapter_source(chapter: str) -> Path:
    """The source file of a _toc.yml entry (a MyST Markdown notebook or an .ipynb)."""
    for suffix in (".md", ".ipynb"):
        path = ROOT / f"{chapter}{suffix}"
        if path.is_file():
            return path
    raise FileNotFoundError(f"_toc.yml lists {chapter!r}, but neither {chapter}.md nor {chapter}.ipynb exists")


def plant_book(root: Path, chapter: str, source: str) -> Path:
    """Write a one-chapter book under root (chapters/<chapter>.md and a _toc.yml numbering it): what a test that
    shows a repository check failing on planted text runs that check on. Returns the chapters folder."""
    chapters = root / "chapters"
    chapters.mkdir(exist_ok=True)
    (chapters / f"{chapter}.md").write_text(source, encoding="utf-8")
    page = f"chapters/{chapter}"
    toc = {"format": "jb-book", "root": page, "parts": [{"numbered": True, "chapters": [{"file": page}]}]}
    (root / "_toc.yml").write_text(yaml.safe_dump(toc), encoding="utf-8")
    return chapters


CODE_CELL = re.compile(r"^(```+|~~~+)\s*\{code-cell\}", re.MULTILINE)


def pages_with_code() -> list[str]:
    """_toc.yml pages that are notebooks: their source has code cells (or an .ipynb already exists)."""
    pages = []
    for page in toc_chapters():
        markdown = ROOT / f"{page}.md"
        has_code = markdown.is_file() and CODE_CELL.search(markdown.read_text(encoding="utf-8"))
        if has_code or (ROOT / f"{page}.ipynb").is_file():
            pages.append(page)
    return pages


def book_config() -> dict:
    return yaml.safe_load(CONFIG_FILE.read_text(encoding="utf-8"))


def exercise_number(label: str) -> str:
    """The number the last book build gave the exercise labelled ``label`` ("6.2"), from
    ``_build/numbers.json``: tests name exercises by label, since a fork may renumber them."""
    import json

    numbered = json.loads((ROOT / "_build" / "numbers.json").read_text(encoding="utf-8"))["numbered"]
    found = [e["number"] for page in numbered.values() for e in page.values() if e.get("label") == label]
    assert found, f"no exercise is labelled {label!r} in _build/numbers.json: run `make book`"
    return found[0]


def make_env() -> dict[str, str]:
    """The environment for a make that a test runs: not the flags of the make that runs the tests (make test)."""
    return {key: value for key, value in os.environ.items() if key not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}


def make_variable(name: str) -> str:
    """A variable of the Makefile as make expands it (``INSTALL_STAMP``: the venv's set-up stamp, its path)."""
    command = ["make", "-s", "--no-print-directory", f"PYTHON={sys.executable}", "--eval", "print-%: ; @echo $($*)"]
    run = subprocess.run([*command, f"print-{name}"], cwd=ROOT, env=make_env(), capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.strip(), run.stderr
    return run.stdout.strip()
