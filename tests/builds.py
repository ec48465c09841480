"""The fixtures of what ``make test`` builds: the book and the simulated Colab.

Only the full tiers' ``conftest.py`` (``built/``, ``browser/``, ``colab/``) import them, so a
test of a fast tier cannot come to depend on a build: the fixture does not exist there.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from common import BOOK_HTML, ROOT, chapter_source


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
    import colab_sim  # tests/colab_sim.py

    workdir = tmp_path_factory.mktemp("colab-sim")
    base = tmp_path_factory.getbasetemp()
    run_folder = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    with colab_sim.colab_session(workdir, venv_home=run_folder / "colab-sim") as session:
        yield session
