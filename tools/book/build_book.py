"""The book build: Jupyter Book's configuration, built by Sphinx on every core.

    python -m tools.book.build_book [--jobs N] [--editions] BOOK [--builder NAME] [sphinx-build options]

Jupyter Book 1's ``build`` command has no ``-j``, so chapters would execute one after another.
This builds through two public commands instead: ``jupyter-book config sphinx BOOK`` writes
the ``conf.py`` that ``_config.yml`` and ``_toc.yml`` stand for (``BOOK/conf.py``, ignored
by git: ``_config.yml`` stays the one source), and ``sphinx-build -j N`` builds it. myst-nb
executes a notebook while Sphinx reads it, so Sphinx's reader processes execute chapters side
by side; every extension the book uses declares itself safe for that. The output goes where
``jupyter-book build`` puts it: ``BOOK/_build/html`` (or ``_build/<builder>``), the doctrees
in ``BOOK/_build/.doctrees``.

With ``--editions`` it then writes the Colab and student notebooks (``tools/book/notebooks.py``),
which print the numbers this build gave (``_build/numbers.json``), unless nothing they are
made from changed since they were last written (``_build/.editions-fingerprint``). A page's Colab button
opens the chapter's ``.ipynb`` only when that file exists while the page is written, so
when a chapter's notebook was new, the book is built again (pages only; nothing executes).

The site is not built at all when nothing it is made from changed since its last successful
build (``_build/.site-fingerprint``, over the files git would commit, outside the folders the
build never reads). Every page would be written again, identical, in some 15 s.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from jupyter_book.cli.main import main as jupyter_book
from sphinx.cmd.build import build_main as sphinx_build

from tools.book import book_model, notebooks, reading_time


def write_sphinx_config(book: Path) -> None:
    """``jupyter-book config sphinx BOOK``: the configuration ``jupyter-book build`` would hand
    Sphinx, written as ``BOOK/conf.py``."""
    jupyter_book(["config", "sphinx", str(book)], standalone_mode=False)


def sphinx_arguments(jobs: int, argv: list[str]) -> list[str]:
    """``sphinx-build``'s arguments for ``BOOK [--builder NAME] [options]``, the folders as
    ``jupyter-book build`` lays them out."""
    parser = argparse.ArgumentParser(prog="build_book", allow_abbrev=False)
    parser.add_argument("book", type=Path)
    parser.add_argument("--builder", default="html")
    known, options = parser.parse_known_args(argv)
    build = known.book / "_build"
    return [
        "-b",
        known.builder,
        "-d",
        str(build / ".doctrees"),
        "-j",
        str(jobs),
        *options,
        str(known.book),
        str(build / known.builder),
    ]


#: Written after each site build that passed (:func:`site_fingerprint`), under _build/.
SITE_STAMP = ".site-fingerprint"


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="Sphinx processes (default: every core)")
    parser.add_argument("--editions", action="store_true", help="then write the Colab and student notebooks")
    parser.add_argument("book", type=Path, help="the book's folder")
    options, build_options = parser.parse_known_args(argv)  # the rest goes to sphinx-build
    arguments = [str(options.book), *build_options]
    if options.editions:
        return with_editions(options.jobs, arguments)
    return build(options.jobs, arguments)


def with_editions(jobs: int, argv: list[str]) -> int:
    """Build, write the editions from the numbers the build gave, and build again when one was new."""
    began = time.monotonic()
    status = build(jobs, argv)
    built = time.monotonic()
    try:
        return editions(jobs, argv, status)
    finally:
        print(f"build_book: the site {built - began:.1f} s, the notebooks {time.monotonic() - built:.1f} s")
        print(f"\nReading time, straight through, before the exercises (tools/book/reading_time.py):\n"
              f"{reading_time.table(book_folder(argv))}")  # fmt: skip


def editions(jobs: int, argv: list[str], status: int) -> int:
    book = book_folder(argv)
    if not (book / book_model.NUMBERS).is_file():  # the build stopped before it numbered anything
        return status
    before = {path for path in notebooks.expected_paths(book) if path.is_file()}
    stamp = book / "_build" / ".editions-fingerprint"
    if stamp.is_file() and stamp.read_text() == editions_fingerprint(book):
        print("Notebooks: nothing they are made from changed since they were written")
        return status
    written = notebooks.main(["--root", str(book)])
    if written:
        return written
    stamp.write_text(editions_fingerprint(book))
    new = [path for path in notebooks.expected_paths(book) if path not in before]
    if new:
        print(
            f"New notebooks {', '.join(str(path.relative_to(book)) for path in new)}: "
            "building again, so that their pages' Colab buttons open them"
        )
        status = build(jobs, argv)
    return status


def editions_fingerprint(book: Path) -> str:
    """SHA-256 of what the notebooks are made from (the chapters, the build's numbers and glued
    values, the configuration, the converter) and of the notebooks themselves: when it is
    unchanged, writing them again would change nothing, and is skipped (it takes seconds)."""
    digest = hashlib.sha256()
    sources = [book / "_config.yml", book / "_toc.yml", book / book_model.NUMBERS, *notebooks.expected_paths(book)]
    # The converter: every module of tools/, the set-up cells of tools/book/setup_cells/ among them.
    sources += sorted((book / "chapters").glob("*.md")) + sorted(Path(__file__).parent.rglob("*.py"))
    sources += sorted(book.glob("*.bib"))
    for path in sources:
        digest.update(str(path).encode() + b"\0" + (path.read_bytes() if path.is_file() else b"(missing)"))
    return digest.hexdigest()


def book_folder(argv: list[str]) -> Path:
    return Path(next((arg for arg in argv if not arg.startswith("-")), "."))


#: Top-level folders of the repository that no site build reads (the edition notebooks count by name only).
NOT_READ = ("tests/", "benchmarks/", ".github/", ".ci/")


def builds_the_site(argv: list[str]) -> bool:
    """Whether a build with these options writes the HTML site (another builder, such as the PDF's
    single page, writes elsewhere and leaves the site and its fingerprint as they are)."""
    return not any(arg.startswith("--builder") for arg in argv)


def site_fingerprint(book: Path, argv: list[str]) -> str | None:
    """SHA-256 of what the HTML site is built from, or None when that cannot be told.

    That is every file of the repository git would commit (tracked, or new and not ignored),
    its bytes and its time, with the build's options, the book being the repository's top
    folder. The Colab and student notebooks count by name: a page reads only whether its
    notebook exists. None for
    another builder, or for a book outside a git work tree (a scratch book, the student book).
    """
    if not builds_the_site(argv):
        return None
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=book,
        capture_output=True,
    )
    top = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=book, capture_output=True, text=True)
    if listed.returncode or top.returncode or Path(top.stdout.strip()) != book.resolve():
        return None
    digest = hashlib.sha256("\0".join(argv).encode() + b"\0")
    for name in sorted(set(listed.stdout.decode().split("\0")) - {""}):
        path = book / name
        if name.startswith(NOT_READ) or not path.is_file():
            continue
        if name.endswith(".ipynb") or name.startswith("student/"):
            digest.update(name.encode() + b"\0")
        else:  # its time too, as make would: a page must not be older than its chapter (tests/builds.py)
            digest.update(f"{name}\0{path.stat().st_mtime_ns}\0".encode() + path.read_bytes() + b"\0")
    return digest.hexdigest()


def build(jobs: int, argv: list[str]) -> int:
    book = book_folder(argv)
    stamp = book / "_build" / SITE_STAMP
    inputs = site_fingerprint(book, argv)
    built = (book / "_build" / "html" / "index.html").is_file()
    if inputs and built and stamp.is_file() and stamp.read_text() == inputs:
        print("build_book: nothing the site is built from changed since its last build: not built again")
        return 0
    if builds_the_site(argv):
        stamp.unlink(missing_ok=True)
    shutil.rmtree(book / "_build" / "html" / "reports", ignore_errors=True)
    status = 1  # also when the build raises
    try:
        write_sphinx_config(book)
        status = sphinx_build(sphinx_arguments(jobs, argv))
    finally:
        if status:
            shutil.rmtree(book / "_build" / ".doctrees", ignore_errors=True)
        elif inputs:
            stamp.write_text(inputs)
    return status


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
