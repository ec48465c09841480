"""What the tests' offline venvs inherit (tests/offline.py): nothing of this repository's Python."""

from __future__ import annotations

from pathlib import Path

import offline
from common import ROOT


def test_a_child_sees_the_given_wheels_and_nothing_of_the_repos_python(monkeypatch):
    inherited = {
        "PYTHONPATH": "/elsewhere",
        "PYTHONHOME": "/elsewhere",
        "VIRTUAL_ENV": str(ROOT / ".venv"),
        "IPYTHONDIR": "/elsewhere",
        "PIP_INDEX_URL": "https://example.invalid/simple",
        "UV_INDEX_URL": "https://example.invalid/simple",
        "CHAINRULE_LIVE": "1",
        "JUPYTER_PATH": "/elsewhere",
    }
    for key, value in inherited.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("UV_CACHE_DIR", "/uv-cache")
    monkeypatch.setenv("PATH", f"{ROOT / '.venv' / 'bin'}:/usr/bin")
    env = offline.environment(Path("/wheels"), Path("/venv"))
    assert sorted(set(inherited) & set(env)) == []
    assert env["UV_CACHE_DIR"] == "/uv-cache"  # the shared cache, where every venv's files are
    assert env["PIP_FIND_LINKS"] == "/wheels" and env["PIP_NO_INDEX"] == "1"
    assert env["PATH"].split(":") == ["/venv/bin", "/usr/bin"]
