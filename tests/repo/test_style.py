"""ruff, pinned in requirements.txt and configured in pyproject.toml: every Python file lints clean and is formatted."""

from __future__ import annotations

import subprocess
import sys
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
