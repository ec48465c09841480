"""mypy, pinned in requirements.txt and configured in mypy.ini: the engine, the course, the tools and
the book's extensions type-check.

The cache is .cache/mypy (git ignores .cache/): the first run on a machine reads numpy's, Sphinx's
and the standard library's types, about half a minute of CPU; later runs, about a second.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from common import ROOT

MYPY = Path(sys.prefix) / "bin" / "mypy"
CONFIG = ROOT / "mypy.ini"


def mypy(*arguments: str) -> subprocess.CompletedProcess:
    if not MYPY.is_file():
        pytest.fail(f"{MYPY} is missing: run `make setup` (requirements.txt pins mypy)", pytrace=False)
    command = [str(MYPY), "--config-file", str(CONFIG), "--no-color-output", *arguments]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600)


def test_the_code_type_checks():
    run = mypy()
    assert run.returncode == 0, f"`.venv/bin/mypy` found type errors:\n{run.stdout[-6000:]}{run.stderr[-2000:]}"
    assert "no issues found in" in run.stdout, run.stdout


def test_the_check_can_fail(tmp_path: Path):
    """A program that uses the course's types wrongly: mypy reads them from its code, and says so."""
    planted = tmp_path / "planted.py"
    planted.write_text(
        "from chainrule_course.exercises.count_checks import d2l_memory\n\nbytes_kept: int = d2l_memory(1, 2, 3, 4)\n"
    )
    run = mypy(str(planted))
    assert run.returncode == 1, run.stdout + run.stderr
    assert (
        'Incompatible types in assignment (expression has type "dict[str, int]", variable has type "int")' in run.stdout
    )
