"""Teaching from a fork (chapters/instructors.md, "Teach from your own copy"): the repository is
named in one place, ``repository.url`` in _config.yml, and ``chainrule_release`` chooses a PyPI
release instead of the repository for the set-up cell.

Two copies of the book that differ only in ``repository.url`` (the course's and a fork's) get
their notebooks written as ``make notebooks`` writes them (tools/book/notebooks.py, from the numbers of
the last book build), and the generated files are compared line by line. Every line that differs
must be a Colab link, a figure's address in the repository or the set-up cell's install spec,
each rewritten from the course to the fork, and nothing else; each of those kinds must change,
and no address of the course may be left in the fork's files. The table of notebooks on the first
page (``{notebook-links}``, _ext/notebook_links.py), given the configuration jupyter-book makes
of each copy's _config.yml, changes the same way. Nothing is executed: the copies reuse
``_build/numbers.json``.
"""

from __future__ import annotations

import copy
import difflib
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import nbformat
import pytest
import yaml
from common import MYST_HEADER, ROOT

from _ext import notebook_links
from tools.book import book_model, myst, notebooks
from tools.book.questions import load_assignments

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
COURSE_URL = CONFIG["repository"]["url"].rstrip("/")
BRANCH = CONFIG["repository"]["branch"]
FORK_URL = "https://github.com/a-teacher/backprop-for-my-class"


