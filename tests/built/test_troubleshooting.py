"""The troubleshooting page quotes what the code really prints, and its fixes are the ones the code uses.

Each problem is produced here (a PATH without `dot`, a kernel without chainrule, a failing
install) and the first line of its message must appear, word for word, on the page.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import tomllib
from common import ROOT
from test_editions import run_setup_cell

PAGE = (ROOT / "chapters" / "troubleshooting.md").read_text(encoding="utf-8")


def quoted_blocks() -> list[str]:
    return re.findall(r"```text\n(.*?)```", PAGE, re.S)


def quoted(first_line: str) -> bool:
    """Whether a quoted block holds ``first_line`` (line breaks in the page do not count)."""
    words = " ".join(first_line.split())
    return any(words in " ".join(block.split()) for block in quoted_blocks())


def test_a_missing_dot_message_is_quoted_and_installing_it_needs_no_restart(monkeypatch, tmp_path):
    from chainrule import Value
    from chainrule.figures import GraphvizMissingError, draw_graph

    figure = draw_graph(Value(2.0) * Value(3.0))
    path = os.environ["PATH"]
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GraphvizMissingError) as error:
        figure.svg()
    assert quoted(f"GraphvizMissingError: {str(error.value).split('. Install')[0]}."), str(error.value)
    monkeypatch.setenv("PATH", path)  # `dot` is back: the same figure draws, no restart
    assert figure.svg().startswith("<svg")


def test_the_missing_chainrule_message_is_quoted(tmp_path: Path):
    result = run_setup_cell(tmp_path, {})
    message = next(line for line in result.stderr.splitlines() if line.startswith("ModuleNotFoundError"))
    assert quoted(message.split(" In a clone")[0]), message


def test_the_failed_install_message_is_quoted(tmp_path: Path):
    result = run_setup_cell(tmp_path, {"CHAINRULE_PIP_SPEC": "git+https://example.invalid/x"})
    message = next(line for line in result.stderr.splitlines() if line.startswith("RuntimeError"))
    assert message.startswith("RuntimeError: Installing chainrule with `pip install git+https://")
    assert quoted("RuntimeError: Installing chainrule with `pip install git+https://"), message
    assert "CHAINRULE_PIP_SPEC" in PAGE


def test_the_python_version_and_the_jupyterlab_fix_are_the_projects():
    required = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    assert f'requires-python = "{required}"' in PAGE
    makefile = (ROOT / "Makefile").read_text()
    assert "set-default-viewer markdown myst" in makefile and "jupytext-config set-default-viewer markdown myst" in PAGE
    assert "PYTHON ?= python3" in makefile and "make setup PYTHON=" in PAGE
