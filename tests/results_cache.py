"""A test file's tests are not run again while nothing they read has changed (``--results-cache``).

``make check``, ``make test`` and ``make test-colab`` pass the option; ``FRESH=1`` leaves it out,
and so does ``HYPOTHESIS_PROFILE=random`` (whose point is new examples). A fresh clone, as in
CI, has no results, so it runs everything: the cache is for the edit loop.

What a test file reads is taken wholly, never guessed:

* every file of the repository git would commit (tracked, or new and not ignored, which is
  told apart) outside ``tests/``, by content: the engine, the course, the chapters, the tools,
  the locks (which name the venv's, the wheelhouse's and npm's packages), so anything a build
  makes from them too; and the ignored files among them (a notebook's checkpoint, say, which a
  test listing files by pattern reads), outside the folders of installed packages and builds;
* from ``tests/``: the test file itself, every helper and ``conftest.py`` (any file not named
  ``test_*.py``, data included) and the test files it imports, with theirs; a test file of
  ``tests/repo/`` every file of ``tests/``, since the repository's checks (style, types,
  layering, tiers) read them all;
* for a test file of a folder whose ``conftest.py`` imports the builds' fixtures (``built/``,
  ``browser/``, ``colab/``): what each build in ``_build/`` was made from, its stamp
  (``.site-fingerprint``, ``.*-made-from``), so a test that ran against an older build runs
  again once the build is made again;
* Python's version and its installed packages (name and version: a package installed by hand
  counts), the system's packages (Debian's list, by size and time), the programs the tests
  start, by their size and time, ``PATH`` and the environment variables the tests read
  (``CHAINRULE_*``, ``HYPOTHESIS_*``, ``LAB_TEST_*``).

Their SHA-256 is the file's key, computed when the tests are collected and again when the
session ends. A file's tests are skipped together, with the reason ``passed at these inputs``,
when every one of them ran to its end without failing in one earlier session, at the same key
at both ends of it: a test that passes only after another one ran (a shared module fixture)
is never recorded on a run of its own. A failure, anywhere in the file, drops its record. The
records are kept per test file in ``_build/test-results/`` (``make clean`` removes them),
written by the session that ran the tests (pytest-xdist's controller, from the key each worker
sent with its reports), and read by the process that collects them (each worker).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest

from tools import stamps

#: The skip reason of a test not run again; the summary counts the skips that give it.
REASON = "passed at these inputs (results cache)"
#: Where each test file's results are kept, under the repository's top folder.
RESULTS = Path("_build") / "test-results"
#: The builds' stamps: what each was made from (tools/book/build_book.py, tools/book/after_site.py).
BUILD_STAMPS = (".site-fingerprint", ".*-made-from")
#: The programs the tests start; Debian's package list stands for the rest of the system.
PROGRAMS = ("chromium", "dot", "node", "bwrap", "pdftotext", "git", "make")
ENVIRONMENT = ("CHAINRULE_", "HYPOTHESIS_", "LAB_TEST_", "PATH")
#: Ignored folders that no test reads by pattern: installed packages, builds, caches.
NOT_SOURCES = {".git", ".venv", ".venv-grade", "node_modules", "_build", ".cache", "dist", "__pycache__"}
NOT_SOURCES |= {".hypothesis", ".pytest_cache", ".import_linter_cache", ".jupyter_cache", ".ruff_cache", ".mypy_cache"}
TESTS = Path(__file__).resolve().parent
#: The folder of tests/ whose test files read every file of tests/.
READS_EVERY_TEST = TESTS / "repo"
#: Sent with each test's reports: the key of its file when it was collected.
KEY_PROPERTY = "results-cache-key"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--results-cache",
        action="store_true",
        help="do not run again a test that passed while nothing it reads has changed (tests/results_cache.py)",
    )


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("results_cache") and os.environ.get("HYPOTHESIS_PROFILE") != "random":
        config.pluginmanager.register(ResultsCache(config.rootpath), "results-cache")


class ResultsCache:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.keys: dict[Path, str] = {}
        self.sent: dict[Path, set[str]] = {}  # the keys the reports of each file came with
        self.completed: dict[Path, set[str]] = {}  # tests that ran to their end without failing
        self.failed: set[Path] = set()
        self.cached = 0

    def key(self, test_file: Path) -> str:
        if test_file not in self.keys:
            self.keys[test_file] = file_key(self.root, test_file)
        return self.keys[test_file]

    def kept(self, test_file: Path) -> set[str]:
        """The tests of ``test_file`` that completed together at its current key."""
        try:
            record = json.loads(results_path(self.root, test_file).read_text())
        except (OSError, ValueError):
            return set()
        return set(record["completed"]) if record.get("key") == self.key(test_file) else set()

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        by_file: dict[Path, list[pytest.Item]] = {}
        for item in items:
            by_file.setdefault(Path(item.path), []).append(item)
        for test_file, its_items in by_file.items():
            skip = {item.nodeid for item in its_items} <= self.kept(test_file)
            for item in its_items:
                item.user_properties.append((KEY_PROPERTY, self.key(test_file)))
                if skip:
                    item.add_marker(pytest.mark.skip(reason=REASON))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        test_file = self.root / report.nodeid.split("::")[0]
        self.sent.setdefault(test_file, set()).update(v for k, v in report.user_properties if k == KEY_PROPERTY)
        if report.skipped and REASON in str(report.longrepr):
            self.cached += 1
        elif report.failed:
            self.failed.add(test_file)
        elif report.when == "teardown":
            self.completed.setdefault(test_file, set()).add(report.nodeid)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(session.config, "workerinput"):  # pytest-xdist's controller writes what its workers ran
            return
        shared_key.cache_clear()  # what the files read is read again, as it is now
        test_files.cache_clear()
        for test_file in set(self.completed) | self.failed:
            path = results_path(self.root, test_file)
            path.unlink(missing_ok=True)
            sent = self.sent.get(test_file, set())
            if test_file in self.failed or len(sent) != 1 or not test_file.is_file():
                continue
            key = sent.pop()
            if key != file_key(self.root, test_file):  # something it reads changed meanwhile
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"key": key, "completed": sorted(self.completed[test_file])}, indent=0))

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.cached:
            terminalreporter.write_line(
                f"results cache: {self.cached} tests passed at these same inputs and were not run again "
                "(FRESH=1 runs them; tests/results_cache.py)"
            )


def results_path(root: Path, test_file: Path) -> Path:
    return root / RESULTS / (quote(test_file.relative_to(root).as_posix(), safe="") + ".json")


def file_key(root: Path, test_file: Path) -> str:
    """SHA-256 of what ``test_file`` reads (see the module's docstring)."""
    digest = hashlib.sha256(shared_key(root).encode())
    for path in read_from_tests(test_file):
        digest.update(f"{path.relative_to(TESTS)}\0".encode() + path.read_bytes() + b"\0")
    if reads_the_builds(test_file):
        build = root / "_build"
        for stamp in sorted(path for pattern in BUILD_STAMPS for path in build.glob(pattern)):
            digest.update(f"{stamp.name}\0".encode() + stamp.read_bytes() + b"\0")
    return digest.hexdigest()


@functools.cache
def shared_key(root: Path) -> str:
    """SHA-256 of what every test file reads outside tests/ (see the module's docstring)."""
    digest = hashlib.sha256(stamps.environment().encode())
    tests = str(TESTS.relative_to(root)) + "/" if TESTS.is_relative_to(root) else None
    for state in ("--cached", "--others"):  # a test may read which files git tracks
        for path in git_files(root, state):
            name = path.relative_to(root).as_posix()
            if not (tests and name.startswith(tests)):
                digest.update(f"{state}\0{name}\0".encode() + path.read_bytes() + b"\0")
    for path in ignored_sources(root):
        digest.update(f"ignored\0{path.relative_to(root).as_posix()}\0".encode() + path.read_bytes() + b"\0")
    for program in (shutil.which(name) for name in PROGRAMS):
        status = os.stat(os.path.realpath(program)) if program and os.path.exists(program) else None
        digest.update(f"{program}\0{status and (status.st_size, status.st_mtime_ns)}\0".encode())
    for name in sorted(os.environ):
        if name.startswith(ENVIRONMENT):
            digest.update(f"{name}={os.environ[name]}\0".encode())
    return digest.hexdigest()


def git_files(root: Path, *options: str) -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--exclude-standard", *options], cwd=root, capture_output=True, check=True
    )
    return [root / name for name in sorted(set(listed.stdout.decode().split("\0")) - {""}) if (root / name).is_file()]


