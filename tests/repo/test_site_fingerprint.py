"""The site is built again only when something it is made from changed (tools/book/build_book.py).

``make book`` with nothing changed returns in a second instead of writing every page again;
any change to a file git would commit, outside the folders the build never reads, builds it.
A failed build leaves no fingerprint, so the next one builds (and fails) again.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools import stamps
from tools.book import after_site, build_book

OPTIONS = ["-W", "-n", "--keep-going"]


@pytest.fixture
def book(tmp_path: Path) -> Path:
    """A git repository with a chapter, its notebook and a test."""
    for name, text in {
        "chapters/a.md": "# A\n",
        "chapters/a.ipynb": "{}",
        "tests/test_a.py": "",
        ".gitignore": "_build/\n",
    }.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True)
    return tmp_path


def fingerprint(book: Path, options=OPTIONS) -> str | None:
    return build_book.site_fingerprint(book, [str(book), *options])


def test_what_changes_the_fingerprint(book: Path):
    first = fingerprint(book)
    assert first and fingerprint(book) == first
    (book / "tests" / "test_a.py").write_text("x = 1\n")
    (book / "chapters" / "a.ipynb").write_text('{"cells": []}')
    (book / "_build").mkdir()
    (book / "_build" / "page.html").write_text("built")
    assert fingerprint(book) == first, "a test, a notebook's content or the build's output changed it"
    (book / "chapters" / "b.ipynb").write_text("{}")  # a page's Colab button reads whether it exists
    second = fingerprint(book)
    (book / "chapters" / "a.md").write_text("# A, again\n")
    third = fingerprint(book)
    (book / "chapters" / "new.md").write_text("# New\n")  # not yet added to git
    fourth = fingerprint(book)
    os.utime(book / "chapters" / "a.md", ns=(0, 0))  # touched, as make would see it
    assert len({first, second, third, fourth, fingerprint(book)}) == 5
    assert fingerprint(book, [*OPTIONS, "-q"]) != fingerprint(book)


def test_no_fingerprint_where_it_cannot_be_told(book: Path, tmp_path_factory):
    assert fingerprint(book, ["--builder", "singlehtml"]) is None
    assert fingerprint(book / "chapters") is None, "a folder inside the repository is not its book"
    assert fingerprint(tmp_path_factory.mktemp("scratch")) is None


def test_build_runs_only_when_something_changed_or_the_last_one_failed(book: Path, monkeypatch):
    builds = []

    def sphinx_build(argv):
        builds.append(argv)
        (book / "_build" / "html").mkdir(parents=True, exist_ok=True)
        (book / "_build" / "html" / "index.html").write_text("built")
        return 1 if "broken" in (book / "chapters" / "a.md").read_text() else 0

    monkeypatch.setattr(build_book, "sphinx_build", sphinx_build)
    monkeypatch.setattr(build_book, "write_sphinx_config", lambda book: None)
    argv = [str(book), *OPTIONS]
    assert build_book.build(1, argv) == 0 and len(builds) == 1
    assert build_book.build(1, argv) == 0 and len(builds) == 1, "built again with nothing changed"
    (book / "chapters" / "a.md").write_text("# A, broken\n")
    assert build_book.build(1, argv) == 1 and build_book.build(1, argv) == 1 and len(builds) == 3
    (book / "chapters" / "a.md").write_text("# A\n")
    assert build_book.build(1, argv) == 0 and len(builds) == 4
    (book / "_build" / "html" / "index.html").unlink()
    assert build_book.build(1, argv) == 0 and len(builds) == 5, "not built although its output is gone"
    # The PDF's single-page build writes elsewhere: the site is still up to date after it.
    assert build_book.build(1, [str(book), "--builder", "singlehtml"]) == 0 and len(builds) == 6
    assert build_book.build(1, argv) == 0 and len(builds) == 6, "built again after another builder's build"


def test_a_build_made_from_the_site_runs_again_only_when_the_site_changed_or_its_output_is_gone(tmp_path, monkeypatch):
    """tools/book/after_site.py, which make pdf, make book-student and make assignments go through: the
    site's fingerprint, the environment's and the outputs decide."""
    monkeypatch.chdir(tmp_path)
    site = tmp_path / "_build" / build_book.SITE_STAMP
    site.parent.mkdir()
    site.write_text("site 1")
    runs = tmp_path / "runs"
    script = "import pathlib, sys; p = pathlib.Path('runs'); p.write_text(p.read_text() + 'x' if p.exists() else 'x'); "

    def made(exit_status: int = 0) -> int:
        command = [sys.executable, "-c", script + f"pathlib.Path('out').touch(); sys.exit({exit_status})"]
        return after_site.main(["pdf", "out", "--", *command])

    assert made() == 0 and runs.read_text() == "x"
    assert made() == 0 and runs.read_text() == "x", "made again from the same site"
    site.write_text("site 2")
    assert made() == 0 and runs.read_text() == "xx"
    (tmp_path / "out").unlink()
    assert made() == 0 and runs.read_text() == "xxx", "its output was gone"
    site.write_text("site 3")
    assert made(1) == 1 and made() == 0 and runs.read_text() == "xxxxx", "a failed run leaves no stamp"
    system = tmp_path / "status"  # Debian's package list: Chromium, which prints the PDF, is one of them
    monkeypatch.setattr(stamps, "SYSTEM_PACKAGES", system)
    assert made() == 0 and runs.read_text() == "x" * 6, "the system's packages, first listed"
    system.write_text("chromium upgraded")
    assert made() == 0 and runs.read_text() == "x" * 7, "the system's packages changed"
    with pytest.raises(SystemExit, match="usage"):
        after_site.main(["pdf", "out"])