def book_copy(root: Path, url: str, release: str | None = None) -> Path:
    """A copy of the book's sources whose _config.yml names ``url`` (and ``release``, when given)."""
    config = copy.deepcopy(CONFIG)
    config["repository"]["url"] = url
    config["chainrule_release"] = release
    root.mkdir()
    (root / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    for name in ("_toc.yml", *config.get("bibtex_bibfiles", [])):
        shutil.copy2(ROOT / name, root / name)
    shutil.copytree(ROOT / "chapters", root / "chapters", ignore=shutil.ignore_patterns("*.ipynb", ".*"))
    shutil.copytree(ROOT / "img", root / "img")  # the figures the chapters show
    if (ROOT / book_model.NUMBERS).is_file():  # else load_book says to build the book
        (root / book_model.NUMBERS).parent.mkdir()
        shutil.copy2(ROOT / book_model.NUMBERS, root / book_model.NUMBERS)
    return root


def make_notebooks(root: Path) -> dict[str, str]:
    """What `make notebooks` writes in ``root`` (written there too), by path relative to ``root``."""
    files = notebooks.expected_files(book_model.load_book(root))
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return {path.relative_to(root).as_posix(): text for path, text in files.items()}


def addresses(url: str) -> dict[str, str]:
    """What names the repository ``url`` in the generated files, by kind."""
    repo = urlsplit(url).path.strip("/")
    return {
        "Colab link": f"https://colab.research.google.com/github/{repo}/blob/{BRANCH}/",
        "figure address": f"https://raw.githubusercontent.com/{repo}/{BRANCH}/",
        "set-up cell's install spec": f"git+{url}@{BRANCH}",
        "table's download link": f"https://github.com/{repo}/raw/{BRANCH}/",
    }


def changed_lines(before: str, after: str, where: str) -> list[tuple[str, str]]:
    """The (before, after) pairs of lines that differ; the two texts must have the same lines otherwise."""
    old, new = before.splitlines(), after.splitlines()
    pairs = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        assert tag == "replace" and i2 - i1 == j2 - j1, (
            f"{where}: lines added or removed, not only changed:\n"
            + "\n".join(difflib.unified_diff(old[i1:i2], new[j1:j2], lineterm=""))
        )
        pairs.extend(zip(old[i1:i2], new[j1:j2], strict=True))
    return pairs


def kinds_of_change(before: str, after: str, where: str) -> list[str]:
    """The kind of each changed line: every change must be the course's address rewritten to the fork's."""
    course, fork = addresses(COURSE_URL), addresses(FORK_URL)
    kinds = []
    for old, new in changed_lines(before, after, where):
        found = [kind for kind, address in course.items() if address in old]
        assert found, f"{where}: a line changed that names no repository address:\n- {old}\n+ {new}"
        rewritten = old
        for kind in found:
            rewritten = rewritten.replace(course[kind], fork[kind])
        assert rewritten == new, f"{where}: the line changed more than its address:\n- {old}\n+ {new}"
        if "set-up cell's install spec" in found:
            assert "SOURCE = " in old, f"{where}: the install spec outside the set-up cell: {old}"
        kinds.extend(found)
    return kinds


@pytest.fixture(scope="module")
def course_and_fork(tmp_path_factory) -> tuple[tuple[Path, dict], tuple[Path, dict]]:
    """((root, files) of the course's copy, (root, files) of the fork's), notebooks written."""
    assert COURSE_URL != FORK_URL
    base = tmp_path_factory.mktemp("fork")
    course = book_copy(base / "course", COURSE_URL)
    fork = book_copy(base / "fork", FORK_URL)
    return (course, make_notebooks(course)), (fork, make_notebooks(fork))


def test_the_fork_changes_its_links_and_set_up_cells_and_nothing_else(course_and_fork):
    (_, course_files), (_, fork_files) = course_and_fork
    assert sorted(course_files) == sorted(fork_files)
    chapters = book_model.numbered_chapters(book_model.read_toc(ROOT))
    assert len(course_files) == 3 * len(chapters), "each chapter: its .md and its two notebooks"
    counts = Counter()
    for path in course_files:
        kinds = kinds_of_change(course_files[path], fork_files[path], path)
        assert "set-up cell's install spec" in kinds, f"{path}: the set-up cell still installs the course's"
        counts.update(kinds)
    assert counts["Colab link"] >= 2 * len(chapters) and counts["figure address"] >= 1, counts
    assert "table's download link" not in counts
    course = addresses(COURSE_URL)
    left = [(path, kind) for path, text in fork_files.items() for kind, address in course.items() if address in text]
    assert not left, f"the fork's files still name the course's repository: {left[:5]}"


def links_table(root: Path) -> list[str]:
    """The {notebook-links} table of the book at ``root``, as docutils prints it, lines."""
    from jupyter_book.config import get_final_config

    sphinx_config, _ = get_final_config(
        user_yaml=root / "_config.yml", cli_config={"latex_individualpages": False}, sourcedir=root
    )
    config = SimpleNamespace(html_theme_options=sphinx_config["html_theme_options"], notebook_links_root="")
    env = SimpleNamespace(srcdir=str(root), docname="chapters/index", config=config, note_dependency=lambda path: None)
    directive = notebook_links.NotebookLinks.__new__(notebook_links.NotebookLinks)
    directive.state = SimpleNamespace(document=SimpleNamespace(settings=SimpleNamespace(env=env)))
    directive.lineno = 1
    [table] = directive.run()
    return table.pformat().splitlines()


def test_the_forks_table_of_notebooks_links_to_the_fork(course_and_fork):
    (course_root, _), (fork_root, _) = course_and_fork
    course, fork = links_table(course_root), links_table(fork_root)
    kinds = Counter(kinds_of_change("\n".join(course), "\n".join(fork), "the table of notebooks"))
    chapters = book_model.numbered_chapters(book_model.read_toc(ROOT))
    assert kinds == {"Colab link": 2 * len(chapters), "table's download link": 2 * len(chapters)}, kinds
    assert not [line for line in fork if urlsplit(COURSE_URL).path.strip("/") in line]


def test_a_release_makes_the_set_up_cell_install_it_from_pypi(course_and_fork, tmp_path: Path):
    """chainrule_release: "0.1.0" changes the set-up cell's install spec, and only it, to chainrule==0.1.0."""
    (_, course_files), _ = course_and_fork
    book = book_model.load_book(book_copy(tmp_path / "released", COURSE_URL, release="0.1.0"))
    assert book.default_pip_spec == "chainrule==0.1.0"
    assert 'SOURCE = "chainrule==0.1.0"' in notebooks.setup_source(book)
    chapter = book.chapters[0]
    written = notebooks.with_front_cells(book, chapter, book_model.read_chapter(book.root, chapter))
    for student in (False, True):
        path = book_model.edition_path(chapter, student)
        text = notebooks.nbformat.writes(notebooks.edition(book, chapter, written, student)) + "\n"
        [(old, new)] = changed_lines(course_files[path], text, path)
        assert f"git+{COURSE_URL}@{BRANCH}" in old and "SOURCE = " in old
        assert new == old.replace(f"git+{COURSE_URL}@{BRANCH}", "chainrule==0.1.0")


@pytest.mark.parametrize(
    "value, message",
    [
        (0.1, "must be a quoted version"),  # YAML reads chainrule_release: 0.10 as the number 0.1
        ("latest", "is not a version"),
        ("0.1.0; rm -rf /", "is not a version"),
    ],
)
def test_a_release_that_is_no_version_is_refused(value, message):
    with pytest.raises(myst.ConversionError, match=message):
        book_model.read_release({"chainrule_release": value})


@pytest.mark.parametrize("value, release", [(None, ""), ("", ""), ("0.2.0", "0.2.0"), ("1.0rc1", "1.0rc1")])
def test_a_release_is_read_as_given_or_unset(value, release):
    assert book_model.read_release({"chainrule_release": value}) == release
    assert book_model.read_release({}) == ""


def test_the_course_sets_no_release_yet():
    """Until chainrule is on PyPI, the committed notebooks install it from the repository."""
    assert book_model.read_release(CONFIG) == ""


# --------------------------------------------------------------------------- a chapter inserted

INSERTED = (
    MYST_HEADER
    + """
(chapter-inserted)=
# A chapter a fork inserts

```{code-cell} ipython3
:tags: [remove-cell, setup]

```

A fork teaches something first. Its one exercise comes before every other chapter's.

````{exercise}
:label: ex-inserted-first

Say what comes first.
````
"""
)


def renumbered_book(root: Path) -> Path:
    """A copy of the book with a chapter inserted before the graph chapter, built as `make book`
    builds it (with the book build's cached outputs: nothing executes)."""
    book_copy(root, COURSE_URL)
    (root / "chapters" / "inserted.md").write_text(INSERTED, encoding="utf-8")
    # The book build's executed notebooks and what they ran on: every chapter's outputs come from
    # the cache (keyed on its code), and the inserted one has no code, so nothing executes.
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for folder in ("src", "course", "_build/.jupyter_cache", "_static"):
        shutil.copytree(ROOT / folder, root / folder, ignore=ignore)
    for name in ("requirements.lock", "pyproject.toml", "_build/.jupyter_cache.fingerprint"):
        shutil.copy2(ROOT / name, root / name)
    for edition in ("chapters", "student/chapters"):  # the notebooks the first page links to
        (root / edition).mkdir(parents=True, exist_ok=True)
        for path in (ROOT / edition).glob("*.ipynb"):
            shutil.copy2(path, root / edition / path.name)
        (root / edition / "inserted.ipynb").write_text("{}", encoding="utf-8")  # written below
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    # Only what numbers and renders the pages: not the typesetting of their maths in Node, the cut
    # fonts, the page runtime or the accessible markup, which other tests check on the real build.
    skipped = ("prerendered_math", "page_weight", "live_code", "accessible_markup", "dedupe_scripts")
    extensions = config["sphinx"]["extra_extensions"]
    config["sphinx"]["extra_extensions"] = [name for name in extensions if name.split(".")[-1] not in skipped]
    config["execute"]["exclude_patterns"] = ["*inserted*"]  # its one cell, the set-up, need not run
    settings = config["sphinx"]["config"]
    for name in ("live_code_pages", "progress_page"):  # live_code's settings
        settings.pop(name)
    (root / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    toc = book_model.read_toc(ROOT)
    toc["parts"][0]["chapters"].insert(1, {"file": "chapters/inserted"})
    (root / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False), encoding="utf-8")
    command = [sys.executable, "-m", "tools.book.build_book", "--jobs", "1", str(root), "-W", "-n", "--keep-going"]
    run = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    executed = re.findall(r"(\S+)\.md: Executing notebook", run.stdout + run.stderr)
    assert not executed, f"the cache was not reused: {executed}"
    return root


def test_a_chapter_inserted_before_the_second_renumbers_everything_after_it_and_nothing_by_hand(tmp_path):
    """Teaching from a fork: insert a chapter before the graph chapter and build. Every exercise
    after it is renumbered (chapter n becomes n + 1) in the numbers Sphinx gives, in the answer
    cells' messages and the checks of the notebooks, in the assignments' question ids and in the
    instructors' page, with no file edited by hand."""
    before = book_model.load_book(ROOT)
    root = renumbered_book(tmp_path / "renumbered")
    after = book_model.load_book(root)
    assert after.targets["ex-inserted-first"].number == "2.1"  # the intro, then the inserted chapter
    moved = {label: target.number for label, target in before.targets.items() if label.startswith("ex-graph")}
    assert moved, "the graph chapter has no exercise to follow"
    shifted = {label: f"{int(n.split('.')[0]) + 1}.{n.split('.')[1]}" for label, n in moved.items()}
    assert {label: after.targets[label].number for label in moved} == shifted
    questions = {q.label: q for a in load_assignments(after, only=["graph"]) for q in a.questions}
    dfs = questions["ex-graph-dfs-by-hand"]
    assert dfs.name == "ex" + shifted["ex-graph-dfs-by-hand"].replace(".", "_")
    assert f'"Exercise {dfs.number} is not answered yet: write dfs_order_with_stack"' in dfs.stub
    # The graph chapter's student notebook, as `make notebooks` writes it from this build's numbers.
    chapter = notebooks.with_front_cells(after, "chapters/graph", book_model.read_chapter(root, "chapters/graph"))
    student = nbformat.writes(notebooks.edition(after, "chapters/graph", chapter, student=True))
    assert f"Exercise {dfs.number} is not answered yet" in student and f'exercise(\\"{dfs.number}\\")' in student
    assert "Exercise " + moved["ex-graph-dfs-by-hand"] not in student, "an old number is left"
    page = (root / "_build" / "html" / "chapters" / "instructors.html").read_text(encoding="utf-8")
    assert f'<span class="pre">{dfs.name}</span>' in page
    # The prose's chapter numbers ({numref}`chapter %s <chapter-graph>`) follow, in the site and the notebooks.
    graph = str(int(before.chapter_number("chapters/graph")) + 1)
    intro = (root / "_build" / "html" / "chapters" / "intro.html").read_text(encoding="utf-8")
    assert f'href="graph.html#chapter-graph"><span class="std std-numref">chapter {graph}</span>' in intro
    chapter = notebooks.with_front_cells(after, "chapters/intro", book_model.read_chapter(root, "chapters/intro"))
    assert f"[chapter {graph}](graph.ipynb)" in nbformat.writes(
        notebooks.edition(after, "chapters/intro", chapter, False)
    )
