"""A test file's tests are not run again while nothing they read has changed, and any change to what
they read runs them again (tests/results_cache.py, ``make check``, ``make test``, ``make test-colab``).

Each case runs pytest on a scratch repository whose tests write a letter to a log when they run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]


def scratch_files() -> dict[str, str]:
    """The scratch repository's files. (A function: tests/repo/test_tiers.py reads a fast test's module
    level for the builds' folder, which these name.)"""
    logged = (
        "import pathlib\n\nROOT = pathlib.Path(__file__).parents[1]\nFLAGS = ROOT / '_build'\n\ndef log(name):\n"
        "    FLAGS.mkdir(exist_ok=True)\n    (FLAGS / 'ran.log').open('a').write(name + '\\n')\n"
    )
    return {
        "lib.py": "ANSWER = 42\n",
        "tests/conftest.py": "pytest_plugins = ['results_cache']\n",
        "tests/logged.py": logged,
        "tests/builds.py": "",
        "tests/test_a.py": "from logged import log\n\ndef test_a():\n    log('a')\n",
        "tests/test_b.py": (  # two tests: the second fails while the file "flaky" exists
            "from logged import FLAGS, ROOT, log\n\ndef test_b():\n    log('b')\n\n"
            "def test_b_again():\n    log('B')\n    assert not (FLAGS / 'flaky').exists()\n"
        ),
        "tests/test_c.py": "from logged import log\nfrom test_a import test_a\n\ndef test_c():\n    log('c')\n",
        "tests/test_e.py": (  # changes what every test reads, while the file "edit" exists
            "from logged import FLAGS, ROOT, log\n\ndef test_e():\n    log('e')\n"
            "    if (FLAGS / 'edit').exists():\n        (ROOT / 'lib.py').write_text('ANSWER = 0\\n')\n"
        ),
        "tests/repo/test_r.py": "from logged import log\n\ndef test_r():\n    log('r')\n",
        "tests/built/conftest.py": "from builds import *  # noqa: F403\n",
        "tests/built/test_w.py": "from logged import log\n\ndef test_w():\n    log('w')\n",
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    for name, text in scratch_files().items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    # The results, the log and the flags are kept in _build/, which is not an input; a checkpoint is
    # ignored by git too, but is one: a test listing files by pattern reads it.
    (tmp_path / ".gitignore").write_text("_build/\n.ipynb_checkpoints/\n")
    shutil.copy(TESTS / "results_cache.py", tmp_path / "tests")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "add", "."], check=True)
    return tmp_path


def ran(repo: Path, *options: str, environment: dict[str, str] | None = None) -> str:
    """The letters of the tests that ran, sorted."""
    log = repo / "_build" / "ran.log"
    log.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CHAINRULE_", "PYTEST_", "HYPOTHESIS_"))}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # the venv's plugins take a second a run: xdist's is named
    env["PYTHONPATH"] = str(TESTS.parent)  # the plugin reads the environment's key from tools/stamps.py
    xdist = ["-p", "xdist.plugin"] if "-n" in options else []
    subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *xdist, "-q", *options, "tests"],
        cwd=repo,
        env={**env, **(environment or {})},
        capture_output=True,
    )
    return "".join(sorted(log.read_text().split())) if log.is_file() else ""


def test_only_what_reads_a_changed_file_runs_again(repo: Path):
    every = "".join(sorted("aabBcerw"))
    assert ran(repo, "--results-cache") == every
    assert ran(repo, "--results-cache") == ""
    assert ran(repo) == every, "without the option everything runs"
    (repo / "tests" / "test_a.py").write_text(scratch_files()["tests/test_a.py"] + "\n# changed\n")
    assert ran(repo, "--results-cache") == "aacr", "a test file: itself, what imports it, tests/repo"
    (repo / "_build" / ".pdf-made-from").write_text("another build")  # _build/ exists: the log is there
    assert ran(repo, "--results-cache") == "w", "a build: the tests of a folder whose conftest imports builds"
    (repo / "tests" / "logged.py").write_text(scratch_files()["tests/logged.py"] + "# changed\n")
    assert ran(repo, "--results-cache") == every, "a helper of tests/"
    (repo / "lib.py").write_text("ANSWER = 43\n")
    assert ran(repo, "--results-cache") == every, "a file of the repository"
    (repo / "new.py").write_text("")  # not yet added to git
    assert ran(repo, "--results-cache") == every, "a new file"
    subprocess.run(["git", "-C", str(repo), "add", "new.py"], check=True)
    assert ran(repo, "--results-cache") == every, "a file git tracks now"
    (repo / ".ipynb_checkpoints").mkdir()
    (repo / ".ipynb_checkpoints" / "page.js").write_text("")
    assert ran(repo, "--results-cache") == every, "a file git ignores, outside installed packages and builds"
    assert ran(repo, "--results-cache", environment={"CHAINRULE_SEED": "1"}) == every, "the environment"
    assert ran(repo, "--results-cache", environment={"HYPOTHESIS_PROFILE": "random"}) == every, "new examples"


def test_a_failure_runs_its_whole_file_again_and_an_edit_while_running_keeps_nothing(repo: Path):
    (repo / "_build").mkdir()
    (repo / "_build" / "flaky").write_text("")  # not an input: test_b_again fails at the same key
    every = "".join(sorted("aabBcerw"))
    assert ran(repo, "--results-cache", "-n", "2") == every
    assert ran(repo, "--results-cache", "-n", "2") == "Bb", "the failed test's file runs again, whole"
    (repo / "_build" / "flaky").unlink()
    assert ran(repo, "--results-cache") == "Bb"
    assert ran(repo, "--results-cache", "-n", "2") == ""
    (repo / "tests" / "test_b.py").write_text(scratch_files()["tests/test_b.py"] + "# changed\n")
    assert ran(repo, "--results-cache", "-k", "b_again") == "B"
    assert ran(repo, "--results-cache") == "Bbr", "a test that passed alone is not taken for its file's"
    (repo / "_build" / "edit").write_text("")  # test_e changes lib.py while the session runs
    (repo / "lib.py").write_text("ANSWER = 44\n")
    assert ran(repo, "--results-cache", "-n", "2") == every
    (repo / "_build" / "edit").unlink()
    (repo / "lib.py").write_text("ANSWER = 44\n")  # as it was when that session began
    assert ran(repo, "--results-cache", "-n", "2") == every, "passes kept from a session whose inputs changed"
