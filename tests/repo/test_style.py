"""ruff, pinned in requirements.txt and configured in pyproject.toml: every Python file lints clean and is formatted."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest
from common import ROOT

RUFF = Path(sys.prefix) / "bin" / "ruff"
CONFIG = ROOT / "pyproject.toml"


def ruff(*arguments: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    if not RUFF.is_file():
        pytest.fail(f"{RUFF} is missing: run `make setup` (requirements.txt pins ruff)", pytrace=False)
    return subprocess.run([str(RUFF), *arguments], capture_output=True, text=True, cwd=cwd, timeout=120)


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=["lint", "format"])
def test_the_code_is_clean(command: list[str]):
    run = ruff(*command, ".")
    assert run.returncode == 0, f"`ruff {' '.join(command)} .` (fix with `ruff check --fix` and `ruff format`):\n" + (
        run.stdout[-4000:] + run.stderr[-2000:]
    )


def test_the_checks_can_fail(tmp_path: Path):
    (tmp_path / "bad.py").write_text("import os, sys\nx  =  [1,2]\n")
    lint = ruff("check", "--config", str(CONFIG), "bad.py", cwd=tmp_path)
    form = ruff("format", "--check", "--config", str(CONFIG), "bad.py", cwd=tmp_path)
    assert lint.returncode == 1 and "E401" in lint.stdout, lint.stdout + lint.stderr
    assert form.returncode == 1 and "bad.py" in form.stdout, form.stdout + form.stderr


# An exercise's number is the book's (it changes when a fork inserts a chapter); code names it by
# label or chapter. Numbers in the checks' comments and docstrings went stale silently before.
TYPED_NUMBER = re.compile(r"Exercises? (?:1[0-4]|[1-9])\.\d|(?<![\w)])\((?:1[0-4]|[1-9])\.\d+[,)]|\bex\d+_\d+\b")


def typed_numbers(source: str) -> list[str]:
    """The exercise numbers typed in the comments and docstrings of ``source``."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        prose = token.type == tokenize.COMMENT or (
            token.type == tokenize.STRING and token.string[-3:] in ('"""', "'''")
        )
        if prose:
            found += TYPED_NUMBER.findall(token.string)
    return found


#: The folders of the repository's own Python: the engine, the course, the tools, the extensions, the benchmarks.
CODE_FOLDERS = ("src", "course", "tools", "_ext", "benchmarks")


def test_the_code_names_no_exercise_by_number():
    """The engine, the course, the tools and the extensions, in their comments and docstrings."""
    typed = {
        path.relative_to(ROOT).as_posix(): found
        for folder in CODE_FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if (found := typed_numbers(path.read_text(encoding="utf-8")))
    }
    assert not typed, typed
    assert typed_numbers('"""The check of Exercise 6.3."""\n# (5.6, 7.2)\nx = "ex4_4"\n') == ["Exercise 6.3", "(5.6,"]
    assert typed_numbers('"""``Dual(2.0, 1.0)``, ``np.float64(1.5)``."""\n') == []  # calls, not numbers


#: How a reader or an instructor would read a typed exercise number or question id in prose.
TYPED_IN_PROSE = re.compile(r"Exercises? (?:1[0-4]|[1-9])\.\d|\bex\d+_\d+\b")


def typed_in_prose(text: str) -> list[str]:
    """The exercise numbers and question ids typed in a chapter or a document: they are the
    book's to give ({numref} and {question} at build time), since a fork may renumber."""
    return TYPED_IN_PROSE.findall(text)


def test_the_chapters_and_documents_type_no_exercise_number():
    typed = {
        path.relative_to(ROOT).as_posix(): found
        for path in [*sorted((ROOT / "chapters").glob("*.md")), ROOT / "README.md", ROOT / "CONTRIBUTING.md"]
        if (found := typed_in_prose(path.read_text(encoding="utf-8")))
    }
    assert not typed, f"name exercises with {{numref}}`ex-...` and ids with {{question}}`ex-...`: {typed}"
    assert typed_in_prose('raise NotImplementedError("Exercise 6.2 is not answered yet")\n`ex6_2`') == [
        "Exercise 6.2",
        "ex6_2",
    ]


#: A chapter's number typed in prose ("chapter 7", "Chapters 9 to 11"), outside inline code, unless
#: it is another book's chapter ("chapters 9 and 10 of {cite:t}`...`"), and "the next chapter".
TYPED_CHAPTER = re.compile(
    r"\b[Cc]hapters? (?>\d+(?:(?:, | and | to )\d+)*)(?!\s+of\s+\{cite)"
    r"|\b[Tt]he\s+(?:next|previous)\s+chapter\b(?!s)"  # right only until a chapter is inserted before it
    r"|\{ref\}`\d+ <chapter-[\w-]+>`"  # a number as a link's text
)
#: A role with its text (kept: its text is prose) or inline code (dropped: it shows what a program prints).
ROLE_OR_CODE = re.compile(r"(\{[\w:-]+\})?`[^`\n]*`")


def typed_chapter_numbers(text: str, neighbours: bool = True) -> list[str]:
    """The chapter numbers typed in a page: they are the table of contents' to give, written
    {numref}`chapter %s <chapter-mlp>`, so that a chapter inserted before them renumbers them.
    With ``neighbours``, also "the next chapter" and "the previous chapter" (a chapter's own words:
    a document's "the next chapter" is whichever a reader opens next)."""
    return [
        " ".join(found.split())
        for found in TYPED_CHAPTER.findall(ROLE_OR_CODE.sub(lambda m: m[0] if m[1] else "", text))
        if neighbours or not found.lower().startswith("the")
    ]


def test_the_chapters_documents_and_code_type_no_chapter_number():
    """The chapters, every document, and the code's comments, docstrings and messages."""
    documents = [*sorted((ROOT / "chapters").glob("*.md")), *sorted(ROOT.glob("*.md")), *sorted(ROOT.glob("*/*.md"))]
    code = [path for folder in CODE_FOLDERS for path in (ROOT / folder).rglob("*.py")]
    typed = {
        path.relative_to(ROOT).as_posix(): found
        for path in dict.fromkeys([*documents, *code])
        if (found := typed_chapter_numbers(path.read_text(encoding="utf-8"), path.parent == ROOT / "chapters"))
    }
    assert not typed, f"write a chapter's number as {{numref}}`chapter %s <chapter-name>`: {typed}"
    planted = (
        "After chapter 6, {ref}`chapter 7 <x>`; Chapters 9 to\n11, chapters 8, 13 and 14; the next\nchapter; "
        "{ref}`2 <chapter-graph>`."
    )
    assert typed_chapter_numbers(planted) == [
        "chapter 6",
        "chapter 7",
        "Chapters 9",
        "chapters 8, 13 and 14",
        "the next chapter",
        "{ref}`2 <chapter-graph>`",
    ]
    assert (
        typed_chapter_numbers("{numref}`chapter %s <x>`, `Chapter 6: 2 of 3`, chapters 9 and 10\nof {cite:t}`g`") == []
    )