def ignored_sources(root: Path) -> list[Path]:
    """The files git ignores, outside :data:`NOT_SOURCES` (a checkpoint beside a chapter, say)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--exclude-standard", "--others", "--ignored", "--directory"],
        cwd=root,
        capture_output=True,
        check=True,
    )
    found: list[Path] = []
    for name in set(listed.stdout.decode().split("\0")) - {""}:
        entry = root / name.rstrip("/")
        if not built_or_installed(root, entry):
            candidates = entry.rglob("*") if entry.is_dir() else [entry]
            found += [path for path in candidates if path.is_file() and not built_or_installed(root, path)]
    return sorted(set(found))


def built_or_installed(root: Path, path: Path) -> bool:
    parts = path.relative_to(root).parts
    return bool(NOT_SOURCES & set(parts)) or path.suffix == ".pyc" or any(p.endswith(".egg-info") for p in parts)


def reads_the_builds(test_file: Path) -> bool:
    """Whether the test file's folder's conftest.py imports the fixtures of what make test builds."""
    conftest = test_file.resolve().parent / "conftest.py"
    return conftest.is_file() and "from builds import" in conftest.read_text(encoding="utf-8")


@functools.cache
def test_files() -> tuple[list[Path], dict[str, Path]]:
    """Every file of tests/, and its test files by module name."""
    files = sorted(path for path in TESTS.rglob("*") if path.is_file() and "__pycache__" not in path.parts)
    return files, {path.stem: path for path in files if is_test_file(path)}


def read_from_tests(test_file: Path) -> list[Path]:
    """The files of tests/ a test file reads: itself, the test files it imports (with theirs), and
    every other file that is not a test file (helpers, conftest.py, data), in a fixed order."""
    files, by_name = test_files()
    if test_file.resolve().is_relative_to(READS_EVERY_TEST):
        return files
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
            todo += [by_name[name] for name in names if name in by_name]
    return sorted(found | {path for path in files if not is_test_file(path)})


def is_test_file(path: Path) -> bool:
    return path.name.startswith("test_") and path.suffix == ".py"
