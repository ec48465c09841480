"""The committed figures in img/ must be exactly what tools/book/make_figures.py draws now.

When chainrule's drawing module (or the figure code) changes, the committed files go
stale; this test names them and the command that regenerates them.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from common import ROOT

TOOL = "tools.book.make_figures"
IMG = ROOT / "img"


def generate(out_dir: Path) -> dict[str, bytes]:
    subprocess.run([sys.executable, "-m", TOOL, "--out", str(out_dir)], check=True, cwd=ROOT, capture_output=True)
    figures = {path.name: path.read_bytes() for path in sorted(out_dir.iterdir())}
    assert figures, f"python -m {TOOL} wrote no figures into {out_dir}"
    return figures


def test_committed_figures_are_current(tmp_path: Path):
    generated = generate(tmp_path)
    missing = [name for name in generated if not (IMG / name).is_file()]
    stale = [name for name in generated if (IMG / name).is_file() and (IMG / name).read_bytes() != generated[name]]
    problems = [f"img/{name} is missing" for name in missing] + [f"img/{name} is stale" for name in stale]
    assert not problems, (
        "\n".join(problems) + "\nRegenerate with `make figures` (python -m tools.book.make_figures) and commit img/."
    )
