"""Build the two distributions of this checkout: the engine, ``chainrule`` (pyproject.toml,
``src/chainrule``), and the course built on it, ``chainrule-course`` (``course/``).

Their wheels go to the autograder zip, the handouts, the simulated Colab and the pages' Live
code; their sdists to a release (tests/built/test_package.py checks both as PyPI would).

    python -m tools.book.package dist/    # the sdists and the wheels, as a release builds them
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
#: The two projects: (the folder of its pyproject.toml, the folder of its packages, its files' prefix).
ENGINE = ("", "src", "chainrule")
COURSE = ("course", "course/chainrule_course", "chainrule_course")


def readme_path(root: Path = ROOT) -> str:
    """The file a pyproject.toml in ``root`` names as its readme (the description on PyPI)."""
    readme = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]["readme"]
    return readme if isinstance(readme, str) else readme["file"]


def copy_source(destination: Path, project: tuple[str, str, str] = ENGINE) -> Path:
    """What ``project`` is built from (pyproject.toml, its readme, the licence, its packages),
    copied into ``destination``. The copy keeps build leftovers (build/, *.egg-info) out of the
    checkout.
    """
    folder, packages, _ = project
    destination.mkdir(parents=True)
    for name in ("pyproject.toml", readme_path(ROOT / folder), "LICENSE"):
        (destination / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / folder / name, destination / name)  # course/LICENSE is a link: its file
    shutil.copytree(
        ROOT / packages,
        destination / Path(packages).relative_to(folder),
        dirs_exist_ok=True,  # the engine's readme is in src/
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build"),
    )
    return destination


def _environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}


def _one(folder: Path, pattern: str) -> Path:
    found = sorted(folder.glob(pattern))
    if len(found) != 1:
        raise RuntimeError(f"expected one {pattern} in {folder}, found {found}")
    return found[0]


def _build(projects: list[tuple[str, str, str]], out_dir: Path, command: list[str]) -> None:
    """Run ``python -m <command> <out_dir> <source>...`` on a copy of each project's source."""
    with tempfile.TemporaryDirectory(prefix="chainrule-src-") as tmp:
        sources = [str(copy_source(Path(tmp) / project[2], project)) for project in projects]
        result = subprocess.run(
            [sys.executable, "-m", *command, str(out_dir.resolve()), *sources],
            env=_environment(),
            cwd=tmp,
            capture_output=True,
            text=True,
        )
    if result.returncode != 0:
        names = " and ".join(project[2] for project in projects)
        raise RuntimeError(f"building {names} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")


def build_wheels(out_dir: Path) -> tuple[Path, Path]:
    """The engine's wheel and the course's, built from a copy of the checkout into ``out_dir``:
    (chainrule-*.whl, chainrule_course-*.whl), by one pip (its start is most of the time). The
    venv has setuptools and wheel, so no index is needed."""
    out_dir.mkdir(parents=True, exist_ok=True)
    pip_wheel = ["pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "--wheel-dir"]
    _build([ENGINE, COURSE], out_dir, pip_wheel)
    return _one(out_dir, "chainrule-*.whl"), _one(out_dir, "chainrule_course-*.whl")


def build_distributions(out_dir: Path) -> list[Path]:
    """The sdists and the wheels, built as a release builds them: ``python -m build``, which makes
    the sdist and then the wheel from the unpacked sdist (so a file the sdist lacks is missing
    from the wheel too). ``--no-isolation`` uses this venv's setuptools: no index is needed.
    Returns [engine's sdist, engine's wheel, course's sdist, course's wheel].
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    found = []
    for project in (ENGINE, COURSE):
        _build([project], out_dir, ["build", "--no-isolation", "--outdir"])
        found += [_one(out_dir, f"{project[2]}-*.tar.gz"), _one(out_dir, f"{project[2]}-*.whl")]
    return found


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Build chainrule's and chainrule-course's wheels and sdists.")
    parser.add_argument("out", type=Path, help="the folder to write them to")
    for path in build_distributions(parser.parse_args().out):
        print(path)
