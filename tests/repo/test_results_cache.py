"""A test that passed is not run again while nothing it reads has changed, and any change to what
it reads runs it again (tests/results_cache.py, ``make check`` and ``make test``).

Each case runs pytest on a scratch repository whose tests write their name to a log when they run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
LOGGED = (
    "import pathlib\n\ndef log(name):\n"
    "    (pathlib.Path(__file__).parents[1] / 'ran.log').open('a').write(name + '\\n')\n"
)
FILES = {
    "lib.py": "ANSWER = 42\n",
    "tests/conftest.py": "pytest_plugins = ['results_cache']\n",
    "tests/logged.py": LOGGED,
    "tests/test_a.py": "from logged import log\n\ndef test_a():\n    log('a')\n",
    "tests/test_b.py": (
        "import pathlib\nfrom logged import log\n\ndef test_b():\n    log('b')\n"
        "    assert not (pathlib.Path(__file__).parents[1] / 'flaky').exists()\n"
    ),
    "tests/test_c.py": "from logged import log\nfrom test_a import test_a\n\ndef test_c():\n    log('c')\n",
    "tests/repo/test_r.py": "from logged import log\n\ndef test_r():\n    log('r')\n",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / ".gitignore").write_text("_build/\nran.log\nflaky\n")  # the results are kept in _build/
    shutil.copy(TESTS / "results_cache.py", tmp_path / "tests")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True)
    return tmp_path


def ran(repo: Path, *options: str, environment: dict[str, str] | None = None) -> str:
    """The names of the tests that ran, in order."""
    log = repo / "ran.log"
    log.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHAINRULE_", "PYTEST_"))}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # the venv's plugins take a second a run: xdist's is named
    xdist = ["-p", "xdist.plugin"] if "-n" in options else []
    subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *xdist, "-q", *options, "tests"],
        cwd=repo,
        env={**env, **(environment or {})},
        capture_output=True,
    )
    return "".join(sorted(log.read_text().split())) if log.is_file() else ""


def test_only_what_reads_a_changed_file_runs_again(repo: Path):
    assert ran(repo, "--results-cache") == "aabcr", "test_c also runs test_a, which it imports"
    assert ran(repo, "--results-cache") == ""
    assert ran(repo) == "aabcr", "without the option everything runs"
    (repo / "tests" / "test_a.py").write_text(FILES["tests/test_a.py"] + "\n# changed\n")
    assert ran(repo, "--results-cache") == "aacr", "a test file: itself, what imports it, tests/repo"
    (repo / "tests" / "logged.py").write_text(LOGGED + "# changed\n")
    assert ran(repo, "--results-cache") == "aabcr", "a helper of tests/"
    (repo / "lib.py").write_text("ANSWER = 43\n")
    assert ran(repo, "--results-cache") == "aabcr", "a file of the repository"
    (repo / "new.py").write_text("")  # not yet added to git
    assert ran(repo, "--results-cache") == "aabcr", "a new file"
    subprocess.run(["git", "-C", str(repo), "add", "new.py"], check=True)
    assert ran(repo, "--results-cache") == "aabcr", "a file git tracks now"
    assert ran(repo, "--results-cache", environment={"CHAINRULE_SEED": "1"}) == "aabcr", "the environment"


def test_a_failure_runs_again_and_the_workers_results_are_kept(repo: Path):
    (repo / "flaky").write_text("")  # ignored by git, so not an input: test_b fails at the same key
    assert ran(repo, "--results-cache", "-n", "2") == "aabcr"
    assert ran(repo, "--results-cache", "-n", "2") == "b", "the failed test runs again, alone"
    (repo / "flaky").unlink()
    assert ran(repo, "--results-cache") == "b"
    assert ran(repo, "--results-cache", "-n", "2") == ""
