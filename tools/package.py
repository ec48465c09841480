"""Build chainrule's wheel (for the autograder zip, the simulated Colab and the live code) and its
sdist (for a release: tests/test_package.py checks both as PyPI would) from this checkout.

    python tools/package.py dist/    # the sdist and the wheel, as a release builds them
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

ROOT = Path(__file__).resolve().parents[1]


def readme_path(root: Path = ROOT) -> str:
    """The file pyproject.toml names as the package's readme (its description on PyPI)."""
    readme = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]["readme"]
    return readme if isinstance(readme, str) else readme["file"]


def copy_source(destination: Path) -> Path:
    """What the package is built from (pyproject.toml, the readme, the licence, src/), copied into ``destination``.

    The copy keeps build leftovers (build/, *.egg-info) out of the checkout.
    """
    destination.mkdir(parents=True)
    for name in ("pyproject.toml", readme_path(), "LICENSE"):
        (destination / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, destination / name)
    shutil.copytree(
        ROOT / "src",
        destination / "src",
        dirs_exist_ok=True,
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


def build_wheel(out_dir: Path) -> Path:
    """Build chainrule's wheel from a copy of the checkout into ``out_dir``; return its path.

    The venv has setuptools and wheel, so no index is needed.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="chainrule-src-") as tmp:
        source = copy_source(Path(tmp) / "chainrule")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "--no-build-isolation",
                "--no-index",
                "--wheel-dir",
                str(out_dir),
                str(source),
            ],
            env=_environment(),
            cwd=tmp,
            check=True,
            capture_output=True,
            text=True,
        )
    return _one(out_dir, "chainrule-*.whl")


def build_distributions(out_dir: Path) -> tuple[Path, Path]:
    """The sdist and the wheel, built as a release builds them: ``python -m build``, which makes the
    sdist and then the wheel from the unpacked sdist (so a file the sdist lacks is missing from
    the wheel too). ``--no-isolation`` uses this venv's setuptools: no index is needed.
    Returns (sdist, wheel).
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="chainrule-src-") as tmp:
        source = copy_source(Path(tmp) / "chainrule")
        result = subprocess.run(
            [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out_dir), str(source)],
            env=_environment(),
            cwd=tmp,
            capture_output=True,
            text=True,
        )
        if result.returncode != 0:
            raise RuntimeError(f"python -m build failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    return _one(out_dir, "chainrule-*.tar.gz"), _one(out_dir, "chainrule-*.whl")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Build chainrule's wheel and sdist.")
    parser.add_argument("out", type=Path, help="the folder to write them to")
    for path in build_distributions(parser.parse_args().out):
        print(path)
