"""Venvs built without the network, from the wheelhouse that ``make setup`` downloads.

``make setup`` downloads the wheels of ``tests/offline_requirements.txt`` (otter-grader[grading],
numpy and ipykernel at the versions of requirements.txt, with every dependency) into
``.cache/wheelhouse``. pip then installs from that folder alone: no index, no config file, and
nothing of the repo's venv in the environment. tests/test_handout.py runs a handout's set-up
cell in a bare venv; tests/test_assignments.py builds a venv from an autograder zip's own
requirements.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WHEELHOUSE = ROOT / ".cache" / "wheelhouse"
STAMP = WHEELHOUSE / ".complete"  # written by make setup after a complete download
INPUTS = [ROOT / "requirements.txt", ROOT / "tests" / "offline_requirements.txt"]


def wheelhouse() -> Path:
    """The wheelhouse; fails (it does not skip) when it is missing or older than the requirements."""
    if not STAMP.is_file() or any(path.stat().st_mtime > STAMP.stat().st_mtime for path in INPUTS):
        pytest.fail(f"{WHEELHOUSE.relative_to(ROOT)} is missing or older than the requirements: "
                    "run `make setup`", pytrace=False)
    return WHEELHOUSE


def environment(find_links: Path, venv: Path | None = None, byte_compile: bool = True) -> dict[str, str]:
    """os.environ for a child: pip sees only ``find_links``; PATH has ``venv``'s bin, not the repo's."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PIP_", "CHAINRULE_", "JUPYTER_"))
           and key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "IPYTHONDIR")}
    path = [entry for entry in env.get("PATH", "").split(os.pathsep)
            if entry and ROOT not in Path(entry).parents]
    if venv is not None:
        path.insert(0, str(venv / "bin"))
    env.update(PATH=os.pathsep.join(path), PYTHONNOUSERSITE="1",
               PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_FIND_LINKS=str(find_links),
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    if not byte_compile:  # no byte-compiling: a third less install time, for a venv used once
        env["PIP_COMPILE"] = "0"
    return env


def run(command: list, env: dict[str, str] | None, cwd: Path | None = None, timeout: int = 900) -> str:
    """Run ``command``; its stdout, or a failure that shows its output."""
    result = subprocess.run([str(part) for part in command], capture_output=True, text=True, env=env, cwd=cwd,
                            timeout=timeout)
    if result.returncode != 0:
        pytest.fail(f"{' '.join(map(str, command))} failed ({result.returncode}):\n{result.stdout[-3000:]}\n"
                    f"{result.stderr[-3000:]}", pytrace=False)
    return result.stdout


def create_venv(venv: Path) -> Path:
    """A bare venv (``python -m venv``: pip and nothing else, no system site-packages); its python."""
    base = getattr(sys, "_base_executable", None) or sys.executable
    run([base, "-m", "venv", venv], environment(WHEELHOUSE))
    return venv / "bin" / "python"


def pip_install(python: Path, *requirements: str, cwd: Path | None = None, byte_compile: bool = True) -> None:
    """Install into ``python``'s venv from the wheelhouse alone."""
    env = environment(wheelhouse(), byte_compile=byte_compile)
    run([python, "-m", "pip", "install", "-q", *requirements], env, cwd=cwd)
