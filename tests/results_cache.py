"""Tests that passed are not run again while nothing they read has changed (``--results-cache``).

``make check`` and ``make test`` pass the option; ``FRESH=1`` leaves it out. A fresh clone, as
in CI, has no results, so it runs everything: the cache is for the edit loop.

What a test file reads is taken wholly, never guessed:

* every file of the repository git would commit (tracked, or new and not ignored, which is
  told apart) outside ``tests/``, by content: the engine, the course, the chapters, the tools, the locks (which
  name the venv's, the wheelhouse's and npm's packages), so anything a build makes from them too;
* what the built site was made from (``_build/.site-fingerprint``), so a test that ran against a
  site older than the files runs again once the site is built from them;
* from ``tests/``: the test file itself, every helper and ``conftest.py`` (any file not named
  ``test_*.py``, data included) and the test files it imports, with theirs; a test file of
  ``tests/repo/`` every file of ``tests/``, since the repository's checks (style, types,
  layering, tiers) read them all;
* Python's version and its installed packages (name and version: a package installed by hand
  counts), the programs the tests start (Chromium, Graphviz's ``dot``, Node.js, bubblewrap,
  ``pdftotext``) by their size and time, ``PATH`` and the environment variables the tests
  read (``CHAINRULE_*``, ``HYPOTHESIS_*``, ``LAB_TEST_*``).

Their SHA-256 is the file's key. A test is skipped, with the reason ``passed at these inputs``,
when it passed (set-up, call and tear-down) in an earlier session at the same key; one that
failed, was skipped or never ran runs. The results are kept per test file in
``_build/test-results/`` (``make clean`` removes them), written by the session that ran the
tests (pytest-xdist's controller), and read by the process that collects them (each worker).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

#: The skip reason of a test not run again; the summary counts the skips that give it.
REASON = "passed at these inputs (results cache)"
#: Where each test file's results are kept, under the repository's top folder.
RESULTS = Path("_build") / "test-results"
#: What the site was last built from (tools/book/build_book.py).
SITE_STAMP = Path("_build") / ".site-fingerprint"
#: The programs whose version changes what a test sees.
PROGRAMS = ("chromium", "dot", "node", "bwrap", "pdftotext")
ENVIRONMENT = ("CHAINRULE_", "HYPOTHESIS_", "LAB_TEST_", "PATH")
TESTS = Path(__file__).resolve().parent
#: The folder of tests/ whose test files read every file of tests/.
READS_EVERY_TEST = TESTS / "repo"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--results-cache",
        action="store_true",
        help="do not run again a test that passed while nothing it reads has changed (tests/results_cache.py)",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("results_cache"):
        config.pluginmanager.register(ResultsCache(config.rootpath), "results-cache")


class ResultsCache:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.shared = shared_key(root)
        self.keys: dict[Path, str] = {}
        self.passed: dict[Path, set[str]] = {}
        self.failed: dict[Path, set[str]] = {}
        self.cached = 0

    def key(self, test_file: Path) -> str:
        if test_file not in self.keys:
            digest = hashlib.sha256(self.shared.encode())
            for path in read_from_tests(test_file):
                digest.update(f"{path.relative_to(TESTS)}\0".encode() + path.read_bytes() + b"\0")
            self.keys[test_file] = digest.hexdigest()
        return self.keys[test_file]

    def kept(self, test_file: Path) -> set[str]:
        """The tests of ``test_file`` that passed at its current key."""
        try:
            record = json.loads(results_path(self.root, test_file).read_text())
        except (OSError, ValueError):
            return set()
        return set(record["passed"]) if record.get("key") == self.key(test_file) else set()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        kept: dict[Path, set[str]] = {}
        for item in items:
            test_file = Path(item.path)
            if test_file not in kept:
                kept[test_file] = self.kept(test_file)
            if item.nodeid in kept[test_file]:
                item.add_marker(pytest.mark.skip(reason=REASON))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        test_file = self.root / report.nodeid.split("::")[0]
        if report.skipped and REASON in str(report.longrepr):
            self.cached += 1
        elif report.failed:
            self.failed.setdefault(test_file, set()).add(report.nodeid)
        elif report.when == "call" and report.passed and not hasattr(report, "wasxfail"):
            self.passed.setdefault(test_file, set()).add(report.nodeid)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput"):  # pytest-xdist's controller writes what its workers ran
            return
        for test_file in set(self.passed) | set(self.failed):
            if not test_file.is_file():
                continue
            passed = (self.kept(test_file) | self.passed.get(test_file, set())) - self.failed.get(test_file, set())
            path = results_path(self.root, test_file)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"key": self.key(test_file), "passed": sorted(passed)}, indent=0))

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.cached:
            terminalreporter.write_line(
                f"results cache: {self.cached} tests passed at these same inputs and were not run again "
                "(FRESH=1 runs them; tests/results_cache.py)"
            )


def results_path(root: Path, test_file: Path) -> Path:
    return root / RESULTS / (str(test_file.relative_to(root)).replace(os.sep, "--") + ".json")


def shared_key(root: Path) -> str:
    """SHA-256 of what every test file reads outside tests/ (see the module's docstring)."""
    digest = hashlib.sha256(f"{sys.version}\0{sys.executable}\0".encode())
    installed = sorted(f"{d.metadata['Name']}=={d.version}" for d in importlib.metadata.distributions())
    digest.update("\0".join(installed).encode() + b"\0")
    tests = str(TESTS.relative_to(root)) + "/" if TESTS.is_relative_to(root) else None
    for state in ("--cached", "--others"):  # a test may read which files git tracks
        listed = subprocess.run(
            ["git", "ls-files", "-z", state, "--exclude-standard"], cwd=root, capture_output=True, check=True
        )
        digest.update(state.encode() + b"\0")
        for name in sorted(set(listed.stdout.decode().split("\0")) - {""}):
            path = root / name
            if (tests and name.startswith(tests)) or not path.is_file():
                continue
            digest.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    site = root / SITE_STAMP
    digest.update(site.read_bytes() if site.is_file() else b"(no site)")
    for program in PROGRAMS:
        found = shutil.which(program)
        status = os.stat(found) if found else None
        digest.update(f"{program}\0{found}\0{status and (status.st_size, status.st_mtime_ns)}\0".encode())
    for name in sorted(os.environ):
        if name.startswith(ENVIRONMENT):
            digest.update(f"{name}={os.environ[name]}\0".encode())
    return digest.hexdigest()


def read_from_tests(test_file: Path) -> list[Path]:
    """The files of tests/ a test file reads: itself, the test files it imports (with theirs), and
    every other file that is not a test file (helpers, conftest.py, data), in a fixed order."""
    files = [path for path in TESTS.rglob("*") if path.is_file() and "__pycache__" not in path.parts]
    if test_file.resolve().is_relative_to(READS_EVERY_TEST):
        return sorted(files)
    test_files = {path.stem: path for path in files if is_test_file(path)}
    found: set[Path] = set()
    todo = [test_file.resolve()]
    while todo:
        path = todo.pop()
        if path in found:
            continue
        found.add(path)
        for node in ast.walk(ast.parse(path.read_bytes())):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            todo += [test_files[name] for name in names if name in test_files]
    return sorted(found | {path for path in files if not is_test_file(path)})


def is_test_file(path: Path) -> bool:
    return path.name.startswith("test_") and path.suffix == ".py"
