"""Build chainrule's wheel from this checkout (for the autograder zip and the simulated Colab)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def build_wheel(out_dir: Path) -> Path:
    """Build chainrule's wheel from a copy of the checkout into ``out_dir``; return its path.

    The copy keeps build leftovers (build/, *.egg-info) out of the checkout. The venv has
    setuptools and wheel, so no index is needed.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="chainrule-src-") as tmp:
        source = Path(tmp) / "chainrule"
        source.mkdir()
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(ROOT / name, source / name)
        shutil.copytree(ROOT / "src", source / "src",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build"))
        environment = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                        "--wheel-dir", str(out_dir), str(source)], env=environment, cwd=tmp, check=True,
                       capture_output=True, text=True)
    wheels = sorted(out_dir.glob("chainrule-*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"expected one chainrule wheel in {out_dir}, found {wheels}")
    return wheels[0]
