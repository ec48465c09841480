"""The test suite, in folders by tier.

* Fast, ``make check`` (nothing built, no browser): ``engine/`` (the engine against PyTorch and
  JAX), ``course/`` (the course's package: explorables, drills, checks, grading, Live code's
  Python) and ``repo/`` (the repository: style, prose, layering, workflows).
* Full, ``make test`` (after the builds): ``built/`` (the book, its editions, the PDF, the
  packages, the assignments) and ``browser/`` (Chromium and JupyterLab on the built pages).
* Colab, ``make test-colab`` (run by CI after ``make test``, outside its CPU budget): ``colab/``
  (the notebooks in the simulated Colab). Only these three folders' ``conftest.py`` import the fixtures of
  what ``make test`` builds (``builds.py``: ``book_html``, ``chapter_page``, ``colab``), so a
  fast test that asks for one fails at once: the fixture does not exist in its folder.
* ``--results-cache`` (``make check``, ``make test``, ``make test-colab``): a test file whose
  tests all passed is not run again while nothing they read has changed (``results_cache.py``).
* Property tests (hypothesis) run with the ``recorded`` profile: the same examples every run.
* ``chapter``: tests that take this argument run once per page listed in ``_toc.yml`` (for
  example ``chapters/graph``), in table-of-contents order.
* Under pytest-xdist (``make test`` runs ``-n <cores> --dist loadfile``), each test file runs
  on one worker, so a module-scoped fixture (a JupyterLab server, a batch of graded
  submissions, the scratch book of test_build.py) is set up once. (``--dist loadgroup`` does
  not work with pytest 9.2: xdist 3.8.0 marks a group by rewriting ``item._nodeid``, which
  pytest 9 no longer reads.) The files are collected longest first (``LONGEST_FIRST``, the
  rest after them in their folders' order) and ``make test`` keeps that order
  (``--no-loadscope-reorder``): each worker takes the next file when it is done with one, so
  the two finish together instead of one running a long file alone at the end.
"""

from __future__ import annotations

import os

import pytest
from common import toc_chapters
from hypothesis import settings

pytest_plugins = ["results_cache"]

#: Property tests draw the same examples on every run (``derandomize``: a seed from each test's
#: name), so a failure in CI is one anyone can repeat. ``HYPOTHESIS_PROFILE=random`` draws new
#: ones, to look for a failure; its example then becomes a plain test.
settings.register_profile("recorded", derandomize=True, database=None)
settings.register_profile("random", derandomize=False, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "recorded"))

#: Measured with a timeline of a whole run (seconds on a worker, beside the other one). The
#: assignments' runs wait on kernels and time limits: they start beside a file that keeps Chromium
#: busy. test_colab.py is make test-colab's, whose other file is short.
LONGEST_FIRST = [
    "test_colab.py",
    "test_browser.py",
    "test_assignments.py",
    "test_live_browser.py",
    "test_explorables_browser.py",
    "test_accessibility.py",
    "test_jupyterlab.py",
    "test_weight.py",
    "test_editions.py",
    "test_build.py",
    "test_pdf.py",
]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep their order


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "chapter" in metafunc.fixturenames:
        chapters = toc_chapters()
        metafunc.parametrize("chapter", chapters, ids=chapters)
