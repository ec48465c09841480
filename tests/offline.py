"""Venvs built without the network, from the wheelhouse that ``make test`` downloads.

``make test`` downloads every wheel of ``tests/wheelhouse.lock`` (hashes checked) into
``.cache/wheelhouse``: the whole tree of ``tests/offline_requirements.txt`` (otter-grader[grading],
numpy, ipykernel) and ``tests/colab_requirements.txt`` (what Colab preinstalls) at the versions of
requirements.lock, which ``make lock`` locks. It holds one version of each package, so whatever a
test installs from it is the locked version. uv then installs
from that folder alone (:func:`uv_install`: ``--offline --no-index``, nothing of the repo's venv
in the environment), linking the files from its cache, so a venv takes seconds. pip reads the
same folder where the tests run what a student runs (a handout's set-up cell, ``%pip install``).
tests/built/test_handout.py runs a handout's set-up cell in a bare venv; tests/built/test_assignments.py
builds a venv from an autograder zip's own requirements; tests/colab_sim.py builds the
simulated Colab.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools.stamps import key

ROOT = Path(__file__).resolve().parents[1]
WHEELHOUSE = ROOT / ".cache" / "wheelhouse"
#: What the wheelhouse is downloaded from: the Makefile's WHEELHOUSE_STAMP names the same files.
INPUTS = [ROOT / "tests" / "wheelhouse.lock"]
#: Written by make after a complete download, named by the content of the lock it read.
STAMP = WHEELHOUSE / f".complete-{key(INPUTS)}"
#: The venv's uv (requirements.txt pins it; the Makefile installs it first).
UV = Path(sys.prefix) / "bin" / "uv"


def wheelhouse() -> Path:
    """The wheelhouse; fails (it does not skip) when it is missing or was made from other requirements."""
    if not STAMP.is_file():
        pytest.fail(
            f"{WHEELHOUSE.relative_to(ROOT)} is missing or was downloaded for other requirements: "
            f"run `make test` (or `make {STAMP.relative_to(ROOT)}`)",
            pytrace=False,
        )
    return WHEELHOUSE


def environment(find_links: Path, venv: Path | None = None, byte_compile: bool = True) -> dict[str, str]:
    """os.environ for a child: pip sees only ``find_links``; PATH has ``venv``'s bin, not the repo's."""
    env = {
        key: value
        for key, value in os.environ.items()
        if (not key.startswith(("PIP_", "UV_", "CHAINRULE_", "JUPYTER_")) or key == "UV_CACHE_DIR")
        and key not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "IPYTHONDIR")
    }
    path = [entry for entry in env.get("PATH", "").split(os.pathsep) if entry and ROOT not in Path(entry).parents]
    if venv is not None:
        path.insert(0, str(venv / "bin"))
    env.update(
        PATH=os.pathsep.join(path),
        PYTHONNOUSERSITE="1",
        PIP_CONFIG_FILE=os.devnull,
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(find_links),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    if not byte_compile:  # no byte-compiling: a third less install time, for a venv used once
        env["PIP_COMPILE"] = "0"
    return env


def run(command: list, env: dict[str, str] | None, cwd: Path | None = None, timeout: int = 900) -> str:
    """Run ``command``; its stdout, or a failure that shows its output."""
    result = subprocess.run(
        [str(part) for part in command], capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout
    )
    if result.returncode != 0:
        pytest.fail(
            f"{' '.join(map(str, command))} failed ({result.returncode}):\n{result.stdout[-3000:]}\n"
            f"{result.stderr[-3000:]}",
            pytrace=False,
        )
    return result.stdout


def create_venv(venv: Path) -> Path:
    """A bare venv (``python -m venv``: pip and nothing else, no system site-packages); its python."""
    base = getattr(sys, "_base_executable", None) or sys.executable
    run([base, "-m", "venv", venv], environment(WHEELHOUSE))
    return venv / "bin" / "python"


def uv_install(
    python: Path,
    *arguments: str,
    cwd: Path | None = None,
    byte_compile: bool = False,
    env: dict[str, str] | None = None,
) -> None:
    """Install into ``python``'s venv with uv, offline, from the wheelhouse alone.

    ``byte_compile`` compiles every module on every core: for a venv that runs many processes, which
    would otherwise compile each module again on every import where they cannot write ``.pyc``
    files (the grading sandbox; PYTHONDONTWRITEBYTECODE, which these machines set).
    """
    if not UV.is_file():
        pytest.fail(f"{UV} is missing: run `make setup` (requirements.txt pins uv)", pytrace=False)
    command = [
        UV,
        "pip",
        "install",
        "--quiet",
        "--offline",
        "--no-index",
        "--find-links",
        wheelhouse(),
        "--python",
        python,
        *(["--compile-bytecode"] if byte_compile else []),
        *arguments,
    ]
    run(command, env if env is not None else environment(WHEELHOUSE), cwd=cwd)
