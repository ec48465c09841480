"""Shared helpers for the tests (test_book, test_browser, test_execution, test_editions, ...).

* ``chapter``: tests that take this argument run once per page listed in ``_toc.yml``
  (for example ``chapters/graph``), in table-of-contents order.
* ``book_html``: the built book, ``_build/html``. A test that needs it fails (it does not
  skip) when the book has not been built, and says to run ``make book``.
* Under pytest-xdist (``make test`` runs ``-n <cores> --dist loadfile``), each test file runs
  on one worker, so a module-scoped fixture (a JupyterLab server, a browser, a batch of graded
  submissions, the scratch book of test_build.py) is set up once. (``--dist loadgroup`` does
  not work with pytest 9.2: xdist 3.8.0 marks a group by rewriting ``item._nodeid``, which
  pytest 9 no longer reads.) The slowest files (``SLOWEST_FIRST``) are collected first and
  ``make test`` keeps that order (``--no-loadscope-reorder``), so that they start at once and
  the other worker fills the time with the rest, instead of one worker running them alone at
  the end.
* Two tiers. ``make check`` runs the fast one, ``-m "not full"``: the engine, the unit tests and
  the tools' quick checks, with nothing built. A test that needs what ``make test`` builds first
  (the book, the student site, the assignments, the PDF, the tests' wheelhouse), a browser, a
  JupyterLab or the simulated Colab is marked ``full`` (``pytestmark`` in its file, or on the
  test). A test that asks for the built book or the simulated Colab and is not marked ``full``
  is an error here, so the fast tier cannot come to depend on a build unnoticed. The fast tier
  does not even import a file marked ``full`` as a whole (:data:`FULL_FILE`): its module level
  may read the build.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
TOC_FILE = ROOT / "_toc.yml"
CONFIG_FILE = ROOT / "_config.yml"
BOOK_HTML = ROOT / "_build" / "html"


def _files_in(entries: list[dict]) -> list[str]:
    """The ``file:`` entries of a _toc.yml list, depth first, including nested sections and parts."""
    files = []
    for entry in entries:
        if "file" in entry:
            files.append(entry["file"])
        for nested in ("sections", "chapters", "parts"):
            files.extend(_files_in(entry.get(nested, [])))
    return files


def toc_chapters() -> list[str]:
    """Every page of the book as listed in _toc.yml (no suffix), root first."""
    toc = yaml.safe_load(TOC_FILE.read_text(encoding="utf-8"))
    pages = [toc["root"], *_files_in(toc.get("chapters", [])), *_files_in(toc.get("parts", []))]
    return [str(Path(page).with_suffix("")) if page.endswith((".md", ".ipynb")) else page for page in pages]


def chapter_source(chapter: str) -> Path:
    """The source file of a _toc.yml entry (a MyST Markdown notebook or an .ipynb)."""
    for suffix in (".md", ".ipynb"):
        path = ROOT / f"{chapter}{suffix}"
        if path.is_file():
            return path
    raise FileNotFoundError(f"_toc.yml lists {chapter!r}, but neither {chapter}.md nor {chapter}.ipynb exists")


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


#: Measured with --durations: every Colab run takes its turn on the one sim venv (about 5 min
#: in all), and grading the planted submissions takes about 2.5 min.
SLOWEST_FIRST = ["test_colab.py", "test_assignments.py"]


#: Fixtures that exist only after ``make test``'s builds: a test that uses one must be marked ``full``.
BUILT = {"book_html", "chapter_page", "colab", "student_runs", "student_html", "graded", "grading_venv"}


def unmarked_users_of_builds(items: list[pytest.Item]) -> list[str]:
    """The tests that use a fixture of :data:`BUILT` but are not marked ``full``."""
    return [
        item.nodeid
        for item in items
        if BUILT & set(getattr(item, "fixturenames", ())) and item.get_closest_marker("full") is None
    ]


#: The line that marks a whole test file ``full``.
FULL_FILE = "pytestmark = pytest.mark.full"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """In the fast tier (``-m "not full"``), files marked ``full`` as a whole are not imported."""
    if config.option.markexpr.strip() != "not full" or collection_path.suffix != ".py":
        return None
    lines = collection_path.read_text(encoding="utf-8").splitlines()
    return True if any(line.startswith(FULL_FILE) for line in lines) else None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "full: needs make test's builds, a browser or an offline venv; make check leaves it out"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unmarked = unmarked_users_of_builds(items)
    if unmarked:
        raise pytest.UsageError(
            "these tests use the built book or the simulated Colab but are not marked "
            f"`full` (make check would run them without a build): {unmarked}"
        )
    rank = {name: index for index, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "chapter" in metafunc.fixturenames:
        chapters = toc_chapters()
        metafunc.parametrize("chapter", chapters, ids=chapters)


@pytest.fixture(scope="session")
def book_html() -> Path:
    """The built book; fails with the command to run when it is missing."""
    index = BOOK_HTML / "index.html"
    if not index.is_file():
        pytest.fail(
            f"The book has not been built: {index} does not exist. Run `make book` "
            "(or `make test`, which builds the book before running the tests).",
            pytrace=False,
        )
    return BOOK_HTML


@pytest.fixture
def chapter_page(book_html: Path, chapter: str) -> Path:
    """The built HTML page of ``chapter``; fails when it is missing or older than its source."""
    page = book_html / f"{chapter}.html"
    if not page.is_file():
        pytest.fail(
            f"{page} is missing although _toc.yml lists {chapter!r}: run `make book`.",
            pytrace=False,
        )
    source = chapter_source(chapter)
    if page.stat().st_mtime < source.stat().st_mtime:
        pytest.fail(
            f"{page.relative_to(ROOT)} is older than {source.relative_to(ROOT)}: the built book "
            "is stale, run `make book`.",
            pytrace=False,
        )
    return page


@pytest.fixture(scope="session")
def colab(tmp_path_factory):
    """(venv, wheels, ipython_dir) of the simulated Colab (tests/colab_sim.py), shared by the whole session.

    The venv is built once per run: under pytest-xdist, in the folder all workers' temporary
    folders share, by the first worker that needs it.
    """
    import colab_sim

    workdir = tmp_path_factory.mktemp("colab-sim")
    base = tmp_path_factory.getbasetemp()
    run_folder = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    with colab_sim.colab_session(workdir, venv_home=run_folder / "colab-sim") as session:
        yield session
